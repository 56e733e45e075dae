"""``torch.compile`` in every form: ``torch.compile(fn)``, ``torch.compile(model, **options)``,
``@torch.compile``, ``@torch.compile(**options)``, ``torch._dynamo.optimize(...)(fn)``,
``model.compile()``; and ``torch.compiler.is_compiling()``, ``torch.compiler.disable``,
``torch._dynamo.mark_dynamic``, ``torch._dynamo.reset()``; and the ``torch.func`` transforms
(``torch.vmap(f)``), by the value flow's list of their names."""

from __future__ import annotations

from dataclasses import replace

from recompile_lint.analysis.execution.values import TOP, ClassValue, CompiledValue, Const, Instance, ListValue, ModuleValue, Partial, TensorValue, TupleValue
from recompile_lint.analysis.valueflow import FUNCTION_TRANSFORMS

COMPILE = ModuleValue("torch.compile")
# The class namespace slot a compiled class keeps its compile site in.
COMPILED_CLASS = "__compiled_class__"
EAGER = ModuleValue("execution.eager")


def _options(kwargs: dict[str, object]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((key, repr(value.value) if isinstance(value, Const) else "?") for key, value in kwargs.items()))


def _disabled(kwargs: dict[str, object]) -> bool:
    """``disable=True``, known: ``torch.compile`` is a no-op and hands back what it was given
    (``torch.compile(self.prefill, disable=not cfg.compile_prefilling)`` with the option off)."""
    flag = kwargs.get("disable")
    return isinstance(flag, Const) and flag.value is True


def _sited(interp, frame, node, disabled: bool) -> bool:
    """Note that the compile call ran, disabled or not, at its line and at the lines of the
    calls it runs under (a project wrapper's call is the region's site); ``disabled`` back."""
    outcomes = interp.compile_sites
    for where in ((frame.path, getattr(node, "lineno", 0)), *interp.call_lines):
        outcomes.setdefault(where, set()).add(disabled)
    return disabled


def compile_(interp, frame, args, kwargs, node) -> object:
    if not args:
        return Partial(COMPILE, (), tuple(kwargs.items()))  # ``@torch.compile(mode=...)``
    if _sited(interp, frame, node, _disabled(kwargs)):
        return args[0]
    compiled = CompiledValue(args[0], frame.path, getattr(node, "lineno", 0), _options(kwargs), tuple(interp.call_lines))
    if isinstance(args[0], ClassValue):
        # ``@torch.compile`` on a class compiles its ``__call__`` (an nn.Module's call): every
        # instance, of it or a subclass, runs the compiled forward; the class stays itself.
        interp.heap.write(args[0].addr, COMPILED_CLASS, compiled, interp.location(frame, node, "compile-site"))
        return args[0]
    return compiled


def transform(name: str):
    """``torch.vmap(f, ...)``, ``torch.func.grad(f)``, ...: a function that runs ``f``; compiled,
    the compiled frame is the transform's wrapper in torch, which inlines ``f`` (measured on
    torch 2.13: ``G['__import___main__'].STEP`` and ``args[1]`` guarded, the limit reached)."""

    def handler(interp, frame, args, kwargs, node) -> object:
        target = args[0] if args else kwargs.get("func")
        return Partial(target, transform=name) if target is not None else TOP

    return handler


def optimize(interp, frame, args, kwargs, node) -> object:
    return Partial(COMPILE)


def module_compile(interp, frame, args, kwargs, node) -> object:
    """``model.compile()``: calls of ``model`` go through the compiled forward from now on."""
    if args and isinstance(args[0], Instance) and not _sited(interp, frame, node, _disabled(kwargs)):
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
    interp.graph_break(frame, node)
    compiling, interp.compiling = interp.compiling, 0
    try:
        return interp.call(frame, args[0], list(args[1:]), kwargs, node)
    finally:
        interp.compiling = compiling


def graph_break(interp, frame, args, kwargs, node) -> object:
    """``torch._dynamo.graph_break()``: traced code breaks the graph here."""
    interp.graph_break(frame, node)
    return Const(None)


def mark_dynamic(interp, frame, args, kwargs, node) -> object:
    """``torch._dynamo.mark_dynamic(t, 1)``: that size of the tensor is symbolic from the first
    compile, so no guard compares it: the run no longer knows it (None)."""
    if len(args) < 2 or not isinstance(args[0], TensorValue) or args[0].sizes is None:
        return Const(None)
    dims = args[1]
    if isinstance(dims, Const):
        wanted = [dims.value]
    elif isinstance(dims, TupleValue):
        wanted = [d.value for d in dims.elements if isinstance(d, Const)]
    elif isinstance(dims, ListValue):
        wanted = [d.value for d in (interp.items(dims) or []) if isinstance(d, Const)]
    else:
        wanted = []
    tensor = args[0]
    rank = len(tensor.sizes)  # type: ignore[arg-type]
    marked = {d % rank for d in wanted if type(d) is int and -rank <= d < rank}
    if marked:
        sizes = tuple(None if i in marked else size for i, size in enumerate(tensor.sizes))  # type: ignore[arg-type]
        interp.replace_tensor(tensor, replace(tensor, sizes=sizes), None)
    return Const(None)


def reset(interp, frame, args, kwargs, node) -> object:
    """``torch._dynamo.reset()`` / ``torch.compiler.reset()``: Dynamo forgets every compiled
    graph, so the next call of each compiled object compiles afresh, no recompile counted
    (a test helper that resets before each model it compiles). Traced code cannot reset."""
    if interp.observer is not None and not interp.compiling and not interp.probing:
        interp.observer.on_reset(interp)
    return Const(None)


HANDLERS = {
    "torch.compile": compile_,
    "torch._dynamo.optimize": optimize,
    "nn.Module.compile": module_compile,
    "torch.compiler.is_compiling": is_compiling,
    "torch._dynamo.is_compiling": is_compiling,
    "torch.compiler.is_dynamo_compiling": is_compiling,
    "torch.compiler.disable": disable,
    "torch._dynamo.disable": disable,
    "torch._dynamo.graph_break": graph_break,
    "execution.eager": eager,
    "torch._dynamo.mark_dynamic": mark_dynamic,
    "torch._dynamo.maybe_mark_dynamic": mark_dynamic,
    # An unbacked size is symbolic too (a size of 0 or 1 included).
    "torch._dynamo.mark_unbacked": mark_dynamic,
    "torch._dynamo.decorators.mark_dynamic": mark_dynamic,
    "torch._dynamo.decorators.maybe_mark_dynamic": mark_dynamic,
    "torch._dynamo.decorators.mark_unbacked": mark_dynamic,
    "torch._dynamo.reset": reset,
    **{name: transform(name) for name in FUNCTION_TRANSFORMS},
    "torch.compiler.reset": reset,
    "torch._dynamo.eval_frame.reset": reset,
    # Drops every compiled code object's cache entries (what counts towards the limit).
    "torch._dynamo.reset_code_caches": reset,
}
