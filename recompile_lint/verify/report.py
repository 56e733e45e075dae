"""Render verifier results as text or JSON (no analysis here)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Sequence

from recompile_lint.report.sanitize import escape_path, safe_json
from recompile_lint.verify.matcher import describe_event
from recompile_lint.verify.results import RunReport, Verdict, VerifiedFinding

_ORDER = (Verdict.CONFIRMED, Verdict.NOT_REPRODUCED, Verdict.NOT_EXERCISED, Verdict.UNVERIFIABLE)


def _finding_lines(item: VerifiedFinding) -> list[str]:
    f, v = item.finding, item.verification
    lines = [f"{f.path}:{f.line}:{f.column}: {f.code} {f.message}"]
    how = f" via {v.method}" if v.method and v.method not in {"probe", "run"} else ""
    facts = []
    if v.graphs:
        facts.append(f"{v.graphs} graph(s)")
    if v.limit_hit:
        facts.append("recompile_limit reached")
    extra = f" [{', '.join(facts)}]" if facts else ""
    lines.append(f"    {v.verdict.value}{how}{extra}: {v.detail}" if v.detail else f"    {v.verdict.value}{how}{extra}")
    for reason in v.reasons:
        lines.append(f"    guard: {reason}")
    return lines


def _summary(items: Sequence[VerifiedFinding]) -> str:
    counts = Counter(item.verification.verdict for item in items)
    parts = [f"{counts[v]} {v.value}" for v in _ORDER if counts[v]]
    noun = "finding" if len(items) == 1 else "findings"
    return f"Verified {len(items)} {noun}: {', '.join(parts) if parts else 'nothing to verify'}."


def render_text(items: Sequence[VerifiedFinding]) -> str:
    """One block per finding (verdict, evidence, guards), then a summary line."""
    out: list[str] = []
    for item in items:
        out.extend(_finding_lines(item))
    out.append(_summary(items))
    return _lines(out)


def _lines(out: list[str]) -> str:
    """The report's lines, each escaped whole (``report.sanitize``): paths, messages, guards
    and the run's own output are repository text, and no line of ours holds a control."""
    return "\n".join(escape_path(line) for line in out) + "\n"


def render_json(items: Sequence[VerifiedFinding]) -> str:
    """The JSON array of findings, each with its ``verification`` object."""
    return safe_json(json.dumps([item.to_dict() for item in items], indent=2)) + "\n"


def render_run_text(report: RunReport) -> str:
    """Run mode: confirmed findings, findings the run did not show, unpredicted recompiles."""
    out = [f"Ran: {' '.join(report.command)}"
           + (f" (exit code {report.exit_code})" if report.exit_code is not None else "")]
    if report.detail:
        out.append(f"Note: {report.detail}")
    confirmed = [i for i in report.findings if i.verification.verdict is Verdict.CONFIRMED]
    others = [i for i in report.findings if i.verification.verdict is not Verdict.CONFIRMED]
    out.append("")
    out.append(f"Confirmed by the run ({len(confirmed)}):")
    for item in confirmed:
        out.extend("  " + line for line in _finding_lines(item))
    out.append("")
    out.append(f"Not shown by the run ({len(others)}):")
    for item in others:
        out.extend("  " + line for line in _finding_lines(item))
    out.append("")
    out.append(f"Recompiles no finding predicted ({len(report.unpredicted)}):")
    for event in report.unpredicted:
        out.extend("  " + line for line in describe_event(event))
    for hit in report.limit_hits:
        out.append("")
        out.append(f"{hit.file}:{hit.first_line}: {hit.function} reached {hit.limit_type} "
                   f"({hit.limit_value}); new values run eagerly from here on")
    return _lines(out)


def render_run_json(report: RunReport) -> str:
    """Run mode as one JSON object (documented in docs/verify.md)."""
    return safe_json(json.dumps(report.to_dict(), indent=2)) + "\n"
