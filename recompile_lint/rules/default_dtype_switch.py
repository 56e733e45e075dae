"""RCL303 default-dtype-switch (project rule): ``set_default_dtype`` switched around a compiled function."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.analysis.facts import Span, dotted_name, span_of
from recompile_lint.analysis.index import ProjectIndex
from recompile_lint.analysis.parsing import parse_source
from recompile_lint.models import Boundedness, Guard, Severity, Subject
from recompile_lint.rules._common import places
from recompile_lint.rules._shapes import module_of, sites_of
from recompile_lint.rules.base import Rule

SETTERS = frozenset({"torch.set_default_dtype", "torch.set_default_tensor_type"})


@dataclass(frozen=True)
class DtypeSet:
    """A ``torch.set_default_dtype(...)`` call."""

    path: str
    span: Span
    function: str  # enclosing function qualname, "" at module level
    value: str  # source text of the argument


def dtype_sets(index: ProjectIndex, paths: set[str] | None = None) -> list[DtypeSet]:
    """Every default-dtype change in the project, or in ``paths`` (a text test first, then
    ``ast``)."""
    out: list[DtypeSet] = []
    for path in index.paths:
        if paths is not None and path not in paths:
            continue
        text = index.text(path)
        if text is None or "set_default_" not in text:
            continue
        facts = index.facts(path)
        if facts is None:
            continue
        try:
            tree = parse_source(text, path)
        except (SyntaxError, ValueError, RecursionError):
            continue
        lines = text.split("\n")

        def visit(node: ast.AST, function: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    visit(child, f"{function}.{child.name}" if function else child.name)
                    continue
                if isinstance(child, ast.Call) and facts.resolve(dotted_name(child.func)) in SETTERS:
                    value = ast.unparse(child.args[0]) if child.args else ""
                    out.append(DtypeSet(path, span_of(child, lines), function, value))
                visit(child, function)

        visit(tree, "")
    return out


class DefaultDtypeSwitch(Rule):
    """The default dtype changes while a compiled function is in use.

    ``torch.get_default_dtype()`` is part of Dynamo's global-state guard
    (``GLOBAL_STATE changed: default_dtype``): a call after ``torch.set_default_dtype(...)``
    switched it compiles a second graph, even when the function creates no tensors itself.
    Reported when the project sets more than one default dtype (a switch and a restore), or
    sets it after calling the compiled function in the same function. Setting it once at
    start-up costs nothing. Bounded, by design, and off by default.
    """

    code = "RCL303"
    name = "default-dtype-switch"
    severity = Severity.INFO
    bounded = Boundedness.BY_DESIGN
    summary = "torch.set_default_dtype switched while a compiled function is in use (2 graphs)"

    VALID = (
        """
import torch

torch.set_default_dtype(torch.float64)  # once, before anything is compiled: one graph


@torch.compile
def energy(x):
    return (x ** 2).sum()


def run():
    return energy(torch.randn(8))
""",
    )
    INVALID = (
        """
import torch


@torch.compile
def energy(x):
    return (x ** 2).sum()


def check(x):
    low = energy(x)
    torch.set_default_dtype(torch.float64)  # RCL303
    high = energy(x.double())
    torch.set_default_dtype(torch.float32)  # RCL303
    return low, high
""",
    )

    def check_project(self, ctx: ProjectContext) -> None:
        sets: list[DtypeSet] | None = None
        for region in ctx.regions:
            sites = sites_of(ctx.index, region)
            if not sites:
                continue
            if sets is None:
                # A change is read only beside calls of a compiled function (see below): the
                # files without one need not be parsed.
                calling = {s.path for r in ctx.regions for s in sites_of(ctx.index, r) if ctx.wanted(s.path)}
                sets = dtype_sets(ctx.index, calling)
            if not sets:
                return
            for change in sets:
                # Only a change in a file that calls the compiled function: the one place where
                # the order of calls and changes can be read.
                here = [s for s in sites if s.path == change.path]
                if not here:
                    continue
                values = {s.value for s in sets if s.path == change.path}
                before = any(s.function == change.function and s.span.line < change.span.line for s in here)
                if len(values) < 2 and not before:
                    continue
                ctx.report(
                    change.path,
                    change.span,
                    f"the default dtype changes here (to `{change.value}`) while compiled `{region.name}` is in use "
                    f"(called at {places((s.path, s.span.line) for s in here)}): it is guarded (`GLOBAL_STATE changed: "
                    f"default_dtype`), so each default dtype keeps its own graph (2 graphs, bounded, by design). To "
                    f"keep one: set the default dtype once at start-up and pass explicit `dtype=` where another "
                    f"precision is needed",
                    subject=Subject(kind="state", module=module_of(ctx, region), name="default_dtype", examples=tuple(sorted(values))),
                    region=region.name,
                    function=change.function,
                    guard=Guard("GLOBAL_STATE", "", "default_dtype"),
                )
