"""Run one child process safely: own session, timeout, bounded output, nothing left behind.

The child runs in a new session (so its whole process group can be killed), with a marker in
its environment that grandchildren inherit (so one that started its own session is found and
killed too), with ``PYTHONDONTWRITEBYTECODE=1`` and ``-B`` (no ``__pycache__`` in the user's
tree), in a temporary working directory unless told otherwise, and with its output drained
continuously into a bounded buffer (a program printing megabytes can neither block on a full
pipe nor fill memory).
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import recompile_lint

MARKER_VAR = "RECOMPILE_LINT_VERIFY_CHILD"
OUTPUT_TAIL_BYTES = 16 * 1024
_PACKAGE_PARENT = str(Path(recompile_lint.__file__).resolve().parent.parent)
# Drop the working directory from sys.path (``-c`` adds it) and make the package importable
# even when it is not installed, without exposing its own directory to the user's imports.
_BOOT = (
    "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
    f"sys.path.insert(0, {_PACKAGE_PARENT!r}); "
    "from recompile_lint.verify.child import main; main()"
)


@dataclass(frozen=True)
class ChildOutcome:
    """How a child process ended and what it reported."""

    data: dict[str, Any]  # the child's result file ({} when it never wrote one)
    returncode: int | None  # None when it was killed for running past the timeout
    timed_out: bool
    output_tail: str  # the last bytes the child printed (its own output and the user's)
    elapsed: float

    def last_output_line(self) -> str:
        lines = [line.strip() for line in self.output_tail.splitlines() if line.strip()]
        return lines[-1] if lines else ""


def _drain(stream: Any, tail: collections.deque[bytes]) -> None:
    try:
        while True:
            chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            if not chunk:
                break
            tail.append(chunk)
            size = sum(len(c) for c in tail)
            while size > OUTPUT_TAIL_BYTES and len(tail) > 1:
                size -= len(tail.popleft())
    except (OSError, ValueError):
        pass


def marked_processes(marker: str) -> list[int]:
    """Processes whose environment carries ``MARKER_VAR=marker`` (Linux /proc; [] elsewhere)."""
    needle = f"{MARKER_VAR}={marker}".encode()
    found = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _kill_everything(proc: subprocess.Popen[bytes], marker: str) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
        pass
    for _ in range(5):
        left = marked_processes(marker)
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)


def run_child(job: dict[str, Any], timeout: float, cwd: str | None = None) -> ChildOutcome:
    """Run the verifier child on ``job`` and return what it reported, whatever happened."""
    workdir = tempfile.mkdtemp(prefix="recompile-lint-verify-")
    marker = uuid.uuid4().hex
    try:
        result_path = os.path.join(workdir, "result.json")
        job_path = os.path.join(workdir, "job.json")
        with open(job_path, "w", encoding="utf-8") as handle:
            json.dump({**job, "result": result_path}, handle)
        env = dict(os.environ)
        env.update({MARKER_VAR: marker, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"})
        env.pop("PYTHONSTARTUP", None)
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-B", "-c", _BOOT, job_path],
            cwd=cwd or workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        tail: collections.deque[bytes] = collections.deque()
        reader = threading.Thread(target=_drain, args=(proc.stdout, tail), daemon=True)
        reader.start()
        timed_out = False
        try:
            returncode: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out, returncode = True, None
        finally:
            _kill_everything(proc, marker)
        elapsed = time.monotonic() - started
        reader.join(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()
        try:
            with open(result_path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            data = {}
        output = b"".join(tail).decode("utf-8", errors="replace")
        return ChildOutcome(data, returncode, timed_out, output, elapsed)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
