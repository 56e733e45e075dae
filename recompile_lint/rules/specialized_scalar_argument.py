from __future__ import annotations

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.analysis.risks import Risk
from recompile_lint.models import Boundedness, Severity
from recompile_lint.rules._risk import reader, report
from recompile_lint.rules.base import Rule

class SpecializedScalarArgument(Rule):
    """A str argument that takes many values, or an int argument under ``dynamic=False``,
    passed to a compiled function.

    Dynamo guards on the value of a str argument (``mode == 'a0'``): strings never become
    symbolic, so every new value is another graph until ``recompile_limit`` (8) sends the
    function to eager for good. An int argument normally costs one recompile and then becomes
    dynamic, but ``dynamic=False`` keeps it a constant (``n == 2``): every value is a graph.
    """

    code = "RCL108"
    name = "specialized-scalar-argument"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "str argument with many values, or int argument under dynamic=False, passed to compiled code"

    VALID = (
        """
import torch


@torch.compile
def scaled(x, n: int):
    return x * n


def main(x):
    for n in range(10):
        scaled(x, n)  # default dynamic: one recompile, then n is symbolic
""",
    )
    INVALID = (
        """
import torch


@torch.compile
def act(x, name: str):
    return torch.relu(x) if name == "relu" else torch.tanh(x)


@torch.compile(dynamic=False)
def scaled(x, n: int):
    return x * n


def main(x, names):
    for name in names:
        act(x, name)  # RCL108
    for n in range(10):
        scaled(x, n)  # RCL108
""",
    )

    def claims(self, risk: Risk) -> bool:
        """An argument that stays a constant of the graph, a str or an int under
        ``dynamic=False``, that its callers vary."""
        guard = risk.guard
        return guard.storage.kind == "parameter" and not guard.storage.length and guard.guard.kind == "CONSTANT_MATCH" and guard.specialized in ("", "dynamic=False")

    def check_risk(self, risk: Risk, ctx: ProjectContext) -> None:
        guard = risk.guard
        name = guard.storage.name + "".join(guard.storage.members)
        region = risk.region.name
        calls = [loc for loc in risk.evidence.locations if loc.role == "call"]
        if risk.value_kind == "str":
            why = "a str never becomes symbolic"
            fix = "map the strings to an int or a tensor outside, or compile one function per value and pick it outside"
        else:
            why = f"`{region}` is compiled with dynamic=False, so the int stays a constant"
            fix = "drop dynamic=False (automatic dynamic makes the int symbolic after one recompile), or pass it as a tensor"
        report(
            ctx,
            risk,
            f"argument `{name}` of {reader(risk, ctx.index)} changes between calls here ({risk.evidence.why}): {why}",
            fix,
            at=calls[0] if calls else None,
        )
