"""``.gitignore`` rules, read and matched as git does, without running git.

A directory walk skips what the repository ignores (``respect-gitignore``, on by default, as
in ruff): the ``.gitignore`` of every directory from the repository's top down to the file,
and ``.git/info/exclude``. Within a file the last matching pattern wins; a deeper file's
patterns win over a shallower one's; ``!pattern`` re-includes. A file inside an ignored
directory stays ignored (the walk does not enter the directory, as git does not).
The user's global excludes file (``core.excludesFile``) is not read: that needs git's config.
Every file here is read with ``source.read_regular``: a link leaving the repository, a pipe,
a device or a file over ``MAX_IGNORE_BYTES`` is not read, and named in the run's errors.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

from recompile_lint.models import FileError
from recompile_lint.source import MAX_IGNORE_BYTES, SourceError, read_regular

FILE_NAME = ".gitignore"


@dataclass(frozen=True)
class Pattern:
    """One pattern of an ignore file, with the directory it is relative to."""

    base: str  # directory of the ignore file, relative to the repository top ("" for the top)
    regex: re.Pattern[str]
    negated: bool
    directory_only: bool


def parse(text: str, base: str = "") -> tuple[Pattern, ...]:
    """The patterns of an ignore file's text, in order."""
    out = []
    for raw in text.splitlines():
        pattern = _pattern(raw, base)
        if pattern is not None:
            out.append(pattern)
    return tuple(out)


def _pattern(raw: str, base: str) -> Pattern | None:
    line = raw.rstrip("\n\r")
    if not line or line.startswith("#"):
        return None
    # Trailing spaces are dropped unless escaped with a backslash.
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(line) > len(stripped):
        stripped += " "
    line = stripped
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    elif line.startswith("\\!") or line.startswith("\\#"):
        line = line[1:]
    directory_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    # A slash at the start or in the middle anchors the pattern to the file's directory;
    # otherwise it matches a name at any depth below it.
    anchored = "/" in line
    line = line.lstrip("/")
    body = _translate(line)
    regex = re.compile(body if anchored else f"(?:.*/)?{body}", re.DOTALL)
    return Pattern(base=base, regex=regex, negated=negated, directory_only=directory_only)


def _translate(glob: str) -> str:
    """A gitignore glob as a regular expression over a ``/``-separated relative path."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        char = glob[i]
        if glob.startswith("**/", i) and (i == 0 or glob[i - 1] == "/"):
            out.append("(?:.*/)?")  # zero or more directories
            i += 3
        elif glob.startswith("**", i) and i + 2 == n and (i == 0 or glob[i - 1] == "/"):
            out.append(".*")  # everything inside
            i += 2
        elif char == "*":
            while i < n and glob[i] == "*":
                i += 1  # other runs of stars are one star
            out.append("[^/]*")
            continue
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = _class_end(glob, i)
            if end < 0:
                out.append(re.escape(char))
                i += 1
                continue
            inner = glob[i + 1 : end]
            negate = inner[:1] in ("!", "^")
            if negate:
                inner = inner[1:]
            inner = inner.replace("\\", "\\\\")
            out.append(f"[{'^' if negate else ''}{inner}]")
            i = end + 1
        elif char == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def _class_end(glob: str, start: int) -> int:
    i = start + 1
    if i < len(glob) and glob[i] in "!^":
        i += 1
    if i < len(glob) and glob[i] == "]":
        i += 1
    end = glob.find("]", i)
    return end


class IgnoreRules:
    """The patterns that apply in one directory: its ancestors' and its own, in order."""

    def __init__(self, patterns: tuple[Pattern, ...] = ()) -> None:
        self.patterns = patterns

    def child(self, base: str, text: str | None) -> "IgnoreRules":
        """The rules of the subdirectory ``base`` whose ``.gitignore`` holds ``text``."""
        if not text:
            return self
        return IgnoreRules(self.patterns + parse(text, base))

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` (relative to the repository top, ``/``-separated) is ignored."""
        verdict = False
        for pattern in self.patterns:
            if pattern.directory_only and not is_dir:
                continue
            if pattern.base:
                if not path.startswith(pattern.base + "/"):
                    continue
                relative = path[len(pattern.base) + 1 :]
            else:
                relative = path
            if pattern.regex.fullmatch(relative):
                verdict = not pattern.negated
        return verdict

    def __bool__(self) -> bool:
        return bool(self.patterns)


def read_text(path: str, problems: list[FileError] | None = None, within: str | None = None) -> str | None:
    """The text of an ignore file or a git file (``source.read_regular``: no link leaving
    ``within`` followed, no pipe or device, at most ``MAX_IGNORE_BYTES``), or None when there
    is none or it cannot be read. A file that is there but not read is added to ``problems``
    with the reason: its patterns do not apply, and the run says so."""
    try:
        data = read_regular(path, MAX_IGNORE_BYTES, within)
    except SourceError as exc:
        if problems is not None and not isinstance(exc.__cause__, (FileNotFoundError, NotADirectoryError)):
            problems.append(FileError(path=path, message=f"not read ({exc}): the ignore patterns in it are not applied"))
        return None
    return data.decode("utf-8", errors="replace")


@lru_cache(maxsize=64)
def repository_top(directory: str) -> str | None:
    """The nearest directory at or above ``directory`` holding ``.git`` (a folder, or the file
    a worktree or submodule has), or None outside a repository."""
    current = os.path.abspath(directory)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _info_exclude(top: str, problems: list[FileError] | None = None) -> str | None:
    git = os.path.join(top, ".git")
    if not os.path.isdir(git):
        # A worktree or submodule: ``gitdir: <path>``; its shared part may be elsewhere
        # (``commondir``), where ``info/exclude`` lives. These are git's own files, outside
        # the checkout by design: any place they name is read, but only as ignore files are.
        text = read_text(git, problems) or ""
        if not text.startswith("gitdir:"):
            return None
        git = os.path.normpath(os.path.join(top, text[len("gitdir:") :].strip()))
        common = read_text(os.path.join(git, "commondir"), problems)
        if common:
            git = os.path.normpath(os.path.join(git, common.strip()))
    return read_text(os.path.join(git, "info", "exclude"), problems)


def rules_for(directory: str, root: str | None = None, problems: list[FileError] | None = None) -> tuple[IgnoreRules, str] | None:
    """The rules in force in ``directory`` (every ``.gitignore`` from the repository's top
    down to it, and ``info/exclude``), and the top they are relative to. Outside a repository
    the ``.gitignore`` files from ``root`` (the project root) down count. None when there is
    neither. An ignore file there but not read (``read_text``) is added to ``problems``."""
    directory = os.path.abspath(directory)
    top = repository_top(directory) or (os.path.abspath(root) if root else None)
    if top is None:
        return None
    relative = os.path.relpath(directory, top)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return None
    rules = IgnoreRules()
    if os.path.lexists(os.path.join(top, ".git")):
        rules = rules.child("", _info_exclude(top, problems))
    rules = rules.child("", read_text(os.path.join(top, FILE_NAME), problems, top))
    parts: list[str] = [] if relative == os.curdir else relative.split(os.sep)
    for depth in range(1, len(parts) + 1):
        base = "/".join(parts[:depth])
        rules = rules.child(base, read_text(os.path.join(top, *parts[:depth], FILE_NAME), problems, top))
    return rules, top

