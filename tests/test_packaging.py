"""The wheel and sdist ``python -m build`` makes: the wheel carries the rule pages in full and
prints the same page as ``rules/*.md`` (in SARIF too) with no checkout beside it, declares its
extras and entry points; and the docs install it only in ways that exist (no tag, no index,
no host the project does not have)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from recompile_lint import __version__
from recompile_lint.report.pages import PAGES_DIR, generated_page
from recompile_lint.rules import all_rules
from helpers import SEED_SOURCE

REPO = Path(__file__).resolve().parent.parent
CODES = [rule.code for rule in all_rules()]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist and wheel ``python -m build`` makes (the wheel from the sdist), from a copy of
    the sources (the checkout is left as it is), with this environment's setuptools."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "recompile_lint", source / "recompile_lint", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("dist")
    build = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
        capture_output=True, text=True, timeout=600,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    [wheel] = out.glob("recompile_lint-*.whl")
    [sdist] = out.glob("recompile_lint-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


@pytest.fixture(scope="module")
def wheel(dist: dict[str, Path]) -> Path:
    return dist["wheel"]


def test_the_wheel_carries_the_pages_extras_and_entry_points(wheel: Path) -> None:
    assert wheel.name == f"recompile_lint-{__version__}-py3-none-any.whl"  # the name the docs install
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(info).decode("utf-8"))
        entry_points = archive.read(info.replace("METADATA", "entry_points.txt")).decode("utf-8")
    assert {f"recompile_lint/report/rule_docs/{code}.md" for code in CODES} <= names
    with zipfile.ZipFile(wheel) as archive:
        for code in CODES:  # each page's source in full, as the checkout has it
            source = (REPO / "recompile_lint" / "report" / "rule_docs" / f"{code}.md").read_bytes()
            assert archive.read(f"recompile_lint/report/rule_docs/{code}.md") == source, code
    assert "recompile_lint/py.typed" in names
    assert "recompile_lint/analysis/measured.json" in names  # the lab's measured table the analysis reads
    assert metadata["Version"] == __version__
    assert {"verify", "lsp", "test"} <= set(metadata.get_all("Provides-Extra"))
    assert any(r.startswith("pygls") and "lsp" in r for r in metadata.get_all("Requires-Dist"))
    assert "recompile-lint = recompile_lint.frontends.main:run" in entry_points
    assert "RCL = recompile_lint.frontends.flake8_plugin:RecompileLintPlugin" in entry_points


def test_the_installed_wheel_prints_the_pages_of_rules(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    script = (
        "import json, recompile_lint\n"
        "from recompile_lint.report.pages import rule_page\n"
        f"print(json.dumps({{'file': recompile_lint.__file__, 'pages': {{c: rule_page(c) for c in {CODES!r}}}}}))\n"
    )
    # Run from an empty folder with only the unpacked wheel on the path: no checkout to read.
    env = dict(os.environ, PYTHONPATH=str(site), RECOMPILE_LINT_NO_SERVER="1")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert Path(data["file"]).resolve().is_relative_to(site.resolve())
    for code in CODES:
        assert generated_page(code) == (PAGES_DIR / f"{code}.md").read_text(encoding="utf-8")
        assert generated_page(code).startswith(data["pages"][code].rstrip("\n")), code
    command = subprocess.run([sys.executable, "-m", "recompile_lint", "rule", "RCL101"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert command.returncode == 0 and command.stdout == data["pages"]["RCL101"] + "\n"
    assert "## How the verifier confirms it" in command.stdout and "Severity: error (unbounded) / warning (bounded)" in command.stdout


def test_the_sdist_carries_what_the_wheel_is_built_from(dist: dict[str, Path]) -> None:
    with tarfile.open(dist["sdist"]) as archive:
        names = set(archive.getnames())
        top = f"recompile_lint-{__version__}"
        assert {f"{top}/pyproject.toml", f"{top}/README.md", f"{top}/PKG-INFO"} <= names
        assert {f"{top}/recompile_lint/report/rule_docs/{code}.md" for code in CODES} <= names
        assert f"{top}/recompile_lint/analysis/measured.json" in names
        page = archive.extractfile(f"{top}/recompile_lint/report/rule_docs/RCL101.md")
        assert page is not None and page.read() == (REPO / "recompile_lint" / "report" / "rule_docs" / "RCL101.md").read_bytes()


def test_the_installed_wheel_embeds_the_pages_in_sarif(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (project / "m.py").write_text(SEED_SOURCE, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(site), RECOMPILE_LINT_NO_SERVER="1")
    done = subprocess.run([sys.executable, "-m", "recompile_lint", "--no-cache", "--format", "sarif", "m.py"],
                          cwd=project, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1, done.stderr
    rules = {rule["id"]: rule for rule in json.loads(done.stdout)["runs"][0]["tool"]["driver"]["rules"]}
    assert set(rules) == set(CODES)
    for code in CODES:
        assert generated_page(code).startswith(rules[code]["help"]["markdown"].rstrip("\n")), code
    assert "## How the verifier confirms it" in rules["RCL101"]["help"]["markdown"]


def test_the_version_has_a_changelog_entry() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"\n## {__version__} " in changelog or f"\n## {__version__}\n" in changelog


# What an install snippet may not say: the repository has no tags, no package index entry and
# no public host (an address of one would be a URL that does not answer).
FALSE_INSTALLS = {
    "a release tag": re.compile(r"recompile[-_]lint\S*@v\d|rev: *v\d|releases are tagged|(?<!no )release tag", re.I),
    "a git URL": re.compile(r"git\+https?://|https?://github\.com/recompile-lint", re.I),
    "the package index": re.compile(r"pip install [\'\"]?recompile-lint(\[[\w,]+\])?[\'\"]?(\s|$)", re.I),
}


def install_docs() -> list[Path]:
    return [REPO / "README.md", REPO / "CHANGELOG.md", REPO / ".pre-commit-hooks.yaml",
            *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "rules").glob("*.md"))]


@pytest.mark.parametrize("doc", install_docs(), ids=lambda path: str(path.relative_to(REPO)))
def test_the_docs_install_only_in_ways_that_exist(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    for what, pattern in FALSE_INSTALLS.items():
        found = pattern.search(text)
        assert found is None, f"{doc.name} names {what}: {found.group(0) if found else ''!r}"


def test_the_readme_says_how_to_install_from_a_checkout_a_wheel_pipx_and_a_commit() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    install = readme[readme.index("## Installation"):readme.index("## Development")]
    for words in ("pip install -e .", "python -m build", "pip install dist/recompile_lint-", "pipx install .",
                  "pipx install dist/recompile_lint-", "rev: <", "pre-commit try-repo"):
        assert words in install, words


@pytest.mark.parametrize("doc", install_docs(), ids=lambda path: str(path.relative_to(REPO)))
def test_the_wheels_the_docs_name_are_the_ones_the_build_makes(doc: Path) -> None:
    named = set(re.findall(r"recompile_lint-[^\s/'\"\[]+?\.whl", doc.read_text(encoding="utf-8")))
    assert named <= {f"recompile_lint-{__version__}-py3-none-any.whl"}, doc.name



def test_no_address_the_project_does_not_serve_is_written_in_the_package() -> None:
    for path in sorted((REPO / "recompile_lint").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "github.com/recompile-lint" not in text, path
