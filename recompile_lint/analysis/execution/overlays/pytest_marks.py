"""pytest's marks as a test run meets them. ``@pytest.mark.parametrize(names, values)`` records
its parameter sets on the test function (``Interpreter.parametrized``; stacked decorators
multiply), which the entries run one after another in one process, as pytest does: a compiled
function the test calls keeps its cache from one parameter set to the next. Every other mark
(``skip``, ``skipif(...)``, ``slow``, a project's own) leaves the function as it is.
``pytest.param(v, ...)`` is its values.
"""

from __future__ import annotations

import itertools

from recompile_lint.analysis.execution.values import TOP, Const, Function, ModuleValue, Partial, TupleValue

MARKS = "pytest.mark."
_RECORD = "pytest.parametrized"
_KEEP = "pytest.marked"
# Parameter sets a parametrized test runs at most (twice the recompile limit).
MAX_SETS = 16


def is_mark(value: object) -> bool:
    """``pytest.mark.<name>`` (not ``parametrize``, which has its handler)."""
    return isinstance(value, ModuleValue) and not value.path and value.name.startswith(MARKS)


def mark(interp, frame, callee: ModuleValue, args: list[object], kwargs: dict[str, object]) -> object:
    """``@pytest.mark.slow`` on a function is that function; ``pytest.mark.skipif(...)`` a
    decorator that returns the function it is given."""
    if len(args) == 1 and not kwargs and isinstance(args[0], Function):
        return args[0]
    return Partial(ModuleValue(_KEEP))


def parametrize(interp, frame, args, kwargs, node) -> object:
    """``pytest.mark.parametrize(names, values)``: a decorator recording them on the function
    (``indirect`` ones go to fixtures, whose values are not known: one run, parameters
    unknown)."""
    names = args[0] if args else kwargs.get("argnames", TOP)
    values = args[1] if len(args) > 1 else kwargs.get("argvalues", TOP)
    if kwargs.get("indirect", Const(False)) != Const(False):
        names = values = TOP
    return Partial(ModuleValue(_RECORD), (names, values))


def _record(interp, frame, args, kwargs, node) -> object:
    if len(args) != 3:
        return TOP
    names, values, function = args
    if isinstance(function, Function):
        interp.parametrized.setdefault(function.code, []).append((names, values))
    return function


def _keep(interp, frame, args, kwargs, node) -> object:
    return args[-1] if args else TOP


def parameter_sets(interp, marks: list[tuple[object, object]]) -> list[dict[str, object]] | None:
    """The keyword arguments of each run of a parametrized test (every combination of its
    marks' sets, at most ``MAX_SETS``); None when a mark's names or values are not known."""
    axes: list[list[dict[str, object]]] = []
    for names_value, values_value in marks:
        names = _names(interp, names_value)
        values = interp.items(values_value) if names is not None and values_value is not TOP else None
        if names is None or values is None:
            return None
        sets = []
        for value in values:
            if len(names) == 1:
                sets.append({names[0]: value})
                continue
            parts = interp.items(value) if value is not TOP else None
            if parts is None or len(parts) != len(names):
                return None
            sets.append(dict(zip(names, parts)))
        axes.append(sets)
    out = []
    for combination in itertools.product(*axes):
        merged: dict[str, object] = {}
        for part in combination:
            merged.update(part)
        out.append(merged)
        if len(out) >= MAX_SETS:
            break
    return out


def _names(interp, value: object) -> list[str] | None:
    if isinstance(value, Const) and isinstance(value.value, str):
        return [name.strip() for name in value.value.split(",") if name.strip()] or None
    items = interp.items(value) if value is not TOP else None
    if not items or not all(isinstance(i, Const) and isinstance(i.value, str) for i in items):
        return None
    return [i.value for i in items]  # type: ignore[union-attr]


def param(interp, frame, args, kwargs, node) -> object:
    """``pytest.param(v)`` is ``v``; ``pytest.param(a, b)`` the tuple of them."""
    if not args:
        return TOP
    return args[0] if len(args) == 1 else TupleValue(tuple(args))


HANDLERS = {
    MARKS + "parametrize": parametrize,
    _RECORD: _record,
    _KEEP: _keep,
    "pytest.param": param,
}
