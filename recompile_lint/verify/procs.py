"""Process-tree containment on Linux: subreapers, parent-death signals, finding and killing
every descendant. Elsewhere each function degrades to what POSIX offers (process groups).

Why a subreaper: a process that starts its own session (``setsid``) with a clean environment
leaves its process group and drops any marker variable, and once its parent exits it would be
reparented to init, out of sight. With ``PR_SET_CHILD_SUBREAPER`` set on the supervisor,
orphans are reparented to the supervisor instead, so "every descendant of the supervisor" is
always the complete set of processes a job started.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import signal
import sys
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37

_libc = None


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)``; False where there is no prctl (not Linux) or it failed."""
    global _libc
    if not sys.platform.startswith("linux"):
        return False
    try:
        if _libc is None:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return _libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), ctypes.c_ulong(0),
                           ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0
    except (OSError, AttributeError):
        return False


def set_subreaper(on: bool = True) -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); True when it is."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0)


def is_subreaper() -> bool:
    """Whether this process is a child subreaper (False where that cannot be asked)."""
    if not sys.platform.startswith("linux"):
        return False
    value = ctypes.c_int(0)
    try:
        global _libc
        if _libc is None:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        ok = _libc.prctl(ctypes.c_int(PR_GET_CHILD_SUBREAPER), ctypes.byref(value), ctypes.c_ulong(0),
                         ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0
    except (OSError, AttributeError):
        return False
    return ok and value.value != 0


def die_with_parent(sig: int = signal.SIGKILL, parent: int | None = None) -> bool:
    """Ask the kernel to send ``sig`` when the parent dies (0: no longer); if it already died
    (``parent`` no longer ours), exit now. True when the request was taken (Linux)."""
    ok = _prctl(PR_SET_PDEATHSIG, int(sig))
    if parent is not None and os.getppid() != parent:
        os._exit(1)  # the parent died before the request: nobody is left to supervise us
    return ok


def _children_map() -> dict[int, list[int]]:
    """ppid -> pids, from /proc (empty where there is no /proc)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # ``pid (comm) state ppid ...``: comm may hold spaces and parentheses.
        tail = stat[stat.rfind(b")") + 2:].split()
        if len(tail) < 2:
            continue
        try:
            children.setdefault(int(tail[1]), []).append(int(name))
        except ValueError:
            continue
    return children


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid``."""
    return sorted(_children_map().get(pid, []))


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` in the process tree (not ``pid`` itself)."""
    tree = _children_map()
    found: list[int] = []
    stack = list(tree.get(pid, []))
    while stack:
        child = stack.pop()
        if child in found or child == pid:
            continue
        found.append(child)
        stack.extend(tree.get(child, []))
    return found


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _reap(pids: list[int]) -> None:
    """Collect the exit status of those of ``pids`` that are our children (no zombies left)."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        except OSError as exc:  # pragma: no cover - EINTR and the like
            if exc.errno != errno.EINTR:
                pass


def kill_tree(root: int, *, include_root: bool = False, rounds: int = 50) -> int:
    """Stop, then kill, every descendant of ``root`` (and ``root`` itself when asked).

    Processes are stopped first so that none can fork a new one between the scan and the kill;
    the scan repeats until nothing is left. Returns how many processes were signalled.
    """
    killed: set[int] = set()
    for _ in range(rounds):
        pids = descendants(root) + ([root] if include_root else [])
        pids = [p for p in pids if _alive(p)]
        if not pids:
            break
        _signal_all(pids, signal.SIGSTOP)
        # Children forked between the scan and the stop: take them in the same round.
        more = [p for p in descendants(root) if p not in pids and _alive(p)]
        _signal_all(more, signal.SIGSTOP)
        everyone = pids + more
        _signal_all(everyone, signal.SIGKILL)
        killed.update(everyone)
        _reap(everyone)
        time.sleep(0.01)
    _reap(sorted(killed))
    return len(killed)


def _alive(pid: int) -> bool:
    """Running or stopped (a zombie is not alive: it only waits to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        try:
            os.kill(pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    state = stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3]
    return state not in (b"Z", b"X")


def alive(pid: int) -> bool:
    """Whether ``pid`` names a live (not zombie) process."""
    return _alive(pid)


def proc_available() -> bool:
    """Whether the process tree can be read (Linux /proc)."""
    return Path("/proc/self/stat").exists()
