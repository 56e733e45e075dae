"""``recompile-lint verify``: lint, then confirm each finding with a compiled probe.

Importing this module does not import torch (the CLI imports it to register the command);
torch is only imported in the child processes the verifier starts.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any, Sequence

import click

EXIT_CLEAN, EXIT_CONFIRMED, EXIT_ERROR = 0, 1, 2
INSTALL_HINT = "pip install 'recompile-lint[verify]'"


def user_cache_dir(paths: Sequence[str]) -> str:
    """Where verify keeps the lint cache: under the user's cache directory, one folder per
    project root, so that verify writes nothing into the project it runs."""
    import hashlib

    from recompile_lint.discovery import find_project_root

    root = os.path.realpath(str(find_project_root(list(paths))))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(root.encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return os.path.join(base, "recompile-lint", "verify", digest)


def torch_available() -> bool:
    """Whether torch can be imported here, without importing it."""
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def _say(line: str) -> None:
    """One line on standard error, its repository text (paths, messages) escaped."""
    from recompile_lint.report.sanitize import escape

    click.echo(escape(line), err=True)


def _fail(message: str) -> None:
    _say(f"recompile-lint: error: {message}")
    sys.exit(EXIT_ERROR)


def _split(values: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for value in values:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return tuple(out)


@click.command("verify")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--run", "run_command", metavar="COMMAND",
              help="Run your own program (e.g. \"python train.py --steps 20\") under the recorder "
                   "instead of probing each finding.")
@click.option("--backend", default=None, help="Backend for compiled probes (default: eager; e.g. inductor).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None,
              help="Where probe tensors live (default: cpu).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds allowed per module (per run with --run); default 120.")
@click.option("--calls", type=click.IntRange(min=2), default=None,
              help="Calls per probe (default 12: enough to reach recompile_limit).")
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=1, show_default=True,
              help="Modules probed at once (0: one per core); each child imports torch.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@click.option("--select", multiple=True, help="Codes or prefixes to verify (replaces the default set).")
@click.option("--extend-select", multiple=True, help="Codes or prefixes to enable in addition.")
@click.option("--ignore", multiple=True, help="Codes or prefixes to skip.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="pyproject.toml to read settings from.")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
@click.option("--no-cache", is_flag=True,
              help="Lint without the facts cache (verify keeps it in your cache directory, never in the project).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings are confirmed or a module timed out.")
@click.option("--fix", is_flag=True, help="Probe the fixed code of each finding with a safe fix; write only the fixes under which the region compiles one graph.")
@click.option("--unsafe-fixes", is_flag=True, help="Prove and write the unsafe fixes too (implies --fix).")
def verify(paths: tuple[str, ...], run_command: str | None, backend: str | None, device: str | None,
           timeout: float | None, calls: int | None, jobs: int, output_format: str, select: tuple[str, ...],
           extend_select: tuple[str, ...], ignore: tuple[str, ...], config_file: str | None,
           quiet: bool, no_cache: bool, exit_zero: bool, fix: bool = False, unsafe_fixes: bool = False) -> None:
    """Confirm findings in PATHS by running compiled probes (needs torch).

    Each finding's module is imported in a supervised child process with a timeout; the blamed
    value is varied between calls and every recompile is recorded. Verdicts: confirmed,
    not-reproduced, not-exercised, unverifiable (with the reason). Exit code 1 when any finding
    is confirmed, a module timed out (or, with --run, the program recompiled or timed out), 0
    otherwise (always with --exit-zero), 2 on usage errors. Nothing is written into the
    project: the lint cache lives in your cache directory (--no-cache: none at all).
    """
    from recompile_lint.config import ConfigError, load_config
    from recompile_lint.verify.api import VerifyOptions, VerifyUsageError, check_device

    paths = tuple(paths) or (".",)
    if not torch_available():
        _fail(f"`recompile-lint verify` runs compiled probes and needs torch: {INSTALL_HINT}")
    try:
        from recompile_lint.codes import validate_codes

        config = load_config(paths, explicit=config_file)
        for option, values in (("--select", select), ("--extend-select", extend_select), ("--ignore", ignore)):
            bad = validate_codes(_split(values))
            if bad:
                raise ConfigError(f"{option}: unknown rule code or prefix {', '.join(bad)}")
        config = config.with_overrides(
            select=_split(select) or None,
            extend_select=_split(extend_select) or None,
            ignore=_split(ignore) or None,
            cache=False if no_cache else None,
            cache_dir=None if no_cache else user_cache_dir(paths),
        )
    except ConfigError as exc:
        _fail(str(exc))
        return
    settings = config.verify
    options = VerifyOptions(
        backend=backend or settings.backend,
        device=device or settings.device,
        calls=calls or settings.calls,
        timeout=timeout or settings.timeout,
        examples=settings.examples,
        jobs=jobs or (os.cpu_count() or 1),
    )
    progress = None if quiet else _say
    try:
        from recompile_lint.engine import lint_paths
    except ImportError as exc:  # pragma: no cover - a broken install
        _fail(f"the static linter is not available: {exc}")
        return
    try:
        result = findings_to_verify(paths, config)
    except Exception as exc:  # noqa: BLE001 - one clear line, never a traceback
        _fail(f"internal error while linting: {type(exc).__name__}: {exc}")
        return
    for error in result.errors:
        where = f"{error.path}:{error.line}:{error.column}" if error.line else error.path
        _say(f"recompile-lint: error: {where}: {error.message}")
    if result.files_checked == 0 and not result.errors:
        _fail("no Python files found in " + ", ".join(paths))
    try:
        check_device(options)
        if run_command is not None:
            if fix or unsafe_fixes:
                _fail("--fix proves fixes with the probes: it does not combine with --run")
            _verify_run(run_command, result.findings, options, output_format, progress, exit_zero)
        else:
            _verify_probes(result.findings, options, output_format, progress, exit_zero, (paths, unsafe_fixes) if fix or unsafe_fixes else None)
    except VerifyUsageError as exc:
        _fail(str(exc))


def findings_to_verify(paths: Sequence[str], config: Any) -> Any:
    """The lint result of ``paths`` with every finding that ``recompile-lint PATHS`` reports,
    each at its primary location, where the probe runs.

    The linter reports a finding in the named files that hold any of its locations (a commit
    that changes only ``train.py``, where the loop writes the global that ``model.py``'s
    compiled code reads, gets the finding at the write). Those findings are verified too:
    the files that hold their primary locations are linted as well, and the findings found
    there that the named files were given are kept (their ``# noqa`` applied where they were
    reported, not again at the primary). So the verify hook blocks what the lint hook blocks.
    """
    from dataclasses import replace

    from recompile_lint.engine import lint_paths

    result = lint_paths(paths, config, relocate=True)
    here = [finding for finding in result.findings if finding.primary is None]
    wanted: dict[tuple[str, int, int, str], None] = {}
    for finding in result.findings:
        primary = finding.primary
        if primary is not None:
            wanted[(os.path.abspath(primary.path), primary.line, primary.column, finding.code)] = None
    if not wanted:
        return result
    elsewhere = lint_paths(sorted({path for path, _, _, _ in wanted}), config, noqa=False)
    seen = {(os.path.abspath(f.path), f.line, f.column, f.code) for f in here}
    kept = [
        finding for finding in elsewhere.findings
        if (key := (os.path.abspath(finding.path), finding.line, finding.column, finding.code)) in wanted and key not in seen
    ]
    return replace(result, findings=tuple(sorted([*here, *kept])))


def _verify_probes(findings: Any, options: Any, output_format: str, progress: Any, exit_zero: bool, fixing: Any = None) -> None:
    from recompile_lint.verify.api import ModuleTiming, verify_findings
    from recompile_lint.verify.report import render_json, render_text
    from recompile_lint.verify.results import Verdict

    if progress is not None and findings:
        progress(f"verifying {len(findings)} finding(s) with backend={options.backend}, "
                 f"device={options.device}, timeout={options.timeout:g}s per module")
    timings: list[ModuleTiming] = []
    verified = verify_findings(findings, options, progress, timings)
    click.echo(render_json(verified) if output_format == "json" else render_text(verified), nl=False)
    if fixing is not None:
        _prove_fixes(verified, options, progress, output_format, *fixing)
    timed_out = [t.module for t in timings if t.timed_out]
    if timed_out:
        _say(f"recompile-lint: {len(timed_out)} module(s) ran past the {options.timeout:g}s timeout: " + ", ".join(timed_out))
    confirmed = any(v.verification.verdict is Verdict.CONFIRMED for v in verified)
    sys.exit(EXIT_CONFIRMED if (confirmed or timed_out) and not exit_zero else EXIT_CLEAN)


def _prove_fixes(verified: Any, options: Any, progress: Any, output_format: str, paths: Sequence[str], unsafe: bool) -> None:
    """``--fix``: each fix probed on a copy of the fixed code; the proven ones written."""
    from recompile_lint.report.sanitize import escape_path
    from recompile_lint.verify.api import verify_findings
    from recompile_lint.verify.fixes import apply_proven, prove_fixes, render_proofs

    if progress is not None:
        progress("probing the fixed code of each finding with a fix")
    proofs, problems = prove_fixes(verified, paths, unsafe, lambda moved: verify_findings(moved, options, progress))
    written, unwritten = apply_proven(proofs, paths, unsafe)
    for path, why in [*problems, *unwritten]:
        _say(f"recompile-lint: warning: {path}: {why}")
    lines = render_proofs(proofs, written)
    if output_format == "json":
        import json

        from recompile_lint.fixes.apply import display
        from recompile_lint.report.sanitize import safe_json

        _say(safe_json(json.dumps({"fixes": [proof.to_dict() for proof in proofs], "written": [display(path) for path in written]})))
    else:
        click.echo("\n".join(escape_path(line) for line in lines))


def _verify_run(command: str, findings: Any, options: Any, output_format: str, progress: Any,
                exit_zero: bool) -> None:
    from recompile_lint.verify.api import verify_run
    from recompile_lint.verify.report import render_run_json, render_run_text
    from recompile_lint.verify.results import Verdict

    report = verify_run(command, findings, options, progress=progress)
    click.echo(render_run_json(report) if output_format == "json" else render_run_text(report), nl=False)
    confirmed = any(v.verification.verdict is Verdict.CONFIRMED for v in report.findings)
    attention = confirmed or report.unpredicted or report.timed_out
    sys.exit(EXIT_CONFIRMED if attention and not exit_zero else EXIT_CLEAN)
