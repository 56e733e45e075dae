"""Compile wrappers inferred from their bodies, as a fixpoint over parameters passed on.

A project function that compiles one of its parameters (``def maybe_compile(fn): return
torch.compile(fn)``, ``FunctionFacts.compiles_param``) is a wrapper: its calls are compile
sites. So is a function that hands one of its parameters to a wrapper (``def
compile_regions(module): return _compile_regions(module)``), and a function handing one on to
that, and so on. The parse records, per function, the calls that pass one of its own
parameters on (``FunctionFacts.passes``); the wrappers are the least fixpoint over those edges,
computed on facts already parsed, with no parse per step. The graph holds only functions that
pass a parameter on, and an edge counts only when its callee names a wrapper the way Python
would find it (a nested or module-level function of the same file, an import, ``self.m`` of
the class or its bases), so the cost grows with those edges, not with every function.
Which calls of the names really compile something, the regions decide by value.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from recompile_lint.analysis.facts import FunctionFacts, ModuleFacts
    from recompile_lint.analysis.index import ProjectIndex

# A dotted name (``lazy_compile``, ``jit.lazy_compile``) as a module global's value.
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
# Steps of the fixpoint at most (a wrapper that many wrappers deep is left to compile-functions).
MAX_STEPS = 8


def infer_wrappers(index: ProjectIndex) -> set[str]:
    """Names of the parsed project functions that compile a parameter, directly or through
    wrappers (as ``ProjectIndex.wrapper_functions`` names them: the dotted name of a
    module-level function, the bare name of a method or a nested function)."""
    modules = list(index.parsed())
    # (path, qualname) -> the parameter it compiles (``*args``: the first of its ``*args``).
    compiled: dict[tuple[str, str], str] = {}
    for facts in modules:
        for fn in facts.functions:
            if fn.compiles_param and not fn.is_lambda:
                compiled[(facts.path, fn.qualname)] = fn.compiles_param
    pending = [(facts, fn) for facts in modules for fn in facts.functions if fn.passes and not fn.is_lambda and (facts.path, fn.qualname) not in compiled]
    found: list[tuple[str, str]] = []
    for _ in range(MAX_STEPS):
        added: dict[tuple[str, str], str] = {}
        # A callee can name a wrapper only by the wrapper's own name: nothing else is resolved.
        names = {q.rsplit(".", 1)[-1] for _, q in compiled}
        for facts, fn in pending:
            for callee, param, where in fn.passes:
                if callee.rsplit(".", 1)[-1] not in names:
                    continue
                target = _wrapper_named(index, callee, facts, fn, compiled)
                if target is not None and _at_compiled(index, target, compiled[target], callee, where):
                    vararg = any(p.name == param and p.kind == "vararg" for p in fn.params)
                    added[(facts.path, fn.qualname)] = f"*{param}" if vararg else param
                    break
        if not added:
            break
        compiled.update(added)
        found.extend(added)
        pending = [(facts, fn) for facts, fn in pending if (facts.path, fn.qualname) not in compiled]
    out = index.wrapper_functions()
    # Calls name a wrapper by its last name: a method or nested function found here is added
    # only when every function of that name parsed is a wrapper (``forward``, ``apply``,
    # ``inner`` of a few wrappers among many functions that compile nothing would make every
    # call of them a site). A module-level function is called through its module or an
    # import, which the regions follow by value.
    defined: dict[str, int] = {}
    wrapping: dict[str, int] = {}
    for facts in modules:
        for fn in facts.functions:
            if not fn.is_lambda:
                defined[fn.name] = defined.get(fn.name, 0) + 1
                if (facts.path, fn.qualname) in compiled:
                    wrapping[fn.name] = wrapping.get(fn.name, 0) + 1
    for path, q in found:
        facts = index.facts(path)
        fn = facts.function(q) if facts is not None else None
        if facts is None or fn is None:
            continue
        if (fn.parent or fn.class_name) and wrapping.get(fn.name, 0) < defined.get(fn.name, 0):
            continue
        _add_name(out, facts, fn)
        parent = facts.function(fn.parent) if fn.parent else None
        if parent is not None and (path, parent.qualname) not in compiled and _returns_name(index, facts, parent, fn.name):
            _add_name(out, facts, parent)  # a decorator factory returning the wrapper
    aliases = _module_aliases(index, modules, out)
    index.memo["wrapper-aliases"] = aliases
    out |= set(aliases)
    return out


def _module_aliases(index: ProjectIndex, modules: list[ModuleFacts], wrappers: set[str]) -> dict[str, str]:
    """Module globals bound to a module-level wrapper (``jit_fuser = lazy_compile``, often
    under an ``if`` beside an identity ``lambda f: f``), each with the wrapper (or alias) it
    names: a call or a decorator through the global compiles as the wrapper does, where it
    holds the wrapper (the regions decide by value which calls do). An alias of an alias
    counts too."""
    found: dict[str, str] = {}
    naming = index.import_naming()
    by_module = {facts.module: facts for facts in modules if facts.module}
    by_path = {facts.path: facts for facts in modules}
    for _ in range(MAX_STEPS):
        added: dict[str, str] = {}
        # Only a module that defines a wrapper (or an alias) or names one on an import line
        # can bind one to a global: the others are not read.
        candidates: dict[str, ModuleFacts] = {}
        for name in wrappers | set(found):
            module, _, last = name.rpartition(".")
            if module in by_module:
                candidates[by_module[module].path] = by_module[module]
            candidates.update((path, by_path[path]) for path in naming.get(last, ()) if path in by_path)
        for facts in candidates.values():
            lines = (index.text(facts.path) or "").split("\n")
            for target, how, line, column, end_line, end_column in facts.flows:
                if how != "=" or "." in target or line != end_line:
                    continue
                if not 1 <= line <= len(lines):
                    continue
                text = lines[line - 1].encode("utf-8")[column:end_column].decode("utf-8", "replace")
                if not _DOTTED.fullmatch(text):
                    continue
                full = facts.resolve(text)
                if full == text and "." not in text and facts.module:
                    full = f"{facts.module}.{text}"  # a function of the module itself
                name = f"{facts.module}.{target}" if facts.module else target
                if (full in wrappers or full in found) and name not in wrappers and name not in found:
                    added[name] = full
        if not added:
            break
        found.update(added)
    return found


def _wrapper_named(index: ProjectIndex, callee: str, facts: ModuleFacts, fn: FunctionFacts, compiled: dict[tuple[str, str], str]) -> tuple[str, str] | None:
    """The wrapper the callee text names from inside ``fn``, the way Python finds it: a
    nested function of ``fn`` or its parents, a function of its module, an imported function
    (through re-exports), a method of its class or a base (``self.m``), an imported module's
    function (``mod.f``); None when it names no wrapper."""
    head, _, rest = callee.partition(".")
    path = facts.path
    if not rest:
        scope: FunctionFacts | None = fn
        while scope is not None:
            key = (path, f"{scope.qualname}.{head}")
            if key in compiled:
                return key
            scope = facts.function(scope.parent) if scope.parent else None
        if (path, head) in compiled:
            return (path, head)
        target = facts.import_target(head)
        ref = index.resolve_function(target, path) if target else None
        return (ref.path, ref.qualname) if ref is not None and (ref.path, ref.qualname) in compiled else None
    if "." in rest:
        return None
    if head in ("self", "cls"):
        owner = _enclosing_class(facts, fn)
        if owner is None:
            return None
        for base_facts, base in index.mro(facts, owner):
            qual = base.method(rest)
            if qual is not None:
                key = (base_facts.path, qual)
                return key if key in compiled else None
        return None
    target = facts.import_target(head)
    ref = index.resolve_function(f"{target}.{rest}", path) if target else None
    return (ref.path, ref.qualname) if ref is not None and (ref.path, ref.qualname) in compiled else None


def _at_compiled(index: ProjectIndex, target: tuple[str, str], param: str, callee: str, where: str) -> bool:
    """Whether an argument passed at ``where`` (a position, ``=keyword``, ``*``) of a call
    ``callee(...)`` of the wrapper ``target`` fills the parameter it compiles."""
    from recompile_lint.analysis.index import FunctionRef

    fn = index.function(FunctionRef(*target))
    if fn is None:
        return False
    if where == "*":
        return True
    if where.startswith("="):
        return where[1:] == param
    positional = [p.name for p in fn.params if p.kind == "positional"]
    # A method called through ``self.m``/``obj.m`` has its first parameter bound already.
    skip = 1 if fn.class_name and "staticmethod" not in fn.decorators and "." in callee and positional[:1] in (["self"], ["cls"]) else 0
    position = int(where)
    if param.startswith("*"):
        return position >= len(positional) - skip
    return param in positional and positional.index(param) - skip == position


def _enclosing_class(facts: ModuleFacts, fn: FunctionFacts | None):
    while fn is not None and not fn.class_name:
        fn = facts.function(fn.parent) if fn.parent else None
    return facts.cls(fn.class_name) if fn is not None else None


def _add_name(out: set[str], facts: ModuleFacts, fn: FunctionFacts) -> None:
    if not fn.parent and not fn.class_name:
        out.add(f"{facts.module}.{fn.qualname}" if facts.module else fn.qualname)
    elif fn.name not in ("compile", "optimize") and not fn.name.startswith("__"):
        out.add(fn.name)


def _returns_name(index: ProjectIndex, facts: ModuleFacts, fn: FunctionFacts, name: str) -> bool:
    """Whether one of ``fn``'s ``return`` expressions is the bare name ``name``."""
    lines = index.lines(facts.path)
    for span in fn.returns:
        if 1 <= span[0] <= len(lines) and re.search(rf"\breturn\s+{re.escape(name)}\s*(#.*)?$", lines[span[0] - 1]):
            return True
    return False
