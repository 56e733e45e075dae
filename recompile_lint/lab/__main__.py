"""``python -m recompile_lint.lab table``: regenerate the measured table and its page."""

from __future__ import annotations

import sys

from recompile_lint.lab.cli import main

if __name__ == "__main__":
    sys.exit(main())
