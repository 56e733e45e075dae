"""The standard library a driver uses around its loop: ``contextlib.contextmanager`` (a project
generator a ``with`` enters and exits, ``contexts.py``), ``asyncio`` (``run``, ``gather``,
``create_task``, ``wait_for`` run the coroutines they get, in order, when called), ``argparse`` (the parsed namespace holds
each argument's default: the run without command-line arguments) and ``itertools`` (``count``,
``cycle``, ``repeat``, ``chain``, ``islice``, ``product``, ``accumulate``, ``pairwise``, as iterables ``Interpreter.items`` and
``Interpreter.element`` read); ``math`` functions of known numbers."""

from __future__ import annotations

import math

from recompile_lint.analysis.execution.values import TOP, Awaitable, Const, ContextFunction, Function, Instance, IteratorValue, TupleValue

PARSER = "argparse.ArgumentParser"


def parser(interp, frame, args, kwargs, node) -> object:
    return Instance(interp.library_class(PARSER), interp.heap.new("object", {"__arguments__": Const(True)}))


def add_argument(interp, frame, args, kwargs, node) -> object:
    """``add_argument("--lr", type=float, default=0.1)``: its destination and default."""
    if not args or not isinstance(args[0], Instance):
        return TOP
    target = args[0]
    names = [a.value for a in args[1:] if isinstance(a, Const) and isinstance(a.value, str)]
    if len(names) != len(args) - 1 or not names:
        interp.heap.write(target.addr, "__arguments__", Const(False), None)  # a destination unknown
        return TOP
    dest_value = kwargs.get("dest")
    if isinstance(dest_value, Const) and isinstance(dest_value.value, str):
        dest = dest_value.value
    else:
        long = [n for n in names if n.startswith("--")]
        dest = (long[0] if long else names[0]).lstrip("-").replace("-", "_")
    action = kwargs.get("action")
    action_name = action.value if isinstance(action, Const) else None
    if "default" in kwargs:
        default = kwargs["default"]
        convert = kwargs.get("type")
        if isinstance(default, Const) and isinstance(default.value, str) and convert is not None:
            default = interp.call(frame, convert, [default], {}, node)  # argparse converts a str default
    elif action_name == "store_true":
        default = Const(False)
    elif action_name == "store_false":
        default = Const(True)
    elif action is None or action_name in ("store", "count", "append"):
        default = Const(None)
    else:
        default = TOP
    interp.heap.write(target.addr, f"arg:{dest}", default, interp.location(frame, node, "write"))
    return TOP


def same(interp, frame, args, kwargs, node) -> object:
    """``add_argument_group()`` / ``add_mutually_exclusive_group()``: arguments land on the parser."""
    return args[0] if args else TOP


def set_defaults(interp, frame, args, kwargs, node) -> object:
    if args and isinstance(args[0], Instance):
        for key, value in kwargs.items():
            interp.heap.write(args[0].addr, f"arg:{key}", value, interp.location(frame, node, "write"))
    return Const(None)


def parse_args(interp, frame, args, kwargs, node) -> object:
    """The namespace of the defaults (the run without command-line arguments); if an
    argument's destination was unknown, a namespace whose missing attributes are top."""
    if not args or not isinstance(args[0], Instance):
        return TOP
    slots = interp.heap.slots(args[0].addr)
    namespace = Instance(interp.library_class("argparse.Namespace"), interp.heap.new("object"))
    for key, value in slots.items():
        if isinstance(key, str) and key.startswith("arg:"):
            interp.heap.write(namespace.addr, key[4:], value, interp.heap.origin(args[0].addr, key))
    return namespace


def parse_known_args(interp, frame, args, kwargs, node) -> object:
    namespace = parse_args(interp, frame, args, kwargs, node)
    return TupleValue((namespace, interp.new_list([]))) if namespace is not TOP else TOP


def accumulate(interp, frame, args, kwargs, node) -> object:
    """``accumulate(xs)`` and ``accumulate(xs, initial=v)``: running sums (``Interpreter.items``
    adds them). A function of its own is top."""
    if len(args) != 1 or set(kwargs) - {"initial"}:
        return TOP
    initial = kwargs.get("initial", Const(None))
    return IteratorValue("accumulate", (args[0], initial))


def starmap(interp, frame, args, kwargs, node) -> object:
    """``starmap(f, pairs)``: ``f(*pair)`` for each item (``Interpreter.mapped``)."""
    if kwargs or len(args) != 2:
        return TOP
    return interp.mapped(frame, args[0], [args[1]], node, star=True)


def _iterator(kind: str, arity: tuple[int, int]):
    def handler(interp, frame, args, kwargs, node) -> object:
        if kwargs or not arity[0] <= len(args) <= arity[1]:
            return TOP
        return IteratorValue(kind, tuple(args))

    return handler


# ``math`` functions of known numbers: the value Python computes (a schedule's rescale,
# ``scale *= 0.2 * math.log(new / old) + 1``). Anything else, or an error, is top.
MATH_FUNCTIONS = ("log", "log2", "log10", "exp", "sqrt", "pow", "cos", "sin", "tan", "floor", "ceil", "fabs")


def _math(name: str):
    function = getattr(math, name)

    def handler(interp, frame, args, kwargs, node) -> object:
        numbers = [a.value for a in args if isinstance(a, Const) and type(a.value) in (int, float)]
        if kwargs or not args or len(numbers) != len(args):
            return TOP
        try:
            return Const(function(*numbers))
        except (ValueError, TypeError, OverflowError):
            return TOP

    return handler


def contextmanager(interp, frame, args, kwargs, node) -> object:
    """``@contextlib.contextmanager`` on a project function."""
    if len(args) == 1 and not kwargs and isinstance(args[0], Function):
        return ContextFunction(args[0])
    return TOP


def run_coroutine(interp, frame, args, kwargs, node) -> object:
    """``asyncio.run(main())``: the coroutine's result."""
    return interp.awaited(frame, args[0]) if args else TOP


def gather(interp, frame, args, kwargs, node) -> object:
    """``await asyncio.gather(a(), b())``: each run in turn, the tuple of their results."""
    return Awaitable(TupleValue(tuple(interp.awaited(frame, a) for a in args)))


def task(interp, frame, args, kwargs, node) -> object:
    """``asyncio.create_task(c())`` / ``ensure_future`` / ``wait_for(c(), t)``: run now."""
    return Awaitable(interp.awaited(frame, args[0])) if args else TOP


HANDLERS = {
    "asyncio.run": run_coroutine,
    "asyncio.gather": gather,
    "asyncio.create_task": task,
    "asyncio.ensure_future": task,
    "asyncio.wait_for": task,
    "asyncio.sleep": lambda interp, frame, args, kwargs, node: Awaitable(Const(None)),
    "contextlib.contextmanager": contextmanager,
    **{f"math.{name}": _math(name) for name in MATH_FUNCTIONS},
    PARSER: parser,
    f"{PARSER}.add_argument": add_argument,
    f"{PARSER}.add_argument_group": same,
    f"{PARSER}.add_mutually_exclusive_group": same,
    f"{PARSER}.set_defaults": set_defaults,
    f"{PARSER}.parse_args": parse_args,
    f"{PARSER}.parse_known_args": parse_known_args,
    "itertools.count": _iterator("count", (0, 2)),
    "itertools.cycle": _iterator("cycle", (1, 1)),
    "itertools.repeat": _iterator("repeat", (1, 2)),
    "itertools.chain": _iterator("chain", (0, 64)),
    "itertools.islice": _iterator("islice", (2, 4)),
    "itertools.product": _iterator("product", (1, 8)),
    "itertools.accumulate": accumulate,
    "itertools.starmap": starmap,
    "itertools.pairwise": _iterator("pairwise", (1, 1)),
}
