"""The client side of the resident server: find this installation's server and hand it a command.

Starting the linter costs more than checking one file: importing libcst alone takes 0.3 s. A
resident server (``recompile-lint server start``, see ``server``) has done its imports once
and answers each command from a fresh fork of itself, so a pre-commit hook or an editor that
lints one file pays only for the work. This module is what every invocation imports first, so
it imports nothing beyond the standard library's basics.

The command runs exactly as it would here: the server's child gets this process's standard
streams (passed over the socket), arguments, working directory, environment, umask, resource
limits, scheduling priority and locale, and its exit status comes back as this process's. When
no server answers, or the server is not this installation's (another version, interpreter or
edited code: it is found by a fingerprint of them), the command runs in this process.
``RECOMPILE_LINT_NO_SERVER=1`` never asks a server.

What is handed over (the environment, tokens included, and the terminal) goes only to a
process of this user: the socket's directory must be this user's own, closed to others and not
a link (``private_directory``, checked with ``lstat``), the socket this user's, and the process
that listens on it this user's (``SO_PEERCRED``). A directory that fails the check is not used
(the command runs here, with one warning line); where ``SO_PEERCRED`` does not exist, no
server is used.
"""

from __future__ import annotations

import os
import sys

NO_SERVER_VAR = "RECOMPILE_LINT_NO_SERVER"
DIR_VAR = "RECOMPILE_LINT_SERVER_DIR"
# Seconds a server has to say it took a command.
ANSWER_TIMEOUT = 30.0
# Commands that never go to a server: managing the server itself, and the language server
# (a session that lasts as long as the editor, on this process's standard streams).
LOCAL_COMMANDS = frozenset({"server", "lsp"})


def server_wanted(argv: list[str]) -> bool:
    if os.name != "posix" or os.environ.get(NO_SERVER_VAR, "") not in ("", "0"):
        return False
    return not (argv and argv[0] in LOCAL_COMMANDS)


def server_directory() -> str:
    """Where this user's server sockets live (``RECOMPILE_LINT_SERVER_DIR`` overrides)."""
    chosen = os.environ.get(DIR_VAR)
    if chosen:
        return chosen
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return os.path.join(runtime, "recompile-lint")
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"recompile-lint-{os.getuid()}")


def fingerprint() -> str:
    """Names this installation: version, interpreter, the size and mtime of every module of
    the linter, and the libraries it imports as installed (their directories and
    ``__init__`` modules: installing another version replaces both), so a server of other
    code is never asked."""
    try:
        from _blake2 import blake2b  # what hashlib offers, without importing OpenSSL's
    except ImportError:  # pragma: no cover - every CPython has it
        from hashlib import blake2b

    from recompile_lint import __version__

    digest = blake2b(digest_size=8)
    # The environment and the interpreter it runs, whichever of its names started it
    # (``python``, ``python3``: links to one program).
    digest.update(f"{__version__}\0{sys.prefix}\0{os.path.realpath(sys.executable)}\0{sys.version}\0".encode())
    # The whole package, not only this folder of it.
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for directory, subdirectories, files in os.walk(here):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                _add_stat(digest, os.path.join(directory, name))
    for library in ("libcst", "click"):
        for entry in sys.path:
            candidate = os.path.join(entry or ".", library, "__init__.py")
            if os.path.isfile(candidate):
                _add_stat(digest, os.path.dirname(os.path.abspath(candidate)))
                _add_stat(digest, candidate)
                break
    return digest.hexdigest()


def _add_stat(digest, path: str) -> None:
    try:
        stat = os.stat(path)
    except OSError:
        digest.update(f"{path}\0?\0".encode())
        return
    digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ino}\0".encode())


def socket_path(directory: str | None = None) -> str:
    return os.path.join(directory or server_directory(), f"{fingerprint()}.sock")


MISSING = "does not exist"


def directory_problem(directory: str) -> str | None:
    """Why ``directory`` may not hold this user's server sockets (None when it may): it must
    be a directory (not a link to one, as ``lstat`` sees it) owned by this user that nobody
    else can enter or write. A server found elsewhere could read the environment and the
    terminal handed to it."""
    try:
        info = os.lstat(directory)
    except FileNotFoundError:
        return MISSING
    except OSError as exc:
        return f"cannot be examined ({exc.strerror or exc})"
    mode = info.st_mode
    if mode & 0o170000 == 0o120000:
        return "is a symbolic link"
    if mode & 0o170000 != 0o040000:
        return "is not a directory"
    if info.st_uid != os.getuid():
        return f"belongs to another user (uid {info.st_uid})"
    if mode & 0o077:
        return f"may be entered by others (mode {mode & 0o777:o})"
    return None


def private_directory(directory: str) -> bool:
    """True when ``directory`` is this user's own, not a link, and nobody else can enter or
    write it (``directory_problem``)."""
    return directory_problem(directory) is None


def peer_uid(sock) -> int | None:
    """The user id of the process at the other end of a Unix socket (``SO_PEERCRED``), or
    None where it cannot be known."""
    import _socket

    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        data = sock.getsockopt(_socket.SOL_SOCKET, option, 12)
    except OSError:
        return None
    if len(data) < 12:
        return None
    return int.from_bytes(data[4:8], sys.byteorder)  # struct ucred: pid, uid, gid


def connect(path: str, timeout: float = 2.0, problems: list[str] | None = None):
    """A connected socket to this user's server at ``path``, or None when none answers there
    (or what answers is not this user's: see ``peer_uid``). Why a server that is there was
    not used is appended to ``problems``."""
    problem = directory_problem(os.path.dirname(path))
    if problem is not None:
        if problems is not None and problem != MISSING:
            problems.append(f"{os.path.dirname(path)} {problem}")
        return None
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if info.st_mode & 0o170000 != 0o140000 or info.st_uid != os.getuid():
        if problems is not None:
            problems.append(f"{path} is not a socket of this user")
        return None
    # The C socket module: ``socket`` builds enum classes on import, which costs a command
    # answered by the server a tenth of its own run time.
    import _socket

    if not hasattr(_socket, "SCM_RIGHTS") or not hasattr(_socket, "SO_PEERCRED"):
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    if peer_uid(sock) != os.getuid():
        sock.close()
        if problems is not None:
            problems.append(f"the process listening at {path} is not this user's")
        return None
    return sock


def send_request(sock, request: dict, fds: list[int]) -> None:
    """One request: its length and the streams' descriptors, then its text (the ``repr`` of
    a dict of strings, lists and None: ``ast.literal_eval`` reads it back)."""
    import _socket
    from array import array

    payload = repr(request).encode("utf-8")
    ancillary = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, array("i", fds))] if fds else []
    sock.sendmsg([len(payload).to_bytes(4, "big")], ancillary)
    sock.sendall(payload)


def read_replies(sock):
    """The server's reply lines (``pid N``, ``exit N``, ``status {...}``), as they come."""
    pending = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield line.decode("utf-8", "replace")


def caller_state() -> dict:
    """What the command's process must have of this one besides its arguments, directory,
    environment and streams: umask, resource limits, scheduling priority, locale and UTF-8
    mode (the server's child takes them on, or declines the command)."""
    import _locale

    umask = os.umask(0o022)
    os.umask(umask)  # files the command writes (a report, the cache) get the caller's mode
    limits = []
    try:
        import resource
    except ImportError:  # pragma: no cover - POSIX has it
        resource = None  # type: ignore[assignment]
    if resource is not None:
        for name in dir(resource):
            if name.startswith("RLIMIT_"):
                number = getattr(resource, name)
                try:
                    soft, hard = resource.getrlimit(number)
                except (OSError, ValueError):
                    continue
                limits.append([number, soft, hard])
    try:
        priority = os.getpriority(os.PRIO_PROCESS, 0)
    except (AttributeError, OSError):
        priority = None
    try:
        locale = _locale.setlocale(_locale.LC_ALL, None)
    except (_locale.Error, ValueError):
        locale = None
    return {"umask": umask, "rlimits": limits, "priority": priority, "locale": locale, "utf8_mode": sys.flags.utf8_mode}


def ask_server(argv: list[str]) -> int | None:
    """Run ``argv`` in the server: its exit status, or None when no server took the command."""
    problems: list[str] = []
    sock = connect(socket_path(), problems=problems)
    if sock is None:
        for problem in problems[:1]:
            sys.stderr.write(f"recompile-lint: warning: not using the resident server: {problem}; the command runs here\n")
        return None
    streams = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        streams.append([getattr(stream, "encoding", None), getattr(stream, "errors", None)])
    # How the command was started decides the program name its messages show (click reads it).
    package = getattr(sys.modules.get("__main__"), "__package__", None)
    try:
        request = {"argv": list(argv), "cwd": os.getcwd(), "env": dict(os.environ), "streams": streams, "package": package, **caller_state()}
        send_request(sock, request, [0, 1, 2])
    except OSError:
        # Nothing was run (a working directory that was removed, a closed standard stream
        # cannot be passed, a server gone away): the command runs here, as without a server.
        sock.close()
        return None
    return _wait(sock)


def _wait(sock) -> int | None:
    """The command's exit status (None when the server declined it: it runs here); an
    interrupt here is passed on to the command."""
    import _signal  # ``signal`` without the enum classes its import builds

    child = None
    forwarded = []

    def forward(signum, frame):
        forwarded.append(signum)
        if child is not None:
            try:
                os.kill(child, signum if len(forwarded) < 3 else _signal.SIGKILL)
            except OSError:
                pass

    before = {signum: _signal.signal(signum, forward) for signum in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)}
    # A server answers at once with the process that runs the command; one that does not
    # (stopped, swamped) may still run it later, so the command cannot simply run here too.
    sock.settimeout(ANSWER_TIMEOUT)
    try:
        for line in read_replies(sock):
            word, _, value = line.partition(" ")
            if word == "pid":
                sock.settimeout(None)
                child = int(value)
                for signum in forwarded:
                    os.kill(child, signum)
            elif word == "exit":
                return int(value)
            elif word == "decline":
                # The server's process cannot take on this one's state (a resource limit
                # above its own, a higher priority): nothing ran, the command runs here.
                return None
    except TimeoutError:
        sys.stderr.write(
            f"recompile-lint: error: the server did not answer within {ANSWER_TIMEOUT:g} s; "
            f"`recompile-lint server stop` ends it, {NO_SERVER_VAR}=1 runs without it\n"
        )
        return 2
    except (OSError, ValueError):
        pass
    finally:
        sock.close()
        for signum, handler in before.items():
            _signal.signal(signum, handler)
    sys.stderr.write("recompile-lint: error: the server ended without finishing the command\n")
    return 2
