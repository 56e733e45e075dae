"""``# noqa`` and ``# noqa: RCL101`` on the reported line, as flake8 and ruff read them."""

from __future__ import annotations

import re

# The same spelling flake8 accepts, so both front ends suppress the same findings.
NOQA = re.compile(r"# noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


def suppressed_codes(line_text: str) -> frozenset[str] | None:
    """None: no noqa; empty set: bare noqa (everything); else the codes named."""
    match = NOQA.search(line_text)
    if match is None:
        return None
    codes = match.group("codes")
    if not codes:
        return frozenset()
    return frozenset(c.upper() for c in re.split(r"[,\s]+", codes.strip()) if c)


def is_suppressed(code: str, line_text: str) -> bool:
    codes = suppressed_codes(line_text)
    if codes is None:
        return False
    # A noqa code may be a prefix (``# noqa: RCL1``), as flake8 accepts.
    return not codes or any(code.startswith(c) for c in codes)
