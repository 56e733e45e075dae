"""``path:line:col: CODE [severity] message (rule-name)``, then a summary line."""

from __future__ import annotations

from collections import Counter

from recompile_lint.models import LintResult


def format_finding_line(finding) -> str:
    return f"{finding.path}:{finding.line}:{finding.column}: {finding.code} [{finding.severity}] {finding.message} ({finding.name})"


def format_text(result: LintResult) -> str:
    lines = [format_finding_line(f) for f in result.findings]
    lines.extend(f"{e.path}:{e.line}:{e.column}: E999 {e.message}" if e.line else f"{e.path}: E902 {e.message}" for e in result.errors)
    lines.append(summary(result))
    return "\n".join(lines) + "\n"


def summary(result: LintResult) -> str:
    counts = Counter(f.severity.value for f in result.findings)
    parts = [f"{len(result.findings)} finding{'s' if len(result.findings) != 1 else ''}"]
    detail = ", ".join(f"{counts[s]} {s}{'s' if counts[s] != 1 and s != 'info' else ''}" for s in ("error", "warning", "info") if counts[s])
    if detail:
        parts[0] += f" ({detail})"
    parts.append(f"{result.files_checked} file{'s' if result.files_checked != 1 else ''} checked")
    if result.errors:
        parts.append(f"{len(result.errors)} file error{'s' if len(result.errors) != 1 else ''}")
    if result.suppressed:
        parts.append(f"{result.suppressed} suppressed")
    return "Found " + ", ".join(parts) + "."


def format_statistics(result: LintResult) -> str:
    """Counts per code, most frequent first (``--statistics``)."""
    counts = Counter((f.code, f.name) for f in result.findings)
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0][0]))
    return "".join(f"{count:>5}  {code}  {name}\n" for (code, name), count in rows)
