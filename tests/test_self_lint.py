"""The linter lints its own source, tests and benchmarks: no internal error, no file error, and
findings only where tests compile recompiling code on purpose (the verifier's test data)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from recompile_lint.frontends.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_self_lint(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(
        main, ["--no-cache", "--select", "RCL", "--format", "json", "recompile_lint/", "tests/", "bench/"]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "internal error" not in result.stderr
    assert "Traceback" not in result.output
    # 2 would mean a file of the project itself could not be read or parsed.
    assert result.exit_code in (0, 1), result.stderr
    data = json.loads(result.stdout)
    findings = data["findings"] if isinstance(data, dict) else data
    unexpected = [
        f"{f['path']}:{f['line']}: {f['code']}"
        for f in findings
        if not f["path"].replace(os.sep, "/").startswith("tests/")
    ]
    assert unexpected == [], f"the linter flags its own code: {unexpected}"
