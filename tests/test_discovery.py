"""Which files a directory walk finds: exactly those the exclude patterns leave, file by file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from recompile_lint.config import DEFAULT_EXCLUDES
from recompile_lint.discovery import PYTHON_SUFFIXES, discover, is_excluded, relative_to


def reference(top: str, excludes, root):
    """The definition: every regular Python file under ``top`` (not through links to
    directories) such that neither it nor a directory on the way is excluded."""
    files, broken = [], []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if not is_excluded(relative_to(os.path.join(dirpath, d), root), excludes)]
        for name in filenames:
            full = os.path.join(dirpath, name)
            if not name.endswith(PYTHON_SUFFIXES) or is_excluded(relative_to(full, root), excludes):
                continue
            if os.path.isfile(full):
                files.append(full)
            elif os.path.islink(full) and not os.path.exists(full):
                broken.append(full)
    return sorted(files), sorted(broken)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for rel in [
        "a.py", "b.pyi", "notes.txt", "pkg/__init__.py", "pkg/mod.py", "pkg/build/gen.py",
        "build/out.py", "src/nn/layers.py", "src/nn/deep/x.py", "src/other/nn.py", "src/test_a.py",
        "tests/test_b.py", ".venv/lib/site.py", "docs/a/b/c.py", "x.egg-info/m.py", "dir.py/inner.py",
    ]:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n", encoding="utf-8")
    (root / "link_to_pkg").symlink_to(root / "pkg", target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "linked.py").symlink_to(root / "a.py")
    (root / "dangling.py").symlink_to(root / "missing.py")
    (root / "build" / "dangling.py").symlink_to(root / "missing.py")
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "pipe.py")
    return root


@pytest.mark.parametrize("extra", [(), ("nn",), ("*/nn/*",), ("test_*",), ("a/b",), ("src/nn/",), ("pkg",)])
@pytest.mark.parametrize("where", ["root", "parent", "elsewhere", "none", "inside"])
def test_the_walk_finds_what_the_patterns_leave(tree: Path, extra, where) -> None:
    excludes = tuple(DEFAULT_EXCLUDES) + extra
    root = {"root": str(tree), "parent": str(tree.parent), "elsewhere": "/nonexistent/place", "none": None, "inside": str(tree / "src")}[where]
    for top in (str(tree), str(tree / "src"), str(tree / "build")):
        found = discover([top], excludes, root)
        files, broken = reference(top, excludes, root)
        assert list(found.files) == files, (top, root, extra)
        assert sorted(e.path for e in found.errors if e.message == "broken symbolic link") == broken
        assert all(e.message == "broken symbolic link" for e in found.errors)
