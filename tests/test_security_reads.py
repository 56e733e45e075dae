"""Files the linter reads for itself (``.gitignore``, git's ``.git`` file and ``info/exclude``,
``pyproject.toml``) and source links, planted by a hostile repository: no link out of the
checkout followed, no pipe waited on, no device or huge file read to its end. Each case
finishes fast, names the file and why it was not read, and still lints the rest."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recompile_lint.config import ConfigError, load_config
from recompile_lint.report import FORMAT_NAMES
from recompile_lint.source import MAX_IGNORE_BYTES, SourceError, read_regular

from helpers import SEED_SOURCE

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="POSIX pipes and devices")

# A hang or an endless read on these fails the test at this bound instead of stalling it.
LIMIT_SECONDS = 60


def lint(cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "RECOMPILE_LINT_NO_SERVER": "1", "XDG_CACHE_HOME": str(cwd.parent / "xdg")}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "recompile_lint", "--no-cache", *args], cwd=cwd, capture_output=True, text=True, timeout=LIMIT_SECONDS, env=env)
    return done, time.monotonic() - started


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A checkout: ``.git``, a project file, a file with a finding, and a subdirectory whose
    ``ignored.py`` (with a finding too) an ignore file would hide."""
    root = tmp_path / "checkout"
    (root / ".git" / "info").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    (root / "good.py").write_text(SEED_SOURCE, encoding="utf-8")
    (root / "sub").mkdir()
    (root / "sub" / "ignored.py").write_text(SEED_SOURCE, encoding="utf-8")
    return root


def assert_not_read(done: subprocess.CompletedProcess, seconds: float, name: str, reason: str) -> None:
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert done.returncode == 2, output
    assert "good.py:8:16: RCL101" in done.stdout, output
    said = f"not read ({reason}): the ignore patterns in it are not applied"
    assert any(name in line and said in line for line in output.splitlines()), output
    assert seconds < 10, seconds


def test_a_committed_gitignore_link_to_a_device_is_not_followed(repo: Path) -> None:
    (repo / "sub" / ".gitignore").symlink_to("/dev/zero")
    done, seconds = lint(repo, ".")
    assert_not_read(done, seconds, os.path.join("sub", ".gitignore"), "a symbolic link to outside the project, not followed")
    # Its patterns are not applied: the file it might have hidden is linted.
    assert "ignored.py:8:16: RCL101" in done.stdout


def test_a_top_level_gitignore_link_to_a_device_is_not_followed(repo: Path) -> None:
    (repo / ".gitignore").symlink_to("/dev/zero")
    done, seconds = lint(repo, ".")
    assert_not_read(done, seconds, ".gitignore", "a symbolic link to outside the project, not followed")


@pytest.mark.parametrize("where", [".gitignore", "sub/.gitignore", ".git/info/exclude"])
def test_a_pipe_for_an_ignore_file_is_not_waited_on(repo: Path, where: str) -> None:
    os.mkfifo(repo / where)
    done, seconds = lint(repo, ".")
    assert_not_read(done, seconds, where.replace("/", os.sep) if where != ".git/info/exclude" else str(repo / ".git" / "info" / "exclude"), "not a regular file")


def test_a_worktree_gitdir_naming_a_pipe_or_a_directory_with_a_pipe_finishes(repo: Path, tmp_path: Path) -> None:
    (repo / ".git" / "info").rmdir()
    (repo / ".git").rmdir()
    gitdir = tmp_path / "gitdir"
    (gitdir / "info").mkdir(parents=True)
    os.mkfifo(gitdir / "info" / "exclude")
    (repo / ".git").write_text(f"gitdir: {gitdir}\n", encoding="utf-8")
    done, seconds = lint(repo, ".")
    assert_not_read(done, seconds, str(gitdir / "info" / "exclude"), "not a regular file")

    os.mkfifo(tmp_path / "pipe")
    (repo / ".git").write_text(f"gitdir: {tmp_path / 'pipe'}\n", encoding="utf-8")
    done, seconds = lint(repo, ".")
    assert done.returncode == 1 and "good.py:8:16: RCL101" in done.stdout and seconds < 10, done.stdout + done.stderr


def test_a_pipe_for_the_git_file_itself_is_not_waited_on(repo: Path) -> None:
    (repo / ".git" / "info").rmdir()
    (repo / ".git").rmdir()
    os.mkfifo(repo / ".git")
    done, seconds = lint(repo, ".")
    assert_not_read(done, seconds, str(repo / ".git"), "not a regular file")


def test_a_huge_gitignore_is_not_read(repo: Path) -> None:
    with open(repo / "sub" / ".gitignore", "w", encoding="utf-8") as handle:
        line = "ignored.py\n" * 1000
        while handle.tell() <= MAX_IGNORE_BYTES:
            handle.write(line)
    done, seconds = lint(repo, ".")
    assert_not_read(done, seconds, os.path.join("sub", ".gitignore"), "larger than 1 MiB")
    assert "ignored.py:8:16: RCL101" in done.stdout


def test_a_gitignore_link_inside_the_checkout_is_followed(repo: Path) -> None:
    (repo / "shared-ignore").write_text("ignored.py\n", encoding="utf-8")
    (repo / "sub" / ".gitignore").symlink_to(repo / "shared-ignore")
    done, _ = lint(repo, ".")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "good.py:8:16: RCL101" in done.stdout and "ignored.py" not in done.stdout


# ---- configuration --------------------------------------------------------------------------


def test_a_pyproject_link_out_of_the_project_is_an_error_naming_it(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.toml"
    outside.write_text("[tool.recompile-lint]\nselect = ['RCL1']\n", encoding="utf-8")
    (repo / "pyproject.toml").unlink()
    (repo / "pyproject.toml").symlink_to(outside)
    with pytest.raises(ConfigError, match=r"pyproject\.toml: cannot read: a symbolic link to outside the project, not followed"):
        load_config([str(repo / "good.py")])
    # The same file named by the user is read: the user chose it.
    assert load_config([str(repo / "good.py")], explicit=str(repo / "pyproject.toml")).select == ("RCL1",)


def test_a_pyproject_link_inside_the_project_is_followed(repo: Path) -> None:
    (repo / "config").mkdir()
    (repo / "config" / "shared.toml").write_text("[tool.recompile-lint]\nselect = ['RCL1']\n", encoding="utf-8")
    (repo / "pyproject.toml").unlink()
    (repo / "pyproject.toml").symlink_to(repo / "config" / "shared.toml")
    assert load_config([str(repo / "good.py")]).select == ("RCL1",)


def test_a_pyproject_pipe_is_not_waited_on(repo: Path) -> None:
    (repo / "pyproject.toml").unlink()
    os.mkfifo(repo / "pyproject.toml")
    done, seconds = lint(repo, ".")
    assert done.returncode == 2 and "not a regular file" in done.stderr and seconds < 10, done.stdout + done.stderr


# ---- the helper -------------------------------------------------------------------------------


def test_read_regular_refuses_links_pipes_devices_and_large_files(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"x" * 10)
    (tmp_path / "link").symlink_to(tmp_path / "file")
    os.mkfifo(tmp_path / "pipe")
    assert read_regular(str(tmp_path / "file"), 10) == b"x" * 10
    cases = [
        (str(tmp_path / "file"), 9, {}, "larger than 9 bytes"),
        (str(tmp_path / "link"), 10, {}, "a symbolic link, not followed"),
        (str(tmp_path / "link"), 10, {"within": str(tmp_path / "sub")}, "a symbolic link to outside the project, not followed"),
        (str(tmp_path / "pipe"), 10, {}, "not a regular file"),
        ("/dev/zero", 10, {}, "not a regular file"),
        (str(tmp_path), 10, {}, "not a regular file"),
        (str(tmp_path / "missing"), 10, {}, "no such file"),
    ]
    for path, limit, options, reason in cases:
        with pytest.raises(SourceError, match=reason):
            read_regular(path, limit, **options)
    assert read_regular(str(tmp_path / "link"), 10, within=str(tmp_path)) == b"x" * 10
    assert read_regular(str(tmp_path / "link"), 10, follow_links=True) == b"x" * 10


# ---- source links out of the project ----------------------------------------------------------

SECRET = "sk-live-7f3a9c0e51d24b8e"


@pytest.fixture
def leaking_checkout(tmp_path: Path) -> Path:
    """``model.py -> ../private/train.py``: a file outside the checkout, holding a finding
    on a line with a secret."""
    private = tmp_path / "private"
    private.mkdir()
    (private / "train.py").write_text(SEED_SOURCE.replace("return x * step", f"return x * step  # {SECRET}"), encoding="utf-8")
    root = tmp_path / "checkout"
    root.mkdir()
    (root / ".git").mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    (root / "good.py").write_text(SEED_SOURCE, encoding="utf-8")
    (root / "model.py").symlink_to(Path("..") / "private" / "train.py")
    return root


@pytest.mark.parametrize("output_format", sorted(FORMAT_NAMES))
@pytest.mark.parametrize("named", [False, True])
def test_a_source_link_out_of_the_project_is_reported_never_read(leaking_checkout: Path, output_format: str, named: bool) -> None:
    paths = ["good.py", "model.py"] if named else ["."]
    done, _ = lint(leaking_checkout, "--output-format", output_format, *paths)
    output = done.stdout + done.stderr
    assert SECRET not in output and "private" not in output, output
    assert "Traceback" not in output, output
    assert done.returncode == 2, output
    assert "model.py" in output and "outside the project" in output, output


def test_a_source_link_inside_the_project_is_linted(leaking_checkout: Path) -> None:
    (leaking_checkout / "model.py").unlink()
    (leaking_checkout / "lib").mkdir()
    (leaking_checkout / "lib" / "impl.py").write_text(SEED_SOURCE, encoding="utf-8")
    (leaking_checkout / "model.py").symlink_to(Path("lib") / "impl.py")
    done, _ = lint(leaking_checkout, ".")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "model.py:8:16: RCL101" in done.stdout and "outside the project" not in done.stdout + done.stderr
