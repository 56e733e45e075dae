"""The execution stage's fidelity: does the interpreter reach each call of the compiled object
with the values torch saw in the places Dynamo guarded?

For each proven program, the guards its deciding code objects failed on (``measure.failed_guards``;
a negative twin takes those of the positive it was derived from) are evaluated, by their
``source`` (``L['self'].k``, ``G['step']``, ``len(L['xs'])``, ``L['fn'].__code__``), on the
interpreter's state at every call of the compiled object, while the stage's entries run
(``analysis/execution``: the file as ``__main__``, then its driver functions). What is compared
is what the guard checks (a tensor's dtype, rank, size or device for a tensor guard; a code
object's identity for ``___check_obj_id(f.__code__)``; the value itself for a constant match).

A program is

- **reached** when the compiled object was called at least twice;
- **concrete** when every source's value was known (not top) at every call;
- **faithful** when, for a program torch recompiled, every source's value differs definitely
  between two calls; for a negative twin, when the values never differ definitely where the value
  is the same object each call (``fixed``, ``tensor``, ``rebuilt``), and do where the program
  really changes it (``dynamic``: the guard is lifted); an ``outside`` twin (compiled code no
  longer reads the value) is judged by the next figure only.

And every negative program is **clean** when the execution stage itself (its predicted guards,
its cache entries) finds no definite difference in a value compiled code read: no false evidence.

The measure reads the grid values (``Program.dims``) to aggregate and to know what a twin
changes; the linter never does.
"""

from __future__ import annotations

import concurrent.futures
import gc
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from recompile_lint.analysis.execution import Execution, IndexProject
from recompile_lint.analysis.execution.entries import EntryFinder, driver_functions
from recompile_lint.analysis.execution.frames import Frame, OutOfBudget
from recompile_lint.analysis.execution.interpreter import STEPS, Interpreter, Observer
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
)
from recompile_lint.analysis.guards import predict_guards
from recompile_lint.engine import lint_paths
from recompile_lint.lab.measure import ALL_RULES, _pool_context, failed_guards, write_project
from recompile_lint.lab.program import Program
from recompile_lint.lab.proof import GuardFailureRecord, Proof

# Twins whose value is the same object at every call (no difference is true) and twins whose
# value really changes between calls (a difference is true; torch just does not guard it).
# ``outside`` twins no longer pass the value to compiled code: only ``clean`` judges them.
SAME_VARIANTS = frozenset({"fixed", "tensor", "rebuilt"})
CHANGED_VARIANTS = frozenset({"dynamic"})
_MISSING = object()
_ROOT = re.compile(r"^([GL])\['([^'\]]+)'\]")
_STEP = re.compile(r"^(?:\.(\w+)\(\)|\.(\w+)|\['([^'\]]*)'\]|\[(-?\d+)\])")
_TENSOR = re.compile(r"^tensor '.*' (dtype|rank|size|stride|requires_grad|dispatch key set|device)\b(?: mismatch at index (\d+))?")
_MAIN = re.compile(r"^if __name__ == [\"']__main__[\"']:", re.MULTILINE)
_CONTAINERS = frozenset({"_parameters", "_buffers", "_modules"})


@dataclass(frozen=True)
class Known:
    """A projected value that is not a Python constant: an object's identity, a tensor, a code."""

    what: str
    value: object


@dataclass(frozen=True)
class ProgramFidelity:
    """What the interpreter saw of one program's guarded values."""

    key: str
    tier: str
    dims: tuple[tuple[str, str], ...]
    sources: tuple[str, ...]  # the failed guards' sources evaluated
    calls: int  # calls of the compiled object that recompiled (or of any, when none matches)
    concrete: bool
    differs: bool  # some source differs definitely between two calls
    every_differs: bool  # every source does
    faithful: bool | None  # None: nothing to judge (no source, or a twin of no known kind)
    clean: bool | None  # negatives: no false evidence from the execution stage
    values: tuple[tuple[str, tuple[str, ...]], ...] = ()  # per source, the values seen (for --show)

    @property
    def reached(self) -> bool:
        return self.calls >= 2

    @property
    def variant(self) -> str:
        return dict(self.dims).get("variant", "original")


# ---- evaluating a guard's source ------------------------------------------------------------


def split_source(source: str) -> tuple[bool, str, str, list[tuple[str, object]]] | None:
    """``len(L['x'].k)`` -> (True, "L", "x", [("attr", "k")]); ``L['t'].size()[0]`` keeps
    ``("call", "size")``; None for a spelling this does not read."""
    wrapped = source.startswith("len(") and source.endswith(")")
    text = source[4:-1] if wrapped else source
    match = _ROOT.match(text)
    if match is None:
        return None
    steps: list[tuple[str, object]] = []
    rest = text[match.end() :]
    while rest:
        step = _STEP.match(rest)
        if step is None:
            return None
        call, attr, key, index = step.groups()
        if call is not None:
            steps.append(("call", call))
        elif attr is not None:
            steps.append(("attr", attr))
        elif key is not None:
            steps.append(("key", key))
        else:
            steps.append(("key", int(index)))
        rest = rest[step.end() :]
    return wrapped, match.group(1), match.group(2), steps


def quiet_attribute(interpreter: Interpreter, value: object, attr: str) -> object:
    """``value.attr`` as the interpreter reads it, telling no cache and undoing what it writes."""
    interpreter.probing += 1
    interpreter.heap.open()
    steps = interpreter.steps
    try:
        path = value.cls.path if isinstance(value, Instance) else ""
        frame = Frame(path, "", -1, interpreter.globals.get(path, -1))
        return interpreter.get_attribute(frame, value, attr)
    except (OutOfBudget, Exception):  # noqa: BLE001 - a property of the linted code
        return TOP
    finally:
        interpreter.steps = steps
        interpreter.heap.close()
        interpreter.probing -= 1


def _step(interpreter: Interpreter, value: object, kind: str, step: object) -> object:
    heap = interpreter.heap
    if isinstance(value, CompiledValue) and isinstance(value.target, Instance) and step not in ("_orig_mod",):
        value = value.target  # OptimizedModule: its attributes are the original's
    if kind == "call":
        if step == "size" and isinstance(value, TensorValue):
            return Known("sizes", value.sizes) if value.sizes is not None else TOP
        return TOP
    if kind == "key":
        if isinstance(value, Known) and value.what == "sizes":
            sizes = value.value
            if isinstance(step, int) and isinstance(sizes, tuple) and -len(sizes) <= step < len(sizes):
                size = sizes[step]
                return Const(size) if size is not None else TOP
            return TOP
        if isinstance(value, Known) and value.what == "container":
            return quiet_attribute(interpreter, value.value, str(step))
        if isinstance(value, Known) and value.what == "keywords" and isinstance(step, str):
            return dict(value.value).get(step, TOP)  # type: ignore[call-overload]
        if isinstance(value, TupleValue) and isinstance(step, int):
            return value.elements[step] if -len(value.elements) <= step < len(value.elements) else TOP
        if isinstance(value, (ListValue, DictValue)):
            return interpreter.get_item(value, Const(step))
        return TOP
    # attributes
    if step in _CONTAINERS and isinstance(value, Instance):
        return Known("container", value)  # ``_parameters['bias']``: the module's attribute
    if step == "__code__":
        function = value.function if isinstance(value, BoundMethod) else value
        return Known("code", function.code) if isinstance(function, Function) else TOP
    if step == "__self__":
        return value.receiver if isinstance(value, BoundMethod) else TOP
    if step == "__func__":
        return value.function if isinstance(value, BoundMethod) else TOP
    if isinstance(value, Partial):
        if step == "keywords":
            return Known("keywords", value.keywords)
        if step == "func":
            return value.function
        if step == "args":
            return TupleValue(value.args)
        return TOP
    if isinstance(value, Instance):
        found = heap.read(value.addr, step, _MISSING)
        return found if found is not _MISSING else quiet_attribute(interpreter, value, str(step))
    if isinstance(value, (ModuleValue, ClassValue)):
        return quiet_attribute(interpreter, value, str(step))
    return TOP


def evaluate(interpreter: Interpreter, source: str, function: Function, bound: Mapping[str, object]) -> object:
    """A guard source's value at a call of ``function`` with arguments ``bound``: ``L`` holds
    its arguments and the cells it closes over, ``G`` its module's globals."""
    parsed = split_source(source)
    if parsed is None:
        return TOP
    wrapped, root, name, steps = parsed
    heap = interpreter.heap
    value: object = _MISSING
    if root == "L":
        value = bound.get(name, _MISSING)
        for cells in function.closure if value is _MISSING else ():
            value = heap.read(cells, name, _MISSING)
            if value is not _MISSING:
                break
    elif name.startswith("__import_"):
        dotted = name[len("__import_") :].replace("_dot_", ".")
        value = next((m for m in interpreter.modules.values() if m.name == dotted), _MISSING)
    else:
        value = heap.read(interpreter.globals.get(function.module, -1), name, _MISSING)
    if value is _MISSING:
        return TOP
    for kind, step in steps:
        value = _step(interpreter, value, kind, step)
        if value is TOP:
            return TOP
    if wrapped:
        if isinstance(value, Const) and isinstance(value.value, (str, bytes)):
            return Const(len(value.value))
        items = interpreter.items(value) if isinstance(value, (TupleValue, ListValue, DictValue)) else None
        return Const(len(items)) if items is not None else TOP
    return value


def project(guard: str, value: object) -> object:
    """What the guard checks of the value: a ``Const`` or iteration symbol for a constant match,
    a tensor's property for a tensor guard, an identity for ``___check_obj_id``; top if unknown."""
    tensor = _TENSOR.match(guard)
    if tensor is not None:
        if not isinstance(value, TensorValue):
            return TOP
        prop, index = tensor.groups()
        if prop == "dtype":
            return Known("dtype", value.dtype) if value.dtype else TOP
        if prop == "rank":
            return Const(value.rank) if value.rank is not None else TOP
        if prop == "size" and index is not None:
            sizes = value.sizes
            i = int(index)
            return Const(sizes[i]) if sizes is not None and i < len(sizes) and sizes[i] is not None else TOP
        if prop == "requires_grad":
            return Const(value.requires_grad) if value.requires_grad is not None else TOP
        if prop in ("dispatch key set", "device"):
            return Known("device", (value.device, value.requires_grad)) if value.device and value.requires_grad is not None else TOP
        return TOP
    if guard.startswith("___check_obj_id") or guard.startswith("___check_type_id"):
        return identity(value)
    if isinstance(value, (Const, Sym)):
        return value
    if isinstance(value, Known):
        return value
    if isinstance(value, TensorValue):
        return Known("tensor", value.addr)  # ``x is None`` on a tensor: a tensor, not None
    return identity(value)


def identity(value: object) -> object:
    """An object's identity where the run knows it (an instance, a class, a module, a code)."""
    if isinstance(value, Known):
        return value
    if isinstance(value, (Instance, ListValue, DictValue)):
        return Known("object", value.addr)
    if isinstance(value, ClassValue):
        return Known("class", value.addr)
    if isinstance(value, ModuleValue):
        return Known("module", (value.name, value.path))
    if isinstance(value, Const) and value.value is None:
        return value
    return TOP


def differ(a: object, b: object) -> bool:
    if isinstance(a, Known) and isinstance(b, Known):
        return a.what == b.what and a.value != b.value or {a.what, b.what} == {"tensor", "object"}
    if isinstance(a, Known) or isinstance(b, Known):
        # None against a tensor or an object is a difference; any other mix says nothing.
        other = b if isinstance(a, Known) else a
        return isinstance(other, Const) and other.value is None
    return definitely_different(a, b)


def show(value: object) -> str:
    if isinstance(value, Const):
        return repr(value.value)
    if isinstance(value, Sym):
        return f"<{value.origin}{'#' + str(value.k) if value.k >= 0 else ''}>"
    if isinstance(value, Known):
        inner = value.value
        if isinstance(inner, CodeRef):
            inner = f"{inner.qualname}:{inner.line}"
        return f"{value.what}({inner})"
    return "TOP"


# ---- running a program ----------------------------------------------------------------------


class Recorder(Observer):
    """An observer: at each compiled call, the projected value of each failed guard's source."""

    def __init__(self, failures: Sequence[GuardFailureRecord]):
        self.failures = failures
        self.calls: list[tuple[CodeRef, dict[str, object]]] = []

    def on_compiled_call(self, interpreter, compiled, function, bound, where) -> None:
        values = {}
        for failure in self.failures:
            try:
                terms = shape_terms(failure.guard)
                if len(terms) > 1:
                    # ``(feats.size()[0] + G['cfg'].t.size()[0]) // 2 == 3``: the failure names
                    # one source, the guard reads them all.
                    found = tuple(evaluate(interpreter, term, function, bound) for term in terms)
                    values[failure.source] = Known("terms", found) if all(isinstance(v, Const) for v in found) else TOP
                else:
                    values[failure.source] = project(failure.guard, evaluate(interpreter, failure.source, function, bound))
            except Exception:  # noqa: BLE001 - a source this measure cannot read
                values[failure.source] = TOP
        self.calls.append((function.code, values))


_GLOBAL_SIZE = re.compile(r"G\['[^']+'\](?:\.\w+|\['[^']*'\])*\.size\(\)\[\d+\]")
_LOCAL_SIZE = re.compile(r"(?<![\w'\].])([A-Za-z_]\w*)((?:\.\w+|\['[^']*'\])*\.size\(\)\[\d+\])")


def shape_terms(guard: str) -> list[str]:
    """The sizes a shape guard's expression reads, as sources: ``G['m'].t.size()[0]`` as it is,
    ``feats.size()[0]`` as ``L['feats'].size()[0]``."""
    terms = list(dict.fromkeys(_GLOBAL_SIZE.findall(guard)))
    rest = _GLOBAL_SIZE.sub("", guard)
    terms += list(dict.fromkeys(f"L['{name}']{tail}" for name, tail in _LOCAL_SIZE.findall(rest)))
    return terms


def run_entries(project: IndexProject, paths: Iterable[str], recorder: Recorder, steps: int = STEPS) -> None:
    """Run each entry file as ``Execution.run_entry`` does: as ``__main__``, then its driver
    functions with unknown parameters, every compiled call told to ``recorder``."""
    for path in paths:
        interpreter = Interpreter(project, steps=steps)
        interpreter.observer = recorder
        try:
            interpreter.run_module(path, as_main=True)
        except (OutOfBudget, RecursionError):
            continue
        except Exception:  # noqa: BLE001 - the run raised on the project's code
            continue
        tree = project.tree(path)
        module = interpreter.globals.get(path)
        if tree is None or module is None:
            continue
        for name in driver_functions(tree):
            function = interpreter.heap.read(module, name, None)
            if not isinstance(function, Function) or function.code in interpreter.executed:
                continue
            node = interpreter.codes.get(function.code)
            params = [Sym("parameter", name=a.arg) for a in node.args.posonlyargs + node.args.args] if node is not None else []  # type: ignore[attr-defined]
            interpreter.steps = steps
            try:
                interpreter.call_function(function, params, {}, None)
            except (OutOfBudget, RecursionError):
                continue
            except Exception:  # noqa: BLE001
                continue


def _sources_of(program: Program, proof: Proof, proofs: Mapping[str, Proof]) -> tuple[tuple[GuardFailureRecord, ...], Proof]:
    """The failed guards to evaluate and the proof whose code objects say which calls count."""
    failures = tuple(f for f in failed_guards(proof) if f.source)
    if failures or not program.twin_of:
        return failures, proof
    twin = proofs.get(program.twin_of)
    if twin is None or not twin.ran:
        return (), proof
    return tuple(f for f in failed_guards(twin) if f.source), twin


def fidelity(program: Program, proof: Proof, proofs: Mapping[str, Proof]) -> ProgramFidelity:
    """Lint ``program`` (for its index and regions), run its entries and judge what the
    interpreter saw (see the module docstring)."""
    failures, deciding = _sources_of(program, proof, proofs)
    tier = proof.tier
    with tempfile.TemporaryDirectory(prefix="rcl-fidelity-") as tmp:
        root = write_project(program, Path(tmp))
        keep: list = []
        lint_paths([str(root)], ALL_RULES, retain=keep)
        gc.unfreeze()
        analysis = next((k for k in keep if hasattr(k, "regions")), None)
        if analysis is None:
            return ProgramFidelity(program.key, tier, program.dims, (), 0, False, False, False, None, None)
        index, regions = analysis.index, list(analysis.regions)
        clean = None
        if tier == "negative":
            guards = list(predict_guards(index, regions))
            execution = Execution(index, regions, guards)
            # As ``risks.risks``: a source ``dynamic_sources`` names is an input, not a guard.
            lifted = index.dynamic_sources({r.site_path for r in regions} | {r.entry.path for r in regions})
            clean = not any(execution.evidence(g) is not None for g in guards if g.guard.source not in lifted)
        recorder = Recorder(failures)
        if failures:
            project = IndexProject(index)
            # The stage's entries for the regions the linter found, and every ``__main__``
            # file besides: a compile form the region finder misses still runs here, so that
            # this measures the interpreter, not the region finder.
            paths: list[str] = []
            finder = EntryFinder(index, regions)
            for region in regions:
                paths.extend(p for p in finder.files_for(region) if p not in paths)
            paths.extend(p for p in sorted(index.paths) if p not in paths and _MAIN.search(index.text(p) or ""))
            run_entries(project, paths, recorder)
    names = {(os.path.basename(c.file), c.name) for c in deciding.codes if c.failures or c.graphs > 1}
    calls = [values for code, values in recorder.calls if (os.path.basename(code.path), code.qualname.rsplit(".", 1)[-1]) in names]
    if not calls:
        calls = [values for _, values in recorder.calls]
    sources = tuple(f.source for f in failures)
    concrete = bool(sources) and bool(calls) and all(call[s] is not TOP for call in calls for s in sources)
    differing = {s for s in sources if any(differ(a[s], b[s]) for i, a in enumerate(calls) for b in calls[i + 1 :])}
    faithful: bool | None = None
    if sources:
        if tier != "negative":
            faithful = differing == set(sources)
        elif dict(program.dims).get("variant") in SAME_VARIANTS:
            faithful = not differing
        elif dict(program.dims).get("variant") in CHANGED_VARIANTS:
            faithful = bool(differing)
    values = tuple((s, tuple(show(call[s]) for call in calls[:12])) for s in sources)
    return ProgramFidelity(program.key, tier, program.dims, sources, len(calls), concrete, bool(differing), differing == set(sources) and bool(sources), faithful, clean, values)


_PROOFS: Mapping[str, Proof] = {}


def _one_shared(item: tuple[Program, Proof]) -> ProgramFidelity:
    return fidelity(item[0], item[1], _PROOFS)


def measure_fidelity(programs: Sequence[Program], proofs: Mapping[str, Proof], jobs: int = 2) -> list[ProgramFidelity]:
    """The fidelity of every program whose proof ran (``jobs`` worker processes)."""
    global _PROOFS
    work = [(p, proofs[p.key]) for p in programs if p.key in proofs and proofs[p.key].ran]
    _PROOFS = proofs
    if jobs <= 1 or len(work) <= 1:
        return [_one_shared(item) for item in work]
    chunk = max(1, min(16, len(work) // (jobs * 4)))
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=_pool_context()) as pool:
        return list(pool.map(_one_shared, work, chunksize=chunk))


# ---- the figures ----------------------------------------------------------------------------

COLUMNS = ("reached", "concrete", "faithful", "twins", "clean")


def counts(results: Iterable[ProgramFidelity]) -> dict[str, list[int]]:
    """``[yes, total]`` per column: reached, concrete and faithful over the programs torch
    recompiled; twins: negative twins judged faithful; clean: negatives without false evidence."""
    out = {column: [0, 0] for column in COLUMNS}
    for r in results:
        if r.tier != "negative" and r.sources:
            for column, yes in (("reached", r.reached), ("concrete", r.concrete), ("faithful", bool(r.faithful))):
                out[column][0] += yes
                out[column][1] += 1
        if r.tier == "negative" and r.faithful is not None:
            out["twins"][0] += r.faithful
            out["twins"][1] += 1
        if r.clean is not None:
            out["clean"][0] += r.clean
            out["clean"][1] += 1
    return out


def summarise(results: Sequence[ProgramFidelity]) -> dict[str, Any]:
    dimensions: dict[str, dict[str, dict[str, list[int]]]] = {}
    for r in results:
        for name, value in r.dims:
            dimensions.setdefault(name, {}).setdefault(value, [])  # type: ignore[arg-type]
    grouped: dict[str, dict[str, list[ProgramFidelity]]] = {}
    for r in results:
        for name, value in r.dims:
            grouped.setdefault(name, {}).setdefault(value, []).append(r)
    return {
        "programs": len(results),
        "all": counts(results),
        "dimensions": {name: {value: counts(group) for value, group in sorted(values.items())} for name, values in grouped.items()},
    }


def _share(pair: Sequence[int]) -> str:
    yes, total = pair
    return f"{yes}/{total} ({100 * yes / total:.0f} %)" if total else "-"


def format_table(summary: Mapping[str, Any]) -> str:
    lines = [f"programs {summary['programs']}", "", f"{'':34s} " + " ".join(f"{c:>15s}" for c in COLUMNS)]

    def row(label: str, cells: Mapping[str, Sequence[int]]) -> str:
        return f"{label[:34]:34s} " + " ".join(f"{_share(cells[c]):>15s}" for c in COLUMNS)

    lines.append(row("all", summary["all"]))
    for name, values in summary["dimensions"].items():
        lines.append("")
        lines.append(f"{name}:")
        for value, cells in values.items():
            lines.append(row(f"  {value}", cells))
    return "\n".join(lines)


def why(result: ProgramFidelity) -> str:
    """One line on a program the interpreter did not follow (for ``--show``)."""
    if not result.reached:
        what = f"compiled object called {result.calls} time(s)"
    elif not result.concrete:
        what = "not concrete"
    elif result.faithful is False:
        what = "values differ" if result.tier == "negative" else "values never differ"
    else:
        what = "false evidence"
    seen = "; ".join(f"{s}: {' '.join(v)}" for s, v in result.values)
    return f"{result.key} [{result.tier}/{result.variant}] {what} | {seen}"

