"""``recompile-lint explain`` without torch: reading logs of every layout, matching guards to
findings, the reports, and bad input. The 2.13 logs under ``explain_data/logs`` were written by
``explain_data/make_logs.py`` with real torch; ``explain_data/older`` holds the layouts of
earlier releases (see its README)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner

from recompile_lint.analysis.execution import DISABLE_ENV
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths
from recompile_lint.explain.evidence import Evidence, ExplainInputError
from recompile_lint.explain.inputs import read_input
from recompile_lint.explain.match import Explanation, explain
from recompile_lint.explain.render import render_html, render_json, render_text
from recompile_lint.explain.sources import PathResolver, guard_source, sources_match
from recompile_lint.explain.textlog import read_log
from recompile_lint.frontends.cli import main
from recompile_lint.models import Guard, Location, Subject
from recompile_lint.verify.results import Family, GuardFailure, LimitHit, RecompileEvent, RunReport
from verify_helpers import make_finding

DATA = Path(__file__).parent / "explain_data"
PROJ = DATA / "proj"
LOGS = DATA / "logs"
OLDER = DATA / "older"
MODEL = PROJ / "pkg" / "model.py"
OPS = PROJ / "pkg" / "ops.py"


@pytest.fixture(scope="module", autouse=True)
def static_linter_only() -> Iterator[None]:
    """The explain tests need a recompile no finding predicts: ``normalize``'s dtype change,
    which the static stages do not predict. The execution stage does (RCL201, two graphs:
    ``tests/test_explain_live.py`` shows it), so it is off here."""
    before = os.environ.get(DISABLE_ENV)
    os.environ[DISABLE_ENV] = "1"
    yield
    if before is None:
        os.environ.pop(DISABLE_ENV, None)
    else:
        os.environ[DISABLE_ENV] = before


@pytest.fixture(scope="module")
def findings() -> list:
    return list(lint_paths([str(PROJ)], Config(select=("RCL",), cache=False)).findings)


def _explain(path: Path | str, findings: list) -> Explanation:
    evidence = read_input(str(path))
    files = [str(p) for p in PROJ.rglob("*.py")]
    return explain(evidence, findings, input_name=str(path), linted=[str(PROJ)], files=files)


def _by_function(result: Explanation) -> dict[str, object]:
    return {f.function: f for f in result.functions}


def _explained(result: Explanation) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(function, guard source) -> [(rule code, how)] for every group."""
    return {
        (f.function, g.source): [(m.finding.code, m.how) for m in g.matches]
        for f in result.functions for g in f.groups
    }


# ---- the static side the tests rely on -------------------------------------------------------


def test_the_project_has_the_three_findings_with_predicted_guards(findings) -> None:
    guards = sorted((f.code, f.guard.source) for f in findings if f.guard is not None)
    assert guards == [("RCL101", "G['__import_pkg_dot_ops'].STEP"), ("RCL101", "G['step']"),
                      ("RCL104", "L['self'].step")]


# ---- torch 2.13 logs, every channel ----------------------------------------------------------

EXPECTED_2_13 = {
    ("poly", "G['step']"): [("RCL101", "guard")],
    ("forward_step", "G['__import_pkg_dot_ops'].STEP"): [("RCL101", "guard")],
    ("forward", "self.step"): [("RCL104", "guard")],
    ("normalize", "x"): [],
}


@pytest.mark.parametrize("channel", ["recompiles", "recompiles_verbose"])
def test_a_2_13_log_maps_every_recompile_to_its_finding(findings, channel: str) -> None:
    result = _explain(LOGS / f"{channel}.log", findings)
    assert _explained(result) == EXPECTED_2_13
    functions = _by_function(result)
    poly = functions["poly"]
    # 8 records: 7 recompiles, then the attempt the limit refused (compile id 0/8).
    assert (poly.recompiles, poly.refused) == (7, 1)
    assert poly.limit is not None and (poly.limit.limit_type, poly.limit.limit_value) == ("recompile_limit", 8)
    assert poly.groups[0].failures == 8 and poly.groups[0].distinct == 8
    assert [functions[n].recompiles for n in ("forward_step", "forward", "normalize")] == [2, 2, 1]
    assert functions["forward"].limit is None
    # The guard was created in the inlined helper of another module: that is where it points.
    step = functions["forward_step"].groups[0]
    assert (Path(step.file).name, step.line, step.function) == ("ops.py", 9, "scale")
    assert step.code == "return x * (1.0 + 0.1 * STEP)"


def test_the_guard_no_finding_predicts_is_listed_with_its_function(findings) -> None:
    result = _explain(LOGS / "recompiles.log", findings)
    [(func, group)] = result.unexplained()
    assert func.function == "normalize" and group.family is Family.TYPE
    assert "dtype mismatch" in group.guards[0]
    # A tensor guard carries no source line: the best place known is the function itself.
    assert (group.located_by, group.file.endswith("pkg/model.py"), group.line) == ("function", True, 30)


def test_the_guards_channel_alone_is_enough_to_find_the_changing_value(findings) -> None:
    result = _explain(LOGS / "guards.log", findings)
    assert result.inferred
    explained = _explained(result)
    assert explained[("poly", "G['step']")] == [("RCL101", "guard")]
    assert explained[("forward_step", "G['__import_pkg_dot_ops'].STEP")] == [("RCL101", "guard")]
    assert explained[("forward", "self.step")] == [("RCL104", "guard")]
    assert [key for key, matches in explained.items() if not matches] == [("normalize", "x")]
    poly = _by_function(result)["poly"]
    # Entries 0/0 .. 0/7 were compiled; each one after the first failed the previous value.
    assert poly.recompiles == 7 and poly.limit is not None
    assert poly.groups[0].guards[:2] == ("G['step'] == 0", "G['step'] == 1")


# ---- earlier torch releases ------------------------------------------------------------------


def test_torch_2_0_tuples_and_unprefixed_limit_warning(findings) -> None:
    result = _explain(OLDER / "torch-2.0.log", findings)
    assert _explained(result) == {("poly", "G['step']"): [("RCL101", "guard")],
                                  ("forward", "self.step"): [("RCL104", "guard")]}
    poly = _by_function(result)["poly"]
    assert poly.recompiles == 3 and poly.first_line == 0  # 2.0 printed no line number
    assert poly.limit is not None and (poly.limit.limit_type, poly.limit.limit_value, poly.limit.first_line) == (
        "cache_size_limit", 4, 11)
    assert poly.limit.last_reason == "G['step'] == 3"


def test_torch_2_1_dated_lines_without_entry_prefixes(findings) -> None:
    result = _explain(OLDER / "torch-2.1.log", findings)
    assert _explained(result) == {("poly", "G['step']"): [("RCL101", "guard")],
                                  ("forward", "self.step"): [("RCL104", "guard")]}
    poly = _by_function(result)["poly"]
    # The second recompile lists two cache entries: two reasons, one recompile.
    assert poly.recompiles == 2 and poly.groups[0].failures == 2
    assert poly.limit is not None and poly.limit.limit_type == "cache_size_limit" and poly.limit.last_reason == ""


def test_torch_2_3_glog_without_compile_ids(findings) -> None:
    result = _explain(OLDER / "torch-2.3.log", findings)
    assert _explained(result) == {("poly", "G['step']"): [("RCL101", "guard")],
                                  ("normalize", "GLOBAL_STATE"): []}
    poly = _by_function(result)["poly"]
    group = poly.groups[0]
    # Dynamo's shortened path in the comment ("ci/work/proj/...") still names the line.
    assert (group.file, group.line, group.function) == ("ci/work/proj/pkg/model.py", 13, "poly")


def test_torch_2_4_padded_reasons_and_cache_size_limit(findings) -> None:
    result = _explain(OLDER / "torch-2.4.log", findings)
    assert _explained(result) == {("forward", "self.step"): [("RCL104", "guard")], ("normalize", "x"): []}
    functions = _by_function(result)
    assert functions["forward"].groups[0].guards == ("L['self'].step == 2", "L['self'].step == 1", "L['self'].step == 0")
    normalize = functions["normalize"]
    assert normalize.limit is not None and normalize.limit.last_reason.startswith("tensor 'L['x']' size mismatch")
    assert normalize.groups[0].family is Family.SHAPE


def test_torch_2_5_windows_paths_and_a_function_seen_only_at_its_limit(findings) -> None:
    result = _explain(OLDER / "torch-2.5.log", findings)
    assert _explained(result) == {("forward_step", "G['__import_pkg_dot_ops'].STEP"): [("RCL101", "guard")],
                                  ("poly", "G['step']"): [("RCL101", "guard")]}
    poly = _by_function(result)["poly"]
    # Only the limit warning names it: 8 graphs, the refused attempt, and its last reason.
    assert (poly.recompiles, poly.graphs, poly.refused) == (7, 8, 1)
    assert poly.groups[0].guards == ("G['step'] == 7",)


def test_a_limit_warning_copied_without_any_prefix() -> None:
    text = (
        "torch._dynamo hit config.cache_size_limit (8)\n"
        "    function: 'fn' (/data/users/someone/playground.py:5)\n"
        "    last reason: 0/0: tensor 'L['x']' size mismatch at index 0. expected 1, actual 9\n"
    )
    evidence = read_log(io.StringIO(text))
    [hit] = evidence.limit_hits
    assert (hit.function, hit.file, hit.first_line, hit.limit_value) == ("fn", "/data/users/someone/playground.py", 5, 8)
    assert hit.last_reason.startswith("0/0: tensor 'L['x']'")


def test_program_output_between_records_is_ignored() -> None:
    text = (LOGS / "recompiles.log").read_text(encoding="utf-8")
    noisy = "\n".join(f"{line}\nepoch 3 loss 0.25 - not a torch line" for line in text.splitlines())
    assert [e.compile_id for e in read_log(io.StringIO(noisy)).events] == [
        e.compile_id for e in read_log(io.StringIO(text)).events]


# ---- matching ---------------------------------------------------------------------------------


def _event(function: str, file: str, first_line: int, guard: str, at: tuple[str, int, str] = ("", 0, "")) -> RecompileEvent:
    failure = GuardFailure(guard, Family.CONSTANT, "0/0", "", at[0], at[1], at[2])
    return RecompileEvent(function, file, first_line, "0/1", (failure,))


def test_a_same_named_function_in_another_file_does_not_explain_a_guard(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("step = 0\n\ndef poly(x):\n    return x * step\n")
    (tmp_path / "b.py").write_text("step = 0\n\ndef poly(x):\n    return x * step\n")
    other = make_finding(tmp_path / "b.py", 4, "RCL101", "b.poly", Subject("global", name="step"))
    other = _with_guard(other, Guard("CONSTANT_MATCH", "G['step']"))
    event = _event("poly", str(tmp_path / "a.py"), 3, "G['step'] == 0", (str(tmp_path / "a.py"), 4, "poly"))
    result = explain(Evidence("log", (event,)), [other], input_name="x", files=[str(tmp_path / "a.py"), str(tmp_path / "b.py")])
    assert result.functions[0].groups[0].matches == ()
    own = _with_guard(make_finding(tmp_path / "a.py", 4, "RCL101", "a.poly", Subject("global", name="step")),
                      Guard("CONSTANT_MATCH", "G['step']"))
    result = explain(Evidence("log", (event,)), [other, own], input_name="x",
                     files=[str(tmp_path / "a.py"), str(tmp_path / "b.py")])
    assert [m.finding.path for m in result.functions[0].groups[0].matches] == [str(tmp_path / "a.py")]


def _with_guard(finding, guard: Guard, evidence: tuple[Location, ...] = ()):
    from dataclasses import replace

    return replace(finding, guard=guard, evidence=evidence)


def test_without_a_predicted_guard_the_line_then_the_blamed_value_explain_it(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("n = 0\n\ndef f(x):\n    k = n\n    return x * k\n")
    event = _event("f", str(source), 3, "G['n'] == 0", (str(source), 5, "f"))
    # The guard points at the first use (line 5); the finding names the read (line 4) and the
    # use as evidence.
    by_line = make_finding(source, 4, "RCL101", "m.f", None)
    by_line = _with_guard(by_line, None, (Location(str(source), 5, 12, "use"),))  # type: ignore[arg-type]
    result = explain(Evidence("log", (event,)), [by_line], input_name="x", files=[str(source)])
    assert [(m.finding.line, m.how) for m in result.functions[0].groups[0].matches] == [(4, "line")]
    by_value = make_finding(source, 4, "RCL101", "m.f", Subject("global", name="n"))
    result = explain(Evidence("log", (event,)), [by_value], input_name="x", files=[str(source)])
    assert [m.how for m in result.functions[0].groups[0].matches] == ["reason"]
    unrelated = make_finding(source, 4, "RCL101", "m.f", Subject("global", name="m"))
    result = explain(Evidence("log", (event,)), [unrelated], input_name="x", files=[str(source)])
    assert result.functions[0].groups[0].matches == ()


def test_a_hand_built_rank_guard_explains_a_rank_mismatch(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f(y):\n    return y.sum()\n")
    event = RecompileEvent("f", str(source), 1, "0/1", (GuardFailure(
        "tensor 'y' rank mismatch. expected 1, actual 2", Family.SHAPE, "0/0"),))
    finding = _with_guard(make_finding(source, 2, "RCL201", "m.f", Subject("rank", name="y")),
                          Guard("TENSOR_MATCH", "L['y']", "rank"))
    result = explain(Evidence("log", (event,)), [finding], input_name="x", files=[str(source)])
    [group] = result.functions[0].groups
    assert group.source == "y" and [m.how for m in group.matches] == ["guard"]


def test_a_guard_that_fails_after_the_predicted_one_explains_its_resume_function(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f(x, o):\n    y = F.interpolate(x, scale_factor=o.s)[0]\n    return y\n")
    event = RecompileEvent("torch_dynamo_resume_in_f_at_2", str(source), 2, "1/1", (GuardFailure(
        "tensor '___stack0' size mismatch at index 2. expected 24, actual 32", Family.SHAPE, "1/0"),))
    plain = _with_guard(make_finding(source, 2, "RCL108", "m.f", Subject("argument", name="o")), Guard("CONSTANT_MATCH", "L['o'].s"))
    chained = _with_guard(plain, Guard("CONSTANT_MATCH", "L['o'].s", then=(("TENSOR_MATCH", "L['___stack0']", "size"),)))
    result = explain(Evidence("log", (event,)), [plain], input_name="x", files=[str(source)])
    assert [m.how for m in result.functions[0].groups[0].matches] != ["guard"]
    result = explain(Evidence("log", (event,)), [chained], input_name="x", files=[str(source)])
    assert [m.how for m in result.functions[0].groups[0].matches] == ["guard"]


@pytest.mark.parametrize(
    ("guard", "source"),
    [
        ("G['step'] == 1", "G['step']"),
        ("G['__import_pkg_dot_mod'].X == 1", "G['__import_pkg_dot_mod'].X"),
        ("L['self'].step == 0", "self.step"),
        ("self.step == 0", "self.step"),
        ("L['self']._modules['proj'].step == 3", "self.proj.step"),
        ("len(L['xs']) == 2", "len(xs)"),
        ("len(xs) == 1", "len(xs)"),
        ("tensor 'y' rank mismatch. expected 1, actual 2", "y"),
        ("tensor 'L['x']' size mismatch at index 0. expected 4, actual 8", "x"),
        ("tensor 'L['p'][0]' size mismatch at index 0. expected 16, actual 64", "p[0]"),
        ("___check_obj_id(fn.__code__, 140234)", "fn.__code__"),
        ("___check_type_id(G['x'], 94)", "G['x']"),
        ("2 <= x.size()[0]", "x"),
        ("list(dict.keys(d))[0] == 'k0'", "d"),
        ("G['os'].environ._data[b'N'] == b'1'", "G['os'].environ._data[b'N']"),
        ("GLOBAL_STATE changed: grad_mode", "GLOBAL_STATE"),
        ("___check_global_state()", "GLOBAL_STATE"),
        ("BACKEND_MATCH failure: torch.compile detected different backend callables", "BACKEND_MATCH"),
        ("L['self'].param_groups[0]['lr'] == 0.01", "self.param_groups[0]['lr']"),
    ],
)
def test_guard_sources_are_spelled_one_way(guard: str, source: str) -> None:
    assert guard_source(guard) == source


def test_identity_guards_on_a_function_match_its_code_object() -> None:
    assert sources_match("L['fn']", "ID_MATCH", "fn.__code__")
    assert not sources_match("L['fn']", "CONSTANT_MATCH", "fn.__code__")
    assert not sources_match("G['cfg']", "CONSTANT_MATCH", "G['cfg'].scale")


def test_log_paths_from_elsewhere_resolve_to_the_files_here(tmp_path: Path) -> None:
    model = tmp_path / "proj" / "pkg" / "model.py"
    other = tmp_path / "other" / "model.py"
    for path in (model, other):
        path.parent.mkdir(parents=True)
        path.write_text("")
    resolver = PathResolver([str(model), str(other)])
    assert resolver.resolve(str(model)) == str(model)
    assert resolver.resolve("/home/ci/work/proj/pkg/model.py") == str(model)
    assert resolver.resolve("C:\\ci\\proj\\pkg\\model.py") == str(model)
    assert resolver.resolve("oj/pkg/model.py") == str(model)  # cut mid-name by Dynamo
    assert resolver.resolve("model.py") is None  # two files fit equally well
    assert resolver.resolve("/somewhere/else.py") is None


# ---- other inputs -----------------------------------------------------------------------------


def test_the_verifiers_run_report_is_read_through_its_events(tmp_path: Path, findings) -> None:
    evidence = read_input(str(LOGS / "recompiles.log"))
    report = RunReport(("train.py",), 0, (), (), evidence.limit_hits, "", (), evidence.events)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(report.to_dict()))
    result = _explain(path, findings)
    assert result.kind == "verify-json"
    assert _explained(result) == EXPECTED_2_13


def test_an_older_run_report_without_events_uses_the_confirmed_guard_lines(tmp_path: Path, findings) -> None:
    poly = next(f for f in findings if f.guard and f.guard.source == "G['step']")
    data = {"command": ["train.py"], "exit_code": 0, "detail": "", "unpredicted": [], "limit_hits": [], "graphs": {},
            "findings": [{**poly.to_dict(), "verification": {
                "verdict": "confirmed", "graphs": 8, "recompiles": 8, "limit_hit": True, "detail": "", "method": "run",
                "reasons": [f"G['step'] == 0  ({MODEL}:13 in poly: return x * step + 1)"]}}]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    result = _explain(path, findings)
    assert _explained(result) == {("poly", "G['step']"): [("RCL101", "guard")]}
    assert any("without recorded events" in w for w in result.warnings)


# ---- reports ----------------------------------------------------------------------------------


def _hostile() -> Explanation:
    failure = GuardFailure("G['x<script>alert(1)</script>'] == 1", Family.CONSTANT, "0/0", "x = '\x1b[2J'", "/tmp/<b>.py", 3,
                           "f\x1b]0;pwned\x07")
    event = RecompileEvent("<img src=x onerror=alert(1)>", "/tmp/\"><script>.py", 1, "0/1", (failure,))
    hit = LimitHit("recompile_limit", 8, "<img src=x onerror=alert(1)>", "/tmp/\"><script>.py", 1, "<svg/onload=1>")
    return explain(Evidence("log", (event,), (hit,)), [], input_name="<log>&")


def test_the_html_page_escapes_everything_from_the_log_and_loads_nothing() -> None:
    page = render_html(_hostile())
    assert "<script" not in page and "<img" not in page and "<svg" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert page.count("<style>") == 1
    for external in ("src=", "href=", "<link", "url(", "@import"):
        assert external not in page.replace("src=x", ""), external
    assert "default-src 'none'" in page


def test_the_html_page_shows_code_as_code_and_never_breaks_a_word(findings) -> None:
    """Typography of the page: a finding's quoted code is ``<code>``, not backticks; text wraps
    at spaces only (no rule that breaks inside a word), and the findings' prose runs the
    table's whole width instead of a narrow column."""
    import re
    from html.parser import HTMLParser

    page = render_html(_explain(LOGS / "recompiles.log", findings))

    class Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.text: list[str] = []
            self.code: list[str] = []
            self.open: list[str] = []

        def handle_starttag(self, tag, attrs) -> None:
            self.open.append(tag)

        def handle_endtag(self, tag) -> None:
            if tag in self.open:
                del self.open[len(self.open) - 1 - self.open[::-1].index(tag):]

        def handle_data(self, data) -> None:
            if "style" not in self.open:
                self.text.append(data)
                if self.open and self.open[-1] == "code":
                    self.code.append(data)

    parser = Text()
    parser.feed(page)
    shown = "".join(parser.text)
    assert "RCL101" in shown and "`" not in shown
    # The fix's code, quoted with backticks in the message, is set as code.
    assert "step = torch.tensor(0)" in parser.code
    style = page.split("<style>", 1)[1].split("</style>", 1)[0].replace(" ", "")
    for breaking in ("word-break:break-all", "word-break:break-word", "overflow-wrap:anywhere", "overflow-wrap:break-word",
                     "word-wrap:break-word", "hyphens:auto", "line-break:anywhere"):
        assert breaking not in style, breaking
    assert re.search(r"(?:^|[}\n])pre\{[^}]*white-space:pre[;}]", style)  # source lines are not wrapped
    # Nor at a hyphen, where a browser would break `/tmp/my-proj/x.py` or `mutated-global`:
    # every word that holds one is kept whole.
    assert ".w{white-space:nowrap}" in style
    assert "<span class=w>mutated-global</span>" in page and "<span class=w>compile-site</span>" in page
    body = page.split("<body>", 1)[1]
    outside = re.sub(r"<span class=w>[^<]*</span>|<[^>]*>", " ", body)
    assert not re.search(r"\S-\S", outside), re.search(r"\S*\S-\S\S*", outside)
    assert '<td class=finding colspan=5>' in page and "<pre>global" not in page


def test_the_text_report_cannot_drive_the_terminal() -> None:
    text = render_text(_hostile())
    assert "\x1b" not in text and "\x07" not in text
    assert "alert(1)" in text  # shown, as text


def test_the_json_report_has_the_documented_shape(findings) -> None:
    data = json.loads(render_json(_explain(LOGS / "recompiles.log", findings)))
    assert set(data) == {"input", "kind", "channels", "inferred", "recompiles", "functions", "other_limit_hits",
                         "unexplained", "static", "warnings"}
    poly = data["functions"][0]
    assert (poly["function"], poly["recompiles"], poly["limit_hit"], poly["limit"]["limit_value"]) == ("poly", 7, True, 8)
    guard = poly["guards"][0]
    assert guard["source"] == "G['step']" and guard["location"]["line"] == 13
    assert guard["explained_by"][0]["how"] == "guard"
    assert guard["explained_by"][0]["finding"]["code"] == "RCL101"
    assert [u["function"] for u in data["unexplained"]] == ["normalize"]


# ---- the command ------------------------------------------------------------------------------


def _cli(*args: str):
    return CliRunner().invoke(main, ["explain", *args])


def test_the_command_explains_a_log_and_exits_1(findings) -> None:
    result = _cli("--no-cache", str(LOGS / "recompiles.log"), str(PROJ))
    assert result.exit_code == 1, result.output
    assert "explained by RCL101 mutated-global" in result.stdout
    assert "Unexplained guard failures (1):" in result.stdout
    assert _cli("--no-cache", "--exit-zero", str(LOGS / "recompiles.log"), str(PROJ)).exit_code == 0


def test_without_paths_the_files_the_log_names_are_linted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "proj"
    shutil.copytree(PROJ, copy)
    (copy / "pyproject.toml").write_text("")  # the project root: the training loop is read too
    log = (LOGS / "recompiles.log").read_text(encoding="utf-8").replace("/tmp/rcl-explain/proj", str(copy))
    log = log.replace("mp/rcl-explain/proj", str(copy)[-20:])
    (tmp_path / "run.log").write_text(log)
    monkeypatch.chdir(copy)  # the files a log names are linted where they are under the working directory
    result = _cli("--no-cache", "--format", "json", str(tmp_path / "run.log"))
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert sorted(Path(p).name for p in data["static"]["paths"]) == ["model.py", "ops.py"]
    assert len(data["unexplained"]) == 1


def test_a_log_from_elsewhere_without_paths_says_what_to_do() -> None:
    result = _cli("--format", "json", str(OLDER / "torch-2.1.log"))
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["static"]["paths"] == [] and any("pass PATHS" in w for w in data["warnings"])


def test_html_goes_to_the_output_file(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = _cli("--no-cache", "--format", "html", "-o", str(out), str(LOGS / "recompiles.log"), str(PROJ))
    assert result.exit_code == 1 and result.stdout == ""
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "RCL104" in page


def test_standard_input_is_read_as_a_log() -> None:
    data = (OLDER / "torch-2.3.log").read_bytes()
    result = CliRunner().invoke(main, ["explain", "--format", "json", "-"], input=data)
    assert result.exit_code == 1
    assert json.loads(result.stdout)["recompiles"] == 2


def test_a_run_without_recompiles_exits_0(tmp_path: Path) -> None:
    log = tmp_path / "quiet.log"
    log.write_text("V1201 10:31:53.646000 11339 torch/_dynamo/guards.py:4786] [0/0] [__guards] GUARDS:\n")
    result = _cli(str(log))
    assert result.exit_code == 0, result.output
    assert "0 recompile(s)" in result.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "no torch.compile log records"),
        (b"hello\nworld\n", "no torch.compile log records"),
        (b"\x00\x01\x02binary", "binary file"),
        (b'{"not": "a report"}', "not a report of `recompile-lint verify`"),
        (b'[{"verification": ', "not valid JSON"),
        (b"[" * 100000, "JSON"),
        (b'{"events": [{"reasons": 5}]}', "unexpected shape"),
    ],
)
def test_bad_input_is_one_error_line_and_exit_2(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "input"
    path.write_bytes(content)
    result = _cli(str(path))
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert result.output.startswith("recompile-lint: error:")


def test_missing_and_empty_directory_inputs_exit_2(tmp_path: Path) -> None:
    assert "no such file" in _cli(str(tmp_path / "nope.log")).output
    empty = tmp_path / "trace"
    empty.mkdir()
    result = _cli(str(empty))
    assert result.exit_code == 2 and "no trace files" in result.output


def test_a_log_cut_short_gives_what_it_holds_and_a_warning(findings) -> None:
    lines = (LOGS / "recompiles.log").read_text(encoding="utf-8").splitlines()
    header = max(i for i, line in enumerate(lines) if "Recompiling function normalize" in line)
    cut = "\n".join(lines[: header + 1])  # the last record stops after its header
    evidence = read_log(io.StringIO(cut))
    assert Counter(e.function for e in evidence.events) == {"poly": 8, "forward_step": 2, "forward": 2, "normalize": 1}
    assert any("lists no guard failure" in w for w in evidence.warnings)


def test_a_huge_line_is_cut_with_a_warning() -> None:
    text = "x" * (3 << 20) + "\n" + (OLDER / "torch-2.3.log").read_text(encoding="utf-8")
    evidence = read_log(io.StringIO(text))
    assert len(evidence.events) == 2
    assert any("were cut" in w for w in evidence.warnings)


def test_explain_never_imports_torch() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from recompile_lint.frontends.cli import main\n"
        f"r = CliRunner().invoke(main, ['explain', '--no-cache', {str(LOGS / 'recompiles.log')!r}, {str(PROJ)!r}])\n"
        "print(r.exit_code, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(Path(__file__).parent), env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)})
    assert out.stdout.split()[-2:] == ["1", "False"]


def test_the_cli_lists_explain() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert "explain" in result.output
    assert "LOG_OR_TRACE_DIR" in _cli("--help").output


def test_a_file_named_by_the_log_that_cannot_be_a_path_is_skipped() -> None:
    from recompile_lint.explain.command import default_paths

    assert default_paths(["bad\0name.py", "/usr/lib/python3/site-packages/torch/x.py", str(MODEL)], outside=True)[0] == [str(MODEL)]


def test_read_input_error_type() -> None:
    with pytest.raises(ExplainInputError):
        read_input("/definitely/not/here.log")


def test_an_unknown_rule_code_is_a_usage_error() -> None:
    result = _cli("--select", "XYZ9", str(LOGS / "recompiles.log"), str(PROJ))
    assert result.exit_code == 2 and "unknown rule code" in result.output and "Traceback" not in result.output
