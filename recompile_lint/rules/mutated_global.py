from __future__ import annotations

import libcst as cst

from recompile_lint.analysis.context import FunctionContext
from recompile_lint.models import Boundedness, Guard, Severity, Subject
from recompile_lint.rules._common import BOUNDED_KINDS, UNBOUNDED_KINDS, cost, dotted, global_source, kinds_of, reads_of, via, where, writes
from recompile_lint.rules.base import Rule


class MutatedGlobal(Rule):
    """A module-level int or str that compiled code reads and other code reassigns.

    Dynamo reads a global Python scalar as a constant and guards on its value
    (``G['step'] == 1``). Each new value fails the guard and compiles another graph; after
    ``recompile_limit`` (8) the function silently runs eagerly. A float recompiles once and
    then becomes an input; a bool or enum costs one graph per value.
    """

    code = "RCL101"
    name = "mutated-global"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "Module global int/str read in compiled code and reassigned elsewhere"

    VALID = (
        """
import torch

SCALE = 3  # never reassigned: one graph


@torch.compile
def poly(x):
    return x * SCALE
""",
        """
import torch

step = torch.zeros(())  # a 0-d tensor is an input, not a constant


@torch.compile
def poly(x):
    return x * step


def train(x):
    for _ in range(10):
        poly(x)
        step.add_(1)
""",
    )
    INVALID = (
        """
import torch

step = 0


@torch.compile
def poly(x):
    return x * step + x ** 2 * step  # RCL101


def train(x):
    global step
    for _ in range(10):
        poly(x)
        step += 1
""",
    )

    def check_function(self, ctx: FunctionContext) -> None:
        reads = reads_of(ctx)
        updated = {id(u.target) for u in reads.updates if isinstance(u, cst.AugAssign)}
        seen: set[tuple[str, str]] = set()
        for node in reads.names:
            if id(node) in updated or node.value in reads.lambda_params:
                continue
            value = ctx.global_value(node.value)
            if value is None or value.binding is None or value.binding.kind in ("module", "imported", "function", "class"):
                continue
            self.check_value(ctx, node, value.facts.path, value.facts.module, node.value, value.kind, seen, global_source(ctx, node.value))
        for node in reads.attributes:
            # ``ops.STEP`` where ``ops`` is a project module: a global of that module.
            if id(node) in updated or not isinstance(node.value, (cst.Name, cst.Attribute)):
                continue
            base = dotted(node.value)
            if not base or ctx.is_local(base.split(".")[0]):
                continue
            target = ctx.module.resolve(base)
            other = ctx.index.module_facts(target, ctx.path)
            if other is None or (base == target and ctx.module.binding(base.split(".")[0]) is not None and ctx.module.binding(base.split(".")[0]).kind != "module"):
                continue
            binding = other.binding(node.attr.value)
            if binding is None:
                continue
            kind = binding.kind
            if kind in ("unknown", "none"):
                kind = next(iter(kinds_of(ctx.index.mutations("global", other.path, node.attr.value))), kind)
            self.check_value(ctx, node, other.path, other.module, node.attr.value, kind, seen, global_source(ctx, f"{base}.{node.attr.value}"))

    def check_value(self, ctx: FunctionContext, node: cst.CSTNode, path: str, module: str, name: str, kind: str, seen: set, source: str) -> None:
        if (path, name) in seen or kind not in UNBOUNDED_KINDS | BOUNDED_KINDS:
            return
        mutations = ctx.index.mutations("global", path, name)
        if not mutations:
            return
        if any(src.endswith((f"['{name}']", f'["{name}"]', f".{name}")) for src in ctx.index.dynamic_sources({path, ctx.path, ctx.region.site_path})):
            # Declared a dynamic source: Dynamo makes it a symbolic input, one graph.
            return
        seen.add((path, name))
        unbounded = kind in UNBOUNDED_KINDS
        fix = (
            f"keep it in a 0-d tensor (`{name} = torch.tensor(0)`, updated in place with `{name}.add_(1)` or `.fill_()`), "
            f"pass it as an argument, or set `torch.compiler.config.dynamic_sources = \"G['{name}']\"`"
        )
        if kind == "bool" or kind == "enum":
            fix = f"pass `{name}` as an argument or branch outside the compiled function"
        ctx.report(
            node,
            f"global `{name}` ({kind}) is read in {via(ctx)} and reassigned at {where(mutations)}: "
            f"{cost(kind, ctx.region.name)}. Fix: {fix}",
            severity=Severity.ERROR if unbounded else Severity.WARNING,
            bounded=Boundedness.UNBOUNDED if unbounded else Boundedness.BOUNDED,
            subject=Subject(kind="global", module=module, name=name, value_kind=kind),
            guard=Guard("ID_MATCH" if kind == "enum" else "CONSTANT_MATCH", source),
            evidence=writes(mutations, f"`{name}`"),
        )
