"""Grad mode and autocast: ``torch.no_grad()``, ``enable_grad``, ``inference_mode``,
``set_grad_enabled(b)``, ``autocast(...)``: context state while their block runs; as
decorators (``@torch.no_grad()``) they leave the function as it is, and its calls run under
them (``Interpreter.decorated_modes``)."""

from __future__ import annotations

from recompile_lint.analysis.execution.values import ContextValue, Function

CONTEXTS = {
    "torch.no_grad": "no_grad",
    "torch.enable_grad": "enable_grad",
    "torch.inference_mode": "inference_mode",
    "torch.set_grad_enabled": "set_grad_enabled",
    "torch.autocast": "autocast",
    "torch.amp.autocast": "autocast",
    "torch.cuda.amp.autocast": "autocast",
    "torch.cpu.amp.autocast": "autocast",
}


def _context(kind: str):
    def handler(interp, frame, args, kwargs, node) -> object:
        if len(args) == 1 and isinstance(args[0], Function) and kind != "set_grad_enabled":
            # ``@torch.no_grad`` without parentheses: the function, whose calls run under it.
            interp.decorated_modes[args[0].code] = ContextValue(kind)
            return args[0]
        return ContextValue(kind, args[0] if args else None)

    return handler


def grad_enabled(contexts: list[object]) -> bool | None:
    """Whether grad is on under the contexts entered (None when a ``set_grad_enabled`` is unknown)."""
    enabled: bool | None = True
    for context in contexts:
        if isinstance(context, ContextValue):
            if context.kind in ("no_grad", "inference_mode"):
                enabled = False
            elif context.kind == "enable_grad":
                enabled = True
            elif context.kind == "set_grad_enabled":
                value = getattr(context.argument, "value", None)
                enabled = value if isinstance(value, bool) else None
    return enabled


HANDLERS = {name: _context(kind) for name, kind in CONTEXTS.items()}
