"""``--add-noqa``: a ``# noqa: RCLnnn`` on each finding's line, merged with one already there.

The comment goes at the end of the reported line, where ``suppress`` reads it: a line with
``# noqa: E501`` becomes ``# noqa: E501, RCL101``; a bare ``# noqa`` already suppresses
everything and is left alone. A line whose end is inside a string or after a backslash
continuation cannot take a comment there: the file's syntax tree is compared before and after,
and a line whose comment would change the program (or break it) is left as it was.
"""

from __future__ import annotations

import ast

from recompile_lint.fixes.base import parses
from recompile_lint.models import Finding
from recompile_lint.suppress import NOQA, suppressed_codes


def with_noqa(line: str, codes: list[str]) -> str:
    """``line`` with ``codes`` added to its ``# noqa`` (or a new one)."""
    present = suppressed_codes(line)
    if present is not None and not present:
        return line  # bare noqa: everything is suppressed already
    wanted = [code for code in codes if present is None or code not in present]
    if not wanted:
        return line
    match = NOQA.search(line)
    if match is not None and match.group("codes"):
        end = match.end("codes")
        return f"{line[:end]}, {', '.join(wanted)}{line[end:]}"
    return f"{line.rstrip()}  # noqa: {', '.join(wanted)}"


def _tree(text: str) -> str | None:
    try:
        return ast.dump(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def add_noqa(text: str, findings: list[Finding]) -> tuple[str, int, list[int]]:
    """(new text, lines changed, lines left alone because a comment there would change the
    program) for ``findings`` of one file."""
    by_line: dict[int, list[str]] = {}
    for finding in sorted(findings):
        codes = by_line.setdefault(finding.line, [])
        if finding.code not in codes:
            codes.append(finding.code)
    lines = text.split("\n")
    before = _tree(text) if parses(text) else None
    if before is None:
        return text, 0, sorted(by_line)
    changed, refused = 0, []
    for number, codes in sorted(by_line.items()):
        if not 0 < number <= len(lines):
            continue
        new_line = with_noqa(lines[number - 1], codes)
        if new_line == lines[number - 1]:
            continue
        trial = lines[: number - 1] + [new_line] + lines[number:]
        if _tree("\n".join(trial)) != before:
            refused.append(number)
            continue
        lines = trial
        changed += 1
    return "\n".join(lines), changed, refused
