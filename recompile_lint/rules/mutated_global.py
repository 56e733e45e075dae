"""RCL101 mutated-global. Guards: CONSTANT_MATCH/ID_MATCH on a module-level scalar (``G['step']``, ``G['__import_pkg_dot_mod'].X``). Evidence: writes that run between calls (``variation``)."""

from __future__ import annotations

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.analysis.risks import Risk
from recompile_lint.models import Boundedness, Severity
from recompile_lint.rules._risk import changes, dynamic_sources_fix, reader, report, tensor_fix
from recompile_lint.rules.base import Rule


class MutatedGlobal(Rule):
    """A module-level scalar that compiled code reads and the program changes between calls.

    Dynamo reads a global Python scalar as a constant and guards on its value
    (``G['step'] == 1``; ``G['__import_pkg_dot_mod'].STEP`` when a helper of another module
    reads its own global). Each new value fails the guard and compiles another graph; after
    ``recompile_limit`` (8) the function silently runs eagerly. An int or str that changes
    without bound (a counter, a loop variable) reaches the limit; a float recompiles once and
    then becomes an input; a bool or enum costs one graph per value. Reported only when
    something changes the value between calls: a write in the loop that calls the compiled
    function, in a function called per step, or in the compiled code itself. A global set
    once at import or before the first call compiles once.
    """

    code = "RCL101"
    name = "mutated-global"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "Module global int/str read in compiled code and reassigned elsewhere"

    VALID = (
        """
import torch

SCALE = 3  # never reassigned: one graph


@torch.compile
def poly(x):
    return x * SCALE
""",
        """
import torch

step = torch.zeros(())  # a 0-d tensor is an input, not a constant


@torch.compile
def poly(x):
    return x * step


def train(x):
    for _ in range(10):
        poly(x)
        step.add_(1)
""",
    )
    INVALID = (
        """
import torch

step = 0


@torch.compile
def poly(x):
    return x * step + x ** 2 * step  # RCL101


def train(x):
    global step
    for _ in range(10):
        poly(x)
        step += 1
""",
    )

    def claims(self, risk: Risk) -> bool:
        """A module-level name (of the compiled function's module, or of a module an inlined
        helper belongs to or that compiled code reads through ``mod.NAME``) holding a scalar."""
        storage = risk.guard.storage
        return storage.kind == "global" and not storage.length and risk.guard.guard.source.startswith("G[")

    def check_risk(self, risk: Risk, ctx: ProjectContext) -> None:
        name = risk.guard.storage.name
        kind = risk.value_kind
        fix = tensor_fix(name)
        if kind in ("bool", "enum"):
            fix = f"pass `{name}` as an argument, or branch outside the compiled function"
        elif kind in ("int", "unknown"):
            fix = f"{fix}, {dynamic_sources_fix(risk)}"
        report(ctx, risk, f"global `{name}` ({kind}) is read in {reader(risk, ctx.index)} and {changes(risk)}", fix)
