"""``--format sarif``: a SARIF 2.1.0 log that validates and that code scanning can place."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from recompile_lint.models import Boundedness, FileError, Finding, LintResult, Severity
from recompile_lint.report.pages import rule_page, rule_page_path
from recompile_lint.report.sarif import build_sarif, format_sarif, rule_help_uri
from recompile_lint.rules import all_rules
from helpers import SEED_SOURCE

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0.json").read_text(encoding="utf-8"))

SOURCE = SEED_SOURCE


def validate(log: dict) -> None:
    jsonschema.Draft4Validator(SCHEMA).validate(log)


def finding(path: str, severity: Severity = Severity.ERROR, **changes) -> Finding:
    values = dict(
        path=path, line=8, column=16, code="RCL101", end_line=8, end_column=20, name="mutated-global",
        severity=severity, bounded=Boundedness.UNBOUNDED, message="global `step` is reassigned",
        region="m.poly", function="m.poly",
    )
    values.update(changes)
    return Finding(**values)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "src dir").mkdir()
    (tmp_path / "src dir" / "m.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "broken.py").write_text("def broken(:\n", encoding="utf-8")
    return tmp_path


def run_sarif(cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = cwd / "results.sarif"
    result = subprocess.run(
        [sys.executable, "-m", "recompile_lint", "--no-cache", "--format", "sarif", "-o", str(out), *args],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )
    return result, json.loads(out.read_text(encoding="utf-8"))


def test_cli_sarif_validates_and_locates_the_finding(project: Path) -> None:
    result, log = run_sarif(project, "src dir")
    assert result.returncode == 1, result.stderr
    validate(log)
    run = log["runs"][0]
    assert log["version"] == "2.1.0"
    driver = run["tool"]["driver"]
    assert driver["name"] == "recompile-lint"
    [res] = run["results"]
    assert res["ruleId"] == "RCL101"
    assert driver["rules"][res["ruleIndex"]]["id"] == "RCL101"
    assert res["level"] == "error"
    location = res["locations"][0]["physicalLocation"]
    # Relative to the checkout, percent-encoded, so code scanning finds the file.
    assert location["artifactLocation"] == {"uri": "src%20dir/m.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 8, "startColumn": 16, "endLine": 8, "endColumn": 20}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"
    assert run["invocations"][0]["executionSuccessful"] is True


def test_file_errors_become_tool_notifications(project: Path) -> None:
    result, log = run_sarif(project, "src dir", "broken.py")
    assert result.returncode == 2
    validate(log)
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert "syntax error" in note["message"]["text"]
    physical = note["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "broken.py"
    assert physical["region"]["startLine"] == 1
    # The findings of the readable file are still reported.
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["RCL101"]


def test_every_rule_is_described_with_its_page_and_default_level() -> None:
    log = build_sarif(LintResult(findings=(), errors=(), files_checked=0), base="/")
    validate(log)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [rule.code for rule in all_rules()]
    levels = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
    for descriptor, rule in zip(rules, all_rules()):
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["fullDescription"]["text"].split("\n")[0] == rule.__doc__.strip().split("\n")[0]
        # The page itself, not a link: no address serves the pages.
        assert descriptor["help"] == {"text": rule_page(rule.code), "markdown": rule_page(rule.code)}
        assert "helpUri" not in descriptor
        assert descriptor["defaultConfiguration"]["level"] == levels[rule.severity]


def test_levels_follow_severity_and_odd_spans_stay_valid(tmp_path: Path) -> None:
    result = LintResult(
        findings=(
            finding(str(tmp_path / "a.py"), Severity.ERROR),
            finding(str(tmp_path / "b.py"), Severity.WARNING, end_line=0, end_column=0),
            finding(str(tmp_path / "c.py"), Severity.INFO, end_line=8, end_column=16),
            finding("/elsewhere/d.py", Severity.ERROR, function=""),
        ),
        errors=(FileError(path=str(tmp_path / "gone.py"), message="no such file"),),
        files_checked=4,
    )
    log = build_sarif(result, base=tmp_path)
    validate(log)
    results = log["runs"][0]["results"]
    assert [r["level"] for r in results] == ["error", "warning", "note", "error"]
    # An empty or missing end is left out rather than emitted as an invalid region.
    assert results[1]["locations"][0]["physicalLocation"]["region"] == {"startLine": 8, "startColumn": 16}
    assert results[2]["locations"][0]["physicalLocation"]["region"] == {"startLine": 8, "startColumn": 16}
    # A file outside the checkout keeps an absolute URI.
    assert results[3]["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "file:///elsewhere/d.py"}
    notification = log["runs"][0]["invocations"][0]["toolExecutionNotifications"][0]
    assert "region" not in notification["locations"][0]["physicalLocation"]


def test_format_sarif_is_json_text() -> None:
    text = format_sarif(LintResult(findings=(), errors=(), files_checked=1))
    assert text.endswith("\n")
    log = json.loads(text)
    validate(log)
    assert log["runs"][0]["results"] == []


def test_the_editor_link_to_a_rule_page_is_a_file_on_this_machine() -> None:
    # No web address serves the pages: the language server links the file that holds one.
    for rule in all_rules():
        path = rule_page_path(rule.code)
        assert path is not None and path.is_file()
        assert rule_help_uri(rule.code) == path.as_uri()
        assert "## How the verifier confirms it" in path.read_text(encoding="utf-8")
    assert rule_page_path("RCL000") is None
