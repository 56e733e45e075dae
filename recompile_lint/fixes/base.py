"""What a fix is: text edits with a title and a safety, and the helpers the codemods share.

A fix is **safe** when the fixed program computes what it did and only compiles fewer graphs
(a compiler setting, a keyword that only changes how Dynamo treats a value). It is **unsafe**
when it can change what the program does elsewhere (a batch dropped, a Python int turned into
a tensor that other code reads). ``--fix`` applies safe fixes; ``--unsafe-fixes`` the others too.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from typing import Callable, ClassVar, Mapping

import libcst as cst

from recompile_lint.models import Finding

# What a fixer may read besides the finding's own file: another file's text, or None.
Reader = Callable[[str], "str | None"]


@dataclass(frozen=True, order=True)
class Edit:
    """Replace the text of ``path`` from (``start_line``, ``start_column``) to (``end_line``,
    ``end_column``) by ``text``. Lines are 1-based, columns 0-based and counted in characters
    (code points) of the text as ``source.decode_source`` gives it (newlines as ``\\n``)."""

    path: str
    start_line: int
    start_column: int
    end_line: int
    end_column: int
    text: str


@dataclass(frozen=True)
class Fix:
    """One way to fix a finding: a title to show, its safety, and the edits it makes."""

    title: str
    safe: bool
    edits: tuple[Edit, ...]
    code: str = ""
    fixer: str = ""  # the codemod's name (``dynamic-sources``)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(sorted({edit.path for edit in self.edits}))


class FixError(Exception):
    """A fix that cannot be made here; the message says why."""


class Fixer:
    """A codemod for the findings of some rules. ``rewrite`` returns the new text of every
    file it changes, or None where the finding's code is not one it can rewrite."""

    name: ClassVar[str] = ""
    codes: ClassVar[tuple[str, ...]] = ()
    safe: ClassVar[bool] = True
    summary: ClassVar[str] = ""  # what it does, for the rule pages and docs/fixes.md
    why: ClassVar[str] = ""  # why it is safe, or what it can change elsewhere

    def title(self, finding: Finding) -> str:
        raise NotImplementedError

    def rewrite(self, finding: Finding, text: str, read: Reader) -> dict[str, str] | None:
        raise NotImplementedError


def same_file(a: str, b: str) -> bool:
    """Whether two spellings name one path (``./m.py``, ``m.py``, ``/abs/m.py``)."""
    return a == b or os.path.normpath(os.path.abspath(a)) == os.path.normpath(os.path.abspath(b))


def edits_between(path: str, old: str, new: str) -> tuple[Edit, ...]:
    """The edits that turn ``old`` into ``new``, line by line (whole lines replaced)."""
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    starts = [0]
    for line in old_lines:
        starts.append(starts[-1] + len(line))
    out = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start = position(old, starts[i1])
        end = position(old, starts[i2])
        out.append(Edit(path, start[0], start[1], end[0], end[1], "".join(new_lines[j1:j2])))
    return tuple(out)


def position(text: str, offset: int) -> tuple[int, int]:
    """(1-based line, 0-based column) of character ``offset`` of ``text``."""
    line = text.count("\n", 0, offset) + 1
    line_start = text.rfind("\n", 0, offset) + 1
    return line, offset - line_start


def offset(text: str, line: int, column: int) -> int:
    """The character offset of (1-based ``line``, 0-based ``column``) in ``text``."""
    start = 0
    for _ in range(line - 1):
        found = text.find("\n", start)
        if found < 0:
            return len(text)
        start = found + 1
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    return min(start + column, end if column >= 0 else start)


def apply_edits(text: str, edits: list[Edit] | tuple[Edit, ...]) -> str:
    """``text`` with ``edits`` (of one file, not overlapping) applied."""
    ranges = sorted(((offset(text, e.start_line, e.start_column), offset(text, e.end_line, e.end_column), e.text) for e in edits), reverse=True)
    for start, end, replacement in ranges:
        text = text[:start] + replacement + text[end:]
    return text


def offsets(text: str, edit: Edit) -> tuple[int, int]:
    return offset(text, edit.start_line, edit.start_column), offset(text, edit.end_line, edit.end_column)


def parse(text: str) -> cst.Module:
    """libcst's tree of ``text``, parsed as the rules parse (size, depth and chains bounded);
    raises ``FixError`` where it is not parsed."""
    from recompile_lint.analysis.parsing import CstRefused, parse_cst

    try:
        return parse_cst(text)
    except CstRefused as exc:
        raise FixError(f"not parsed for fixing: {exc}") from None
    except (cst.ParserSyntaxError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise FixError(f"does not parse: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None


def parses(text: str) -> bool:
    """Whether ``text`` is Python the interpreter compiles (a fix's result must be)."""
    import ast

    from recompile_lint.analysis.parsing import on_deep_stack

    try:
        on_deep_stack(ast.parse, text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def dotted(node: cst.BaseExpression) -> str:
    """``torch.utils.data.DataLoader`` for that attribute chain; "" for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr.value}" if head else ""
    return ""


def changed(result: Mapping[str, str], texts: Mapping[str, str]) -> dict[str, str] | None:
    """The files of ``result`` whose text differs from ``texts``; None when none does."""
    out = {path: text for path, text in result.items() if texts.get(path) != text}
    return out or None
