"""Applying fixes to a project: which fix each finding gets, the texts they make, the diff.

Findings are fixed one after another on the current text of their files, so that two fixes
of one file (two values made dynamic sources) both land: a later finding's lines are moved
by the edits made above it, and a finding whose line an earlier fix rewrote waits for the
next round (the caller lints again and fixes what is left). Only files the caller allows
(those under the linted paths) are read or changed.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from dataclasses import dataclass, field
from typing import Callable, Iterable

from recompile_lint.fixes import attempt
from recompile_lint.fixes.base import Edit, Fix, apply_edits
from recompile_lint.fixes.files import FileFixError, SourceFile, read_source, write_source
from recompile_lint.models import Finding


@dataclass
class Plan:
    """What fixing a set of findings does: the fixes chosen, the new texts, what was not done."""

    applied: list[tuple[Finding, Fix]] = field(default_factory=list)
    unsafe_available: list[tuple[Finding, Fix]] = field(default_factory=list)  # not applied: --unsafe-fixes
    deferred: int = 0  # findings on lines an earlier fix rewrote: fixed in the next round
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    sources: dict[str, SourceFile] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    shifts: dict[str, list[list[Edit]]] = field(default_factory=dict)  # the edits made, per file, in order

    def moved(self, finding: Finding) -> Finding | None:
        """``finding`` with its lines where the fixed text has them (None: a fix rewrote its line)."""
        return _moved(_normalized(finding), self.shifts)

    def changed(self) -> dict[str, str]:
        """The new text of every file a fix changed."""
        return {path: text for path, text in sorted(self.texts.items()) if text != self.sources[path].text}


def within(paths: Iterable[str]) -> Callable[[str], bool]:
    """Whether a file lies under one of ``paths`` (the files and folders a run linted)."""
    roots = [os.path.abspath(path) for path in paths]

    def allowed(path: str) -> bool:
        absolute = os.path.abspath(path)
        for root in roots:
            if absolute == root:
                return True
            try:
                if os.path.commonpath([absolute, root]) == root and os.path.isdir(root):
                    return True
            except ValueError:
                continue
        return False

    return allowed


def _shift(line: int, groups: list[list[Edit]]) -> int | None:
    """``line`` moved by the edits applied since it was reported; None when one rewrote it."""
    for edits in groups:
        delta = 0
        for edit in edits:
            end = edit.end_line + (1 if edit.end_column else 0)
            if line < edit.start_line:
                continue
            if line < end:
                return None
            added = edit.text.count("\n") + (1 if edit.text and not edit.text.endswith("\n") else 0)
            delta += added - (end - edit.start_line)
        line += delta
    return line


def _moved(finding: Finding, shifts: dict[str, list[list[Edit]]]) -> Finding | None:
    line = _shift(finding.line, shifts.get(finding.path, []))
    if line is None:
        return None
    evidence = []
    for location in finding.evidence:
        moved = _shift(location.line, shifts.get(location.path, []))
        evidence.append(dataclasses.replace(location, line=moved, end_line=max(moved, location.end_line + moved - location.line)) if moved is not None else location)
    return dataclasses.replace(finding, line=line, end_line=line + (finding.end_line - finding.line), evidence=tuple(evidence))


def display(path: str) -> str:
    """``path`` as messages and diffs name it: relative to the working directory when inside it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith(os.pardir) else relative


def _normalized(finding: Finding) -> Finding:
    """``finding`` with its paths spelled one way, absolute (``./a.py``, ``a.py`` and
    ``../here/a.py`` are one file)."""
    def spelled(path: str) -> str:
        return os.path.normpath(os.path.abspath(path))

    evidence = tuple(dataclasses.replace(location, path=spelled(location.path)) for location in finding.evidence)
    return dataclasses.replace(finding, path=spelled(finding.path), evidence=evidence)


def plan(findings: Iterable[Finding], *, unsafe: bool, allowed: Callable[[str], bool], load: Callable[[str], SourceFile] = read_source) -> Plan:
    """The fixes for ``findings``: safe ones, and unsafe ones too when ``unsafe``."""
    out = Plan()
    shifts = out.shifts
    unreadable: set[str] = set()

    def current(path: str) -> str | None:
        if path in out.texts:
            return out.texts[path]
        if path in unreadable or not allowed(path):
            return None
        try:
            source = load(path)
        except FileFixError as exc:
            unreadable.add(path)
            out.problems.append((display(path), str(exc)))
            return None
        out.sources[path] = source
        out.texts[path] = source.text
        return source.text

    for finding in sorted(_normalized(finding) for finding in findings):
        if not allowed(finding.path):
            continue
        text = current(finding.path)
        if text is None:
            continue
        moved = _moved(finding, shifts)
        if moved is None:
            out.deferred += 1
            continue
        fixes, problems = attempt(moved, text, read=current)
        for problem in problems:
            out.problems.append((display(finding.path), f"{finding.code} at line {moved.line}: {problem}"))
        chosen = next((fix for fix in fixes if fix.safe or unsafe), None)
        if chosen is None:
            if fixes:
                out.unsafe_available.append((finding, fixes[0]))
            continue
        for path in chosen.paths:
            edits = [edit for edit in chosen.edits if edit.path == path]
            out.texts[path] = apply_edits(out.texts[path], edits)
            shifts.setdefault(path, []).append(edits)
        out.applied.append((finding, chosen))
    return out


def write(plan_: Plan) -> tuple[list[str], list[tuple[str, str]]]:
    """Write every changed file; (the files written, absolute, and (path as shown, why) for
    those that were not)."""
    written, problems = [], []
    for path, text in plan_.changed().items():
        try:
            write_source(plan_.sources[path], text)
        except FileFixError as exc:
            problems.append((display(path), str(exc)))
        else:
            written.append(path)
    return written, problems


def unified_diff(plan_: Plan) -> str:
    """The changes as one unified diff (``a/`` and ``b/`` paths, as ``git apply`` takes)."""
    parts = []
    for path, text in plan_.changed().items():
        name = display(path).replace(os.sep, "/")
        parts.extend(
            difflib.unified_diff(
                plan_.sources[path].text.splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in parts)
