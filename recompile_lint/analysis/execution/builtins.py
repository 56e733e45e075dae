"""Python's builtins and the methods of lists and dicts, on abstract values.

Each is a handler ``(interpreter, frame, args, kwargs, node) -> value`` registered under
``builtins.NAME`` (``list.append``, ``dict.get`` for methods); a name not here is top.
"""

from __future__ import annotations

import ast
from typing import Callable

from recompile_lint.analysis.execution.values import (
    NN_MODULE,
    TOP,
    ClassMethod,
    ClassValue,
    Const,
    DictValue,
    Instance,
    IteratorValue,
    ListValue,
    ModuleValue,
    Partial,
    Property,
    RangeValue,
    StaticMethod,
    Sym,
    TupleValue,
    hashable,
)

Handler = Callable[..., object]

# Names that resolve to a builtin when no scope binds them.
NAMES = frozenset(
    {
        "range", "enumerate", "zip", "len", "int", "float", "str", "bool", "min", "max", "abs", "round",
        "isinstance", "getattr", "setattr", "hasattr", "print", "super", "property", "staticmethod", "map",
        "classmethod", "list", "tuple", "dict", "set", "frozenset", "object", "sum", "sorted", "reversed", "type",
        "Exception", "ValueError", "TypeError", "RuntimeError", "KeyError", "NotImplementedError",
    }
)  # fmt: skip
_CONVERSIONS: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool}


def _range(interp, frame, args, kwargs, node) -> object:
    if not 1 <= len(args) <= 3:
        return TOP
    if len(args) == 1:
        return RangeValue(Const(0), args[0], Const(1))
    return RangeValue(args[0], args[1], args[2] if len(args) == 3 else Const(1))


def _enumerate(interp, frame, args, kwargs, node) -> object:
    """``enumerate(xs)`` / ``enumerate(xs, 1)`` / ``enumerate(xs, start=1)``."""
    start = args[1] if len(args) == 2 else kwargs.get("start", Const(0))
    if not args or len(args) > 2 or set(kwargs) - {"start"} or not (isinstance(start, Const) and type(start.value) is int):
        return TOP
    return IteratorValue("enumerate", (args[0],) if start.value == 0 else (args[0], start))


def _reversed(interp, frame, args, kwargs, node) -> object:
    items = interp.items(args[0]) if len(args) == 1 and not kwargs else None
    return interp.new_list(items[::-1]) if items is not None else TOP


def _sorted(interp, frame, args, kwargs, node) -> object:
    """``sorted(xs)`` / ``sorted(xs, reverse=True)`` of known numbers or strings."""
    items = interp.items(args[0]) if len(args) == 1 and set(kwargs) <= {"reverse"} else None
    reverse = kwargs.get("reverse", Const(False))
    if items is None or not isinstance(reverse, Const) or not all(isinstance(i, Const) for i in items):
        return TOP
    try:
        ordered = sorted(items, key=lambda c: c.value, reverse=bool(reverse.value))  # type: ignore[union-attr]
    except TypeError:
        return TOP
    return interp.new_list(ordered)


def _sum(interp, frame, args, kwargs, node) -> object:
    items = interp.items(args[0]) if 1 <= len(args) <= 2 and not kwargs else None
    start = args[1] if len(args) == 2 else Const(0)
    if items is None or not all(isinstance(i, Const) and type(i.value) in (int, float) for i in [start, *items]):
        return TOP
    return Const(sum((i.value for i in items), start.value))  # type: ignore[union-attr]


def _zip(interp, frame, args, kwargs, node) -> object:
    return IteratorValue("zip", tuple(args)) if args and not kwargs else TOP


def _map(interp, frame, args, kwargs, node) -> object:
    """``map(f, xs, ...)``: ``f`` called on the items (``Interpreter.mapped``)."""
    if kwargs or len(args) < 2:
        return TOP
    return interp.mapped(frame, args[0], list(args[1:]), node, star=False)


def _len(interp, frame, args, kwargs, node) -> object:
    if len(args) != 1:
        return TOP
    value = args[0]
    if isinstance(value, Const) and isinstance(value.value, (str, bytes)):
        return Const(len(value.value))
    items = interp.items(value) if isinstance(value, (TupleValue, ListValue, DictValue, RangeValue, Instance)) else None
    if items is not None:
        return Const(len(items))
    return Sym("data", name="len")


def _conversion(name: str) -> Handler:
    convert = _CONVERSIONS[name]

    def handler(interp, frame, args, kwargs, node) -> object:
        if not args:
            return Const(convert())
        value = args[0]
        if len(args) == 1 and isinstance(value, Const):
            try:
                return Const(convert(value.value))
            except (TypeError, ValueError, OverflowError):
                return TOP
        if isinstance(value, Sym) and value.origin == "iteration" and name != "bool":
            return Sym("iteration", loop=value.loop, k=value.k, kind=name)  # distinct stays distinct
        return TOP

    return handler


def _extreme(pick: Callable[..., object]) -> Handler:
    def handler(interp, frame, args, kwargs, node) -> object:
        values = args
        if len(args) == 1:
            values = interp.items(args[0]) or []
        if values and not kwargs and all(isinstance(v, Const) for v in values):
            try:
                return Const(pick(v.value for v in values))  # type: ignore[union-attr]
            except (TypeError, ValueError):
                return TOP
        return TOP

    return handler


def _isinstance(interp, frame, args, kwargs, node) -> object:
    if len(args) != 2:
        return TOP
    value, classes = args
    options = classes.elements if isinstance(classes, TupleValue) else (classes,)
    if isinstance(value, Instance) and all(isinstance(c, ClassValue) for c in options):
        # A library base in the MRO cannot derive from a project class: the answer is known.
        return Const(any(c in interp.mro(value.cls) for c in options))
    if isinstance(value, Instance) and all(isinstance(c, (ClassValue, ModuleValue)) for c in options):
        answers = [_instance_of(interp, value, c) for c in options]
        if any(a is True for a in answers):
            return Const(True)
        if all(a is False for a in answers):
            return Const(False)
    if isinstance(value, Const) and all(isinstance(c, ModuleValue) and c.name.startswith("builtins.") for c in options):
        names = {c.name.split(".", 1)[1] for c in options}  # type: ignore[union-attr]
        return Const(type(value.value).__name__ in names or (type(value.value) is bool and "int" in names))
    return TOP


def _instance_of(interp, value: Instance, cls: object) -> bool | None:
    """``isinstance(value, cls)`` where the run knows it (None where not). A library class is
    known by name: an ``nn`` layer an overlay made is an instance of its own class and of
    ``nn.Module``; an instance of a project class whose library bases are all ``nn.Module`` is
    no instance of another library class."""
    mro = interp.mro(value.cls)
    if cls in mro:
        return True
    if isinstance(cls, ClassValue):
        return False
    assert isinstance(cls, ModuleValue)
    is_module = interp.is_nn_module(value.cls)
    if cls.name in NN_MODULE:
        return is_module
    if not cls.name.startswith("torch.nn.") or not is_module:
        return None
    if not value.cls.path:
        return value.cls.qualname == cls.name  # a library layer: its own class only
    library = [c for c in mro if not isinstance(c, ClassValue)]
    return False if all(isinstance(c, ModuleValue) and c.name in NN_MODULE for c in library) else None


def _getattr(interp, frame, args, kwargs, node) -> object:
    if len(args) >= 2 and isinstance(args[1], Const) and isinstance(args[1].value, str):
        return interp.get_attribute(frame, args[0], args[1].value)
    return TOP


def _hasattr(interp, frame, args, kwargs, node) -> object:
    if len(args) != 2 or kwargs or not isinstance(args[1], Const) or not isinstance(args[1].value, str):
        return TOP
    return interp.has_attribute(args[0], args[1].value)


def _setattr(interp, frame, args, kwargs, node) -> object:
    if len(args) == 3 and isinstance(args[1], Const) and isinstance(args[1].value, str):
        interp.set_attribute(frame, args[0], args[1].value, args[2], interp.location(frame, node, "write"))
    return Const(None)


def _none(interp, frame, args, kwargs, node) -> object:
    return Const(None)


def _print(interp, frame, args, kwargs, node) -> object:
    """``print(...)``: in traced code, a graph break (measured on torch 2.13)."""
    interp.graph_break(frame, node)
    return Const(None)


def _sequence(kind: str) -> Handler:
    def handler(interp, frame, args, kwargs, node) -> object:
        if not args:
            return TupleValue(()) if kind == "tuple" else interp.new_list([])
        items = interp.items(args[0]) if len(args) == 1 else None
        if items is None:
            return TOP
        return TupleValue(tuple(items)) if kind == "tuple" else interp.new_list(items)

    return handler


def _set(interp, frame, args, kwargs, node) -> object:
    """``set()`` / ``set(xs)`` / ``frozenset(xs)`` of known hashable items."""
    if kwargs or len(args) > 1:
        return TOP
    items = interp.items(args[0]) if args else []
    return interp.new_set(items) if items is not None else TOP


def _dict(interp, frame, args, kwargs, node) -> object:
    """``dict(k=v)``, ``dict(other)``, ``dict(pairs)`` (``dict(zip(keys, values))``) where the
    keys are known."""
    slots: dict[object, object] = {}
    if len(args) > 1:
        return TOP
    if args and isinstance(args[0], DictValue):
        slots = dict(interp.heap.slots(args[0].addr))
    elif args:
        pairs = interp.items(args[0])
        if pairs is None:
            return TOP
        for pair in pairs:
            items = interp.items(pair) if isinstance(pair, (TupleValue, ListValue)) else None
            if items is None or len(items) != 2 or not isinstance(items[0], Const):
                return TOP
            slots[items[0].value] = items[1]
    slots.update(kwargs)
    return DictValue(interp.heap.new("dict", slots))


def _type(interp, frame, args, kwargs, node) -> object:
    """``type(obj)``: an instance's class (``type(self).k = v`` writes the class attribute)."""
    if len(args) != 1 or kwargs:
        return TOP
    if isinstance(args[0], Instance):
        return args[0].cls
    if isinstance(args[0], Const):
        return ModuleValue(f"builtins.{type(args[0].value).__name__}" if args[0].value is not None else "builtins.NoneType")
    return TOP


def _descriptor(kind: type) -> Handler:
    """``property(fget, fset)``, ``staticmethod(f)``, ``classmethod(f)`` called, not as decorators."""

    def handler(interp, frame, args, kwargs, node) -> object:
        if kind is Property:
            getter = args[0] if args else kwargs.get("fget")
            setter = args[1] if len(args) > 1 else kwargs.get("fset")
            return Property(getter, setter) if getter is not None and len(args) <= 2 else TOP
        return kind(args[0]) if len(args) == 1 and not kwargs else TOP

    return handler


def _number(pick: Callable[..., object]) -> Handler:
    def handler(interp, frame, args, kwargs, node) -> object:
        if kwargs or not 1 <= len(args) <= 2 or not all(isinstance(a, Const) and type(a.value) in (int, float, bool) for a in args):
            return TOP
        try:
            return Const(pick(*(a.value for a in args)))  # type: ignore[union-attr]
        except (TypeError, ValueError, OverflowError):
            return TOP

    return handler


def _identity(interp, frame, args, kwargs, node) -> object:
    return args[0] if len(args) == 1 else TOP


# ---- list and dict methods (the receiver first) ------------------------------------------


def _append(interp, frame, args, kwargs, node) -> object:
    if len(args) == 2 and isinstance(args[0], ListValue):
        slots = interp.heap.slots(args[0].addr)
        interp.heap.write(args[0].addr, len([k for k in slots if isinstance(k, int)]), args[1], interp.location(frame, node, "write"))
    return Const(None)


def _extend(interp, frame, args, kwargs, node) -> object:
    if len(args) == 2 and isinstance(args[0], ListValue):
        current, added = interp.items(args[0]), interp.items(args[1])
        if current is not None and added is not None:
            interp.replace_items(args[0], current + added, interp.location(frame, node, "write"))
            return Const(None)
    return _unknown_items(interp, frame, args, kwargs, node)


def _insert(interp, frame, args, kwargs, node) -> object:
    if len(args) == 3 and isinstance(args[0], ListValue) and isinstance(args[1], Const) and type(args[1].value) is int:
        current = interp.items(args[0])
        if current is not None:
            current.insert(args[1].value, args[2])
            interp.replace_items(args[0], current, interp.location(frame, node, "write"))
            return Const(None)
    return _unknown_items(interp, frame, args, kwargs, node)


def _list_pop(interp, frame, args, kwargs, node) -> object:
    if 1 <= len(args) <= 2 and isinstance(args[0], ListValue) and not kwargs:
        current = interp.items(args[0])
        index = args[1] if len(args) == 2 else Const(-1)
        if current and isinstance(index, Const) and type(index.value) is int and -len(current) <= index.value < len(current):
            item = current.pop(index.value)
            interp.replace_items(args[0], current, interp.location(frame, node, "write"))
            return item
    return _unknown_items(interp, frame, args, kwargs, node)


def _clear(interp, frame, args, kwargs, node) -> object:
    if len(args) == 1 and isinstance(args[0], ListValue):
        interp.replace_items(args[0], [], interp.location(frame, node, "write"))
        return Const(None)
    if len(args) == 1 and isinstance(args[0], DictValue):
        for key in list(interp.heap.slots(args[0].addr)):
            interp.heap.delete(args[0].addr, key)
        return Const(None)
    return _unknown_items(interp, frame, args, kwargs, node)


def _dict_pop(interp, frame, args, kwargs, node) -> object:
    if len(args) in (2, 3) and isinstance(args[0], DictValue) and isinstance(args[1], Const):
        slots = interp.heap.slots(args[0].addr)
        if args[1].value in slots:
            item = slots[args[1].value]
            interp.heap.delete(args[0].addr, args[1].value)
            return item
        if not slots.get("__unknown__") and len(args) == 3:
            return args[2]
    return _unknown_items(interp, frame, args, kwargs, node)


def _setdefault(interp, frame, args, kwargs, node) -> object:
    if len(args) in (2, 3) and isinstance(args[0], DictValue) and isinstance(args[1], Const):
        slots = interp.heap.slots(args[0].addr)
        if args[1].value in slots:
            return slots[args[1].value]
        if not slots.get("__unknown__"):
            value = args[2] if len(args) == 3 else Const(None)
            interp.heap.write(args[0].addr, args[1].value, value, interp.location(frame, node, "write"))
            return value
    return _unknown_items(interp, frame, args, kwargs, node)


def _unknown_items(interp, frame, args, kwargs, node) -> object:
    """A change the run does not follow item by item: the container's items are unknown."""
    if args and isinstance(args[0], (ListValue, DictValue)):
        interp.set_item(args[0], TOP, TOP, interp.location(frame, node, "write"))
    return TOP


def _set_change(operation: str) -> Handler:
    """``s.add(x)``, ``s.update(xs)``, ``s.discard(x)``, ``s.remove(x)``, ``s |= ...`` in place:
    the set's items where the argument's are known, else unknown."""

    def handler(interp, frame, args, kwargs, node) -> object:
        if len(args) != 2 or kwargs:
            return _unknown_items(interp, frame, args, kwargs, node)
        current = interp.items(args[0])
        given = [args[1]] if operation in ("add", "discard", "remove") else interp.items(args[1])
        changed: object = TOP
        if current is not None and given is not None and all(hashable(e) for e in given):
            kept = current + given if operation in ("add", "update") else [e for e in current if e not in given]
            changed = interp.new_set(kept)
        if changed is TOP:
            return _unknown_items(interp, frame, args, kwargs, node)
        interp.replace_items(args[0], interp.items(changed), interp.location(frame, node, "write"))
        return Const(None)

    return handler


def _set_new(op: ast.operator) -> Handler:
    """``a.union(b)``, ``a.intersection(b)``, ``a.difference(b)``: a new set."""

    def handler(interp, frame, args, kwargs, node) -> object:
        if len(args) != 2 or kwargs:
            return TOP
        other = interp.items(args[1])
        return interp.set_operation(op, args[0], interp.new_set(other)) if other is not None else TOP

    return handler


def _get(interp, frame, args, kwargs, node) -> object:
    if len(args) in (2, 3) and isinstance(args[0], DictValue) and isinstance(args[1], Const):
        slots = interp.heap.slots(args[0].addr)
        if args[1].value in slots:
            return slots[args[1].value]
        if not slots.get("__unknown__"):
            return args[2] if len(args) == 3 else Const(None)
    return TOP


def _items(kind: str) -> Handler:
    def handler(interp, frame, args, kwargs, node) -> object:
        if len(args) != 1 or not isinstance(args[0], DictValue):
            return TOP
        if kind == "items":
            return IteratorValue("items", (args[0],))
        slots = interp.heap.slots(args[0].addr)
        if slots.get("__unknown__"):
            return TOP
        return interp.new_list([Const(k) if kind == "keys" else v for k, v in slots.items()])

    return handler


def _update(interp, frame, args, kwargs, node) -> object:
    if args and isinstance(args[0], DictValue):
        where = interp.location(frame, node, "write")
        if len(args) == 2 and isinstance(args[1], DictValue):
            for key, value in interp.heap.slots(args[1].addr).items():
                interp.heap.write(args[0].addr, key, value, where)
        elif len(args) > 1:
            interp.set_item(args[0], TOP, TOP, where)
        for key, value in kwargs.items():
            interp.heap.write(args[0].addr, key, value, where)
    return Const(None)


HANDLERS: dict[str, Handler] = {
    "builtins.range": _range,
    "builtins.enumerate": _enumerate,
    "builtins.zip": _zip,
    "builtins.map": _map,
    "builtins.reversed": _reversed,
    "builtins.type": _type,
    "builtins.property": _descriptor(Property),
    "builtins.staticmethod": _descriptor(StaticMethod),
    "builtins.classmethod": _descriptor(ClassMethod),
    "builtins.abs": _number(abs),
    "builtins.round": _number(round),
    "builtins.sorted": _sorted,
    "builtins.sum": _sum,
    "builtins.len": _len,
    "builtins.min": _extreme(min),
    "builtins.max": _extreme(max),
    "builtins.isinstance": _isinstance,
    "builtins.getattr": _getattr,
    "builtins.setattr": _setattr,
    "builtins.hasattr": _hasattr,
    "builtins.print": _print,
    "builtins.list": _sequence("list"),
    "builtins.tuple": _sequence("tuple"),
    "builtins.dict": _dict,
    "builtins.set": _set,
    "builtins.frozenset": _set,
    "collections.OrderedDict": _dict,
    "super.__init__": _none,
    "execution.identity": _identity,
    "list.append": _append,
    "list.extend": _extend,
    "list.insert": _insert,
    "list.pop": _list_pop,
    "list.clear": _clear,
    "list.copy": lambda interp, frame, args, kwargs, node: _sequence("list")(interp, frame, args[:1], {}, node),
    "set.add": _set_change("add"),
    "set.update": _set_change("update"),
    "set.discard": _set_change("discard"),
    "set.remove": _set_change("remove"),
    "set.clear": _clear,
    "set.copy": lambda interp, frame, args, kwargs, node: _set(interp, frame, args[:1], {}, node),
    "set.union": _set_new(ast.BitOr()),
    "set.intersection": _set_new(ast.BitAnd()),
    "set.difference": _set_new(ast.Sub()),
    "dict.clear": _clear,
    "dict.get": _get,
    "dict.items": _items("items"),
    "dict.keys": _items("keys"),
    "dict.values": _items("values"),
    "dict.update": _update,
    "dict.pop": _dict_pop,
    "dict.setdefault": _setdefault,
    **{f"builtins.{name}": _conversion(name) for name in _CONVERSIONS},
}

IDENTITY_DECORATOR = Partial(ModuleValue("execution.identity"))
