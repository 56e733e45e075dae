from __future__ import annotations

import libcst as cst

from recompile_lint.analysis.context import FunctionContext, child_nodes
from recompile_lint.models import Boundedness, Severity, Subject
from recompile_lint.rules._common import dotted
from recompile_lint.rules.base import Rule

# Annotations that say a parameter is not a Python int.
NOT_INT = ("Tensor", "tensor", "float", "str", "bool", "list", "List", "tuple", "Tuple", "Sequence", "dict", "Dict")


class RangeBoundArgument(Rule):
    """An int argument of a compiled function used as a ``range()`` bound.

    Dynamo unrolls a Python ``for`` loop over ``range(n)``, so the number of iterations is
    baked into the graph and the argument is guarded as a constant (``end == 3``, then
    ``start == 1``): automatic dynamic shapes cannot make it symbolic. Every new value
    recompiles; after ``recompile_limit`` (8) the function runs eagerly for good.
    """

    code = "RCL106"
    name = "range-bound-argument"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "Int argument of a compiled function used as a range() bound"

    VALID = (
        """
import torch

N_LAYERS = 4


@torch.compile
def stack(x, weights):
    for i in range(N_LAYERS):  # a constant bound: one graph
        x = x @ weights[i]
    return x
""",
    )
    INVALID = (
        """
import torch


@torch.compile
def partial_sum(x, start: int, end: int):
    total = x.new_zeros(())
    for i in range(start, end):  # RCL106
        total = total + x[i]
    return total
""",
    )

    def check_function(self, ctx: FunctionContext) -> None:
        if not ctx.is_entry or ctx.function.is_lambda and not ctx.function.params:
            return
        params = {
            p.name: p
            for p in ctx.function.params
            if p.kind in ("positional", "keyword") and p.name not in ("self", "cls") and not any(t in p.annotation for t in NOT_INT)
            and p.default_kind in ("", "int", "none")
        }
        if not params:
            return
        for node in ctx.nodes_of(cst.Call):
            if not (dotted(node.func) == "range" and ctx.global_value("range") is None):
                continue
            used = [n.value for arg in node.args for n in _names(arg.value) if n.value in params]
            if not used:
                continue
            names = ", ".join(f"`{n}`" for n in dict.fromkeys(used))
            ctx.report(
                node,
                f"argument {names} of compiled `{ctx.region.name}` bounds a Python `range()`: the loop is unrolled, "
                f"so each new value is a new graph; after 8 recompiles `{ctx.region.name}` falls back to eager for good "
                f"(unbounded). Fix: loop over a fixed bound and mask, use tensor ops (`x[start:end].sum()`), or keep "
                f"the bound constant per compiled function",
                subject=Subject(kind="parameter", module=ctx.module.module, name=used[0], value_kind="int"),
            )


def _names(node: cst.CSTNode):
    """Names used as plain values in a bound (``n``, ``n + 1``), not ``x.shape[0]`` or
    ``len(xs)``: those are sizes and lengths, which other rules judge."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            yield current
        if isinstance(current, (cst.Attribute, cst.Call, cst.Subscript)):
            continue
        stack.extend(child_nodes(current))
