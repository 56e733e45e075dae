"""An independent count of the compile sites of a repository: a plain ``ast`` pass that shares
no code with the linter, so that ``corpus.py`` can say how many real sites ``regions`` did not
list.

The counting rule (bench/README.md explains it with examples), per file, then per project:

1. torch's compile entry points: ``torch.compile``, ``torch.compiler.compile`` (through
   ``import torch as t``), a name imported from them (``from torch import compile as c``), and a
   name or attribute assigned an expression that mentions one uncalled (``compile =
   torch.compile if flag else (lambda m: m)``, ``self._compile = torch.compile``), in the
   file or, for a plain name, in the project file it is imported from (``from pkg.jit import
   jit_fuser`` where ``pkg/jit.py`` assigns ``jit_fuser = torch.compile``, at its top level or
   in a function).
2. A call of an entry point with a positional argument or ``model=`` is a site;
   ``torch.compile(**options)(x)`` and ``torch._dynamo.optimize(...)(x)`` are one site each.
3. ``X.compile(...)`` with no positional argument other than ``*args`` is a site
   (``nn.Module.compile``), unless ``X`` starts at a module imported from another library
   (``re``, ``pytest``).
4. A decorator that is an entry point, or a call of one (``@torch.compile(mode=...)``,
   ``@torch._dynamo.optimize(...)``), is a site.
5. A project function is a wrapper when it hands one of its parameters (a name, ``args[0]``
   or ``*args`` of its ``*args``) to an entry point, or to another wrapper at a parameter
   that wrapper compiles (by position, past ``self`` for a method called on an object, or by
   keyword; a ``*`` spread or ``**`` keywords fill any), or calls ``P.compile(...)`` on one
   (rule 3); a nested function doing so makes the function
   that returns it a decorator factory. A call names a wrapper when its name is defined in
   the same file, or imported by name from the file that defines it, as a wrapper, or
   imported through a re-export when every definition of the name is a wrapper (a bare name
   neither defined in the file nor imported is a local or a parameter: no wrapper);
   ``self.name(...)`` in a class that defines ``name``, that method; another method's or
   nested function's name (``x.name(...)``) when every definition of that name in the
   project is a wrapper, unless ``x`` starts at a module imported from another library
   (``re.compile(...)`` beside a test class's own ``compile(self, model)``). Every such call
   with an argument, and every
   ``@factory(...)``/``@wrapper`` decorator, is a site. The wrapper's own call of the entry
   point counts too (rule 2).

A site is its file and line.
"""

from __future__ import annotations

import ast
import os
import warnings

ENTRY_POINTS = frozenset({"torch.compile", "torch.compiler.compile"})
OPTIMIZE = frozenset({"torch._dynamo.optimize", "torch._dynamo.eval_frame.optimize"})


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


class _File:
    def __init__(self, path: str, tree: ast.Module):
        self.path = path
        self.tree = tree
        self.imports: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.imports[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.ImportFrom) and node.level:
                package = _module_name(path).split(".")[: -node.level]
                base = ".".join(package + ([node.module] if node.module else []))
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{base}.{alias.name}"
        self.aliases: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                mentions = any(isinstance(n, (ast.Attribute, ast.Name)) and self.resolve(_dotted(n)) in ENTRY_POINTS and not _is_called(n, node.value) for n in ast.walk(node.value))
                if mentions and not isinstance(node.value, ast.Call):
                    self.aliases.update(t for t in (_dotted(t) for t in targets) if t)

    def resolve(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        target = self.imports.get(head)
        if target is None:
            return dotted
        return f"{target}.{rest}" if rest else target

    def is_entry(self, func: ast.AST) -> bool:
        text = _dotted(func)
        return bool(text) and (self.resolve(text) in ENTRY_POINTS or text in self.aliases)

    def is_optimize(self, func: ast.AST) -> bool:
        text = _dotted(func)
        return bool(text) and self.resolve(text) in OPTIMIZE

    def foreign_module(self, receiver: ast.AST) -> bool:
        head = receiver
        while isinstance(head, ast.Attribute):
            head = head.value
        if not isinstance(head, ast.Name) or head.id not in self.imports:
            return False
        target = self.imports[head.id]
        return not (target == "torch" or target.startswith("torch.")) and head.id in self.imports


def _is_called(node: ast.AST, root: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and n.func is node for n in ast.walk(root))


def _compiled_argument(call: ast.Call) -> ast.AST | None:
    if call.args:
        return call.args[0]
    for kw in call.keywords:
        if kw.arg in ("model", "fn", "func", "module"):
            return kw.value
    return None


def _parameter_passed(arg: ast.AST | None, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``arg`` is one of ``fn``'s parameters: a name, ``args[0]``, ``*args``."""
    if arg is None:
        return False
    names = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    vararg = fn.args.vararg.arg if fn.args.vararg else None
    if isinstance(arg, ast.Name):
        return arg.id in names
    if isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name):
        return arg.value.id == vararg
    if isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Name):
        return arg.value.id == vararg
    return False


def _functions(tree: ast.Module):
    """(function, the function whose body holds it or None)."""
    out = []

    def visit(node: ast.AST, parent) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((child, parent))
                visit(child, child)
            else:
                visit(child, parent)

    visit(tree, None)
    return out


def _own_calls(fn: ast.AST):
    """The calls in ``fn``'s body, not in functions nested in it."""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call):
            yield node
        todo.extend(ast.iter_child_nodes(node))


def _last_name(func: ast.AST) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def count_sites(paths: list[str]) -> set[tuple[str, int]]:
    """The compile sites (file, line) of the given Python files, by the rule above."""
    files: list[_File] = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                source = handle.read()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                files.append(_File(path, ast.parse(source)))
        except (OSError, SyntaxError, ValueError):
            continue
    sites: set[tuple[str, int]] = set()
    modules = {_module_name(f.path): f for f in files}
    # Rule 1 across files: a name imported from the project file that assigns it an entry point.
    for f in files:
        for local, target in list(f.imports.items()):
            module, _, name = target.rpartition(".")
            other = modules.get(module) or next((g for m, g in modules.items() if m.endswith("." + module)), None) if module else None
            if other is not None and other is not f and name in other.aliases:
                f.aliases.add(local)
    # Rules 1-4.
    for f in files:
        for node in ast.walk(f.tree):
            if isinstance(node, ast.Call):
                func = node.func
                if f.is_entry(func) and _compiled_argument(node) is not None:
                    sites.add((f.path, node.lineno))
                elif isinstance(func, ast.Call) and (f.is_entry(func.func) and not func.args or f.is_optimize(func.func)) and node.args:
                    sites.add((f.path, node.lineno))
                elif isinstance(func, ast.Attribute) and func.attr == "compile" and not f.is_entry(func) and all(isinstance(a, ast.Starred) for a in node.args) and not f.foreign_module(func.value):
                    sites.add((f.path, node.lineno))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for deco in node.decorator_list:
                    target = deco.func if isinstance(deco, ast.Call) else deco
                    if f.is_entry(target) or (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Call) and f.is_optimize(deco.func.func)) or f.is_optimize(target):
                        sites.add((f.path, deco.lineno))
    # Rule 5: wrappers to a fixed point, each call matched to a definition by name: the
    # file's own function, a function imported by name from the file that defines it, or a
    # method or nested function of that name when every definition of the name is a wrapper.
    definitions: dict[str, list[tuple[_File, ast.AST]]] = {}
    for f in files:
        for fn, _ in _functions(f.tree):
            definitions.setdefault(fn.name, []).append((f, fn))
    wrappers: dict[int, set[str]] = {}  # id() of each wrapper def: the parameters it compiles (``*``: its ``*args``)
    factories: set[int] = set()
    # ``self.name(...)`` in a class that defines ``name`` calls that method.
    own_method: dict[int, ast.AST] = {}
    for f in files:
        for cls in (n for n in ast.walk(f.tree) if isinstance(n, ast.ClassDef)):
            methods = {m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
            for node in ast.walk(cls):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.value.id == "self" and node.func.attr in methods:
                    own_method[id(node.func)] = methods[node.func.attr]

    def matched(f: _File, func: ast.AST) -> tuple[list[ast.AST], bool]:
        """The definitions a call of ``func`` may run, and whether any of them (True) or every
        one (False) must be a wrapper for the call to be one."""
        if id(func) in own_method:
            return [own_method[id(func)]], True
        name = _last_name(func)
        found = definitions.get(name, [])
        if not found:
            return [], True
        if isinstance(func, ast.Name):
            own = [fn for g, fn in found if g is f]
            if own:
                return own, True
            target = f.imports.get(name, "")
            module = target.rpartition(".")[0]
            other = modules.get(module) or next((g for m, g in modules.items() if m.endswith("." + module) or module.endswith("." + m)), None) if module else None
            defined = [fn for g, fn in found if g is other]
            if defined:
                return defined, True
            if not target:
                # A bare name neither defined in the file nor imported is a local or a
                # parameter (``fn(*args)``): it names no wrapper.
                return [], True
        return [fn for _, fn in found], False

    def is_wrapper(f: _File, func: ast.AST, kinds) -> bool:
        defs, any_one = matched(f, func)
        if not defs:
            return False
        return (any if any_one else all)(id(fn) in kinds for fn in defs)

    def compiled_arguments(f: _File, call: ast.Call) -> list[ast.AST]:
        """The arguments a call of a wrapper passes at a parameter the wrapper compiles (a
        ``*`` spread or ``**`` keywords stand for any position)."""
        defs, any_one = matched(f, call.func)
        if not is_wrapper(f, call.func, wrappers):
            return []
        out: list[ast.AST] = []
        for fn in defs:
            slots = wrappers.get(id(fn), set())
            if not slots:
                continue
            positional = [a.arg for a in fn.args.posonlyargs + fn.args.args]
            skip = 1 if positional and positional[0] in ("self", "cls") and isinstance(call.func, ast.Attribute) and not any(_dotted(d) == "staticmethod" for d in fn.decorator_list) else 0
            for i, arg in enumerate(call.args):
                at = i + skip
                slot = positional[at] if at < len(positional) else "*"
                if isinstance(arg, ast.Starred) or slot in slots:
                    out.append(arg)
            for kw in call.keywords:
                if kw.arg is None or kw.arg in slots:
                    out.append(kw.value)
        return out

    def slot_of(arg: ast.AST | None, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
        """The parameter of ``fn`` that ``arg`` is (``*`` for its ``*args``), "" for none."""
        if not _parameter_passed(arg, fn):
            return ""
        if isinstance(arg, ast.Name):
            return arg.id
        return "*"

    changed = True
    while changed:
        changed = False
        for f in files:
            for fn, parent in _functions(f.tree):
                for call in _own_calls(fn):
                    if f.is_entry(call.func):
                        passed = [_compiled_argument(call)]
                    elif isinstance(call.func, ast.Call) and (f.is_entry(call.func.func) and not call.func.args or f.is_optimize(call.func.func)) and call.args:
                        # ``torch.compile(**options)(fn)``; ``torch.compile(fn)(x)`` calls the
                        # compiled ``fn`` with ``x``, which it does not compile.
                        passed = [call.args[0]]
                    elif isinstance(call.func, ast.Attribute) and call.func.attr == "compile" and all(isinstance(a, ast.Starred) for a in call.args):
                        passed = [call.func.value]
                    else:
                        passed = compiled_arguments(f, call)
                    slots = {slot for slot in (slot_of(a, fn) for a in passed) if slot}
                    if not slots:
                        continue
                    known = wrappers.setdefault(id(fn), set())
                    if not slots <= known:
                        known |= slots
                        changed = True
                    if parent is not None and id(parent) not in factories and any(isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id == fn.name for n in ast.walk(parent)):
                        factories.add(id(parent))
                        changed = True
    for f in files:
        for node in ast.walk(f.tree):
            if isinstance(node, ast.Call) and (node.args or node.keywords) and not isinstance(node.func, ast.Call) and not (isinstance(node.func, ast.Attribute) and f.foreign_module(node.func.value)) and is_wrapper(f, node.func, wrappers):
                sites.add((f.path, node.lineno))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for deco in node.decorator_list:
                    target = deco.func if isinstance(deco, ast.Call) else deco
                    if is_wrapper(f, target, factories if isinstance(deco, ast.Call) else wrappers):
                        sites.add((f.path, deco.lineno))
    return sites


def _module_name(path: str) -> str:
    """``a.b.c`` for ``.../a/b/c.py`` (every folder above counts: matched by suffix)."""
    parts = os.path.splitext(os.path.abspath(path))[0].split(os.sep)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(p for p in parts if p)


def relative(sites: set[tuple[str, int]], directory: str) -> set[tuple[str, int]]:
    return {(os.path.relpath(path, directory), line) for path, line in sites}
