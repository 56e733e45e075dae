"""The cheap text tests that decide which files are parsed at all.

A file they wrongly skip loses findings, so each is checked on the forms the facts record;
a file they wrongly select only costs a parse.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recompile_lint.analysis.facts import collect_facts
from recompile_lint.analysis.parsing import module_name_for
from recompile_lint.analysis.textscan import COMPILE_SITE, Guarded, call_pattern, calls_any, may_compile_text, may_mutate, mentions, occurs_near, text_test_name, writes_attribute, writes_global, writes_name

REPO = Path(__file__).resolve().parent.parent


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
    assert writes_attribute(text, frozenset({"step", "other"})) is expected


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


# COMPILE_SITE as first written, look-behinds first: the pattern in use is reordered for speed
# and must match exactly the same text at exactly the same places.
PLAIN_COMPILE_SITE = re.compile(
    r"(?<!\bre)\.compile\s*\((?!\s*[rbuf]?['\"])|(?<![\w.])compile\s*\(|@[\w.]*compile\b|\bcompile\b\s*$"
    r"|import[^\n]*\bcompile\b|\btorch\.compile\b|\boptimize\s*\(",
    re.MULTILINE,
)
PIECES = ["compile", "optimize", "torch", "re", ".", "@", "(", " ", "\n", "import ", "x", "_", "'", "r'", "é", "1", "#"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14).map("".join))
def test_the_compile_site_pattern_matches_as_written_plainly(text):
    assert [m.span() for m in COMPILE_SITE.finditer(text)] == [m.span() for m in PLAIN_COMPILE_SITE.finditer(text)]


def test_the_compile_site_pattern_matches_as_written_plainly_on_real_code():
    import libcst

    roots = [REPO / "fixtures", REPO / "recompile_lint", Path(libcst.__file__).parent]
    checked = 0
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            text = path.read_text(encoding="utf-8", errors="replace")
            assert [m.span() for m in COMPILE_SITE.finditer(text)] == [m.span() for m in PLAIN_COMPILE_SITE.finditer(text)], path
            checked += 1
    assert checked > 300


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


# Every write the facts record of a name, as a line where ``name`` is written (True), and
# lines that only read it (False).
@pytest.mark.parametrize(
    ("text", "name", "attribute", "expected"),
    [
        # attributes
        ("obj.step = 1", "step", True, True),
        ("obj.step += 1", "step", True, True),
        ("obj.step: int = 0", "step", True, True),
        ("obj.step: int", "step", True, True),
        ("obj.step >>= 1", "step", True, True),
        ("obj.step <<= 1", "step", True, True),
        ("obj.step //= 2", "step", True, True),
        ("(\n    obj.step\n) += 1", "step", True, True),
        ("(\n    obj.\n    step\n) = v", "step", True, True),
        ("obj.\\\n    step = 1", "step", True, True),
        ("setattr(\n    get(obj),\n    'step',\n    1,\n)", "step", True, True),
        ("x.देवनागरी = 1", "देवनागरी", True, True),
        ("(\n    a,\n    obj.step\n) = state", "step", True, True),
        ("x = f(\n    a,\n    obj.step\n)", "step", True, False),
        ('y = f(\n    obj.step,\n    "s")', "step", True, False),
        ("x = obj.step >= 1", "step", True, False),
        ("x = obj.step <= 1", "step", True, False),
        ("a = obj.step = 0", "step", True, True),
        ("obj.step, b = 1, 2", "step", True, True),
        ("(obj.step,\n b) = f()", "step", True, True),
        ("(\n    a,\n    obj.step,\n) = state", "step", True, True),
        ("for obj.step in range(3): pass", "step", True, True),
        ("with lock as obj.step: pass", "step", True, True),
        ("del obj.step", "step", True, True),
        ("setattr(obj, 'step', 3)", "step", True, True),
        ("def _set(name, v, m):\n    setattr(m, name, v)\nf = partial(_set, 'step', 2)", "step", True, True),
        ("def _set(name, v, m):\n    setattr(m, name, v)\nf = partial(_set, 'other', 2)", "step", True, False),
        ("if c: obj.step = 1", "step", True, True),
        ("obj.step = (\n    1\n)", "step", True, True),
        ("obj.step: list[\n    int\n] = []", "step", True, True),
        ("obj.step \\\n    = 1", "step", True, True),
        ("foo({\n    k: v}).step = 3", "step", True, True),
        ("x = obj.step", "step", True, False),
        ("f(obj.step, k=1)", "step", True, False),
        ("f(\n    a=obj.step, k=1)", "step", True, False),
        ("y = f(\n    obj.step,\n)", "step", True, False),
        ("if obj.step == 2: pass", "step", True, False),
        ("def f(x: obj.step = None): pass", "step", True, False),
        ("def f(\n    x: obj.step | None = None,\n): pass", "step", True, False),
        ("for x in obj.step.items(): pass", "step", True, False),
        ("obj.step.log(k=1)", "step", True, False),
        ("step = 1", "step", True, False),
        ("# obj.step = 1", "step", True, False),
        ("[obj.step, b] = 1, 2", "step", True, True),
        ('obj.step = "a(b"', "step", True, True),
        ("obj.step, k = 1, 2  # f(", "step", True, True),
        ("d[obj.step] = 1", "step", True, False),
        ("f(obj.step).x = 1", "step", True, False),
        ("x = {obj.step: 1}", "step", True, False),
        ("if obj.step in xs:\n    pass", "step", True, False),
        ("from a.step import (\n    b,\n)", "step", True, False),
        ('x = "obj.step = 1"', "step", True, False),
        ('"""obj.step = 1"""', "step", True, False),
        ("y = f(\n    a, k=obj.step, dtype=t.dtype,\n)", "step", True, False),
        ("y = f(\n    obj.step, dtype=t.dtype\n)", "step", True, False),
        # values of another module, by name (``attribute`` False)
        ("mod.LR = 0.1", "LR", False, True),
        ("pkg.mod.LR += 1", "LR", False, True),
        ("TABLE[k] = v", "TABLE", False, True),
        ("CONFIG.lr = 0.1", "CONFIG", False, True),
        ("HISTORY.append(x)", "HISTORY", False, True),
        ("del TABLE[k]", "TABLE", False, True),
        ("TABLE[\n    k\n] = v", "TABLE", False, True),
        ("setattr(mod, 'LR', 0.1)", "LR", False, True),
        ("LR = 0.1", "LR", False, False),
        ("x = LR * 2", "LR", False, False),
        ("x = mod.LR", "LR", False, False),
        ("logger.warning('x=%s', x)", "logger", False, False),
        ("logger.warning(\n    'x', exc_info=True)", "logger", False, False),
        ("out: list[torch.Tensor] = [\n]", "Tensor", False, False),
        ("if any(isinstance(t, torch.Tensor) for t in xs): pass", "Tensor", False, False),
        ("HISTORY.count(x)", "HISTORY", False, False),
        ("return HISTORY.pop()", "HISTORY", False, True),
        ("if HISTORY.pop(): pass", "HISTORY", False, True),
        ("return mod.LR", "LR", False, False),
    ],
)
def test_writes_are_told_from_reads(text, name, attribute, expected):
    if attribute:
        assert writes_attribute(text, frozenset({name})) is expected
    else:
        assert writes_name(text, name) is expected


def test_a_global_set_by_a_setattr_over_lines():
    text = "import mod\n\nsetattr(\n    mod,\n    'LR',\n    0.1,\n)\n"
    assert writes_global(text, "LR")
    assert not writes_global(text.replace("setattr", "getattr"), "LR")


def test_a_global_written_through_its_import_alias():
    text = "from pkg.state import TABLE as T\n\nT[k] = v\n"
    assert not writes_name(text, "TABLE")
    assert writes_global(text, "TABLE")


def facts_and_text(root: Path):
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        module, is_package, _ = module_name_for(str(path))
        yield text, collect_facts(tree, str(path), module, is_package, text, ())


def corpora() -> list[Path]:
    """The fixtures, and (where installed) a part of torch: real code full of writes."""
    roots = [REPO / "fixtures"]
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.origin:
        torch_root = Path(spec.origin).parent
        roots += [torch_root / "nn", torch_root / "optim", torch_root / "distributed" / "checkpoint", torch_root / "fx"]
    return [root for root in roots if root.is_dir()]


@pytest.mark.parametrize("root", corpora(), ids=lambda p: p.name)
def test_every_recorded_mutation_passes_the_text_tests(root):
    """The text tests may select too much, never too little: each mutation the facts record
    (of an attribute, or of another module's value) is found by the test for its name."""
    checked = 0
    for text, facts in facts_and_text(root):
        for mutation in facts.mutations:
            if mutation.kind == "instance-attribute" and mutation.key.startswith("param:"):
                # ``setattr(obj, name, v)`` with ``name`` a parameter: the attributes are the
                # names the callers pass in quotes; the file's own quoted names must pass.
                quoted = set(re.findall(r"['\"]([A-Za-z_]\w*)['\"]", text))
                assert all(writes_attribute(text, frozenset({q})) for q in quoted), (facts.path, mutation)
            elif mutation.kind == "instance-attribute":
                name = mutation.name
                assert writes_attribute(text, frozenset({name})), (facts.path, mutation)
            elif mutation.kind != "environ" and mutation.module != facts.module:
                assert writes_global(text, mutation.name.split(".")[0]), (facts.path, mutation)
            else:
                continue
            checked += 1
    assert checked > 0


def test_a_text_test_is_named_by_its_function_and_arguments():
    # A resident server remembers results by this name: equal arguments built in another
    # order share it, anything else that could change a result does not.
    def mutation_test(owners, modules, globals_, attributes):
        guarded = Guarded(globals=set(globals_), attributes=set(attributes))
        return text_test_name(partial(may_mutate, owners=frozenset(owners), by_name={"step": set(modules)}, guarded=guarded))

    name = mutation_test(["a.py", "b.py"], ["m", "n"], [("a.py", "step"), ("b.py", "x")], ["count"])
    assert name is not None
    assert name == mutation_test(["b.py", "a.py"], ["n", "m"], [("b.py", "x"), ("a.py", "step")], ["count"])
    assert name != mutation_test(["a.py"], ["m", "n"], [("a.py", "step"), ("b.py", "x")], ["count"])
    assert name != mutation_test(["a.py", "b.py"], ["m"], [("a.py", "step"), ("b.py", "x")], ["count"])
    assert name != mutation_test(["a.py", "b.py"], ["m", "n"], [("a.py", "step"), ("b.py", "x")], ["total"])
    assert text_test_name(partial(calls_any, tokens=("wrap",))) != text_test_name(partial(calls_any, tokens=("wrapped",)))
    assert text_test_name(partial(calls_any, tokens=())) != text_test_name(partial(may_compile_text, extra_tokens=()))
    assert text_test_name(partial(calls_any, tokens=(object(),))) is None  # cannot be named: never remembered


def test_a_cycle_of_re_exports_resolves_to_no_function(tmp_path):
    """``a`` re-exports ``f`` from ``b`` and ``b`` from ``a``: resolution ends, with nothing."""
    from recompile_lint.analysis.index import FactsStore, ProjectIndex

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from pkg.b import f\n")
    (tmp_path / "pkg" / "b.py").write_text("from pkg.a import f\n")
    (tmp_path / "pkg" / "c.py").write_text("def g():\n    pass\n")
    files = [str(p) for p in sorted((tmp_path / "pkg").glob("*.py"))]
    index = ProjectIndex(files, FactsStore())
    assert index.resolve_function("pkg.a.f", files[0]) is None
    assert index.resolve_function("pkg.c.g", files[0]) is not None
