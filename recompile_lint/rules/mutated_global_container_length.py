from __future__ import annotations

import libcst as cst

from recompile_lint.analysis.context import FunctionContext
from recompile_lint.analysis.facts import LENGTH_METHODS, Mutation
from recompile_lint.models import Boundedness, Severity, Subject
from recompile_lint.rules._common import RECOMPILE_LIMIT, via, where
from recompile_lint.rules.base import Rule

CONTAINERS = frozenset({"list", "dict", "set"})
# Calls whose result depends on how many elements their argument holds.
LENGTH_CONSUMERS = frozenset({"len", "sum", "zip", "enumerate", "sorted", "reversed", "list", "tuple", "min", "max", "any", "all", "bool", "map", "stack", "cat", "concat", "vstack", "hstack"})
VIEW_METHODS = frozenset({"items", "keys", "values", "copy"})


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

    def check_function(self, ctx: FunctionContext) -> None:
        parents = ctx.parents()
        seen: set[str] = set()
        for node in ctx.nodes_of(cst.Name):
            if node.value in seen:
                continue
            parent = parents.get(id(node))
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue
            if isinstance(parent, (cst.Arg, cst.Param)) and getattr(parent, "keyword", None) is node:
                continue
            value = ctx.global_value(node.value)
            if value is None or value.binding is None or value.kind not in CONTAINERS:
                continue
            mutations = self.length_mutations(ctx, value)
            if not mutations:
                continue
            use = self.length_use(node, parents, value.kind)
            if use is None:
                continue
            seen.add(node.value)
            inside = [mu for mu in mutations if mu.path == ctx.path and ctx.function.line <= mu.line <= ctx.function.end_line]
            changes = "on every call, by compiled code itself" if use == "mutates" else f"at {where(mutations)}"
            if use != "mutates" and inside:
                changes = f"at {where(mutations)} (including inside the compiled code)"
            ctx.report(
                node,
                f"global {value.kind} `{node.value}` is {self.describe(use)} in {via(ctx)}, and its length changes "
                f"{changes}: Dynamo guards `len(G['{node.value}']) == N`, so every new length compiles another "
                f"graph; after {RECOMPILE_LIMIT} recompiles `{ctx.region.name}` falls back to eager for good "
                f"(unbounded). Fix: keep a fixed-size tensor buffer (`torch.zeros(n)` written with "
                f"`index_copy_`/a ring index), or pass what is needed as an argument and grow the container "
                f"outside the compiled code",
                subject=Subject(kind="length", module=(value.origin or value.facts).module, name=value.binding.name, value_kind=value.kind),
            )

    @staticmethod
    def length_mutations(ctx: FunctionContext, value) -> list[Mutation]:
        found: list[Mutation] = []
        keys = {(value.facts.path, value.name)}
        if value.origin is not None and value.binding is not None:
            keys.add((value.origin.path, value.binding.name))
        for path, name in keys:
            found.extend(ctx.index.mutations("length", path, name))
        return found

    @staticmethod
    def length_use(node: cst.Name, parents: dict[int, cst.CSTNode], kind: str) -> str | None:
        """How a read of the container depends on its length ("" when it does not)."""
        parent = parents.get(id(node))
        if isinstance(parent, cst.Attribute) and parent.value is node:
            grand = parents.get(id(parent))
            if isinstance(grand, cst.Call) and grand.func is parent:
                method = parent.attr.value
                if method in LENGTH_METHODS:
                    return "mutates"
                if method in VIEW_METHODS:
                    return "iterates"
            return "reads" if kind == "list" else None
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is node:
            return "iterates"
        if isinstance(parent, cst.Arg):
            call = parents.get(id(parent))
            if isinstance(call, cst.Call):
                func = call.func
                name = func.value if isinstance(func, cst.Name) else (func.attr.value if isinstance(func, cst.Attribute) else "")
                if name in LENGTH_CONSUMERS:
                    return "measures"
        if isinstance(parent, (cst.If, cst.While, cst.IfExp)) and parent.test is node:
            return "tests"
        if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
            return "tests"
        if isinstance(parent, cst.BooleanOperation):
            return "tests"
        if isinstance(parent, cst.StarredElement) or (isinstance(parent, cst.Arg) and parent.star):
            return "iterates"
        if kind == "list":
            return "reads"
        return None

    @staticmethod
    def describe(use: str) -> str:
        return {
            "mutates": "grown or shrunk",
            "iterates": "iterated",
            "measures": "measured (`len`, `sum`, `zip`, `stack`...)",
            "tests": "truth-tested",
            "reads": "read",
        }.get(use, "read")
