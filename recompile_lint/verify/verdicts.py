"""Turn what the recorder saw during a probe into a verdict for one finding (no torch here)."""

from __future__ import annotations

from pathlib import Path

from recompile_lint.models import Subject
from recompile_lint.verify.reasons import blames
from recompile_lint.verify.recorder import Recording
from recompile_lint.verify.results import GuardFailure, RecompileEvent, Verdict, Verification

MAX_REASONS = 3


def same_path(a: str, b: str) -> bool:
    """Whether two paths name the same file (empty paths never do)."""
    if not a or not b:
        return False
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return a == b


def points_at(failure: GuardFailure, path: str, line: int) -> bool:
    """Whether a guard was created by ``path:line``."""
    return failure.line == line and same_path(failure.file, path)


# Subjects that name one value: a guard on another value, even on the same line, is not theirs.
_NAMED_KINDS = frozenset({"global", "item", "attribute", "instance-attribute", "environ", "parameter", "callable"})


def explains(subject: Subject | None, failure: GuardFailure, path: str, line: int) -> bool:
    """Whether a guard failure is the one a finding predicted: it blames the finding's subject,
    or (for a subject that names no single value) it was created by the finding's line."""
    if blames(subject, failure):
        return True
    named = subject is not None and subject.kind in _NAMED_KINDS and bool(subject.name or subject.key)
    return not named and points_at(failure, path, line)


def _in_region(event: RecompileEvent, region_code: tuple[str, int] | None, short: str) -> bool:
    """Whether a recompile is of the region's own code object (or a resume function Dynamo
    made from it after a graph break)."""
    if region_code is None:
        return True
    file, first_line = region_code
    if not same_path(event.file, file):
        return False
    if event.first_line == first_line:
        return True
    return bool(short) and event.function.startswith(f"torch_dynamo_resume_in_{short}_at_")


def judge(
    recording: Recording,
    subject: Subject | None,
    *,
    path: str,
    line: int,
    calls: int,
    description: str,
    method: str,
    stopped: str = "",
    region_code: tuple[str, int] | None = None,
    region_name: str = "",
) -> Verification:
    """The verdict for one finding after its probe ran.

    ``confirmed`` needs a recompile whose reason blames the finding's subject (or, for
    subjects the patterns cannot name, a guard created by the finding's own line). With
    ``region_code`` (the region's file and first line) only that code object's recompiles and
    graphs count: a same-named function elsewhere is another region. When the region never
    compiled, the verdict is ``not-exercised``.
    """
    short = region_name.rsplit(".", 1)[-1]
    events = [e for e in recording.events if _in_region(e, region_code, short)]
    failures = [r for event in events for r in event.reasons]
    matching = [r for r in failures if explains(subject, r, path, line)]
    if region_code is not None:
        graphs = recording.graphs_for(region_code[0], region_code[1])
        limit_hit = any(
            same_path(hit.file, region_code[0]) and hit.first_line in (0, region_code[1])
            for hit in recording.limit_hits
        )
    else:
        graphs = max((n for _, n in recording.graphs), default=0)
        limit_hit = bool(recording.limit_hits)
    shown = matching or failures
    reasons = tuple(dict.fromkeys(r.describe() for r in shown))[:MAX_REASONS]
    recompiles = len(events)
    tail = f"; stopped early: {stopped}" if stopped else ""
    during = f" in {calls} call(s)" if calls else ""
    if matching:
        limit = ", reached recompile_limit" if limit_hit else ""
        detail = f"{description}: {recompiles} recompile(s){during}{limit}{tail}"
        return Verification(Verdict.CONFIRMED, graphs, recompiles, limit_hit, reasons, detail, method)
    if failures:
        detail = (
            f"{description}: recompiled, but the guards blame something else "
            f"({failures[0].guard}){tail}"
        )
        return Verification(Verdict.NOT_REPRODUCED, graphs, recompiles, limit_hit, reasons, detail, method)
    if stopped and calls <= 1 and not graphs:
        return Verification(Verdict.UNVERIFIABLE, graphs, 0, limit_hit, (), stopped, method)
    if region_code is not None and graphs == 0:
        where = f"{region_name or 'the region'}"
        detail = f"{description}: {where} never compiled{during}{tail}"
        return Verification(Verdict.NOT_EXERCISED, 0, 0, False, (), detail, method)
    detail = f"{description}: {graphs} graph(s), no recompile{during}{tail}"
    return Verification(Verdict.NOT_REPRODUCED, graphs, 0, limit_hit, (), detail, method)
