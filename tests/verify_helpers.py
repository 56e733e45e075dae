"""Shared pieces of the verifier tests: hand-built findings, tree checksums, process scans."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from recompile_lint.models import Boundedness, Finding, Severity, Subject

VERIFY_DATA = Path(__file__).parent / "verify_data"


def make_finding(path: Path | str, line: int, code: str, region: str, subject: Subject | None,
                 function: str = "") -> Finding:
    """A finding as the linter would report it, for probes the rules do not (yet) produce."""
    return Finding(
        path=str(path), line=line, column=1, code=code, end_line=line, end_column=2,
        name="hand-built", severity=Severity.ERROR, bounded=Boundedness.UNBOUNDED,
        message="hand-built finding", region=region, function=function or region, subject=subject,
    )


def line_of(path: Path, text: str) -> int:
    """1-based number of the first line of ``path`` containing ``text``."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


def tree_digest(root: Path) -> dict[str, str]:
    """Path -> sha256 of every file under ``root`` (directories like __pycache__ included)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            out[os.path.relpath(os.path.join(dirpath, name), root) + "/"] = "dir"
        for name in filenames:
            full = os.path.join(dirpath, name)
            out[os.path.relpath(full, root)] = hashlib.sha256(Path(full).read_bytes()).hexdigest()
    return out


def processes_with(marker: str) -> list[int]:
    """Pids whose command line mentions ``marker`` (this test process excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found
