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
    return _below(path, root) or os.path.basename(os.path.abspath(path))


def _below(path: str, root: str | None) -> str | None:
    """``path`` relative to ``root`` when it is inside it (``.`` for the root), else None."""
    if not root:
        return None
    try:
        rel = os.path.relpath(os.path.abspath(path), root)
    except ValueError:
        return None
    return None if rel.startswith("..") else rel


def discover(paths: Sequence[str], excludes: Sequence[str], root: str | None = None, respect_gitignore: bool = False) -> Discovered:
    """Expand ``paths`` into Python files, sorted and de-duplicated; errors for bad paths.

    Exclude patterns match the part of a path below ``root`` (the project root), so a tree
    that lives inside a virtual environment can still be linted when named explicitly.
    ``respect_gitignore``: a directory walk skips what ``.gitignore`` files ignore
    (``gitignore``); a file named explicitly is linted all the same.
    """
    files: list[str] = []
    errors: list[FileError] = []
    seen: set[str] = set()
    excluded = 0

    def add(path: str) -> None:
        key = os.path.normcase(os.path.abspath(path))
        if key not in seen:
            seen.add(key)
            if not _valid_name(path):
                # Its name could be neither reported nor cached as text: say which file it
                # is (escaped) and lint the others.
                errors.append(FileError(path=shown_name(path), message="the file name is not valid UTF-8: not linted (rename it)"))
                return
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
            for found in _walk(path, excludes, errors, root, respect_gitignore):
                add(found)
            continue
        if not os.path.exists(path):
            errors.append(FileError(path=raw, message="broken symbolic link"))
            continue
        if not os.path.isfile(path):
            # A named pipe or device would block or never end when read.
            errors.append(FileError(path=raw, message="not a regular file"))
            continue
        if _leaves(path, root):
            errors.append(FileError(path=raw, message=OUTSIDE))
            continue
        if is_excluded(relative_to(path, root), excludes):
            # Excludes hold for named files too, so a pre-commit run (which names the changed
            # files) skips what the configuration excludes.
            excluded += 1
            continue
        # A file named explicitly is linted whatever its suffix is: the user asked for it.
        add(path)
    return Discovered(files=tuple(sorted(files)), errors=tuple(errors), excluded=excluded)


def _walk(top: str, excludes: Sequence[str], errors: list[FileError], root: str | None, respect_gitignore: bool = False) -> list[str]:
    """The Python files under ``top``, as ``is_excluded(relative_to(file, root), excludes)``
    leaves them: each directory's place relative to the root is worked out once, and each
    entry's type comes from the directory listing (no ``stat`` for a regular file)."""
    found: list[str] = []
    patterns = tuple(excludes)
    component = _component_matcher(patterns)
    path_patterns = tuple(p.rstrip("/") for p in patterns if "/" in p.rstrip("/"))

    def excluded(rel_dir: str | None, name: str) -> bool:
        """``is_excluded(relative_to(path, root))`` of the entry ``name`` of a directory whose
        ancestors passed, at ``rel_dir`` below the root (None outside it: only the name counts)."""
        if rel_dir is None:
            return is_excluded(name, patterns)
        if component is not None and component.match(os.path.normcase(name)):
            return True
        if not path_patterns:
            return False
        return is_excluded(f"{rel_dir}/{name}" if rel_dir else name, path_patterns)

    def place(directory: str) -> tuple[str | None, bool]:
        """``directory`` relative to the root (None outside it), and whether a component of
        that relative path is excluded."""
        rel = _below(directory, root)
        if rel is None:
            return None, False
        rel = "" if rel == "." else rel.replace(os.sep, "/")
        hit = component is not None and any(component.match(os.path.normcase(part)) for part in rel.split("/") if part)
        return rel, hit

    from recompile_lint import gitignore

    # .gitignore rules in force in the directory and its place below the repository's top
    # (None: not respected, or no repository and no project root to start from).
    found_rules = gitignore.rules_for(top, root, errors) if respect_gitignore else None
    git_place = os.path.relpath(os.path.abspath(top), found_rules[1]).replace(os.sep, "/") if found_rules else ""
    git_place = "" if git_place == "." else git_place

    # Depth first in sorted order, never into symbolic links to directories (a link loop
    # cannot make the walk run forever).
    stack = [(top, *place(top), found_rules[0] if found_rules else None, git_place)]
    while stack:
        directory, rel_dir, dir_hit, rules, git_dir = stack.pop()
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except OSError as exc:
            errors.append(FileError(path=getattr(exc, "filename", directory) or directory, message=f"cannot list directory: {exc.strerror or exc}"))
            continue
        if rules is not None and directory != top and any(e.name == gitignore.FILE_NAME for e in entries):
            rules = rules.child(git_dir, gitignore.read_text(os.path.join(directory, gitignore.FILE_NAME), errors, found_rules[1] if found_rules else None))
        subdirectories = []
        for entry in sorted(entries, key=lambda e: e.name):
            name = entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if not dir_hit and not excluded(rel_dir, name) and not _is_link(entry) and not (rules and rules.ignored(f"{git_dir}/{name}" if git_dir else name, True)):
                    subdirectories.append(entry)
                continue
            if not name.endswith(PYTHON_SUFFIXES):
                continue
            if dir_hit or excluded(rel_dir, name) or (rules and rules.ignored(f"{git_dir}/{name}" if git_dir else name, False)):
                continue
            try:
                regular = entry.is_file()
            except OSError:
                regular = False
            if regular and _is_link(entry) and _leaves(entry.path, root):
                errors.append(FileError(path=entry.path, message=OUTSIDE))
            elif regular:
                found.append(entry.path)
            elif _is_link(entry) and not os.path.exists(entry.path):
                errors.append(FileError(path=entry.path, message="broken symbolic link"))
            # Anything else (a pipe, a device, a link to one) is not a source file.
        for entry in reversed(subdirectories):
            child_rel = None if rel_dir is None else (f"{rel_dir}/{entry.name}" if rel_dir else entry.name)
            stack.append((entry.path, child_rel, False, rules, f"{git_dir}/{entry.name}" if git_dir else entry.name))
    return found


# A source file that is a link to a file outside the project (``model.py ->
# ../private/train.py`` committed to a checkout) is neither read nor quoted: the error names
# the link only.
OUTSIDE = "a symbolic link to a file outside the project: not read"


def _leaves(path: str, root: str | None) -> bool:
    """Whether ``path`` is a symbolic link in the project ``root`` whose target is outside it
    (no root, or a link outside it already: nothing is left)."""
    from recompile_lint.source import is_inside

    return root is not None and os.path.islink(path) and _below(os.path.dirname(os.path.abspath(path)), root) is not None and not is_inside(path, root)


def _valid_name(path: str) -> bool:
    """Whether ``path`` is text (a name that is not valid UTF-8 holds surrogate escapes)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_name(path: str) -> str:
    """``path`` as text that can be printed: bytes that are not UTF-8 as ``\\xNN``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace") if not _valid_name(path) else path


def _is_link(entry: os.DirEntry) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def marked_project_root(paths: Sequence[str], excludes: Sequence[str] = ()) -> Path | None:
    """The nearest ancestor of the paths holding a project marker (``pyproject.toml``,
    ``setup.py``, ``setup.cfg``, ``.git``), or None when there is none.

    A marker above a directory that the project itself excludes (a tree inside ``.venv`` or
    ``site-packages`` named explicitly) does not make that directory part of the project.
    """
    from recompile_lint.config import ROOT_MARKERS

    # os.path, not pathlib: its queries answer False for a path they may not look at (a
    # directory without search permission), where pathlib raises.
    resolved = [Path(os.path.abspath(p)) for p in paths if os.path.lexists(p)] or [Path.cwd()]
    starts = [p if os.path.isdir(p) else p.parent for p in resolved]
    common = Path(os.path.commonpath([str(s) for s in starts]))
    for directory in [common, *common.parents]:
        if any(os.path.exists(directory / marker) for marker in ROOT_MARKERS):
            if any(os.path.isdir(p) and is_excluded(relative_to(str(p), str(directory)), excludes) for p in resolved):
                return None
            return directory
    return None


def find_project_root(paths: Sequence[str], excludes: Sequence[str] = ()) -> Path:
    """The marked project root of the paths, else their common directory."""
    marked = marked_project_root(paths, excludes)
    if marked is not None:
        return marked
    resolved = [Path(os.path.abspath(p)) for p in paths if os.path.lexists(p)] or [Path.cwd()]
    return Path(os.path.commonpath([str(p if os.path.isdir(p) else p.parent) for p in resolved]))
