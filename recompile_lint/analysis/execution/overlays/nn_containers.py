"""``nn.ModuleList``, ``nn.Sequential`` and ``nn.ModuleDict``: modules that hold modules;
``nn.ParameterList``, a module that holds parameters.

A container is an instance of a library ``nn.Module`` class whose submodules are its own
attributes under their ``_modules`` keys (``"0"``, ``"1"``, ... for a list or a
``Sequential``, the given names for a dict), so ``modules()``, ``apply``, ``train()`` and a
guard source such as ``L['self']._modules['blocks']._modules['0'].k`` (Dynamo's spelling of an
item however it is reached: an index, a key, iteration, ``values()``) all see them. The keys, in
order, are kept under ``KEYS``; a container built from items the run does not know has none,
and its iteration, length and items are unknown. Calling a ``Sequential`` calls each module in
turn on the previous one's result. A ``ParameterList`` is a list of this kind whose items are
parameters; it also keeps their number in ``_size``, the int attribute Dynamo guards when
compiled code iterates it (``self._modules['ws']._size == 2``).
"""

from __future__ import annotations

from recompile_lint.analysis.execution.values import TOP, Const, DictValue, Instance, ModuleValue, TupleValue

KEYS = "__keys__"
PARAMETER_LISTS = ("torch.nn.ParameterList",)
LISTS = ("torch.nn.ModuleList", "torch.nn.Sequential") + PARAMETER_LISTS
DICTS = ("torch.nn.ModuleDict",)


def kind(interp, value: object) -> str:
    """``"list"`` (``ModuleList``, ``Sequential``), ``"dict"`` (``ModuleDict``) or ``""``."""
    if not isinstance(value, Instance) or value.cls.path:
        return ""
    if value.cls.qualname in LISTS:
        return "list"
    if value.cls.qualname in DICTS:
        return "dict"
    return ""


def holds_parameters(value: object) -> bool:
    """Whether ``value`` is an ``nn.ParameterList``."""
    return isinstance(value, Instance) and not value.cls.path and value.cls.qualname in PARAMETER_LISTS


def keys(interp, container: Instance) -> list[str] | None:
    found = interp.heap.read(container.addr, KEYS, None)
    if not isinstance(found, TupleValue):
        return None
    return [k.value for k in found.elements if isinstance(k, Const)]  # type: ignore[misc]


def children(interp, container: Instance) -> list[object] | None:
    names = keys(interp, container)
    if names is None:
        return None
    return [interp.heap.read(container.addr, name, TOP) for name in names]


def item_key(interp, container: Instance, key: object) -> str | None:
    """The ``_modules`` key ``container[key]`` reads (a negative index counted from the end)."""
    names = keys(interp, container)
    if names is None or not isinstance(key, Const):
        return None
    if kind(interp, container) == "dict":
        return key.value if isinstance(key.value, str) and key.value in names else None
    if type(key.value) is not int or not -len(names) <= key.value < len(names):
        return None
    return names[key.value]


def items(interp, container: Instance) -> list[object] | None:
    """What iterating it gives: the modules of a list, the keys of a dict."""
    if kind(interp, container) == "dict":
        names = keys(interp, container)
        return None if names is None else [Const(name) for name in names]
    return children(interp, container)


def get_item(interp, container: Instance, key: object) -> object:
    name = item_key(interp, container, key)
    return TOP if name is None else interp.heap.read(container.addr, name, TOP)


def set_item(interp, container: Instance, key: object, value: object, where) -> None:
    """``container[i] = module`` / ``container["name"] = module``."""
    names = keys(interp, container)
    if names is None:
        return
    if kind(interp, container) == "dict" and isinstance(key, Const) and isinstance(key.value, str):
        _put(interp, container, names, key.value, value, where)
        return
    name = item_key(interp, container, key)
    if name is None:
        _forget(interp, container, where)
    else:
        interp.heap.write(container.addr, name, value, where)


def _put(interp, container: Instance, names: list[str], name: str, value: object, where) -> None:
    interp.heap.write(container.addr, name, value, where)
    if name not in names:
        names = names + [name]
    _write_keys(interp, container, names, where)


def _write_keys(interp, container: Instance, names: list[str], where) -> None:
    interp.heap.write(container.addr, KEYS, TupleValue(tuple(Const(n) for n in names)), where)
    if holds_parameters(container):
        interp.heap.write(container.addr, "_size", Const(len(names)), where)


def _forget(interp, container: Instance, where) -> None:
    """Its contents are no longer known: iteration and length are unknown from here."""
    interp.heap.write(container.addr, KEYS, TOP, where)
    if holds_parameters(container):
        interp.heap.write(container.addr, "_size", TOP, where)


def _new(interp, name: str) -> Instance:
    cls = interp.library_class(name, (ModuleValue("torch.nn.Module"),))
    slots = {"training": Const(True), KEYS: TupleValue(())}
    if name in PARAMETER_LISTS:
        slots["_size"] = Const(0)
    return Instance(cls, interp.heap.new("object", slots))


def _pairs(interp, value: object) -> list[tuple[str, object]] | None:
    """A dict (or ``OrderedDict``) of named modules, or an iterable of ``(name, module)`` pairs."""
    if isinstance(value, DictValue):
        slots = interp.heap.slots(value.addr)
        if slots.get("__unknown__"):
            return None
        pairs = [(k, v) for k, v in slots.items() if k != "__unknown__"]
    else:
        found = interp.items(value)
        if found is None:
            return None
        pairs = []
        for pair in found:
            if not (isinstance(pair, TupleValue) and len(pair.elements) == 2 and isinstance(pair.elements[0], Const)):
                return None
            pairs.append((pair.elements[0].value, pair.elements[1]))
    if not all(isinstance(k, str) for k, _ in pairs):
        return None
    return pairs  # type: ignore[return-value]


def _fill(interp, container: Instance, pairs: list[tuple[str, object]] | None, where) -> Instance:
    if pairs is None:
        _forget(interp, container, where)
        return container
    names = keys(interp, container) or []
    for name, module in pairs:
        interp.heap.write(container.addr, name, module, where)
        if name not in names:
            names.append(name)
    _write_keys(interp, container, names, where)
    return container


def _extend(interp, container: Instance, modules: object, where) -> None:
    found = interp.items(modules)
    names = keys(interp, container)
    if found is None or names is None:
        _forget(interp, container, where)
        return
    _fill(interp, container, [(str(len(names) + i), m) for i, m in enumerate(found)], where)


def _list_of(name: str, keyword: str):
    """``nn.ModuleList(modules)`` / ``nn.ParameterList(values)``: the items given, in order."""

    def handler(interp, frame, args, kwargs, node) -> object:
        container = _new(interp, name)
        items = args[0] if args else kwargs.get(keyword)
        if items is not None and items != Const(None):
            _extend(interp, container, items, None)
        return container

    return handler


def _sequential(interp, frame, args, kwargs, node) -> object:
    container = _new(interp, "torch.nn.Sequential")
    if len(args) == 1 and isinstance(args[0], DictValue):
        return _fill(interp, container, _pairs(interp, args[0]), None)
    return _fill(interp, container, [(str(i), m) for i, m in enumerate(args)], None)


def _module_dict(interp, frame, args, kwargs, node) -> object:
    container = _new(interp, "torch.nn.ModuleDict")
    modules = args[0] if args else kwargs.get("modules")
    if modules is not None and modules != Const(None):
        _fill(interp, container, _pairs(interp, modules), None)
    return container


def _receiver(args) -> Instance | None:
    return args[0] if args and isinstance(args[0], Instance) else None


def _append(interp, frame, args, kwargs, node) -> object:
    container = _receiver(args)
    if container is not None and len(args) == 2:
        _extend(interp, container, TupleValue((args[1],)), interp.location(frame, node, "write"))
    return container if container is not None else TOP


def _extend_method(interp, frame, args, kwargs, node) -> object:
    container = _receiver(args)
    if container is not None and len(args) == 2:
        _extend(interp, container, args[1], interp.location(frame, node, "write"))
    return container if container is not None else TOP


def _insert(interp, frame, args, kwargs, node) -> object:
    """``insert(i, module)``: every later module moves one key up."""
    container = _receiver(args)
    if container is None or len(args) != 3:
        return Const(None)
    where = interp.location(frame, node, "write")
    found = children(interp, container)
    at = args[1]
    if found is None or not (isinstance(at, Const) and type(at.value) is int):
        _forget(interp, container, where)
        return Const(None)
    found.insert(at.value, args[2])
    _fill(interp, container, [(str(i), m) for i, m in enumerate(found)], where)
    return Const(None)


def _dict_view(which: str):
    def handler(interp, frame, args, kwargs, node) -> object:
        container = _receiver(args)
        names = keys(interp, container) if container is not None else None
        if container is None or names is None:
            return TOP
        values = [interp.heap.read(container.addr, name, TOP) for name in names]
        if which == "keys":
            return interp.new_list([Const(name) for name in names])
        if which == "values":
            return interp.new_list(values)
        return interp.new_list([TupleValue((Const(name), value)) for name, value in zip(names, values)])

    return handler


def _update(interp, frame, args, kwargs, node) -> object:
    container = _receiver(args)
    if container is not None and len(args) == 2:
        _fill(interp, container, _pairs(interp, args[1]), interp.location(frame, node, "write"))
    return Const(None)


def _sequential_forward(interp, frame, args, kwargs, node) -> object:
    """``Sequential.__call__(x)``: each module on the previous one's result."""
    container = _receiver(args)
    found = children(interp, container) if container is not None else None
    if found is None or len(args) != 2 or kwargs:
        return TOP
    value = args[1]
    for module in found:
        value = interp.call(frame, module, [value], {}, node)
    return value


HANDLERS = {
    "torch.nn.ModuleList": _list_of("torch.nn.ModuleList", "modules"),
    "torch.nn.Sequential": _sequential,
    "torch.nn.ModuleDict": _module_dict,
    "torch.nn.ModuleList.append": _append,
    "torch.nn.ModuleList.extend": _extend_method,
    "torch.nn.ModuleList.insert": _insert,
    "torch.nn.Sequential.append": _append,
    "torch.nn.Sequential.extend": _extend_method,
    "torch.nn.Sequential.insert": _insert,
    "torch.nn.Sequential.forward": _sequential_forward,
    "torch.nn.ModuleDict.keys": _dict_view("keys"),
    "torch.nn.ModuleDict.values": _dict_view("values"),
    "torch.nn.ModuleDict.items": _dict_view("items"),
    "torch.nn.ModuleDict.update": _update,
    "torch.nn.ParameterList": _list_of("torch.nn.ParameterList", "values"),
    "torch.nn.ParameterList.append": _append,
    "torch.nn.ParameterList.extend": _extend_method,
}
