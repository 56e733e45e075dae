"""RCL301 grad-mode-switch (project rule): call sites inside and outside ``no_grad``/``inference_mode``."""

from __future__ import annotations

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.models import Boundedness, Guard, Severity, Subject
from recompile_lint.rules._common import places
from recompile_lint.rules._shapes import module_of, site_function, split_by_state
from recompile_lint.rules.base import Rule

NO_GRAD = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.inference_mode",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.inference_mode",
    }
)
ENABLE_GRAD = frozenset({"torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad"})


class GradModeSwitch(Rule):
    """One compiled function called both with and without gradients.

    Grad mode is part of Dynamo's global-state guard: a call under ``torch.no_grad()`` or
    ``torch.inference_mode()`` (a ``with`` block or a decorator on the calling function) after a
    call with gradients enabled fails it (``GLOBAL_STATE changed: grad_mode``) and compiles a
    second graph. Both graphs stay cached, so this costs exactly one extra compile: by design,
    and off by default.
    """

    code = "RCL301"
    name = "grad-mode-switch"
    severity = Severity.INFO
    bounded = Boundedness.BY_DESIGN
    summary = "Compiled function called both inside and outside torch.no_grad()/inference_mode() (2 graphs)"

    VALID = (
        """
import torch


@torch.compile
def predict(x):
    return x.softmax(-1)


@torch.no_grad()
def evaluate(xs):
    return [predict(x) for x in xs]  # only ever called without gradients: one graph
""",
    )
    INVALID = (
        """
import torch


@torch.compile
def predict(x):
    return x.softmax(-1)


def train_step(x):
    return predict(x).sum()


def evaluate(x):
    with torch.no_grad():
        return predict(x)  # RCL301
""",
    )

    def check_project(self, ctx: ProjectContext) -> None:
        for region in ctx.regions:
            inside, outside = split_by_state(ctx.index, region, NO_GRAD, ENABLE_GRAD)
            if not inside or not outside:
                continue
            others = places((s.path, s.span.line) for s in outside)
            for site, state in inside:
                ctx.report(
                    site.path,
                    site.span,
                    f"compiled `{region.name}` is called under `{state}()` here and with gradients enabled at {others}: "
                    f"grad mode is guarded (`GLOBAL_STATE changed: grad_mode`), so both modes keep a graph "
                    f"(2 graphs, bounded, by design). To keep one: compile a separate function for inference, or "
                    f"always call it in the same mode",
                    subject=Subject(kind="state", module=module_of(ctx, region), name="grad_mode", examples=(state,)),
                    region=region.name,
                    function=site_function(site),
                    # inference_mode turns grad mode off too: Dynamo's global-state guard names
                    # the grad mode for both (GROUND_TRUTH.md, Global state).
                    guard=Guard("GLOBAL_STATE", "", "grad_mode"),
                )
