"""A directory walk skips what .gitignore files ignore, as git would, without running git;
``--no-respect-gitignore`` (or ``respect-gitignore = false``) lints everything."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import SEED_SOURCE
from recompile_lint.config import ConfigError, load_config
from recompile_lint.discovery import discover
from recompile_lint.frontends.cli import main
from recompile_lint.gitignore import IgnoreRules, parse

TREE = {
    ".gitignore": "# generated code\ngenerated/\n*_pb2.py\n/top_only.py\n!keep_pb2.py\ndocs/**/*.py\n",
    "src/pkg/.gitignore": "scratch*.py\n!scratch_keep.py\nsub/deep.py\n",
    "src/pkg/model.py": "",
    "src/pkg/scratch1.py": "",
    "src/pkg/scratch_keep.py": "",
    "src/pkg/sub/deep.py": "",
    "src/pkg/sub/other.py": "",
    "src/api_pb2.py": "",
    "src/keep_pb2.py": "",
    "src/top_only.py": "",
    "top_only.py": "",
    "generated/gen.py": "",
    "src/generated/gen.py": "",
    "docs/a/b/example.py": "",
    "docs/conf.py": "",
    "main.py": "",
}
KEPT = {
    "src/pkg/model.py",
    "src/pkg/scratch_keep.py",
    "src/pkg/sub/other.py",
    "src/keep_pb2.py",
    "src/top_only.py",
    "main.py",
}


def make_tree(root: Path, git: bool = True) -> None:
    for name, text in TREE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if git:
        (root / ".git" / "info").mkdir(parents=True)
        (root / ".git" / "info" / "exclude").write_text("main_local.py\n", encoding="utf-8")
        (root / "main_local.py").write_text("", encoding="utf-8")


def found(root: Path, respect: bool = True, top: Path | None = None) -> set[str]:
    result = discover([str(top or root)], (".git",), str(root), respect_gitignore=respect)
    return {str(Path(p).resolve().relative_to(root.resolve())).replace("\\", "/") for p in result.files}


def test_nested_files_negations_anchors_and_directories(tmp_path: Path) -> None:
    make_tree(tmp_path)
    assert found(tmp_path) == KEPT
    everything = found(tmp_path, respect=False)
    assert everything == set(TREE) - {".gitignore", "src/pkg/.gitignore"} | {"main_local.py"}


def test_a_walk_below_the_top_uses_the_rules_above_it(tmp_path: Path) -> None:
    make_tree(tmp_path)
    assert found(tmp_path, top=tmp_path / "src" / "pkg") == {"src/pkg/model.py", "src/pkg/scratch_keep.py", "src/pkg/sub/other.py"}


def test_without_a_repository_the_project_roots_gitignore_counts(tmp_path: Path) -> None:
    make_tree(tmp_path, git=False)
    assert found(tmp_path) == KEPT


@pytest.mark.skipif(shutil.which("git") is None, reason="git is needed to compare with")
def test_the_walk_agrees_with_git(tmp_path: Path) -> None:
    make_tree(tmp_path, git=False)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".git" / "info").mkdir(exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("main_local.py\n", encoding="utf-8")
    (tmp_path / "main_local.py").write_text("", encoding="utf-8")
    listed = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "*.py"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert found(tmp_path) == set(listed.split())


@pytest.mark.parametrize(
    "pattern,path,is_dir,ignored",
    [
        ("*.py", "a/b.py", False, True),
        ("/b.py", "a/b.py", False, False),
        ("a/*.py", "a/b.py", False, True),
        ("a/*.py", "a/c/b.py", False, False),
        ("a/**/b.py", "a/x/y/b.py", False, True),
        ("a/**/b.py", "a/b.py", False, True),
        ("**/b.py", "x/b.py", False, True),
        ("build/", "build", True, True),
        ("build/", "build", False, False),
        ("b?.py", "bx.py", False, True),
        ("b[0-9].py", "b7.py", False, True),
        ("b[!0-9].py", "b7.py", False, False),
        ("\\#x.py", "#x.py", False, True),
        ("x.py\\ ", "x.py ", False, True),
        ("x.py   ", "x.py", False, True),
    ],
)
def test_patterns(pattern: str, path: str, is_dir: bool, ignored: bool) -> None:
    assert IgnoreRules(parse(pattern)).ignored(path, is_dir) is ignored


def test_the_option_and_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / ".gitignore").write_text("ignored/\n", encoding="utf-8")
    (tmp_path / "ignored").mkdir()
    (tmp_path / "ignored" / "seed.py").write_text(SEED_SOURCE, encoding="utf-8")
    (tmp_path / "main.py").write_text("x = 1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(main, ["--no-cache", "."]).exit_code == 0
    result = runner.invoke(main, ["--no-cache", "--no-respect-gitignore", "."])
    assert result.exit_code == 1 and "ignored/seed.py:8:16: RCL101" in result.stdout
    # A file named explicitly is linted even when ignored.
    assert runner.invoke(main, ["--no-cache", "ignored/seed.py"]).exit_code == 1
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n[tool.recompile-lint]\nrespect-gitignore = false\n', encoding="utf-8")
    assert runner.invoke(main, ["--no-cache", "."]).exit_code == 1
    assert runner.invoke(main, ["--no-cache", "--respect-gitignore", "."]).exit_code == 0
    (tmp_path / "pyproject.toml").write_text('[tool.recompile-lint]\nrespect-gitignore = "no"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="respect-gitignore: expected true or false"):
        load_config([str(tmp_path)])
