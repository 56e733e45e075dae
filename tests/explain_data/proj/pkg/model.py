"""Compiled entry points of the explain tests: each recompiles for a different reason."""

import torch
from torch import nn

from pkg import ops

step = 0


@torch.compile(backend="eager")
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * step + 1


@torch.compile(backend="eager")
def forward_step(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(ops.scale(x))


class Warmup(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.step


@torch.compile(backend="eager")
def normalize(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm()
