"""Pieces several rules share: dotted names of libcst nodes and the wording of places."""

from __future__ import annotations

import os
from typing import Iterable

import libcst as cst

from recompile_lint.analysis.risks import RECOMPILE_LIMIT

__all__ = ["RECOMPILE_LIMIT", "dotted", "place", "places", "display_path", "via"]


def dotted(node: cst.BaseExpression) -> str:
    """``a.b.c`` for Name/Attribute chains, else ``""``."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return ""


def place(path: str, line: int) -> str:
    return f"{display_path(path)}:{line}"


def places(items: Iterable[tuple[str, int]], limit: int = 3) -> str:
    """``a.py:3, b.py:9 (+1 more)``: distinct places in order, the first ``limit`` of them."""
    shown: list[str] = []
    for path, line in items:
        text = place(path, line)
        if text not in shown:
            shown.append(text)
    out = ", ".join(shown[:limit])
    if len(shown) > limit:
        out += f" (+{len(shown) - limit} more)"
    return out


def display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def via(ctx) -> str:
    """`` (in `helper`, inlined into compiled `poly`)`` for callees; ``""`` for the entry."""
    if ctx.is_entry:
        return f"compiled `{ctx.region.name}`"
    return f"`{ctx.qualified_name}`, which compiled `{ctx.region.name}` inlines,"


