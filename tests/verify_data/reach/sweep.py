"""A module-level sweep: importing this module already drives ``shifted`` to the limit."""

import torch

offset = 0


@torch.compile(backend="eager")
def shifted(x: torch.Tensor) -> torch.Tensor:
    return x + offset


for offset in range(12):
    shifted(torch.ones(3))
