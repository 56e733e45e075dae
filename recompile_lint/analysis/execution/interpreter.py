"""The interpreter: runs a project's Python on abstract values, statement by statement.

It walks ``ast`` trees. What it knows it computes (concrete values, project functions and
classes, the libraries the overlays model); what it does not know is ``TOP``, never a guess.

* ``if``: the taken branch when the test is known, else both, one after the other on the same
  heap with their writes undone in between, and joined (``Heap.open/close/merge``);
* ``for`` / ``while``: an iterable of at most ``CONCRETE_ITERATIONS`` known items runs item by
  item; any other loop runs ``LOOP_ITERATIONS`` iterations, the loop variable a fresh iteration
  symbol each time. A slot the body changes from one iteration to the next (a counter:
  ``step += 1``) is found by running the body twice first without telling the caches, and
  holds an iteration symbol at the start of each iteration. A ``while`` loop that ends on known
  values within ``CONCRETE_ITERATIONS`` (a counter, a ``break``) runs iteration by iteration;
* an ``async def`` function's call runs its body when it is awaited (or handed to
  ``asyncio.run``, ``gather``, ``create_task``), a coroutine never awaited never runs;
* a generator function's call runs its body when it is iterated, each yielded value bound in
  turn (``yielded``);
* dataclasses and named tuples bind their fields, an Enum's members are objects of their own,
  a function's ``__defaults__`` can be written (``instantiate``, ``function_store``);
* ``is`` / ``is not`` are known for one object on the heap against another, ``None`` against
  a known value or a symbol of known type, and two values known to differ (two iterations');
* calls into project code are followed ``max_depth`` deep; a run has ``steps`` to spend;
* each call of a compiled object is told to the ``observer`` (the cache entries, ``cache.py``)
  before its body runs and when it ends; while compiled code runs, so are its reads (names,
  attributes, items), calls and frames, from which ``dynamo.py`` reads the guards it installs.
"""

from __future__ import annotations

import ast
from dataclasses import replace
import itertools
import operator
from typing import Callable, Protocol

from recompile_lint.analysis.execution.builtins import NAMES as BUILTIN_NAMES
from recompile_lint.analysis.execution.contexts import enter_one, leave_one, own_nodes
from recompile_lint.analysis.execution.frames import Break, Continue, Frame, FrameCall, GeneratorFull, OutOfBudget, Raised, Return
from recompile_lint.analysis.execution.heap import Heap
from recompile_lint.analysis.execution.overlays import TABLE, nn_containers, nn_module, pytest_marks, records, torch_compile, torch_shapes
from recompile_lint.analysis.execution.overlays.torch_tensor import arithmetic as tensor_arithmetic
from recompile_lint.analysis.execution.overlays.torch_tensor import attribute as tensor_attribute
from recompile_lint.analysis.execution.values import (
    NN_MODULE,
    TOP,
    BoundMethod,
    ClassMethod,
    ClassValue,
    CodeRef,
    CompiledValue,
    Const,
    Awaitable,
    ContextFunction,
    ContextValue,
    CoroutineValue,
    DictValue,
    Function,
    GeneratorValue,
    Instance,
    IteratorValue,
    ListValue,
    ModuleValue,
    Partial,
    Property,
    RangeValue,
    StaticMethod,
    SuperValue,
    Sym,
    TensorValue,
    TupleValue,
    definitely_different,
    hashable,
    iteration,
    join,
)
from recompile_lint.analysis.facts import dotted_name, expects_error
from recompile_lint.models import Location

LOOP_ITERATIONS = 3
CONCRETE_ITERATIONS = 16  # a known iterable this long runs item by item (twice the recompile limit)
MAX_DEPTH = 8
MAX_MODULES = 16  # modules one run imports; past them an import is top (a run's cost stays bounded)
STEPS = 5_000
# Steps an entry gets on top of ``STEPS`` once it has made a compiled call: a driver that
# reaches compiled code follows it through a warm-up or a schedule (measured on a training
# script: its stage changes came after 40,000 steps); one that never does stops at ``STEPS``.
DRIVING_STEPS = 45_000
MAX_SCANNED = 50_000  # heap slots an in-place change of a tensor's state looks through
_MISSING = object()
NOT_CACHED = object()  # what ``Observer.cached_call`` answers for a call that runs its body

_BINARY: dict[type, Callable[[object, object], object]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
}  # fmt: skip
_COMPARE: dict[type, Callable[[object, object], object]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
}  # fmt: skip
# Arithmetic that keeps an iteration symbol an iteration symbol (``step + 1``, ``2 * epoch``).
_SHIFTING = (ast.Add, ast.Sub, ast.Mult)


def _injective(op: ast.operator, sym_left: bool, other: int | float, kind: str) -> str | None:
    """The kind of ``k <op> c`` (or ``c <op> k``) where it takes a different value for each
    iteration ``k``, as a shift does: ``k / c`` and ``c / k`` (a float), ``c ** k`` for a base
    above 0 other than 1; None for any other operation (``k // 2``, ``k % 3`` repeat)."""
    if isinstance(op, ast.Div) and other != 0:
        return "float"
    if isinstance(op, ast.Pow) and not sym_left and other > 0 and other != 1:
        return "float" if "float" in (kind, type(other).__name__) else kind
    return None
_OBJECTS = (Instance, Function, ClassValue, ModuleValue, TensorValue, ListValue, DictValue, TupleValue, CompiledValue, BoundMethod, Partial, RangeValue)
# Values whose every part is known: two that are unequal are two objects.
_KNOWN_OBJECTS = (Function, ClassValue, ModuleValue, CompiledValue, BoundMethod, Partial)


class Project(Protocol):
    """What the interpreter needs of the project: trees and where imports lead."""

    def tree(self, path: str) -> ast.Module | None: ...

    def module_path(self, name: str, from_path: str) -> str | None: ...

    def module_name(self, path: str) -> tuple[str, bool]: ...


class Observer:
    """What a run tells (each method does nothing here): each compiled call
    (``on_compiled_call``, then ``on_compiled_end`` when its body has run), and while compiled
    code runs, what it reads, calls and inlines (the guards Dynamo installs: ``dynamo.py``)."""

    def on_compiled_call(self, interpreter: "Interpreter", compiled: CompiledValue, function: Function, bound: dict[str, object], where: Location) -> None:
        pass

    def on_compiled_end(self, interpreter: "Interpreter") -> None:
        pass

    def cached_call(self, interpreter: "Interpreter", compiled: CompiledValue, function: Function, bound: dict[str, object], where: Location, told: bool) -> object:
        """A call whose guards all pass on a cache entry whose body changed nothing the caller
        can see: what that body returned (the call is then not run again, and counted where
        ``told``); else ``NOT_CACHED``."""
        return NOT_CACHED

    def on_read(self, interpreter: "Interpreter", frame: Frame, node: ast.expr, value: object) -> None:
        pass

    def on_call(self, interpreter: "Interpreter", frame: Frame, node: ast.Call, callee: object, args: list[object], kwargs: dict[str, object]) -> None:
        pass

    def on_frame(self, interpreter: "Interpreter", frame: Frame, function: Function, args: list[object], bound: dict[str, object], caller: Frame | None) -> None:
        pass

    def on_attribute(self, interpreter: "Interpreter", frame: Frame, node: ast.Attribute, base: object) -> None:
        pass

    def on_item(self, interpreter: "Interpreter", frame: Frame, node: ast.Subscript, base: object, key: object) -> None:
        pass

    def on_test(self, interpreter: "Interpreter", frame: Frame, test: ast.expr, truth: bool | None) -> None:
        pass

    def on_break(self, interpreter: "Interpreter", frame: Frame, node: ast.AST | None = None) -> None:
        """Traced code in ``frame`` breaks the graph at ``node`` (it calls a disabled function)."""

    def own_frame(self, interpreter: "Interpreter", callee: Function) -> CompiledValue | None:
        """What traced code's call of ``callee`` is when Dynamo runs that function as a frame of
        its own (it breaks the graph: its caller breaks at the call), or None: inlined."""
        return None

    def on_reset(self, interpreter: "Interpreter") -> None:
        """``torch._dynamo.reset()`` ran (outside compiled code): every cache is emptied."""

    def on_iterate(self, interpreter: "Interpreter", frame: Frame, stmt: ast.For | ast.AsyncFor | ast.comprehension, index: int, scope: Frame | None = None) -> None:
        """Traced code's ``for`` loop (or a comprehension's generator, whose target lives in
        ``scope``) over known items bound its target to item ``index``."""


class Interpreter:
    """One run: a heap, the modules imported so far, the steps left."""

    MISSING = _MISSING  # what ``class_attribute`` answers for a name no class of the MRO holds

    def __init__(self, project: Project, observer: Observer | None = None, steps: int = STEPS, max_depth: int = MAX_DEPTH):
        self.project = project
        self.observer = observer
        self.heap = Heap()
        self.steps = steps
        self.driving_steps = DRIVING_STEPS  # granted once, at the first compiled call run out of
        self.compiled_calls = 0  # compiled calls this run made (outside a loop's probe)
        self.max_depth = max_depth
        self.modules: dict[str, ModuleValue] = {}
        self.globals: dict[str, int] = {}  # file -> heap address of its globals
        self.codes: dict[CodeRef, ast.AST] = {}
        self.executed: set[CodeRef] = set()
        self.probing = 0  # >0 while a loop's body runs to find what it changes: calls are not told
        self.compiling = 0  # >0 while a compiled body runs (``torch.compiler.is_compiling()``)
        self.call_loops = 0  # symbolic loops around the compiled call being made (its caller's)
        self.compiled_outcome: tuple[object, bool] = (_MISSING, True)  # the last compiled body's result, and whether it wrote to older stores
        self.returned_at: Location | None = None  # the ``return`` statement run last
        self.returned_from: dict[tuple[int, str], Location] = {}  # (locals, name) -> the return that gave its value
        self.call_writes: dict[str, list[Location]] = {}  # parameter -> writes of what the compiled call passes
        self.call_given: dict[str, str] | None = None  # parameter -> how the compiled call gives it (``given_parameters``)
        self.call_lines: list[tuple[str, int]] = []  # (file, line) of each call being run, outermost first
        self._calling: tuple[Frame, ast.AST, list[object], dict[str, object]] | None = None  # the call being made, as written
        self.frame_calls: dict[int, FrameCall] = {}  # a function frame's locals -> the call that made it
        self.grad_modes: list[object] = []  # the grad-mode and autocast contexts entered
        self.decorated_modes: dict[CodeRef, ContextValue] = {}  # functions a grad-mode context decorates
        # A test function's ``@pytest.mark.parametrize`` marks: (names, values) each, as written
        # from the function outwards (``overlays.pytest_marks``).
        self.parametrized: dict[CodeRef, list[tuple[object, object]]] = {}
        # Functions a decorator the run does not model made unknown (``@hydra.main(...)``,
        # ``@click.command()``, a test's skip marker), by (file, qualified name): what they
        # were before it, for the entry to run as a driver.
        self.undecorated: dict[tuple[str, str], Function] = {}
        self.traced: set[tuple[str, int]] = set()  # (file, line) of expressions compiled code ran
        self.ran: set[tuple[str, int]] = set()  # (file, line) of every statement the run executed
        # (file, line) of each compile call run (and of the calls it ran under) -> whether it
        # was disabled (``disable=True``, known), each time it ran.
        self.compile_sites: dict[tuple[str, int], set[bool]] = {}
        self.default_dtype = "torch.float32"  # ``torch.set_default_dtype``; "" when unknown
        self._tensors = 0
        self._generators: dict[CodeRef, bool] = {}
        # Whether a function's node holds a ``yield`` of its own, by node: a walk of its body,
        # the same in every run over the same trees (``Execution`` shares it between them).
        self.generator_nodes: dict[ast.AST, bool] = {}
        self._function_stores: dict[Function, int] = {}
        self._library_classes: dict[str, ClassValue] = {}
        self._yielded: dict[int, tuple[list[object], bool]] = {}  # generator -> (values, all of them)
        self._exhausted: set[int] = set()  # generators a loop ran to their end
        self.symbolic_loops = 0  # loops run on iteration symbols so far (a generator's values are then not all known)

    # ---- bookkeeping -------------------------------------------------------------------

    def tick(self) -> None:
        self.steps -= 1
        if self.steps < 0:
            if self.compiled_calls and self.driving_steps:
                self.steps, self.driving_steps = self.driving_steps, 0
                return
            raise OutOfBudget()

    def new_tensor(self, **known: object) -> TensorValue:
        self._tensors += 1
        return TensorValue(addr=-self._tensors, **known)  # type: ignore[arg-type]

    @staticmethod
    def location(frame: Frame, node: ast.AST, role: str, note: str = "") -> Location:
        line = getattr(node, "lineno", 0)
        column = getattr(node, "col_offset", 0) + 1
        return Location(frame.path, line, column, role, note, getattr(node, "end_lineno", line) or line, (getattr(node, "end_col_offset", None) or 0) + 1)

    # ---- modules -----------------------------------------------------------------------

    def run_module(self, path: str, as_main: bool = False) -> object:
        """Run a file's top level once (as ``__main__`` when asked); its module value."""
        if path in self.modules:
            return self.modules[path]
        if len(self.modules) >= MAX_MODULES:
            return TOP
        tree = self.project.tree(path)
        name, _ = self.project.module_name(path)
        if tree is None:
            return TOP
        addr = self.heap.new("module", {"__name__": Const("__main__" if as_main else name)})
        module = ModuleValue(name, path)
        self.modules[path] = module
        self.globals[path] = addr
        frame = Frame(path, "", addr, addr, kind="module")
        try:
            self.block(frame, tree.body)
        except (Return, Break, Continue, Raised):
            pass
        return module

    def import_module(self, frame: Frame, name: str) -> object:
        path = self.project.module_path(name, frame.path)
        if path is None:
            return ModuleValue(name)
        return self.run_module(path)

    def absolute(self, frame: Frame, module: str | None, level: int) -> str:
        if not level:
            return module or ""
        own, is_package = self.project.module_name(frame.path)
        parts = own.split(".") if own else []
        drop = level - 1 if is_package else level
        base = parts[: len(parts) - drop] if drop <= len(parts) else []
        return ".".join(base + ([module] if module else []))

    def module_attribute(self, module: ModuleValue, attr: str, frame: Frame | None = None) -> object:
        if not module.path:
            return ModuleValue(f"{module.name}.{attr}")
        value = self.heap.read(self.globals.get(module.path, -1), attr, _MISSING)
        if value is not _MISSING:
            return value
        path = self.project.module_path(f"{module.name}.{attr}", module.path)
        return self.run_module(path) if path is not None else TOP

    # ---- statements --------------------------------------------------------------------

    def block(self, frame: Frame, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.statement(frame, stmt)

    def statement(self, frame: Frame, stmt: ast.stmt) -> None:
        self.tick()
        self.ran.add((frame.path, stmt.lineno))
        frame.statement = stmt
        if isinstance(stmt, ast.Expr):
            self.eval(frame, stmt.value)
        elif isinstance(stmt, ast.Assign):
            self.returned_at = None
            value = self.eval(frame, stmt.value)
            for target in stmt.targets:
                self.assign(frame, target, value, stmt)
            if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                # ``x = helper(...)``: the ``return`` that gave the value (a write of its own).
                key = (frame.locals, stmt.targets[0].id)
                if isinstance(stmt.value, ast.Call) and self.returned_at is not None:
                    self.returned_from[key] = self.returned_at
                else:
                    self.returned_from.pop(key, None)
        elif isinstance(stmt, ast.AugAssign):
            current = self.eval(frame, _load(stmt.target))
            value = self.eval(frame, stmt.value)
            self.assign(frame, stmt.target, self.binary(stmt.op, current, value, in_place=True), stmt)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.assign(frame, stmt.target, self.eval(frame, stmt.value), stmt)
        elif isinstance(stmt, ast.If):
            test = self.eval(frame, stmt.test)
            if self.compiling and self.observer is not None and not self.probing:
                self.observer.on_test(self, frame, stmt.test, self.truth(test))  # the branch traced code takes
            self.branch(frame, test, stmt.body, stmt.orelse)
        elif isinstance(stmt, ast.For):
            self.loop_for(frame, stmt)
        elif isinstance(stmt, ast.While):
            self.loop_while(frame, stmt)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.store_name(frame, stmt.name, self.define_function(frame, stmt), self.location(frame, stmt, "write"))
        elif isinstance(stmt, ast.ClassDef):
            self.store_name(frame, stmt.name, self.define_class(frame, stmt), self.location(frame, stmt, "write"))
        elif isinstance(stmt, ast.Return):
            value = self.eval(frame, stmt.value) if stmt.value is not None else Const(None)
            self.returned_at = self.location(frame, stmt, "write")
            raise Return(value)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                module = self.import_module(frame, alias.name)
                if alias.asname:
                    self.store_name(frame, alias.asname, module, None)
                else:
                    head = alias.name.split(".")[0]
                    self.store_name(frame, head, self.import_module(frame, head) if head != alias.name else module, None)
        elif isinstance(stmt, ast.ImportFrom):
            self.import_from(frame, stmt)
        elif isinstance(stmt, ast.Global):
            frame.declared_global.update(stmt.names)
        elif isinstance(stmt, ast.Nonlocal):
            frame.declared_nonlocal.update(stmt.names)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            self.with_block(frame, stmt)
        elif isinstance(stmt, ast.Try):
            self.try_block(frame, stmt)
        elif isinstance(stmt, ast.Raise):
            raise Raised()
        elif isinstance(stmt, ast.Break):
            raise Break()
        elif isinstance(stmt, ast.Continue):
            raise Continue()
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    self.store_name(frame, target.id, TOP, None)
        # pass, assert, match and anything else: no effect the run follows

    def import_from(self, frame: Frame, stmt: ast.ImportFrom) -> None:
        name = self.absolute(frame, stmt.module, stmt.level)
        module = self.import_module(frame, name) if name else TOP
        for alias in stmt.names:
            if alias.name == "*":
                continue
            if isinstance(module, ModuleValue):
                value = self.module_attribute(module, alias.name)
            else:
                value = TOP
            self.store_name(frame, alias.asname or alias.name, value, None)

    def branch(self, frame: Frame, test: object, body: list[ast.stmt], orelse: list[ast.stmt]) -> None:
        truth = self.truth(test)
        if truth is True:
            self.block(frame, body)
            return
        if truth is False:
            self.block(frame, orelse)
            return
        self.both(frame, [body, orelse])

    def both(self, frame: Frame, bodies: list[list[ast.stmt]]) -> None:
        """Run each body on the same state and join what they leave (a branch that raises
        leaves nothing; one that returns or leaves the loop is joined, as if it went on)."""
        kept = []
        outcomes = []
        returned: list[object] = []
        for body in bodies:
            self.heap.open()
            outcome = "on"
            try:
                self.block(frame, body)
            except Return as done:
                returned.append(done.value)
                outcome = "return"
            except Raised:
                outcome = "raise"
            except Break:
                outcome = "break"
            except Continue:
                outcome = "continue"
            journal = self.heap.close()
            outcomes.append(outcome)
            if outcome != "raise":
                kept.append(journal)
        self.heap.merge(kept)
        ends = set(outcomes)
        if "on" in ends:
            frame.returns.extend(returned)
            return
        if ends == {"raise"}:
            raise Raised()
        if ends <= {"return", "raise"}:
            value = returned[0]
            for other in returned[1:]:
                value = join(value, other)
            raise Return(value)
        frame.returns.extend(returned)
        if ends <= {"break", "raise"}:
            raise Break()
        if ends <= {"continue", "raise"}:
            raise Continue()

    def with_block(self, frame: Frame, stmt: ast.With | ast.AsyncWith) -> None:
        entered: list[object] = []  # grad modes and project managers, in the order entered
        # ``with pytest.raises(...)``: its calls are expected to fail, and whether a compiled
        # one leaves a graph cached is not known: they run without telling the caches.
        expected = any(isinstance(item.context_expr, ast.Call) and expects_error(dotted_name(item.context_expr.func)) for item in stmt.items)
        raised = False
        try:
            for item in stmt.items:
                value, given_at = enter_one(self, frame, self.eval(frame, item.context_expr), entered)
                if item.optional_vars is not None:
                    self.assign(frame, item.optional_vars, value, stmt)
                    if isinstance(item.optional_vars, ast.Name):
                        # ``with using(k) as lr:``: the ``yield`` that gave the value, as a
                        # helper's ``return`` does for ``lr = helper(k)``.
                        key = (frame.locals, item.optional_vars.id)
                        if given_at is not None:
                            self.returned_from[key] = given_at
                        else:
                            self.returned_from.pop(key, None)
            self.probing += expected
            try:
                self.block(frame, stmt.body)
            finally:
                self.probing -= expected
        except Raised:
            raised = True
            raise
        finally:
            for manager in reversed(entered):
                leave_one(self, manager, raised)

    def try_block(self, frame: Frame, stmt: ast.Try) -> None:
        try:
            self.block(frame, stmt.body)
        except Raised:
            if not stmt.handlers:
                raise
            self.block(frame, stmt.handlers[0].body)
        else:
            self.block(frame, stmt.orelse)
        finally:
            self.block(frame, stmt.finalbody)

    # ---- loops -------------------------------------------------------------------------

    def loop_for(self, frame: Frame, stmt: ast.For | ast.AsyncFor) -> None:
        iterable = self.eval(frame, stmt.iter)
        items = self.items(iterable)
        if items is not None and len(items) <= CONCRETE_ITERATIONS:
            for index, item in enumerate(items):
                self.assign(frame, stmt.target, item, stmt)
                if self.compiling and self.observer is not None and not self.probing:
                    self.observer.on_iterate(self, frame, stmt, index)
                try:
                    self.block(frame, stmt.body)
                except Break:
                    return
                except Continue:
                    continue
            if isinstance(iterable, GeneratorValue) and not self.probing:
                self._exhausted.add(iterable.addr)
            self.block(frame, stmt.orelse)
            return
        element = self.loop_element(iterable, items)
        loop = f"{frame.path}:{stmt.lineno}:{stmt.col_offset}"

        def before(k: int) -> None:
            self.assign(frame, stmt.target, element(loop, k), stmt)

        self.symbolic_loop(frame, loop, lambda: self.block(frame, stmt.body), before, None)

    def loop_element(self, iterable: object, items: list[object] | None) -> Callable[[str, int], object]:
        """The ``k``-th item of a loop run on iteration symbols: a fresh symbol per iteration
        where the items are distinct constants (too many to run one by one), top where they are
        known but not distinct, else what ``element`` knows of the iterable."""
        if items is not None:
            kinds = {type(item.value).__name__ if isinstance(item, Const) else "" for item in items}
            distinct = len(set(items)) == len(items) and all(isinstance(item, Const) for item in items)
            kind = kinds.pop() if len(kinds) == 1 else ""
            return (lambda loop, k: iteration(loop, k, kind)) if distinct else (lambda loop, k: TOP)
        return lambda loop, k: self.element(iterable, loop, k)

    def mapped(self, frame: Frame, function: object, sources: list[object], node: ast.AST, star: bool) -> object:
        """``map(f, xs, ...)`` (``star``: ``itertools.starmap(f, pairs)``): ``f`` is called on
        each item when the map is made, as ``list(map(...))`` does (a ``for`` loop over a map runs
        its body after all the calls). Items known, at most ``CONCRETE_ITERATIONS``: the tuple
        of the results; else ``f`` runs on iteration symbols, as a loop's body, and the result
        is top."""
        parts = [self.items(source) for source in sources]
        if all(part is not None for part in parts) and min(len(part) for part in parts) <= CONCRETE_ITERATIONS:  # type: ignore[arg-type]
            results = []
            for row in zip(*parts):  # type: ignore[arg-type]
                arguments = self.items(row[0]) if star else list(row)
                if arguments is None:
                    return TOP
                results.append(self.call(frame, function, list(arguments), {}, node))
            return TupleValue(tuple(results))
        loop = f"{frame.path}:{getattr(node, 'lineno', 0)}:{getattr(node, 'col_offset', 0)}"
        elements = [self.loop_element(source, part) for source, part in zip(sources, parts)]
        current: list[list[object] | None] = [None]

        def before(k: int) -> None:
            row = [element(f"{loop}/{i}", k) for i, element in enumerate(elements)]
            current[0] = (self.items(row[0]) if isinstance(row[0], (TupleValue, ListValue)) else None) if star else row

        def body() -> None:
            if current[0] is not None:
                self.call(frame, function, list(current[0]), {}, node)

        self.symbolic_loop(frame, loop, body, before, None)
        return TOP

    def loop_while(self, frame: Frame, stmt: ast.While) -> None:
        if self.finite_while(frame, stmt):
            # The test, or a ``break``, ends it within ``CONCRETE_ITERATIONS`` on known values
            # (``i = 0; while i < 12: ...; i += 1``): it runs as it does, iteration by iteration.
            for _ in range(CONCRETE_ITERATIONS):
                if self.truth(self.eval(frame, stmt.test)) is not True:
                    break
                try:
                    self.block(frame, stmt.body)
                except Break:
                    return
                except Continue:
                    continue
            self.block(frame, stmt.orelse)
            return
        loop = f"{frame.path}:{stmt.lineno}:{stmt.col_offset}"
        self.symbolic_loop(frame, loop, lambda: self.block(frame, stmt.body), lambda k: None, stmt.test)

    def finite_while(self, frame: Frame, stmt: ast.While) -> bool:
        """Whether the loop ends on known values within ``CONCRETE_ITERATIONS``: run it once
        without telling the caches, its writes undone. Not inside another probe (the cost of
        nested loops stays a product of their bounds), nor for ``while True:`` without a
        ``break``."""
        if self.probing:
            return False
        if isinstance(stmt.test, ast.Constant) and stmt.test.value and not _breaks(stmt.body):
            return False
        self.probing += 1
        self.heap.open()
        try:
            for _ in range(CONCRETE_ITERATIONS + 1):
                truth = self.truth(self.eval(frame, stmt.test))
                if truth is None:
                    return False
                if truth is False:
                    return True
                try:
                    self.block(frame, stmt.body)
                except Break:
                    return True
                except Continue:
                    continue
                except (Return, Raised):
                    return False
            return False
        finally:
            self.heap.close()
            self.probing -= 1

    def symbolic_loop(self, frame: Frame, loop: str, body: Callable[[], None], before: Callable[[int], None], test: ast.expr | None) -> None:
        """Run ``body`` (a loop's statements, a comprehension's element, a call of a mapped
        function) ``LOOP_ITERATIONS`` times on iteration symbols: ``before(k)`` binds the
        ``k``-th item, and slots two probe runs leave at different numbers (counters) take a
        fresh symbol each iteration."""
        self.symbolic_loops += 1
        carried = self.carried_slots(frame, loop, body, before, test)
        frame.loops.append((loop, 0))
        try:
            for k in range(LOOP_ITERATIONS):
                frame.loops[-1] = (loop, k)
                for (addr, key), kind in carried.items():
                    self.heap.write(addr, key, iteration(loop, k, kind), self.heap.origin(addr, key))
                if test is not None and self.truth(self.eval(frame, test)) is False:
                    return
                before(k)
                try:
                    body()
                except Break:
                    return
                except Continue:
                    continue
        finally:
            frame.loops.pop()

    def carried_slots(self, frame: Frame, loop: str, body: Callable[[], None], before: Callable[[int], None], test: ast.expr | None) -> dict[tuple[int, object], str]:
        """Slots whose value two runs of the body leave concrete and different (a counter):
        each iteration gives them a new value. The probe's writes are undone."""
        self.probing += 1
        self.heap.open()
        seen: list[dict[tuple[int, object], object]] = []
        try:
            for k in range(2):
                frame.loops.append((loop, k))
                try:
                    if test is not None and self.truth(self.eval(frame, test)) is False:
                        break
                    before(k)
                    body()
                except (Break, Continue, Return, Raised):
                    pass
                finally:
                    frame.loops.pop()
                journal = self.heap._journals[-1]
                seen.append({slot: self.heap.read(slot[0], slot[1], _MISSING) for slot in journal.before})
        finally:
            self.heap.close()
            self.probing -= 1
        if len(seen) < 2:
            return {}
        carried = {}
        for slot, second in seen[1].items():
            first = seen[0].get(slot, _MISSING)
            if isinstance(first, Const) and isinstance(second, Const) and type(first.value) in (int, float) and definitely_different(first, second):
                carried[slot] = type(second.value).__name__
        return carried

    def items(self, value: object) -> list[object] | None:
        """The items of an iterable whose items are known."""
        if isinstance(value, RangeValue):
            bounds = (value.start, value.stop, value.step)
            if all(isinstance(b, Const) and type(b.value) is int for b in bounds):
                numbers = range(*(b.value for b in bounds))  # type: ignore[union-attr]
                if len(numbers) > 10_000:
                    return None
                return [Const(n) for n in numbers]
            return None
        if isinstance(value, TupleValue):
            return list(value.elements)
        if isinstance(value, Const) and isinstance(value.value, str) and len(value.value) <= 10_000:
            return [Const(c) for c in value.value]
        if isinstance(value, Instance) and self.class_attribute(value.cls, "__tuple__") == Const(True):
            return [self.heap.read(value.addr, name, TOP) for name in self.field_names(value.cls)]
        if nn_containers.kind(self, value):
            return nn_containers.items(self, value)  # type: ignore[arg-type]
        if isinstance(value, ClassValue) and records.is_enum(self, value):
            return records.enum_members(self, value)  # ``for phase in Phase``
        if isinstance(value, ListValue):
            slots = self.heap.slots(value.addr)
            if slots.get("__unknown__"):
                return None
            return [slots[i] for i in sorted(k for k in slots if isinstance(k, int))]
        if isinstance(value, DictValue):
            slots = self.heap.slots(value.addr)
            if slots.get("__unknown__"):
                return None
            return [Const(k) for k in slots if k != "__unknown__"]
        if isinstance(value, GeneratorValue):
            values, complete = self.yielded(value)
            return list(values) if complete else None
        if isinstance(value, IteratorValue) and value.kind in ("count", "cycle", "repeat", "islice"):
            return self.endless_items(value)
        if isinstance(value, IteratorValue) and value.kind == "enumerate":
            inner = self.items(value.sources[0])
            start = value.sources[1].value if len(value.sources) > 1 else 0  # type: ignore[attr-defined]
            return [TupleValue((Const(start + i), item)) for i, item in enumerate(inner)] if inner is not None else None
        if isinstance(value, IteratorValue) and value.kind == "accumulate":
            inner = self.items(value.sources[0])
            return self.running_sums(inner, value.sources[1]) if inner is not None else None
        if isinstance(value, IteratorValue):
            parts = [self.items(source) for source in value.sources]
            if any(part is None for part in parts):
                return None
            if value.kind == "enumerate":
                return [TupleValue((Const(i), item)) for i, item in enumerate(parts[0])]  # type: ignore[arg-type]
            if value.kind == "zip":
                return [TupleValue(tuple(group)) for group in zip(*parts)]  # type: ignore[misc]
            if value.kind == "chain":
                return [item for part in parts for item in part]  # type: ignore[union-attr]
            if value.kind == "product":
                total = 1
                for part in parts:
                    total *= len(part)  # type: ignore[arg-type]
                return [TupleValue(group) for group in itertools.product(*parts)] if total <= 10_000 else None  # type: ignore[arg-type]
            if value.kind == "pairwise":
                return [TupleValue(pair) for pair in itertools.pairwise(parts[0])]  # type: ignore[arg-type]
            if value.kind == "items" and isinstance(value.sources[0], DictValue):
                slots = self.heap.slots(value.sources[0].addr)
                return [TupleValue((Const(k), v)) for k, v in slots.items() if k != "__unknown__"]
        return None

    def running_sums(self, numbers: list[object], initial: object) -> list[object]:
        """``accumulate(xs[, initial=v])``: the running sums of ``xs``'s items."""
        out: list[object] = [] if initial == Const(None) else [initial]
        total = out[0] if out else None
        for number in numbers:
            total = number if total is None else self.binary(ast.Add(), total, number)
            out.append(total)
        return out

    def endless_items(self, value: IteratorValue) -> list[object] | None:
        """``repeat(x, n)`` and ``islice(it, [start,] stop[, step])`` with known bounds; the
        endless ones (``count``, ``cycle``, ``repeat(x)``) have no list of items."""
        sources = value.sources
        if value.kind == "repeat" and len(sources) == 2:
            times = sources[1]
            return [sources[0]] * times.value if isinstance(times, Const) and type(times.value) is int and 0 <= times.value <= 10_000 else None  # type: ignore[operator]
        if value.kind != "islice":
            return None
        bounds = list(sources[1:])
        if not all(isinstance(b, Const) and (b.value is None or type(b.value) is int) for b in bounds):
            return None
        numbers = [b.value for b in bounds]  # type: ignore[union-attr]
        start, stop, step = (0, numbers[0], 1) if len(numbers) == 1 else (numbers + [1])[:3]
        start, step = start or 0, step or 1
        if stop is None or stop > 10_000 or start < 0 or step < 1:
            return None
        inner = self.items(sources[0])
        if inner is not None:
            return inner[start:stop:step]
        if isinstance(sources[0], IteratorValue) and sources[0].kind in ("count", "cycle", "repeat"):
            return [self.endless_element(sources[0], k) for k in range(start, stop, step)]
        return None

    def endless_element(self, value: IteratorValue, k: int) -> object:
        """The ``k``-th item of ``count(start, step)``, ``cycle(xs)``, ``repeat(x)``."""
        if value.kind == "count":
            start, step = (list(value.sources) + [Const(0), Const(1)][len(value.sources) :])[:2]
            if isinstance(start, Const) and isinstance(step, Const) and all(type(v.value) in (int, float) for v in (start, step)):
                return Const(start.value + k * step.value)  # type: ignore[operator]
            return TOP
        if value.kind == "cycle":
            items = self.items(value.sources[0])
            return items[k % len(items)] if items else TOP
        if value.kind == "repeat":
            return value.sources[0]
        return TOP

    def element(self, iterable: object, loop: str, k: int) -> object:
        """The ``k``-th item of an iterable whose items are not all known."""
        if isinstance(iterable, RangeValue):
            return iteration(loop, k, "int")
        if isinstance(iterable, GeneratorValue):
            values, _ = self.yielded(iterable)
            return values[k] if k < len(values) else TOP
        if isinstance(iterable, IteratorValue) and iterable.kind == "count":
            return iteration(loop, k, "int")  # endless: a fresh value per iteration
        if isinstance(iterable, IteratorValue) and iterable.kind in ("cycle", "repeat"):
            return self.endless_element(iterable, k)
        if isinstance(iterable, IteratorValue) and iterable.kind == "enumerate":
            # ``start + k``: still a fresh value per iteration.
            return TupleValue((iteration(loop, k, "int"), self.element(iterable.sources[0], loop + "/0", k)))
        if isinstance(iterable, IteratorValue) and iterable.kind == "zip":
            return TupleValue(tuple(self.element(source, f"{loop}/{i}", k) for i, source in enumerate(iterable.sources)))
        return TOP

    # ---- names and assignment ----------------------------------------------------------

    def assign(self, frame: Frame, target: ast.expr, value: object, stmt: ast.AST) -> None:
        where = self.location(frame, stmt, "write")
        if isinstance(target, ast.Name):
            self.store_name(frame, target.id, value, where)
        elif isinstance(target, ast.Attribute):
            self.set_attribute(frame, self.eval(frame, target.value), target.attr, value, where)
        elif isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Slice):
            self.set_slice(self.eval(frame, target.value), target.slice, value, where)
        elif isinstance(target, ast.Subscript):
            self.set_item(self.eval(frame, target.value), self.eval(frame, target.slice), value, where)
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = self.items(value) if isinstance(value, (TupleValue, ListValue, Instance, IteratorValue, GeneratorValue)) else None
            if items is not None and len(items) == len(target.elts) and not any(isinstance(t, ast.Starred) for t in target.elts):
                for element, item in zip(target.elts, items):
                    self.assign(frame, element, item, stmt)
            else:
                for element in target.elts:
                    self.assign(frame, element.value if isinstance(element, ast.Starred) else element, TOP, stmt)

    def store_name(self, frame: Frame, name: str, value: object, where: Location | None) -> None:
        if name in frame.declared_global:
            self.heap.write(frame.globals, name, value, where)
            return
        if name in frame.declared_nonlocal:
            for cells in frame.closure:
                if self.heap.has(cells, name):
                    self.heap.write(cells, name, value, where)
                    return
        self.heap.write(frame.locals, name, value, where)

    def load_name(self, frame: Frame, name: str) -> object:
        if name not in frame.declared_global:
            value = self.heap.read(frame.locals, name, _MISSING)
            if value is not _MISSING:
                return value
            for cells in frame.closure:
                value = self.heap.read(cells, name, _MISSING)
                if value is not _MISSING:
                    return value
        value = self.heap.read(frame.globals, name, _MISSING)
        if value is not _MISSING:
            return value
        if name in BUILTIN_NAMES:
            return ModuleValue(f"builtins.{name}")
        return TOP

    # ---- functions and classes ---------------------------------------------------------

    def module_function(self, path: str, name: str) -> object:
        """A module-level function for an entry to run as a driver: its binding, or, where a
        decorator the run does not model made that unknown, the function as written."""
        module = self.globals.get(path)
        value = self.heap.read(module, name, None) if module is not None else None
        if value is TOP:
            return self.undecorated.get((path, name), value)
        return value

    def qualname(self, frame: Frame, name: str) -> str:
        return f"{frame.qualname}.{name}" if frame.qualname else name

    def define_function(self, frame: Frame, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, name: str = "") -> object:
        qualname = self.qualname(frame, name or getattr(node, "name", ""))
        code = CodeRef(frame.path, qualname, node.lineno)
        self.codes[code] = node
        args = node.args
        defaults = tuple(self.eval(frame, d) for d in args.defaults)
        kw_defaults = tuple((a.arg, self.eval(frame, d)) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
        closure = ((frame.locals,) + frame.closure) if frame.kind == "function" else frame.closure
        value: object = Function(code, closure, defaults, kw_defaults, frame.path)
        if isinstance(node, ast.Lambda):
            return value
        raw = value
        for decorator in reversed(node.decorator_list):
            value = self.decorate(frame, decorator, value)
        if value is TOP and node.decorator_list:
            self.undecorated[(frame.path, qualname)] = raw  # type: ignore[assignment]
        return value

    def decorate(self, frame: Frame, decorator: ast.expr, value: object) -> object:
        applied = self.eval(frame, decorator)
        if isinstance(applied, ModuleValue) and not applied.path:
            name = applied.name
            if name == "builtins.property":
                return Property(value)
            if name == "builtins.staticmethod":
                return StaticMethod(value)
            if name == "builtins.classmethod":
                return ClassMethod(value)
        if isinstance(applied, BoundMethod) and applied.function == ModuleValue("property.setter") and isinstance(applied.receiver, Property):
            return Property(applied.receiver.getter, value)
        return self.call(frame, applied, [value], {}, decorator)

    def define_class(self, frame: Frame, node: ast.ClassDef) -> object:
        bases = tuple(self.eval(frame, base) for base in node.bases)
        qualname = self.qualname(frame, node.name)
        namespace = self.heap.new("class", {"__name__": Const(node.name)})
        cls = ClassValue(frame.path, qualname, namespace, bases)
        body = Frame(frame.path, qualname, namespace, frame.globals, frame.closure, frame.depth, kind="class")
        try:
            self.block(body, node.body)
        except (Return, Break, Continue, Raised):
            pass
        records.class_defined(self, cls, node)  # an Enum's members, a NamedTuple's fields
        value: object = cls
        for decorator in reversed(node.decorator_list):
            applied = self.eval(frame, decorator)
            if isinstance(applied, Function) or _is_compile(applied):
                value = self.call(frame, applied, [value], {}, decorator)
            elif isinstance(value, ClassValue):
                records.class_decorated(self, value, node, applied)  # ``@dataclass``
        return value

    def mro(self, cls: ClassValue) -> list[object]:
        out: list[object] = []
        pending: list[object] = [cls]
        while pending and len(out) < 32:
            current = pending.pop(0)
            if current in out:
                continue
            out.append(current)
            if isinstance(current, ClassValue):
                pending.extend(current.bases)
        return out

    def is_nn_module(self, cls: ClassValue) -> bool:
        return any(isinstance(c, ModuleValue) and c.name in NN_MODULE for c in self.mro(cls))

    def class_attribute(self, cls: ClassValue, name: str, after: ClassValue | None = None) -> object:
        classes = self.mro(cls)
        if after is not None and after in classes:
            classes = classes[classes.index(after) + 1 :]
        for current in classes:
            if isinstance(current, ClassValue):
                value = self.heap.read(current.addr, name, _MISSING)
                if value is not _MISSING:
                    return value
        return _MISSING

    def instantiate(self, frame: Frame, cls: ClassValue, args: list[object], kwargs: dict[str, object], node: ast.AST) -> object:
        if records.is_enum(self, cls):
            return records.enum_lookup(self, cls, args)
        instance = Instance(cls, self.heap.new("object"))
        if self.is_nn_module(cls):
            self.heap.write(instance.addr, "training", Const(True), None)
        if records.init_record(self, frame, instance, args, kwargs, node):
            return instance  # a dataclass or a named tuple: its generated ``__init__`` ran
        init = self.class_attribute(cls, "__init__")
        if isinstance(init, Function):
            self.call_function(init, [instance] + args, kwargs, frame)
        return instance

    def library_class(self, name: str, bases: tuple[object, ...] = ()) -> ClassValue:
        """A library class whose instances hold plain attributes (``types.SimpleNamespace``,
        ``torch.nn.Linear``): one per run, so its instances share it."""
        found = self._library_classes.get(name)
        if found is None:
            found = self._library_classes[name] = ClassValue("", name, self.heap.new("class", {"__name__": Const(name.rsplit(".", 1)[-1])}), bases)
        return found

    def bind(self, function: Function, args: list[object], kwargs: dict[str, object]) -> dict[str, object] | None:
        node = self.codes.get(function.code)
        if node is None:
            return None
        spec = node.args  # type: ignore[attr-defined]
        positional = [a.arg for a in spec.posonlyargs + spec.args]
        bound: dict[str, object] = {}
        for name, value in zip(positional, args):
            bound[name] = value
        extra = args[len(positional) :]
        if spec.vararg is not None:
            bound[spec.vararg.arg] = TupleValue(tuple(extra))
        positional_defaults, kw_defaults = self.defaults_of(function)
        if positional_defaults is None:
            defaults: dict[str, object] = {}  # a write made them unknown: top
        else:
            defaults = dict(zip(positional[len(positional) - len(positional_defaults) :], positional_defaults)) if positional_defaults else {}
        defaults.update(kw_defaults or {})
        rest: dict[str, object] = {}
        for key, value in kwargs.items():
            if key in positional or key in [a.arg for a in spec.kwonlyargs]:
                bound[key] = value
            else:
                rest[key] = value
        for name in positional + [a.arg for a in spec.kwonlyargs]:
            if name not in bound:
                bound[name] = defaults.get(name, TOP)
        if spec.kwarg is not None:
            bound[spec.kwarg.arg] = DictValue(self.heap.new("dict", rest))
        return bound

    def call_function(self, function: Function, args: list[object], kwargs: dict[str, object], caller: Frame | None, awaited: bool = False) -> object:
        """Run a project function's body on ``args``; a generator's or a coroutine's body runs
        later, when it is iterated or awaited (``awaited``: it is being awaited now)."""
        node = self.codes.get(function.code)
        depth = caller.depth + 1 if caller is not None else 0
        if node is None or depth > self.max_depth:
            return TOP
        if self.is_generator(function.code, node):
            # A generator (or an async one): its body runs when it is iterated (``yielded``).
            return GeneratorValue(function, tuple(args), tuple(kwargs.items()), self.heap.new("generator"), depth)
        if isinstance(node, ast.AsyncFunctionDef) and not awaited:
            return CoroutineValue(function, tuple(args), tuple(kwargs.items()))
        bound = self.bind(function, args, kwargs)
        if bound is None:
            return TOP
        self.executed.add(function.code)
        cells = self.heap.new("frame")
        for name, value in bound.items():
            self.heap.write(cells, name, value, None)
        globals_addr = self.globals.get(function.module)
        if globals_addr is None:
            return TOP
        frame = Frame(function.code.path, function.code.qualname, cells, globals_addr, function.closure, depth)
        if caller is not None:
            frame.loops = list(caller.loops)
            calling = self._calling
            if calling is not None and calling[0] is caller and len(args) >= len(calling[2]):
                # How this frame was called, for what it hands on (``f(x, *args, **kwargs)``).
                self.frame_calls[cells] = FrameCall(caller, calling[1], function, len(args) - len(calling[2]), calling[2], calling[3])
        if self.compiling and self.observer is not None and not self.probing:
            self.observer.on_frame(self, frame, function, args, bound, caller)
        if isinstance(node, ast.Lambda):
            try:
                return self.eval(frame, node.body)
            finally:
                self.frame_calls.pop(cells, None)
        mode = self.decorated_modes.get(function.code)
        if mode is not None:
            self.grad_modes.append(mode)
        try:
            self.block(frame, node.body)  # type: ignore[attr-defined]
        except Return as done:
            frame.returns.append(done.value)
        else:
            frame.returns.append(Const(None))
        finally:
            if mode is not None:
                self.grad_modes.pop()
            self.frame_calls.pop(cells, None)  # only frames still running are asked about
        value = frame.returns[0]
        for other in frame.returns[1:]:
            value = join(value, other)
        return value

    def yielded(self, generator: GeneratorValue) -> tuple[list[object], bool]:
        """The values a generator yields, and whether they are all of them (it ended within
        ``CONCRETE_ITERATIONS`` values, its loops on known values). Its body runs once, when it
        is first iterated; a body that writes anything but its own locals and the objects it
        makes is not followed (its writes would land before the loop that iterates it, not
        between its iterations): no values, undone."""
        if generator.addr in self._exhausted:
            return [], True  # a ``for`` loop ran it to its end: it yields nothing more
        found = self._yielded.get(generator.addr)
        if found is not None:
            return found
        if self.probing:
            # A probe's writes are undone, and the objects the generator made with them: run
            # it again when it is iterated for real.
            self._yielded[generator.addr] = ([], False)
            try:
                return self.run_generator(generator)
            finally:
                del self._yielded[generator.addr]
        self._yielded[generator.addr] = ([], False)  # a generator iterating itself: nothing known
        self._yielded[generator.addr] = found = self.run_generator(generator)
        return found

    def generator_frame(self, generator: GeneratorValue) -> tuple[Frame, ast.AST, int] | None:
        """The frame a generator's body runs in (its arguments bound), the function's node, and
        the heap's mark just before the frame was made; None where the function is not known."""
        function = generator.function
        node = self.codes.get(function.code) if isinstance(function, Function) else None
        bound = self.bind(function, list(generator.args), dict(generator.kwargs)) if node is not None else None  # type: ignore[arg-type]
        globals_addr = self.globals.get(function.module) if isinstance(function, Function) else None
        if node is None or bound is None or globals_addr is None:
            return None
        start = self.heap.mark()
        cells = self.heap.new("frame")
        for name, value in bound.items():
            self.heap.write(cells, name, value, None)
        frame = Frame(function.code.path, function.code.qualname, cells, globals_addr, function.closure, generator.depth)  # type: ignore[union-attr]
        return frame, node, start

    def run_generator(self, generator: GeneratorValue) -> tuple[list[object], bool]:
        made = self.generator_frame(generator)
        if made is None:
            return [], False
        frame, node, start = made
        frame.yields = []
        loops = self.symbolic_loops
        complete = True
        self.heap.open()
        try:
            self.block(frame, node.body)  # type: ignore[attr-defined]
        except (Return, Break, Continue):
            pass
        except Raised:  # and ``GeneratorFull``
            complete = False
        except BaseException:
            self.heap.close()
            raise
        journal = self.heap.close()
        if any(addr < start for addr, _ in journal.before):
            return [], False
        self.heap.merge([journal])
        return frame.yields, complete and self.symbolic_loops == loops

    def is_generator(self, code: CodeRef, node: ast.AST) -> bool:
        found = self._generators.get(code)
        if found is None:
            found = self.generator_nodes.get(node)
            if found is None:
                found = self.generator_nodes[node] = not isinstance(node, ast.Lambda) and any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own_nodes(node))
            self._generators[code] = found
        return found

    def compiled_target(self, compiled: CompiledValue, args: list[object]) -> tuple[Function, list[object]] | None:
        """The function a compiled object runs and its arguments (``self`` first for a module)."""
        target = compiled.target
        if isinstance(target, Instance):
            forward = self.class_attribute(target.cls, "forward")
            return (forward, [target] + args) if isinstance(forward, Function) else None
        if isinstance(target, Function):
            return target, args
        if isinstance(target, BoundMethod) and isinstance(target.function, Function):
            return target.function, [target.receiver] + args
        if isinstance(target, Partial) and target.transform and isinstance(target.function, Function):
            return target.function, list(target.args) + args
        return None

    def takes_keywords(self, function: Function, kwargs: dict[str, object]) -> bool:
        """Whether ``function`` takes every keyword of a call (``callsites.binds`` for the
        call sites): one that no parameter names, without ``**kwargs``, raises."""
        node = self.codes.get(function.code)
        spec = getattr(node, "args", None)
        if not kwargs or spec is None or spec.kwarg is not None or getattr(node, "decorator_list", None):
            return True
        names = {a.arg for a in spec.posonlyargs + spec.args + spec.kwonlyargs}
        return all(key in names for key in kwargs)

    def call_compiled(self, frame: Frame, compiled: CompiledValue, args: list[object], kwargs: dict[str, object], node: ast.AST) -> object:
        found = self.compiled_target(compiled, args)
        if found is None:
            return TOP
        function, arguments = found
        if not self.takes_keywords(function, kwargs):
            raise Raised()  # ``TypeError`` before the body runs: no graph, the path ends
        bound = self.bind(function, arguments, kwargs)
        told = bound is not None and self.observer is not None and not self.probing
        self.call_loops = len(frame.loops)
        # The arguments as the call is written (a method's receiver, or a partial's, is not).
        written = self._calling[2] if self._calling is not None and self._calling[1] is node else args
        self.call_writes = self.passed_writes(frame, function, len(arguments) - len(written), node, written, kwargs) if told else {}
        self.call_given = self.given_parameters(function, len(arguments), kwargs, node) if told else None
        if bound is not None and self.observer is not None:
            where = self.location(frame, node, "call")
            # A probe (a loop's body run to find what it changes) runs a cached graph too,
            # without telling the caches.
            cached = self.observer.cached_call(self, compiled, function, bound, where, told)
            if cached is not NOT_CACHED:
                return cached
        if told:
            self.compiled_calls += 1
            self.observer.on_compiled_call(self, compiled, function, bound, where)  # type: ignore[union-attr, arg-type]
        self.compiling += 1
        watch = self.heap.watch()
        result: object = _MISSING
        try:
            result = self.call_function(function, arguments, kwargs, frame)
            return result
        finally:
            self.compiling -= 1
            self.heap.unwatch(watch)
            # What the body returned, and whether it wrote to anything older than the call.
            self.compiled_outcome = (result, watch.touched)
            if told:
                self.observer.on_compiled_end(self)  # type: ignore[union-attr]

    def given_parameters(self, function: Function, positional_count: int, kwargs: dict[str, object], node: ast.AST) -> dict[str, str] | None:
        """How a call gives each named parameter of ``function``: ``positional``, ``keyword``, or
        ``default`` (not given: its default). None where the call is not written out (a hook's
        call) or its ``*`` / ``**`` arguments hide which it gives."""
        code = self.codes.get(function.code)
        if not isinstance(node, ast.Call) or code is None or not hasattr(code, "args"):
            return None
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return None
        spec = code.args  # type: ignore[attr-defined]
        positional = [a.arg for a in spec.posonlyargs + spec.args]
        given = {name: "default" for name in positional + [a.arg for a in spec.kwonlyargs]}
        given.update((name, "positional") for name in positional[:positional_count])
        given.update((name, "keyword") for name in kwargs if name in given)
        return given

    def passed_writes(self, frame: Frame, function: Function, offset: int, node: ast.AST, values: list[object] | None = None, keywords: dict[str, object] | None = None) -> dict[str, list[Location]]:
        """For each parameter a compiled call passes a local name to, the writes that gave that
        local its value: its assignment and, for ``x = helper(...)``, the helper's ``return``;
        for an attribute of a named object (``state.k``), the write of the slot it reads. What
        the caller hands on from its own ``*args`` / ``**kwargs`` is followed to the call that
        passed it (``self.block(x, *args, **kwargs)`` in a wrapper's ``forward``)."""
        out: dict[str, list[Location]] = {}
        for parameter, (where, arg, value) in self.passed_arguments(frame, function, offset, node, values, keywords).items():
            if parameter.startswith("*"):
                continue
            if isinstance(arg, ast.Attribute) and value is not _MISSING:
                write = self.slot_write(where, arg, value)
                if write is not None:
                    out[parameter] = [write]
                continue
            if not isinstance(arg, ast.Name) or not self.heap.has(where.locals, arg.id):
                continue
            writes = [self.heap.origin(where.locals, arg.id), self.returned_from.get((where.locals, arg.id))]
            found = [w for w in writes if w is not None]
            if found:
                out[parameter] = found
        return out

    def passed_arguments(self, frame: Frame, function: Function, offset: int, node: ast.AST, values: list[object] | None,
                         keywords: dict[str, object] | None, depth: int = 0) -> dict[str, tuple[Frame, ast.expr, object]]:
        """Each parameter of ``function`` the call ``node`` (in ``frame``) names, with the
        frame and expression that give it and the value passed (``_MISSING`` where not known);
        ``*k`` for the k-th argument past the named positions. An argument the call hands on
        from its frame's own ``*args`` / ``**kwargs`` is the one the frame's caller wrote."""
        code = self.codes.get(function.code)
        if not isinstance(node, ast.Call) or code is None or not hasattr(code, "args"):
            return {}
        spec = code.args  # type: ignore[attr-defined]
        positional = [a.arg for a in spec.posonlyargs + spec.args]
        spread = next((i for i, a in enumerate(node.args) if isinstance(a, ast.Starred)), None)
        known = values if spread is None and values is not None else []
        out: dict[str, tuple[Frame, ast.expr, object]] = {}
        for index, arg in enumerate(node.args[:spread]):
            name = positional[index + offset] if index + offset < len(positional) else f"*{index + offset - len(positional)}"
            out[name] = (frame, arg, known[index] if index < len(known) else _MISSING)
        for keyword in node.keywords:
            if keyword.arg:
                out[keyword.arg] = (frame, keyword.value, (keywords or {}).get(keyword.arg, _MISSING))
        made = self.frame_calls.get(frame.locals) if depth < 4 else None
        own = getattr(self.codes.get(made.function.code), "args", None) if made is not None else None
        if made is None or own is None:
            return out
        handed: dict[str, tuple[Frame, ast.expr, object]] | None = None

        def outer() -> dict[str, tuple[Frame, ast.expr, object]]:
            nonlocal handed
            if handed is None:
                handed = self.passed_arguments(made.caller, made.function, made.offset, made.node, made.values, made.keywords, depth + 1)
            return handed

        own_names = {a.arg for a in own.posonlyargs + own.args + own.kwonlyargs}
        for keyword in node.keywords:
            if keyword.arg is None and own.kwarg is not None and isinstance(keyword.value, ast.Name) and keyword.value.id == own.kwarg.arg:
                for name, item in outer().items():
                    if not name.startswith("*") and name not in own_names:
                        out.setdefault(name, item)
        if spread is not None and spread == len(node.args) - 1 and own.vararg is not None:
            starred = node.args[spread].value  # type: ignore[attr-defined]
            if isinstance(starred, ast.Name) and starred.id == own.vararg.arg:
                for k, name in enumerate(positional[spread + offset :]):
                    item = outer().get(f"*{k}")
                    if item is not None:
                        out.setdefault(name, item)
        return out

    def slot_write(self, frame: Frame, node: ast.Attribute, value: object) -> Location | None:
        """Where the value a call passes as ``name.attr`` was written: the object's slot
        ``attr``, or, for a property, the slot of the object holding the very value its getter
        returned (``return self._k``). Only a name is looked up (nothing runs twice)."""
        if not isinstance(node.value, ast.Name):
            return None
        holder = self.load_name(frame, node.value.id)
        if isinstance(holder, CompiledValue):
            holder = holder.target
        if not isinstance(holder, Instance):
            return None
        if self.heap.has(holder.addr, node.attr):
            return self.heap.origin(holder.addr, node.attr)
        if not isinstance(self.class_attribute(holder.cls, node.attr), Property):
            return None
        slots = [key for key, held in self.heap.slots(holder.addr).items() if held is value]
        return self.heap.origin(holder.addr, slots[0]) if len(slots) == 1 else None

    # ---- calls -------------------------------------------------------------------------

    def graph_break(self, frame: Frame, node: ast.AST) -> None:
        """Traced code breaks the graph at ``node`` (a disabled call, ``print``, ``.item()``,
        ``torch._dynamo.graph_break()``): the observer learns where."""
        if self.compiling and self.observer is not None and not self.probing:
            self.observer.on_break(self, frame, node)

    def call(self, frame: Frame, callee: object, args: list[object], kwargs: dict[str, object], node: ast.AST) -> object:
        self.tick()
        self.call_lines.append((frame.path, getattr(node, "lineno", 0)))
        outer = self._calling
        if outer is None or outer[1] is not node:
            self._calling = (frame, node, args, kwargs)  # as written: a method's receiver is not in ``args``
        try:
            return self.call_here(frame, callee, args, kwargs, node)
        finally:
            self.call_lines.pop()
            self._calling = outer

    def call_here(self, frame: Frame, callee: object, args: list[object], kwargs: dict[str, object], node: ast.AST) -> object:
        if isinstance(callee, Function):
            if self.compiling and self.observer is not None:
                framed = self.observer.own_frame(self, callee)
                if framed is not None:
                    return self.call_compiled(frame, framed, args, kwargs, node)
            return self.call_function(callee, args, kwargs, frame)
        if isinstance(callee, BoundMethod):
            return self.call(frame, callee.function, [callee.receiver] + args, kwargs, node)
        if isinstance(callee, CompiledValue):
            return self.call_compiled(frame, callee, args, kwargs, node)
        if isinstance(callee, Partial):
            return self.call(frame, callee.function, list(callee.args) + args, {**dict(callee.keywords), **kwargs}, node)
        if isinstance(callee, ContextFunction):
            made = self.call(frame, callee.function, args, kwargs, node)
            return made if isinstance(made, GeneratorValue) else TOP
        if isinstance(callee, ClassValue):
            return self.instantiate(frame, callee, args, kwargs, node)
        if isinstance(callee, Instance):
            compiled = self.heap.read(callee.addr, "__compiled__", _MISSING)
            if isinstance(compiled, CompiledValue):
                return self.call_compiled(frame, compiled, args, kwargs, node)
            compiled = self.class_attribute(callee.cls, torch_compile.COMPILED_CLASS)
            if isinstance(compiled, CompiledValue):
                # An instance of a class decorated with ``@torch.compile``.
                return self.call_compiled(frame, replace(compiled, target=callee), args, kwargs, node)
            method = self.class_attribute(callee.cls, "__call__")
            if method is _MISSING and self.is_nn_module(callee.cls):
                return self.call_module(frame, callee, args, kwargs, node)
            if isinstance(method, (Function, CompiledValue)):
                return self.call(frame, BoundMethod(method, callee), args, kwargs, node)
            return TOP
        if isinstance(callee, ContextValue):
            if len(args) == 1 and isinstance(args[0], Function):
                # ``@torch.no_grad()``: the function itself, whose calls run under the mode.
                self.decorated_modes[args[0].code] = callee
                return args[0]
            return TOP
        if isinstance(callee, ModuleValue) and not callee.path:
            handler = TABLE.get(callee.name)
            if handler is not None:
                return handler(self, frame, args, kwargs, node)
            if pytest_marks.is_mark(callee):
                return pytest_marks.mark(self, frame, callee, args, kwargs)
        return TOP

    def call_module(self, frame: Frame, module: Instance, args: list[object], kwargs: dict[str, object], node: ast.AST) -> object:
        """Calling an ``nn.Module``: its hooks around its ``forward`` (a project method, or a
        library module's the overlays model, such as a ``Sequential``'s)."""
        method = self.class_attribute(module.cls, "forward")
        handler = TABLE.get(f"{module.cls.qualname}.forward") if not module.cls.path else None

        def forward(args: list[object], kwargs: dict[str, object]) -> object:
            if isinstance(method, (Function, CompiledValue)):
                return self.call(frame, BoundMethod(method, module), args, kwargs, node)
            if handler is not None:
                return handler(self, frame, [module] + args, kwargs, node)
            return TOP

        return nn_module.call_module(self, frame, module, forward, args, kwargs, node)

    # ---- attributes and items ----------------------------------------------------------

    def get_attribute(self, frame: Frame, value: object, attr: str) -> object:
        if isinstance(value, Instance):
            found = self.heap.read(value.addr, attr, _MISSING)
            if found is not _MISSING:
                return found
            if attr == "__class__":
                return value.cls
            if attr == "_replace" and self.class_attribute(value.cls, "__tuple__") == Const(True):
                return BoundMethod(ModuleValue("namedtuple._replace"), value)
            if not value.cls.path and f"{value.cls.qualname}.{attr}" in TABLE:
                return BoundMethod(ModuleValue(f"{value.cls.qualname}.{attr}"), value)  # a library class's method
            member = self.class_attribute(value.cls, attr)
            if member is not _MISSING:
                return self.bind_member(frame, member, value)
            if self.is_nn_module(value.cls) and f"nn.Module.{attr}" in TABLE:
                return BoundMethod(ModuleValue(f"nn.Module.{attr}"), value)
            return TOP
        if isinstance(value, Function):
            return self.function_attribute(value, attr)
        if isinstance(value, Partial) and attr in ("func", "args", "keywords"):
            # ``p.func``, ``p.args``, ``p.keywords`` (a new dict each read, as a copy would be).
            if attr == "func":
                return value.function
            if attr == "args":
                return TupleValue(value.args)
            return DictValue(self.heap.new("dict", dict(value.keywords)))
        if isinstance(value, CompiledValue):
            if attr == "_orig_mod" or attr == "__wrapped__":
                return value.target
            if isinstance(value.target, Instance):
                return self.get_attribute(frame, value.target, attr)  # OptimizedModule forwards reads
            return TOP
        if isinstance(value, ModuleValue):
            return self.module_attribute(value, attr, frame)
        if isinstance(value, ClassValue):
            member = self.class_attribute(value, attr)
            if isinstance(member, ClassMethod):
                return BoundMethod(member.function, value)
            if isinstance(member, StaticMethod):
                return member.function
            return TOP if member is _MISSING else member
        if isinstance(value, SuperValue):
            member = self.class_attribute(value.receiver.cls, attr, after=value.start) if isinstance(value.receiver, Instance) else _MISSING
            if member is _MISSING:
                return BoundMethod(ModuleValue(f"super.{attr}"), value.receiver)
            return self.bind_member(frame, member, value.receiver)
        if isinstance(value, Property) and attr == "setter":
            return BoundMethod(ModuleValue("property.setter"), value)
        if isinstance(value, TensorValue) and f"tensor.{attr}" not in TABLE:
            return tensor_attribute(self, value, attr)
        if self.is_set(value):
            if f"set.{attr}" in TABLE:
                return BoundMethod(ModuleValue(f"set.{attr}"), value)
            self.set_item(value, TOP, TOP, None)  # a method the run does not model may change it
            return TOP
        for kind, prefix in ((TensorValue, "tensor"), (ListValue, "list"), (DictValue, "dict"), (Const, "const")):
            if isinstance(value, kind):
                if f"{prefix}.{attr}" in TABLE:
                    return BoundMethod(ModuleValue(f"{prefix}.{attr}"), value)
                return TOP
        return TOP

    def has_attribute(self, value: object, name: str) -> object:
        """``hasattr(value, name)`` where the run knows it is true: an attribute the instance,
        its class or the module holds; a name of a library an overlay models
        (``hasattr(torch, "compile")``). Anything else is top, never a guessed False."""
        if isinstance(value, Instance):
            found = self.heap.has(value.addr, name) or self.class_attribute(value.cls, name) is not _MISSING
            return Const(True) if found else TOP
        if isinstance(value, ModuleValue) and not value.path:
            dotted = f"{value.name}.{name}"
            return Const(True) if any(key == dotted or key.startswith(dotted + ".") for key in TABLE) else TOP
        if isinstance(value, ModuleValue) and self.heap.has(self.globals.get(value.path, -1), name):
            return Const(True)
        return TOP

    def bind_member(self, frame: Frame, member: object, receiver: object) -> object:
        if isinstance(member, (Function, CompiledValue, ContextFunction)):
            return BoundMethod(member, receiver)
        if isinstance(member, Property):
            return self.call(frame, member.getter, [receiver], {}, ast.Pass())
        if isinstance(member, StaticMethod):
            return member.function
        if isinstance(member, ClassMethod) and isinstance(receiver, Instance):
            return BoundMethod(member.function, receiver.cls)
        return member

    def set_attribute(self, frame: Frame, target: object, attr: str, value: object, where: Location | None) -> None:
        if isinstance(target, Instance):
            member = self.class_attribute(target.cls, attr)
            if isinstance(member, Property):
                if member.setter is not None:
                    self.call(frame, member.setter, [target, value], {}, ast.Pass())
                return
            if self.class_attribute(target.cls, "__frozen__") == Const(True) or self.class_attribute(target.cls, "__tuple__") == Const(True):
                raise Raised()  # a frozen dataclass or a named tuple: the write raises
            self.heap.write(target.addr, attr, value, where)
        elif isinstance(target, CompiledValue) and isinstance(target.target, Instance):
            self.set_attribute(frame, target.target, attr, value, where)  # OptimizedModule forwards writes
        elif isinstance(target, ModuleValue) and target.path and target.path in self.globals:
            self.heap.write(self.globals[target.path], attr, value, where)
        elif isinstance(target, ClassValue):
            self.heap.write(target.addr, attr, value, where)
        elif isinstance(target, Function):
            self.heap.write(self.function_store(target), attr, value, where)  # ``f.__defaults__ = (2,)``

    def replace_tensor(self, old: TensorValue, new: TensorValue, where: Location | None) -> None:
        """An in-place change of a tensor's state (``requires_grad_``): every slot holding it
        holds the changed one (a scan of the heap; past ``MAX_SCANNED`` slots the change is not
        followed, and the run's cost stays bounded)."""
        if sum(len(store) for store in self.heap.stores.values()) > MAX_SCANNED:
            return
        for addr, store in list(self.heap.stores.items()):
            for key, value in list(store.items()):
                if isinstance(value, TensorValue) and value.addr == old.addr:
                    self.heap.write(addr, key, new, where)

    def field_names(self, cls: ClassValue) -> list[str]:
        fields = self.class_attribute(cls, "__fields__")
        return [f.value for f in fields.elements if isinstance(f, Const)] if isinstance(fields, TupleValue) else []  # type: ignore[misc]

    def function_store(self, function: Function) -> int:
        """The heap store of a function object's writable attributes (``__defaults__``,
        ``__kwdefaults__``, any other): one per function value, made on first use."""
        addr = self._function_stores.get(function)
        if addr is None:
            addr = self._function_stores[function] = self.heap.new("function")
        return addr

    def written_store(self, function: Function) -> int | None:
        """The heap store of a function's attributes if something wrote one, else None."""
        return self._function_stores.get(function)

    def defaults_of(self, function: Function) -> tuple[tuple[object, ...] | None, dict[str, object] | None]:
        """A function's positional and keyword-only defaults now (None where a write made them
        unknown), after any write to its ``__defaults__`` / ``__kwdefaults__``."""
        addr = self._function_stores.get(function)
        defaults: tuple[object, ...] | None = function.defaults
        kw_defaults: dict[str, object] | None = dict(function.kw_defaults)
        if addr is None:
            return defaults, kw_defaults
        written = self.heap.read(addr, "__defaults__", _MISSING)
        if written is not _MISSING:
            defaults = written.elements if isinstance(written, TupleValue) else () if written == Const(None) else None
        written = self.heap.read(addr, "__kwdefaults__", _MISSING)
        if written is not _MISSING:
            kw_defaults = self.keywords_of(written) if isinstance(written, DictValue) else {} if written == Const(None) else None
        return defaults, kw_defaults

    def function_attribute(self, function: Function, attr: str) -> object:
        addr = self._function_stores.get(function)
        found = self.heap.read(addr, attr, _MISSING) if addr is not None else _MISSING
        if found is not _MISSING:
            return found
        if attr == "__defaults__":
            return TupleValue(function.defaults) if function.defaults else Const(None)
        if attr in ("__name__", "__qualname__"):
            return Const(function.code.qualname.rsplit(".", 1)[-1] if attr == "__name__" else function.code.qualname)
        return TOP

    def get_item(self, value: object, key: object) -> object:
        if isinstance(key, Sym) and key.origin == "iteration" and key.kind == "int" and isinstance(value, (ListValue, TupleValue)):
            # A table of distinct constants indexed by the iteration (``schedule[k]``): a
            # different item at each iteration, of the items' type.
            items = self.items(value)
            if items and all(isinstance(i, Const) for i in items) and len(set(items)) == len(items):
                kinds = {type(i.value).__name__ for i in items}  # type: ignore[union-attr]
                return Sym("iteration", loop=key.loop, k=key.k, kind=kinds.pop() if len(kinds) == 1 else "")
            return TOP
        if nn_containers.kind(self, value):
            return nn_containers.get_item(self, value, key)  # type: ignore[arg-type]
        if isinstance(value, Instance) and isinstance(key, Const) and type(key.value) is int and self.class_attribute(value.cls, "__tuple__") == Const(True):
            value = TupleValue(tuple(self.items(value) or ()))  # a named tuple's item is its field
        if isinstance(value, TupleValue) and isinstance(key, Const) and type(key.value) is int:
            try:
                return value.elements[key.value]  # type: ignore[index]
            except IndexError:
                return TOP
        if isinstance(value, (ListValue, DictValue)) and isinstance(key, Const):
            slots = self.heap.slots(value.addr)
            index = key.value
            if isinstance(value, ListValue) and type(index) is int and index < 0:
                index += len([k for k in slots if isinstance(k, int)])
            found = slots.get(index, _MISSING) if not slots.get("__unknown__") else _MISSING
            return TOP if found is _MISSING else found
        if isinstance(value, TensorValue):
            return self.new_tensor()
        if value == ModuleValue("sys.modules") and isinstance(key, Const) and isinstance(key.value, str):
            # ``sys.modules[__name__]``: the module run under that name (``__main__`` too).
            for path, module in self.modules.items():
                if self.heap.read(self.globals.get(path, -1), "__name__", None) == key:
                    return module
        return TOP

    def sliced(self, value: object, bounds: list[object]) -> object:
        """``xs[a:b:c]`` of a list or tuple whose items are known, the bounds known ints or
        ``None``: a new list or tuple of those items; a tensor's slice is a tensor; else top."""
        numbers = [b.value if isinstance(b, Const) else _MISSING for b in bounds]
        if isinstance(value, (ListValue, TupleValue)) and all(n is None or type(n) is int for n in numbers) and numbers[2] != 0:
            items = self.items(value)
            if items is not None:
                part = items[slice(*numbers)]
                return TupleValue(tuple(part)) if isinstance(value, TupleValue) else self.new_list(part)
        return self.get_item(value, TOP)

    def set_slice(self, target: object, index: ast.Slice, value: object, where: Location | None) -> None:
        """``xs[:] = items``: the list's items replaced; any other slice makes them unknown."""
        if not isinstance(target, ListValue):
            return
        items = self.items(value)
        if index.lower is None and index.upper is None and index.step is None and items is not None:
            self.replace_items(target, items, where)
        else:
            self.set_item(target, TOP, TOP, where)

    def replace_items(self, target: ListValue, items: list[object], where: Location | None) -> None:
        for key in [k for k in self.heap.slots(target.addr) if isinstance(k, int) and k >= len(items)]:
            self.heap.delete(target.addr, key)
        for i, item in enumerate(items):
            self.heap.write(target.addr, i, item, where)

    def set_item(self, target: object, key: object, value: object, where: Location | None) -> None:
        if nn_containers.kind(self, target):
            nn_containers.set_item(self, target, key, value, where)  # type: ignore[arg-type]
            return
        if not isinstance(target, (ListValue, DictValue)):
            return
        if isinstance(key, Const) and key.value != "__unknown__":
            self.heap.write(target.addr, key.value, value, where)
            return
        for slot in list(self.heap.slots(target.addr)):
            self.heap.forget(target.addr, slot)  # an unknown key may be any of them
        self.heap.write(target.addr, "__unknown__", Const(True), where)

    # ---- expressions -------------------------------------------------------------------

    def eval(self, frame: Frame, node: ast.expr) -> object:
        if self.compiling:
            self.traced.add((frame.path, node.lineno))
        if isinstance(node, ast.Constant):
            return Const(node.value)
        if isinstance(node, ast.Name):
            return self.read(frame, node, self.load_name(frame, node.id))
        if isinstance(node, ast.Attribute):
            base = self.eval(frame, node.value)
            if self.compiling and self.observer is not None and not self.probing:
                self.observer.on_attribute(self, frame, node, base)  # a property's getter is inlined on ``base``
            return self.read(frame, node, self.get_attribute(frame, base, node.attr))
        if isinstance(node, ast.Call):
            return self.eval_call(frame, node)
        if isinstance(node, ast.BinOp):
            return self.binary(node.op, self.eval(frame, node.left), self.eval(frame, node.right))
        if isinstance(node, ast.UnaryOp):
            return self.unary(node.op, self.eval(frame, node.operand))
        if isinstance(node, ast.BoolOp):
            return self.boolean(frame, node)
        if isinstance(node, ast.Compare):
            return self.compare(frame, node)
        if isinstance(node, ast.IfExp):
            truth = self.truth(self.eval(frame, node.test))
            if truth is None:
                return join(self.eval(frame, node.body), self.eval(frame, node.orelse))
            return self.eval(frame, node.body if truth else node.orelse)
        if isinstance(node, ast.Subscript):
            return self.subscript(frame, node)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elements = self.displayed(frame, node.elts)
            if elements is None:
                return TOP
            if isinstance(node, ast.Set):
                return self.new_set(elements)
            return TupleValue(tuple(elements)) if isinstance(node, ast.Tuple) else self.new_list(elements)
        if isinstance(node, ast.Dict):
            slots: dict[object, object] = {}
            for key, value in zip(node.keys, node.values):
                evaluated = self.eval(frame, value)
                key_value = self.eval(frame, key) if key is not None else TOP
                if isinstance(key_value, Const):
                    slots[key_value.value] = evaluated
                else:
                    slots["__unknown__"] = Const(True)
            return DictValue(self.heap.new("dict", slots))
        if isinstance(node, ast.Lambda):
            return self.define_function(frame, node, f"<lambda:{node.lineno}:{node.col_offset}>")
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self.comprehension(frame, node)
        if isinstance(node, ast.JoinedStr):
            return self.formatted(frame, node)
        if isinstance(node, ast.NamedExpr):
            value = self.eval(frame, node.value)
            self.assign(frame, node.target, value, node)
            return value
        if isinstance(node, (ast.Yield, ast.YieldFrom)) and frame.yields is not None:
            return self.yield_values(frame, node)
        if isinstance(node, ast.Await):
            return self.awaited(frame, self.eval(frame, node.value))
        return TOP

    def awaited(self, frame: Frame, value: object) -> object:
        """``await value``: a coroutine runs its body now; what a library call made gives its value."""
        if isinstance(value, CoroutineValue) and isinstance(value.function, Function):
            return self.call_function(value.function, list(value.args), dict(value.kwargs), frame, awaited=True)
        if isinstance(value, Awaitable):
            return value.value
        return TOP

    def subscript(self, frame: Frame, node: ast.Subscript) -> object:
        base = self.eval(frame, node.value)
        if isinstance(base, TensorValue):
            parts = self.tensor_index(frame, node.slice)
            if self.compiling and self.observer is not None and not self.probing:
                self.observer.on_item(self, frame, node, base, TOP)
            return self.read(frame, node, torch_shapes.index(self, base, parts))
        if isinstance(node.slice, ast.Slice):
            bounds = self.slice_bounds(frame, node.slice)
            if self.compiling and self.observer is not None and not self.probing:
                self.observer.on_item(self, frame, node, base, TOP)
            return self.read(frame, node, self.sliced(base, bounds))
        key = self.eval(frame, node.slice)
        if self.compiling and self.observer is not None and not self.probing:
            self.observer.on_item(self, frame, node, base, key)  # a Python container's key stays concrete
        return self.read(frame, node, self.get_item(base, key))

    def slice_bounds(self, frame: Frame, node: ast.Slice) -> list[object]:
        """``a:b:c`` evaluated, ``None`` for each bound left out."""
        return [self.eval(frame, b) if b is not None else Const(None) for b in (node.lower, node.upper, node.step)]

    def tensor_index(self, frame: Frame, node: ast.expr) -> list[tuple] | None:
        """A tensor's index as ``torch_shapes.index`` reads it (each part evaluated once); None
        where a part is not an int, a slice of ints, ``None`` or ``...``."""
        parts: list[tuple] | None = []
        for element in node.elts if isinstance(node, ast.Tuple) else [node]:
            if isinstance(element, ast.Slice):
                bounds = self.slice_bounds(frame, element)
                known = all(isinstance(b, Const) and (b.value is None or type(b.value) is int) for b in bounds)
                # A slice whose bounds the run does not know keeps its axis, of unknown size.
                part: tuple | None = ("slice",) + tuple(b.value for b in bounds) if known else ("slice", _UNKNOWN_BOUND, None, None)  # type: ignore[union-attr]
            elif isinstance(element, ast.Constant) and element.value is Ellipsis:
                part = ("ellipsis",)
            else:
                value = self.eval(frame, element)
                part = ("none",) if value == Const(None) else ("int",) if isinstance(value, Const) and type(value.value) is int else None
            if part is None or parts is None:
                parts = None
            else:
                parts.append(part)
        return parts

    def yield_values(self, frame: Frame, node: ast.Yield | ast.YieldFrom) -> object:
        """``yield x`` / ``yield from xs`` in a generator being run: its values, in order."""
        assert frame.yields is not None
        if isinstance(node, ast.Yield):
            values = [self.eval(frame, node.value) if node.value is not None else Const(None)]
        else:
            items = self.items(self.eval(frame, node.value))
            if items is None:
                raise GeneratorFull()
            values = items
        for value in values:
            if len(frame.yields) >= CONCRETE_ITERATIONS:
                raise GeneratorFull()
            frame.yields.append(value)
        return Const(None)  # what ``send`` gives a ``for`` loop's generator

    def read(self, frame: Frame, node: ast.expr, value: object) -> object:
        """A name, attribute or item read: compiled code's reads are told (Dynamo guards them)."""
        if self.compiling and self.observer is not None and not self.probing:
            self.observer.on_read(self, frame, node, value)
        return value

    def new_list(self, elements: list[object]) -> ListValue:
        return ListValue(self.heap.new("list", dict(enumerate(elements))))

    def new_set(self, elements: list[object]) -> object:
        """A set of known elements (each one once, in the order first given); top when an
        element is not a known hashable value (which ones are equal is then not known)."""
        if not all(hashable(e) for e in elements):
            return TOP
        return ListValue(self.heap.new("set", dict(enumerate(dict.fromkeys(elements)))))

    def is_set(self, value: object) -> bool:
        return isinstance(value, ListValue) and self.heap.kinds.get(value.addr) == "set"

    def set_operation(self, op: ast.operator, left: object, right: object) -> object:
        """``a | b``, ``a & b``, ``a - b``, ``a ^ b`` of two known sets."""
        a, b = self.items(left), self.items(right)
        if a is None or b is None:
            return TOP
        if isinstance(op, ast.BitOr):
            return self.new_set(a + b)
        if isinstance(op, ast.BitAnd):
            return self.new_set([e for e in a if e in b])
        if isinstance(op, ast.Sub):
            return self.new_set([e for e in a if e not in b])
        if isinstance(op, ast.BitXor):
            return self.new_set([e for e in a if e not in b] + [e for e in b if e not in a])
        return TOP

    def formatted(self, frame: Frame, node: ast.JoinedStr) -> object:
        """An f-string: each part is evaluated (compiled code reads what it formats, and Dynamo
        guards a Python value it formats as a constant); the text is known when every part is
        a known Python scalar formatted without a format spec, else top."""
        pieces: list[str] = []
        known = True
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                pieces.append(part.value)
                continue
            if not isinstance(part, ast.FormattedValue):
                known = False
                continue
            value = self.eval(frame, part.value)
            if part.format_spec is not None:
                self.eval(frame, part.format_spec)
                known = False
            elif isinstance(value, Const) and type(value.value) in (str, int, bool, float, type(None)) and known:
                try:
                    text = repr(value.value) if part.conversion == ord("r") else ascii(value.value) if part.conversion == ord("a") else str(value.value)
                except ValueError:  # an int too long to print
                    known = False
                    continue
                pieces.append(text)
            else:
                known = False
        return Const("".join(pieces)) if known else TOP

    def comprehension(self, frame: Frame, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, consumed: bool = False) -> object:
        """One generator with known items: the list of its elements (a dict of its keys and
        values, keys known). Where those are not known, a list or dict comprehension is still a
        list or a dict, of items not known (a list compiled code indexes needs a concrete
        index); a set or a generator is top. A generator expression ``consumed`` by the call
        it is passed to (``nn.ModuleList(Block() for _ in range(n))``, ``tuple(...)``) runs
        there and then, so it is the list of its elements too."""
        unknown = TOP
        if isinstance(node, (ast.ListComp, ast.DictComp)):
            unknown = (ListValue if isinstance(node, ast.ListComp) else DictValue)(self.heap.new("list" if isinstance(node, ast.ListComp) else "dict", {"__unknown__": Const(True)}))
        if isinstance(node, ast.GeneratorExp) and not consumed:
            return unknown
        scope = Frame(frame.path, frame.qualname, self.heap.new("frame"), frame.globals, (frame.locals,) + frame.closure, frame.depth)
        scope.loops = frame.loops
        elements: list[object] = []
        slots: dict[object, object] = {}
        budget = [CONCRETE_ITERATIONS * CONCRETE_ITERATIONS]  # elements, all generators together
        first = self.eval(frame, node.generators[0].iter)
        outer: list[list[object] | None] = []  # the first generator's items, once asked

        def run(level: int, iterable: object) -> bool:
            """Run the generators from ``level`` on: False when an iterable's items or a
            condition are not known, or there are too many."""
            generator = node.generators[level]
            items = self.items(iterable)
            if not level:
                outer.append(items)
            if items is None or len(items) > CONCRETE_ITERATIONS:
                return False
            for index, item in enumerate(items):
                self.assign(scope, generator.target, item, node)
                if self.compiling and self.observer is not None and not self.probing:
                    self.observer.on_iterate(self, scope if level else frame, generator, index, scope)
                truths = [self.truth(self.eval(scope, test)) for test in generator.ifs]
                if None in truths:
                    return False
                if not all(truths):
                    continue
                if level + 1 < len(node.generators):
                    if not run(level + 1, self.eval(scope, node.generators[level + 1].iter)):
                        return False
                    continue
                budget[0] -= 1
                if budget[0] < 0:
                    return False
                if isinstance(node, ast.DictComp):
                    key, value = self.eval(scope, node.key), self.eval(scope, node.value)
                    if not isinstance(key, Const):
                        return False
                    slots[key.value] = value
                else:
                    elements.append(self.eval(scope, node.elt))
            return True

        if any(g.is_async for g in node.generators):
            return unknown
        if not run(0, first):
            items = outer[0] if outer else None
            if len(node.generators) == 1 and (items is None or len(items) > CONCRETE_ITERATIONS):
                # Too many items, or items not known: the element runs as a loop's body does,
                # on iteration symbols (``[step(batch) for batch in loader]`` calls ``step``).
                self.symbolic_comprehension(scope, node, first, items)
            return unknown
        if isinstance(node, ast.DictComp):
            return DictValue(self.heap.new("dict", slots))
        if isinstance(node, ast.SetComp):
            return self.new_set(elements)
        return self.new_list(elements)

    def symbolic_comprehension(self, scope: Frame, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, iterable: object, items: list[object] | None) -> None:
        generator = node.generators[0]
        element = self.loop_element(iterable, items)
        loop = f"{scope.path}:{node.lineno}:{node.col_offset}"

        def before(k: int) -> None:
            self.assign(scope, generator.target, element(loop, k), node)

        def body() -> None:
            if any(self.truth(self.eval(scope, test)) is False for test in generator.ifs):
                return
            if isinstance(node, ast.DictComp):
                self.eval(scope, node.key)
                self.eval(scope, node.value)
            else:
                self.eval(scope, node.elt)

        self.symbolic_loop(scope, loop, body, before, None)

    def displayed(self, frame: Frame, elts: list[ast.expr]) -> list[object] | None:
        """The elements of a display (``[0, *ends, n]``); None when a starred part's items
        are not all known."""
        elements: list[object] = []
        for element in elts:
            if isinstance(element, ast.Starred):
                items = self.items(self.eval(frame, element.value))
                if items is None:
                    return None
                elements.extend(items)
            else:
                elements.append(self.eval(frame, element))
        return elements

    def eval_call(self, frame: Frame, node: ast.Call) -> object:
        callee = self.eval(frame, node.func)
        args: list[object] = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                items = self.items(self.eval(frame, arg.value))
                if items is None:
                    return TOP
                args.extend(items)
            elif isinstance(arg, ast.GeneratorExp) and len(node.args) == 1:
                args.append(self.comprehension(frame, arg, consumed=True))
            else:
                args.append(self.eval(frame, arg))
        kwargs: dict[str, object] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                spread = self.keywords_of(self.eval(frame, keyword.value))
                if spread is None:
                    return TOP
                kwargs.update(spread)
                continue
            kwargs[keyword.arg] = self.eval(frame, keyword.value)
        if isinstance(callee, ModuleValue) and callee.name == "builtins.super" and not args:
            return self.super_of(frame)
        if self.compiling and self.observer is not None and not self.probing:
            self.observer.on_call(self, frame, node, callee, args, kwargs)
        return self.call(frame, callee, args, kwargs, node)

    def keywords_of(self, value: object) -> dict[str, object] | None:
        """``f(**d)``: the keyword arguments of a dict whose keys are all known strings."""
        if not isinstance(value, DictValue):
            return None
        slots = self.heap.slots(value.addr)
        if slots.get("__unknown__") or not all(isinstance(k, str) for k in slots):
            return None
        return dict(slots)

    def super_of(self, frame: Frame) -> object:
        receiver = self.heap.read(frame.locals, "self", TOP)
        if not isinstance(receiver, Instance):
            return TOP
        owner = frame.qualname.rsplit(".", 1)[0]
        for cls in self.mro(receiver.cls):
            if isinstance(cls, ClassValue) and cls.qualname == owner and cls.path == frame.path:
                return SuperValue(cls, receiver)
        return TOP

    def binary(self, op: ast.operator, left: object, right: object, in_place: bool = False) -> object:
        if isinstance(left, Const) and isinstance(right, Const):
            return _arithmetic(op, left.value, right.value)
        for sym, other in ((left, right), (right, left)):
            if isinstance(sym, Sym) and sym.origin == "iteration" and isinstance(other, Const) and type(other.value) in (int, float):
                if isinstance(op, _SHIFTING) and not (isinstance(op, ast.Mult) and other.value == 0):
                    kind = "float" if "float" in (sym.kind, type(other.value).__name__) else sym.kind
                    return Sym("iteration", loop=sym.loop, k=sym.k, kind=kind)
                kind = _injective(op, sym is left, other.value, sym.kind)
                if kind is not None:
                    # Still one value per iteration (``lr / (k + 1)``, ``0.9 ** k``).
                    return Sym("iteration", loop=sym.loop, k=sym.k, kind=kind)
                return TOP
        if isinstance(left, TensorValue) and in_place:
            return left
        if isinstance(left, TensorValue) or isinstance(right, TensorValue):
            return tensor_arithmetic(self, op, left, right)
        if self.is_set(left) and self.is_set(right):
            return self.set_operation(op, left, right)
        return self.sequence_arithmetic(op, left, right, in_place)

    def sequence_arithmetic(self, op: ast.operator, left: object, right: object, in_place: bool) -> object:
        """``a + b`` of two lists or two tuples, ``xs * n`` / ``n * xs``, where the items are
        known (``xs += ys`` extends ``xs`` itself)."""
        if isinstance(op, ast.Add) and type(left) is type(right) and isinstance(left, (TupleValue, ListValue)):
            a, b = self.items(left), self.items(right)
            if a is None or b is None:
                return TOP
            if isinstance(left, TupleValue):
                return TupleValue(tuple(a + b))
            if in_place:
                self.replace_items(left, a + b, None)  # type: ignore[arg-type]
                return left
            return self.new_list(a + b)
        if isinstance(op, ast.Mult):
            sequence, times = (left, right) if isinstance(right, Const) else (right, left)
            if isinstance(sequence, (TupleValue, ListValue)) and isinstance(times, Const) and type(times.value) is int:
                items = self.items(sequence)
                if items is None or len(items) * max(times.value, 0) > 10_000:
                    return TOP
                repeated = items * times.value
                return TupleValue(tuple(repeated)) if isinstance(sequence, TupleValue) else self.new_list(repeated)
        return TOP

    def unary(self, op: ast.unaryop, operand: object) -> object:
        if isinstance(op, ast.Not):
            truth = self.truth(operand)
            return TOP if truth is None else Const(not truth)
        if isinstance(operand, Const):
            try:
                if isinstance(op, ast.USub):
                    return Const(-operand.value)  # type: ignore[operator]
                if isinstance(op, ast.UAdd):
                    return Const(+operand.value)  # type: ignore[operator]
                if isinstance(op, ast.Invert):
                    return Const(~operand.value)  # type: ignore[operator]
            except TypeError:
                return TOP
        if isinstance(operand, Sym) and operand.origin == "iteration" and isinstance(op, (ast.USub, ast.UAdd)):
            return operand
        if isinstance(operand, TensorValue):
            return self.new_tensor()
        return TOP

    def boolean(self, frame: Frame, node: ast.BoolOp) -> object:
        value: object = TOP
        for i, operand in enumerate(node.values):
            value = self.eval(frame, operand)
            truth = self.truth(value)
            if truth is None:
                return TOP
            if isinstance(node.op, ast.And) and not truth:
                return value
            if isinstance(node.op, ast.Or) and truth:
                return value
        return value

    def compare(self, frame: Frame, node: ast.Compare) -> object:
        left = self.eval(frame, node.left)
        result: object = Const(True)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(frame, right_node)
            outcome = self.compare_one(op, left, right)
            if outcome is None:
                return TOP
            if not outcome:
                return Const(False)
            left = right
        return result

    def compare_one(self, op: ast.cmpop, left: object, right: object) -> bool | None:
        if isinstance(op, (ast.Is, ast.IsNot)):
            for a, b in ((left, right), (right, left)):
                if a == Const(None) and (isinstance(b, _OBJECTS) or (isinstance(b, Const) and b.value is not None)):
                    return isinstance(op, ast.IsNot)
            if isinstance(left, Const) and isinstance(right, Const) and left.value is None and right.value is None:
                return isinstance(op, ast.Is)
            if isinstance(left, (Instance, ClassValue, ListValue, DictValue)) and isinstance(right, (Instance, ClassValue, ListValue, DictValue)):
                same = left == right  # objects on the heap: one address, one object
                return same if isinstance(op, ast.Is) else not same
            if isinstance(left, TensorValue) and isinstance(right, TensorValue):
                same = left.addr == right.addr  # one address, one tensor (an in-place update keeps it)
                return same if isinstance(op, ast.Is) else not same
            if definitely_different(left, right) or any(a == Const(None) and isinstance(b, Sym) and b.kind not in ("", "NoneType") for a, b in ((left, right), (right, left))):
                # Two values that differ are two objects (two iterations' ``kind`` passed to
                # ``if kind is not self.kind:``), and an int is never ``None``.
                return isinstance(op, ast.IsNot)
            if isinstance(left, _KNOWN_OBJECTS) and isinstance(right, _KNOWN_OBJECTS) and left != right:
                return isinstance(op, ast.IsNot)  # two partials, functions, methods that differ
            return None
        if isinstance(op, (ast.In, ast.NotIn)):
            items = self.items(right) if isinstance(right, (TupleValue, ListValue, DictValue)) else None
            if isinstance(left, Const) and items is not None and all(isinstance(i, Const) for i in items):
                found = left in items
                return found if isinstance(op, ast.In) else not found
            return None
        if isinstance(left, Const) and isinstance(right, Const):
            try:
                return bool(_COMPARE[type(op)](left.value, right.value))
            except (TypeError, KeyError):
                return None
        return None

    def truth(self, value: object) -> bool | None:
        if isinstance(value, Const):
            try:
                return bool(value.value)
            except Exception:  # noqa: BLE001 - a value of the linted code
                return None
        if isinstance(value, TupleValue):
            return bool(value.elements)
        if isinstance(value, (Instance, Function, ClassValue, ModuleValue, CompiledValue, BoundMethod, Partial)):
            if isinstance(value, ModuleValue) or isinstance(value, Instance):
                return True if not isinstance(value, Instance) or self.class_attribute(value.cls, "__bool__") is _MISSING and self.class_attribute(value.cls, "__len__") is _MISSING else None
            return True
        return None


def _arithmetic(op: ast.operator, left: object, right: object) -> object:
    function = _BINARY.get(type(op))
    if function is None:
        return TOP
    if isinstance(op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > 64:
        return TOP
    if isinstance(op, (ast.Mult, ast.LShift)) and (isinstance(left, (str, bytes)) or isinstance(right, (str, bytes)) or isinstance(op, ast.LShift)):
        if any(isinstance(v, int) and abs(v) > 4096 for v in (left, right)):
            return TOP
    try:
        result = function(left, right)
    except Exception:  # noqa: BLE001 - arithmetic on the linted code's values
        return TOP
    if isinstance(result, (int, float, str, bool, bytes)) or result is None:
        if isinstance(result, (str, bytes)) and len(result) > 4096:
            return TOP
        return Const(result)
    return TOP


def _load(target: ast.expr) -> ast.expr:
    """The expression that reads an assignment target."""
    return ast.copy_location(type(target)(**{**{f: getattr(target, f) for f in target._fields}, "ctx": ast.Load()}), target)


def _breaks(body: list[ast.stmt]) -> bool:
    """Whether a loop's body has a ``break`` of its own (not one of a loop inside it)."""
    pending: list[ast.AST] = list(body)
    while pending:
        current = pending.pop()
        if isinstance(current, ast.Break):
            return True
        if not isinstance(current, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            pending.extend(ast.iter_child_nodes(current))
        elif isinstance(current, (ast.For, ast.AsyncFor, ast.While)):
            pending.extend(current.orelse)
    return False


# A slice bound the run does not know (``t[rank * n:(rank + 1) * n]``): the axis stays, its
# size is unknown.
_UNKNOWN_BOUND = "?"


def _is_compile(applied: object) -> bool:
    """``torch.compile`` or ``torch.compile(**options)``, as a class decorator."""
    return applied == torch_compile.COMPILE or (isinstance(applied, Partial) and applied.function == torch_compile.COMPILE)
