"""Bad input never ends in a traceback: each case names the path and the problem, exits with
the documented code (2 for usage, configuration and input errors), and the other files of the
run are still linted and their findings still printed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from recompile_lint import source
from recompile_lint.frontends.cli import main

# A file with one RCL101 finding, linted beside each bad input: its finding must survive.
GOOD = """\
import torch

step = 0


@torch.compile
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * step


def train(x: torch.Tensor) -> None:
    global step
    for _ in range(10):
        poly(x)
        step += 1
"""


def run(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``recompile-lint ARGS`` run in ``cwd``."""
    runner = CliRunner()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = runner.invoke(main, ["--no-cache", *args] if args and args[0] not in ("rule", "rules") else args)
    finally:
        os.chdir(old)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"uncaught {type(result.exception).__name__}: {result.exception}"
    )
    return result.exit_code, result.stdout, result.stderr


def no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project root (``pyproject.toml`` marks it) holding one good file."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    (tmp_path / "good.py").write_text(GOOD, encoding="utf-8")
    return tmp_path


def assert_bad_file(project: Path, name: str, problem: str) -> None:
    """Linting the bad file with the good one: exit 2, the bad path and the problem named, and
    the good file's finding still printed."""
    code, out, err = run([name, "good.py"], project)
    no_traceback(out, err)
    assert code == 2, out + err
    lines = [line for line in (out + err).splitlines() if name in line]
    assert lines, f"{name} is not named in the output:\n{out}{err}"
    assert any(problem in line.lower() for line in lines), f"expected {problem!r} in {lines}"
    assert "good.py:8:" in out and "RCL101" in out, "the good file's finding must still be printed"


# ---- syntax --------------------------------------------------------------------------------


def test_python2_print_statement(project):
    (project / "legacy.py").write_text('print "x"\n', encoding="utf-8")
    assert_bad_file(project, "legacy.py", "syntax error")


def test_unfinished_block(project):
    (project / "unfinished.py").write_text("import torch\n\n\ndef f(x):\n    if x:\n", encoding="utf-8")
    assert_bad_file(project, "unfinished.py", "syntax error")


def test_syntax_error_reports_its_line(project):
    (project / "broken.py").write_text("x = 1\ny = (\n", encoding="utf-8")
    code, out, err = run(["broken.py"], project)
    assert code == 2
    assert "broken.py:2:" in out + err


def test_only_what_ast_rejects_is_a_syntax_error(project):
    """Files no region needs are checked through their symbol table, which also rejects code
    that parses (a module-level ``nonlocal``); such code is not reported, real errors are."""
    from recompile_lint.analysis.parsing import syntax_error

    parses = "nonlocal x\n\ndef f():\n    y = 1\n    global y\n"
    assert syntax_error("parses.py", parses) is None
    error = syntax_error("broken.py", "x = 1\ny = (\n")
    assert error is not None and error.line == 2 and error.message.startswith("syntax error:")
    (project / "parses.py").write_text(parses, encoding="utf-8")
    code, out, err = run(["parses.py"], project)
    assert code == 0, out + err


# ---- encodings, line endings, whitespace ----------------------------------------------------


def test_undecodable_bytes(project):
    (project / "latin.py").write_bytes(b"name = '\xff\xfe caf\xe9'\n")
    assert_bad_file(project, "latin.py", "decode")


def test_wrong_coding_cookie(project):
    (project / "cookie.py").write_bytes(b"# -*- coding: no-such-codec -*-\nx = 1\n")
    assert_bad_file(project, "cookie.py", "no-such-codec")


def bom_crlf_variants() -> dict[str, bytes]:
    text = GOOD.replace("def poly", "def poly2").replace("poly(x)", "poly2(x)")
    return {
        "bom.py": b"\xef\xbb\xbf" + text.encode(),
        "crlf.py": text.replace("\n", "\r\n").encode(),
        "mixed.py": "".join(
            line + ("\r\n" if i % 3 == 0 else "\r" if i % 3 == 1 else "\n") for i, line in enumerate(text.splitlines())
        ).encode(),
        "tabs.py": text.replace("    ", "\t").encode(),
    }


@pytest.mark.parametrize("name", sorted(bom_crlf_variants()))
def test_bom_line_endings_and_tabs_are_linted_like_plain_source(project, name):
    """A BOM, CRLF, lone CR and tab indentation change nothing: same finding, same line and
    column as the plain file."""
    (project / name).write_bytes(bom_crlf_variants()[name])
    code, out, err = run([name], project)
    no_traceback(out, err)
    assert code == 1, out + err
    column = 13 if name == "tabs.py" else 16  # a tab is one character
    assert f"{name}:8:{column}: RCL101" in out, out


def test_empty_file_is_clean(project):
    (project / "empty.py").write_bytes(b"")
    code, out, err = run(["empty.py"], project)
    assert code == 0, out + err
    assert "1 file checked" in out


def test_large_generated_file(project):
    """A 10 MB generated module (embedded resource blobs, as resource compilers write them)
    with nothing to compile is read, checked and reported clean, next to a flagged file."""
    blob = "QUJDRA" * 160  # 960 base64 characters per line
    lines = ["# Generated resource module. Do not edit.\n", "import base64\n\n"]
    lines += [f"CHUNK_{i:05d} = {blob!r}\n" for i in range(10_000_000 // (len(blob) + 16) + 1)]
    lines.append("\n\ndef load() -> bytes:\n    return base64.b64decode(CHUNK_00000)\n")
    (project / "generated.py").write_text("".join(lines), encoding="utf-8")
    assert (project / "generated.py").stat().st_size >= 10_000_000
    code, out, err = run(["generated.py", "good.py"], project)
    no_traceback(out, err)
    assert code == 1, out + err
    assert "good.py:8:" in out
    assert "generated.py" not in out
    assert "2 files checked" in out


# ---- things that are not Python source -------------------------------------------------------


def test_binary_file_with_py_name(project):
    (project / "blob.py").write_bytes(bytes(range(256)) * 8)
    assert_bad_file(project, "blob.py", "not a text file")


def test_directory_named_like_a_module_is_walked_not_read(project):
    """``x.py/`` is a directory: its files are linted, the directory itself is not an error."""
    (project / "x.py").mkdir()
    (project / "x.py" / "inner.py").write_text(GOOD, encoding="utf-8")
    code, out, err = run(["."], project)
    no_traceback(out, err)
    assert code == 1, out + err
    assert os.path.join("x.py", "inner.py") + ":8:" in out
    assert "error" not in err.lower()


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_symlink_loop(project):
    (project / "loop").mkdir()
    os.symlink("..", project / "loop" / "up")
    os.symlink("self.py", project / "self.py")  # a link to itself
    code, out, err = run(["."], project)
    no_traceback(out, err)
    assert code == 2, out + err
    assert "self.py" in out + err
    assert "good.py:8:" in out


def test_path_that_does_not_exist(project):
    code, out, err = run(["missing.py", "good.py"], project)
    no_traceback(out, err)
    assert code == 2
    assert any("missing.py" in line and "no such file" in line for line in (out + err).splitlines())
    assert "good.py:8:" in out


def test_empty_directory(project):
    (project / "empty").mkdir()
    code, out, err = run(["empty"], project)
    no_traceback(out, err)
    assert code == 2
    assert "no Python files found in empty" in err


def test_unreadable_file(project, monkeypatch):
    """A file the user may not read. Root ignores permission bits, so under root the denial is
    simulated at ``open()`` in the reader; otherwise the file really is ``chmod 000``."""
    bad = project / "secret.py"
    bad.write_text("x = 1\n", encoding="utf-8")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        real_open = open

        def denying_open(path, *args, **kwargs):
            if os.path.abspath(path) == str(bad):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(source, "open", denying_open, raising=False)
    else:
        bad.chmod(0)
    try:
        assert_bad_file(project, "secret.py", "permission denied")
    finally:
        bad.chmod(0o644)


# ---- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "table, problem",
    [
        ("[tool.recompile-lint]\nno-such-setting = 1\n", "no-such-setting: unknown setting"),
        ("[tool.recompile-lint]\nselect = 101\n", "select: expected a string or a list of strings"),
        ("[tool.recompile-lint]\nmax-depth = 'deep'\n", "max-depth: expected a non-negative integer"),
        ("[tool.recompile-lint]\nignore = ['RCL999']\n", "unknown rule code or prefix rcl999"),
        ("[tool.recompile-lint]\ncache = 'yes'\n", "cache: expected true or false"),
        ("[tool.recompile-lint]\nstart-server = 1\n", "start-server: expected true or false"),
    ],
    ids=["unknown-key", "wrong-type-list", "wrong-type-int", "unknown-code", "wrong-type-bool", "wrong-type-start-server"],
)
def test_invalid_config_section(project, table, problem):
    (project / "pyproject.toml").write_text(table, encoding="utf-8")
    code, out, err = run(["good.py"], project)
    no_traceback(out, err)
    assert code == 2
    assert "pyproject.toml" in err
    assert problem in err.lower()


def test_invalid_toml_named_with_config(project):
    (project / "pyproject.toml").write_text("[tool.recompile-lint\nselect = [\n", encoding="utf-8")
    code, out, err = run(["--config", "pyproject.toml", "good.py"], project)
    no_traceback(out, err)
    assert code == 2
    assert "pyproject.toml" in err and "invalid toml" in err.lower()


def test_config_file_that_does_not_exist(project):
    code, out, err = run(["--config", "nowhere.toml", "good.py"], project)
    no_traceback(out, err)
    assert code == 2
    assert "nowhere.toml" in err


# ---- options ---------------------------------------------------------------------------------


def test_output_file_in_missing_directory(project):
    code, out, err = run(["--output-file", "no/such/dir/report.txt", "good.py"], project)
    no_traceback(out, err)
    assert code == 2
    assert "no/such/dir/report.txt" in err


def test_unknown_format(project):
    code, out, err = run(["--format", "yaml", "good.py"], project)
    no_traceback(out, err)
    assert code == 2
    assert "yaml" in err and "--format" in err


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_unknown_code_option(project, option):
    code, out, err = run([option, "RCL999", "good.py"], project)
    no_traceback(out, err)
    assert code == 2
    assert option in err and "RCL999" in err


def test_unknown_option(project):
    code, out, err = run(["--no-such-option", "good.py"], project)
    assert code == 2
    assert "--no-such-option" in err


def test_unknown_rule_page(project):
    code, out, err = run(["rule", "RCL999"], project)
    assert code == 2
    assert "unknown rule" in err


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX subprocess")
def test_console_entry_point_bad_input_has_no_traceback(project):
    """The real process (not the in-process runner): a syntax error, exit 2, no traceback."""
    import subprocess

    (project / "legacy.py").write_text('print "x"\n', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "recompile_lint", "--no-cache", "legacy.py", "good.py"],
        cwd=project, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stdout + done.stderr
    assert "legacy.py:1:" in done.stdout + done.stderr
    assert "good.py:8:" in done.stdout


def test_deeply_nested_valid_code_is_linted(project):
    """A sum of 900 terms nests the syntax tree 900 deep; CPython compiles it, so it is linted
    (not reported as unparsable) and its finding is kept."""
    terms = " + ".join(["x"] * 900)
    (project / "deep.py").write_text(GOOD.replace("return x * step", f"return ({terms}) * step"), encoding="utf-8")
    code, out, err = run(["deep.py"], project)
    no_traceback(out, err)
    assert code == 1, out + err
    assert "deep.py:8:" in out and "RCL101" in out


def test_invalid_toml_found_automatically(project):
    """A broken pyproject.toml that holds our table is an error, not silently ignored."""
    (project / "pyproject.toml").write_text("[tool.recompile-lint]\nignore = ['RCL101'\n", encoding="utf-8")
    code, out, err = run(["good.py"], project)
    no_traceback(out, err)
    assert code == 2
    assert "pyproject.toml" in err and "invalid toml" in err.lower()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_named_pipe_with_py_name_is_never_read(project):
    """A FIFO named like a module (left by a tool, or planted) must not be opened: reading it
    blocks until a writer appears, so the run would never finish. Walking a directory skips
    it; naming it explicitly is an error."""
    from recompile_lint.discovery import discover

    os.mkfifo(project / "pipe.py")
    walked = discover([str(project)], ())
    assert str(project / "pipe.py") not in walked.files
    named = discover([str(project / "pipe.py")], ())
    assert named.files == () and len(named.errors) == 1


def test_a_removed_working_directory_is_an_error_not_a_traceback(tmp_path):
    """A shell left in a directory that was deleted: one clear line, exit 2."""
    import subprocess

    gone = tmp_path / "gone"
    gone.mkdir()
    script = "import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); from recompile_lint.frontends.main import run; sys.argv = ['recompile-lint', '.']; run()"
    env = {**os.environ, "RECOMPILE_LINT_NO_SERVER": "1"}
    got = subprocess.run([sys.executable, "-c", script, str(gone)], capture_output=True, text=True, env=env, timeout=120)
    assert got.returncode == 2, got.stderr
    assert "Traceback" not in got.stderr
    assert got.stderr.startswith("recompile-lint: error: the current directory cannot be used")
