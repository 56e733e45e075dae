"""Which files a run lints: paths and directories, recursively, minus excludes."""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

from recompile_lint.models import FileError

PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass(frozen=True)
class Discovered:
    """The files to lint (as the user would write them) and the paths that failed."""

    files: tuple[str, ...]
    errors: tuple[FileError, ...]
    excluded: int = 0  # files named explicitly that an exclude pattern skipped


def is_excluded(path: str, patterns: Iterable[str]) -> bool:
    """Whether any path component, or the path itself, matches an exclude pattern."""
    normalized = path.replace(os.sep, "/")
    parts = [p for p in normalized.split("/") if p not in ("", ".")]
    patterns = tuple(patterns)
    component = _component_matcher(patterns)
    if component is not None and any(component.match(os.path.normcase(part)) for part in parts):
        return True
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if "/" in pattern:
            if fnmatch.fnmatch(normalized, pattern) or fnmatch.fnmatch(normalized, f"*/{pattern}") or fnmatch.fnmatch(normalized, f"{pattern}/*") or fnmatch.fnmatch(normalized, f"*/{pattern}/*"):
                return True
    return False


@lru_cache(maxsize=64)
def _component_matcher(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regular expression for every pattern without a ``/`` (matched per path component,
    as ``fnmatch.fnmatch`` would match each: a file walk asks this for every file)."""
    simple = [os.path.normcase(p.rstrip("/")) for p in patterns if p.rstrip("/") and "/" not in p.rstrip("/")]
    if not simple:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in simple))


def relative_to(path: str, root: str | None) -> str:
    """``path`` relative to ``root`` (components above the root never match an exclude)."""
    absolute = os.path.abspath(path)
    if root:
        try:
            rel = os.path.relpath(absolute, root)
        except ValueError:
            return os.path.basename(absolute)
        if not rel.startswith(".."):
            return rel
    return os.path.basename(absolute)


def discover(paths: Sequence[str], excludes: Sequence[str], root: str | None = None) -> Discovered:
    """Expand ``paths`` into Python files, sorted and de-duplicated; errors for bad paths.

    Exclude patterns match the part of a path below ``root`` (the project root), so a tree
    that lives inside a virtual environment can still be linted when named explicitly.
    """
    files: list[str] = []
    errors: list[FileError] = []
    seen: set[str] = set()
    excluded = 0

    def add(path: str) -> None:
        key = os.path.normcase(os.path.abspath(path))
        if key not in seen:
            seen.add(key)
            files.append(path)

    for raw in paths:
        path = os.path.normpath(raw) if raw not in ("", ".") else "."
        if not os.path.lexists(path):
            errors.append(FileError(path=raw, message="no such file or directory"))
            continue
        if os.path.isdir(path):
            if not os.access(path, os.R_OK | os.X_OK):
                errors.append(FileError(path=raw, message="permission denied: cannot list directory"))
                continue
            for found in _walk(path, excludes, errors, root):
                add(found)
            continue
        if not os.path.exists(path):
            errors.append(FileError(path=raw, message="broken symbolic link"))
            continue
        if not os.path.isfile(path):
            # A named pipe or device would block or never end when read.
            errors.append(FileError(path=raw, message="not a regular file"))
            continue
        if is_excluded(relative_to(path, root), excludes):
            # Excludes hold for named files too, so a pre-commit run (which names the changed
            # files) skips what the configuration excludes.
            excluded += 1
            continue
        # A file named explicitly is linted whatever its suffix is: the user asked for it.
        add(path)
    return Discovered(files=tuple(sorted(files)), errors=tuple(errors), excluded=excluded)


def _walk(top: str, excludes: Sequence[str], errors: list[FileError], root: str | None) -> list[str]:
    found: list[str] = []

    def onerror(exc: OSError) -> None:
        errors.append(FileError(path=getattr(exc, "filename", top) or top, message=f"cannot list directory: {exc.strerror or exc}"))

    # followlinks=False: a symlink loop cannot make the walk run forever.
    for dirpath, dirnames, filenames in os.walk(top, onerror=onerror):
        dirnames[:] = sorted(d for d in dirnames if not is_excluded(relative_to(os.path.join(dirpath, d), root), excludes))
        for name in sorted(filenames):
            if not name.endswith(PYTHON_SUFFIXES):
                continue
            full = os.path.join(dirpath, name)
            if is_excluded(relative_to(full, root), excludes):
                continue
            if os.path.isdir(full) or (os.path.exists(full) and not os.path.isfile(full)):
                # Directories named like modules, pipes and devices are not source files.
                continue
            if os.path.islink(full) and not os.path.exists(full):
                errors.append(FileError(path=full, message="broken symbolic link"))
                continue
            found.append(full)
    return found


def marked_project_root(paths: Sequence[str], excludes: Sequence[str] = ()) -> Path | None:
    """The nearest ancestor of the paths holding a project marker (``pyproject.toml``,
    ``setup.py``, ``setup.cfg``, ``.git``), or None when there is none.

    A marker above a directory that the project itself excludes (a tree inside ``.venv`` or
    ``site-packages`` named explicitly) does not make that directory part of the project.
    """
    from recompile_lint.config import ROOT_MARKERS

    resolved = [Path(os.path.abspath(p)) for p in paths if os.path.lexists(p)] or [Path.cwd()]
    starts = [p if p.is_dir() else p.parent for p in resolved]
    common = Path(os.path.commonpath([str(s) for s in starts]))
    for directory in [common, *common.parents]:
        if any((directory / marker).exists() for marker in ROOT_MARKERS):
            if any(p.is_dir() and is_excluded(relative_to(str(p), str(directory)), excludes) for p in resolved):
                return None
            return directory
    return None


def find_project_root(paths: Sequence[str], excludes: Sequence[str] = ()) -> Path:
    """The marked project root of the paths, else their common directory."""
    marked = marked_project_root(paths, excludes)
    if marked is not None:
        return marked
    resolved = [Path(os.path.abspath(p)) for p in paths if os.path.lexists(p)] or [Path.cwd()]
    return Path(os.path.commonpath([str(p if p.is_dir() else p.parent) for p in resolved]))
