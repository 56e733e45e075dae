"""The lab's grid: the dimensions a generated program is drawn from, their values, and which
combinations can be written (with why the others cannot). Plain data, no torch.

Value dimensions say what reaches compiled code and how (``location``, ``type``, ``use``,
``options``, ``change``); organisation dimensions say how the project around it is written
(``writer``, ``reach``, ``modules``, ``driver``). ``why_invalid`` judges a partial assignment
(only the rules whose dimensions are all assigned), so the generator can extend a row value by
value and never write a program that cannot exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Callable, Iterator, Mapping

VALUE_DIMENSIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("location", (
        "global",                # global of the compiled function's module
        "other-module-global",   # global of another module, read by an inlined helper
        "closure",               # closure cell of the compiled function
        "module-attribute",      # attribute of the compiled nn.Module
        "object-attribute",      # attribute of a plain object passed as argument
        "dataclass-field",
        "namedtuple-field",
        "dict-value",
        "dict-keys",             # the key set of a dict passed as argument
        "list-element",
        "list-length",
        "positional-argument",
        "keyword-argument",
        "default-argument",
        "class-attribute",
    )),
    ("type", (
        "int", "float", "bool", "str", "enum", "none-or-tensor",
        "number-or-tensor",      # a Python float at some calls, a 0-d tensor at others
        "function", "lambda", "bound-method", "partial", "callable-object",
        "tensor-rank", "tensor-size", "tensor-layout", "batch-of-one", "requires-grad", "dtype", "device",
        "module-identity", "parameter-shapes", "registered-hooks",
    )),
    ("use", (
        "arithmetic", "branch", "range-bound",
        "op-dropout-p", "op-interpolate-size", "op-interpolate-scale", "op-view", "op-reshape",
        "op-split", "op-bernoulli", "op-sdpa-dropout",
        "dict-key", "getattr", "iteration", "len", "under-is-compiling", "disabled-helper",
        "after-break",           # passed to a helper compiled code inlines, which breaks the graph first
    )),
    ("options", ("default", "dynamic-true", "dynamic-false", "mark-dynamic", "fullgraph")),
    ("change", ("never", "once", "cycle", "every")),
)

ORGANISATION_DIMENSIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("writer", (
        "loop", "helper", "callback", "property", "setattr-apply",
        "holder-attribute",   # a method of another object that got it as a constructor argument
        "holder-module",      # a method of another object that reaches it through a module imported by name
        "holder-container",   # ... through an element of a container it holds
        "holder-factory",     # ... through a factory's return value
        "instances",          # none: each object holds its own value, and the calls go to several
                              # objects that share one compiled code object (per-layer indices)
    )),
    ("reach", (
        "decorator", "decorator-options", "compile-fn", "compile-model", "model-compile",
        "submodule-in-place", "partial-compile", "wrapper-args", "registry", "container-element",
        "conditional-alias",
    )),
    ("modules", ("one", "two-import", "two-from-import", "three-package-alias", "three-import")),
    ("driver", ("for", "while", "epochs", "generator", "eval-pass", "trainer")),
)

# Values a sampled value is refined into, drawn apart from the sampling (``generator._refined``)
# so that adding one changes only the programs it refines, and the proofs of the others stay
# valid: dimension -> sampled value -> its refinements.
REFINEMENTS: dict[str, dict[str, tuple[str, ...]]] = {
    "writer": {
        # the holder's method is handed the new value and writes it when it is another object
        "holder-attribute": ("holder-setter",),
        # the helper as a context manager the call runs inside (``with using_lr(step):``): it
        # sets the value on entry and puts the first one back on exit; a
        # ``@contextlib.contextmanager`` generator, or a class with ``__enter__`` / ``__exit__``
        "helper": ("context-manager", "context-class"),
    },
    "driver": {
        # each call made by a function that another call drives: ``list(map(run_one, ...))``,
        # a list comprehension, an optimizer's ``step(closure)`` (the closure defined per step)
        "for": ("map", "comprehension", "closure-step"),
        # the steps awaited in a coroutine ``asyncio.run`` drives (``await run_one(i)``)
        "while": ("async",),
    },
}


def sampled_value(dim: str, value: str) -> str:
    """The value the sampling drew for a (possibly refined) value of ``dim``."""
    for sampled, refined in REFINEMENTS.get(dim, {}).items():
        if value in refined:
            return sampled
    return value


DIMENSIONS: tuple[tuple[str, tuple[str, ...]], ...] = VALUE_DIMENSIONS + ORGANISATION_DIMENSIONS
DIMENSION_NAMES: tuple[str, ...] = tuple(name for name, _ in DIMENSIONS)
VALUES: dict[str, tuple[str, ...]] = dict(DIMENSIONS)

# How many calls a program makes and how many distinct values each change pattern needs.
CALLS = 12
DISTINCT = {"never": 1, "once": 2, "cycle": 3, "every": CALLS}

CALLABLE_TYPES = frozenset({"function", "lambda", "bound-method", "partial", "callable-object"})
MODULE_TYPES = frozenset({"module-identity", "parameter-shapes", "registered-hooks"})
TENSOR_TYPES = frozenset({"tensor-rank", "tensor-size", "tensor-layout", "batch-of-one", "requires-grad", "dtype", "device"})
SCALAR_TYPES = frozenset({"int", "float", "bool"})
# How many distinct values a type has in a generated program (None: as many as needed).
TYPE_VALUES: dict[str, int | None] = {
    "bool": 2, "none-or-tensor": 2, "number-or-tensor": 2, "tensor-layout": 2, "batch-of-one": 2, "requires-grad": 2, "device": 2, "enum": 4, "dtype": 4,
}
FUNCTION_REACHES = frozenset({
    "decorator", "decorator-options", "compile-fn", "partial-compile", "wrapper-args", "registry",
    "container-element", "conditional-alias",
})
MODULE_REACHES = frozenset({"compile-model", "model-compile", "submodule-in-place"})
ARGUMENT_LOCATIONS = frozenset({"positional-argument", "keyword-argument", "default-argument"})
CARRIER_LOCATIONS = frozenset({
    "object-attribute", "dataclass-field", "namedtuple-field", "dict-value", "dict-keys",
    "list-element", "list-length",
})
CONTAINER_SHAPE_LOCATIONS = frozenset({"dict-keys", "list-length"})
ATTRIBUTE_LOCATIONS = frozenset({
    "global", "other-module-global", "module-attribute", "object-attribute", "dataclass-field",
    "class-attribute", "default-argument",
})
HELD_OBJECT_LOCATIONS = frozenset({
    "module-attribute", "object-attribute", "dataclass-field", "dict-value", "dict-keys",
    "list-element", "list-length", "class-attribute",
})
MODULE_LEVEL_LOCATIONS = frozenset({"global", "other-module-global", "class-attribute"})

INT_OPS = frozenset({"op-interpolate-size", "op-view", "op-reshape", "op-split"})
FLOAT_OPS = frozenset({"op-dropout-p", "op-interpolate-scale", "op-bernoulli", "op-sdpa-dropout"})
UNTRACED_USES = frozenset({"under-is-compiling", "disabled-helper"})

# The uses each type can be written with, outside the container-shape locations.
TYPE_USES: dict[str, frozenset[str]] = {
    # An int scale factor (``scale_factor=2``) is as common as a float one.
    "int": frozenset({"arithmetic", "branch", "range-bound", "dict-key", "op-interpolate-scale", "after-break"}) | INT_OPS,
    "float": frozenset({"arithmetic", "branch", "after-break"}) | FLOAT_OPS,
    "bool": frozenset({"arithmetic", "branch", "dict-key", "after-break"}),
    "str": frozenset({"branch", "dict-key", "getattr", "len"}),
    "enum": frozenset({"arithmetic", "branch", "dict-key"}),
    "none-or-tensor": frozenset({"branch"}),
    "number-or-tensor": frozenset({"arithmetic"}),
    "tensor-rank": frozenset({"arithmetic", "branch", "range-bound", "len"}),
    "tensor-size": frozenset({"arithmetic", "branch", "range-bound", "iteration", "len"}) | INT_OPS,
    "tensor-layout": frozenset({"arithmetic"}),
    "batch-of-one": frozenset({"arithmetic"}),
    "requires-grad": frozenset({"arithmetic", "branch"}),
    "dtype": frozenset({"arithmetic", "branch", "dict-key"}),
    "device": frozenset({"branch", "dict-key"}),
}
for _name in CALLABLE_TYPES | MODULE_TYPES:
    TYPE_USES[_name] = frozenset({"arithmetic"})
for _name in TYPE_USES:
    TYPE_USES[_name] = TYPE_USES[_name] | UNTRACED_USES

CONTAINER_SHAPE_USES = {
    "list-length": frozenset({"iteration", "len", "range-bound"}) | UNTRACED_USES,
    "dict-keys": frozenset({"iteration", "len"}) | UNTRACED_USES,
}
CONTAINER_SHAPE_TYPES = {"list-length": frozenset({"int", "float"}), "dict-keys": frozenset({"str", "int"})}

WRITERS_BY_LOCATION_KIND = {
    "namedtuple-field": frozenset({"loop", "helper", "context-manager", "context-class"}),
    "closure": frozenset({"loop", "helper", "context-manager", "context-class", "callback", "property"}),
    "positional-argument": frozenset({"loop", "helper", "context-manager", "context-class", "callback", "property"}),
    "keyword-argument": frozenset({"loop", "helper", "context-manager", "context-class", "callback", "property"}),
}
# Where each object can hold its own value: a module, a carrier object or container, a closure.
INSTANCE_LOCATIONS = HELD_OBJECT_LOCATIONS - {"class-attribute"} | {"closure"}


def _why_use_reason(type_: str, use: str) -> str:
    if use == "after-break":
        return "the helper computes with the number it is given: an int, a float or a bool"
    if use == "getattr":
        return "getattr takes an attribute name: only a str"
    if use == "op-interpolate-scale":
        return "the scale factor is a number (int or float)"
    if use in FLOAT_OPS:
        return "the op takes a float probability"
    if use in INT_OPS:
        return "the op takes an int size"
    if use in ("iteration",):
        return "iteration needs a container (list, dict key set) or a tensor's first dimension"
    if use == "len":
        return "len needs a container, a str or a tensor"
    if use == "range-bound":
        return "a range() bound is an int (a value, a tensor's size or rank, a list's length)"
    if use == "dict-key":
        return "lookup tables are keyed by names, numbers, bools, enums, dtypes and device types"
    if type_ in CALLABLE_TYPES or type_ in MODULE_TYPES:
        return "a callable or module is called, not computed with or tested"
    if type_ == "str" and use == "arithmetic":
        return "a str does not enter tensor arithmetic"
    if type_ == "none-or-tensor":
        return "None does not enter arithmetic or lookups: code tests it and then uses the tensor"
    if type_ == "number-or-tensor":
        return "a value that is a number or a tensor is computed with (a test on it would read the tensor's data)"
    if type_ == "device":
        return "a tensor on the meta device cannot enter CPU arithmetic (the oracle has one real device)"
    return f"a {type_} value is not written with {use}"


def _cell(location: str, type_: str, use: str) -> str | None:
    if location in CONTAINER_SHAPE_LOCATIONS:
        if type_ not in CONTAINER_SHAPE_TYPES[location]:
            return (f"a {location} value is the container's shape; its elements are "
                    f"{' or '.join(sorted(CONTAINER_SHAPE_TYPES[location]))}")
        if use not in CONTAINER_SHAPE_USES[location]:
            return f"a {location} value is read by {', '.join(sorted(CONTAINER_SHAPE_USES[location]))}"
        return None
    if use not in TYPE_USES[type_]:
        return _why_use_reason(type_, use)
    return None


def _location_type(location: str, type_: str) -> str | None:
    if location in CONTAINER_SHAPE_LOCATIONS and type_ not in CONTAINER_SHAPE_TYPES[location]:
        return (f"a {location} value is the container's shape; its elements are "
                f"{' or '.join(sorted(CONTAINER_SHAPE_TYPES[location]))}")
    return None


def _location_use(location: str, use: str) -> str | None:
    if location in CONTAINER_SHAPE_LOCATIONS and use not in CONTAINER_SHAPE_USES[location]:
        return f"a {location} value is read by {', '.join(sorted(CONTAINER_SHAPE_USES[location]))}"
    return None


def _type_use(type_: str, use: str) -> str | None:
    if use in TYPE_USES[type_]:
        return None
    # A container-shape location may still make the pair writable (an int list's length).
    if use in ("iteration", "len", "range-bound") and type_ in ("int", "float", "str"):
        return None
    return _why_use_reason(type_, use)


def _type_change(type_: str, change: str) -> str | None:
    limit = TYPE_VALUES.get(type_)
    if limit is not None and DISTINCT[change] > limit and change == "every":
        return f"a {type_} has {limit} values, not a new one every call"
    return None


def _use_options(use: str, options: str) -> str | None:
    if use == "disabled-helper" and options == "fullgraph":
        return "a disabled helper is a graph break, an error under fullgraph=True before any recompile"
    if use == "after-break" and options == "fullgraph":
        return "a graph break is an error under fullgraph=True before any recompile"
    return None


def _location_reach(location: str, reach: str) -> str | None:
    if location == "module-attribute" and reach not in MODULE_REACHES:
        return "an nn.Module attribute is read by a compiled module's forward"
    if location == "closure" and reach not in FUNCTION_REACHES:
        return "a forward method closes over no cell; closures belong to compiled functions"
    return None


def _reach_options(reach: str, options: str) -> str | None:
    if reach == "decorator" and options not in ("default", "mark-dynamic"):
        return "a bare @torch.compile takes no options"
    return None


def _location_modules(location: str, modules: str) -> str | None:
    if location == "other-module-global" and not modules.startswith("three"):
        return "needs a module besides run.py and the compiled function's"
    return None


def _location_writer(location: str, writer: str) -> str | None:
    if writer == "instances":
        if location in INSTANCE_LOCATIONS:
            return None
        if location in MODULE_LEVEL_LOCATIONS:
            return "a module-level value (a global, a class attribute) is one value, not one per object"
        return "an argument is passed at the call, not held by an object"
    allowed = WRITERS_BY_LOCATION_KIND.get(location)
    if allowed is not None:
        if writer in allowed:
            return None
        if location == "namedtuple-field":
            return "a namedtuple is rebuilt with _replace where it is held, not set through another object"
        if location == "closure":
            return "a closure cell is set through its setter, not as an attribute or a held object"
        return "an argument is passed at the call, not held by another object"
    if writer == "setattr-apply" and location not in ATTRIBUTE_LOCATIONS:
        return "setattr and Module.apply set attributes"
    if writer in ("holder-attribute", "holder-container", "holder-factory", "holder-setter") and location not in HELD_OBJECT_LOCATIONS:
        return "another object can hold the carrier (a module, an object, a container, a class), not a bare global"
    if writer == "holder-module" and location not in MODULE_LEVEL_LOCATIONS:
        return "a module imported by name reaches module-level values (globals, classes)"
    return None


def _writer_modules(writer: str, modules: str) -> str | None:
    if writer == "holder-module" and modules == "one":
        return "a single-file program imports no module by name"
    return None


@dataclass(frozen=True)
class Rule:
    dims: tuple[str, ...]
    check: Callable[..., str | None]


RULES: tuple[Rule, ...] = (
    Rule(("location", "type"), _location_type),
    Rule(("location", "use"), _location_use),
    Rule(("type", "use"), _type_use),
    Rule(("location", "type", "use"), _cell),
    Rule(("type", "change"), _type_change),
    Rule(("use", "options"), _use_options),
    Rule(("location", "reach"), _location_reach),
    Rule(("reach", "options"), _reach_options),
    Rule(("location", "modules"), _location_modules),
    Rule(("location", "writer"), _location_writer),
    Rule(("writer", "modules"), _writer_modules),
)


def why_invalid(assignment: Mapping[str, str]) -> str | None:
    """Why the (partial) assignment cannot be written, or None. Only rules whose dimensions are
    all assigned are judged."""
    for rule in RULES:
        if all(d in assignment for d in rule.dims):
            reason = rule.check(*(assignment[d] for d in rule.dims))
            if reason is not None:
                return reason
    return None


def valid(assignment: Mapping[str, str]) -> bool:
    return why_invalid(assignment) is None


def cells() -> Iterator[tuple[str, str, str]]:
    """Every (location, type, use) cell, valid or not, in grid order."""
    yield from product(VALUES["location"], VALUES["type"], VALUES["use"])


def valid_cells() -> list[tuple[str, str, str]]:
    return [c for c in cells() if _cell(*c) is None]


def unwritable_cells() -> list[dict[str, str]]:
    """The (location, type, use) cells that cannot be written, each with why: data for the docs."""
    found = []
    for location, type_, use in cells():
        reason = _cell(location, type_, use)
        if reason is not None:
            found.append({"location": location, "type": type_, "use": use, "why": reason})
    return found


def unwritable_pairs() -> list[dict[str, str]]:
    """Pairs of values across dimensions that no program can hold, each with why (a pair is
    writable when some full assignment holds it; judged by the binary rules, and for the cell's
    three dimensions by the cell)."""
    from itertools import combinations

    found = []
    for (d1, vs1), (d2, vs2) in combinations(DIMENSIONS, 2):
        for v1, v2 in product(vs1, vs2):
            reason = pair_reason(d1, v1, d2, v2)
            if reason is not None:
                found.append({"a": f"{d1}={v1}", "b": f"{d2}={v2}", "why": reason})
    return found


def pair_reason(d1: str, v1: str, d2: str, v2: str) -> str | None:
    """Why no program can hold both values, or None."""
    reason = why_invalid({d1: v1, d2: v2})
    if reason is not None:
        return reason
    cell_dims = ("location", "type", "use")
    if d1 in cell_dims and d2 in cell_dims:
        third = next(d for d in cell_dims if d not in (d1, d2))
        reasons = []
        for v3 in VALUES[third]:
            r = why_invalid({d1: v1, d2: v2, third: v3})
            if r is None:
                return None
            reasons.append(r)
        return reasons[0]
    return None


def summary() -> dict[str, object]:
    """The grid as data: dimensions and their values, the unwritable cells with why, counts."""
    valid_count = len(valid_cells())
    total = len(VALUES["location"]) * len(VALUES["type"]) * len(VALUES["use"])
    return {
        "dimensions": {name: list(values) + [r for refined in REFINEMENTS.get(name, {}).values() for r in refined] for name, values in DIMENSIONS},
        "value_dimensions": [name for name, _ in VALUE_DIMENSIONS],
        "organisation_dimensions": [name for name, _ in ORGANISATION_DIMENSIONS],
        "cells": {"total": total, "valid": valid_count, "unwritable": total - valid_count},
        "unwritable_cells": unwritable_cells(),
        "unwritable_pairs": unwritable_pairs(),
    }
