"""Every rule's VALID examples stay silent and its INVALID examples are flagged exactly."""

from __future__ import annotations

import textwrap

import pytest

from helpers import compare, expectations, lint_snippet
from recompile_lint.config import Config
from recompile_lint.models import Boundedness, Severity
from recompile_lint.rules import all_rules

RULES = all_rules()


def _cases(kind: str):
    for rule in RULES:
        for i, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{rule.code}-{kind.lower()}-{i}")


@pytest.mark.parametrize("rule,example", list(_cases("VALID")))
def test_valid_examples_are_silent(tmp_path, rule, example):
    result = lint_snippet(tmp_path, example, config=Config(select=(rule.code,), cache=False))
    assert result.errors == ()
    assert [f for f in result.findings if f.code == rule.code] == []


@pytest.mark.parametrize("rule,example", list(_cases("INVALID")))
def test_invalid_examples_are_flagged(tmp_path, rule, example):
    source = textwrap.dedent(example).lstrip("\n")
    expected = {e for e in expectations(source) if e[1] == rule.code}
    assert expected, f"{rule.code}: an INVALID example must mark at least one line with # {rule.code}"
    result = lint_snippet(tmp_path, source, config=Config(select=(rule.code,), cache=False))
    assert result.errors == ()
    missing, unexpected = compare(expected, result)
    assert not missing, f"{rule.code} missed {sorted(missing)}"
    assert not unexpected, f"{rule.code} also flagged {sorted(unexpected)}"


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_metadata(rule):
    assert rule.code.startswith("RCL") and len(rule.code) == 6 and rule.code[3:].isdigit()
    assert rule.name and rule.name == rule.name.lower() and " " not in rule.name and "_" not in rule.name
    assert isinstance(rule.severity, Severity) and isinstance(rule.bounded, Boundedness)
    assert rule.summary and "\n" not in rule.summary
    assert rule.__doc__ and rule.__doc__.strip()
    assert rule.INVALID, f"{rule.code} needs at least one INVALID example"
    assert rule.VALID, f"{rule.code} needs at least one VALID example"
    # Fixit's convention: the module is the snake_case of the class.
    module = rule.__module__.rsplit(".", 1)[-1]
    snake = "".join("_" + c.lower() if c.isupper() else c for c in rule.__name__).lstrip("_")
    assert module == snake, f"{rule.__name__} lives in {module}.py, expected {snake}.py"


def test_codes_and_names_are_unique():
    assert len({r.code for r in RULES}) == len(RULES)
    assert len({r.name for r in RULES}) == len(RULES)


def test_the_code_list_matches_the_rule_classes():
    """Settings are checked against ``CODES`` without importing the rules: it must not drift."""
    from recompile_lint.rules import CODES, validate_codes

    assert CODES == tuple(r.code for r in RULES)
    assert validate_codes(("RCL1", "rcl203", "ALL", "RCL999", "X")) == ["RCL999", "X"]
