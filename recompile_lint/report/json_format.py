"""JSON output (schema in the README).

``json``: an array of findings, the format scripts have read since the first release; file
errors and the count of compile sites not analysed go to stderr in the CLI.
``json-report``: one object with the findings, the file errors and the run's summary (files
checked, findings by severity, suppressed, compile sites not analysed), for a program that
must know what the run did not cover without reading stderr.
"""

from __future__ import annotations

import json
from collections import Counter

from recompile_lint.models import LintResult
from recompile_lint.report.sanitize import safe_json

REPORT_VERSION = 1


def format_json(result: LintResult) -> str:
    return safe_json(json.dumps([f.to_dict() for f in result.findings], indent=2)) + "\n"


def format_json_report(result: LintResult) -> str:
    severities = Counter(f.severity.value for f in result.findings)
    report = {
        "version": REPORT_VERSION,
        "findings": [f.to_dict() for f in result.findings],
        "errors": [{"path": e.path, "line": e.line, "column": e.column, "message": e.message} for e in result.errors],
        "summary": {
            "files_checked": result.files_checked,
            "findings": len(result.findings),
            "by_severity": {name: severities.get(name, 0) for name in ("error", "warning", "info")},
            "suppressed": result.suppressed,
            "excluded": result.excluded,
            "sites_not_analysed": result.sites_not_analysed,
        },
    }
    return safe_json(json.dumps(report, indent=2)) + "\n"
