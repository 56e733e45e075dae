"""Compiled functions that misbehave when called: the verifier must survive each one."""

import os
import subprocess
import sys

import torch

step = 0
MARKER = os.environ.get("RCL_TEST_MARKER", "rcl-verify-test")


@torch.compile(fullgraph=True)
def raises_when_compiled(x: torch.Tensor) -> torch.Tensor:
    # Runs eagerly; under fullgraph=True the graph break is an error.
    torch._dynamo.graph_break()
    return x * step


@torch.compile
def spawns(x: torch.Tensor) -> torch.Tensor:
    code = "import time; time.sleep(600)"
    subprocess.Popen([sys.executable, "-c", code, MARKER + "-group"])
    subprocess.Popen([sys.executable, "-c", code, MARKER + "-session"], start_new_session=True)
    return x * step


@torch.compile
def chatty(x: torch.Tensor) -> torch.Tensor:
    print("x" * 1_000_000)
    return x * step


@torch.compile
def exits(x: torch.Tensor) -> torch.Tensor:
    sys.exit(3)


@torch.compile
def hard_exit(x: torch.Tensor) -> torch.Tensor:
    os._exit(7)
