"""Starts a helper in its own session, then never finishes importing."""

import os
import subprocess
import sys
import time

import torch

MARKER = os.environ.get("RCL_TEST_MARKER", "rcl-verify-test")
subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(600)", MARKER + "-hang"], start_new_session=True
)
time.sleep(600)


@torch.compile
def f(x: torch.Tensor) -> torch.Tensor:
    return x
