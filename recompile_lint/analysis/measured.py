"""What torch measurably does per cell of the lab's grid, read from ``measured.json``.

The table is written by ``python -m recompile_lint.lab table`` from programs proven on torch
(see ``docs/lab.md``). A cell is (location, type, use, options, change), named with the lab's
grid values (``"global"``, ``"int"``, ``"arithmetic"``, ``"default"``, ``"every"``). The file is
read once, on the first question; a missing or unreadable table answers None everywhere, so the
linter falls back on its own model.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

TABLE = Path(__file__).resolve().parent / "measured.json"
FORMAT = 1


@functools.lru_cache(maxsize=1)
def _cells() -> dict[tuple[str, str, str, str, str], dict[str, Any]]:
    try:
        data = json.loads(TABLE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {}
    out = {}
    for row in data.get("cells", ()):
        try:
            key = (row["location"], row["type"], row["use"], row["options"], row["change"])
            if row["programs"] and row["tier"]:
                out[key] = row
        except (KeyError, TypeError):
            continue
    return out


def options_cell(dynamic: str | None, fullgraph: str | None) -> str:
    """The lab's name for a region's compile options (``default``, ``dynamic-true``,
    ``dynamic-false``, ``fullgraph``), from ``dynamic=`` and ``fullgraph=`` as written; "" for
    a combination the lab does not generate (``fullgraph`` with ``dynamic``, an unknown value)."""
    if fullgraph == "True":
        return "fullgraph" if dynamic in (None, "None") else ""
    return {None: "default", "None": "default", "True": "dynamic-true", "False": "dynamic-false"}.get(dynamic, "")


def cell(location: str, type_: str, use: str, options: str, change: str) -> dict[str, Any] | None:
    """The measured row of a cell (``tier``, ``tiers``, ``graphs``, ``limit``, ``limit_error``,
    ``guards``), or None when no program of the cell was proven."""
    return _cells().get((location, type_, use, options, change))


def behaviour(location: str, type_: str, use: str, options: str, change: str) -> tuple[str, int] | None:
    """``(tier, graphs)`` torch gave the cell: the tier most of its programs got (``unbounded``,
    ``bounded``, ``negative``) and the most graphs one code object compiled; None when the cell
    was not measured."""
    row = cell(location, type_, use, options, change)
    if row is None:
        return None
    return str(row["tier"]), int(row["graphs"][1])
