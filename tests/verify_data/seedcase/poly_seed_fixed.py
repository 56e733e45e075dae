"""The seed case fixed: the step lives in a 0-d tensor updated in place (one graph)."""

import torch

step = torch.zeros(())


@torch.compile
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * step + 0.5 * x**2 - 0.1 * x**3


def main() -> None:
    x = torch.randn(8)
    for _ in range(10):
        poly(x)
        step.add_(1)


if __name__ == "__main__":
    main()
