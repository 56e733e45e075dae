"""Where the lab measured a guard's cell, what torch did there decides the finding's cost."""

from __future__ import annotations

import json

import pytest

from helpers import lint_snippet
from recompile_lint.analysis import measured

GLOBAL_COUNTER = """
import torch

step = 0


@torch.compile
def scaled(x):
    return x * step


def main():
    global step
    for i in range(20):
        step = i
        scaled(torch.ones(2))
"""
CELLS = [("global", "int", use, "default", "every") for use in ("arithmetic", "branch")]


def row(cell, tier: str, graphs: int, programs: int = 2, tiers=None) -> dict:
    location, type_, use, options, change = cell
    counts = tiers or [programs if t == tier else 0 for t in ("unbounded", "bounded", "negative")]
    return {"location": location, "type": type_, "use": use, "options": options, "change": change,
            "programs": programs, "failed": 0, "tier": tier, "tiers": counts, "graphs": [graphs, graphs],
            "limit": 0, "limit_error": 0, "guards": []}


@pytest.fixture
def table(tmp_path, monkeypatch):
    """Install a measured table made of the given rows for one test."""
    path = tmp_path / "measured.json"
    monkeypatch.setattr(measured, "TABLE", path)

    def install(*rows):
        path.write_text(json.dumps({"format": 1, "cells": list(rows)}), encoding="utf-8")
        measured._cells.cache_clear()

    yield install
    measured._cells.cache_clear()


def findings(tmp_path):
    return [(f.code, f.severity.value) for f in lint_snippet(tmp_path, GLOBAL_COUNTER).findings]


def test_without_a_measured_cell_the_model_decides(tmp_path, table):
    table()
    assert findings(tmp_path) == [("RCL101", "error")]


def test_a_cell_torch_kept_bounded_makes_the_finding_bounded(tmp_path, table):
    table(row(CELLS[0], "bounded", 2), row(CELLS[1], "bounded", 2))
    assert findings(tmp_path) == [("RCL101", "warning")]


def test_a_cell_torch_compiled_once_makes_no_finding(tmp_path, table):
    table(row(CELLS[0], "negative", 1))
    assert findings(tmp_path) == []


def test_candidate_cells_that_disagree_leave_the_model_deciding(tmp_path, table):
    table(row(CELLS[0], "negative", 1), row(CELLS[1], "bounded", 2))
    assert findings(tmp_path) == [("RCL101", "error")]
    # A cell whose own programs disagree decides nothing either.
    table(row(CELLS[0], "negative", 1, programs=3, tiers=[0, 1, 2]))
    assert findings(tmp_path) == [("RCL101", "error")]


def test_a_new_table_makes_the_run_cache_forget_its_results(tmp_path, table):
    from recompile_lint import cache

    table(row(CELLS[0], "bounded", 2))
    before = cache._code_fingerprint()
    table(row(CELLS[0], "negative", 1))
    assert cache._code_fingerprint() != before
