"""The pytest plugin: fail (or warn about) a test whose compiled code recompiles beyond a budget.

It is a ``pytest11`` entry point, so pytest loads it in every run where recompile-lint is
installed. Until ``--recompiles=fail|warn`` (or the ``recompiles`` ini option) turns it on it
only declares its options and the ``recompiles`` marker: no torch import, no per-test hook.

Turned on, each test runs under the verifier's in-process ``Recorder`` (setup and call, with
Dynamo's caches reset before each test unless ``--recompiles-keep-cache``). Per compiled
function that recompiled, the test's report holds Dynamo's guard-failure text and the line it
points at, the count, whether ``recompile_limit`` was reached, and the static finding that
predicted it (the files of the recompiled code are linted once per session) or "not
predicted". The recompile that automatic dynamic shapes makes (a size or int that then became
dynamic, read from Dynamo's own record of it) is counted apart and allowed unless
``--recompiles-count-dynamic``. ``--recompiles-json`` writes the session in the JSON of
``verify --run`` (plus a ``tests`` list), which ``recompile-lint explain`` reads.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

import pytest

from recompile_lint.report.output_file import OutputFileError, write_output_file

if TYPE_CHECKING:
    from recompile_lint.models import Finding
    from recompile_lint.verify.recorder import Recorder, Recording
    from recompile_lint.verify.results import LimitHit, RecompileEvent

PLUGIN_NAME = "recompile-lint-recompiles"
MODES = ("fail", "warn", "off")
MARKER = (
    "recompiles(max=N): recompiles allowed per compiled function in this test "
    "(recompile-lint's --recompiles budget; overrides --recompile-budget)"
)
MAX_GUARDS = 3  # guard lines shown per function
INSTALL_HINT = "pip install 'recompile-lint[verify]'"


class RecompileWarning(pytest.PytestWarning):
    """A test recompiled beyond its budget (``--recompiles=warn``)."""


def _budget(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("recompiles", "torch.compile recompile budget (recompile-lint)")
    group.addoption("--recompiles", choices=MODES, default=None, dest="recompiles",
                    help="fail: a test whose compiled functions recompile beyond the budget fails; "
                         "warn: a warning and a summary instead; off (default): do nothing.")
    group.addoption("--recompile-budget", type=_budget, default=None, dest="recompile_budget", metavar="N",
                    help="Recompiles allowed per compiled function and test, beyond its first compile "
                         "(default 0; @pytest.mark.recompiles(max=N) overrides it per test).")
    group.addoption("--recompiles-count-dynamic", action="store_true", default=None,
                    dest="recompiles_count_dynamic",
                    help="Count the recompile that automatic dynamic shapes makes (a size or int that "
                         "then becomes dynamic); by default it is allowed.")
    group.addoption("--recompiles-keep-cache", action="store_true", default=None, dest="recompiles_keep_cache",
                    help="Keep Dynamo's caches across tests (default: torch._dynamo.reset() before each test).")
    group.addoption("--recompiles-json", default=None, dest="recompiles_json", metavar="FILE",
                    help="Write every recorded recompile to FILE in the JSON of `recompile-lint verify --run`.")
    parser.addini("recompiles", "fail, warn or off: what --recompiles does by default", default="off")
    parser.addini("recompile_budget", "default for --recompile-budget", default="0")
    parser.addini("recompiles_count_dynamic", "default for --recompiles-count-dynamic", type="bool", default=False)
    parser.addini("recompiles_keep_cache", "default for --recompiles-keep-cache", type="bool", default=False)
    parser.addini("recompiles_json", "default for --recompiles-json", default="")


@dataclass(frozen=True)
class Settings:
    mode: str  # "fail" or "warn"
    budget: int
    count_dynamic: bool
    keep_cache: bool
    json_path: str  # "" for none


def _option(config: pytest.Config, name: str) -> Any:
    value = config.getoption(name)
    return config.getini(name) if value is None else value


def read_settings(config: pytest.Config) -> Settings | None:
    """The plugin's settings (command line over ini), or None when it is off."""
    mode = str(_option(config, "recompiles") or "off").strip().lower()
    if mode not in MODES:
        raise pytest.UsageError(f"recompiles = {mode!r} in the ini file: expected one of {', '.join(MODES)}")
    if mode == "off":
        return None
    budget = _option(config, "recompile_budget")
    try:
        budget = _budget(str(budget).strip())
    except argparse.ArgumentTypeError as exc:
        raise pytest.UsageError(f"recompile_budget in the ini file: {exc}") from None
    json_path = str(config.getoption("recompiles_json") or "").strip()
    base = str(config.invocation_params.dir)
    if not json_path and str(config.getini("recompiles_json")).strip():
        json_path = str(config.getini("recompiles_json")).strip()
        base = str(config.inipath.parent if config.inipath else config.rootpath)  # as pytest's own ini paths
    if json_path:
        json_path = os.path.abspath(os.path.join(base, json_path))
        parent = os.path.dirname(json_path)
        if os.path.isdir(json_path):
            raise pytest.UsageError(f"--recompiles-json {json_path}: a directory, not a file")
        if not os.path.isdir(parent):
            raise pytest.UsageError(f"--recompiles-json {json_path}: the directory {parent} does not exist")
    return Settings(mode, budget, bool(_option(config, "recompiles_count_dynamic")),
                    bool(_option(config, "recompiles_keep_cache")), json_path)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    settings = read_settings(config)
    if settings is None:
        return
    from recompile_lint.verify.command import torch_available

    if not torch_available():
        raise pytest.UsageError(f"--recompiles records torch.compile recompiles and needs torch: {INSTALL_HINT}")
    config.pluginmanager.register(RecompileBudget(config, settings), PLUGIN_NAME)


# ---- what one test recorded -----------------------------------------------------------------


@dataclass
class FunctionRecompiles:
    """One compiled function (code object) that recompiled during one test."""

    function: str
    file: str
    first_line: int
    events: list[RecompileEvent] = field(default_factory=list)
    dynamic: int = 0  # of ``events``: the recompiles that made a size or int dynamic
    limit: LimitHit | None = None
    predicted: Finding | None = None

    def counted(self, count_dynamic: bool) -> int:
        return len(self.events) - (0 if count_dynamic else self.dynamic)

    def guards(self) -> list[str]:
        """The distinct guard failures behind its recompiles, newest cache entry first."""
        seen: dict[str, None] = {}
        for event in self.events:
            if event.reasons:
                seen.setdefault(event.reasons[0].describe(), None)
        return list(seen)


@dataclass
class RecordedTest:
    """What the recorder saw during one test, judged against its budget."""

    nodeid: str
    allowed: int
    functions: list[FunctionRecompiles]
    count_dynamic: bool
    events: tuple[RecompileEvent, ...] = ()
    limit_hits: tuple[LimitHit, ...] = ()
    graphs: tuple[tuple[tuple[str, int, str], int], ...] = ()
    note: str = ""  # the static lint could not run, and why

    def over(self) -> list[FunctionRecompiles]:
        """Functions beyond the budget: more recompiles than allowed, or the limit reached (after
        it Dynamo runs new values eagerly and records nothing: the count is a floor)."""
        return [f for f in self.functions if f.counted(self.count_dynamic) > self.allowed or f.limit is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodeid": self.nodeid,
            "allowed": self.allowed,
            "over_budget": bool(self.over()),
            "functions": [
                {
                    "function": f.function,
                    "file": f.file,
                    "first_line": f.first_line,
                    "recompiles": len(f.events),
                    "automatic_dynamic": f.dynamic,
                    "counted": f.counted(self.count_dynamic),
                    "limit_hit": f.limit is not None,
                    "guards": f.guards(),
                    "predicted_by": f.predicted.code if f.predicted is not None else None,
                }
                for f in self.functions
            ],
        }


def _same_file(a: str, b: str) -> bool:
    from recompile_lint.verify.verdicts import same_path

    return same_path(a, b)


def group_by_function(events: tuple[RecompileEvent, ...], limit_hits: tuple[LimitHit, ...]) -> list[FunctionRecompiles]:
    """One entry per recompiled code object, in the order they first recompiled."""
    groups: dict[tuple[str, int, str], FunctionRecompiles] = {}
    for event in events:
        key = (event.file, event.first_line, event.function)
        groups.setdefault(key, FunctionRecompiles(event.function, event.file, event.first_line)).events.append(event)
    for hit in limit_hits:
        owner = next((g for g in groups.values() if g.function == hit.function and _same_file(g.file, hit.file)
                      and hit.first_line in (0, g.first_line)), None)
        if owner is None:
            owner = groups.setdefault((hit.file, hit.first_line, hit.function),
                                      FunctionRecompiles(hit.function, hit.file, hit.first_line))
        owner.limit = owner.limit or hit
    return list(groups.values())


# ---- automatic dynamic shapes -----------------------------------------------------------------


def dynamic_sources() -> dict[tuple[str, int, str], set[str]]:
    """Per code object (file, first line, name): the inputs automatic dynamic shapes made
    dynamic (``n``, ``x``), from Dynamo's own record (private; {} when it moved)."""
    try:
        from torch._dynamo import pgo

        states = list(pgo.get_code_state().items())
        token = pgo.auto_dynamic
    except Exception:  # noqa: BLE001 - private API: without it every recompile counts
        return {}
    found: dict[tuple[str, int, str], set[str]] = {}
    for code_id, state in states:
        try:
            key = (str(code_id.filename), int(code_id.firstlineno), str(code_id.name))
            for source, entry in dict(state.automatic_dynamic).items():
                size = entry.size
                dynamic = any(s is token for s in size) if isinstance(size, tuple) else entry.scalar is token
                if dynamic:
                    found.setdefault(key, set()).add(re.sub(r"L\['([^']+)'\]", r"\1", str(source)))
        except Exception:  # noqa: BLE001 - a field moved: this code object's recompiles all count
            continue
    return found


def _mentions(guard: str, name: str) -> bool:
    if f"tensor '{name}'" in guard:
        return True
    return re.search(r"(?<![\w.\['])" + re.escape(name) + r"(?![\w'])", guard) is not None


def mark_dynamic(group: FunctionRecompiles, sources: set[str]) -> None:
    """Count the recompiles that made one of ``sources`` dynamic: the first that blames each,
    provided no later recompile blames it again on its newest cache entry (Dynamo marks a
    global int dynamic and still specializes it: such a value never stopped recompiling)."""
    counted: set[int] = set()
    for name in sorted(sources):
        blamed = [i for i, event in enumerate(group.events) if any(_mentions(r.guard, name) for r in event.reasons)]
        if not blamed:
            continue
        later = group.events[blamed[0] + 1:]
        if not any(event.reasons and _mentions(event.reasons[0].guard, name) for event in later):
            counted.add(blamed[0])
    group.dynamic = len(counted)


# ---- static findings ------------------------------------------------------------------------


def _library_dirs() -> tuple[str, ...]:
    dirs = {sysconfig.get_paths().get(name, "") for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(os.path.realpath(d) + os.sep for d in dirs if d)


class StaticFindings:
    """The linter's findings for the files recompiled code lives in, each file linted once."""

    def __init__(self) -> None:
        self.linted: set[str] = set()
        self.findings: list[Finding] = []
        self.errors: list[str] = []
        self._libraries = _library_dirs()

    def wanted(self, path: str) -> bool:
        """Project files only: the standard library and installed packages are not linted."""
        if not path.endswith(".py") or not os.path.isfile(path):
            return False
        real = os.path.realpath(path)
        parts = real.split(os.sep)
        return not real.startswith(self._libraries) and "site-packages" not in parts and "dist-packages" not in parts

    def lint(self, files: set[str]) -> None:
        new = sorted(f for f in {os.path.realpath(p) for p in files if self.wanted(p)} if f not in self.linted)
        if not new:
            return
        self.linted.update(new)
        try:
            from recompile_lint.config import load_config
            from recompile_lint.engine import lint_paths
            from recompile_lint.verify.command import user_cache_dir

            config = load_config(new).with_overrides(cache_dir=user_cache_dir(new))
            result = lint_paths(new, config)
        except Exception as exc:  # noqa: BLE001 - the tests' verdict must not depend on the lint
            self.errors.append(f"the static lint of {', '.join(new)} failed: {type(exc).__name__}: {exc}")
            return
        self.findings.extend(result.findings)

    def predicting(self, event: RecompileEvent) -> Finding | None:
        from recompile_lint.verify.matcher import reason_matches

        for finding in self.findings:
            if any(reason_matches(finding, event, failure) for failure in event.reasons):
                return finding
        return None


# ---- the report -----------------------------------------------------------------------------


def _shown(path: str, root: str) -> str:
    try:
        relative = os.path.relpath(path, root)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def describe_function(group: FunctionRecompiles, allowed: int, count_dynamic: bool, root: str) -> Iterator[str]:
    counted = group.counted(count_dynamic)
    over = counted > allowed or group.limit is not None
    head = f"{_shown(group.file, root)}:{group.first_line}: {group.function} recompiled {len(group.events)} time(s)"
    if group.dynamic:
        head += (f" ({group.dynamic} by automatic dynamic shapes, counted)" if count_dynamic
                 else f" ({group.dynamic} by automatic dynamic shapes, allowed)")
    head += f", {'over' if over else 'within'} the budget of {allowed}"
    yield head
    if group.limit is not None:
        yield (f"    recompile_limit ({group.limit.limit_value}) reached: new values run eagerly from "
               "here on, unrecorded")
    for guard in group.guards()[:MAX_GUARDS]:
        yield f"    guard: {guard}"
    finding = group.predicted
    if finding is None:
        yield "    predicted by: not predicted (no static finding matches this recompile)"
        return
    title = finding.title or finding.message
    yield f"    predicted by: {finding.code} at {_shown(finding.path, root)}:{finding.line}: {title}"
    if finding.fix:
        yield f"    fix: {finding.fix}"


def describe_test(result: RecordedTest, root: str, mode: str) -> str:
    over = result.over()
    lines = []
    if over:
        lines.append(f"{len(over)} compiled function(s) recompiled beyond the budget "
                     f"({result.allowed} recompile(s) per function; recompile-lint --recompiles={mode}):")
    else:
        lines.append(f"recompiles within the budget ({result.allowed} per function):")
    for group in result.functions:
        lines.extend(describe_function(group, result.allowed, result.count_dynamic, root))
    if result.note:
        lines.append(f"note: {result.note}")
    return "\n".join(lines)


# ---- the plugin proper ------------------------------------------------------------------------


def allowed_for(item: pytest.Item, default: int) -> int:
    """The test's budget: its ``recompiles`` marker, else the session default."""
    marker = item.get_closest_marker("recompiles")
    if marker is None:
        return default
    value = marker.kwargs.get("max", marker.args[0] if marker.args else None)
    well_formed = set(marker.kwargs) <= {"max"} and len(marker.args) + len(marker.kwargs) == 1
    if not well_formed or isinstance(value, bool) or not isinstance(value, int) or value < 0:
        given = [repr(a) for a in marker.args] + [f"{k}={v!r}" for k, v in marker.kwargs.items()]
        raise ValueError(f"@pytest.mark.recompiles takes max=N, a whole number 0 or more; got ({', '.join(given)})")
    return value


class RecompileBudget:
    """Registered by ``pytest_configure`` when the plugin is on."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.root = str(config.rootpath)
        self.static = StaticFindings()
        self.recorders: dict[str, Recorder] = {}  # the phase being recorded
        self.recorded: dict[str, list[Recording]] = {}  # the phases recorded, per test
        self.results: list[RecordedTest] = []

    # -- recording
    #
    # Setup and call are recorded apart, each innermost of the phase's wrappers: pytest's log
    # capture attaches to every logger that does not propagate when a phase starts, and the
    # recorder's loggers propagate again between phases, so Dynamo's recompile lines stay out of
    # the "Captured log" of a failing test (as they would without the plugin).

    def _record(self, item: pytest.Item) -> None:
        from recompile_lint.verify.recorder import Recorder

        recorder = Recorder()
        recorder.__enter__()
        self.recorders[item.nodeid] = recorder

    def _stop(self, item: pytest.Item) -> None:
        recorder = self.recorders.pop(item.nodeid, None)
        if recorder is not None:
            recorder.__exit__(None, None, None)
            self.recorded.setdefault(item.nodeid, []).append(recorder.recording())

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        self.recorded.pop(item.nodeid, None)
        if not self.settings.keep_cache:
            import torch._dynamo

            torch._dynamo.reset()
        self._record(item)
        try:
            yield
        finally:
            self._stop(item)

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        self._record(item)
        try:
            yield
        finally:
            self._stop(item)

    def _end(self, item: pytest.Item) -> RecordedTest | None:
        from recompile_lint.verify.recorder import Recording

        recordings = self.recorded.pop(item.nodeid, None)
        if recordings is None:
            return None
        graphs: dict[tuple[str, int, str], int] = {}
        for part in recordings:
            for key, count in part.graphs:
                graphs[key] = max(graphs.get(key, 0), count)
        recording = Recording(tuple(e for r in recordings for e in r.events),
                              tuple(h for r in recordings for h in r.limit_hits), tuple(sorted(graphs.items())))
        allowed = allowed_for(item, self.settings.budget)
        groups = group_by_function(recording.events, recording.limit_hits)
        note = self._explain(groups, recording.events) if groups else ""
        result = RecordedTest(item.nodeid, allowed, groups, self.settings.count_dynamic, recording.events,
                              recording.limit_hits, recording.graphs, note)
        self.results.append(result)
        return result

    def _explain(self, groups: list[FunctionRecompiles], events: tuple[RecompileEvent, ...]) -> str:
        """Mark each function's automatic-dynamic recompiles and the finding that predicted its
        recompiles; returns why the static lint could not run, if it could not."""
        sources = dynamic_sources()
        for group in groups:
            here = (group.first_line, group.function)
            made_dynamic = next((names for (file, line, name), names in sources.items()
                                 if (line, name) == here and _same_file(file, group.file)), set())
            mark_dynamic(group, made_dynamic)
        errors_before = len(self.static.errors)
        self.static.lint({g.file for g in groups} | {r.file for e in events for r in e.reasons if r.file})
        for group in groups:
            group.predicted = next((f for f in map(self.static.predicting, group.events) if f is not None), None)
        return "; ".join(self.static.errors[errors_before:])

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
        outcome = yield
        report = outcome.get_result()
        if item.nodeid not in self.recorded or not (call.when == "call" or report.outcome != "passed"):
            return
        try:
            result = self._end(item)
        except ValueError as exc:  # a malformed marker: this test's problem, said plainly
            if report.outcome == "passed":
                report.outcome = "failed"
                report.longrepr = str(exc)
            return
        if result is None or not result.functions or call.when != "call":
            return
        text = describe_test(result, self.root, self.settings.mode)
        if not result.over() or report.outcome != "passed" or hasattr(report, "wasxfail"):
            report.sections.append(("recompiles", text))  # shown with a failure, or with -rA
            return
        if self.settings.mode == "fail":
            report.outcome = "failed"
            report.longrepr = text
            return
        report.sections.append(("recompiles", text))
        try:
            item.warn(RecompileWarning(f"{item.nodeid}: {text}"))
        except Exception as exc:  # noqa: BLE001 - warnings turned into errors (-W error): a failure
            report.outcome = "failed"
            report.longrepr = f"{type(exc).__name__}: {exc}"

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self.recorded.pop(nodeid, None)  # a test interrupted before its report

    # -- the session

    def pytest_report_header(self, config: pytest.Config) -> str:
        s = self.settings
        return (f"recompiles: {s.mode}, budget {s.budget} per compiled function and test"
                f" (automatic dynamic shapes {'counted' if s.count_dynamic else 'allowed'}), "
                f"{'caches kept across tests' if s.keep_cache else 'caches reset before each test'}")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        recompiled = [r for r in self.results if r.functions]
        if not recompiled:
            return
        over = [r for r in recompiled if r.over()]
        terminalreporter.section("recompiles")
        for result in over:
            terminalreporter.write_line(f"{result.nodeid}:")
            for group in result.over():
                for line in describe_function(group, result.allowed, result.count_dynamic, self.root):
                    terminalreporter.write_line(f"  {line}")
        within = len(recompiled) - len(over)
        verb = "failed" if self.settings.mode == "fail" else "warned"
        terminalreporter.write_line(
            f"{len(over)} test(s) recompiled beyond the budget ({verb}), {within} recompiled within it"
            + (f"; JSON: {self.settings.json_path}" if self.settings.json_path else ""))

    def run_report(self, exit_code: int | None) -> dict[str, Any]:
        """The session as ``verify --run``'s JSON, with a ``tests`` list added."""
        from recompile_lint.verify.matcher import match_run
        from recompile_lint.verify.recorder import Recording
        from recompile_lint.verify.results import RunReport

        events = tuple(e for r in self.results for e in r.events)
        hits = tuple(h for r in self.results for h in r.limit_hits)
        graphs: dict[tuple[str, int, str], int] = {}
        for result in self.results:
            for key, count in result.graphs:
                graphs[key] = max(graphs.get(key, 0), count)  # the most any one test compiled
        recording = Recording(events, hits, tuple(sorted(graphs.items())))
        verified, unpredicted = match_run(self.static.findings, recording)
        command = ("pytest", *self.config.invocation_params.args)
        detail = "; ".join(dict.fromkeys(self.static.errors))
        report = RunReport(command, exit_code, tuple(verified), tuple(unpredicted), hits, detail,
                           tuple((f"{f}:{line} {name}", n) for (f, line, name), n in sorted(graphs.items())), events)
        data = report.to_dict()
        data["tests"] = [r.to_dict() for r in self.results if r.functions]
        return data

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        path = self.settings.json_path
        worker = getattr(self.config, "workerinput", None)
        if isinstance(worker, dict):
            path = f"{path}.{worker.get('workerid', os.getpid())}"  # pytest-xdist: one file per worker
        elif self.config.getoption("dist", default="no") != "no":
            path = ""  # the xdist controller runs no test: the workers write theirs
        if not path:
            return
        text = json.dumps(self.run_report(int(exitstatus)), indent=2) + "\n"
        try:
            write_output_file(path, text)
        except OutputFileError as exc:
            sys.stderr.write(f"recompile-lint: error: --recompiles-json: {exc}\n")
            if session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
