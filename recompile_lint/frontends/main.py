"""The ``recompile-lint`` script: hand the command to a resident server when one runs (``client``),
else run it here (``cli``). Imported first by every invocation: standard library basics only."""

from __future__ import annotations

import sys

from recompile_lint.frontends import client


def run() -> None:
    """Entry point of the ``recompile-lint`` script and of ``python -m recompile_lint``."""
    argv = sys.argv[1:]
    if client.server_wanted(argv):
        code = client.ask_server(sys.argv)
        if code is not None:
            sys.exit(code)
    from recompile_lint.frontends.cli import run as run_here

    run_here()
