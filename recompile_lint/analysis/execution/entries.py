"""What the execution stage runs: the files that drive compiled code.

An entry is a file run as ``__main__`` (its top level, its ``if __name__ == "__main__":``
block), and then, in that run's state, each of its functions that calls something in a loop
and has not run yet (parameters unknown), and its ``test_*`` functions. Files are entries when
they compile something or, by their text, may import a module that does and drive it.
Library code no entry calls gets no evidence.
"""

from __future__ import annotations

import ast

from recompile_lint.analysis.index import ProjectIndex
from recompile_lint.analysis.regions import CompiledRegion


# Text a driver has: a ``__main__`` block, a test, a loop.
_DRIVES = ("__main__", "def test_", "for ", "while ")


def entry_files(index: ProjectIndex, regions: list[CompiledRegion]) -> list[str]:
    """Files that compile something, and files that name a module that does and run a
    ``__main__`` block, tests or loops."""
    compiling = {region.site_path for region in regions} | {region.entry.path for region in regions}
    names = set()
    for path in compiling:
        module = index.module_names.get(path, "")
        if module:
            names.add(module.rsplit(".", 1)[-1])
    out = sorted(compiling)
    for path in index.paths:
        if path in compiling:
            continue
        text = index.text(path)
        if not text or not any(marker in text for marker in _DRIVES):
            continue
        if any(name in text for name in names):
            out.append(path)
    return out


def driver_functions(tree: ast.Module) -> tuple[str, ...]:
    """Module-level functions that call something inside a loop, and ``test_*`` functions."""
    found = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.FunctionDef):
            continue
        if stmt.name.startswith("test_") or _calls_in_loop(stmt):
            found.append(stmt.name)
    return tuple(found)


def _calls_in_loop(fn: ast.FunctionDef) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.While)) and any(isinstance(inner, ast.Call) for stmt in node.body for inner in ast.walk(stmt)):
            return True
    return False
