"""Every copy-paste snippet in docs/integrations.md works as printed.

Snippets are the fenced blocks that follow a ``<!-- snippet: NAME -->`` marker.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from pre_commit.clientlib import load_config, load_manifest
from helpers import SEED_SOURCE

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "integrations.md"
SNIPPET = re.compile(r"<!-- snippet: (?P<name>[\w-]+) -->\n```(?P<lang>\w*)\n(?P<body>.*?)\n```", re.S)
SCHEMA = json.loads((REPO / "tests" / "data" / "sarif-2.1.0.json").read_text(encoding="utf-8"))
EXPECTED = {"pre-commit", "pre-commit-verify", "pre-commit-server", "flake8", "ruff", "github-actions", "github-annotations", "statistics"}

SOURCE = SEED_SOURCE


def snippets() -> dict[str, tuple[str, str]]:
    """NAME -> (language, body) of every marked snippet."""
    found: dict[str, tuple[str, str]] = {}
    for match in SNIPPET.finditer(DOC.read_text(encoding="utf-8")):
        assert match["name"] not in found, f"snippet {match['name']} appears twice"
        found[match["name"]] = (match["lang"], match["body"])
    return found


def command_line(body: str) -> list[str]:
    """The single command of a console snippet, as argv."""
    lines = [line for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert len(lines) == 1, body
    return shlex.split(lines[0].lstrip("$ "))


def run_tool(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a documented command with this interpreter's copy of the tool it names."""
    modules = {"recompile-lint": "recompile_lint", "flake8": "flake8"}
    assert argv[0] in modules, argv
    return subprocess.run([sys.executable, "-m", modules[argv[0]], *argv[1:]], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with one finding in ``src/`` (the documented snippets lint ``src/`` or ``.``)."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(SOURCE, encoding="utf-8")
    return tmp_path


def test_every_integration_has_its_snippet() -> None:
    assert set(snippets()) == EXPECTED


@pytest.mark.parametrize("name", ["pre-commit", "pre-commit-verify", "pre-commit-server"])
def test_pre_commit_snippets_are_valid_configs_naming_our_hooks(name: str, tmp_path: Path) -> None:
    lang, body = snippets()[name]
    assert lang == "yaml"
    config_file = tmp_path / ".pre-commit-config.yaml"
    config_file.write_text(body + "\n", encoding="utf-8")
    config = load_config(str(config_file))  # pre-commit's own validation
    hook_ids = {hook["id"] for hook in load_manifest(str(REPO / ".pre-commit-hooks.yaml"))}
    [repo] = config["repos"]
    used = [hook["id"] for hook in repo["hooks"]]
    assert used and set(used) <= hook_ids
    if name == "pre-commit-verify":
        [verify] = [hook for hook in repo["hooks"] if hook["id"] == "recompile-lint-verify"]
        # torch is the user's choice, and it is pinned.
        assert any(re.fullmatch(r"torch==[\d.]+", dep) for dep in verify["additional_dependencies"])


def test_pre_commit_server_snippet_passes_arguments_the_hook_takes(project: Path) -> None:
    [repo] = yaml.safe_load(snippets()["pre-commit-server"][1])["repos"]
    [hook] = repo["hooks"]
    [manifest] = [h for h in load_manifest(str(REPO / ".pre-commit-hooks.yaml")) if h["id"] == hook["id"]]
    # pre-commit runs the entry, then the args, then the changed files (servers off here).
    env = {**os.environ, "RECOMPILE_LINT_NO_SERVER": "1"}
    argv = [*shlex.split(manifest["entry"]), *hook["args"], os.path.join("src", "train.py")]
    assert argv[0] == "recompile-lint"
    result = subprocess.run([sys.executable, "-m", "recompile_lint", *argv[1:]], cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    assert "RCL101" in result.stdout


def test_flake8_snippet_reports_the_finding(project: Path) -> None:
    lang, body = snippets()["flake8"]
    argv = command_line(body)
    assert argv[:2] == ["flake8", "--select"]
    result = run_tool(argv, project)
    assert result.returncode == 1, result.stderr
    assert f"{os.path.join('src', 'train.py')}:8:16: RCL101 " in result.stdout


def test_ruff_snippet_keeps_our_codes_external() -> None:
    lang, body = snippets()["ruff"]
    assert lang == "toml"
    data = tomllib.loads(body)
    assert "RCL" in data["tool"]["ruff"]["lint"]["external"]


def test_github_actions_workflow_writes_valid_sarif_and_uploads_it(project: Path) -> None:
    lang, body = snippets()["github-actions"]
    assert lang == "yaml"
    workflow = yaml.safe_load(body)
    [job] = workflow["jobs"].values()
    assert job["permissions"]["security-events"] == "write"  # upload-sarif needs it
    steps = job["steps"]
    [lint] = [s for s in steps if "recompile-lint" in s.get("run", "") and "--format" in s["run"]]
    [upload] = [s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert steps.index(upload) > steps.index(lint)
    assert upload.get("if") == "always()"  # findings fail the lint step; upload them anyway
    argv = shlex.split(lint["run"])
    output = argv[argv.index("-o") + 1]
    assert upload["with"]["sarif_file"] == output
    result = run_tool(argv, project)
    assert result.returncode == 1, result.stderr
    log = json.loads((project / output).read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    [finding] = log["runs"][0]["results"]
    assert finding["ruleId"] == "RCL101"
    assert finding["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/train.py"


def test_github_annotations_snippet_prints_workflow_commands(project: Path) -> None:
    argv = command_line(snippets()["github-annotations"][1])
    result = run_tool(argv, project)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("::error file=src/train.py,line=8,col=16,")


def test_statistics_snippet_counts_findings_per_rule(project: Path) -> None:
    argv = command_line(snippets()["statistics"][1])
    (project / "src" / "other.py").write_text(SOURCE.replace("poly", "poly2"), encoding="utf-8")
    result = run_tool(argv, project)
    assert result.returncode == 1, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    assert ["2", "RCL101", "mutated-global"] in rows
    # The concise format names the rule at the end of each line, the full format under the
    # underlined span, for `recompile-lint rule`.
    text = run_tool(["recompile-lint", "--output-format", "concise", "src/"], project)
    finding_lines = [line for line in text.stdout.splitlines() if ": RCL" in line]
    assert finding_lines and all(line.endswith("(mutated-global)") for line in finding_lines)
    full = run_tool(["recompile-lint", "src/"], project)
    labels = [line for line in full.stdout.splitlines() if "^" in line]
    assert len(labels) == 2 and all(line.endswith("RCL101 (mutated-global)") for line in labels)
    page = run_tool(["recompile-lint", "rule", "RCL101"], project)
    assert page.returncode == 0 and "RCL101" in page.stdout
