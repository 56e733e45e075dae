"""GitHub Actions workflow commands (``--format github``): one annotation per finding.

``::error file=src/m.py,line=8,col=16,endLine=8,endColumn=20,title=RCL101 (mutated-global)::...``
shows on the pull request's diff (``file`` relative to the repository root, as GitHub places
it: ``display_path``); its text lists the finding's related lines (the write, the compile
site) under the headline, then why and the fix. Severity maps to the command: error ->
``error``, warning -> ``warning``, info -> ``notice``.
"""

from __future__ import annotations

import os

from recompile_lint.models import FileError, Finding, LintResult, Severity
from recompile_lint.report.sanitize import escape, line_start

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(value: str) -> str:
    """Escape a command's message as the Actions runner decodes it."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """Escape a property value: the message escapes plus ``:`` and ``,``, which delimit properties."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def _repository_text(value: object) -> str:
    """Text from the repository (a path, a quoted name, a message) for an annotation: its
    control characters, newlines included, shown as escapes (``sanitize``), so that only
    the line breaks this module puts between the lines of a message reach the runner."""
    return escape(value)


def display_path(path: str) -> str:
    """A path as GitHub places an annotation: relative to the repository root, POSIX, with no
    ``./`` (``pkg/m.py``). The root is the workflow's checkout, ``GITHUB_WORKSPACE``, when the
    file is under it (a step run in a subfolder), else the working directory; a file outside
    both keeps its absolute path."""
    absolute = os.path.abspath(path)
    for root in (os.environ.get("GITHUB_WORKSPACE"), os.getcwd()):
        if not root:
            continue
        try:
            relative = os.path.relpath(absolute, os.path.abspath(root))
        except ValueError:  # another drive (Windows)
            continue
        if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
            return relative.replace(os.sep, "/")
    return absolute.replace(os.sep, "/")


def _command(kind: str, properties: list[tuple[str, object]], message: str) -> str:
    rendered = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties)
    return f"::{kind} {rendered}::{escape_data(message)}"


def format_annotation(finding: Finding) -> str:
    """The workflow command for one finding."""
    properties: list[tuple[str, object]] = [("file", _repository_text(display_path(finding.path))), ("line", finding.line), ("col", finding.column)]
    if finding.end_line >= finding.line and finding.end_column > 0:
        properties += [("endLine", finding.end_line), ("endColumn", finding.end_column)]
    properties.append(("title", f"{finding.code} ({finding.name})"))
    return _command(COMMANDS[finding.severity], properties, annotation_text(finding))


def annotation_text(finding: Finding) -> str:
    """The annotation's text: the headline, the related lines (``path:line: label: note``),
    why, and the fix, one per line (an annotation shows them as lines)."""
    from recompile_lint.report.text import ROLE_LABELS
    from recompile_lint.report.wording import note_of

    lines = [_repository_text(finding.title or finding.message)]
    for location in finding.evidence:
        # A line of the annotation that starts with a path: one starting with ``::`` gets
        # ``./`` (``line_start``), as on every text surface, though the runner reads only the
        # command's own line.
        where = line_start(_repository_text(display_path(location.path)))
        lines.append(f"{where}:{location.line}: {ROLE_LABELS.get(location.role, location.role)}: {_repository_text(note_of(location))}")
    if finding.explanation:
        lines.append(_repository_text(finding.explanation))
    if finding.fix:
        lines.append(f"help: {_repository_text(finding.fix)}")
    return "\n".join(lines)


def format_error(error: FileError) -> str:
    """A file that could not be linted, as an error annotation on that file."""
    properties: list[tuple[str, object]] = [("file", _repository_text(display_path(error.path)))]
    if error.line > 0:
        properties += [("line", error.line), ("col", max(error.column, 1))]
    properties.append(("title", "recompile-lint (file error)"))
    return _command("error", properties, _repository_text(error.message))


def format_not_analysed(result: LintResult) -> list[str]:
    """A notice on the run (no file) when compile sites of the checked files resolved to
    nothing, so a green check does not read as "every compiled model is clean"."""
    if not result.sites_not_analysed:
        return []
    from recompile_lint.report.text import sites_not_analysed

    return [_command("notice", [("title", "recompile-lint")], sites_not_analysed(result.sites_not_analysed))]


def format_github(result: LintResult) -> str:
    """Every finding, then every file error, then the notice of sites not analysed, one
    workflow command a line."""
    lines = [format_annotation(f) for f in result.findings]
    lines.extend(format_error(e) for e in result.errors)
    lines.extend(format_not_analysed(result))
    return "".join(line + "\n" for line in lines)
