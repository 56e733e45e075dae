"""The other ``poly``: it reads this module's ``step``, which ``twin_main.main`` changes."""

import torch

step = 0


@torch.compile(backend="eager")
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * step
