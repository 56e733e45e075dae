"""The measure: the linter's findings on generated programs against what torch did with them.

Each program with a proof that ran is written to a directory of its own (a ``pyproject.toml``
makes it its own project root), linted with the library call the command line uses (every rule
selected, no cache), and judged against its proof, never against what the generator intended:

- the **cause lines** of a program are the ``file:line`` Dynamo pointed at in each guard failure
  of the code objects that decided its tier (those that reached ``recompile_limit`` for an
  unbounded program; those with more than one graph for a bounded one), and the lines the
  generator marked as the value's read in compiled code (``cause``) and its change between
  calls (``change``). A finding sits at a cause line when its own line, or one of its evidence
  lines (read, use, write, call, compile site), is one of them: what
  ``tests/test_differential.py`` accepts of the hand-written programs.
- **unbounded** (a code object reached the limit, or ``fullgraph=True`` raised there) agrees
  when an ``error`` finding sits at a cause line;
- **bounded** (more than one graph, the limit not reached) agrees when a ``warning`` finding sits
  at a cause line, or an ``info`` one where a guard that failed is a ``GLOBAL_STATE`` guard
  (two graphs for grad mode or autocast coexist by design and the linter reports them as info);
- **negative** (one graph per code object) agrees when no ``error`` or ``warning`` finding is
  reported at all (``info`` findings are advice, not alarms);
- **guard text**: a program with at least one guard failure is exact when every distinct guard
  it failed on is named by some finding's ``guard``: the same source in Dynamo's unstripped
  spelling (``L['self'].k``, ``G['step']``), or for the guards without a source
  (``GLOBAL_STATE``, ``BACKEND_MATCH``) the same kind and what changed.

``measure`` lints in worker processes and returns every program's ``Verdict``; ``summarise``
aggregates them into the figures ``bench/generated.py`` prints and writes: per tier and per
value of every grid dimension, ``[agreeing, total]``.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from recompile_lint.config import Config
from recompile_lint.engine import lint_paths
from recompile_lint.lab.observe import guard_kind_and_source
from recompile_lint.lab.program import Program, write_program
from recompile_lint.lab.proof import TIERS, CodeRecord, GuardFailureRecord, Proof
from recompile_lint.models import Finding, Guard, LintResult

ALL_RULES = Config(select=("RCL",), cache=False)
# What a program's directory holds besides its files: it is a project of its own, so nothing
# above it (the temporary directory's parents) is read as part of it.
PROJECT_FILE = "pyproject.toml"
PROJECT_TEXT = '[project]\nname = "lab-program"\nversion = "0"\n'
# Guards that name no value: the kind (and what changed) say which they are.
SOURCELESS_KINDS = ("GLOBAL_STATE", "BACKEND_MATCH")


@dataclass(frozen=True)
class Spot:
    """A finding reduced to what the judge reads: its severity, every ``(file, line)`` it points
    at (files relative to the program) and the guard it predicts."""

    code: str
    severity: str
    places: frozenset[tuple[str, int]]
    guard: Guard | None = None

    @property
    def line(self) -> tuple[str, int]:
        return min(self.places)


@dataclass(frozen=True)
class Verdict:
    """How the linter did on one proven program."""

    key: str
    tier: str
    agrees: bool
    dims: tuple[tuple[str, str], ...]
    # None: the program failed on no guard; else whether every guard it failed on was named.
    guard_exact: bool | None
    # What went wrong, in a few words (empty when it agrees): for the work list.
    why: str = ""
    seconds: float = 0.0


def finding_places(root: Path, finding: Finding) -> frozenset[tuple[str, int]]:
    """Where a finding points, relative to ``root``: its own line and every evidence line."""
    out = {(relative(root, finding.path), finding.line)}
    out |= {(relative(root, loc.path), loc.line) for loc in finding.evidence}
    return frozenset(out)


def relative(root: Path, path: str) -> str:
    """``path`` relative to ``root`` in POSIX spelling, or the resolved path when outside it."""
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(resolved)


def predicts(guard: Guard | None, source: str, kind: str = "", detail: str = "") -> bool:
    """Whether a finding's ``guard`` (or a guard it says fails after it, ``then``) names a guard
    that failed: its unstripped ``source`` in Dynamo's spelling; for a guard without a source,
    its ``kind`` and (when known) what changed (``grad_mode``)."""
    if guard is None:
        return False
    if source:
        return any(g.source == source for g in guard.chain())
    return guard.kind == kind and (not detail or detail in (guard.detail, guard.source))


def sourceless_kind(failure: GuardFailureRecord) -> tuple[str, str]:
    """(kind, detail) of a failed guard that names no value (``GLOBAL_STATE changed: grad_mode``
    -> ``("GLOBAL_STATE", "grad_mode")``); ``("", "")`` for any other."""
    kind, source, detail = guard_kind_and_source(failure.guard)
    return (kind, detail) if kind in SOURCELESS_KINDS and not source else ("", "")


def failure_predicted(spot: Spot, failure: GuardFailureRecord) -> bool:
    if failure.source:
        return predicts(spot.guard, failure.source)
    kind, detail = sourceless_kind(failure)
    return bool(kind) and predicts(spot.guard, "", kind, detail)


def deciding_codes(proof: Proof) -> tuple[CodeRecord, ...]:
    """The code objects whose graphs decided the proof's tier."""
    tier = proof.tier
    if tier == "unbounded":
        hit = tuple(c for c in proof.codes if c.limit_hit)
        # ``fullgraph=True`` raised at the limit: the code that recompiled is the one.
        return hit or tuple(c for c in proof.codes if c.graphs > 1 or c.failures)
    if tier == "bounded":
        return tuple(c for c in proof.codes if c.graphs > 1)
    return ()


def cause_places(program: Program, proof: Proof) -> frozenset[tuple[str, int]]:
    """The lines a finding must point at to explain the proof (see the module docstring)."""
    places = {(f.file, f.line) for code in deciding_codes(proof) for f in code.failures if f.file and f.line}
    places |= {mark for mark in (program.cause, program.change) if mark}
    return frozenset(places)


def failed_guards(proof: Proof) -> tuple[GuardFailureRecord, ...]:
    """The distinct guards the deciding code objects failed on (one per source, or per kind and
    detail for the sourceless ones), in their first order."""
    seen: dict[tuple[str, ...], GuardFailureRecord] = {}
    for code in deciding_codes(proof):
        for failure in code.failures:
            kind, detail = sourceless_kind(failure)
            key = ("source", failure.source) if failure.source else (kind, detail) if kind else ("text", failure.guard)
            seen.setdefault(key, failure)
    return tuple(seen.values())


def judge(program: Program, proof: Proof, spots: Sequence[Spot], seconds: float = 0.0) -> Verdict:
    """The verdict on one program whose proof ran (see the module docstring for the rules)."""
    if not proof.ran:
        raise ValueError(f"program {program.key}: its proof did not run ({proof.error or 'no reason given'})")
    tier = proof.tier
    places = cause_places(program, proof)
    failures = failed_guards(proof)
    at_cause = [s for s in spots if s.places & places]
    why = ""
    if tier == "unbounded":
        agrees = any(s.severity == "error" for s in at_cause)
        if not agrees:
            why = _miss("no error finding", at_cause, spots)
    elif tier == "bounded":
        global_state = any(sourceless_kind(f)[0] == "GLOBAL_STATE" for f in failures)
        accepted = {"warning", "info"} if global_state else {"warning"}
        agrees = any(s.severity in accepted for s in at_cause)
        if not agrees:
            why = _miss(f"no {' or '.join(sorted(accepted))} finding", at_cause, spots)
    elif tier == "negative":
        alarms = [s for s in spots if s.severity in ("error", "warning")]
        agrees = not alarms
        if alarms:
            first = alarms[0]
            why = f"false alarm {first.code}[{first.severity}] at {first.line[0]}:{first.line[1]}"
    else:  # pragma: no cover - Proof.tier names only TIERS
        raise ValueError(f"unknown tier {tier!r}")
    guard_exact = None
    if failures:
        missed = [f for f in failures if not any(failure_predicted(s, f) for s in spots)]
        guard_exact = not missed
        if missed and agrees:
            why = f"guard {missed[0].source or missed[0].guard} not named"
    return Verdict(program.key, tier, agrees, program.dims, guard_exact, why, seconds)


def _miss(what: str, at_cause: Sequence[Spot], spots: Sequence[Spot]) -> str:
    if at_cause:
        found = ", ".join(sorted({f"{s.code}[{s.severity}]" for s in at_cause}))
        return f"{what} at the cause line (found {found})"
    if spots:
        return f"{what} at the cause line ({len(spots)} finding(s) elsewhere)"
    return f"{what}: silent"


# --------------------------------------------------------------------------------------------
# Linting a program.
# --------------------------------------------------------------------------------------------


def write_project(program: Program, directory: Path) -> Path:
    """Write ``program`` under ``directory`` as a project of its own (a ``pyproject.toml`` at
    its root unless it has one); a path leaving the directory is a ``ValueError``."""
    root = write_program(program, directory)
    if not (root / PROJECT_FILE).exists():
        (root / PROJECT_FILE).write_text(PROJECT_TEXT, encoding="utf-8")
    return root


def spots_of(root: Path, result: LintResult) -> tuple[Spot, ...]:
    return tuple(
        Spot(f.code, f.severity.value, finding_places(root, f), f.guard) for f in result.findings
    )


@dataclass(frozen=True)
class Linted:
    """What the linter said of one program: its findings as spots, the files it could not read
    (``file: message``) and the seconds the lint took."""

    spots: tuple[Spot, ...]
    errors: tuple[str, ...]
    seconds: float


def lint_program(program: Program, config: Config = ALL_RULES) -> Linted:
    """Lint one program written to a temporary directory, the way the command line lints it."""
    with tempfile.TemporaryDirectory(prefix="rcl-lab-") as tmp:
        root = write_project(program, Path(tmp))
        started = time.perf_counter()
        result = lint_paths([str(root)], config)
        seconds = time.perf_counter() - started
        errors = tuple(f"{relative(root, e.path)}: {e.message}" for e in result.errors)
        return Linted(spots_of(root, result), errors, seconds)


def _judge_one(item: tuple[Program, Proof]) -> Verdict:
    program, proof = item
    linted = lint_program(program)
    verdict = judge(program, proof, linted.spots, linted.seconds)
    if linted.errors:
        # A file the linter could not read counts as what the user sees (no finding there),
        # and the verdict says so.
        verdict = replace(verdict, why="; ".join(filter(None, (verdict.why, f"file error {linted.errors[0]}"))))
    return verdict


@dataclass(frozen=True)
class Measurement:
    """Every verdict of a run, with what was left out and the run's cost."""

    verdicts: tuple[Verdict, ...]
    programs: int
    unproven: tuple[str, ...] = ()  # keys without a proof
    not_ran: tuple[str, ...] = ()  # keys whose proof says the program failed on its own
    wall_seconds: float = 0.0
    jobs: int = 1
    dimensions: tuple[str, ...] = field(default=())

    def summary(self) -> dict[str, Any]:
        return summarise(self)


def _pool_context() -> multiprocessing.context.BaseContext:
    # Workers forked from a parent that has the linter imported start at once; where fork is
    # not offered, spawn (each worker imports the linter once).
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods and os.name == "posix" else "spawn")


def measure(programs: Sequence[Program], proofs: Mapping[str, Proof], jobs: int = 2) -> Measurement:
    """Lint every program whose proof ran (``jobs`` worker processes) and judge it."""
    started = time.perf_counter()
    unproven = tuple(p.key for p in programs if p.key not in proofs)
    not_ran = tuple(p.key for p in programs if p.key in proofs and not proofs[p.key].ran)
    work = [(p, proofs[p.key]) for p in programs if p.key in proofs and proofs[p.key].ran]
    if jobs <= 1 or len(work) <= 1:
        verdicts = [_judge_one(item) for item in work]
    else:
        chunk = max(1, min(16, len(work) // (jobs * 4)))
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=_pool_context()) as pool:
            verdicts = list(pool.map(_judge_one, work, chunksize=chunk))
    names: dict[str, None] = {}
    for program in programs:
        for name, _ in program.dims:
            names.setdefault(name, None)
    return Measurement(tuple(verdicts), len(programs), unproven, not_ran, time.perf_counter() - started,
                       max(1, jobs), tuple(names))


# --------------------------------------------------------------------------------------------
# The figures.
# --------------------------------------------------------------------------------------------


def _counts(verdicts: Iterable[Verdict]) -> dict[str, Any]:
    tiers = {tier: [0, 0] for tier in TIERS}
    guard = [0, 0]
    n = 0
    for verdict in verdicts:
        n += 1
        row = tiers[verdict.tier]
        row[0] += verdict.agrees
        row[1] += 1
        if verdict.guard_exact is not None:
            guard[0] += verdict.guard_exact
            guard[1] += 1
    return {"proven": n, "tiers": tiers, "guard_text": guard}


def summarise(measurement: Measurement) -> dict[str, Any]:
    """The JSON of ``bench/generated.py``: ``programs``, ``proven``, ``tiers`` (``[agreeing,
    total]`` each), ``guard_text`` (``[exact, total]``), ``dimensions`` (dimension -> value -> the
    same counts), what was left out and the cost."""
    verdicts = measurement.verdicts
    top = _counts(verdicts)
    dimensions: dict[str, dict[str, Any]] = {}
    for name in measurement.dimensions:
        values: dict[str, list[Verdict]] = {}
        for verdict in verdicts:
            value = dict(verdict.dims).get(name)
            if value is not None:
                values.setdefault(value, []).append(verdict)
        dimensions[name] = {value: _counts(group) for value, group in sorted(values.items())}
    lint_seconds = sum(v.seconds for v in verdicts)
    return {
        "programs": measurement.programs,
        "proven": top["proven"],
        "unproven": len(measurement.unproven),
        "not_ran": len(measurement.not_ran),
        "tiers": top["tiers"],
        "guard_text": top["guard_text"],
        "dimensions": dimensions,
        "cost": {
            "jobs": measurement.jobs,
            "wall_seconds": round(measurement.wall_seconds, 2),
            "lint_seconds_per_program": round(lint_seconds / len(verdicts), 4) if verdicts else 0.0,
        },
    }


def share(pair: Sequence[int]) -> str:
    agreeing, total = pair
    return f"{agreeing}/{total} ({100 * agreeing / total:.0f} %)" if total else "-"


def format_table(summary: Mapping[str, Any]) -> str:
    """The figures as a readable text table: the tiers, then one row per dimension value."""
    lines = [
        f"programs {summary['programs']}, proven {summary['proven']}"
        f" (unproven {summary.get('unproven', 0)}, failed on their own {summary.get('not_ran', 0)})",
        "",
        f"{'':42s} {'unbounded':>16s} {'bounded':>16s} {'negative':>16s} {'guard text':>16s}",
    ]

    def row(label: str, counts: Mapping[str, Any]) -> str:
        cells = [share(counts["tiers"][tier]) for tier in TIERS] + [share(counts["guard_text"])]
        return f"{label[:42]:42s} " + " ".join(f"{c:>16s}" for c in cells)

    lines.append(row("all", summary))
    for name, values in summary["dimensions"].items():
        lines.append("")
        lines.append(f"{name}:")
        for value, counts in values.items():
            lines.append(row(f"  {value}", counts))
    cost = summary.get("cost")
    if cost:
        lines.append("")
        lines.append(
            f"lint: {cost['lint_seconds_per_program']:.3f} s per program, {cost['wall_seconds']:.1f} s wall on {cost['jobs']} worker(s)"
        )
    return "\n".join(lines)


def markdown_table(summary: Mapping[str, Any]) -> str:
    """The per-dimension agreement as a Markdown table (``bench/README.md``)."""
    out = [
        "| dimension | value | unbounded: error at the cause line | bounded: flagged at the cause line | negatives silent | guard text exact |",
        "|---|---|---|---|---|---|",
    ]

    def cells(counts: Mapping[str, Any]) -> str:
        return " | ".join([share(counts["tiers"][t]) for t in TIERS] + [share(counts["guard_text"])])

    out.append(f"| **all** | | {cells(summary)} |")
    for name, values in summary["dimensions"].items():
        for value, counts in values.items():
            out.append(f"| {name} | {value} | {cells(counts)} |")
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# Floors: the agreement CI holds the linter to, on a fixed seed. They only rise.
# --------------------------------------------------------------------------------------------


def _rates(counts: Mapping[str, Any]) -> dict[str, float]:
    pairs = dict(counts["tiers"], guard_text=counts["guard_text"])
    return {name: agreeing / total for name, (agreeing, total) in pairs.items() if total}


def _cells(summary: Mapping[str, Any]) -> Iterable[tuple[str, str, str, float]]:
    """(dimension, value, figure, rate) for every figure with a total, ``("", "", ...)`` overall."""
    for figure, rate in _rates(summary).items():
        yield "", "", figure, rate
    for name, values in summary["dimensions"].items():
        for value, counts in values.items():
            for figure, rate in _rates(counts).items():
                yield name, value, figure, rate


def _floor_of(floors: Mapping[str, Any], name: str, value: str, figure: str) -> float | None:
    if not name:
        return floors.get("all", {}).get(figure)
    return floors.get("dimensions", {}).get(name, {}).get(value, {}).get(figure)


def raise_floors(floors: Mapping[str, Any], summary: Mapping[str, Any]) -> dict[str, Any]:
    """``floors`` with every figure raised to what ``summary`` measured, never lowered (rates
    rounded down to 3 decimals, so that the same run stays above them)."""
    out: dict[str, Any] = {
        "all": dict(floors.get("all", {})),
        "dimensions": {n: {v: dict(f) for v, f in vals.items()} for n, vals in floors.get("dimensions", {}).items()},
    }
    for name, value, figure, rate in _cells(summary):
        measured = int(rate * 1000) / 1000
        old = _floor_of(floors, name, value, figure)
        new = measured if old is None else max(old, measured)
        if name:
            out["dimensions"].setdefault(name, {}).setdefault(value, {})[figure] = new
        else:
            out["all"][figure] = new
    return out


def below_floors(summary: Mapping[str, Any], floors: Mapping[str, Any]) -> list[str]:
    """Every figure measured below its floor (a floor whose figure has no programs any more
    counts as below: a dimension value must not vanish from the CI seed)."""
    problems = []
    measured = {(n, v, f): r for n, v, f, r in _cells(summary)}
    wanted = [("", "", f, r) for f, r in floors.get("all", {}).items()]
    wanted += [(n, v, f, r) for n, vals in floors.get("dimensions", {}).items() for v, figs in vals.items() for f, r in figs.items()]
    for name, value, figure, floor in wanted:
        where = f"{name}={value} {figure}" if name else f"all {figure}"
        rate = measured.get((name, value, figure))
        if rate is None:
            problems.append(f"{where}: no programs measured (floor {floor:.3f})")
        elif rate + 1e-9 < floor:
            problems.append(f"{where}: {rate:.3f} is below its floor {floor:.3f}")
    return problems


def raisable_floors(summary: Mapping[str, Any], floors: Mapping[str, Any], margin: float = 0.0) -> list[str]:
    """Every figure measured above its floor by more than ``margin`` (or with no floor yet)."""
    out = []
    for name, value, figure, rate in _cells(summary):
        floor = _floor_of(floors, name, value, figure)
        where = f"{name}={value} {figure}" if name else f"all {figure}"
        if floor is None:
            out.append(f"{where}: {rate:.3f} has no floor")
        elif int(rate * 1000) / 1000 > floor + margin:
            out.append(f"{where}: {rate:.3f} is above its floor {floor:.3f}")
    return out
