"""The resident server hands a command's environment (tokens included) and terminal to another
process: only ever to one of the same user, through a directory only that user can enter. A
fake server of another user gets nothing; the command then runs in the caller, with one
warning line. The command's process takes on the caller's limits, priority, umask and locale,
and ends when its caller is killed."""

from __future__ import annotations

import locale
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recompile_lint.frontends import client, server

from helpers import SEED_SOURCE

pytestmark = pytest.mark.skipif(
    os.name != "posix" or not hasattr(socket, "send_fds") or not hasattr(socket, "SO_PEERCRED"),
    reason="the server needs Unix sockets that pass descriptors and tell the peer's user",
)
as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="plays another user: needs root")
NOBODY = 65534


@pytest.fixture
def server_env(tmp_path_factory):
    directory = Path(tmp_path_factory.mktemp("srv", numbered=True))
    directory.chmod(0o700)
    env = {**os.environ, client.DIR_VAR: str(directory), "PYTHONIOENCODING": "utf-8", "XDG_CACHE_HOME": str(directory.parent / "xdg")}
    env.pop(client.NO_SERVER_VAR, None)
    yield env
    subprocess.run([sys.executable, "-m", "recompile_lint", "server", "stop"], env=env, capture_output=True, timeout=60)


@pytest.fixture
def public_tmp():
    """A directory another user can reach (pytest's own are this user's only)."""
    import shutil
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="rl-sec-", dir="/tmp"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    (root / "good.py").write_text(SEED_SOURCE, encoding="utf-8")
    return root


def lint(env, *args, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "recompile_lint", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, **kwargs)


def start(env) -> int:
    started = subprocess.run([sys.executable, "-m", "recompile_lint", "server", "start"], env=env, capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    return int(started.stdout.split("pid ", 1)[1].split(",", 1)[0])


class FakeServer:
    """A process of another user listening at ``path``: it records every connection (and the
    bytes it was sent) in a pipe the test reads."""

    def __init__(self, path: Path, uid: int = NOBODY, bind_as_root: bool = False):
        self.read, write = os.pipe()
        listener = None
        if bind_as_root:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(path))
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the child
            try:
                os.close(self.read)
                os.setgid(uid)
                os.setuid(uid)
                if listener is None:
                    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    listener.bind(str(path))
                listener.listen(8)  # the peer credentials are the listener's, taken here
                os.write(write, b"ready\n")
                while True:
                    conn, _ = listener.accept()
                    conn.settimeout(2)
                    got = b""
                    try:
                        while chunk := conn.recv(65536):
                            got += chunk
                    except OSError:
                        pass
                    os.write(write, f"connected {len(got)}\n".encode())
                    conn.close()
            finally:
                os._exit(0)
        os.close(write)
        if listener is not None:
            listener.close()
        assert self._line() == "ready"

    def _line(self, timeout: float = 10) -> str:
        import select

        ready, _, _ = select.select([self.read], [], [], timeout)
        return os.read(self.read, 4096).decode().strip() if ready else ""

    def connections(self) -> str:
        return self._line(timeout=0.5)

    def close(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.read)


def assert_ran_here(done: subprocess.CompletedProcess, warning: str | None) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "good.py:8:16: RCL101" in done.stdout
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    if warning is None:
        assert warnings == []
    else:
        assert len(warnings) == 1 and warning in warnings[0], done.stderr


# ---- the socket's directory --------------------------------------------------------------------


@as_root
def test_a_symlinked_socket_directory_is_not_used(tmp_path, project, server_env):
    """The attack without ``XDG_RUNTIME_DIR``: ``/tmp/recompile-lint-<uid>`` made a link to a
    directory that passes every check of its target (this user's, mode 0700), holding a
    socket another user listens on."""
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    env = {**server_env, client.DIR_VAR: str(link)}
    fake = FakeServer(target / f"{client.fingerprint()}.sock", bind_as_root=True)
    try:
        done = lint(env, "--no-cache", "good.py", cwd=project)
        assert_ran_here(done, "is a symbolic link")
        assert fake.connections() == ""
    finally:
        fake.close()


@as_root
def test_a_directory_another_user_made_first_is_not_used_and_nothing_hangs(public_tmp, project, server_env):
    """The other user creates the directory before this user's first server: the command
    runs here (no hand-off, no hang), and starting a server says why it cannot."""
    public_tmp.chmod(0o755)
    taken = public_tmp / "taken"
    taken.mkdir()
    os.chown(taken, NOBODY, NOBODY)
    taken.chmod(0o777)
    env = {**server_env, client.DIR_VAR: str(taken)}
    fake = FakeServer(taken / f"{client.fingerprint()}.sock")
    try:
        started = time.monotonic()
        done = lint(env, "--no-cache", "good.py", cwd=project)
        assert time.monotonic() - started < 60
        assert_ran_here(done, "belongs to another user")
        assert fake.connections() == ""
        refused = lint(env, "server", "start", cwd=project)
        assert refused.returncode == 2
        assert "cannot hold the server's socket: it belongs to another user" in refused.stderr
    finally:
        fake.close()


@pytest.mark.parametrize("mode", [0o755, 0o711, 0o770])
def test_a_directory_others_may_enter_is_not_used(tmp_path, project, server_env, mode):
    opened = tmp_path / "opened"
    opened.mkdir()
    opened.chmod(mode)
    env = {**server_env, client.DIR_VAR: str(opened)}
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(opened / f"{client.fingerprint()}.sock"))
    listener.listen(1)
    listener.settimeout(0.2)
    try:
        assert_ran_here(lint(env, "--no-cache", "good.py", cwd=project), "may be entered by others")
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


def test_no_directory_means_no_server_and_no_warning(tmp_path, project, server_env):
    env = {**server_env, client.DIR_VAR: str(tmp_path / "never-made")}
    assert_ran_here(lint(env, "--no-cache", "good.py", cwd=project), None)


# ---- the peer's user ---------------------------------------------------------------------------


@as_root
def test_the_client_checks_the_servers_user(tmp_path, project, server_env):
    """A private directory of this user, but what listens on the socket in it is another
    user's process (``SO_PEERCRED``): it gets nothing, the command runs here."""
    directory = Path(server_env[client.DIR_VAR])
    fake = FakeServer(directory / f"{client.fingerprint()}.sock", bind_as_root=True)
    try:
        done = lint(server_env, "--no-cache", "good.py", cwd=project)
        assert_ran_here(done, "is not this user's")
        # A connection is made (that is how the peer is known), but nothing is sent on it.
        assert fake.connections() in ("", "connected 0")
    finally:
        fake.close()


@as_root
def test_the_server_checks_the_clients_user(tmp_path, public_tmp, project, server_env):
    """A server whose directory was opened after it started (a mistake): a process of
    another user that connects and asks for a command gets no answer, and nothing runs."""
    public_tmp.chmod(0o755)
    directory = public_tmp / "srv"
    directory.mkdir(mode=0o700)
    server_env = {**server_env, client.DIR_VAR: str(directory)}
    start(server_env)
    path = directory / f"{client.fingerprint()}.sock"
    directory.chmod(0o711)
    path.chmod(0o777)
    marker = tmp_path / "marker"
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the other user's process
        try:
            os.close(read)
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(10)
            sock.connect(str(path))
            request = {"argv": ["recompile-lint", "--no-cache", "-o", str(marker), "good.py"], "cwd": str(project), "env": {}, "streams": [], "package": None}
            client.send_request(sock, request, [0, 1, 2])
            answer = b""
            try:
                while chunk := sock.recv(4096):
                    answer += chunk
            except OSError:
                pass
            os.write(write, answer or b"<nothing>")
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    answer = os.read(read, 4096)
    os.close(read)
    assert answer == b"<nothing>"
    time.sleep(1)
    assert not marker.exists()
    directory.chmod(0o700)
    # The server still answers its own user.
    assert lint(server_env, "--no-cache", "good.py", cwd=project).returncode == 1
    subprocess.run([sys.executable, "-m", "recompile_lint", "server", "stop"], env=server_env, capture_output=True, timeout=60)


# ---- the caller's process state ----------------------------------------------------------------


def in_a_child(function) -> object:
    """``function()``'s result, computed in a forked child (whose state it may change)."""
    import pickle

    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        try:
            os.write(write, pickle.dumps(function()))
        finally:
            os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.close(read)
    os.waitpid(child, 0)
    return pickle.loads(data)


def test_the_callers_limits_priority_umask_and_locale_are_taken_on():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = {
        "umask": 0o027,
        "rlimits": [[resource.RLIMIT_NOFILE, min(soft, 200), hard], [resource.RLIMIT_FSIZE, 4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]]],
        "priority": os.getpriority(os.PRIO_PROCESS, 0) + 3,
        "locale": "C",
        "utf8_mode": sys.flags.utf8_mode,
    }

    def taken():
        ok = server.take_caller_state(wanted)
        umask = os.umask(0)
        return ok, umask, resource.getrlimit(resource.RLIMIT_NOFILE), resource.getrlimit(resource.RLIMIT_FSIZE)[0], os.getpriority(os.PRIO_PROCESS, 0), locale.setlocale(locale.LC_ALL, None)

    ok, umask, nofile, fsize, priority, current = in_a_child(taken)
    assert ok
    assert umask == 0o027
    assert nofile == (min(soft, 200), hard)
    assert fsize == 4096
    assert priority == wanted["priority"]
    assert current == "C"
    # And the client collects exactly these.
    state = client.caller_state()
    assert set(state) == set(wanted)
    assert [resource.RLIMIT_NOFILE, soft, hard] in state["rlimits"]


def test_a_state_the_server_cannot_take_on_is_declined(monkeypatch):
    assert in_a_child(lambda: server.take_caller_state({"utf8_mode": 1 - sys.flags.utf8_mode})) is False

    def refuse(*args):
        raise ValueError("not allowed to raise the maximum limit")

    def with_refusal():
        resource.setrlimit = refuse
        return server.take_caller_state({"rlimits": [[resource.RLIMIT_NOFILE, 1, 2]]})

    assert in_a_child(with_refusal) is False


def test_a_declined_command_runs_in_the_caller(tmp_path, monkeypatch, capsys):
    """A server that answers ``decline``: nothing ran there, so the client runs it."""
    directory = tmp_path / "srv"
    directory.mkdir(mode=0o700)
    monkeypatch.setenv(client.DIR_VAR, str(directory))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(client.socket_path(str(directory)))
    listener.listen(1)
    import threading

    def answer():
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(b"pid 1\ndecline\n")
        conn.close()

    thread = threading.Thread(target=answer)
    thread.start()
    try:
        assert client.ask_server(["recompile-lint", "--version"]) is None
    finally:
        thread.join(10)
        listener.close()


def test_the_callers_file_size_limit_holds_in_the_served_command(project, server_env):
    """End to end: a report the caller's RLIMIT_FSIZE does not allow fails as it would here."""
    start(server_env)

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (10, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    here = lint({**server_env, client.NO_SERVER_VAR: "1"}, "--no-cache", "-o", "here.txt", "good.py", cwd=project, preexec_fn=limited)
    served = lint(server_env, "--no-cache", "-o", "served.txt", "good.py", cwd=project, preexec_fn=limited)
    assert here.returncode == served.returncode == 2, here.stderr + served.stderr
    assert "File too large" in here.stderr and "File too large" in served.stderr
    unlimited = lint(server_env, "--no-cache", "-o", "served.txt", "good.py", cwd=project)
    assert unlimited.returncode == 1 and "RCL101" in (project / "served.txt").read_text(encoding="utf-8")


# ---- a killed caller ---------------------------------------------------------------------------


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


# A caller that sends its request and goes at once, before the server answers with the
# command's pid (killed in that moment).
GONE_CALLER = """
import os, sys
from recompile_lint.frontends import client
sock = client.connect(client.socket_path())
assert sock is not None, "no server"
request = {"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ), "streams": [[None, None]] * 3, "package": None, **client.caller_state()}
client.send_request(sock, request, [0, 1, 2])
sock.close()
"""


def synthetic_project_linted_once(tmp_path: Path, server_env: dict, modules: int) -> tuple[Path, int, float]:
    """A synthetic project of ``modules`` modules, a started server, and the wall time of one
    whole lint of the project through it (how long a command there takes)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    try:
        from make_synthetic import generate
    finally:
        sys.path.pop(0)
    root = tmp_path / "synth"
    generate(root, modules)
    (root / "pyproject.toml").write_text("[project]\nname = 'synth'\n", encoding="utf-8")
    server_pid = start(server_env)
    started = time.monotonic()
    done = lint(server_env, "--no-cache", "-j", "1", "-o", "first.txt", ".", cwd=root)
    duration = time.monotonic() - started
    assert done.returncode in (0, 1) and (root / "first.txt").exists(), done.stderr
    return root, server_pid, duration


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process tree from /proc")
def test_a_caller_gone_before_the_server_answers_does_not_leave_its_command_running(tmp_path, server_env):
    """The server's first answer (the command's pid) finds the caller gone: the command it
    just started is ended, not left running with nobody to see it."""
    root, server_pid, duration = synthetic_project_linted_once(tmp_path, server_env, 200)
    gone = subprocess.run([sys.executable, "-c", GONE_CALLER, "--no-cache", "-j", "1", "-o", "gone.txt", "."], cwd=root, env=server_env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert gone.returncode == 0, gone.stderr
    deadline = time.monotonic() + 30
    while descendants(server_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert descendants(server_pid) == set(), "the command outlived its caller"
    time.sleep(max(2.0, 2 * duration))
    assert not (root / "gone.txt").exists(), "the command ran on after its caller went"
    assert lint(server_env, "--version", cwd=root).returncode == 0


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process tree from /proc")
def test_a_client_killed_by_a_signal_ends_its_command(tmp_path, server_env):
    """SIGKILL cannot be passed on by the client: the server sees it go and kills the
    command and everything it started (it would otherwise go on writing to the terminal, and
    here, finish its report)."""
    root, server_pid, duration = synthetic_project_linted_once(tmp_path, server_env, 400)
    # The first command says its status before its process is torn down: until that is over,
    # its processes would pass for the next command's below.
    deadline = time.monotonic() + 60
    while descendants(server_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert descendants(server_pid) == set(), "the first command's processes never ended"
    caller = subprocess.Popen([sys.executable, "-m", "recompile_lint", "--no-cache", "-j", "1", "-o", "killed.txt", "."], cwd=root, env=server_env)
    deadline = time.monotonic() + 30
    while len(descendants(server_pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)  # until the command runs in the server
    assert len(descendants(server_pid)) >= 2, "the command never reached the server"
    caller.send_signal(signal.SIGKILL)
    caller.wait()
    deadline = time.monotonic() + 10
    while descendants(server_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert descendants(server_pid) == set(), "the command outlived its caller"
    time.sleep(max(2.0, 2 * duration))
    assert not (root / "killed.txt").exists()
    # The server itself lives on, and answers the next command.
    assert lint(server_env, "--version", cwd=root).returncode == 0
    assert server_pid in {int(line.split("pid ", 1)[1].split(",")[0]) for line in [lint(server_env, "server", "status", cwd=root).stdout]}
