"""Call-site facts: what flows into a compiled region where it is called.

Several recompile families are decided at the call site rather than inside the region (list
lengths, callables passed in, grad mode around the call, a DataLoader's last batch). Calls are
collected lazily, only in files that mention a name the compiled object is known by.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, replace

from recompile_lint.analysis.facts import DEEP_CODE_FRAMES, ModuleFacts, Span, dotted_name, span_of
from recompile_lint.analysis.index import ProjectIndex
from recompile_lint.analysis.parsing import parse_source
from recompile_lint.analysis.textscan import Names, mentioned
from recompile_lint.analysis.regions import CompiledRegion


@dataclass(frozen=True)
class Argument:
    """One argument expression at a call site."""

    text: str  # source text
    kind: str  # int, float, str, bool, none, list, tuple, dict, set, lambda, name, attribute, call, subscript, starred, other
    length: int | None = None  # element count of a list/tuple/dict/set display
    rank: int | None = None  # nesting depth of a list display, or len(shape) of torch.randn(a, b)
    loop_var: bool = False  # a name bound by an enclosing for-loop (varies per iteration)
    line: int = 0
    # For names: the dotted text a local/global name was last assigned from at module/function
    # level (``fn = torch.sin`` -> "torch.sin"), when known.
    origin: str = ""
    # Variables of the enclosing loops the expression mentions (``xs[:i]``, ``torch.randn(i, 8)``,
    # ``[x] * i``): the value differs per iteration even when the argument is not a loop target.
    loop_names: tuple[str, ...] = ()
    # Source text of each dimension of ``torch.randn(a, b)`` / ``torch.zeros((a, b))``.
    shape: tuple[str, ...] = ()
    # A name whose list/dict/set the enclosing function grows inside a loop (``xs.append(...)``),
    # or a tensor it rebuilds longer there (``k = torch.cat([k, new])``), while the call sits in
    # a loop: its length (or size) differs per call.
    grown: bool = False


@dataclass(frozen=True)
class Loop:
    """A ``for`` loop around a call site."""

    targets: tuple[str, ...]
    iter_text: str
    iter_callee: str  # resolved dotted callee of the iterable (``torch.utils.data.DataLoader``), or ""
    iter_keywords: tuple[tuple[str, str], ...] = ()  # keyword -> source text when the iterable is a call
    iter_name: str = ""  # a plain name iterated over (``for batch in loader``)
    # Resolved dotted callees of the calls in the loop body (``torch._dynamo.mark_unbacked``).
    body_calls: tuple[str, ...] = ()
    # How many times the loop runs when the source says (``range(12)``, a literal tuple, the
    # items of a dict built from one, the members of an enum), else None.
    count: int | None = None


@dataclass(frozen=True)
class CallSite:
    """A call of a compiled object."""

    path: str
    module: str
    span: Span
    callee: str  # dotted text as written
    args: tuple[Argument, ...]
    keywords: tuple[tuple[str, Argument], ...]
    function: str  # enclosing function qualname ("" at module level)
    contexts: tuple[str, ...]  # resolved dotted callees of enclosing ``with`` items, outermost first
    loops: tuple[Loop, ...]  # enclosing for-loops, outermost first
    spread: bool = False  # passes ``*args`` or ``**kwargs``: not every argument it binds is spelled


def names_of(region: CompiledRegion, index: ProjectIndex) -> set[str]:
    """The names a compiled object is called by: the decorated function, the variable the
    compiled result is assigned to, the compiled model variable."""
    names: set[str] = set()
    site = region.site
    if site.form == "decorator" and site.target_kind != "class":
        # (A decorated class's name is its constructor's: its instances are what is called.)
        names.add(site.decorated.rsplit(".", 1)[-1])
    if site.assigned_to:
        names.add(site.assigned_to.rsplit(".", 1)[-1])
    if site.form == "method" or (site.target and site.target_kind in ("name", "self-attribute", "attribute") and region.model_class):
        names.add(site.target.rsplit(".", 1)[-1])
    return names


class _CallCollector(ast.NodeVisitor):
    def __init__(self, facts: ModuleFacts, lines: list[str], names: set[str]):
        self.facts = facts
        self.lines = lines
        self.names = names
        self.looked_for = Names(names)
        self.functions: list[str] = []
        self.contexts: list[str] = []
        self.loops: list[Loop] = []
        self.assigned: list[dict[str, str]] = [{}]
        self.built: list[dict[str, tuple[str, tuple[tuple[str, str], ...]]]] = [{}]
        self.grown: list[set[str]] = [set()]
        self.sites: list[CallSite] = []
        # The value each name of the current function was last assigned (for loop counts).
        self.values: dict[str, ast.AST] = {}

    def visit_Module(self, node: ast.Module) -> None:
        self.grown[-1] = grown_in_loops(node.body)
        for stmt in node.body:
            self.visit(stmt)

    def names_in(self, node: ast.AST) -> bool:
        """Whether the source of a definition mentions a callee name at all: a body that
        does not cannot hold a call of one, and is not walked."""
        segment = "\n".join(self.lines[node.lineno - 1 : node.end_lineno or node.lineno])
        return self.looked_for.any_in(segment)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for deco in node.decorator_list:
            self.visit(deco)
        if not self.names_in(node):
            return
        parent = self.functions[-1] if self.functions else ""
        self.functions.append(f"{parent}.{node.name}" if parent else node.name)
        saved_loops, saved_contexts = self.loops, self.contexts
        # A function body runs when called, not inside the loops around its definition.
        self.loops, self.contexts = [], []
        self.assigned.append({})
        self.built.append({})
        self.grown.append(grown_in_loops(node.body))
        saved_values, self.values = self.values, {}
        for stmt in node.body:
            self.visit(stmt)
        self.values = saved_values
        self.grown.pop()
        self.built.pop()
        self.assigned.pop()
        self.loops, self.contexts = saved_loops, saved_contexts
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if not self.names_in(node):
            return
        parent = self.functions[-1] if self.functions else ""
        self.functions.append(f"{parent}.{node.name}" if parent else node.name)
        for stmt in node.body:
            self.visit(stmt)
        self.functions.pop()

    def visit_Assign(self, node: ast.Assign) -> None:
        value = node.value
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.values[node.targets[0].id] = value
        if dotted_name(value):
            text = self.facts.resolve(dotted_name(value))
        elif isinstance(value, ast.Lambda):
            text = ast.unparse(value)
        elif isinstance(value, ast.Call) and dotted_name(value.func):
            # ``loader = DataLoader(ds, drop_last=True)``: remembered as the call it came from.
            text = ast.unparse(value)
            self.built[-1][self.target_key(node.targets[0])] = (
                self.facts.resolve(dotted_name(value.func)),
                tuple((kw.arg, ast.unparse(kw.value)) for kw in value.keywords if kw.arg),
            )
        else:
            text = ""
        for target in node.targets:
            if isinstance(target, ast.Name) and text:
                self.assigned[-1][target.id] = text
        self.generic_visit(node)

    def iterations(self, node: ast.AST, depth: int = 0) -> int | None:
        """How many items ``node`` yields, when the source makes it plain."""
        if depth > 3:
            return None
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and not any(isinstance(e, ast.Starred) for e in node.elts):
            return len(node.elts)
        if isinstance(node, ast.Dict) and None not in node.keys:
            return len(node.keys)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)) and len(node.generators) == 1 and not node.generators[0].ifs:
            return self.iterations(node.generators[0].iter, depth + 1)
        if isinstance(node, ast.Call):
            callee = dotted_name(node.func)
            if callee == "range" and node.args and all(isinstance(a, ast.Constant) and isinstance(a.value, int) for a in node.args):
                return len(range(*[a.value for a in node.args]))
            if callee in ("enumerate", "reversed", "sorted", "list", "tuple") and node.args:
                return self.iterations(node.args[0], depth + 1)
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("items", "keys", "values") and not node.args:
                return self.iterations(node.func.value, depth + 1)
            return None
        if isinstance(node, ast.Name):
            value = self.values.get(node.id)
            if value is not None:
                return self.iterations(value, depth + 1)
            cls = self.facts.cls(node.id)
            if cls is not None and cls.is_enum:
                return len([name for name, init in cls.attrs if init.class_level])
        return None

    @staticmethod
    def target_key(target: ast.AST) -> str:
        return dotted_name(target)

    def built_from(self, name: str) -> tuple[str, tuple[tuple[str, str], ...]] | None:
        for scope in reversed(self.built):
            if name in scope:
                return scope[name]
        return None

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        added = 0
        for item in node.items:
            self.visit(item.context_expr)
            expr = item.context_expr.func if isinstance(item.context_expr, ast.Call) else item.context_expr
            text = dotted_name(expr)
            if text:
                self.contexts.append(self.facts.resolve(text))
                added += 1
        for stmt in node.body:
            self.visit(stmt)
        del self.contexts[len(self.contexts) - added :]

    visit_AsyncWith = visit_With

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        targets = tuple(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        iter_callee = ""
        keywords: tuple[tuple[str, str], ...] = ()
        iterable = node.iter
        # ``for i, batch in enumerate(loader)``: the loop still walks the loader.
        if isinstance(iterable, ast.Call) and dotted_name(iterable.func) in ("enumerate", "zip", "tqdm", "tqdm.tqdm") and iterable.args:
            iterable = iterable.args[0]
        if isinstance(iterable, ast.Call):
            text = dotted_name(iterable.func)
            iter_callee = self.facts.resolve(text) if text else ""
            keywords = tuple((kw.arg, ast.unparse(kw.value)) for kw in iterable.keywords if kw.arg)
        iter_name = iterable.id if isinstance(iterable, ast.Name) else (dotted_name(iterable) or "")
        if iter_name and not iter_callee:
            built = self.built_from(iter_name)
            if built is not None:
                iter_callee, keywords = built
        body_calls = tuple(
            sorted({self.facts.resolve(dotted_name(n.func)) for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Call) and dotted_name(n.func)})
        )
        self.loops.append(Loop(targets, ast.unparse(node.iter), iter_callee, keywords, iter_name, body_calls, self.iterations(node.iter)))
        for stmt in node.body:
            self.visit(stmt)
        self.loops.pop()
        for stmt in node.orelse:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def visit_comprehension_loops(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        """``[model(x) for x in batches]``: the element runs once per item, like a loop body."""
        added = 0
        for gen in node.generators:
            self.visit(gen.iter)
            targets = tuple(n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name))
            self.loops.append(Loop(targets, ast.unparse(gen.iter), "", (), gen.iter.id if isinstance(gen.iter, ast.Name) else "", (), self.iterations(gen.iter)))
            added += 1
            for cond in gen.ifs:
                self.visit(cond)
        if isinstance(node, ast.DictComp):
            self.visit(node.key)
            self.visit(node.value)
        else:
            self.visit(node.elt)
        del self.loops[len(self.loops) - added :]

    visit_ListComp = visit_comprehension_loops
    visit_SetComp = visit_comprehension_loops
    visit_GeneratorExp = visit_comprehension_loops
    visit_DictComp = visit_comprehension_loops

    def visit_Call(self, node: ast.Call) -> None:
        callee = dotted_name(node.func)
        if callee and callee.rsplit(".", 1)[-1] in self.names:
            loop_names = {t for loop in self.loops for t in loop.targets}
            self.sites.append(
                CallSite(
                    path=self.facts.path,
                    module=self.facts.module,
                    span=span_of(node, self.lines),
                    callee=callee,
                    args=tuple(self.argument(a, loop_names) for a in node.args),
                    keywords=tuple((kw.arg, self.argument(kw.value, loop_names)) for kw in node.keywords if kw.arg),
                    function=self.functions[-1] if self.functions else "",
                    contexts=tuple(self.contexts),
                    loops=tuple(self.loops),
                    spread=any(isinstance(a, ast.Starred) for a in node.args) or any(kw.arg is None for kw in node.keywords),
                )
            )
        self.generic_visit(node)

    def argument(self, node: ast.AST, loop_names: set[str]) -> Argument:
        arg = self._argument(node, loop_names)
        mentioned = tuple(sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in loop_names}))
        shape = _factory_shape(node, self.facts) if arg.kind == "call" else ()
        grown = bool(self.loops) and (
            (isinstance(node, ast.Name) and node.id in self.grown[-1])
            # ``torch.tensor(rewards)``, ``torch.stack(frames)``: built from a list that grows.
            or (isinstance(node, ast.Call) and any(isinstance(a, ast.Name) and a.id in self.grown[-1] for a in node.args))
        )
        if mentioned or shape or grown:
            arg = replace(arg, loop_names=mentioned, shape=shape, grown=grown)
        return arg

    def _argument(self, node: ast.AST, loop_names: set[str]) -> Argument:
        text = ast.unparse(node)
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant):
            kind = {bool: "bool", int: "int", float: "float", str: "str", type(None): "none"}.get(type(node.value), "other")
            return Argument(text, kind, line=line)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            kind = {ast.List: "list", ast.Tuple: "tuple", ast.Set: "set"}[type(node)]
            return Argument(text, kind, length=len(node.elts), rank=_display_rank(node), line=line)
        if isinstance(node, ast.Dict):
            return Argument(text, "dict", length=len(node.keys), line=line)
        if isinstance(node, ast.Lambda):
            return Argument(text, "lambda", line=line)
        if isinstance(node, ast.Starred):
            return Argument(text, "starred", line=line)
        if isinstance(node, ast.Name):
            origin = ""
            for scope in reversed(self.assigned):
                if node.id in scope:
                    origin = scope[node.id]
                    break
            if not origin:
                resolved = self.facts.resolve(node.id)
                origin = resolved if resolved != node.id else ""
            return Argument(text, "name", loop_var=node.id in loop_names, line=line, origin=origin)
        if isinstance(node, ast.Attribute):
            return Argument(text, "attribute", line=line, origin=self.facts.resolve(dotted_name(node)) if dotted_name(node) else "")
        if isinstance(node, ast.Call):
            callee = dotted_name(node.func)
            full = self.facts.resolve(callee) if callee else ""
            rank = None
            if full.startswith("torch.") and full.rsplit(".", 1)[-1] in ("randn", "rand", "zeros", "ones", "empty"):
                if len(node.args) == 1 and isinstance(node.args[0], (ast.Tuple, ast.List)):
                    rank = len(node.args[0].elts)
                elif node.args and not any(isinstance(a, ast.Starred) for a in node.args):
                    rank = len(node.args)
            return Argument(text, "call", rank=rank, line=line, origin=full)
        if isinstance(node, ast.Subscript):
            return Argument(text, "subscript", line=line)
        return Argument(text, "other", line=line)


GROWING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "extendleft"})
TENSOR_FACTORY_NAMES = frozenset({"randn", "rand", "zeros", "ones", "empty", "full", "randint"})


def grown_in_loops(body: list[ast.stmt]) -> set[str]:
    """Names a function body (not nested defs) grows inside a loop: ``xs.append(x)``,
    ``xs += [x]``, ``d[k] = v`` with a loop-dependent key; not a name each iteration of that
    loop empties first (``xs.clear()``, ``xs = []``): it holds one iteration's items."""
    out: set[str] = set()

    def walk(nodes: list[ast.stmt]) -> None:
        for stmt in nodes:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                grown, cleared = _loop_level(stmt.body)
                out.update(grown - cleared)
                walk(stmt.body)  # nested loops, each judged at its own level
                walk(stmt.orelse)
                continue
            for field in ("body", "orelse", "finalbody"):
                walk(getattr(stmt, field, []) or [])
            for handler in getattr(stmt, "handlers", []) or []:
                walk(handler.body)

    walk(body)
    return out


def _loop_level(body: list[ast.stmt]) -> tuple[set[str], set[str]]:
    """(names grown, names emptied) by the statements of one loop's body, nested loops left
    out (they are loops of their own); an emptying counts where it is a statement of the body
    itself, before any growth of the name."""
    grown: set[str] = set()
    cleared: set[str] = set()
    for stmt in body:
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            continue  # a nested loop: its own level
        emptied = _emptied(stmt)
        if emptied is not None and emptied not in grown:
            cleared.add(emptied)
        for sub in _level_walk(stmt):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in GROWING_METHODS and isinstance(sub.func.value, ast.Name):
                grown.add(sub.func.value.id)
            elif isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name) and isinstance(sub.value, (ast.List, ast.Tuple)):
                grown.add(sub.target.id)
            elif isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name) and _concatenates(sub.value, sub.targets[0].id):
                # ``cache = torch.cat([cache, new], dim=1)``: a tensor that grows per step.
                grown.add(sub.targets[0].id)
    return grown, cleared


def _emptied(stmt: ast.stmt) -> str | None:
    """The name a statement empties: ``xs.clear()``, ``xs = []`` / ``{}`` / ``list()`` / ``dict()``."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and not stmt.value.args:
        func = stmt.value.func
        if isinstance(func, ast.Attribute) and func.attr == "clear" and isinstance(func.value, ast.Name):
            return func.value.id
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        value = stmt.value
        empty_display = isinstance(value, (ast.List, ast.Dict, ast.Set)) and not (value.keys if isinstance(value, ast.Dict) else value.elts)
        empty_call = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("list", "dict", "set", "deque") and not value.args and not value.keywords
        if empty_display or empty_call:
            return stmt.targets[0].id
    return None


def _level_walk(node: ast.AST):
    """The nodes of a statement of one loop level: not into nested loops or definitions."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if not isinstance(child, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.append(child)


def _concatenates(value: ast.AST, name: str) -> bool:
    """``torch.cat([name, ...])`` / ``torch.concat((name, ...))``: ``name`` rebuilt longer."""
    if not isinstance(value, ast.Call) or not value.args:
        return False
    callee = dotted_name(value.func).rsplit(".", 1)[-1]
    first = value.args[0]
    return callee in ("cat", "concat", "concatenate", "hstack", "vstack") and isinstance(first, (ast.List, ast.Tuple)) and any(
        isinstance(e, ast.Name) and e.id == name for e in first.elts
    )


def _factory_shape(node: ast.AST, facts: ModuleFacts) -> tuple[str, ...]:
    """Dimensions (source text) of ``torch.randn(a, b)`` / ``torch.zeros((a, b))``."""
    if not isinstance(node, ast.Call):
        return ()
    callee = dotted_name(node.func)
    full = facts.resolve(callee) if callee else ""
    if not (full.startswith("torch.") and full.rsplit(".", 1)[-1] in TENSOR_FACTORY_NAMES):
        return ()
    args = list(node.args)
    if full.endswith(".full"):
        args = args[:1]
    elif full.endswith(".randint"):
        args = [a for a in args if isinstance(a, (ast.Tuple, ast.List))][:1]
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        args = list(args[0].elts)
    if not args or any(isinstance(a, ast.Starred) for a in args):
        return ()
    return tuple(ast.unparse(a) for a in args)


def _display_rank(node: ast.AST) -> int:
    depth = 0
    while isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        depth += 1
        node = node.elts[0]
    return depth


def collect_call_sites(index: ProjectIndex, names: frozenset[str]) -> list[CallSite]:
    """Calls, anywhere in the project, of a callee whose last name is one of ``names``."""
    by_path: dict[str, tuple[CallSite, ...]] = {}
    todo: list[tuple[str, tuple[str, ...], str]] = []  # (path, names it mentions, cache key)
    cache = index.store.cache
    looked_for = Names(names)
    for path in index.paths:
        text = index.text(path)
        if text is None:
            continue
        present = tuple(sorted(looked_for.in_text(text)))
        if not present:
            continue
        # The sites of a file depend on its text and the names looked for that it mentions:
        # cached under that key, a file unchanged since the last run is not parsed again.
        key = f"{index.store.key(path, text)}\0calls\0{','.join(present)}"
        cached = cache.get_call_sites(key, path) if cache is not None else None
        if cached is not None:
            # Collecting the sites reads the file's facts, and later stages look at the files
            # whose facts were read (``index.parsed()``: who instantiates a compiled module):
            # a cached answer must leave the same files read, or a warm cache (another flake8
            # worker's, a run before) finds less than a cold one.
            index.facts(path)
            by_path[path] = cached
        else:
            todo.append((path, present, key))
    found = None
    if index.jobs != 1 and todo:
        from recompile_lint.analysis.parallel import call_sites_in_parallel

        # The files' facts first, here (a worker's parse would not reach this index).
        index.prefetch(path for path, _, _ in todo)
        for path, _, _ in todo:
            index.facts(path)
        found = call_sites_in_parallel(index, [(path, present) for path, present, _ in todo], index.jobs, file_call_sites)
    for path, present, key in todo:
        sites = found[path] if found is not None else file_call_sites(index, path, index.text(path) or "", set(present))
        if sites is None:
            continue
        if cache is not None:
            cache.put_call_sites(key, path, sites)
        by_path[path] = sites
    return [site for path in index.paths if path in by_path for site in by_path[path]]


def file_call_sites(index: ProjectIndex, path: str, text: str, names: set[str]) -> tuple[CallSite, ...] | None:
    """The calls of ``names`` in one file (None when it cannot be parsed)."""
    facts = index.facts(path)
    if facts is None:
        return None
    try:
        tree = parse_source(text, path)
    except (SyntaxError, ValueError, RecursionError):
        return None
    collector = _CallCollector(facts, text.split("\n"), names)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), DEEP_CODE_FRAMES))  # deep elif chains
    collector.visit(tree)
    return tuple(collector.sites)


# Key of the one collection made for every region of a run (see ``prime``).
_ALL_REGIONS = frozenset({"*"})


def is_local(region: CompiledRegion) -> bool:
    """Whether the region's compiled object is a local name of the function that compiles it
    (``fn = torch.compile(f)``, a decorated ``def`` nested in a function): only that file
    calls it by name, and other files only through parameters it is handed to."""
    site = region.site
    if not site.function:
        return False
    if site.form == "decorator":
        return region.entry.path == region.site_path and region.entry.qualname.startswith(site.function + ".")
    return not (site.assigned_to or site.target or "").startswith("self.")


def binds(index: ProjectIndex, region: CompiledRegion, call: CallSite) -> bool:
    """Whether ``call`` can run the region: False when it passes a keyword that no parameter
    of the entry takes and the entry takes no ``**kwargs``. Python raises ``TypeError``
    before the body runs, so a program that makes the call holds something else there (a
    value of another class that analysis could not rule out). An entry under a decorator of
    the project's or another library's (one that may take keywords of its own) always binds."""
    if not call.keywords:
        return True
    fn = index.function(region.entry)
    if fn is None or any(not _keeps_signature(name) for name in fn.decorators):
        return True
    if any(param.kind == "kwarg" for param in fn.params):
        return True
    names = {param.name for param in fn.params if param.kind in ("positional", "keyword")}
    return all(key in names for key, _ in call.keywords)


def _keeps_signature(decorator: str) -> bool:
    """A decorator whose result takes the arguments the function takes."""
    return decorator in ("staticmethod", "classmethod", "functools.wraps") or decorator.startswith("torch.")


def prime(index: ProjectIndex, regions: list[CompiledRegion]) -> None:
    """Collect the call sites of every region in one pass over the project: each file is
    parsed and walked once, instead of once per region that names it. A local compiled
    object's calls are collected in its own file (``call_sites``), not project-wide: a local
    ``fn`` would otherwise walk every file that calls anything named ``fn``."""
    names: set[str] = set()
    for region in regions:
        if not is_local(region):
            names |= names_of(region, index)
    if names:
        sites = collect_call_sites(index, frozenset(names))
        index.call_site_cache[_ALL_REGIONS] = sites
        index.primed_names = frozenset(names)
        # By callee name, with each site's position in the project-wide order.
        by_name: dict[str, list[tuple[int, CallSite]]] = {}
        for position, site in enumerate(sites):
            by_name.setdefault(site.callee.rsplit(".", 1)[-1], []).append((position, site))
        index.memo["call_sites_by_name"] = by_name


def primed_sites(index: ProjectIndex, names: set[str]) -> dict[str, list[tuple[int, CallSite]]] | None:
    """The project-wide collection of ``prime`` by callee name (each site with its position
    in the project-wide order), when it covers ``names``; None otherwise."""
    if _ALL_REGIONS in index.call_site_cache and names <= index.primed_names:
        return index.memo["call_sites_by_name"]  # type: ignore[return-value]
    return None


def call_sites(index: ProjectIndex, region: CompiledRegion) -> list[CallSite]:
    """Every call of the region's compiled object that the project makes (name-matched)."""
    names = names_of(region, index)
    if not names:
        return []
    if is_local(region):
        return _local_call_sites(index, region, names)
    by_name = primed_sites(index, names)
    if by_name is not None:
        found = [entry for name in names for entry in by_name.get(name, ())]
        return [site for _, site in sorted(found, key=lambda entry: entry[0])]
    cache = index.call_site_cache
    key = frozenset(names)
    if key not in cache:
        cache[key] = collect_call_sites(index, key)
    return list(cache[key])


def _local_call_sites(index: ProjectIndex, region: CompiledRegion, names: set[str]) -> list[CallSite]:
    """Calls of a local compiled object: in its file, and in the files of the functions it is
    handed to as an argument (``train(model)``: the run's ``Variation`` leaves its ``aliases``
    in ``index.memo``)."""
    aliases = index.memo.get("aliases")
    paths = {region.site_path} | ({ref.path for ref, _ in aliases(region)} if callable(aliases) else set())
    out: list[CallSite] = []
    for path in sorted(paths):
        key = frozenset({f"{path}\0{name}" for name in names})
        if key not in index.call_site_cache:
            text = index.text(path) or ""
            present = mentioned(text, names)
            index.call_site_cache[key] = tuple(file_call_sites(index, path, text, present) or ()) if present else ()
        out.extend(index.call_site_cache[key])
    return out
