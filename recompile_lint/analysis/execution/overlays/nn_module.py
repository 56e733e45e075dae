"""``nn.Module``: the methods a program calls on its modules. Subclasses' ``__init__`` runs as
project code (``super().__init__()`` is a no-op); attribute writes land on the instance;
calling an instance calls its ``forward``; ``OptimizedModule`` forwards reads and writes to the
original module (``Interpreter.get_attribute`` / ``set_attribute`` on a ``CompiledValue``).
The layers whose parameters' shapes their arguments fix (``nn.Linear``, ``nn.LayerNorm``,
``nn.Embedding``, ``nn.Conv1d/2d/3d``) are instances with those parameters as attributes."""

from __future__ import annotations

from dataclasses import replace

from recompile_lint.analysis.execution.values import TOP, Const, DictValue, Instance, ModuleValue, TensorValue, TupleValue

# The slots of a module that hold its forward pre-hooks and forward hooks, in the order they
# run: a tuple of ``(id, hook, with_kwargs)`` tuples.
PRE_HOOKS = "__forward_pre_hooks__"
HOOKS = "__forward_hooks__"
HANDLE = "torch.utils.hooks.RemovableHandle"


def _mode(training: bool | None):
    def handler(interp, frame, args, kwargs, node) -> object:
        if not args or not isinstance(args[0], Instance):
            return TOP
        value: object = Const(training)
        if training is None:  # ``train(mode=True)``
            mode = args[1] if len(args) > 1 else kwargs.get("mode", Const(True))
            value = mode if isinstance(mode, Const) else TOP
        where = interp.location(frame, node, "write")
        for module in submodules(interp, args[0]):  # ``train()`` / ``eval()`` set every submodule
            interp.heap.write(module.addr, "training", value, where)
        return args[0]

    return handler


def _requires_grad(interp, frame, args, kwargs, node) -> object:
    """``module.requires_grad_(False)``: every parameter of it and its submodules (the same
    tensors, their ``requires_grad`` changed wherever they are held)."""
    if not args or not isinstance(args[0], Instance):
        return TOP
    flag = args[1] if len(args) > 1 else kwargs.get("requires_grad", Const(True))
    grad = flag.value if isinstance(flag, Const) and isinstance(flag.value, bool) else None
    for module in submodules(interp, args[0]):
        for value in list(interp.heap.slots(module.addr).values()):
            if isinstance(value, TensorValue) and value.requires_grad is not None and value.requires_grad != grad:
                interp.replace_tensor(value, replace(value, requires_grad=grad), interp.location(frame, node, "write"))
    return args[0]


def _register_parameter(interp, frame, args, kwargs, node) -> object:
    if len(args) == 3 and isinstance(args[0], Instance) and isinstance(args[1], Const) and isinstance(args[1].value, str):
        interp.heap.write(args[0].addr, args[1].value, args[2], interp.location(frame, node, "write"))
    return Const(None)


def _self(interp, frame, args, kwargs, node) -> object:
    return args[0] if args else TOP


def submodules(interp, module: Instance) -> list[Instance]:
    """``module.modules()``: the module, then each submodule depth first (attributes that are
    modules, in the order they were set), each once."""
    out: list[Instance] = []
    pending = [module]
    while pending and len(out) < 256:
        current = pending.pop()
        if current in out:
            continue
        out.append(current)
        children = [v for v in interp.heap.slots(current.addr).values() if isinstance(v, Instance) and interp.is_nn_module(v.cls)]
        pending.extend(reversed(children))
    return out


def _children(interp, frame, args, kwargs, node) -> object:
    if not args or not isinstance(args[0], Instance):
        return TOP
    return interp.new_list([v for v in interp.heap.slots(args[0].addr).values() if isinstance(v, Instance) and interp.is_nn_module(v.cls)])


def _modules(interp, frame, args, kwargs, node) -> object:
    return interp.new_list(list(submodules(interp, args[0]))) if args and isinstance(args[0], Instance) else TOP


def _parameters(interp, frame, args, kwargs, node) -> object:
    """``parameters()``: the tensors that need grad, of the module and its submodules."""
    if not args or not isinstance(args[0], Instance):
        return TOP
    found = []
    for module in submodules(interp, args[0]):
        for value in interp.heap.slots(module.addr).values():
            if isinstance(value, TensorValue) and value.requires_grad:
                found.append(value)
    return interp.new_list(found)


def _apply(interp, frame, args, kwargs, node) -> object:
    """``module.apply(fn)``: ``fn`` on each submodule, children first, then the module."""
    if len(args) == 2 and isinstance(args[0], Instance):
        order: list[Instance] = []

        def visit(module: Instance) -> None:
            if module in order or len(order) >= 256:
                return
            for child in interp.heap.slots(module.addr).values():
                if isinstance(child, Instance) and interp.is_nn_module(child.cls) and child not in order:
                    visit(child)
            order.append(module)

        visit(args[0])
        for module in order:
            interp.call(frame, args[1], [module], {}, node)
    return args[0] if args else TOP


# The names an ``nn.Module`` registered as buffers (a tuple of names in this slot).
BUFFERS = "__buffers__"


def _register_buffer(interp, frame, args, kwargs, node) -> object:
    """``register_buffer(name, tensor)``: the attribute, and its name among the buffers (a
    tensor later assigned to the name is still a buffer, as ``nn.Module.__setattr__`` keeps it)."""
    if len(args) >= 3 and isinstance(args[0], Instance) and isinstance(args[1], Const) and isinstance(args[1].value, str):
        interp.heap.write(args[0].addr, args[1].value, args[2], interp.location(frame, node, "write"))
        names = interp.heap.read(args[0].addr, BUFFERS, TupleValue(()))
        if isinstance(names, TupleValue) and args[1] not in names.elements:
            interp.heap.write(args[0].addr, BUFFERS, TupleValue(names.elements + (args[1],)), None)
    return Const(None)


def is_buffer(interp, module: object, name: str) -> bool:
    """Whether ``name`` is a buffer the run saw ``module`` register."""
    if not isinstance(module, Instance):
        return False
    names = interp.heap.read(module.addr, BUFFERS, None)
    return isinstance(names, TupleValue) and Const(name) in names.elements


def _ints(values: list[object]) -> list[int] | None:
    out = []
    for value in values:
        if not (isinstance(value, Const) and type(value.value) is int and value.value >= 0):
            return None
        out.append(value.value)
    return out


# Dropout layers: ``forward`` reads the float ``self.p`` (a constant of the graph).
DROPOUTS = ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout")
# What a library layer's ``forward`` reads of its own Python attributes, guarded where traced
# code calls the layer (``self._modules['drop'].p == 0.1``; measured on torch 2.13: a dropout
# probability changed before each call reaches the limit).
# Each as (attribute, the lab's use of it): the probability is an op argument that must stay
# a Python number, so it never becomes a graph input.
LAYER_CONSTANTS = {f"torch.nn.{name}": (("p", "op-dropout-p"),) for name in DROPOUTS}


def _layer(name: str, shapes):
    """A layer: ``shapes(args, kwargs)`` gives its attributes' values (parameters as sizes)."""

    def handler(interp, frame, args, kwargs, node) -> object:
        cls = interp.library_class(f"torch.nn.{name}", (ModuleValue("torch.nn.Module"),))
        instance = Instance(cls, interp.heap.new("object", {"training": Const(True)}))
        found = shapes(args, kwargs)
        if found is None:
            return instance  # its parameters unknown: reads are top
        requires = Const(True)
        for attr, value in found.items():
            if isinstance(value, tuple):  # a parameter's sizes
                value = interp.new_tensor(sizes=value, dtype=interp.default_dtype, device="cpu", requires_grad=requires.value, parameter=True)
            interp.heap.write(instance.addr, attr, value, None)
        return instance

    return handler


def _with_bias(kwargs, found: dict, sizes: tuple) -> dict:
    bias = kwargs.get("bias", Const(True))
    if bias == Const(False):
        found["bias"] = Const(None)
    elif bias == Const(True):
        found["bias"] = sizes
    return found


def _linear(args, kwargs):
    sizes = _ints(list(args[:2]) + [kwargs[k] for k in ("in_features", "out_features") if k in kwargs][: 2 - len(args[:2])])
    if sizes is None or len(sizes) != 2:
        return None
    n_in, n_out = sizes
    return _with_bias(kwargs, {"weight": (n_out, n_in), "in_features": Const(n_in), "out_features": Const(n_out)}, (n_out,))


def _layer_norm(args, kwargs):
    shape = args[0] if args else kwargs.get("normalized_shape")
    sizes = _ints(list(shape.elements)) if isinstance(shape, TupleValue) else _ints([shape]) if shape is not None else None
    if sizes is None:
        return None
    found = {"normalized_shape": TupleValue(tuple(Const(n) for n in sizes))}
    if kwargs.get("elementwise_affine", Const(True)) == Const(True):
        found["weight"] = tuple(sizes)
        found = _with_bias(kwargs, found, tuple(sizes))
    return found


def _dropout(args, kwargs):
    """``nn.Dropout(p=0.5, inplace=False)`` and its kin: the probability its forward reads."""
    p = args[0] if args else kwargs.get("p", Const(0.5))
    inplace = args[1] if len(args) > 1 else kwargs.get("inplace", Const(False))
    return {"p": p, "inplace": inplace}


def _embedding(args, kwargs):
    sizes = _ints(list(args[:2]))
    if sizes is None or len(sizes) != 2:
        return None
    return {"weight": tuple(sizes), "num_embeddings": Const(sizes[0]), "embedding_dim": Const(sizes[1])}


def _conv(rank: int):
    def shapes(args, kwargs):
        sizes = _ints(list(args[:3]))
        if sizes is None or len(sizes) != 3 or kwargs.get("groups", Const(1)) != Const(1):
            return None
        n_in, n_out, k = sizes
        found = {"weight": (n_out, n_in) + (k,) * rank, "in_channels": Const(n_in), "out_channels": Const(n_out), "kernel_size": Const(k)}
        for at, name, default in ((3, "stride", 1), (4, "padding", 0), (5, "dilation", 1)):
            value = args[at] if len(args) > at else kwargs.get(name, Const(default))
            if isinstance(value, (Const, TupleValue)):
                found[name] = value  # the output's spatial sizes follow from them (torch_shapes)
        return _with_bias(kwargs, found, (n_out,))

    return shapes


def _register_hook(slot: str):
    """``register_forward_pre_hook(hook)`` / ``register_forward_hook(hook)`` (``prepend``,
    ``with_kwargs``): the hook joins the module's hooks; the handle's ``remove()`` takes it out."""

    def handler(interp, frame, args, kwargs, node) -> object:
        if len(args) != 2 or not isinstance(args[0], Instance):
            return TOP
        module, hook = args
        where = interp.location(frame, node, "write")
        hooks = interp.heap.read(module.addr, slot, TupleValue(()))
        with_kwargs, prepend = kwargs.get("with_kwargs", Const(False)), kwargs.get("prepend", Const(False))
        if not isinstance(hooks, TupleValue) or not isinstance(with_kwargs, Const) or not isinstance(prepend, Const):
            interp.heap.write(module.addr, slot, TOP, where)  # which hooks run is not known
            return TOP
        handle = Instance(interp.library_class(HANDLE), interp.heap.new("object"))
        entry = TupleValue((Const(handle.addr), hook, Const(bool(with_kwargs.value))))
        hooks = TupleValue((entry,) + hooks.elements if prepend.value else hooks.elements + (entry,))
        interp.heap.write(module.addr, slot, hooks, where)
        interp.heap.write(handle.addr, "module", module, None)
        interp.heap.write(handle.addr, "slot", Const(slot), None)
        return handle

    return handler


def _remove_hook(interp, frame, args, kwargs, node) -> object:
    handle = args[0] if args else None
    if not isinstance(handle, Instance):
        return Const(None)
    module, slot = interp.heap.read(handle.addr, "module", None), interp.heap.read(handle.addr, "slot", None)
    if isinstance(module, Instance) and isinstance(slot, Const):
        hooks = interp.heap.read(module.addr, slot.value, None)
        if isinstance(hooks, TupleValue):
            kept = tuple(e for e in hooks.elements if not (isinstance(e, TupleValue) and e.elements[0] == Const(handle.addr)))
            interp.heap.write(module.addr, slot.value, TupleValue(kept), interp.location(frame, node, "write"))
    return Const(None)


def _hooks(interp, module: Instance, slot: str) -> list[tuple[object, bool]] | None:
    """The module's hooks of one kind, in order (None where the run does not know them)."""
    hooks = interp.heap.read(module.addr, slot, TupleValue(()))
    if not isinstance(hooks, TupleValue):
        return None
    return [(e.elements[1], e.elements[2] == Const(True)) for e in hooks.elements if isinstance(e, TupleValue)]


def call_module(interp, frame, module: Instance, forward: object, args: list[object], kwargs: dict[str, object], node) -> object:
    """``module(*args, **kwargs)`` as ``nn.Module.__call__`` runs it: each forward pre-hook
    (a result other than ``None`` replaces the arguments), ``forward``, then each forward
    hook (a result other than ``None`` replaces the output). Hooks the run does not know
    make the result unknown."""
    pre, post = _hooks(interp, module, PRE_HOOKS), _hooks(interp, module, HOOKS)
    if pre is None or post is None:
        return TOP
    for hook, with_kwargs in pre:
        passed = [module, TupleValue(tuple(args))] + ([DictValue(interp.heap.new("dict", dict(kwargs)))] if with_kwargs else [])
        result = interp.call(frame, hook, passed, {}, node)
        if result == Const(None):
            continue
        if with_kwargs:
            new_args = result.elements[0] if isinstance(result, TupleValue) and len(result.elements) == 2 else None
            new_kwargs = interp.keywords_of(result.elements[1]) if isinstance(new_args, TupleValue) else None  # type: ignore[union-attr]
            if not isinstance(new_args, TupleValue) or new_kwargs is None:
                return TOP
            args, kwargs = list(new_args.elements), new_kwargs
        else:
            args = list(result.elements) if isinstance(result, TupleValue) else [result]
    output = forward(args, kwargs)
    for hook, with_kwargs in post:
        passed = [module, TupleValue(tuple(args))] + ([DictValue(interp.heap.new("dict", dict(kwargs)))] if with_kwargs else []) + [output]
        result = interp.call(frame, hook, passed, {}, node)
        if result != Const(None):
            output = result
    return output


HANDLERS = {
    "torch.nn.Linear": _layer("Linear", _linear),
    "torch.nn.LayerNorm": _layer("LayerNorm", _layer_norm),
    "torch.nn.Embedding": _layer("Embedding", _embedding),
    **{f"torch.nn.{name}": _layer(name, _dropout) for name in DROPOUTS},
    "torch.nn.Conv1d": _layer("Conv1d", _conv(1)),
    "torch.nn.Conv2d": _layer("Conv2d", _conv(2)),
    "torch.nn.Conv3d": _layer("Conv3d", _conv(3)),
    "nn.Module.train": _mode(None),
    "nn.Module.eval": _mode(False),
    "nn.Module.to": _self,
    "nn.Module.cuda": _self,
    "nn.Module.cpu": _self,
    "nn.Module.float": _self,
    "nn.Module.half": _self,
    "nn.Module.double": _self,
    "nn.Module.requires_grad_": _requires_grad,
    "nn.Module.register_parameter": _register_parameter,
    "nn.Module.apply": _apply,
    "nn.Module.children": _children,
    "nn.Module.modules": _modules,
    "nn.Module.parameters": _parameters,
    "nn.Module.register_buffer": _register_buffer,
    "nn.Module.register_forward_pre_hook": _register_hook(PRE_HOOKS),
    "nn.Module.register_forward_hook": _register_hook(HOOKS),
    f"{HANDLE}.remove": _remove_hook,
}
