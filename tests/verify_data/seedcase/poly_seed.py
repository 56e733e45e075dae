"""The seed case: a compiled polynomial reads a global step that the training loop bumps."""

import torch

step = 0
scale = 3  # never read by ``poly``: a finding that blames it cannot be confirmed


@torch.compile
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * step + 0.5 * x**2 - 0.1 * x**3


def main() -> None:
    global step
    x = torch.randn(8)
    for _ in range(10):
        poly(x)
        step += 1


if __name__ == "__main__":
    main()
