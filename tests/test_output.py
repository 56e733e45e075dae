"""What a person reads: the full format (headline, frame, related locations, why, help), the
concise lines, colour only on a terminal, --fail-on, --help, paths relative to where the
command runs, SARIF related locations, and the headline's length on the fixtures."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from helpers import SEED_SOURCE
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths
from recompile_lint.frontends.cli import main, use_color
from recompile_lint.models import Boundedness, Finding, LintResult, Location, Severity
from recompile_lint.report import render
from recompile_lint.report.github import format_github
from recompile_lint.report.sarif import build_sarif
from recompile_lint.report.wording import split_message

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0.json").read_text(encoding="utf-8"))

# A bool global: a warning (bounded); the seed's int global: an error (unbounded).
WARNING_SOURCE = """\
import torch

flag = False


@torch.compile
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * 2 if flag else x


def main() -> None:
    global flag
    for _ in range(10):
        flag = not flag
        poly(torch.ones(3))
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "seed.py").write_text(SEED_SOURCE, encoding="utf-8")
    (tmp_path / "flag.py").write_text(WARNING_SOURCE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return tmp_path


def invoke(*args: str, env: dict[str, str] | None = None):
    result = CliRunner().invoke(main, ["--no-cache", *args], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def test_full_format_shows_headline_frame_related_why_and_help(project: Path) -> None:
    out = invoke("seed.py").stdout.splitlines()
    assert out[:5] == [
        "seed.py:8:16: RCL101 [error, unbounded] global `step` (int) is read in compiled `seed.poly` and changed",
        "  |",
        "8 |     return x * step",
        "  |                ^^^^ RCL101 (mutated-global)",
        "  |",
    ]
    assert out[5] == "  ::: seed.py:14:9: changed: this update changes `step` in the loop that calls `seed.poly`"
    assert out[6] == "  ::: seed.py:6:2: compiled: `seed.poly` is compiled here"
    assert out[7].startswith("  = why: Every new value fails the guard on `G['step']` and compiles another graph")
    assert out[8].startswith("  = help: Keep it in a 0-d tensor (`step = torch.tensor(0)`")
    assert out[-1] == "Found 1 finding (1 error), 1 file checked."


def test_concise_and_text_keep_one_line_per_finding(project: Path) -> None:
    concise = invoke("--output-format", "concise", "seed.py").stdout.splitlines()
    # The headline only: the why and the fix are in the full format.
    assert concise[0] == "seed.py:8:16: RCL101 [error] global `step` (int) is read in compiled `seed.poly` and changed (mutated-global)"
    assert len(concise) == 2
    # --format is the older spelling; `text` the older name of the concise lines.
    assert invoke("--format", "text", "seed.py").stdout.splitlines() == concise
    assert invoke("--format", "concise", "seed.py").stdout.splitlines() == concise
    assert json.loads(invoke("--format", "json", "seed.py").stdout)[0]["code"] == "RCL101"
    clash = invoke("--format", "json", "--output-format", "sarif", "seed.py")
    assert clash.exit_code == 2 and "--format is another name for --output-format" in clash.stderr


def test_json_keeps_message_and_adds_title_explanation_fix(project: Path) -> None:
    [data] = json.loads(invoke("--output-format", "json", "seed.py").stdout)
    assert data["title"] == "global `step` (int) is read in compiled `seed.poly` and changed"
    assert data["message"].startswith(data["title"] + " at seed.py:14 (in the loop that calls `seed.poly`): every new value")
    assert data["explanation"].startswith("Every new value fails the guard")
    assert data["fix"].startswith("Keep it in a 0-d tensor") and data["message"].endswith(data["fix"][1:])


def test_colour_only_on_a_terminal_and_as_the_environment_says(project: Path) -> None:
    # CliRunner's stdout is not a terminal: no escape codes.
    assert "\x1b[" not in invoke("seed.py").stdout
    forced = invoke("seed.py", env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b[1;31mRCL101\x1b[0m" in forced
    assert "\x1b[" not in invoke("seed.py", env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout
    invoke("seed.py", "-o", "report.txt", env={"FORCE_COLOR": "1"})
    assert "\x1b[" not in (project / "report.txt").read_text(encoding="utf-8")

    class Terminal:
        def isatty(self) -> bool:
            return True

    assert use_color(None, Terminal()) is True
    assert use_color("out.txt", Terminal()) is False


def test_colour_reaches_a_pseudo_terminal(project: Path) -> None:
    pty = pytest.importorskip("pty")
    import os

    main_fd, child_fd = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(RECOMPILE_LINT_NO_SERVER="1", TERM="xterm")
    process = subprocess.Popen([sys.executable, "-m", "recompile_lint", "--no-cache", "seed.py"], cwd=project, stdout=child_fd, stderr=subprocess.DEVNULL, env=env)
    os.close(child_fd)
    chunks = []
    while True:
        try:
            data = os.read(main_fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    process.wait(timeout=120)
    os.close(main_fd)
    assert b"\x1b[1;31mRCL101\x1b[0m" in b"".join(chunks)


def test_fail_on_sets_the_lowest_severity_that_fails(project: Path) -> None:
    assert invoke("flag.py").exit_code == 1  # a warning fails by default
    assert invoke("--fail-on", "warning", "flag.py").exit_code == 1
    only_errors = invoke("--fail-on", "error", "flag.py")
    assert only_errors.exit_code == 0 and "RCL101 [warning, bounded]" in only_errors.stdout
    assert invoke("--fail-on", "error", "seed.py").exit_code == 1
    assert invoke("--fail-on", "critical", "seed.py").exit_code == 2


def test_top_level_help_shows_the_lint_options() -> None:
    result = CliRunner().invoke(main, ["--help"], prog_name="recompile-lint")
    assert result.exit_code == 0
    for option in ("--select", "--ignore", "--output-format", "--fail-on", "--exit-zero", "--no-respect-gitignore", "--stdin-filename"):
        assert option in result.stdout, option
    assert "Usage: recompile-lint [OPTIONS] [PATHS]... | COMMAND [ARGS]..." in result.stdout
    assert "lsp" in result.stdout


def test_places_in_messages_are_relative_to_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Run from a folder below the project: the write in the parent folder is ../train.py.
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "model.py").write_text("import torch\n\nSTEP = 0\n\n\n@torch.compile\ndef scale(x):\n    return x * STEP\n", encoding="utf-8")
    (tmp_path / "train.py").write_text("import sys\n\nimport torch\n\nsys.path.insert(0, 'src')\nimport model\n\nfor i in range(3):\n    model.STEP = i\n    model.scale(torch.ones(3))\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path / "src")
    [finding] = [f for f in lint_paths(["model.py"], Config(cache=False), relocate=True).findings if f.code == "RCL101"]
    assert "changed at ../train.py:9" in finding.message
    assert str(tmp_path) not in json.dumps(finding.to_dict())
    assert [(loc.path, loc.line, loc.role) for loc in finding.evidence] == [("../train.py", 9, "write"), ("model.py", 6, "compile-site")]


def finding_with(evidence: tuple[Location, ...], message: str) -> Finding:
    return Finding(
        path="src/m.py", line=8, column=16, code="RCL101", end_line=8, end_column=20, name="mutated-global",
        severity=Severity.ERROR, bounded=Boundedness.UNBOUNDED, message=message, evidence=evidence,
        **split_message(message, evidence).__dict__,
    )


def test_sarif_related_locations_validate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    evidence = (Location("src/train.py", 14, 9, "write", "this changes `step`"), Location("src/m.py", 6, 2, "compile-site", "", 6, 15))
    finding = finding_with(evidence, "global `step` is read in compiled `m.poly` and reassigned at src/train.py:14: every value recompiles. Fix: keep it in a tensor")
    log = build_sarif(LintResult(findings=(finding,), errors=(), files_checked=1), base=tmp_path)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    related = log["runs"][0]["results"][0]["relatedLocations"]
    assert [r["id"] for r in related] == [1, 2]
    assert related[0]["physicalLocation"]["artifactLocation"] == {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"}
    assert related[0]["physicalLocation"]["region"] == {"startLine": 14, "startColumn": 9}
    assert related[0]["message"]["text"] == "changed: this changes `step`"
    # An empty note is worded from the role.
    assert related[1]["message"]["text"] == "compiled: compiled here"
    annotation = format_github(LintResult(findings=(finding,), errors=(), files_checked=1))
    assert annotation.count("\n") == 1  # one annotation per finding
    assert "%0Asrc/train.py:14: changed: this changes `step`%0A" in annotation
    assert annotation.rstrip().endswith("%0Ahelp: Keep it in a tensor")


def test_render_knows_every_format_name(project: Path) -> None:
    result = lint_paths(["seed.py"], Config(cache=False), relocate=True)
    for name in ("full", "concise", "text", "json", "sarif", "github"):
        assert "RCL101" in render(name, result), name


def test_headlines_are_short_and_every_fixture_finding_has_a_fix() -> None:
    result = lint_paths([str(REPO / "fixtures")], Config(select=("RCL",), cache=False), relocate=True)
    titles = [len(f.title) for f in result.findings]
    # The messages they come from have a median of over 400 characters; the headlines about
    # 100 (fixture modules have long names: `module_attribute_in_method.CurriculumHead`).
    assert statistics.median(len(f.message) for f in result.findings) > 300
    assert statistics.median(titles) <= 110
    assert all(f.fix for f in result.findings), [f.message for f in result.findings if not f.fix]
    assert all(f.title and not f.title.endswith((":", ",", ";")) for f in result.findings)


def test_the_frame_of_a_buffer_on_standard_input_quotes_the_buffer(project: Path) -> None:
    edited = SEED_SOURCE.replace("return x * step", "return x * step  # edited, not saved")
    result = CliRunner().invoke(main, ["--no-cache", "--stdin-filename", "seed.py", "-"], input=edited)
    assert result.exit_code == 1, result.output
    assert "8 |     return x * step  # edited, not saved" in result.stdout.splitlines()


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    development = readme.split("## Development", 1)[1].split("```sh\n", 1)[1].split("\n```", 1)[0].strip()
    ci = [line for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")]
    # The test command, then the wheel built and run from a clean environment.
    assert ci[-2:] == [development, ".ci/wheel"]
    assert development.endswith("&& python -m pytest")
    assert "python -m build" in (REPO / ".ci" / "wheel").read_text(encoding="utf-8")
