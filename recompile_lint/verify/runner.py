"""Run the verifier's children safely: supervised, with deadlines, leaving nothing behind.

The ``verify`` command (this process) starts one supervisor per lane (``supervisor``); the
supervisor starts one child per job. Containment, from the inside out:

* each child has its own session, ``PYTHONDONTWRITEBYTECODE=1`` (no ``__pycache__`` in the
  user's tree), a working directory of its own in this run's temporary directory (run mode
  keeps the user's), and SIGKILL as its parent-death signal;
* the supervisor is a child subreaper (Linux): every descendant of a child, even one in a new
  session with a clean environment, is found under it and killed when the job ends or its
  deadline passes; the deadline is the supervisor's own clock, not a pipe closing;
* this process is a subreaper too while ``Runner`` is open: if a supervisor is killed (the
  code under test can signal its parent), what it supervised is reparented here and killed;
* if this process is killed, each supervisor reads end of file on its request pipe, kills its
  descendants and removes the run's temporary directory; a run directory whose owners all died
  at once is removed by the next run (an ``flock`` tells live ones from dead).

On CPU a lane's supervisor imports torch once and forks a child per module; with CUDA (which
does not survive a fork) each child is a fresh interpreter.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recompile_lint.verify import procs
from recompile_lint.verify.boot import MARKER_VAR, OUTPUT_TAIL_BYTES, SUPERVISOR_BOOT

__all__ = ["ChildOutcome", "Lane", "MARKER_VAR", "OUTPUT_TAIL_BYTES", "Runner", "marked_processes", "run_child"]

GRACE_S = 30.0  # beyond a job's own timeout, how long a silent supervisor is waited for
STALE_S = 60.0  # a run directory this old whose owners are gone is removed by the next run


@dataclass(frozen=True)
class ChildOutcome:
    """How a child process ended and what it reported."""

    data: dict[str, Any]  # the child's result file ({} when it never wrote one)
    returncode: int | None  # None when it was killed for running past the timeout
    timed_out: bool
    output_tail: str  # the last bytes the child printed (its own output and the user's)
    elapsed: float
    supervisor_lost: bool = False  # the lane's supervisor died while this job ran
    killed: int = 0  # processes still alive at the end of the job, killed then
    lane_torch_import: float = 0.0  # seconds the lane's supervisor spent importing torch (0: none)

    def last_output_line(self) -> str:
        lines = [line.strip() for line in self.output_tail.splitlines() if line.strip()]
        return lines[-1] if lines else ""


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


def _private_base() -> Path | None:
    """``$TMPDIR/recompile-lint-verify-<uid>``: ours, 0700, not a link (None if it cannot be)."""
    base = Path(tempfile.gettempdir()) / f"recompile-lint-verify-{os.getuid()}"
    try:
        base.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(base)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        return None
    return base


class RunDir:
    """This run's temporary directory, locked while any of its owners lives."""

    def __init__(self) -> None:
        base = _private_base()
        if base is not None:
            _sweep(base)
        self.path = tempfile.mkdtemp(prefix="run-", dir=str(base) if base else None)
        self.lock_fd = os.open(os.path.join(self.path, ".lock"), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        fcntl.flock(self.lock_fd, fcntl.LOCK_EX)

    def job_dir(self) -> str:
        return tempfile.mkdtemp(prefix="job-", dir=self.path)

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        try:
            os.close(self.lock_fd)
        except OSError:
            pass


def _sweep(base: Path) -> None:
    """Remove run directories left by runs whose processes were all killed at once."""
    try:
        entries = list(base.iterdir())
    except OSError:
        return
    now = time.time()
    for entry in entries:
        try:
            info = os.lstat(entry)
            if not stat.S_ISDIR(info.st_mode) or now - info.st_mtime < STALE_S:
                continue
            fd = os.open(entry / ".lock", os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a live run holds it
        shutil.rmtree(entry, ignore_errors=True)
        os.close(fd)


class Lane:
    """One supervisor process and the jobs it runs, one at a time."""

    def __init__(self, run_dir: RunDir, fork: bool, start_timeout: float = 300.0,
                 spawn_lock: threading.Lock | None = None) -> None:
        self.run_dir = run_dir
        # Held while a supervisor is being started, so that an orphan sweep in another thread
        # cannot take the new process, not yet known as a lane's, for an orphan.
        self.spawn_lock = spawn_lock or threading.Lock()
        self.fork = fork
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.reply_r = -1
        self.pending = b""
        self.torch_import = 0.0
        self.ready_detail = ""

    # ---- the supervisor process -----------------------------------------------------------

    def _start(self) -> None:
        reply_r, reply_w = os.pipe()
        env = dict(os.environ)
        env.update({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"})
        env.pop("PYTHONSTARTUP", None)
        try:
            self.spawn_lock.acquire()
            self.proc = subprocess.Popen(
                [sys.executable, "-B", "-c", SUPERVISOR_BOOT, str(reply_w), "fork" if self.fork else "spawn",
                 self.run_dir.path, str(self.run_dir.lock_fd)],
                cwd=self.run_dir.path,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(reply_w, self.run_dir.lock_fd),
                start_new_session=True,
            )
        finally:
            self.spawn_lock.release()
            os.close(reply_w)
        self.reply_r = reply_r
        self.pending = b""
        ready = self._reply(time.monotonic() + self.start_timeout)
        if ready is None or ready.get("event") != "ready":
            self.stop()
            raise OSError("the verifier's supervisor process did not start")
        self.torch_import = float(ready.get("torch_import_s", 0.0)) if self.fork else 0.0
        self.ready_detail = str(ready.get("detail", ""))

    def _reply(self, deadline: float) -> dict[str, Any] | None:
        """The supervisor's next message; None when it died or the deadline passed."""
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                ready, _, _ = select.select([self.reply_r], [], [], min(left, 1.0))
            except InterruptedError:
                continue
            if not ready:
                if self.proc is not None and self.proc.poll() is not None:
                    return None
                continue
            try:
                chunk = os.read(self.reply_r, 65536)
            except OSError:
                return None
            if not chunk:
                return None
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        try:
            data = json.loads(line)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """End the supervisor: close its request pipe (it cleans up and exits), else kill it."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            procs.kill_tree(proc.pid, include_root=True)
            proc.wait()
        if self.reply_r >= 0:
            os.close(self.reply_r)
            self.reply_r = -1

    def kill(self) -> None:
        """The supervisor does not answer: kill it and everything under it."""
        proc = self.proc
        if proc is not None:
            procs.kill_tree(proc.pid, include_root=True)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
                pass
        self.stop()

    # ---- jobs -----------------------------------------------------------------------------

    def run(self, job: dict[str, Any], timeout: float, cwd: str | None = None) -> ChildOutcome:
        """Run one job; always returns, whatever the job's code does."""
        if not self.alive():
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        workdir = self.run_dir.job_dir()
        result_path = os.path.join(workdir, "result.json")
        job_path = os.path.join(workdir, "job.json")
        with open(job_path, "w", encoding="utf-8") as handle:
            json.dump({**job, "result": result_path}, handle)
        marker = uuid.uuid4().hex
        request = {"job_path": job_path, "cwd": cwd or workdir, "timeout": timeout, "marker": marker}
        started = time.monotonic()
        lost = False
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
            reply = self._reply(time.monotonic() + timeout + GRACE_S)
        except (BrokenPipeError, OSError):
            reply = None
        if reply is None:
            lost = True
            self.kill()
        elapsed = time.monotonic() - started
        try:
            with open(result_path, encoding="utf-8") as handle:
                data = json.load(handle)
            if not isinstance(data, dict):
                data = {}
        except (OSError, ValueError):
            data = {}
        shutil.rmtree(workdir, ignore_errors=True)
        if reply is None:
            timed_out = elapsed >= timeout
            return ChildOutcome(data, None, timed_out, "", elapsed, supervisor_lost=not timed_out,
                                lane_torch_import=self.torch_import)
        returncode = reply.get("returncode")
        return ChildOutcome(
            data=data,
            returncode=returncode if isinstance(returncode, int) else None,
            timed_out=bool(reply.get("timed_out")),
            output_tail=str(reply.get("output", ""))[-OUTPUT_TAIL_BYTES:],
            elapsed=float(reply.get("elapsed", elapsed)),
            supervisor_lost=lost,
            killed=int(reply.get("killed", 0)),
            lane_torch_import=self.torch_import,
        )


@dataclass
class Runner:
    """The lanes of one verify run and what they share; use as a context manager.

    ``fork``: lanes import torch once and fork a child per job (CPU); False: a fresh
    interpreter per job (CUDA, or where fork is not safe).
    """

    fork: bool = True
    lanes: list[Lane] = field(default_factory=list)
    idle: list[Lane] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    spawn_lock: threading.Lock = field(default_factory=threading.Lock)
    run_dir: RunDir | None = None
    _was_subreaper: bool = False
    _children_before: set[int] = field(default_factory=set)

    def __enter__(self) -> "Runner":
        self.fork = self.fork and sys.platform.startswith("linux")
        self.run_dir = RunDir()
        self._children_before = set(procs.children_of(os.getpid()))
        self._was_subreaper = procs.is_subreaper()
        procs.set_subreaper(True)
        return self

    def __exit__(self, *exc: object) -> None:
        for lane in self.lanes:
            lane.stop()
        self.sweep_orphans()
        if not self._was_subreaper:
            procs.set_subreaper(False)
        if self.run_dir is not None:
            self.run_dir.close()

    def sweep_orphans(self) -> int:
        """Kill what a killed supervisor left: our children that are not ours by design."""
        if not procs.proc_available():
            return 0
        with self.spawn_lock:
            return self._sweep_orphans()

    def _sweep_orphans(self) -> int:
        mine = {lane.proc.pid for lane in self.lanes if lane.proc is not None}
        killed = 0
        for pid in procs.children_of(os.getpid()):
            if pid in mine or pid in self._children_before:
                continue
            # Only a process reparented here by a supervisor's death is in no lane and was not
            # here before the run: a process this program started itself waits as our child
            # in ``subprocess`` bookkeeping, which ``lane.stop`` has reaped already.
            killed += procs.kill_tree(pid, include_root=True)
        return killed

    def _take(self) -> Lane:
        with self.lock:
            if self.idle:
                return self.idle.pop()
            assert self.run_dir is not None
            lane = Lane(self.run_dir, self.fork, spawn_lock=self.spawn_lock)
            self.lanes.append(lane)
            return lane

    def run(self, job: dict[str, Any], timeout: float, cwd: str | None = None) -> ChildOutcome:
        """Run ``job`` in an idle lane (a new one when all are busy)."""
        lane = self._take()
        try:
            try:
                outcome = lane.run(job, timeout, cwd)
            except OSError as exc:
                return ChildOutcome({"status": "crashed", "detail": f"the verifier could not start a child: {exc}"},
                                    None, False, "", 0.0, supervisor_lost=True)
            if outcome.supervisor_lost:
                self.sweep_orphans()
            return outcome
        finally:
            with self.lock:
                self.idle.append(lane)

    @property
    def torch_imports(self) -> list[float]:
        """Seconds each lane's supervisor spent importing torch."""
        return [lane.torch_import for lane in self.lanes if lane.torch_import]


def run_child(job: dict[str, Any], timeout: float, cwd: str | None = None, *, fork: bool = False) -> ChildOutcome:
    """Run one job in a runner of its own (one-off jobs: the device check)."""
    with Runner(fork=fork) as runner:
        return runner.run(job, timeout, cwd)
