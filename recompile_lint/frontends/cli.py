"""Command line: ``recompile-lint [PATHS]`` lints; subcommands for rules, docs and verify.

This module only wires options to stages; analysis lives in ``engine``, output in ``report``.
"""

from __future__ import annotations

import os
import sys
from typing import Sequence

import click

from recompile_lint import __version__
from recompile_lint.config import Config, ConfigError, load_config, start_server_from_environment
from recompile_lint.report import FORMAT_NAMES, render

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

# Under ``run`` the process ends with the command: a lint run's analysis is then kept here
# (never freed nor collected), and once one is, the interpreter's teardown may be skipped.
_process_ends = False
_retained: list = []
# True in a resident server's child: a server already answers, none is to be started.
_in_server = False


def run() -> None:
    """The ``recompile-lint`` script: ``main``, ended at once after a lint run.

    A run keeps every parsed file's facts until it ends (millions of small objects on a large
    tree), and the interpreter frees them one by one on the way out: 2.8 s after the whole
    torch tree, more than the syntax checks of its 1,600 unparsed files. Once the report is
    written and the output streams flushed there is nothing left to do, so the process ends
    with the command's exit status without that teardown. Any other exit, or a stream that
    cannot be flushed (a closed pipe), takes the ordinary way out.
    """
    global _process_ends
    _process_ends = True
    try:
        main()
    except SystemExit as exc:
        code = exc.code
        if _retained and (code is None or isinstance(code, int)):
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except (OSError, ValueError):
                raise exc from None
            os._exit(code or 0)
        raise


def run_in_server() -> int:
    """``main`` in a resident server's child, with its exit status returned instead of raised."""
    global _process_ends, _in_server
    _process_ends = True
    _in_server = True
    try:
        main()
    except SystemExit as exc:
        status = exc.code
        if status is None:
            return 0
        if isinstance(status, int):
            return status
        print(status, file=sys.stderr)
        return 1
    return 0


# Subcommands imported only when used, so linting never pays for the verifier's imports.
LAZY_COMMANDS = {
    "verify": ("recompile_lint.verify.command", "verify"),
    "server": ("recompile_lint.frontends.cli_server", "server"),
    "lsp": ("recompile_lint.frontends.lsp", "lsp"),
    "explain": ("recompile_lint.explain.command", "explain"),
    "regions": ("recompile_lint.frontends.cli_regions", "regions"),
}


def paths_in_place(command: click.Command, args: list[str]) -> list[str]:
    """``args`` for ``command`` with every argument that looks like an option but names an
    existing file turned into a path (``--exit-zero`` -> ``./--exit-zero``).

    pre-commit appends the names of a commit's files to a hook's arguments, with no ``--``
    before them (a hook's own ``args:`` come first, so none can be added), and a pull request
    chooses those names: a file called ``--exit-zero`` or ``--extend-exclude=*.py`` must not
    switch the linter off. So, for a command that takes paths, an argument in an option's
    place that is an existing file (or link) is that file; everything after ``--`` is a path
    in any case, and the value of an option given as the next argument (``--config x.toml``)
    is left alone. A subcommand's name is never taken from here: the hooks name theirs
    (``recompile-lint check``), so a file called ``verify`` or ``lsp`` is a path too.
    """
    if not any(isinstance(param, click.Argument) and isinstance(param.type, click.Path) for param in command.params):
        return args
    takes_value: dict[str, int] = {}
    for param in command.params:
        if isinstance(param, click.Option) and not param.is_flag and not param.count:
            for word in param.opts:
                takes_value[word] = max(param.nargs, 1)
    out: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            out.extend(args[index - 1 :])
            break
        if arg.startswith("-") and arg != "-" and _exists(arg):
            out.append(os.path.join(os.curdir, arg))
            continue
        out.append(arg)
        if arg in takes_value:
            out.extend(args[index : index + takes_value[arg]])
            index += takes_value[arg]
    return out


def _exists(path: str) -> bool:
    try:
        return os.path.lexists(path)
    except (OSError, ValueError):  # a name no file system accepts
        return False


class DefaultGroup(click.Group):
    """A group whose default command is ``check``: ``recompile-lint src/`` lints src/."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        known = set(self.commands) | set(LAZY_COMMANDS)
        if not args or args[0] not in known and args[0] not in ("--help", "-h", "--version"):
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage(ctx.command_path, "[OPTIONS] [PATHS]... | COMMAND [ARGS]...")

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The group's options and commands, then the lint options: linting is what a bare
        ``recompile-lint`` does, so ``recompile-lint --help`` shows how to tune it."""
        super().format_options(ctx, formatter)
        check_command = self.commands.get("check")
        if check_command is None:
            return
        options = [param for param in check_command.get_params(ctx) if isinstance(param, click.Option) and param.name != "help"]
        records = [record for record in (option.get_help_record(ctx) for option in options) if record]
        if records:
            with formatter.section("Lint options (recompile-lint [OPTIONS] [PATHS], or recompile-lint check)"):
                formatter.write_dl(records)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            rest = paths_in_place(command, rest)
        return name, command, rest

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS and name not in self.commands:
            import importlib

            module, attr = LAZY_COMMANDS[name]
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)


def echo_error(message: str) -> None:
    """One line on standard error. Its text may quote the repository (a path, a configuration
    value, a file's error): control characters and newlines are shown escaped, so it stays one
    line that cannot drive the terminal or a CI runner."""
    from recompile_lint.report.sanitize import escape

    click.echo(escape(message), err=True)


def split_codes(values: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for value in values:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return tuple(out)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="recompile-lint")
def main() -> None:
    """Find the code that makes torch.compile recompile, before anything runs.

    \b
    recompile-lint [PATHS]          lint (default: the current directory)
    recompile-lint check [PATHS]    the same, for a directory named like a command
    recompile-lint rules            list every rule
    recompile-lint rule RCL101      show a rule's documentation (or: rule mutated-global)
    recompile-lint verify [PATHS]   confirm findings with compiled probes (needs torch)
    recompile-lint explain LOG      map a run's recompile log or trace to source lines
    recompile-lint regions [PATHS]  every compile site and what it compiles (or why not)
    recompile-lint server start     keep a resident server for fast runs (stop, status)
    recompile-lint lsp              language server for editors (needs the lsp extra)
    """
    try:
        os.getcwd()
    except OSError as exc:
        # Relative paths, the project root and the configuration are all found from here.
        echo_error(f"recompile-lint: error: the current directory cannot be used: {exc.strerror or exc}")
        sys.exit(EXIT_ERROR)


def lint_options(func):
    """Options shared by ``check`` and ``verify``."""
    options = [
        click.option("--select", multiple=True, help="Codes or prefixes to enable (replaces the default set)."),
        click.option("--extend-select", multiple=True, help="Codes or prefixes to enable in addition."),
        click.option("--ignore", multiple=True, help="Codes or prefixes to disable."),
        click.option("--exclude", multiple=True, help="Glob patterns of paths to skip (replaces the defaults)."),
        click.option("--extend-exclude", multiple=True, help="Glob patterns of paths to skip in addition."),
        click.option("--compile-function", "compile_functions", multiple=True, help="Dotted name of a torch.compile wrapper (repeatable)."),
        click.option("--config", "config_file", type=click.Path(dir_okay=False), help="pyproject.toml to read settings from."),
        click.option("--jobs", "-j", type=click.IntRange(min=0), help="Worker processes for parsing (0: one per core)."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the facts cache."),
        click.option("--cache-dir", type=click.Path(file_okay=False), help="Where to keep the facts cache."),
        click.option(
            "--respect-gitignore/--no-respect-gitignore",
            default=None,
            help="Skip files that .gitignore files ignore when walking directories (default: on; config key respect-gitignore).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def build_config(paths: Sequence[str], select, extend_select, ignore, exclude, extend_exclude, compile_functions, config_file, jobs, no_cache, cache_dir, respect_gitignore=None) -> Config:
    """File settings, then command-line options on top (the command line wins)."""
    from recompile_lint.codes import validate_codes

    config = load_config(paths or ["."], explicit=config_file)
    for option, values in (("--select", select), ("--extend-select", extend_select), ("--ignore", ignore)):
        bad = validate_codes(split_codes(values))
        if bad:
            raise ConfigError(f"{option}: unknown rule code or prefix {', '.join(bad)}")
    return config.with_overrides(
        select=split_codes(select) or None,
        extend_select=split_codes(extend_select) or None,
        ignore=split_codes(ignore) or None,
        exclude=tuple(exclude) or None,
        extend_exclude=(config.extend_exclude + tuple(extend_exclude)) if extend_exclude else None,
        compile_functions=(config.compile_functions + tuple(compile_functions)) if compile_functions else None,
        jobs=jobs,
        cache=False if no_cache else None,
        cache_dir=cache_dir,
        respect_gitignore=respect_gitignore,
    )


# ``--fail-on LEVEL``: findings of this severity or a higher one make the exit status 1.
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


def use_color(output_file: str | None, stream=None) -> bool:
    """Colour for a person at a terminal: never into a file, none with ``NO_COLOR`` set,
    always with ``FORCE_COLOR`` set (a CI log that shows colours), else when stdout is a terminal."""
    if output_file:
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    stream = stream if stream is not None else sys.stdout
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError, OSError):
        return False


@main.command("check")
@click.argument("paths", nargs=-1, type=click.Path())
@lint_options
@click.option(
    "--output-format",
    "output_format",
    type=click.Choice(FORMAT_NAMES),
    default=None,
    help="full (default: headline, code frame, related locations, help), concise (one line per finding), json (an array of findings), json-report (findings, errors and the summary in one object), sarif, github. `text` is concise.",
)
@click.option("--format", "format_alias", type=click.Choice(FORMAT_NAMES), default=None, metavar="FORMAT", help="Same as --output-format.")
@click.option("--output-file", "-o", type=click.Path(dir_okay=False, writable=True), help="Write the report here instead of stdout.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per code.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option(
    "--fail-on",
    type=click.Choice(tuple(SEVERITY_RANK)),
    default="info",
    show_default=True,
    help="Exit 1 only for findings of this severity or higher (all are still reported).",
)
@click.option(
    "--start-server",
    is_flag=True,
    default=None,
    help="When no resident server answered this command, start one for the next ones (see `recompile-lint server`; "
    "also RECOMPILE_LINT_START_SERVER=1; a project's start-server key is ignored).",
)
@click.option("--stdin-filename", metavar="PATH", help="Lint standard input (an editor's unsaved buffer) as the file PATH; the rest of its project is read from disk. Give no PATHS, or -.")
@click.option(
    "--progress/--no-progress",
    default=None,
    help="A run longer than 2 s shows [n/N] files and the time left on stderr (default: when stderr is a terminal; "
    "never with the json, sarif and github formats).",
)
@click.option("--fix", is_flag=True, help="Apply the safe fixes in place, then report what is left (docs/fixes.md).")
@click.option("--unsafe-fixes", is_flag=True, help="Apply the unsafe fixes too (alone: as --fix --unsafe-fixes; with --diff: show them).")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff and change nothing (exit 1 when there is one).")
@click.option("--add-noqa", is_flag=True, help="Write `# noqa: RCLnnn` on each finding's line (merged with one there) and say how many.")
def check(paths, select, extend_select, ignore, exclude, extend_exclude, compile_functions, config_file, jobs, no_cache, cache_dir, respect_gitignore, output_format, format_alias, output_file, statistics, exit_zero, fail_on, start_server, stdin_filename, progress=None, fix=False, unsafe_fixes=False, diff=False, add_noqa=False) -> None:
    """Lint PATHS (files or directories; default: the current directory)."""
    from recompile_lint.engine import lint_buffer, lint_paths
    from recompile_lint.frontends.progress import LintProgress

    if output_format and format_alias and output_format != format_alias:
        echo_error("recompile-lint: error: --format is another name for --output-format: give one of them")
        sys.exit(EXIT_ERROR)
    output_format = output_format or format_alias or "full"
    buffer = None
    if stdin_filename is not None:
        if paths not in ((), ("-",)) or not stdin_filename:
            echo_error("recompile-lint: error: --stdin-filename lints standard input as that file: give no PATHS (or -)")
            sys.exit(EXIT_ERROR)
        paths = (stdin_filename,)
        try:
            buffer = sys.stdin.buffer.read()
        except (OSError, ValueError, AttributeError) as exc:
            echo_error(f"recompile-lint: error: cannot read standard input: {exc}")
            sys.exit(EXIT_ERROR)
    paths = tuple(paths) or (".",)
    try:
        config = build_config(paths, select, extend_select, ignore, exclude, extend_exclude, compile_functions, config_file, jobs, no_cache, cache_dir, respect_gitignore)
        if start_server is None:
            start_server = start_server_from_environment()
        config = config.with_overrides(start_server=start_server)
    except ConfigError as exc:
        echo_error(f"recompile-lint: error: {exc}")
        sys.exit(EXIT_ERROR)
    for notice in config.notices:
        echo_error(f"recompile-lint: notice: {notice}")
    _retained.clear()
    if config.start_server and _server_to_start():
        from recompile_lint.frontends import server as resident

        resident.record_what_to_keep()
    try:
        retain = _retained if _process_ends else None
        # Findings are reported where the named files hold one of their locations (the write
        # a commit added), not only where they are analysed.
        # The machine formats are read by programs: no counter, whatever is asked.
        show = False if output_format not in ("full", "concise", "text") and not statistics else progress
        with LintProgress(sys.stderr, show=show) as counter:
            if buffer is None:
                result = lint_paths(paths, config, retain=retain, relocate=True, progress=counter.parsed, planned=counter.planned)
            else:
                result = lint_buffer(paths[0], buffer, config, retain=retain, relocate=True)
    except Exception as exc:  # noqa: BLE001 - an internal error must still be one clear line
        echo_error(f"recompile-lint: internal error: {type(exc).__name__}: {exc}")
        sys.exit(EXIT_ERROR)
    if result.files_checked == 0 and not result.errors and not result.excluded:
        # Nothing was linted: one line saying so, and no empty report before it.
        echo_error(no_python_files(paths))
        sys.exit(EXIT_ERROR)
    color = use_color(output_file)
    if fix or unsafe_fixes or diff or add_noqa:
        from recompile_lint.frontends.cli_fix import run_fixes

        result = run_fixes(result, paths, fix=fix, unsafe=unsafe_fixes, diff=diff, add_noqa=add_noqa, stdin=buffer is not None, relint=lambda: lint_paths(paths, config, relocate=True))
    if statistics:
        from recompile_lint.report.text import format_statistics

        rendered = format_statistics(result)
    else:
        sources = None
        if buffer is not None:
            from recompile_lint.source import SourceError, decode_source

            try:
                # The frame quotes the buffer being linted, not the file on disk.
                text = decode_source(buffer, paths[0])
                sources = {paths[0]: text, os.path.normpath(paths[0]): text}
            except SourceError:
                sources = None
        rendered = render(output_format, result, color=color, sources=sources)
    if output_format not in ("full", "concise", "text") or statistics:
        for error in result.errors:
            where = f"{error.path}:{error.line}:{error.column}" if error.line else error.path
            echo_error(f"recompile-lint: error: {where}: {error.message}")
        if result.sites_not_analysed and (output_format == "json" or statistics):
            # The array has no place for it; json-report, sarif and github carry it themselves.
            from recompile_lint.report.text import sites_not_analysed

            echo_error(f"recompile-lint: {sites_not_analysed(result.sites_not_analysed)}")
    unwritten: list[str] = []
    if output_file:
        from recompile_lint.report.output_file import OutputFileError, write_output_file

        try:
            write_output_file(output_file, rendered)
        except OutputFileError as exc:
            echo_error(f"recompile-lint: error: {exc}")
            sys.exit(EXIT_ERROR)
    else:
        from recompile_lint.frontends.output import write_report

        unwritten = write_report(rendered, result, color=color)  # files the output's encoding could not show
    if result.files_checked == 0 and not result.errors:
        if result.excluded:
            # Every named file is excluded by the configuration: nothing to do, not an error.
            echo_error(f"recompile-lint: all {result.excluded} named file(s) are excluded by the configuration")
            sys.exit(EXIT_CLEAN)
    if config.start_server and _server_to_start():
        start_server_for_next_commands()
    if result.errors or unwritten:
        sys.exit(EXIT_ERROR)
    threshold = SEVERITY_RANK[fail_on]
    if not exit_zero and any(SEVERITY_RANK[finding.severity.value] >= threshold for finding in result.findings):
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_CLEAN)


def no_python_files(paths: Sequence[str]) -> str:
    """The one line for PATHS that hold no Python file to lint (exit status 2)."""
    return (
        "recompile-lint: error: no Python files found in " + ", ".join(paths)
        + " (nothing to lint; a directory walk skips excluded and git-ignored files)"
    )


def _server_to_start() -> bool:
    """Whether ``--start-server`` may start one: this command runs here, not in a resident
    server, and servers are not off (``RECOMPILE_LINT_NO_SERVER``) nor unable to run."""
    from recompile_lint.frontends import client

    return not _in_server and client.server_wanted(["check"])


def start_server_for_next_commands() -> None:
    """``--start-server``: start a resident server in the background (this command does not
    wait for it), so that the next commands of this installation skip the start-up. It keeps
    what this run read and parsed, as it would after a command of its own."""
    from recompile_lint.frontends import client
    from recompile_lint.frontends import server as resident

    pid, problem = resident.start(client.socket_path(), resident.IDLE_TIMEOUT, wait=0, keep=True)
    if pid is None:
        echo_error(f"recompile-lint: warning: {problem}")


@main.command("rules")
@click.option("--all", "show_all", is_flag=True, help="Accepted for symmetry; every rule is always listed.")
def list_rules(show_all: bool) -> None:
    """List every rule: code, name, severities (with boundedness) and summary."""
    from recompile_lint.report.pages import severity_text
    from recompile_lint.rules import all_rules

    rules = all_rules()
    width = max(len(severity_text(rule)) for rule in rules)
    for rule in rules:
        click.echo(f"{rule.code}  {rule.name:<34} {severity_text(rule):<{width}}  {rule.summary}")


@main.command("rule")
@click.argument("code")
def show_rule(code: str) -> None:
    """Print the documentation page of rule CODE: its code or its name, as `recompile-lint
    rules` lists them (RCL101, mutated-global; any case, - or _)."""
    from recompile_lint.report.pages import rule_page

    rule, suggestion = find_rule(code)
    page = rule_page(rule.code) if rule is not None else None
    if page is None:
        hint = f"; did you mean {suggestion}?" if suggestion else ""
        echo_error(f"recompile-lint: error: unknown rule {code!r}{hint} (`recompile-lint rules` lists them)")
        sys.exit(EXIT_ERROR)
    click.echo(page)


def find_rule(word: str):
    """(the rule ``word`` names by code or by name, None) or (None, the closest code or name
    to suggest, or None). Case, ``-`` and ``_`` do not matter: ``mutated_global`` and
    ``RCL101`` name the same rule."""
    import difflib

    from recompile_lint.rules import all_rules

    def key(text: str) -> str:
        return text.strip().lower().replace("_", "-")

    wanted = key(word)
    spellings = {}
    for rule in all_rules():
        spellings[key(rule.code)] = rule
        spellings[key(rule.name)] = rule
    if wanted in spellings:
        return spellings[wanted], None
    close = difflib.get_close_matches(wanted, list(spellings), n=1, cutoff=0.6)
    if not close:
        return None, None
    rule = spellings[close[0]]
    return None, (rule.code if close[0] == key(rule.code) else rule.name)
