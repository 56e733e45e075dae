"""Records: ``dataclasses`` (``@dataclass``, ``field``, ``replace``), named tuples
(``collections.namedtuple``, ``typing.NamedTuple``, ``_replace``) and ``types.SimpleNamespace``.

A dataclass or a named tuple is a project class with ``__fields__`` in its namespace
(``class_defined``, ``class_decorated``, which ``Interpreter.define_class`` calls); its generated
``__init__`` binds them (``init_record``, from ``Interpreter.instantiate``). ``replace`` and
``_replace`` make a new instance with the fields copied and the given ones changed. An Enum's
members are objects of their own, one per name, with ``.name`` and ``.value`` (``Mode.TRAIN is
not 1``); ``Mode(2)`` looks one up.
"""

from __future__ import annotations

import ast

from recompile_lint.analysis.execution.values import (
    TOP,
    ClassMethod,
    ClassValue,
    Const,
    Function,
    Instance,
    ListValue,
    ModuleValue,
    Partial,
    Property,
    StaticMethod,
    TupleValue,
)

DATACLASS = ModuleValue("dataclasses.dataclass")
FIELD = ModuleValue("dataclasses.field")


_MISSING = object()


def class_defined(interp, cls: ClassValue, node: ast.ClassDef) -> None:
    """After a class body ran: an Enum's members become objects of their own; a
    ``typing.NamedTuple`` holds its annotated fields."""
    mro = interp.mro(cls)
    if any(isinstance(c, ModuleValue) and c.name.startswith("enum.") for c in mro):
        for key, member in list(interp.heap.slots(cls.addr).items()):
            if not isinstance(key, str) or key.startswith("_") or isinstance(member, (Function, Property, StaticMethod, ClassMethod)):
                continue
            slots = {"name": Const(key), "value": member, "_value_": member, "_name_": Const(key)}
            interp.heap.write(cls.addr, key, Instance(cls, interp.heap.new("object", slots)), None)
    elif any(isinstance(c, ModuleValue) and c.name == "typing.NamedTuple" for c in mro):
        interp.heap.write(cls.addr, "__fields__", TupleValue(tuple(Const(n) for n in annotated(node))), None)
        interp.heap.write(cls.addr, "__tuple__", Const(True), None)


def class_decorated(interp, cls: ClassValue, node: ast.ClassDef, decorator: object) -> None:
    """``@dataclass`` / ``@dataclass(frozen=True)``: its fields, those of its dataclass bases
    first, make its ``__init__`` (unless it writes one)."""
    target = decorator.function if isinstance(decorator, Partial) else decorator
    if target != DATACLASS:
        return
    fields: list[str] = []
    for base in reversed(interp.mro(cls)[1:]):
        inherited = interp.heap.read(base.addr, "__fields__", None) if isinstance(base, ClassValue) else None
        if isinstance(inherited, TupleValue):
            fields += [f.value for f in inherited.elements if isinstance(f, Const) and f.value not in fields]
    fields += [name for name in annotated(node) if name not in fields]
    interp.heap.write(cls.addr, "__fields__", TupleValue(tuple(Const(n) for n in fields)), None)
    options = dict(decorator.keywords) if isinstance(decorator, Partial) else {}
    if options.get("frozen") == Const(True):
        interp.heap.write(cls.addr, "__frozen__", Const(True), None)


def annotated(node: ast.ClassDef) -> list[str]:
    """The names a class body annotates, in order, less ``ClassVar`` ones."""
    out = []
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            kind = stmt.annotation.value if isinstance(stmt.annotation, ast.Subscript) else stmt.annotation
            if not ((isinstance(kind, ast.Name) and kind.id == "ClassVar") or (isinstance(kind, ast.Attribute) and kind.attr == "ClassVar")):
                out.append(stmt.target.id)
    return out


def init_record(interp, frame, instance: Instance, args: list[object], kwargs: dict[str, object], node) -> bool:
    """A dataclass's or named tuple's generated ``__init__``: each field from the arguments,
    else its default (``field(default=...)``, ``field(default_factory=f)`` called, the class
    attribute), else top; then ``__post_init__``. False for any other class."""
    cls = instance.cls
    if not interp.field_names(cls) or isinstance(interp.heap.read(cls.addr, "__init__", None), Function):
        return False
    fields = interp.field_names(cls)
    given = dict(zip(fields, args))
    given.update((k, v) for k, v in kwargs.items() if k in fields)
    where = interp.location(frame, node, "write") if hasattr(node, "lineno") else None
    for name in fields:
        value = given.get(name, _MISSING)
        if value is _MISSING:
            value = interp.class_attribute(cls, name)
            if isinstance(value, Partial) and value.function == FIELD:
                options = dict(value.keywords)
                if "default" in options:
                    value = options["default"]
                elif "default_factory" in options:
                    value = interp.call(frame, options["default_factory"], [], {}, ast.Pass())
                else:
                    value = TOP
            elif value is interp.MISSING:
                value = TOP
        interp.heap.write(instance.addr, name, value, where)
    post = interp.class_attribute(cls, "__post_init__")
    if isinstance(post, Function):
        interp.call_function(post, [instance], {}, frame)
    return True


def is_enum(interp, cls: ClassValue) -> bool:
    return any(isinstance(c, ModuleValue) and c.name.startswith("enum.") for c in interp.mro(cls))


def enum_members(interp, cls: ClassValue) -> list[object]:
    """``list(Phase)``: the members in the order they were defined (an alias, a name whose
    value an earlier member has, is not one of them)."""
    members: list[object] = []
    values: list[object] = []
    for member in interp.heap.slots(cls.addr).values():
        if isinstance(member, Instance) and member.cls == cls:
            value = interp.heap.read(member.addr, "value", None)
            if value not in values:
                values.append(value)
                members.append(member)
    return members


def enum_lookup(interp, cls: ClassValue, args: list[object]) -> object:
    """``Mode(2)``: the member with that value, where known."""
    if len(args) != 1 or not isinstance(args[0], Const):
        return TOP
    for member in interp.heap.slots(cls.addr).values():
        if isinstance(member, Instance) and member.cls == cls and interp.heap.read(member.addr, "value", None) == args[0]:
            return member
    return TOP


def dataclass(interp, frame, args, kwargs, node) -> object:
    """``@dataclass(frozen=True)``: a decorator ``define_class`` recognises."""
    if not args:
        return Partial(DATACLASS, (), tuple(kwargs.items()))
    return args[0] if len(args) == 1 else TOP


def field(interp, frame, args, kwargs, node) -> object:
    """``field(default=...)`` / ``field(default_factory=list)``: read by the generated ``__init__``."""
    return Partial(FIELD, (), tuple(kwargs.items()))


def replace(interp, frame, args, kwargs, node) -> object:
    """``dataclasses.replace(obj, k=v)`` and ``obj._replace(k=v)``: a new instance."""
    if len(args) != 1 or not isinstance(args[0], Instance):
        return TOP
    old = args[0]
    fields = interp.field_names(old.cls)
    if not fields or any(key not in fields for key in kwargs):
        return TOP
    slots = dict(interp.heap.slots(old.addr))
    where = interp.location(frame, node, "write")
    new = Instance(old.cls, interp.heap.new("object"))
    for name, value in slots.items():
        interp.heap.write(new.addr, name, value, interp.heap.origin(old.addr, name))
    for name, value in kwargs.items():
        interp.heap.write(new.addr, name, value, where)
    return new


def namedtuple(interp, frame, args, kwargs, node) -> object:
    """``namedtuple("Point", "x y")`` / ``namedtuple("Point", ["x", "y"], defaults=(0,))``."""
    if len(args) != 2 or not isinstance(args[0], Const) or not isinstance(args[0].value, str):
        return TOP
    names: list[str] | None = None
    if isinstance(args[1], Const) and isinstance(args[1].value, str):
        names = args[1].value.replace(",", " ").split()
    else:
        items = interp.items(args[1]) if isinstance(args[1], (TupleValue, ListValue)) else None
        if items is not None and all(isinstance(i, Const) and isinstance(i.value, str) for i in items):
            names = [i.value for i in items]  # type: ignore[union-attr]
    if names is None:
        return TOP
    defaults = kwargs.get("defaults")
    default_values = interp.items(defaults) if defaults is not None else []
    if default_values is None or len(default_values) > len(names):
        return TOP
    namespace = interp.heap.new("class", {"__name__": args[0]})
    interp.heap.write(namespace, "__fields__", TupleValue(tuple(Const(n) for n in names)), None)
    interp.heap.write(namespace, "__tuple__", Const(True), None)
    for name, value in zip(names[len(names) - len(default_values) :], default_values):
        interp.heap.write(namespace, name, value, None)
    return ClassValue(frame.path, args[0].value, namespace)


def simple_namespace(interp, frame, args, kwargs, node) -> object:
    """``types.SimpleNamespace(k=v)``: an object holding its keyword arguments as attributes."""
    if args:
        return TOP
    instance = Instance(interp.library_class("types.SimpleNamespace"), interp.heap.new("object"))
    where = interp.location(frame, node, "write")
    for name, value in kwargs.items():
        interp.heap.write(instance.addr, name, value, where)
    return instance


def object_setattr(interp, frame, args, kwargs, node) -> object:
    """``object.__setattr__(self, "k", v)``: the write a frozen dataclass's ``__post_init__`` makes."""
    if len(args) == 3 and isinstance(args[0], Instance) and isinstance(args[1], Const) and isinstance(args[1].value, str):
        interp.heap.write(args[0].addr, args[1].value, args[2], interp.location(frame, node, "write"))
    return Const(None)


HANDLERS = {
    "dataclasses.dataclass": dataclass,
    "dataclasses.field": field,
    "dataclasses.replace": replace,
    "namedtuple._replace": replace,
    "collections.namedtuple": namedtuple,
    "types.SimpleNamespace": simple_namespace,
    "builtins.object.__setattr__": object_setattr,
}
