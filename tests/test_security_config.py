"""Configuration comes from the linted project only, and a repository's configuration cannot
make the linter write elsewhere or start more workers than the machine has cores."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from recompile_lint import config as config_module
from recompile_lint.analysis import parallel
from recompile_lint.config import Config, ConfigError, find_pyproject, load_config
from recompile_lint.engine import lint_paths
from recompile_lint.frontends.cli import main

from helpers import SEED_SOURCE


@pytest.fixture(autouse=True)
def user_cache(tmp_path_factory, monkeypatch) -> Path:
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home / "recompile-lint"


def run(cwd: Path, *args: str) -> tuple[int, str, str]:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, list(args))
    finally:
        os.chdir(old)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def checkout(root: Path, pyproject: str | None = None) -> Path:
    """A git checkout (``.git`` marks its root) with one file holding one RCL101 finding."""
    root.mkdir(parents=True, exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    if pyproject is not None:
        (root / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    (root / "train.py").write_text(SEED_SOURCE, encoding="utf-8")
    return root


HOSTILE = """\
[tool.recompile-lint]
ignore = ["RCL"]
cache-dir = "{elsewhere}"
jobs = 32
"""


@pytest.mark.parametrize("own", [None, "[project]\nname = 'victim'\n"], ids=["no-pyproject", "pyproject-without-our-table"])
def test_a_pyproject_above_the_checkout_is_never_read(tmp_path, own):
    """The attack: a ``pyproject.toml`` in a directory above the checkout (a shared build
    directory, a home directory) that silences every finding and moves the cache."""
    elsewhere = tmp_path / "moved-cache"
    (tmp_path / "pyproject.toml").write_text(HOSTILE.format(elsewhere=elsewhere), encoding="utf-8")
    repo = checkout(tmp_path / "work" / "repo", own)
    code, out, err = run(repo, "train.py")
    assert code == 1, out + err
    assert "train.py:8:16: RCL101" in out
    assert not elsewhere.exists()
    assert find_pyproject([str(repo / "train.py")]) is None
    assert load_config([str(repo / "train.py")]).source is None


def test_the_closest_configuration_in_the_project_wins(tmp_path):
    repo = checkout(tmp_path / "repo", "[tool.recompile-lint]\nignore = ['RCL101']\n")
    sub = repo / "src" / "pkg"
    sub.mkdir(parents=True)
    (sub / "train.py").write_text(SEED_SOURCE, encoding="utf-8")
    # A directory between the file and the root, without a marker of its own: still the
    # project's, its pyproject is read (the closest one with our table).
    (repo / "src" / "pyproject.toml").write_text("[tool.recompile-lint]\nselect = ['RCL101']\n", encoding="utf-8")
    assert find_pyproject([str(sub / "train.py")]) == repo / "src" / "pyproject.toml"
    assert find_pyproject([str(repo / "train.py")]) == repo / "pyproject.toml"
    code, out, _ = run(repo, "src/pkg/train.py")
    assert code == 1 and "RCL101" in out


def test_a_symlink_loop_named_on_the_command_line_is_an_error_not_a_traceback(tmp_path):
    repo = checkout(tmp_path / "repo", "[project]\nname = 'victim'\n")
    (repo / "loop.py").symlink_to("loop.py")
    code, out, err = run(repo, "loop.py", "train.py")
    assert code == 2, out + err
    assert "Traceback" not in out + err
    assert any("loop.py" in line for line in err.splitlines() + out.splitlines())
    assert "train.py:8:16: RCL101" in out


# ---- cache-dir ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["{outside}", "../outside-cache", "link/cache"])
def test_a_cache_dir_outside_the_project_is_an_error_naming_the_key(tmp_path, value):
    outside = tmp_path / "outside-cache"
    repo = checkout(tmp_path / "repo", "[tool.recompile-lint]\ncache-dir = '" + value.format(outside=outside) + "'\n")
    (repo / "link").symlink_to(tmp_path, target_is_directory=True)  # inside, leading outside
    code, out, err = run(repo, "train.py")
    assert code == 2, out + err
    assert "pyproject.toml" in err and "cache-dir" in err and "outside the project" in err
    assert not outside.exists() and not (tmp_path / "cache").exists()


def test_a_cache_dir_inside_the_project_is_used_relative_to_the_pyproject(tmp_path, monkeypatch):
    repo = checkout(tmp_path / "repo", "[tool.recompile-lint]\ncache-dir = 'build/lint-cache'\n")
    (repo / "sub").mkdir()
    code, out, _ = run(repo / "sub", "../train.py")
    assert code == 1, out
    assert list((repo / "build" / "lint-cache").glob("facts-*/*"))
    assert not (repo / "sub" / "build").exists()


def test_the_command_line_cache_dir_may_point_anywhere(tmp_path):
    repo = checkout(tmp_path / "repo", "[tool.recompile-lint]\nselect = ['RCL']\n")
    elsewhere = tmp_path / "my-cache"
    code, out, _ = run(repo, "--cache-dir", str(elsewhere), "train.py")
    assert code == 1, out
    assert list(elsewhere.glob("facts-*/*"))


# ---- unreadable and undecodable configuration --------------------------------------------------


def test_an_undecodable_pyproject_with_our_table_is_an_error(tmp_path):
    repo = checkout(tmp_path / "repo")
    (repo / "pyproject.toml").write_bytes(b"[tool.recompile-lint]\nignore = ['RCL101']  # caf\xe9\n")
    code, out, err = run(repo, "train.py")
    assert code == 2, out + err
    assert "pyproject.toml" in err and "not UTF-8" in err


def test_an_undecodable_pyproject_without_our_table_is_not_ours(tmp_path):
    repo = checkout(tmp_path / "repo")
    (repo / "pyproject.toml").write_bytes(b"[project]\nname = 'caf\xe9'\n")
    code, out, err = run(repo, "train.py")
    assert code == 1, out + err
    assert "RCL101" in out


@pytest.mark.parametrize("kind", ["directory", "fifo", "denied"])
def test_an_unreadable_pyproject_is_an_error_naming_it(tmp_path, kind, monkeypatch):
    """Whatever it holds cannot be known: it is an error, never silently skipped (and a pipe
    named pyproject.toml is not opened for a read that would block)."""
    repo = checkout(tmp_path / "repo")
    target = repo / "pyproject.toml"
    if kind == "directory":
        target.mkdir()
    elif kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("needs named pipes")
        os.mkfifo(target)
    else:
        target.write_text("[tool.recompile-lint]\nignore = ['RCL101']\n", encoding="utf-8")
        real_open = os.open

        def denying(path, *args, **kwargs):
            if os.fspath(path) == str(target):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(config_module.os, "open", denying)
    code, out, err = run(repo, "train.py")
    assert code == 2, out + err
    assert str(target.name) in err and "cannot read" in err
    assert "Traceback" not in out + err


def test_a_tool_value_that_is_not_a_table_is_not_our_table(tmp_path):
    repo = checkout(tmp_path / "repo", "tool = 1\n")
    code, out, err = run(repo, "train.py")
    assert code == 1, out + err


# ---- jobs --------------------------------------------------------------------------------------


def test_jobs_are_clamped_to_the_cores(tmp_path, monkeypatch):
    """``jobs = 32`` in a repository's configuration: never more workers than cores."""
    assert parallel.effective_jobs(32) == parallel.usable_cores()
    assert parallel.effective_jobs(0) == parallel.usable_cores()
    assert parallel.effective_jobs(1) == 1
    repo = checkout(tmp_path / "repo", "[tool.recompile-lint]\njobs = 32\n")
    for number in range(6):
        (repo / f"mod{number}.py").write_text(SEED_SOURCE.replace("poly", f"poly{number}"), encoding="utf-8")
    started: list[int] = []
    real_pool = parallel.ProcessPoolExecutor

    def recording(*args, **kwargs):
        started.append(kwargs.get("max_workers") or args[0])
        return real_pool(*args, **kwargs)

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", recording)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(parallel, "MIN_SELECT_BYTES", 0)
    config = load_config([str(repo)])
    assert config.jobs == 32
    result = lint_paths([str(repo)], Config(jobs=config.jobs, cache=False))
    assert len(result.findings) == 7
    if parallel.usable_cores() > 1:
        assert started, "no worker pool was started"
    assert all(count <= parallel.usable_cores() for count in started)


def test_load_config_errors_are_config_errors(tmp_path):
    repo = checkout(tmp_path / "repo", "[tool.recompile-lint]\ncache-dir = '/'\n")
    with pytest.raises(ConfigError, match="cache-dir"):
        load_config([str(repo / "train.py")])
