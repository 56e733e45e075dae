"""verify and lint agree on scope: ``verify PATHS`` verifies every finding that
``recompile-lint PATHS`` reports, wherever its primary location is.

A commit that changes only ``train.py`` (the loop that writes the global ``model.py``'s
compiled code reads) gets the finding from ``recompile-lint train.py``; the verify hook on
the same files must probe it, not say "nothing to verify" and pass the commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from recompile_lint.config import Config
from recompile_lint.frontends.cli import main
from recompile_lint.verify.command import findings_to_verify

MODEL = """\
import torch

STEP = 0


@torch.compile
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * STEP
"""

TRAIN = """\
import torch

import model


def train(batches) -> None:
    for i, x in enumerate(batches):
        model.STEP = i
        model.scale(x)
"""

# A second finding whose primary location is in train.py itself.
TRAIN_WITH_ITS_OWN = TRAIN + """

WIDTH = 2


@torch.compile
def widen(x: torch.Tensor) -> torch.Tensor:
    return x * WIDTH


def sweep(x) -> None:
    global WIDTH
    for w in range(10):
        WIDTH = w
        widen(x)
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_finding_lint_reports_in_the_other_file_is_verified_at_its_primary_location(project: Path) -> None:
    lint = CliRunner().invoke(main, ["--no-cache", "--format", "json", "train.py"])
    assert lint.exit_code == 1
    [reported] = json.loads(lint.stdout)
    assert reported["path"] == "train.py"
    [primary] = [e for e in reported["evidence"] if e["role"] == "primary"]
    result = findings_to_verify(["train.py"], Config(cache=False))
    [finding] = result.findings
    # The probe runs where the compiled code reads the global: model.py, not train.py.
    assert (os.path.relpath(finding.path), finding.line, finding.column, finding.code) == ("model.py", primary["line"], primary["column"], "RCL101")
    assert finding.primary is None and finding.region == "model.scale"


def test_findings_of_the_named_file_itself_are_kept_once(project: Path) -> None:
    (project / "train.py").write_text(TRAIN_WITH_ITS_OWN, encoding="utf-8")
    lint = json.loads(CliRunner().invoke(main, ["--no-cache", "--format", "json", "train.py"]).stdout)
    assert len(lint) == 2
    result = findings_to_verify(["train.py"], Config(cache=False))
    assert sorted((os.path.relpath(f.path), f.region) for f in result.findings) == [("model.py", "model.scale"), ("train.py", "train.widen")]
    # Over the whole project nothing is relocated: each finding once, at its primary location.
    everything = findings_to_verify(["."], Config(cache=False))
    assert sorted((os.path.relpath(f.path), f.region) for f in everything.findings) == [("model.py", "model.scale"), ("train.py", "train.widen")]


def test_a_noqa_at_the_reported_line_keeps_it_out_of_verify_too(project: Path) -> None:
    (project / "train.py").write_text(TRAIN.replace("model.STEP = i", "model.STEP = i  # noqa: RCL101"), encoding="utf-8")
    assert CliRunner().invoke(main, ["--no-cache", "train.py"]).exit_code == 0
    assert findings_to_verify(["train.py"], Config(cache=False)).findings == ()
