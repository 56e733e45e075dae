"""Settings: defaults, ``[tool.recompile-lint]`` in ``pyproject.toml``, command-line overrides."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

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
    cache: bool = True
    cache_dir: str | None = None
    # Start a resident server after a run that found none (``recompile-lint server``).
    start_server: bool = False
    # Directory walks skip what .gitignore files ignore (``gitignore``), as ruff does.
    respect_gitignore: bool = True
    # Directory of the pyproject.toml the settings came from (None: defaults only).
    source: str | None = None
    verify: VerifyConfig = field(default_factory=VerifyConfig)

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


def find_pyproject(paths: Iterable[str | Path]) -> Path | None:
    """The nearest ``pyproject.toml`` with a ``[tool.recompile-lint]`` table above the paths."""
    seen: set[Path] = set()
    for raw in paths:
        start = Path(raw).resolve()
        for directory in [start, *start.parents]:
            if directory in seen:
                break
            seen.add(directory)
            candidate = directory / "pyproject.toml"
            if candidate.is_file():
                try:
                    text = candidate.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                try:
                    data = tomllib.loads(text)
                except tomllib.TOMLDecodeError:
                    # A broken file that holds our table is ours to report (load_config does);
                    # an unrelated broken pyproject must not stop the search.
                    if "[tool.recompile-lint" in text:
                        return candidate
                    continue
                if "recompile-lint" in data.get("tool", {}):
                    return candidate
    return None


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
            changes["start_server"] = value
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
    """The configuration for linting ``paths``: an explicit file, the nearest pyproject, or defaults."""
    pyproject = Path(explicit) if explicit else find_pyproject(paths)
    if pyproject is None:
        return Config()
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{pyproject}: cannot read: {exc}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{pyproject}: invalid TOML: {exc}") from exc
    table = data.get("tool", {}).get("recompile-lint", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.recompile-lint] must be a table")
    config = parse_table(table, str(pyproject))
    return replace(config, source=str(pyproject.parent.resolve()))
