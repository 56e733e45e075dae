"""flake8 front end: ``flake8 --select RCL`` reports what ``recompile-lint`` reports.

flake8 calls the plugin once per file. The findings come from the same function the CLI
calls (``engine.lint_paths``), with every rule enabled: flake8's own ``--select``,
``--extend-select``, ``--ignore``, ``--per-file-ignores`` and ``# noqa`` decide what is shown.
Rules whose severity is ``info`` are added to flake8's default ignore list, so a plain
``flake8`` run shows what a plain ``recompile-lint`` run shows, and ``--select RCL`` or
``--extend-select RCL107`` turns them on.

As in the CLI, a finding whose own file flake8 was not asked to check (pre-commit names only
the changed files) is reported in a file it checks that holds another of the finding's
locations (the write that makes compiled code recompile), worded from there.

Invalid settings give each checked file one ``RCL000`` diagnostic at line 1, not an exception
that would end flake8's run and the other plugins' output with it.

flake8 is not a dependency: this module imports nothing from it.
"""

from __future__ import annotations

import ast
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Iterator, Sequence

from recompile_lint import __version__
from recompile_lint.config import Config, ConfigError, load_config
from recompile_lint.discovery import marked_project_root
from recompile_lint.engine import lint_buffer_alone, lint_paths, project_scope
from recompile_lint.models import Finding, Severity
from recompile_lint.source import SourceError, decode_source, read_bytes

# flake8's names for standard input; such a file is not on disk.
STDIN_NAMES = frozenset({"stdin", "-", "<stdin>"})

# The code of the one diagnostic an invalid ``[tool.recompile-lint]`` table gives a file (not a
# rule: nothing was checked).
CONFIG_ERROR_CODE = "RCL000"


def config_error_text(exc: ConfigError) -> str:
    """The error on one line, with control characters escaped (it quotes the repository's
    configuration)."""
    text = " ".join(str(exc).split())
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def flake8_config(config: Config) -> Config:
    """The project's settings with selection left to flake8: every rule on, nothing ignored.

    Excludes are cleared too: flake8 already chose to check the file it hands over. Parsing
    stays in-process: flake8 already runs one worker per core.
    """
    return replace(config, select=("ALL",), extend_select=(), ignore=(), per_file_ignores=(), exclude=(), extend_exclude=(), jobs=1)


def _normalise(text: str) -> str:
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _stat_key(path: str) -> tuple[str, int, int]:
    try:
        stat = os.stat(path)
    except OSError:
        return (path, -1, -1)
    return (path, stat.st_mtime_ns, stat.st_size)


@dataclass(frozen=True)
class ProjectListing:
    """The Python files of one project, and what they and their folders looked like."""

    root: str
    files: tuple[str, ...]  # absolute paths
    # (path, mtime_ns, size) of every file and of every folder holding one: a folder's mtime
    # changes when a file is added to it or removed from it.
    fingerprint: tuple[tuple[str, int, int], ...]

    @classmethod
    def build(cls, root: str, files: Sequence[str]) -> "ProjectListing":
        absolute = tuple(sorted({os.path.abspath(p) for p in files}))
        folders = sorted({os.path.dirname(p) for p in absolute} | {root})
        return cls(root=root, files=absolute, fingerprint=tuple(_stat_key(p) for p in (*folders, *absolute)))

    def is_current(self) -> bool:
        return all(_stat_key(entry[0]) == entry for entry in self.fingerprint)


# Listings of marked projects by (root, settings that choose the files), with the flake8 run
# that last found them current: flake8 asks for every file it checks, and walking the whole
# project each time (or even checking every file's mtime) cost more than the analysis.
_LISTINGS: dict[tuple[str, tuple[str, ...], bool], tuple[ProjectListing, int]] = {}
# The flake8 run this process is in (``parse_options`` counts them; 0: not in one, a caller
# of ``findings_for``). Within one run the files are what flake8 read at its start.
_RUN = [0]
# Whether this flake8 run checks files in several worker processes (``-j``).
_PARALLEL = [False]


def list_project(path: str, config: Config) -> ProjectListing:
    """The project the engine's analysis sees for ``path``: its root and Python files (a
    marked project's listing is walked once, and kept while no file or folder of it changed;
    within one flake8 run it is not checked again)."""
    excludes = config.exclude + config.extend_exclude
    marked = marked_project_root([path], excludes)
    if marked is None:
        root, files = project_scope([path], config)
        return ProjectListing.build(root, files)
    key = (str(marked), tuple(excludes), config.respect_gitignore)
    kept = _LISTINGS.get(key)
    if kept is not None and ((_RUN[0] and kept[1] == _RUN[0]) or kept[0].is_current()):
        _LISTINGS[key] = (kept[0], _RUN[0])
        return kept[0]
    root, files = project_scope([path], config)
    listing = ProjectListing.build(root, files)
    _LISTINGS[key] = (listing, _RUN[0])
    return listing


class ProjectMemo:
    """Findings of the files flake8 checks in a project, computed once per flake8 process
    and reused per file.

    The analysis of one file already covers the whole project (regions, callers, mutation
    sites), so linting all the files flake8 was given costs about what linting one does; the
    files it was not given are read for the analysis but not linted. An entry is
    dropped as soon as a project file changes (mtime or size), a file is added to or removed
    from a folder of the project, or the settings change.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[str, Config, tuple[str, ...] | None], tuple[ProjectListing, dict[str, tuple[Finding, ...]]]] = {}

    def lookup(self, listing: ProjectListing, config: Config, named: Sequence[str] | None = None) -> tuple[ProjectListing, dict[str, tuple[Finding, ...]]]:
        """(listing, findings by absolute path) of the files of the project ``listing``
        describes that flake8 checks (``named``; None: all of them), fresh. Linted as
        ``recompile-lint NAMED`` lints them: a finding whose own file is not among them is
        reported in those that hold another of its locations."""
        key = (listing.root, config, tuple(named) if named is not None else None)
        entry = self._entries.get(key)
        if entry is not None and entry[0].files == listing.files and (entry[0] is listing or entry[0].is_current()):
            return entry
        # A file under a project of its own (a nested ``pyproject.toml``) is asked for with that
        # project's listing: linting it here too would analyse it twice.
        excludes = config.exclude + config.extend_exclude
        roots: dict[str, str | None] = {}

        def own_root(path: str) -> str | None:
            folder = os.path.dirname(path)
            if folder not in roots:
                marked = marked_project_root([folder], excludes)
                roots[folder] = str(marked) if marked is not None else None
            return roots[folder]

        checked = [path for path in listing.files if is_named(path, named) and own_root(path) in (listing.root, None)]
        result = None
        if checked:
            with one_worker_at_a_time(config, listing.root, checked[0]):
                result = _lint(checked, config, listing.files)
        by_path: dict[str, list[Finding]] = {path: [] for path in checked}
        for finding in result.findings if result is not None else ():
            by_path.setdefault(os.path.abspath(finding.path), []).append(finding)
        entry = (listing, {path: tuple(items) for path, items in by_path.items()})
        self._entries[key] = entry
        return entry


# One memo per process: flake8 creates a plugin object per file, and each worker process
# checks many files of the same project.
_MEMO = ProjectMemo()


@contextmanager
def one_worker_at_a_time(config: Config, root: str, first: str) -> Iterator[None]:
    """Hold the facts cache directory's lock while analysing a project: flake8's worker
    processes (``-j``, one per core) each need the same analysis, and the ones that wait for
    the first find its result in the run cache instead of making it again. Without a cache
    (``cache = false``) or file locks, each makes its own; with one process (``-j 1``, or not
    in a flake8 run) there is no one to wait for."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on POSIX
        yield
        return
    run_cache = None
    if config.cache and _PARALLEL[0]:
        from recompile_lint.engine import make_cache

        facts_cache = make_cache(config, root)
        run_cache = facts_cache.run_cache(first) if facts_cache is not None else None
    fd = None
    if run_cache is not None:
        try:
            fd = os.open(run_cache.directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0))
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # closing the descriptor releases the lock


def _lint(paths: Sequence[str], config: Config, project_files: Sequence[str], buffers: dict[str, bytes] | None = None):
    # flake8 applies # noqa itself (and honours --disable-noqa). A run of one file reports
    # there what the file's changes cause elsewhere, as the CLI does.
    return lint_paths(list(paths), config, project_files=list(project_files), buffers=buffers, noqa=False, relocate=True)


def is_named(path: str, named: Sequence[str] | None) -> bool:
    """Whether flake8 was asked to check ``path``: it or a folder above it was named (every
    file is, when the names are unknown)."""
    if named is None:
        return True
    absolute = os.path.abspath(path)
    return any(absolute == name or absolute.startswith(name.rstrip(os.sep) + os.sep) for name in named)


def findings_for(filename: str, lines: Sequence[str] | None = None, named: Sequence[str] | None = None) -> tuple[Finding, ...]:
    """The findings the CLI reports for ``filename`` with every rule selected.

    ``lines`` is the text flake8 checks (an editor's unsaved buffer, or standard input);
    when it differs from the file on disk, the buffer is what gets linted. ``named``: the
    absolute paths flake8 was given (None: unknown, every file counts as named).
    """
    buffer = _normalise("".join(lines)) if lines is not None else None
    if filename in STDIN_NAMES or not os.path.isfile(filename):
        return _lint_detached(filename, buffer or "")
    base = _settings_for(filename)
    config = flake8_config(base)
    absolute = os.path.abspath(filename)
    listing = list_project(filename, base)

    if buffer is not None and buffer != _disk_text(absolute):
        files = sorted(set(listing.files) | {absolute})
        return _lint([absolute], config, files, {absolute: buffer.encode("utf-8")}).findings

    listing, findings = _MEMO.lookup(listing, config, named)
    if absolute in findings:
        return findings[absolute]
    # A file outside the project's listing (excluded, or beyond the root), or one flake8 was
    # not given by that name: lint it alone.
    return _lint([absolute], config, sorted(set(listing.files) | {absolute})).findings


# Settings by folder, within one flake8 run (``_RUN``): the files of a folder share them.
_SETTINGS: dict[tuple[int, str], Config] = {}


def _settings_for(filename: str) -> Config:
    """``load_config([filename])``, once per folder in a flake8 run (a ConfigError is raised
    again for each file: each gets its diagnostic)."""
    if not _RUN[0]:
        return load_config([filename])
    key = (_RUN[0], os.path.dirname(os.path.abspath(filename)))
    config = _SETTINGS.get(key)
    if config is None:
        if len(_SETTINGS) > 10_000 or any(run != _RUN[0] for run, _ in list(_SETTINGS)[:1]):
            _SETTINGS.clear()
        config = _SETTINGS[key] = load_config([filename])
    return config


def _disk_text(path: str) -> str | None:
    try:
        return decode_source(read_bytes(path), path)
    except SourceError:
        return None


def _lint_detached(filename: str, text: str) -> tuple[Finding, ...]:
    """Standard input (or a buffer with no file behind it): lint it as a one-file project."""
    config = flake8_config(load_config([os.getcwd()]))
    return lint_buffer_alone(filename, text.encode("utf-8"), config, noqa=False).findings


def info_codes() -> list[str]:
    """Codes of rules that are off unless selected (severity ``info``)."""
    from recompile_lint.rules import all_rules

    return [rule.code for rule in all_rules() if rule.severity is Severity.INFO]


class RecompileLintPlugin:
    """flake8 tree plugin (entry point ``RCL``): one ``RCLxxx`` error per finding."""

    name = "recompile-lint"
    version = __version__
    # The paths flake8 was given (``parse_options``): a finding of a file outside them is
    # reported in a file inside them that holds one of its locations. flake8 hands options to
    # a plugin only through this class method, so they are kept on the class.
    named: ClassVar[tuple[str, ...] | None] = None

    def __init__(self, tree: ast.AST, filename: str, lines: Sequence[str]) -> None:
        # ``tree`` is unused (the engine reads the project itself), but flake8 runs tree
        # plugins only on files it could parse, which keeps syntax errors flake8's (E999).
        self.filename = filename
        # Invalid settings are this plugin's problem only: an exception would end the whole
        # flake8 run, other plugins' results with it. The file gets one diagnostic instead.
        self.config_error = ""
        # The analysis raises the recursion limit for deep code; the other plugins of this
        # process must find the interpreter as flake8 left it.
        limit = sys.getrecursionlimit()
        try:
            self.findings = findings_for(filename, lines, self.named)
        except ConfigError as exc:
            self.findings = ()
            self.config_error = config_error_text(exc)
        finally:
            sys.setrecursionlimit(limit)

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        """Keep info rules off by default, as in the CLI; ``--select``/``--extend-select`` win."""
        codes = info_codes()
        if codes:
            option_manager.extend_default_ignore(codes)

    @classmethod
    def parse_options(cls, options: Any) -> None:
        """Remember the paths flake8 checks (``.``, a folder, or the changed files)."""
        names = [name for name in getattr(options, "filenames", None) or [] if name not in STDIN_NAMES]
        cls.named = tuple(os.path.abspath(name) for name in names) if names else None
        _RUN[0] += 1  # a new run: what earlier ones listed is checked again
        jobs = getattr(options, "jobs", None)
        count = getattr(jobs, "n_jobs", jobs)
        _PARALLEL[0] = bool(getattr(jobs, "is_auto", False)) or (isinstance(count, int) and count > 1)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        if self.config_error:
            yield 1, 0, f"{CONFIG_ERROR_CODE} invalid recompile-lint settings, this file was not checked: {self.config_error}", type(self)
        for finding in self.findings:
            # flake8 columns are 0-based and it prints column + 1: the CLI's 1-based column.
            yield finding.line, max(finding.column - 1, 0), f"{finding.code} {finding.message} ({finding.name})", type(self)
