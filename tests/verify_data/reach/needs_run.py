"""No argument can be synthesised here: the constructor and ``forward`` take unannotated
values (two ints, a list of tensors). The module's own ``run()`` drives the compiled model."""

import torch
from torch import nn

step = 0


class Mixer(nn.Module):
    def __init__(self, dim, heads):  # noqa: ANN001 - unannotated on purpose
        super().__init__()
        self.proj = nn.Linear(dim, dim * heads)

    def forward(self, parts):  # noqa: ANN001, ANN201 - a list of tensors, unannotated
        return self.proj(sum(parts)) * step


def run() -> None:
    global step
    model = torch.compile(Mixer(4, 2))
    for i in range(10):
        step = i
        model([torch.ones(4), torch.ones(4)])


if __name__ == "__main__":
    run()
