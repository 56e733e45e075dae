"""Turn what the recorder saw during a probe into a verdict for one finding (no torch here)."""

from __future__ import annotations

from pathlib import Path

from recompile_lint.models import Subject
from recompile_lint.verify.reasons import blames
from recompile_lint.verify.recorder import Recording
from recompile_lint.verify.results import GuardFailure, Verdict, Verification

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
) -> Verification:
    """The verdict for one finding after its probe ran.

    ``confirmed`` needs a recompile whose reason blames the finding's subject (or, for
    subjects the patterns cannot name, a guard created by the finding's own line).
    """
    failures = [r for event in recording.events for r in event.reasons]
    matching = [r for r in failures if blames(subject, r) or points_at(r, path, line)]
    if region_code is not None:
        graphs = recording.graphs_for(region_code[0], region_code[1])
    else:
        graphs = 0
    graphs = graphs or max((n for _, n in recording.graphs), default=0)
    limit_hit = bool(recording.limit_hits)
    shown = matching or failures
    reasons = tuple(dict.fromkeys(r.describe() for r in shown))[:MAX_REASONS]
    recompiles = len(recording.events)
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
    if stopped and calls <= 1:
        return Verification(Verdict.UNVERIFIABLE, graphs, 0, limit_hit, (), stopped, method)
    detail = f"{description}: {graphs or 1} graph(s), no recompile{during}{tail}"
    return Verification(Verdict.NOT_REPRODUCED, graphs, 0, limit_hit, (), detail, method)
