"""Linting never modifies the linted tree: no file is rewritten, touched, created or removed,
except the documented facts cache (``.recompile-lint-cache/`` in the project root) when
caching is on. In particular no ``__pycache__`` appears: the linter never imports user code."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from recompile_lint.frontends.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CACHE_DIR = ".recompile-lint-cache"


def snapshot(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every entry under ``root``: (content digest or kind, permission bits, mtime in ns)."""
    out: dict[str, tuple[str, int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            info = full.lstat()
            if full.is_symlink():
                digest = "link:" + os.readlink(full)
            elif full.is_dir():
                digest = "dir"
            else:
                digest = hashlib.sha256(full.read_bytes()).hexdigest()
            out[str(full.relative_to(root))] = (digest, info.st_mode, info.st_mtime_ns)
    return out


def changes(before: dict, after: dict) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A project holding a copy of fixtures (flagged and fixed files, a package)."""
    root = tmp_path / "project"
    for part in ("rcl1xx", "projects"):
        shutil.copytree(FIXTURES / part, root / "fixtures" / part)
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    # A file the linter must read but can flag nothing in, and one it cannot parse.
    (root / "broken.py").write_text("def f(:\n", encoding="utf-8")
    return root


def lint(root: Path, *args: str) -> int:
    old = os.getcwd()
    os.chdir(root)
    try:
        result = CliRunner().invoke(main, ["--select", "RCL", *args, "."])
    finally:
        os.chdir(old)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    report = Path(args[args.index("--output-file") + 1]).read_text(encoding="utf-8") if "--output-file" in args else result.output
    assert "RCL101" in report, "the fixtures' findings must be reported"
    return result.exit_code


def test_no_cache_changes_nothing(tree, tmp_path):
    before = snapshot(tree)
    assert lint(tree, "--no-cache") == 2  # broken.py is an input error
    assert lint(tree, "--no-cache", "--format", "sarif", "--output-file", str(tmp_path / "out.sarif")) == 2
    assert changes(before, snapshot(tree)) == []
    assert not (tree / CACHE_DIR).exists()


def test_cache_is_the_only_change(tree, tmp_path):
    before = snapshot(tree)
    report = tmp_path / "report.json"
    assert lint(tree, "--format", "json", "--output-file", str(report)) == 2
    assert lint(tree, "--statistics") == 2  # a second run reads the cache back
    changed = changes(before, snapshot(tree))
    assert changed, "caching is on by default: the cache directory should have been created"
    outside = [c for c in changed if c != CACHE_DIR and not c.startswith(CACHE_DIR + os.sep)]
    assert outside == [], f"linting changed files outside {CACHE_DIR}: {outside}"
    assert not any("__pycache__" in c for c in changed)


def test_cache_dir_elsewhere_leaves_the_tree_alone(tree, tmp_path):
    before = snapshot(tree)
    assert lint(tree, "--cache-dir", str(tmp_path / "cache")) == 2
    assert changes(before, snapshot(tree)) == []
