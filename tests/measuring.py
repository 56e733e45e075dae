"""Run a command and measure its own processor time and peak memory.

``os.wait4`` on a child of the test process reports a peak RSS at least as large as the test
process's own: Python starts children with ``vfork``, and Linux carries the shared address
space's high-water mark across ``exec`` into the child's ``ru_maxrss``. So a command run from a
pytest process that has grown to 600 MB "peaks" at 600 MB whatever it does. A small launcher
process forks (a real fork, from a process of a few MB), runs the command and waits for it, so
the figures it reports are the command's own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Mapping

_LAUNCHER = r"""
import json, os, sys
report, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as handle:
    json.dump({"status": status, "maxrss": usage.ru_maxrss, "processor": usage.ru_utime + usage.ru_stime}, handle)
"""


@dataclass(frozen=True)
class Measured:
    """How a command ended and what it cost."""

    code: int  # exit status, or the negative signal number that ended it
    processor: float  # user + system seconds of the command and the children it waited for
    peak_bytes: int  # its peak resident memory
    seconds: float  # wall time


def run_measured(
    command: list[str],
    *,
    cwd: Path,
    stdout: IO[bytes],
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    limit: float = 120.0,
) -> Measured:
    """Run ``command`` (its output to ``stdout``), killed with everything it started after
    ``limit`` wall seconds."""
    with tempfile.TemporaryDirectory(prefix="measured-") as tmp:
        report = Path(tmp) / "usage.json"
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(report), *command],
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the launcher leads a group: the timeout ends the command too
        )
        killer = threading.Timer(limit, lambda: os.killpg(process.pid, signal.SIGKILL))
        killer.start()
        try:
            if stdin is not None:
                assert process.stdin is not None
                try:
                    process.stdin.write(stdin)
                    process.stdin.close()
                except BrokenPipeError:
                    pass
            process.wait()
        finally:
            killer.cancel()
        seconds = time.monotonic() - started
        try:
            data = json.loads(report.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # the launcher itself was killed
            return Measured(process.returncode, 0.0, 0, seconds)
    return Measured(os.waitstatus_to_exitcode(data["status"]), float(data["processor"]), int(data["maxrss"]) * 1024, seconds)
