"""RCL108 specialized-scalar-argument. Guards: a scalar argument kept constant (str, dynamic=False, needed concrete) or freed after one recompile. Evidence: different values at the call sites, followed into the callers' callers."""

from __future__ import annotations

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.analysis.risks import Risk
from recompile_lint.models import Boundedness, Severity
from recompile_lint.rules._risk import reader, report
from recompile_lint.rules.base import Rule

class SpecializedScalarArgument(Rule):
    """An argument whose value the graph keeps as a constant, passed different values by its
    callers: a str, an int under ``dynamic=False``, an int the compiled code needs concrete
    (an index into a Python list, a split size, a dispatch ``if op == 3``), or an int or float
    that automatic dynamic shapes make symbolic only after one recompile (2 graphs, a warning).

    Dynamo guards on the value of a str argument (``mode == 'a0'``): strings never become
    symbolic, so every new value is another graph until ``recompile_limit`` (8) sends the
    function to eager for good. An int argument normally costs one recompile and then becomes
    dynamic, but ``dynamic=False`` keeps it a constant (``n == 2``): every value is a graph.
    """

    code = "RCL108"
    name = "specialized-scalar-argument"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "str argument with many values, or int argument under dynamic=False, passed to compiled code"

    VALID = (
        """
import torch


@torch.compile(dynamic=True)
def scaled(x, n: int):
    return x * n  # n is a symbolic input from the first call: one graph


def main(x):
    for n in range(10):
        scaled(x, n)
""",
    )
    INVALID = (
        """
import torch


@torch.compile
def act(x, name: str):
    return torch.relu(x) if name == "relu" else torch.tanh(x)  # RCL108


@torch.compile(dynamic=False)
def scaled(x, n: int):
    return x * n  # RCL108


def main(x, names):
    for name in names:
        act(x, name)
    for n in range(10):
        scaled(x, n)
""",
    )

    def claims(self, risk: Risk) -> bool:
        """An argument that stays a constant of the graph, a str or an int under
        ``dynamic=False``, that its callers vary; or a closure cell of the compiled function a
        run of the project sees change."""
        guard = risk.guard
        return (
            (guard.storage.kind == "parameter" or (guard.storage.kind == "closure" and risk.run))
            and not guard.storage.length
            # An Enum member is guarded by its identity (``___check_obj_id``), a constant too.
            and (guard.guard.kind == "CONSTANT_MATCH" or (guard.guard.kind == "ID_MATCH" and risk.value_kind == "enum"))
            # A range() bound is RCL106's; the length of a list that shapes a tensor is a rank (RCL201).
            and guard.specialized not in ("a range() bound", "the length of a Python list")
        )

    def check_risk(self, risk: Risk, ctx: ProjectContext) -> None:
        guard = risk.guard
        name = guard.storage.name + "".join(guard.storage.members)
        region = risk.region.name
        if risk.branches:
            why = "it is a symbolic input, but compiled code tests it"
            fix = "move the test out of the compiled function (pass its outcome as a bool), or compute both sides with tensor ops (`torch.where`)"
        elif risk.value_kind == "number-or-tensor":
            why = "it is a Python number at some calls and a tensor at others, and the guard of each kind checks the type"
            fix = "pass the same kind at every call: a 0-d tensor (`torch.as_tensor(value)`) or always a Python number"
        elif risk.value_kind == "enum":
            why = "an Enum member is guarded by its identity and never becomes symbolic"
            fix = "pass the member's value as an int or a tensor, or compile one function per member and pick it outside"
        elif risk.value_kind == "str":
            why = "a str never becomes symbolic"
            fix = "map the strings to an int or a tensor outside, or compile one function per value and pick it outside"
        elif guard.specialized == "dynamic=False":
            why = f"`{region}` is compiled with dynamic=False, so the int stays a constant"
            fix = "drop dynamic=False (automatic dynamic makes the int symbolic after one recompile), or pass it as a tensor"
        elif guard.specialized:
            why = f"it is used as {guard.specialized}, which needs a concrete value, so it stays a constant"
            fix = "pass it as a tensor and use tensor operations (indexing a tensor, `torch.gather`), or keep it constant per compiled function"
        else:
            why = f"the first value is compiled in as a constant, and only the second call makes the {risk.value_kind} a symbolic input"
            fix = f"compile with `dynamic=True` (a symbolic input from the first call), or pass the {risk.value_kind} as a 0-d tensor"
        what = "closure cell" if guard.storage.kind == "closure" else "argument"
        report(ctx, risk, f"{what} `{name}` of {reader(risk, ctx.index)} changes between calls ({risk.evidence.why}): {why}", fix)
