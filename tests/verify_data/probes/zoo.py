"""One module, several kinds of blamed values: the probes vary each in its own way."""

import os

import torch
from torch import nn

CFG = {"scale": 2}


class Hparams:
    SHIFT = 1


class Warmup(nn.Module):
    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * min(1.0, (self.step + 1) / 10)


@torch.compile
def scaled(x: torch.Tensor) -> torch.Tensor:
    return x * CFG["scale"] + Hparams.SHIFT


@torch.compile
def span_sum(x: torch.Tensor, start: int, end: int) -> torch.Tensor:
    total = x[0]
    for i in range(start, end):
        total = total + x[i % x.shape[0]]
    return total


@torch.compile
def chunked(x: torch.Tensor) -> torch.Tensor:
    n = int(os.environ.get("RCL_TEST_CHUNKS", "2"))
    return sum(c.sum() for c in x.chunk(n))


@torch.compile
def flagged(x: torch.Tensor) -> torch.Tensor:
    return x + 1 if training else x


training = True


@torch.compile
def fixed_shape(x: torch.Tensor) -> torch.Tensor:
    # No synthesized input fits: the tests declare one in [tool.recompile-lint.verify] examples.
    if tuple(x.shape) != (3, 5):
        raise ValueError("expects a 3x5 input")
    return x * CFG["scale"]
