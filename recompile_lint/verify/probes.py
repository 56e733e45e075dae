"""Probe builders: for each rule code, what to vary between calls of the compiled region.

A builder takes a ``ProbeContext`` (the imported module, the located region, arguments that
work on the uncompiled callable) and returns a ``Probe``: ``apply(i)`` prepares call ``i``
(sets the global, the attribute, the env var, or returns different arguments) and
``restore()`` puts everything back. Supporting a new rule code is one entry in ``PROBES``.
Runs in the child process; torch is reached through ``ctx.torch``.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import os
import sys
from dataclasses import dataclass, field
from types import CodeType, ModuleType
from typing import Any, Callable, Mapping

from recompile_lint.models import Subject
from recompile_lint.verify.synthesis import CallArgs


class ProbeError(Exception):
    """The probe cannot be built; the message says why (the verdict is ``unverifiable``)."""


@dataclass(frozen=True)
class FindingSpec:
    """The parts of a finding a probe needs, as sent to the child process."""

    index: int
    code: str
    region: str
    function: str
    path: str
    line: int
    subject: Subject | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "FindingSpec":
        raw = data.get("subject")
        subject = None
        if isinstance(raw, Mapping):
            subject = Subject(
                kind=str(raw.get("kind", "")),
                module=str(raw.get("module", "")),
                name=str(raw.get("name", "")),
                key=str(raw.get("key", "")),
                owner=str(raw.get("owner", "")),
                value_kind=str(raw.get("value_kind", "")),
                examples=tuple(str(e) for e in raw.get("examples", ())),
            )
        return cls(
            index=int(data["index"]),
            code=str(data["code"]),
            region=str(data.get("region", "")),
            function=str(data.get("function", "")),
            path=str(data.get("path", "")),
            line=int(data.get("line", 0)),
            subject=subject,
        )


@dataclass
class Target:
    """A located compiled region: what to call, its uncompiled twin and its code object."""

    compiled: Callable[..., Any]
    plain: Callable[..., Any]
    code: CodeType | None
    instance: Any = None  # the nn.Module (or object) the region is a method of
    how: str = ""
    signature: Any = None  # the callable whose parameters a call must fill (default: plain)


@dataclass
class ProbeContext:
    """Everything a probe builder may use."""

    finding: FindingSpec
    module: ModuleType
    target: Target
    args: CallArgs
    calls: int
    torch: Any
    device: str = "cpu"


@dataclass
class Probe:
    """How to vary the blamed value across calls."""

    description: str
    apply: Callable[[int], CallArgs | None]
    restore: Callable[[], None] = field(default=lambda: None)


ProbeBuilder = Callable[[ProbeContext], Probe]


def _resolve_module(name: str, fallback: ModuleType) -> ModuleType:
    """The module holding a subject's value (the region's module when the name is unknown)."""
    if not name or name == fallback.__name__:
        return fallback
    if name in sys.modules:
        return sys.modules[name]
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - names differ when the tree is not a package
        for loaded, module in list(sys.modules.items()):
            if module is not None and (loaded.endswith("." + name) or name.endswith("." + loaded)):
                return module
    return fallback


def _resolve_attr(root: Any, dotted: str) -> Any:
    obj = root
    for part in dotted.split("."):
        if not hasattr(obj, part):
            raise ProbeError(f"{getattr(root, '__name__', root)!s} has no attribute {dotted!r}")
        obj = getattr(obj, part)
    return obj


def _literal_examples(subject: Subject | None) -> list[Any]:
    values = []
    for text in subject.examples if subject else ():
        try:
            values.append(ast.literal_eval(text))
        except (ValueError, SyntaxError):
            continue
    return values


class _FreeNames(dict):  # type: ignore[type-arg]
    """Locals for evaluating call-site examples: unknown names (loop variables) become ``value``."""

    def __init__(self, module: ModuleType, value: int) -> None:
        super().__init__()
        self._module = module
        self._value = value
        self.used = False

    def __missing__(self, key: str) -> Any:
        import builtins

        if key in vars(self._module) or hasattr(builtins, key):
            raise KeyError(key)
        self.used = True
        return self._value


def evaluate_examples(examples: tuple[str, ...], module: ModuleType, count: int) -> list[Any]:
    """The call-site examples evaluated in the module; free names take 1, 2, 3, ... per value.

    ``Power(power)`` becomes ``Power(1)``, ``Power(2)``...; ``torch.relu`` stays itself.
    Examples that need their call site's other locals are skipped.
    """
    values: list[Any] = []
    for text in examples:
        for i in range(1, count + 1):
            names = _FreeNames(module, i)
            try:
                value = eval(text, vars(module), names)  # noqa: S307 - the user's own source text
            except Exception:  # noqa: BLE001
                break
            values.append(value)
            if not names.used:
                break
        if len(values) >= count:
            break
    return values[:count]


def value_series(current: Any, calls: int, examples: list[Any] | None = None) -> list[Any]:
    """``calls`` values of the same type as ``current``, starting with ``current``."""
    examples = [e for e in (examples or []) if type(e) is type(current) and e != current]
    if isinstance(current, bool):
        return [current if i % 2 == 0 else not current for i in range(calls)]
    if isinstance(current, enum.Enum):
        members = list(type(current))
        start = members.index(current)
        return [members[(start + i) % len(members)] for i in range(calls)]
    if isinstance(current, int):
        return [current + i for i in range(calls)]
    if isinstance(current, float):
        return [current + 0.5 * i for i in range(calls)]
    if isinstance(current, str):
        values = [current, *examples]
        i = 0
        while len(values) < calls:
            values.append(f"{current}{i}")
            i += 1
        return values[:calls]
    raise ProbeError(f"cannot vary a value of type {type(current).__name__}")


def _setter_probe(description: str, get: Callable[[], Any], put: Callable[[Any], None],
                  values: list[Any]) -> Probe:
    original = get()

    def apply(i: int) -> None:
        put(values[i % len(values)])
        return None

    return Probe(description, apply, lambda: put(original))


def vary_subject(ctx: ProbeContext) -> Probe:
    """Set the blamed value (global, dict item, attribute, instance attribute, env var)."""
    subject = ctx.finding.subject
    if subject is None:
        raise ProbeError(f"{ctx.finding.code} finding names no subject to vary")
    examples = _literal_examples(subject)
    kind = subject.kind
    if kind == "global":
        holder = _resolve_module(subject.module, ctx.module)
        if not hasattr(holder, subject.name):
            raise ProbeError(f"module {holder.__name__} has no global {subject.name!r}")
        current = getattr(holder, subject.name)
        values = value_series(current, ctx.calls, examples)
        return _setter_probe(
            f"set {holder.__name__}.{subject.name} to {_span(values)}",
            lambda: getattr(holder, subject.name),
            lambda v: setattr(holder, subject.name, v),
            values,
        )
    if kind == "item":
        holder = _resolve_module(subject.module, ctx.module)
        container = _resolve_attr(holder, subject.name)
        key: Any = subject.key
        try:
            if key not in container and key.lstrip("-").isdigit():
                key = int(key)
            current = container[key]
        except Exception as exc:  # noqa: BLE001 - any container type
            raise ProbeError(f"{subject.name}[{subject.key!r}] cannot be read: {exc}") from exc
        values = value_series(current, ctx.calls, examples)
        return _setter_probe(
            f"set {subject.name}[{key!r}] to {_span(values)}",
            lambda: container[key],
            lambda v: container.__setitem__(key, v),
            values,
        )
    if kind == "attribute":
        holder = _resolve_module(subject.module, ctx.module)
        obj = _resolve_attr(holder, subject.name)
        if not hasattr(obj, subject.key):
            raise ProbeError(f"{subject.name} has no attribute {subject.key!r}")
        values = value_series(getattr(obj, subject.key), ctx.calls, examples)
        if _is_frozen(obj) and "." not in subject.name:
            # A frozen dataclass changes the way its program changes it: ``cfg = replace(cfg, k=v)``.
            def rebind(i: int) -> None:
                setattr(holder, subject.name, dataclasses.replace(obj, **{subject.key: values[i % len(values)]}))
                return None

            return Probe(
                f"rebound {subject.name} = replace({subject.name}, {subject.key}=...) with {_span(values)}",
                rebind,
                lambda: setattr(holder, subject.name, obj),
            )
        return _setter_probe(
            f"set {subject.name}.{subject.key} to {_span(values)}",
            lambda: getattr(obj, subject.key),
            lambda v: setattr(obj, subject.key, v),
            values,
        )
    if kind == "instance-attribute":
        inst = _owner_instance(ctx, subject)
        if not hasattr(inst, subject.name):
            raise ProbeError(f"{type(inst).__name__} instance has no attribute {subject.name!r}")
        values = value_series(getattr(inst, subject.name), ctx.calls, examples)
        return _setter_probe(
            f"set {type(inst).__name__}.{subject.name} to {_span(values)}",
            lambda: getattr(inst, subject.name),
            lambda v: setattr(inst, subject.name, v),
            values,
        )
    if kind == "environ":
        return _environ_probe(ctx, subject)
    raise ProbeError(f"no way to vary a subject of kind {kind!r} for {ctx.finding.code}")


def _is_frozen(obj: Any) -> bool:
    params = getattr(type(obj), "__dataclass_params__", None)
    return bool(getattr(params, "frozen", False))


def _span(values: list[Any]) -> str:
    distinct = list(dict.fromkeys(repr(v) for v in values))
    if len(distinct) <= 3:
        return ", ".join(distinct)
    return f"{distinct[0]}, {distinct[1]}, ... {distinct[-1]}"


def _owner_instance(ctx: ProbeContext, subject: Subject) -> Any:
    """The object whose attribute the finding blames: the region's instance or one it holds."""
    owner = subject.owner.rsplit(".", 1)[-1]
    inst = ctx.target.instance
    if inst is not None:
        if not owner or type(inst).__name__ == owner:
            return inst
        modules = getattr(inst, "modules", None)
        if callable(modules):
            for sub in modules():
                if type(sub).__name__ == owner:
                    return sub
        for value in vars(inst).values():
            if type(value).__name__ == owner:
                return value
    for value in vars(ctx.module).values():
        if owner and type(value).__name__ == owner:
            return value
        orig = getattr(value, "_orig_mod", None)
        if owner and orig is not None and type(orig).__name__ == owner:
            return orig
    if inst is not None:
        return inst
    raise ProbeError(f"no instance of {subject.owner or 'the owner class'} to vary")


def _environ_probe(ctx: ProbeContext, subject: Subject) -> Probe:
    key = subject.key
    if not key:
        raise ProbeError("the environment variable's name is computed at run time")
    original = os.environ.get(key)
    current: Any
    if original is None:
        current = 1
    else:
        try:
            current = int(original)
        except ValueError:
            try:
                current = float(original)
            except ValueError:
                current = original
    values = [str(v) for v in value_series(current, ctx.calls, _literal_examples(subject))]

    def put(value: str | None) -> None:
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value

    def apply(i: int) -> None:
        put(values[i % len(values)])
        return None

    return Probe(f"set ${key} to {_span(values)}", apply, lambda: put(original))


def repeat_calls(ctx: ProbeContext) -> Probe:
    """Call the region repeatedly: it updates the blamed counter itself."""
    return Probe(f"called {ctx.calls} times (the region updates the value itself)", lambda i: None)


def vary_parameter(ctx: ProbeContext) -> Probe:
    """Pass a different int for the blamed parameter on each call."""
    subject = ctx.finding.subject
    name = subject.name if subject else ""
    if not name or (name not in ctx.args.names and name not in ctx.args.kwargs):
        raise ProbeError(f"the region has no parameter {name!r} to vary")
    current = ctx.args.value(name)
    if not isinstance(current, int) or isinstance(current, bool):
        current = 4
    values = value_series(current, ctx.calls)
    return Probe(f"passed {name}={_span(values)}", lambda i: ctx.args.replaced(name, values[i]))


def toggle_training(ctx: ProbeContext) -> Probe:
    """Alternate ``train()`` and ``eval()`` on the compiled module."""
    inst = ctx.target.instance
    if inst is None or not hasattr(inst, "train"):
        subject = ctx.finding.subject
        inst = _owner_instance(ctx, subject) if subject else None
    if inst is None or not callable(getattr(inst, "train", None)):
        raise ProbeError("no nn.Module instance to switch between train() and eval()")
    was_training = bool(getattr(inst, "training", True))

    def apply(i: int) -> None:
        inst.train(i % 2 == 0)
        return None

    return Probe("alternated train() and eval()", apply, lambda: inst.train(was_training))


def _tensor_param(ctx: ProbeContext) -> str:
    subject = ctx.finding.subject
    if subject and subject.name in ctx.args.names:
        return subject.name
    for name, value in zip(ctx.args.names, ctx.args.args):
        if isinstance(value, ctx.torch.Tensor):
            return name
    raise ProbeError("the region takes no tensor argument to reshape")


def vary_rank(ctx: ProbeContext) -> Probe:
    """Pass tensors of rank 1, 2, 3, ... for the blamed argument (or vary the int that sets it)."""
    subject = ctx.finding.subject
    if subject and subject.name in ctx.args.names and isinstance(ctx.args.value(subject.name), int):
        return vary_parameter(ctx)
    name = _tensor_param(ctx)
    base = ctx.args.value(name)
    if not isinstance(base, ctx.torch.Tensor):
        raise ProbeError(f"argument {name!r} is not a tensor")
    last = int(base.shape[-1]) if base.dim() else 1

    def apply(i: int) -> CallArgs:
        shape = (2,) * min(i, 12) + (last,)
        return ctx.args.replaced(name, ctx.torch.ones(shape, dtype=base.dtype, device=base.device))

    return Probe(f"passed {name} with rank 1..{ctx.calls}", apply)


def vary_batch(ctx: ProbeContext) -> Probe:
    """Pass tensors whose first dimension changes (7, 1, 3, ... after the working size)."""
    name = _tensor_param(ctx)
    base = ctx.args.value(name)
    if not isinstance(base, ctx.torch.Tensor) or base.dim() == 0:
        raise ProbeError(f"argument {name!r} has no batch dimension to vary")
    first = int(base.shape[0])
    sizes = [first, first, 7, 1, *range(3, 3 + 2 * ctx.calls, 2)]

    def apply(i: int) -> CallArgs:
        shape = (sizes[i],) + tuple(base.shape[1:])
        return ctx.args.replaced(name, ctx.torch.ones(shape, dtype=base.dtype, device=base.device))

    return Probe(f"passed {name} with first dimension {_span(sizes[:ctx.calls])}", apply)


def vary_length(ctx: ProbeContext) -> Probe:
    """Pass lists of length 1, 2, 3, ... for the blamed argument (or global container)."""
    subject = ctx.finding.subject
    if subject and subject.name not in ctx.args.names:
        holder = _resolve_module(subject.module, ctx.module)
        current = getattr(holder, subject.name, None)
        if not isinstance(current, (list, tuple, dict)):
            raise ProbeError(f"global {subject.name!r} is not a list, tuple or dict")
        if not current:
            # Empty at import (filled by the training loop): fill it with the probe's input.
            tensors = [a for a in ctx.args.args if isinstance(a, ctx.torch.Tensor)]
            element = tensors[0] if tensors else ctx.torch.zeros(())
            current = {"k0": element} if isinstance(current, dict) else type(current)([element])
        if isinstance(current, dict):
            first = next(iter(current.values()))
            values: list[Any] = [{f"k{j}": first for j in range(i + 1)} for i in range(ctx.calls)]
        else:
            values = [type(current)([current[0]] * (i + 1)) for i in range(ctx.calls)]
        return _setter_probe(
            f"set {subject.name} to lengths 1..{ctx.calls}",
            lambda: getattr(holder, subject.name),
            lambda v: setattr(holder, subject.name, v),
            values,
        )
    name = subject.name if subject else ""
    if name not in ctx.args.names:
        raise ProbeError(f"the region has no list argument {name!r} to vary")
    base = ctx.args.value(name)
    if isinstance(base, dict) and base:
        first = next(iter(base.values()))
        return Probe(
            f"passed {name} with 1..{ctx.calls} entries",
            lambda i: ctx.args.replaced(name, {f"k{j}": first for j in range(i + 1)}),
        )
    if not isinstance(base, (list, tuple)) or not base:
        raise ProbeError(f"argument {name!r} is not a non-empty list or tuple")
    return Probe(
        f"passed {name} with lengths 1..{ctx.calls}",
        lambda i: ctx.args.replaced(name, type(base)([base[0]] * (i + 1))),
    )


def vary_callable(ctx: ProbeContext) -> Probe:
    """Pass a different function for the blamed argument on each call."""
    subject = ctx.finding.subject
    name = subject.name if subject else ""
    if name not in ctx.args.names:
        raise ProbeError(f"the region has no callable argument {name!r} to vary")
    examples = [v for v in evaluate_examples(subject.examples if subject else (), ctx.module, ctx.calls)
                if callable(v)]
    if len(examples) >= 2:
        # What the call sites really pass: a bounded pattern stays bounded in the probe.
        funcs = [examples[i % len(examples)] for i in range(ctx.calls)]
        return Probe(f"passed the {len(examples)} callables of the call sites as {name}",
                     lambda i: ctx.args.replaced(name, funcs[i]))
    torch = ctx.torch
    builtins = [torch.sin, torch.cos, torch.tanh, torch.sigmoid, torch.relu, torch.exp,
                torch.neg, torch.abs, torch.square, torch.sqrt, torch.erf, torch.floor]
    funcs = [builtins[i % len(builtins)] for i in range(ctx.calls)]
    return Probe(f"passed {ctx.calls} different functions as {name}",
                 lambda i: ctx.args.replaced(name, funcs[i]))


# Rule code -> probe builder. A code missing here gets ``unverifiable`` with a clear reason.
PROBES: dict[str, ProbeBuilder] = {
    "RCL101": vary_subject,
    "RCL102": vary_subject,
    "RCL103": repeat_calls,
    "RCL104": vary_subject,
    "RCL105": vary_subject,
    "RCL106": vary_parameter,
    "RCL107": toggle_training,
    "RCL201": vary_rank,
    "RCL202": vary_length,
    "RCL203": vary_length,
    "RCL204": vary_batch,
    "RCL205": vary_batch,
    "RCL206": vary_batch,
    "RCL401": vary_callable,
}

# Codes decided at compile sites or by the run itself: a synthesized call cannot show them.
NO_PROBE_REASONS: dict[str, str] = {
    "RCL301": "global-state switches are decided by the calling program; use --run",
    "RCL302": "global-state switches are decided by the calling program; use --run",
    "RCL303": "global-state switches are decided by the calling program; use --run",
    "RCL402": "compile-in-loop is decided at the compile site; use --run",
    "RCL403": "per-call backends are decided at the compile site; use --run",
    "RCL404": "graph-break values are decided by the data; use --run",
    "RCL901": "a raised recompile_limit is a setting, not a recompile",
}


# Options a probe's own ``torch.compile`` needs when the verifier compiles the region itself
# (a module compiled inside a function: its compile-site options cannot be seen from here).
COMPILE_OPTIONS: dict[str, dict[str, Any]] = {
    "RCL204": {"dynamic": False},
}


def probe_builder(code: str) -> ProbeBuilder | None:
    """The builder for a rule code, or None when the verifier has no probe for it."""
    return PROBES.get(code)


# Codes that name a setting rather than a recompile: running the program cannot confirm them.
NOT_A_RECOMPILE: frozenset[str] = frozenset({"RCL901"})


def no_probe_reason(code: str) -> str:
    """Why a code without a probe cannot be verified, in words for the report."""
    return NO_PROBE_REASONS.get(code, f"the verifier has no probe for {code} yet")
