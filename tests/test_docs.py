"""Every rule has a page under rules/, every page a rule, and each page's example is flagged
as the page says while its fix stays silent."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from helpers import compare, expectations, lint_snippet
from recompile_lint.frontends.cli import main
from recompile_lint.config import Config
from recompile_lint.report.pages import HEADINGS, PAGES_DIR, severity_text
from recompile_lint.rules import all_rules

RULES = all_rules()
CODE_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_every_page_has_a_rule():
    codes = {r.code for r in RULES}
    pages = {p.stem for p in PAGES_DIR.glob("*.md") if p.stem.startswith("RCL")}
    assert pages - codes == set(), f"pages without a rule: {sorted(pages - codes)}"


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_page(tmp_path, rule):
    path = PAGES_DIR / f"{rule.code}.md"
    assert path.is_file(), f"{rule.code} has no page at rules/{rule.code}.md"
    text = path.read_text(encoding="utf-8")
    assert text.startswith(f"# {rule.code}: {rule.name}\n")
    found = sections(text)
    assert list(found) == list(HEADINGS), f"{rule.code}: headings must be {HEADINGS}"
    assert rule.severity.value in found["Bounded or unbounded"].lower() or rule.bounded.value in found["Bounded or unbounded"].lower()
    example = CODE_BLOCK.findall(found["Example"])
    fixed = CODE_BLOCK.findall(found["Use instead"])
    assert example and fixed, f"{rule.code}: Example and Use instead need a python block"
    config = Config(select=(rule.code,), cache=False)
    expected = {e for e in expectations(example[0]) if e[1] == rule.code}
    assert expected, f"{rule.code}: the Example must mark flagged lines with # {rule.code}"
    missing, unexpected = compare(expected, lint_snippet(tmp_path, example[0], "example.py", config))
    assert not missing and not unexpected, f"{rule.code} page example: missing {missing}, unexpected {unexpected}"
    silent = lint_snippet(tmp_path, fixed[0], "fixed.py", config)
    assert [f for f in silent.findings if f.code == rule.code] == [], f"{rule.code}: 'Use instead' is flagged"


def test_rule_command_prints_the_page():
    rule = RULES[0]
    out = CliRunner().invoke(main, ["rule", rule.code])
    assert out.exit_code == 0
    assert out.output.startswith(f"# {rule.code}: {rule.name}")


def test_rule_command_unknown_code():
    out = CliRunner().invoke(main, ["rule", "RCL000"])
    assert out.exit_code == 2
    assert "unknown rule" in out.output


def test_rules_command_lists_every_code():
    out = CliRunner().invoke(main, ["rules"])
    assert out.exit_code == 0
    for rule in RULES:
        assert rule.code in out.output and rule.name in out.output


def test_readme_lists_every_rule():
    readme = (PAGES_DIR.parent / "README.md").read_text(encoding="utf-8")
    for rule in RULES:
        assert f"[{rule.code}](rules/{rule.code}.md) | `{rule.name}` | {severity_text(rule)} |" in readme, rule.code
