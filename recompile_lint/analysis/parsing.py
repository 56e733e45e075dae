"""One file on its own: the module name its path gives it, and what parsing its text raises."""

from __future__ import annotations

import ast
import os
import symtable
from functools import lru_cache

from recompile_lint.models import FileError


def module_name_for(path: str) -> tuple[str, bool, str]:
    """(dotted module name, is_package, sys.path root) of a file, from the packages around it."""
    # os.path rather than pathlib: this runs for every file of the project on every run.
    directory, name = os.path.split(os.path.abspath(path))
    stem = name.rsplit(".", 1)[0]
    is_package = stem == "__init__"
    packages, root = _packages_around(directory)
    parts = packages if is_package else (*packages, stem)
    return ".".join(parts), is_package, root


@lru_cache(maxsize=4096)
def _packages_around(directory: str) -> tuple[tuple[str, ...], str]:
    """(the package names from the root down to ``directory``, the root): the directories
    upwards that hold an ``__init__``. Asked for every file, answered once per directory
    (``forget_package_layout`` starts a run afresh)."""
    parts: list[str] = []
    while os.path.exists(os.path.join(directory, "__init__.py")) or os.path.exists(os.path.join(directory, "__init__.pyi")):
        parent, base = os.path.split(directory)
        parts.append(base)
        if parent == directory:
            break
        directory = parent
    return tuple(reversed(parts)), directory


def forget_package_layout() -> None:
    """Drop what ``module_name_for`` learnt of the directories (a new run may see new
    ``__init__`` files)."""
    _packages_around.cache_clear()


# What parsing raises on bad input: ast rejects some inputs with ValueError (NUL bytes), deep
# nesting recurses.
PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError)


def parse_error(path: str, exc: BaseException) -> FileError:
    """The error recorded for a file whose parse raised ``exc`` (one of ``PARSE_ERRORS``)."""
    if isinstance(exc, SyntaxError):
        return FileError(path=path, message=f"syntax error: {exc.msg}", line=exc.lineno or 0, column=exc.offset or 0)
    return FileError(path=path, message=f"cannot parse: {type(exc).__name__}: {exc}")


def syntax_error(path: str, text: str) -> FileError | None:
    """The error parsing ``text`` records (as ``ProjectIndex.facts`` would), or None.

    Checked by building the symbol table, which parses as ``ast.parse`` does without turning
    the tree into Python objects (about half the cost). It also rejects a few programs that
    parse (a misplaced ``nonlocal``): whatever it rejects is parsed again with ``ast``, and
    only ``ast``'s verdict counts.
    """
    try:
        symtable.symtable(text, path, "exec")
        return None
    except PARSE_ERRORS:
        pass
    try:
        compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except PARSE_ERRORS as exc:
        return parse_error(path, exc)
    return None
