"""RCL302 autocast-switch (project rule): call sites inside and outside ``autocast``."""

from __future__ import annotations

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.models import Boundedness, Severity, Subject
from recompile_lint.rules._common import places
from recompile_lint.rules._shapes import module_of, site_function, split_by_state
from recompile_lint.rules.base import Rule

AUTOCAST = frozenset(
    {
        "torch.autocast",
        "torch.amp.autocast",
        "torch.amp.autocast_mode.autocast",
        "torch.cuda.amp.autocast",
        "torch.cpu.amp.autocast",
        "torch.xpu.amp.autocast",
    }
)


class AutocastSwitch(Rule):
    """One compiled function called both inside and outside ``torch.autocast``.

    The autocast state of each device is part of Dynamo's global-state guard
    (``GLOBAL_STATE changed: autocast(cpu)_enabled``, also ``autocast(cpu)_dtype``): calling
    the same compiled function with and without autocast keeps two graphs. Bounded, by design,
    and off by default.
    """

    code = "RCL302"
    name = "autocast-switch"
    severity = Severity.INFO
    bounded = Boundedness.BY_DESIGN
    summary = "Compiled function called both inside and outside torch.autocast (2 graphs)"

    VALID = (
        """
import torch


@torch.compile
def project(x, w):
    return x @ w


def run(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        a = project(x, w)
        b = project(x, w)  # always under autocast: one graph
    return a, b
""",
    )
    INVALID = (
        """
import torch


@torch.compile
def project(x, w):
    return x @ w


def run(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fast = project(x, w)  # RCL302
    exact = project(x, w)
    return fast, exact
""",
    )

    def check_project(self, ctx: ProjectContext) -> None:
        for region in ctx.regions:
            inside, outside = split_by_state(ctx.index, region, AUTOCAST)
            if not inside or not outside:
                continue
            others = places((s.path, s.span.line) for s in outside)
            for site, state in inside:
                ctx.report(
                    site.path,
                    site.span,
                    f"compiled `{region.name}` is called under `{state}(...)` here and without autocast at {others}: "
                    f"the autocast state is guarded (`GLOBAL_STATE changed: autocast(cpu)_enabled`), so both keep a "
                    f"graph (2 graphs, bounded, by design). To keep one: call it under the same autocast state "
                    f"everywhere, or compile a separate function for mixed precision",
                    subject=Subject(kind="state", module=module_of(ctx, region), name="autocast", examples=(state,)),
                    region=region.name,
                    function=site_function(site),
                )
