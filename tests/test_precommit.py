"""The pre-commit hooks: a valid manifest, and the lint hook run by pre-commit on a repository.

``pre-commit run`` selects files by ``types_or``, batches them and passes them to the hook's
``entry`` exactly as it would for an installed hook; the hook is declared here as a local
``system`` hook with the manifest's entry, so no environment has to be built. A complete
``pre-commit try-repo`` (it builds a virtualenv and installs this repository from the package
registry, about a minute) runs when RECOMPILE_LINT_TRY_REPO=1.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pre_commit.clientlib import load_manifest

from helpers import SEED_SOURCE

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / ".pre-commit-hooks.yaml"

BAD = SEED_SOURCE

GOOD = """\
import torch

SCALE = 3


@torch.compile
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * SCALE
"""


def hooks() -> dict[str, dict]:
    return {hook["id"]: hook for hook in load_manifest(str(MANIFEST))}


def test_manifest_declares_the_lint_hook_without_torch() -> None:
    hook = hooks()["recompile-lint"]
    assert hook["entry"] == "recompile-lint"
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "pyi"]
    assert hook["require_serial"] is True
    assert hook["pass_filenames"] is True
    assert not any("torch" in dep for dep in hook["additional_dependencies"])
    assert hook["stages"] == []  # every stage pre-commit runs by default


def test_manifest_declares_verify_on_the_manual_stage() -> None:
    hook = hooks()["recompile-lint-verify"]
    assert hook["entry"] == "recompile-lint verify"
    assert hook["stages"] == ["manual"]
    assert hook["language"] == "python"


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (repo / "bad.py").write_text(BAD, encoding="utf-8")
    (repo / "good.py").write_text(GOOD, encoding="utf-8")
    (repo / "notes.txt").write_text("not python\n", encoding="utf-8")
    return repo


def precommit_env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PRE_COMMIT_HOME"] = str(root / "pre-commit-home")
    # The hook's entry must resolve to this interpreter's console script.
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    for name in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE"):
        env.pop(name, None)
    env.setdefault("GIT_AUTHOR_NAME", "test")
    env.setdefault("GIT_AUTHOR_EMAIL", "test@example.invalid")
    env.setdefault("GIT_COMMITTER_NAME", "test")
    env.setdefault("GIT_COMMITTER_EMAIL", "test@example.invalid")
    return env


def run_precommit(repo: Path, env: dict[str, str], *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def local_hook_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A git repository whose config runs the manifest's lint hook through pre-commit."""
    repo = make_repo(tmp_path)
    hook = hooks()["recompile-lint"]
    entry = shlex.split(hook["entry"])
    local = {
        "id": hook["id"],
        "name": hook["name"],
        "entry": shlex.join([os.path.join(os.path.dirname(sys.executable), entry[0]), *entry[1:]]),
        "language": "system",
        "types_or": hook["types_or"],
        "require_serial": hook["require_serial"],
    }
    config = {"repos": [{"repo": "local", "hooks": [local]}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    git(repo, "add", ".")
    return repo, precommit_env(tmp_path)


def test_hook_reports_a_planted_finding(local_hook_repo: tuple[Path, dict[str, str]]) -> None:
    repo, env = local_hook_repo
    result = run_precommit(repo, env, "run", "recompile-lint", "--files", "bad.py", "good.py", "notes.txt")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "bad.py:8:16: RCL101" in result.stdout
    assert "good.py:" not in result.stdout
    assert "notes.txt" not in result.stdout  # types_or keeps non-Python files away


def test_hook_passes_a_clean_changed_file(local_hook_repo: tuple[Path, dict[str, str]]) -> None:
    repo, env = local_hook_repo
    result = run_precommit(repo, env, "run", "recompile-lint", "--files", "good.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed" in result.stdout


def test_hook_passes_with_no_python_files(local_hook_repo: tuple[Path, dict[str, str]]) -> None:
    repo, env = local_hook_repo
    result = run_precommit(repo, env, "run", "recompile-lint", "--files", "notes.txt")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no files to check" in result.stdout


def test_hook_sees_the_unchanged_module_that_mutates_the_global(local_hook_repo: tuple[Path, dict[str, str]]) -> None:
    """pre-commit passes only the changed file; the mutation in another module still counts."""
    repo, env = local_hook_repo
    (repo / "bad.py").write_text(BAD.split("\n\ndef main")[0] + "\n", encoding="utf-8")
    (repo / "train.py").write_text(
        "import torch\n\nimport bad\n\n\ndef main() -> None:\n    for i in range(10):\n        bad.step = i\n        bad.poly(torch.ones(3))\n",
        encoding="utf-8",
    )
    git(repo, "add", ".")
    result = run_precommit(repo, env, "run", "recompile-lint", "--files", "bad.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "bad.py:8:16: RCL101" in result.stdout


@pytest.mark.skipif(os.environ.get("RECOMPILE_LINT_TRY_REPO") != "1", reason="set RECOMPILE_LINT_TRY_REPO=1: builds a virtualenv from the package registry (about a minute)")
def test_try_repo_installs_and_runs_the_hook(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    git(repo, "add", ".")
    env = precommit_env(tmp_path)
    result = run_precommit(repo, env, "try-repo", str(REPO), "recompile-lint", "--files", "bad.py", "good.py", timeout=900)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "bad.py:8:16: RCL101" in result.stdout
    assert "good.py:" not in result.stdout
