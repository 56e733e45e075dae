"""Abstract values: what the interpreter knows of a Python value at one point of a run.

Every value is a frozen dataclass, so two values compare by what is known of them. Objects
whose state changes (instances, lists, dicts, classes' namespaces) are a reference to the heap
(``heap.py``) by address; the value itself never changes.

``definitely_different`` is the only question the cache entries ask: it answers True for two
different concrete values or two different iteration symbols, and never for ``TOP`` or a
symbol whose value nobody knows.
"""

from __future__ import annotations

from dataclasses import dataclass


# The names ``torch.nn.Module`` is known by in a class's bases.
NN_MODULE = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})


@dataclass(frozen=True)
class Top:
    """Whatever the interpreter cannot know."""

    def __repr__(self) -> str:
        return "TOP"


TOP = Top()


@dataclass(frozen=True)
class Const:
    """A concrete Python value (int, float, str, bool, None, bytes)."""

    value: object

    @property
    def kind(self) -> str:
        value = self.value
        if value is None:
            return "none"
        return type(value).__name__


@dataclass(frozen=True)
class Sym:
    """An unknown value with where it came from.

    ``origin``: ``parameter`` (``name``), ``iteration`` (the ``k``-th iteration of loop
    ``loop``: a fresh value per iteration), ``data`` (``.item()``, ``.tolist()``, ``len(batch)``,
    a random draw), ``element`` (an item of an iterable whose items are not known).
    ``kind`` is the Python type when known (``int`` for a ``range`` variable).
    """

    origin: str
    name: str = ""
    loop: str = ""
    k: int = -1
    kind: str = ""


def iteration(loop: str, k: int, kind: str = "") -> Sym:
    return Sym("iteration", loop=loop, k=k, kind=kind)


@dataclass(frozen=True)
class TensorValue:
    """A tensor: its rank and sizes (an int, or None where unknown), dtype, device,
    ``requires_grad``, where known. ``addr`` keeps an in-place update the same tensor."""

    addr: int
    sizes: tuple[int | None, ...] | None = None
    dtype: str = ""
    device: str = ""
    requires_grad: bool | None = None
    parameter: bool = False  # an ``nn.Parameter`` (its shapes stay static under automatic dynamic)
    # Its strides, where known: ``contiguous`` (a factory's, ``.contiguous()``), ``transposed``
    # (two dims of a contiguous tensor swapped: ``.t()``, ``.transpose``, ``.permute``).
    layout: str = ""

    @property
    def rank(self) -> int | None:
        return len(self.sizes) if self.sizes is not None else None


@dataclass(frozen=True)
class ClassValue:
    """A class of the project: its qualname, file, bases, and its namespace on the heap."""

    path: str
    qualname: str
    addr: int
    bases: tuple[object, ...] = ()


@dataclass(frozen=True)
class Instance:
    """An instance: its class (a ``ClassValue``) and its attributes on the heap at ``addr``."""

    cls: ClassValue
    addr: int


@dataclass(frozen=True)
class CodeRef:
    """A function's code: file, qualname, and the line of its ``def`` (or lambda)."""

    path: str
    qualname: str
    line: int


@dataclass(frozen=True)
class Function:
    """A project function: its code, the cells it closes over, its defaults' values."""

    code: CodeRef
    closure: tuple[int, ...] = ()  # heap addresses of the enclosing frames' locals, innermost first
    defaults: tuple[object, ...] = ()
    kw_defaults: tuple[tuple[str, object], ...] = ()
    module: str = ""  # file whose globals it reads


@dataclass(frozen=True)
class BoundMethod:
    """``obj.method``: the function and the receiver bound as its first argument."""

    function: object
    receiver: object


@dataclass(frozen=True)
class Partial:
    """``functools.partial(func, *args, **keywords)``; also a ``torch.func`` transform of a
    function (``torch.vmap(f)``: ``transform`` names it), which runs the function as it is."""

    function: object
    args: tuple[object, ...] = ()
    keywords: tuple[tuple[str, object], ...] = ()
    transform: str = ""


@dataclass(frozen=True)
class Property:
    """``@property``: its getter and setter functions."""

    getter: object
    setter: object = None


@dataclass(frozen=True)
class StaticMethod:
    function: object


@dataclass(frozen=True)
class ClassMethod:
    function: object


@dataclass(frozen=True)
class ListValue:
    """A list (or a set): its elements on the heap at ``addr``."""

    addr: int


@dataclass(frozen=True)
class DictValue:
    """A dict: its items on the heap at ``addr`` (keys are concrete Python values)."""

    addr: int


@dataclass(frozen=True)
class TupleValue:
    elements: tuple[object, ...]


@dataclass(frozen=True)
class RangeValue:
    """``range(start, stop, step)`` with concrete or symbolic bounds."""

    start: object
    stop: object
    step: object


@dataclass(frozen=True)
class ModuleValue:
    """A module: a project file (``path``) or a library module or object by dotted name
    (``torch``, ``torch.nn.Module``, ``functools.partial``), which the overlays model."""

    name: str
    path: str = ""


@dataclass(frozen=True)
class CompiledValue:
    """What ``torch.compile`` returns: the wrapped function or module, the compile site
    (file, line) and its options as written."""

    target: object
    path: str
    line: int
    options: tuple[tuple[str, str], ...] = ()
    # (file, line) of the calls being run when it was made: a project wrapper's call
    # (``compiled(run_layer, ...)``) is the compile site of what its body compiles.
    callers: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class CoroutineValue:
    """An ``async def`` function's call, not run yet: it runs when awaited, or when
    ``asyncio.run`` / ``gather`` / ``create_task`` gets it (``Interpreter.awaited``)."""

    function: object
    args: tuple[object, ...]
    kwargs: tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class Awaitable:
    """What an awaited library call gives once it is awaited (``asyncio.gather(...)``: the
    tuple of its coroutines' results, run when the call was made)."""

    value: object


@dataclass(frozen=True)
class ContextFunction:
    """A project generator function ``@contextlib.contextmanager`` decorates: a call makes the
    generator a ``with`` statement enters and exits (``contexts.py``)."""

    function: object


@dataclass(frozen=True)
class ContextValue:
    """A context manager the overlays model (``torch.no_grad()``, ``autocast``)."""

    kind: str
    argument: object = None


def is_top(value: object) -> bool:
    return isinstance(value, Top)


def kind_of(value: object) -> str:
    """The Python type of a value where known ("" where not)."""
    if isinstance(value, Const):
        return value.kind
    if isinstance(value, Sym):
        return value.kind
    if isinstance(value, TensorValue):
        return "tensor"
    return ""


def definitely_different(a: object, b: object) -> bool:
    """Whether two values cannot be equal: two different concrete values, or two iterations of
    a loop. Top, data and parameters never are: nothing says they differ."""
    if isinstance(a, Const) and isinstance(b, Const):
        if type(a.value) is not type(b.value):
            # ``1 == 1.0 == True``: Dynamo's guard compares values (and types it checks apart).
            return a.value != b.value
        return a.value != b.value
    if isinstance(a, Sym) and isinstance(b, Sym):
        return a.origin == b.origin == "iteration" and a.loop == b.loop and a.k != b.k
    return False


def hashable(value: object) -> bool:
    """A known value whose equality with others is known (a set can hold it): a constant, or a
    tuple of them."""
    if isinstance(value, Const):
        return True
    return isinstance(value, TupleValue) and all(hashable(e) for e in value.elements)


def join(a: object, b: object) -> object:
    """The value after two branches that gave ``a`` and ``b``: one of them when equal, else top."""
    return a if a == b else TOP


@dataclass(frozen=True)
class SuperValue:
    """``super()`` in a method of ``start``, bound to ``receiver``."""

    start: ClassValue
    receiver: object


@dataclass(frozen=True)
class IteratorValue:
    """``enumerate(x)``, ``zip(a, b)``, ``d.items()``: an iterable built from others."""

    kind: str
    sources: tuple[object, ...]


@dataclass(frozen=True)
class GeneratorValue:
    """A generator function's call, not run yet: it runs when iterated (``Interpreter.yielded``).
    ``addr`` makes each call its own generator; ``depth`` is the caller's call depth."""

    function: object
    args: tuple[object, ...]
    kwargs: tuple[tuple[str, object], ...]
    addr: int
    depth: int = 0
