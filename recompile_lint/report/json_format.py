"""A JSON array of findings (schema in the README); file errors go to stderr in the CLI."""

from __future__ import annotations

import json

from recompile_lint.models import LintResult
from recompile_lint.report.sanitize import safe_json


def format_json(result: LintResult) -> str:
    return safe_json(json.dumps([f.to_dict() for f in result.findings], indent=2)) + "\n"
