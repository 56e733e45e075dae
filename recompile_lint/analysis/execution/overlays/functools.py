"""``functools``: ``partial`` binds arguments; ``wraps``, ``lru_cache`` and ``cache`` leave the
function as it is."""

from __future__ import annotations

from recompile_lint.analysis.execution.values import TOP, Function, ModuleValue, Partial

IDENTITY = ModuleValue("execution.identity")


def partial(interp, frame, args, kwargs, node) -> object:
    if not args:
        return TOP
    return Partial(args[0], tuple(args[1:]), tuple(kwargs.items()))


def keep(interp, frame, args, kwargs, node) -> object:
    """``@lru_cache`` on a function, or ``@lru_cache(...)`` / ``@wraps(f)``: a decorator that keeps it."""
    if len(args) == 1 and not kwargs and isinstance(args[0], Function):
        return args[0]
    return Partial(IDENTITY)


HANDLERS = {
    "functools.partial": partial,
    "functools.wraps": lambda interp, frame, args, kwargs, node: Partial(IDENTITY),
    "functools.lru_cache": keep,
    "functools.cache": keep,
}
