"""Run mode: match the recompiles a real run recorded to the static findings (no torch here).

A recorded guard failure matches a finding when it is a recompile of the finding's region
(same file and first line, or same file and name: never a same-named function elsewhere) and
it blames the finding's subject with a reason family the finding's rule can produce, or, for a
subject that names no single value, was created by the finding's own line (``file:line``).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from recompile_lint.models import Finding
from recompile_lint.verify.recorder import Recording
from recompile_lint.verify.results import (
    Family,
    GuardFailure,
    RecompileEvent,
    Verdict,
    Verification,
    VerifiedFinding,
)
from recompile_lint.verify.targets import import_target, region_location
from recompile_lint.verify.verdicts import MAX_REASONS, explains, points_at, same_path

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


def in_region(finding: Finding, event: RecompileEvent) -> bool:
    """Whether ``event`` recompiled the code object of ``finding``'s region: same file and
    first line when the source says where the region starts, else same file and name. A
    same-named function in another file is another region."""
    short = _short(finding.region)
    if not short:
        return False
    location = region_location(finding)
    if location is not None:
        file, first_line = location
        if not same_path(event.file, file):
            return False
        return event.first_line == first_line or event.function.startswith(f"torch_dynamo_resume_in_{short}_at_")
    target = import_target(finding)
    file = target.file if target is not None else finding.path
    return event.function == short and same_path(event.file, file)


def reason_matches(finding: Finding, event: RecompileEvent, failure: GuardFailure) -> bool:
    """Whether ``failure`` (in a recompile of ``event``) is what ``finding`` predicted."""
    if failure.family not in families_for(finding.code) and not points_at(failure, finding.path, finding.line):
        return False
    if not explains(finding.subject, failure, finding.path, finding.line):
        return False
    if not finding.region:
        return _short(finding.function) in {event.function, failure.function}
    # The guard may be created in an inlined helper (another function, another file); the
    # recompile is still of the region's own code object.
    return in_region(finding, event)


def _event_matches(finding: Finding, event: RecompileEvent) -> list[GuardFailure]:
    return [r for r in event.reasons if reason_matches(finding, event, r)]


def _region_graphs(finding: Finding, recording: Recording) -> int:
    location = region_location(finding)
    if location is not None:
        return recording.graphs_for(location[0], location[1])
    name = _short(finding.region)
    target = import_target(finding)
    file = target.file if target is not None else finding.path
    return max((n for (f, _, fn), n in recording.graphs if fn == name and same_path(f, file)), default=0)


def _limit_hit(finding: Finding, recording: Recording) -> bool:
    location = region_location(finding)
    name = _short(finding.region)
    for hit in recording.limit_hits:
        if hit.function != name:
            continue
        if location is None or (same_path(hit.file, location[0]) and hit.first_line in (0, location[1])):
            return True
    return False


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
        limit_hit = _limit_hit(finding, recording)
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
