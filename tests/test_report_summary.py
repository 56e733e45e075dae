"""What a run did not analyse reaches every machine format: ``json-report`` carries the
summary, the ``json`` array's count goes to stderr, ``github`` adds a notice on the run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from recompile_lint.frontends.cli import main

SITES = '''
import torch
from transformers import AutoModel


def external():
    return torch.compile(AutoModel.from_pretrained("gpt2"))


def given(model):
    return torch.compile(model)
'''

COUNTER = '''
import torch

step = 0


@torch.compile
def f(x):
    return x * step


def train(x):
    global step
    for _ in range(100):
        step += 1
        f(x)
'''

NOTE = "2 compile sites not analysed (run recompile-lint regions)"


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "sites.py").write_text(SITES)
    (tmp_path / "counter.py").write_text(COUNTER)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str):
    return CliRunner().invoke(main, ["--no-cache", *args], catch_exceptions=False)


def test_json_report_carries_findings_errors_and_summary(project: Path):
    (project / "broken.py").write_text("def f(:\n")
    result = run("--format", "json-report", ".")
    report = json.loads(result.stdout)
    assert report["version"] == 1
    assert [f["code"] for f in report["findings"]] == [f["code"] for f in json.loads(run("--format", "json", ".").stdout)]
    assert report["findings"] and report["findings"][0]["path"].endswith("counter.py")
    assert [os.path.normpath(e["path"]) for e in report["errors"]] == ["broken.py"]
    assert report["errors"][0]["line"] == 1 and report["errors"][0]["message"]
    summary = report["summary"]
    assert summary["files_checked"] == 3
    assert summary["findings"] == len(report["findings"])
    assert summary["by_severity"]["error"] == sum(f["severity"] == "error" for f in report["findings"])
    assert summary["sites_not_analysed"] == 2
    assert result.exit_code == 2  # a file error, as in every format


def test_json_array_stays_an_array_and_says_the_count_on_stderr(project: Path):
    result = run("--format", "json", ".")
    assert isinstance(json.loads(result.stdout), list)
    assert f"recompile-lint: {NOTE}" in result.stderr.splitlines()
    quiet = run("--format", "json", "counter.py")  # that file's own sites all resolve
    assert "not analysed" not in quiet.stderr


def test_github_notice_names_the_sites_not_analysed(project: Path):
    lines = run("--format", "github", ".").stdout.splitlines()
    assert lines[-1] == f"::notice title=recompile-lint::{NOTE}"
    assert all(not line.startswith("::notice") for line in run("--format", "github", "counter.py").stdout.splitlines())
