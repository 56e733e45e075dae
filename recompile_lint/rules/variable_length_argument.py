from __future__ import annotations

import libcst as cst

from recompile_lint.analysis.callsites import Argument
from recompile_lint.analysis.context import FunctionContext
from recompile_lint.models import Boundedness, Severity, Subject
from recompile_lint.rules._common import RECOMPILE_LIMIT, places
from recompile_lint.rules._shapes import (
    SHAPE_METHODS,
    argument_for,
    entry_params,
    is_sequence_annotation,
    is_slice_argument,
    sites_of,
)
from recompile_lint.rules.base import Rule

CONTAINER_KINDS = frozenset({"list", "tuple", "dict", "set"})
# Built-ins and methods whose result depends on how many elements a container holds.
LENGTH_CONSUMERS = frozenset({"len", "sum", "zip", "enumerate", "sorted", "reversed", "list", "tuple", "min", "max", "any", "all", "map"})
CONTAINER_METHODS = frozenset({"items", "keys", "values"})


class VariableLengthArgument(Rule):
    """A list, tuple or dict argument of a compiled function whose length differs between calls.

    Dynamo unrolls a Python container into the graph and guards on its length
    (``len(xs) == 1``; for dicts ``len(d) != 1`` and the key order). Every new length compiles
    another graph; after ``recompile_limit`` (8) the function silently runs eagerly. Reported
    when the region uses the parameter (iterates it, takes ``len``, unpacks, ``zip``s or
    ``sum``s it, or indexes it) and its call sites pass different lengths: displays of
    different sizes, slices bounded by a loop variable (``feats[:i]``), lists appended to in a
    loop, or loop variables.
    """

    code = "RCL202"
    name = "variable-length-argument"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "List/tuple/dict argument of a compiled function whose length varies between calls"
    # The answer depends on the region (its dynamic= option, its call sites): a helper reached
    # from several regions is checked for each.
    per_region = True

    VALID = (
        """
import torch


@torch.compile
def fuse(feats: list[torch.Tensor]) -> torch.Tensor:
    return sum(feats)


def run(a, b, c):
    fuse([a, b])
    fuse([c, a])  # always two tensors: one graph
""",
        """
import torch


@torch.compile
def fuse(feats: torch.Tensor) -> torch.Tensor:
    return feats.sum(0)


def run(feats):
    for i in range(1, 8):
        fuse(torch.stack(feats[:i]))  # one stacked tensor: the length is a dynamic size
""",
    )
    INVALID = (
        """
import torch


@torch.compile
def fuse(feats: list[torch.Tensor]) -> torch.Tensor:
    return sum(feats)  # RCL202


def run(feats):
    for i in range(1, 8):
        fuse(feats[:i])
""",
        """
import torch


@torch.compile
def weighted(parts):
    total = 0
    for name, x in parts.items():  # RCL202
        total = total + x
    return total


def run(a, b):
    weighted({"a": a})
    weighted({"a": a, "b": b})
""",
    )

    def check_function(self, ctx: FunctionContext) -> None:
        if not ctx.is_entry:
            return
        params = entry_params(ctx.index, ctx.region)
        sites = sites_of(ctx.index, ctx.region)
        if not sites:
            return
        nodes = ctx.nodes_of(cst.Call, cst.Name, cst.For, cst.CompFor, cst.Assign)
        for param in params:
            if param.kind not in ("positional", "keyword") or not ctx.is_local(param.name):
                continue
            args = [(site, argument_for(site, params, param.name)) for site in sites]
            known = [(site, arg) for site, arg in args if arg is not None]
            use = self.first_use(nodes, param.name)
            if use is None or not known:
                continue
            container = is_sequence_annotation(param.annotation) or any(a.kind in CONTAINER_KINDS for _, a in known) or self.used_as_container(nodes, param.name)
            if not container:
                continue
            reasons, literal_lengths = self.varying(known)
            if not reasons:
                continue
            if literal_lengths:
                # Only displays of a few fixed lengths: one graph per length, no more.
                severity, bounded = Severity.WARNING, Boundedness.BOUNDED
                cost = f"one graph per length ({literal_lengths} graphs, bounded)"
            else:
                severity, bounded = Severity.ERROR, Boundedness.UNBOUNDED
                cost = (
                    f"each new length compiles another graph; after {RECOMPILE_LIMIT} recompiles the function "
                    f"falls back to eager for good (unbounded)"
                )
            kind = next((a.kind for _, a in known if a.kind in CONTAINER_KINDS), "") or param.annotation.split("[", 1)[0].lower() or "list"
            examples = tuple(dict.fromkeys(a.text for _, a in known))[:4]
            ctx.report(
                use,
                f"`{param.name}` is a Python {kind} whose length compiled `{ctx.region.name}` depends on, "
                f"and callers pass different lengths ({reasons}): Dynamo guards `len({param.name}) == N`: {cost}. "
                f"Fix: pass one tensor (`torch.stack`/`torch.cat`, padded to a fixed count if needed) so the length "
                f"becomes a dynamic size, or keep the length constant",
                severity=severity,
                bounded=bounded,
                subject=Subject(kind="length", module=ctx.module.module, name=param.name, value_kind=kind, examples=examples),
            )

    @staticmethod
    def first_use(nodes: list[cst.CSTNode], name: str) -> cst.CSTNode | None:
        """The first load of ``name``; None when its only uses are shapes (``x.view(*shape)``:
        RCL201 reports those as a rank change)."""
        starred_shape: set[int] = set()
        for node in nodes:
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in SHAPE_METHODS:
                for arg in node.args:
                    if arg.star == "*" and isinstance(arg.value, cst.Name):
                        starred_shape.add(id(arg.value))
        first = None
        shape_only = True
        for node in nodes:
            if isinstance(node, cst.Name) and node.value == name:
                if first is None:
                    first = node
                if id(node) not in starred_shape:
                    shape_only = False
        if first is None or shape_only:
            return None
        return first

    @staticmethod
    def used_as_container(nodes: list[cst.CSTNode], name: str) -> bool:
        """The body iterates ``name``, takes its ``len``, unpacks it or calls ``.items()``."""
        for node in nodes:
            if isinstance(node, (cst.For, cst.CompFor)) and isinstance(node.iter, cst.Name) and node.iter.value == name:
                return True
            if isinstance(node, cst.Call):
                if isinstance(node.func, cst.Name) and node.func.value in LENGTH_CONSUMERS:
                    if any(isinstance(a.value, cst.Name) and a.value.value == name for a in node.args):
                        return True
                if isinstance(node.func, cst.Attribute) and node.func.attr.value in CONTAINER_METHODS and isinstance(node.func.value, cst.Name) and node.func.value.value == name:
                    return True
            if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value == name:
                if any(isinstance(t.target, (cst.Tuple, cst.List)) for t in node.targets):
                    return True
        return False

    @staticmethod
    def varying(known: list[tuple[object, Argument]]) -> tuple[str, int]:
        """Why the lengths differ between calls, in words ("" when they do not, or unknown),
        and the number of distinct lengths when literal displays are the only reason (else 0)."""
        reasons: list[str] = []
        lengths = {}
        for site, arg in known:
            if arg.length is not None and arg.kind in CONTAINER_KINDS:
                lengths.setdefault(arg.length, (site.path, site.span.line))  # type: ignore[attr-defined]
        if len(lengths) > 1:
            reasons.append(f"{len(lengths)} different lengths at {places(lengths.values())}")
        for site, arg in known:
            where = places([(site.path, site.span.line)])  # type: ignore[attr-defined]
            if is_slice_argument(arg):
                reasons.append(f"`{arg.text}` sliced by a loop variable at {where}")
            elif arg.grown:
                reasons.append(f"`{arg.text}`, appended to in a loop, at {where}")
            elif arg.kind == "name" and arg.loop_var:
                reasons.append(f"loop variable `{arg.text}` at {where}")
            elif arg.kind in ("other", "call", "list", "tuple", "dict", "set") and arg.loop_names and arg.length is None:
                reasons.append(f"`{arg.text}` built from loop variable `{arg.loop_names[0]}` at {where}")
        literal_only = len(reasons) == 1 and len(lengths) > 1 and len(lengths) < RECOMPILE_LIMIT
        return "; ".join(dict.fromkeys(reasons)), len(lengths) if literal_only else 0
