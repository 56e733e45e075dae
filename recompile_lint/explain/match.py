"""Group a run's recompiles by function and guard source, and find the finding behind each.

A guard failure is explained by a finding, in this order of confidence:

1. ``guard``: the finding predicted this guard (its ``guard.source`` names the same value,
   spelled as Dynamo spells it) in this function or in the file the guard points at;
2. ``line``: the guard was created by the finding's line (or a line its evidence reads);
3. ``reason``: the guard blames the value the finding names, with a reason family its rule
   can produce, in the function it names (the verifier's run-mode matching).

Paths in a log may come from another machine or be shortened by Dynamo: they are matched to
the files linted here by their trailing components (``PathResolver``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Sequence

from recompile_lint.explain.evidence import Evidence
from recompile_lint.explain.sources import PathResolver, guard_source, sources_match
from recompile_lint.models import Finding
from recompile_lint.verify.matcher import families_for
from recompile_lint.verify.reasons import blames, parse_reason
from recompile_lint.verify.results import Family, GuardFailure, LimitHit, RecompileEvent
from recompile_lint.verify.targets import import_target

MAX_GUARDS = 8  # distinct guard texts kept per group (the values a counter took, say)
_USE_ROLES = frozenset({"read", "use"})


@dataclass(frozen=True)
class Match:
    """A finding that explains a group of guard failures, and how it was matched."""

    finding: Finding
    how: str  # "guard", "line" or "reason"


@dataclass(frozen=True)
class GuardGroup:
    """The failures of one guarded value in one function's recompiles."""

    source: str  # the guarded value (``G['step']``, ``self.step``, ``y``); "" when the log has none
    family: Family
    failures: int  # recompile attempts in which this value's guard failed
    guards: tuple[str, ...]  # distinct guard texts, in the order seen (at most MAX_GUARDS)
    distinct: int  # how many distinct guard texts there were
    file: str  # best source location: where the guard was created, else the function
    line: int
    function: str
    code: str  # the source line Dynamo quoted, when it did
    located_by: str  # "guard": the guard's own location; "function": only the function's
    matches: tuple[Match, ...] = ()


@dataclass(frozen=True)
class FunctionRecompiles:
    """One compiled function (code object) that recompiled."""

    function: str
    file: str
    first_line: int
    recompiles: int  # graphs compiled after the first
    refused: int  # recompile attempts the limit refused
    graphs: int | None  # graphs compiled, where the input says
    limit: LimitHit | None
    groups: tuple[GuardGroup, ...]


@dataclass(frozen=True)
class Explanation:
    """The whole answer for one input."""

    input: str
    kind: str
    channels: tuple[str, ...]
    inferred: bool
    functions: tuple[FunctionRecompiles, ...]
    other_limit_hits: tuple[LimitHit, ...]  # limit hits of functions with no recompile record
    linted: tuple[str, ...]  # paths the static model ran on (empty: none)
    findings: int
    lint_errors: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def recompiles(self) -> int:
        return sum(f.recompiles for f in self.functions)

    def unexplained(self) -> list[tuple[FunctionRecompiles, GuardGroup]]:
        """Every guard group that no finding explains, with its function."""
        return [(f, g) for f in self.functions for g in f.groups if not g.matches]


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<name>.+)_at_\d+$")


def _base_function(name: str) -> str:
    """The function a graph-break resume function continues (``torch_dynamo_resume_in_f_at_12``
    -> ``f``); other names unchanged."""
    match = _RESUME.match(name)
    return match.group("name") if match else name


class _Matcher:
    """Finds the findings behind a function's guard groups."""

    def __init__(self, findings: Sequence[Finding], resolver: PathResolver) -> None:
        self.findings = list(findings)
        self.resolver = resolver
        self._region_files: dict[str, str | None] = {}

    def _region_file(self, finding: Finding) -> str | None:
        if finding.region not in self._region_files:
            target = import_target(finding) if finding.region else None
            self._region_files[finding.region] = os.path.abspath(target.file) if target else None
        return self._region_files[finding.region]

    def _local(self, logged: str) -> str | None:
        return self.resolver.resolve(logged)

    def _names(self, finding: Finding) -> set[str]:
        return {_short(finding.region), _short(finding.function)} - {""}

    def _compatible(self, finding: Finding, func: FunctionRecompiles, failures: Sequence[GuardFailure]) -> bool:
        """Same function by name and, where the log's paths are known here, by file."""
        names = self._names(finding)
        seen = {_base_function(func.function), *(_base_function(f.function) for f in failures)}
        if not names or not names & seen:
            return False
        path = os.path.abspath(finding.path)
        known = False
        for failure in failures:
            local = self._local(failure.file)
            if local is not None:
                known = True
                if local == path or any(local == os.path.abspath(e.path) for e in finding.evidence):
                    return True
        local = self._local(func.file)
        if local is not None:
            known = True
            if local == self._region_file(finding) or local == path:
                return True
        return not known

    def _at_line(self, finding: Finding, failure: GuardFailure) -> bool:
        local = self._local(failure.file)
        if local is None or not failure.line:
            return False
        places = [(finding.path, finding.line)] + [(e.path, e.line) for e in finding.evidence if e.role in _USE_ROLES]
        return any(local == os.path.abspath(p) and failure.line == line for p, line in places)

    def match(self, func: FunctionRecompiles, group: GuardGroup, failures: Sequence[GuardFailure]) -> tuple[Match, ...]:
        by_guard = [
            f for f in self.findings
            if f.guard is not None and any(sources_match(g.source, g.kind, group.source) for g in f.guard.chain())
            and self._compatible(f, func, failures)
        ]
        if by_guard:
            return tuple(Match(f, "guard") for f in by_guard)
        by_line = [f for f in self.findings if any(self._at_line(f, failure) for failure in failures)]
        if by_line:
            return tuple(Match(f, "line") for f in by_line)
        blaming = [
            f for f in self.findings
            if any(failure.family in families_for(f.code) and blames(f.subject, failure) for failure in failures)
        ]
        by_reason = [f for f in blaming if f.region and self._compatible(f, func, failures)]
        if by_reason:
            return tuple(Match(f, "reason") for f in by_reason)
        # A finding at a compile site (a backend made per call, a compile in a loop) names no
        # region: whatever was compiled there is the function; the same file first.
        sites = [f for f in blaming if not f.region]
        here = [f for f in sites if self._local(func.file) == os.path.abspath(f.path)]
        return tuple(Match(f, "reason") for f in (here or sites))


def _same_function(hit: LimitHit, function: str, file: str, first_line: int, resolver: PathResolver) -> bool:
    if hit.function != function:
        return False
    if hit.first_line and first_line and hit.first_line != first_line:
        return False
    if hit.file and file and hit.file != file:
        # Dynamo shortens some paths from the front ("mp/ex/seed.py" for "/tmp/ex/seed.py").
        if hit.file.endswith(file) or file.endswith(hit.file):
            return True
        a, b = resolver.resolve(hit.file), resolver.resolve(file)
        return a is not None and a == b
    return True


def _group(source: str, failures: list[GuardFailure], func_file: str, func_line: int, func_name: str,
           attempts: int) -> GuardGroup:
    texts = list(dict.fromkeys(f.guard for f in failures))
    located = next((f for f in failures if f.file and f.line), None)
    if located is not None:
        file, line, function, code, by = located.file, located.line, located.function, located.source, "guard"
    else:
        file, line, function, code, by = func_file, func_line, func_name, "", "function"
    return GuardGroup(
        source=source, family=failures[0].family, failures=attempts, guards=tuple(texts[:MAX_GUARDS]),
        distinct=len(texts), file=file, line=line, function=function, code=code, located_by=by,
    )


def explain(evidence: Evidence, findings: Sequence[Finding], *, input_name: str, linted: Sequence[str] = (),
            lint_errors: Sequence[str] = (), files: Sequence[str] = (), warnings: Sequence[str] = ()) -> Explanation:
    """Group ``evidence`` by function and guard source and match each group to ``findings``.

    ``files``: the local files log paths may name (the linted project); findings' own files are
    always among them.
    """
    resolver = PathResolver([*files, *(f.path for f in findings)])
    matcher = _Matcher(findings, resolver)
    order: list[tuple[str, str, int]] = []
    by_function: dict[tuple[str, str, int], list[RecompileEvent]] = {}
    for event in evidence.events:
        key = (event.function, event.file, event.first_line)
        if key not in by_function:
            order.append(key)
        by_function.setdefault(key, []).append(event)
    compiles = dict(evidence.compiles)
    functions = []
    used_hits: set[int] = set()
    for key in order:
        name, file, first_line = key
        events = by_function[key]
        refused = sum(1 for e in events if e.compile_id and (e.compile_id, e.function) in evidence.refused)
        attempts: dict[str, int] = {}
        failures: dict[str, list[GuardFailure]] = {}
        for event in events:
            seen: set[str] = set()
            for failure in event.reasons:
                source = guard_source(failure.guard)
                failures.setdefault(source, []).append(failure)
                if source not in seen:
                    seen.add(source)
                    attempts[source] = attempts.get(source, 0) + 1
        limit = None
        for number, hit in enumerate(evidence.limit_hits):
            if number not in used_hits and _same_function(hit, name, file, first_line, resolver):
                limit = hit
                used_hits.add(number)
                break
        recompiles = len(events) - refused
        graphs = compiles.get((file, first_line, name))
        func = FunctionRecompiles(name, file, first_line, recompiles, refused, graphs, limit, ())
        groups = []
        for source in sorted(attempts, key=lambda s: (-attempts[s], s)):
            group = _group(source, failures[source], file, first_line, name, attempts[source])
            matches = matcher.match(func, group, failures[source])
            groups.append(replace(group, matches=matches))
        functions.append(FunctionRecompiles(name, file, first_line, recompiles, refused, graphs, limit, tuple(groups)))
    others = []
    for number, hit in enumerate(evidence.limit_hits):
        if number in used_hits:
            continue
        if not hit.function:
            others.append(hit)
            continue
        # A function seen only through its limit warning (the recompiles channel was off):
        # it holds ``limit`` graphs, and the warning names the guard that failed last.
        failures = [parse_reason(hit.last_reason)] if hit.last_reason.strip() else []
        graphs = hit.limit_value or None
        func = FunctionRecompiles(hit.function, hit.file, hit.first_line, max((graphs or 1) - 1, 0), 1, graphs, hit, ())
        groups = []
        for failure in failures:
            group = _group(guard_source(failure.guard), [failure], hit.file, hit.first_line, hit.function, 1)
            groups.append(replace(group, matches=matcher.match(func, group, [failure])))
        functions.append(replace(func, groups=tuple(groups)))
    return Explanation(
        input=input_name,
        kind=evidence.kind,
        channels=evidence.channels,
        inferred=evidence.inferred,
        functions=tuple(functions),
        other_limit_hits=tuple(others),
        linted=tuple(linted),
        findings=len(findings),
        lint_errors=tuple(lint_errors),
        warnings=tuple(evidence.warnings) + tuple(warnings),
    )
