"""``torch.compile`` in every form: ``torch.compile(fn)``, ``torch.compile(model, **options)``,
``@torch.compile``, ``@torch.compile(**options)``, ``torch._dynamo.optimize(...)(fn)``,
``model.compile()``; and ``torch.compiler.is_compiling()``, ``torch.compiler.disable``."""

from __future__ import annotations

from recompile_lint.analysis.execution.values import TOP, CompiledValue, Const, Instance, ModuleValue, Partial

COMPILE = ModuleValue("torch.compile")
EAGER = ModuleValue("execution.eager")


def _options(kwargs: dict[str, object]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((key, repr(value.value) if isinstance(value, Const) else "?") for key, value in kwargs.items()))


def compile_(interp, frame, args, kwargs, node) -> object:
    if not args:
        return Partial(COMPILE, (), tuple(kwargs.items()))  # ``@torch.compile(mode=...)``
    return CompiledValue(args[0], frame.path, getattr(node, "lineno", 0), _options(kwargs), tuple(interp.call_lines))


def optimize(interp, frame, args, kwargs, node) -> object:
    return Partial(COMPILE)


def module_compile(interp, frame, args, kwargs, node) -> object:
    """``model.compile()``: calls of ``model`` go through the compiled forward from now on."""
    if args and isinstance(args[0], Instance):
        compiled = CompiledValue(args[0], frame.path, getattr(node, "lineno", 0), _options(kwargs), tuple(interp.call_lines))
        interp.heap.write(args[0].addr, "__compiled__", compiled, interp.location(frame, node, "compile-site"))
    return Const(None)


def is_compiling(interp, frame, args, kwargs, node) -> object:
    return Const(interp.compiling > 0)


def disable(interp, frame, args, kwargs, node) -> object:
    """The function still runs when called, but eagerly: Dynamo does not trace it."""
    if not args:
        return Partial(ModuleValue("torch.compiler.disable"))  # ``@torch.compiler.disable(recursive=...)``
    return Partial(EAGER, (args[0],))


def eager(interp, frame, args, kwargs, node) -> object:
    """A call of a disabled function: its body runs outside compiled code."""
    if not args:
        return TOP
    compiling, interp.compiling = interp.compiling, 0
    try:
        return interp.call(frame, args[0], list(args[1:]), kwargs, node)
    finally:
        interp.compiling = compiling


HANDLERS = {
    "torch.compile": compile_,
    "torch._dynamo.optimize": optimize,
    "nn.Module.compile": module_compile,
    "torch.compiler.is_compiling": is_compiling,
    "torch._dynamo.is_compiling": is_compiling,
    "torch.compiler.is_dynamo_compiling": is_compiling,
    "torch.compiler.disable": disable,
    "torch._dynamo.disable": disable,
    "execution.eager": eager,
}
