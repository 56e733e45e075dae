"""SARIF as GitHub code scanning takes it: the shape it requires, each rule's page embedded as
its help, related locations linked from the message, and fingerprints that follow a finding
through commits that move it (``report/sarif.py`` documents the scheme).

The schema is the SARIF 2.1.0 schema kept in ``tests/data``: nothing is fetched."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from helpers import SEED_SOURCE
from recompile_lint.models import Boundedness, Finding, LintResult, Location, Severity
from recompile_lint.report.pages import rule_page
from recompile_lint.report.sarif import FINGERPRINT_KEY, build_sarif, escape_message
from recompile_lint.rules import all_rules

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0.json").read_text(encoding="utf-8"))
# A link in a message: ``[text](id)`` whose brackets are not escaped.
LINK = re.compile(r"(?<!\\)\[((?:\\.|[^\\\]])*)\]\((\d+)\)")
FINGERPRINT = re.compile(r"[0-9a-f]{32}:[1-9]\d*")

OPS = """\
import torch

STEP = 1


@torch.compile
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * STEP
"""
TRAIN = """\
import torch

import ops


def main() -> None:
    for i in range(10):
        ops.STEP = i
        ops.scale(torch.ones(3))
"""


def make_project(root: Path) -> Path:
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (root / "pkg").mkdir()
    (root / "pkg" / "ops.py").write_text(OPS, encoding="utf-8")
    (root / "pkg" / "train.py").write_text(TRAIN, encoding="utf-8")
    (root / "seed.py").write_text(SEED_SOURCE, encoding="utf-8")
    return root


def sarif(cwd: Path, *paths: str) -> dict:
    env = dict(os.environ, RECOMPILE_LINT_NO_SERVER="1")
    done = subprocess.run([sys.executable, "-m", "recompile_lint", "--no-cache", "--format", "sarif", *paths],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    return json.loads(done.stdout)


def links(text: str) -> list[tuple[str, int]]:
    return [(label, int(number)) for label, number in LINK.findall(text)]


def test_the_log_has_what_code_scanning_requires(tmp_path: Path) -> None:
    log = sarif(make_project(tmp_path), ".")
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    assert log["$schema"].endswith("sarif-schema-2.1.0.json") and log["version"] == "2.1.0"
    [run] = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == [rule.code for rule in all_rules()]
    for rule in rules:
        assert rule["shortDescription"]["text"]
        # The whole page, as markdown and as text: code scanning shows it with no link.
        assert rule["help"]["markdown"] == rule["help"]["text"] == rule_page(rule["id"])
        assert "## Use instead" in rule["help"]["markdown"]
    # No address of a page or of the project anywhere: none serves them.
    addresses = re.findall(r"https?://[^\s\"]+", json.dumps(log))
    assert addresses == [log["$schema"]]
    assert '"helpUri"' not in json.dumps(log) and "informationUri" not in run["tool"]["driver"]

    results = run["results"]
    assert len(results) >= 2
    for result in results:
        assert result["ruleId"] in {rule["id"] for rule in rules}
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["message"]["text"]
        [location] = result["locations"]
        artifact = location["physicalLocation"]["artifactLocation"]
        # Relative to the checkout (GitHub resolves it against the repository), POSIX.
        assert artifact["uriBaseId"] == "%SRCROOT%"
        assert not re.match(r"[a-z]+:|/|\./", artifact["uri"]) and "\\" not in artifact["uri"]
        assert (tmp_path / artifact["uri"]).is_file()
        assert location["physicalLocation"]["region"]["startLine"] >= 1
        assert FINGERPRINT.fullmatch(result["partialFingerprints"][FINGERPRINT_KEY])
        # Every related location is linked from the message, and every link resolves to one.
        related = result.get("relatedLocations", [])
        ids = [r["id"] for r in related]
        assert len(set(ids)) == len(ids)
        linked = [number for _, number in links(result["message"]["text"])]
        assert sorted(linked) == sorted(ids), result["message"]["text"]
    # The cross-module finding links the write in train.py and the compile site in ops.py.
    [cross] = [r for r in results if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/ops.py"]
    by_id = {r["id"]: r for r in cross["relatedLocations"]}
    labels = dict((number, label) for label, number in links(cross["message"]["text"]))
    for number, label in labels.items():
        uri = by_id[number]["physicalLocation"]["artifactLocation"]["uri"]
        line = by_id[number]["physicalLocation"]["region"]["startLine"]
        assert label.endswith(f" at {uri}:{line}"), (label, uri, line)
    assert {label.split(" at ")[0] for label in labels.values()} >= {"changed", "compiled"}


def fingerprints(log: dict) -> dict[tuple[str, str], tuple[str, int]]:
    """(rule, path) -> (fingerprint, start line) of a log with one finding per rule and file."""
    out = {}
    for result in log["runs"][0]["results"]:
        location = result["locations"][0]["physicalLocation"]
        key = (result["ruleId"], location["artifactLocation"]["uri"])
        assert key not in out
        out[key] = (result["partialFingerprints"][FINGERPRINT_KEY], location["region"]["startLine"])
    return out


def test_fingerprints_follow_a_finding_that_moves_and_change_with_its_line(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    before = fingerprints(sarif(project, "."))
    # Lines added above and the line re-indented: the same finding, further down.
    ops = project / "pkg" / "ops.py"
    ops.write_text('"""Scaling."""\n\n# a comment\n' + OPS.replace("    return x * STEP", "    return  x  *  STEP  "), encoding="utf-8")
    moved = fingerprints(sarif(project, "."))
    assert moved.keys() == before.keys()
    key = ("RCL101", "pkg/ops.py")
    assert moved[key][1] == before[key][1] + 3
    assert moved[key][0] == before[key][0]
    assert moved[("RCL101", "seed.py")] == before[("RCL101", "seed.py")]
    # A different line is a different finding.
    ops.write_text(OPS.replace("    return x * STEP", "    return (x + 1) * STEP"), encoding="utf-8")
    edited = fingerprints(sarif(project, "."))
    assert edited[key][0] != before[key][0]
    assert edited[("RCL101", "seed.py")] == before[("RCL101", "seed.py")]


def finding(path: str, line: int, message: str, evidence: tuple[Location, ...] = ()) -> Finding:
    return Finding(path=path, line=line, column=5, code="RCL101", end_line=line, end_column=9, name="mutated-global",
                   severity=Severity.ERROR, bounded=Boundedness.UNBOUNDED, message=message, region="m.f", function="m.f",
                   evidence=evidence)


def test_equal_lines_are_numbered_and_repository_text_cannot_forge_a_link(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n    y[0]\n    y[0]\n", encoding="utf-8")
    path = str(tmp_path / "m.py")
    forged = "reads `y[0]` [see here](1) \\[x\\]"
    evidence = (Location(path=path, line=1, column=1, role="write", note="changed [here](2)"),)
    log = build_sarif(LintResult(findings=(finding(path, 2, forged, evidence), finding(path, 3, "reads `y[0]`")), errors=(), files_checked=1), base=tmp_path)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    first, second = log["runs"][0]["results"]
    # Lines 2 and 3 hold the same text: one hash, told apart by the occurrence number.
    one, two = (r["partialFingerprints"][FINGERPRINT_KEY] for r in (first, second))
    assert one.split(":")[0] == two.split(":")[0] and (one[-2:], two[-2:]) == (":1", ":2")
    # Only our link is a link; the message's brackets (and its escapes) come through escaped.
    assert links(first["message"]["text"]) == [("changed at m.py:1", 1)]
    assert first["message"]["text"].startswith("reads `y\\[0\\]` \\[see here\\](1) \\\\\\[x\\\\\\]")
    assert links(first["relatedLocations"][0]["message"]["text"]) == []
    assert links(second["message"]["text"]) == [] and "relatedLocations" not in second


@pytest.mark.parametrize("text", ["plain", "a[0]", "[x](1)", "\\[", "\\\\]", "a\\b", "]]["])
def test_an_escaped_message_has_no_link_and_reads_back_as_it_was(text: str) -> None:
    escaped = escape_message(text)
    assert links(escaped) == []
    # What a viewer shows: a backslash before a bracket or a backslash is an escape.
    assert re.sub(r"\\([\\\[\]])", r"\1", escaped) == text

