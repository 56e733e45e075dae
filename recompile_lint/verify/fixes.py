"""``verify --fix``: run each finding's probe on the fixed code, keep the fixes it proves.

The fixes (``recompile_lint.fixes``) are applied to a copy of the import root of each fixed
finding's region (its Python files only, in a temporary folder), and the finding's probe runs
there as it ran on the original. A fix is **proven** when the probe compiled more than one
graph (or confirmed the finding) on the original and exactly one graph, without reaching the
limit, on the fixed copy. Only proven fixes are written to the project; the others are
dropped, with what the probe saw. Nothing runs in this process (no torch here).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from recompile_lint.fixes import apply
from recompile_lint.fixes.base import Fix
from recompile_lint.models import Finding
from recompile_lint.verify.results import Verdict, Verification, VerifiedFinding
from recompile_lint.verify.targets import import_target, module_of_path

# A copy larger than this is not made: the fix is then not proven (the folder is named).
MAX_COPY_FILES = 5_000
MAX_COPY_BYTES = 64 * 1024 * 1024
SKIPPED_FOLDERS = {"__pycache__", "node_modules", "site-packages"}


@dataclass(frozen=True)
class FixProof:
    """One fix and what the probe said before and after it."""

    finding: Finding
    fix: Fix
    proven: bool
    before: Verification | None
    after: Verification | None
    detail: str

    def to_dict(self) -> dict[str, object]:
        return {
            "path": apply.display(self.finding.path),
            "line": self.finding.line,
            "code": self.finding.code,
            "fix": self.fix.fixer,
            "title": self.fix.title,
            "safe": self.fix.safe,
            "proven": self.proven,
            "graphs_before": self.before.graphs if self.before else None,
            "graphs_after": self.after.graphs if self.after else None,
            "detail": self.detail,
        }


def _key(finding: Finding) -> tuple[str, int, int, str]:
    return os.path.normpath(os.path.abspath(finding.path)), finding.line, finding.column, finding.code


def _root_of(finding: Finding) -> str | None:
    target = import_target(finding) if finding.region else module_of_path(finding.path)
    return target.root if target is not None else None


def _copy_root(root: str, into: str) -> None:
    """The ``.py`` files under ``root`` copied to ``into`` (links, hidden folders and virtual
    environments left out); raises ``OSError`` past the limits."""
    files = size = 0
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(
            name for name in subfolders
            if not name.startswith(".") and name not in SKIPPED_FOLDERS
            and not os.path.islink(os.path.join(folder, name))
            and not os.path.exists(os.path.join(folder, name, "pyvenv.cfg"))
        )
        relative = os.path.relpath(folder, root)
        for name in names:
            if not name.endswith(".py"):
                continue
            source = os.path.join(folder, name)
            info = os.lstat(source)
            if not stat.S_ISREG(info.st_mode):
                continue
            files += 1
            size += info.st_size
            if files > MAX_COPY_FILES or size > MAX_COPY_BYTES:
                raise OSError(f"{root} holds more than {MAX_COPY_FILES:,} Python files or {MAX_COPY_BYTES // 2**20} MiB: not copied")
            target = os.path.join(into, relative, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(source, target)


def _moved_to(finding: Finding, root: str, copy: str) -> Finding:
    def where(path: str) -> str:
        absolute = os.path.realpath(path)
        inside = os.path.relpath(absolute, root)
        return path if inside.startswith(os.pardir) else os.path.join(copy, inside)

    evidence = tuple(dataclasses.replace(location, path=where(location.path)) for location in finding.evidence)
    return dataclasses.replace(finding, path=where(finding.path), evidence=evidence)


def _proof(finding: Finding, fix: Fix, before: Verification | None, after: Verification | None) -> FixProof:
    def shown(v: Verification | None) -> str:
        if v is None:
            return "not probed"
        graphs = f"{v.graphs} graph{'s' if v.graphs != 1 else ''}" + (", recompile_limit reached" if v.limit_hit else "")
        return f"{v.verdict.value}, {graphs}" + (f": {v.detail}" if v.detail and v.verdict in (Verdict.UNVERIFIABLE, Verdict.NOT_EXERCISED) else "")

    recompiled = before is not None and (before.verdict is Verdict.CONFIRMED or before.graphs > 1)
    one_graph = after is not None and after.graphs == 1 and not after.limit_hit and after.verdict is not Verdict.CONFIRMED
    if not recompiled:
        detail = f"not proven: the probe showed no recompile before the fix ({shown(before)})"
    elif not one_graph:
        detail = f"dropped: under the fix the probe saw {shown(after)} (before: {shown(before)})"
    else:
        detail = f"proven: one graph under the fix (before: {shown(before)})"
    return FixProof(finding, fix, recompiled and one_graph, before, after, detail)


def prove_fixes(
    verified: Sequence[VerifiedFinding],
    paths: Sequence[str],
    unsafe: bool,
    probe: Callable[[Sequence[Finding]], list[VerifiedFinding]],
) -> tuple[list[FixProof], list[tuple[str, str]]]:
    """(a proof for every fix of ``verified``'s findings, (path, why) for what was not made).
    ``probe`` runs the verifier on findings (``verify_findings`` with the run's options)."""
    findings = [item.finding for item in verified]
    before = {_key(item.finding): item.verification for item in verified}
    allowed = apply.within(paths)
    planned = apply.plan(findings, unsafe=unsafe, allowed=allowed)
    problems = list(planned.problems)
    proofs: list[FixProof] = []
    if not planned.applied:
        return proofs, problems
    changed = planned.changed()
    by_root: dict[str, list[tuple[Finding, Fix]]] = {}
    for finding, fix in planned.applied:
        root = _root_of(finding)
        if root is None or any(os.path.relpath(os.path.realpath(p), root).startswith(os.pardir) for p in fix.paths):
            proofs.append(FixProof(finding, fix, False, before.get(_key(finding)), None, "not proven: the fix edits a file outside the module's import root"))
            continue
        by_root.setdefault(root, []).append((finding, fix))
    for root, items in sorted(by_root.items()):
        with tempfile.TemporaryDirectory(prefix="recompile-lint-fix-") as scratch:
            copy = os.path.join(scratch, "root")
            try:
                os.makedirs(copy)
                _copy_root(root, copy)
                for path, text in changed.items():
                    inside = os.path.relpath(os.path.realpath(path), root)
                    if not inside.startswith(os.pardir):
                        Path(copy, inside).write_text(text, encoding="utf-8")
            except OSError as exc:
                for finding, fix in items:
                    proofs.append(FixProof(finding, fix, False, before.get(_key(finding)), None, f"not proven: the project could not be copied ({exc})"))
                continue
            moved = [_moved_to(planned.moved(finding) or finding, root, copy) for finding, _ in items]
            results = probe(moved)
            for (finding, fix), result in zip(items, results):
                proofs.append(_proof(finding, fix, before.get(_key(finding)), result.verification))
    return proofs, problems


def apply_proven(proofs: Sequence[FixProof], paths: Sequence[str], unsafe: bool) -> tuple[list[str], list[tuple[str, str]]]:
    """Write the proven fixes; (the files written, (path, why) for those that were not)."""
    proven = [proof.finding for proof in proofs if proof.proven]
    if not proven:
        return [], []
    planned = apply.plan(proven, unsafe=unsafe, allowed=apply.within(paths))
    return apply.write(planned)


def render_proofs(proofs: Sequence[FixProof], written: Sequence[str]) -> list[str]:
    """The report's lines: each fix with its proof, then what was written."""
    lines = ["", "Fixes:"]
    for proof in proofs:
        kind = "safe" if proof.fix.safe else "unsafe"
        lines.append(f"  {apply.display(proof.finding.path)}:{proof.finding.line}: {proof.finding.code} {proof.fix.fixer} ({kind}): {proof.detail}")
    proven = sum(1 for proof in proofs if proof.proven)
    lines.append(f"{proven} of {len(proofs)} fix{'es' if len(proofs) != 1 else ''} proven; {len(written)} file{'s' if len(written) != 1 else ''} written")
    return lines
