"""RCL205 last-batch-specialization (project rule): a compiled callee called on the batches of a DataLoader that keeps its last batch."""

from __future__ import annotations

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.models import Boundedness, Severity, Subject
from recompile_lint.rules._shapes import entry_params, loader_loop, marks_unbacked, module_of, sites_of
from recompile_lint.rules.base import Rule


class LastBatchSpecialization(Rule):
    """A compiled model or function called on the batches of a DataLoader that keeps its last,
    smaller batch.

    The first batch compiles a graph for its exact size; the last batch (a different size)
    recompiles with a dynamic batch dimension. Sizes 0 and 1 are always specialized, even with
    ``dynamic=True`` or ``mark_dynamic``: a last batch of one sample compiles a third graph
    (``2 <= x.size()[0]  ... 0/1 specialization ... try mark_unbacked``). Bounded: 2-3 graphs,
    each a full compile. ``drop_last=True`` or ``torch._dynamo.decorators.mark_unbacked(x, 0)``
    on the batch inside the loop keeps one graph.
    """

    code = "RCL205"
    name = "last-batch-specialization"
    severity = Severity.WARNING
    bounded = Boundedness.BOUNDED
    summary = "Compiled model called on DataLoader batches without drop_last=True (last batch recompiles)"

    VALID = (
        """
import torch
from torch import nn
from torch.utils.data import DataLoader


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)


def train(dataset):
    model = torch.compile(Net())
    for x, y in DataLoader(dataset, batch_size=32, shuffle=True, drop_last=True):
        model(x)
""",
        """
import torch
from torch import nn
from torch.utils.data import DataLoader


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)


def train(dataset):
    model = torch.compile(Net())
    for x, y in DataLoader(dataset, batch_size=32):
        torch._dynamo.decorators.mark_unbacked(x, 0)  # one graph for every batch size, 0 and 1 included
        model(x)
""",
    )
    INVALID = (
        """
import torch
from torch import nn
from torch.utils.data import DataLoader


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)


def train(dataset):
    model = torch.compile(Net())
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    for x, y in loader:
        model(x)  # RCL205
""",
    )

    def check_project(self, ctx: ProjectContext) -> None:
        for region in ctx.regions:
            if region.dynamic == "False":
                continue  # every size is static there: RCL204 reports it
            params = entry_params(ctx.index, region)
            for site in sites_of(ctx.index, region):
                if not site.args and not site.keywords:
                    continue
                found = loader_loop(ctx.index, site)
                if found is None:
                    continue
                loop, loader = found
                if not loader.keeps_last_batch or loader.single_sample_batches or marks_unbacked(loop):
                    continue
                batch = site.args[0].text if site.args else site.keywords[0][1].text
                name = params[0].name if params else ""
                ctx.report(
                    site.path,
                    site.span,
                    f"compiled `{region.name}` is called on batches of a DataLoader without `drop_last=True` "
                    f"(loop `for ... in {loop.iter_text}`): the last, smaller batch recompiles with a dynamic batch "
                    f"size, and a last batch of 1 is specialized again (`2 <= x.size()[0]`, 0/1 specialization): "
                    f"2-3 graphs (bounded). Fix: `drop_last=True` on the DataLoader, or "
                    f"`torch._dynamo.decorators.mark_unbacked({batch}, 0)` before the call (one graph)",
                    subject=Subject(kind="parameter", module=module_of(ctx, region), name=name, value_kind="tensor"),
                    region=region.name,
                    function=f"{site.module}.{site.function}" if site.function and site.module else site.function,
                )
