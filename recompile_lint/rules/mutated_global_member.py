from __future__ import annotations

import libcst as cst

from recompile_lint.analysis.context import FunctionContext, GlobalValue
from recompile_lint.analysis.facts import Mutation
from recompile_lint.models import Boundedness, Guard, Severity, Subject
from recompile_lint.rules._common import BOUNDED_KINDS, UNBOUNDED_KINDS, constant_key, cost, kinds_of, reads_of, global_source, via, where, writes
from recompile_lint.rules.base import Rule

# Globals whose members are values a guard can hold: dicts, config objects, classes.
CONTAINER_KINDS = frozenset({"dict", "object", "class", "unknown"})


def member_kind(ctx: FunctionContext, value: GlobalValue, key: str, mutations: list[Mutation]) -> str:
    """The kind of ``value[key]`` / ``value.key`` from its initialiser, else from its updates."""
    kind = ""
    binding = value.binding
    if binding is not None:
        kind = binding.item_kind(key)
        if not kind and binding.kind == "object" and binding.class_ref and value.origin is not None:
            found = ctx.index.resolve_class(binding.class_ref, value.origin.path)
            if found is not None:
                attr = ctx.index.class_attr(found[0], found[1], key)
                kind = attr[2].kind if attr else ""
        if not kind and binding.kind == "class" and value.origin is not None:
            cls = value.origin.cls(binding.name)
            if cls is not None:
                attr = ctx.index.class_attr(value.origin, cls, key)
                kind = attr[2].kind if attr else ""
    if kind in ("", "unknown", "none"):
        kinds = kinds_of(mutations)
        kind = "float" if "float" in kinds else (kinds.pop() if len(kinds) == 1 else kind)
    return kind


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

    def check_function(self, ctx: FunctionContext) -> None:
        reads = reads_of(ctx)
        updated = {id(u.target) for u in reads.updates if isinstance(u, cst.AugAssign)}
        seen: set[tuple[str, str, str]] = set()
        for node in reads.subscripts:
            if id(node) in updated or not isinstance(node.value, cst.Name):
                continue
            key = constant_key(node)
            if key is None:
                continue
            self.check(ctx, node, node.value.value, key, "item", seen)
        for node in reads.attributes:
            if id(node) in updated or not isinstance(node.value, cst.Name):
                continue
            self.check(ctx, node, node.value.value, node.attr.value, "attribute", seen)

    def check(self, ctx: FunctionContext, node: cst.CSTNode, name: str, key: str, kind: str, seen: set) -> None:
        value = ctx.global_value(name)
        if value is None or value.binding is None or value.binding.kind not in CONTAINER_KINDS:
            return
        if (value.facts.path, name, key) in seen:
            return
        # Rebinding the container itself (``cfg = replace(cfg, k=v)``) changes the member too.
        mutations = ctx.member_mutations(value, kind, key) + [m for m in ctx.global_mutations(value) if m.op != "replace"]
        if kind == "attribute" and value.binding.kind == "object" and value.binding.class_ref and value.origin is not None:
            # ``self.scale = v`` inside the config object's own methods changes it too.
            found = ctx.index.resolve_class(value.binding.class_ref, value.origin.path)
            if found is not None:
                owner = f"{found[0].module}.{found[1].qualname}"
                mutations += [m for m in ctx.index.mutations("instance-attribute", "", key) if m.owner == owner]
        if not mutations:
            return
        member_type = member_kind(ctx, value, key, mutations)
        if member_type not in UNBOUNDED_KINDS | BOUNDED_KINDS:
            return
        seen.add((value.facts.path, name, key))
        text = f"{name}[{key!r}]" if kind == "item" else f"{name}.{key}"
        unbounded = member_type in UNBOUNDED_KINDS
        owner_module = value.origin.module if value.origin is not None else value.facts.module
        ctx.report(
            node,
            f"`{text}` ({member_type}) is read in {via(ctx)} and changed at {where(mutations)}: "
            f"{cost(member_type, ctx.region.name)}. Fix: store it as a 0-d tensor "
            f"(`{text} = torch.tensor(...)`, updated in place with `.fill_()`), or pass it to the "
            f"compiled function as an argument",
            severity=Severity.ERROR if unbounded else Severity.WARNING,
            bounded=Boundedness.UNBOUNDED if unbounded else Boundedness.BOUNDED,
            subject=Subject(kind=kind, module=owner_module, name=value.binding.name, key=key, value_kind=member_type),
            guard=Guard("CONSTANT_MATCH", global_source(ctx, name) + (f"[{key!r}]" if kind == "item" else f".{key}")),
            evidence=writes(mutations, f"`{text}`"),
        )
