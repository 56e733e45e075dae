"""What the guard-model rules share: wording a risk's cost and reporting it with its guard and
evidence. A rule decides which risks are its own (``claims``) and says what and how to fix."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from recompile_lint.analysis.facts import Span
from recompile_lint.analysis.risks import RECOMPILE_LIMIT, Risk
from recompile_lint.models import Boundedness, Location, Severity
from recompile_lint.rules._common import display_path

if TYPE_CHECKING:
    from recompile_lint.analysis.context import ProjectContext


def logged(source: str) -> str:
    """A guard source as torch 2.13's recompile messages print it: locals by their bare name
    (``L['self'].step`` -> ``self.step``)."""
    return re.sub(r"L\['([A-Za-z_][A-Za-z0-9_]*)'\]", r"\1", source)


def short(name: str) -> str:
    """``poly`` for ``train.poly``; methods keep their class (``Net.forward``)."""
    parts = name.split(".")
    return ".".join(parts[-2:]) if len(parts) > 2 and parts[-2][:1].isupper() else parts[-1]


def reader(risk: Risk, index) -> str:
    """``compiled `train.poly``` or ``helper `pkg.ops.scale`, which compiled `train.poly` inlines,``."""
    region = risk.region.name
    if risk.guard.depth == 0:
        return f"compiled `{region}`"
    facts = index.facts(risk.guard.function.path)
    name = f"{facts.module}.{risk.guard.function.qualname}" if facts is not None and facts.module else risk.guard.function.qualname
    return f"`{name}`, which compiled `{region}` inlines,"


def changes(risk: Risk) -> str:
    """``changed at train.py:23 (in the loop that calls `poly`)``."""
    places = []
    for location in risk.evidence.locations:
        text = f"{display_path(location.path)}:{location.line}"
        if text not in places:
            places.append(text)
    shown = ", ".join(places[:2]) + (f" (+{len(places) - 2} more)" if len(places) > 2 else "")
    return f"changed at {shown} ({risk.evidence.why})"


def cost(risk: Risk) -> str:
    """What the changing value costs, as measured on torch 2.13, and the guards later values
    fail once it is symbolic (``Guard.then``)."""
    return _cost(risk) + "".join(_then(guard) for guard in risk.guard.guard.chain()[1:])


def _then(guard) -> str:
    if guard.source.startswith("L['___stack"):
        name = guard.source[3:-2]
        return (
            f"; once it is symbolic, the call it scales breaks the graph and the function that resumes "
            f"after the break guards the sizes of its result (`tensor '{name}' size mismatch`): a new value recompiles that too"
        )
    return f"; once its size is symbolic, Dynamo guards what the size decides (`{logged(guard.source)}`): a change there compiles another graph"


def _cost(risk: Risk) -> str:
    region = risk.region.name
    source = logged(risk.guard.guard.source) or risk.guard.storage.describe().strip("`")
    if risk.unbounded:
        return (
            f"every new value fails the guard on `{source}` and compiles another graph; after {RECOMPILE_LIMIT} "
            f"recompiles `{region}` falls back to eager for good (unbounded)"
        )
    values = risk.evidence.values
    if risk.branches:
        return f"Dynamo guards the branch a test on it takes, so each branch taken compiles its own graph (bounded: {risk.graphs} graphs)"
    if risk.graphs == 2 and (values is None or values > 2):
        # More values than graphs: automatic dynamic made it an input after one recompile.
        what = "its size becomes symbolic" if risk.guard.guard.kind == "TENSOR_MATCH" else "the value becomes a graph input"
        return f"the first change recompiles once, then {what} (bounded: 2 graphs)"
    return f"each of its values compiles its own graph (bounded: {risk.graphs} graphs)"


def report(ctx: "ProjectContext", risk: Risk, message: str, fix: str, at: Location | None = None) -> None:
    """Report ``risk`` at ``at`` (default: where compiled code reads the value), with the read,
    the first use, the writes or calls, and the compile site as its locations."""
    guard = risk.guard
    primary = at or guard.read
    evidence = list(risk.evidence.locations)
    if at is not None and at != guard.read:
        evidence.insert(0, Location(guard.read.path, guard.read.line, guard.read.column, "read", f"compiled code reads {guard.storage.describe()} here", guard.read.end_line, guard.read.end_column))
    if guard.use is not None:
        evidence.append(Location(guard.use.path, guard.use.line, guard.use.column, "use", "Dynamo names this line when the guard fails", guard.use.end_line, guard.use.end_column))
    evidence.append(risk.region.site_location())
    unbounded = risk.unbounded
    region = risk.region
    if region.frame_of:
        # A frame of its own only because of a graph break: without it, the compiled region
        # inlines the function again and reads the value in its own graph.
        where = f" (line {region.break_at.line})" if region.break_at is not None else ""
        fix = f"{fix}; or remove the graph break{where}, so that `{region.frame_of}` inlines `{region.name}` again"
    ctx.report(
        primary.path,
        Span(primary.line, primary.column, primary.end_line or primary.line, primary.end_column or primary.column),
        f"{message}: {cost(risk)}. Fix: {fix}",
        severity=Severity.ERROR if unbounded else Severity.WARNING,
        bounded=Boundedness.UNBOUNDED if unbounded else Boundedness.BOUNDED,
        subject=risk.subject(ctx.index),
        region=risk.region.name,
        function=_function_name(ctx, guard),
        guard=guard.guard if guard.guard.source else None,
        evidence=tuple(location for location in evidence if location != primary),
    )


def _function_name(ctx: "ProjectContext", guard) -> str:
    facts = ctx.index.facts(guard.function.path)
    return f"{facts.module}.{guard.function.qualname}" if facts is not None and facts.module else guard.function.qualname


def tensor_fix(name: str) -> str:
    return f"keep it in a 0-d tensor (`{name} = torch.tensor(0)`, updated in place with `.add_(1)` or `.fill_()`) or pass it as an argument"


def dynamic_sources_fix(risk: Risk) -> str:
    return f"or set `torch.compiler.config.dynamic_sources = \"{risk.guard.guard.source}\"`"
