"""Evidence by execution: run the code that calls compiled regions on abstract values, and
predict each call's cache entry as Dynamo does.

While compiled code runs, ``dynamo.Tracer`` records what it reads from outside its frame, with
the source Dynamo gives it and the guard its kind gets (``CONSTANT_MATCH``, ``ID_MATCH`` on a
function's code, ``TENSOR_MATCH``, ``LENGTH_CHECK``); ``cache.RegionCaches`` keeps each
region's entries from those guards and, at a call whose guards match no entry, the guard that
made it compile another, with the write that changed it and what it costs
(``Execution.recompiles``). For a guard the guard model predicts, ``recompile(guard)`` is the
run's verdict and ``untraced(guard)`` says when compiled code ran the function that reads it
but never the read. The modules, one job each: ``values`` (abstract values), ``heap`` (mutable stores),
``frames`` (frames and control flow), ``interpreter`` (statements and expressions),
``builtins`` and ``overlays/`` (what the libraries do), ``dynamo`` (what Dynamo guards),
``cache`` (cache entries per region, the count), ``entries`` (what runs). Nothing here imports
torch. ``RECOMPILE_LINT_NO_EXECUTION=1`` turns it off (to measure what it adds).
"""

from __future__ import annotations

import ast
import os

from recompile_lint.analysis.execution.cache import Recompile, RegionCaches, RegionTable, region_key
from recompile_lint.analysis.execution.entries import CLASS_TEST_RUNS, EntryFinder, class_run, collected_classes, driver_functions
from recompile_lint.analysis.execution.frames import OutOfBudget
from recompile_lint.analysis.execution.interpreter import DRIVING_STEPS, STEPS, Interpreter
from recompile_lint.analysis.execution.overlays import pytest_marks
from recompile_lint.analysis.execution.values import Const, Function, Instance, Sym
from recompile_lint.analysis.guards import PredictedGuard
from recompile_lint.analysis.index import ProjectIndex
from recompile_lint.analysis.parsing import module_name_for
from recompile_lint.analysis.parsing import parse_source as parse_text
from recompile_lint.analysis.regions import CompiledRegion
from recompile_lint.analysis.variation import Evidence

DISABLE_ENV = "RECOMPILE_LINT_NO_EXECUTION"


class IndexProject:
    """The project as the interpreter sees it: ``ast`` trees of the index's files."""

    def __init__(self, index: ProjectIndex):
        self.index = index
        self._trees: dict[str, ast.Module | None] = {}

    def tree(self, path: str) -> ast.Module | None:
        if path not in self._trees:
            text = self.index.text(path)
            tree = self.index.kept_tree(path)  # the value flow's parse of it, if any
            if tree is None and text is not None:
                try:
                    tree = parse_text(text, path)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    tree = None
                self.index.keep_tree(path, text, tree)
            self._trees[path] = tree
        return self._trees[path]

    def module_path(self, name: str, from_path: str) -> str | None:
        if name == "torch" or name.startswith("torch."):
            # torch is the modelled library (``torch.compile``, ``no_grad``, modules' methods),
            # also where the project is torch's own tree: its code would only stand in for it.
            return None
        return self.index.module_path(name, from_path)

    def module_name(self, path: str) -> tuple[str, bool]:
        module, is_package, _ = module_name_for(path)
        return self.index.module_names.get(path, module), is_package


class PerTestCaches(RegionCaches):
    """The caches of one test of a class, run apart from the tests pytest or unittest runs
    before it in the same process. A ``reset()`` in it empties what those compiled: the next
    call of every region finds its cache emptied by a reset. A call that finds no entry with no
    reset before it in the test may find those of an earlier test: it counts as a call that may
    have found entries (``Execution.fresh`` then claims nothing), and so does such a call of a
    test function where a test's reset is what empties the region's cache."""

    def on_reset(self, interpreter) -> None:
        super().on_reset(interpreter)
        self._reset.update(self.table.keyed)


def _cold(caches: RegionCaches) -> dict[tuple, int]:
    """Per region, the calls of a run that found no entry with no reset before them."""
    found = {}
    for key, count in caches.region_calls.items():
        left = count - caches.warm.get(key, 0) - caches.emptied.get(key, 0)
        if left > 0:
            found[key] = left
    return found


class Execution:
    """The execution stage's evidence for a run's regions, computed on first use."""

    def __init__(self, index: ProjectIndex, regions: list[CompiledRegion], guards: list[PredictedGuard], steps: int = STEPS, driving_steps: int = DRIVING_STEPS):
        self.index = index
        self.regions = regions
        self.guards = guards
        self.steps = steps
        self.driving_steps = driving_steps  # more steps for an entry once it calls compiled code
        self.enabled = os.environ.get(DISABLE_ENV, "") in ("", "0")
        self._found: dict[tuple[tuple, str], Recompile] = {}
        self._region_calls: dict[tuple, int] = {}  # calls of each region whose body ran
        self._entered: set[tuple[str, str]] = set()  # functions compiled code ran
        self._unguarded: set[tuple[tuple, str]] = set()  # (region, source) read, known, never guarded
        self._guarded: set[tuple[tuple, str]] = set()  # read unguarded at some calls only
        self._values: dict[tuple[tuple, str], list[object]] = {}  # a guard's values at its region's calls, per run
        self._held: set[tuple[tuple, str]] = set()  # guards some run saw change (never held)
        self._holders: set[tuple[tuple, str]] = set()  # sources a run read holding a partial, a bound method, a module
        self.ran: set[tuple[str, int]] = set()  # statements some run executed
        self.compile_sites: dict[tuple[str, int], set[bool]] = {}  # compile calls run -> disabled or not
        self._ran: set[str] = set()  # entry files run so far
        self._entries: EntryFinder | None = None
        self._project: IndexProject | None = None
        self.traced: set[tuple[str, int]] = set()  # lines compiled code ran in some entry
        self.calls = 0  # compiled calls the runs made (for tests and measures)
        self._table: RegionTable | None = None  # the regions by key, for every run's caches
        self._callers: dict[tuple, dict] = {}  # region key -> each reached function's caller (``framed``)
        self._warm: dict[tuple, int] = {}  # calls of each region that found entries to check
        self._emptied: dict[tuple, int] = {}  # calls that found its cache emptied by a reset
        self._test_emptied: set[tuple] = set()  # regions a test class's test reset (``PerTestCaches``)
        self._driver_cold: dict[tuple, int] = {}  # calls of driver functions that found no entry, no reset before
        self._cut_short: set[tuple] = set()  # regions some unfinished run called
        self._generator_nodes: dict[ast.AST, bool] = {}  # shared by the runs (``Interpreter.is_generator``)
        self._conftests: list[str] | None = None  # the project's ``conftest.py`` files

    def recompile(self, guard: PredictedGuard) -> Recompile | None:
        """The recompile the runs predict on the guard model's guard (same region and source)."""
        if not self.enabled:
            return None
        self.run_entries_of(guard.region)
        key = region_key(guard.region)
        found = self._found.get((key, guard.guard.source))
        if found is None:
            # A member that keys a dict is guarded through the dict's key guard, spelled on the
            # dict (``list(dict.keys(G['TABLE']))[0] is G['MODE']``): that recompile is its.
            found = next((f for (k, _), f in self._found.items() if k == key and f.guard.key_of == guard.guard.source), None)
        return found

    def evidence(self, guard: PredictedGuard) -> Evidence | None:
        found = self.recompile(guard)
        return found.evidence if found is not None else None

    def untraced(self, guard: PredictedGuard) -> bool:
        """Whether compiled code ran the function that reads the guard's value but never its
        read (under ``if not torch.compiler.is_compiling():``, in a disabled helper, on a branch
        never taken): Dynamo installs no such guard."""
        if not self.enabled:
            return False
        self.run_entries_of(guard.region)
        if self._region_calls.get(region_key(guard.region), 0) < 1 or (guard.function.path, guard.function.qualname) not in self._entered:
            return False  # the function that reads it never ran in compiled code: nothing known
        return (guard.read.path, guard.read.line) not in self.traced

    def unguarded(self, guard: PredictedGuard) -> bool:
        """Whether every call of the region read the guard's source with a value known to the
        runs and in a use Dynamo installs no guard for (a local or attribute Enum member that
        only indexes a dict, measured on torch 2.13): the guard the model predicts does not exist."""
        if not self.enabled:
            return False
        self.run_entries_of(guard.region)
        key = (region_key(guard.region), guard.guard.source)
        return key in self._unguarded and key not in self._guarded

    def framed(self, guard: PredictedGuard) -> bool:
        """Whether the function that reads the guard's value is reached from the region only
        through a function the runs saw break the graph (``cache.RegionTable.breaking``): Dynamo
        runs that function as a frame of its own, whose region answers for the read."""
        if not self.enabled:
            return False
        self.run_entries_of(guard.region)
        table = self._table
        if table is None or not table.breaking:
            return False
        breaking = {(c.path, c.qualname) for c in table.breaking}
        entry = guard.region.entry
        key = region_key(guard.region)
        callers = self._callers.get(key)
        if callers is None:
            callers = self._callers[key] = {ref: caller for ref, _, caller in guard.region.reached}
        current, seen = guard.function, set()
        while current is not None and current not in seen and current != entry:
            if (current.path, current.qualname) in breaking:
                return True
            seen.add(current)
            current = callers.get(current)
        return False

    def skipped(self, region: CompiledRegion) -> bool:
        """Whether a run saw the region's frame break the graph inside a loop of its own
        (``cache.RegionTable.skipped``): Dynamo skips that frame, so it guards nothing."""
        if not self.enabled:
            return False
        self.run_entries_of(region)
        table = self._table
        return table is not None and any(c.path == region.entry.path and c.qualname == region.entry.qualname for c in table.skipped)

    def disabled(self, region: CompiledRegion) -> bool:
        """Whether every run that reached the region's compile call made it with
        ``disable=True`` (known): ``torch.compile`` handed the function back, nothing compiles."""
        if not self.enabled:
            return False
        self.run_entries_of(region)
        return self.compile_sites.get((region.site_path, region.site.span.line)) == {True}

    def fresh(self, region: CompiledRegion) -> bool:
        """Whether every call of the region the runs made found its cache empty, at least one
        because ``torch._dynamo.reset()`` ran since an earlier call (a test helper that resets
        Dynamo before each model it compiles), in runs that all ended: no call can recompile,
        whatever differs between them. Where a test class's reset is what empties it, not if a
        test function (run in the same process) calls it with no reset before."""
        if not self.enabled:
            return False
        self.run_entries_of(region)
        key = region_key(region)
        if key in self._test_emptied and self._driver_cold.get(key, 0):
            return False  # a test function's call may find what an earlier test compiled
        return self._emptied.get(key, 0) > 0 and not self._warm.get(key, 0) and key not in self._cut_short

    def holds_object(self, guard: PredictedGuard) -> bool:
        """Whether compiled code read the guard's source holding a ``functools.partial``, a
        bound method or an ``nn.Module``: Dynamo guards what it holds (``.keywords['k']``,
        ``.__self__.k``, a layer's parameters, which the runs evaluate), never the object as a
        constant, so a ``CONSTANT_MATCH`` the guard model predicts on it does not exist."""
        if not self.enabled:
            return False
        self.run_entries_of(guard.region)
        return (region_key(guard.region), guard.guard.source) in self._holders

    def entry_files(self, region: CompiledRegion) -> list[str]:
        """The files whose runs may call the region: its own, and those that import them (a
        ``torch.compiler.config`` setting in one of them applies to the region's calls)."""
        if self._entries is None:
            self._entries = EntryFinder(self.index, self.regions)
            self._project = IndexProject(self.index)
        return self._entries.files_for(region)

    def held(self, guard: PredictedGuard, evidence: Evidence) -> bool:
        """Whether the runs show the guard's value the same at every call of its region although
        they ran every write the evidence names: a Python constant (``Const``; an Enum member by
        class and name, ``cache._same_key``) read at each of at least two calls, one value in every run, and each of the evidence's writes executed by a
        run (so the write gives the value it already had: ``x = SCHEDULE[ORDER[i]]`` over one
        value). A write no run executed, a value the run does not know, a run that read the guard
        at some calls only: nothing is known, and the evidence stands."""
        if not self.enabled:
            return False
        self.run_entries_of(guard.region)
        key = (region_key(guard.region), guard.guard.source)
        values = self._values.get(key)
        if key in self._held or not values or len(values) < 2 or len(set(values)) != 1:
            return False
        writes = [loc for loc in evidence.locations if loc.role == "write"]
        return bool(writes) and all((loc.path, loc.line) in self.ran for loc in writes)

    def recompiles(self) -> list[Recompile]:
        """Every recompile the runs predict, for every region (the drivers all run)."""
        if not self.enabled:
            return []
        self.run()
        return list(self._found.values())

    def run_entries_of(self, region: CompiledRegion) -> None:
        """Run the entry files that may call the region and have not run yet (each file runs
        once, whichever region asks: its caches hold every region it calls)."""
        if self._entries is None:
            self._entries = EntryFinder(self.index, self.regions)
            self._project = IndexProject(self.index)
        for path in self._entries.files_for(region):
            if path in self._ran:
                continue
            self._ran.add(path)
            for number, caches in enumerate(self.run_entry(self._project, path)):  # type: ignore[arg-type]
                self.calls += caches.calls
                self._entered |= caches.entered
                self._holders |= caches.holders
                for source_key, count in caches.unguarded.items():
                    # Unguarded only where every call of the region read it so.
                    if count == caches.region_calls.get(source_key[0], 0) and source_key not in self._guarded and source_key not in caches.values:
                        self._unguarded.add(source_key)
                    else:
                        self._guarded.add(source_key)
                        self._unguarded.discard(source_key)
                for key, count in caches.region_calls.items():
                    self._region_calls[key] = self._region_calls.get(key, 0) + count
                    if not caches.finished:
                        self._cut_short.add(key)
                for key, count in caches.warm.items():
                    self._warm[key] = self._warm.get(key, 0) + count
                if isinstance(caches, PerTestCaches):
                    for key, count in _cold(caches).items():
                        self._warm[key] = self._warm.get(key, 0) + count
                    self._test_emptied.update(caches.emptied)
                elif number:
                    for key, count in _cold(caches).items():  # a driver: a test in pytest's process
                        self._driver_cold[key] = self._driver_cold.get(key, 0) + count
                for key, count in caches.emptied.items():
                    self._emptied[key] = self._emptied.get(key, 0) + count
                for source_key in caches.values.keys() & self._unguarded:
                    self._unguarded.discard(source_key)  # guarded in this run
                    self._guarded.add(source_key)
                for source_key, values in caches.values.items():
                    if len(values) != caches.region_calls.get(source_key[0], 0) or not all(isinstance(v, Const) for v in values) or len(set(values)) != 1:
                        self._held.add(source_key)  # not read at every call, not concrete, or changed
                    elif source_key not in self._held:
                        self._values.setdefault(source_key, []).extend(values)
                for found in caches.recompiles():
                    self._found.setdefault((region_key(found.region), found.guard.source), found)

    def run(self) -> dict[tuple[tuple, str], Recompile]:
        """Run the entries of every region; the recompiles by region and guard source."""
        for region in self.regions:
            self.run_entries_of(region)
        return self._found

    def run_entry(self, project: IndexProject, path: str) -> list[RegionCaches]:
        """Run a file as ``__main__``, then its driver functions and the tests of its test
        classes (``_run_classes``); the caches of each."""
        name = os.path.basename(path)
        interpreter = Interpreter(project, steps=self.steps)
        interpreter.driving_steps = self.driving_steps
        interpreter.traced = self.traced
        interpreter.ran = self.ran
        interpreter.compile_sites = self.compile_sites
        interpreter.generator_nodes = self._generator_nodes
        if self._table is None:
            self._table = RegionTable(self.regions)
        runs = [RegionCaches(self.regions, self.guards, name, self._table)]
        interpreter.observer = runs[0]
        try:
            interpreter.run_module(path, as_main=True)
        except (OutOfBudget, RecursionError):
            runs[0].finished = False
            return runs
        except Exception:  # noqa: BLE001 - a run that fails on the project's code gives no evidence
            runs[0].finished = False
            return runs
        tree = project.tree(path)
        module = interpreter.globals.get(path)
        if tree is None or module is None:
            return runs
        drivers = [(function_name, interpreter.module_function(path, function_name)) for function_name in driver_functions(tree)]
        for function_name, function in drivers:
            if not isinstance(function, Function) or function.code in interpreter.executed:
                continue
            caches = RegionCaches(self.regions, self.guards, f"{name}:{function_name}", self._table)
            runs.append(caches)
            interpreter.observer = caches
            # A parametrized test runs once per parameter set, all in one process: the caches
            # of what it compiles carry from one set to the next. Anything else runs once, its
            # parameters unknown.
            for given in self.parameter_sets(interpreter, function, path):
                self._fresh_steps(interpreter)
                if not self._call(interpreter, caches, function, None, given):
                    break
        runs.extend(self._run_classes(interpreter, project, path, tree, module))
        return runs

    def _run_classes(self, interpreter: Interpreter, project: IndexProject, path: str, tree: ast.Module, module: int) -> list[RegionCaches]:
        """Run the tests of the file's test classes as their runner does (``entries.class_run``):
        the class set-up once, before its first test; then each test on a fresh instance, between
        its set-up and tear-down, with caches of its own, so nothing carries from one test to the
        next (a ``TestCase`` may reset Dynamo in a set-up the project does not show); a pytest
        test's parameter sets share them, as a test function's do. ``CLASS_TEST_RUNS`` tests at
        most, each with the steps of a test."""
        runs: list[RegionCaches] = []
        name = os.path.basename(path)
        ran_before = set(interpreter.executed)  # what the module and its drivers ran
        budget = CLASS_TEST_RUNS
        text = self.index.text(path)
        for class_name in collected_classes(tree):
            plan = class_run(interpreter, project, path, text, interpreter.heap.read(module, class_name, None))
            if plan is None:
                continue
            pytest_style = plan.runner == "pytest"
            class_set_up = not plan.class_setup
            for method_name, function in plan.tests:
                if function.code in ran_before:
                    continue  # the module's own run called it
                if budget <= 0:
                    return runs
                budget -= 1
                caches = PerTestCaches(self.regions, self.guards, f"{name}:{class_name}.{method_name}", self._table)
                runs.append(caches)
                interpreter.observer = caches
                for given in self.parameter_sets(interpreter, function, path, plan.files) if pytest_style else [{}]:
                    if not class_set_up:
                        self._fresh_steps(interpreter)
                        if not all(self._call(interpreter, caches, setup, plan.cls, {}, pytest_style) for setup in plan.class_setup):
                            break
                        class_set_up = True
                    self._fresh_steps(interpreter)
                    if plan.resets:
                        caches.on_reset(interpreter)  # torch's test case resets Dynamo in its ``setUp``
                    receiver = Instance(plan.cls, interpreter.heap.new("object"))
                    calls = [*plan.setup, function, *plan.teardown]
                    if not all(self._call(interpreter, caches, f, receiver, given if f is function else {}, pytest_style) for f in calls):
                        break
                if not class_set_up:
                    break  # the class set-up failed: no test of the class runs
        return runs

    def _fresh_steps(self, interpreter: Interpreter) -> None:
        interpreter.steps, interpreter.driving_steps, interpreter.compiled_calls = self.steps, self.driving_steps, 0

    def _call(self, interpreter: Interpreter, caches: RegionCaches, function: Function, receiver: object, given: dict[str, object], fixtures: bool = True) -> bool:
        """Call a test (or a set-up) with its receiver and the parameter set's values; its other
        parameters unknown where ``fixtures`` (pytest's) and left to their defaults where not
        (unittest passes none). Whether the call ended."""
        node = interpreter.codes.get(function.code)
        names = [a.arg for a in node.args.posonlyargs + node.args.args] if node is not None else []  # type: ignore[attr-defined]
        if receiver is not None:
            names = names[1:]
        if not fixtures and node is not None:
            names = names[: max(0, len(names) - len(node.args.defaults))]  # type: ignore[attr-defined]
        arguments = ([receiver] if receiver is not None else []) + [given.get(param, Sym("parameter", name=param)) for param in names]
        try:
            interpreter.call_function(function, arguments, {}, None, awaited=True)  # type: ignore[arg-type]
        except (OutOfBudget, RecursionError):
            caches.finished = False
            return False
        except Exception:  # noqa: BLE001 - the run raised on the project's code: no evidence
            caches.finished = False
            return False
        return True

    def parameter_sets(self, interpreter: Interpreter, function: Function, path: str, files: tuple[str, ...] = ()) -> list[dict[str, object]]:
        """The arguments of each run of a driver function: one per parameter set of its
        ``@pytest.mark.parametrize`` marks where they are known and no fixture may reset
        Dynamo between them (a ``reset()`` in the test file, a ``conftest.py`` above it, or
        ``files``: those of the project's classes a test class inherits from); else one run with
        nothing known."""
        marks = interpreter.parametrized.get(function.code)
        if not marks or self.resets_between_tests(path) or any(self._resets(other) for other in files if other != path):
            return [{}]
        sets = pytest_marks.parameter_sets(interpreter, list(reversed(marks)))
        return sets or [{}]

    def resets_between_tests(self, path: str) -> bool:
        """Whether the test file or a ``conftest.py`` in its directory or above resets Dynamo."""
        if self._conftests is None:
            self._conftests = [p for p in self.index.paths if os.path.basename(p) == "conftest.py"]
        directory = os.path.dirname(path) + os.sep
        for candidate in [path] + self._conftests:
            if candidate != path and not directory.startswith(os.path.dirname(candidate) + os.sep):
                continue
            if self._resets(candidate):
                return True
        return False

    def _resets(self, path: str) -> bool:
        text = self.index.text(path) or ""
        return "reset(" in text and ("_dynamo" in text or "compiler" in text)
