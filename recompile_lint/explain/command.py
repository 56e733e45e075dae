"""``recompile-lint explain LOG_OR_TRACE_DIR [PATHS]``: which lines made a real run recompile.

Reads the evidence (``inputs``), runs the static linter on PATHS (default: the source files
the log names, where they exist here), matches each guard failure to the finding that
predicted it (``match``) and prints the answer (``render``). Never imports torch, and runs
nothing the log names.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn, Sequence

import click

EXIT_CLEAN, EXIT_RECOMPILES, EXIT_ERROR = 0, 1, 2
# Where installed libraries live: a log names their files too, but they are not the project.
_LIBRARY_DIRS = ("site-packages", "dist-packages")


def _fail(message: str) -> NoReturn:
    from recompile_lint.report.sanitize import escape

    click.echo(escape(f"recompile-lint: error: {message}"), err=True)
    sys.exit(EXIT_ERROR)


def _under(path: str, directory: str) -> bool:
    try:
        real = os.path.realpath(path)
        return os.path.commonpath([real, directory]) == directory
    except (OSError, ValueError):  # a name no file system accepts (NUL bytes, too long)
        return False


def default_paths(named: Sequence[str], outside: bool = False) -> tuple[list[str], int]:
    """The Python files a log names that exist here, installed libraries left out, and how
    many of the names it gives lie outside the working directory.

    A log is as untrusted as the repository: it may name any file of this machine. Unless
    ``outside``, only files under the working directory (links resolved) are linted; those
    outside are counted without being looked at, so the report cannot tell which of them exist.
    """
    found = []
    beyond = 0
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:
        here = None
    for path in named:
        parts = set(path.replace("\\", "/").split("/"))
        if not path.endswith(".py") or parts & set(_LIBRARY_DIRS):
            continue
        if not outside and (here is None or not _under(path, here)):
            beyond += 1
            continue
        try:
            if os.path.isfile(path):
                found.append(path)
        except (OSError, ValueError):  # a name no file system accepts (NUL bytes, too long)
            continue
    return list(dict.fromkeys(found)), beyond


def _split(values: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for value in values:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return tuple(out)


@click.command("explain")
@click.argument("log", metavar="LOG_OR_TRACE_DIR", type=click.Path())
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--format", "output_format", type=click.Choice(["text", "json", "html"]), default="text",
              show_default=True, help="html: one self-contained page to share.")
@click.option("--output-file", "-o", type=click.Path(dir_okay=False), help="Write the report here instead of stdout.")
@click.option("--select", multiple=True, help="Rule codes or prefixes whose findings may explain a guard (default: all).")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to leave out.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="pyproject.toml to read settings from.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the linter's facts cache.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when the run recompiled.")
@click.option("--lint-outside", is_flag=True,
              help="Without PATHS, also lint the files the log names outside the working directory.")
def explain(log: str, paths: tuple[str, ...], output_format: str, output_file: str | None, select: tuple[str, ...],
            ignore: tuple[str, ...], config_file: str | None, no_cache: bool, exit_zero: bool, lint_outside: bool) -> None:
    """Explain the recompiles in LOG_OR_TRACE_DIR with the findings of PATHS.

    LOG_OR_TRACE_DIR is a log written with TORCH_LOGS=recompiles (or recompiles_verbose,
    guards), a TORCH_TRACE directory, the JSON of `recompile-lint verify`, or - for standard
    input. PATHS default to the source files the log names, where they exist under the working
    directory (--lint-outside: anywhere). Prints each
    recompiling function, its recompiles grouped by the guarded value, the finding (rule,
    evidence, fix) behind each, and the guard failures no finding explains. Exit code 1 when
    the run recompiled, 0 when it did not, 2 on errors.
    """
    from recompile_lint.explain.evidence import ExplainInputError
    from recompile_lint.explain.inputs import read_input
    from recompile_lint.explain.match import explain as build
    from recompile_lint.explain.render import RENDERERS

    try:
        evidence = read_input(log)
    except ExplainInputError as exc:
        _fail(str(exc))
    warnings: list[str] = []
    targets = list(paths)
    if not paths:
        targets, beyond = default_paths(evidence.files(), outside=lint_outside)
        if beyond:
            warnings.append(f"{beyond} source file name(s) in the log are outside the working directory and were not "
                            "looked at: pass them as PATHS, or --lint-outside, to lint them")
    if not paths and not targets and evidence.events:
        warnings.append("none of the source files the log names is here: pass PATHS to map guards to findings")
    findings, errors, files = _lint(targets, select, ignore, config_file, no_cache)
    result = build(evidence, findings, input_name=log, linted=targets if targets else (), lint_errors=errors,
                   files=files, warnings=warnings)
    rendered = RENDERERS[output_format](result)
    if output_file:
        from recompile_lint.report.output_file import OutputFileError, write_output_file

        try:
            write_output_file(output_file, rendered)
        except OutputFileError as exc:
            _fail(str(exc))
    else:
        click.echo(rendered, nl=False)
    sys.exit(EXIT_RECOMPILES if result.functions and not exit_zero else EXIT_CLEAN)


def _lint(paths: Sequence[str], select: Sequence[str], ignore: Sequence[str], config_file: str | None,
          no_cache: bool) -> tuple[list, list[str], list[str]]:
    """Findings of ``paths`` (every rule unless narrowed), file errors as lines, the files seen."""
    if not paths:
        return [], [], []
    from recompile_lint.codes import validate_codes
    from recompile_lint.config import ConfigError, load_config
    from recompile_lint.discovery import discover
    from recompile_lint.engine import lint_paths

    try:
        config = load_config(paths, explicit=config_file)
        for option, values in (("--select", select), ("--ignore", ignore)):
            bad = validate_codes(_split(values))
            if bad:
                raise ConfigError(f"{option}: unknown rule code or prefix {', '.join(bad)}")
        # A guard may be explained by any rule, info ones included, unless the user narrows it.
        config = config.with_overrides(select=_split(select) or ("RCL",), ignore=_split(ignore) or None,
                                       cache=False if no_cache else None)
    except ConfigError as exc:
        _fail(str(exc))
    try:
        result = lint_paths(list(paths), config)
        files = list(discover(list(paths), config.exclude + config.extend_exclude).files)
    except Exception as exc:  # noqa: BLE001 - the log is still worth explaining without findings
        return [], [f"the static linter failed: {type(exc).__name__}: {exc}"], []
    errors = [f"{e.path}:{e.line}: {e.message}" if e.line else f"{e.path}: {e.message}" for e in result.errors]
    return list(result.findings), errors, files
