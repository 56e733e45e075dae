"""``--format github``: workflow commands that GitHub turns into annotations on the diff."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from recompile_lint.models import Boundedness, FileError, Finding, LintResult, Location, Severity
from recompile_lint.report.github import display_path, escape_data, escape_property, format_github

SOURCE = """\
import torch

step = 0


@torch.compile
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * step


def main() -> None:
    global step
    step += 1
"""


def finding(path: str = "m.py", severity: Severity = Severity.ERROR, message: str = "global `step` is reassigned") -> Finding:
    return Finding(
        path=path, line=8, column=16, code="RCL101", end_line=8, end_column=20, name="mutated-global",
        severity=severity, bounded=Boundedness.UNBOUNDED, message=message,
    )


def decode_data(value: str) -> str:
    """What the Actions runner does to a command's message."""
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def decode_property(value: str) -> str:
    return decode_data(value.replace("%3A", ":").replace("%2C", ","))


def parse(line: str) -> tuple[str, dict[str, str], str]:
    assert line.startswith("::")
    head, _, message = line[2:].partition("::")
    command, _, props = head.partition(" ")
    properties = dict(item.split("=", 1) for item in props.split(","))
    return command, {k: decode_property(v) for k, v in properties.items()}, decode_data(message)


def test_cli_prints_one_annotation_per_finding(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "m.py").write_text(SOURCE, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "recompile_lint", "--no-cache", "--format", "github", "m.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 1, result.stderr
    [line] = result.stdout.splitlines()
    assert line.startswith("::error file=m.py,line=8,col=16,endLine=8,endColumn=20,title=RCL101 (mutated-global)::global `step`")


def test_severity_picks_the_command() -> None:
    result = LintResult(
        findings=(finding(severity=Severity.ERROR), finding(severity=Severity.WARNING), finding(severity=Severity.INFO)),
        errors=(),
        files_checked=1,
    )
    assert [parse(line)[0] for line in format_github(result).splitlines()] == ["error", "warning", "notice"]


def test_messages_and_properties_survive_the_runner_unescaping() -> None:
    message = "100% sure:\nline two,\r\nend"
    path = "dir,with:odd%chars/m.py"
    [line] = format_github(LintResult(findings=(finding(path=path, message=message),), errors=(), files_checked=1)).splitlines()
    assert "\n" not in line and "\r" not in line
    command, properties, decoded = parse(line)
    # A message's characters come through the runner as they are, but a newline in it is
    # repository text (a quoted name): it reaches the annotation as a visible escape.
    assert decoded == "100% sure:\\nline two,\\r\\nend"
    assert properties["file"] == path
    assert properties["title"] == "RCL101 (mutated-global)"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    assert escape_data("a:b,c%\n") == "a:b,c%25%0A"


def test_file_errors_are_error_annotations() -> None:
    result = LintResult(findings=(), errors=(FileError(path="bad.py", message="syntax error: invalid syntax", line=3, column=5),), files_checked=1)
    [line] = format_github(result).splitlines()
    command, properties, message = parse(line)
    assert command == "error"
    assert (properties["file"], properties["line"], properties["col"]) == ("bad.py", "3", "5")
    assert message == "syntax error: invalid syntax"


def test_no_findings_prints_nothing() -> None:
    assert format_github(LintResult(findings=(), errors=(), files_checked=3)) == ""


def test_linting_dot_names_files_relative_to_the_root_without_a_dot_slash(tmp_path: Path) -> None:
    # `recompile-lint .` walks `./pkg/m.py`; GitHub places `pkg/m.py` only.
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(SOURCE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_WORKSPACE"}
    result = subprocess.run(
        [sys.executable, "-m", "recompile_lint", "--no-cache", "--format", "github", "."],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 1, result.stderr
    [line] = result.stdout.splitlines()
    command, properties, message = parse(line)
    assert properties["file"] == "pkg/m.py"
    # The related lines in the text name the file the same way.
    assert [text.split(":")[0] for text in message.split("\n")[1:3]] == ["pkg/m.py", "pkg/m.py"]


def test_paths_are_relative_to_the_checkout_posix_and_absolute_outside_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "sub" / "pkg").mkdir(parents=True)
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    monkeypatch.chdir(checkout)
    assert display_path("./sub/pkg/m.py") == "sub/pkg/m.py"
    assert display_path(str(checkout / "sub" / "pkg" / "m.py")) == "sub/pkg/m.py"
    assert display_path("sub/./pkg/../pkg/m.py") == "sub/pkg/m.py"
    assert display_path("..m.py") == "..m.py"  # a name that starts with dots is inside
    outside = tmp_path / "elsewhere" / "m.py"
    assert display_path(str(outside)) == outside.as_posix()
    assert display_path("../elsewhere/m.py") == outside.as_posix()
    # A step run in a subfolder of the checkout: still relative to the repository root.
    monkeypatch.chdir(checkout / "sub")
    monkeypatch.setenv("GITHUB_WORKSPACE", str(checkout))
    assert display_path("./pkg/m.py") == "sub/pkg/m.py"
    # A file outside the workspace is placed from the working directory.
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path / "other"))
    assert display_path("./pkg/m.py") == "pkg/m.py"


def test_a_related_line_never_starts_with_a_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    monkeypatch.chdir(tmp_path)
    evidence = (Location(path="./::warning::x.py", line=3, column=1, role="write", note="changed"),)
    hostile = Finding(
        path="./::error::m.py", line=8, column=16, code="RCL101", end_line=8, end_column=20, name="mutated-global",
        severity=Severity.ERROR, bounded=Boundedness.UNBOUNDED, message="m", evidence=evidence,
    )
    [line] = format_github(LintResult(findings=(hostile,), errors=(), files_checked=1)).splitlines()
    assert line.startswith("::error file=%3A%3Aerror%3A%3Am.py,line=8,")
    command, properties, message = parse(line)
    assert properties["file"] == "::error::m.py"
    assert message.split("\n")[1] == "./::warning::x.py:3: changed: changed"
