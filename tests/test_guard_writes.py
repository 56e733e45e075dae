"""An attribute the compiled call assigns before it reads it is read back from Dynamo's
side-effect table: no guard on the attribute (measured on torch 2.13: ``self.mode = mode``
then ``if self.mode == "causal":`` guards ``mode``, never ``self.mode``). A write that may not
run (in a branch, a loop body, a handler) leaves later reads guarded."""

from __future__ import annotations

import textwrap
from pathlib import Path

from recompile_lint.analysis.guards import predict_guards
from recompile_lint.analysis.index import FactsStore, ProjectIndex
from recompile_lint.analysis.loader import find_sites
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths

PROGRAM = """
import itertools

import torch

NAMES = map(str, itertools.count())


class Soft(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mode = "none"

    def forward(self, x, mode, flag):
{write}
        if self.mode == "causal":
            return x + 1
        return x - 1


class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.soft = Soft()

    def forward(self, x, mode, flag):
        return self.soft(x, mode, flag)


def check(model, args):
    fast = torch.compile(model, fullgraph=True)
    return fast(*args)


def test_outer(monkeypatch):
    check(Outer(), (torch.randn(4), "causal", True))
"""


def lint(root: Path, write: str) -> list:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "run.py").write_text(PROGRAM.format(write=textwrap.indent(textwrap.dedent(write).strip("\n"), " " * 8)))
    return [f for f in lint_paths([str(root)], Config(select=("RCL",), cache=False)).findings if f.code == "RCL104"]


def test_an_attribute_assigned_before_it_is_read_is_not_guarded(tmp_path):
    assert lint(tmp_path, "self.mode = mode") == []


def test_an_attribute_assigned_in_a_branch_is_still_guarded_after_it(tmp_path):
    # (A write of a module-level counter's next value: evidence of its own, whatever the
    # callers pass.)
    [finding] = lint(tmp_path, """
        if flag:
            self.mode = next(NAMES)
    """)
    assert finding.guard is not None and finding.guard.source.endswith("._modules['soft'].mode")
    assert finding.line == (tmp_path / "run.py").read_text().splitlines().index('        if self.mode == "causal":') + 1


def test_a_write_on_one_side_of_an_if_is_not_made_on_the_other(tmp_path):
    # The guard model's own answer: the attribute is guarded where the other side reads it.
    lint(tmp_path, """
        if flag:
            self.mode = mode
        else:
            x = x * (self.mode == "a")
    """)
    files = [str(p) for p in sorted(tmp_path.glob("*.py"))]
    index = ProjectIndex(files, FactsStore())
    regions = [r for site in find_sites(index) for r in site.regions]
    reads = {g.read.line for g in predict_guards(index, regions) if g.guard.source.endswith("._modules['soft'].mode")}
    text = (tmp_path / "run.py").read_text().splitlines()
    assert [text[line - 1].strip() for line in reads] == ['x = x * (self.mode == "a")']


def test_an_attribute_read_before_it_is_assigned_is_guarded(tmp_path):
    [finding] = lint(tmp_path, """
        previous = self.mode
        self.mode = mode if previous else mode
    """)
    assert finding.guard is not None and finding.guard.source.endswith("._modules['soft'].mode")


HELD = """
import torch


class Sub(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mode = "a"

    def forward(self, x):
        return x + 1 if self.mode == "a" else x - 1


class Top(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = Sub()
        self.mode = "a"

    def forward(self, x):
        if self.mode == "a":
            x = x * 2
        y = self.sub(x)
        self.sub.mode = {value}
        return y


def check(model, x):
    return torch.compile(model)(x)


def test_top(monkeypatch):
    check(Top(), torch.randn(2))
"""


def held_findings(root: Path, value: str) -> list[str]:
    (root / "pyproject.toml").write_text("[project]\\nname = 'p'\\n")
    (root / "run.py").write_text(HELD.format(value=value))
    return sorted(f.guard.source for f in lint_paths([str(root)], Config(select=("RCL104",), cache=False)).findings)


def test_a_write_through_a_held_object_changes_that_objects_class_only(tmp_path):
    # ``self.sub.mode = "b"`` changes the ``Sub``'s mode (once: "a", then "b"), never ``Top``'s.
    assert held_findings(tmp_path, '"b"') == ["L['self']._modules['sub'].mode"]


def test_a_copy_of_another_attribute_is_no_value_of_its_own(tmp_path):
    # ``self.sub.mode = self.mode`` inside the compiled call: ``Sub``'s mode holds whatever
    # ``Top``'s holds, and nothing changes ``Top``'s: no evidence (a literal written is).
    assert held_findings(tmp_path, "self.mode") == []
    assert held_findings(tmp_path, "self.mode + '!'") == ["L['self']._modules['sub'].mode"]


ONE_SHOT = """
import torch


class Decoder(torch.nn.Module):
    def __init__(self, mode=None):
        super().__init__()
        self.compiled = False
        self.flip = False
        self.mode = mode

    def forward(self, x):
        y = x * 2 if self.flip else x
        if not self.compiled and self.mode is not None:
            self.forward = torch.compile(self.forward, mode=self.mode)
            self.compiled = True
{toggle}
        return y


def main():
    decoder = Decoder("default")
    for _ in range(10):
        decoder(torch.randn(4))
"""


def test_a_one_shot_flag_the_compiled_code_sets_is_no_write_at_every_call(tmp_path):
    # ``if not self.compiled ...: self.compiled = True``: once set, the test is false at every
    # later call, so the body (and its write) runs once; a flag flipped at every call is not.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "run.py").write_text(ONE_SHOT.format(toggle=""))
    config = Config(select=("RCL",), cache=False)
    assert [f for f in lint_paths([str(tmp_path)], config).findings if f.code == "RCL104"] == []
    (tmp_path / "run.py").write_text(ONE_SHOT.format(toggle="        self.flip = not self.flip"))
    [finding] = [f for f in lint_paths([str(tmp_path)], config).findings if f.code == "RCL104"]
    assert "flip" in finding.message
