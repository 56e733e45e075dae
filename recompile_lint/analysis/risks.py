"""Risks: a predicted guard together with the evidence that its value changes between calls,
and what that costs under torch 2.13's measured behaviour (``docs/torch-2.13.md``).

Severity follows from the guard and the values the evidence allows:

* a value that stays a constant of the graph (a global, an attribute reached through an
  ``nn.Module``, a ``str``, an argument under ``dynamic=False``, an int that must be concrete:
  a ``range()`` bound, a ``math`` function's argument, a split size) compiles one graph per
  value: unbounded when the values are (a counter, a loop variable, data), else one graph per
  value, and unbounded again past ``recompile_limit`` (8) values;
* a ``float`` (global, module attribute, argument) recompiles once and then becomes an input:
  2 graphs;
* an ``int`` argument, or an int attribute of an argument object, recompiles once and then
  becomes dynamic (automatic dynamic shapes): 2 graphs;
* a ``bool`` costs one graph per value (2), an enum one per member;
* a callable's identity and a container's length never become dynamic: one graph per value.

Where the lab measured the guard's cell (``analysis/measured.json``, ``docs/lab.md``), what torch
did there decides instead: a cell whose programs all reached the limit is unbounded, all bounded
is bounded, all one graph is no risk. A guard whose cell the model cannot tell exactly (an
argument that may be positional, keyword or default; a use that may be arithmetic or a branch)
is decided by the table only when every measured candidate cell agrees.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Iterator

from recompile_lint.analysis import measured
from recompile_lint.analysis.execution import Execution
from recompile_lint.analysis.execution.cache import SYMBOLIC_SIZE_USES, Recompile, differs, kind_of_values, parse_source, region_key, small_size_change, static_shapes, tensor_change_of
from recompile_lint.analysis.execution.dynamo import TensorMeta
from recompile_lint.analysis.execution.values import Const
from recompile_lint.analysis.guards import PredictedGuard, Storage, predict_guards
from recompile_lint.analysis.index import FunctionRef, FunctionTrees, ProjectIndex
from recompile_lint.analysis.regions import CompiledRegion
from recompile_lint.analysis.variation import Evidence, variation_of
from recompile_lint.models import Guard, Subject

RECOMPILE_LIMIT = 8
# Set to 1, the variation stage's evidence is left out and only the runs answer (to measure
# what the catalogues still decide).
NO_VARIATION_ENV = "RECOMPILE_LINT_NO_VARIATION"
# Why a value keeps being a constant where automatic dynamic shapes would free an int.
ALWAYS_CONSTANT = ("global", "module attribute", "dynamic=False")


@dataclass(frozen=True)
class Risk:
    """A guard whose value changes between calls, and what it costs."""

    guard: PredictedGuard
    evidence: Evidence
    value_kind: str  # the kind of the guarded value, from the read or from the writes
    graphs: int | None  # graphs the region ends up with (None: unbounded, it reaches the limit)
    found_by_run: bool = False  # a guard the guard model did not predict, found by the execution stage
    run: bool = False  # the evidence and count come from a run (the execution stage)
    # The value is symbolic and the count is the branches its tests took (``dynamic=True``,
    # ``dynamic_sources``): Dynamo guards the branch, not the value.
    branches: bool = False

    @property
    def unbounded(self) -> bool:
        return self.graphs is None

    @property
    def region(self) -> CompiledRegion:
        return self.guard.region

    def subject(self, index: ProjectIndex) -> Subject:
        """What the verifier varies to confirm it."""
        storage = self.guard.storage
        facts = index.facts(storage.path) if storage.path else None
        module = facts.module if facts is not None else ""
        kind = self.value_kind
        if storage.kind == "global":
            return Subject(kind="length" if storage.length else "global", module=module, name=storage.name, value_kind=kind)
        if storage.kind == "member":
            first = storage.members[0]
            if first.startswith("."):
                return Subject(kind="attribute", module=module, name=storage.name, key=first[1:], value_kind=kind)
            return Subject(kind="item", module=module, name=storage.name, key=first[2:-2], value_kind=kind)
        if storage.kind == "attribute":
            if self.guard.guard.source.startswith("G["):
                # An attribute of a module-level object: vary it through the object.
                head = self.guard.guard.source.split("]", 1)[0][3:-1]
                return Subject(kind="attribute", module=module, name=head, key=storage.name, owner=storage.owner.rsplit(".", 1)[-1], value_kind=kind)
            owner = storage.owner
            owner_module, _, qualname = owner.rpartition(".")
            return Subject(kind="instance-attribute", module=owner_module, owner=qualname, name=storage.name, value_kind=kind)
        if storage.kind == "environ":
            return Subject(kind="environ", key=storage.name, value_kind=kind)
        if storage.kind == "parameter":
            return Subject(kind="length" if storage.length else "parameter", module=module, name=storage.name, value_kind=kind)
        return Subject(kind=storage.kind, module=module, name=storage.name, value_kind=kind)


def value_kind(guard: PredictedGuard, evidence: Evidence) -> str:
    kind = guard.value_kind
    if kind in ("unknown", "none", ""):
        kinds = set(evidence.kinds) - {"unknown", "none", ""}
        if "tensor" in kinds:
            kind = "tensor"  # a tensor updated in place (``+= 1``) stays a tensor
        elif len(kinds) == 1:
            kind = kinds.pop()
        elif evidence.values is None and any(loc.note.startswith("this update") for loc in evidence.locations):
            kind = "int"  # ``+= 1``: a counter
        elif "str" in kinds:
            kind = "str"
        elif "int" in kinds:
            kind = "int"
    return kind


def graphs(guard: PredictedGuard, evidence: Evidence, kind: str) -> int | None:
    """Graphs the region ends up with for this guard (None: it reaches recompile_limit)."""
    values = evidence.values
    reason = guard.specialized
    if guard.guard.kind == "TENSOR_MATCH":
        return values if values is not None and values <= RECOMPILE_LIMIT else None
    if guard.guard.kind in ("ID_MATCH", "LENGTH_CHECK", "TYPE_MATCH") and kind != "enum":
        return values if values is not None and values <= RECOMPILE_LIMIT else None
    if kind == "bool":
        return 2
    if kind == "enum":
        if guard.choices is not None:
            values = min(values, guard.choices) if values is not None else guard.choices
        return values if values is not None and values <= RECOMPILE_LIMIT else None
    constant = reason in ALWAYS_CONSTANT or (reason != "" and kind in ("int", "float", "unknown")) or kind in ("str", "bytes")
    if kind == "float" and reason in ALWAYS_CONSTANT:
        return 2  # the second compile makes it an input
    if not constant:
        # An int or float that automatic dynamic shapes turn into an input after one recompile.
        return 2 if kind in ("int", "float") or values is not None else None
    if values is None or values > RECOMPILE_LIMIT:
        return None
    return values


# The lab's names for what the model knows of a guarded value (``docs/lab.md``).
_MEASURED_TYPES = frozenset({"int", "float", "bool", "str", "enum"})
_UNMEASURED = "unmeasured"


def measured_cells(guard: PredictedGuard, evidence: Evidence, kind: str) -> list[tuple[str, str, str, str, str]]:
    """The lab's cells (location, type, use, options, change) the guard may be in; empty when
    the model cannot name its location, type, options or change in the lab's terms."""
    if kind not in _MEASURED_TYPES or guard.guard.kind != "CONSTANT_MATCH" or guard.storage.length:
        return []
    storage, source = guard.storage, guard.guard.source
    if storage.kind == "global" and not storage.members:
        locations = ["other-module-global" if source.startswith("G['__import_") else "global"]
    elif storage.kind == "closure":
        locations = ["closure"]
    elif storage.kind == "attribute" and guard.module_attribute:
        locations = ["module-attribute"]
    elif storage.kind == "attribute" and source.startswith("L["):
        locations = ["object-attribute"]
    elif storage.kind == "parameter" and not storage.members:
        locations = ["positional-argument", "keyword-argument", "default-argument"]
    elif storage.kind == "parameter" and len(storage.members) == 1 and storage.members[0].startswith("."):
        locations = ["object-attribute", "dataclass-field"]
    else:
        return []
    uses = ["range-bound"] if guard.specialized == "a range() bound" else ["arithmetic", "branch"]
    if guard.specialized not in ("", "a range() bound", "global", "module attribute", "dynamic=False"):
        return []  # another use that must be concrete: the lab names ops, not reasons
    options = measured.options_cell(guard.region.dynamic, guard.region.site.option("fullgraph"))
    values = evidence.values
    change = "every" if values is None or values > RECOMPILE_LIMIT else "once" if values == 2 else "cycle" if values > 2 else ""
    if not options or not change:
        return []
    return [(location, kind, use, options, change) for location in locations for use in uses]


def measured_graphs(guard: PredictedGuard, evidence: Evidence, kind: str, modelled: int | None) -> int | None | str:
    """Graphs as the lab measured the guard's cell (None: unbounded; 1: no recompile), or
    ``"unmeasured"`` when no candidate cell was measured or the measured ones disagree."""
    found = set()
    most = 0
    for cell in measured_cells(guard, evidence, kind):
        row = measured.cell(*cell)
        if row is None:
            continue
        tier = row["tier"]
        if row["tiers"][("unbounded", "bounded", "negative").index(tier)] != row["programs"]:
            return _UNMEASURED  # torch did not do one thing in this cell
        found.add(tier)
        most = max(most, int(row["graphs"][1]))
    if len(found) != 1:
        return _UNMEASURED
    tier = found.pop()
    if tier == "unbounded":
        return None
    if tier == "negative":
        return 1
    # Bounded: the model's count of this project's values where it has one, else the lab's.
    return modelled if modelled is not None and 2 <= modelled <= RECOMPILE_LIMIT else min(max(most, 2), RECOMPILE_LIMIT)


def assess(guard: PredictedGuard, evidence: Evidence) -> Risk | None:
    if guard.value_kind == "none" and not (set(evidence.kinds) & {"int", "str", "float", "bool", "enum", "bytes"}):
        # ``self.mask = None`` filled in later with a tensor or an object (lazy
        # initialisation): not a Python scalar that changes call after call.
        return None
    kind = value_kind(guard, evidence) if guard.guard.kind != "TENSOR_MATCH" else guard.guard.detail.split(" ", 1)[0]
    if kind in ("tensor", "list", "dict", "object", "module", "function", "class") and guard.guard.kind == "CONSTANT_MATCH":
        return None
    if guard.storage.kind == "parameter" and kind in ("unknown", "none") and guard.guard.kind == "CONSTANT_MATCH":
        return None  # an argument of unknown kind (a tensor, often) is not assumed to be a scalar
    if guard.storage.kind == "attribute" and kind in ("unknown", "none", "") and guard.guard.kind == "CONSTANT_MATCH" and not evidence.per_instance:
        # Nothing says the attribute holds a Python scalar (no literal, annotation or scalar
        # write: ``self.ids, self.pos = make_ids(n)``): not assumed to be a guarded constant.
        return None
    count = graphs(guard, evidence, kind)
    from_table = measured_graphs(guard, evidence, kind, count)
    if from_table != _UNMEASURED:
        count = from_table  # type: ignore[assignment]
    if count is not None and count < 2:
        return None
    return Risk(guard, evidence, kind, count)


def risks(index: ProjectIndex, regions: list[CompiledRegion], max_depth: int = 6, trees: FunctionTrees | None = None) -> Iterator[Risk]:
    """Every guard of the regions that the project's code makes fail, with its cost.

    The execution stage answers first: a guard the runs saw fail gets their evidence and count;
    a guard whose read compiled code never ran, in a function it ran, is no risk. The variation
    stage answers the other guards (a run that saw no change is not evidence of none: what it
    does not model is top). A recompile the runs found on a guard the guard
    model did not predict is a risk of its own (``from_recompile``)."""
    variation = variation_of(index, regions) if os.environ.get(NO_VARIATION_ENV, "") in ("", "0") else None
    trees = trees or FunctionTrees(index)
    declared: dict[str, frozenset[str]] = {}
    guards = list(predict_guards(index, regions, max_depth, trees))
    execution = Execution(index, regions, guards)  # runs the drivers only when asked
    seen: set[tuple[tuple, str]] = set()
    reported: set[tuple[tuple, str, int]] = set()  # (region, file, line) of each risk's read

    def dynamic_sources(region: CompiledRegion) -> frozenset[str]:
        # The setting is process-wide: it counts where the runs that call the region set it
        # (the entry file that imports the model), not only beside the compile site.
        key = region.site_path
        if key not in declared:
            declared[key] = index.dynamic_sources({region.site_path, region.entry.path, *execution.entry_files(region)})
        return declared[key]

    # The reads where a run saw a region recompile: there a guard the guard model cannot spell
    # (a hook's ``module.calls``: no source) is answered by the run's, spelled as Dynamo does.
    run_reads = {(region_key(f.region), f.guard.read.path, f.guard.read.line) for f in execution.recompiles()}
    for guard in guards:
        region = guard.region
        if not guard.guard.source and (region_key(region), guard.read.path, guard.read.line) in run_reads:
            continue
        if execution.disabled(region):
            continue  # compiled with ``disable=True`` wherever the runs reach it: a no-op
        if execution.skipped(region):
            continue  # a graph break in a loop of its frame: Dynamo runs it eagerly
        if execution.framed(guard):
            continue  # read in a function that runs as a frame of its own: its region answers
        if execution.fresh(region):
            continue  # Dynamo is reset before each call that could find an entry: none recompiles
        sourced = guard.guard.source in dynamic_sources(region)
        counted = symbolic_count(execution.recompile(guard), sourced)
        if counted is None:
            continue  # symbolic, and it costs one graph
        found, branched, split_counted = counted
        if found is not None:
            seen.add((region_key(region), guard.guard.source))
            risk = from_recompile(found, guard)
            if risk is not None and branched:
                risk = replace(risk, branches=True)
            static = variation.evidence(guard) if found.guard.kind == "CONSTANT_MATCH" and variation is not None else None
            known = assess(guard, static) if static is not None else None
            exact = (found.complete or repeated(found)) and risk is not None and not risk.unbounded
            # The run saw the value change and counts one graph because the region is compiled
            # with ``dynamic=True`` (symbolic from the first call): the guard model's count does
            # not read that option for a float, so its evidence does not overrule the run.
            freed = risk is None and found.graphs == 1 and (found.dynamic or region.dynamic) == "True"
            freed = freed or split_counted  # the chunk counts the calls made are the count
            if known is not None and not freed and (risk is None or known.unbounded or not risk.unbounded) and not (exact and known.unbounded):
                # The variation stage shows the change too: its evidence (the writes and the
                # loops that make them, counted over any number of iterations: a run only
                # counts the loops it was given, a driver's default bound) is kept, unless
                # only the run sees it reach the limit, or the run saw its values come back
                # (a finite set: a schedule of known values, a cycle, whatever loop makes it).
                risk = known
            if risk is not None:
                reported.add((region_key(region), found.guard.read.path, found.guard.read.line, found.guard.read.column))
                yield chained(risk, found, sourced)
            continue
        if execution.untraced(guard):
            continue  # compiled code ran the function that reads it, never the read
        if execution.unguarded(guard):
            continue  # read at every call in a use Dynamo guards nothing for
        if guard.guard.kind == "CONSTANT_MATCH" and execution.holds_object(guard):
            continue  # a partial, a bound method, a module: the runs answer on what it holds
        evidence = variation.evidence(guard) if variation is not None else None
        if evidence is None or execution.held(guard, evidence):
            continue  # no change shown, or the runs ran each write and the value stayed the same
        risk = assess(guard, evidence)
        if risk is not None:
            reported.add((region_key(region), guard.read.path, guard.read.line, guard.read.column))
            yield risk
    for found in execution.recompiles():
        key = (region_key(found.region), found.guard.source)
        if key in seen:
            continue
        sourced = found.guard.source in dynamic_sources(found.region)
        counted = symbolic_count(found, sourced)
        if counted is None:
            continue
        found, branched, _ = counted
        if (key[0], found.guard.read.path, found.guard.read.line, found.guard.read.column) in reported:
            continue  # the guard model's own guard on that read, spelled its way (``L['fn'].__self__``)
        seen.add(key)
        risk = from_recompile(found, predicted(index, found))
        if risk is not None:
            yield chained(replace(risk, found_by_run=True, branches=branched), found, sourced)


def chained(risk: Risk, found: Recompile, sourced: bool) -> Risk:
    """The risk with the guards a later value fails once its own has made the value symbolic
    (``Guard.then``), where the run shows one does."""
    then = then_guards(found, risk.guard.guard.source, sourced)
    if not then:
        return risk
    return replace(risk, guard=replace(risk.guard, guard=replace(risk.guard.guard, then=then)))


def then_guards(found: Recompile, source: str, sourced: bool) -> tuple[tuple[str, str, str], ...]:
    """The guards the run's later values fail after the value went symbolic (measured on torch
    2.13; ``sourced``: ``dynamic_sources`` names it, symbolic from the first call):

    - a tensor whose size sizes a ``split`` or decides an ``if``: once the size is symbolic
      Dynamo guards the chunk count it makes or the branch it takes, spelled on the size
      (``((7 + L['t'].size()[0]) // L['t'].size()[0]) == 3``, ``2 <= L['t'].size()[0] <= 3``):
      fails where the calls after the first size change make two chunk counts (or take two
      branches) or more;
    - an int argument, cell or field that scales an ``interpolate``: once symbolic, the call
      breaks the graph and the resume function guards the sizes of its result
      (``tensor '___stack0' size mismatch``): fails where a later call brings a third value
      (the second under ``dynamic_sources``, which makes it symbolic even under
      ``dynamic=False``); not a global's or module attribute's int, which stays a constant,
      nor under ``dynamic=True`` (the resume's input is dynamic too) or ``fullgraph=True``
      (the break raises)."""
    dynamic = found.dynamic or found.region.dynamic
    if dynamic == "False" and not sourced:
        return ()
    if found.guard.kind == "TENSOR_MATCH" and dynamic != "False":
        # What the symbolic size is guarded on at each call: the chunks it splits into, or
        # the outcomes of the tests that read it.
        if found.use == "op-split":
            calls = list(found.chunks)
        elif found.guard.branch and len(found.outcomes) == len(found.every):
            calls = list(zip(found.every, found.outcomes))
        else:
            return ()
        dim = _varying_dim(found.values)
        if not calls or dim is None or any(c is None or (isinstance(c, tuple) and None in c) for _, c in calls):
            return ()
        first = calls[0][0]
        taken = {c for _, c in calls} if dynamic == "True" or sourced else {c for v, c in calls if differs(first, v)}
        return (("TENSOR_MATCH", f"{source}.size()[{dim}]", "size"),) if len(taken) > 1 else ()
    if found.use != "op-interpolate-scale" or found.stack is None or found.guard.value_kind != "int":
        return ()
    if dynamic == "True" or found.region.site.option("fullgraph") == "True" or (constant_int(found) and not sourced):
        return ()
    values = found.every
    if not values or not all(isinstance(v, Const) for v in values):
        return ()
    start = 0 if sourced else next((i for i, v in enumerate(values) if differs(values[0], v)), None)
    if start is None or not any(differs(values[start], v) for v in values[start + 1 :]):
        return ()
    return (("TENSOR_MATCH", f"L['___stack{found.stack}']", "size"),)


def _varying_dim(values) -> int | None:
    """The first dimension whose size differs between a tensor guard's first value and the
    first later one of the same rank that differs (None where not known)."""
    metas = [v for v in values if isinstance(v, TensorMeta) and v.sizes is not None]
    if not metas:
        return None
    first = metas[0].sizes
    for meta in metas[1:]:
        if len(meta.sizes) != len(first):
            return None
        for dim, (a, b) in enumerate(zip(first, meta.sizes)):
            if a is None or b is None:
                return None
            if a != b:
                return dim
    return None


# Uses where an int stays a Python number even when ``dynamic_sources`` names it (measured on
# torch 2.13 by the lab's ``dynamic`` twins): a ``range()`` bound, split sizes, an interpolate
# scale factor, a key looked up in a Python dict or list. A ``view``/``reshape`` size or an
# interpolate size takes a symbolic int.
INT_PINNED_USES = frozenset({"range-bound", "op-split", "op-interpolate-scale", "dict-key", "list-index"})


def repeated(found: Recompile) -> bool:
    """Whether the run that found the recompile called the region more often than it compiled
    for the guard, with a finite count: later calls found a cached entry, the values came back."""
    return found.graphs is not None and 0 < len(found.values) < found.calls


def float_once(found: Recompile | None) -> bool:
    """Whether a float the runs saw change still recompiles where ``dynamic_sources`` names it:
    torch 2.13 specialises a float on its first call whatever the setting (the lab's
    ``dynamic`` twins: 2 graphs in arithmetic, one per value in a branch), unless the region
    is compiled with ``dynamic=True`` (at its site or by the run's compile call)."""
    return found is not None and found.guard.value_kind == "float" and (found.dynamic or found.region.dynamic) != "True"


def symbolic_count(found: Recompile | None, sourced: bool) -> tuple[Recompile | None, bool, bool] | None:
    """A run's recompile as counted where the value is symbolic: from the first call
    (``dynamic=True``) or by ``dynamic_sources`` (``sourced``). None where it costs one graph;
    else (the recompile, whether its count is the branches its tests took, whether it is the
    chunk counts a split size made)."""
    if branch_holds(found):
        return None  # symbolic, and every call took one branch
    branched = sized_branch(found)
    if branched and found.graphs == 1:  # type: ignore[union-attr]
        found = symbolic_branch(found)  # type: ignore[arg-type]
    split = symbolic_split(found) if sourced else None
    if split is not None:
        if split.graphs is not None and split.graphs < 2:
            return None  # every call made the same number of chunks
        return split, branched, True
    if sourced and not pinned(found) and not float_once(found):
        if not branch_flips(found):
            return None  # ``dynamic_sources`` makes it a symbolic input (unless an op needs it concrete)
        return symbolic_branch(found), True, False  # type: ignore[arg-type]
    return found, branched, False


def branch_outcomes(found: Recompile | None) -> int | None:
    """How many different sets of outcomes the tests reading a symbolic int, float or tensor
    size took over the calls (None where no test read it or an outcome is not known)."""
    if found is None or not found.guard.branch:
        return None
    if found.guard.kind == "TENSOR_MATCH" and tensor_change_of(found) != "size":
        return None
    if found.guard.kind != "TENSOR_MATCH" and found.guard.value_kind not in ("int", "float"):
        return None
    seen = [o for o in found.outcomes if o is not None]
    if not seen or len(seen) != len(found.outcomes) or any(None in o for o in seen):
        return None
    return len(set(seen))


def branch_flips(found: Recompile | None) -> bool:
    """Whether an int, a float or a tensor's size that is symbolic (``dynamic_sources``,
    ``dynamic=True``) still recompiles because an ``if`` reads it: Dynamo guards the branch
    the symbolic value takes (``self.kind <= 3``, measured by the lab's ``dynamic`` twins), so
    a new graph comes where the run saw a test's outcome change between calls; values that
    take the same branch share one graph."""
    return (branch_outcomes(found) or 0) > 1


def branch_holds(found: Recompile | None) -> bool:
    """Whether a value ``dynamic=True`` makes symbolic from the first call, read by an ``if``,
    took the same branch at every call the run saw: the branch guard held, one graph (where a
    measured cell counts two, its programs' values fell on both sides)."""
    return symbolic_from_start(found) and branch_outcomes(found) == 1


def symbolic_from_start(found: Recompile | None) -> bool:
    """Whether ``dynamic=True`` makes the value symbolic from the first call (not a global's or
    a module attribute's int, which stays a constant)."""
    return found is not None and (found.dynamic or found.region.dynamic) == "True" and not constant_int(found)


def constant_int(found: Recompile) -> bool:
    """Whether ``dynamic=True`` leaves the value a constant of the graph: a global's or an
    ``nn.Module`` attribute's int (``G['HOPS'] == 2``), guarded by value whatever branch it takes."""
    return found.guard.value_kind == "int" and (found.guard.source.startswith("G[") or found.guard.module_rooted)


def sized_branch(found: Recompile | None) -> bool:
    """Whether a value that ``dynamic=True`` makes symbolic from the first call (an int or
    float argument, cell or field, a tensor's size) still recompiles because an ``if`` reads
    it: Dynamo guards the branch taken (``head <= 5``, ``2 <= act.size()[0] <= 3``; measured
    by the lab: 2 graphs for values on both sides of the test), so a graph per set of outcomes
    the calls made (where no measured cell counted them already)."""
    return symbolic_from_start(found) and branch_flips(found)


def symbolic_split(found: Recompile | None) -> Recompile | None:
    """A split size ``dynamic_sources`` makes symbolic from the first call: one graph per chunk
    count the calls made (measured by the lab's ``dynamic`` twins: one graph where every call
    made the same count, whatever the values); None where a count is not known."""
    if found is None or found.use != "op-split" or not found.chunks or any(c is None for _, c in found.chunks):
        return None
    return replace(found, graphs=len({c for _, c in found.chunks}))


def symbolic_branch(found: Recompile) -> Recompile:
    """The recompile of a symbolic int on the branches it takes: one graph per set of outcomes."""
    return replace(found, graphs=len({o for o in found.outcomes if o is not None}))


def pinned(found: Recompile | None) -> bool:
    """Whether a recompile stays one per value even under ``dynamic_sources``: a float an op
    needs as a Python number (``dropout`` ``p``, SDPA ``dropout_p``), or an int a use needs
    concrete (``INT_PINNED_USES``), is specialised again."""
    if found is None or not found.use:
        return False
    kind = found.guard.value_kind
    if kind == "int" and found.use == "op-interpolate-scale" and (found.dynamic or found.region.dynamic) == "True":
        return False  # measured (the lab's dynamic twins): a symbolic scale under dynamic=True, one graph
    return kind == "float" or (kind == "int" and found.use in INT_PINNED_USES)


def from_recompile(found: Recompile, guard: PredictedGuard) -> Risk | None:
    """The risk of a recompile the runs found: its guard, evidence and count (None below 2).
    The one recompile after which automatic dynamic makes the value an input (an int or float
    argument, cell or object field, a tensor's size) is a risk of 2 graphs: torch compiles the
    second graph, as the lab measures (``bounded``)."""
    if found.graphs is not None and found.graphs < 2:
        return None
    kind = found.guard.value_kind
    if kind_of_values(found.values) == "number-or-tensor":
        # A Python number at some calls, a tensor at others: the type guard fails either way.
        kind = "number-or-tensor"
    elif found.guard.kind == "TENSOR_MATCH":
        kind = "tensor"
        change = tensor_change_of(found)
        dynamic = found.dynamic or found.region.dynamic
        sized = change == "size" and not static_shapes(found.guard, found.values) and dynamic != "False"
        dim = small_size_change(found.values) if sized else None
        source = guard.guard.source
        if dim is not None:
            # A last batch of one: specialised even where sizes are dynamic. A size symbolic
            # from the first call fails its range guard, ``2 <= L['x'].size()[0]``.
            change = "small-size"
            source = f"{source}.size()[{dim}]" if dynamic == "True" else source
        guard = replace(guard, guard=Guard("TENSOR_MATCH", source, change or guard.guard.detail))
    elif kind in ("", "none"):
        kind = value_kind(guard, found.evidence)
    if found.guard.key_of and found.guard.source != guard.guard.source:
        # The member that keys a dict fails the dict's key guard: spelled as Dynamo reports it.
        guard = replace(guard, guard=Guard(found.guard.kind, found.guard.source, guard.guard.detail))
    return Risk(guard, found.evidence, kind, found.graphs, run=True)


def predicted(index: ProjectIndex, found: Recompile) -> PredictedGuard:
    """The guard a recompile failed on, in the guard model's terms: where its value lives (the
    storage the rules word it by) and where compiled code reads it."""
    region, read = found.region, found.guard
    source = read.source
    inner = source[4:-1] if source.startswith("len(") else source
    inner = inner[: -len(".__code__")] if inner.endswith(".__code__") else inner
    inner = read.key_of or inner  # a dict's key guard: the value that changes is the member
    parsed = parse_source(inner)
    length = read.kind == "LENGTH_CHECK"
    storage = Storage("parameter", region.entry.path, inner, owner=region.entry.qualname, length=length)
    specialized = ""
    if parsed is not None:
        root, name, steps = parsed
        members = tuple(f".{step}" if kind == "attr" else f"[{step!r}]" for kind, step in steps)
        if root == "G" and name.startswith("__import_") and steps:
            module = name[len("__import_") :].replace("_dot_", ".")
            path = next((p for p, m in index.module_names.items() if m == module), region.entry.path)
            storage = Storage("global" if len(steps) == 1 else "member", path, str(steps[0][1]), members=members[1:], length=length)
            specialized = "global"
        elif root == "G":
            storage = Storage("global" if not steps else "member", region.entry.path, name, members=members, length=length)
            specialized = "global"
        elif read.module_rooted and steps and steps[-1][0] == "attr":
            storage = Storage("attribute", region.entry.path, str(steps[-1][1]), owner=read.owner or region.model_class or region.entry.qualname.rsplit(".", 1)[0], length=length)
            specialized = "module attribute"
        elif found.argument:
            storage = Storage("parameter", region.entry.path, name, members=members, owner=region.entry.qualname, length=length)
        else:
            storage = Storage("closure", region.entry.path, name, members=members, owner=region.entry.qualname, length=length)
    if found.use == "range-bound":
        specialized = "a range() bound"
    elif found.use in ("dict-key", "list-index"):
        specialized = specialized or "a key looked up in a Python dict or list"
    elif found.use in SYMBOLIC_SIZE_USES and (found.dynamic or region.dynamic) != "False" and not specialized:
        pass  # a size op takes a symbolic int: automatic dynamic makes it an input after one recompile
    elif found.use:
        specialized = specialized or "an op argument that must be a Python number"
    if region.dynamic == "False" and not specialized:
        specialized = "dynamic=False"
    detail = ""
    if read.kind == "TENSOR_MATCH":
        detail = tensor_change_of(found)
    guard = Guard(read.kind, source, detail)
    function = FunctionRef(read.read.path, read.function or (region.entry.qualname if read.read.path == region.entry.path else ""))
    depth = 0 if read.read.path == region.entry.path and function.qualname == region.entry.qualname else 1
    kind = read.value_kind or "unknown"
    return PredictedGuard(region, guard, storage, kind, read.read, function, depth, specialized=specialized, module_attribute=read.module_rooted)
