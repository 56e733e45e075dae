"""A JSON array of findings (schema in the README); file errors go to stderr in the CLI."""

from __future__ import annotations

import json

from recompile_lint.models import LintResult


def format_json(result: LintResult) -> str:
    return json.dumps([f.to_dict() for f in result.findings], indent=2) + "\n"
