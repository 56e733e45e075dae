"""``recompile-lint regions [PATHS]``: what each compile site compiles, and what Dynamo inlines.

Wires options to the stages: discovery and the project scope (``engine``), the index and the
site resolution (``analysis.regions``), the report (``report.regions``).
"""

from __future__ import annotations

import os
import sys

import click

from recompile_lint.config import ConfigError
from recompile_lint.report.sanitize import escape

EXIT_CLEAN, EXIT_ERROR = 0, 2


@click.command("regions")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--format", "output_format", type=click.Choice(("text", "json")), default="text", show_default=True)
@click.option("--output-file", "-o", type=click.Path(dir_okay=False, writable=True), help="Write the report here instead of stdout.")
@click.option("--verbose", "-v", is_flag=True, help="List the functions each region reaches, and the guards of library entries.")
@click.option("--exclude", multiple=True, help="Glob patterns of paths to skip (replaces the defaults).")
@click.option("--extend-exclude", multiple=True, help="Glob patterns of paths to skip in addition.")
@click.option("--compile-function", "compile_functions", multiple=True, help="Dotted name of a torch.compile wrapper (repeatable).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="pyproject.toml to read settings from.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the facts cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False), help="Where to keep the facts cache.")
def regions(paths, output_format, output_file, verbose, exclude, extend_exclude, compile_functions, config_file, no_cache, cache_dir) -> None:
    """List every compile site in PATHS (default: the current directory): its form, what it
    compiles (entry functions and the functions Dynamo inlines from them, or a torch library
    entry), or why it could not be resolved. The project around PATHS is read to resolve them.

    \b
    Exit codes: 0 listed, 2 usage or input error (the sites of the other files are listed).
    """
    from recompile_lint.frontends.cli import build_config

    paths = tuple(paths) or (".",)
    try:
        config = build_config(paths, (), (), (), exclude, extend_exclude, compile_functions, config_file, None, no_cache, cache_dir)
    except ConfigError as exc:
        click.echo(escape(f"recompile-lint: error: {exc}"), err=True)
        sys.exit(EXIT_ERROR)
    try:
        views, errors, checked = collect(paths, config)
    except Exception as exc:  # noqa: BLE001 - an internal error must still be one clear line
        click.echo(escape(f"recompile-lint: internal error: {type(exc).__name__}: {exc}"), err=True)
        sys.exit(EXIT_ERROR)
    from recompile_lint.report.regions import format_regions

    for error in errors:
        where = f"{error.path}:{error.line}:{error.column}" if error.line else error.path
        click.echo(escape(f"recompile-lint: error: {where}: {error.message}"), err=True)
    if checked == 0:
        if not errors:
            click.echo(escape("recompile-lint: error: no Python files found in " + ", ".join(paths)), err=True)
        sys.exit(EXIT_ERROR)
    rendered = format_regions(views, output_format, verbose)
    if output_file:
        from recompile_lint.report.output_file import OutputFileError, write_output_file

        try:
            write_output_file(output_file, rendered)
        except OutputFileError as exc:
            click.echo(escape(f"recompile-lint: error: {exc}"), err=True)
            sys.exit(EXIT_ERROR)
    else:
        click.echo(rendered, nl=False)
    sys.exit(EXIT_ERROR if errors else EXIT_CLEAN)


def collect(paths, config):
    """(site views of the named files, their file errors, how many files were named)."""
    from recompile_lint.analysis.index import FactsStore, ProjectIndex
    from recompile_lint.analysis.parsing import forget_package_layout
    from recompile_lint.analysis.loader import find_sites
    from recompile_lint.analysis.regions import display_name
    from recompile_lint.discovery import discover, find_project_root
    from recompile_lint.engine import make_cache, project_scope, shown_path
    from recompile_lint.models import FileError
    from recompile_lint.report.regions import FunctionView, SiteView

    forget_package_layout()
    excludes = config.exclude + config.extend_exclude
    root = str(find_project_root(list(paths), excludes))
    discovered = discover(list(paths), excludes, root)
    given = {os.path.abspath(p): p for p in discovered.files}
    project = project_scope(paths, config)[1]
    all_files = sorted({os.path.abspath(p) for p in project} | set(given))
    index = ProjectIndex(all_files, FactsStore(config.compile_functions, make_cache(config, root)))
    resolutions = find_sites(index, set(given), config.max_depth)

    def show(path: str) -> str:
        return shown_path(path, given)

    views = []
    for resolution in resolutions:
        reached = []
        for region in resolution.regions:
            functions = []
            for ref, depth, _ in region.reached:
                fn = index.function(ref)
                functions.append(FunctionView(display_name(index, ref), show(ref.path), fn.line if fn is not None else 0, depth))
            reached.append(tuple(functions))
        views.append(SiteView(resolution, show(resolution.site_path), source_of(index, resolution), tuple(reached)))
    errors = list(discovered.errors)
    for path, display in given.items():
        index.check_syntax(path)
        error = index.errors.get(path)
        if error is not None:
            errors.append(FileError(path=display, message=error.message, line=error.line, column=error.column))
    return views, sorted(set(errors)), len(given)


def source_of(index, resolution, limit: int = 90) -> str:
    """The site's source text on one line (whitespace collapsed), shortened to ``limit``."""
    text = index.text(resolution.site_path) or ""
    lines = text.split("\n")
    span = resolution.site.span
    if not 1 <= span.line <= span.end_line <= len(lines):
        return ""
    if span.line == span.end_line:
        chunk = lines[span.line - 1][span.column - 1 : span.end_column - 1]
    else:
        chunk = "\n".join([lines[span.line - 1][span.column - 1 :]] + lines[span.line : span.end_line - 1] + [lines[span.end_line - 1][: span.end_column - 1]])
    if resolution.site.form == "decorator":
        chunk = "@" + chunk
    chunk = " ".join(chunk.split())
    return chunk if len(chunk) <= limit else chunk[: limit - 3] + "..."
