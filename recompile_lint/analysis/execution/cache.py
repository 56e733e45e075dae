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

import re
from dataclasses import dataclass, field

from recompile_lint.analysis.execution.frames import Frame, OutOfBudget
from recompile_lint.analysis.execution.values import (
    TOP,
    ClassValue,
    CompiledValue,
    DictValue,
    Function,
    Instance,
    ListValue,
    ModuleValue,
    Sym,
    definitely_different,
    kind_of,
)
from recompile_lint.analysis.guards import PredictedGuard
from recompile_lint.analysis.regions import CompiledRegion
from recompile_lint.analysis.variation import Evidence
from recompile_lint.models import Location

MAX_ENTRIES = 16  # past the recompile limit (8) the count is unbounded anyway
_ROOT = re.compile(r"^([GL])\['([^'\]]+)'\]")
_STEP = re.compile(r"^(?:\.(\w+)|\['([^'\]]*)'\]|\[(-?\d+)\])")
_MISSING = object()


def region_key(region: CompiledRegion) -> tuple[str, str, str, int]:
    return (region.entry.path, region.entry.qualname, region.site_path, region.site.span.line)


def parse_source(source: str) -> tuple[str, str, list[tuple[str, object]]] | None:
    """``L['self'].trainer.epoch`` -> ("L", "self", [("attr", "trainer"), ("attr", "epoch")])."""
    match = _ROOT.match(source)
    if match is None:
        return None
    steps: list[tuple[str, object]] = []
    rest = source[match.end() :]
    while rest:
        step = _STEP.match(rest)
        if step is None:
            return None
        attr, key, index = step.groups()
        if attr is not None:
            steps.append(("attr", attr))
        elif key is not None:
            steps.append(("key", key))
        else:
            steps.append(("key", int(index)))
        rest = rest[step.end() :]
    # ``_modules['blocks']``: Dynamo's spelling of a submodule, an attribute of the module.
    merged: list[tuple[str, object]] = []
    for kind, value in steps:
        if merged and merged[-1] == ("attr", "_modules") and kind == "key":
            merged[-1] = ("attr", str(value))
        else:
            merged.append((kind, value))
    return match.group(1), match.group(2), merged


@dataclass
class Observed:
    """One guard's values at the calls that made its region compile, and why they changed."""

    values: list[object] = field(default_factory=list)
    writes: list[Location] = field(default_factory=list)
    calls: list[Location] = field(default_factory=list)


class RegionCaches:
    """The cache entries of every region during one entry's run."""

    def __init__(self, regions: list[CompiledRegion], guards: list[PredictedGuard], entry: str):
        self.entry = entry  # what runs, for the evidence's words (``train.py``)
        self.guards: dict[tuple, list[PredictedGuard]] = {}
        self.regions: dict[tuple, CompiledRegion] = {}
        for region in regions:
            self.regions[region_key(region)] = region
        for guard in guards:
            self.guards.setdefault(region_key(guard.region), []).append(guard)
        self.entries: dict[tuple, list[dict[str, object]]] = {}
        self.observed: dict[tuple[tuple, str], Observed] = {}
        self.calls = 0

    def regions_called(self, compiled: CompiledValue, function: Function) -> list[CompiledRegion]:
        found = []
        for key, region in self.regions.items():
            span = region.site.span
            if key[0] != function.code.path or key[1] != function.code.qualname or key[2] != compiled.path:
                continue
            if span.line <= compiled.line <= max(span.end_line, span.line) or region.site.decorated == function.code.qualname:
                found.append(region)
        return found

    def on_compiled_call(self, interpreter, compiled: CompiledValue, function: Function, bound: dict[str, object], where: Location) -> None:
        self.calls += 1
        for region in self.regions_called(compiled, function):
            key = region_key(region)
            guards = self.guards.get(key, [])
            if not guards:
                continue
            state = {g.guard.source: evaluate(interpreter, g.guard.source, function, bound, where) for g in guards}
            entries = self.entries.setdefault(key, [])
            values = {source: value for source, (value, _) in state.items()}
            if not entries:
                entries.append(values)
                continue
            misses = [e for e in entries if any(definitely_different(values[s], e.get(s, TOP)) for s in values)]
            if len(misses) < len(entries):
                continue  # an entry's guards all pass: the cached graph runs
            for source, (value, origin) in state.items():
                if all(definitely_different(value, e.get(source, TOP)) for e in entries):
                    observed = self.observed.setdefault((key, source), Observed(values=[entries[0][source]]))
                    observed.values.append(value)
                    if origin is not None and origin not in observed.writes:
                        observed.writes.append(origin)
                    if where not in observed.calls:
                        observed.calls.append(where)
            if len(entries) < MAX_ENTRIES:
                entries.append(values)

    def evidence(self) -> dict[tuple[tuple, str], Evidence]:
        """Each guard that made a region recompile, as the guard model's evidence."""
        out = {}
        for (key, source), observed in self.observed.items():
            region = self.regions[key]
            short = region.name.rsplit(".", 1)[-1]
            unbounded = any(isinstance(v, Sym) for v in observed.values)
            count = None if unbounded else len(set(observed.values))
            if unbounded:
                why = f"a different value at each call of `{short}` when `{self.entry}` runs"
            else:
                why = f"{count} different values at the calls of `{short}` when `{self.entry}` runs"
            locations = [
                Location(w.path, w.line, w.column, "write", f"this write gives it a new value between calls of `{short}`", w.end_line, w.end_column)
                for w in observed.writes[:3]
            ]
            locations += [Location(c.path, c.line, c.column, "call", f"this call of `{short}` compiles another graph", c.end_line, c.end_column) for c in observed.calls[:1]]
            locations.append(region.site_location())
            kinds = frozenset(k for k in (kind_of(v) for v in observed.values) if k)
            out[(key, source)] = Evidence(tuple(locations), count, why, kinds=kinds)
        return out


def evaluate(interpreter, source: str, function: Function, bound: dict[str, object], where: Location) -> tuple[object, Location | None]:
    """A guard's value at a call, and the write (or the call's binding) that set it."""
    parsed = parse_source(source)
    if parsed is None:
        return TOP, None
    root, name, steps = parsed
    heap = interpreter.heap
    origin: Location | None
    if root == "L":
        value, origin = bound.get(name, TOP), where
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
        store = _store_of(interpreter, value)
        if kind == "attr" and isinstance(value, Instance) and not heap.has(value.addr, step):
            value, origin = _quiet_attribute(interpreter, value, str(step)), None
            continue
        if store is None or not heap.has(store, step):
            return TOP, None
        value, origin = heap.read(store, step), heap.origin(store, step)
    return value, origin


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

