"""Facts the function-identity rules (RCL4xx) and RCL901 need that per-file facts do not hold.

Which callables flow into a region's parameter, what a loop around a compile site iterates
over, which values a backend option is built from. Computed from ``ast`` on the few files
that hold a compile site or a call site, never by importing anything.
"""

from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass, replace
from typing import Iterator

from recompile_lint.analysis.facts import ModuleFacts, Span, dotted_name, span_of
from recompile_lint.analysis.index import ProjectIndex
from recompile_lint.analysis.parsing import parse_source

# Library namespaces whose attributes are functions with a fixed identity (``torch.sin``).
LIBRARY_ROOTS = frozenset({"torch", "math", "operator", "numpy", "builtins", "functools", "einops"})

PARTIAL_CALLEES = frozenset({"functools.partial", "partial"})


@dataclass(frozen=True)
class LoopInfo:
    """A ``for`` loop around a node: its targets and what each target's values are."""

    node: ast.For | ast.AsyncFor
    targets: tuple[str, ...]
    # target -> value kind (int, float, str, bool, function, unknown)
    kinds: tuple[tuple[str, str], ...]
    # target -> the element expressions when the loop walks a literal display
    elements: tuple[tuple[str, tuple[ast.expr, ...]], ...] = ()
    # the loop walks a container that grows elsewhere (``append``) or is not a display
    open_ended: bool = False

    def kind(self, name: str) -> str:
        return dict(self.kinds).get(name, "unknown")

    def elements_of(self, name: str) -> tuple[ast.expr, ...]:
        return dict(self.elements).get(name, ())


class Trees:
    """``ast`` trees of project files with a parent map, parsed once per run."""

    def __init__(self, index: ProjectIndex):
        self.index = index
        self._trees: dict[str, ast.Module | None] = {}
        self._maps: dict[str, _TreeMap] = {}

    @classmethod
    def of(cls, index: ProjectIndex) -> "Trees":
        """The trees of this run, shared by every rule (a file is parsed once per run)."""
        trees = index.memo.get("trees")
        if not isinstance(trees, cls):
            trees = index.memo["trees"] = cls(index)
        return trees

    def tree(self, path: str) -> ast.Module | None:
        if path not in self._trees:
            text = self.index.text(path)
            tree = None
            kept = self.index.store.compile_site_trees.pop(path, None)
            if kept is not None and kept[0] is text:
                tree = kept[1]  # parsed for the file's facts in this run
            elif text is not None:
                try:
                    tree = parse_source(text, path)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    tree = None
            self._trees[path] = tree
        return self._trees[path]

    def lines(self, path: str) -> list[str]:
        return self.index.lines(path)

    def span(self, path: str, node: ast.AST) -> Span:
        return span_of(node, self.lines(path))

    def parent(self, path: str, node: ast.AST) -> ast.AST | None:
        tree = self.tree(path)
        if tree is None or node is tree:
            return None
        return self._map(path, tree).parents.get(id(node))

    def ancestors(self, path: str, node: ast.AST) -> Iterator[ast.AST]:
        current = self.parent(path, node)
        while current is not None:
            yield current
            current = self.parent(path, current)

    def node_at(self, path: str, span: Span, kind: type) -> ast.AST | None:
        """The ``kind`` node that starts at ``span`` (a compile site's call)."""
        tree = self.tree(path)
        if tree is None:
            return None
        lines = self.lines(path)
        for node in self._map(path, tree).starting.get(span.line, ()):
            # ``f(x).item()`` starts where ``f(x)`` does: the end tells them apart.
            if isinstance(node, kind) and span_of(node, lines) == span:
                return node
        return None

    def starting_at(self, path: str, line: int) -> list[ast.AST]:
        """The nodes of ``path`` that start on ``line``, in ``ast.walk`` order."""
        tree = self.tree(path)
        return self._map(path, tree).starting.get(line, []) if tree is not None else []

    def _map(self, path: str, tree: ast.Module) -> "_TreeMap":
        """The parents and start lines of every node of ``path``, from one walk of its tree:
        the rules ask once per compile site, and a walk per question grows with the square of
        a module's compile sites."""
        found = self._maps.get(path)
        if found is None:
            found = self._maps[path] = _TreeMap.of(tree)
        return found

    def enclosing_loops(self, path: str, node: ast.AST) -> list[ast.For | ast.AsyncFor | ast.While]:
        """Loops around ``node`` in its own scope (a def boundary stops the walk), innermost first."""
        out: list[ast.For | ast.AsyncFor | ast.While] = []
        for ancestor in self.ancestors(path, node):
            if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                break
            if isinstance(ancestor, (ast.For, ast.AsyncFor, ast.While)):
                out.append(ancestor)
        return out

    def enclosing_scope(self, path: str, node: ast.AST) -> ast.AST | None:
        """The function (or module) whose body holds ``node``."""
        for ancestor in self.ancestors(path, node):
            if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)):
                return ancestor
        return None


@dataclass
class _TreeMap:
    """Each node's parent (by ``id``) and the nodes starting on each line, in ``ast.walk`` order."""

    parents: dict[int, ast.AST]
    starting: dict[int, list[ast.AST]]

    @classmethod
    def of(cls, tree: ast.AST) -> "_TreeMap":
        parents: dict[int, ast.AST] = {}
        starting: dict[int, list[ast.AST]] = {}
        todo = deque([tree])
        while todo:
            node = todo.popleft()
            line = getattr(node, "lineno", None)
            if line is not None:
                starting.setdefault(line, []).append(node)
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
                todo.append(child)
        return cls(parents, starting)


def is_module_level(scope: ast.AST | None) -> bool:
    return scope is None or isinstance(scope, ast.Module)


def scope_body(scope: ast.AST) -> list[ast.stmt]:
    body = getattr(scope, "body", [])
    return body if isinstance(body, list) else []


def assignments(scope: ast.AST, name: str) -> list[ast.expr]:
    """Values assigned to ``name`` directly in ``scope`` (not in nested functions)."""
    out: list[ast.expr] = []
    for node in walk_scope(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    out.append(node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            if isinstance(node.target, ast.Name) and node.target.id == name:
                out.append(node.value)
    return out


def grows(scope: ast.AST, name: str) -> bool:
    """Whether ``name`` gains elements in ``scope`` (``name.append(...)``, ``name += [...]``)."""
    for node in walk_scope(scope):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
            if node.func.value.id == name and node.func.attr in ("append", "extend", "insert", "update", "setdefault"):
                return True
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return True
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) and node.value.id == name:
            return True
    return False


def walk_scope(scope: ast.AST) -> Iterator[ast.AST]:
    """Every node in ``scope``'s body, not descending into nested functions or classes."""
    stack: list[ast.AST] = list(reversed(scope_body(scope))) if not isinstance(scope, ast.Lambda) else [scope.body]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue  # a nested scope: its name is bound here, its body runs elsewhere
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def constant_kind(node: ast.expr) -> str:
    """int, float, str, bool for literals (and ``-1``), else ""."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            return "bool"
        if isinstance(value, int):
            return "int"
        if isinstance(value, float):
            return "float"
        if isinstance(value, str):
            return "str"
    return ""


def display_elements(node: ast.expr, scopes: list[ast.AST]) -> tuple[tuple[ast.expr, ...], bool] | None:
    """Elements of a list/tuple/set display, directly or through a name bound to one in one of
    ``scopes`` (innermost first); the flag says the container also grows somewhere."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return tuple(node.elts), False
    if isinstance(node, ast.Call) and dotted_name(node.func) in ("list", "tuple") and len(node.args) == 1:
        return display_elements(node.args[0], scopes)
    if isinstance(node, ast.Name):
        for scope in scopes:
            values = assignments(scope, node.id)
            if not values:
                continue
            if len(values) == 1 and isinstance(values[0], (ast.List, ast.Tuple, ast.Set)):
                if not grows(scope, node.id) and not (is_module_level(scope) and any(grows(f, node.id) for f in functions_in(scope))):
                    return tuple(values[0].elts), False
                added = appended_values(scope, node.id) if is_module_level(scope) else []
                return tuple(values[0].elts) + tuple(added), True
            return None
    return None


def functions_in(module: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def appended_values(module: ast.AST, name: str) -> list[ast.expr]:
    """What a module-level container ``name`` is given by ``append``/``insert`` calls; a value
    that is a parameter of a registering function (``def register(fn): NAME.append(fn)``) stands
    for the functions decorated with it and the arguments it is called with."""
    out: list[ast.expr] = []
    scopes: list[ast.AST] = [module, *functions_in(module)]
    for scope in scopes:
        params = set()
        if not is_module_level(scope):
            args = scope.args  # type: ignore[attr-defined]
            params = {a.arg for a in list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs)}
        for node in walk_scope(scope):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)):
                continue
            if node.func.value.id != name or node.func.attr not in ("append", "insert") or not node.args:
                continue
            value = node.args[-1]
            if isinstance(value, ast.Name) and value.id in params:
                out.extend(registered(module, scope.name))  # type: ignore[attr-defined]
            else:
                out.append(value)
    return out


def registered(module: ast.AST, registrar: str) -> list[ast.expr]:
    """Functions decorated with ``@registrar`` and arguments of ``registrar(f)`` calls."""
    out: list[ast.expr] = []
    for node in ast.walk(module):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(isinstance(d, ast.Name) and d.id == registrar for d in node.decorator_list):
                out.append(ast.Name(id=node.name, ctx=ast.Load(), lineno=node.lineno, col_offset=node.col_offset))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == registrar and node.args:
            out.append(node.args[0])
    return out


def loop_info(loop: ast.For | ast.AsyncFor, scopes: list[ast.AST]) -> LoopInfo:
    """What each target of ``loop`` takes as values, from its iterable."""
    targets = tuple(n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name))
    kinds: dict[str, str] = {t: "unknown" for t in targets}
    elements: dict[str, tuple[ast.expr, ...]] = {}
    iterable = loop.iter
    target = loop.target
    open_ended = True
    callee = dotted_name(iterable.func) if isinstance(iterable, ast.Call) else ""
    if callee == "enumerate" and isinstance(iterable, ast.Call) and iterable.args:
        if isinstance(target, ast.Tuple) and len(target.elts) == 2:
            if isinstance(target.elts[0], ast.Name):
                kinds[target.elts[0].id] = "int"
            target = target.elts[1]
            iterable = iterable.args[0]
            callee = dotted_name(iterable.func) if isinstance(iterable, ast.Call) else ""
    if callee == "range" and isinstance(target, ast.Name):
        kinds[target.id] = "int"
        open_ended = False
    elif isinstance(target, ast.Name):
        found = display_elements(iterable, scopes)
        if found is not None:
            elems, grown = found
            open_ended = grown
            elements[target.id] = elems
            element_kinds = {constant_kind(e) for e in elems}
            if len(element_kinds) == 1 and "" not in element_kinds:
                kinds[target.id] = element_kinds.pop()
            elif elems and all(isinstance(e, (ast.Name, ast.Attribute, ast.Lambda)) for e in elems):
                kinds[target.id] = "callable?"
    return LoopInfo(node=loop, targets=targets, kinds=tuple(kinds.items()), elements=tuple(elements.items()), open_ended=open_ended)


def free_names(fn: ast.AST) -> set[str]:
    """Names a function or lambda (and functions nested in it) reads but does not bind."""
    args = fn.args  # type: ignore[attr-defined]
    bound = {a.arg for a in list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs)}
    if args.vararg:
        bound.add(args.vararg.arg)
    if args.kwarg:
        bound.add(args.kwarg.arg)
    body = fn.body if isinstance(fn.body, list) else [fn.body]  # type: ignore[attr-defined]
    loads: set[str] = set()
    declared_global: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Load):
                    loads.add(node.id)
                else:
                    bound.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, ast.Global):
                declared_global.update(node.names)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
    return (loads - bound) | (loads & declared_global)


def calls_of(tree: ast.AST, name: str) -> list[ast.Call]:
    """Calls of a plain name (``main()``) anywhere in ``tree``."""
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]


def runs_once(trees: Trees, path: str, function: str) -> bool:
    """Whether a module-level function is only called at module level, outside loops (``main()``
    under ``if __name__ == "__main__":``): code inside it then runs once per process."""
    if not function or "." in function:
        return False
    tree = trees.tree(path)
    if tree is None:
        return False
    calls = calls_of(tree, function)
    if not calls:
        return False
    for call in calls:
        if not is_module_level(trees.enclosing_scope(path, call)) or trees.enclosing_loops(path, call):
            return False
    return True


def function_node(trees: Trees, path: str, line: int, column: int, lambda_: bool) -> ast.AST | None:
    """The def (by its ``def`` line) or lambda (by line and 1-based column) in a file."""
    tree = trees.tree(path)
    if tree is None:
        return None
    lines = trees.lines(path)
    for node in trees.starting_at(path, line):  # ``ast.walk`` order, only the nodes on ``line``
        if lambda_ and isinstance(node, ast.Lambda) and node.lineno == line and span_of(node, lines).column == column:
            return node
        if not lambda_ and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == line:
            return node
    return None


def is_library_function(resolved: str) -> bool:
    """``torch.sin``, ``torch.nn.functional.relu``, ``math.exp``: a fixed library callable."""
    root = resolved.split(".")[0]
    return root in LIBRARY_ROOTS and "." in resolved and not resolved.rsplit(".", 1)[-1][:1].isupper()


# ---- callables passed into a region (RCL401) ------------------------------------------------
#
# Dynamo guards a function argument on its code object (``___check_obj_id(fn.__code__, ...)``)
# and a builtin on the object itself (``___check_obj_id(fn, ...)``): one graph per distinct
# function, never generalised. A ``functools.partial`` or a callable object is guarded on its
# stored values instead (``fn.keywords['k'] == 0``, ``fn.k == 0``), which automatic dynamic
# turns into an input after one recompile.


@dataclass(frozen=True)
class Callee:
    """One callable passed at a call site, named by what Dynamo's guard compares."""

    identity: str  # ``def pkg.mod.f``, ``lambda train.py:12:8``, ``torch.sin``, ``partial(def ...)``
    text: str  # how the source spells it
    place: str  # ``path:line`` of the argument
    family: str = "function"  # function, partial, instance
    # For partials and callable objects: the stored value changes per call (a loop variable).
    varying_kind: str = ""  # "" when constant, else int/float/str/bool/unknown
    # The guarded member that changes, in Dynamo's spelling below the argument: a partial's
    # keyword ``.keywords['temperature']``; "" when not known.
    member: str = ""


@dataclass(frozen=True)
class Passed:
    """The callables one call site can pass; ``open_ended`` when they come from a container
    that grows elsewhere (so their number is not fixed by the source)."""

    callees: tuple[Callee, ...]
    open_ended: bool = False


class CallableResolver:
    """Resolves an argument expression at a call site to the callables it can be."""

    def __init__(self, index: ProjectIndex, trees: Trees):
        self.index = index
        self.trees = trees

    def scopes(self, path: str, node: ast.AST) -> list[ast.AST]:
        """Enclosing functions of ``node``, innermost first, then the module."""
        out = [a for a in self.trees.ancestors(path, node) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module))]
        return out

    def passed(self, facts: ModuleFacts, call: ast.Call, expr: ast.expr) -> Passed | None:
        path = facts.path
        scopes = self.scopes(path, call)
        loops = [loop for loop in self.trees.enclosing_loops(path, call) if isinstance(loop, (ast.For, ast.AsyncFor))]
        loop_kinds: dict[str, str] = {}
        for loop in loops:
            info = loop_info(loop, scopes)
            for target in info.targets:
                loop_kinds.setdefault(target, info.kind(target))
            if isinstance(expr, ast.Name) and expr.id in info.targets:
                elements = info.elements_of(expr.id)
                if not elements:
                    return None
                callees = []
                for element in elements:
                    found = self.callee(facts, element, scopes, {}, depth=1)
                    if found is None:
                        return None
                    callees.append(found)
                return Passed(tuple(callees), open_ended=info.open_ended)
        found = self.callee(facts, expr, scopes, loop_kinds, depth=0)
        return Passed((found,)) if found is not None else None

    def callee(self, facts: ModuleFacts, expr: ast.expr, scopes: list[ast.AST], loop_kinds: dict[str, str], depth: int) -> Callee | None:
        path = facts.path
        place = f"{path}:{getattr(expr, 'lineno', 0)}"
        text = ast.unparse(expr)
        if depth > 4:
            return None
        if isinstance(expr, ast.Lambda):
            # Lambdas from one line share a code object: re-creating one costs nothing.
            return Callee(f"lambda {path}:{expr.lineno}:{expr.col_offset}", "a lambda" if len(text) > 40 else text, place)
        if isinstance(expr, ast.Name):
            return self.named(facts, expr.id, scopes, loop_kinds, depth, place)
        if isinstance(expr, ast.Attribute):
            dotted = dotted_name(expr)
            if not dotted or dotted.split(".")[0] in ("self", "cls"):
                return None
            resolved = facts.resolve(dotted)
            ref = self.index.resolve_function(resolved, path)
            if ref is not None:
                target = self.index.facts(ref.path)
                return Callee(f"def {target.module if target else ref.path}.{ref.qualname}", dotted, place)
            if resolved != dotted and is_library_function(resolved):
                return Callee(resolved, dotted, place)
            if dotted.split(".")[0] in ("torch", "math", "operator") and is_library_function(dotted):
                return Callee(dotted, dotted, place)
            return None
        if isinstance(expr, ast.Call):
            callee_text = dotted_name(expr.func)
            if not callee_text:
                return None
            resolved = facts.resolve(callee_text)
            varying = self.varying_kind(expr, loop_kinds)
            if resolved in PARTIAL_CALLEES or callee_text in PARTIAL_CALLEES:
                if not expr.args:
                    return None
                inner = self.callee(facts, expr.args[0], scopes, {}, depth + 1)
                if inner is None:
                    return None
                member = self.varying_keyword(expr, set(loop_kinds))
                return Callee(f"partial({inner.identity})", text, place, "partial", varying, member)
            found = self.index.resolve_class(resolved, path) or self.index.resolve_class(callee_text, path)
            if found is not None and self.index.class_method(found[0], found[1], "__call__") is not None:
                return Callee(f"instance {found[0].module}.{found[1].qualname}", text, place, "instance", varying)
            return self.made_by_factory(expr, resolved, path, loop_kinds, depth, place, text)
        return None

    def made_by_factory(self, call: ast.Call, resolved: str, path: str, loop_kinds: dict[str, str], depth: int, place: str, text: str) -> Callee | None:
        """The callable a project function returns (``strategy(name)`` returning
        ``partial(f, temperature=table[name])``), followed into its one ``return``.

        A stored value that depends on a parameter of the factory varies between calls when
        the call site passes that parameter a loop variable: the factory runs per iteration
        and builds a partial (or object) holding a different value each time.
        """
        ref = self.index.resolve_function(resolved, path)
        here = self.index.facts(path)
        if ref is None and here is not None and "." not in resolved and resolved == dotted_name(call.func):
            ref = self.index.resolve_function(f"{here.module}.{resolved}", path)  # a function of this module
        if ref is None or "." in ref.qualname:
            return None  # module-level factories only: a method's receiver is not followed
        target = self.index.facts(ref.path)
        tree = self.trees.tree(ref.path)
        if target is None or tree is None:
            return None
        factory = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == ref.qualname), None)
        if factory is None:
            return None
        returns = [n for n in ast.walk(factory) if isinstance(n, ast.Return) and n.value is not None]
        if len(returns) != 1 or not isinstance(returns[0].value, ast.Call):
            return None
        made = self.callee(target, returns[0].value, [factory, tree], {}, depth + 1)
        if made is None or made.family not in ("partial", "instance"):
            return None
        # Which factory parameters get a loop variable at this call site.
        params = [a.arg for a in list(factory.args.posonlyargs) + list(factory.args.args)]
        varying_params: dict[str, str] = {}
        for position, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                return None
            kind = self.loop_kind_of(arg, loop_kinds)
            if kind and position < len(params):
                varying_params[params[position]] = kind
        for keyword in call.keywords:
            kind = self.loop_kind_of(keyword.value, loop_kinds)
            if kind and keyword.arg:
                varying_params[keyword.arg] = kind
        if not varying_params:
            return replace(made, text=text, place=place, varying_kind="", member="")
        stored = returns[0].value
        kind = self.varying_kind(stored, varying_params)
        if not kind:
            return replace(made, text=text, place=place, varying_kind="", member="")
        # The parameter passed through unchanged keeps the loop variable's kind; a value looked
        # up or computed from it is of a kind not known here.
        direct = any(isinstance(v, ast.Name) and v.id in varying_params for v in list(stored.args[1:]) + [k.value for k in stored.keywords])
        member = self.varying_keyword(stored, set(varying_params)) if made.family == "partial" else ""
        return replace(made, text=text, place=place, varying_kind=kind if direct else "unknown", member=member)

    @staticmethod
    def varying_keyword(call: ast.Call, names: set[str]) -> str:
        """``.keywords['k']`` for the first keyword of a partial whose value reads ``names``."""
        for keyword in call.keywords:
            if keyword.arg and any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(keyword.value)):
                return f".keywords[{keyword.arg!r}]"
        return ""

    def named(self, facts: ModuleFacts, name: str, scopes: list[ast.AST], loop_kinds: dict[str, str], depth: int, place: str) -> Callee | None:
        path = facts.path
        for scope in scopes:
            if not is_module_level(scope):
                params = scope.args  # type: ignore[attr-defined]
                all_params = list(params.posonlyargs) + list(params.args) + list(params.kwonlyargs)
                if any(a.arg == name for a in all_params):
                    return None  # forwarded from the caller: unknown here
            nested = self.nested_def(scope, name)
            if nested is not None:
                where = "module" if is_module_level(scope) else f"{path}:{nested.lineno}"
                if is_module_level(scope):
                    return Callee(f"def {facts.module}.{name}", name, place)
                return Callee(f"def {where}", name, place)
            values = assignments(scope, name)
            if values:
                if len(values) != 1:
                    return None
                return self.callee(facts, values[0], scopes[scopes.index(scope):], loop_kinds, depth + 1)
        target = facts.import_target(name)
        if target:
            ref = self.index.resolve_function(target, path)
            if ref is not None:
                other = self.index.facts(ref.path)
                return Callee(f"def {other.module if other else ref.path}.{ref.qualname}", name, place)
            if is_library_function(target):
                return Callee(target, name, place)
        return None

    @staticmethod
    def nested_def(scope: ast.AST, name: str) -> ast.AST | None:
        body = getattr(scope, "body", [])
        stack = list(body) if isinstance(body, list) else []
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name == name:
                    return node
                continue
            if isinstance(node, (ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(node, ast.stmt):
                stack.extend(ast.iter_child_nodes(node))
        return None

    @staticmethod
    def varying_kind(call: ast.Call, loop_kinds: dict[str, str]) -> str:
        """The kind of a loop variable stored in a partial or callable object, "" if none."""
        values = list(call.args[1:] if call.args else []) + [kw.value for kw in call.keywords]
        # A callable object stores every constructor argument; a partial the bound ones.
        if not (dotted_name(call.func).endswith("partial")):
            values = list(call.args) + [kw.value for kw in call.keywords]
        for value in values:
            kind = CallableResolver.loop_kind_of(value, loop_kinds)
            if kind:
                return kind
        return ""

    @staticmethod
    def loop_kind_of(value: ast.expr, loop_kinds: dict[str, str]) -> str:
        """The kind of the first loop variable ``value`` reads, "" if it reads none."""
        for node in ast.walk(value):
            if isinstance(node, ast.Name) and node.id in loop_kinds:
                return loop_kinds[node.id]
        return ""
