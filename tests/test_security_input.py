"""Deep, huge and odd input: no crash, no hang, no traceback. Each case names the file and the
problem, still lints the other files, and exits 2 (the documented code for input errors)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from recompile_lint.analysis import parsing
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths
from recompile_lint.frontends.cli import main

from helpers import SEED_SOURCE
from measuring import run_measured


@pytest.fixture(autouse=True)
def user_cache(tmp_path_factory, monkeypatch) -> Path:
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home / "recompile-lint"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    (tmp_path / "good.py").write_text(SEED_SOURCE, encoding="utf-8")
    return tmp_path


def run(cwd: Path, *args: str) -> tuple[int, str, str]:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, list(args))
    finally:
        os.chdir(old)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def process(cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """The real command, in its own process: a crash is an exit status, not a dead test run."""
    environment = {**os.environ, "RECOMPILE_LINT_NO_SERVER": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "recompile_lint", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=environment)


def good_reported(out: str) -> bool:
    return "good.py:8:16: RCL101" in out


def compiled_with(condition: str) -> str:
    """The seed program with ``condition`` tested inside the compiled function."""
    return SEED_SOURCE.replace("    return x * step\n", f"    if {condition}:\n        pass\n    return x * step\n")


# ---- deep code ---------------------------------------------------------------------------------


def test_a_7100_term_and_chain_is_no_crash(project):
    """Today's reproduction (exit 139, no output, before the guard): the run ends, says which
    function it could not check and why, and reports the other file."""
    (project / "deep.py").write_text(compiled_with(" and ".join(["x"] * 7100)), encoding="utf-8")
    done = process(project, "--no-cache", "deep.py", "good.py")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "deep.py:7:" in done.stdout and "`poly` is only partly checked" in done.stdout and "7,10" in done.stdout
    assert good_reported(done.stdout)


def test_deep_code_within_the_bound_is_checked(project):
    """2,000 terms (libcst nests them 2,000 levels deep): parsed and checked, finding kept."""
    (project / "deep.py").write_text(compiled_with(" and ".join(["x"] * 2000)), encoding="utf-8")
    done = process(project, "--no-cache", "deep.py")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "deep.py:10:16: RCL101" in done.stdout


def test_a_constant_tested_many_times_among_many_loops_and_stores_is_linear(project):
    """A helper handed a constant and testing it 3,000 times between 3,000 loops, then storing
    it 3,000 times (270 KB): whether the constant still holds at each test is found once per
    name, not by pairing every store with every loop at every test (that took minutes)."""
    lines = ["import torch", "", "", "def helper(x, flag):"]
    for i in range(3000):
        lines += [f"    for _{i} in range(1):", "        pass", "    if flag:", "        x = x + 1"]
    lines += ["    flag = not flag"] * 3000 + ["    return x", "", "", "@torch.compile", "def f(x):", "    return helper(x, True)", ""]
    (project / "helper.py").write_text("\n".join(lines), encoding="utf-8")
    started = time.monotonic()
    done = process(project, "--no-cache", "-j", "1", "helper.py", "good.py", timeout=300)
    assert time.monotonic() - started < 60
    assert done.returncode == 1, done.stdout + done.stderr
    assert good_reported(done.stdout)


@pytest.mark.parametrize("chain", ["x" + "[0]" * 2500, " + ".join(["x"] * 2500), "x" + ".a" * 2500])
def test_a_chain_libcst_would_take_minutes_on_is_refused_quickly(project, chain):
    """A 2,500-link subscript chain is valid Python that libcst's parser would take minutes
    on: it is measured, refused with a reason, and the run goes on."""
    (project / "chain.py").write_text(compiled_with(chain), encoding="utf-8")
    started = time.monotonic()
    done = process(project, "--no-cache", "chain.py", "good.py", timeout=120)
    assert time.monotonic() - started < 60
    assert done.returncode == 2, done.stdout + done.stderr
    assert "skip it): an expression chains" in done.stdout
    assert good_reported(done.stdout)


def test_the_flake8_plugin_does_not_hang_on_deep_code(project):
    (project / "deep.py").write_text(compiled_with(" and ".join(["x"] * 7100)), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "RCL", "deep.py", "good.py"],
        cwd=project, capture_output=True, text=True, timeout=300, env={**os.environ, "RECOMPILE_LINT_NO_SERVER": "1"},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "good.py:8:16: RCL101" in done.stdout
    assert "Traceback" not in done.stderr


def test_a_thread_with_a_small_stack_parses_deep_code(project):
    """An editor may lint from a thread whose stack is small: parses move to a thread with a
    large one, and the rules' bound on nesting is lower there."""
    (project / "deep.py").write_text(compiled_with(" and ".join(["x"] * 7100)), encoding="utf-8")
    (project / "nested.py").write_text(compiled_with(" and ".join(["x"] * 200)), encoding="utf-8")
    outcome: list[object] = []

    def lint() -> None:
        try:
            outcome.append(lint_paths([str(project / "deep.py"), str(project / "nested.py")], Config(cache=False)))
        except BaseException as exc:  # noqa: BLE001 - reported below
            outcome.append(exc)

    previous = threading.stack_size(512 * 1024)
    try:
        thread = threading.Thread(target=lint)
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join(timeout=300)
    (result,) = outcome
    assert not isinstance(result, BaseException), repr(result)
    # deep.py's facts come from ``ast`` and stand: its guard-model finding is reported, and the
    # error says the rules that walk its libcst tree skipped it.
    assert sorted((Path(f.path).name, f.code) for f in result.findings) == [("deep.py", "RCL101"), ("nested.py", "RCL101")]
    assert [Path(e.path).name for e in result.errors] == ["deep.py"]


def test_the_shape_of_a_libcst_tree_is_measured_from_ast():
    import ast

    def shape(source: str) -> tuple[int, int]:
        return parsing.cst_shape(ast.parse(source), source)

    assert shape("y = a + b + c + d\n")[1] == 3  # three BinOps down the left operand
    assert shape("y = q.w.e.r\n")[1] == 3
    assert shape("y = q.w(1)[2] + 3\n")[1] == 4  # links of any kind: an upper bound
    assert shape("y = f(a + b, c + d)\n")[1] == 1  # arguments start chains of their own
    flat, _ = shape("x = a or b\n")
    assert shape("x = " + " or ".join("ab" * 50) + "\n")[0] == flat + 98  # libcst nests what ast keeps flat
    strings = "x = " + " ".join(["'a'"] * 3000) + "\n"
    assert shape(strings)[0] >= 2999


# ---- huge files --------------------------------------------------------------------------------


def test_a_50_mb_file_is_reported_not_parsed(project):
    """Today: 4 to 18 GB and minutes. A file over ``max-file-size`` (10 MiB) is an error
    naming it; the run stays small and the other files are linted."""
    line = "def f{}(x):\n    return torch.relu(x) + {}\n\n"
    with open(project / "huge.py", "w", encoding="utf-8") as handle:
        handle.write("import torch\n\n")
        number = 0
        while handle.tell() < 50_000_000:
            handle.write("".join(line.format(i, i) for i in range(number, number + 1000)))
            number += 1000
        handle.write("g = torch.compile(f0)\n")
    out_path = project.parent / "out.txt"
    with open(out_path, "wb") as out:
        result = run_measured(
            [sys.executable, "-m", "recompile_lint", "huge.py", "good.py"],
            cwd=project, stdout=out, env={**os.environ, "RECOMPILE_LINT_NO_SERVER": "1"},
        )
    output = out_path.read_text(encoding="utf-8")
    assert result.code == 2, output
    assert "huge.py: E902 too large to lint: 47.7 MiB, more than max-file-size (10 MiB)" in output
    assert good_reported(output)
    assert result.peak_bytes < 512 * 1024 * 1024, f"peak memory {result.peak_bytes} bytes"


def test_max_file_size_is_configurable(project):
    (project / "pyproject.toml").write_text("[tool.recompile-lint]\nmax-file-size = 0.0001\n", encoding="utf-8")
    code, out, err = run(project, "--no-cache", "good.py")
    assert code == 2, out + err
    assert "good.py: E902 too large to lint" in out and "more than max-file-size (104 bytes)" in out
    (project / "pyproject.toml").write_text("[tool.recompile-lint]\nmax-file-size = 'big'\n", encoding="utf-8")
    code, out, err = run(project, "--no-cache", "good.py")
    assert code == 2 and "max-file-size: expected a positive number of MiB" in err


def test_the_size_limit_holds_for_buffers_and_workers(project, monkeypatch):
    """An editor's buffer, and the worker processes that read files with ``-j``, apply the
    same limit as a read here."""
    from recompile_lint.analysis import parallel

    monkeypatch.setattr(parallel, "MIN_SELECT_BYTES", 0)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    (project / "other.py").write_text(SEED_SOURCE.replace("poly", "poly2"), encoding="utf-8")
    limit = Config(cache=False, max_file_bytes=100)
    result = lint_paths([str(project / "good.py"), str(project / "other.py")], Config(cache=False, jobs=2, max_file_bytes=100))
    assert sorted(Path(e.path).name for e in result.errors) == ["good.py", "other.py"]
    assert all("too large to lint" in e.message for e in result.errors)
    from recompile_lint.engine import lint_buffer

    buffered = lint_buffer(str(project / "good.py"), SEED_SOURCE.encode(), limit)
    assert [e.message.split(":")[0] for e in buffered.errors] == ["too large to lint"]


# ---- names and paths ---------------------------------------------------------------------------

needs_bytes_names = pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="needs a file system that takes any bytes as a name")


@needs_bytes_names
@pytest.mark.parametrize("cache", [True, False])
def test_a_file_name_that_is_not_utf8_anywhere_in_the_project(project, cache):
    """Today: an internal error and no findings at all (with the cache). Not named, it is
    simply not part of the run; named (a directory holding it), it is an error naming it
    (escaped) and the other files are linted."""
    sub = project / "sub"
    sub.mkdir()
    with open(os.path.join(os.fsencode(sub), b"caf\xe9.py"), "w", encoding="utf-8") as handle:
        handle.write(SEED_SOURCE)
    options = [] if cache else ["--no-cache"]
    code, out, err = run(project, *options, "good.py")
    assert code == 1, out + err
    assert good_reported(out)
    for output in ([], ["--format", "json"]):
        code, out, err = run(project, *options, *output, ".")
        assert code == 2, out + err
        assert "sub/caf\\xe9.py" in out + err and "not valid UTF-8" in out + err
        assert "good.py" in out and "RCL101" in out


def test_stdout_that_cannot_encode_a_path(project):
    """Today a traceback after the analysis. The report is written with escapes, the file
    is named in an error line, exit 2."""
    (project / "模型.py").write_text(SEED_SOURCE, encoding="utf-8")
    done = process(project, "--no-cache", "模型.py", "good.py", env={"PYTHONIOENCODING": "latin-1"})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "\\u6a21\\u578b.py:8:16: RCL101" in done.stdout
    assert "recompile-lint: error: \\u6a21\\u578b.py: its findings hold characters the output's encoding" in done.stderr
    assert good_reported(done.stdout)
    plain = process(project, "--no-cache", "模型.py", "good.py", env={"PYTHONIOENCODING": "utf-8"})
    assert plain.returncode == 1 and "模型.py:8:16: RCL101" in plain.stdout


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_symlink_loops_named_on_the_command_line(project):
    os.symlink("b.py", project / "a.py")
    os.symlink("a.py", project / "b.py")
    os.symlink("d", project / "d")
    done = process(project, "a.py", "d", "good.py")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "a.py" in done.stdout + done.stderr
    assert good_reported(done.stdout)


def test_an_unreadable_path_named_explicitly_does_not_stop_the_others(project, monkeypatch):
    """A directory this user may not enter (as root, simulated where the file system is
    asked: ``stat``, ``open``, listing): the file in it is an error, the others are linted."""
    secret = project / "secret"
    secret.mkdir()
    (secret / "x.py").write_text(SEED_SOURCE, encoding="utf-8")
    inside = str(secret) + os.sep

    def denied(path) -> bool:
        try:
            return os.path.abspath(os.fsdecode(path)).startswith(inside)
        except TypeError:
            return False

    def deny(function):
        def guarded(path, *args, **kwargs):
            if not isinstance(path, int) and denied(path):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return function(path, *args, **kwargs)

        return guarded

    import builtins

    for name in ("stat", "lstat", "open", "scandir", "listdir", "access"):
        monkeypatch.setattr(os, name, deny(getattr(os, name)))
    monkeypatch.setattr(builtins, "open", deny(builtins.open))
    for options in ([], ["--no-cache"]):
        code, out, err = run(project, *options, "secret/x.py", "good.py")
        assert code == 2, out + err
        assert "Traceback" not in out + err
        assert "secret/x.py" in out + err
        assert good_reported(out)
