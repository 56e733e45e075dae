"""Evidence by execution: run the code that calls compiled regions on abstract values, and
predict each call's cache entry as Dynamo does.

``Execution.evidence(guard)`` answers, for a guard the guard model predicts, whether running
the project's drivers (``entries``) makes that guard's value differ definitely between two
calls of its region (``cache``): two different concrete values, or two iterations of a loop.
The modules, one job each: ``values`` (abstract values), ``heap`` (mutable stores), ``frames``
(frames and control flow), ``interpreter`` (statements and expressions), ``builtins`` and
``overlays/`` (what the libraries do), ``cache`` (cache entries per region), ``entries`` (what
runs). Nothing here imports torch.

This first stage evaluates ``CONSTANT_MATCH`` guards on module globals (``G['step']``),
attributes of objects and modules (``L['self'].k``, ``G['cfg'].n``) and arguments (``L['n']``).
``RECOMPILE_LINT_NO_EXECUTION=1`` turns it off (to measure what it adds).
"""

from __future__ import annotations

import ast
import os

from recompile_lint.analysis.execution.cache import RegionCaches, parse_source, region_key
from recompile_lint.analysis.execution.entries import EntryFinder, driver_functions
from recompile_lint.analysis.execution.frames import OutOfBudget
from recompile_lint.analysis.execution.interpreter import STEPS, Interpreter
from recompile_lint.analysis.execution.values import Function, Sym
from recompile_lint.analysis.guards import PredictedGuard
from recompile_lint.analysis.index import ProjectIndex
from recompile_lint.analysis.parsing import module_name_for
from recompile_lint.analysis.parsing import parse_source as parse_text
from recompile_lint.analysis.regions import CompiledRegion
from recompile_lint.analysis.variation import Evidence

DISABLE_ENV = "RECOMPILE_LINT_NO_EXECUTION"
EVALUATED_STORAGE = frozenset({"global", "member", "attribute", "parameter"})


# Kinds of guarded values that are not a Python scalar: the guard model's cost stage never
# reports a constant guard on them (``risks.assess``), so they are not worth a run.
NOT_SCALAR = frozenset({"tensor", "list", "dict", "object", "module", "function", "class", "method", "modules", "modref"})


def evaluable(guard: PredictedGuard) -> bool:
    """Whether this stage evaluates the guard (the others stay with ``variation``)."""
    if guard.guard.kind != "CONSTANT_MATCH" or guard.storage.kind not in EVALUATED_STORAGE or guard.storage.length:
        return False
    if guard.value_kind in NOT_SCALAR:
        return False
    if guard.storage.kind == "parameter" and not guard.specialized and guard.value_kind not in ("str", "bytes"):
        # An int or float argument (or an attribute of one) becomes an input after one
        # recompile (automatic dynamic): two graphs, which the rules do not report; an
        # argument of unknown kind is not assumed to be a scalar (``risks.assess``).
        return False
    return parse_source(guard.guard.source) is not None


class IndexProject:
    """The project as the interpreter sees it: ``ast`` trees of the index's files."""

    def __init__(self, index: ProjectIndex):
        self.index = index
        self._trees: dict[str, ast.Module | None] = {}

    def tree(self, path: str) -> ast.Module | None:
        if path not in self._trees:
            text = self.index.text(path)
            tree = None
            if text is not None:
                try:
                    tree = parse_text(text, path)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    tree = None
            self._trees[path] = tree
        return self._trees[path]

    def module_path(self, name: str, from_path: str) -> str | None:
        return self.index.module_path(name, from_path)

    def module_name(self, path: str) -> tuple[str, bool]:
        module, is_package, _ = module_name_for(path)
        return self.index.module_names.get(path, module), is_package


class Execution:
    """The execution stage's evidence for a run's regions, computed on first use."""

    def __init__(self, index: ProjectIndex, regions: list[CompiledRegion], guards: list[PredictedGuard], steps: int = STEPS):
        self.index = index
        self.regions = regions
        self.guards = [g for g in guards if evaluable(g)]
        self.steps = steps
        self.enabled = os.environ.get(DISABLE_ENV, "") in ("", "0")
        self._found: dict[tuple[tuple, str], Evidence] = {}
        self._ran: set[str] = set()  # entry files run so far
        self._entries: EntryFinder | None = None
        self._project: IndexProject | None = None
        self.traced: set[tuple[str, int]] = set()  # lines compiled code ran in some entry
        self.calls = 0  # compiled calls the runs made (for tests and measures)

    def evidence(self, guard: PredictedGuard) -> Evidence | None:
        if not self.enabled or not evaluable(guard):
            return None
        self.run_entries_of(guard.region)
        found = self._found.get((region_key(guard.region), guard.guard.source))
        if found is not None and (guard.read.path, guard.read.line) not in self.traced:
            return None  # compiled code never ran the read (``if not is_compiling():``, a disabled helper)
        return found

    def run_entries_of(self, region: CompiledRegion) -> None:
        """Run the entry files that may call the region and have not run yet (each file runs
        once, whichever region asks: its caches hold every region it calls)."""
        if not self.guards:
            return
        if self._entries is None:
            self._entries = EntryFinder(self.index, self.regions)
            self._project = IndexProject(self.index)
        for path in self._entries.files_for(region):
            if path in self._ran:
                continue
            self._ran.add(path)
            for caches in self.run_entry(self._project, path):  # type: ignore[arg-type]
                self.calls += caches.calls
                for key, evidence in caches.evidence().items():
                    self._found.setdefault(key, evidence)

    def run(self) -> dict[tuple[tuple, str], Evidence]:
        """Run the entries of every region; the evidence by region and guard source."""
        for region in self.regions:
            self.run_entries_of(region)
        return self._found

    def run_entry(self, project: IndexProject, path: str) -> list[RegionCaches]:
        """Run a file as ``__main__``, then its driver functions; the caches of each."""
        name = os.path.basename(path)
        interpreter = Interpreter(project, steps=self.steps)
        interpreter.traced = self.traced
        runs = [RegionCaches(self.regions, self.guards, name)]
        interpreter.observer = runs[0]
        try:
            interpreter.run_module(path, as_main=True)
        except (OutOfBudget, RecursionError):
            return runs
        tree = project.tree(path)
        module = interpreter.globals.get(path)
        if tree is None or module is None:
            return runs
        for function_name in driver_functions(tree):
            function = interpreter.heap.read(module, function_name, None)
            if not isinstance(function, Function) or function.code in interpreter.executed:
                continue
            node = interpreter.codes.get(function.code)
            params = [Sym("parameter", name=a.arg) for a in node.args.posonlyargs + node.args.args] if node is not None else []  # type: ignore[attr-defined]
            caches = RegionCaches(self.regions, self.guards, f"{name}:{function_name}")
            runs.append(caches)
            interpreter.observer = caches
            interpreter.steps = self.steps
            try:
                interpreter.call_function(function, params, {}, None)  # type: ignore[arg-type]
            except (OutOfBudget, RecursionError):
                continue
            except Exception:  # noqa: BLE001 - the run raised on the project's code: no evidence
                continue
        return runs
