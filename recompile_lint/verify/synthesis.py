"""Build arguments for a compiled region without knowing what it expects.

A fixed ``(8, 8)`` tensor fails on most real code (``nn.Linear(16, 16)``, a buffer of
``torch.zeros(32)`` the input is added to), so this searches: candidate sizes come from the
module's own integer literals and layer sizes, each candidate is tried on the *uncompiled*
callable (cheap, and an error there says nothing about Dynamo), and the first call that
succeeds is the one that gets compiled and varied. Runs in the child process only.
"""

from __future__ import annotations

import ast
import inspect
import re
import typing
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

DEFAULT_SIZES: tuple[int, ...] = (8, 4, 16)
MAX_CANDIDATES = 48

# What a parameter slot needs; resolved to a value per candidate size.
TENSOR, INT, FLOAT, BOOL, STR, TENSOR_LIST, TENSOR_DICT, MODULE, CALLABLE, NONE = (
    "tensor", "int", "float", "bool", "str", "tensor-list", "tensor-dict", "module", "callable", "none",
)


@dataclass
class CallArgs:
    """Positional and keyword arguments of one call, and how they were found."""

    args: list[Any]
    kwargs: dict[str, Any] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)  # parameter name of each positional arg
    how: str = "probe"
    size: int = 0  # the candidate size that worked (0: not size-driven)

    def replaced(self, name: str, value: Any) -> "CallArgs":
        """A copy with the argument for parameter ``name`` set to ``value``."""
        args, kwargs = list(self.args), dict(self.kwargs)
        if name in self.names:
            args[self.names.index(name)] = value
        else:
            kwargs[name] = value
        return CallArgs(args, kwargs, list(self.names), self.how, self.size)

    def value(self, name: str) -> Any:
        if name in self.names:
            return self.args[self.names.index(name)]
        return self.kwargs.get(name)


def module_sizes(source: str) -> list[int]:
    """Integer literals that look like sizes, most frequent first (layer widths, buffers)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    counts: Counter[int] = Counter()
    order: dict[int, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                for sub in ast.walk(arg):
                    if isinstance(sub, ast.Constant) and type(sub.value) is int and 2 <= sub.value <= 4096:
                        counts[sub.value] += 1
                        order.setdefault(sub.value, len(order))
    return sorted(counts, key=lambda v: (-counts[v], order[v]))


def layer_sizes(obj: Any) -> tuple[list[int], list[int]]:
    """Input widths of an ``nn.Module``'s layers, and embedding table sizes (for index inputs)."""
    widths: list[int] = []
    tables: list[int] = []
    modules = getattr(obj, "modules", None)
    if not callable(modules):
        return widths, tables
    try:
        for sub in modules():
            for attr in ("in_features", "in_channels", "embed_dim", "input_size", "num_features"):
                value = getattr(sub, attr, None)
                if isinstance(value, int) and value > 0:
                    widths.append(value)
            shape = getattr(sub, "normalized_shape", None)
            if isinstance(shape, tuple) and shape and isinstance(shape[-1], int):
                widths.append(shape[-1])
            tables_n = getattr(sub, "num_embeddings", None)
            if isinstance(tables_n, int) and tables_n > 0:
                tables.append(tables_n)
        for _, buf in obj.named_buffers():
            if getattr(buf, "dim", lambda: 0)() >= 1:
                widths.append(int(buf.shape[-1]))
    except Exception:  # noqa: BLE001 - user modules may do anything in modules()/buffers
        pass
    return widths, tables


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - unresolvable string annotations: use the raw text
        return dict(getattr(fn, "__annotations__", {}) or {})


def slot_for(annotation: Any) -> str:
    """The kind of value a parameter needs, from its annotation (``TENSOR`` when unknown)."""
    if annotation is inspect.Parameter.empty or annotation is None:
        return TENSOR
    text = annotation if isinstance(annotation, str) else repr(annotation)
    if annotation is bool or text in {"bool", "<class 'bool'>"}:
        return BOOL
    if annotation is int or text in {"int", "<class 'int'>"}:
        return INT
    if annotation is float or text in {"float", "<class 'float'>"}:
        return FLOAT
    if annotation is str or text in {"str", "<class 'str'>"}:
        return STR
    lowered = text.lower()
    if ("dict" in lowered or "mapping" in lowered) and "tensor" in lowered:
        return TENSOR_DICT
    if ("list" in lowered or "sequence" in lowered or "tuple" in lowered) and "tensor" in lowered:
        return TENSOR_LIST
    if "callable" in lowered:
        return CALLABLE
    if "module" in lowered and "tensor" not in lowered:
        return MODULE
    return TENSOR


_CALLABLE_NAMES = re.compile(r"^(fn|func|function|callback|act|activation|op|loss_fn|.*_fn|.*_func)$")


def parameter_slots(fn: Callable[..., Any]) -> list[tuple[str, str, Any]] | None:
    """(name, slot, default) for each parameter a call must fill; None if there is no signature."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    hints = _hints(getattr(fn, "__func__", fn))
    slots = []
    for param in sig.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, param.annotation)
        slot = slot_for(annotation)
        if annotation is inspect.Parameter.empty and _CALLABLE_NAMES.match(param.name):
            slot = CALLABLE  # an unannotated ``fn`` is called, not multiplied
        slots.append((param.name, slot, param.default))
    return slots


def _shapes(size: int) -> list[tuple[int, ...]]:
    return [(2, size), (size,), (size, size), (2, 3, size), (2, size, 8, 8), (2, size, 8)]


def candidates(
    fn: Callable[..., Any],
    sizes: list[int],
    tables: list[int],
    make_tensor: Callable[[tuple[int, ...], bool, int], Any],
    make_module: Callable[[], Any],
    make_callable: Callable[[str], Any],
) -> Iterator[CallArgs]:
    """Argument sets to try, most likely first. ``make_tensor(shape, index, high)``."""
    slots = parameter_slots(fn)
    if slots is None:
        return
    ordered: list[int] = []
    for size in [*sizes, *DEFAULT_SIZES]:
        if size not in ordered:
            ordered.append(size)
    seen: set[tuple[Any, ...]] = set()
    produced = 0
    index_inputs = [False] + ([True] if tables else [])
    for as_index in index_inputs:
        for size in ordered:
            for shape in _shapes(size):
                key = (as_index, size, shape)
                if key in seen:
                    continue
                seen.add(key)
                args, names, ok = [], [], True
                for name, slot, default in slots:
                    if default is not inspect.Parameter.empty:
                        args.append(default)
                    elif slot == TENSOR:
                        args.append(make_tensor(shape, as_index, min(tables) if tables else 0))
                    elif slot == INT:
                        args.append(size)
                    elif slot == FLOAT:
                        args.append(0.5)
                    elif slot == BOOL:
                        args.append(False)
                    elif slot == STR:
                        args.append("a")
                    elif slot == TENSOR_LIST:
                        args.append([make_tensor(shape, as_index, 0), make_tensor(shape, as_index, 0)])
                    elif slot == TENSOR_DICT:
                        args.append({"a": make_tensor(shape, as_index, 0), "b": make_tensor(shape, as_index, 0)})
                    elif slot == MODULE:
                        args.append(make_module())
                    elif slot == CALLABLE:
                        args.append(make_callable(name))
                    else:
                        ok = False
                    names.append(name)
                if not ok:
                    continue
                yield CallArgs(args, {}, names, "probe", size)
                produced += 1
                if produced >= MAX_CANDIDATES:
                    return
                if not any(slot in (TENSOR, TENSOR_LIST, INT) for _, slot, d in slots
                           if d is inspect.Parameter.empty):
                    return  # nothing size-driven: one candidate is all there is


def constructor_args(
    cls: type, sizes: list[int], make_module: Callable[[int], Any] | None = None
) -> Iterator[tuple[list[Any], dict[str, Any]]]:
    """Arguments to build an instance of ``cls``: defaults, sizes for ints, small layers for modules."""
    slots = parameter_slots(cls.__init__)
    if slots is None:
        yield [], {}
        return
    slots = [s for s in slots if s[0] != "self"]
    tried: set[int] = set()
    for size in [*sizes[:4], *DEFAULT_SIZES]:
        if size in tried:
            continue
        tried.add(size)
        args: list[Any] = []
        ok = True
        for _, slot, default in slots:
            if default is not inspect.Parameter.empty:
                args.append(default)
            elif slot == INT:
                args.append(size)
            elif slot == FLOAT:
                args.append(0.5)
            elif slot == BOOL:
                args.append(False)
            elif slot == STR:
                args.append("a")
            elif slot == MODULE and make_module is not None:
                args.append(make_module(size))
            else:
                ok = False
                break
        if ok:
            yield args, {}
        if all(slot not in (INT, MODULE) or d is not inspect.Parameter.empty for _, slot, d in slots):
            return
