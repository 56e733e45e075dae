"""Fails at import: the verifier reports why and goes on."""

import torch

raise RuntimeError("this module needs a dataset that is not here")


@torch.compile
def f(x: torch.Tensor) -> torch.Tensor:
    return x
