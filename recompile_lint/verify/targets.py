"""Which module to import for a finding, and from which ``sys.path`` root (no torch here).

A finding's ``region`` is the dotted name of the compiled entry point (``pkg.mod.poly``,
``pkg.mod.Net.forward``); its ``path`` is the file holding the flagged line, which for an
inlined helper is another module. The module to import is the region's: it is searched for
next to the finding's file and in the directories above it, longest module name first.
"""

from __future__ import annotations

from dataclasses import dataclass
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
