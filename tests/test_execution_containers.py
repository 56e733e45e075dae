"""Module containers in the execution stage (``execution/overlays/nn_containers.py``):
``nn.ModuleList``, ``nn.Sequential`` and ``nn.ModuleDict`` hold their modules, are iterated,
indexed and called as torch does, and an item's guard is spelled as Dynamo 2.13 spells it
(``L['self']._modules['blocks']._modules['1'].scale``, measured for an index, a negative
index, a key, iteration, ``enumerate``, ``values()``, ``items()`` and a ``Sequential``'s call)."""

from __future__ import annotations

import pytest

from execution_helpers import Calls, Sources
from recompile_lint.analysis.execution.interpreter import Interpreter
from recompile_lint.analysis.execution.values import Const, Instance
from test_execution_guards import lint, traced, write

BLOCK = """
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self, scale=1):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.scale = scale

    def forward(self, x):
        return self.proj(x) * self.scale
"""


def stack(init: str, forward: str) -> str:
    return BLOCK + f"""
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = {init}

    def forward(self, x):
{forward}

net = Stack()
torch.compile(net)(torch.randn(2, 8))
"""


LIST = "nn.ModuleList([Block(1), Block(2)])"
SEQUENTIAL = "nn.Sequential(Block(1), Block(2))"
DICT = 'nn.ModuleDict({"a": Block(1), "main": Block(2)})'


@pytest.mark.parametrize(
    ("init", "forward", "key", "value"),
    [
        (LIST, "        return self.blocks[1](x)", "1", 2),
        (LIST, "        return self.blocks[-1](x)", "1", 2),
        (LIST, "        for block in self.blocks:\n            x = block(x)\n        return x", "1", 2),
        (LIST, "        for i, block in enumerate(self.blocks):\n            x = block(x) + len(self.blocks)\n        return x", "1", 2),
        (SEQUENTIAL, "        return self.blocks(x)", "1", 2),
        (SEQUENTIAL, "        return self.blocks[-1](x)", "1", 2),
        (DICT, '        return self.blocks["main"](x)', "main", 2),
        (DICT, "        for block in self.blocks.values():\n            x = block(x)\n        return x", "main", 2),
        (DICT, "        for name, block in self.blocks.items():\n            x = block(x)\n        return x", "main", 2),
        (DICT, "        for name in self.blocks:\n            x = self.blocks[name](x)\n        return x", "main", 2),
    ],
)
def test_an_item_of_a_module_container_is_guarded_through_its_modules_key(init, forward, key, value):
    [call] = traced(stack(init, forward))
    source = f"L['self']._modules['blocks']._modules['{key}'].scale"
    assert call[source].value == Const(value)
    assert call[source].owner == "main.Block"
    # Dynamo never spells an item with a subscript of the container.
    assert not any("['blocks'][" in s for s in call)


def test_a_container_s_modules_are_its_submodules_for_train_apply_and_parameters():
    observer = Calls()
    project = Sources({"main.py": BLOCK + """
class Tagger:
    def __init__(self):
        self.seen = []

net = nn.Sequential(Block(1), nn.ModuleList([Block(2)]), nn.ModuleDict({"x": Block(3)}))
net.eval()
count = len(list(net.modules()))
params = len(net.parameters())
first = net[0]
last = net[-1]["x"]
size = len(net)
"""})
    interp = Interpreter(project, observer)
    interp.run_module("main.py", as_main=True)
    globs = interp.globals["main.py"]
    read = lambda name: interp.heap.read(globs, name, None)  # noqa: E731
    # Sequential, 3 blocks, their 3 linears, the ModuleList and the ModuleDict.
    assert read("count") == Const(9)
    assert read("params") == Const(6)  # each Linear's weight and bias
    assert read("size") == Const(3)
    first, last = read("first"), read("last")
    assert isinstance(first, Instance) and interp.heap.read(first.addr, "scale") == Const(1)
    assert isinstance(last, Instance) and interp.heap.read(last.addr, "scale") == Const(3)
    assert interp.heap.read(first.addr, "training") == Const(False)
    assert interp.heap.read(last.addr, "training") == Const(False)


def test_appended_and_inserted_modules_keep_torch_s_keys():
    [call] = traced(BLOCK + """
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList()
        self.blocks.append(Block(1))
        self.blocks.extend([Block(3)])
        self.blocks.insert(1, Block(2))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x

torch.compile(Stack())(torch.randn(2, 8))
""")
    assert [call[f"L['self']._modules['blocks']._modules['{i}'].scale"].value for i in range(3)] == [Const(1), Const(2), Const(3)]


def test_a_container_built_from_items_the_run_does_not_know_is_not_iterated():
    [call] = traced(BLOCK + """
import sys

class Stack(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x

torch.compile(Stack(sys.argv))(torch.randn(2, 8))
""")
    assert not any("scale" in source for source in call)


def test_a_holder_writing_to_a_sequential_item_between_calls_is_an_unbounded_recompile(tmp_path):
    """Measured on torch 2.13: 8 recompiles on ``self._modules['blocks']._modules['1'].scale``."""
    source = BLOCK + """
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())

    def forward(self, x):
        return self.blocks(x)


class Tuner:
    def __init__(self, target):
        self.target = target

    def on_step(self, i):
        self.target.scale = i + 1


def main():
    net = Stack()
    tuner = Tuner(net.blocks[1])
    fast = torch.compile(net, backend="eager")
    for step in range(12):
        tuner.on_step(step)
        fast(torch.randn(4, 8))


if __name__ == "__main__":
    main()
"""
    root = write(tmp_path, {"run.py": source})
    lines = source.splitlines()
    read = lines.index("        return self.proj(x) * self.scale") + 1
    change = lines.index("        self.target.scale = i + 1") + 1
    [finding] = [f for f in lint(root) if f.severity in ("error", "warning")]
    assert finding.severity == "error" and finding.bounded == "unbounded"
    assert finding.guard.source == "L['self']._modules['blocks']._modules['1'].scale"
    assert finding.line == read
    assert "attribute of `Block`" in finding.message
    assert any(e.role == "write" and e.line == change for e in finding.evidence)


def test_a_generator_expression_a_call_consumes_is_its_items():
    observer = Calls()
    project = Sources({"main.py": BLOCK + """
blocks = nn.ModuleList(Block(i) for i in range(3))
total = sum(i * 2 for i in range(4))
lazy = (i for i in range(3))
"""})
    interp = Interpreter(project, observer)
    interp.run_module("main.py", as_main=True)
    globs = interp.globals["main.py"]
    blocks = interp.heap.read(globs, "blocks")
    assert [interp.heap.read(blocks.addr, str(i)).addr for i in range(3)]  # three Blocks
    assert interp.heap.read(globs, "total") == Const(12)
    assert not isinstance(interp.heap.read(globs, "lazy"), Instance)


def test_values_forwarded_through_star_args_keep_their_sources():
    """``block(x, *args, **kwargs)`` in a compiled forward: Dynamo spells what the block gets
    as ``L['args'][0]`` and ``L['kwargs']['name']`` (measured on torch 2.13 by the lab)."""
    [call] = traced(BLOCK + """
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Inner()])

    def forward(self, x, *args, **kwargs):
        for block in self.blocks:
            x = block(x, *args, **kwargs)
        return x


class Inner(nn.Module):
    def forward(self, x, k, *, scale):
        return x * k * scale


torch.compile(Stack())(torch.randn(2, 8), 3, scale=2.0)
""")
    assert call["L['args'][0]"].value == Const(3)
    assert call["L['kwargs']['scale']"].value == Const(2.0)


def test_a_module_compiled_in_place_through_its_container_is_a_compile_site(tmp_path):
    source = BLOCK + """
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleDict({"main": Block()})

    def forward(self, x):
        return self.blocks["main"](x)


def main():
    net = Stack()
    net.blocks["main"].compile(backend="eager")
    for step in range(12):
        net.blocks["main"].scale = step
        net(torch.randn(2, 8))


if __name__ == "__main__":
    main()
"""
    root = write(tmp_path, {"run.py": source})
    [finding] = [f for f in lint(root) if f.severity in ("error", "warning")]
    assert (finding.severity, finding.bounded, finding.guard.source) == ("error", "unbounded", "L['self'].scale")
    assert finding.region == "run.Block.forward"


def test_a_default_of_a_block_a_sequential_calls_is_read_off_its_class():
    """Measured on torch 2.13: ``dict(type(self._modules['stages']._modules['0']).__dict__)
    ['forward'].__defaults__[0] == 0.05``."""
    [call] = traced(BLOCK + """
class Head(nn.Module):
    def forward(self, x, mixing=0.05):
        return x * mixing


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.Sequential(Head())

    def forward(self, x):
        return self.stages(x)


torch.compile(Model())(torch.randn(2, 8))
""")
    assert call["dict(type(L['self']._modules['stages']._modules['0']).__dict__)['forward'].__defaults__[0]"].value == Const(0.05)


GROWING = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def main():
    net = Net()
    model = torch.compile(net)
    for i in range(12):
        {grow}
        model(torch.randn(2, 4))


if __name__ == "__main__":
    main()
"""


def test_a_module_list_that_grows_between_calls_fails_its_length_guard_every_time(tmp_path):
    # Measured on torch 2.13: a layer appended before each call fails
    # ``len(self._modules['layers']._modules)`` every time and reaches the limit.
    findings = lint(write(tmp_path, {"run.py": GROWING.format(grow="net.layers.append(torch.nn.Linear(4, 4))")}))
    [finding] = [f for f in findings if f.severity in ("error", "warning")]
    assert (finding.severity, finding.line, finding.guard.source) == ("error", 11, "len(L['self']._modules['layers']._modules)")
    assert any(loc.role == "write" and loc.line == 20 for loc in finding.evidence)


def test_a_module_list_iterated_at_every_call_with_the_same_modules_is_one_graph(tmp_path):
    findings = lint(write(tmp_path, {"run.py": GROWING.format(grow="pass")}))
    assert [f for f in findings if f.severity in ("error", "warning")] == []


PARAMETERS = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(4))])

    def forward(self, x):
        for scale in self.scales:
            x = x * scale
        return x


def main():
    net = Net()
    model = torch.compile(net)
    for i in range(12):
        model(torch.randn(2, 4))
        {grow}


if __name__ == "__main__":
    main()
"""


def test_a_parameter_list_that_grows_between_calls_fails_its_size_guard_every_time(tmp_path):
    # Measured on torch 2.13: a parameter appended after each call fails
    # ``self._modules['scales']._size == 1`` (then 2, ...) and reaches the limit.
    findings = lint(write(tmp_path, {"run.py": PARAMETERS.format(grow="net.scales.append(torch.nn.Parameter(torch.ones(4)))")}))
    [finding] = [f for f in findings if f.severity in ("error", "warning")]
    assert (finding.severity, finding.line, finding.guard.source) == ("error", 11, "L['self']._modules['scales']._size")
    assert "parameter list" in finding.message
    assert any(loc.role == "write" and loc.line == 21 for loc in finding.evidence)


@pytest.mark.parametrize("grow", ["pass", "net.scales[0] = torch.nn.Parameter(torch.zeros(4))"])
def test_a_parameter_list_of_a_fixed_length_is_one_graph(tmp_path, grow):
    findings = lint(write(tmp_path, {"run.py": PARAMETERS.format(grow=grow)}))
    assert [f for f in findings if f.severity in ("error", "warning")] == []


SWAPPED_HEAD = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.head(x)


def main():
    net = Net()
    model = torch.compile(net, backend="eager")
    heads = [torch.nn.Linear(4, 4), {other}]
    for step in range(12):
        net.head = heads[step % 2]
        model(torch.randn(2, 4))


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("other, found", [
    ("torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())", True),  # measured: 2 graphs
    ("torch.nn.Linear(4, 4)", False),  # measured: one graph (its parameters are inputs)
])
def test_a_submodule_swapped_for_one_of_another_class_fails_its_type_guard(tmp_path, other, found):
    findings = [f for f in lint(write(tmp_path, {"run.py": SWAPPED_HEAD.format(other=other)})) if f.severity in ("error", "warning")]
    if not found:
        assert findings == []
        return
    [finding] = findings
    assert (finding.severity, finding.bounded, finding.guard.kind, finding.guard.source) == ("warning", "bounded", "TYPE_MATCH", "L['self']._modules['head']")


def test_two_subclasses_sharing_an_inherited_forward_fail_the_type_guard_on_self(tmp_path):
    # Measured on torch 2.13: ``___check_type_id(self, ...)`` fails once when a compiled ``A``
    # and a compiled ``B`` call the ``forward`` they inherit in turn (2 graphs).
    program = """
    import torch


    class Base(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.act(self.lin(x))


    class A(Base):
        def act(self, x):
            return x.relu()


    class B(Base):
        def act(self, x):
            return x.tanh()


    def main():
        models = [torch.compile(A(), backend="eager"), torch.compile(B(), backend="eager")]
        for i in range(12):
            models[i % 2](torch.randn(2, 4))


    if __name__ == "__main__":
        main()
    """
    [finding] = [f for f in lint(write(tmp_path, {"run.py": program})) if f.severity in ("error", "warning")]
    assert (finding.severity, finding.bounded, finding.guard.kind, finding.guard.source) == ("warning", "bounded", "TYPE_MATCH", "L['self']")


DECORATED_CLASS = """
import torch
from torch import nn


@torch.compile(backend="eager")
class Block(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return x * self.k


def main():
    blocks = [Block(k) for k in {ks}]
    for _ in range(3):
        for block in blocks:
            block(torch.randn(2, 4))


if __name__ == "__main__":
    main()
"""


def test_instances_of_a_compiled_class_share_one_cache(tmp_path):
    # Measured on torch 2.13: ten instances with their own ``k`` fail ``self.k == 0``, then
    # ``self.k == 1``, ... and reach the limit; one instance called again is one graph.
    findings = lint(write(tmp_path, {"run.py": DECORATED_CLASS.format(ks="range(10)")}))
    [finding] = [f for f in findings if f.severity in ("error", "warning")]
    assert (finding.code, finding.severity, finding.line, finding.guard.source) == ("RCL104", "error", 13, "L['self'].k")
    assert any(loc.role == "compile-site" and loc.line == 6 for loc in finding.evidence)


def test_one_instance_of_a_compiled_class_called_again_is_one_graph(tmp_path):
    findings = lint(write(tmp_path, {"run.py": DECORATED_CLASS.format(ks="[4]")}))
    assert [f for f in findings if f.severity in ("error", "warning")] == []
