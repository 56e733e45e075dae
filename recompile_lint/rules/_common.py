"""Pieces several rules share: which names a function body reads, and message wording."""

from __future__ import annotations

import os
from typing import Iterable, Sequence

import libcst as cst

from recompile_lint.analysis.context import QuickVisitor
from recompile_lint.models import Location
from recompile_lint.analysis.facts import Mutation

RECOMPILE_LIMIT = 8

# Value kinds whose Python value Dynamo bakes into a guard, and what that costs (torch 2.13).
UNBOUNDED_KINDS = frozenset({"int", "str"})
BOUNDED_KINDS = frozenset({"float", "bool", "enum"})


def dotted(node: cst.BaseExpression) -> str:
    """``a.b.c`` for Name/Attribute chains, else ``""``."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return ""


def constant_key(node: cst.Subscript) -> str | None:
    """The literal key of ``x['k']`` / ``x[0]`` as a string, else None."""
    if len(node.slice) != 1:
        return None
    element = node.slice[0].slice
    if not isinstance(element, cst.Index):
        return None
    value = element.value
    if isinstance(value, cst.SimpleString):
        return value.evaluated_value if isinstance(value.evaluated_value, str) else None
    if isinstance(value, cst.Integer):
        return value.value
    return None


class Reads(QuickVisitor):
    """The Name, Attribute and Subscript loads of a function body, in source order.

    Assignment targets are stores (their sub-expressions are still loads), keyword names and
    attribute names are not variables, nested functions and classes are separate scopes.
    """

    def __init__(self) -> None:
        self.names: list[cst.Name] = []
        self.attributes: list[cst.Attribute] = []
        self.subscripts: list[cst.Subscript] = []
        self.updates: list[cst.CSTNode] = []  # AugAssign statements and ``x = x + 1``
        self.lambda_params: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        for param in node.params.params:
            self.lambda_params.add(param.name.value)
        self.walk(node.body)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self.attributes.append(node)
        self.walk(node.value)
        return False

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self.subscripts.append(node)

    def visit_Arg(self, node: cst.Arg) -> bool:
        self.walk(node.value)
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        self.updates.append(node)
        self.visit_target(node.target, load=True)
        self.walk(node.value)
        return False

    def visit_Assign(self, node: cst.Assign) -> bool:
        for target in node.targets:
            self.visit_target(target.target, load=False)
        self.walk(node.value)
        return False

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        self.visit_target(node.target, load=False)
        if node.value is not None:
            self.walk(node.value)
        return False

    def visit_For(self, node: cst.For) -> bool:
        self.visit_target(node.target, load=False)
        self.walk(node.iter)
        self.walk(node.body)
        if node.orelse is not None:
            self.walk(node.orelse)
        return False

    def visit_CompFor(self, node: cst.CompFor) -> bool:
        self.visit_target(node.target, load=False)
        self.walk(node.iter)
        for cond in node.ifs:
            self.walk(cond)
        if node.inner_for_in is not None:
            self.walk(node.inner_for_in)
        return False

    def visit_AsName(self, node: cst.AsName) -> bool:
        return False

    def visit_Global(self, node: cst.Global) -> bool:
        return False

    def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
        return False

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_target(self, target: cst.BaseExpression, load: bool) -> None:
        """Loads inside a store target: ``a[i]`` reads ``a`` and ``i``; ``a.b`` reads ``a``."""
        if isinstance(target, cst.Name):
            if load:
                self.names.append(target)
        elif isinstance(target, cst.Attribute):
            if load:
                self.attributes.append(target)
            self.walk(target.value)
        elif isinstance(target, cst.Subscript):
            if load:
                self.subscripts.append(target)
            self.walk(target.value)
            for element in target.slice:
                self.walk(element)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.visit_target(element.value, load)
        elif isinstance(target, cst.StarredElement):
            self.visit_target(target.value, load)


def reads_of(target) -> Reads:
    """The loads of a function body; pass the FunctionContext to share one walk among rules."""
    memo = getattr(target, "memo", None)
    if memo is not None and "reads" in memo:
        return memo["reads"]  # type: ignore[return-value]
    node = target.node if memo is not None else target
    reads = Reads()
    if isinstance(node, cst.Lambda):
        reads.visit_Lambda(node)
    else:
        reads.walk(node.body)
    if memo is not None:
        memo["reads"] = reads
    return reads


def where(mutations: Sequence[Mutation], limit: int = 2) -> str:
    """``train.py:20, train.py:31 (+2 more)``: where a value changes, relative to the cwd."""
    return places(((m.path, m.line) for m in sorted(mutations, key=lambda x: (x.path, x.line))), limit)


def writes(mutations: Sequence[Mutation], what: str) -> tuple[Location, ...]:
    """The places that change a guarded value, as a finding's locations."""
    return tuple(
        Location(m.path, m.line, m.column, "write", f"this changes {what}")
        for m in sorted(mutations, key=lambda x: (x.path, x.line, x.column))
    )


def globals_source(ctx) -> str:
    """How Dynamo spells the globals of the function ``ctx`` looks at: ``G`` for the compiled
    entry's own module, ``G['__import_pkg_dot_mod']`` for another module's function it inlines."""
    entry = ctx.index.facts(ctx.region.entry.path)
    if entry is None or entry.module == ctx.module.module:
        return "G"
    return f"G['__import_{ctx.module.module.replace('.', '_dot_')}']"


def global_source(ctx, chain: str) -> str:
    """Dynamo's source of the global ``chain`` (``step``, ``ops.STEP``) read in ``ctx``'s function."""
    head, _, rest = chain.partition(".")
    base = globals_source(ctx)
    text = f"G[{head!r}]" if base == "G" else f"{base}.{head}"
    return f"{text}.{rest}" if rest else text


def place(path: str, line: int) -> str:
    return f"{display_path(path)}:{line}"


def places(items: Iterable[tuple[str, int]], limit: int = 3) -> str:
    """``a.py:3, b.py:9 (+1 more)``: distinct places in order, the first ``limit`` of them."""
    shown: list[str] = []
    for path, line in items:
        text = place(path, line)
        if text not in shown:
            shown.append(text)
    out = ", ".join(shown[:limit])
    if len(shown) > limit:
        out += f" (+{len(shown) - limit} more)"
    return out


def display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def via(ctx) -> str:
    """`` (in `helper`, inlined into compiled `poly`)`` for callees; ``""`` for the entry."""
    if ctx.is_entry:
        return f"compiled `{ctx.region.name}`"
    return f"`{ctx.qualified_name}`, which compiled `{ctx.region.name}` inlines,"


def cost(kind: str, region: str) -> str:
    """What a changing value of ``kind`` costs, as measured on torch 2.13."""
    if kind in UNBOUNDED_KINDS:
        return (
            f"every new value fails the guard and compiles another graph; after {RECOMPILE_LIMIT} "
            f"recompiles `{region}` falls back to eager for good (unbounded)"
        )
    if kind == "float":
        return "the first change recompiles once, then the value becomes a graph input (bounded: 2 graphs)"
    return "each distinct value compiles its own graph (bounded: one graph per value)"


def kinds_of(mutations: Iterable[Mutation]) -> set[str]:
    kinds = {mu.value_kind for mu in mutations} - {"", "unknown", "none"}
    if any(mu.op == "augassign" for mu in mutations) and not kinds:
        kinds.add("int")
    return kinds
