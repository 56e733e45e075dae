from __future__ import annotations

from recompile_lint.analysis.callsites import Argument, CallSite
from recompile_lint.analysis.context import ProjectContext
from recompile_lint.models import Boundedness, Severity, Subject
from recompile_lint.analysis.regions import CompiledRegion
from recompile_lint.rules._shapes import sites_of
from recompile_lint.rules.base import Rule


class SpecializedScalarArgument(Rule):
    """A str argument that takes many values, or an int argument under ``dynamic=False``,
    passed to a compiled function.

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


@torch.compile
def scaled(x, n: int):
    return x * n


def main(x):
    for n in range(10):
        scaled(x, n)  # default dynamic: one recompile, then n is symbolic
""",
    )
    INVALID = (
        """
import torch


@torch.compile
def act(x, name: str):
    return torch.relu(x) if name == "relu" else torch.tanh(x)


@torch.compile(dynamic=False)
def scaled(x, n: int):
    return x * n


def main(x, names):
    for name in names:
        act(x, name)  # RCL108
    for n in range(10):
        scaled(x, n)  # RCL108
""",
    )

    def check_project(self, ctx: ProjectContext) -> None:
        for region in ctx.regions:
            fn = ctx.index.function(region.entry)
            if fn is None or fn.is_lambda:
                continue
            params = [p for p in fn.params if p.kind in ("positional", "keyword")]
            if fn.class_name and params and params[0].name in ("self", "cls"):
                params = params[1:]
            reported: set[str] = set()
            for call in sites_of(ctx.index, region):
                for index, param in enumerate(params):
                    if param.name in reported:
                        continue
                    arg = self.argument(call, index, param.name, param.kind)
                    if arg is None:
                        continue
                    kind = self.scalar_kind(param.annotation, param.default_kind, arg, region)
                    if kind is None or not self.varies(arg, index, param.name, param.kind, region, ctx):
                        continue
                    reported.add(param.name)
                    self.report(ctx, region, call, param.name, kind)

    @staticmethod
    def argument(call: CallSite, index: int, name: str, kind: str) -> Argument | None:
        for key, arg in call.keywords:
            if key == name:
                return arg
        if kind == "positional" and index < len(call.args) and all(a.kind != "starred" for a in call.args[: index + 1]):
            return call.args[index]
        return None

    @staticmethod
    def scalar_kind(annotation: str, default_kind: str, arg: Argument, region: CompiledRegion) -> str | None:
        """``str``, or ``int`` under dynamic=False; None for anything else (or unknown)."""
        declared = annotation or default_kind
        kind = arg.kind if arg.kind in ("int", "str") else declared if declared in ("int", "str") else None
        if kind == "int" and region.dynamic != "False":
            return None  # one recompile, then dynamic: bounded, and RCL106 covers range bounds
        return kind

    def varies(self, arg: Argument, index: int, name: str, kind: str, region: CompiledRegion, ctx: ProjectContext) -> bool:
        """The value changes between calls: a loop variable, or different literals at the
        call sites of the same compiled object."""
        if arg.kind == "name" and arg.loop_var:
            return True
        if arg.kind not in ("int", "str"):
            return False
        texts = set()
        for other in sites_of(ctx.index, region):
            value = self.argument(other, index, name, kind)
            if value is not None and value.kind == arg.kind:
                texts.add(value.text)
        return len(texts) > 1

    def report(self, ctx: ProjectContext, region: CompiledRegion, call: CallSite, name: str, kind: str) -> None:
        if kind == "str":
            why = (
                f"a str argument is guarded by value (`{name} == 'a0'`) and never becomes symbolic, so every "
                f"new value compiles another graph"
            )
            fix = f"map `{name}` to a small fixed set of compiled functions, or pass an int code or a tensor"
        else:
            why = f"with `dynamic=False` an int argument stays a constant (`{name} == 2`), so every value is a new graph"
            fix = f"drop `dynamic=False` (the int becomes symbolic after one recompile) or pass `{name}` as a 0-d tensor"
        ctx.report(
            call.path,
            call.span,
            f"argument `{name}` of compiled `{region.name}` changes between calls here: {why}; after 8 "
            f"recompiles `{region.name}` falls back to eager for good (unbounded). Fix: {fix}",
            region=region.name,
            subject=Subject(kind="parameter", module=region.name.rsplit(".", 1)[0], name=name, value_kind=kind),
        )
