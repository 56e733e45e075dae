"""RCL106 range-bound-argument. Guards: an argument (or a tensor argument's size) used as a ``range()`` bound. Evidence: different values at the call sites."""

from __future__ import annotations

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.analysis.risks import Risk
from recompile_lint.models import Boundedness, Severity
from recompile_lint.rules._risk import reader, report
from recompile_lint.rules.base import Rule

class RangeBoundArgument(Rule):
    """An int argument of a compiled function used as a ``range()`` bound.

    Dynamo unrolls a Python ``for`` loop over ``range(n)``, so the number of iterations is
    baked into the graph and the argument is guarded as a constant (``end == 3``, then
    ``start == 1``): automatic dynamic shapes cannot make it symbolic. Every new value
    recompiles; after ``recompile_limit`` (8) the function runs eagerly for good.
    """

    code = "RCL106"
    name = "range-bound-argument"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "Int argument of a compiled function used as a range() bound"

    VALID = (
        """
import torch

N_LAYERS = 4


@torch.compile
def stack(x, weights):
    for i in range(N_LAYERS):  # a constant bound: one graph
        x = x @ weights[i]
    return x
""",
    )
    INVALID = (
        """
import torch


@torch.compile
def partial_sum(x, start: int, end: int):
    total = x.new_zeros(())
    for i in range(start, end):  # RCL106
        total = total + x[i]
    return total


def report(x):
    for end in range(1, len(x)):
        partial_sum(x, 0, end)
""",
    )

    def claims(self, risk: Risk) -> bool:
        """An argument the compiled code uses as a ``range()`` bound, that its callers vary: the
        argument itself, its size, or a value it holds (``opts[0]``, ``cfg.steps``); or a
        closure cell of the compiled function a run of the project sees change."""
        guard = risk.guard
        storage = guard.storage
        owned = storage.kind == "parameter" or (storage.kind == "closure" and risk.run)
        return owned and not storage.length and guard.specialized == "a range() bound"

    def check_risk(self, risk: Risk, ctx: ProjectContext) -> None:
        storage = risk.guard.storage
        name = storage.name + "".join(storage.members)
        region = risk.region.name
        if storage.kind == "closure":
            what = f"closure cell `{name}`"
        elif not storage.members:
            what = f"argument `{name}`"
        elif storage.members[0].startswith(".shape["):
            what = f"the size `{name}` of argument `{storage.name}`"
        else:
            what = f"`{name}` of argument `{storage.name}`"
        report(
            ctx,
            risk,
            f"{what} of {reader(risk, ctx.index)} is used as {risk.guard.specialized}, so it stays a constant of "
            f"the graph, and {'it holds' if storage.kind == 'closure' else 'its callers pass'} {risk.evidence.why}",
            "loop over a fixed bound and mask, use tensor ops (`x[start:end].sum()`), or keep the bound constant per "
            f"compiled function (`{region}` is compiled once per value)",
        )
