"""Frames and the control flow between them: one frame per running function, module or class
body, and the exceptions that carry ``return``, ``break``, ``continue`` and ``raise`` out."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Frame:
    """A running body: its file, its locals' store, the stores it closes over and its globals."""

    path: str
    qualname: str  # "" for a module body, ``Class`` for a class body, ``f`` / ``C.m`` for a function
    locals: int  # heap address of the locals
    globals: int  # heap address of the module's globals
    closure: tuple[int, ...] = ()
    depth: int = 0
    kind: str = "function"  # function, module, class
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    returns: list[object] = field(default_factory=list)
    loops: list[tuple[str, int]] = field(default_factory=list)  # (loop id, iteration) of the symbolic loops around
    yields: list[object] | None = None  # a generator's body being run: the values it yielded so far
    statement: object = None  # the ``ast.stmt`` running now (a compound one while its header runs)


@dataclass(frozen=True)
class FrameCall:
    """The call that made a function's frame, as written: the calling frame and node, the
    function, how many arguments precede the written ones (a receiver, a partial's), and the
    values the node passed by position and by name."""

    caller: Frame
    node: object  # the ``ast.Call``
    function: object  # the ``Function`` called
    offset: int
    values: list[object]
    keywords: dict[str, object]


class Return(Exception):
    def __init__(self, value: object):
        self.value = value


class Break(Exception):
    pass


class Continue(Exception):
    pass


class Raised(Exception):
    """A ``raise``: the path stops here."""


class OutOfBudget(Exception):
    """The entry used its steps: what it found so far stands."""


class GeneratorFull(Raised):
    """A generator yielded more values than a run follows one by one: that path stops there."""
