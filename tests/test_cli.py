"""The command line as a user drives it: exit codes, options, output files, formats, and the
same answer from the console script, ``python -m recompile_lint`` and the engine."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from recompile_lint import __version__
from recompile_lint.frontends.cli import main
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths

FLAGGED = """\
import os

import torch

step = 0


@torch.compile
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * step * int(os.environ["N"])


def train(x: torch.Tensor) -> None:
    global step
    for _ in range(10):
        poly(x)
        step += 1
        os.environ["N"] = str(step % 4 + 1)
"""

CLEAN = """\
import torch

SCALE = 3


@torch.compile
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * SCALE
"""

TOGGLE = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.relu()


def fit(batches) -> None:
    model = Net()
    compiled = torch.compile(model)
    for x in batches:
        model.train()
        compiled(x)
        model.eval()
        compiled(x)
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    src = tmp_path / "src"
    src.mkdir()
    (src / "flagged.py").write_text(FLAGGED, encoding="utf-8")
    (src / "clean.py").write_text(CLEAN, encoding="utf-8")
    (src / "toggle.py").write_text(TOGGLE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def invoke(*args: str):
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


HEADLINE = re.compile(r"^\S+:\d+:\d+: RCL\d{3} ")


def finding_lines(output: str) -> list[str]:
    """The headline of each finding (full format) or each line (concise format)."""
    return [line for line in output.splitlines() if HEADLINE.match(line)]


def test_findings_exit_1_with_path_line_column_code(project):
    result = invoke("--no-cache", "src/flagged.py")
    assert result.exit_code == 1
    lines = finding_lines(result.stdout)
    assert lines[0].startswith("src/flagged.py:10:16: RCL101 [error, unbounded]")
    assert lines[1].startswith("src/flagged.py:10:27: RCL105 [error, unbounded]")
    assert "Found 2 findings (2 error" in result.stdout and "1 file checked" in result.stdout


def test_clean_file_exits_0(project):
    result = invoke("--no-cache", "src/clean.py")
    assert result.exit_code == 0
    assert finding_lines(result.stdout) == []
    assert "Found 0 findings, 1 file checked." in result.stdout


def test_exit_zero_keeps_the_report(project):
    result = invoke("--no-cache", "--exit-zero", "src/flagged.py")
    assert result.exit_code == 0
    assert len(finding_lines(result.stdout)) == 2


def test_exit_zero_does_not_hide_input_errors(project):
    result = invoke("--no-cache", "--exit-zero", "src/flagged.py", "missing.py")
    assert result.exit_code == 2


def test_default_path_is_the_current_directory(project):
    result = invoke("--no-cache")
    assert result.exit_code == 1
    assert "src/flagged.py:10:16: RCL101" in result.stdout
    assert "3 files checked" in result.stdout


def test_check_subcommand_is_the_explicit_spelling(project):
    assert invoke("--no-cache", "src").stdout == invoke("check", "--no-cache", "src").stdout


def test_select_and_ignore(project):
    only = invoke("--no-cache", "--select", "RCL105", "src")
    assert [line.split()[1] for line in finding_lines(only.stdout)] == ["RCL105"]
    ignored = invoke("--no-cache", "--ignore", "RCL101,RCL105", "src")
    assert ignored.exit_code == 0
    assert finding_lines(ignored.stdout) == []


def test_info_rules_are_off_unless_selected(project):
    default = invoke("--no-cache", "src/toggle.py")
    assert default.exit_code == 0 and finding_lines(default.stdout) == []
    selected = invoke("--no-cache", "--extend-select", "RCL107", "src/toggle.py")
    assert selected.exit_code == 1
    assert [line.split(":")[1] for line in finding_lines(selected.stdout)] == ["14", "16"]


def test_config_section_is_read_and_the_command_line_wins(project):
    (project / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\n\n[tool.recompile-lint]\nignore = ['RCL105']\n", encoding="utf-8"
    )
    from_file = invoke("--no-cache", "src/flagged.py")
    assert [line.split()[1] for line in finding_lines(from_file.stdout)] == ["RCL101"]
    overridden = invoke("--no-cache", "--ignore", "RCL101", "src/flagged.py")
    assert [line.split()[1] for line in finding_lines(overridden.stdout)] == ["RCL105"]


def test_noqa_suppresses_and_is_counted(project):
    text = FLAGGED.replace('int(os.environ["N"])', 'int(os.environ["N"])  # noqa: RCL105')
    (project / "src" / "flagged.py").write_text(text, encoding="utf-8")
    result = invoke("--no-cache", "src/flagged.py")
    assert [line.split()[1] for line in finding_lines(result.stdout)] == ["RCL101"]
    assert "1 suppressed" in result.stdout


def test_json_format(project):
    result = invoke("--no-cache", "--format", "json", "src")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    findings = data["findings"] if isinstance(data, dict) else data
    assert [(f["path"], f["line"], f["code"]) for f in findings] == [
        ("src/flagged.py", 10, "RCL101"),
        ("src/flagged.py", 10, "RCL105"),
    ]
    assert findings[0]["subject"]["name"] == "step"


def test_output_file_gets_the_report_and_stdout_stays_empty(project):
    result = invoke("--no-cache", "--output-file", "report.txt", "src/flagged.py")
    assert result.exit_code == 1
    assert finding_lines(result.stdout) == []
    written = (project / "report.txt").read_text(encoding="utf-8")
    assert len(finding_lines(written)) == 2


def test_statistics(project):
    result = invoke("--no-cache", "--statistics", "src")
    assert result.exit_code == 1
    rows = [line.split() for line in result.stdout.splitlines() if line.strip()]
    assert ["1", "RCL101", "mutated-global"] in rows and ["1", "RCL105", "environ-read"] in rows


def test_version_and_help():
    assert __version__ in invoke("--version").stdout
    help_text = invoke("--help").stdout
    assert "rules" in help_text and "verify" in help_text


def test_cli_equals_engine(project):
    """The CLI prints exactly the engine's findings, in the engine's order."""
    result = invoke("--no-cache", "src")
    engine = lint_paths(["src"], Config(cache=False))
    assert [line.split(" ")[0] + " " + line.split(" ")[1] for line in finding_lines(result.stdout)] == [
        f"{f.path}:{f.line}:{f.column}: {f.code}" for f in engine.findings
    ]


def test_relative_and_absolute_paths_are_reported_as_given(project):
    absolute = str(project / "src" / "flagged.py")
    result = invoke("--no-cache", absolute)
    assert finding_lines(result.stdout)[0].startswith(f"{absolute}:10:16: RCL101")


def test_module_entry_point_and_console_script_agree(project):
    """``python -m recompile_lint`` and ``recompile-lint`` print the same report and exit 1."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    by_module = subprocess.run(
        [sys.executable, "-m", "recompile_lint", "--no-cache", "src"],
        cwd=project, capture_output=True, text=True, env=env, timeout=120,
    )
    script = Path(sys.executable).with_name("recompile-lint")
    assert by_module.returncode == 1, by_module.stderr
    assert "src/flagged.py:10:16: RCL101" in by_module.stdout
    if script.exists():
        by_script = subprocess.run([str(script), "--no-cache", "src"], cwd=project, capture_output=True, text=True, env=env, timeout=120)
        assert by_script.returncode == 1
        assert by_script.stdout == by_module.stdout


def test_the_script_ends_without_teardown_and_loses_no_output(project):
    """After a lint run the process ends without freeing its objects one by one: every
    exit status, the report on stdout (to a pipe), the errors on stderr and the output file
    must still be exactly what the in-process command produces."""
    (project / "src" / "broken.py").write_text("x = (\n", encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}

    def by_process(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "recompile_lint", *args], cwd=project, capture_output=True, text=True, env=env, timeout=120)

    for args in (["--no-cache", "src"], ["--no-cache", "--format", "json", "src"], ["--no-cache", "--exit-zero", "src/clean.py"], ["--no-cache", "src/flagged.py"]):
        expected = CliRunner().invoke(main, args)
        got = by_process(*args)
        assert got.returncode == expected.exit_code, (args, got.stderr)
        assert got.stdout == expected.stdout, args
        assert got.stderr == expected.stderr, args
    report = project / "report.json"
    got = by_process("--no-cache", "--format", "json", "-o", str(report), "src/flagged.py")
    assert got.returncode == 1 and got.stdout == ""
    written = json.loads(report.read_text(encoding="utf-8"))  # complete JSON, every finding
    assert {f["code"] for f in written} == {"RCL101", "RCL105"}, written
    # A usage error exits the ordinary way, with click's status and message.
    got = by_process("--no-such-option")
    assert got.returncode == 2 and "No such option" in got.stderr


BUMPER = """\
import torch

import clean


def bump() -> None:
    x = torch.ones(2)
    for i in range(10):
        clean.SCALE = i
        clean.poly(x)
"""


def lint_stdin(buffer: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recompile_lint", "--no-cache", *args], input=buffer, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_stdin_filename_lints_the_buffer_as_that_file_of_its_project(project):
    (project / "src" / "bumper.py").write_text(BUMPER, encoding="utf-8")
    on_disk = lint_stdin("", "src/clean.py", cwd=project)
    assert on_disk.returncode == 1 and "src/clean.py:8:16: RCL101" in on_disk.stdout
    # The same text through standard input: the same report, the other module read from disk.
    same = lint_stdin(CLEAN, "--stdin-filename", "src/clean.py", cwd=project)
    assert (same.returncode, same.stdout, same.stderr) == (on_disk.returncode, on_disk.stdout, on_disk.stderr)
    assert lint_stdin(CLEAN, "--stdin-filename", "src/clean.py", "-", cwd=project).stdout == on_disk.stdout
    # An unsaved edit is what gets linted; the file on disk is left as it is.
    edited = lint_stdin(CLEAN.replace("x * SCALE", "x * 2"), "--stdin-filename", "src/clean.py", cwd=project)
    assert edited.returncode == 0 and "Found 0 findings, 1 file checked." in edited.stdout
    assert (project / "src" / "clean.py").read_text(encoding="utf-8") == CLEAN
    # The buffer of another file changes what this file's findings depend on.
    quiet = lint_stdin(BUMPER.replace("clean.SCALE = i", "print(i)"), "--stdin-filename", "src/bumper.py", cwd=project)
    assert quiet.returncode == 0, quiet.stdout


def test_stdin_filename_of_a_file_not_saved_yet_and_bad_buffers(project):
    alone = lint_stdin(FLAGGED, "--stdin-filename", "src/new_module.py", "--format", "json", cwd=project)
    assert alone.returncode == 1, alone.stderr
    findings = json.loads(alone.stdout)
    assert {f["path"] for f in findings} == {"src/new_module.py"} and {f["code"] for f in findings} >= {"RCL101"}
    assert not (project / "src" / "new_module.py").exists()
    broken = lint_stdin("def f(:\n", "--stdin-filename", "src/clean.py", cwd=project)
    assert broken.returncode == 2 and "src/clean.py:1:" in broken.stdout and "syntax error" in broken.stdout
    empty = lint_stdin("", "--stdin-filename", "src/clean.py", cwd=project)
    assert empty.returncode == 0  # an empty buffer is an empty module
    undecodable = subprocess.run(
        [sys.executable, "-m", "recompile_lint", "--no-cache", "--stdin-filename", "src/clean.py"],
        input=b"x = '\xff\xfe'\n", cwd=project, capture_output=True, timeout=300,
    )
    assert undecodable.returncode == 2 and b"src/clean.py" in undecodable.stdout + undecodable.stderr
    assert b"Traceback" not in undecodable.stderr
    both = lint_stdin(CLEAN, "--stdin-filename", "src/clean.py", "src/flagged.py", cwd=project)
    assert both.returncode == 2 and "give no PATHS" in both.stderr and "Traceback" not in both.stderr
