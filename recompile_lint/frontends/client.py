"""The client side of the resident server: find this installation's server and hand it a command.

Starting the linter costs more than checking one file: importing libcst alone takes 0.3 s. A
resident server (``recompile-lint server start``, see ``server``) has done its imports once
and answers each command from a fresh fork of itself, so a pre-commit hook or an editor that
lints one file pays only for the work. This module is what every invocation imports first, so
it imports nothing beyond the standard library's basics.

The command runs exactly as it would here: the server's child gets this process's standard
streams (passed over the socket), arguments, working directory and environment, and its exit
status comes back as this process's. When no server answers, or the server is not this
installation's (another version, interpreter or edited code: it is found by a fingerprint of
them), the command runs in this process. ``RECOMPILE_LINT_NO_SERVER=1`` never asks a server.
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


def private_directory(directory: str) -> bool:
    """True when ``directory`` is this user's own and nobody else can enter or write it: a
    server found elsewhere could read the environment and streams handed to it."""
    try:
        stat = os.stat(directory)
    except OSError:
        return False
    return stat.st_uid == os.getuid() and not stat.st_mode & 0o077


def connect(path: str, timeout: float = 2.0):
    """A connected socket to the server at ``path``, or None when none answers there."""
    if not os.path.exists(path) or not private_directory(os.path.dirname(path)):
        return None
    # The C socket module: ``socket`` builds enum classes on import, which costs a command
    # answered by the server a tenth of its own run time.
    import _socket

    if not hasattr(_socket, "SCM_RIGHTS"):
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
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


def ask_server(argv: list[str]) -> int | None:
    """Run ``argv`` in the server: its exit status, or None when no server took the command."""
    sock = connect(socket_path())
    if sock is None:
        return None
    streams = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        streams.append([getattr(stream, "encoding", None), getattr(stream, "errors", None)])
    # How the command was started decides the program name its messages show (click reads it).
    package = getattr(sys.modules.get("__main__"), "__package__", None)
    try:
        umask = os.umask(0o022)
        os.umask(umask)  # files the command writes (a report, the cache) get the caller's mode
        request = {"argv": list(argv), "cwd": os.getcwd(), "env": dict(os.environ), "streams": streams, "package": package, "umask": umask}
        send_request(sock, request, [0, 1, 2])
    except OSError:
        # Nothing was run (a working directory that was removed, a closed standard stream
        # cannot be passed, a server gone away): the command runs here, as without a server.
        sock.close()
        return None
    return _wait(sock)


def _wait(sock) -> int:
    """The command's exit status; an interrupt here is passed on to the command."""
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
