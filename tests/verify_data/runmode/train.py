"""A tiny training script: one recompile the linter predicts, one it cannot."""

import argparse

import torch

step = 0


@torch.compile
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * step + 1


@torch.compile
def normalize(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean()) / (x.std() + 1e-6)


def main() -> None:
    global step
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    x = torch.randn(8)
    for _ in range(args.steps):
        poly(x)
        step += 1
    normalize(x)
    normalize(x.double())  # a new dtype: a recompile no rule predicts


if __name__ == "__main__":
    main()
