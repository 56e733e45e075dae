"""A hostile repository against the linter's outputs and the choices it leaves to its settings.

Each test plants what a pull request could commit (a comment or a file name holding terminal
escapes and newlines, a link where the report goes, ``start-server = true``, a recompile log
naming files elsewhere) and checks that it stays inert: nothing raw reaches the terminal or a
CI runner, no file outside the checkout is written, no process is left running, no file
outside the working directory is read.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import SEED_SOURCE
from recompile_lint.frontends.cli import main
from recompile_lint.models import Boundedness, FileError, Finding, Location, Severity
from recompile_lint.report.sanitize import escape, escape_path, is_safe

# Bytes no line of a report may hold raw: C0 controls but the newline, DEL, and (as UTF-8)
# the C1 controls and the bidi overrides and isolates.
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
TITLE = "\x1b]0;owned\x07"
ERASE = "\x1b[2K"
# A finding's line with a comment that would retitle the terminal and erase the line.
HOSTILE_LINE = SEED_SOURCE.replace("    return x * step\n", f"    return x * step  # {TITLE}{ERASE}\u202e\x7f\n")
FORGED = "::error file=x::forged"
NAMES = [
    f"evil\nFound 0 findings, 1 file checked.\n{FORGED}.py",
    f"esc{ERASE}{TITLE}.py",
    f"{FORGED}.py",
]


def lint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``recompile-lint [COMMAND] --no-cache ARGS`` in ``cwd`` (COMMAND: check by default)."""
    env = dict(os.environ, RECOMPILE_LINT_NO_SERVER="1", PYTHONIOENCODING="utf-8")
    env.pop("FORCE_COLOR", None)
    command = [args[0]] if args and args[0] in ("regions", "explain") else ["check"]
    rest = list(args[1:] if command[0] != "check" or args[:1] == ("check",) else args)
    return subprocess.run([sys.executable, "-m", "recompile_lint", *command, "--no-cache", *rest], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def project(root: Path) -> Path:
    root.mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    return root


def workflow_command(line: str) -> str | None:
    """The workflow command a line issues, read as the Actions runner reads it (after leading
    blanks, ``::NAME[ PROPERTIES]::DATA``; the legacy ``##[NAME]`` anywhere), else None."""
    if "##[" in line:
        return line.split("##[", 1)[1].split("]", 1)[0].split(" ", 1)[0] or "?"
    text = line.lstrip()
    if not text.startswith("::"):
        return None
    end = text.find("::", 2)
    if end < 0:
        return None
    name = text[2:end].split(" ", 1)[0]
    return name if re.fullmatch(r"[A-Za-z][\w-]*", name) else None


def assert_inert(text: str, ours: frozenset[str] = frozenset()) -> None:
    """No raw control byte, and no line that issues a workflow command but ``ours``."""
    assert not RAW_CONTROL.search(text), repr(text)
    for line in text.splitlines():
        command = workflow_command(line)
        assert command is None or command in ours, line


# ---- the sanitiser --------------------------------------------------------------------------


def test_escape_shows_every_control_and_bidi_character() -> None:
    assert escape(f"a{TITLE}b") == "a\\x1b]0;owned\\x07b"
    assert escape("one\ntwo\rthree\tfour\x7f\x9b") == "one\\ntwo\\rthree\\tfour\\x7f\\x9b"
    assert escape("abc\u202edef\u2066") == "abc\\u202edef\\u2066"
    assert escape("##[error]x") == "##\\x5berror]x"
    assert escape("plain text, 模型.py: `x` (ok)") == "plain text, 模型.py: `x` (ok)"
    assert escape_path("::error::x.py") == "./::error::x.py"
    assert escape_path("  ::x") == "./  ::x"
    assert is_safe(escape("".join(chr(c) for c in range(0x00, 0xA0)) + "\u202a\u2069\u2028"))


# ---- text, concise and github reports -------------------------------------------------------


@pytest.mark.parametrize("output_format", ["full", "concise", "github"])
def test_a_comment_on_the_reported_line_cannot_drive_the_terminal(tmp_path: Path, output_format: str) -> None:
    repo = project(tmp_path / "repo")
    (repo / "m.py").write_text(HOSTILE_LINE, encoding="utf-8")
    result = lint(repo, "--format", output_format, "m.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert_inert(result.stdout, frozenset({"error"}) if output_format == "github" else frozenset())
    assert_inert(result.stderr)
    assert "RCL101" in result.stdout
    if output_format == "full":
        assert "return x * step  # \\x1b]0;owned\\x07\\x1b[2K\\u202e\\x7f" in result.stdout
        # The carets still stand under `step`, which comes before the escapes.
        lines = result.stdout.splitlines()
        quoted = next(i for i, line in enumerate(lines) if "return x * step" in line)
        assert lines[quoted + 1].index("^") == lines[quoted].index("step")


def hostile_names(repo: Path) -> None:
    for name in NAMES:
        (repo / name).write_text(SEED_SOURCE, encoding="utf-8")
    (repo / f"broken\n{FORGED}\x1b[2K.py").write_text("def (:\n", encoding="utf-8")
    (repo / f"::stop-commands::token{ERASE}.py").write_text("def (:\n", encoding="utf-8")


@pytest.mark.parametrize("output_format", ["full", "concise"])
def test_file_names_cannot_forge_lines_in_the_text_reports(tmp_path: Path, output_format: str) -> None:
    repo = project(tmp_path / "repo")
    hostile_names(repo)
    result = lint(repo, "--format", output_format, ".")
    assert result.returncode == 2, result.stdout + result.stderr  # two files do not parse
    assert_inert(result.stdout + result.stderr)
    summaries = [line for line in result.stdout.splitlines() if line.startswith("Found ")]
    assert summaries == ["Found 3 findings (3 errors), 5 files checked, 2 file errors."]
    assert "evil\\nFound 0 findings, 1 file checked.\\n::error file=x::forged.py:8:16: RCL101" in result.stdout
    assert "::stop-commands::token\\x1b[2K.py:1:" in result.stdout


def test_file_names_cannot_inject_workflow_commands_in_github_format(tmp_path: Path) -> None:
    from test_github_format import parse

    repo = project(tmp_path / "repo")
    hostile_names(repo)
    result = lint(repo, "--format", "github", ".")
    assert result.returncode == 2, result.stdout + result.stderr
    assert not RAW_CONTROL.search(result.stdout + result.stderr)
    lines = result.stdout.splitlines()
    assert len(lines) == 5  # three findings, two file errors: one annotation each
    files = set()
    for line in lines:
        command, properties, message = parse(line)
        assert command in ("error", "warning", "notice")
        assert set(properties) <= {"file", "line", "col", "endLine", "endColumn", "title"}
        assert is_safe(message.replace("\n", "")) and is_safe(properties["file"])
        files.add(properties["file"])
    # Relative to the checkout with no `./`, as GitHub places them: what keeps a name from
    # issuing a command is the property escaping (`:` and `,`), never a prefix.
    assert "evil\\nFound 0 findings, 1 file checked.\\n::error file=x::forged.py" in files
    assert "::stop-commands::token\\x1b[2K.py" in files
    assert not any(name.startswith("./") for name in files)
    assert any(line.startswith("::error file=%3A%3Astop-commands%3A%3Atoken") for line in lines)
    assert_inert(result.stdout, frozenset({"error", "warning", "notice"}))
    # The file errors are also written to standard error, where the runner reads commands too.
    assert result.stderr.count("recompile-lint: error:") == 2
    assert_inert(result.stderr)


@pytest.mark.parametrize("output_format", ["json", "sarif"])
def test_json_and_sarif_stay_exact_and_print_nothing_raw(tmp_path: Path, output_format: str) -> None:
    repo = project(tmp_path / "repo")
    name = "##[error]forged\u202e\x9b\x1b[2K.py"
    (repo / name).write_text(SEED_SOURCE, encoding="utf-8")
    result = lint(repo, "--format", output_format, name)
    assert result.returncode == 1, result.stdout + result.stderr
    assert_inert(result.stdout)
    data = json.loads(result.stdout)
    if output_format == "json":
        assert data[0]["path"] == name
    else:
        # The module's name, as the messages quote it, comes back exact.
        strings: list[str] = []

        def walk(value: object) -> None:
            if isinstance(value, dict):
                for item in value.values():
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)
            elif isinstance(value, str):
                strings.append(value)

        walk(data)
        assert any(name[: -len(".py")] + ".poly" in text for text in strings)


def finding(message: str, path: str = "m.py") -> Finding:
    return Finding(code="RCL101", name="mutated-global", message=message, path=path, line=1, column=1, end_line=1, end_column=2,
                   severity=Severity.ERROR, bounded=Boundedness.UNBOUNDED, title=message, explanation=f"why {message}",
                   fix=f"fix {message}", evidence=(Location(path, 1, 1, "write", note=message),))


def test_language_server_messages_are_escaped() -> None:
    pytest.importorskip("lsprotocol")
    from recompile_lint.frontends.lsp import error_diagnostic, to_diagnostic

    diagnostic = to_diagnostic(finding(f"name `a{TITLE}\nb`"), ["x = 1"], {})
    assert not RAW_CONTROL.search(diagnostic.message)
    assert diagnostic.message.count("\n") == 2  # headline, why, help: the message's own lines only
    assert "\\x1b]0;owned\\x07\\nb" in diagnostic.message
    assert not RAW_CONTROL.search(diagnostic.related_information[0].message)
    assert "\n" not in diagnostic.related_information[0].message
    error = error_diagnostic(FileError(path="m.py", message=f"bad {ERASE}\nline"), ["x = 1"])
    assert error.message == "bad \\x1b[2K\\nline"


def test_regions_text_escapes_paths_and_expressions(tmp_path: Path) -> None:
    repo = project(tmp_path / "repo")
    name = f"r{ERASE}\n{FORGED}.py"
    (repo / name).write_text("import torch\n\n\ndef f(x):\n    return x\n\n\ng = torch.compile(f)\n", encoding="utf-8")
    result = lint(repo, "regions", ".")
    assert result.returncode == 0, result.stdout + result.stderr
    assert_inert(result.stdout + result.stderr)
    assert "r\\x1b[2K\\n::error file=x::forged.py:8:" in result.stdout


def test_explain_escapes_every_field_of_a_verifier_report(tmp_path: Path) -> None:
    report = {
        "command": ["train.py"], "exit_code": 0, "detail": "", "unpredicted": [], "graphs": {}, "events": [],
        "limit_hits": [{"limit_type": f"recompile_limit{TITLE}\n{FORGED}", "limit_value": 8, "function": f"f{ERASE}",
                        "file": f"/x\n{FORGED}.py", "first_line": 3, "last_reason": f"why\r\n::stop-commands::t"}],
    }
    (tmp_path / "run.json").write_text(json.dumps(report), encoding="utf-8")
    for output_format in ("text", "html"):
        result = lint(tmp_path, "explain", "--format", output_format, "run.json")
        assert result.returncode in (0, 1), result.stdout + result.stderr
        assert_inert(result.stdout + result.stderr)
        assert "recompile_limit\\x1b]0;owned\\x07\\n::error" in result.stdout


def test_the_verifiers_reports_escape_what_the_run_printed() -> None:
    from recompile_lint.verify.report import render_run_json, render_run_text
    from recompile_lint.verify.results import LimitHit, RunReport

    hit = LimitHit(f"recompile_limit{TITLE}\n{FORGED}", 8, f"f{ERASE}", f"/x\n{FORGED}.py", 3)
    report = RunReport(("python", f"train{ERASE}.py"), 0, (), (), (hit,), f"note\r\n##[error]x", (), ())
    text = render_run_text(report)
    assert_inert(text)
    assert "/x\\n::error file=x::forged.py:3: f\\x1b[2K reached recompile_limit\\x1b]0;owned\\x07\\n::error" in text
    data = render_run_json(report)
    assert_inert(data)
    assert json.loads(data)["limit_hits"][0]["limit_type"] == hit.limit_type


def test_configuration_errors_on_standard_error_are_escaped(tmp_path: Path) -> None:
    repo = project(tmp_path / "repo")
    (repo / "pyproject.toml").write_text(f'[tool.recompile-lint]\nignore = ["RCL\\n{FORGED}\\u001b[2K"]\n', encoding="utf-8")
    (repo / "m.py").write_text(SEED_SOURCE, encoding="utf-8")
    result = lint(repo, "m.py")
    assert result.returncode == 2, result.stdout + result.stderr
    assert_inert(result.stderr)
    assert result.stderr.count("\n") == 1 and "unknown rule code" in result.stderr


# ---- --output-file ----------------------------------------------------------------------------


@pytest.mark.parametrize("command", [[], ["regions"], ["explain", "run.log"]])
def test_the_output_file_is_not_written_through_a_link(tmp_path: Path, command: list[str]) -> None:
    repo = project(tmp_path / "repo")
    (repo / "m.py").write_text(SEED_SOURCE, encoding="utf-8")
    (repo / "run.log").write_text((Path(__file__).parent / "explain_data" / "logs" / "recompiles.log").read_text(encoding="utf-8"), encoding="utf-8")
    victim = tmp_path / "bashrc"
    victim.write_text("export KEEP=1\n", encoding="utf-8")
    (repo / "results.sarif").symlink_to(victim)
    result = lint(repo, *command, "-o", "results.sarif", *(["m.py"] if command[:1] != ["explain"] else []))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "results.sarif: it is a symbolic link, which is not followed" in result.stderr
    assert victim.read_text(encoding="utf-8") == "export KEEP=1\n"
    assert (repo / "results.sarif").is_symlink()


def test_the_output_file_is_not_written_through_a_linked_folder(tmp_path: Path) -> None:
    repo = project(tmp_path / "repo")
    (repo / "m.py").write_text(SEED_SOURCE, encoding="utf-8")
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    (repo / "reports").symlink_to(elsewhere, target_is_directory=True)
    result = lint(repo, "--format", "sarif", "-o", "reports/results.sarif", "m.py")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "reports is a symbolic link" in result.stderr
    assert list(elsewhere.iterdir()) == []


def test_the_output_file_replaces_a_file_whole(tmp_path: Path) -> None:
    repo = project(tmp_path / "repo")
    (repo / "m.py").write_text(SEED_SOURCE, encoding="utf-8")
    (repo / "out.json").write_text("old " * 10000, encoding="utf-8")
    (repo / "out.json").chmod(0o640)
    result = lint(repo, "--format", "json", "-o", "out.json", "m.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert json.loads((repo / "out.json").read_text(encoding="utf-8"))[0]["code"] == "RCL101"
    assert (repo / "out.json").stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in repo.iterdir()) == ["m.py", "out.json", "pyproject.toml"]


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into any folder")
def test_an_output_file_in_a_folder_that_is_not_writable_leaves_nothing(tmp_path: Path) -> None:
    repo = project(tmp_path / "repo")
    (repo / "m.py").write_text(SEED_SOURCE, encoding="utf-8")
    locked = repo / "locked"
    locked.mkdir()
    (locked / "out.txt").write_text("previous report\n", encoding="utf-8")
    locked.chmod(0o555)
    try:
        result = lint(repo, "--format", "concise", "-o", "locked/out.txt", "m.py")
        assert result.returncode == 2, result.stdout + result.stderr
        assert "recompile-lint: error: cannot write locked/out.txt: Permission denied" in result.stderr
        assert [p.name for p in locked.iterdir()] == ["out.txt"]
        assert (locked / "out.txt").read_text(encoding="utf-8") == "previous report\n"
    finally:
        locked.chmod(0o755)


def test_write_output_file_in_a_folder_that_refuses_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a folder that is not writable answers, as seen by any user (root included)."""
    from recompile_lint.report import output_file

    (tmp_path / "out.txt").write_text("before\n", encoding="utf-8")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(output_file.tempfile, "mkstemp", refuse)
    with pytest.raises(output_file.OutputFileError, match=r"cannot write .*out.txt: Permission denied"):
        output_file.write_output_file(str(tmp_path / "out.txt"), "after\n")
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == "before\n"


def test_write_output_file_leaves_no_partial_file_when_the_write_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recompile_lint.report import output_file

    target = tmp_path / "out.txt"
    target.write_text("before\n", encoding="utf-8")

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(output_file.os, "replace", fail)
    with pytest.raises(output_file.OutputFileError, match="No space left on device"):
        output_file.write_output_file(str(target), "after\n")
    assert target.read_text(encoding="utf-8") == "before\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


# ---- start-server -----------------------------------------------------------------------------


def test_a_projects_start_server_key_starts_nothing(tmp_path: Path) -> None:
    repo = project(tmp_path / "repo")
    (repo / "pyproject.toml").write_text("[tool.recompile-lint]\nstart-server = true\n", encoding="utf-8")
    (repo / "m.py").write_text(SEED_SOURCE, encoding="utf-8")
    servers = tmp_path / "servers"
    env = dict(os.environ, RECOMPILE_LINT_SERVER_DIR=str(servers))
    env.pop("RECOMPILE_LINT_NO_SERVER", None)
    env.pop("RECOMPILE_LINT_START_SERVER", None)
    try:
        result = subprocess.run([sys.executable, "-m", "recompile_lint", "--no-cache", "m.py"], cwd=repo, env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "start-server is ignored: a project cannot start a resident server" in result.stderr
        # A server start makes its socket's folder and log before anything else.
        assert not servers.exists()
    finally:
        if servers.exists():
            subprocess.run([sys.executable, "-m", "recompile_lint", "server", "stop"], env=env, capture_output=True, timeout=60)


@pytest.mark.parametrize(("value", "option", "wanted"), [("1", [], True), ("", [], False), ("0", ["--start-server"], True), ("", ["--start-server"], True)])
def test_start_server_comes_from_the_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, option: list[str], wanted: bool) -> None:
    from recompile_lint.frontends import cli

    started: list[bool] = []
    monkeypatch.setattr(cli, "_server_to_start", lambda: True)
    monkeypatch.setattr(cli, "start_server_for_next_commands", lambda: started.append(True))
    monkeypatch.setattr("recompile_lint.frontends.server.record_what_to_keep", lambda: None)
    monkeypatch.setenv("RECOMPILE_LINT_START_SERVER", value)
    repo = project(tmp_path / "repo")
    (repo / "m.py").write_text("x = 1\n", encoding="utf-8")
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(main, ["--no-cache", *option, "m.py"])
    assert result.exit_code == 0, result.output
    assert started == ([True] if wanted else [])


# ---- explain's scope --------------------------------------------------------------------------


def outside_log(tmp_path: Path, exists: bool) -> tuple[Path, Path]:
    """A working directory, and a log naming a file of a project outside it."""
    other = project(tmp_path / "private")
    outside = other / "outside.py"
    if exists:
        outside.write_text(SEED_SOURCE, encoding="utf-8")
    here = tmp_path / "here"
    here.mkdir()
    (here / "run.log").write_text(
        f"V1201 00:00:00.000000 1 torch/_dynamo/guards.py:2812] [0/1] [__recompiles] Recompiling function poly in {outside}:7\n"
        f"V1201 00:00:00.000000 1 torch/_dynamo/guards.py:2812] [0/1] [__recompiles]     triggered by the following guard failure(s):\n"
        f"V1201 00:00:00.000000 1 torch/_dynamo/guards.py:2812] [0/1] [__recompiles]     - 0/0: G['step'] == 0\n",
        encoding="utf-8",
    )
    return here, other


def test_explain_lints_no_file_outside_the_working_directory(tmp_path: Path) -> None:
    here, other = outside_log(tmp_path, True)
    reports = []
    for exists in (True, False):
        if not exists:
            (other / "outside.py").unlink()
        result = subprocess.run([sys.executable, "-m", "recompile_lint", "explain", "--format", "json", "run.log"], cwd=here,
                                env=dict(os.environ, RECOMPILE_LINT_NO_SERVER="1"), capture_output=True, text=True, timeout=300)
        assert result.returncode == 1, result.stdout + result.stderr
        data = json.loads(result.stdout)
        assert data["static"]["paths"] == []
        # Not linted, so no cache folder either.
        assert sorted(p.name for p in other.iterdir()) == (["outside.py", "pyproject.toml"] if exists else ["pyproject.toml"])
        assert any("outside the working directory" in w for w in data["warnings"])
        reports.append(result.stdout)
    # Whether the named file exists makes no difference to the report.
    assert reports[0] == reports[1]


def test_explain_lints_outside_files_when_asked(tmp_path: Path) -> None:
    here, other = outside_log(tmp_path, True)
    result = subprocess.run([sys.executable, "-m", "recompile_lint", "explain", "--no-cache", "--lint-outside", "--format", "json", "run.log"],
                            cwd=here, env=dict(os.environ, RECOMPILE_LINT_NO_SERVER="1"), capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert [Path(p).name for p in json.loads(result.stdout)["static"]["paths"]] == ["outside.py"]


# ---- arguments --------------------------------------------------------------------------------


def test_an_option_word_that_is_an_existing_file_is_a_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recompile_lint.frontends.cli import paths_in_place

    monkeypatch.chdir(tmp_path)
    for name in ("--exit-zero", "--ignore=RCL", "-o"):
        (tmp_path / name).write_text("x = 1\n", encoding="utf-8")
    check = main.get_command(None, "check")  # type: ignore[arg-type]
    assert paths_in_place(check, ["--exit-zero", "--ignore=RCL", "-o", "--select", "RCL1", "a.py"]) == [
        "./--exit-zero", "./--ignore=RCL", "./-o", "--select", "RCL1", "a.py"]
    assert paths_in_place(check, ["--config", "--exit-zero"]) == ["--config", "--exit-zero"]  # an option's value
    assert paths_in_place(check, ["--", "--exit-zero", "--select"]) == ["--", "--exit-zero", "--select"]
    rules = main.get_command(None, "rules")  # type: ignore[arg-type]
    assert paths_in_place(rules, ["--exit-zero"]) == ["--exit-zero"]  # a command without paths


def test_after_double_dash_a_subcommand_name_is_a_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--` ends the options here and in the resident server's client, which hands such a
    command to the server (that parses it the same way) rather than running it as its own."""
    from recompile_lint.frontends import client

    monkeypatch.delenv("RECOMPILE_LINT_NO_SERVER", raising=False)
    (tmp_path / "lsp").write_text(SEED_SOURCE, encoding="utf-8")
    (tmp_path / "--exit-zero").write_text("x = 1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert client.server_wanted(["--", "lsp"]) == (os.name == "posix")
    assert client.server_wanted(["check", "lsp"]) == (os.name == "posix")
    for args in (["--no-cache", "--format", "concise", "--", "lsp"], ["check", "--no-cache", "--format", "concise", "lsp", "--exit-zero"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1, result.output
        assert "lsp:8:16: RCL101" in result.output
