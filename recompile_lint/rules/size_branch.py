"""RCL206 size-branch (function rule): a Python branch on a tensor size inside compiled code."""

from __future__ import annotations

import ast
from typing import Iterable

import libcst as cst

from recompile_lint.analysis.callsites import CallSite
from recompile_lint.analysis.callsites import _factory_shape as factory_shape
from recompile_lint.analysis.context import FunctionContext
from recompile_lint.analysis.index import ProjectIndex
from recompile_lint.analysis.regions import CompiledRegion
from recompile_lint.analysis.variation import over_parameters
from recompile_lint.models import Boundedness, Guard, Severity, Subject
from recompile_lint.rules._common import via
from recompile_lint.rules._identity import Trees
from recompile_lint.rules._shapes import branch_tests, entry_params, is_slice_argument, is_whole_shape, loader_loop, raises_only, sites_of, size_receiver, walk
from recompile_lint.rules.base import Rule
from recompile_lint.rules.dynamic_false_varying_sizes import sized_by_helper


class SizeBranch(Rule):
    """A Python ``if`` / ``while`` / ternary on a tensor size inside compiled code.

    Once a size is dynamic, a Python branch on it becomes a guard on the symbolic size
    (``5 <= x.size()[0]``): the first size on the other side of the branch fails the guard and
    compiles a graph for that side. On torch 2.13 that is bounded (one graph per branch side)
    but each side costs a compile. Branches whose only body is ``raise`` (input validation) are
    not reported, nor are branches in a region compiled with ``dynamic=False`` (there every
    new size recompiles anyway: RCL204), nor branches of a region no call is seen to pass
    tensors of different sizes (a fixed shape never takes the other side).
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


for n in range(2, 12):
    chunked(torch.randn(n, 3))
""",
        """
import torch


@torch.compile
def attend(q, k):
    b, t, d = q.shape
    scale = 1.0 if t < 64 else d ** -0.5  # RCL206
    return (q @ k.transpose(-1, -2)) * scale


def encode(lengths):
    for t in lengths:
        q = k = torch.randn(1, t, 16)
        attend(q, k)
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
            if not self.sizes_vary(ctx):
                return
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

    def sizes_vary(self, ctx: FunctionContext) -> bool:
        """Whether the region's call sites show tensors of different sizes (the evidence RCL204
        reads: literal shapes that differ, sizes from a loop variable, a tensor grown in a loop or
        sliced by one, one tensor per model parameter, a DataLoader's last batch). A branch on a
        size no call is seen to change is no evidence of a recompile: a fixed set of shapes
        compiles a graph per shape whether or not the code branches on them."""
        cache = getattr(self, "_varies", None)
        if cache is None or cache[0] is not ctx.index:
            cache = (ctx.index, {})
            self._varies = cache
        key = (ctx.region.site_path, ctx.region.site.span.line, ctx.region.name)
        if key not in cache[1]:
            cache[1][key] = sizes_vary(ctx.index, ctx.region)
        return cache[1][key]

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


def sizes_vary(index: ProjectIndex, region: CompiledRegion) -> bool:
    """Whether some call of ``region`` passes a tensor whose size differs between calls."""
    params = entry_params(index, region)
    shapes: dict[str, set[tuple[str, ...]]] = {}
    for site in sites_of(index, region):
        named = [(params[i].name if i < len(params) else f"#{i}", a) for i, a in enumerate(site.args)] + list(site.keywords)
        for name, arg in named:
            if (arg.shape and arg.loop_names) or is_slice_argument(arg) or (arg.grown and arg.kind == "name"):
                return True
            if over_parameters(site, arg.text):
                return True
            if arg.shape:
                shapes.setdefault(name, set()).add(arg.shape)
            elif arg.loop_var and arg.kind == "name" and sized_by_helper(index, site, arg.text):
                return True
            elif arg.kind == "name" and site.loops and assigned_sized_by_loop(index, site, arg.text):
                return True
        found = loader_loop(index, site)
        if found is not None and site.args and found[1].keeps_last_batch and not found[1].single_sample_batches:
            return True
    return any(len(seen) > 1 for seen in shapes.values())


def assigned_sized_by_loop(index: ProjectIndex, site: CallSite, name: str) -> bool:
    """Whether ``name`` is assigned, inside a loop around the call, a tensor factory whose sizes
    read that loop's variable (``for t in lengths: q = k = torch.randn(2, t, 8); f(q, k)``)."""
    tree = Trees.of(index).tree(site.path)
    facts = index.facts(site.path)
    if tree is None or facts is None:
        return False
    line = site.span.line
    for loop in ast.walk(tree):
        if not isinstance(loop, (ast.For, ast.AsyncFor)) or not (loop.lineno <= line <= (loop.end_lineno or loop.lineno)):
            continue
        targets = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        for node in ast.walk(loop):
            if not isinstance(node, ast.Assign) or node.lineno > line:
                continue
            if not any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                continue
            dims = factory_shape(node.value, facts)
            if any(isinstance(n, ast.Name) and n.id in targets for dim in dims for n in ast.walk(ast.parse(dim, mode="eval"))):
                return True
    return False
