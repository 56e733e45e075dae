"""RCL203 mutated-global-container-length. Guards: LENGTH_CHECK on a module-level list, dict or set. Evidence: length changes between calls (appends in the region included)."""

from __future__ import annotations

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.analysis.risks import Risk
from recompile_lint.models import Boundedness, Severity
from recompile_lint.rules._risk import changes, logged, reader, report
from recompile_lint.rules.base import Rule

class MutatedGlobalContainerLength(Rule):
    """A module-level list, dict or set whose length changes while compiled code depends on it.

    Dynamo unrolls a global container and guards on its length (``len(G['history']) == 1``).
    A container that grows (``append``, ``extend``, new keys, ``pop``, ``del``) fails the guard
    on every call and compiles another graph; after ``recompile_limit`` (8) the function runs
    eagerly for good. Lists are guarded whenever compiled code touches them (indexing
    included); dicts and sets when it iterates them, takes their ``len`` or tests their truth.
    Appending to a global list inside the compiled function is the same trap: the region
    changes its own guard on every call.
    """

    code = "RCL203"
    name = "mutated-global-container-length"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "Global list/dict/set whose length changes while compiled code iterates, measures or indexes it"

    VALID = (
        """
import torch

SCALES = [1.0, 2.0, 4.0]  # never grows: one graph


@torch.compile
def pyramid(x):
    return sum(x * s for s in SCALES)
""",
        """
import torch

CACHE = {"bias": torch.zeros(4)}


@torch.compile
def biased(x):
    return x + CACHE["bias"]  # a constant key of a dict that grows elsewhere: no length guard


def remember(name, value):
    CACHE[name] = value
""",
    )
    INVALID = (
        """
import torch

history = []


@torch.compile
def smooth(x):
    if not history:  # RCL203
        return x
    return 0.9 * history[-1] + 0.1 * x


def train(xs):
    for x in xs:
        history.append(smooth(x))
""",
        """
import torch

losses = []


@torch.compile
def step(x):
    loss = (x ** 2).mean()
    losses.append(loss.detach())  # RCL203
    return loss
""",
    )

    def claims(self, risk: Risk) -> bool:
        """The length of a module-level list, dict or set that compiled code depends on."""
        storage = risk.guard.storage
        return storage.kind in ("global", "member") and storage.length

    def check_risk(self, risk: Risk, ctx: ProjectContext) -> None:
        storage = risk.guard.storage
        name = storage.name + "".join(storage.members)
        what = f"global {risk.guard.value_kind} `{name}` is unrolled in {reader(risk, ctx.index)} (`{logged(risk.guard.guard.source)}`) and its length is {changes(risk)}"
        report(
            ctx,
            risk,
            what,
            "keep the values in a preallocated tensor (a ring buffer with an index tensor), or pass a fixed-length "
            "snapshot to the compiled function",
        )
