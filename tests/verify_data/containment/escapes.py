"""Leaves processes behind that no process group or marker variable finds, then hangs.

At import it starts a grandchild in its own session with a clean environment that keeps the
output pipe open, and a daemon (double fork: its parent exits at once, so it is orphaned), then
never finishes importing. The verifier must stop all of them at its deadline.
"""

import os
import subprocess
import sys
import time

import torch

MARKER = os.environ.get("RCL_TEST_MARKER", "rcl-verify-test")
step = 0


@torch.compile
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * step


def main() -> None:
    global step
    for _ in range(10):
        poly(torch.ones(2))
        step += 1


code = "import time; time.sleep(600)"
subprocess.Popen([sys.executable, "-c", code, MARKER + "-clean"], env={}, start_new_session=True)
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        os.execve(sys.executable, [sys.executable, "-c", code, MARKER + "-daemon"], {})
    os._exit(0)
time.sleep(600)
