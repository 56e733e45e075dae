"""The resident server: a command answered by it is the command run here, byte for byte."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recompile_lint.config import START_SERVER_VAR
from recompile_lint.frontends import client

pytestmark = pytest.mark.skipif(os.name != "posix" or not hasattr(socket, "send_fds"), reason="the server needs Unix sockets that pass descriptors")

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def server_env(tmp_path_factory):
    # A short directory: a Unix socket's path is limited to about 100 bytes.
    directory = Path(tmp_path_factory.mktemp("srv", numbered=True))
    env = {**os.environ, client.DIR_VAR: str(directory), "PYTHONIOENCODING": "utf-8"}
    env.pop(client.NO_SERVER_VAR, None)
    yield env
    subprocess.run([sys.executable, "-m", "recompile_lint", "server", "stop"], env=env, capture_output=True, timeout=60)


def lint(env, *args, cwd=REPO, server=True):
    env = dict(env)
    if not server:
        env[client.NO_SERVER_VAR] = "1"
    return subprocess.run([sys.executable, "-m", "recompile_lint", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def server_status(env) -> str:
    return lint(env, "server", "status").stdout


def served(env) -> int:
    said = server_status(env)
    return int(said.split(": ", 1)[1].split(" ", 1)[0])


def held(env) -> tuple[int, int, int]:
    """The cache entries, parsed snippets and text tests' results the server holds."""
    found = re.search(r"(\d+) cache entries, (\d+) parsed snippets and (\d+) text-test results", server_status(env))
    assert found, server_status(env)
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


def wait_until_held(env, kinds: int = 3) -> None:
    """Until the server holds something of each of the first ``kinds`` kinds of ``held``."""
    deadline = time.monotonic() + 60
    while 0 in held(env)[:kinds] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert 0 not in held(env)[:kinds]


def start(env, *extra) -> None:
    started = lint(env, "server", "start", *extra)
    assert started.returncode == 0, started.stderr
    assert "server running (pid" in started.stdout


def test_a_command_the_server_answers_is_the_command_run_here(server_env, tmp_path):
    start(server_env)
    cache = str(tmp_path / "cache")
    cases = [
        ["--cache-dir", cache, "fixtures/rcl1xx"],
        ["--cache-dir", cache, "--format", "json", "fixtures/rcl2xx"],
        ["--no-cache", "--statistics", "fixtures"],
        ["--no-cache", "no/such/path.py"],
        ["--no-such-option"],
        ["rules"],
        ["--version"],
    ]
    for round_ in range(2):
        for args in cases:
            before = served(server_env)
            here = lint(server_env, *args, server=False)
            there = lint(server_env, *args)
            assert served(server_env) == before + 2, args  # this status query and the command
            assert (there.returncode, there.stdout, there.stderr) == (here.returncode, here.stdout, here.stderr), args
        if round_ == 0:
            # The server reads the cache directories the runs used and parses the snippets
            # they parsed; the second round's runs take both from its memory. (The runs
            # here filled the run cache first: none of the server's ran a text test.)
            wait_until_held(server_env, kinds=2)
    assert lint(server_env, "--cache-dir", cache, "fixtures/rcl1xx").returncode == 1


def test_a_file_edited_between_commands_is_read_again(server_env, tmp_path):
    # The server remembers which files its text tests chose, by content: a file that starts
    # compiling and mutating after that is chosen by the next command as by a fresh process.
    start(server_env)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("", encoding="utf-8")
    (project / "model.py").write_text("import torch\n\nstep = 0\n\n\n@torch.compile\ndef poly(x):\n    return x * step\n", encoding="utf-8")
    (project / "helper.py").write_text("def scale(x):\n    return x * 2\n", encoding="utf-8")
    args = ("--cache-dir", str(tmp_path / "cache"), "--format", "json", ".")
    first = lint(server_env, *args, cwd=project)
    assert first.stdout == "[]\n"
    wait_until_held(server_env)
    (project / "helper.py").write_text(
        "import torch\nimport model\n\n\n@torch.compile\ndef scale(x):\n    return x * model.step\n\n\ndef advance():\n    model.step += 1\n",
        encoding="utf-8",
    )
    there = lint(server_env, *args, cwd=project)
    here = lint(server_env, "--no-cache", *args[2:], cwd=project, server=False)  # not from the run cache
    assert (there.returncode, there.stdout, there.stderr) == (here.returncode, here.stdout, here.stderr)
    assert "helper.py" in there.stdout


def test_the_console_script_keeps_its_program_name(server_env):
    script = Path(sys.executable).with_name("recompile-lint")
    if not script.exists():
        pytest.skip("no console script beside this interpreter")
    start(server_env)
    answers = []
    for server in (False, True):
        env = {**server_env, **({} if server else {client.NO_SERVER_VAR: "1"})}
        got = subprocess.run([str(script), "--no-such-option"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        answers.append((got.returncode, got.stdout, got.stderr))
    assert answers[0] == answers[1]
    assert "Usage: recompile-lint " in answers[0][2]


def test_files_the_command_writes_get_the_callers_umask(server_env, tmp_path):
    start(server_env)
    modes = []
    for server in (False, True):
        report = tmp_path / f"report-{server}.json"
        script = "import os, sys; os.umask(0o077); from recompile_lint.frontends.main import run; run()"
        env = {**server_env, **({} if server else {client.NO_SERVER_VAR: "1"})}
        got = subprocess.run(
            [sys.executable, "-c", script, "--no-cache", "--format", "json", "-o", str(report), "fixtures/rcl1xx/global_int_counter.py"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
        )
        assert got.returncode == 1, got.stderr
        modes.append(report.stat().st_mode & 0o777)
    assert modes == [0o600, 0o600]


def test_the_command_sees_the_callers_directory_environment_and_streams(server_env, tmp_path):
    start(server_env)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.recompile-lint]\nignore = ['RCL101']\n", encoding="utf-8")
    (project / "model.py").write_text((REPO / "fixtures/rcl1xx/global_int_counter.py").read_text(encoding="utf-8"), encoding="utf-8")
    report = tmp_path / "out.json"
    here = lint(server_env, "--no-cache", "--format", "json", "-o", str(report), ".", cwd=project, server=False)
    expected = report.read_text(encoding="utf-8")
    report.unlink()
    there = lint({**server_env, "NO_COLOR": "1"}, "--no-cache", "--format", "json", "-o", str(report), ".", cwd=project)
    assert (there.returncode, there.stdout, there.stderr) == (here.returncode, here.stdout, here.stderr)
    assert report.read_text(encoding="utf-8") == expected
    assert '"RCL101"' not in expected  # the project's own configuration was read


def test_stop_and_idle_timeout_end_the_server(server_env):
    start(server_env)
    path = client.socket_path(server_env[client.DIR_VAR])
    assert os.path.exists(path)
    stopped = lint(server_env, "server", "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert not os.path.exists(path)
    assert lint(server_env, "server", "status").returncode == 1
    start(server_env, "--idle-timeout", "1")
    deadline = time.monotonic() + 30
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(path)


def test_without_an_answering_server_the_command_runs_here(server_env, tmp_path):
    directory = Path(server_env[client.DIR_VAR])
    path = client.socket_path(str(directory))
    # A server that died without removing its socket: nothing listens there.
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(path)
    dead.close()
    got = lint(server_env, "--no-cache", "fixtures/rcl1xx/global_int_counter.py")
    assert got.returncode == 1 and "RCL101" in got.stdout
    # The server starts over the dead socket.
    start(server_env)
    assert "server running" in server_status(server_env)


def test_a_buffer_on_standard_input_reaches_the_served_command(server_env, tmp_path):
    fixture = "fixtures/rcl1xx/global_int_counter.py"
    text = (REPO / fixture).read_text(encoding="utf-8")
    start(server_env)
    for buffer in (text, text.replace("step += 1", "pass")):
        argv = [sys.executable, "-m", "recompile_lint", "--no-cache", "--stdin-filename", fixture]
        here = subprocess.run(argv, input=buffer, cwd=REPO, env={**server_env, client.NO_SERVER_VAR: "1"}, capture_output=True, text=True, timeout=300)
        before = served(server_env)
        there = subprocess.run(argv, input=buffer, cwd=REPO, env=server_env, capture_output=True, text=True, timeout=300)
        assert served(server_env) == before + 2
        assert (there.returncode, there.stdout, there.stderr) == (here.returncode, here.stdout, here.stderr)
    assert here.returncode == 0 and there.returncode == 0  # the edited buffer, not the file


def test_what_the_server_learns_from_a_buffer_never_stands_for_the_file(server_env, tmp_path):
    fixture = "fixtures/rcl1xx/global_int_counter.py"
    text = (REPO / fixture).read_text(encoding="utf-8")
    cache = str(tmp_path / "cache")
    start(server_env)
    argv = [sys.executable, "-m", "recompile_lint", "--cache-dir", cache, "--stdin-filename", fixture]
    quiet = subprocess.run(argv, input=text.replace("@torch.compile\n", ""), cwd=REPO, env=server_env, capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    deadline = time.monotonic() + 60
    while held(server_env)[2] == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert held(server_env)[2] > 0  # it keeps that run's text tests, by the buffer's digest
    here = lint(server_env, "--no-cache", fixture, server=False)
    there = lint(server_env, "--cache-dir", cache, fixture)
    assert there.returncode == 1 and (there.stdout, there.stderr) == (here.stdout, here.stderr)


def wait_until_running(env, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        said = server_status(env)
        if "server running" in said:
            return said
        time.sleep(0.2)
    raise AssertionError("no server started")


def test_start_server_leaves_a_server_that_answers_the_next_commands(server_env, tmp_path):
    fixture = "fixtures/rcl1xx/global_int_counter.py"
    cache = str(tmp_path / "cache")
    here = lint(server_env, "--no-cache", fixture, server=False)
    assert "server running" not in server_status(server_env)
    first = lint(server_env, "--cache-dir", cache, "--start-server", fixture)
    # The command itself ran here, with the same result.
    assert (first.returncode, first.stdout, first.stderr) == (here.returncode, here.stdout, here.stderr)
    assert "0 command(s) answered" in wait_until_running(server_env)
    # Before any command of its own, it holds what that run read, parsed and tested.
    wait_until_held(server_env)
    assert not list(Path(server_env[client.DIR_VAR]).glob(".*-*"))  # every listing taken
    before = served(server_env)
    second = lint(server_env, "--cache-dir", cache, "--start-server", fixture)
    assert (second.returncode, second.stdout, second.stderr) == (here.returncode, here.stdout, here.stderr)
    assert served(server_env) == before + 2  # that server answered it (and this status query)
    assert len(list(Path(server_env[client.DIR_VAR]).glob("*.sock"))) == 1


def test_start_server_does_not_retry_a_server_that_just_failed(server_env):
    fixture = "fixtures/rcl1xx/global_int_counter.py"
    directory = Path(server_env[client.DIR_VAR])
    log = Path(client.socket_path(str(directory))[: -len(".sock")] + ".log")
    log.write_text("recompile-lint: error: cannot listen at /somewhere: File name too long\n", encoding="utf-8")
    here = lint(server_env, "--no-cache", fixture, server=False)
    got = lint(server_env, "--no-cache", "--start-server", fixture)
    assert (got.returncode, got.stdout) == (here.returncode, here.stdout)
    assert "warning: the server did not start: recompile-lint: error: cannot listen" in got.stderr and str(log) in got.stderr
    time.sleep(1)
    assert "server running" not in server_status(server_env)
    # Once the failure is old, it tries again.
    old = time.time() - 3600
    os.utime(log, (old, old))
    again = lint(server_env, "--no-cache", "--start-server", fixture)
    assert "warning" not in again.stderr, again.stderr
    wait_until_running(server_env)
    assert log.read_text(encoding="utf-8") == ""  # the old failure is past


def test_start_server_from_the_environment_and_never_where_servers_are_off(server_env, tmp_path):
    """The user's RECOMPILE_LINT_START_SERVER=1 (a project's own start-server key is ignored:
    test_security_outputs)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (project / "good.py").write_text("import torch\n\n\n@torch.compile\ndef f(x):\n    return x + 1\n", encoding="utf-8")
    wanted = {**server_env, START_SERVER_VAR: "1"}
    off = lint(wanted, "--no-cache", "good.py", cwd=project, server=False)
    assert off.returncode == 0, off.stderr
    time.sleep(1)
    assert "server running" not in server_status(server_env)
    on = lint(wanted, "--no-cache", "good.py", cwd=project)
    assert (on.returncode, on.stdout) == (off.returncode, off.stdout)
    wait_until_running(server_env)


def test_a_directory_others_can_enter_is_never_trusted(tmp_path):
    open_directory = tmp_path / "open"
    open_directory.mkdir()
    open_directory.chmod(0o755)
    assert not client.private_directory(str(open_directory))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = str(open_directory / "x.sock")
    listener.bind(path)
    listener.listen(1)
    try:
        assert client.connect(path) is None
    finally:
        listener.close()
    open_directory.chmod(0o700)
    assert client.private_directory(str(open_directory))


def test_the_fingerprint_follows_the_installed_code(tmp_path, monkeypatch):
    first = client.fingerprint()
    assert client.fingerprint() == first
    module = Path(client.__file__)
    stat = module.stat()
    try:
        os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        assert client.fingerprint() != first
    finally:
        os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert client.fingerprint() == first


def test_stop_ends_a_busy_server(server_env):
    """A stop that lands while the server forks for other commands still ends it (a signal
    handler that raised could see its exception swallowed by an at-fork hook)."""
    path = client.socket_path(server_env[client.DIR_VAR])
    for _ in range(3):
        start(server_env)
        busy = [
            subprocess.Popen([sys.executable, "-m", "recompile_lint", "--version"], env=server_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(8)
        ]
        stopped = lint(server_env, "server", "stop")
        for process in busy:
            process.wait(timeout=120)
        assert stopped.returncode == 0, stopped.stderr
        assert not os.path.exists(path)


def test_the_fingerprint_is_the_same_whichever_name_starts_the_interpreter():
    """``python`` and ``python3`` of one environment are one installation: a server started
    through the script (``python3`` in its first line) answers ``python -m recompile_lint``."""
    here = Path(sys.executable)
    names = [here.with_name(name) for name in ("python", "python3", f"python3.{sys.version_info[1]}") if here.with_name(name).exists()]
    if len(names) < 2:
        pytest.skip("one name only for this interpreter")
    said = {
        subprocess.run([str(name), "-c", "from recompile_lint.frontends import client; print(client.fingerprint())"], capture_output=True, text=True, check=True).stdout
        for name in names
    }
    assert len(said) == 1, said


def test_a_server_that_does_not_answer_is_an_error_not_a_hang(server_env, monkeypatch, capsys):
    """A socket whose server never takes the command (stopped, swamped): a clear error, exit 2."""
    directory = server_env[client.DIR_VAR]
    monkeypatch.setenv(client.DIR_VAR, directory)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(client.socket_path(directory))
    listener.listen(1)  # connections queue, nobody accepts them
    monkeypatch.setattr(client, "ANSWER_TIMEOUT", 0.5)
    import signal

    before = signal.getsignal(signal.SIGINT)
    try:
        assert client.ask_server(["recompile-lint", "--version"]) == 2
        assert signal.getsignal(signal.SIGINT) is before  # the caller's handlers are back
    finally:
        listener.close()
        os.unlink(client.socket_path(directory))
    assert "the server did not answer within 0.5 s" in capsys.readouterr().err
