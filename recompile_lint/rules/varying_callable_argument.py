"""RCL401 varying-callable-argument (function rule): a called parameter whose call sites pass different functions."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import libcst as cst

from recompile_lint.analysis.context import FunctionContext
from recompile_lint.models import Boundedness, Guard, Severity, Subject
from recompile_lint.rules._common import RECOMPILE_LIMIT, display_path
from recompile_lint.rules._identity import CallableResolver, Callee, Trees
from recompile_lint.rules._shapes import sites_of
from recompile_lint.rules.base import Rule

if TYPE_CHECKING:
    from recompile_lint.analysis.risks import Risk


# Functions of ``torch.nn.functional`` written in Python (their code object is what Dynamo
# checks); most other ``torch.*`` callables are builtins, checked by the object's own identity.
PYTHON_FUNCTIONAL = frozenset(
    {
        "cross_entropy", "nll_loss", "kl_div", "binary_cross_entropy", "binary_cross_entropy_with_logits",
        "softmax", "log_softmax", "softmin", "relu", "silu", "mish", "dropout", "layer_norm", "group_norm",
        "normalize", "interpolate",
    }
)  # fmt: skip


def identity_guard(name: str, callees: list[Callee]) -> Guard | None:
    """The identity guard Dynamo installs on a function argument ``name``.

    A Python function or lambda is checked by its code object (``___check_obj_id(fn.__code__,
    ...)``), a builtin such as ``torch.sin`` by the object itself (``___check_obj_id(fn, ...)``),
    GROUND_TRUTH.md, Python functions. ``None`` when the callees are of both sorts or unknown:
    which guard fails first then depends on the order of the calls.
    """
    sorts = set()
    for callee in callees:
        identity = callee.identity
        if identity.startswith(("def ", "lambda ")):
            sorts.add("code")
        elif identity.startswith("torch.nn.functional."):
            leaf = identity.rsplit(".", 1)[-1]
            sorts.add("code" if leaf.endswith("_loss") or leaf in PYTHON_FUNCTIONAL else "unknown")
        elif identity.startswith("torch.") and identity.count(".") == 1:
            sorts.add("object")  # torch.sin, torch.relu: builtins bound from torch._C
        else:
            sorts.add("unknown")
    if sorts == {"code"}:
        return Guard("ID_MATCH", f"L[{name!r}].__code__")
    if sorts == {"object"}:
        return Guard("ID_MATCH", f"L[{name!r}]")
    return None


class VaryingCallableArgument(Rule):
    """A compiled function calls one of its parameters, and its callers pass different functions.

    Dynamo guards a function argument on its identity: ``___check_obj_id(fn.__code__, ...)`` for
    a Python function or lambda, ``___check_obj_id(fn, ...)`` for a builtin such as
    ``torch.sin``. Identity never becomes dynamic, so every distinct function compiles its own
    graph. A fixed handful of functions costs that many graphs; functions drawn from a container
    that grows, or more than ``recompile_limit`` (8) of them, push the region past the limit
    and it runs eagerly from then on. Re-creating the *same* lambda (one source line) costs
    nothing, because the guard is on its code object. A ``functools.partial`` or a callable
    object whose stored int changes recompiles once and then treats the value as an input.
    """

    code = "RCL401"
    name = "varying-callable-argument"
    severity = Severity.ERROR
    bounded = Boundedness.UNBOUNDED
    summary = "Compiled function calls a parameter that its call sites fill with different functions"

    VALID = (
        """
import torch


@torch.compile
def apply(fn, x: torch.Tensor) -> torch.Tensor:
    return fn(x) + 1


def train(x: torch.Tensor) -> None:
    for _ in range(10):
        apply(lambda t: t * 2, x)  # one lambda line: one code object, one graph
""",
        """
import torch


@torch.compile
def apply(x: torch.Tensor, which: torch.Tensor) -> torch.Tensor:
    return torch.where(which > 0, torch.sin(x), torch.cos(x))


def train(x: torch.Tensor) -> None:
    for k in range(10):
        apply(x, torch.tensor(k % 2))
""",
    )
    INVALID = (
        """
import torch

ACTIVATIONS = [torch.sin, torch.cos, torch.tanh]


@torch.compile
def apply(fn, x: torch.Tensor) -> torch.Tensor:
    return fn(x) + 1  # RCL401


def train(x: torch.Tensor) -> None:
    ACTIVATIONS.append(torch.sigmoid)
    for act in ACTIVATIONS:
        apply(act, x)
""",
        """
import torch


def double(t):
    return t * 2


def square(t):
    return t * t


@torch.compile
def apply(fn, x: torch.Tensor) -> torch.Tensor:
    return fn(x) + 1  # RCL401[warning]


def train(x: torch.Tensor) -> None:
    apply(double, x)
    apply(square, x)
""",
    )

    def claims(self, risk: "Risk") -> bool:
        """A function's identity guard (``___check_obj_id(fn.__code__, ...)``) a run of the
        project saw fail: compiled code calls a value that holds different functions."""
        return risk.run and risk.guard.guard.kind == "ID_MATCH" and risk.guard.guard.source.endswith(".__code__")

    def check_risk(self, risk: "Risk", ctx) -> None:
        from recompile_lint.rules._risk import logged, reader, report

        shown = logged(risk.guard.guard.source[: -len(".__code__")])
        report(
            ctx,
            risk,
            f"{reader(risk, ctx.index)} calls `{shown}`, and Dynamo guards the function's code "
            f"(`___check_obj_id({shown}.__code__, ...)`); {risk.evidence.why}",
            "pass one function and select the behaviour with a tensor or a flag outside the compiled code, "
            "or compile one function per callee",
        )

    def check_function(self, ctx: FunctionContext) -> None:
        if not ctx.is_entry:
            return
        params = [p for p in ctx.function.params if p.kind in ("positional", "keyword")]
        offset = 1 if ctx.function.class_name and params and params[0].name in ("self", "cls") else 0
        positions = {p.name: i - offset for i, p in enumerate(params) if p.kind == "positional" and i >= offset}
        keywords = {p.name for p in params[offset:]}
        called = self.called_parameters(ctx, keywords)
        if not called:
            return
        # Calls of this region's compiled object, not of a same-named function another
        # module defines (``f(x, fn)`` in two scripts that each compile their own ``f``).
        sites = sites_of(ctx.index, ctx.region)
        if not sites:
            return
        trees = self.trees(ctx)
        resolver = CallableResolver(ctx.index, trees)
        for name, node in called.items():
            callees: list[Callee] = []
            open_ended = False
            for site in sites:
                facts = ctx.index.facts(site.path)
                call = trees.node_at(site.path, site.span, ast.Call)
                if facts is None or not isinstance(call, ast.Call):
                    continue
                expr = self.argument(call, positions.get(name), name)
                if expr is None:
                    continue
                passed = resolver.passed(facts, call, expr)
                if passed is None:
                    continue
                callees.extend(passed.callees)
                open_ended = open_ended or passed.open_ended
            self.judge(ctx, node, name, callees, open_ended)

    @staticmethod
    def trees(ctx: FunctionContext) -> Trees:
        """One set of parsed call-site files per run, shared by every region and rule."""
        return Trees.of(ctx.index)

    @staticmethod
    def called_parameters(ctx: FunctionContext, names: set[str]) -> dict[str, cst.Call]:
        """Parameters the body calls (``fn(x)``), with the first such call."""
        found: dict[str, cst.Call] = {}
        for node in ctx.nodes_of(cst.Call):
            if isinstance(node.func, cst.Name) and node.func.value in names:
                found.setdefault(node.func.value, node)
        return found

    @staticmethod
    def argument(call: ast.Call, position: int | None, name: str) -> ast.expr | None:
        if any(isinstance(a, ast.Starred) for a in call.args):
            return None
        if position is not None and position < len(call.args):
            return call.args[position]
        for kw in call.keywords:
            if kw.arg == name:
                return kw.value
        return None

    def judge(self, ctx: FunctionContext, node: cst.Call, name: str, callees: list[Callee], open_ended: bool) -> None:
        identities: dict[str, Callee] = {}
        for callee in callees:
            identities.setdefault(callee.identity, callee)
        region = ctx.region.name
        examples = tuple(dict.fromkeys(c.text for c in identities.values()))
        subject = Subject(kind="callable", module=ctx.module.module, name=name, value_kind="function", examples=examples)
        if len(identities) >= 2:
            shown = ", ".join(f"`{c.text}` ({display_path(c.place)})" for c in list(identities.values())[:4])
            if len(identities) > 4:
                shown += f" (+{len(identities) - 4} more)"
            fix = (
                "Fix: compile the functions one by one (`torch.compile(fn)` per function, or a compiled "
                "wrapper per function), or select the operation with a tensor argument inside one graph"
            )
            if open_ended or len(identities) > RECOMPILE_LIMIT:
                why = "they come from a container that grows" if open_ended else f"there are {len(identities)} of them"
                ctx.report(
                    node,
                    f"compiled `{region}` calls its parameter `{name}`, and its call sites pass different "
                    f"functions ({shown}); Dynamo guards on the function's identity (`___check_obj_id`), one graph "
                    f"per function, and {why}: after {RECOMPILE_LIMIT} recompiles `{region}` falls back to eager "
                    f"(unbounded). {fix}",
                    severity=Severity.ERROR,
                    bounded=Boundedness.UNBOUNDED,
                    subject=subject,
                    guard=identity_guard(name, list(identities.values())),
                )
            else:
                ctx.report(
                    node,
                    f"compiled `{region}` calls its parameter `{name}`, and its call sites pass {len(identities)} "
                    f"different functions ({shown}); Dynamo guards on the function's identity "
                    f"(`___check_obj_id`), so each compiles its own graph (bounded: {len(identities)} graphs; "
                    f"more functions reach the limit of {RECOMPILE_LIMIT}). {fix}",
                    severity=Severity.WARNING,
                    bounded=Boundedness.BOUNDED,
                    subject=subject,
                    guard=identity_guard(name, list(identities.values())),
                )
            return
        varying = [c for c in callees if c.family in ("partial", "instance") and c.varying_kind]
        if identities and varying:
            callee = varying[0]
            what = "`functools.partial`" if callee.family == "partial" else "callable object"
            kind = callee.varying_kind
            # A partial's keyword is guarded by value: ``L['fn'].keywords['k'] == 0.3``.
            stored = Guard("CONSTANT_MATCH", f"L[{name!r}]{callee.member}") if callee.member else None
            if kind == "str":
                ctx.report(
                    node,
                    f"compiled `{region}` calls its parameter `{name}`, a {what} (`{callee.text}`) whose stored str "
                    f"changes per call; Dynamo guards on it (`fn.keywords[...] == ...` / `fn.<attr> == ...`), one graph "
                    f"per value: after {RECOMPILE_LIMIT} recompiles `{region}` falls back to eager (unbounded). "
                    f"Fix: pass the value as a separate argument or branch outside the compiled function",
                    severity=Severity.ERROR,
                    bounded=Boundedness.UNBOUNDED,
                    subject=subject,
                    guard=stored,
                )
                return
            ctx.report(
                node,
                f"compiled `{region}` calls its parameter `{name}`, a {what} (`{callee.text}`) whose stored value "
                f"changes per call; Dynamo guards on it (`fn.keywords[...] == 0` / `fn.<attr> == 0`), recompiles "
                f"once and then makes it an input (bounded: 2 graphs). Fix: pass the value as a tensor argument "
                f"instead of binding it into the callable",
                severity=Severity.WARNING,
                bounded=Boundedness.BOUNDED,
                subject=subject,
                guard=stored,
            )
