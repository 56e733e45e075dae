"""Attributes every construction of a class leaves at one constant.

``self.use_dynamic_chunk = use_dynamic_chunk`` in ``__init__``, a default of ``False`` that no
construction in the project overrides, and no other write of the attribute anywhere: every
instance holds ``False``. Dynamo reads the attribute, guards on it, and traces only the branch
an ``if self.use_dynamic_chunk:`` takes, so what the other branch calls is never traced. A
module-level object bound once to a construction (``SWITCHES = Switches()``) and never rebound
is such an instance too (``if SWITCHES.audit:``).

The answer must hold for every instance, so anything the project does not show in full gives
no constant: a write of the attribute outside a constructor (by any receiver, ``setattr`` with
its name included), a subclass in the project, a base from another library (its methods may
write it; ``nn.Module``'s do not, except ``training``), a class decorator (``@dataclass``
writes fields from its own ``__init__``), a ``__setattr__`` of the project's own, ``setattr`` or
``__dict__`` in a constructor, a property or method of that name, a value that is neither a
literal nor a constructor parameter, or a reference to the class that is no call, annotation or
``isinstance`` test (handed on, kept in a registry, derived from, constructed through
``from_config``): those may construct it with anything. A class the project never constructs
holds a parameter's value from its users, so only literal writes are constants there.

What it does not see: a construction by a name computed at run time (``getattr(module,
name)``, a configuration file's ``_target_``), or in a file outside the linted paths. Such a construction may pass
another value; the branch it takes is then ruled out wrongly, which hides findings there and
never adds one.
"""

from __future__ import annotations

import ast
from collections import OrderedDict

from recompile_lint.analysis.constants import NOT_CONSTANT, NOT_NONE, _passed_constants, _same, literal_of
from recompile_lint.analysis.facts import ClassFacts, FunctionFacts, ModuleFacts, dotted_name
from recompile_lint.analysis.index import ProjectIndex, function_trees
from recompile_lint.analysis.parsing import parse_source
from recompile_lint.analysis.textscan import mentions

# Bases from torch whose methods write no attribute of the instance but ``training``.
QUIET_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "object", "abc.ABC", "ABC"})
# Attributes a quiet base writes itself (``train()`` / ``eval()``).
BASE_WRITES = frozenset({"training"})
# Calls in a constructor that may set any attribute (``self.__dict__`` is caught as an attribute).
_ANY_ATTRIBUTE = frozenset({"setattr", "vars"})
# Module trees kept at once (``ConstructedAttributes._module``).
KEPT_TREES = 8
# ``ProjectIndex.mro``'s bound: a linearization this long may have left bases out.
MRO_LIMIT = 12
# What a reference to a class may be besides a construction without constructing it.
_TYPE_TESTS = frozenset({"isinstance", "issubclass", "type"})


def object_constants(index: ProjectIndex, facts: ModuleFacts, fn: FunctionFacts, node: ast.AST) -> dict[str, object]:
    """``{"self.flag": False, "SWITCHES.audit": False}`` for each attribute a function tests or
    passes on (``if self.flag:``, ``f(x, SWITCHES.audit)``) of an object whose every instance
    holds it at one constant: the receiver of a method (not a constructor or other dunder, a
    static or class method, nor one that binds its receiver's name again), or a module-level
    object bound once to a construction of a project class (``SWITCHES = Switches()``, or
    imported from the module that binds it) and never rebound. Once per function and run."""
    memo = index.memo.setdefault("object-constants", {})
    assert isinstance(memo, dict)
    key = (facts.path, fn.qualname, fn.line)
    if key not in memo:
        memo[key] = _object_constants(index, facts, fn, node)
    return memo[key]


def _object_constants(index: ProjectIndex, facts: ModuleFacts, fn: FunctionFacts, node: ast.AST) -> dict[str, object]:
    wanted: dict[str, set[str]] = {}
    for inner in ast.walk(node):
        read: list[ast.expr] = []
        if isinstance(inner, (ast.If, ast.IfExp)):
            read = list(ast.walk(inner.test))
        elif isinstance(inner, ast.Call):
            read = [*inner.args, *(k.value for k in inner.keywords)]
        for expr in read:
            if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and isinstance(expr.ctx, ast.Load):
                wanted.setdefault(expr.value.id, set()).add(expr.attr)
    if not wanted:
        return {}
    stores = function_trees(index).rebound(node)
    params = {p.name for p in fn.params}
    receiver = _receiver(fn)
    constructed = index.memo.get("constructed")
    if constructed is None:
        constructed = index.memo["constructed"] = ConstructedAttributes(index)
    out: dict[str, object] = {}
    for name, attrs in sorted(wanted.items()):
        if name in stores:
            continue  # bound again in the function: another object
        if name == receiver:
            owner = (facts, facts.cls(fn.class_name))
        elif name in params:
            continue
        else:
            owner = constructed.global_object(facts, name)  # type: ignore[union-attr]
        if owner is None or owner[1] is None:
            continue
        for attr in sorted(attrs):
            value = constructed.value(owner[0], owner[1], attr)  # type: ignore[union-attr, arg-type]
            if value is not NOT_CONSTANT:
                out[f"{name}.{attr}"] = value
    return out


def _receiver(fn: FunctionFacts) -> str:
    """The receiver's name of a method whose receiver is an instance of its class ("" else)."""
    if not fn.class_name or fn.name.startswith("__") or not fn.params or fn.params[0].kind != "positional":
        return ""
    if any(d.rsplit(".", 1)[-1] in ("staticmethod", "classmethod") for d in fn.decorators):
        return ""
    return fn.params[0].name


class ConstructedAttributes:
    """``value(facts, cls, attr)``: the one constant every instance of ``cls`` holds in
    ``attr``, or ``NOT_CONSTANT``. Answers are kept for the run."""

    def __init__(self, index: ProjectIndex):
        self.index = index
        self._values: dict[tuple[str, str, str], object] = {}
        self._constructions: dict[tuple[str, str], list[ast.Call] | None] = {}
        self._objects: dict[tuple[str, str], tuple[ModuleFacts, ClassFacts] | None] = {}
        # The module trees read last (a few: each class asks for its own module's and its
        # bases', and a run keeps no more of them than that).
        self._modules: OrderedDict[str, ast.Module | None] = OrderedDict()

    def value(self, facts: ModuleFacts, cls: ClassFacts, attr: str) -> object:
        key = (facts.path, cls.qualname, attr)
        if key not in self._values:
            self._values[key] = self._value(facts, cls, attr)
        return self._values[key]

    def _value(self, facts: ModuleFacts, cls: ClassFacts, attr: str) -> object:
        index = self.index
        if attr in BASE_WRITES or attr.startswith("__") or index.mutations("instance-attribute", "", attr):
            return NOT_CONSTANT
        if index.subclasses(facts, cls):
            return NOT_CONSTANT
        mro = index.mro(facts, cls)
        if len(mro) >= MRO_LIMIT:
            return NOT_CONSTANT  # cut short: a base past the limit may write it
        values: list[object] = []
        for owner_facts, owner in mro:
            if not self._closed(owner_facts, owner, attr):
                return NOT_CONSTANT
            node = self._class_node(owner_facts, owner)
            if node is None:
                return NOT_CONSTANT
            for stmt in node.body:
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and any(isinstance(t, ast.Name) and t.id == attr for t in _targets(stmt)):
                    if stmt.value is None:
                        continue
                    values.append(literal_of(stmt.value))
                elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "__init__":
                    written = self._constructor_writes(owner_facts, owner, stmt, attr, own=owner is cls)
                    if written is None:
                        return NOT_CONSTANT
                    values.extend(written)
        if not values or any(value is NOT_CONSTANT for value in values):
            return NOT_CONSTANT
        first = values[0]
        if all(value is not NOT_NONE and _same(value, first) for value in values[1:]) and first is not NOT_NONE:
            return first
        return NOT_NONE if all(value is not None for value in values) else NOT_CONSTANT

    def _closed(self, facts: ModuleFacts, cls: ClassFacts, attr: str) -> bool:
        """Whether nothing but the project's code shown here writes ``attr`` on ``cls``: its
        bases are project classes or quiet ones, no decorator, no ``__setattr__``, no method or
        property of that name, no nested class (qualname) to resolve."""
        if cls.decorators or cls.is_enum or "." in cls.qualname:
            return False
        if cls.method(attr) is not None or cls.method("__setattr__") is not None:
            return False
        for base in cls.bases:
            if base in QUIET_BASES:
                continue
            if self.index.resolve_class(base, facts.path) is None:
                return False
        return True

    def _constructor_writes(self, facts: ModuleFacts, cls: ClassFacts, node: ast.FunctionDef | ast.AsyncFunctionDef, attr: str, own: bool) -> list[object] | None:
        """The values ``__init__`` writes to ``self.attr`` (a parameter's: what every
        construction binds it to); None when one is not known or anything may set it."""
        if not node.args.args:
            return None
        receiver = node.args.args[0].arg
        params = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
        stored = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        assigned = _assigned_values(node)
        values: list[object] = []
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call) and dotted_name(inner.func) in _ANY_ATTRIBUTE:
                return None
            if isinstance(inner, ast.Attribute) and inner.attr == "__dict__":
                return None
            if not (isinstance(inner, ast.Attribute) and inner.attr == attr and isinstance(inner.value, ast.Name) and inner.value.id == receiver and not isinstance(inner.ctx, ast.Load)):
                continue
            parent = assigned.get(id(inner))
            if parent is None:
                return None  # ``self.x += 1``, a tuple target, ``del self.x``: not one known value
            value = literal_of(parent)
            if value is NOT_CONSTANT and isinstance(parent, ast.Name) and parent.id in params and parent.id not in stored:
                if not own:
                    return None  # a base's parameter: bound by its subclasses' ``super()`` calls
                value = self._constructed_value(facts, cls, parent.id)
            if value is NOT_CONSTANT:
                return None
            values.append(value)
        return values

    def _constructed_value(self, facts: ModuleFacts, cls: ClassFacts, param: str) -> object:
        calls = self.constructions(facts, cls)
        qual = cls.method("__init__")
        init = facts.function(qual) if qual else None
        if not calls or init is None:
            return NOT_CONSTANT  # never constructed here: its users pass what they like
        return _passed_constants(calls, init).get(param, NOT_CONSTANT)

    def global_object(self, facts: ModuleFacts, name: str) -> tuple[ModuleFacts, ClassFacts] | None:
        """The class of the module-level object ``name`` (in ``facts`` or imported from the module
        that binds it) where its module binds it once, to a construction of a project class,
        and nothing rebinds it."""
        key = (facts.path, name)
        if key not in self._objects:
            self._objects[key] = self._global_object(facts, name)
        return self._objects[key]

    def _global_object(self, facts: ModuleFacts, name: str) -> tuple[ModuleFacts, ClassFacts] | None:
        found = self.index.global_binding(facts, name)
        if found is None:
            return None
        owner_facts, binding = found
        if binding.kind != "object" or not binding.class_ref or self.index.mutations("global", owner_facts.path, binding.name):
            return None
        tree = self._module(owner_facts.path)
        if tree is None:
            return None
        stores = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == binding.name and not isinstance(n.ctx, ast.Load)]
        first = next((stmt for stmt in tree.body if isinstance(stmt, ast.Assign) and any(t is stores[0] for t in stmt.targets)), None) if len(stores) == 1 else None
        if first is None or not isinstance(first.value, ast.Call):
            return None
        return self.index.resolve_class(owner_facts.resolve(dotted_name(first.value.func)), owner_facts.path)

    def constructions(self, facts: ModuleFacts, cls: ClassFacts) -> list[ast.Call] | None:
        """Every call that constructs ``cls`` in the project; None when some reference to the
        class is not a call (it may be constructed elsewhere with anything)."""
        key = (facts.path, cls.qualname)
        if key not in self._constructions:
            self._constructions[key] = self._find_constructions(facts, cls)
        return self._constructions[key]

    def _find_constructions(self, facts: ModuleFacts, cls: ClassFacts) -> list[ast.Call] | None:
        # Every file that names the class (``kornia.feature.CornerHarris(...)`` after ``import
        # kornia`` names no module of it on an import line): a substring test first.
        calls: list[ast.Call] = []
        for path in [facts.path] + [p for p in self.index.paths if p != facts.path]:
            text = self.index.text(path)
            if text is None or not mentions(text, cls.name):
                continue
            other = self.index.facts(path)
            tree = self._module(path)
            if other is None or tree is None:
                return None
            found = self._references(other, tree, facts, cls)
            if found is None:
                return None
            calls.extend(found)
        return calls

    def _references(self, facts: ModuleFacts, tree: ast.Module, owner_facts: ModuleFacts, cls: ClassFacts) -> list[ast.Call] | None:
        """The constructions of ``cls`` in one module; None at a reference that is none."""
        # The names the module may call the class by: its own, and the imports ending in it.
        names = {cls.name} | {local for local, target in facts.imports if target.rsplit(".", 1)[-1] == cls.name}
        references: list[ast.expr] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
                text = node.id
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and node.attr == cls.name:
                text = dotted_name(node)
            else:
                continue
            found = self.index.resolve_class(facts.resolve(text), facts.path) if text else None
            if found is not None and found[0].path == owner_facts.path and found[1].qualname == cls.qualname:
                references.append(node)
        if not references:
            return []
        parents: dict[int, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        annotations = _annotation_nodes(tree)
        calls = []
        for node in references:
            if id(node) in annotations:
                continue
            parent = parents.get(id(node))
            if isinstance(parent, ast.Call) and parent.func is node:
                calls.append(parent)
                continue
            if _in_type_test(node, parent, parents):
                continue
            return None
        return calls

    def _class_node(self, facts: ModuleFacts, cls: ClassFacts) -> ast.ClassDef | None:
        tree = self._module(facts.path)
        if tree is None:
            return None
        for stmt in tree.body:
            if isinstance(stmt, ast.ClassDef) and stmt.name == cls.name and stmt.lineno == cls.line:
                return stmt
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == cls.name and node.lineno == cls.line:
                return node
        return None

    def _module(self, path: str) -> ast.Module | None:
        if path in self._modules:
            self._modules.move_to_end(path)
        else:
            tree = self.index.kept_tree(path)
            if tree is None:
                text = self.index.text(path)
                try:
                    tree = parse_source(text, path) if text is not None else None
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    tree = None
            self._modules[path] = tree
            if len(self._modules) > KEPT_TREES:
                self._modules.popitem(last=False)
        return self._modules[path]


def _targets(stmt: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]


def _assigned_values(function: ast.AST) -> dict[int, ast.expr]:
    """By target node id, the value each plain assignment in ``function`` stores (``self.x =
    v``, ``self.x: T = v``, ``self.x = self.y = v``); other stores have none."""
    out: dict[int, ast.expr] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            out.update((id(t), node.value) for t in node.targets)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            out[id(node.target)] = node.value
    return out


def _annotation_nodes(tree: ast.Module) -> set[int]:
    """Ids of the nodes inside annotations (a class named in a type is no construction)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        annotations: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            annotations.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        for annotation in annotations:
            if annotation is not None:
                found.update(id(inner) for inner in ast.walk(annotation))
    return found


def _in_type_test(node: ast.AST, parent: ast.AST | None, parents: dict[int, ast.AST]) -> bool:
    """``isinstance(x, Cls)``, ``isinstance(x, (A, Cls))``, ``type(x) is Cls``: no construction."""
    if isinstance(parent, ast.Tuple):
        parent = parents.get(id(parent))
    if isinstance(parent, ast.Call) and dotted_name(parent.func) in _TYPE_TESTS and node is not parent.func:
        return True
    return isinstance(parent, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) for op in parent.ops)
