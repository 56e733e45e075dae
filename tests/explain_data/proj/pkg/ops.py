"""A helper the compiled model inlines; the loop in ``train`` sets ``STEP`` every step."""

import torch

STEP = 0


def scale(x: torch.Tensor) -> torch.Tensor:
    return x * (1.0 + 0.1 * STEP)
