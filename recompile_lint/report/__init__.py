"""Output formats. Each formatter turns a LintResult into text; none analyses code."""

from __future__ import annotations

import importlib
from typing import Callable, Mapping

from recompile_lint.models import LintResult

Formatter = Callable[[LintResult], str]

# Format name -> (module, function); imported on use, so a run pays only for its format.
_FORMATTERS = {
    "full": ("recompile_lint.report.text", "format_text"),
    "concise": ("recompile_lint.report.text", "format_concise"),
    "json": ("recompile_lint.report.json_format", "format_json"),
    "json-report": ("recompile_lint.report.json_format", "format_json_report"),
    "sarif": ("recompile_lint.report.sarif", "format_sarif"),
    "github": ("recompile_lint.report.github", "format_github"),
}
# Formats a person reads: they take colour and the text of unsaved buffers for their frames.
TEXT_FORMATS = frozenset({"full", "concise"})
# ``text`` was the one-line format before ``full`` existed: scripts that ask for it by name
# keep getting one line per finding.
ALIASES = {"text": "concise"}
FORMAT_NAMES = tuple(_FORMATTERS) + tuple(ALIASES)


def get_formatter(name: str) -> Formatter:
    """The formatter of ``name`` (a format or an alias), with its defaults (no colour)."""
    module, function = _FORMATTERS[ALIASES.get(name, name)]
    return getattr(importlib.import_module(module), function)


def render(name: str, result: LintResult, *, color: bool = False, sources: Mapping[str, str] | None = None) -> str:
    """``result`` in the format ``name``; ``color`` and ``sources`` (path -> text of a file
    not on disk as linted) matter to the text formats only."""
    formatter = get_formatter(name)
    if ALIASES.get(name, name) in TEXT_FORMATS:
        return formatter(result, color=color, sources=sources)  # type: ignore[call-arg]
    return formatter(result)
