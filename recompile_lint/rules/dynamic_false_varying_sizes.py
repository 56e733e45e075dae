"""RCL204 dynamic-false-varying-sizes (project rule): call sites of a ``dynamic=False`` region passing varying sizes."""

from __future__ import annotations


import ast

from recompile_lint.analysis.callsites import CallSite
from recompile_lint.analysis.context import ProjectContext
from recompile_lint.analysis.facts import dotted_name
from recompile_lint.analysis.guards import first_checked
from recompile_lint.analysis.index import ProjectIndex
from recompile_lint.models import Boundedness, Guard, Severity, Subject
from recompile_lint.rules._common import RECOMPILE_LIMIT, places
from recompile_lint.rules._identity import Trees
from recompile_lint.rules._shapes import entry_params, is_slice_argument, loader_loop, module_of, sites_of
from recompile_lint.analysis.variation import over_parameters
from recompile_lint.rules.base import Rule


class DynamicFalseVaryingSizes(Rule):
    """``torch.compile(..., dynamic=False)`` on a function that callers feed varying sizes.

    ``dynamic=False`` turns off automatic dynamic shapes: every tensor size is baked into the
    graph (``tensor 'x' size mismatch at index 0. expected 32, actual 7``) and each new size
    compiles another graph. With sizes built from a loop variable (``torch.randn(n, 8)``,
    ``x[:i]``), a tensor that grows in a loop (``cache = torch.cat([cache, new])``) or many
    different literal shapes, the function reaches ``recompile_limit`` (8)
    and runs eagerly for good. A DataLoader that keeps its last partial batch costs a second
    graph (bounded, reported as a warning), unless its ``collate_fn`` pads to varying lengths;
    a few different literal shapes cost one graph each (a warning too).
    """

    code = "RCL204"
    name = "dynamic-false-varying-sizes"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "dynamic=False on a compiled function whose callers pass varying tensor sizes"

    VALID = (
        """
import torch


def scale(x):
    return x * 2


fast = torch.compile(scale, dynamic=False)


def run():
    for _ in range(10):
        fast(torch.randn(32, 8))  # one size: one graph
""",
        """
import torch


def scale(x):
    return x * 2


fast = torch.compile(scale)  # automatic dynamic: one recompile, then a symbolic size


def run():
    for n in range(1, 64):
        fast(torch.randn(n, 8))
""",
    )
    INVALID = (
        """
import torch


def scale(x):
    return x * 2


fast = torch.compile(scale, dynamic=False)  # RCL204


def run():
    for n in range(1, 64):
        fast(torch.randn(n, 8))
""",
        """
import torch


@torch.compile(dynamic=False)  # RCL204
def prefix_sum(x):
    return x.cumsum(0)


def run(x):
    for i in range(1, x.shape[0]):
        prefix_sum(x[:i])
""",
    )

    def check_project(self, ctx: ProjectContext) -> None:
        for region in ctx.regions:
            if region.dynamic != "False":
                continue
            unbounded: list[str] = []
            bounded: list[str] = []
            params = entry_params(ctx.index, region)
            shapes: dict[str, dict[tuple[str, ...], tuple[str, int]]] = {}
            varying: list[str] = []  # parameters seen to vary, in the order found
            for site in sites_of(ctx.index, region):
                where = places([(site.path, site.span.line)])
                named = [(params[i].name if i < len(params) else f"#{i}", a) for i, a in enumerate(site.args)] + list(site.keywords)
                for name, arg in named:
                    if arg.shape and arg.loop_names:
                        unbounded.append(f"`{arg.text}` sized by loop variable `{arg.loop_names[0]}` at {where}")
                        varying.append(name)
                    elif is_slice_argument(arg):
                        unbounded.append(f"`{arg.text}` sliced by a loop variable at {where}")
                        varying.append(name)
                    elif arg.grown and arg.kind == "name":
                        unbounded.append(f"`{arg.text}`, grown in a loop, at {where}")
                        varying.append(name)
                    elif over_parameters(site, arg.text):
                        # ``for p in model.parameters(): update(p, p.grad)``: weights and biases
                        # of different layers have different shapes (and ranks).
                        unbounded.append(f"`{arg.text}`, one per model parameter (parameters differ in shape), at {where}")
                        varying.append(name)
                    elif arg.shape:
                        shapes.setdefault(name, {}).setdefault(arg.shape, (site.path, site.span.line))
                    elif arg.loop_var and arg.kind == "name":
                        made = sized_by_helper(ctx.index, site, arg.text)
                        if made:
                            unbounded.append(f"`{arg.text}`, {made}, at {where}")
                            varying.append(name)
                found = loader_loop(ctx.index, site)
                if found is not None and site.args:
                    loop, loader = found
                    if loader.keeps_last_batch and not loader.single_sample_batches:
                        bounded.append(f"a DataLoader without `drop_last=True` at {where}")
            graphs = 2 if bounded else 1
            for name, seen in shapes.items():
                if len(seen) >= RECOMPILE_LIMIT:
                    unbounded.append(f"{len(seen)} different shapes for `{name}` at {places(seen.values())}")
                    varying.append(name)
                elif len(seen) > 1:
                    bounded.append(f"{len(seen)} different shapes for `{name}` at {places(seen.values())}")
                    graphs = max(graphs, len(seen))
                    varying.append(name)
            if not unbounded and not bounded:
                continue
            varying_param = first_checked(varying)
            # Dynamo's words for the first argument whose guard fails (``tensor 'p' size
            # mismatch at index 0``); a position it cannot spell keeps a placeholder.
            spelled = varying_param if varying_param and not varying_param.startswith("#") else "x"
            evidence = "; ".join(dict.fromkeys(unbounded + bounded))
            if unbounded:
                cost = (
                    f"every new size fails the guard `tensor '{spelled}' size mismatch at index ...` and compiles another graph; "
                    f"after {RECOMPILE_LIMIT} recompiles `{region.name}` falls back to eager for good (unbounded)"
                )
                severity, bound = Severity.ERROR, Boundedness.UNBOUNDED
            else:
                cost = f"each distinct size compiles its own graph ({graphs} graphs, bounded"
                if any("DataLoader" in b for b in bounded):
                    cost += ": the full batches and the last partial batch; unbounded if a collate_fn pads to varying lengths"
                cost += ")"
                severity, bound = Severity.WARNING, Boundedness.BOUNDED
            ctx.report(
                region.site_path,
                region.site.span,
                f"`{region.name}` is compiled with `dynamic=False` but called with varying sizes ({evidence}): {cost}. "
                f"Fix: drop `dynamic=False` (automatic dynamic costs one recompile), or "
                f"`torch._dynamo.mark_dynamic({spelled}, 0)` the varying dimension, or pad inputs to a fixed size",
                severity=severity,
                bounded=bound,
                subject=Subject(kind="parameter", module=module_of(ctx, region), name=varying_param, value_kind="tensor"),
                region=region.name,
                function=region.name,
                guard=Guard("TENSOR_MATCH", f"L[{varying_param!r}]", "size") if varying_param and not varying_param.startswith("#") else None,
            )


# Tensor factories whose positional arguments (or first tuple argument) are the sizes.
SIZED_FACTORIES = frozenset({"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty"})


def sized_by_helper(index: ProjectIndex, site: CallSite, name: str) -> str:
    """Why the tensors a loop variable takes vary in size, when the loop walks what a project
    function returns: ``for frames in utterances(10)`` where ``utterances`` returns
    ``[torch.randn(1, n, 20) for n in lengths]``. "" when not shown.

    The sizes vary when a dimension of the tensor factory in the returned comprehension reads
    the comprehension's own variable (one size per element). A fixed set of literal sizes
    (``for n in (16, 32)``) is a bounded case the literal-shape check counts; not reported here.
    """
    loop = next((lp for lp in reversed(site.loops) if name in lp.targets), None)
    if loop is None or len(loop.targets) != 1:
        return ""
    try:
        iterable = ast.parse(loop.iter_text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    facts = index.facts(site.path)
    callee = dotted_name(iterable.func) if isinstance(iterable, ast.Call) else ""
    if facts is None or not callee:
        return ""
    resolved = facts.resolve(callee)
    ref = index.resolve_function(resolved, site.path)
    if ref is None and resolved == callee and "." not in callee:
        ref = index.resolve_function(f"{facts.module}.{callee}", site.path)
    if ref is None or "." in ref.qualname:
        return ""
    tree = Trees.of(index).tree(ref.path)
    helper = next((n for n in (tree.body if tree else []) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == ref.qualname), None)
    if helper is None:
        return ""
    returns = [n.value for n in ast.walk(helper) if isinstance(n, ast.Return) and n.value is not None]
    if len(returns) != 1 or not isinstance(returns[0], (ast.ListComp, ast.GeneratorExp)):
        return ""
    made = returns[0]
    variables = {n.id for g in made.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
    if any(_literal_sequence(g.iter) for g in made.generators):
        return ""
    element = made.elt
    if not isinstance(element, ast.Call):
        return ""
    target = index.facts(ref.path)
    factory = target.resolve(dotted_name(element.func)) if target is not None else ""
    if factory not in SIZED_FACTORIES:
        return ""
    dims = element.args[0].elts if len(element.args) == 1 and isinstance(element.args[0], (ast.Tuple, ast.List)) else element.args
    if not any(isinstance(n, ast.Name) and n.id in variables for dim in dims for n in ast.walk(dim)):
        return ""
    return f"each element of `{loop.iter_text}`, a tensor `{ref.qualname}` sizes by `{ast.unparse(made.generators[0].target)}`"


def _literal_sequence(node: ast.expr) -> bool:
    """A tuple/list/set display of constants: a fixed, small set of sizes."""
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and all(isinstance(e, ast.Constant) for e in node.elts)
