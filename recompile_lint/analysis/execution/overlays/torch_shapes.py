"""Tensor shapes through the layers and ops models are built of: what a call makes of its
input's sizes, as torch computes them. A size the rules below cannot tell is ``None`` (the rank
still known where it is), a rank they cannot tell leaves the sizes unknown: an unknown size is
never a difference between two calls (``values.definitely_different``).

Layers: ``nn.Linear`` (last size becomes ``out_features``), ``nn.Conv1d/2d/3d`` (channels, and
each spatial size from kernel, stride, padding and dilation where known), ``nn.Embedding``
(its ``embedding_dim`` appended), and the layers that keep their input's shape (activations,
norms, dropout, ``nn.Identity``). Ops: indexing with ints, slices, ``None`` and ``...``;
``transpose``, ``permute``, ``unsqueeze``, ``squeeze``, ``flatten``, ``chunk``, ``split``,
reductions over a dim (``sum``, ``mean``, ``argmax``, ...), elementwise functions, ``@``,
``torch.cat`` / ``torch.stack`` and ``F.pad``.
"""

from __future__ import annotations

import math
from dataclasses import replace

from recompile_lint.analysis.execution.overlays.grad_mode import grad_enabled
from recompile_lint.analysis.execution.values import TOP, Const, Instance, ListValue, ModuleValue, TensorValue, TupleValue

Sizes = "tuple[int | None, ...] | None"

# Layers whose output has their input's shape.
KEEPING_LAYERS = (
    "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "LeakyReLU", "ELU", "Mish", "Hardswish", "Softplus", "Softmax",
    "LogSoftmax", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "Identity", "LayerNorm", "RMSNorm", "GroupNorm",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d",
)  # fmt: skip
# Functions and methods whose result has their (first) input's shape.
ELEMENTWISE = (
    "relu", "gelu", "silu", "tanh", "sigmoid", "exp", "log", "abs", "neg", "sqrt", "rsqrt", "sin", "cos", "softmax",
    "log_softmax", "clamp", "clip", "pow", "masked_fill", "square", "reciprocal", "sign", "floor", "ceil",
    "round", "dropout", "layer_norm", "normalize", "leaky_relu", "elu", "softplus", "mish", "hardswish", "tril", "triu",
)  # fmt: skip
REDUCTIONS = ("sum", "mean", "amax", "amin", "argmax", "argmin", "prod", "std", "var", "logsumexp", "norm", "all", "any")
INDEX_DTYPE = "torch.int64"


def _ints(value: object) -> list[int] | None:
    """``3`` or ``(3, 3)`` as known ints."""
    items = value.elements if isinstance(value, TupleValue) else (value,)
    if not all(isinstance(i, Const) and type(i.value) is int for i in items):
        return None
    return [i.value for i in items]  # type: ignore[union-attr]


def _axis(value: object, rank: int, extra: int = 0) -> int | None:
    """A known dim of a tensor of ``rank`` (``extra`` for ``unsqueeze``'s one more), counted
    from the front."""
    if not (isinstance(value, Const) and type(value.value) is int):
        return None
    total = rank + extra
    dim = value.value + total if value.value < 0 else value.value
    return dim if 0 <= dim < total else None


def derived(interp, like: TensorValue, sizes, dtype: str | None = None) -> TensorValue:
    """A new tensor computed from ``like``: its dtype (unless told), device and grad (never
    for an integer or bool result: those cannot need grad)."""
    grad = like.requires_grad
    if grad is not False and grad_enabled(interp.grad_modes) is False:
        grad = False
    if dtype in (INDEX_DTYPE, "torch.bool"):
        grad = False
    return interp.new_tensor(sizes=sizes, dtype=like.dtype if dtype is None else dtype, device=like.device, requires_grad=grad)


def _arg(args, kwargs, index: int, name: str, default: object = None) -> object:
    return args[index] if len(args) > index else kwargs.get(name, default)


# ---- layers --------------------------------------------------------------------------------


def _attr(interp, layer: Instance, name: str) -> object:
    return interp.heap.read(layer.addr, name, TOP)


def _through(interp, layer: Instance, x: TensorValue, sizes) -> TensorValue:
    """A layer's output: computed from ``x``, and needing grad where its weight does."""
    out = derived(interp, x, sizes)
    weight = _attr(interp, layer, "weight")
    if isinstance(weight, TensorValue) and weight.requires_grad and out.requires_grad is not True:
        enabled = grad_enabled(interp.grad_modes)
        if enabled is not False:
            out = replace(out, requires_grad=True if enabled else None)
    return out


def _layer_input(args) -> tuple[Instance, TensorValue] | None:
    if len(args) == 2 and isinstance(args[0], Instance) and isinstance(args[1], TensorValue):
        return args[0], args[1]
    return None


def _layer_forward(out_sizes):
    """A layer's ``forward``: ``out_sizes(interp, layer, x)`` gives its output's sizes from an
    input whose sizes are known (None where it cannot tell)."""

    def handler(interp, frame, args, kwargs, node) -> object:
        found = _layer_input(args)
        if found is None:
            return TOP
        layer, x = found
        return _through(interp, layer, x, out_sizes(interp, layer, x) if x.sizes is not None else None)

    return handler


def _linear_sizes(interp, layer: Instance, x: TensorValue):
    out = _attr(interp, layer, "out_features")
    return x.sizes[:-1] + (out.value,) if x.sizes and isinstance(out, Const) else None  # type: ignore[operator]


def _conv_sizes(rank: int):
    def sizes(interp, layer: Instance, x: TensorValue):
        out = _attr(interp, layer, "out_channels")
        if len(x.sizes) not in (rank + 1, rank + 2) or not isinstance(out, Const):  # type: ignore[arg-type]
            return None
        lead = x.sizes[: len(x.sizes) - rank - 1]  # type: ignore[index,arg-type]
        spatial = [_conv_size(interp, layer, x.sizes[len(x.sizes) - rank + i], i) for i in range(rank)]  # type: ignore[index,arg-type]
        return tuple(lead) + (out.value,) + tuple(spatial)

    return sizes


def _conv_size(interp, layer: Instance, size: int | None, i: int) -> int | None:
    if size is None:
        return None
    params = {}
    for name in ("kernel_size", "stride", "padding", "dilation"):
        value = _attr(interp, layer, name)
        if isinstance(value, Const) and value.value in ("same", "valid") and name == "padding":
            if value.value == "same":
                return size
            params[name] = 0
            continue
        known = _ints(value)
        if known is None:
            return None
        params[name] = known[i] if len(known) > 1 else known[0]
    k, s, p, d = params["kernel_size"], params["stride"], params["padding"], params["dilation"]
    if s <= 0:
        return None  # torch refuses it
    out = (size + 2 * p - d * (k - 1) - 1) // s + 1
    return out if out > 0 else None


def _embedding_forward(interp, frame, args, kwargs, node) -> object:
    found = _layer_input(args)
    if found is None:
        return TOP
    layer, x = found
    dim = _attr(interp, layer, "embedding_dim")
    weight = _attr(interp, layer, "weight")
    like = weight if isinstance(weight, TensorValue) else x
    if x.sizes is None or not isinstance(dim, Const):
        return derived(interp, like, None, dtype=like.dtype if like is weight else "")
    return derived(interp, like, x.sizes + (dim.value,), dtype=like.dtype if like is weight else "")  # type: ignore[operator]


def _keeping_layer(name: str):
    def handler(interp, frame, args, kwargs, node) -> object:
        cls = interp.library_class(f"torch.nn.{name}", (ModuleValue("torch.nn.Module"),))
        return Instance(cls, interp.heap.new("object", {"training": Const(True)}))

    return handler


# ---- ops -----------------------------------------------------------------------------------


def _tensor(args) -> TensorValue | None:
    return args[0] if args and isinstance(args[0], TensorValue) else None


def _elementwise(interp, frame, args, kwargs, node) -> object:
    t = _tensor(args)
    return derived(interp, t, t.sizes) if t is not None else TOP


def _sized(out_sizes):
    """An op whose result is a new tensor: ``out_sizes(t, args, kwargs)`` gives its sizes from
    an input whose sizes are known (None where it cannot tell)."""

    def handler(interp, frame, args, kwargs, node) -> object:
        t = _tensor(args)
        if t is None:
            return TOP
        return derived(interp, t, out_sizes(t, args, kwargs) if t.sizes is not None else None)

    return handler


def _swapped(out_sizes, axes_of):
    """A view that swaps or permutes dims: its sizes, and its strides where they are known.
    ``axes_of(rank, args)`` is the permutation (None where not known). A contiguous tensor
    with two dims of more than one element put out of order is not contiguous; a 2-d one
    transposed back is again; any other reordering leaves its strides unknown."""

    def handler(interp, frame, args, kwargs, node) -> object:
        t = _tensor(args)
        if t is None:
            return TOP
        out = derived(interp, t, out_sizes(t, args, kwargs) if t.sizes is not None else None)
        axes = axes_of(len(t.sizes), args) if t.sizes is not None and None not in t.sizes else None
        layout = ""
        if axes is not None:
            large = [a for a in axes if t.sizes[a] > 1]  # type: ignore[index, operator]
            if axes == sorted(axes):
                layout = t.layout
            elif t.layout == "contiguous" and large != sorted(large):
                layout = "transposed"  # two dims of more than one element out of order
            elif t.layout == "transposed" and len(axes) == 2:
                layout = "contiguous"
        return replace(out, layout=layout) if layout else out

    return handler


def _swap_axes(rank: int, args) -> list[int] | None:
    """``transpose(a, b)``'s permutation."""
    a, b = (_axis(args[1], rank), _axis(args[2], rank)) if len(args) == 3 else (None, None)
    if a is None or b is None:
        return None
    axes = list(range(rank))
    axes[a], axes[b] = axes[b], axes[a]
    return axes


def _t_axes(rank: int, args) -> list[int] | None:
    return [1, 0] if rank == 2 else list(range(rank)) if rank < 2 else None


def _permute_axes(rank: int, args) -> list[int] | None:
    dims = list(args[1:])
    if len(dims) == 1 and isinstance(dims[0], TupleValue):
        dims = list(dims[0].elements)
    axes = [_axis(d, rank) for d in dims]
    return axes if len(axes) == rank and None not in axes and len(set(axes)) == rank else None  # type: ignore[return-value]


def _t(t: TensorValue, args, kwargs):
    """``x.t()``: a 2-d tensor transposed (a 0-d or 1-d one as it is)."""
    if len(t.sizes) < 2:  # type: ignore[arg-type]
        return t.sizes
    return (t.sizes[1], t.sizes[0]) if len(t.sizes) == 2 else None  # type: ignore[index]


def _transpose(t: TensorValue, args, kwargs):
    rank = len(t.sizes)  # type: ignore[arg-type]
    a, b = (_axis(args[1], rank), _axis(args[2], rank)) if len(args) == 3 else (None, None)
    if a is None or b is None:
        return (None,) * rank if len(args) == 3 else None
    sizes = list(t.sizes)  # type: ignore[arg-type]
    sizes[a], sizes[b] = sizes[b], sizes[a]
    return tuple(sizes)


def _permute(t: TensorValue, args, kwargs):
    dims = list(args[1:])
    if len(dims) == 1 and isinstance(dims[0], TupleValue):
        dims = list(dims[0].elements)
    rank = len(t.sizes)  # type: ignore[arg-type]
    if len(dims) != rank:
        return None
    axes = [_axis(d, rank) for d in dims]
    if None in axes or len(set(axes)) != len(axes):
        return (None,) * rank
    return tuple(t.sizes[a] for a in axes)  # type: ignore[index]


def _unsqueeze(t: TensorValue, args, kwargs):
    dim = _axis(_arg(args, kwargs, 1, "dim"), len(t.sizes), extra=1)  # type: ignore[arg-type]
    return None if dim is None else t.sizes[:dim] + (1,) + t.sizes[dim:]  # type: ignore[index,operator]


def _squeeze(t: TensorValue, args, kwargs):
    sizes = t.sizes
    given = _arg(args, kwargs, 1, "dim")
    if given is None:
        return None if None in sizes else tuple(s for s in sizes if s != 1)  # type: ignore[operator,union-attr]
    dim = _axis(given, len(sizes))  # type: ignore[arg-type]
    if dim is None or sizes[dim] is None:  # type: ignore[index]
        return None
    return sizes[:dim] + sizes[dim + 1 :] if sizes[dim] == 1 else sizes  # type: ignore[index,operator]


def _flatten(t: TensorValue, args, kwargs):
    sizes = t.sizes
    if not sizes:
        return (1,)
    start = _axis(_arg(args, kwargs, 1, "start_dim", Const(0)), len(sizes))
    end = _axis(_arg(args, kwargs, 2, "end_dim", Const(-1)), len(sizes))
    if start is None or end is None or end < start:
        return None
    middle = sizes[start : end + 1]
    merged = None if None in middle else math.prod(middle)  # type: ignore[arg-type]
    return sizes[:start] + (merged,) + sizes[end + 1 :]


def _pieces(interp, t: TensorValue, dim_value: object, parts: list[int] | None, size_each: int | None) -> object:
    """The tuple ``chunk`` / ``split`` return, where the number of pieces is known."""
    if t.sizes is None:
        return TOP
    dim = _axis(dim_value, len(t.sizes))
    if dim is None or t.sizes[dim] is None:
        return TOP
    total = t.sizes[dim]
    if parts is None:
        if not size_each or size_each <= 0:
            return TOP
        parts = [size_each] * (total // size_each) + ([total % size_each] if total % size_each else [])  # type: ignore[operator]
    elif sum(parts) != total:
        return TOP
    return TupleValue(tuple(derived(interp, t, t.sizes[:dim] + (p,) + t.sizes[dim + 1 :]) for p in parts))


def _chunk(interp, frame, args, kwargs, node) -> object:
    t = _tensor(args)
    if t is None:
        return TOP
    chunks = _arg(args, kwargs, 1, "chunks")
    dim = _arg(args, kwargs, 2, "dim", Const(0))
    if not (isinstance(chunks, Const) and type(chunks.value) is int and chunks.value > 0) or t.sizes is None:
        return TOP
    axis = _axis(dim, len(t.sizes))
    if axis is None or t.sizes[axis] is None:
        return TOP
    return _pieces(interp, t, dim, None, -(-t.sizes[axis] // chunks.value))  # type: ignore[operator]


def _split(interp, frame, args, kwargs, node) -> object:
    t = _tensor(args)
    if t is None:
        return TOP
    size = _arg(args, kwargs, 1, "split_size_or_sections", kwargs.get("split_size"))
    dim = _arg(args, kwargs, 2, "dim", Const(0))
    if isinstance(size, Const) and type(size.value) is int:
        return _pieces(interp, t, dim, None, size.value)
    sections = _ints(size) if isinstance(size, TupleValue) else (_ints(TupleValue(tuple(interp.items(size) or ()))) if isinstance(size, ListValue) else None)
    return _pieces(interp, t, dim, sections, None) if sections else TOP


def _reduction(dtype: str | None = None):
    def handler(interp, frame, args, kwargs, node) -> object:
        t = _tensor(args)
        if t is None:
            return TOP
        result_dtype = dtype if dtype is not None else None
        given = _arg(args, kwargs, 1, "dim")
        keep = _arg(args, kwargs, 2, "keepdim", Const(False))
        if given is None or given == Const(None):
            return derived(interp, t, (), dtype=result_dtype)
        if t.sizes is None or not isinstance(keep, Const) or not isinstance(keep.value, bool):
            return derived(interp, t, None, dtype=result_dtype)
        dims = given.elements if isinstance(given, TupleValue) else (given,)
        axes = {_axis(d, len(t.sizes)) for d in dims}
        if None in axes:
            return derived(interp, t, None, dtype=result_dtype)
        if keep.value:
            return derived(interp, t, tuple(1 if i in axes else s for i, s in enumerate(t.sizes)), dtype=result_dtype)
        return derived(interp, t, tuple(s for i, s in enumerate(t.sizes) if i not in axes), dtype=result_dtype)

    return handler


def matmul(interp, left: TensorValue, right: TensorValue) -> TensorValue:
    """``a @ b``: torch's matmul shapes (batch sizes broadcast)."""
    a, b = left.sizes, right.sizes
    if a is None or b is None or not a or not b:
        return derived(interp, left, None)
    if len(a) == 1 and len(b) == 1:
        return derived(interp, left, ())
    if len(b) == 1:
        return derived(interp, left, a[:-1])
    if len(a) == 1:
        return derived(interp, left, b[:-2] + b[-1:])
    batch_a, batch_b = a[:-2], b[:-2]
    width = max(len(batch_a), len(batch_b))
    batch_a = (1,) * (width - len(batch_a)) + batch_a
    batch_b = (1,) * (width - len(batch_b)) + batch_b
    batch: list[int | None] = []
    for x, y in zip(batch_a, batch_b):
        batch.append(y if x == 1 else x if y == 1 else x if x == y else None)
    return derived(interp, left, tuple(batch) + (a[-2], b[-1]))


def _matmul(interp, frame, args, kwargs, node) -> object:
    if len(args) == 2 and all(isinstance(a, TensorValue) for a in args):
        return matmul(interp, args[0], args[1])  # type: ignore[arg-type]
    return TOP


def _joined(stack: bool):
    """``torch.cat(ts, dim)`` / ``torch.stack(ts, dim)`` of tensors whose ranks agree."""

    def handler(interp, frame, args, kwargs, node) -> object:
        items = interp.items(_arg(args, kwargs, 0, "tensors", TOP))
        if not items or not all(isinstance(t, TensorValue) for t in items):
            return TOP if not items else interp.new_tensor()
        first = items[0]
        ranks = {t.rank for t in items}
        if None in ranks or len(ranks) != 1:
            return derived(interp, first, None)
        rank = first.rank + (1 if stack else 0)  # type: ignore[operator]
        dim = _axis(_arg(args, kwargs, 1, "dim", Const(0)), rank)
        if dim is None:
            return derived(interp, first, (None,) * rank)
        columns = list(zip(*(t.sizes for t in items)))  # type: ignore[misc]
        same = [c[0] if len(set(c)) == 1 else None for c in columns]
        if stack:
            return derived(interp, first, tuple(same[:dim]) + (len(items),) + tuple(same[dim:]))
        along = columns[dim]
        total = None if None in along else sum(along)  # type: ignore[arg-type]
        return derived(interp, first, tuple(same[:dim]) + (total,) + tuple(same[dim + 1 :]))

    return handler


def _pad(interp, frame, args, kwargs, node) -> object:
    t = _tensor(args)
    if t is None:
        return TOP
    pad = _ints(_arg(args, kwargs, 1, "pad", TOP))
    if t.sizes is None or pad is None or len(pad) % 2 or len(pad) // 2 > len(t.sizes):
        return derived(interp, t, None if t.sizes is None else (None,) * len(t.sizes))
    sizes = list(t.sizes)
    for i in range(len(pad) // 2):
        at = len(sizes) - 1 - i
        sizes[at] = None if sizes[at] is None else sizes[at] + pad[2 * i] + pad[2 * i + 1]  # type: ignore[operator]
    return derived(interp, t, tuple(sizes))


def index(interp, t: TensorValue, parts: list[tuple] | None) -> TensorValue:
    """``t[0]``, ``t[:, -1:]``, ``t[..., None]``: ``parts`` are ``("int",)``, ``("slice",
    start, stop, step)`` (ints or None, or another value for a bound the run does not know),
    ``("none",)``, ``("ellipsis",)``; None where an index is not one of these (a tensor, an
    unknown value)."""
    if t.sizes is None or parts is None:
        return derived(interp, t, None)
    used = sum(1 for p in parts if p[0] in ("int", "slice"))
    if used > len(t.sizes) or sum(1 for p in parts if p[0] == "ellipsis") > 1:
        return derived(interp, t, None)
    expanded: list[tuple] = []
    for part in parts:
        if part[0] == "ellipsis":
            expanded += [("slice", None, None, None)] * (len(t.sizes) - used)
        else:
            expanded.append(part)
    expanded += [("slice", None, None, None)] * (len(t.sizes) - sum(1 for p in expanded if p[0] in ("int", "slice")))
    sizes: list[int | None] = []
    axis = 0
    for part in expanded:
        if part[0] == "none":
            sizes.append(1)
            continue
        size = t.sizes[axis]
        axis += 1
        if part[0] == "int":
            continue
        _, start, stop, step = part
        if size is None or not all(b is None or type(b) is int for b in (start, stop, step)):
            # (Bounds the run does not know: the axis stays, its size unknown.)
            sizes.append(None)
            continue
        sizes.append(len(range(*slice(start, stop, step).indices(size))) if step != 0 else None)
    return derived(interp, t, tuple(sizes))


HANDLERS = {
    "torch.nn.Linear.forward": _layer_forward(_linear_sizes),
    "torch.nn.Conv1d.forward": _layer_forward(_conv_sizes(1)),
    "torch.nn.Conv2d.forward": _layer_forward(_conv_sizes(2)),
    "torch.nn.Conv3d.forward": _layer_forward(_conv_sizes(3)),
    "torch.nn.Embedding.forward": _embedding_forward,
    **{f"torch.nn.{name}.forward": _layer_forward(lambda interp, layer, x: x.sizes) for name in KEEPING_LAYERS},
    **{f"torch.nn.{name}": _keeping_layer(name) for name in KEEPING_LAYERS if name != "LayerNorm"},
    **{f"tensor.{name}": _elementwise for name in ELEMENTWISE},
    **{f"torch.{name}": _elementwise for name in ELEMENTWISE},
    **{f"torch.nn.functional.{name}": _elementwise for name in ELEMENTWISE},
    "tensor.transpose": _swapped(_transpose, _swap_axes),
    "torch.transpose": _swapped(_transpose, _swap_axes),
    "tensor.t": _swapped(_t, _t_axes),
    "torch.t": _swapped(_t, _t_axes),
    "tensor.permute": _swapped(_permute, _permute_axes),
    "torch.permute": _swapped(_permute, _permute_axes),
    "tensor.unsqueeze": _sized(_unsqueeze),
    "torch.unsqueeze": _sized(_unsqueeze),
    "tensor.squeeze": _sized(_squeeze),
    "torch.squeeze": _sized(_squeeze),
    "tensor.flatten": _sized(_flatten),
    "torch.flatten": _sized(_flatten),
    "tensor.chunk": _chunk,
    "torch.chunk": _chunk,
    "tensor.split": _split,
    "torch.split": _split,
    **{f"tensor.{name}": _reduction(INDEX_DTYPE if name.startswith("arg") else "torch.bool" if name in ("all", "any") else None) for name in REDUCTIONS},
    **{f"torch.{name}": _reduction(INDEX_DTYPE if name.startswith("arg") else "torch.bool" if name in ("all", "any") else None) for name in REDUCTIONS},
    "tensor.matmul": _matmul,
    "torch.matmul": _matmul,
    "torch.cat": _joined(stack=False),
    "torch.concat": _joined(stack=False),
    "torch.stack": _joined(stack=True),
    "torch.nn.functional.pad": _pad,
}
