"""``recompile-lint server start | stop | status``: the resident server (see ``server``)."""

from __future__ import annotations

import sys

import click

from recompile_lint.frontends import client


@click.group("server")
def server() -> None:
    """Keep a resident server that answers every ``recompile-lint`` command of this installation.

    \b
    With a server running, a command skips the linter's start-up (imports alone take
    0.3-0.5 s) and reads the facts of projects linted before from memory: content it has
    linted before is answered at once, a new edit still costs its analysis. Output and exit
    status are the same as without it. Set RECOMPILE_LINT_NO_SERVER=1 to bypass it.
    """


@server.command("start")
@click.option("--idle-timeout", type=click.FloatRange(min=1), default=30 * 60, show_default=True, help="Seconds without a command after which the server ends.")
def start(idle_timeout: float) -> None:
    """Start the server in the background (nothing to do when one already runs)."""
    from recompile_lint.frontends import server as resident

    path = client.socket_path()
    pid, problem = resident.start(path, idle_timeout)
    if pid is None:
        click.echo(f"recompile-lint: error: {problem}", err=True)
        sys.exit(2)
    click.echo(f"recompile-lint server running (pid {pid}, socket {path})")


@server.command("stop")
def stop() -> None:
    """Stop this installation's server (the one this installation's commands are handed to).

    Servers of other installations, versions or environments of yours, whose sockets share
    the directory, are left running: each is stopped by its own `recompile-lint server stop`
    (or ends after its idle timeout).
    """
    from recompile_lint.frontends import server as resident

    import glob
    import os

    path = client.socket_path()
    done = resident.stop(path)
    if done is None:
        click.echo("recompile-lint: no server of this installation was running")
    elif done:
        click.echo(f"recompile-lint: server stopped (socket {path})")
    else:
        click.echo(f"recompile-lint: error: the server at {path} did not stop", err=True)
        sys.exit(2)
    others = [other for other in glob.glob(os.path.join(glob.escape(os.path.dirname(path)), "*.sock")) if other != path]
    if others:
        # Another environment's, or this one's from before its code changed (a new fingerprint).
        click.echo(
            f"recompile-lint: {len(others)} other socket(s) in {os.path.dirname(path)} left alone: servers of other "
            "installations (or of this one before its code changed) end after their idle timeout"
        )


@server.command("status")
def status() -> None:
    """Say whether a server runs, and what it holds. Exit status 1 when none runs."""
    from recompile_lint.frontends import server as resident

    found = resident.status(client.socket_path())
    if found is None:
        click.echo("recompile-lint: no server is running")
        sys.exit(1)
    click.echo(
        f"recompile-lint server running (pid {found['pid']}, socket {found['socket']}): "
        f"{found['served']} command(s) answered, {found['resident']} cache entries, {found.get('snippets', 0)} parsed snippets and {found.get('tests', 0)} text-test results in memory, "
        f"ends after {found['idle_timeout']:g} s idle"
    )
