"""RCL201 rank-polymorphic. Guards: a tensor argument's rank (TENSOR_MATCH rank). Evidence: call sites passing several ranks. Also a reshape whose rank comes from a Python value (function rule)."""

from __future__ import annotations

import libcst as cst

from recompile_lint.analysis.callsites import CallSite
from recompile_lint.analysis.context import FunctionContext, ProjectContext
from recompile_lint.models import Boundedness, Severity, Subject
from recompile_lint.rules._common import dotted, places, via
from recompile_lint.rules._shapes import (
    SHAPE_FUNCTIONS,
    SHAPE_METHODS,
    argument_for,
    entry_params,
    is_sequence_annotation,
    module_of,
    rank_receiver,
    site_function,
    sites_of,
    walk,
)
from recompile_lint.analysis.risks import Risk
from recompile_lint.rules._risk import logged, reader, report
from recompile_lint.rules.base import Rule


# What a tensor guard checks, by what changed (``execution.cache.tensor_change``), and the fix.
TENSOR_CHANGES = {"rank": "rank", "size": "sizes", "dtype": "dtype", "device": "device", "requires_grad": "requires_grad flag", "stride": "strides", "small-size": "sizes"}
TENSOR_FIXES = {
    "size": "mark the varying dimension dynamic (`torch._dynamo.mark_dynamic(x, 0)`) or keep the size fixed (pad to one size)",
    "dtype": "convert it to one dtype before the call (`x.to(torch.float32)`)",
    "device": "move it to one device before the call",
    "requires_grad": "keep `requires_grad` the same at every call (detach it, or set it once before the first call)",
    "stride": "pass one layout at every call (`x.contiguous()` before the call)",
    "small-size": "drop or pad the short batch (`drop_last=True`, or pad to the batch size), or mark the dim unbacked (`torch._dynamo.decorators.mark_unbacked(x, 0)`), which does not specialise 0 or 1",
}


class RankPolymorphic(Rule):
    """Compiled code written for several tensor ranks: one graph per rank.

    Dynamo specializes every graph on the rank of each input tensor
    (``tensor 'x' rank mismatch. expected 1, actual 2``). Code that branches on ``x.dim()``,
    ``x.ndim`` or ``len(x.shape)``, or that reshapes to a rank computed from a Python value
    (``x.view(*shape)``, ``x.reshape([1] * nd)``, guard ``nd == 1``), is written to be called
    with several ranks, and each one compiles its own graph. That is bounded when the ranks
    are few, and unbounded if ranks are unbounded. It stays silent when every call site of
    the compiled function passes the same rank, and reports call sites that pass tensors of
    different literal ranks (``torch.randn(8)`` and ``torch.randn(2, 8)``).
    """

    code = "RCL201"
    name = "rank-polymorphic"
    severity = Severity.WARNING
    bounded = Boundedness.BOUNDED
    summary = "Compiled code that branches on a tensor's rank or reshapes to a rank from a Python value"
    # The answer depends on the region (its dynamic= option, its call sites): a helper reached
    # from several regions is checked for each.
    per_region = True

    VALID = (
        """
import torch


@torch.compile
def normalize(x):
    return x / x.norm(dim=-1, keepdim=True)  # rank-agnostic: one graph per rank only if callers vary it


def run():
    normalize(torch.randn(4, 8))
""",
        """
import torch


@torch.compile
def flatten_batch(x, nd):
    return x.reshape([1] * nd + [-1])


def run():
    a = flatten_batch(torch.randn(8), 2)
    b = flatten_batch(torch.randn(16), 2)  # the same rank at every call site: one graph
    return a, b
""",
    )
    INVALID = (
        """
import torch


@torch.compile
def to_batch(x):
    if x.dim() == 1:  # RCL201
        x = x.unsqueeze(0)
    return x.softmax(-1)


def run():
    to_batch(torch.randn(8))
    to_batch(torch.randn(4, 8))  # RCL201
""",
        """
import torch


@torch.compile
def broadcast_to(x, nd):
    return x.reshape([1] * nd + [-1])  # RCL201


def run(x):
    for nd in range(1, 4):
        broadcast_to(x, nd)
""",
        """
import torch


@torch.compile
def normalize(x):
    return x / x.norm(dim=-1, keepdim=True)


def run():
    a = normalize(torch.randn(8))
    b = normalize(torch.randn(4, 8))  # RCL201
    return a, b
""",
    )

    def claims(self, risk: Risk) -> bool:
        """The rank of a tensor argument the compiled code uses (a branch on ``x.ndim``), that
        its callers pass tensors of several ranks; and any tensor guard a run of the project saw
        fail (rank, size, dtype, device, ``requires_grad``)."""
        return risk.guard.guard.kind == "TENSOR_MATCH" and (risk.guard.guard.detail == "rank" or (risk.run and risk.guard.guard.detail in TENSOR_CHANGES))

    def check_risk(self, risk: Risk, ctx: ProjectContext) -> None:
        name = risk.guard.storage.name
        detail = risk.guard.guard.detail
        if detail == "small-size":
            shown = logged(risk.guard.guard.source)
            tensor, _, dim = shown.partition(".size()")
            failure = f"`2 <= {shown}`" if dim else f"`tensor '{tensor}' size mismatch`"
            report(
                ctx,
                risk,
                f"{reader(risk, ctx.index)} reads tensor `{tensor}`, which has a size of 0 or 1 at some calls and larger at "
                f"others: Dynamo specialises a size of 0 or 1 even where sizes are dynamic ({failure} when it comes); "
                f"{risk.evidence.why}",
                TENSOR_FIXES[detail],
            )
            return
        if detail in TENSOR_CHANGES and detail != "rank":
            shown = logged(risk.guard.guard.source)
            report(
                ctx,
                risk,
                f"{reader(risk, ctx.index)} reads tensor `{shown}` and Dynamo guards its {TENSOR_CHANGES[detail]} "
                f"(`tensor '{shown}' {detail} mismatch` when it changes); {risk.evidence.why}",
                TENSOR_FIXES[detail],
            )
            return
        report(
            ctx,
            risk,
            f"{reader(risk, ctx.index)} uses the rank of argument `{name}` (`tensor '{name}' rank mismatch` when it "
            f"changes), and its callers pass {risk.evidence.why}",
            f"give `{risk.region.name}` one rank (reshape to a fixed rank before the call, e.g. "
            f"`x.reshape(-1, x.shape[-1])`) or compile one function per rank",
        )

    def check_function(self, ctx: FunctionContext) -> None:
        params = {p.name for p in ctx.function.params}
        reported: set[str] = set()
        for node in ctx.nodes_of(cst.Call):
            source = self.rank_source(ctx, node, params)
            if source is None or source in reported:
                continue
            if self.single_value(ctx, source):
                continue
            reported.add(source)
            ctx.report(
                node,
                f"{via(ctx)} reshapes to a rank computed from the Python value `{source}`: the value is "
                f"baked into the graph (guard `{source} == ...`), so each rank compiles its own graph "
                f"(bounded: one graph per rank; unbounded if ranks are unbounded). Fix: keep the rank "
                f"fixed (pad the shape to a constant length) or call with one `{source}`",
                subject=Subject(kind="rank", module=ctx.module.module, name=source, value_kind="int"),
            )

    def check_project(self, ctx: ProjectContext) -> None:
        """Call sites that pass tensors of different literal ranks for one parameter."""
        for region in ctx.regions:
            params = entry_params(ctx.index, region)
            if not params:
                continue
            sites = sites_of(ctx.index, region)
            for param in params:
                first: dict[int, CallSite] = {}
                for site in sites:
                    arg = argument_for(site, params, param.name)
                    if arg is not None and arg.kind == "call" and arg.rank is not None and not arg.loop_names:
                        first.setdefault(arg.rank, site)
                if len(first) < 2:
                    continue
                ranks = sorted(first)
                for rank in ranks[1:]:
                    site = first[rank]
                    ctx.report(
                        site.path,
                        site.span,
                        f"compiled `{region.name}` gets `{param.name}` with rank {rank} here and rank {ranks[0]} at "
                        f"{places([(first[ranks[0]].path, first[ranks[0]].span.line)])}: Dynamo specializes on rank "
                        f"(`tensor '{param.name}' rank mismatch. expected {ranks[0]}, actual {rank}`), one graph per rank "
                        f"(bounded; unbounded if ranks are unbounded). Fix: reshape to one rank before the call",
                        subject=Subject(kind="rank", module=module_of(ctx, region), name=param.name, value_kind="tensor", examples=tuple(str(r) for r in ranks)),
                        region=region.name,
                        function=site_function(site),
                    )

    @staticmethod
    def rank_source(ctx: FunctionContext, call: cst.Call, params: set[str]) -> str | None:
        """The parameter a shape argument's length comes from: ``*shape``, ``[1] * nd``."""
        func = call.func
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            if name not in SHAPE_METHODS and not (dotted(func).startswith("torch.") and name in SHAPE_FUNCTIONS):
                return None
        else:
            return None
        annotations = {p.name: p.annotation for p in ctx.function.params}
        for arg in call.args:
            value = arg.value
            if arg.star == "*" and isinstance(value, cst.Name) and value.value in params:
                return value.value
            if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
                for side, other in ((value.left, value.right), (value.right, value.left)):
                    if isinstance(side, (cst.List, cst.Tuple)):
                        ranks = _tensor_ranks(other)
                        for sub in walk(other):
                            if isinstance(sub, cst.Name) and sub.value in params and id(sub) not in ranks:
                                return sub.value
            if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
                # ``[1] * nd + [-1]``: look inside the concatenation.
                inner = cst.Call(func=call.func, args=[cst.Arg(value.left), cst.Arg(value.right)])
                found = RankPolymorphic.rank_source(ctx, inner, params)
                if found is not None:
                    return found
            if not arg.star and isinstance(value, cst.Name) and value.value in params and is_sequence_annotation(annotations.get(value.value, "")):
                return value.value
        return None

    @staticmethod
    def single_rank(ctx: FunctionContext, name: str) -> bool:
        """Every call site passes a tensor of the same known rank for entry parameter ``name``."""
        if not ctx.is_entry:
            return False
        params = entry_params(ctx.index, ctx.region)
        ranks = set()
        for site in sites_of(ctx.index, ctx.region):
            arg = argument_for(site, params, name)
            if arg is None or arg.rank is None or arg.loop_var or arg.loop_names:
                return False
            ranks.add(arg.rank)
        return len(ranks) == 1

    @staticmethod
    def single_value(ctx: FunctionContext, name: str) -> bool:
        """Every call site passes the same literal (or same-length display) for ``name``."""
        if not ctx.is_entry:
            return False
        params = entry_params(ctx.index, ctx.region)
        values = set()
        for site in sites_of(ctx.index, ctx.region):
            arg = argument_for(site, params, name)
            if arg is None or arg.loop_var or arg.loop_names:
                return False
            if arg.kind == "int":
                values.add(arg.text)
            elif arg.length is not None:
                values.add(arg.length)
            else:
                return False
        return len(values) == 1


def _tensor_ranks(expr: cst.CSTNode) -> set[int]:
    """The names in ``expr`` read only for a tensor's rank (``loss.ndim``, ``h.dim()``,
    ``len(x.shape)``: ``rank_receiver``): Dynamo already specialises on that rank (a
    ``TENSOR_MATCH``), so a length computed from it adds no guard of its own."""
    return {id(name) for node in walk(expr) if (name := rank_receiver(node)) is not None}
