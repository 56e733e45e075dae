"""Text output.

``full`` (the default), as ruff prints it: a headline (``path:line:col: CODE [severity,
boundedness] what``), a frame of the reported line with the span underlined, the related
locations with what happens there, why it recompiles, and ``help:`` with the fix.

``concise``: one line per finding, ``path:line:col: CODE [severity] headline (rule-name)``,
at most 160 characters, for grep and for tools that read flake8-style lines.

Both end with a summary line. Colour (ANSI) only when the caller asks for it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Mapping

from recompile_lint.models import FileError, Finding, LintResult, Location, Severity
from recompile_lint.report.sanitize import escape, escape_path

# What each role of a related location is called in the output.
ROLE_LABELS = {
    "primary": "finding",
    "compile-site": "compiled",
    "read": "read",
    "use": "used",
    "write": "changed",
    "call": "called",
}


@dataclass(frozen=True)
class Style:
    """ANSI styling; the plain style leaves text as it is."""

    enabled: bool = False

    def _wrap(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text

    def bold(self, text: str) -> str:
        return self._wrap(text, "1")

    def dim(self, text: str) -> str:
        return self._wrap(text, "2")

    def gutter(self, text: str) -> str:
        return self._wrap(text, "1;34")  # bold blue, as ruff and rustc draw the frame

    def severity(self, text: str, severity: Severity) -> str:
        return self._wrap(text, {Severity.ERROR: "1;31", Severity.WARNING: "1;33", Severity.INFO: "1;36"}[severity])

    def help(self, text: str) -> str:
        return self._wrap(text, "1;32")


PLAIN = Style(False)
_NAME = re.compile(r"[\w.]+")


class SourceLines:
    """The lines of files, read once each (a frame needs one line of a file)."""

    def __init__(self, sources: Mapping[str, str] | None = None) -> None:
        self._lines: dict[str, list[str] | None] = {path: text.split("\n") for path, text in (sources or {}).items()}

    def line(self, path: str, number: int) -> str | None:
        if path not in self._lines:
            self._lines[path] = _read_lines(path)
        lines = self._lines[path]
        if lines is None or not 0 < number <= len(lines):
            return None
        return lines[number - 1]


def _read_lines(path: str) -> list[str] | None:
    from recompile_lint.source import SourceError, decode_source, read_bytes

    try:
        return decode_source(read_bytes(path), path).split("\n")
    except SourceError:
        return None


def format_finding_line(finding: Finding) -> str:
    """The concise line of a finding: its headline, made to fit in ``CONCISE_WIDTH``
    characters (qualified names shortened first, see ``concise_headline``); the why and the
    fix are in the full format, the whole message and the full names in JSON."""
    from recompile_lint.report.wording import CONCISE_WIDTH, concise_headline

    head = f"{escape_path(finding.path)}:{finding.line}:{finding.column}: {finding.code} [{finding.severity}] "
    tail = f" ({finding.name})"
    room = CONCISE_WIDTH - len(head) - len(tail)
    title = concise_headline(finding.title or finding.message, room, (finding.region, finding.function), measure=lambda text: len(escape(text)))
    return f"{head}{escape(title)}{tail}"


def headline(finding: Finding, style: Style = PLAIN) -> str:
    """``path:line:col: CODE [severity, boundedness] what``."""
    where = style.bold(f"{escape_path(finding.path)}:{finding.line}:{finding.column}:")
    code = style.severity(finding.code, finding.severity)
    tag = f"[{finding.severity}, {finding.bounded}]"
    return f"{where} {code} {style.severity(tag, finding.severity)} {style.bold(escape(finding.title or finding.message))}"


def frame(finding: Finding, lines: SourceLines, style: Style = PLAIN) -> list[str]:
    """The reported line with its span underlined (nothing when the line cannot be read)."""
    text = lines.line(finding.path, finding.line)
    if text is None:
        return []
    raw = text.replace("\t", " ")  # one column per character, so the carets line up
    number = str(finding.line)
    pad = " " * len(number)
    start = max(finding.column, 1)
    if finding.end_line == finding.line and finding.end_column > start:
        end = finding.end_column
    elif finding.end_line > finding.line:
        end = max(len(raw.rstrip()) + 1, start + 1)  # the span goes on: underline to the line's end
    else:
        # A location without an extent (a write) underlines the name it starts with.
        word = _NAME.match(raw, start - 1)
        end = start + max(len(word.group(0)) if word else 0, 1)
    # The line is repository text: its control characters are shown escaped, and the carets
    # are placed under the escaped span.
    text = escape(raw)
    before, span = raw[: start - 1], raw[start - 1 : end - 1]
    lead = len(escape(before)) + (start - 1 - len(before))
    width = len(escape(span)) + (end - start - len(span))
    carets = " " * lead + "^" * width
    bar = style.gutter("|")
    return [
        f"{pad} {bar}",
        f"{style.gutter(number)} {bar} {text}",
        f"{pad} {bar} {style.severity(carets, finding.severity)} {style.severity(finding.code, finding.severity)} ({finding.name})",
        f"{pad} {bar}",
    ]


def related(location: Location) -> str:
    """``model.py:11:30: finding: what happens there``."""
    from recompile_lint.report.wording import note_of

    label = ROLE_LABELS.get(location.role, location.role)
    return f"{escape(location.path)}:{location.line}:{location.column}: {label}: {escape(note_of(location))}"


def format_full(finding: Finding, lines: SourceLines, style: Style = PLAIN) -> list[str]:
    """Every line of one finding in the full format."""
    out = [headline(finding, style)]
    out.extend(frame(finding, lines, style))
    indent = " " * (len(str(finding.line)) + 1)
    for location in finding.evidence:
        out.append(f"{indent}{style.gutter(':::')} {related(location)}")
    if finding.explanation:
        out.append(f"{indent}{style.gutter('=')} {style.bold('why')}: {escape(finding.explanation)}")
    if finding.fix:
        out.append(f"{indent}{style.gutter('=')} {style.help('help')}: {escape(finding.fix)}")
    return out


def format_error(error: FileError) -> str:
    """A file that could not be linted: E999 (syntax) with its place, E902 otherwise."""
    path, message = escape_path(error.path), escape(error.message)
    return f"{path}:{error.line}:{error.column}: E999 {message}" if error.line else f"{path}: E902 {message}"


def format_text(result: LintResult, *, color: bool = False, sources: Mapping[str, str] | None = None) -> str:
    """The full format: each finding with its frame, related locations, why and help.
    ``sources`` (path -> text) stands in for files whose text is not on disk (a buffer)."""
    style = Style(color)
    lines = SourceLines(sources)
    blocks = ["\n".join(format_full(f, lines, style)) + "\n" for f in result.findings]
    tail = [format_error(e) for e in result.errors]
    tail.append(summary(result))
    return "\n".join(blocks) + ("\n" if blocks else "") + "\n".join(tail) + "\n"


def format_concise(result: LintResult, *, color: bool = False, sources: Mapping[str, str] | None = None) -> str:
    """One line per finding (and per file error), then the summary."""
    style = Style(color)
    lines = []
    for finding in result.findings:
        line = format_finding_line(finding)
        if style.enabled:
            head, _, rest = line.partition(f" {finding.code} ")
            line = f"{style.bold(head)} {style.severity(finding.code, finding.severity)} {rest}"
        lines.append(line)
    lines.extend(format_error(e) for e in result.errors)
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
    if result.sites_not_analysed:
        parts.append(sites_not_analysed(result.sites_not_analysed))
    return "Found " + ", ".join(parts) + "."


def sites_not_analysed(count: int) -> str:
    """What the findings do not cover: compile sites whose compiled code is not known."""
    return f"{count} compile site{'s' if count != 1 else ''} not analysed (run recompile-lint regions)"


def format_statistics(result: LintResult) -> str:
    """Counts per code, most frequent first (``--statistics``)."""
    counts = Counter((f.code, f.name) for f in result.findings)
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0][0]))
    return "".join(f"{count:>5}  {code}  {name}\n" for (code, name), count in rows)
