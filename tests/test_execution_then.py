"""The guards a value fails after Dynamo has made it symbolic (``Guard.then``): a split's chunk
count and a branch on a tensor's size, spelled on the size; the sizes a resume function guards
after a symbolic ``interpolate`` scale breaks the graph. Each expectation was measured on torch
2.13 with ``TORCH_LOGS=recompiles`` on the same program."""

from __future__ import annotations

import json

import pytest

from recompile_lint.models import Guard
from test_execution import lint, write

SCALE = """
import torch
import torch.nn.functional as F


class Holder:
    pass


@torch.compile(backend="eager")
def upscale(x, o):
    x = torch.tanh(x)
    {statement}
    return y


def main():
    o = Holder()
    for v in ({values}):
        o.s = v
        upscale(torch.randn(8, 8), o)


if __name__ == "__main__":
    main()
"""


def chain_of(findings, source: str) -> tuple[str, ...] | None:
    for finding in findings:
        if finding.guard is not None and finding.guard.source == source:
            return tuple(g.source for g in finding.guard.chain()[1:])
    return None


@pytest.mark.parametrize(
    ("statement", "values", "then"),
    [
        # Measured: the second value recompiles ``upscale`` (``o.s == 3``) and makes the int
        # symbolic; the interpolate then breaks the graph, and a third value recompiles the
        # resume function on the size of the call's result, in the stack slot it takes.
        ("y = F.interpolate(x[None], scale_factor=o.s)[0]", "3, 4, 5, 3", ("L['___stack0']",)),
        ("y = F.interpolate(x[None], scale_factor=o.s).relu()", "3, 4, 5, 3", ("L['___stack0']",)),
        ("y = torch.relu(F.interpolate(x[None], scale_factor=o.s))", "3, 4, 5, 3", ("L['___stack1']",)),
        ("y = x.sum() + F.interpolate(x[None], scale_factor=o.s)", "3, 4, 5, 3", ("L['___stack1']",)),
        ("y = torch.add(x.sum(), other=F.interpolate(x[None], scale_factor=o.s))", "3, 4, 5, 3", ("L['___stack2']",)),
        # The newest entry is checked first: back to the first value recompiles the resume too.
        ("y = torch.relu(F.interpolate(x[None], scale_factor=o.s))", "3, 4, 3, 4", ("L['___stack1']",)),
        # Two values: the resume function compiles once.
        ("y = torch.relu(F.interpolate(x[None], scale_factor=o.s))", "3, 4, 4, 4", ()),
    ],
)
def test_a_symbolic_interpolate_scale_is_followed_by_its_resume_guard(tmp_path, statement, values, then):
    root = write(tmp_path, {"run.py": SCALE.format(statement=statement, values=values)})
    assert chain_of(lint(root), "L['o'].s") == then


def test_a_global_scale_stays_a_constant_and_has_no_resume_guard(tmp_path):
    # Measured: ``G['S'] == 3``, ``== 4``, ``== 5``: a global int is never made symbolic.
    program = """
    import torch
    import torch.nn.functional as F

    S = 3


    @torch.compile(backend="eager")
    def upscale(x):
        y = F.interpolate(x[None], scale_factor=S)[0]
        return y


    def main():
        global S
        for v in (3, 4, 5, 3):
            S = v
            upscale(torch.randn(8, 8))


    if __name__ == "__main__":
        main()
    """
    root = write(tmp_path, {"run.py": program})
    assert chain_of(lint(root), "G['S']") == ()


SIZED = """
import torch


class Options:
    def __init__(self):
        self.tau = torch.ones(2)


@torch.compile(backend="eager")
def step(x, cfg):
    x = torch.relu(x)
    {body}
    return x


def main():
    cfg = Options()
    for n in (2, 3, 4, 2, 3, 4):
        cfg.tau = torch.ones(n)
        step(torch.randn(8, 8), cfg)


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(
    "body",
    [
        # Measured: ``tensor 'cfg.tau' size mismatch``, then ``((7 + cfg.tau.size()[0]) //
        # cfg.tau.size()[0]) == 3`` (sizes 3 and 4 split 8 into 3 and 2 chunks).
        "x = x.split(cfg.tau.shape[0], dim=1)[0]",
        # Measured: the size mismatch, then ``2 <= cfg.tau.size()[0] <= 3`` (4 takes the branch).
        "if cfg.tau.shape[0] > 3:\n        x = x * 2",
    ],
)
def test_a_symbolic_size_is_followed_by_its_chunk_or_branch_guard(tmp_path, body):
    root = write(tmp_path, {"run.py": SIZED.format(body=body)})
    assert chain_of(lint(root), "L['cfg'].tau") == ("L['cfg'].tau.size()[0]",)


def test_one_branch_after_the_size_goes_symbolic_adds_no_guard(tmp_path):
    # Sizes 3 and 4 both take the branch of ``> 2``: the symbolic graph serves both.
    root = write(tmp_path, {"run.py": SIZED.format(body="if cfg.tau.shape[0] > 2:\n        x = x * 2")})
    assert chain_of(lint(root), "L['cfg'].tau") == ()


def test_the_json_guard_carries_then_only_where_there_is_one():
    plain = Guard("CONSTANT_MATCH", "L['o'].s")
    assert "then" not in plain.to_dict()
    chained = Guard("CONSTANT_MATCH", "L['o'].s", then=(("TENSOR_MATCH", "L['___stack0']", "size"),))
    data = json.loads(json.dumps(chained.to_dict()))
    assert data["then"] == [{"kind": "TENSOR_MATCH", "source": "L['___stack0']", "detail": "size"}]
    assert [g.source for g in chained.chain()] == ["L['o'].s", "L['___stack0']"]
