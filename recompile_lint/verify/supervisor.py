"""The supervisor: one process per lane of ``verify`` that runs jobs in children it contains.

Started by ``runner.Lane`` as ``python -B -c '...supervisor.main()' REPLY_FD MODE RUN_DIR``.
It reads jobs as JSON lines on standard input and answers on ``REPLY_FD``. For each job it
starts one child, the process that imports and runs the user's code:

* ``fork`` mode (CPU): torch is imported here once, when the lane starts, and every child is a
  fork of this process, so a job pays for its own module, not for torch (CUDA does not
  survive a fork: ``spawn`` mode starts a fresh interpreter per job instead);
* the child starts its own session and asks the kernel for SIGKILL when this process dies;
* this process is a child subreaper (Linux): whatever the child starts, even a grandchild in
  a new session with a clean environment, stays a descendant of this process, and is killed
  when the job ends or its deadline passes;
* the deadline is this process's own clock: a descendant holding the output pipe open cannot
  delay it, and output is read without blocking into a bounded buffer;
* when the parent (the ``verify`` command) dies, standard input reaches end of file: every
  descendant is killed and the run's temporary directory removed before this process exits.
"""

from __future__ import annotations

import collections
import json
import os
import select
import shutil
import signal
import sys
import time
import traceback
from typing import Any

from recompile_lint.verify import procs
from recompile_lint.verify.boot import MARKER_VAR, OUTPUT_TAIL_BYTES, SUPERVISOR_VAR, child_command



class _Tail:
    """The last ``OUTPUT_TAIL_BYTES`` of a child's output."""

    def __init__(self) -> None:
        self.chunks: collections.deque[bytes] = collections.deque()
        self.size = 0

    def add(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        self.size += len(chunk)
        while self.size > OUTPUT_TAIL_BYTES and len(self.chunks) > 1:
            self.size -= len(self.chunks.popleft())

    def text(self) -> str:
        return b"".join(self.chunks)[-OUTPUT_TAIL_BYTES:].decode("utf-8", errors="replace")


class Supervisor:
    """The job loop of one lane."""

    def __init__(self, reply_fd: int, mode: str, run_dir: str) -> None:
        self.reply_fd = reply_fd
        self.mode = mode
        self.run_dir = run_dir
        self.control = sys.stdin.fileno()
        self.pending = b""
        self.torch: Any = None
        self.keep_fds: set[int] = {reply_fd}
        self.parent = os.getppid()

    # ---- replies and requests ---------------------------------------------------------------

    def reply(self, **data: Any) -> None:
        payload = (json.dumps(data) + "\n").encode()
        while payload:
            try:
                written = os.write(self.reply_fd, payload)
            except InterruptedError:
                continue
            except OSError:  # the parent closed its end: it is gone
                self.abandon()
                return
            payload = payload[written:]

    def request(self) -> dict[str, Any] | None:
        """The next job, or None when the parent closed the pipe (or died)."""
        while b"\n" not in self.pending:
            try:
                chunk = os.read(self.control, 65536)
            except InterruptedError:
                continue
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

    def abandon(self) -> None:
        """The parent is gone: leave nothing behind and exit."""
        procs.kill_tree(os.getpid())
        shutil.rmtree(self.run_dir, ignore_errors=True)
        os._exit(0)

    # ---- starting -------------------------------------------------------------------------

    def start(self) -> None:
        procs.set_subreaper(True)
        # Importing torch takes seconds and reads no request: until then nothing of ours runs
        # below us, so dying with the parent is the whole cleanup. From the job loop on, the
        # parent's death is an end of file, and descendants are killed first.
        procs.die_with_parent(signal.SIGKILL, parent=self.parent)
        started = time.perf_counter()
        detail = ""
        if self.mode == "fork":
            try:
                import torch
                import torch._dynamo  # noqa: F401 - the first torch.compile imports it anyway

                self.torch = torch
            except BaseException as exc:  # noqa: BLE001 - reported to the parent, jobs say why
                first = next((line for line in str(exc).splitlines() if line.strip()), "")
                detail = f"import torch failed: {type(exc).__name__}: {first}"
            if self.torch is not None:
                detail = self._warm_up()
                # The child's own modules too: each fork would import them again otherwise.
                from recompile_lint.verify import child  # noqa: F401
        procs.die_with_parent(0)
        self.reply(event="ready", pid=os.getpid(), mode=self.mode, torch_import_s=time.perf_counter() - started,
                   detail=detail, subreaper=procs.is_subreaper())

    def _warm_up(self) -> str:
        """Compile one function here, before any fork: the first ``torch.compile`` of a process
        imports and sets up most of Dynamo (about a second), and every child inherits that.

        The function takes and returns an int: no tensor is made, so no thread pool starts,
        which keeps forking safe. If threads did start, the lane forks nothing and starts a
        fresh interpreter per job instead.
        """
        torch = self.torch

        def warm(n: int) -> int:
            return n + 1

        try:
            torch.compile(warm, backend="eager")(1)
            torch._dynamo.reset()
        except Exception as exc:  # noqa: BLE001 - a child compiles for itself then
            return f"warm-up compile failed: {type(exc).__name__}"
        if procs.proc_available() and len(os.listdir("/proc/self/task")) > 1:
            self.torch = None  # threads in this process: fork is no longer safe here
            self.mode = "spawn"
            return "torch started threads in the supervisor: each job starts a fresh interpreter"
        return ""

    # ---- one job ----------------------------------------------------------------------------

    def _spawn(self, job_path: str, cwd: str, out_w: int, marker: str) -> int:
        env = dict(os.environ)
        env.update({MARKER_VAR: marker, SUPERVISOR_VAR: str(os.getpid())})
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            try:
                os.setsid()
                signal.signal(signal.SIGINT, signal.SIG_DFL)  # ignored here; an exec would keep that
                fd = os.open(os.devnull, os.O_RDONLY)
                os.dup2(fd, 0)
                os.dup2(out_w, 1)
                os.dup2(out_w, 2)
                os.closerange(3, 65536)
                os.chdir(cwd)
                os.execve(sys.executable, child_command(job_path), env)
            finally:
                os._exit(127)
        return pid

    def _fork(self, job_path: str, cwd: str, out_w: int, out_r: int, marker: str) -> int:
        me = os.getpid()
        pid = os.fork()
        if pid != 0:
            return pid
        # The child: its own session, dies with us, output into the pipe, in the job's directory.
        code = 3
        try:
            os.setsid()
            procs.die_with_parent(signal.SIGKILL, parent=me)
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGPIPE):
                signal.signal(sig, signal.SIG_DFL)
            fd = os.open(os.devnull, os.O_RDONLY)
            os.dup2(fd, 0)
            os.dup2(out_w, 1)
            os.dup2(out_w, 2)
            for other in (fd, out_w, out_r, *self.keep_fds):
                try:
                    os.close(other)
                except OSError:
                    pass
            os.chdir(cwd)
            os.environ[MARKER_VAR] = marker
            os.environ.pop(SUPERVISOR_VAR, None)
            from recompile_lint.verify.child import run_job_file

            run_job_file(job_path, self.torch)  # ends the process
        except BaseException:  # noqa: BLE001
            traceback.print_exc()
        finally:
            os._exit(code)

    def run(self, job: dict[str, Any]) -> None:
        job_path = str(job["job_path"])
        cwd = str(job.get("cwd") or os.path.dirname(job_path))
        timeout = float(job.get("timeout", 120.0))
        marker = str(job.get("marker", ""))
        out_r, out_w = os.pipe()
        started = time.monotonic()
        try:
            if self.mode == "fork" and self.torch is not None:
                pid = self._fork(job_path, cwd, out_w, out_r, marker)
            else:
                pid = self._spawn(job_path, cwd, out_w, marker)
        except OSError as exc:
            os.close(out_r)
            os.close(out_w)
            self.reply(event="done", returncode=None, timed_out=False, output=f"cannot start the child: {exc}",
                       elapsed=0.0, killed=0, started=False)
            return
        os.close(out_w)
        os.set_blocking(out_r, False)
        tail = _Tail()
        returncode: int | None = None
        timed_out = False
        deadline = started + timeout
        reading = True
        while True:
            status = self._poll(pid)
            if status is not None:
                returncode = status
                break
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            watched = [self.control] + ([out_r] if reading else [])
            try:
                ready, _, _ = select.select(watched, [], [], min(left, 0.05))
            except InterruptedError:
                continue
            if self.control in ready:
                # Anything on the control pipe mid-job is the parent going away (EOF).
                try:
                    data = os.read(self.control, 65536)
                except OSError:
                    data = b""
                if not data:
                    os.close(out_r)
                    self.abandon()
                self.pending += data
            if out_r in ready:
                reading = self._drain(out_r, tail)
        elapsed = time.monotonic() - started
        killed = procs.kill_tree(os.getpid()) if procs.proc_available() else self._kill_group(pid)
        if returncode is None:
            returncode = self._poll(pid, wait=True)
            if timed_out:
                returncode = None
        self._drain(out_r, tail)  # what is already in the pipe; never waits for writers
        os.close(out_r)
        self.reply(event="done", returncode=returncode, timed_out=timed_out, output=tail.text(),
                   elapsed=elapsed, killed=killed, started=True)

    @staticmethod
    def _drain(fd: int, tail: _Tail) -> bool:
        """Read what is there without blocking; False at end of file."""
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            tail.add(chunk)

    @staticmethod
    def _poll(pid: int, wait: bool = False) -> int | None:
        """The child's exit status (negative: killed by that signal), or None while it runs."""
        try:
            done, status = os.waitpid(pid, 0 if wait else os.WNOHANG)
        except ChildProcessError:
            return -signal.SIGKILL if wait else None
        if done == 0:
            return None
        if os.WIFSIGNALED(status):
            return -os.WTERMSIG(status)
        return os.WEXITSTATUS(status) if os.WIFEXITED(status) else None

    @staticmethod
    def _kill_group(pid: int) -> int:
        """Without /proc: the child's process group (its session) is all that can be found."""
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            return 0
        return 1

    def loop(self) -> None:
        while True:
            job = self.request()
            if job is None:
                self.abandon()
            self.run(job)
            self._reap_all()

    @staticmethod
    def _reap_all() -> None:
        """Zombies of orphans that ended on their own (they were reparented to us)."""
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return


def main() -> None:
    """Entry point of a lane's supervisor process; never returns."""
    sys.dont_write_bytecode = True
    reply_fd, mode, run_dir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the verify command, which ends us
    supervisor = Supervisor(reply_fd, mode, run_dir)
    for name in sys.argv[4:]:
        supervisor.keep_fds.add(int(name))
    try:
        supervisor.start()
        supervisor.loop()
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 - never leave children behind on an internal error
        traceback.print_exc()
        procs.kill_tree(os.getpid())
        os._exit(3)
