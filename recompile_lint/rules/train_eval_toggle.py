"""RCL107 train-eval-toggle (project rule): ``train()``/``eval()`` calls on a compiled module, directly or through a function it is handed to."""

from __future__ import annotations

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.analysis.index import FunctionRef
from recompile_lint.rules._shapes import region_aliases
from recompile_lint.models import Boundedness, Severity, Subject
from recompile_lint.rules.base import Rule


class TrainEvalToggle(Rule):
    """``model.train()`` and ``model.eval()`` on a compiled model.

    ``self.training`` is guarded (``self.training == True``), so switching modes compiles a
    second graph. Both graphs stay cached, so this is bounded (2 graphs) and usually intended;
    it matters when the per-mode compile time or ``recompile_limit`` budget is tight.
    """

    code = "RCL107"
    name = "train-eval-toggle"
    severity = Severity.INFO
    bounded = Boundedness.BOUNDED
    summary = "Compiled model switched between train() and eval() (2 graphs)"

    VALID = (
        """
import torch
from torch import nn

model = torch.compile(nn.Linear(4, 4))
model.eval()  # one mode only: one graph
""",
    )
    INVALID = (
        """
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x.relu()


def fit(loader):
    model = Net()
    compiled = torch.compile(model)
    for x in loader:
        model.train()  # RCL107
        compiled(x)
        model.eval()  # RCL107
        compiled(x)
""",
    )

    def check_project(self, ctx: ProjectContext) -> None:
        for region in ctx.regions:
            site = region.site
            if not region.model_class:
                continue
            receivers = {t for t in (site.target if site.target_kind != "call" else "", site.assigned_to) if t}
            facts = ctx.index.facts(region.site_path)
            if facts is None or not receivers:
                continue
            calls = [(region.site_path, c) for c in facts.method_calls if c.receiver in receivers and c.method in ("train", "eval")]
            # The module handed to another function with it (``train_one_epoch(model, compiled)``).
            aliases = region_aliases(ctx.index, region)
            for other in ctx.index.parsed():
                calls += [
                    (other.path, c)
                    for c in other.method_calls
                    if c.method in ("train", "eval") and c.function and (FunctionRef(other.path, c.function), c.receiver) in aliases
                ]
            modes = {("eval" if c.method == "eval" or c.args[:1] == ("False",) else "train") for _, c in calls}
            if modes != {"train", "eval"}:
                continue
            for path, call in calls:
                ctx.report(
                    path,
                    call.span,
                    f"`{call.receiver}.{call.method}()` switches compiled `{region.name}` between training and "
                    f"evaluation: `self.training` is guarded, so each mode has its own graph (bounded: 2 graphs). "
                    f"Fine when intended; compile separate train and eval models if the second compile hurts",
                    region=region.name,
                    subject=Subject(kind="state", name="training", owner=region.model_class),
                )
