"""The resident server's process (``server.start`` runs ``python -m`` this module): the server
loop of ``server``, running the command line's commands (``cli.run_in_server``)."""

from __future__ import annotations

import sys

from recompile_lint.frontends import cli, server

if __name__ == "__main__":
    argv = sys.argv[1:]
    sys.exit(
        server.serve(
            argv[0],
            float(argv[1]) if len(argv) > 1 else server.IDLE_TIMEOUT,
            argv[2] if len(argv) > 2 else None,
            command=cli.run_in_server,
        )
    )
