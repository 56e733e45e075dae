"""``--fix``, ``--unsafe-fixes``, ``--diff`` and ``--add-noqa`` of ``recompile-lint check``.

The lint run's findings are fixed (``fixes.apply``), the files written safely
(``fixes.files``), and the project linted again so that what is left is reported as usual.
``--diff`` and ``--add-noqa`` end the command here.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Callable, Sequence

import click

from recompile_lint.models import FileError, LintResult
from recompile_lint.report.sanitize import escape

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# Rounds of fix-then-lint: a finding on a line an earlier fix rewrote is fixed in the next.
ROUNDS = 3


def _say(kind: str, message: str) -> None:
    click.echo(escape(f"recompile-lint: {kind}{message}"), err=True)


def _plural(count: int, word: str) -> str:
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word}{'es' if word.endswith('x') else 's'}"


def run_fixes(
    result: LintResult,
    paths: Sequence[str],
    *,
    fix: bool,
    unsafe: bool,
    diff: bool,
    add_noqa: bool,
    stdin: bool,
    relint: Callable[[], LintResult],
) -> LintResult:
    """What the options ask for, on ``result`` (a lint of ``paths``): the result to report
    after fixing; ``--diff`` and ``--add-noqa`` exit here."""
    from recompile_lint.fixes import apply

    if stdin:
        _say("error: ", "--fix, --unsafe-fixes, --diff and --add-noqa change files: they do not apply to --stdin-filename")
        sys.exit(EXIT_ERROR)
    if add_noqa and (fix or unsafe or diff):
        _say("error: ", "--add-noqa writes suppressions for the findings as they are: give it without --fix, --unsafe-fixes or --diff")
        sys.exit(EXIT_ERROR)
    allowed = apply.within(paths)
    if add_noqa:
        _add_noqa(result, allowed)
    if diff:
        planned = apply.plan(result.findings, unsafe=unsafe, allowed=allowed)
        _problems(planned.problems)
        text = apply.unified_diff(planned)
        for line in text.splitlines():
            # Tabs stay (they indent code and cannot drive a terminal), so the diff still applies.
            click.echo("\t".join(escape(part) for part in line.split("\t")))
        changed = planned.changed()
        _say("", f"{_plural(len(planned.applied), 'fix')} would change {_plural(len(changed), 'file')}" + _unsafe_note(planned, unsafe))
        for error in result.errors:
            where = f"{error.path}:{error.line}:{error.column}" if error.line else error.path
            _say("error: ", f"{where}: {error.message}")
        sys.exit(EXIT_ERROR if result.errors else EXIT_FINDINGS if changed else EXIT_CLEAN)
    fixed, files, unsafe_left = 0, set(), 0
    unwritten: list[tuple[str, str]] = []
    for _ in range(ROUNDS):
        planned = apply.plan(result.findings, unsafe=unsafe, allowed=allowed)
        _problems(planned.problems)
        unsafe_left = len(planned.unsafe_available)
        if not planned.applied:
            break
        written, problems = apply.write(planned)
        unwritten.extend(problems)
        fixed += sum(1 for _, chosen in planned.applied if set(chosen.paths) <= set(written))
        files.update(written)
        if not written:
            break
        result = relint()
        if not planned.deferred:
            break
    note = f" ({_plural(unsafe_left, 'unsafe fix')} not applied: --unsafe-fixes applies them)" if unsafe_left else ""
    _say("", f"fixed {_plural(fixed, 'finding')} in {_plural(len(files), 'file')}{note}")
    if unwritten:
        # A fix that could not be written is a file error of the run (exit 2), reported with the others.
        errors = tuple(FileError(path, f"not fixed: {why}") for path, why in unwritten)
        result = dataclasses.replace(result, errors=tuple(sorted(result.errors + errors)))
    return result


def _unsafe_note(planned, unsafe: bool) -> str:
    count = len(planned.unsafe_available)
    return f" ({_plural(count, 'unsafe fix')} not shown: --unsafe-fixes shows them)" if count and not unsafe else ""


def _problems(problems) -> None:
    for path, message in problems:
        _say("warning: ", f"{path}: {message}")


def _add_noqa(result: LintResult, allowed) -> None:
    from recompile_lint.fixes.files import FileFixError, read_source, write_source
    from recompile_lint.fixes.noqa import add_noqa

    by_path: dict[str, list] = {}
    for finding in result.findings:
        if allowed(finding.path):
            by_path.setdefault(finding.path, []).append(finding)
    written, failed = 0, False
    for path, findings in sorted(by_path.items()):
        try:
            source = read_source(path)
            text, count, refused = add_noqa(source.text, findings)
            for line in refused:
                _say("warning: ", f"{path}:{line}: a comment at the end of this line would change the program (a string or a continuation): no noqa written")
            if count:
                write_source(source, text)
                written += count
        except FileFixError as exc:
            _say("error: ", f"{path}: {exc}")
            failed = True
    _say("", f"added {_plural(written, 'noqa directive')}")
    sys.exit(EXIT_ERROR if failed or result.errors else EXIT_CLEAN)
