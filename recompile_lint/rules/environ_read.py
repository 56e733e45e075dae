"""RCL105 environ-read. Guards: ``G['os'].environ._data[b'K']``. Evidence: writes to that variable between calls."""

from __future__ import annotations

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.analysis.risks import Risk
from recompile_lint.models import Boundedness, Severity
from recompile_lint.rules._risk import changes, reader, report
from recompile_lint.rules.base import Rule

class EnvironRead(Rule):
    """``os.environ`` / ``os.getenv`` read inside compiled code.

    Dynamo guards on the environment value it read (``G['os'].environ._data[b'N'] == b'1'``).
    When the program changes that variable between calls, each new value compiles another
    graph; converted to a number it becomes a constant of the graph, and a changing value
    reaches ``recompile_limit`` (8), after which the function runs eagerly for good.
    """

    code = "RCL105"
    name = "environ-read"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "Environment variable read inside compiled code"

    VALID = (
        """
import os

import torch

REPEATS = int(os.environ.get("REPEATS", "1"))  # read once, outside the compiled code


@torch.compile
def f(x):
    return x * REPEATS
""",
    )
    INVALID = (
        """
import os

import torch


@torch.compile
def f(x):
    return x * int(os.environ["N"])  # RCL105


def main(x):
    for n in range(10):
        os.environ["N"] = str(n)
        f(x)
""",
    )

    def claims(self, risk: Risk) -> bool:
        """An environment variable compiled code reads, that the program changes between calls."""
        return risk.guard.storage.kind == "environ"

    def check_risk(self, risk: Risk, ctx: ProjectContext) -> None:
        report(
            ctx,
            risk,
            f"environment variable {risk.guard.storage.name!r} is read in {reader(risk, ctx.index)} and {changes(risk)}",
            "read it once outside the compiled function and pass the value in (as a tensor if it changes)",
        )
