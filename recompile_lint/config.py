"""Settings: defaults, ``[tool.recompile-lint]`` in ``pyproject.toml``, command-line overrides."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from recompile_lint.source import DEFAULT_MAX_FILE_BYTES, SourceError, read_regular

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git",
    ".hg",
    ".svn",
    ".tox",
    ".nox",
    ".venv",
    "venv",
    ".env",
    "env",
    ".eggs",
    "*.egg-info",
    "build",
    "dist",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".recompile-lint-cache",
    "node_modules",
    "site-packages",
)

ROOT_MARKERS: tuple[str, ...] = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


class ConfigError(Exception):
    """An invalid setting; the message names the file and the key."""


@dataclass(frozen=True)
class VerifyConfig:
    """Settings of ``recompile-lint verify`` (``[tool.recompile-lint.verify]``)."""

    timeout: float = 120.0
    device: str = "cpu"
    backend: str = "eager"
    calls: int = 12
    # "module.function" -> Python expression building the positional arguments (a tuple).
    examples: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Config:
    """Everything that changes what a run reports. Immutable; build variants with ``replace``."""

    select: tuple[str, ...] = ()  # empty: every rule whose severity is not info
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    extend_exclude: tuple[str, ...] = ()
    # Dotted names of callables that wrap torch.compile: their first argument becomes a region.
    compile_functions: tuple[str, ...] = ()
    max_depth: int = 6
    jobs: int = 1
    # Files larger than this many bytes are reported, not parsed (``max-file-size``, in MiB).
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    cache: bool = True
    cache_dir: str | None = None
    # Start a resident server after a run that found none (``recompile-lint server``). Only
    # the user sets it (``--start-server``, ``RECOMPILE_LINT_START_SERVER=1``): a project's
    # own ``start-server`` key is ignored, with a notice (a checkout must not leave a process
    # running on the machine that lints it).
    start_server: bool = False
    # Directory walks skip what .gitignore files ignore (``gitignore``), as ruff does.
    respect_gitignore: bool = True
    # Directory of the pyproject.toml the settings came from (None: defaults only).
    source: str | None = None
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    # One line each about settings of the file that were read but not applied, for the front
    # end to show (they change nothing a run reports).
    notices: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def with_overrides(self, **changes: Any) -> "Config":
        """A copy with the non-None values of ``changes`` applied (command-line options)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


_LIST_KEYS = {
    "select": "select",
    "extend-select": "extend_select",
    "ignore": "ignore",
    "exclude": "exclude",
    "extend-exclude": "extend_exclude",
    "compile-functions": "compile_functions",
}
_VERIFY_KEYS = {"timeout", "device", "backend", "calls", "examples"}


# The user's own setting for ``--start-server`` (there is no user configuration file).
START_SERVER_VAR = "RECOMPILE_LINT_START_SERVER"


def start_server_from_environment() -> bool | None:
    """``RECOMPILE_LINT_START_SERVER``: True for 1/true/yes, False for 0/false/no, None unset."""
    value = os.environ.get(START_SERVER_VAR, "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    return None


# A pyproject.toml larger than this is not a configuration file (a link to a device, a planted
# blob): it is an error rather than read.
MAX_CONFIG_BYTES = 16 * 1024 * 1024
_TABLE_MARK = b"tool.recompile-lint"


def config_root(paths: Iterable[str | Path]) -> str:
    """The project root configuration is read from, for ``paths``: the nearest directory at or
    above their common directory that holds a project marker (``pyproject.toml``,
    ``setup.py``, ``setup.cfg``, ``.git``), else that common directory. Nothing above it is
    ever read (a ``pyproject.toml`` above a checkout's ``.git`` belongs to someone else)."""
    starts = [_start(raw) for raw in paths if os.path.lexists(raw)] or [os.getcwd()]
    try:
        common = os.path.commonpath(starts)
    except ValueError:  # paths on different drives
        common = starts[0]
    directory = common
    while True:
        if any(os.path.lexists(os.path.join(directory, marker)) for marker in ROOT_MARKERS):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return common
        directory = parent


def _start(raw: str | Path) -> str:
    # abspath, not resolve: a symbolic link loop named on the command line must not raise.
    path = os.path.abspath(raw)
    return path if os.path.isdir(path) else os.path.dirname(path)


def find_pyproject(paths: Iterable[str | Path]) -> Path | None:
    """The closest ``pyproject.toml`` with a ``[tool.recompile-lint]`` table from the first of
    the paths up to their project root (``config_root``), never above it.

    A ``pyproject.toml`` on the way that cannot be read, or that holds our table but does
    not decode or parse, is a ``ConfigError`` naming it (``load_config`` reports a broken
    one): settings that are there must never be silently dropped."""
    paths = list(paths)
    root = config_root(paths)
    seen: set[str] = set()
    for raw in [p for p in paths if os.path.lexists(p)] or [os.getcwd()]:
        directory = _start(raw)
        if os.path.relpath(directory, root).startswith(".."):
            directory = root
        while directory not in seen:
            seen.add(directory)
            candidate = os.path.join(directory, "pyproject.toml")
            if os.path.lexists(candidate) and _holds_our_table(candidate, root):
                return Path(candidate)
            if directory == root:
                break
            directory = os.path.dirname(directory)
    return None


def _holds_our_table(candidate: str, within: str) -> bool:
    """Whether the ``pyproject.toml`` at ``candidate`` holds our table (True also for a broken
    one that seems to, so that ``load_config`` reports it). Raises ConfigError when it
    cannot be read."""
    data = read_config_file(candidate, within)
    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        # A broken file that holds our table is ours to report (load_config does); an
        # unrelated broken pyproject must not stop the search.
        return _TABLE_MARK in data
    tool = parsed.get("tool")
    return isinstance(tool, dict) and "recompile-lint" in tool


def read_config_file(path: str | Path, within: str | None = None, follow_links: bool = False) -> bytes:
    """The bytes of a configuration file: a regular file (never a pipe or device, which could
    block or never end), of at most ``MAX_CONFIG_BYTES``, not through a symbolic link unless
    its target is inside ``within`` (the project root) or ``follow_links`` (a file the user
    named) says so (``source.read_regular``). Raises ConfigError naming it."""
    try:
        return read_regular(str(path), MAX_CONFIG_BYTES, within, follow_links)
    except SourceError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc


def _string_list(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{where}: expected a string or a list of strings, got {value!r}")


def parse_table(table: Mapping[str, Any], where: str) -> Config:
    """Turn a ``[tool.recompile-lint]`` table into a Config; unknown keys are errors."""
    from recompile_lint.codes import validate_codes

    config = Config(source=None)
    changes: dict[str, Any] = {}
    for key, value in table.items():
        at = f"{where}: [tool.recompile-lint] {key}"
        if key in _LIST_KEYS:
            items = _string_list(value, at)
            if key in {"select", "extend-select", "ignore"}:
                bad = validate_codes(items)
                if bad:
                    raise ConfigError(f"{at}: unknown rule code or prefix {', '.join(bad)}")
            changes[_LIST_KEYS[key]] = items
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{at}: expected a table of pattern = [codes]")
            pairs = []
            for pattern, codes in value.items():
                items = _string_list(codes, f"{at}.{pattern}")
                bad = validate_codes(items)
                if bad:
                    raise ConfigError(f"{at}.{pattern}: unknown rule code or prefix {', '.join(bad)}")
                pairs.append((pattern, items))
            changes["per_file_ignores"] = tuple(pairs)
        elif key == "max-depth":
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"{at}: expected a non-negative integer, got {value!r}")
            changes["max_depth"] = value
        elif key == "jobs":
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"{at}: expected a non-negative integer (0: one per core), got {value!r}")
            changes["jobs"] = value
        elif key == "max-file-size":
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value <= 1024 * 1024:
                raise ConfigError(f"{at}: expected a positive number of MiB, got {value!r}")
            changes["max_file_bytes"] = int(value * 1024 * 1024)
        elif key == "cache-dir":
            if not isinstance(value, str):
                raise ConfigError(f"{at}: expected a path string, got {value!r}")
            changes["cache_dir"] = value
        elif key == "cache":
            if not isinstance(value, bool):
                raise ConfigError(f"{at}: expected true or false, got {value!r}")
            changes["cache"] = value
        elif key == "start-server":
            if not isinstance(value, bool):
                raise ConfigError(f"{at}: expected true or false, got {value!r}")
            if value:
                # A repository may not start a resident process on the machine that lints it.
                changes["notices"] = changes.get("notices", ()) + (
                    f"{at} is ignored: a project cannot start a resident server; "
                    f"use --start-server or {START_SERVER_VAR}=1",
                )
        elif key == "respect-gitignore":
            if not isinstance(value, bool):
                raise ConfigError(f"{at}: expected true or false, got {value!r}")
            changes["respect_gitignore"] = value
        elif key == "verify":
            changes["verify"] = _parse_verify(value, at)
        else:
            raise ConfigError(f"{at}: unknown setting")
    return replace(config, **changes)


def _parse_verify(value: Any, at: str) -> VerifyConfig:
    if not isinstance(value, dict):
        raise ConfigError(f"{at}: expected a table")
    out: dict[str, Any] = {}
    for key, item in value.items():
        here = f"{at}.{key}"
        if key not in _VERIFY_KEYS:
            raise ConfigError(f"{here}: unknown setting")
        if key == "timeout":
            if not isinstance(item, (int, float)) or isinstance(item, bool) or item <= 0:
                raise ConfigError(f"{here}: expected a positive number of seconds, got {item!r}")
            out["timeout"] = float(item)
        elif key == "calls":
            if not isinstance(item, int) or isinstance(item, bool) or item < 2:
                raise ConfigError(f"{here}: expected an integer of at least 2, got {item!r}")
            out["calls"] = item
        elif key in {"device", "backend"}:
            if not isinstance(item, str):
                raise ConfigError(f"{here}: expected a string, got {item!r}")
            out[key] = item
        elif key == "examples":
            if not isinstance(item, dict) or not all(isinstance(v, str) for v in item.values()):
                raise ConfigError(f"{here}: expected a table of \"module.function\" = \"python expression\"")
            out["examples"] = tuple(sorted(item.items()))
    return VerifyConfig(**out)


def load_config(paths: Iterable[str | Path], explicit: str | Path | None = None) -> Config:
    """The configuration for linting ``paths``: an explicit file, the closest pyproject in their
    project (``find_pyproject``), or defaults."""
    paths = list(paths)
    pyproject = Path(explicit) if explicit else find_pyproject(paths)
    if pyproject is None:
        return Config()
    data = read_config_file(pyproject, config_root(paths), follow_links=bool(explicit))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{pyproject}: cannot read: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{pyproject}: invalid TOML: {exc}") from exc
    tool = parsed.get("tool", {})
    table = tool.get("recompile-lint", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.recompile-lint] must be a table")
    config = parse_table(table, str(pyproject))
    source = os.path.realpath(pyproject.parent)
    if config.cache_dir is not None:
        # A repository's configuration may not make the cache write elsewhere: the cache
        # directory must be inside the project (the command line's --cache-dir is the user's
        # own choice, and may point anywhere).
        project = os.path.realpath(source if explicit else config_root(paths))
        chosen = os.path.realpath(os.path.join(source, config.cache_dir))
        if not _inside(chosen, project):
            raise ConfigError(
                f"{pyproject}: [tool.recompile-lint] cache-dir: {config.cache_dir!r} is outside the project "
                f"({project}); only --cache-dir on the command line may name a directory elsewhere"
            )
        config = replace(config, cache_dir=chosen)
    return replace(config, source=source)


def _inside(path: str, directory: str) -> bool:
    try:
        return os.path.commonpath([path, directory]) == directory
    except ValueError:
        return False
