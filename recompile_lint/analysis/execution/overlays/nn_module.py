"""``nn.Module``: the methods a program calls on its modules. Subclasses' ``__init__`` runs as
project code (``super().__init__()`` is a no-op); attribute writes land on the instance;
calling an instance calls its ``forward``; ``OptimizedModule`` forwards reads and writes to the
original module (``Interpreter.get_attribute`` / ``set_attribute`` on a ``CompiledValue``)."""

from __future__ import annotations

from recompile_lint.analysis.execution.values import TOP, Const, Instance


def _mode(training: bool | None):
    def handler(interp, frame, args, kwargs, node) -> object:
        if not args or not isinstance(args[0], Instance):
            return TOP
        value: object = Const(training)
        if training is None:  # ``train(mode=True)``
            mode = args[1] if len(args) > 1 else kwargs.get("mode", Const(True))
            value = mode if isinstance(mode, Const) else TOP
        interp.heap.write(args[0].addr, "training", value, interp.location(frame, node, "write"))
        return args[0]

    return handler


def _self(interp, frame, args, kwargs, node) -> object:
    return args[0] if args else TOP


def _apply(interp, frame, args, kwargs, node) -> object:
    if len(args) == 2:
        interp.call(frame, args[1], [args[0]], {}, node)
    return args[0] if args else TOP


def _register_buffer(interp, frame, args, kwargs, node) -> object:
    if len(args) >= 3 and isinstance(args[0], Instance) and isinstance(args[1], Const) and isinstance(args[1].value, str):
        interp.heap.write(args[0].addr, args[1].value, args[2], interp.location(frame, node, "write"))
    return Const(None)


HANDLERS = {
    "nn.Module.train": _mode(None),
    "nn.Module.eval": _mode(False),
    "nn.Module.to": _self,
    "nn.Module.cuda": _self,
    "nn.Module.cpu": _self,
    "nn.Module.float": _self,
    "nn.Module.half": _self,
    "nn.Module.double": _self,
    "nn.Module.requires_grad_": _self,
    "nn.Module.apply": _apply,
    "nn.Module.register_buffer": _register_buffer,
}
