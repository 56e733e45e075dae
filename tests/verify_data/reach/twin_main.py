"""Two functions named ``poly`` in two files. This file's ``poly`` is compiled and called with
nothing that changes; ``twin_other.poly`` recompiles on its own global ``step``."""

import torch

import twin_other

step = 0


@torch.compile(backend="eager")
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@torch.compile(backend="eager")
def unused(x):  # noqa: ANN001, ANN201 - never called by main()
    return x * step


def main() -> None:
    for i in range(10):
        poly(torch.ones(2))
        twin_other.step = i
        twin_other.poly(torch.ones(2))
