"""RCL404 graph-break-value (function rule): a value that crosses a graph break (``.item()``, ``.tolist()``, clocks, ``random``)."""

from __future__ import annotations

import os
from typing import Iterable

import libcst as cst

from recompile_lint.analysis.context import FunctionContext, child_nodes
from recompile_lint.models import Boundedness, Severity, Subject
from recompile_lint.rules._common import dotted, via
from recompile_lint.rules.base import Rule

# Methods of a tensor that do not return a tensor (sizes, flags, Python values).
NON_TENSOR_METHODS = frozenset(
    {
        "item", "tolist", "size", "dim", "ndimension", "numel", "nelement", "stride", "storage_offset",
        "is_contiguous", "is_floating_point", "is_complex", "element_size", "data_ptr", "get_device",
        "type", "equal", "allclose", "untyped_storage", "storage", "numpy", "__len__", "keys", "values",
        "items", "get", "format",
    }
)
TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag"})
# torch functions that return Python values or objects, not tensors.
NON_TENSOR_TORCH = frozenset(
    {
        "is_tensor", "is_floating_point", "is_complex", "numel", "get_default_dtype", "is_grad_enabled",
        "is_inference_mode_enabled", "device", "dtype", "Size", "finfo", "iinfo", "typename",
        "is_nonzero", "equal", "allclose", "result_type", "promote_types", "can_cast", "manual_seed",
        "initial_seed", "seed", "get_rng_state", "compile", "no_grad", "enable_grad", "set_grad_enabled",
        "inference_mode", "autocast", "broadcast_shapes",
    }
)
NON_TENSOR_TORCH_PREFIXES = ("torch.cuda.", "torch.backends.", "torch._dynamo.", "torch.compiler.", "torch.distributed.", "torch.utils.", "torch.jit.", "torch.testing.", "torch.nn.Module", "torch.optim.")

CLOCK_FUNCTIONS = frozenset(
    {"time.time", "time.perf_counter", "time.monotonic", "time.process_time", "time.time_ns", "time.perf_counter_ns", "time.monotonic_ns", "datetime.datetime.now", "datetime.datetime.utcnow"}
)
RANDOM_MODULES = ("random.", "numpy.random.")


# Calls whose int or list-of-int arguments must be concrete (measured: docs/guard-model.md).
CONCRETE_SIZES = frozenset({"split", "chunk", "tensor_split", "range", "unfold", "one_hot"})


class GraphBreakValue(Rule):
    """A Python value produced at a graph break inside compiled code, then used after it.

    ``.item()``, ``.tolist()``, ``int(t)`` / ``float(t)`` of a tensor, ``time.time()`` and
    ``random.random()`` cannot be traced: Dynamo breaks the graph, runs the call eagerly, and
    compiles the rest as a *resume function* that receives the value on its stack. The resume
    function guards on that value (``___stack0 == -0.36  # ... torch_dynamo_resume_in_f_at_53``);
    the next call brings a new value and it recompiles once, after which the value is dynamic.
    Bounded, but each call still pays for two graphs and the break between them.
    """

    code = "RCL404"
    name = "graph-break-value"
    severity = Severity.WARNING
    bounded = Boundedness.BOUNDED
    summary = "Value from .item()/.tolist()/int(tensor)/time.time()/random crosses a graph break in compiled code"

    VALID = (
        """
import torch

torch._dynamo.config.capture_scalar_outputs = True  # .item() is traced into the graph


@torch.compile
def normalize(x: torch.Tensor) -> torch.Tensor:
    scale = x.abs().max().item()
    return x / scale
""",
        """
import torch


@torch.compile
def first_dim(x: torch.Tensor) -> torch.Tensor:
    n = int(x.shape[0])  # a size, not a tensor: no graph break
    lr = float(0.1)
    return x * n * lr
""",
        """
import torch


@torch.compile
def check(x: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    if counts.numel() != x.shape[0]:
        # Only on the way to an error: a call that returns never runs it.
        raise ValueError(f"expected {x.shape[0]} counts, got {counts.tolist()}")
    assert x.dim() == 2, f"a matrix, not {x.sum().item()}"
    return x * 2
""",
    )
    INVALID = (
        """
import time

import torch


@torch.compile
def normalize(x: torch.Tensor) -> torch.Tensor:
    scale = x.abs().max().item()  # RCL404
    started = time.time()  # RCL404
    return x / scale + started
""",
    )

    def check_function(self, ctx: FunctionContext) -> None:
        dynamic = (ctx.region.dynamic or "").strip()
        if dynamic == "True":
            # The resume function is compiled with the region's options: under dynamic=True the
            # value is symbolic from its first graph (measured on torch 2.13, 12 calls with new
            # values: 2 graphs for `.item()`, 1 for `.tolist()` or a clock, no recompile).
            return
        if (ctx.region.site.option("fullgraph") or "").strip() == "True":
            # No resume function under fullgraph=True (measured on torch 2.13): `.item()` and
            # `int(t)` are traced into the one graph (12 calls with new values, even with
            # dynamic=False: 1 graph, no break); `.tolist()` of a float tensor, a clock or
            # `random` make the first call raise `Unsupported`, an error, not a recompile.
            return
        captured = self.captures_scalars(ctx)
        returned = self.returned_directly(ctx.nodes_of(cst.Return, cst.Expr))
        raising = self.raising(ctx)
        for node in ctx.nodes_of(cst.Call):
            if id(node) in returned or id(node) in raising:
                continue
            what, fix = self.classify(ctx, node, captured)
            if not what:
                continue
            subject = Subject(kind="graph-break", module=ctx.module.module, name=ctx.function.qualname, value_kind=what.split("`")[1] if "`" in what else "")
            concrete = self.needed_concrete(ctx, node)
            if concrete and captured and what == "`.tolist()`":
                # Values used as sizes or a range bound are ints, so the tensor is an integer
                # tensor, whose ``.tolist()`` capture_scalar_outputs traces (measured on torch
                # 2.13: one graph, no break); only a float tensor's still breaks.
                continue
            if concrete:
                # The values come back into the resume function where they must be concrete
                # (split sizes, a range bound): each new set of values is a new graph.
                ctx.report(
                    node,
                    f"{what} in {via(ctx)} breaks the graph, and its values come back as {concrete}, which must be "
                    f"concrete: the resume function guards on each of them (`___stack0[0] == ...`) and the values "
                    f"change with the data, so it recompiles until `recompile_limit` (8) and then runs eagerly "
                    f"(unbounded). Fix: {fix}",
                    severity=Severity.ERROR,
                    bounded=Boundedness.UNBOUNDED,
                    subject=subject,
                )
                continue
            if dynamic == "False":
                # Automatic dynamic is off for the resume function too: it keeps the value a
                # constant (measured on torch 2.13: a new `.item()`, `.tolist()`, clock or random
                # value each call reached the limit at the 9th call).
                ctx.report(
                    node,
                    f"{what} in {via(ctx)} breaks the graph: the rest of `{ctx.function.name}` is compiled as a resume "
                    f"function that guards on the value (`___stack0 == ...`), and `{ctx.region.name}` is compiled with "
                    f"dynamic=False, which keeps the value a constant there too: each new value compiles the resume "
                    f"function again until `recompile_limit` (8), then it runs eagerly (unbounded). Fix: {fix}",
                    severity=Severity.ERROR,
                    bounded=Boundedness.UNBOUNDED,
                    subject=subject,
                )
                continue
            ctx.report(
                node,
                f"{what} in {via(ctx)} breaks the graph: the rest of `{ctx.function.name}` is compiled as a resume "
                f"function that guards on the value (`___stack0 == ...`), so a new value recompiles it once "
                f"(bounded: 2 graphs, plus the break on every call). Fix: {fix}",
                subject=subject,
            )

    @staticmethod
    def raising(ctx: FunctionContext) -> set[int]:
        """The nodes that build an exception: a ``raise`` statement's, an ``assert``'s
        message. They run only on the way to an error, never on a call that returns (an
        ``.item()`` in ``raise ValueError(f"got {n.tolist()}")`` breaks no graph)."""
        out: set[int] = set()
        for stmt in ctx.nodes_of(cst.Raise, cst.Assert):
            part = stmt.msg if isinstance(stmt, cst.Assert) else stmt
            if part is not None:
                out.update(id(node) for node in walk_nodes(part))
        return out

    def needed_concrete(self, ctx: FunctionContext, node: cst.Call) -> str:
        """Where the value of ``x.tolist()`` / ``.item()`` is used as a size or bound that must be
        a concrete Python value, "" when nowhere: passed straight to such a call
        (``torch.split(x, counts.tolist())``), or assigned to a name that such a call takes.
        The call that computes the assigned value is not a use of it (``x = torch.split(x,
        counts.tolist())`` uses the old ``x``)."""
        parents = ctx.parents()
        parent = parents.get(id(node))
        if isinstance(parent, cst.Arg):
            what = self.concrete_use(parents.get(id(parent)))
            if what:
                return what
        while parent is not None and not isinstance(parent, (cst.Assign, cst.SimpleStatementLine)):
            parent = parents.get(id(parent))
        if not isinstance(parent, cst.Assign) or len(parent.targets) != 1 or not isinstance(parent.targets[0].target, cst.Name):
            return ""
        name = parent.targets[0].target.value
        own = {id(n) for n in walk_nodes(parent.value)}
        for call in ctx.nodes_of(cst.Call):
            if id(call) in own:
                continue
            what = self.concrete_use(call)
            if what and any(isinstance(arg.value, cst.Name) and arg.value.value == name for arg in call.args):
                return what
        return ""

    @staticmethod
    def concrete_use(call: cst.CSTNode | None) -> str:
        """How a call whose arguments must be concrete numbers names them, "" for other calls."""
        if not isinstance(call, cst.Call):
            return ""
        callee = dotted(call.func)
        last = callee.rsplit(".", 1)[-1] if callee else (call.func.attr.value if isinstance(call.func, cst.Attribute) else "")
        if last not in CONCRETE_SIZES:
            return ""
        return f"the sizes of `{last}()`" if last != "range" else "a `range()` bound"

    def classify(self, ctx: FunctionContext, node: cst.Call, captured: bool) -> tuple[str, str]:
        func = node.func
        if isinstance(func, cst.Attribute) and not node.args:
            method = func.attr.value
            if method == "item" and not captured:
                return "`.item()`", "set `torch._dynamo.config.capture_scalar_outputs = True`, or keep the value a 0-d tensor"
            if method == "tolist":
                return "`.tolist()`", "keep the values in a tensor (index it instead of converting it to a list)"
        name = dotted(func)
        if not name:
            return "", ""
        if name in ("int", "float") and len(node.args) == 1 and not ctx.is_local(name) and not captured:
            if self.is_tensor(ctx, node.args[0].value, 0):
                return f"`{name}()` of a tensor", "keep it a tensor (`.to(torch.float32)`), or set `torch._dynamo.config.capture_scalar_outputs = True`"
            return "", ""
        head = name.split(".")[0]
        if ctx.is_local(head):
            return "", ""
        resolved = ctx.module.resolve(name)
        if resolved in CLOCK_FUNCTIONS:
            return f"`{name}()`", "measure time outside the compiled function and pass nothing clock-related in"
        if resolved.startswith(RANDOM_MODULES):
            return f"`{name}()`", "draw randomness with torch (`torch.rand((), device=x.device)`), which is traced"
        return "", ""

    # ---- where the value goes -------------------------------------------------------------

    @staticmethod
    def returned_directly(nodes: Iterable[cst.CSTNode]) -> set[int]:
        """Calls whose value is only returned (``return y, loss.item()``) or discarded: nothing
        after the break uses them, so the resume function has no value to guard."""
        out: set[int] = set()
        for node in nodes:
            value = None
            if isinstance(node, cst.Return):
                value = node.value
            elif isinstance(node, cst.Expr):
                value = node.value
            if value is None:
                continue
            items = [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) else [value]
            out.update(id(item) for item in items if isinstance(item, cst.Call))
        return out

    def captures_scalars(self, ctx: FunctionContext) -> bool:
        """Whether ``capture_scalar_outputs`` is turned on (``.item()`` traced, no break) in the
        region's own modules or in a module that imports them (the script that runs it)."""
        modules = {ctx.module.module}
        site = ctx.index.facts(ctx.region.site_path)
        if site is not None:
            modules.add(site.module)
        for path in self.capturing_paths(ctx):
            if path not in (ctx.path, ctx.region.site_path):
                facts = ctx.index.facts(path)
                imported = {target for _, target in facts.imports} if facts is not None else set()
                if not any(self.reaches(ctx, t, m, path) for t in imported for m in modules if m):
                    continue
            return True
        return False

    @staticmethod
    def reaches(ctx: FunctionContext, target: str, module: str, from_path: str) -> bool:
        """Whether importing ``target`` imports ``module``: the module itself, a name in it, or
        a package of the project whose ``__init__`` imports from it (``from pkg import train``
        where ``pkg/train/__init__.py`` re-exports ``pkg.train._compile.compile_model``)."""
        if target == module or target.startswith(module + "."):
            return True
        if not module.startswith(target + "."):
            return False
        package = ctx.index.module_path(target, from_path)
        if package is None or os.path.basename(package) != "__init__.py":
            return False
        facts = ctx.index.facts(package)
        return facts is not None and any(t == module or t.startswith(module + ".") for _, t in facts.imports)

    def capturing_paths(self, ctx: FunctionContext) -> list[str]:
        """Project files that set ``capture_scalar_outputs = True``, found once per run."""
        cached = getattr(self, "_capturing", None)
        if cached is not None and cached[0] is ctx.index:
            return cached[1]
        found = []
        for path in ctx.index.paths:
            text = ctx.index.text(path) or ""
            if "capture_scalar_outputs" not in text:
                continue
            for line in text.splitlines():
                code = line.split("#", 1)[0].replace(" ", "")
                if "capture_scalar_outputs=True" in code or "capture_scalar_outputs\",True" in code or "capture_scalar_outputs',True" in code:
                    found.append(path)
                    break
        self._capturing = (ctx.index, found)
        return found

    # ---- is it a tensor? ------------------------------------------------------------------

    def is_tensor(self, ctx: FunctionContext, expr: cst.BaseExpression, depth: int) -> bool:
        """Only when the source says so; unknown values are not tensors (no guess)."""
        if depth > 6:
            return False
        if isinstance(expr, cst.Name):
            for param in ctx.function.params:
                if param.name == expr.value:
                    return param.annotation.rsplit(".", 1)[-1] in ("Tensor", "FloatTensor", "LongTensor")
            if not ctx.is_local(expr.value):
                return False
            values = self.local_values(ctx, expr.value)
            return bool(values) and all(self.is_tensor(ctx, v, depth + 1) for v in values)
        if isinstance(expr, cst.Call):
            func = expr.func
            name = dotted(func)
            if name and not ctx.is_local(name.split(".")[0]):
                resolved = ctx.module.resolve(name)
                if resolved.startswith("torch.") and "." in resolved:
                    last = resolved.rsplit(".", 1)[-1]
                    return last not in NON_TENSOR_TORCH and not resolved.startswith(NON_TENSOR_TORCH_PREFIXES) and not last[:1].isupper()
            if isinstance(func, cst.Attribute):
                return func.attr.value not in NON_TENSOR_METHODS and self.is_tensor(ctx, func.value, depth + 1)
            return False
        if isinstance(expr, cst.Attribute):
            return expr.attr.value in TENSOR_ATTRIBUTES and self.is_tensor(ctx, expr.value, depth + 1)
        if isinstance(expr, cst.Subscript):
            return self.is_tensor(ctx, expr.value, depth + 1)
        if isinstance(expr, cst.BinaryOperation):
            return self.is_tensor(ctx, expr.left, depth + 1) or self.is_tensor(ctx, expr.right, depth + 1)
        if isinstance(expr, cst.Comparison):
            # ``scores > 0`` of a tensor is a bool tensor.
            return self.is_tensor(ctx, expr.left, depth + 1) or any(self.is_tensor(ctx, c.comparator, depth + 1) for c in expr.comparisons)
        if isinstance(expr, cst.UnaryOperation):
            return self.is_tensor(ctx, expr.expression, depth + 1)
        return False

    @staticmethod
    def local_values(ctx: FunctionContext, name: str) -> list[cst.BaseExpression]:
        out: list[cst.BaseExpression] = []
        for node in ctx.nodes_of(cst.Assign):
            if len(node.targets) == 1:
                target = node.targets[0].target
                if isinstance(target, cst.Name) and target.value == name:
                    out.append(node.value)
            elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name) and node.target.value == name:
                out.append(node.value)
            elif isinstance(node, (cst.For, cst.With)) and name in _bound_names(node):
                return []  # bound by a loop or a with: unknown
        return out


def _bound_names(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()
    targets: list[cst.CSTNode] = []
    if isinstance(node, cst.For):
        targets.append(node.target)
    elif isinstance(node, cst.With):
        targets.extend(item.asname.name for item in node.items if item.asname is not None)
    for target in targets:
        stack = [target]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Name):
                names.add(current.value)
            stack.extend(child_nodes(current))
    return names



def walk_nodes(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    """``node`` and every node under it."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(child_nodes(current))
