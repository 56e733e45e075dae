"""RCL901 recompile-limit-raised (project rule): ``recompile_limit``/``cache_size_limit`` raised."""

from __future__ import annotations

import ast

from recompile_lint.analysis.context import ProjectContext
from recompile_lint.analysis.facts import ModuleFacts, dotted_name
from recompile_lint.models import Boundedness, Severity, Subject
from recompile_lint.rules._identity import Trees
from recompile_lint.rules.base import Rule

# Dynamo's limits and their torch 2.13 defaults.
LIMITS = {
    "recompile_limit": 8,
    "cache_size_limit": 8,
    "accumulated_recompile_limit": 256,
    "accumulated_cache_size_limit": 256,
}
CONFIG_MODULES = ("torch._dynamo.config", "torch.compiler.config", "torch._dynamo.eval_frame.config")
UNLIMITED = frozenset({"sys.maxsize", "math.inf", "float('inf')", 'float("inf")', "numpy.inf", "torch.inf"})


class RecompileLimitRaised(Rule):
    """``recompile_limit`` / ``cache_size_limit`` raised above its default.

    The limit is what turns an unbounded recompile into a silent eager fallback; raising it does
    not remove the cause, it only lets more graphs be compiled first (each costs a compile and a
    guard check on every call) before the same fallback. The finding names the compiled
    regions in the same file (or project) whose recompiles the setting hides. Add
    ``# noqa: RCL901`` where the growth is deliberate and bounded.
    """

    code = "RCL901"
    name = "recompile-limit-raised"
    severity = Severity.WARNING
    bounded = Boundedness.BOUNDED
    summary = "recompile_limit / cache_size_limit raised: postpones the eager fallback instead of fixing the cause"

    VALID = (
        """
import torch

torch._dynamo.config.recompile_limit = 1  # lowered: fail fast, nothing hidden


@torch.compile
def f(x):
    return x + 1
""",
    )
    INVALID = (
        """
import torch
import torch._dynamo.config as dynamo_config

torch._dynamo.config.cache_size_limit = 64  # RCL901
dynamo_config.recompile_limit = 64  # RCL901


@torch.compile
def f(x):
    return x + 1
""",
        """
import torch


@torch._dynamo.config.patch(recompile_limit=32)  # RCL901
def run(x):
    return torch.compile(lambda t: t + 1)(x)
""",
    )

    def check_project(self, ctx: ProjectContext) -> None:
        trees = Trees.of(ctx.index)
        for path in ctx.index.paths:
            text = ctx.index.text(path) or "" if ctx.wanted(path) else ""
            if not any(limit in text for limit in LIMITS):
                continue
            facts = ctx.index.facts(path)
            tree = trees.tree(path)
            if facts is None or tree is None:
                continue
            for node, limit, value in self.settings(facts, tree):
                if not self.raises(limit, value, facts):
                    continue
                self.report(ctx, trees, facts, node, limit, value)

    # ---- finding the settings --------------------------------------------------------------

    def settings(self, facts: ModuleFacts, tree: ast.Module):
        """(node to report, limit name, value expression or None for ``+=``) for each setting."""
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    limit = self.config_attribute(facts, target)
                    if limit and node.value is not None:
                        yield target, limit, (None if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Mult, ast.LShift)) else node.value)
            elif isinstance(node, ast.Call):
                callee = facts.resolve(dotted_name(node.func)) if dotted_name(node.func) else ""
                if callee == "setattr" and len(node.args) == 3 and self.is_config(facts, node.args[0]):
                    name = node.args[1]
                    if isinstance(name, ast.Constant) and name.value in LIMITS:
                        yield node, name.value, node.args[2]
                    continue
                if callee.endswith(".patch") and callee.rsplit(".", 1)[0] in CONFIG_MODULES:
                    for kw in node.keywords:
                        if kw.arg in LIMITS:
                            yield kw.value, kw.arg, kw.value
                    if len(node.args) == 2 and isinstance(node.args[0], ast.Constant) and node.args[0].value in LIMITS:
                        yield node.args[1], node.args[0].value, node.args[1]
                    for arg in node.args:
                        yield from self.dict_settings(arg)
                elif callee in ("torch.compile", "torch.compiler.compile"):
                    for kw in node.keywords:
                        if kw.arg in LIMITS:
                            yield kw.value, kw.arg, kw.value
                        elif kw.arg == "options":
                            yield from self.dict_settings(kw.value)

    @staticmethod
    def dict_settings(node: ast.AST):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value in LIMITS:
                    yield value, key.value, value

    def config_attribute(self, facts: ModuleFacts, target: ast.AST) -> str:
        """The limit name when ``target`` is ``<dynamo config>.<limit>``, else ""."""
        if isinstance(target, ast.Attribute) and target.attr in LIMITS and self.is_config(facts, target.value):
            return target.attr
        return ""

    @staticmethod
    def is_config(facts: ModuleFacts, node: ast.AST) -> bool:
        text = dotted_name(node)
        return bool(text) and facts.resolve(text) in CONFIG_MODULES

    @staticmethod
    def raises(limit: str, value: ast.AST | None, facts: ModuleFacts) -> bool:
        """Above the default; ``+=``/``*=`` and 'unlimited' spellings count; unknown values do not."""
        if value is None:
            return True
        if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)) and not isinstance(value.value, bool):
            return value.value > LIMITS[limit]
        text = ast.unparse(value)
        resolved = facts.resolve(dotted_name(value)) if dotted_name(value) else text
        return text in UNLIMITED or resolved in UNLIMITED

    # ---- reporting -----------------------------------------------------------------------

    def report(self, ctx: ProjectContext, trees: Trees, facts: ModuleFacts, node: ast.AST, limit: str, value: ast.AST | None) -> None:
        local = sorted({r.name for r in ctx.regions if r.site_path == facts.path or r.entry.path == facts.path})
        regions = local or sorted({r.name for r in ctx.regions})
        if regions:
            shown = ", ".join(f"`{name}`" for name in regions[:3]) + (f" (+{len(regions) - 3} more)" if len(regions) > 3 else "")
            hides = f"it hides the recompiles of {shown}"
        else:
            hides = "it hides the recompiles of every compiled function in the process"
        to = f" to {ast.unparse(value)}" if value is not None else ""
        message = (
            f"`{limit}` raised{to} (default {LIMITS[limit]}): this only postpones the eager fallback, and every "
            f"extra graph still costs a compile and a guard check per call; {hides}. Fix the cause of the "
            f"recompiles (run recompile-lint or `TORCH_LOGS=recompiles`) and drop the setting, or add "
            f"`# noqa: {self.code}` if the growth is deliberate"
        )
        ctx.report(
            facts.path,
            trees.span(facts.path, node),
            message,
            subject=Subject(kind="config", module=facts.module, name=limit, value_kind="int", examples=(ast.unparse(value),) if value is not None else ()),
            region=regions[0] if len(regions) == 1 else "",
            function=facts.module,
        )
