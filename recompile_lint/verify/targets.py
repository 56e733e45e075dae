"""Which module to import for a finding, and from which ``sys.path`` root (no torch here).

A finding's ``region`` is the dotted name of the compiled entry point (``pkg.mod.poly``,
``pkg.mod.Net.forward``); its ``path`` is the file holding the flagged line, which for an
inlined helper is another module. The module to import is the region's: it is searched for
next to the finding's file and in the directories above it, longest module name first.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from recompile_lint.models import Finding

MAX_LEVELS = 8


@dataclass(frozen=True, order=True)
class ImportTarget:
    """A module the child imports: ``sys.path`` root, dotted name, and its file."""

    root: str
    module: str
    file: str


def _module_file(directory: Path, parts: list[str]) -> Path | None:
    base = directory.joinpath(*parts)
    for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def import_target(finding: Finding) -> ImportTarget | None:
    """Where the region of ``finding`` is defined; None when no file matches its name."""
    parts = [p for p in finding.region.split(".") if p]
    if len(parts) < 2:
        return None
    try:
        start = Path(finding.path).resolve().parent
    except OSError:
        return None
    directories = [start, *start.parents][:MAX_LEVELS]
    for directory in directories:
        for k in range(len(parts) - 1, 0, -1):
            found = _module_file(directory, parts[:k])
            if found is not None:
                return ImportTarget(str(directory), ".".join(parts[:k]), str(found))
    return None


def module_of_path(path: str) -> ImportTarget | None:
    """The module a file is, with the directory above its top package as the root."""
    try:
        file = Path(path).resolve()
    except OSError:
        return None
    if file.suffix != ".py" or not file.is_file():
        return None
    parts = [] if file.name == "__init__.py" else [file.stem]
    directory = file.parent
    while (directory / "__init__.py").is_file() and directory.parent != directory:
        parts.insert(0, directory.name)
        directory = directory.parent
    if not parts:
        return None
    return ImportTarget(str(directory), ".".join(parts), str(file))


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _find_def(body: list[ast.stmt], name: str) -> ast.stmt | None:
    """The last definition of ``name`` in a block (the one a module ends up with)."""
    found = None
    for node in body:
        if isinstance(node, _DEFS) and node.name == name:
            found = node
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            nested = _find_def([*getattr(node, "body", []), *getattr(node, "orelse", []),
                                *getattr(node, "finalbody", [])], name)
            found = nested or found
    return found


@lru_cache(maxsize=256)
def _region_line(file: str, qualname: str, stamp: tuple[int, int]) -> int:  # stamp: the file's version
    try:
        tree = ast.parse(Path(file).read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return 0
    body: list[ast.stmt] = tree.body
    node: ast.stmt | None = None
    for part in qualname.split("."):
        node = _find_def(body, part)
        if node is None:
            return 0
        body = node.body
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return 0
    # A decorated function's code object starts at its first decorator.
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def region_location(finding: Finding) -> tuple[str, int] | None:
    """The file of ``finding``'s region and the first line of its code object (where Dynamo's
    ``Recompiling function f in file:line`` points), read from the source; None when unknown."""
    target = import_target(finding)
    if target is None or not finding.region.startswith(target.module + "."):
        return None
    try:
        info = os.stat(target.file)
    except OSError:
        return None
    line = _region_line(target.file, finding.region[len(target.module) + 1:], (info.st_mtime_ns, info.st_size))
    return (target.file, line) if line else None
