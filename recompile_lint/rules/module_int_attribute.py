"""RCL104 module-int-attribute. Guards: an attribute reached through an nn.Module or a plain object (``L['self'].step``, submodules, properties, hooks). Evidence: writes between calls, or per-instance values of instances compiled one by one."""

from __future__ import annotations

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.analysis.guards import HOOKED
from recompile_lint.analysis.risks import Risk
from recompile_lint.models import Boundedness, Severity
from recompile_lint.rules._risk import changes, logged, reader, report
from recompile_lint.rules.base import Rule

class ModuleIntAttribute(Rule):
    """An integer attribute of an ``nn.Module`` (or any object) read in compiled code and
    changed between calls: ``self.step += 1`` in ``forward``, ``model.step = i`` outside.

    Dynamo treats integer attributes of modules as static and guards on their value
    (``self.step == 0 ... HINT: torch.compile considers integer attributes of the nn.Module to
    be static``). Each new value compiles another graph; after ``recompile_limit`` (8) the
    module runs eagerly for good. The cache is per code object, so many instances with
    different values share one budget.
    """

    code = "RCL104"
    name = "module-int-attribute"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "nn.Module int attribute read in compiled forward and changed between calls"

    VALID = (
        """
import torch
from torch import nn


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("step", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        self.step.add_(1)  # a buffer updated in place: one graph
        return x * self.step


model = torch.compile(Counter())
""",
    )
    INVALID = (
        """
import torch
from torch import nn


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 0

    def forward(self, x):
        self.step += 1  # RCL104
        return x * self.step


model = torch.compile(Counter())
""",
    )

    def claims(self, risk: Risk) -> bool:
        """An attribute read through an ``nn.Module`` instance (``self.step``,
        ``self._modules['blocks']._modules['0'].k``, ``self.trainer.current_epoch``), an
        attribute of instances of a class compiled one by one, or the class of the compiled
        module or of a submodule (``TYPE_MATCH``)."""
        storage = risk.guard.storage
        if risk.guard.guard.kind == "TYPE_MATCH":
            return True  # the class of the compiled module or of one of its submodules
        return storage.kind == "attribute" and storage.name != "training" and not risk.guard.guard.source.startswith("G[")

    def check_risk(self, risk: Risk, ctx: ProjectContext) -> None:
        storage = risk.guard.storage
        owner = storage.owner.rsplit(".", 1)[-1] if storage.owner else "its object"
        attr = storage.name
        if risk.evidence.per_instance:
            what = (
                f"`{logged(risk.guard.guard.source)}` ({risk.value_kind}, set per instance of `{owner}`) is read in {reader(risk, ctx.index)}, "
                f"and instances are compiled one by one: they share one code object and one cache ({risk.evidence.why})"
            )
            fix = f"register it as a buffer (`self.register_buffer(\"{attr}\", torch.tensor({attr}))`) or pass it to forward as a tensor"
        elif storage.owner == HOOKED:
            what = (
                f"`{attr}` ({risk.value_kind}), an attribute of the modules a forward hook is registered on, is read in "
                f"{reader(risk, ctx.index)} and {changes(risk)}; Dynamo inlines the hook into the compiled call and treats "
                f"integer attributes of an nn.Module as static"
            )
            fix = (
                f"keep the count in a buffer of the hooked module (`module.register_buffer(\"{attr}\", torch.zeros((), "
                f"dtype=torch.long))`, updated with `module.{attr}.add_(1)`), or count outside the compiled model"
            )
        elif risk.guard.guard.kind == "TYPE_MATCH" and "._modules[" not in risk.guard.guard.source:
            shown = logged(risk.guard.guard.source)
            what = (
                f"`{shown}` is a module of another class at some calls of {reader(risk, ctx.index)}, "
                f"{changes(risk)}: the classes share this code and its cache, and Dynamo checks the class"
            )
            fix = "expect one graph per class, or give each class its own compiled function (its own `forward`)"
        elif risk.guard.guard.kind == "TYPE_MATCH":
            shown = logged(risk.guard.guard.source)
            what = (
                f"`{shown}`, a submodule of `{owner}`, is a module of another class at some calls of "
                f"{reader(risk, ctx.index)}, {changes(risk)}; Dynamo checks the class of each submodule it uses"
            )
            fix = (
                "give every call a submodule of one class (the same layers, configured differently), "
                "or compile each variant of the model on its own"
            )
        elif risk.guard.guard.kind == "LENGTH_CHECK" and risk.guard.guard.source.endswith("._modules)"):
            shown = logged(risk.guard.guard.source)
            what = (
                f"`{shown}`, the number of modules in a container of `{owner}`, is read in {reader(risk, ctx.index)} "
                f"and {changes(risk)}; Dynamo unrolls the loop over the container and guards how many modules it holds"
            )
            fix = (
                "build every module before compiling and keep their number fixed (skip the unused ones with a flag), "
                "or compile each module on its own (`module.compile()`) rather than the model that loops over them"
            )
        elif risk.guard.guard.kind == "CONSTANT_MATCH" and "._modules[" in risk.guard.guard.source and attr == "_size":
            # ``nn.ParameterList`` keeps its length in ``_size``, read when it is iterated.
            shown = logged(risk.guard.guard.source)
            what = (
                f"`{shown}`, the number of parameters in a parameter list of `{owner}`, is read in {reader(risk, ctx.index)} "
                f"and {changes(risk)}; Dynamo unrolls the loop over the list and treats its length, an integer "
                f"attribute of an nn.Module, as static"
            )
            fix = (
                "create every parameter before compiling and keep their number fixed (mask the unused ones), "
                "or stack them in one parameter and index it"
            )
        elif risk.guard.guard.kind == "CONSTANT_MATCH" and "._modules[" in risk.guard.guard.source and attr == "p":
            # A dropout layer's probability, read by the layer's own forward.
            shown = logged(risk.guard.guard.source)
            what = (
                f"`{shown}`, the probability a dropout layer of `{owner}` applies, is read in {reader(risk, ctx.index)} "
                f"and {changes(risk)}; dropout needs it as a Python number, never a graph input"
            )
            fix = (
                "keep the dropout probability fixed while the model runs compiled (a schedule of a few values costs "
                "one graph each), or change it only before compiling"
            )
        else:
            shown = logged(risk.guard.guard.source)
            what = f"`{shown}` ({risk.value_kind} attribute of `{owner}`) is read in {reader(risk, ctx.index)} and {changes(risk)}"
            fix = (
                f"`self.register_buffer(\"{attr}\", torch.zeros((), dtype=torch.long))` and update it in place "
                f"(`self.{attr}.add_(1)`), or pass the value to forward as a tensor"
            )
            if risk.guard.module_attribute and risk.value_kind == "int":
                what += "; Dynamo treats integer attributes of an nn.Module as static"
        report(ctx, risk, what, fix)
