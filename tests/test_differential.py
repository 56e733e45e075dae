"""Differential test: the linter against what torch 2.13 really did on runnable programs.

Each directory of ``fixtures/programs/`` is a small project with a ``run.py`` whose recompiles
were measured (``tests/observe_programs.py`` wrote its ``observed.json``) and whose cause lines
carry inline expectations (``# RCL104[error]``). The fast tests (no torch) lint each program
with the library call the CLI uses, every rule selected and no cache, and check:

(a) every expectation has a finding at its line with its code and severity, and nothing else
    is reported (negatives stay silent);
(b) every observed guard failure has a finding whose ``guard.source`` is the observed source
    (for guards without a source, ``GLOBAL_STATE`` and ``BACKEND_MATCH``, the same kind) and
    whose line, or one of whose evidence lines, is the line Dynamo pointed at or the cause line;
(c) every error or warning finding belongs to a region the run saw recompile (or sits in a
    function whose own resume code, after a graph break, recompiled).

What today's linter gets wrong is listed in ``fixtures/programs/known_gaps.json``; the test fails
on a mismatch that is not listed and on a listed one that no longer happens, so the list only
shrinks. The slow test (torch) runs every program again and checks ``observed.json`` is current.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import observe_programs as observe
from recompile_lint.engine import lint_paths
from recompile_lint.lab import measure
from recompile_lint.models import Finding, LintResult

PROGRAMS = observe.program_dirs()
GAPS_FILE = observe.PROGRAMS / "known_gaps.json"
ASSERTIONS = {"a": "expectations", "b": "guard", "c": "recompiles"}
ALL_RULES = measure.ALL_RULES  # every rule, no cache: what the CLI runs
IDS = [p.name for p in PROGRAMS]


@dataclass(frozen=True)
class Mismatch:
    """One disagreement between the linter and a program's truth."""

    program: str
    assertion: str  # "a", "b" or "c"
    what: str  # stable text naming the line, code or guard

    def as_gap(self) -> dict[str, str]:
        return {"program": self.program, "assertion": self.assertion, "what": self.what, "why": "..."}


def load_observed(program: Path) -> dict[str, Any]:
    return json.loads(observe.observed_path(program).read_text(encoding="utf-8"))


def category(program: Path) -> str:
    """unbounded (an error expected), bounded (warnings), by-design (info only), negative."""
    severities = {s for items in observe.expectations_of(program).values() for _, s in items}
    if "error" in severities:
        return "unbounded"
    if "warning" in severities:
        return "bounded"
    if "info" in severities:
        return "by-design"
    return "negative"


# Where a finding points (its own line and every evidence line) and whether its guard is the one
# that failed are judged as the lab's measure judges them.
_rel = measure.relative
_lines = measure.finding_places


def _where(text: str) -> tuple[str, int] | None:
    if not text:
        return None
    file, _, line = text.rpartition(":")
    return file, int(line)


def mismatches(program: Path, result: LintResult, observed: dict[str, Any]) -> list[Mismatch]:
    """Every disagreement of the linter's findings with the program's truth, (a) to (c)."""
    name = program.name
    out: list[Mismatch] = []
    expected = observe.expectations_of(program)
    found = {(_rel(program, f.path), f.line, f.code, f.severity.value) for f in result.findings}
    # (a) expectations met, nothing else reported.
    for (file, line), items in sorted(expected.items()):
        for code, severity in items:
            if (file, line, code, severity) not in found:
                out.append(Mismatch(name, "a", f"missing {file}:{line} {code}[{severity}]"))
    for file, line, code, severity in sorted(found):
        if (code, severity) not in {(c, s) for c, s in expected.get((file, line), ())}:
            out.append(Mismatch(name, "a", f"unexpected {file}:{line} {code}[{severity}]"))
    for error in result.errors:
        out.append(Mismatch(name, "a", f"file error {_rel(program, error.path)}: {error.message}"))
    # (b) each observed guard failure predicted, with its guard and at its line.
    for function in observed["functions"]:
        for failure in function["guard_failures"]:
            places = {p for p in (_where(failure["location"]), _where(failure["cause"])) if p}
            if not any(_predicts(f, failure) and _lines(program, f) & places for f in result.findings):
                label = failure["source"] or f"{failure['kind']} {failure['detail']}".strip()
                at = " or ".join(sorted(f"{file}:{line}" for file, line in places))
                out.append(Mismatch(name, "b", f"no finding with guard {label} at {at}"))
    # (c) error and warning findings only where the run recompiled that region. A graph break
    # inside an inlined callee gives the callee a resume function of its own: its recompiles
    # count for the findings in that callee (``function``), whatever entry reached it.
    recompiled = {f["region"] for f in observed["functions"] if f["graphs"] > 1 and f["region"]}
    for finding in result.findings:
        if finding.severity.value in ("error", "warning") and not {finding.region, finding.function} & recompiled:
            where = f"{_rel(program, finding.path)}:{finding.line}"
            out.append(Mismatch(
                name, "c", f"{where} {finding.code}[{finding.severity.value}] in region {finding.region or '(none)'}: no recompile observed"
            ))
    return sorted(set(out), key=lambda m: (m.assertion, m.what))


def _predicts(finding: Finding, failure: dict[str, Any]) -> bool:
    # GLOBAL_STATE and BACKEND_MATCH guards have no source: the kind (and what changed) say it.
    return measure.predicts(finding.guard, failure["source"], failure["kind"], failure["detail"])


def load_gaps() -> list[dict[str, str]]:
    return json.loads(GAPS_FILE.read_text(encoding="utf-8"))["gaps"]


@pytest.fixture(scope="module")
def linted() -> dict[str, LintResult]:
    return {program.name: lint_paths([str(program)], ALL_RULES) for program in PROGRAMS}


_RESULTS = pytest.StashKey[tuple]()


@pytest.fixture(scope="module")
def found(linted, request) -> dict[str, list[Mismatch]]:
    out = {program.name: mismatches(program, linted[program.name], load_observed(program)) for program in PROGRAMS}
    request.config.stash[_RESULTS] = (linted, out)  # for the summary printed at the end
    return out


def test_programs_cover_the_categories():
    counts: dict[str, int] = {}
    for program in PROGRAMS:
        counts[category(program)] = counts.get(category(program), 0) + 1
    assert counts.get("unbounded", 0) >= 20, counts
    assert counts.get("bounded", 0) + counts.get("by-design", 0) >= 10, counts
    assert counts.get("negative", 0) >= 15, counts


@pytest.mark.parametrize("program", PROGRAMS, ids=IDS)
def test_observation_agrees_with_the_inline_truth(program):
    """The oracle is consistent: what the run showed is what the comments and docstring say."""
    assert observe.observed_path(program).is_file(), f"run: python tests/observe_programs.py {program.name}"
    problems = observe.truth_problems(program, load_observed(program))
    assert not problems, "\n".join(problems)


def test_known_gaps_are_well_formed():
    names = {p.name for p in PROGRAMS}
    seen = set()
    for gap in load_gaps():
        assert set(gap) == {"program", "assertion", "what", "why"}, gap
        assert gap["program"] in names, gap
        assert gap["assertion"] in ASSERTIONS, gap
        assert gap["why"].strip() and gap["why"] != "...", f"say why: {gap}"
        key = (gap["program"], gap["assertion"], gap["what"])
        assert key not in seen, f"listed twice: {gap}"
        seen.add(key)


@pytest.mark.parametrize("program", PROGRAMS, ids=IDS)
def test_linter_agrees_with_the_run(program, found):
    """Strict both ways: a new mismatch fails, and so does a listed gap that no longer occurs."""
    now = found[program.name]
    listed = {(g["assertion"], g["what"]) for g in load_gaps() if g["program"] == program.name}
    new = [m for m in now if (m.assertion, m.what) not in listed]
    gone = sorted(listed - {(m.assertion, m.what) for m in now})
    message = []
    if new:
        message.append("mismatches not in known_gaps.json (fix the linter, or list them with a reason):")
        message += [json.dumps(m.as_gap()) for m in new]
    if gone:
        message.append("listed in known_gaps.json but no longer happening (remove them):")
        message += [json.dumps({"program": program.name, "assertion": a, "what": w}) for a, w in gone]
    assert not message, "\n".join(message)


def summary(linted: dict[str, LintResult], found: dict[str, list[Mismatch]]) -> dict[str, tuple[int, int]]:
    """(right, total) per category, as the issue's targets count them."""
    rows: dict[str, list[int]] = {
        "unbounded flagged as error at the cause line": [0, 0],
        "bounded flagged as warning at the cause line": [0, 0],
        "by-design flagged as info at the cause line": [0, 0],
        "negatives silent": [0, 0],
        "observed guard failures predicted (guard text equal, at the line)": [0, 0],
        "error/warning findings on a region that recompiled": [0, 0],
        "programs with no mismatch": [0, 0],
    }
    for program in PROGRAMS:
        kind = category(program)
        misses = found[program.name]
        missing = [m for m in misses if m.assertion == "a" and m.what.startswith("missing ")]
        if kind == "negative":
            row = rows["negatives silent"]
            row[1] += 1
            row[0] += not linted[program.name].findings
        else:
            severity = {"unbounded": "error", "bounded": "warning", "by-design": "info"}[kind]
            row = next(v for k, v in rows.items() if k.startswith(kind))
            row[1] += 1
            row[0] += not any(m.what.endswith(f"[{severity}]") for m in missing)
        failures = [g for f in load_observed(program)["functions"] for g in f["guard_failures"]]
        rows["observed guard failures predicted (guard text equal, at the line)"][1] += len(failures)
        rows["observed guard failures predicted (guard text equal, at the line)"][0] += len(failures) - sum(
            m.assertion == "b" for m in misses
        )
        flagged = [f for f in linted[program.name].findings if f.severity.value in ("error", "warning")]
        rows["error/warning findings on a region that recompiled"][1] += len(flagged)
        rows["error/warning findings on a region that recompiled"][0] += len(flagged) - sum(m.assertion == "c" for m in misses)
        rows["programs with no mismatch"][1] += 1
        rows["programs with no mismatch"][0] += not misses
    return {k: (v[0], v[1]) for k, v in rows.items()}


@pytest.fixture(scope="module", autouse=True)
def print_summary(request):
    """After the module's tests, print where the linter stands (shown without -s too)."""
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    results = request.config.stash.get(_RESULTS, None)
    if reporter is None or results is None:
        return
    lines = ["", "differential test: the linter against torch 2.13 on fixtures/programs/"]
    for label, (right, total) in summary(*results).items():
        share = f"{100 * right / total:5.1f} %" if total else "    -  "
        lines.append(f"  {right:3d}/{total:<3d} {share}  {label}")
    # Teardown output is captured like a test's; the capture manager lets it through.
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled():
        for line in lines:
            reporter.write_line(line)


def test_summary_counts_every_program(linted, found):
    table = summary(linted, found)
    categories = [v for k, v in table.items() if k.split()[0] in ("unbounded", "bounded", "by-design", "negatives")]
    assert sum(total for _, total in categories) == len(PROGRAMS)
    assert table["programs with no mismatch"][0] == sum(not m for m in found.values())


@pytest.mark.parametrize(
    ("guard", "kind", "source"),
    [
        # Spellings seen in the programs' runs (unstripped, as the observer keeps them).
        ("L['self']._modules['cache'].length == 0", "CONSTANT_MATCH", "L['self']._modules['cache'].length"),
        ("G['__import_lrsched_dot_state'].GLOBAL_STEP == 0", "CONSTANT_MATCH", "G['__import_lrsched_dot_state'].GLOBAL_STEP"),
        ("G['COUNTERS']['policy_calls'] == 0", "CONSTANT_MATCH", "G['COUNTERS']['policy_calls']"),
        ("___check_obj_id(G['phases'].CURRENT, <id>), type=<class 'phased.phases.Phase'>", "ID_MATCH", "G['phases'].CURRENT"),
        ("___check_obj_id(L['loss'].__code__, 140), type=<class 'code'>", "ID_MATCH", "L['loss'].__code__"),
        ("tensor 'L['frames']' size mismatch at index 1. expected 84, actual 119", "TENSOR_MATCH", "L['frames']"),
        ("len(L['x_dict']) != 3", "LENGTH_CHECK", "len(L['x_dict'])"),
        ("list(dict.keys(L['x_dict']))[0] == 'user'", "DICT_KEYS", "list(dict.keys(L['x_dict']))"),
        ("not L['memory']", "LENGTH_CHECK", "L['memory']"),
        ("L['q'].size()[1] <= 32", "SHAPE_ENV", "L['q'].size()[1]"),
        ("32*L['___stack0'][0] >= 2", "SHAPE_ENV", "L['___stack0'][0]"),
        ("(((torch.sym_float((-1) + ((-1)*L['fn'].__self__.updates))) / 2000.0)) == (-0.001)", "SHAPE_ENV", "L['fn'].__self__.updates"),
        ("GLOBAL_STATE changed: grad_mode", "GLOBAL_STATE", ""),
        ("BACKEND_MATCH failure: torch.compile detected different backend callables.", "BACKEND_MATCH", ""),
    ],
)
def test_guard_sources_are_read_as_documented(guard, kind, source):
    assert observe.guard_kind_and_source(guard)[:2] == (kind, source)


def test_truth_check_rejects_a_run_that_contradicts_the_comments():
    """The oracle's own check can fail: a negative that recompiled, an unbounded one that did not."""
    negative = next(p for p in PROGRAMS if category(p) == "negative")
    unbounded = next(p for p in PROGRAMS if category(p) == "unbounded")
    bad = load_observed(negative)
    bad["functions"] = [dict(f, graphs=8, limit_hit=True) for f in bad["functions"]]
    assert any("recompile_limit" in p for p in observe.truth_problems(negative, bad))
    bad = load_observed(unbounded)
    bad["functions"] = [dict(f, graphs=1, limit_hit=False) for f in bad["functions"]]
    assert any("no function reached recompile_limit" in p for p in observe.truth_problems(unbounded, bad))


def test_mismatches_catch_a_false_alarm_and_a_miss(linted):
    """(a) and (c) fire on a finding where nothing recompiled; (a) and (b) on a dropped finding."""
    from dataclasses import replace

    from recompile_lint.models import Boundedness, Severity

    program = next(p for p in PROGRAMS if category(p) == "negative")
    path = str(program / "run.py")
    alarm = Finding(path, 3, 1, "RCL101", 3, 2, "mutated-global", Severity.ERROR, Boundedness.UNBOUNDED, "m", region="run.main")
    found = mismatches(program, LintResult((alarm,), (), 1), load_observed(program))
    assert {m.assertion for m in found} == {"a", "c"}
    caught = next(p for p in PROGRAMS if category(p) != "negative" and not any(
        m.assertion in ("a", "b") for m in mismatches(p, linted[p.name], load_observed(p))
    ))
    emptied = replace(linted[caught.name], findings=())
    assert {m.assertion for m in mismatches(caught, emptied, load_observed(caught))} >= {"a", "b"}


@pytest.fixture(scope="module")
def rerun() -> dict[str, dict[str, Any]]:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(zip(PROGRAMS, pool.map(observe.run_program, PROGRAMS)))
    return {p.name: observe.observation(p, raw) for p, raw in runs.items() if raw.data}


@pytest.mark.slow
@pytest.mark.parametrize("program", PROGRAMS, ids=IDS)
def test_observed_json_is_current(program, rerun):
    """Running the program again gives the committed counts and guard sources."""
    assert program.name in rerun, f"{program.name}: the run reported nothing"
    now = rerun[program.name]
    assert now["exit_code"] == 0, now.get("detail")
    assert observe.essence(now) == observe.essence(load_observed(program)), (
        f"observed.json of {program.name} is stale: python tests/observe_programs.py {program.name}"
    )
