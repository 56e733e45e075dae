from __future__ import annotations

import libcst as cst

from recompile_lint.analysis.context import FunctionContext, child_nodes
from recompile_lint.models import Boundedness, Severity, Subject
from recompile_lint.rules._common import constant_key, dotted, via, where
from recompile_lint.rules.base import Rule

NUMBER_CASTS = frozenset({"int", "float"})


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

    def check_function(self, ctx: FunctionContext) -> None:
        casts: set[int] = set()
        for node in ctx.nodes_of(cst.Call):
            if dotted(node.func) in NUMBER_CASTS and ctx.global_value(dotted(node.func)) is None:
                for arg in node.args:
                    for inner in _walk(arg.value):
                        casts.add(id(inner))
        for node in ctx.nodes_of(cst.Subscript, cst.Call):
            key = self.environ_key(ctx, node)
            if key is None:
                continue
            written = ctx.index.mutations("environ", "", key) if key else []
            written = written or ctx.index.mutations("environ", "", "*") if not key else written
            converted = id(node) in casts
            name = f"`{key}`" if key else "the environment"
            if written or converted:
                cost = (
                    f"every new value compiles another graph; after 8 recompiles `{ctx.region.name}` falls back to eager for good (unbounded)"
                )
                detail = f" and the program changes it at {where(written)}" if written else " and converted to a number it is baked into the graph"
                severity, bounded = Severity.ERROR, Boundedness.UNBOUNDED
            else:
                cost = "a value changed between calls would compile another graph each time"
                detail = ""
                severity, bounded = Severity.WARNING, Boundedness.BOUNDED
            ctx.report(
                node,
                f"environment variable {name} is read in {via(ctx)}{detail}: the guard holds its value, so {cost}. "
                f"Fix: read it once outside the compiled function and pass the value in (as a tensor if it changes)",
                severity=severity,
                bounded=bounded,
                subject=Subject(kind="environ", key=key, value_kind="int" if converted else "str"),
            )

    @staticmethod
    def environ_key(ctx: FunctionContext, node: cst.CSTNode) -> str | None:
        """The variable name of an environment read (``""`` when not a literal), else None."""
        if isinstance(node, cst.Subscript) and ctx.module.resolve(dotted(node.value)) == "os.environ":
            return constant_key(node) or ""
        if isinstance(node, cst.Call):
            callee = ctx.module.resolve(dotted(node.func))
            if callee in ("os.environ.get", "os.getenv", "os.environ.__getitem__"):
                first = node.args[0].value if node.args else None
                if isinstance(first, cst.SimpleString) and isinstance(first.evaluated_value, str):
                    return first.evaluated_value
                return ""
        return None


def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(child_nodes(current))
