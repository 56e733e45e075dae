from __future__ import annotations

import libcst as cst

from recompile_lint.analysis.context import FunctionContext
from recompile_lint.analysis.facts import Mutation
from recompile_lint.models import Boundedness, Guard, Severity, Subject
from recompile_lint.rules._common import kinds_of, reads_of, via, where, writes
from recompile_lint.rules.base import Rule

# Attributes every nn.Module has whose changes other rules (or nothing) cover.
SKIPPED = frozenset({"training"})


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

    def check_function(self, ctx: FunctionContext) -> None:
        cls = ctx.enclosing_class()
        if cls is None:
            return
        reads = reads_of(ctx)
        seen: set[str] = set()
        for node in reads.attributes:
            if not (isinstance(node.value, cst.Name) and node.value.value == "self"):
                continue
            attr = node.attr.value
            if attr in seen or attr in SKIPPED:
                continue
            seen.add(attr)
            self.check_attribute(ctx, cls, node, attr)

    def check_attribute(self, ctx: FunctionContext, cls, node: cst.Attribute, attr: str) -> None:
        index = ctx.index
        if index.is_buffer(ctx.module, cls, attr):
            return
        found = index.class_attr(ctx.module, cls, attr)
        owners = {f"{f.module}.{c.qualname}" if f.module else c.qualname for f, c in index.mro(ctx.module, cls)}
        mutations = self.mutations(ctx, attr, owners)
        if not mutations:
            self.check_per_instance(ctx, node, attr, found)
            return
        kind = found[2].kind if found is not None else ""
        if kind in ("", "unknown", "none"):
            kinds = kinds_of(mutations)
            kind = "float" if "float" in kinds else (kinds.pop() if len(kinds) == 1 else kind)
        if kind not in ("int", "str"):
            # floats and bools are bounded; tensors, submodules and unknowns are not flagged.
            return
        owner_facts, owner_cls = (found[0], found[1]) if found is not None else (ctx.module, cls)
        unknown = [m for m in mutations if not m.owner]
        hint = ""
        if unknown and len(unknown) == len(mutations):
            hint = f" (matched by attribute name: `{owner_cls.name}` initialises `{attr}` to an {kind})"
        ctx.report(
            node,
            f"`self.{attr}` ({kind} attribute of `{owner_cls.name}`) is read in {via(ctx)} and changed at "
            f"{where(mutations)}{hint}: Dynamo treats integer module attributes as static, so every new value "
            f"recompiles; after 8 recompiles `{ctx.region.name}` falls back to eager for good (unbounded). "
            f"Fix: `self.register_buffer(\"{attr}\", torch.zeros((), dtype=torch.long))` and update it in place "
            f"(`self.{attr}.add_(1)`), or pass the value to forward as a tensor",
            subject=Subject(kind="instance-attribute", module=owner_facts.module, owner=owner_cls.qualname, name=attr, value_kind=kind),
            guard=Guard("CONSTANT_MATCH", f"L['self'].{attr}") if ctx.is_entry else None,
            evidence=writes(mutations, f"`{owner_cls.name}.{attr}`"),
        )

    def check_per_instance(self, ctx: FunctionContext, node: cst.Attribute, attr: str, found) -> None:
        """Instances compiled one by one (``for block in blocks: block.compile()``) share the
        method's code object and so one cache: an int set per instance from ``__init__`` is a
        different constant for each (``self.layer_idx == 0``)."""
        if found is None or not found[2].from_param or found[2].kind not in ("int", "str"):
            return
        if not ctx.region.site.in_loop or not ctx.region.model_class:
            return
        owner_facts, owner_cls, init = found
        ctx.report(
            node,
            f"`self.{attr}` ({init.kind}, set per instance in `{owner_cls.name}.__init__`) is read in {via(ctx)}, "
            f"and instances are compiled one by one in a loop: they share one cache, so each instance's value "
            f"is another graph; past 8 instances the rest run eagerly (unbounded). Fix: register it as a buffer "
            f"(`self.register_buffer(\"{attr}\", torch.tensor({attr}))`) or pass it to forward as a tensor",
            subject=Subject(kind="instance-attribute", module=owner_facts.module, owner=owner_cls.qualname, name=attr, value_kind=init.kind),
        )

    @staticmethod
    def mutations(ctx: FunctionContext, attr: str, owners: set[str]) -> list[Mutation]:
        """Changes of ``<instance>.attr`` on this class: by owner where the receiver's class is
        known, else by attribute name in modules that can see the class."""
        out = []
        class_modules = {o.rsplit(".", 1)[0] for o in owners if "." in o}
        for mutation in ctx.index.mutations("instance-attribute", "", attr):
            if mutation.owner:
                if mutation.owner in owners:
                    out.append(mutation)
                    continue
                # An instance of a subclass that inherits the compiled method.
                found = ctx.index.resolve_class(mutation.owner, mutation.path)
                if found is not None and any(f"{f.module}.{c.qualname}" in owners for f, c in ctx.index.mro(*found)):
                    out.append(mutation)
                continue
            facts = ctx.index.facts(mutation.path)
            if facts is None:
                continue
            if mutation.path == ctx.path or facts.module in class_modules or any(
                target.rsplit(".", 1)[0] in class_modules or target in class_modules for _, target in facts.imports
            ):
                out.append(mutation)
        return out
