"""The ``with`` statement's project context managers: what runs on entry and what on exit.

* an object whose class defines ``__enter__`` / ``__exit__``: ``__enter__`` runs on entry (its
  value is the ``as`` target), ``__exit__`` when the body ends, however it ends;
* a generator function decorated with ``@contextlib.contextmanager``: on entry its body runs
  up to its ``yield`` (the yielded value is the ``as`` target), on exit from there on: the rest
  of the ``try`` around the ``yield``, its ``else`` and ``finally``, then what follows. When the
  body raises, only the ``finally`` blocks around the ``yield`` run. A ``with`` around the
  ``yield`` (``with torch.no_grad(): yield``) is entered with the manager and exited with it.
  The ``yield`` must be the function's only one, written as a statement at its top level or in
  the body of ``try`` and ``with`` statements (the form such managers take: set, ``try:
  yield``, ``finally:`` restore); elsewhere (a loop, a branch) the manager is not followed and
  changes nothing.

Library contexts the overlays model (``torch.no_grad()``, ``autocast``) are the interpreter's
``grad_modes``; anything else a ``with`` enters is unknown and changes nothing.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from recompile_lint.analysis.execution.frames import Frame, Raised, Return
from recompile_lint.analysis.execution.values import TOP, Const, ContextValue, Function, GeneratorValue, Instance
from recompile_lint.models import Location

@dataclass
class _Level:
    """One statement list on the way from the function's body to its ``yield``: the list, the
    index of the statement holding the ``yield`` there, and the ``try`` or ``with`` that
    statement is (None where it is the ``yield`` itself)."""

    body: list[ast.stmt]
    index: int
    handler: ast.Try | ast.With | None


def yield_path(function_node: ast.AST) -> list[_Level] | None:
    """The levels from a generator function's body down to its one ``yield`` statement, or None
    where the ``yield`` is not where entry and exit can be told apart (see the module's note)."""
    own = [n for n in own_nodes(function_node) if isinstance(n, (ast.Yield, ast.YieldFrom))]
    if len(own) != 1 or not isinstance(own[0], ast.Yield):
        return None
    target = own[0]
    levels: list[_Level] = []
    body: list[ast.stmt] = function_node.body  # type: ignore[attr-defined]
    while True:
        for index, stmt in enumerate(body):
            if isinstance(stmt, ast.Expr) and stmt.value is target:
                levels.append(_Level(body, index, None))
                return levels
            if isinstance(stmt, (ast.Try, ast.With)) and any(n is target for s in stmt.body for n in ast.walk(s)):
                levels.append(_Level(body, index, stmt))
                body = stmt.body
                break
        else:
            return None


def own_nodes(node: ast.AST):
    """The nodes of a function's own code (not of the functions and classes it defines)."""
    pending = list(ast.iter_child_nodes(node))
    while pending:
        current = pending.pop()
        yield current
        if not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            pending.extend(ast.iter_child_nodes(current))


class Entered:
    """A project context manager the body of a ``with`` runs inside: ``exit`` ends it."""

    def __init__(self, interp, frame: Frame, manager: object):
        self.interp = interp
        self.frame = frame  # the frame of the ``with``
        self.manager = manager
        self.exit_method: object = None
        self.generator_frame: Frame | None = None
        self.levels: list[_Level] = []
        self.inner: dict[int, list[object]] = {}  # level -> what its ``with`` entered, in order
        self.given_at = None  # the ``yield`` or ``return`` that gave the ``as`` value

    def enter(self) -> object:
        """Run the entry; the value the ``as`` target gets."""
        interp, manager = self.interp, self.manager
        if isinstance(manager, Instance):
            self.exit_method = interp.class_attribute(manager.cls, "__exit__")
            enter = interp.class_attribute(manager.cls, "__enter__")
            if isinstance(enter, Function):
                interp.returned_at = None
                value = interp.call_function(enter, [manager], {}, self.frame)
                self.given_at = interp.returned_at
                return value
            return TOP
        return self._enter_generator(manager)

    def _enter_generator(self, generator: GeneratorValue) -> object:
        interp = self.interp
        function = generator.function
        node = interp.codes.get(function.code) if isinstance(function, Function) else None
        levels = yield_path(node) if node is not None else None
        made = interp.generator_frame(generator) if levels is not None else None
        if levels is None or made is None:
            return TOP
        frame = made[0]
        frame.loops = list(self.frame.loops)
        interp.executed.add(function.code)
        self.generator_frame, self.levels = frame, levels
        try:
            for number, level in enumerate(levels):
                interp.block(frame, level.body[: level.index])
                if isinstance(level.handler, ast.With):
                    self.inner[number] = entered = []
                    for item in level.handler.items:
                        value, _ = enter_one(interp, frame, interp.eval(frame, item.context_expr), entered)
                        if item.optional_vars is not None:
                            interp.assign(frame, item.optional_vars, value, level.handler)
        except Return:
            self._undo()
            raise Raised() from None  # the generator did not yield: ``with`` raises
        except BaseException:
            self._undo()
            raise
        last = levels[-1]
        self.given_at = interp.location(frame, last.body[last.index], "write")
        value_node = last.body[last.index].value.value  # type: ignore[attr-defined]
        return interp.eval(frame, value_node) if value_node is not None else Const(None)

    def exit(self, raised: bool) -> None:
        """Run the exit; ``raised``: the body ended by an exception (whose path stops there)."""
        interp = self.interp
        if isinstance(self.manager, Instance):
            if isinstance(self.exit_method, Function):
                details = [TOP, TOP, TOP] if raised else [Const(None), Const(None), Const(None)]
                interp.call_function(self.exit_method, [self.manager] + details, {}, self.frame)
            return
        frame, self.generator_frame = self.generator_frame, None
        if frame is None:
            return
        try:
            # From the ``yield`` outwards: the rest of each statement list, then the ``try`` or
            # ``with`` that holds it is left.
            for number in reversed(range(len(self.levels))):
                level = self.levels[number]
                if not raised:
                    interp.block(frame, level.body[level.index + 1 :])
                if number > 0:
                    self._leave(frame, number - 1, raised)
        except Return:
            pass  # the generator ended

    def _leave(self, frame: Frame, number: int, raised: bool) -> None:
        handler = self.levels[number].handler
        if isinstance(handler, ast.Try):
            if not raised:
                self.interp.block(frame, handler.orelse)
            self.interp.block(frame, handler.finalbody)
        for entered in reversed(self.inner.pop(number, [])):
            leave_one(self.interp, entered, raised)

    def _undo(self) -> None:
        """The entry failed: leave the ``with`` statements it entered."""
        for number in sorted(self.inner, reverse=True):
            for entered in reversed(self.inner.pop(number)):
                leave_one(self.interp, entered, True)
        self.generator_frame = None


def enter_one(interp, frame: Frame, manager: object, entered: list[object]) -> tuple[object, Location | None]:
    """Enter one manager of a ``with``; what was entered goes on ``entered``. The ``as`` value
    and the ``yield`` or ``return`` that gave it (a write of the value, as a helper's is)."""
    if isinstance(manager, ContextValue):
        interp.grad_modes.append(manager)
        entered.append(manager)
        return TOP, None
    if isinstance(manager, (Instance, GeneratorValue)):
        project = Entered(interp, frame, manager)
        value = project.enter()  # an entry that raises is not exited (it undoes its own)
        entered.append(project)
        return value, project.given_at
    return TOP, None


def leave_one(interp, entered: object, raised: bool) -> None:
    if isinstance(entered, Entered):
        entered.exit(raised)
        return
    modes = interp.grad_modes
    for index in range(len(modes) - 1, -1, -1):
        if modes[index] is entered:
            del modes[index]
            return
