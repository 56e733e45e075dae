"""The run whose logs the explain tests read: four compiled functions, four causes.

``poly`` reads a global the loop bumps (unbounded: it reaches the limit), ``forward_step``
inlines ``pkg.ops.scale``, which reads ``ops.STEP`` (another module's global), ``Warmup``
reads an int attribute changed between calls, and ``normalize`` gets a double tensor once:
a dtype guard the execution stage predicts (two graphs).
"""

import torch

import pkg.model
from pkg import ops
from pkg.model import Warmup, forward_step, normalize, poly


def main(steps: int = 10) -> None:
    x = torch.ones(4)
    warm = torch.compile(Warmup(), backend="eager")
    for i in range(steps):
        pkg.model.step = i
        poly(x)
    for i in range(3):
        ops.STEP = i
        forward_step(x)
        warm.step = i
        warm(x)
    normalize(x)
    normalize(x.double())


if __name__ == "__main__":
    main()
