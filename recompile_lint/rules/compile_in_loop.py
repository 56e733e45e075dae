"""RCL402 compile-in-loop (project rule): ``torch.compile`` in a loop of a function that reads the loop variable."""

from __future__ import annotations

import ast

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.models import Boundedness, Severity, Subject
from recompile_lint.rules._common import RECOMPILE_LIMIT
from recompile_lint.rules._identity import Trees, free_names, function_node, is_module_level, loop_info
from recompile_lint.rules.base import Rule

# What a loop variable of each kind costs when the compiled function reads it (torch 2.13):
# (module level: a global; in a function: a closure cell) -> unbounded?
UNBOUNDED_AT_MODULE_LEVEL = frozenset({"int", "str"})
UNBOUNDED_IN_FUNCTION = frozenset({"str"})
KNOWN_KINDS = frozenset({"int", "float", "bool", "str"})


class CompileInLoop(Rule):
    """``torch.compile`` inside a loop, of a function that reads the loop variable.

    Every wrapper the loop makes shares one cache, because Dynamo caches per code object and the
    lambda (or nested ``def``) has the same code object each time round. What differs is the
    loop variable it reads, and Dynamo guards on it. At module level the variable is a global
    (``G['i'] == 0``): an int or str fails the guard on every iteration and after
    ``recompile_limit`` (8) the function runs eagerly. Inside a function it is a closure cell
    (``i == 0``): automatic dynamic turns an int or float into an input after one recompile
    (2 graphs), while a str still costs one graph per value.
    """

    code = "RCL402"
    name = "compile-in-loop"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "torch.compile inside a loop of a function that reads the loop variable"

    VALID = (
        """
import torch


def scaled(x: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    return x * factor


compiled = torch.compile(scaled)


def sweep(x: torch.Tensor) -> None:
    for i in range(10):
        compiled(x, torch.tensor(float(i)))
""",
        """
import torch


def hot(x: torch.Tensor) -> torch.Tensor:
    # Re-created every call, but it reads no loop variable: one code object, one graph.
    return torch.compile(lambda y: y + 1, backend="eager")(x)
""",
    )
    INVALID = (
        """
import torch

x = torch.randn(8)
for i in range(10):
    print(torch.compile(lambda t: t * i)(x))  # RCL402
""",
        """
import torch


def sweep(x: torch.Tensor) -> None:
    for i in range(10):
        scaled = torch.compile(lambda t: t * i)  # RCL402[warning]
        scaled(x)
""",
    )

    def check_project(self, ctx: ProjectContext) -> None:
        trees = Trees.of(ctx.index)
        seen: set[tuple[str, int, int]] = set()
        for region in ctx.regions:
            site = region.site
            path = region.site_path
            key = (path, site.span.line, site.span.column)
            if key in seen or site.form == "method" or region.entry.path != path or not ctx.wanted(path):
                continue
            seen.add(key)
            node = trees.node_at(path, site.span, ast.Call) if site.form != "decorator" else self.decorator_node(trees, path, site.span)
            if node is None:
                continue
            # A decorator sits outside its def's body: the def statement is what the loop runs.
            anchor = trees.parent(path, node) if site.form == "decorator" else node
            if anchor is None:
                continue
            loops = [loop for loop in trees.enclosing_loops(path, anchor) if isinstance(loop, (ast.For, ast.AsyncFor))]
            if not loops:
                continue
            fn = ctx.index.function(region.entry)
            if fn is None:
                continue
            entry = function_node(trees, path, fn.line, fn.column, fn.is_lambda)
            if entry is None:
                continue
            scope = trees.enclosing_scope(path, anchor)
            module_level = is_module_level(scope)
            if not module_level and scope not in list(trees.ancestors(path, entry)):
                continue  # a function defined elsewhere cannot see this function's loop variable
            if module_level and not is_module_level(self.defining_scope(trees, path, entry)):
                continue
            scopes = [s for s in (scope, trees.tree(path)) if s is not None]
            free = free_names(entry)
            for loop in loops:
                if not self.called_in(loop, anchor, trees.parent(path, anchor), site.decorated.rsplit(".", 1)[-1]):
                    # Called only after the loop: every wrapper sees the variable's last value.
                    continue
                info = loop_info(loop, scopes)
                captured = [t for t in info.targets if t in free and info.kind(t) in KNOWN_KINDS]
                if captured:
                    name = captured[0]
                    values = len(info.elements_of(name)) if not info.open_ended else 0
                    self.report(ctx, trees, region, path, node, name, info.kind(name), module_level, fn.name, values)
                    break

    @staticmethod
    def called_in(loop: ast.AST, site: ast.AST, parent: ast.AST | None, decorated: str) -> bool:
        """Whether the compiled object is called inside ``loop``: ``torch.compile(f)(x)``, or the
        name it is assigned to (or the decorated function's name) is called in the loop body."""
        if isinstance(parent, ast.Call) and parent.func is site:
            return True
        names = {decorated} if decorated else set()
        if isinstance(parent, (ast.Assign, ast.AnnAssign)):
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        for node in ast.walk(loop):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
                return True
        return False

    @staticmethod
    def decorator_node(trees: Trees, path: str, span) -> ast.AST | None:
        for kind in (ast.Call, ast.Attribute, ast.Name):
            node = trees.node_at(path, span, kind)
            if node is not None:
                return node
        return None

    @staticmethod
    def defining_scope(trees: Trees, path: str, entry: ast.AST) -> ast.AST | None:
        return trees.enclosing_scope(path, entry)

    def report(self, ctx: ProjectContext, trees: Trees, region, path: str, node: ast.AST, name: str, kind: str, module_level: bool, fn_name: str, values: int) -> None:
        compiled = "a lambda" if fn_name == "<lambda>" else f"`{fn_name}`"
        if module_level:
            unbounded = kind in UNBOUNDED_AT_MODULE_LEVEL
            where_ = f"at module level, so `{name}` is a global and Dynamo guards `G['{name}'] == ...`"
        else:
            unbounded = kind in UNBOUNDED_IN_FUNCTION
            where_ = f"inside a function, so `{name}` is a closure cell and Dynamo guards `{name} == ...`"
        if unbounded and 0 < values <= RECOMPILE_LIMIT:
            # A loop over a fixed display of values: one graph per value, no more.
            unbounded = False
            cost = f"each of its {values} values compiles its own graph (bounded: {values} graphs)"
        elif unbounded:
            cost = (
                f"every iteration fails the guard and compiles another graph; after {RECOMPILE_LIMIT} recompiles "
                f"it falls back to eager (unbounded)"
            )
        elif kind == "bool":
            cost = "each value compiles its own graph (bounded: 2 graphs)"
        else:
            cost = "the second value recompiles once, then it becomes an input (bounded: 2 graphs)"
        message = (
            f"`torch.compile` of {compiled} inside a loop over `{name}` ({kind}): every wrapper shares one cache "
            f"(one code object) and the loop runs {where_}; {cost}. Fix: compile once outside the loop and pass "
            f"`{name}` as an argument (a tensor, `torch.tensor({name})`, for exactly one graph)"
        )
        subject = (
            Subject(kind="global", module=self.module_of(ctx, path), name=name, value_kind=kind)
            if module_level
            else Subject(kind="closure", module=self.module_of(ctx, path), name=name, owner=region.name, value_kind=kind)
        )
        ctx.report(
            path,
            trees.span(path, node),
            message,
            severity=Severity.ERROR if unbounded else Severity.WARNING,
            bounded=Boundedness.UNBOUNDED if unbounded else Boundedness.BOUNDED,
            subject=subject,
            region=region.name,
            function=region.name,
        )

    @staticmethod
    def module_of(ctx: ProjectContext, path: str) -> str:
        facts = ctx.index.facts(path)
        return facts.module if facts is not None else ""
