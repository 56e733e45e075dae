"""RCL105's evidence: which writes to ``os.environ`` change the variable a compiled function reads.

A write names its variable (``os.environ["N"] = ...``, ``update({"N": ...})``, ``update(N=...)``,
``pop("N")``, ``setdefault("N", ...)``) or every one (``clear()``); a write whose variable is not
known (``os.environ[k] = v``, ``update(saved)``, a comprehension popping a prefix) is no evidence
that the one read changes: unknown values are never evidence.
"""

from __future__ import annotations

import pytest

from helpers import lint_snippet

READER = '''
import contextlib
import os

import torch


@torch.compile
def f(x):
    return x * int(os.environ.get("N", "1"))

'''


def codes(result) -> list[tuple[str, int]]:
    return sorted((f.code, f.line) for f in result.findings if f.code == "RCL105")


@pytest.mark.parametrize(
    "write",
    [
        'os.environ["N"] = str(i)',
        'os.environ.update({"N": str(i)})',
        "os.environ.update(N=str(i))",
        'os.environ.pop("N", None)',
        "os.environ.clear()",
    ],
)
def test_a_write_that_names_the_variable_or_every_one_is_evidence(tmp_path, write):
    source = READER + f"""
def main(x):
    for i in range(10):
        {write}
        f(x)
"""
    assert codes(lint_snippet(tmp_path, source)) == [("RCL105", 9)]


@pytest.mark.parametrize(
    "write",
    [
        "os.environ[key] = str(i)",
        "os.environ.update(saved)",
        "os.environ.pop(key)",
    ],
)
def test_a_write_of_an_unknown_variable_is_no_evidence(tmp_path, write):
    source = READER + f"""
def main(x, key, saved):
    for i in range(10):
        {write}
        f(x)
"""
    assert codes(lint_snippet(tmp_path, source)) == []


def test_a_context_manager_that_hides_and_restores_a_prefix_is_no_evidence(tmp_path):
    source = READER + """
@contextlib.contextmanager
def clean_env():
    saved = {k: os.environ.pop(k) for k in os.environ if k.startswith("SLURM_")}
    try:
        yield
    finally:
        os.environ.update(saved)


def main(x):
    for i in range(10):
        f(x)
        with clean_env():
            print("launch")
"""
    assert codes(lint_snippet(tmp_path, source)) == []
