"""Starts a grandchild with a clean environment, then SIGKILLs the process that supervises it.

The verifier must still give a verdict (unverifiable, saying so), stop the grandchild, and go
on with the next module.
"""

import os
import signal
import subprocess
import sys
import time

import torch

MARKER = os.environ.get("RCL_TEST_MARKER", "rcl-verify-test")
step = 0


@torch.compile
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * step


subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", MARKER + "-orphan"], env={},
                 start_new_session=True)
time.sleep(0.5)
os.kill(os.getppid(), signal.SIGKILL)
time.sleep(600)
