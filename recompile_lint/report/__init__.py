"""Output formats. Each formatter turns a LintResult into text; none analyses code."""

from __future__ import annotations

import importlib
from typing import Callable

from recompile_lint.models import LintResult

Formatter = Callable[[LintResult], str]

# Format name -> (module, function); imported on use, so a run pays only for its format.
_FORMATTERS = {
    "text": ("recompile_lint.report.text", "format_text"),
    "json": ("recompile_lint.report.json_format", "format_json"),
    "sarif": ("recompile_lint.report.sarif", "format_sarif"),
    "github": ("recompile_lint.report.github", "format_github"),
}
FORMAT_NAMES = tuple(_FORMATTERS)


def get_formatter(name: str) -> Formatter:
    module, function = _FORMATTERS[name]
    return getattr(importlib.import_module(module), function)
