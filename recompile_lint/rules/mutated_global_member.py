"""RCL102 mutated-global-member. Guards: a member of a module-level dict, object, namespace or class (``G['CFG']['k']``, ``G['cfg'].k``). Evidence: writes between calls."""

from __future__ import annotations

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.analysis.risks import Risk
from recompile_lint.models import Boundedness, Severity
from recompile_lint.rules._risk import changes, reader, report
from recompile_lint.rules.base import Rule

class MutatedGlobalMember(Rule):
    """A value inside a module-level dict, config object or class that compiled code reads and
    other code changes.

    Dynamo guards on the member's value (``G['CFG']['scale'] == 1``, ``G['cfg'].scale == 1``,
    ``G['Cfg'].SCALE == 1``). Each new int or str value compiles another graph until
    ``recompile_limit`` (8) sends the function to eager for good; floats recompile once, bools
    once per value.
    """

    code = "RCL102"
    name = "mutated-global-member"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "Entry of a global dict, config object or class read in compiled code and changed elsewhere"

    VALID = (
        """
import torch

CFG = {"scale": 2}  # read-only configuration: one graph


@torch.compile
def scaled(x):
    return x * CFG["scale"]
""",
    )
    INVALID = (
        """
import torch

CFG = {"scale": 1}


class Cfg:
    SCALE = 1


@torch.compile
def scaled(x):
    return x * CFG["scale"] + x * Cfg.SCALE  # RCL102


def sweep(x):
    for i in range(10):
        CFG["scale"] = i
        Cfg.SCALE = i
        scaled(x)
""",
    )

    def claims(self, risk: Risk) -> bool:
        """A member of a module-level value: a dict entry, an attribute of a config object, a
        namespace or a class (``G['CFG']['scale']``, ``G['cfg'].scale``, ``G['Cfg'].SCALE``)."""
        storage = risk.guard.storage
        return storage.kind == "member" and not storage.length and risk.guard.guard.source.startswith("G[")

    def check_risk(self, risk: Risk, ctx: ProjectContext) -> None:
        storage = risk.guard.storage
        text = storage.name + "".join(storage.members)
        report(
            ctx,
            risk,
            f"`{text}` ({risk.value_kind}) is read in {reader(risk, ctx.index)} and {changes(risk)}",
            f"store it as a 0-d tensor (`{text} = torch.tensor(...)`, updated in place with `.fill_()`), or pass it "
            f"to the compiled function as an argument",
        )
