"""Each fixture's findings equal its inline expectations exactly (``# RCL101`` comments).

The whole ``fixtures/`` tree is linted in one run, as ``recompile-lint fixtures/`` does, with
every rule selected (info included); fixed twins carry no expectation and must stay silent.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from helpers import ALL_RULES, compare, expectations
from recompile_lint.engine import lint_paths

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# fixtures/programs/ holds whole projects, each linted on its own by test_differential.py.
PROGRAMS = FIXTURES / "programs"
FILES = sorted(p for p in FIXTURES.rglob("*.py") if PROGRAMS not in p.parents)


@pytest.fixture(scope="module")
def result():
    return lint_paths([str(FIXTURES)], replace(ALL_RULES, extend_exclude=("fixtures/programs",)))


def test_fixtures_exist():
    assert len(FILES) >= 10


def test_no_file_errors(result):
    assert result.errors == ()


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(FIXTURES)) for p in FILES])
def test_fixture(result, path):
    text = path.read_text(encoding="utf-8")
    expected = expectations(text)
    missing, unexpected = compare(expected, result, str(path))
    assert not missing, f"{path.name}: expected but not reported: {sorted(missing)}"
    assert not unexpected, f"{path.name}: reported but not expected: {sorted(unexpected)}"
    if path.stem.endswith("_fixed"):
        assert not expected, "a fixed twin must carry no expectation"
