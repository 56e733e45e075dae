"""RCL206 size-branch (function rule): a Python branch on a tensor size inside compiled code."""

from __future__ import annotations

from typing import Iterable

import libcst as cst

from recompile_lint.analysis.context import FunctionContext
from recompile_lint.models import Boundedness, Guard, Severity, Subject
from recompile_lint.rules._common import via
from recompile_lint.rules._shapes import branch_tests, is_whole_shape, raises_only, size_receiver, walk
from recompile_lint.rules.base import Rule


class SizeBranch(Rule):
    """A Python ``if`` / ``while`` / ternary on a tensor size inside compiled code.

    Once a size is dynamic, a Python branch on it becomes a guard on the symbolic size
    (``5 <= x.size()[0]``): the first size on the other side of the branch fails the guard and
    compiles a graph for that side. On torch 2.13 that is bounded (one graph per branch side)
    but each side costs a compile. Branches whose only body is ``raise`` (input validation) are
    not reported, nor are branches in a region compiled with ``dynamic=False`` (there every
    new size recompiles anyway: RCL204).
    """

    code = "RCL206"
    name = "size-branch"
    severity = Severity.WARNING
    bounded = Boundedness.BOUNDED
    summary = "Python branch on a tensor size inside compiled code (one graph per branch side)"
    # The answer depends on the region (its dynamic= option, its call sites): a helper reached
    # from several regions is checked for each.
    per_region = True

    VALID = (
        """
import torch


@torch.compile
def pad_to_block(x, block: int = 8):
    pad = (-x.shape[0]) % block  # arithmetic on sizes stays symbolic: no branch, one graph
    return torch.nn.functional.pad(x, (0, pad))
""",
        """
import torch


@torch.compile
def check(x):
    if x.shape[-1] != 16:  # validation: only the raising side never runs
        raise ValueError("expected 16 features")
    return x * 2
""",
    )
    INVALID = (
        """
import torch


@torch.compile
def chunked(x):
    if x.shape[0] > 4:  # RCL206
        return torch.cat([c * 2 for c in x.chunk(2)])
    return x * 2
""",
        """
import torch


@torch.compile
def attend(q, k):
    b, t, d = q.shape
    scale = 1.0 if t < 64 else d ** -0.5  # RCL206
    return (q @ k.transpose(-1, -2)) * scale
""",
    )

    def check_function(self, ctx: FunctionContext) -> None:
        if ctx.region.dynamic == "False":
            return
        size_names = self.size_locals(ctx, ctx.nodes_of(cst.Assign))
        for stmt, test in branch_tests(ctx.nodes_of(cst.If, cst.While, cst.IfExp)):
            if raises_only(stmt):
                continue
            found = None
            for node in walk(test):
                receiver = size_receiver(node)
                if receiver is not None and ctx.is_local(receiver.value):
                    found = (node, receiver.value)
                    break
                if isinstance(node, cst.Name) and node.value in size_names:
                    found = (node, size_names[node.value])
                    break
            if found is None:
                continue
            node, tensor = found
            ctx.report(
                test,
                f"{via(ctx)} branches in Python on a size of `{tensor}`: once the size is dynamic the "
                f"branch becomes a guard on it (e.g. `5 <= {tensor}.size()[0]`), and the first size on the "
                f"other side compiles another graph (bounded: one graph per branch side). Fix: compute "
                f"both sides with tensor ops (`torch.where`, padding to a fixed block) or branch outside "
                f"`{ctx.region.name}`",
                subject=Subject(kind="parameter", module=ctx.module.module, name=tensor, value_kind="tensor"),
                guard=self.size_guard(ctx, tensor),
            )

    @staticmethod
    def size_guard(ctx: FunctionContext, tensor: str) -> Guard | None:
        """The guard Dynamo reports first when the branched-on size changes.

        A tensor argument of the entry is compiled with static sizes first: the first new size
        fails its size guard (``tensor 'x' size mismatch``, source ``L['x']``) and the recompile
        makes the size symbolic; only then does the branch add its symbolic guard. A tensor
        computed inside the region, or an argument of an inlined helper, has no ``L[...]``
        source of that name: no guard is predicted.
        """
        if not ctx.is_entry or ctx.region.dynamic not in (None, "None"):
            return None  # under dynamic=True the sizes start symbolic: the branch's guard fails first
        params = {p.name for p in ctx.function.params if p.kind in ("positional", "keyword")}
        if tensor not in params or tensor in ("self", "cls"):
            return None
        return Guard("TENSOR_MATCH", f"L[{tensor!r}]", "size")

    @staticmethod
    def size_locals(ctx: FunctionContext, nodes: Iterable[cst.CSTNode]) -> dict[str, str]:
        """Locals assigned from sizes: ``n = x.shape[0]``, ``b, t, c = x.shape`` -> tensor name."""
        out: dict[str, str] = {}
        for node in nodes:
            if not isinstance(node, cst.Assign) or len(node.targets) != 1:
                continue
            target = node.targets[0].target
            value = node.value
            receiver = size_receiver(value)
            if receiver is not None and isinstance(target, cst.Name) and ctx.is_local(receiver.value):
                out[target.value] = receiver.value
                continue
            whole = is_whole_shape(value)
            if whole is not None and isinstance(target, (cst.Tuple, cst.List)) and ctx.is_local(whole.value):
                for element in target.elements:
                    if isinstance(element.value, cst.Name) and element.value.value != "_":
                        out[element.value.value] = whole.value
        return out
