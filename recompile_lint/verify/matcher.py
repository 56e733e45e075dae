"""Run mode: match the recompiles a real run recorded to the static findings (no torch here).

A recorded guard failure matches a finding when it was created by the finding's own line
(the reason's ``file:line``), or when it blames the finding's subject from the function the
finding names, with a reason family the finding's rule can produce.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from recompile_lint.models import Finding
from recompile_lint.verify.reasons import blames
from recompile_lint.verify.recorder import Recording
from recompile_lint.verify.results import (
    Family,
    GuardFailure,
    RecompileEvent,
    Verdict,
    Verification,
    VerifiedFinding,
)
from recompile_lint.verify.verdicts import MAX_REASONS, same_path, points_at

# The reason families each rule family can produce (RCL1: values, RCL2: shapes, ...).
FAMILIES_BY_PREFIX: dict[str, frozenset[Family]] = {
    "RCL1": frozenset({Family.CONSTANT, Family.IDENTITY}),
    "RCL2": frozenset({Family.SHAPE, Family.CONSTANT}),
    "RCL3": frozenset({Family.GLOBAL_STATE}),
    "RCL4": frozenset({Family.IDENTITY, Family.CONSTANT, Family.OTHER}),
}


def families_for(code: str) -> frozenset[Family]:
    """Reason families a finding with ``code`` can explain (all of them for unknown codes)."""
    return FAMILIES_BY_PREFIX.get(code[:4], frozenset(Family))


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def reason_matches(finding: Finding, event: RecompileEvent, failure: GuardFailure) -> bool:
    """Whether ``failure`` (in a recompile of ``event``) is what ``finding`` predicted."""
    if points_at(failure, finding.path, finding.line):
        return True
    if failure.family not in families_for(finding.code):
        return False
    if not blames(finding.subject, failure):
        return False
    names = {_short(finding.region), _short(finding.function)} - {""}
    return not names or event.function in names or failure.function in names


def _event_matches(finding: Finding, event: RecompileEvent) -> list[GuardFailure]:
    return [r for r in event.reasons if reason_matches(finding, event, r)]


def _region_graphs(finding: Finding, recording: Recording) -> int:
    name = _short(finding.region)
    counts = [n for (file, _, fn), n in recording.graphs if fn == name]
    exact = [n for (file, _, fn), n in recording.graphs if fn == name and same_path(file, finding.path)]
    return max(exact or counts, default=0)


def match_run(
    findings: Sequence[Finding], recording: Recording
) -> tuple[list[VerifiedFinding], list[RecompileEvent]]:
    """Each finding with its run verdict, and the recompiles that no finding predicted."""
    verified = []
    explained: set[int] = set()
    for finding in findings:
        matched: list[tuple[RecompileEvent, list[GuardFailure]]] = []
        for number, event in enumerate(recording.events):
            failures = _event_matches(finding, event)
            if failures:
                matched.append((event, failures))
                explained.add(number)
        graphs = _region_graphs(finding, recording)
        limit_hit = any(hit.function == _short(finding.region) for hit in recording.limit_hits)
        if matched:
            reasons = tuple(dict.fromkeys(f.describe() for _, fs in matched for f in fs))[:MAX_REASONS]
            detail = f"the run recompiled {len(matched)} time(s) for this reason"
            if limit_hit:
                detail += " and reached recompile_limit"
            verification = Verification(
                Verdict.CONFIRMED, graphs, len(matched), limit_hit, reasons, detail, "run"
            )
        elif graphs:
            verification = Verification(
                Verdict.NOT_REPRODUCED, graphs, 0, limit_hit, (),
                f"the run compiled {_short(finding.region)} ({graphs} graph(s)) "
                "but never recompiled for this reason", "run",
            )
        else:
            verification = Verification(
                Verdict.NOT_EXERCISED, 0, 0, False, (),
                f"the run never compiled {_short(finding.region) or 'this region'}", "run",
            )
        verified.append(VerifiedFinding(finding, verification))
    unpredicted = [e for number, e in enumerate(recording.events) if number not in explained]
    return verified, unpredicted


def describe_event(event: RecompileEvent) -> Iterable[str]:
    """Lines describing one recompile: the function, then each guard and the line it points at."""
    yield f"{event.file}:{event.first_line}: recompiled {event.function} ({event.compile_id or '?'})"
    for failure in event.reasons[:MAX_REASONS]:
        yield f"    guard: {failure.describe()}"
