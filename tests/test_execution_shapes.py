"""Tensor shapes through layers and ops in the execution stage
(``execution/overlays/torch_shapes.py``), and the entry files that drive a compiled function
from a few imports away (``execution/entries.py``). Each expected size is what torch 2.13
computes for the same call."""

from __future__ import annotations

import pytest

from execution_helpers import Calls, Sources
from recompile_lint.analysis.execution.interpreter import Interpreter
from recompile_lint.analysis.execution.values import TupleValue
from test_execution import lint, write

PRELUDE = """
import os

import torch
import torch.nn.functional as F
from torch import nn

x = torch.randn(2, 3, 8, 8)
s = torch.randn(2, 5, 16)
"""


def sizes_of(expr: str):
    interp = Interpreter(Sources({"main.py": PRELUDE + f"out = {expr}\n"}), Calls())
    interp.run_module("main.py", as_main=True)
    out = interp.heap.read(interp.globals["main.py"], "out")
    if isinstance(out, TupleValue):
        return [t.sizes for t in out.elements]
    return out.sizes


@pytest.mark.parametrize(
    ("expr", "sizes"),
    [
        ("nn.Linear(16, 4)(s)", (2, 5, 4)),
        ("nn.Conv2d(3, 6, 3)(x)", (2, 6, 6, 6)),
        ("nn.Conv2d(3, 6, 3, padding=1)(x)", (2, 6, 8, 8)),
        ("nn.Conv2d(3, 6, 3, stride=2, padding=1)(x)", (2, 6, 4, 4)),
        ("nn.Conv1d(5, 7, 3, dilation=2)(s)", (2, 7, 12)),
        ("nn.Conv2d(3, 6, 3, padding='same')(x)", (2, 6, 8, 8)),
        ("nn.Embedding(10, 4)(torch.tensor([[1, 2, 3]]))", (1, 3, 4)),
        ("nn.Sequential(nn.Conv2d(3, 4, 1), nn.ReLU(), nn.Dropout())(x)", (2, 4, 8, 8)),
        ("x[:, -1:]", (2, 1, 8, 8)),
        ("x[0]", (3, 8, 8)),
        ("x[..., None]", (2, 3, 8, 8, 1)),
        ("x[:, ::2, 1:7]", (2, 2, 6, 8)),
        # A bound the run does not know (a rank from the environment) keeps the axis.
        ("s[int(os.environ['RANK']) * 2:]", (None, 5, 16)),
        ("x[:, :int(os.environ['N']), 0]", (2, None, 8)),
        ("s.transpose(1, 2)", (2, 16, 5)),
        ("x.permute(0, 2, 3, 1)", (2, 8, 8, 3)),
        ("s.unsqueeze(-1)", (2, 5, 16, 1)),
        ("x.flatten(2)", (2, 3, 64)),
        ("s.chunk(3, dim=-1)", [(2, 5, 6), (2, 5, 6), (2, 5, 4)]),
        ("torch.split(s, 2, 1)", [(2, 2, 16), (2, 2, 16), (2, 1, 16)]),
        ("s.argmax(-1)", (2, 5)),
        ("s.mean((1, 2), keepdim=True)", (2, 1, 1)),
        ("s.sum()", ()),
        ("s @ torch.randn(16, 3)", (2, 5, 3)),
        ("s @ s.transpose(1, 2)", (2, 5, 5)),
        ("torch.cat([s, s], dim=1)", (2, 10, 16)),
        ("torch.stack([s, s])", (2, 2, 5, 16)),
        ("F.pad(s, (3, 0))", (2, 5, 19)),
        ("F.softmax(s, -1) * torch.ones(16)", (2, 5, 16)),
        ("torch.tensor([[1, 2], [3, 4]])", (2, 2)),
    ],
)
def test_shapes_follow_torch(expr, sizes):
    assert sizes_of(expr) == sizes


def test_an_integer_result_never_needs_grad():
    interp = Interpreter(Sources({"main.py": PRELUDE + "w = nn.Linear(16, 4)(s)\nout = w.argmax(-1)\n"}), Calls())
    interp.run_module("main.py", as_main=True)
    globs = interp.globals["main.py"]
    assert interp.heap.read(globs, "w").requires_grad is True  # the layer's weight needs grad
    assert interp.heap.read(globs, "out").requires_grad is False


def test_a_compiled_function_two_imports_from_the_script_is_run_by_it(tmp_path):
    """``run.py`` imports the model, the model the compiled normaliser: the script drives it,
    and the ranks its layers give (4, 3, 2; measured: 3 graphs) reach the compiled call."""
    root = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/norm.py": """
            import torch

            @torch.compile
            def normalise(x):
                if x.dim() == 4:
                    return x / x.std((1, 2, 3), keepdim=True)
                return x / x.std(-1, keepdim=True)
            """,
        "pkg/model.py": """
            import torch
            from torch import nn
            from pkg.norm import normalise

            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.image = nn.Conv2d(3, 4, 3, padding=1)
                    self.audio = nn.Conv1d(8, 4, 3, padding=1)
                    self.table = nn.Linear(10, 4)

                def forward(self, image, audio, table):
                    return [normalise(self.image(image)), normalise(self.audio(audio)), normalise(self.table(table))]
            """,
        "run.py": """
            import torch
            from pkg.model import Encoder

            def main():
                model = Encoder()
                for _ in range(4):
                    model(torch.randn(2, 3, 8, 8), torch.randn(2, 8, 16), torch.randn(2, 10))

            if __name__ == "__main__":
                main()
            """,
    })
    found = [f for f in lint(root) if f.severity in ("error", "warning")]
    assert found and all((f.code, f.severity, f.bounded) == ("RCL201", "warning", "bounded") for f in found)
    assert {(f.path.rsplit("/", 1)[-1], f.line, f.guard.source) for f in found} >= {("norm.py", 6, "L['x']")}
    assert all("3 different values" in f.message and "when `run.py` runs" in f.message for f in found)


SHAPE_TUPLE = """
import torch


@torch.compile(backend="eager")
def f(x, shape):
    return x.reshape(shape)


def main():
    for i in range(1, 13):
        f(torch.randn(24), {shape})


if __name__ == "__main__":
    main()
"""


def test_a_tuple_of_sizes_handed_whole_to_reshape_is_guarded_element_by_element(tmp_path):
    # Measured on torch 2.13: ``shape[0] == 24`` fails once, then the size is symbolic (2 graphs).
    findings = lint(write(tmp_path, {"run.py": SHAPE_TUPLE.format(shape="(24 // (i if 24 % i == 0 else 1), -1)")}))
    [finding] = [f for f in findings if f.severity in ("error", "warning")]
    assert (finding.severity, finding.bounded, finding.guard.source) == ("warning", "bounded", "L['shape'][0]")
    assert "2 graphs" in finding.explanation


def test_the_same_tuple_of_sizes_at_every_call_is_one_graph(tmp_path):
    findings = lint(write(tmp_path, {"run.py": SHAPE_TUPLE.format(shape="(6, -1)")}))
    assert [f for f in findings if f.severity in ("error", "warning")] == []


BUFFER_RESIZED = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        {register}

    def forward(self, x):
        return self.mem.sum(0) + x


def main():
    net = Net()
    model = torch.compile(net, backend="eager")
    for step in range(12):
        net.mem = torch.zeros(step + 1, 4)
        model(torch.randn(4))


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("register, expected", [
    # Measured on torch 2.13: a buffer keeps static shapes, as a parameter does (the limit);
    # a plain tensor attribute's size goes symbolic after one recompile (2 graphs).
    ('self.register_buffer("mem", torch.zeros(1, 4))', ("error", "unbounded", "L['self']._buffers['mem']")),
    ("self.mem = torch.zeros(1, 4)", ("warning", "bounded", "L['self'].mem")),
])
def test_a_registered_buffer_keeps_static_shapes(tmp_path, register, expected):
    [finding] = [f for f in lint(write(tmp_path, {"run.py": BUFFER_RESIZED.format(register=register)})) if f.severity in ("error", "warning")]
    assert (finding.severity, finding.bounded, finding.guard.source) == expected
