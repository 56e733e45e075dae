"""Calling an ``nn.Module`` in the execution stage runs its forward pre-hooks and forward hooks
around ``forward`` (``execution/overlays/nn_module.py``), as ``nn.Module.__call__`` does and
Dynamo inlines; ``isinstance`` of a module against torch's layer classes is decided where the
run knows the answer."""

from __future__ import annotations

from execution_helpers import Calls, Sources
from recompile_lint.analysis.execution.interpreter import Interpreter
from recompile_lint.analysis.execution.values import TOP, Const
from test_execution_guards import lint, write


def run_globals(source: str) -> tuple[Interpreter, int]:
    interp = Interpreter(Sources({"main.py": source}), Calls())
    interp.run_module("main.py", as_main=True)
    return interp, interp.globals["main.py"]


def test_pre_hooks_replace_the_arguments_and_forward_hooks_the_output_until_removed():
    interp, globs = run_globals("""
from torch import nn

class Same(nn.Module):
    def forward(self, x):
        return x

m = Same()
first = m.register_forward_pre_hook(lambda mod, args: (args[0] + 1,))
m.register_forward_hook(lambda mod, args, out: out * 10)
m.register_forward_hook(lambda mod, args, out: None)  # None keeps the output
both = m(1)
first.remove()
after = m(1)
""")
    assert interp.heap.read(globs, "both") == Const(20)
    assert interp.heap.read(globs, "after") == Const(10)


def test_a_hook_registered_with_prepend_runs_first():
    interp, globs = run_globals("""
from torch import nn

class Same(nn.Module):
    def forward(self, x):
        return x

m = Same()
m.register_forward_hook(lambda mod, args, out: out * 10)
m.register_forward_hook(lambda mod, args, out: out + 1, prepend=True)
out = m(1)
""")
    assert interp.heap.read(globs, "out") == Const(20)


def test_isinstance_of_torch_layer_classes_is_known_where_the_classes_say():
    interp, globs = run_globals("""
from torch import nn

class Plain(nn.Module):
    pass

class MyConv(nn.Conv2d):
    pass

lin = nn.Linear(2, 2)
a = isinstance(lin, nn.Conv2d)
b = isinstance(lin, nn.Linear)
c = isinstance(lin, (nn.Conv2d, nn.Module))
d = isinstance(Plain(), nn.Conv2d)
e = isinstance(Plain(), nn.Module)
f = isinstance(MyConv(1, 1, 1), nn.Conv2d)
g = isinstance(MyConv(1, 1, 1), nn.Linear)
""")
    read = lambda name: interp.heap.read(globs, name)  # noqa: E731
    assert [read(n) for n in "abcdef"] == [Const(False), Const(True), Const(True), Const(False), Const(True), Const(True)]
    assert read("g") == TOP  # torch's own class tree is not modelled: a subclass of a layer is not judged


def test_a_pre_hook_counting_calls_on_a_submodule_is_an_unbounded_recompile(tmp_path):
    """Measured on torch 2.13: ``self._modules['features']._modules['0'].calls == 0``, the limit
    reached, the reason pointing at the hook's line."""
    source = """
import torch
from torch import nn


def count_calls(module, args):
    module.calls += 1


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))


def main():
    model = Net()
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            module.calls = 0
            module.register_forward_pre_hook(count_calls)
    fast = torch.compile(model)
    for _ in range(10):
        fast(torch.randn(2, 3, 8, 8))


if __name__ == "__main__":
    main()
"""
    root = write(tmp_path, {"run.py": source})
    line = source.splitlines().index("    module.calls += 1") + 1
    [finding] = [f for f in lint(root) if f.severity in ("error", "warning")]
    assert (finding.severity, finding.bounded, finding.line) == ("error", "unbounded", line)
    assert finding.guard.source == "L['self']._modules['features']._modules['0'].calls"
    assert "attribute of `Conv2d`" in finding.message and "count_calls" in finding.message
