"""A finding is reported where the named files hold one of its locations.

pre-commit names only the changed files. When a commit adds the write in ``train.py`` that
makes compiled code in ``model.py`` recompile, the finding must appear in ``train.py`` at the
write, worded from there, with the read in ``model.py`` as a related location; a run over the
whole project reports it once, at the read. The same holds for the flake8 plugin, and
``# noqa`` applies on the line where the finding is reported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from recompile_lint.config import Config
from recompile_lint.engine import lint_paths
from recompile_lint.frontends.cli import main

# model.py reads a module global in a compiled function; train.py reassigns it in its loop.
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

# model.py defines the module; train.py compiles it and increments its int attribute.
NET = """\
import torch


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = 0
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.step
"""

LOOP = """\
import torch

from net import Net

model = Net()
compiled = torch.compile(model)


def train(batches) -> None:
    for x in batches:
        compiled(x)
        model.step += 1
"""

CONFIG = Config(cache=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "net.py").write_text(NET, encoding="utf-8")
    (tmp_path / "loop.py").write_text(LOOP, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_only_the_changed_file_named_reports_the_finding_at_the_write(project: Path) -> None:
    result = lint_paths(["train.py"], CONFIG, relocate=True)
    [finding] = result.findings
    assert (finding.path, finding.line, finding.column, finding.code) == ("train.py", 8, 9, "RCL101")
    assert finding.title == "this assignment changes `STEP` in the loop that calls `model.scale`; compiled `model.scale` reads it at model.py:8"
    assert finding.message.startswith(finding.title + ". Every new value fails the guard")
    assert finding.message.endswith(finding.fix) and finding.fix.startswith("Keep it in a 0-d tensor")
    # The primary location comes first among the related ones, then the compile site.
    primary = finding.evidence[0]
    assert (primary.path, primary.line, primary.column, primary.role) == ("model.py", 8, 16, "primary")
    assert primary.note.startswith("global `STEP` (int) is read in compiled `model.scale`")
    assert [(loc.path, loc.line, loc.role) for loc in finding.evidence[1:]] == [("model.py", 6, "compile-site")]
    assert finding.primary == primary
    assert finding.to_dict()["evidence"][0]["role"] == "primary"


def test_without_relocation_the_named_file_has_nothing(project: Path) -> None:
    # The verifier's view: findings where they are analysed, none of model.py's in train.py.
    assert lint_paths(["train.py"], CONFIG).findings == ()


def test_a_whole_project_run_reports_each_finding_once_at_the_primary_location(project: Path) -> None:
    result = lint_paths(["."], CONFIG, relocate=True)
    steps = [f for f in result.findings if "STEP" in f.message]
    assert [(os.path.normpath(f.path), f.line, f.column) for f in steps] == [("model.py", 8, 16)]
    [finding] = steps
    assert finding.primary is None
    assert {(loc.path, loc.line, loc.role) for loc in finding.evidence} == {("train.py", 8, "write"), ("model.py", 6, "compile-site")}
    # Both files named (a commit that changes both): once, at the primary location.
    both = lint_paths(["model.py", "train.py"], CONFIG, relocate=True)
    assert [(f.path, f.line) for f in both.findings if "STEP" in f.message] == [("model.py", 8)]


def test_the_compile_site_and_the_write_in_the_named_file_report_once_at_the_write(project: Path) -> None:
    # loop.py compiles Net and increments its attribute: one finding, at the write (the
    # change), the compile site in the same file related.
    result = lint_paths(["loop.py"], CONFIG, relocate=True)
    [finding] = result.findings
    assert (finding.path, finding.line, finding.code) == ("loop.py", 12, "RCL104")
    assert finding.title == "this update changes `Net.step` in the loop that calls `forward`; compiled `net.Net.forward` reads it at net.py:11"
    assert [(loc.path, loc.line, loc.role) for loc in finding.evidence] == [("net.py", 11, "primary"), ("loop.py", 6, "compile-site")]


def test_noqa_applies_where_the_finding_is_reported(project: Path) -> None:
    (project / "model.py").write_text(MODEL.replace("return x * STEP", "return x * STEP  # noqa: RCL101"), encoding="utf-8")
    # Suppressed at the read: gone from a whole-project run, still reported at the write.
    assert [f for f in lint_paths(["."], CONFIG, relocate=True).findings if "STEP" in f.message] == []
    assert len(lint_paths(["train.py"], CONFIG, relocate=True).findings) == 1
    (project / "model.py").write_text(MODEL, encoding="utf-8")
    (project / "train.py").write_text(TRAIN.replace("model.STEP = i", "model.STEP = i  # noqa: RCL101"), encoding="utf-8")
    result = lint_paths(["train.py"], CONFIG, relocate=True)
    assert result.findings == () and result.suppressed == 1


def test_per_file_ignores_apply_to_the_file_it_is_reported_in(project: Path) -> None:
    config = Config(cache=False, per_file_ignores=(("train.py", ("RCL101",)),))
    assert lint_paths(["train.py"], config, relocate=True).findings == ()


def test_the_command_line_reports_it_in_the_named_file(project: Path) -> None:
    result = CliRunner().invoke(main, ["--no-cache", "train.py"])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "train.py:8:9: RCL101 [error, unbounded] this assignment changes `STEP` in the loop that calls `model.scale`; compiled `model.scale` reads it at model.py:8"
    assert "  ::: model.py:8:16: finding: global `STEP` (int) is read in compiled `model.scale` and changed" in lines
    concise = CliRunner().invoke(main, ["--no-cache", "--output-format", "concise", "train.py"])
    assert concise.stdout.startswith("train.py:8:9: RCL101 [error] this assignment changes `STEP`")


def run_flake8(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "RCL", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_flake8_on_the_changed_file_reports_it_there(project: Path) -> None:
    only = run_flake8(project, "train.py")
    assert only.returncode == 1, only.stderr
    assert only.stdout.startswith("train.py:8:9: RCL101 this assignment changes `STEP` in the loop that calls `model.scale`; compiled `model.scale` reads it at model.py:8.")
    assert len(only.stdout.splitlines()) == 1
    # Over the whole project flake8 names every file: once, at the read.
    everything = run_flake8(project, ".")
    steps = [line for line in everything.stdout.splitlines() if "STEP" in line]
    assert len(steps) == 1 and steps[0].startswith("./model.py:8:16: RCL101 global `STEP`")


def test_only_functions_whose_values_a_named_file_can_change_are_checked_again(project: Path) -> None:
    from recompile_lint.analysis.loader import report_scope
    from recompile_lint.engine import analyse

    # other.py sets an attribute named like Net's layer (not a value Dynamo guards) and
    # writes a global named like model.py's, without naming model: nothing to check again.
    (project / "other.py").write_text(
        "STEP = 0\n\n\nclass Other:\n    def __init__(self) -> None:\n        self.lin = None\n\n\n"
        "def bump() -> None:\n    global STEP\n    STEP += 1\n",
        encoding="utf-8",
    )
    (project / "bump.py").write_text("import net\n\n\ndef bump(model: net.Net) -> None:\n    model.step += 1\n", encoding="utf-8")
    files = sorted(str(p.resolve()) for p in project.glob("*.py"))
    analysis = analyse(files, files, CONFIG, [])
    named = {str((project / name).resolve()) for name in ("other.py",)}
    assert report_scope(analysis.index, analysis.regions, named) == set()
    # train.py names model and writes model.STEP; bump.py writes the attribute Net initialises.
    assert report_scope(analysis.index, analysis.regions, {str((project / "train.py").resolve())}) == {str((project / "model.py").resolve())}
    assert report_scope(analysis.index, analysis.regions, {str((project / "bump.py").resolve())}) == {str((project / "net.py").resolve())}
    # loop.py compiles Net: the functions its region reaches are checked.
    assert report_scope(analysis.index, analysis.regions, {str((project / "loop.py").resolve())}) == {str((project / "net.py").resolve())}
