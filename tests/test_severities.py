"""The listing, the pages, the README and the output say the same thing about severity.

Each rule's page source declares the severities its findings can have (``error (unbounded) /
warning (bounded)``). Every finding of the fixtures and of the rules' own examples must have
one of them, and ``recompile-lint rules``, the rule page and the README's table must show
exactly that text. The generated pages under ``rules/`` must equal what the package prints.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import lint_snippet
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths
from recompile_lint.frontends.cli import main
from recompile_lint.report.pages import (
    PAGES_DIR,
    PageError,
    generated_page,
    main as pages_main,
    parse_severities,
    rule_page,
    severities,
    severity_text,
    stale_pages,
)
from recompile_lint.rules import all_rules

REPO = Path(__file__).resolve().parent.parent
RULES = all_rules()


@pytest.fixture(scope="module")
def fixture_findings():
    return lint_paths([str(REPO / "fixtures")], Config(select=("RCL",), cache=False), relocate=True).findings


def test_every_fixture_finding_has_a_declared_severity(fixture_findings) -> None:
    by_code = {rule.code: rule for rule in RULES}
    wrong = [
        f"{f.path}:{f.line} {f.code} {f.severity} ({f.bounded}), declared {severity_text(by_code[f.code])}"
        for f in fixture_findings
        if (f.severity, f.bounded) not in severities(by_code[f.code])
    ]
    assert wrong == []
    # The fixtures show both halves of the rules that declare two.
    seen = {(f.code, f.severity, f.bounded) for f in fixture_findings}
    assert {("RCL101", "error", "unbounded"), ("RCL101", "warning", "bounded")} <= {(c, s.value, b.value) for c, s, b in seen}


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_examples_and_defaults_have_declared_severities(tmp_path: Path, rule) -> None:
    declared = severities(rule)
    assert (rule.severity, rule.bounded) in declared, f"{rule.code}: the class default is not declared"
    for i, example in enumerate(rule.INVALID):
        folder = tmp_path / str(i)
        folder.mkdir()
        result = lint_snippet(folder, textwrap.dedent(example).lstrip("\n"), config=Config(select=(rule.code,), cache=False))
        for finding in result.findings:
            assert (finding.severity, finding.bounded) in declared, f"{rule.code} example {i}: {finding.severity} ({finding.bounded})"


def test_the_listing_the_pages_and_the_readme_agree() -> None:
    listing = CliRunner().invoke(main, ["rules"]).stdout
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for rule in RULES:
        text = severity_text(rule)
        assert re.search(rf"^{rule.code}  {re.escape(rule.name)} +{re.escape(text)}  ", listing, re.MULTILINE), rule.code
        assert f"\nSeverity: {text};" in rule_page(rule.code)
        assert f"| [{rule.code}](rules/{rule.code}.md) | `{rule.name}` | {text} |" in readme, rule.code
    assert "error (unbounded) / warning (bounded)" in listing


def test_a_rule_with_two_severities_explains_both_on_its_page() -> None:
    for rule in RULES:
        section = rule_page(rule.code).split("## Bounded or unbounded", 1)[1].split("\n## ", 1)[0].lower()
        for severity, bounded in severities(rule):
            assert severity.value in section or bounded.value in section, f"{rule.code}: {severity} ({bounded}) not explained"


def test_generated_pages_match_their_source() -> None:
    assert stale_pages(PAGES_DIR) == []
    assert pages_main(["--check", str(PAGES_DIR)]) == 0


def test_a_stale_page_is_found(tmp_path: Path) -> None:
    assert pages_main(["--write", str(tmp_path)]) == 0
    assert stale_pages(tmp_path) == []
    page = tmp_path / "RCL101.md"
    page.write_text(page.read_text(encoding="utf-8").replace("## Example", "## Examples"), encoding="utf-8")
    (tmp_path / "RCL999.md").write_text("# RCL999\n", encoding="utf-8")
    (tmp_path / "RCL102.md").unlink()
    problems = stale_pages(tmp_path)
    assert len(problems) == 3 and pages_main(["--check", str(tmp_path)]) == 1
    assert generated_page("RCL101").startswith(rule_page("RCL101").rstrip("\n"))


def test_a_malformed_severity_is_an_error() -> None:
    assert parse_severities("error (unbounded), warning (bounded)", "x") == tuple(
        (s, b) for s, b in severities(next(r for r in RULES if r.code == "RCL101"))
    )
    with pytest.raises(PageError, match="critical"):
        parse_severities("critical (unbounded)", "x")
