from __future__ import annotations

import libcst as cst

from recompile_lint.analysis.context import FunctionContext
from recompile_lint.models import Boundedness, Severity, Subject
from recompile_lint.rules._common import BOUNDED_KINDS, constant_key, via
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

    def check_function(self, ctx: FunctionContext) -> None:
        for node in ctx.nodes_of(cst.AugAssign, cst.Assign):
            if isinstance(node, cst.AugAssign):
                self.check_update(ctx, node, node.target)
            elif (
                isinstance(node, cst.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0].target, cst.Name)
                and isinstance(node.value, cst.BinaryOperation)
                and isinstance(node.value.left, cst.Name)
            ):
                # ``n = n + 1`` is the same update as ``n += 1``.
                target = node.targets[0].target
                if target.value == node.value.left.value and target.value in ctx.function.global_decls:
                    self.check_update(ctx, node, target)

    def check_update(self, ctx: FunctionContext, stmt: cst.CSTNode, target: cst.BaseExpression) -> None:
        subject = None
        text = ""
        kind = ""
        if isinstance(target, cst.Name):
            if target.value not in ctx.function.global_decls:
                return
            value = ctx.global_value(target.value)
            kind = value.kind if value is not None else "int"
            text = f"global `{target.value}`"
            subject = Subject(kind="global", module=ctx.module.module, name=target.value, value_kind=kind)
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
            value = ctx.global_value(target.value.value)
            key = constant_key(target)
            if value is None or value.binding is None or value.binding.kind not in ("dict", "object", "unknown", "list"):
                return
            kind = value.binding.item_kind(key) if key is not None else ""
            text = f"`{target.value.value}[{key!r}]`" if key is not None else f"an entry of `{target.value.value}`"
            subject = Subject(kind="item", module=value.origin.module if value.origin else ctx.module.module, name=value.binding.name, key=key or "", value_kind=kind or "int")
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value != "self":
            value = ctx.global_value(target.value.value)
            if value is None or value.binding is None or value.binding.kind not in ("object", "class", "unknown"):
                return
            text = f"`{target.value.value}.{target.attr.value}`"
            subject = Subject(kind="attribute", module=value.origin.module if value.origin else ctx.module.module, name=value.binding.name, key=target.attr.value, value_kind="int")
        else:
            return
        if kind in ("tensor", "list", "dict"):
            return
        bounded = kind in BOUNDED_KINDS
        ctx.report(
            stmt,
            f"{text} is updated inside {via(ctx)}: the graph guards on its current value, so "
            + (
                "each new value compiles another graph (bounded, but one compile per distinct value)"
                if bounded
                else f"every call fails the guard and recompiles; after 8 recompiles `{ctx.region.name}` falls back to eager for good (unbounded)"
            )
            + ". Fix: count outside the compiled function, or keep the counter in a 0-d tensor updated with `.add_(1)`",
            severity=Severity.WARNING if bounded else Severity.ERROR,
            bounded=Boundedness.BOUNDED if bounded else Boundedness.UNBOUNDED,
            subject=subject,
        )
