"""Fixes for findings: libcst codemods, each marked safe or unsafe, and ``# noqa`` comments.

``fixes_for(finding, text)`` is the whole interface a front end needs: the fixes of one
finding (``text`` is the finding's file as ``source.decode_source`` reads it), each a title,
a safety and the edits it makes, best first. ``fixer_for_code`` says which rules have an
automatic fix (the rule pages and ``recompile-lint rule`` say it from there). Nothing here
imports torch or writes a file; ``fixes.apply`` applies fixes to texts, and the front ends
write them (``fixes.files``).
"""

from __future__ import annotations

from recompile_lint.fixes.base import Edit, Fix, Fixer, FixError, Reader, apply_edits, edits_between, parses, same_file
from recompile_lint.fixes.buffers import ModuleBuffer
from recompile_lint.fixes.loops import DropLast, HoistBackend, MarkUnbacked
from recompile_lint.fixes.settings import CaptureScalarOutputs, DynamicSources
from recompile_lint.models import Finding

__all__ = ["Edit", "Fix", "Fixer", "FixError", "FIXERS", "fixes_for", "attempt", "fixers_for_code", "fix_safety", "apply_edits"]

# Every codemod, best first for a rule that has several.
FIXERS: tuple[Fixer, ...] = (DynamicSources(), ModuleBuffer(), CaptureScalarOutputs(), DropLast(), MarkUnbacked(), HoistBackend())


def fixers_for_code(code: str) -> tuple[Fixer, ...]:
    """The codemods for findings of rule ``code`` (empty: no automatic fix)."""
    return tuple(fixer for fixer in FIXERS if code in fixer.codes)


def fix_safety(code: str) -> str:
    """``safe``, ``unsafe``, ``safe or unsafe`` or ``none``: what the rule's automatic fixes are."""
    kinds = {fixer.safe for fixer in fixers_for_code(code)}
    if not kinds:
        return "none"
    if kinds == {True}:
        return "safe"
    return "unsafe" if kinds == {False} else "safe or unsafe"


def _no_other_file(path: str) -> None:
    return None


def attempt(finding: Finding, text: str, read: Reader | None = None) -> tuple[list[Fix], list[str]]:
    """(the fixes of ``finding``, why each fixer that applied made none). ``read(path)`` gives
    another file's text for a fix that edits the file compiling the region; without it such
    fixes are not made. A fix whose result does not parse is dropped with a reason."""
    reader = read or _no_other_file
    fixes: list[Fix] = []
    problems: list[str] = []
    for fixer in fixers_for_code(finding.code):
        try:
            result = fixer.rewrite(finding, text, reader)
        except FixError as exc:
            problems.append(f"{fixer.name}: {exc}")
            continue
        if not result:
            continue
        edits: list[Edit] = []
        broken = False
        for path, new_text in sorted(result.items()):
            old_text = text if same_file(path, finding.path) else reader(path)
            if old_text is None:
                broken = True
                break
            if not parses(new_text):
                problems.append(f"{fixer.name}: the fixed {path} does not parse: fix dropped")
                broken = True
                break
            edits.extend(edits_between(path, old_text, new_text))
        if broken or not edits:
            continue
        fixes.append(Fix(fixer.title(finding), fixer.safe, tuple(edits), finding.code, fixer.name))
    return fixes, problems


def fixes_for(finding: Finding, text: str, read: Reader | None = None) -> list[Fix]:
    """The fixes of ``finding`` whose file's text is ``text`` (see ``attempt``)."""
    return attempt(finding, text, read)[0]
