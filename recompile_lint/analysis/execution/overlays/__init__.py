"""Models of the libraries the programs call, one module per library, in one table.

Each overlay module has ``HANDLERS``: dotted name -> ``(interpreter, frame, args, kwargs,
node) -> value``. Library functions and classes are spelled by their dotted name
(``torch.compile``); methods by the kind of their receiver (``nn.Module.train``,
``tensor.item``), or for an instance of a library class an overlay makes, by the class's dotted
name (``torch.optim.SGD.step``). Adding a library is adding a module and a line here; a name no overlay
models is top.
"""

from __future__ import annotations

from recompile_lint.analysis.execution.builtins import HANDLERS as BUILTIN_HANDLERS
from recompile_lint.analysis.execution.overlays import functools, grad_mode, nn_containers, nn_module, optim, pytest_marks, records, stdlib, torch_compile, torch_shapes, torch_tensor

TABLE = dict(BUILTIN_HANDLERS)
for _overlay in (torch_compile, nn_module, nn_containers, functools, torch_shapes, torch_tensor, grad_mode, records, optim, stdlib, pytest_marks):
    TABLE.update(_overlay.HANDLERS)
