"""Writing a report to standard output that may not be able to encode it.

A path or a message holding characters the output's encoding lacks (a ``模型.py`` on a latin-1
terminal) must not end the run in a traceback after the analysis is done, nor lose the other
files' findings: the report is written with those characters as backslash escapes, and each
file whose findings or errors needed them is named in an error line on standard error, so
the command exits as for any other file it could not report (2).
"""

from __future__ import annotations

import sys
import click

from recompile_lint.models import LintResult
from recompile_lint.report.sanitize import escape


def _encodable(text: str, encoding: str) -> bool:
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def write_report(rendered: str, result: LintResult, color: bool | None = None) -> list[str]:
    """Write ``rendered`` (the report of ``result``) to standard output; the paths (escaped)
    of the files whose report the output's encoding could not hold, each also named in an
    error line on standard error. Empty when all was written as it is."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    if _encodable(rendered, encoding):
        # click would strip the escape codes from a stream that is not a terminal; the caller
        # decides (FORCE_COLOR keeps them for a CI log).
        click.echo(rendered, nl=False, color=color)
        return []
    try:
        escaped = rendered.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        encoding = "ascii"
        escaped = rendered.encode("ascii", "backslashreplace").decode("ascii")
    click.echo(escaped, nl=False, color=color)
    named = sorted(
        {f.path for f in result.findings if not _encodable(f"{f.path} {f.message} {f.region} {f.function}", encoding)}
        | {e.path for e in result.errors if not _encodable(f"{e.path} {e.message}", encoding)}
    )
    shown = [escape(path).encode(encoding, "backslashreplace").decode(encoding) for path in named]
    for path in shown:
        click.echo(
            f"recompile-lint: error: {path}: its findings hold characters the output's encoding ({encoding}) cannot write; "
            "they are shown as backslash escapes (set PYTHONIOENCODING=utf-8 to see them)",
            err=True,
        )
    if not shown:
        click.echo(f"recompile-lint: error: the report holds characters the output's encoding ({encoding}) cannot write; they are shown as backslash escapes", err=True)
    return shown or ["<report>"]
