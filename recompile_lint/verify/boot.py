"""How the verifier's processes are started and what they share (names only, no logic).

The command lines of the supervisor and of a freshly started child, and the environment
variables they pass down; kept apart so that ``runner``, ``supervisor`` and ``child`` can all
read them without importing each other.
"""

from __future__ import annotations

import sys
from pathlib import Path

import recompile_lint

MARKER_VAR = "RECOMPILE_LINT_VERIFY_CHILD"  # set in every child: found even outside its group
SUPERVISOR_VAR = "RECOMPILE_LINT_VERIFY_SUPERVISOR"  # the supervisor's pid, for spawned children
OUTPUT_TAIL_BYTES = 16 * 1024  # the end of a child's output kept for error messages

_PACKAGE_PARENT = str(Path(recompile_lint.__file__).resolve().parent.parent)
# Drop the working directory from sys.path (``-c`` adds it) and make the package importable
# even when it is not installed, without exposing its own directory to the user's imports.
_PATH = (
    "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
    f"sys.path.insert(0, {_PACKAGE_PARENT!r}); "
)
CHILD_BOOT = _PATH + "from recompile_lint.verify.child import main; main()"
SUPERVISOR_BOOT = _PATH + "from recompile_lint.verify.supervisor import main; main()"


def child_command(job_path: str) -> list[str]:
    """The command line of a freshly started child (spawn lanes)."""
    return [sys.executable, "-B", "-c", CHILD_BOOT, job_path]
