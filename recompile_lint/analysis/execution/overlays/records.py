"""Records: ``dataclasses`` (``@dataclass``, ``field``, ``replace``), named tuples
(``collections.namedtuple``, ``typing.NamedTuple``, ``_replace``) and ``types.SimpleNamespace``.

A dataclass or a named tuple is a project class with ``__fields__`` in its namespace (written by
``Interpreter.define_class``); its generated ``__init__`` binds them (``Interpreter.instantiate``).
``replace`` and ``_replace`` make a new instance with the fields copied and the given ones changed.
"""

from __future__ import annotations

from recompile_lint.analysis.execution.values import TOP, ClassValue, Const, Instance, ListValue, ModuleValue, Partial, TupleValue

DATACLASS = ModuleValue("dataclasses.dataclass")
FIELD = ModuleValue("dataclasses.field")


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
