"""RCL103 counter-in-region. Guards: a module-level value (or member) the compiled code itself updates. Evidence: the write inside the region, on every call."""

from __future__ import annotations

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.analysis.risks import Risk
from recompile_lint.models import Boundedness, Severity
from recompile_lint.rules._risk import reader, report
from recompile_lint.rules.base import Rule

class CounterInRegion(Rule):
    """Compiled code that updates a Python counter kept outside it.

    ``global calls; calls += 1`` or ``state['step'] += 1`` inside a compiled function reads the
    counter as a constant, so the graph guards on it (``G['calls'] == 0``) and the next call
    fails that guard: every call compiles a new graph until ``recompile_limit`` (8) sends the
    function to eager for good. Bookkeeping that never touches a tensor is enough.
    """

    code = "RCL103"
    name = "counter-in-region"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "Compiled code increments a global or global-container Python counter"
    claim_order = 10  # before RCL101/RCL102: the compiled code changes its own guard

    VALID = (
        """
import torch

calls = torch.zeros((), dtype=torch.long)


@torch.compile
def forward(x):
    calls.add_(1)  # in-place on a tensor: no guard on its value
    return x.relu()
""",
    )
    INVALID = (
        """
import torch

calls = 0
state = {"step": 0}


@torch.compile
def forward(x):
    global calls
    calls += 1  # RCL103
    state["step"] += 1  # RCL103
    return x.relu()
""",
    )

    def claims(self, risk: Risk) -> bool:
        """A module-level value (or its member) that the compiled code itself changes."""
        storage = risk.guard.storage
        return risk.evidence.inside and storage.kind in ("global", "member") and not storage.length and risk.guard.guard.source.startswith("G[")

    def check_risk(self, risk: Risk, ctx: ProjectContext) -> None:
        storage = risk.guard.storage
        text = f"global `{storage.name}`" if storage.kind == "global" else f"`{storage.name}{''.join(storage.members)}`"
        inside = [loc for loc in risk.evidence.locations if loc.path == risk.guard.read.path]
        at = inside[0] if inside else None
        report(
            ctx,
            risk,
            f"{text} is updated inside {reader(risk, ctx.index)}, so every call changes the value its own guard holds",
            "count outside the compiled function, or keep the counter in a 0-d tensor updated with `.add_(1)`",
            at=at if at is not None and (at.line, at.column) != (risk.guard.read.line, risk.guard.read.column) else None,
        )
