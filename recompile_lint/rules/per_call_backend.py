"""RCL403 per-call-backend (project rule): a backend object built anew each time a compile runs again."""

from __future__ import annotations

import ast

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.analysis.facts import CompileSite, ModuleFacts, dotted_name
from recompile_lint.analysis.index import FunctionRef
from recompile_lint.analysis.variation import resets_before
from recompile_lint.models import Boundedness, Guard, Severity, Subject
from recompile_lint.rules._common import RECOMPILE_LIMIT
from recompile_lint.rules._identity import PARTIAL_CALLEES, Trees, assignments, is_module_level
from recompile_lint.rules.base import Rule


class PerCallBackend(Rule):
    """``torch.compile(..., backend=...)`` with a backend object created anew each time it runs.

    Every cache entry remembers the backend that compiled it, and Dynamo checks it before a
    cached graph is reused (``BACKEND_MATCH failure: torch.compile detected different backend
    callables``). A lambda, a nested ``def`` or a ``MyBackend()`` instance built inside the
    function (or loop) that calls ``torch.compile`` is a different object every time, so every
    call compiles again, and after ``recompile_limit`` (8) the function runs eagerly. A
    module-level backend function or object, or a string backend, is the same every time.
    A reset of Dynamo's caches (``torch._dynamo.reset()``, ``reset_code_caches()``) before the
    compile, in the code that runs again, leaves no entry to reject.
    """

    code = "RCL403"
    name = "per-call-backend"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "torch.compile backend created anew (lambda, nested def, instance) each time compile runs"

    VALID = (
        """
import torch


def debug_backend(gm, example_inputs):
    return gm.forward


def step(x: torch.Tensor) -> torch.Tensor:
    return torch.compile(torch.sin, backend=debug_backend)(x)
""",
        """
import torch


def step(x: torch.Tensor) -> torch.Tensor:
    return torch.compile(torch.sin, backend="eager")(x)
""",
        """
import torch


class CountingBackend:
    def __call__(self, gm, example_inputs):
        return gm.forward


def count(fn, x: torch.Tensor) -> None:
    torch._dynamo.reset()  # every run compiles into empty caches
    torch.compile(fn, backend=CountingBackend())(x)


def train(xs: list[torch.Tensor]) -> None:
    for x in xs:
        count(torch.sin, x)
""",
    )
    INVALID = (
        """
import torch


def step(x: torch.Tensor) -> torch.Tensor:
    return torch.compile(torch.sin, backend=lambda gm, inputs: gm.forward)(x)  # RCL403


def train(xs: list[torch.Tensor]) -> None:
    for x in xs:
        step(x)
""",
        """
import torch


class CountingBackend:
    def __call__(self, gm, example_inputs):
        return gm.forward


def step(x: torch.Tensor) -> torch.Tensor:
    return torch.compile(torch.sin, backend=CountingBackend())(x)  # RCL403


def train(xs: list[torch.Tensor]) -> None:
    for x in xs:
        step(x)
""",
    )

    def check_project(self, ctx: ProjectContext) -> None:
        trees = Trees.of(ctx.index)
        for facts in sorted(ctx.index.parsed(), key=lambda f: f.path):
            if not ctx.wanted(facts.path):
                continue  # findings are reported at the compile site
            for site in facts.compile_sites:
                if site.option("backend") is None:
                    continue
                self.check_site(ctx, trees, facts, site)

    def check_site(self, ctx: ProjectContext, trees: Trees, facts: ModuleFacts, site: CompileSite) -> None:
        path = facts.path
        call = trees.node_at(path, site.span, ast.Call)
        if not isinstance(call, ast.Call):
            return
        backend = self.backend_expression(call)
        if backend is None:
            return
        anchor = trees.parent(path, call) if site.form == "decorator" else call
        if anchor is None:
            return
        scope = trees.enclosing_scope(path, anchor)
        loops = trees.enclosing_loops(path, anchor)
        in_loop = bool(loops)
        if is_module_level(scope) and not in_loop:
            return  # runs once per process
        repeated = ""
        if not in_loop:
            # The compile runs again only if its function does: called in a loop, from
            # several places, or by a framework every step. A test or a ``main()`` that runs
            # once compiles once.
            repeated = self.variation(ctx).runs_repeatedly(FunctionRef(path, site.function)) if site.function else ""
            if not repeated:
                return
        tree = trees.tree(path)
        if tree is not None and resets_before(tree.body, call.lineno):
            # Each run of it compiles into empty caches (measured: twelve calls of a helper that
            # resets and compiles one function with a new backend compile once each, where
            # without the reset the ninth reaches the limit): nothing cached to reject.
            return
        what = self.fresh_object(ctx, facts, backend, scope, loops[0] if loops else scope)
        if not what:
            return
        where_ = "each iteration of the loop" if in_loop else f"each call of `{getattr(scope, 'name', '')}` ({repeated})"
        message = (
            f"`backend=` gets {what} on {where_}: every cache entry remembers its backend and Dynamo rejects "
            f"it for a different object (`BACKEND_MATCH failure: torch.compile detected different backend "
            f"callables`), so every call compiles again; after {RECOMPILE_LIMIT} recompiles the function runs "
            f"eagerly (unbounded). Fix: create the backend once at module level and pass that object, or use a "
            f"string backend"
        )
        ctx.report(
            path,
            trees.span(path, backend),
            message,
            subject=Subject(kind="config", module=facts.module, name="backend", value_kind="callable", examples=(ast.unparse(backend),)),
            region=self.region_name(ctx, path, site),
            function=f"{facts.module}.{site.function}" if site.function else facts.module,
            # The cache entry's backend check has no source: Dynamo prints ``BACKEND_MATCH failure``.
            guard=Guard("BACKEND_MATCH", ""),
        )

    @staticmethod
    def backend_expression(call: ast.Call) -> ast.expr | None:
        for kw in call.keywords:
            if kw.arg == "backend":
                return kw.value
        # torch._dynamo.optimize(backend)(fn) and @torch._dynamo.optimize(backend)
        if isinstance(call.func, ast.Call) and call.func.args:
            return call.func.args[0]
        if dotted_name(call.func).endswith("optimize") and call.args:
            return call.args[0]
        return None

    @staticmethod
    def variation(ctx: ProjectContext):
        from recompile_lint.analysis.variation import variation_of

        return variation_of(ctx.index)

    def fresh_object(self, ctx: ProjectContext, facts: ModuleFacts, expr: ast.expr, scope: ast.AST | None, repeats: ast.AST | None = None, depth: int = 0) -> str:
        """How ``expr`` makes a new object each time it runs ("a new lambda"), or "" if it does
        not. ``repeats``: the loop (or function) that runs the compile again."""
        if depth > 3:
            return ""
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and repeats is not None:
            # ``backend=stats.capture``: a bound method of an object built anew each time (a
            # bound method of one object compares equal and compiles once).
            built = [value for value in assignments(repeats, expr.value.id) if isinstance(value, ast.Call)]
            if built and not isinstance(repeats, ast.Module):
                made = self.fresh_object(ctx, facts, built[0], scope, None, depth + 1)
                if made.endswith("instance"):
                    return f"a bound method of {made.replace('a new', 'a new', 1)}"
            return ""
        if isinstance(expr, ast.Lambda):
            return "a new lambda"
        if isinstance(expr, ast.Call):
            callee = dotted_name(expr.func)
            if not callee:
                return ""
            resolved = facts.resolve(callee)
            if resolved in PARTIAL_CALLEES or callee in PARTIAL_CALLEES:
                return f"a new `{callee}(...)` object"
            if ctx.index.resolve_class(resolved, facts.path) is not None or callee.rsplit(".", 1)[-1][:1].isupper():
                return f"a new `{callee.rsplit('.', 1)[-1]}()` instance"
            return ""
        if isinstance(expr, ast.Name) and scope is not None and not is_module_level(scope):
            for node in ast.walk(scope):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == expr.id and node is not scope:
                    return f"a new function object (`{expr.id}`, defined inside `{getattr(scope, 'name', '')}`)"
            values = assignments(scope, expr.id)
            if len(values) == 1:
                return self.fresh_object(ctx, facts, values[0], scope, repeats, depth + 1)
        return ""

    @staticmethod
    def region_name(ctx: ProjectContext, path: str, site: CompileSite) -> str:
        for region in ctx.regions:
            if region.site_path == path and region.site == site:
                return region.name
        return ""
