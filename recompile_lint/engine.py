"""The lint pipeline: discover -> index -> regions -> rules -> findings -> suppressions.

``lint_paths`` is the one function every front end calls (CLI, flake8 plugin, pre-commit
hook, verifier), so they all report the same findings.
"""

from __future__ import annotations

import fnmatch
import gc
import os
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping, Sequence

from recompile_lint.config import Config
from recompile_lint.discovery import Discovered, discover, find_project_root, marked_project_root
from recompile_lint.models import FileError, Finding, LintResult, Location, Severity
from recompile_lint.codes import matches_code
from recompile_lint.source import read_bytes
from recompile_lint.suppress import is_suppressed

if TYPE_CHECKING:
    from recompile_lint.analysis.context import Report
    from recompile_lint.analysis.index import ProjectIndex
    from recompile_lint.analysis.regions import CompiledRegion
    from recompile_lint.rules import Rule

    # The rule classes, or a function that imports and returns them.
    RuleSource = Sequence[type[Rule]] | Callable[[], Sequence[type[Rule]]]

# The environment switches that leave an analysis stage out, to measure what it adds
# (``analysis.execution.DISABLE_ENV``, ``analysis.risks.NO_VARIATION_ENV``): a cached run's
# result holds only for the same switches.
ANALYSIS_SWITCHES = ("RECOMPILE_LINT_NO_EXECUTION", "RECOMPILE_LINT_NO_VARIATION")

# The analysis modules (libcst among their imports) are imported when a run needs them: a run
# answered from the run cache never loads them.


def selected_rules(config: Config, path: str | None = None) -> list[type[Rule]]:
    """Rules enabled by select / extend-select / ignore (and per-file-ignores for ``path``)."""
    from recompile_lint.rules import all_rules

    out = []
    for rule in all_rules():
        if config.select:
            on = "ALL" in (s.upper() for s in config.select) or matches_code(rule.code, config.select)
        else:
            on = rule.severity is not Severity.INFO
        if config.extend_select and matches_code(rule.code, config.extend_select):
            on = True
        if config.ignore and matches_code(rule.code, config.ignore):
            on = False
        if on and path is not None and file_ignores(config, path, rule.code):
            on = False
        if on:
            out.append(rule)
    return out


def file_ignores(config: Config, path: str, code: str) -> bool:
    if not config.per_file_ignores:
        return False
    candidates = {path.replace(os.sep, "/")}
    if config.source:
        try:
            candidates.add(os.path.relpath(os.path.abspath(path), config.source).replace(os.sep, "/"))
        except ValueError:
            pass
    for pattern, codes in config.per_file_ignores:
        if any(fnmatch.fnmatch(c, pattern) or fnmatch.fnmatch(os.path.basename(c), pattern) for c in candidates):
            if matches_code(code, codes) or "ALL" in (c.upper() for c in codes):
                return True
    return False


@dataclass
class Analysis:
    """The intermediate state of a run, kept for the verifier and for tests."""

    index: ProjectIndex
    regions: list[CompiledRegion]
    reports: list[tuple[type[Rule], Report]]
    # Compile sites of the given files that resolved to nothing (``regions`` says why): what
    # the findings do not cover.
    sites_not_analysed: int = 0


def make_cache(config: Config, root: str | None = None):
    """The per-file facts cache the config asks for (in the project root by default), or None."""
    if not config.cache:
        return None
    from recompile_lint.cache import FactsCache

    return FactsCache.for_config(config, root=root)


def analyse(
    given: Sequence[str],
    project_files: Iterable[str],
    config: Config,
    rules: RuleSource,
    reader: Callable[[str], bytes] | None = None,
    root: str | None = None,
    facts_cache=None,
    digests: dict[str, str] | None = None,
    *,
    related: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Analysis:
    """Find regions over the project and run ``rules`` on them. ``reader`` supplies file bytes
    (an editor's unsaved buffer); by default files are read from disk. ``digests``: content
    digests of the files, where the run cache computed them. ``related``: rules also run on
    the functions elsewhere whose findings can have a location in ``given`` (``report_scope``).
    ``progress`` is told of each file as its facts are parsed (a counter on a terminal)."""
    from recompile_lint.analysis.index import FactsStore, ProjectIndex
    from recompile_lint.analysis.parsing import forget_package_layout

    forget_package_layout()  # a new run sees the packages as they are now
    store = FactsStore(config.compile_functions, facts_cache if facts_cache is not None else make_cache(config, root))
    index = ProjectIndex(project_files, store, reader, jobs=config.jobs, max_bytes=config.max_file_bytes)
    if digests:
        index.digests = digests
    if progress is not None:
        index.parse_listeners.append(progress)
    background: list = []
    try:
        analysis = analyse_index(index, given, config, rules, background, related=related)
    except BaseException:
        for check in background:
            check.close()
        raise
    for check in background:
        index.record_syntax_checks(check.results(skip=index.is_parsed))
    return analysis


def analyse_index(
    index: ProjectIndex,
    given: Sequence[str],
    config: Config,
    rules: RuleSource,
    background: list,
    *,
    related: bool = False,
    risk_regions: Callable[[ProjectIndex, list, list], list] | None = None,
) -> Analysis:
    """The analysis proper, over an index of the project's files. Syntax checks started in
    worker processes are appended to ``background``. ``rules``: the rule classes, or a
    function that imports and returns them (with workers, that import runs while they test
    the files' text). ``risk_regions(index, regions, guards)``: the regions the guard
    model's risks are asked of (an editor's: those whose findings can be in its open
    documents, ``EditSession``); all of them by default."""
    from recompile_lint.analysis.callsites import prime as prime_call_sites
    from recompile_lint.analysis.guards import predict_guards
    from recompile_lint.analysis.index import function_trees
    from recompile_lint.analysis.variation import variation_of
    from recompile_lint.analysis.loader import Loader, report_scope
    from recompile_lint.analysis.regions import RegionFinder
    from recompile_lint.rules import Rule

    loaded: list[Sequence[type[Rule]]] = []

    def load_rules() -> None:
        # The rule modules bring libcst: about 0.4 s of imports.
        if not loaded:
            loaded.append(rules() if callable(rules) else rules)

    # Which files are read, when and how (text tests, worker batches, background syntax
    # checks) is the loader's business: the analysis below reads as the data flow.
    loader = Loader(index, given, background)
    loader.compiling_files(config.compile_functions, meanwhile=load_rules)
    load_rules()
    from recompile_lint.analysis.context import CstCache, FunctionContext, ProjectContext

    rule_classes = loaded[0]
    finder = RegionFinder(index, config.max_depth)
    regions: list[CompiledRegion] = []
    wanted = set(given)
    not_analysed = 0
    for facts in sorted(index.parsed(), key=lambda f: f.path):
        if facts.compile_sites:
            for resolution in finder.resolve(facts):
                if not resolution.resolved and resolution.reason not in ("not-torch", "wrapper") and facts.path in wanted:
                    # A wrapper's own site too, unless its calls are sites (``wrapper``): they are analysed there.
                    not_analysed += 1
                if not resolution.wrapper_body:  # else its callers are sites themselves
                    regions.extend(resolution.regions)
    regions.sort(key=lambda r: (r.name, r.site_path, r.site.span.line))

    # Function rules run only on functions of the given files (see below); with ``related``,
    # also on those whose findings can have a location in a given file.
    only = set(given) if len(set(given)) < len(index.paths) else None
    if only is not None and related:
        only |= report_scope(index, regions, only)
    loader.modules_read_by(regions, only)
    trees = function_trees(index)
    variation_of(index, regions)  # shared by the guard model and the rules that ask about calls
    # What the regions guard decides which other files are read for writes.
    guards = list(predict_guards(index, regions, config.max_depth, trees)) if risk_regions is not None else predict_guards(index, regions, config.max_depth, trees)
    loader.writers_of(regions, only, guards)
    prime_call_sites(index, regions)

    reports: list[tuple[type[Rule], Report]] = []
    function_rules = [r for r in rule_classes if r.check_function is not Rule.check_function]
    project_rules = [r for r in rule_classes if r.check_project is not Rule.check_project]
    instances = {rule: rule() for rule in rule_classes}
    cst_cache = CstCache(index)
    seen: set[tuple[str, str, str]] = set()
    visited: set = set()
    per_region = any(getattr(rule, "per_region", False) for rule in function_rules)
    # A function rule reports in the function's own file, and only the given files are
    # reported: functions elsewhere need no rule run (their facts still serve the analysis).
    # A branch is left out of a function's rule run only where every region that reaches the
    # function rules it out.
    dead: dict = {}  # function -> the spans every region reaching it rules out
    for region in regions:
        spans = dict(region.dead)
        for ref, _, _ in region.reached:
            found = set(spans.get(ref, ()))
            dead[ref] = dead[ref] & found if ref in dead else found
    for region in regions:
        for ref, depth, _ in region.reached:
            if only is not None and ref.path not in only:
                continue
            if ref in visited and not per_region:
                continue
            visited.add(ref)
            fn = index.function(ref)
            facts = index.facts(ref.path)
            if fn is None or facts is None:
                continue
            found = cst_cache.function_node(ref.path, fn)
            if found is None:
                continue
            node, parsed = found
            ctx = FunctionContext(index, region, ref, facts, fn, node, parsed, depth, tuple(sorted(dead.get(ref, ()))))
            for rule in function_rules:
                # One rule run per (function, region entry options) is enough: a helper reached
                # from several regions reports once, naming the first region (sorted).
                key = (ref.path, ref.qualname, rule.code)
                if key in seen and not getattr(rule, "per_region", False):
                    continue
                seen.add(key)
                before = len(ctx.reports)
                instances[rule].check_function(ctx)
                reports.extend((rule, r) for r in ctx.reports[before:])
    pctx = ProjectContext(index, regions, frozenset(only) if only is not None else None)
    if project_rules:
        for rule in project_rules:
            before = len(pctx.reports)
            instances[rule].check_project(pctx)
            reports.extend((rule, r) for r in pctx.reports[before:])
    asked = regions if risk_regions is None else risk_regions(index, regions, guards)  # type: ignore[arg-type]
    reports.extend(report_risks(index, asked, rule_classes, pctx, config.max_depth, trees, [r for _, r in reports]))
    return Analysis(index=index, regions=regions, reports=reports, sites_not_analysed=not_analysed)


def report_risks(index: ProjectIndex, regions: Sequence[CompiledRegion], selected: Sequence[type[Rule]], ctx, max_depth: int, trees=None, earlier: Sequence = ()) -> list:
    """The guard model's risks, each reported by the rule that claims it (asked in claim order;
    a risk whose rule is not selected is not reported by another one). A risk on a guard that
    an ``earlier`` report (of a function or project rule) already names for its region is the
    same recompile found another way: it is not reported again."""
    from recompile_lint.analysis.risks import risks
    from recompile_lint.rules import Rule, all_rules

    claimers = sorted((r for r in all_rules() if r.claims is not Rule.claims), key=lambda r: (r.claim_order, r.code))
    wanted = set(selected)
    if not wanted.intersection(claimers):
        return []
    instances = {rule: rule() for rule in claimers}
    out = []
    # Guards the function and project rules already reported, by region: a risk on the same
    # guard is the same recompile found another way (one finding for it).
    before = list(earlier) + list(ctx.reports)
    named = {(r.region, r.guard.source) for r in before if r.guard is not None and r.guard.source}
    lines = {(r.region, r.path, r.span.line) for r in before}
    # A region a report already finds called with varying tensor sizes under ``dynamic=False``
    # (RCL204 names one argument): a run's shape change of another argument of it is the same
    # recompile (Dynamo reports one of them, a plain tensor before a parameter).
    shaped = {r.region for r in before if r.guard is not None and r.guard.kind == "TENSOR_MATCH" and r.guard.detail == "size" and r.region}
    for risk in risks(index, list(regions), max_depth, trees):
        if (risk.region.name, risk.guard.guard.source) in named:
            continue
        if risk.found_by_run and risk.region.dynamic == "False" and risk.region.name in shaped and risk.guard.guard.kind == "TENSOR_MATCH" and risk.guard.guard.detail in ("rank", "size"):
            continue
        if risk.found_by_run and (risk.region.name, risk.guard.read.path, risk.guard.read.line) in lines:
            continue  # a rule of its own already reports that read of the region
        for rule in claimers:
            if instances[rule].claims(risk):
                if rule in wanted:
                    before = len(ctx.reports)
                    instances[rule].check_risk(risk, ctx)
                    out.extend((rule, r) for r in ctx.reports[before:])
                break
    return out


def shown_path(path: str, given: Mapping[str, str] | None = None) -> str:
    """A path as related locations and messages show it: relative to the working directory
    (``../lib/x.py`` above it); absolute only where no relative path exists (another drive).
    A finding's own path is the file as the user named it (``given``)."""
    from recompile_lint.report.wording import shown_path as relative

    return relative(path)


def to_finding(rule: type[Rule], report: Report, display: str, given: Mapping[str, str] | None = None) -> Finding:
    """The finding a rule's report makes, at its own (primary) location shown as ``display``.

    The message is cut into headline, explanation and fix here (``report.wording``), unless
    the report gives its own ``title`` and ``fix``; places in it are made relative.
    """
    from recompile_lint.report.wording import Wording, relative_places, split_message

    span = report.span
    evidence = tuple(dict.fromkeys(replace(location, path=shown_path(location.path)) for location in report.evidence))
    message = relative_places(report.message)
    title, fix = getattr(report, "title", ""), getattr(report, "fix", "")
    wording = Wording(title, getattr(report, "explanation", ""), fix) if title and fix else split_message(message, evidence)
    return Finding(
        path=display,
        line=span.line,
        column=span.column,
        code=rule.code,
        end_line=span.end_line,
        end_column=span.end_column,
        name=rule.name,
        severity=report.severity or rule.severity,
        bounded=report.bounded or rule.bounded,
        message=message,
        region=report.region,
        function=report.function,
        subject=report.subject,
        guard=report.guard,
        evidence=evidence,
        title=wording.title,
        explanation=wording.explanation,
        fix=wording.fix,
    )


# Which of a finding's locations in a file it is reported at, most telling first: the change
# (a write, a call) before the compile site, then the reads.
ROLE_ORDER = {"write": 0, "call": 1, "compile-site": 2, "read": 3, "use": 4}


def locations_in(finding: Finding, wanted: Callable[[str], bool]) -> list[Location]:
    """One location of ``finding`` per file ``wanted`` accepts (the most telling one, by
    ``ROLE_ORDER``, then the first in the file), in path order."""
    best: dict[str, Location] = {}
    for location in finding.evidence:
        if location.role == "primary" or not wanted(location.path):
            continue
        key = (ROLE_ORDER.get(location.role, 9), location.line, location.column)
        current = best.get(location.path)
        if current is None or key < (ROLE_ORDER.get(current.role, 9), current.line, current.column):
            best[location.path] = location
    return [best[path] for path in sorted(best)]


def reported_at(finding: Finding, at: Location) -> Finding:
    """``finding`` reported at ``at``, one of its other locations (in a file a commit changed,
    where the primary's file is not named): worded from there, with the primary location
    first among the related ones."""
    from recompile_lint.report.wording import reported_elsewhere

    primary = Location(
        shown_path(finding.path), finding.line, finding.column, "primary", finding.title or finding.message, finding.end_line, finding.end_column
    )
    title = reported_elsewhere(finding.title or finding.message, at, primary, finding.function, finding.region)
    parts = [title + "."]
    if finding.explanation:
        parts.append(finding.explanation)
    if finding.fix:
        parts.append(f"Fix: {finding.fix}")
    return replace(
        finding,
        path=at.path,
        line=at.line,
        column=at.column,
        end_line=at.end_line or at.line,
        end_column=at.end_column or at.column,
        message=" ".join(parts),
        title=title,
        evidence=(primary,) + tuple(location for location in finding.evidence if location != at),
    )


def project_scope(paths: Sequence[str], config: Config) -> tuple[str, tuple[str, ...]]:
    """(project root, every Python file the analysis sees) for the given paths.

    With a project marker above the paths, that is the whole project; without one, the
    project's extent is unknown and only the given paths are read.
    """
    excludes = config.exclude + config.extend_exclude
    marked = marked_project_root(list(paths) or ["."], excludes)
    if marked is None:
        root = str(find_project_root(list(paths) or ["."], excludes))
        return root, discover(list(paths) or ["."], excludes, root, config.respect_gitignore).files
    return str(marked), discover([str(marked)], excludes, str(marked), config.respect_gitignore).files


def lint_paths(
    paths: Sequence[str],
    config: Config,
    *,
    project_files: Sequence[str] | None = None,
    reader: Callable[[str], bytes] | None = None,
    buffers: Mapping[str, bytes] | None = None,
    noqa: bool = True,
    retain: list | None = None,
    relocate: bool = False,
    progress: Callable[[str], None] | None = None,
    planned: Callable[[list[str]], None] | None = None,
) -> LintResult:
    """Lint ``paths`` (files or directories). Findings are reported only in those files, but
    the analysis sees the whole project around them (callers, helpers, mutation sites).

    ``relocate``: a finding whose own file is not among ``paths`` is reported in the named
    files that hold another of its locations (the write in ``train.py`` that makes the read
    in ``model.py`` recompile), worded from there (``collect``). The front ends ask for it;
    the verifier asks for it to know which findings to probe, then probes them at their
    primary locations (``verify.command.findings_to_verify``). ``progress`` is told of each
    file as it is parsed and of each named file as its check ends; ``planned``, first, of the
    named files (absolute paths): together, a counter of the files done (``[n/N]``).

    ``reader`` supplies file bytes; ``buffers`` (absolute path -> bytes: an editor's unsaved
    text) stand in for those files, the others read from disk. Neither kind of run is kept in
    the run cache, but with ``buffers`` the files' content digests still name them where a
    resident server remembers what it tested.

    ``noqa=False`` leaves ``# noqa`` to the caller (flake8 applies its own). ``retain``: a list
    the analysis (index, facts, regions) is appended to, for a caller about to end its process.
    The run's objects are then kept out of the cyclic collector's sight (``gc.freeze``): its
    next collection would walk them all (0.8 s after the torch tree) only to keep them.
    """
    excludes = config.exclude + config.extend_exclude
    root = str(find_project_root(list(paths) or ["."], excludes))
    discovered = discover(list(paths) or ["."], excludes, root, config.respect_gitignore)
    given = {os.path.abspath(p): p for p in discovered.files}
    if planned is not None:
        planned(list(given))
    project = tuple(project_files) if project_files is not None else project_scope(paths, config)[1]
    all_files = sorted({os.path.abspath(p) for p in project} | set(given))
    facts_cache = make_cache(config, root)
    # A run over exactly the same files, settings and linter code as a cached one has the
    # same result (an editor's unsaved buffers are not files: those runs are not cached).
    if buffers:
        if reader is not None:
            raise ValueError("lint_paths takes a reader or buffers, not both")
        reader = partial(_buffer_or_disk, buffers)
    run_cache = facts_cache.run_cache(all_files[0] if all_files else root) if facts_cache is not None and (reader is None or buffers) else None
    key = None
    if run_cache is not None and buffers:
        run_cache.buffer_digests(all_files, buffers)
        run_cache.save_table(all_files)
    elif run_cache is not None:
        switches = tuple(os.environ.get(name, "") for name in ANALYSIS_SWITCHES)
        settings = repr((replace(config, jobs=1, cache=True, cache_dir=None, start_server=False), noqa, relocate, discovered.errors, discovered.excluded, switches))
        key = run_cache.key(settings, sorted(given.items()), all_files)
        run_cache.save_table(all_files)
        cached = run_cache.get(key) if key is not None else None
        if cached is not None:
            return cached
    with cyclic_gc_paused(keep=retain is not None):
        digests = run_cache.digests if run_cache is not None else None
        analysis = analyse(list(given), all_files, config, partial(selected_rules, config), reader, root, facts_cache, digests, related=relocate, progress=progress)
        result = collect(analysis, given, discovered, config, noqa, relocate, checked=progress)
    if retain is not None:
        retain.append(analysis)
    if run_cache is not None and key is not None:
        run_cache.put(key, result)
    return result


def lint_buffer(path: str, data: bytes, config: Config, *, noqa: bool = True, retain: list | None = None, relocate: bool = False) -> LintResult:
    """Lint ``data`` (an editor's unsaved buffer) as the file ``path``.

    When ``path`` is a file, the buffer stands in for it and the rest of its project is read
    from disk, as ``lint_paths([path])`` reads it. When there is no such file (a buffer not
    saved yet), the buffer is linted alone, as a one-file project; findings and errors still
    name ``path``.
    """
    absolute = os.path.abspath(path)
    if os.path.isfile(absolute):
        return lint_paths([path], config, buffers={absolute: data}, noqa=noqa, retain=retain, relocate=relocate)
    return lint_buffer_alone(path, data, config, noqa=noqa)


def _buffer_or_disk(buffers: Mapping[str, bytes], path: str) -> bytes:
    data = buffers.get(os.path.abspath(path))
    return data if data is not None else read_bytes(path)


def lint_buffer_alone(path: str, data: bytes, config: Config, *, noqa: bool = True) -> LintResult:
    """Lint ``data`` as a one-file project (a copy in a temporary directory); findings and
    errors name ``path`` (``-`` or ``stdin`` for standard input)."""
    import tempfile

    name = os.path.basename(path)
    if not name.endswith((".py", ".pyi")):
        name = "stdin.py"
    with tempfile.TemporaryDirectory(prefix="recompile-lint-") as directory:
        copy = os.path.join(directory, name)
        with open(copy, "wb") as handle:
            handle.write(data)
        result = lint_paths([copy], replace(config, cache=False), project_files=[copy], noqa=noqa)
    # Messages cite the temporary copy where they quote a line of it; name ``path`` instead.
    spellings = sorted({copy, os.path.relpath(copy)}, key=len, reverse=True)

    def rename(message: str) -> str:
        for spelling in spellings:
            message = message.replace(spelling, path)
        return message

    return replace(
        result,
        findings=tuple(
            replace(f, path=path, message=rename(f.message), title=rename(f.title), explanation=rename(f.explanation), fix=rename(f.fix))
            for f in result.findings
        ),
        errors=tuple(replace(e, path=path, message=rename(e.message)) for e in result.errors),
    )


@contextmanager
def cyclic_gc_paused(keep: bool = False) -> Iterator[None]:
    """Run without the cyclic garbage collector (restored afterwards).

    A run builds millions of long-lived, acyclic objects (syntax trees, facts): each
    collection walks all of them again, and on the torch tree that made ``ast.parse`` take
    three times as long. Reference counting still frees everything that is not in a cycle.

    ``keep``: the objects of the run are kept until the process ends. They are moved out of
    the collector's sight (``gc.freeze``): every object made with the collector paused is
    still in its youngest generation, and the first collection after it resumes would walk
    them all (0.8 s after the torch tree).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if keep:
            gc.freeze()
        if enabled:
            gc.enable()


def collect(analysis: Analysis, given: dict[str, str], discovered: Discovered, config: Config, noqa: bool = True, relocate: bool = False, checked: Callable[[str], None] | None = None) -> LintResult:
    """Findings in the given files (``given``: absolute path -> the path as named), minus
    suppressions; errors of the given files.

    A finding is reported once, at its primary location, when that file is given. With
    ``relocate``, a finding whose primary file is not given is reported in each given file
    that holds another of its locations, at that location (``reported_at``): pre-commit names
    only the changed files, and the change that makes code recompile may be the write in
    ``train.py`` while the read is in ``model.py``. ``# noqa`` and per-file ignores apply
    where the finding is reported. ``checked`` is told of each given file (absolute) once its
    syntax is known.
    """
    index = analysis.index
    findings: dict[tuple, Finding] = {}
    suppressed = 0
    named = {shown_path(path): path for path in given}

    def line_of(path: str, line: int) -> str:
        lines = index.lines(path)
        return lines[line - 1] if 0 < line <= len(lines) else ""

    for rule, report in analysis.reports:
        path = os.path.abspath(report.path)
        if path in given:
            places = [(None, path)]
        elif relocate:
            at_primary = to_finding(rule, report, shown_path(path))
            places = [(at, named[at.path]) for at in locations_in(at_primary, named.__contains__)]
        else:
            continue
        for at, absolute in places:
            display = given[absolute]
            if file_ignores(config, display, rule.code):
                continue
            line = report.span.line if at is None else at.line
            if noqa and is_suppressed(rule.code, line_of(absolute, line)):
                suppressed += 1
                continue
            finding = to_finding(rule, report, display) if at is None else replace(reported_at(at_primary, at), path=display)
            primary = finding.primary
            key = (finding.path, finding.line, finding.column, finding.code, (primary.path, primary.line, primary.column) if primary else None)
            findings.setdefault(key, finding)
    errors = list(discovered.errors)
    for path, display in given.items():
        index.check_syntax(path)
        if checked is not None:
            checked(path)
        error = index.errors.get(path)
        if error is not None:
            errors.append(FileError(path=display, message=error.message, line=error.line, column=error.column))
    return LintResult(
        findings=tuple(sorted(findings.values())),
        errors=tuple(sorted(set(errors))),
        files_checked=len(given),
        suppressed=suppressed,
        excluded=discovered.excluded,
        sites_not_analysed=analysis.sites_not_analysed,
    )
