"""Tensors: the factories give a ``TensorValue`` (sizes when the arguments are known),
``.item()`` / ``.tolist()`` are data, in-place methods keep the tensor itself."""

from __future__ import annotations

from recompile_lint.analysis.execution.values import TOP, Const, Sym, TensorValue, TupleValue

FACTORIES = ("zeros", "ones", "empty", "randn", "rand", "full", "tensor", "arange", "randint", "zeros_like", "ones_like", "randn_like", "empty_like", "as_tensor", "from_numpy", "linspace", "eye")


def _sizes(args: list[object]) -> tuple[int | None, ...] | None:
    if len(args) == 1 and isinstance(args[0], TupleValue):
        args = list(args[0].elements)
    if all(isinstance(a, Const) and type(a.value) is int for a in args):
        return tuple(a.value for a in args)  # type: ignore[union-attr]
    return None


def _factory(name: str):
    def handler(interp, frame, args, kwargs, node) -> object:
        sizes = _sizes(args) if name in ("zeros", "ones", "empty", "randn", "rand") else None
        if name == "tensor" and args and isinstance(args[0], Const):
            sizes = ()
        dtype = kwargs.get("dtype")
        requires = kwargs.get("requires_grad")
        return interp.new_tensor(
            sizes=sizes,
            dtype=dtype.name if hasattr(dtype, "name") else "",
            requires_grad=requires.value if isinstance(requires, Const) and isinstance(requires.value, bool) else None,
        )

    return handler


def _data(interp, frame, args, kwargs, node) -> object:
    return Sym("data", name="item")


def _same(interp, frame, args, kwargs, node) -> object:
    """An in-place method: the tensor stays the same object."""
    return args[0] if args and isinstance(args[0], TensorValue) else TOP


def _random(interp, frame, args, kwargs, node) -> object:
    return Sym("data", name="random")


IN_PLACE = ("add_", "sub_", "mul_", "div_", "zero_", "fill_", "copy_", "clamp_", "requires_grad_", "uniform_", "normal_")

HANDLERS = {
    **{f"torch.{name}": _factory(name) for name in FACTORIES},
    "torch.nn.Parameter": lambda interp, frame, args, kwargs, node: interp.new_tensor(),
    "tensor.item": _data,
    "tensor.tolist": _data,
    **{f"tensor.{name}": _same for name in IN_PLACE},
    "random.random": _random,
    "random.randint": _random,
    "random.choice": _random,
    "random.uniform": _random,
    "torch.manual_seed": lambda interp, frame, args, kwargs, node: Const(None),
}
