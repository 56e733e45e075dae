"""Cache entries per compiled region, kept as Dynamo keeps them.

At each call of a compiled object the interpreter tells ``RegionCaches``; it evaluates the
region's predicted guards (``analysis/guards.py``, sources spelled as Dynamo spells them:
``G['step']``, ``L['self'].k``, ``L['n']``) on the state at that call: ``G`` is the compiled
function's module globals, ``L`` its bound arguments. A call whose guarded values match no
entry compiles another: a predicted recompile. A guard whose value differs definitely
(``values.definitely_different``) from its value in every entry is what made it recompile;
its evidence is the write (or the call's binding) that gave it the new value.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field, replace

from recompile_lint.analysis.execution.dynamo import GuardRead, TensorMeta, Trace, Tracer, _is_enum_member, container_length, free_variables, meta_of, module_class
from recompile_lint.analysis.execution.frames import Frame, OutOfBudget
from recompile_lint.analysis.execution.interpreter import NOT_CACHED, Observer
from recompile_lint.analysis.execution.overlays.grad_mode import grad_enabled
from recompile_lint.analysis.execution.overlays import nn_containers
from recompile_lint.analysis.execution.values import (
    TOP,
    BoundMethod,
    ClassValue,
    CodeRef,
    CompiledValue,
    Const,
    DictValue,
    Function,
    Instance,
    ListValue,
    ModuleValue,
    Partial,
    Sym,
    TensorValue,
    TupleValue,
    definitely_different,
    kind_of,
)
from recompile_lint.analysis import measured
from recompile_lint.analysis.guards import PredictedGuard
from recompile_lint.analysis.index import FunctionRef
from recompile_lint.analysis.regions import CompiledRegion
from recompile_lint.analysis.variation import Evidence
from recompile_lint.models import Location

MAX_ENTRIES = 16  # past the recompile limit (8) the count is unbounded anyway
_ROOT = re.compile(r"^([GL])\['([^'\]]+)'\]")
_STEP = re.compile(r"(?:\.(\w+)|\['([^'\]]*)'\]|\[(-?\d+)\])")
_MISSING = object()


def region_key(region: CompiledRegion) -> tuple[str, str, str, int]:
    return (region.entry.path, region.entry.qualname, region.site_path, region.site.span.line)


def parse_source(source: str) -> tuple[str, str, list[tuple[str, object]]] | None:
    """``L['self'].trainer.epoch`` -> ("L", "self", [("attr", "trainer"), ("attr", "epoch")])."""
    parsed = _parsed(source)
    return None if parsed is None else (parsed[0], parsed[1], list(parsed[2]))


@functools.lru_cache(maxsize=2048)
def _parsed(source: str) -> tuple[str, str, tuple[tuple[str, object], ...]] | None:
    """``parse_source``'s answer, kept per source: a cached call reads the same entries' guards
    at every call."""
    match = _ROOT.match(source)
    if match is None:
        return None
    steps: list[tuple[str, object]] = []
    at = match.end()
    while at < len(source):
        step = _STEP.match(source, at)  # from ``at``: no copy of the rest (a chain costs its length)
        if step is None:
            return None
        attr, key, index = step.groups()
        if attr is not None:
            steps.append(("attr", attr))
        elif key is not None:
            steps.append(("key", key))
        else:
            steps.append(("key", int(index)))
        at = step.end()
    # ``_modules['blocks']``, ``_parameters['weight']``, ``_buffers['mean']``: Dynamo's spelling
    # of a submodule, a parameter and a buffer, each an attribute of the module.
    merged: list[tuple[str, object]] = []
    for kind, value in steps:
        if merged and merged[-1] in (("attr", "_modules"), ("attr", "_parameters"), ("attr", "_buffers")) and kind == "key":
            merged[-1] = ("attr", str(value))
        else:
            merged.append((kind, value))
    return match.group(1), match.group(2), tuple(merged)


@dataclass
class Observed:
    """One guard's values at the calls that made its region compile, and why they changed."""

    values: list[object] = field(default_factory=list)
    writes: list[Location] = field(default_factory=list)
    calls: list[Location] = field(default_factory=list)
    guard: GuardRead | None = None  # the guard as compiled code first read it
    use: str = ""  # a use that keeps it a constant of the graph (``range-bound``, ``op-view``)
    argument: bool = False  # ``L['name']``: one of the compiled frame's arguments (not a cell)
    # How the call that first compiled another graph for it gave that argument: ``positional``,
    # ``keyword`` or ``default`` ("" where not known): its place as the lab names it.
    passing: str = ""
    inside: bool = False  # a write that changes it runs in compiled code
    options: tuple[tuple[str, str], ...] = ()  # the options the run's compile call was given
    # Where an attribute's value lives, as the lab names it, when the run knows the object
    # holding it: ``namedtuple-field``, ``dataclass-field`` or ``object-attribute`` (a named
    # tuple's fields are realized where it is passed to a disabled helper, a dataclass's not).
    holder: str = ""
    # At each call of the region, (the value, the chunks the split it sizes made; None where
    # not known): the graphs a split size costs once symbolic are its chunk counts.
    chunks: list[tuple[object, int | None]] = field(default_factory=list)


@dataclass(frozen=True)
class Recompile:
    """A guard that made a region compile another graph in a run, and what that costs."""

    region: CompiledRegion
    guard: GuardRead
    evidence: Evidence
    graphs: int | None  # graphs the region ends up with for it (None: it reaches the limit)
    use: str = ""
    argument: bool = False
    values: tuple[object, ...] = ()  # the guarded values at the calls that compiled
    calls: int = 0  # the region's calls in the run (more than ``values``: some hit a cached entry)
    # Every value the run gave it is known, came round again (more calls than values), and
    # every call of its region ran in loops on known bounds, in a run that ended: the values
    # seen are all it takes (a finite count is exact).
    complete: bool = False
    dynamic: str | None = None  # the region's ``dynamic`` option as the run passed it (a partial's too)
    # At each call of its region, the outcomes of the tests that read it (None: not known).
    outcomes: tuple[tuple[bool | None, ...] | None, ...] = ()
    # At each call, (the value, the chunks the split it sizes made): ``Observed.chunks``.
    chunks: tuple[tuple[object, int | None], ...] = ()
    # Its value at each call of its region, and where it scales an ``interpolate`` whose
    # result a resume function takes, that result's stack slot (``Trace.resumes``).
    every: tuple[object, ...] = ()
    stack: int | None = None


class RegionTable:
    """The regions by key (``region_key``), and by the function each compiles: one table for
    every run's caches, so that a run and a compiled call cost what they find, not the number
    of regions."""

    def __init__(self, regions: list[CompiledRegion]):
        self.keyed: dict[tuple, CompiledRegion] = {}
        for region in regions:
            self.keyed[region_key(region)] = region
        self.by_entry: dict[tuple[str, str], list[tuple[tuple, CompiledRegion]]] = {}
        for key, region in self.keyed.items():
            self.by_entry.setdefault((key[0], key[1]), []).append((key, region))
        # Functions whose traced body breaks the graph below a compiled frame (a disabled call
        # in an inlined callee): Dynamo runs each call of them as a frame of its own.
        self.breaking: dict[CodeRef, Location] = {}  # the function -> where its graph breaks
        # Compiled frames that break the graph inside a loop of their own: Dynamo skips them
        # (they run eagerly, nothing of theirs is guarded; what they call is still compiled).
        self.skipped: set[CodeRef] = set()
        self._in_loops: dict[tuple[CodeRef, int], bool] = {}  # (code, node id) -> ``_in_loop``

    def in_loop(self, code: CodeRef, function: ast.AST | None, node: ast.AST) -> bool:
        """``_in_loop`` once per (function, node): a frame of its own breaks at every call."""
        key = (code, id(node))
        found = self._in_loops.get(key)
        if found is None:
            found = self._in_loops[key] = _in_loop(function, node)
        return found

    def frame_region(self, root_key: tuple, code: CodeRef, name: str) -> tuple:
        """The region of ``code`` run as a frame of its own under the compile site of the
        region ``root_key``: one cache per code object and site, whatever instance or caller
        runs it (made the first time it is asked for)."""
        key = (code.path, code.qualname, root_key[2], root_key[3])
        if key not in self.keyed:
            root = self.keyed[root_key]
            ref = FunctionRef(code.path, code.qualname)
            region = replace(root, entry=ref, name=name, reached=((ref, 0, None),), model_class="", container="",
                             frame_of=root.frame_of or root.name, break_at=self.breaking.get(code))
            self.keyed[key] = region
            self.by_entry.setdefault((key[0], key[1]), []).append((key, region))
        return key


@dataclass(frozen=True)
class Replay:
    """A cache entry's call as a later hit repeats it: the trace (its guards), what the body
    returned, the grad-mode and autocast contexts it ran under."""

    trace: Trace
    result: object
    modes: tuple[object, ...]


def _replayable(result: object) -> bool:
    """A result a hit can hand out again: constants, tensors (a new one each time), tuples."""
    if result is _MISSING:
        return False
    if isinstance(result, TupleValue):
        return all(_replayable(e) for e in result.elements)
    return result is TOP or isinstance(result, (Const, TensorValue))


def _fresh(interpreter, result: object) -> object:
    if isinstance(result, TensorValue):
        return interpreter.new_tensor(sizes=result.sizes, dtype=result.dtype, device=result.device, requires_grad=result.requires_grad, layout=result.layout)
    if isinstance(result, TupleValue):
        return TupleValue(tuple(_fresh(interpreter, e) for e in result.elements))
    return result


def _transformed(interpreter, compiled: CompiledValue, function: Function, bound: dict[str, object]) -> dict[str, object]:
    """The locals of a ``torch.func`` transform's wrapper, ``wrapped(*args, **kwargs)``, that
    calls ``function`` with ``bound``: what its guards' sources start from."""
    node = interpreter.codes.get(function.code)
    positional = [a.arg for a in node.args.posonlyargs + node.args.args] if node is not None and hasattr(node, "args") else []
    passed = tuple(bound[name] for name in positional if name in bound)
    return {"args": TupleValue(passed), "func": getattr(compiled.target, "function", TOP)}


def _passes(interpreter, guard: GuardRead, function: Function, bound: dict[str, object], where: Location) -> bool:
    """Whether ``guard`` holds now. A value the run does not know passes, as it does when the
    body runs again (``record`` compares only the guards both calls read with known values):
    an unknown value is never evidence of a recompile."""
    now = current(interpreter, guard, function, bound, where)
    return now is not _MISSING and not differs(guard.value, now)


def current(interpreter, guard: GuardRead, function: Function, bound: dict[str, object], where: Location) -> object:
    """The value ``guard`` compares, on the state now, in the form the tracer would record for
    its source if the body ran again (``dynamo.Tracer.on_read``): a constant, tensor metadata,
    an Enum member, a ``CodeRef`` for ``.__code__``, a length for ``len(...)``; top where the
    tracer would record no guard on that source (another kind of value, or one the run does
    not know: ``record`` compares only the guards both calls have). A source the walk cannot
    follow is ``_MISSING``: the body runs again."""
    source = guard.key_of or guard.source  # a dict's key guard checks the member its key is
    if source.startswith("len(") and source.endswith("._modules)"):
        # An ``nn.ModuleList`` / ``ModuleDict`` iterated: how many submodules it holds.
        value = _walk(interpreter, source[4:-len("._modules)")], function, bound, where)
        if value is _MISSING:
            return _MISSING
        names = nn_containers.keys(interpreter, value) if nn_containers.kind(interpreter, value) else None
        return TOP if names is None else Const(len(names))
    if source.startswith("len(") and source.endswith(")"):
        value = _walk(interpreter, source[4:-1], function, bound, where)
        if value is _MISSING:
            return _MISSING
        length = container_length(interpreter, value)
        return TOP if length is None else Const(length)
    if source.endswith(".__code__"):
        value = _walk(interpreter, source[: -len(".__code__")], function, bound, where)
        if value is _MISSING:
            return _MISSING
        return value.code if isinstance(value, Function) else TOP
    value = _walk(interpreter, source, function, bound, where)
    if value is _MISSING:
        return _MISSING
    if guard.kind == "TYPE_MATCH":
        return module_class(value) if isinstance(value, Instance) else TOP
    if isinstance(value, TensorValue):
        return meta_of(value)
    if isinstance(value, Const) or (isinstance(value, Sym) and value.origin == "iteration"):
        return value
    if isinstance(value, Instance) and _is_enum_member(interpreter, value):
        return value
    return TOP


def _holder(interpreter, source: str, trace: Trace) -> str:
    """The lab's location of ``source``'s value when it is one attribute of an object the run
    knows: a named tuple's field, a dataclass's field, or a plain object's attribute."""
    parsed = parse_source(source)
    if parsed is None or len(parsed[2]) != 1 or parsed[2][0][0] != "attr":
        return ""
    owner = _walk(interpreter, f"{parsed[0]}[{parsed[1]!r}]", trace.function, trace.bound, trace.where)
    if not isinstance(owner, Instance) or interpreter.is_nn_module(owner.cls):
        return ""
    if interpreter.class_attribute(owner.cls, "__tuple__") == Const(True):
        return "namedtuple-field"
    if interpreter.class_attribute(owner.cls, "__fields__") is not interpreter.MISSING:
        return "dataclass-field"
    return "object-attribute"


def _walk(interpreter, source: str, function: Function, bound: dict[str, object], where: Location) -> object:
    """The value of a guard's source now, read as compiled code reads it: the root as
    ``evaluate`` finds it, each attribute through the interpreter's own lookup (a submodule of
    a package, a property, a class attribute, an ``OptimizedModule``'s original), each item
    as ``get_item``; nothing is told and any write is undone. ``_MISSING`` where the source
    is not one the walk can follow."""
    if _CLASS_DEFAULT.match(source):
        value, _ = evaluate(interpreter, source, function, bound, where)
        return value
    parsed = parse_source(source)
    if parsed is None or len(parsed[2]) > MAX_WALK:
        return _MISSING
    root, name, steps = parsed
    value, _ = evaluate(interpreter, f"{root}[{name!r}]", function, bound, where)
    if not steps:
        return value
    interpreter.probing += 1
    interpreter.heap.open()
    try:
        frame = Frame(function.code.path, "", -1, interpreter.globals.get(function.module, -1))
        for kind, step in steps:
            if isinstance(value, CompiledValue) and isinstance(value.target, Instance):
                value = value.target
            if kind == "attr" and isinstance(value, Function) and step in ("__defaults__", "__closure__"):
                # What a function holds: its defaults, its closure cells (in ``co_freevars`` order).
                if step == "__defaults__":
                    value = TupleValue(tuple(interpreter.defaults_of(value)[0] or ()))
                else:
                    value = TupleValue(tuple(next((interpreter.heap.read(c, n) for c in value.closure if interpreter.heap.has(c, n)), TOP) for n in free_variables(interpreter, value)))
            elif kind == "attr" and step == "cell_contents":
                pass  # a cell of ``__closure__``: the walk holds its contents already
            elif isinstance(value, (Partial, BoundMethod, TupleValue, _Keywords)) and not (isinstance(value, TupleValue) and kind == "attr"):
                value = _held(value, kind, step)
            elif kind == "attr":
                value = interpreter.get_attribute(frame, value, str(step))
            else:
                value = interpreter.get_item(value, Const(step))
            if value is TOP:
                return TOP
        return value
    except (OutOfBudget, Exception):  # noqa: BLE001 - a property of the linted code
        return _MISSING
    finally:
        interpreter.heap.close()
        interpreter.probing -= 1


class RegionCaches(Observer):
    """The cache entries of every region during one entry's run, built from the guards each
    compiled call installs (``dynamo.Tracer``)."""

    def __init__(self, regions: list[CompiledRegion], guards: list[PredictedGuard], entry: str, table: RegionTable | None = None):
        self.entry = entry  # what runs, for the evidence's words (``train.py``)
        # ``table``: the regions by key, built once for every run (``RegionTable(regions)``).
        self.table = table if table is not None else RegionTable(regions)
        self.regions: dict[tuple, CompiledRegion] = self.table.keyed
        self.tracer = Tracer()
        self.entries: dict[tuple, list[dict[str, GuardRead]]] = {}
        self.modes: dict[tuple, list[bool | None]] = {}  # the grad mode of each entry (None: unknown)
        self.observed: dict[tuple[tuple, str], Observed] = {}
        self.region_calls: dict[tuple, int] = {}  # calls of each region whose body ran
        self.options: dict[tuple, tuple[tuple[str, str], ...]] = {}  # each region's options, as the run passed them
        # Every value each guard had at the calls of its region (sameness, see ``held``).
        self.values: dict[tuple[tuple, str], list[object]] = {}
        self.entered: set[tuple[str, str]] = set()  # (file, qualname) of the functions compiled code ran
        self.holders: set[tuple[tuple, str]] = set()  # (region, source) read holding a partial, a bound method, a module
        # (region, source) -> calls whose trace read it unguarded (``Trace.unguarded``).
        self.unguarded: dict[tuple[tuple, str], int] = {}
        # (region, source) -> at each call, the outcomes of the tests that read it (None: unknown).
        self.outcomes: dict[tuple[tuple, str], list[tuple[bool | None, ...] | None]] = {}
        self.calls = 0
        self.symbolic: set[tuple] = set()  # regions called inside a loop on iteration symbols
        self.finished = True  # the run ended (not out of budget, no exception)
        # Per region, per entry: what a call that hits it returns without running the body
        # again (``cached_call``), or None where the body wrote to what its caller sees.
        self.replays: dict[tuple, list[Replay | None]] = {}
        self._marks: list[int] = []  # ``calls`` once each compiled call being run began (counted)
        self.replayed = 0  # calls answered by a cache entry (for tests and measures)
        self.chunks: dict[tuple[tuple, str], list[tuple[object, int | None]]] = {}  # see ``Observed.chunks``
        self.resumes: dict[tuple[tuple, str], int] = {}  # see ``Trace.resumes``
        # Per region: calls that found entries to check (``warm``), and calls that found none
        # because ``torch._dynamo.reset()`` emptied its cache after an earlier call (``emptied``).
        self.warm: dict[tuple, int] = {}
        self.emptied: dict[tuple, int] = {}
        self._reset: set[tuple] = set()  # regions called, then reset, not called since

    def on_break(self, interpreter, frame: Frame, node: ast.AST | None = None) -> None:
        """A graph break in an inlined callee: Dynamo breaks its caller at the call, and so on up
        to the compiled frame, so each function between them runs as a frame of its own from
        then on (measured on torch 2.13: a block's ``forward`` with a disabled call, inlined
        from a compiled model's loop over its blocks, compiles on its own, with a cache that
        every block shares, ``self.idx == 0``, ``self.idx == 1``, ...). A break in the compiled
        frame itself resumes in that frame's own resume function."""
        if not self.tracer.traces:
            return
        chain: list[CodeRef] = []
        current, at = frame, node
        while current.locals not in self.tracer.compiled_frames:
            made = interpreter.frame_calls.get(current.locals)
            if made is None or not isinstance(made.function, Function) or len(chain) >= 8:
                return  # how this frame was entered is not known: nothing is claimed
            chain.append(made.function.code)
            current, at = made.caller, made.node
        where = interpreter.location(frame, node, "call") if node is not None else None
        if chain:
            self.tracer.traces[-1].broke = True
        for code in chain:
            self.table.breaking.setdefault(code, where)  # type: ignore[arg-type]
        # Where the compiled frame breaks (at the break, or at the call that led to it) sits in
        # a loop of its own: torch 2.13 skips that frame ("graph break in a for/while loop").
        code = self.tracer.frame_code(current.locals)
        if code is not None and at is not None and self.table.in_loop(code, interpreter.codes.get(code), at):
            self.table.skipped.add(code)

    def own_frame(self, interpreter, callee: Function) -> CompiledValue | None:
        if callee.code not in self.table.breaking or not self.tracer.traces:
            return None
        trace = self.tracer.traces[-1]
        if callee.code == trace.function.code or not trace.region_keys:
            return None
        root_key = trace.region_keys[0]
        key = self.table.frame_region(root_key, callee.code, self._display_name(interpreter, callee, self.table.keyed[root_key]))
        region = self.table.keyed[key]
        return CompiledValue(callee, key[2], region.site.span.line, self.options.get(root_key, ()))

    @staticmethod
    def _display_name(interpreter, function: Function, root: CompiledRegion) -> str:
        """``module.qualname``, as regions are named: the module the root's name gives where
        they share a file, else the one the function's globals are run as."""
        qualname = function.code.qualname
        if function.code.path == root.entry.path and root.name.endswith("." + root.entry.qualname):
            return root.name[: -len(root.entry.qualname)] + qualname
        module = interpreter.heap.read(interpreter.globals.get(function.module, -1), "__name__", None) if function.module else None
        named = isinstance(module, Const) and isinstance(module.value, str) and module.value != "__main__"
        return f"{module.value}.{qualname}" if named else qualname  # type: ignore[union-attr]

    def regions_called(self, compiled: CompiledValue, function: Function) -> list[CompiledRegion]:
        found = []
        for key, region in self.table.by_entry.get((function.code.path, function.code.qualname), ()):
            span = region.site.span
            end = max(span.end_line, span.line)
            here = key[2] == compiled.path and (span.line <= compiled.line <= end or region.site.decorated == function.code.qualname)
            # Compiled inside a project wrapper: the region's site is the wrapper's call.
            through = any(path == key[2] and span.line <= line <= end for path, line in compiled.callers)
            if here or through:
                found.append(region)
        return found

    # ---- what the interpreter tells ------------------------------------------------------

    def on_compiled_call(self, interpreter, compiled: CompiledValue, function: Function, bound: dict[str, object], where: Location) -> None:
        self.calls += 1
        keys = [region_key(region) for region in self.regions_called(compiled, function)]
        if interpreter.call_loops:
            self.symbolic.update(keys)
        for key in keys:
            self.options.setdefault(key, compiled.options)
        self.tracer.begin(keys, function, bound, where, interpreter, compiled)
        self.tracer.traces[-1].passed = dict(interpreter.call_writes)
        self.tracer.traces[-1].given = interpreter.call_given
        self.tracer.traces[-1].grad_mode = grad_enabled(interpreter.grad_modes)
        self._marks.append(self.calls)

    def on_compiled_end(self, interpreter) -> None:
        trace = self.tracer.end()
        if trace is None:
            return
        mark = self._marks.pop() if self._marks else -1
        result, touched = interpreter.compiled_outcome
        # A body that wrote to an older store, ran another compiled call, or returned what
        # the run cannot hand out twice is run again at every call.
        replay = None
        if not touched and mark == self.calls and _replayable(result) and not trace.broke:
            replay = Replay(trace, result, tuple(interpreter.grad_modes))
        for key in trace.region_keys:
            entries = len(self.entries.get(key, ()))
            self.record(interpreter, key, trace)
            if len(self.entries.get(key, ())) > entries:
                replays = self.replays.setdefault(key, [])
                replays.extend([None] * (entries - len(replays)))
                replays.append(replay)

    def cached_call(self, interpreter, compiled: CompiledValue, function: Function, bound: dict[str, object], where: Location, told: bool = True) -> object:
        """As Dynamo runs a call: the guards of each cache entry, evaluated on the state now;
        an entry whose guards all pass runs its graph. Where that entry's
        body wrote to nothing older than its call, the call is that entry's again (its guards,
        its result) and the body is not run: a driver's thousandth step costs what its guards
        cost. Anything else runs the body."""
        keys = [region_key(region) for region in self.regions_called(compiled, function)]
        if not keys:
            return NOT_CACHED
        hit: Replay | None = None
        for key in keys:
            found = self._entry_hit(interpreter, key, compiled, function, bound, where)
            if found is None or (hit is not None and found.trace is not hit.trace):
                return NOT_CACHED
            hit = found
        assert hit is not None
        if not told:
            return _fresh(interpreter, hit.result)  # a probe's call: nothing is counted
        self.calls += 1
        self.replayed += 1
        if interpreter.call_loops:
            self.symbolic.update(keys)
        trace = replace(hit.trace, where=where, passed=dict(interpreter.call_writes), given=interpreter.call_given)
        for key in keys:
            self.record(interpreter, key, trace)
        return _fresh(interpreter, hit.result)

    def _entry_hit(self, interpreter, key: tuple, compiled: CompiledValue, function: Function, bound: dict[str, object], where: Location) -> Replay | None:
        entries = self.entries.get(key, [])
        for index, replay in enumerate(self.replays.get(key, [])):
            if replay is None or replay.modes != tuple(interpreter.grad_modes) or replay.trace.function.code != function.code:
                continue
            args = {"fn": compiled.target} if replay.trace.wrapped else (_transformed(interpreter, compiled, function, bound) if replay.trace.transformed else bound)
            if all(_passes(interpreter, guard, function, args, where) for guard in entries[index].values()):
                return replay
        return None

    def on_read(self, interpreter, frame, node, value) -> None:
        self.tracer.on_read(interpreter, frame, node, value)

    def on_call(self, interpreter, frame, node, callee, args, kwargs) -> None:
        self.tracer.on_call(interpreter, frame, node, callee, args, kwargs)

    def on_frame(self, interpreter, frame, function, args, bound, caller) -> None:
        self.entered.add((function.code.path, function.code.qualname))
        self.tracer.on_frame(interpreter, frame, function, args, bound, caller)

    def on_attribute(self, interpreter, frame, node, base) -> None:
        self.tracer.on_attribute(interpreter, frame, node, base)

    def on_item(self, interpreter, frame, node, base, key) -> None:
        self.tracer.on_item(interpreter, frame, node, base, key)

    def on_test(self, interpreter, frame, test, truth) -> None:
        self.tracer.on_test(interpreter, frame, test, truth)

    def on_iterate(self, interpreter, frame, stmt, index, scope=None) -> None:
        self.tracer.on_iterate(interpreter, frame, stmt, index, scope)

    def on_reset(self, interpreter) -> None:
        """Dynamo forgets every entry: the next call of each region compiles afresh."""
        self._reset.update(key for key, entries in self.entries.items() if entries)
        self.entries.clear()
        self.modes.clear()
        self.replays.clear()

    # ---- cache entries -------------------------------------------------------------------

    def record(self, interpreter, key: tuple, trace: Trace) -> None:
        """One call of the region with the guards it read: a cached entry's guards all pass,
        or it compiles another (a guard whose value differs from every entry's made it)."""
        if trace.function.code in self.table.skipped:
            return  # Dynamo skips the frame: it runs eagerly, with no entry to check
        guards = trace.guards
        self.region_calls[key] = self.region_calls.get(key, 0) + 1
        self.holders.update((key, source) for source in trace.holders)
        for source in trace.unguarded - trace.guards.keys():
            self.unguarded[(key, source)] = self.unguarded.get((key, source), 0) + 1
        for source, guard in guards.items():
            self.values.setdefault((key, source), []).append(_same_key(interpreter, guard))
            if guard.key_of and guard.key_of not in guards:
                # A dict's key guard checks the member its key is: that member's value too.
                self.values.setdefault((key, guard.key_of), []).append(_same_key(interpreter, guard))
            if source in trace.chunks:
                self.chunks.setdefault((key, source), []).append((guard.value, trace.chunks[source]))
            if source in trace.resumes:
                self.resumes.setdefault((key, source), trace.resumes[source])
            if guard.branch:
                self.outcomes.setdefault((key, source), []).append(tuple(trace.outcomes.get(source, ())) or None)
        entries = self.entries.setdefault(key, [])
        modes = self.modes.setdefault(key, [])
        if entries:
            self.warm[key] = self.warm.get(key, 0) + 1
        elif key in self._reset:
            self._reset.discard(key)
            self.emptied[key] = self.emptied.get(key, 0) + 1
        if not entries:
            entries.append(guards)
            modes.append(trace.grad_mode)
            return
        same_mode = [m is None or trace.grad_mode is None or m == trace.grad_mode for m in modes]
        if any(same and not any(differs(entry[s].value, g.value) for s, g in guards.items() if s in entry) for entry, same in zip(entries, same_mode)):
            return  # an entry's guards all pass: the cached graph runs
        if not any(same_mode):
            # Dynamo checks the global state first and reports it (``GLOBAL_STATE changed:
            # grad_mode``): a call in another grad mode compiles one graph whatever else it
            # changes, and that cost is the grad-mode family's (RCL301), not another guard's.
            if len(entries) < MAX_ENTRIES:
                entries.append(guards)
                modes.append(trace.grad_mode)
            return
        for source, guard in self.failing(entries, guards, _aliases(trace.bound), all_of=True):
            held = [entry[source] for entry in entries if source in entry]
            observed = self.observed.get((key, source))
            if observed is None:
                observed = Observed(values=[held[0].value], guard=held[0])
                observed.argument = _root_name(source) in trace.bound and _strip(source).startswith("L[")
                if observed.argument and trace.given is not None:
                    observed.passing = trace.given.get(_root_name(source), "")
                observed.options = self.options.get(key, ())
                observed.holder = _holder(interpreter, guard.key_of or _strip(source), trace)
                self.observed[(key, source)] = observed
            observed.values.append(guard.value)
            observed.use = observed.use or trace.concrete.get(source, "") or trace.concrete.get(_strip(source), "")
            # A dict's key guard changes with the member its key must be: that member's write.
            _, origin = evaluate(interpreter, guard.key_of or _strip(source), trace.function, trace.bound, trace.where)
            origins = [origin]
            if origin == trace.where and _strip(source) == f"L[{_root_name(source)!r}]":
                origins = trace.passed.get(_root_name(source)) or origins  # the local the call passed
            for origin in origins:
                if origin is not None and origin not in observed.writes:
                    observed.writes.append(origin)
                    if (origin.path, origin.line) in interpreter.traced:
                        observed.inside = True  # compiled code changes it itself
            if trace.where not in observed.calls:
                observed.calls.append(trace.where)
        if len(entries) < MAX_ENTRIES:
            entries.append(guards)
            modes.append(trace.grad_mode)

    @staticmethod
    def failing(entries: list[dict[str, GuardRead]], guards: dict[str, GuardRead], aliases: frozenset[str] = frozenset(), all_of: bool = False) -> list[tuple[str, GuardRead]]:
        """The guard a recompile is reported on, as Dynamo reports it: the first one (in the
        order compiled code read them) whose value differs from every entry's; else the first
        that fails the most recent entry. Tensors are checked together, in the order of
        Dynamo's ``Guard.sort_key`` (locals first, then the shorter source, then by name;
        measured on torch 2.13: ``L['p']`` before ``L['gradient']``, ``L['aa']`` before
        ``L['zz']``), so the tensor reported is the first of the failing ones in that order;
        an argument that is the same tensor as an earlier one (``f(doc, doc, doc)``) is guarded
        as that one (``aliases``)."""
        for new, candidates in (
            (True, [(s, g) for s, g in guards.items() if any(s in e for e in entries) and all(differs(e[s].value, g.value) for e in entries if s in e)]),
            (False, [(s, g) for s, g in guards.items() if s in entries[-1] and differs(entries[-1][s].value, g.value)]),
        ):
            if candidates:
                source, guard = candidates[0]
                tensors = [c for c in candidates if c[1].kind == "TENSOR_MATCH" and c[0] not in aliases]
                if guard.kind == "TENSOR_MATCH":
                    source, guard = min(tensors or [(source, guard)], key=lambda c: _tensor_order(c[0]))
                if not (all_of and new) or guard.kind == "TENSOR_MATCH":
                    return [(source, guard)]
                # Each Python value that differs from every entry's is a cause of its own (fixing
                # the first, the next still recompiles): Dynamo's first, then the others in read
                # order. Not behind a tensor's change (what its sizes give may be symbolic), and
                # tensors change shape together: only the one Dynamo reports.
                # A value read off another that changes (``opts['limit'].value`` of a new Enum
                # member) is that change, not another cause.
                roots = [_strip(c[0]) for c in candidates]
                rest = [
                    c for c in candidates
                    if c[1].kind != "TENSOR_MATCH" and c[0] != source
                    and not any(_strip(c[0]).startswith(r) and _strip(c[0])[len(r):][:1] in (".", "[") for r in roots)
                ]
                return [(source, guard)] + rest
        return []

    def recompiles(self) -> list[Recompile]:
        """Each guard that made a region recompile, with its evidence and its cost."""
        out = []
        for (key, source), observed in self.observed.items():
            region = self.regions[key]
            if any(code.path == key[0] and code.qualname == key[1] for code in self.table.skipped):
                continue  # skipped after its first calls: it keeps no graph to recompile
            observed.chunks = self.chunks.get((key, source), [])
            guard = observed.guard
            assert guard is not None
            count = self.count(key, observed)
            dynamic = option(region, observed, "dynamic")
            graphs = graphs_of(region, guard, observed, count, dynamic)
            complete = (
                self.finished
                and key not in self.symbolic
                and count is not None
                and self.region_calls.get(key, 0) > count  # the values came round again: a schedule
                and all(isinstance(v, (Const, TensorMeta, CodeRef)) for v in observed.values)
            )
            out.append(Recompile(
                region, guard, self._evidence(region, observed, count, guard), graphs, observed.use, observed.argument,
                tuple(observed.values), calls=self.region_calls.get(key, 0), complete=complete, dynamic=dynamic,
                outcomes=tuple(self.outcomes.get((key, source), ())), chunks=tuple(observed.chunks),
                every=tuple(self.values.get((key, source), ())), stack=self.resumes.get((key, source)),
            ))
        return out

    def evidence(self) -> dict[tuple[tuple, str], Evidence]:
        """Each guard that made a region recompile, as the guard model's evidence."""
        out = {}
        for (key, source), observed in self.observed.items():
            out[(key, source)] = self._evidence(self.regions[key], observed, self.count(key, observed), observed.guard)
        return out

    def count(self, key: tuple, observed: Observed) -> int | None:
        """How many values the guard takes (None: unbounded): an iteration symbol is a fresh
        value per iteration; an int that moves by the same step at every call of the region
        (three calls or more) is a counter, as many values as the loop that calls it has
        iterations, whatever number this run happened to know; else the values seen."""
        values = observed.values
        if any(isinstance(v, Sym) for v in values):
            return None
        distinct = len(set(values))
        if distinct >= 3 and distinct == len(values) == self.region_calls.get(key, 0) and _counter(values):
            return None
        return distinct

    def _evidence(self, region: CompiledRegion, observed: Observed, count: int | None, guard: GuardRead | None) -> Evidence:
        short = region.name.rsplit(".", 1)[-1]
        if count is None:
            why = f"a different value at each call of `{short}` when `{self.entry}` runs"
        else:
            why = f"{count} different values at the calls of `{short}` when `{self.entry}` runs"
        locations = [
            Location(w.path, w.line, w.column, "write", f"this write gives it a new value between calls of `{short}`", w.end_line, w.end_column)
            for w in observed.writes[:3]
        ]
        locations += [Location(c.path, c.line, c.column, "call", f"this call of `{short}` compiles another graph", c.end_line, c.end_column) for c in observed.calls[:1]]
        locations.append(region.site_location())
        kinds = frozenset(k for k in (_kind(v) for v in observed.values) if k)
        return Evidence(tuple(locations), count, why, inside=observed.inside, kinds=kinds)


def _counter(values: list[object]) -> bool:
    """Ints that move by one nonzero step each time (``0, 1, 2, 3``)."""
    numbers = [v.value for v in values if isinstance(v, Const) and type(v.value) is int]
    if len(numbers) != len(values):
        return False
    steps = {b - a for a, b in zip(numbers, numbers[1:])}
    return len(steps) == 1 and 0 not in steps


def _aliases(bound: dict[str, object]) -> frozenset[str]:
    """``L['k']`` for each argument that is the same tensor as an earlier argument."""
    first: dict[int, str] = {}
    out = set()
    for name, value in bound.items():
        if isinstance(value, TensorValue):
            if value.addr in first:
                out.add(f"L[{name!r}]")
            else:
                first[value.addr] = name
    return frozenset(out)


def _tensor_order(source: str) -> tuple[bool, int, str]:
    """Dynamo's ``Guard.sort_key`` for a tensor's source: locals first, then its length, then it."""
    return (not source.startswith("L["), len(source), source)


def _kind(value: object) -> str:
    if isinstance(value, TensorMeta):
        return "tensor"
    if isinstance(value, Instance):
        return "enum"  # the only objects a guard holds (``ID_MATCH`` on a member)
    if isinstance(value, CodeRef):
        return "function"
    return kind_of(value)


def _strip(source: str) -> str:
    """The value a guard source reads: ``len(L['xs'])`` -> ``L['xs']``, ``L['f'].__code__`` -> ``L['f']``."""
    if source.startswith("len(") and source.endswith(")"):
        source = source[4:-1]
    if source.endswith(".__code__"):
        source = source[: -len(".__code__")]
    return source


def _root_name(source: str) -> str:
    match = _ROOT.match(_strip(source))
    return match.group(2) if match else ""


def differs(a: object, b: object) -> bool:
    """Whether a guard that held ``a`` fails on ``b``: two different concrete values, two
    iterations of a loop, two functions' code, tensors whose known metadata differ, or a tensor
    where a constant (``None``, a number) was, and back."""
    if isinstance(a, CodeRef) and isinstance(b, CodeRef):
        return a != b
    if isinstance(a, Instance) and isinstance(b, Instance):
        return a != b  # Enum members (``ID_MATCH``): each is an object of its own
    if isinstance(a, TensorMeta) and isinstance(b, TensorMeta):
        return bool(tensor_change(a, b))
    if isinstance(a, TensorMeta) or isinstance(b, TensorMeta):
        # A tensor's guard checks its type, a constant's its value and type: a Python number
        # (or ``None``) where a tensor was, or back, fails either.
        other = b if isinstance(a, TensorMeta) else a
        return isinstance(other, Const)
    return definitely_different(a, b)


def tensor_change(a: TensorMeta, b: TensorMeta) -> str:
    """What differs definitely between two tensors' metadata: ``rank``, ``dtype``, ``device``,
    ``requires_grad``, ``size`` (same rank), ``stride`` (a transposed tensor where a
    contiguous one was), or ""."""
    if a.sizes is not None and b.sizes is not None:
        if len(a.sizes) != len(b.sizes):
            return "rank"
    if a.dtype and b.dtype and a.dtype != b.dtype:
        return "dtype"
    if a.device and b.device and a.device != b.device:
        return "device"
    if a.requires_grad is not None and b.requires_grad is not None and a.requires_grad != b.requires_grad:
        return "requires_grad"
    if a.sizes is not None and b.sizes is not None and any(x is not None and y is not None and x != y for x, y in zip(a.sizes, b.sizes)):
        return "size"
    if a.layout and b.layout and a.layout != b.layout:
        return "stride"
    return ""


_CLASS_DEFAULT = re.compile(r"^dict\(type\((.+)\)\.__dict__\)\['(\w+)'\]\.__defaults__\[(\d+)\]$")


def evaluate(interpreter, source: str, function: Function, bound: dict[str, object], where: Location) -> tuple[object, Location | None]:
    """A guard's value at a call, and the write (or the call's binding) that set it."""
    method_default = _CLASS_DEFAULT.match(source)
    if method_default is not None:
        # A default of a method of the object's class: its ``__defaults__`` now, and their write.
        owner, _ = evaluate(interpreter, method_default.group(1), function, bound, where)
        method = interpreter.class_attribute(owner.cls, method_default.group(2)) if isinstance(owner, Instance) else None
        if not isinstance(method, Function):
            return TOP, None
        defaults, _ = interpreter.defaults_of(method)
        at = int(method_default.group(3))
        store = interpreter.written_store(method)
        origin = interpreter.heap.origin(store, "__defaults__") if store is not None and interpreter.heap.has(store, "__defaults__") else None
        return (defaults[at], origin) if defaults is not None and at < len(defaults) else (TOP, None)
    parsed = parse_source(source)
    if parsed is None:
        return TOP, None
    root, name, steps = parsed
    heap = interpreter.heap
    origin: Location | None
    if root == "L" and name not in bound:
        # A closure cell of the compiled function: its last write.
        cells = next((c for c in function.closure if heap.has(c, name)), None)
        value, origin = (heap.read(cells, name), heap.origin(cells, name)) if cells is not None else (TOP, None)
    elif root == "L":
        value, origin = bound.get(name, TOP), where
        origin = _default_write(interpreter, function, name, value) or origin
    else:
        addr = interpreter.globals.get(function.module, -1)
        if name.startswith("__import_"):
            value = _imported(interpreter, name)
            origin = None
        else:
            value = heap.read(addr, name, TOP)
            origin = heap.origin(addr, name)
    for kind, step in steps:
        if isinstance(value, CompiledValue) and isinstance(value.target, Instance):
            value = value.target  # OptimizedModule: its attributes are the original's
        if isinstance(value, (Partial, BoundMethod, TupleValue, _Keywords)):
            # What a partial or a bound method holds is fixed when it is made: the write that
            # set the holder set it too.
            value = _held(value, kind, step)
            continue
        store = _store_of(interpreter, value)
        if kind == "attr" and step == "_modules" and nn_containers.kind(interpreter, value):
            # ``len(<container>._modules)``: the container itself, last resized where its keys were.
            origin = heap.origin(value.addr, nn_containers.KEYS) if heap.has(value.addr, nn_containers.KEYS) else origin  # type: ignore[union-attr]
            continue
        if kind == "attr" and isinstance(value, Instance) and not heap.has(value.addr, step):
            value, origin = _quiet_attribute(interpreter, value, str(step)), None
            continue
        if store is None or not heap.has(store, step):
            return TOP, None
        value, origin = heap.read(store, step), heap.origin(store, step)
    return value, origin


@dataclass(frozen=True)
class _Keywords:
    """``p.keywords`` of a partial, while ``evaluate`` walks a source."""

    items: tuple[tuple[str, object], ...]


def _held(value: object, kind: str, step: object) -> object:
    """One step into what a partial (``.func``, ``.args[i]``, ``.keywords['k']``), a bound
    method (``.__self__``, ``.__func__``) or a tuple holds; top for any other step."""
    if isinstance(value, Partial) and kind == "attr":
        if step == "func":
            return value.function
        if step == "args":
            return TupleValue(value.args)
        if step == "keywords":
            return _Keywords(value.keywords)
    if isinstance(value, BoundMethod) and kind == "attr":
        if step == "__self__":
            return value.receiver
        if step == "__func__":
            return value.function
    if isinstance(value, TupleValue) and kind == "key" and isinstance(step, int) and -len(value.elements) <= step < len(value.elements):
        return value.elements[step]
    if isinstance(value, _Keywords) and kind == "key":
        return dict(value.items).get(str(step), TOP)
    return TOP
def _default_write(interpreter, function: Function, name: str, value: object) -> Location | None:
    """Where the project wrote the default the argument took (``f.__defaults__ = (h,)``), when
    its value is the one bound: the write that changed it between calls, not the call."""
    store = interpreter.written_store(function)
    node = interpreter.codes.get(function.code)
    if store is None or node is None or not hasattr(node, "args"):
        return None
    spec = node.args
    positional = [a.arg for a in spec.posonlyargs + spec.args]
    defaults, kw_defaults = interpreter.defaults_of(function)
    if name in positional and defaults and interpreter.heap.has(store, "__defaults__"):
        at = positional.index(name) - (len(positional) - len(defaults))
        if 0 <= at < len(defaults) and defaults[at] == value:
            return interpreter.heap.origin(store, "__defaults__")
    if kw_defaults and name in kw_defaults and kw_defaults[name] == value and interpreter.heap.has(store, "__kwdefaults__"):
        return interpreter.heap.origin(store, "__kwdefaults__")
    return None


def _store_of(interpreter, value: object) -> int | None:
    if isinstance(value, (Instance, ListValue, DictValue, ClassValue)):
        return value.addr
    if isinstance(value, ModuleValue) and value.path:
        return interpreter.globals.get(value.path)
    return None


def _imported(interpreter, mangled: str) -> object:
    """``G['__import_pkg_dot_mod']``: the module ``pkg.mod`` as the compiled code's globals hold it."""
    dotted = mangled[len("__import_") :].replace("_dot_", ".")
    for path, module in interpreter.modules.items():
        if module.name == dotted:
            return module
        if dotted == "__main__" and interpreter.heap.read(interpreter.globals.get(path, -1), "__name__", None) == Const("__main__"):
            return module  # the script the run started from
    return TOP


def _quiet_attribute(interpreter, value: Instance, attr: str) -> object:
    """An attribute the instance does not hold (a property, a class attribute), read without
    telling the caches and with what it writes undone."""
    interpreter.probing += 1
    interpreter.heap.open()
    try:
        frame = Frame(value.cls.path, "", -1, interpreter.globals.get(value.cls.path, -1))
        return interpreter.get_attribute(frame, value, attr)
    except (OutOfBudget, Exception):  # noqa: BLE001 - a property of the linted code
        return TOP
    finally:
        interpreter.heap.close()
        interpreter.probing -= 1

RECOMPILE_LIMIT = 8
MAX_WALK = 32  # steps a cached call follows a guard's source; a longer one runs the body again
# Op arguments that take a symbolic int (measured on torch 2.13): the graphs an int argument,
# cell or field given to them costs under automatic dynamic, however many values it takes.
SYMBOLIC_SIZE_USES = {"op-view": 2, "op-reshape": 2, "op-split": 3, "op-interpolate-size": 2, "op-interpolate-scale": 2}
# Uses that keep a tensor's size a Python int even under ``dynamic=True``: iterating over a
# tensor, a ``range()`` bound or a key taken from a size.
SIZE_PINNING_USES = frozenset({"range-bound", "dict-key", "list-index", "iteration"})
# The lab's uses (``docs/lab.md``) a value of each type can be read with.
# (A ``range()`` bound or an op argument is seen when it happens: ``Observed.use``.)
_USES = {
    "int": ("arithmetic", "branch", "dict-key"),
    "float": ("arithmetic", "branch"),
    "bool": ("arithmetic", "branch", "dict-key"),
    "str": ("branch", "dict-key", "getattr", "len"),
}
_LAB_USES = {"op-interpolate": ("op-interpolate-size", "op-interpolate-scale")}
_LITERALS = ("True", "False", "None")


def option(region: CompiledRegion, observed: Observed, name: str) -> str | None:
    """A compile option of the region: as the run's compile call got it where that is a literal
    (``register(fn)`` calling ``torch.compile(fn, dynamic=False)`` in a wrapper whose call is
    the region's site), else as written at the site (None when absent)."""
    ran = dict(observed.options).get(name)
    if ran in _LITERALS:
        return ran
    return region.site.option(name)


def _same_key(interpreter, guard: GuardRead) -> object:
    """What the sameness rule compares of a guard's value across calls and runs: a Python
    constant itself; an Enum member its ID_MATCH checks, by class and member name (the same
    member in every run, whatever heap address it has there); anything else as it is (it is no
    constant, and leaves the evidence standing)."""
    value = guard.value
    if guard.kind == "ID_MATCH" and isinstance(value, Instance) and interpreter.heap.has(value.addr, "_name_"):
        name = interpreter.heap.read(value.addr, "_name_")
        if isinstance(name, Const):
            return Const(("enum member", value.cls.path, value.cls.qualname, name.value))
    return value


def graphs_of(region: CompiledRegion, guard: GuardRead, observed: Observed, count: int | None, dynamic: str | None = None) -> int | None:
    """Graphs the region ends up with for this guard (None: it reaches ``recompile_limit``):
    the lab's measured cell where every candidate cell was measured alike, else torch 2.13's
    rules (``/docs/torch-2.13.md``): automatic dynamic makes an int or float argument, cell or
    object field an input after one recompile, a global or ``nn.Module`` attribute stays a
    constant, a tensor's size goes dynamic once, its rank, dtype, device never do."""
    if count is not None and count > RECOMPILE_LIMIT:
        count = None
    if dynamic is None:
        dynamic = option(region, observed, "dynamic")
    if observed.use == "op-split" and dynamic != "False":
        # An int argument, cell or field, or a tensor's size, that sizes a ``split``: once
        # symbolic, its graphs are the chunk counts the calls made (where all are known).
        free = guard.kind == "TENSOR_MATCH" or (_value_kind(observed) == "int" and not (guard.source.startswith("G[") or guard.module_rooted))
        split = split_graphs(observed, symbolic=dynamic == "True") if free else None
        if split is not None:
            return split if count is None else min(split, count)
    # A parameter's or a registered buffer's shapes are static: one graph per shape, whatever
    # a cell measured for a plain tensor of the same place says.
    static = static_shapes(guard, observed.values)
    if static and _tensor_change(observed) == "size":
        return count
    if guard.kind == "TENSOR_MATCH" and dynamic != "False" and observed.use not in SIZE_PINNING_USES and not static:
        specialised = _small_size_graphs(observed, symbolic=dynamic == "True")
        if specialised is not None:
            return specialised if count is None else min(specialised, count)
    measured_count = _measured(region, guard, observed, count, dynamic)
    if measured_count != "unmeasured":
        return measured_count  # type: ignore[return-value]
    if guard.kind in ("ID_MATCH", "LENGTH_CHECK", "TYPE_MATCH"):
        return count
    if guard.kind == "TENSOR_MATCH":
        change = _tensor_change(observed)
        if change == "size":
            if dynamic == "False" or observed.use in SIZE_PINNING_USES:
                return count  # specialised: one graph per size
            if observed.use in ("op-split", "len"):
                # The number of chunks is guarded, not the size; ``len()`` of a tensor is its
                # size as an int: one recompile, then symbolic (none under ``dynamic=True``).
                return 2 if observed.use == "op-split" or dynamic != "True" else 1
            return 1 if dynamic == "True" else 2
        return count
    kind = _value_kind(observed)
    if kind == "bool":
        return 2
    if kind not in ("int", "float"):
        return count
    constant_home = guard.source.startswith("G[") or guard.module_rooted
    if kind == "int" and not constant_home and dynamic != "False" and observed.use in SYMBOLIC_SIZE_USES:
        # An int argument, cell or field that sizes a ``view`` / ``reshape`` or an
        # ``interpolate`` goes symbolic after one recompile like any other (2 graphs, 1 under
        # ``dynamic=True``); one that sizes a ``split`` has its chunk count guarded next,
        # ``((7 + n) // n) == 2``: a third graph (the lab's cells: closure, dataclass and
        # namedtuple fields, object attributes and arguments, 2 and 3 graphs).
        graphs = 1 if dynamic == "True" else SYMBOLIC_SIZE_USES[observed.use]
        return graphs if count is None else min(count, graphs)
    if observed.use:
        return count
    if kind == "float":
        # Wherever it lives (measured on 2.13: a global or class attribute in arithmetic is one
        # graph under ``dynamic=True``, one per value under ``dynamic=False``).
        # Under ``dynamic=True`` it is symbolic from the first call, but a test on it guards the
        # outcome: a second graph when the branch taken changes (measured: 2 graphs, closure
        # floats in a branch over a cycle or a new value per call).
        if dynamic == "True":
            return 2 if guard.branch and (count is None or count >= 2) else 1
        return count if dynamic == "False" else 2
    if constant_home or dynamic == "False":
        return count
    return 1 if dynamic == "True" else 2


def static_shapes(guard: GuardRead, values) -> bool:
    """Whether a tensor guard's shapes stay static (an ``nn.Parameter``, a registered buffer, a
    layer's parameter): one graph per shape under any ``dynamic`` setting."""
    return guard.kind == "TENSOR_MATCH" and (
        (isinstance(guard.value, TensorMeta) and guard.value.parameter)
        or any(getattr(v, "parameter", False) for v in values)
        or _held_value(guard.source)[1] == "parameter-shapes"
    )


def _small_size_graphs(observed: Observed, symbolic: bool) -> int | None:
    """Graphs for a tensor whose sizes are 0 or 1 at some calls and larger at others (a last
    batch of one): Dynamo specialises a size of 0 or 1 even where sizes are symbolic, so each
    pattern of such dims is a graph of its own (measured on torch 2.13: sizes 8 then 1 are 2
    graphs under ``dynamic=True`` too); within a pattern, the other sizes are symbolic from
    the first call under ``dynamic=True``, after one recompile otherwise. None where not every
    size is known or none is 0 or 1 (a parameter's static shapes are the caller's to rule out)."""
    metas = [v for v in observed.values if isinstance(v, TensorMeta)]
    if not metas or len(metas) != len(observed.values):
        return None
    if any(m.sizes is None or None in m.sizes for m in metas):
        return None
    if len({len(m.sizes) for m in metas}) != 1:  # type: ignore[arg-type]
        return None  # a rank change: one graph per rank, counted elsewhere
    patterns: dict[tuple, set] = {}
    for m in metas:
        pattern = tuple(size if size in (0, 1) else -1 for size in m.sizes)  # type: ignore[union-attr]
        patterns.setdefault(pattern, set()).add(m.sizes)
    if len(patterns) < 2 or not any(size in (0, 1) for pattern in patterns for size in pattern):
        return None
    return sum(1 if symbolic or len(sizes) == 1 else 2 for sizes in patterns.values())


def small_size_change(values) -> int | None:
    """The first dim that tensors of one rank have 0 or 1 in one and larger in another, or None."""
    metas = [v for v in values if isinstance(v, TensorMeta) and v.sizes is not None]
    if len({len(m.sizes) for m in metas}) != 1:  # type: ignore[arg-type]
        return None
    for i, dim in enumerate(zip(*(m.sizes for m in metas))):  # type: ignore[misc]
        if any(s in (0, 1) for s in dim) and any(s is not None and s > 1 for s in dim):
            return i
    return None


def split_graphs(observed: Observed, symbolic: bool) -> int | None:
    """Graphs a split size costs, from the chunk counts the calls made (None where one is not
    known): symbolic from the first call, one per chunk count; else the first value's own
    graph, then one per chunk count of the other values (``((7 + n) // n) == 2``, measured)."""
    calls = observed.chunks
    if not calls or any(c is None for _, c in calls):
        return None
    if symbolic:
        return len({c for _, c in calls})
    first = calls[0][0]
    return 1 + len({c for v, c in calls if differs(first, v)})


def _value_kind(observed: Observed) -> str:
    return kind_of_values(observed.values)


def kind_of_values(values) -> str:
    """The lab's type of a guard's values: one kind, ``float`` for ints and floats,
    ``none-or-tensor``, ``number-or-tensor`` (a Python number at some calls, a tensor at
    others), or "" for any other mix."""
    kinds = {_kind(v) for v in values} - {""}
    if "tensor" in kinds and kinds - {"tensor"} and kinds - {"tensor"} <= {"int", "float", "bool"}:
        return "number-or-tensor"
    if kinds == {"int", "float"}:
        return "float"
    if kinds <= {"none", "tensor"} and kinds:
        return "none-or-tensor" if len(kinds) == 2 else kinds.pop()
    return kinds.pop() if len(kinds) == 1 else ""


def _tensor_change(observed: Observed) -> str:
    return first_tensor_change(observed.values)


def first_tensor_change(values) -> str:
    """What differs between the tensors among ``values``, the first of ``rank``, ``dtype``,
    ``device``, ``requires_grad``, ``size``, ``stride`` that any two show (or "")."""
    metas = [v for v in values if isinstance(v, TensorMeta)]
    changes = {tensor_change(a, b) for a in metas for b in metas if a is not b} - {""}
    for change in ("rank", "dtype", "device", "requires_grad", "size", "stride"):
        if change in changes:
            return change
    return ""


# What a guard's source reads of a value that holds others, and the lab's type for that value:
# a bound method's receiver field, a partial's bound argument, a layer's parameter.
_HELD = (
    (re.compile(r"\.__self__\.\w+$"), "bound-method"),
    (re.compile(r"\.(?:keywords\['[^'\]]*'\]|args\[\d+\])$"), "partial"),
    (re.compile(r"\._parameters\['[^'\]]*'\]$"), "parameter-shapes"),
)


def _held_value(source: str) -> tuple[str, str]:
    """``L['f'].__self__.k`` -> (``L['f']``, "bound-method"); a source that reads no held value
    -> (the source, "")."""
    for pattern, type_ in _HELD:
        match = pattern.search(source)
        if match is not None:
            return source[: match.start()], type_
    return source, ""


def lab_cells(region: CompiledRegion, guard: GuardRead, observed: Observed, count: int | None, dynamic: str | None = None) -> list[tuple[str, str, str, str, str]]:
    """The lab's cells (location, type, use, options, change) the guard may be in; empty where
    the run cannot name them in the lab's terms."""
    holder, held = _held_value(_strip(guard.key_of or guard.source))  # a dict's key guard: where its member lives
    parsed = parse_source(holder)
    if parsed is None:
        return []
    root, _, steps = parsed
    if root == "G":
        if not steps:
            locations = ["global"]
        elif len(steps) == 1 and guard.source.startswith("G['__import_"):
            locations = ["other-module-global"]
        else:
            return []
    elif guard.kind == "LENGTH_CHECK":
        locations = ["list-length", "dict-keys"] if not steps else []
    elif not steps:
        if not observed.argument:
            locations = ["closure"]
        elif observed.passing:
            locations = [f"{observed.passing}-argument"]
        else:
            locations = ["positional-argument", "keyword-argument", "default-argument"]
    elif len(steps) == 1 and steps[0][0] == "attr":
        locations = ["module-attribute"] if guard.module_rooted else [observed.holder] if observed.holder else ["object-attribute", "dataclass-field", "namedtuple-field"]
    elif len(steps) == 1 and isinstance(steps[0][1], str):
        locations = ["dict-value"]
    elif len(steps) == 1:
        locations = ["list-element"]
    else:
        return []
    if held == "parameter-shapes" and guard.kind != "TENSOR_MATCH":
        return []
    if held:
        type_ = held
        uses: tuple[str, ...] = ("arithmetic",)  # the lab calls the callable or the layer
    elif guard.kind == "CONSTANT_MATCH":
        type_ = _value_kind(observed)
        if type_ not in _USES and type_ != "none-or-tensor":
            return []
        # The run sees a test on it (``guard.branch``) and a number indexing a dict it knows
        # (``observed.use``): without either, a number's use is arithmetic.
        numeric = type_ in ("int", "float", "bool")
        uses = ("branch",) if guard.branch or type_ == "none-or-tensor" else tuple(u for u in _USES[type_] if u != "branch" and not (numeric and u == "dict-key"))
    elif guard.kind == "ID_MATCH" and isinstance(guard.value, Instance):
        type_ = "enum"
        # The run knows how the member is used: a dict's key guard is its dict-key use (a
        # member only indexing a dict by a local source has no guard at all); any other read
        # of it is arithmetic or a branch.
        uses = ("dict-key",) if guard.key_of else ("branch",) if guard.branch else ("arithmetic", "branch")
    elif guard.kind == "ID_MATCH":
        code = guard.value
        type_ = "lambda" if isinstance(code, CodeRef) and "<lambda" in code.qualname else "function"
        uses = ("arithmetic",)
    elif guard.kind == "TENSOR_MATCH":
        type_ = {"rank": "tensor-rank", "size": "tensor-size", "dtype": "dtype", "device": "device", "requires_grad": "requires-grad"}.get(_tensor_change(observed), "")
        if not type_:
            return []
        uses = ("branch",) if guard.branch else ("arithmetic", "branch")
    elif guard.kind == "LENGTH_CHECK":
        type_ = ""
        uses = ("iteration", "len", "range-bound")
    else:
        return []
    if observed.use:
        uses = _LAB_USES.get(observed.use, (observed.use,))
    elif guard.passed:
        uses = ("disabled-helper",) + uses  # passed to a disabled function (maybe used too)
    if dynamic is None:
        dynamic = option(region, observed, "dynamic")
    options = measured.options_cell(dynamic, option(region, observed, "fullgraph"))
    change = "every" if count is None else "once" if count == 2 else "cycle"
    if not options:
        return []
    types = [type_] if type_ else ["int", "float", "str"]
    return [(location, t, use, options, change) for location in locations for t in types for use in uses]


def _measured(region: CompiledRegion, guard: GuardRead, observed: Observed, count: int | None, dynamic: str | None = None) -> int | None | str:
    """Graphs as the lab measured the guard's cells, or ``"unmeasured"`` where none was or the
    measured ones disagree."""
    found = set()
    most = 0
    for cell in lab_cells(region, guard, observed, count, dynamic):
        row = measured.cell(*cell)
        if row is None:
            continue
        tier = row["tier"]
        if row["tiers"][("unbounded", "bounded", "negative").index(tier)] != row["programs"]:
            return "unmeasured"
        found.add(tier)
        most = max(most, int(row["graphs"][1]))
    if len(found) != 1:
        return "unmeasured"
    tier = found.pop()
    if tier == "unbounded":
        return None
    if tier == "negative":
        return 1
    return count if count is not None and 2 <= count <= RECOMPILE_LIMIT else min(max(most, 2), RECOMPILE_LIMIT)


def tensor_change_of(found: Recompile) -> str:
    """What made a tensor guard fail in a recompile: ``rank``, ``size``, ``dtype``, ``device``,
    ``requires_grad``, ``stride`` (the guard model's ``TENSOR_MATCH`` detail)."""
    return first_tensor_change(found.values)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _in_loop(function: ast.AST | None, target: object) -> bool:
    """Whether ``target`` (a node of ``function``'s own body) runs in a loop of that body: a
    ``for`` body or target, a ``while`` test or body; not a loop's ``else``, a ``for``'s
    iterable, or a nested function or class."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False

    def parts(node: ast.AST, looped: bool) -> list[tuple[ast.AST, bool]]:
        if isinstance(node, (ast.For, ast.AsyncFor)):
            return [(node.iter, looped), (node.target, True)] + [(n, True) for n in node.body] + [(n, looped) for n in node.orelse]
        if isinstance(node, ast.While):
            return [(node.test, True)] + [(n, True) for n in node.body] + [(n, looped) for n in node.orelse]
        return [(n, looped) for n in ast.iter_child_nodes(node)]

    stack = [(statement, False) for statement in function.body]
    while stack:
        node, looped = stack.pop()
        if node is target:
            return looped
        if isinstance(node, _SCOPES):
            continue
        stack.extend(parts(node, looped))
    return False
