"""Real-code sweep: lint every ``.py`` of the installed torch package and of the Python
standard library with every rule selected, and count what a user would trip over.

Usage::

    python bench/sweep.py                      # torch + stdlib, text summary
    python bench/sweep.py --tree torch         # one tree only
    python bench/sweep.py --path DIR           # any directory (repeatable)
    python bench/sweep.py --json sweep.json    # also write the numbers as JSON
    python bench/sweep.py --findings           # list every finding, not only counts

It reports, per tree: files linted, findings per code, file errors (files the linter could not
read or parse: expected in the stdlib, which ships deliberately broken test files) and internal
errors (exceptions escaping the engine). Internal errors must be zero; the exit status is 1
when there are any.

Each tree is linted in one ``lint_paths`` call, with the tree's files as the project, the way
a user runs ``recompile-lint <tree>``. When that call raises, the tree is linted again in
halves, recursively, down to the single files that still raise on their own, so every
internal error is attributed to a file (or, if it only happens with more context, to the
smallest chunk that still shows it). torch is located with ``importlib.util.find_spec``:
nothing here imports torch or any linted code.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import sysconfig
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from recompile_lint.config import Config
from recompile_lint.discovery import discover
from recompile_lint.engine import lint_paths
from recompile_lint.models import LintResult

# Every rule, info included; no excludes (the trees live under site-packages, a default exclude),
# no cache (the sweep must not write into the trees or depend on an earlier run).
SWEEP_CONFIG = Config(select=("RCL",), exclude=("__pycache__",), cache=False)


@dataclass(frozen=True)
class InternalError:
    """An exception that escaped ``lint_paths``, with the smallest input that still raises."""

    paths: tuple[str, ...]
    error: str
    where: str  # innermost frame of the linter: file:line in function


@dataclass
class TreeReport:
    """What linting one tree produced."""

    name: str
    root: str
    files: int = 0
    findings: Counter = field(default_factory=Counter)
    file_errors: list[str] = field(default_factory=list)
    internal_errors: list[InternalError] = field(default_factory=list)
    seconds: float = 0.0
    # ``path:line:column: CODE [severity]`` of every finding, for reading them (--findings).
    finding_lines: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "root": self.root,
            "files": self.files,
            "findings": dict(sorted(self.findings.items())),
            "file_errors": self.file_errors,
            "internal_errors": [e.__dict__ for e in self.internal_errors],
            "seconds": round(self.seconds, 1),
            "finding_lines": self.finding_lines,
        }


def torch_root() -> str | None:
    """The installed torch package directory, found without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def stdlib_root() -> str:
    return sysconfig.get_paths()["stdlib"]


def tree_files(root: str) -> tuple[str, ...]:
    """The ``.py`` files of a tree; for the stdlib, without the packages installed into it."""
    excludes = ("__pycache__", "site-packages", "dist-packages") if root == stdlib_root() else ("__pycache__",)
    return tuple(f for f in discover([root], excludes).files if f.endswith(".py"))


def where(exc: BaseException) -> str:
    """The innermost frame of the linter in a traceback, as ``file:line in function``."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "recompile_lint" in f.filename]
    frame = frames[-1] if frames else traceback.extract_tb(exc.__traceback__)[-1]
    return f"{os.path.relpath(frame.filename)}:{frame.lineno} in {frame.name}"


def lint(files: Sequence[str], config: Config) -> LintResult:
    """Lint ``files`` as a project of their own."""
    return lint_paths(list(files), config, project_files=list(files))


def attribute(files: Sequence[str], config: Config, exc: BaseException) -> list[InternalError]:
    """Split a raising chunk until single files raise on their own."""
    if len(files) == 1:
        return [InternalError(tuple(files), f"{type(exc).__name__}: {exc}", where(exc))]
    half = len(files) // 2
    found: list[InternalError] = []
    for part in (files[:half], files[half:]):
        try:
            lint(part, config)
        except Exception as inner:  # noqa: BLE001 - counting crashes is the point
            found.extend(attribute(part, config, inner))
    if not found:
        # It needs files from both halves to happen: blame the chunk.
        found.append(InternalError(tuple(files), f"{type(exc).__name__}: {exc}", where(exc)))
    return found


def sweep_tree(name: str, root: str, config: Config = SWEEP_CONFIG) -> TreeReport:
    """Lint one tree as a whole; attribute any internal error to files."""
    report = TreeReport(name=name, root=root)
    files = tree_files(root)
    report.files = len(files)
    start = time.perf_counter()
    try:
        result = lint(files, config)
    except Exception as exc:  # noqa: BLE001 - counting crashes is the point
        print(f"{name}: internal error {type(exc).__name__}: {exc} ({where(exc)}); attributing...", file=sys.stderr)
        report.internal_errors = attribute(list(files), config, exc)
    else:
        report.findings = Counter(f.code for f in result.findings)
        report.finding_lines = [f"{os.path.relpath(f.path, root)}:{f.line}:{f.column}: {f.code} [{f.severity}]" for f in result.findings]
        report.file_errors = [f"{os.path.relpath(e.path, root)}: {e.message}" for e in result.errors]
        report.files = result.files_checked
    report.seconds = time.perf_counter() - start
    return report


def render(reports: Sequence[TreeReport], show_findings: bool = False) -> str:
    lines = []
    for r in reports:
        total = sum(r.findings.values())
        lines.append(f"{r.name} ({r.root})")
        lines.append(f"  files: {r.files}   wall time: {r.seconds:.1f} s")
        lines.append(f"  findings: {total}" + ("".join(f"\n    {code}: {n}" for code, n in sorted(r.findings.items()))))
        if show_findings:
            lines.extend(f"      {line}" for line in r.finding_lines)
        lines.append(f"  file errors: {len(r.file_errors)}" + "".join(f"\n    {e}" for e in r.file_errors[:20]))
        if len(r.file_errors) > 20:
            lines.append(f"    ... {len(r.file_errors) - 20} more")
        lines.append(f"  internal errors: {len(r.internal_errors)}")
        for e in r.internal_errors:
            shown = ", ".join(os.path.relpath(p, r.root) for p in e.paths[:3]) + (" ..." if len(e.paths) > 3 else "")
            lines.append(f"    {shown}: {e.error} at {e.where}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", choices=("torch", "stdlib"), action="append", help="which tree(s) to sweep (default: both)")
    parser.add_argument("--path", action="append", default=[], help="sweep this directory as well (repeatable)")
    parser.add_argument("--json", dest="json_out", help="write the report as JSON to this file")
    parser.add_argument("--findings", action="store_true", help="list every finding, not only the counts")
    args = parser.parse_args(argv)

    trees: list[tuple[str, str]] = []
    wanted = args.tree or ([] if args.path else ["torch", "stdlib"])
    if "torch" in wanted:
        root = torch_root()
        if root is None:
            parser.error("torch is not installed in this interpreter; use --tree stdlib or --path")
        trees.append(("torch", root))
    if "stdlib" in wanted:
        trees.append(("stdlib", stdlib_root()))
    trees.extend((os.path.basename(os.path.normpath(p)) or p, os.path.abspath(p)) for p in args.path)

    reports = []
    for name, root in trees:
        report = sweep_tree(name, root)
        reports.append(report)
        print(render([report], args.findings), end="", flush=True)
    internal = sum(len(r.internal_errors) for r in reports)
    print(f"total: {sum(r.files for r in reports)} files, {sum(sum(r.findings.values()) for r in reports)} findings, "
          f"{sum(len(r.file_errors) for r in reports)} file errors, {internal} internal errors, "
          f"{sum(r.seconds for r in reports):.1f} s")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as handle:
            json.dump([r.to_dict() for r in reports], handle, indent=2)
            handle.write("\n")
    return 1 if internal else 0


if __name__ == "__main__":
    sys.exit(main())
