"""A resident server: the linter's imports done once, and cached facts kept in memory.

``recompile-lint server start`` leaves this process running for the user; the ``recompile-lint``
script (``client``) hands each command to it. The server does its imports (libcst, the rules,
the report formats: 0.3-0.5 s of every fresh process) once, then answers each connection from a
fork of itself: the child takes the caller's standard streams, arguments, working directory and
environment and runs the command exactly as ``cli.run`` would (``resident`` starts the server with
``cli.run_in_server`` as what it runs), and the caller gets its exit
status. Nothing a command does reaches the server or the next command, except what the
server keeps on purpose, between commands: the entries of the facts cache directories a run
used (``cache.resident``), so the next run over that project unpickles nothing, and the libcst
trees of the snippets a run parsed (``context.resident_snippets``). Cache entries are named by
the content hash, path, module and facts schema of what they hold, a snippet's tree depends on
its text alone, and so does the result of a text test that picks the files to parse, kept by
the test, the path and the content digest the run cache computed (``textscan.resident_tests``):
nothing kept ever goes stale.

Protocol (a Unix socket in a directory only its user can enter, ``lstat``-checked, each end
checking with ``SO_PEERCRED`` that the other is a process of the same user): the client sends
a 4-byte length with its standard streams' descriptors attached, then the request as Python
literals, ``{"argv", "cwd", "env", "streams", "package", "umask", "rlimits", "priority",
"locale", "utf8_mode"}`` (or ``{"control": "stop" | "status"}``); the server answers ``pid N``
(the process running the command, for the client to pass interrupts on to) and ``exit N``, or
``decline`` when its process cannot take on the caller's limits or priority (the client then
runs the command itself). A client that goes away before ``exit`` (killed) ends the command
and everything it started. The server ends after ``--idle-timeout`` seconds without a
connection, on ``recompile-lint server stop``, or on SIGTERM, and removes its socket.
"""

from __future__ import annotations

import ast
import gc
import json
import os
import select
import signal
import socket
import sys
import time

from typing import Callable, Iterator

from recompile_lint.frontends import client

IDLE_TIMEOUT = 30 * 60
# Cache entries and libcst trees kept in memory at most (beyond, all are dropped and the
# next commands' are kept): a few hundred MiB for a project the size of torch.
RESIDENT_ENTRIES = 60_000
RESIDENT_SNIPPETS = 20_000
RESIDENT_TESTS = 500_000
# Seconds of reading or parsing per turn of the loop, so a connection never waits long.
WORK_SLICE = 0.02
_directory = ""  # where the socket is: commands leave their lists of snippets and tests there


def preload() -> None:
    """Everything a lint run imports, imported now, once."""
    from recompile_lint import engine, report, rules  # noqa: F401
    from recompile_lint.analysis import callsites, context, facts, index, parallel, regions, textscan  # noqa: F401
    from recompile_lint import cache  # noqa: F401
    from recompile_lint.report import FORMAT_NAMES, get_formatter
    import libcst  # noqa: F401
    import libcst.metadata  # noqa: F401

    rules.all_rules()
    for name in FORMAT_NAMES:
        get_formatter(name)


def _no_command() -> int:
    print("recompile-lint: this server was started without a command to run", file=sys.stderr)
    return 2


# What a command's child runs (``cli.run_in_server``, given to ``serve``): its exit status.
_run_command: Callable[[], int] = _no_command


def serve(path: str, idle_timeout: float = IDLE_TIMEOUT, learn: str | None = None, command: Callable[[], int] | None = None) -> int:
    """Listen at ``path`` until idle for ``idle_timeout`` seconds or told to stop, running each
    command with ``command`` (in a forked child that has the caller's arguments and streams).
    ``learn``: a file in the socket's directory holding ``what_to_keep``'s lines from the run
    that started this server, kept as a command's would be (the file is removed)."""
    global _run_command
    if command is not None:
        _run_command = command
    from recompile_lint import cache
    from recompile_lint.analysis import context, textscan

    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError:
        pass  # what is there is examined below
    problem = client.directory_problem(directory)
    if problem is not None:
        sys.stderr.write(f"recompile-lint: error: {directory} cannot hold the server's socket: it {problem} (it must be a directory only you can enter)\n")
        return 2
    preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if os.path.exists(path):
            existing = client.connect(path)
            if existing is not None:
                existing.close()
                sys.stderr.write(f"recompile-lint: a server already answers at {path}\n")
                return 1
            os.unlink(path)
        listener.bind(path)
        os.chmod(path, 0o600)
        listener.listen(64)
    except OSError as exc:
        sys.stderr.write(f"recompile-lint: error: cannot listen at {path}: {exc.strerror or exc}\n")
        return 2
    bound = os.stat(path).st_ino
    try:
        os.truncate(log_path(path), 0)  # what earlier servers said about failing to start is past
    except OSError:
        pass
    notify_read, notify_write = os.pipe()
    os.set_blocking(notify_read, False)
    os.set_blocking(notify_write, False)  # a command never waits on a full pipe: it skips telling

    # A signal to end only sets a flag (an exception raised by a handler can land inside a
    # callback that swallows it, such as the at-fork hooks); the wakeup descriptor makes the
    # loop's select return at once.
    stopping: list[int] = []
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda signum, frame: stopping.append(signum))
    global _directory
    _directory = directory
    cache.resident = {}
    context.resident_snippets = {}
    textscan.resident_tests = {}
    started = time.time()
    last = time.monotonic()
    children: set[int] = set()
    work: dict[str, Iterator[None]] = {}  # what commands told of, still to read or parse
    pending = b""
    if learn is not None and os.path.dirname(learn) == directory:
        for line in _take_listing(learn, "\n"):
            if line:
                _queue(line, work, directory)
    served = 0
    gc.freeze()
    try:
        while not stopping:
            _reap(children)
            ready, _, _ = select.select([listener, notify_read, wake_read], [], [], 0 if work else 1.0)
            if stopping:
                break
            if listener in ready:
                try:
                    conn, _ = listener.accept()
                except OSError:  # the caller gave up, or no descriptor is left for now
                    time.sleep(0.05)
                    continue
                info = {
                    "pid": os.getpid(), "started": started, "served": served, "socket": path, "idle_timeout": idle_timeout,
                    "resident": len(cache.resident), "snippets": len(context.resident_snippets), "tests": len(textscan.resident_tests),
                }
                try:
                    child = os.fork()
                except OSError:
                    conn.close()  # no process for it now (memory, process limit): the caller says so
                    continue
                if child == 0:
                    signal.set_wakeup_fd(-1)
                    for fd in (wake_read, wake_write):
                        os.close(fd)
                    _answer(conn, listener, notify_read, notify_write, info)
                conn.close()
                children.add(child)
                served += 1
                last = time.monotonic()
                continue
            if notify_read in ready:
                try:
                    pending += os.read(notify_read, 65536)
                except BlockingIOError:
                    pass
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    _queue(line.decode("utf-8", "replace"), work, directory)
                continue
            if work:
                _work_some(work)
                if not work:
                    gc.freeze()  # what was kept stays out of every later collection's sight
                continue
            if not children and time.monotonic() - last > idle_timeout:
                return 0
        return 0
    finally:
        listener.close()
        try:
            if os.stat(path).st_ino == bound:
                os.unlink(path)
            log = log_path(path)
            if os.path.getsize(log) == 0:
                os.unlink(log)
        except OSError:
            pass


def _queue(line: str, work: dict[str, Iterator[None]], directory: str) -> None:
    """Queue what a ``kind value`` line of ``what_to_keep`` names (listings only from the
    server's own directory)."""
    from recompile_lint import cache
    from recompile_lint.analysis import context, textscan

    kind, _, value = line.partition(" ")
    if kind == "facts" and os.path.isdir(value):
        work.setdefault(line, _keep_entries(value, cache))
    elif kind == "snippets" and os.path.dirname(value) == directory:
        work.setdefault(line, _keep_snippets(value, context))
    elif kind == "tests" and os.path.dirname(value) == directory:
        work.setdefault(line, _keep_tests(value, textscan))


def _reap(children: set[int]) -> None:
    for child in list(children):
        try:
            done, _ = os.waitpid(child, os.WNOHANG)
        except ChildProcessError:
            done = child
        if done:
            children.discard(child)


def _work_some(work: dict[str, Iterator[None]]) -> None:
    """Read or parse for a few milliseconds, so a command arriving meanwhile never waits long."""
    name, steps = next(iter(work.items()))
    deadline = time.monotonic() + WORK_SLICE
    while time.monotonic() < deadline:
        try:
            done = next(steps, StopIteration) is StopIteration
        except Exception:  # noqa: BLE001 - what cannot be kept is simply not kept
            done = True
        if done:
            del work[name]
            return


def _keep_entries(entries: str, cache) -> Iterator[None]:
    """Read a facts directory's entries into memory, a step per entry."""
    for name, value in cache.resident_entries(entries, cache.resident):
        if len(cache.resident) >= RESIDENT_ENTRIES:
            cache.resident.clear()
        cache.resident[name] = value
        yield


def _take_listing(listing: str, separator: str = "\0") -> list[str]:
    """The items of a listing a command left (``what_to_keep``), which is removed; none when
    it cannot be read."""
    try:
        with open(listing, "rb") as handle:
            return handle.read().decode("utf-8", "surrogatepass").split(separator)
    except OSError:
        return []
    finally:
        try:
            os.unlink(listing)
        except OSError:
            pass


def _keep_snippets(listing: str, context) -> Iterator[None]:
    """Parse the snippets a command listed, a step per snippet."""
    snippets = _take_listing(listing)
    kept = context.resident_snippets
    for snippet in snippets:
        if snippet and snippet not in kept:
            if len(kept) >= RESIDENT_SNIPPETS:
                kept.clear()
            parsed = context.parse_snippet(snippet)
            if parsed is not None:
                kept[snippet] = parsed
            yield


def _keep_tests(listing: str, textscan) -> Iterator[None]:
    """Keep the text tests' results a command listed, a step per thousand."""
    fields = _take_listing(listing)
    kept = textscan.resident_tests
    for start in range(0, len(fields) - 3, 4000):
        if len(kept) >= RESIDENT_TESTS:
            kept.clear()
        for at in range(start, min(start + 4000, len(fields) - 3), 4):
            name, path, digest, result = fields[at : at + 4]
            kept[(name, path, digest)] = result == "1"
        yield


def _answer(conn, listener, notify_read, notify_write, info) -> None:
    """In the fork for one connection: take the request, run it in a fork, report its status."""
    code = 1
    try:
        listener.close()
        os.close(notify_read)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        if client.peer_uid(conn) != os.getuid():
            return  # another user's process: it gets nothing, not even an answer
        conn.settimeout(10)
        request, fds = _receive(conn)
        conn.settimeout(None)
        control = request.get("control")
        if control == "status":
            conn.sendall(f"status {json.dumps(info)}\n".encode())
            code = 0
        elif control == "stop":
            conn.sendall(b"exit 0\n")
            os.kill(os.getppid(), signal.SIGTERM)
            code = 0
        elif len(fds) == 3 and isinstance(request.get("argv"), list):
            worker = os.fork()
            if worker == 0:
                _command(request, fds, notify_write, conn)
            try:
                # The command makes its own process group too; set here as well, a kill
                # right after the fork finds the group already made.
                os.setpgid(worker, worker)
            except OSError:
                pass
            for fd in fds:
                os.close(fd)
            os.close(notify_write)
            try:
                conn.sendall(f"pid {worker}\n".encode())
            except OSError:
                # The caller went between sending its request and this answer (killed): the
                # command must not run on with nobody to see it.
                _end_command(worker)
                raise
            status = _wait_for_command(worker, conn)
            if status is not None:
                # The command says its status itself before its process is torn down; this
                # one counts only when it could not (it crashed or was killed).
                status = os.waitstatus_to_exitcode(status)
                conn.sendall(f"exit {status if status >= 0 else 128 - status}\n".encode())
            code = 0
    except BaseException:  # noqa: BLE001 - this process must end here, whatever happened
        code = 1
    finally:
        os._exit(code)


def _wait_for_command(worker: int, conn) -> int | None:
    """The wait status of the command's process; None when its caller went away first (killed
    by a signal that cannot be passed on, such as SIGKILL): then the command, and every
    process it started, is killed, since nobody is left to see its output or status."""
    try:
        watch = os.pidfd_open(worker)
    except (AttributeError, OSError):
        watch = None  # no process descriptors: the command's end is polled for
    try:
        while True:
            ready, _, _ = select.select([conn] + ([watch] if watch is not None else []), [], [], 0.2 if watch is None else None)
            if conn in ready:
                try:
                    gone = conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
                except BlockingIOError:
                    gone = False
                except OSError:
                    gone = True
                if gone:
                    # The caller closed without waiting: it was killed.
                    _end_command(worker)
                    return None
            done, status = os.waitpid(worker, os.WNOHANG)
            if done:
                return status
    finally:
        if watch is not None:
            os.close(watch)


def _end_command(worker: int) -> None:
    """Kill the command and everything it started (its process group is its own: ``_command``)
    and reap it."""
    for target in (lambda: os.killpg(worker, signal.SIGKILL), lambda: os.kill(worker, signal.SIGKILL)):
        try:
            target()
        except OSError:
            pass
    try:
        os.waitpid(worker, 0)
    except ChildProcessError:
        pass


def _receive(conn) -> tuple[dict, list[int]]:
    header, fds, _, _ = socket.recv_fds(conn, 4, 3)
    if len(header) != 4:
        raise ValueError("short request")
    size = int.from_bytes(header, "big")
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ValueError("short request")
        data += chunk
    request = ast.literal_eval(data.decode("utf-8"))
    if not isinstance(request, dict):
        raise ValueError("not a request")
    return request, list(fds)


def _command(request: dict, fds: list[int], notify_write: int, conn) -> None:
    """In the command's own process: become the caller's command, run it, say its exit
    status (the caller need not wait for this large process to be torn down), and end."""
    code = 1
    try:
        # Its own process group, so that everything it starts (worker processes) ends with it
        # when its caller is killed (``_wait_for_command``).
        os.setpgid(0, 0)
        if not take_caller_state(request):
            conn.sendall(b"decline\n")
            os._exit(0)
        for number, fd in enumerate(fds):
            if fd != number:
                os.dup2(fd, number)
                os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = list(request["argv"]) or ["recompile-lint"]
        sys.modules["__main__"].__package__ = request.get("package")
        _reopen_streams(request.get("streams") or [])
        signal.signal(signal.SIGINT, signal.default_int_handler)
        code = _run_command()
    except BaseException:  # noqa: BLE001 - report it as the command's failure
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        _tell_server(notify_write)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        try:
            conn.sendall(f"exit {code}\n".encode())
        except OSError:
            pass
        os._exit(code)


def take_caller_state(request: dict) -> bool:
    """Give this process what the caller's has (``client.caller_state``): umask, resource
    limits, scheduling priority, locale. False when one cannot be taken on (a limit above
    this process's hard limit, a higher priority than its own, another UTF-8 mode): the
    command must then run in the caller, or it would not run as it does there."""
    import locale

    if request.get("utf8_mode") not in (None, sys.flags.utf8_mode):
        return False
    try:
        if isinstance(request.get("umask"), int):
            os.umask(request["umask"])
        limits = request.get("rlimits") or []
        if limits:
            import resource

            for number, soft, hard in limits:
                if (soft, hard) != resource.getrlimit(number):
                    resource.setrlimit(number, (soft, hard))
        priority = request.get("priority")
        if isinstance(priority, int) and priority != os.getpriority(os.PRIO_PROCESS, 0):
            os.setpriority(os.PRIO_PROCESS, 0, priority)
        wanted = request.get("locale")
        if isinstance(wanted, str) and wanted != locale.setlocale(locale.LC_ALL, None):
            locale.setlocale(locale.LC_ALL, wanted)
    except (OSError, ValueError, TypeError, locale.Error):
        return False
    return True


def _tell_server(notify_write: int) -> None:
    """Tell the server what it may keep for the next commands (``what_to_keep``)."""
    try:
        os.write(notify_write, what_to_keep(_directory).encode())
    except OSError:
        pass


def record_what_to_keep() -> None:
    """Have this process's run record what a server keeps (a server's children always do)."""
    from recompile_lint.analysis import context, textscan

    if context.resident_snippets is None:
        context.resident_snippets = {}
    if textscan.resident_tests is None:
        textscan.resident_tests = {}


def what_to_keep(directory: str) -> str:
    """What a server may keep after this process's run, as lines of ``kind value``: the facts
    directories it opened, and the snippets it parsed and the results of the text tests it
    ran (each listed in a file in ``directory``, the server's own). Raises OSError."""
    import tempfile

    from recompile_lint import cache
    from recompile_lint.analysis import context, textscan

    lines = [f"facts {entries}\n" for entries in sorted(cache.opened_directories)]
    tests = ["\0".join((name, path, digest, "1" if result else "0")) for name, path, digest, result in textscan.new_tests]
    for kind, items in (("snippets", context.new_snippets), ("tests", tests)):
        if items:
            fd, listing = tempfile.mkstemp(dir=directory, prefix=f".{kind}-")
            with os.fdopen(fd, "wb") as handle:
                handle.write("\0".join(items).encode("utf-8", "surrogatepass"))
            lines.append(f"{kind} {listing}\n")
    return "".join(lines)


def _reopen_streams(streams: list) -> None:
    """Standard streams on the caller's descriptors, encoded as the caller's were."""
    defaults = [("utf-8", "strict"), ("utf-8", "strict"), ("utf-8", "backslashreplace")]
    opened = []
    for number, (mode, default) in enumerate(zip(("r", "w", "w"), defaults)):
        encoding, errors = streams[number] if number < len(streams) and streams[number] else default
        interactive = os.isatty(number)
        stream = open(
            number,
            mode,
            encoding=encoding or default[0],
            errors=errors or default[1],
            closefd=False,
            buffering=-1,
        )
        if number == 2 or (number == 1 and interactive):
            stream.reconfigure(line_buffering=True)
        opened.append(stream)
    sys.stdin, sys.stdout, sys.stderr = opened
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = opened


# ---- the ``recompile-lint server`` commands -----------------------------------------------------


def _control(path: str, what: str) -> list[str] | None:
    """Send the server at ``path`` a control request: its reply lines, or None when none
    answers there."""
    sock = client.connect(path)
    if sock is None:
        return None
    try:
        client.send_request(sock, {"control": what}, [])
        return list(client.read_replies(sock))
    except OSError:
        return []
    finally:
        sock.close()


def status(path: str) -> dict | None:
    """What the server at ``path`` says of itself, or None when none answers."""
    for line in _control(path, "status") or []:
        word, _, value = line.partition(" ")
        if word == "status":
            try:
                return json.loads(value)
            except ValueError:
                return None
    return None


def stop(path: str, wait: float = 10.0) -> bool | None:
    """Ask the server at ``path`` to end: True when it has, None when none answered there,
    False when it is still there after ``wait`` seconds."""
    if _control(path, "stop") is None:
        return None
    deadline = time.monotonic() + wait
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not os.path.exists(path)


def log_path(path: str) -> str:
    """Where the server at socket ``path`` writes what it has to say (kept only when not empty)."""
    return path[: -len(".sock")] + ".log"


# A server that fails to start says why in its log; a start that does not wait for the
# server (``--start-server``, on every command) does not try again for this many seconds.
RETRY_AFTER_FAILURE = 600.0


def _recent_failure(log: str) -> str | None:
    """The last line of ``log`` when a server wrote it less than ``RETRY_AFTER_FAILURE``
    seconds ago (a server that ends well removes an empty log), else None."""
    try:
        if time.time() - os.stat(log).st_mtime > RETRY_AFTER_FAILURE:
            return None
        with open(log, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().strip().splitlines()
    except OSError:
        return None
    return lines[-1] if lines else None


def start(path: str, idle_timeout: float, wait: float = 30.0, keep: bool = False) -> tuple[int | None, str]:
    """Start a server at ``path`` in the background: (its pid or None, what went wrong).

    It waits up to ``wait`` seconds for the server to answer; with ``wait`` 0 it returns the
    new process's pid at once (a server that then fails to start says why in its log, and
    such starts are not tried again for a while: ``RETRY_AFTER_FAILURE``). With
    ``keep``, the server keeps what this process's run would have left it (``what_to_keep``:
    this process must have called ``record_what_to_keep`` before the run)."""
    import subprocess
    import tempfile

    found = status(path)
    if found is not None:
        return found["pid"], ""
    log = log_path(path)
    if wait <= 0:
        failed = _recent_failure(log)
        if failed is not None:
            return None, f"the server did not start: {failed} (see {log}; not tried again for {RETRY_AFTER_FAILURE / 60:g} minutes)"
    learn: list[str] = []
    try:
        directory = os.path.dirname(path)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        problem = client.directory_problem(directory)
        if problem is not None:
            return None, f"{directory} cannot hold the server's socket: it {problem} (it must be a directory only you can enter)"
        if keep:
            fd, listing = tempfile.mkstemp(dir=directory, prefix=".learn-")
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as handle:
                handle.write(what_to_keep(directory))
            learn.append(listing)
        with open(log, "ab") as handle:
            process = subprocess.Popen(
                [sys.executable, "-m", "recompile_lint.frontends.resident", path, str(idle_timeout), *learn],
                stdin=subprocess.DEVNULL,
                stdout=handle,
                stderr=handle,
                start_new_session=True,
                close_fds=True,
                cwd="/",
            )
    except OSError as exc:
        for listing in learn:
            for line in _take_listing(listing, "\n"):
                kind, _, value = line.partition(" ")
                if kind in ("snippets", "tests") and os.path.dirname(value) == directory:
                    _take_listing(value)
        return None, f"cannot start the server: {exc.strerror or exc}"
    if wait <= 0:
        return process.pid, ""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        found = status(path)
        if found is not None:
            return found["pid"], ""
        if process.poll() is not None:
            break
        time.sleep(0.05)
    try:
        with open(log, encoding="utf-8", errors="replace") as handle:
            said = handle.read().strip().splitlines()[-1:]
    except OSError:
        said = []
    return None, "the server did not start" + (f": {said[0]}" if said else "")
