"""bench/public.py: scoring a run's findings against the judged file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

import public  # noqa: E402

JUDGED = {
    "repositories": {"demo": {"github": "someone/demo", "commit": "0" * 40}},
    "findings": [
        {"repository": "demo", "commit": "0" * 40, "path": "train.py", "line": 10, "code": "RCL101",
         "severity": "error", "verdict": True, "reason": "the loop reassigns the global"},
        {"repository": "demo", "commit": "0" * 40, "path": "model.py", "line": 4, "code": "RCL206",
         "severity": "warning", "verdict": False, "reason": "the sizes never cross the branch"},
    ],
    "risks": [
        {"repository": "demo", "commit": "0" * 40, "path": "train.py", "lines": [10, 30], "guard": "G['step']", "reason": "r"},
        {"repository": "demo", "commit": "0" * 40, "path": "model.py", "lines": [20], "guard": "L['self'].k", "reason": "r"},
        {"repository": "other", "commit": "1" * 40, "path": "model.py", "lines": [4], "guard": "L['n']", "reason": "r"},
    ],
}


def finding(rel, line, code, severity, evidence=()):
    return {"rel": rel, "line": line, "code": code, "severity": severity, "title": "t",
            "evidence": [{"rel": p, "line": n} for p, n in evidence]}


def test_counts_true_false_and_unjudged_per_severity_and_risks_by_line_or_evidence():
    findings = [
        finding("train.py", 10, "RCL101", "error"),
        finding("model.py", 4, "RCL206", "warning"),
        finding("model.py", 7, "RCL104", "warning", evidence=[("model.py", 20)]),  # not judged
        finding("model.py", 4, "RCL107", "info"),  # info is not scored
    ]
    s = public.score("demo", findings, JUDGED)
    assert s.counts["error"] == {"true": 1, "false": 0, "unjudged": 0}
    assert s.counts["warning"] == {"true": 0, "false": 1, "unjudged": 1}
    assert (s.risks_found, s.risks_total) == (2, 2)  # the second through an evidence line
    assert [u["code"] for u in s.unjudged] == ["RCL104"]


def test_a_finding_on_another_code_or_file_does_not_match_a_verdict_or_a_risk():
    s = public.score("demo", [finding("other.py", 10, "RCL101", "error"), finding("train.py", 10, "RCL102", "error")], JUDGED)
    assert s.counts["error"] == {"true": 0, "false": 0, "unjudged": 2}
    assert s.risks_found == 1 and [m["path"] for m in s.missed] == ["model.py"]


def test_bad_input_is_a_clear_exit(tmp_path, capsys):
    with pytest.raises(SystemExit, match="cannot read the judged file"):
        public.load_judged(str(tmp_path / "missing.json"))
    judged = tmp_path / "j.json"
    judged.write_text(json.dumps(JUDGED), encoding="utf-8")
    assert public.main(["--root", str(tmp_path), "--judged", str(judged)]) == 2
    assert "not checked out" in capsys.readouterr().err
    assert public.main(["--root", str(tmp_path), "--judged", str(judged), "nope"]) == 2


def test_the_committed_file_is_well_formed():
    data = public.load_judged(public.DEFAULT_JUDGED)
    for entry in data["findings"]:
        assert entry["repository"] in data["repositories"] and entry["severity"] in ("error", "warning")
        assert isinstance(entry["verdict"], bool) and entry["reason"].strip()
        assert entry["commit"] == data["repositories"][entry["repository"]]["commit"]
    for risk in data["risks"]:
        assert risk["repository"] in data["repositories"] and risk["lines"] and risk["guard"]
