"""The pre-commit hooks: a valid manifest, and the lint hook run by pre-commit on a repository.

``pre-commit run`` selects files by ``types_or``, batches them and passes them to the hook's
``entry`` exactly as it would for an installed hook; the hook is declared here as a local
``system`` hook with the manifest's entry, so no environment has to be built. A complete
``pre-commit try-repo`` (it builds a virtualenv and installs this repository from the package
registry, about a minute) runs when RECOMPILE_LINT_TRY_REPO=1.
"""

from __future__ import annotations

import os
import re
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
    assert hook["entry"] == "recompile-lint check"  # a file called `verify` is not a subcommand
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


def documented(text: str) -> str:
    """A documented snippet with its placeholders filled: this checkout, its HEAD commit."""
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()
    return re.sub(r"<full sha of the commit[^>]*>", sha, text).replace("/path/to/recompile-lint", str(REPO))


@pytest.mark.skipif(os.environ.get("RECOMPILE_LINT_TRY_REPO") != "1", reason="set RECOMPILE_LINT_TRY_REPO=1: builds a virtualenv from the package registry (about a minute)")
def test_the_documented_config_pinned_to_a_commit_installs_and_runs_the_hook(tmp_path: Path) -> None:
    from test_readme_snippets import snippets

    lang, body = snippets()["pre-commit"]
    assert "<full sha of the commit" in body and "/path/to/recompile-lint" in body
    repo = make_repo(tmp_path)
    (repo / ".pre-commit-config.yaml").write_text(documented(body) + "\n", encoding="utf-8")
    git(repo, "add", ".")
    env = precommit_env(tmp_path)
    result = run_precommit(repo, env, "run", "recompile-lint", "--files", "bad.py", "good.py", timeout=900)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "bad.py:8:16: RCL101" in result.stdout and "good.py:" not in result.stdout
    assert "mutable reference" not in result.stdout + result.stderr  # a full sha is a fixed rev


@pytest.mark.skipif(os.environ.get("RECOMPILE_LINT_TRY_REPO") != "1", reason="set RECOMPILE_LINT_TRY_REPO=1: builds a virtualenv from the package registry (about a minute)")
def test_the_documented_try_repo_command_runs_the_checkout_hook(tmp_path: Path) -> None:
    doc = (REPO / "docs" / "integrations.md").read_text(encoding="utf-8")
    [line] = [line for line in doc.splitlines() if line.startswith("pre-commit try-repo ")]
    repo = make_repo(tmp_path)
    git(repo, "add", ".")
    argv = shlex.split(documented(line))
    result = run_precommit(repo, precommit_env(tmp_path), *argv[1:], timeout=900)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "bad.py:8:16: RCL101" in result.stdout and "good.py:" not in result.stdout


# Names a pull request may give its files, to steer a hook whose entry they are appended to.
# Each is a Python file to pre-commit (a `.py` name, or an executable with a python shebang).
MARKER = "MARKER-the-repository-code-ran"
SCRIPT = f"#!/usr/bin/env python3\nopen({MARKER!r}, 'w').write('ran')\n"
HOSTILE = {
    "verify": SCRIPT,  # was `recompile-lint verify ...`: imports and runs the repository's code
    "lsp": SCRIPT,  # was the language server, waiting on standard input for ever
    "explain": SCRIPT,  # was `explain`, reading the next file as a log
    "--exit-zero": SCRIPT,
    "--extend-exclude=*.py": SCRIPT,
    "--ignore=RCL": SCRIPT,
    # A file that is both valid Python and a configuration ignoring every rule.
    "--config=x.py": SCRIPT,
}
CONFIG_AS_PYTHON = '[tool.recompile-lint]\nignore = ["RCL"]\n'
# The module with the finding; it sorts after every hostile name, as pre-commit passes them.
# Importing it (what `verify` does) leaves the marker.
WORK = f"open({MARKER!r}, 'w').write('imported')\n" + BAD


def hostile_repo(root: Path, names: list[str]) -> Path:
    repo = root / "hostile"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (repo / "work.py").write_text(WORK, encoding="utf-8")
    (repo / "x.py").write_text(CONFIG_AS_PYTHON, encoding="utf-8")
    for name in names:
        path = repo / name
        path.write_text(HOSTILE[name], encoding="utf-8")
        path.chmod(0o755)
    return repo


def hook_command(hook_id: str) -> list[str]:
    """The manifest's entry, split as pre-commit splits it, with this environment's script."""
    entry = shlex.split(hooks()[hook_id]["entry"])
    return [os.path.join(os.path.dirname(sys.executable), entry[0]), *entry[1:]]


def run_entry(repo: Path, files: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, RECOMPILE_LINT_NO_SERVER="1")
    # Standard input left open and empty: a language server started by mistake waits on it.
    with subprocess.Popen(hook_command("recompile-lint") + files, cwd=repo, env=env, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        try:
            stdout, stderr = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
            pytest.fail(f"the hook did not end: {files}\n{stdout}{stderr}")
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_file_name_is_a_path_to_the_hook(tmp_path: Path, name: str) -> None:
    """The real entry, with the file names appended in the order pre-commit passes them."""
    repo = hostile_repo(tmp_path, [name])
    files = sorted([name, "work.py", "x.py"])
    result = run_entry(repo, files)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "work.py:9:16: RCL101" in result.stdout
    assert "Found 1 finding (1 error), 3 files checked." in result.stdout
    assert not (repo / MARKER).exists()


def test_every_hostile_name_at_once_is_a_path_to_the_hook(tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path, sorted(HOSTILE))
    result = run_entry(repo, sorted([*HOSTILE, "work.py", "x.py"]))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "work.py:9:16: RCL101" in result.stdout
    assert f"{len(HOSTILE) + 2} files checked" in result.stdout
    assert not (repo / MARKER).exists()


def test_pre_commit_runs_the_hook_on_hostile_names(tmp_path: Path) -> None:
    """pre-commit itself picks the files (all of them: names starting with `-` included)."""
    repo = hostile_repo(tmp_path, sorted(HOSTILE))
    hook = hooks()["recompile-lint"]
    local = {"id": hook["id"], "name": hook["name"], "entry": shlex.join(hook_command("recompile-lint")), "language": "system",
             "types_or": hook["types_or"], "require_serial": hook["require_serial"]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]}), encoding="utf-8")
    git(repo, "add", ".")
    env = precommit_env(tmp_path)
    env["RECOMPILE_LINT_NO_SERVER"] = "1"
    result = run_precommit(repo, env, "run", "recompile-lint", "--all-files", timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Failed" in result.stdout
    assert "work.py:9:16: RCL101" in result.stdout
    assert not (repo / MARKER).exists()


def test_the_verify_hook_takes_hostile_names_as_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`recompile-lint verify` gets the same treatment: its entry names the subcommand, and an
    option-like name of an existing file is a path (checked on the parsed arguments: running
    verify needs torch)."""
    from recompile_lint.frontends.cli import main, paths_in_place

    assert hook_command("recompile-lint-verify")[1:] == ["verify"]
    monkeypatch.chdir(hostile_repo(tmp_path, ["--exit-zero", "verify"]))
    verify = main.get_command(None, "verify")  # type: ignore[arg-type]
    args = ["--timeout", "--exit-zero", "--exit-zero", "--", "--jobs", "verify", "work.py"]
    # An option's value stays its value; a name after `--` stays where it is.
    assert paths_in_place(verify, args) == ["--timeout", "--exit-zero", os.path.join(".", "--exit-zero"), "--", "--jobs", "verify", "work.py"]
