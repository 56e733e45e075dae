"""RCL202 variable-length-argument. Guards: LENGTH_CHECK on a container argument (``len(L['xs'])``). Evidence: containers of other lengths or keys at the call sites, lists that grow between calls."""

from __future__ import annotations

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.analysis.risks import Risk
from recompile_lint.models import Boundedness, Severity
from recompile_lint.rules._risk import logged, reader, report
from recompile_lint.rules.base import Rule

class VariableLengthArgument(Rule):
    """A list, tuple or dict argument of a compiled function whose length differs between calls.

    Dynamo unrolls a Python container into the graph and guards on its length
    (``len(xs) == 1``; for dicts ``len(d) != 1`` and the key order). Every new length compiles
    another graph; after ``recompile_limit`` (8) the function silently runs eagerly. Reported
    when the region uses the parameter (iterates it, takes ``len``, unpacks, ``zip``s or
    ``sum``s it, or indexes it) and its call sites pass different lengths: displays of
    different sizes, slices bounded by a loop variable (``feats[:i]``), lists appended to in a
    loop, or loop variables.
    """

    code = "RCL202"
    name = "variable-length-argument"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "List/tuple/dict argument of a compiled function whose length varies between calls"
    # The answer depends on the region (its dynamic= option, its call sites): a helper reached
    # from several regions is checked for each.
    per_region = True

    VALID = (
        """
import torch


@torch.compile
def fuse(feats: list[torch.Tensor]) -> torch.Tensor:
    return sum(feats)


def run(a, b, c):
    fuse([a, b])
    fuse([c, a])  # always two tensors: one graph
""",
        """
import torch


@torch.compile
def fuse(feats: torch.Tensor) -> torch.Tensor:
    return feats.sum(0)


def run(feats):
    for i in range(1, 8):
        fuse(torch.stack(feats[:i]))  # one stacked tensor: the length is a dynamic size
""",
    )
    INVALID = (
        """
import torch


@torch.compile
def fuse(feats: list[torch.Tensor]) -> torch.Tensor:
    return sum(feats)  # RCL202


def run(feats):
    for i in range(1, 8):
        fuse(feats[:i])
""",
        """
import torch


@torch.compile
def weighted(parts):
    total = 0
    for name, x in parts.items():  # RCL202
        total = total + x
    return total


def run(a, b):
    weighted({"a": a})
    weighted({"a": a, "b": b})
""",
    )

    def claims(self, risk: Risk) -> bool:
        """The length (or key set) of a container argument the compiled code unrolls."""
        return risk.guard.storage.kind == "parameter" and risk.guard.storage.length

    def check_risk(self, risk: Risk, ctx: ProjectContext) -> None:
        name = risk.guard.storage.name
        report(
            ctx,
            risk,
            f"argument `{name}` ({risk.guard.value_kind}) of {reader(risk, ctx.index)} is unrolled, so Dynamo guards "
            f"`{logged(risk.guard.guard.source)}`, and its callers pass {risk.evidence.why}",
            "pass one stacked tensor (`torch.stack(...)`, padded to a fixed length with a mask) instead of a "
            "Python container, or keep its length fixed",
        )
