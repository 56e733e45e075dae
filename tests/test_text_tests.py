"""The cheap text tests that decide which files are parsed at all.

A file they wrongly skip loses findings, so each is checked on the forms the facts record;
a file they wrongly select only costs a parse.
"""

from __future__ import annotations

import pytest

from recompile_lint.index import COMPILE_SITE, attribute_write_pattern, call_pattern, mentions, occurs_near


@pytest.mark.parametrize(
    ("text", "word", "expected"),
    [
        ("STEP += 1", "STEP", True),
        ("x = mod.STEP", "STEP", True),
        ("STEPS = 1", "STEP", False),
        ("_STEP = 1", "STEP", False),
        ("MY_STEP, STEP = 1, 2", "STEP", True),
        ("", "STEP", False),
    ],
)
def test_mentions_is_a_whole_word_test(text, word, expected):
    assert mentions(text, word) is expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("self.step = 1", True),
        ("self.step += 1", True),
        ("self.step: int = 0", True),
        ("a.step, b = 1, 2", True),
        ("del self.step", True),
        ("for self.step in range(3):", True),
        ("with lock as self.step:", True),
        ("setattr(self, 'step', 3)", True),
        ('setattr(model, "step", 3)', True),
        ("x = self.step", False),
        ("if self.step == 2:", False),
        ("if self.step <= 2:", False),
        ("self.steps = 1", False),
        ("step = 1", False),
        ("print(self.step)", False),
        ("# self.step = 1", False),
    ],
)
def test_attribute_writes_are_told_from_reads(line, expected):
    text = f"def f(self):\n    {line}\n    return None\n"
    assert occurs_near(text, "step", attribute_write_pattern("step")) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("fn = torch.compile(model)", True),
        ("@torch.compile\ndef f(x):\n    return x", True),
        ("@compile(dynamic=False)\ndef f(x): ...", True),
        ("model.compile()", True),
        ("opt = torch._dynamo.optimize('eager')(fn)", True),
        ("fn = torch.compile(\n    model,\n)", True),
        ("pattern = re.compile(r'x+')", False),
        ("# we never compile anything here\nx = 1", False),
        ("x = 1", False),
        # A mention on a comment line is not a site; a site right after one still is.
        ("# see torch.compile(model) in the docs\nx = 1", False),
        ("def f(x):\n    # torch.compile handles this branch\n    return x", False),
        ("# how fn gets compiled:\nfn = torch.compile(fn)", True),
        ("# torch.compile below\n@torch.compile\ndef f(x): ...", True),
        ("x = '#'; fn = torch.compile(fn)", True),
        ("y = 1  # then torch.compile(fn)", True),
    ],
)
def test_compile_sites_are_found_around_their_keyword(text, expected):
    found = any(occurs_near(text, token, COMPILE_SITE) for token in ("compile", "optimize"))
    assert found is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("fast = maybe_compile(step)", True),
        ("fast = utils.maybe_compile(step)", True),
        ("@maybe_compile\ndef f(x): ...", True),
        ("@utils.maybe_compile(mode='max')\ndef f(x): ...", True),
        ("from utils import maybe_compile", False),
        ("# maybe_compile is not used here", False),
        ("    # fast = maybe_compile(step)\n", False),
        ("really_maybe_compile(step)", False),
    ],
)
def test_wrapper_calls_are_found(text, expected):
    assert occurs_near(text, "maybe_compile", call_pattern("maybe_compile")) is expected
