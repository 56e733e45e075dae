"""Tensors: the factories give a ``TensorValue`` with what they fix of it (sizes from known
arguments; the dtype, ``torch.get_default_dtype()`` for the floating factories unless given;
the device, the CPU unless given; ``requires_grad``, False unless given), the methods keep what
they keep (``.to(dtype)``, ``.double()``, ``.reshape(2, 4)``, ``.detach()``), ``.item()`` /
``.tolist()`` are data, in-place methods keep the tensor itself. ``torch.set_default_dtype``
changes what later factories make."""

from __future__ import annotations

import ast
import math
from dataclasses import replace

from recompile_lint.analysis.execution.overlays.torch_shapes import matmul
from recompile_lint.analysis.execution.overlays.grad_mode import grad_enabled
from recompile_lint.analysis.execution.values import TOP, Const, ListValue, ModuleValue, Sym, TensorValue, TupleValue

# Factories whose sizes are their positional arguments (or one tuple), and that make the
# default floating dtype unless told.
SIZED = ("zeros", "ones", "empty", "randn", "rand")
FLOATING = SIZED + ("full", "linspace", "eye", "logspace")
LIKE = ("zeros_like", "ones_like", "randn_like", "empty_like", "rand_like", "full_like")
FACTORIES = SIZED + ("full", "tensor", "arange", "randint", "as_tensor", "from_numpy", "linspace", "eye") + LIKE
DTYPES = {
    "float": "torch.float32", "float32": "torch.float32", "double": "torch.float64", "float64": "torch.float64",
    "half": "torch.float16", "float16": "torch.float16", "bfloat16": "torch.bfloat16", "long": "torch.int64",
    "int64": "torch.int64", "int": "torch.int32", "int32": "torch.int32", "bool": "torch.bool",
}  # fmt: skip
DEFAULT_DTYPE = "torch.float32"


def _sizes(args: list[object]) -> tuple[int | None, ...] | None:
    """``(8, 8)`` from ``randn(8, 8)`` or ``randn((8, 8))``; ``(None, 8)`` from ``randn(n, 8)``
    with ``n`` unknown (its rank is still known); None when not even the rank is."""
    if len(args) == 1 and isinstance(args[0], TupleValue):
        args = list(args[0].elements)
    if not args or any(isinstance(a, (TupleValue, ListValue)) for a in args):
        return None if args else ()
    if any(isinstance(a, Const) and not (type(a.value) is int and a.value >= 0) for a in args):
        return None
    return tuple(a.value if isinstance(a, Const) else None for a in args)  # type: ignore[misc]


def _arange_sizes(args: list[object]) -> tuple[int | None, ...]:
    """``arange(n)``, ``arange(start, end[, step])``: one dim, its length where the bounds are
    known numbers."""
    if not args or len(args) > 3 or not all(isinstance(a, Const) and type(a.value) in (int, float) for a in args):
        return (None,)
    try:
        start, end, step = (0, args[0].value, 1) if len(args) == 1 else (args[0].value, args[1].value, args[2].value if len(args) == 3 else 1)  # type: ignore[union-attr]
        return (max(0, math.ceil((end - start) / step)),)  # type: ignore[operator]
    except (ZeroDivisionError, TypeError, OverflowError, ValueError):
        return (None,)


def dtype_of(value: object) -> str:
    """``torch.float64`` (or ``"float64"``) as the name a ``TensorValue`` keeps; "" if unknown."""
    if isinstance(value, ModuleValue) and value.name.startswith("torch."):
        return DTYPES.get(value.name[len("torch.") :], "")
    if isinstance(value, Const) and isinstance(value.value, str):
        return DTYPES.get(value.value.removeprefix("torch."), "")
    return ""


def device_of(value: object) -> str:
    """``"meta"``, ``"cuda:0"``, ``torch.device("cpu")``: the device's type; "" if unknown."""
    if isinstance(value, Const) and isinstance(value.value, str) and value.value:
        return value.value.split(":", 1)[0]
    return ""


def _device(interp, frame, args, kwargs, node) -> object:
    """``torch.device("meta")``: its spelling, which ``device_of`` reads."""
    return args[0] if len(args) == 1 and device_of(args[0]) else TOP


def _factory(name: str):
    def handler(interp, frame, args, kwargs, node) -> object:
        like = args[0] if name in LIKE and args and isinstance(args[0], TensorValue) else None
        sizes = _sizes(args) if name in SIZED else None
        if name == "full" and args:
            sizes = _sizes([args[0]])
        if name in ("tensor", "as_tensor") and args:
            sizes = _literal_sizes(interp, args[0])
        if name == "randint":
            # ``randint(high, size)`` / ``randint(low, high, size)`` / ``size=``: an int tensor.
            shape = kwargs.get("size", args[-1] if len(args) in (2, 3) else None)
            sizes = _sizes([shape]) if isinstance(shape, (TupleValue, ListValue)) else None
            if isinstance(shape, ListValue):
                sizes = _sizes(list(shape.elements))
        if name == "arange":
            sizes = _arange_sizes(args)
        if like is not None:
            sizes = like.sizes
        dtype = dtype_of(kwargs["dtype"]) if "dtype" in kwargs else ""
        if "dtype" not in kwargs:
            if like is not None:
                dtype = like.dtype
            elif name in FLOATING:
                dtype = interp.default_dtype
            elif name in ("tensor", "as_tensor") and args:
                dtype = _literal_dtype(interp, args[0])
            elif name == "randint":
                dtype = "torch.int64"
            elif name == "arange" and args and all(isinstance(a, Const) for a in args):
                dtype = "torch.int64" if all(type(a.value) is int for a in args) else interp.default_dtype  # type: ignore[union-attr]
        device = device_of(kwargs["device"]) if "device" in kwargs else (like.device if like is not None else "cpu")
        requires = kwargs.get("requires_grad", Const(False))
        return interp.new_tensor(
            sizes=sizes,
            dtype=dtype,
            device=device,
            requires_grad=requires.value if isinstance(requires, Const) and isinstance(requires.value, bool) else None,
            # A new tensor is contiguous; a ``*_like`` one takes its model's strides.
            layout=like.layout if like is not None else "contiguous",
        )

    return handler


def _literal_sizes(interp, value: object) -> tuple[int | None, ...] | None:
    """The sizes of ``torch.tensor(3.0)``, ``torch.tensor([1.0, 2.0])``, ``torch.tensor([[1]])``
    (nested lists of one length at each level)."""
    if isinstance(value, Const) and isinstance(value.value, (int, float, bool)):
        return ()
    if isinstance(value, (ListValue, TupleValue)):
        items = interp.items(value)
        if not items:
            return None if items is None else (0,)
        inner = {_literal_sizes(interp, item) for item in items}
        if len(inner) == 1 and None not in inner:
            return (len(items),) + inner.pop()  # type: ignore[operator]
    return None


def _literal_dtype(interp, value: object) -> str:
    items = [value]
    while any(isinstance(i, (ListValue, TupleValue)) for i in items):
        nested = [interp.items(i) if isinstance(i, (ListValue, TupleValue)) else None for i in items]
        if any(n is None for n in nested):
            return ""
        items = [x for n in nested for x in n]  # type: ignore[union-attr]
    kinds = {type(i.value) for i in items if isinstance(i, Const)}
    if not items or len(kinds) != 1 or len(items) != sum(isinstance(i, Const) for i in items):
        return ""
    kind = kinds.pop()
    return {float: interp.default_dtype, int: "torch.int64", bool: "torch.bool"}.get(kind, "")


def _set_default_dtype(interp, frame, args, kwargs, node) -> object:
    dtype = dtype_of(args[0]) if len(args) == 1 else ""
    interp.default_dtype = dtype or ""  # unknown: later factories' dtype is unknown
    return Const(None)


def _converted(dtype: str = "", device: str = ""):
    """``.double()``, ``.float()``, ``.cpu()``: a tensor with the sizes kept."""

    def handler(interp, frame, args, kwargs, node) -> object:
        if not args or not isinstance(args[0], TensorValue):
            return TOP
        t = args[0]
        return interp.new_tensor(sizes=t.sizes, dtype=dtype or t.dtype, device=device or t.device, requires_grad=t.requires_grad)

    return handler


def _to(interp, frame, args, kwargs, node) -> object:
    """``t.to(torch.float64)``, ``t.to("meta")``, ``t.to(device=..., dtype=...)``, ``t.to(other)``."""
    if not args or not isinstance(args[0], TensorValue):
        return TOP
    t = args[0]
    dtype, device = t.dtype, t.device
    for value in list(args[1:]) + [kwargs[k] for k in ("dtype", "device") if k in kwargs]:
        if isinstance(value, TensorValue):
            dtype, device = value.dtype, value.device
        elif dtype_of(value):
            dtype = dtype_of(value)
        elif device_of(value):
            device = device_of(value)
        else:
            return interp.new_tensor(sizes=t.sizes, requires_grad=t.requires_grad)
    return interp.new_tensor(sizes=t.sizes, dtype=dtype, device=device, requires_grad=t.requires_grad)


def _reshaped(interp, frame, args, kwargs, node) -> object:
    """``t.reshape(2, 4)`` / ``t.view(-1, 4)``: the new sizes where known."""
    if not args or not isinstance(args[0], TensorValue):
        return TOP
    t = args[0]
    shape = list(args[1:])
    if len(shape) == 1 and isinstance(shape[0], TupleValue):
        shape = list(shape[0].elements)
    sizes: tuple[int | None, ...] | None = None
    if shape and all(isinstance(s, Const) and type(s.value) is int for s in shape):
        wanted = [s.value for s in shape]  # type: ignore[union-attr]
        if wanted.count(-1) == 1 and t.sizes is not None and None not in t.sizes:
            rest = math.prod(w for w in wanted if w != -1)
            total = math.prod(t.sizes)  # type: ignore[arg-type]
            wanted = [total // rest if w == -1 and rest else w for w in wanted]
        if all(w >= 0 for w in wanted):
            sizes = tuple(wanted)
    return interp.new_tensor(sizes=sizes, dtype=t.dtype, device=t.device, requires_grad=t.requires_grad)


def _kept(requires_grad: bool | None = None, layout: str | None = None):
    """``.detach()`` (no grad), ``.clone()``, ``.contiguous()``: the same sizes, dtype, device;
    the same strides, or the ``layout`` given."""

    def handler(interp, frame, args, kwargs, node) -> object:
        if not args or not isinstance(args[0], TensorValue):
            return TOP
        t = args[0]
        grad = t.requires_grad if requires_grad is None else requires_grad
        return interp.new_tensor(sizes=t.sizes, dtype=t.dtype, device=t.device, requires_grad=grad, layout=t.layout if layout is None else layout)

    return handler


def _parameter(interp, frame, args, kwargs, node) -> object:
    """``nn.Parameter(t, requires_grad=True)``: the tensor's sizes, dtype and device."""
    t = args[0] if args and isinstance(args[0], TensorValue) else None
    requires = args[1] if len(args) > 1 else kwargs.get("requires_grad", Const(True))
    grad = requires.value if isinstance(requires, Const) and isinstance(requires.value, bool) else None
    if t is None:
        return interp.new_tensor(requires_grad=grad, parameter=True)
    return interp.new_tensor(sizes=t.sizes, dtype=t.dtype, device=t.device, requires_grad=grad, parameter=True)


def _dim(interp, frame, args, kwargs, node) -> object:
    """``t.dim()``: its rank where known."""
    t = args[0] if args else None
    return Const(t.rank) if isinstance(t, TensorValue) and t.rank is not None else TOP


def _size(interp, frame, args, kwargs, node) -> object:
    """``t.size()`` (a tuple of its sizes) / ``t.size(0)``, where known."""
    t = args[0] if args else None
    if not isinstance(t, TensorValue) or t.sizes is None:
        return TOP
    sizes = tuple(Const(s) if s is not None else TOP for s in t.sizes)
    if len(args) == 1:
        return TupleValue(sizes)
    index = args[1]
    if isinstance(index, Const) and type(index.value) is int and -len(sizes) <= index.value < len(sizes):
        return sizes[index.value]
    return TOP


def _numel(interp, frame, args, kwargs, node) -> object:
    t = args[0] if args else None
    if isinstance(t, TensorValue) and t.sizes is not None and None not in t.sizes:
        return Const(math.prod(t.sizes))  # type: ignore[arg-type]
    return TOP


def _requires_grad_(interp, frame, args, kwargs, node) -> object:
    """``t.requires_grad_(flag)``: the same tensor, its flag changed wherever it is held."""
    if not args or not isinstance(args[0], TensorValue):
        return TOP
    flag = args[1] if len(args) > 1 else kwargs.get("requires_grad", Const(True))
    grad = flag.value if isinstance(flag, Const) and isinstance(flag.value, bool) else None
    changed = replace(args[0], requires_grad=grad)
    interp.replace_tensor(args[0], changed, interp.location(frame, node, "write"))
    return changed


def _data(interp, frame, args, kwargs, node) -> object:
    """``t.item()`` / ``t.tolist()``: data the run does not know; in traced code, a graph break
    (torch 2.13 does not capture scalar outputs by default)."""
    interp.graph_break(frame, node)
    return Sym("data", name="item")


def _same(interp, frame, args, kwargs, node) -> object:
    """An in-place method: the tensor stays the same object."""
    return args[0] if args and isinstance(args[0], TensorValue) else TOP


def _random(interp, frame, args, kwargs, node) -> object:
    return Sym("data", name="random")


FLOATING_DTYPES = ("torch.float16", "torch.bfloat16", "torch.float32", "torch.float64")


def arithmetic(interp, op, left: object, right: object) -> object:
    """``t * 0.5``, ``a + b``: a new tensor. With a Python number, or another tensor of the same
    dtype and device, it keeps the (broadcast) sizes, dtype (a floating one) and device, and
    ``requires_grad`` if either has it; ``a @ b`` has matmul's sizes; anything else is a tensor
    of which nothing is known."""
    tensors = [v for v in (left, right) if isinstance(v, TensorValue)]
    others = [v for v in (left, right) if not isinstance(v, TensorValue)]
    first = tensors[0]
    if isinstance(op, ast.MatMult):
        return matmul(interp, left, right) if len(tensors) == 2 else interp.new_tensor()
    if others and not (isinstance(others[0], Const) and type(others[0].value) in (int, float)):
        return interp.new_tensor()
    if len(tensors) == 2 and (tensors[0].dtype != tensors[1].dtype or tensors[0].device != tensors[1].device):
        return interp.new_tensor()
    if len(tensors) == 2 and tensors[0].sizes != tensors[1].sizes:
        sizes = broadcast(tensors[0].sizes, tensors[1].sizes)
        if sizes is None:
            return interp.new_tensor()
        first = replace(first, sizes=sizes)
    if first.dtype not in FLOATING_DTYPES:
        return interp.new_tensor(sizes=first.sizes)
    grads = [t.requires_grad for t in tensors]
    grad = True if True in grads else (False if all(g is False for g in grads) else None)
    if grad is not False:
        enabled = grad_enabled(interp.grad_modes)  # under ``no_grad`` the result needs no grad
        grad = False if enabled is False else grad if enabled else None
    return interp.new_tensor(sizes=first.sizes, dtype=first.dtype, device=first.device, requires_grad=grad)


def broadcast(a: tuple[int | None, ...] | None, b: tuple[int | None, ...] | None) -> tuple[int | None, ...] | None:
    """The sizes two tensors broadcast to (None where a rank is unknown or they cannot)."""
    if a is None or b is None:
        return None
    width = max(len(a), len(b))
    a, b = (1,) * (width - len(a)) + a, (1,) * (width - len(b)) + b
    out: list[int | None] = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif x is None or y is None:
            out.append(x if y is None else y)  # the known one, unless it is the one that is 1
        else:
            return None  # torch raises
    return tuple(out)


def attribute(interp, tensor: TensorValue, attr: str) -> object:
    """``t.dtype``, ``t.shape``, ``t.ndim``, ``t.requires_grad`` where known; else top."""
    if attr == "dtype" and tensor.dtype:
        return ModuleValue(tensor.dtype)
    if attr in ("ndim",) and tensor.rank is not None:
        return Const(tensor.rank)
    if attr == "shape" and tensor.sizes is not None:
        return TupleValue(tuple(Const(s) if s is not None else TOP for s in tensor.sizes))
    if attr == "requires_grad" and tensor.requires_grad is not None:
        return Const(tensor.requires_grad)
    return TOP


IN_PLACE = ("add_", "sub_", "mul_", "div_", "zero_", "fill_", "copy_", "clamp_", "uniform_", "normal_")

HANDLERS = {
    **{f"torch.{name}": _factory(name) for name in FACTORIES},
    "torch.nn.Parameter": _parameter,
    "torch.nn.parameter.Parameter": _parameter,
    "torch.set_default_dtype": _set_default_dtype,
    "tensor.item": _data,
    "tensor.tolist": _data,
    **{f"tensor.{name}": _same for name in IN_PLACE},
    "tensor.to": _to,
    "tensor.requires_grad_": _requires_grad_,
    "tensor.double": _converted(dtype="torch.float64"),
    "tensor.float": _converted(dtype="torch.float32"),
    "tensor.half": _converted(dtype="torch.float16"),
    "tensor.bfloat16": _converted(dtype="torch.bfloat16"),
    "tensor.long": _converted(dtype="torch.int64"),
    "tensor.int": _converted(dtype="torch.int32"),
    "tensor.bool": _converted(dtype="torch.bool"),
    "tensor.cpu": _converted(device="cpu"),
    "tensor.cuda": _converted(device="cuda"),
    "torch.device": _device,
    "tensor.reshape": _reshaped,
    "tensor.dim": _dim,
    "tensor.size": _size,
    "tensor.numel": _numel,
    "tensor.view": _reshaped,
    "tensor.detach": _kept(requires_grad=False),
    "tensor.clone": _kept(),
    "tensor.contiguous": _kept(layout="contiguous"),
    "random.random": _random,
    "random.randint": _random,
    "random.choice": _random,
    "random.uniform": _random,
    "torch.manual_seed": lambda interp, frame, args, kwargs, node: Const(None),
}
