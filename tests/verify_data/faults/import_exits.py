"""Calls sys.exit at import, like a script without a ``__main__`` guard."""

import sys

import torch

sys.exit(4)


@torch.compile
def f(x: torch.Tensor) -> torch.Tensor:
    return x
