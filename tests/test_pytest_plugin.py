"""The pytest plugin (``pytest --recompiles=fail|warn``): off by default at no cost, and, on, a
test whose compiled code recompiles beyond its budget fails (or warns) with the line, the guard
and the fix. The runs on the sample project (``tests/data/pytest_plugin_project``) are pytest
in a subprocess on a copy of it, as a user's CI would run it."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from recompile_lint.verify.pytest_plugin import (
    FunctionRecompiles,
    RecordedTest,
    StaticFindings,
    _mentions,
    allowed_for,
    describe_test,
    group_by_function,
    mark_dynamic,
)
from recompile_lint.verify.results import Family, GuardFailure, LimitHit, RecompileEvent

SAMPLE = Path(__file__).parent / "data" / "pytest_plugin_project"
UNBOUNDED = "check_model.py::test_step_counter_recompiles_every_call"


def run_pytest(cwd: Path, *args: str, prelude: str = "", timeout: float = 300,
               autoload: bool = True) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``cwd``, with the plugins that are installed (``prelude``:
    Python run before pytest starts; ``autoload=False``: none of them unless named)."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    code = f"{prelude}\nimport sys, pytest\nsys.exit(pytest.main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, "-p", "no:cacheprovider", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def tree(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(SAMPLE, copy)
    return copy


# ---- off: no cost ----------------------------------------------------------------------------


def test_the_plugin_is_a_pytest11_entry_point() -> None:
    entry = [e for e in importlib.metadata.entry_points(group="pytest11") if e.name == "recompile-lint"]
    assert [e.value for e in entry] == ["recompile_lint.verify.pytest_plugin"]


def test_a_run_without_the_option_never_imports_torch(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text(
        "import sys\nimport pytest\n\n"
        "@pytest.mark.recompiles(max=1)\n"
        "def test_plain(pytestconfig):\n"
        "    assert pytestconfig.pluginmanager.has_plugin('recompile-lint')\n"
        "    assert not pytestconfig.pluginmanager.has_plugin('recompile-lint-recompiles')\n"
        "    assert 'torch' not in sys.modules\n"
    )
    result = run_pytest(tmp_path, "--strict-markers", "-q", "test_plain.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_without_autoloading_the_entry_point_name_loads_it(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    named = run_pytest(tmp_path, "-p", "recompile-lint", "--recompile-budget", "2", autoload=False)
    assert named.returncode == 0, named.stdout + named.stderr
    unnamed = run_pytest(tmp_path, "--recompile-budget", "2", autoload=False)
    assert unnamed.returncode == 4 and "--recompile-budget" in unnamed.stderr


@pytest.mark.parametrize(("args", "ini", "message"), [
    (("--recompiles=fail", "--recompile-budget", "-1"), "", "must be 0 or more"),
    (("--recompiles=loud",), "", "invalid choice"),
    ((), "recompiles = loud\n", "expected one of fail, warn, off"),
    ((), "recompiles = warn\nrecompile_budget = many\n", "recompile_budget in the ini file: not a whole number"),
    (("--recompiles=fail", "--recompiles-json", "missing/out.json"), "", "does not exist"),
])
def test_bad_settings_are_usage_errors(tmp_path: Path, args: tuple[str, ...], ini: str, message: str) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n" + ini)
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    result = run_pytest(tmp_path, *args)
    assert result.returncode == 4, result.stdout + result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_json_path_in_the_ini_file_is_relative_to_that_file(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nrecompiles = fail\nrecompiles_json = missing/out.json\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "test_x.py").write_text("def test_x():\n    pass\n")
    result = run_pytest(tmp_path / "sub")
    assert result.returncode == 4
    assert f"--recompiles-json {tmp_path / 'missing' / 'out.json'}: the directory" in result.stderr


def test_without_torch_turning_it_on_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    result = run_pytest(tmp_path, "--recompiles=fail", prelude="import sys; sys.modules['torch'] = None")
    assert result.returncode == 4
    assert "needs torch: pip install 'recompile-lint[verify]'" in result.stderr


# ---- the judgement, on recorded events (no torch) ----------------------------------------


def _event(function: str, *guards: str, file: str = "/src/m.py", first_line: int = 3) -> RecompileEvent:
    reasons = tuple(GuardFailure(g, Family.CONSTANT, f"0/{i}", "return x * n", file, first_line + 1, function)
                    for i, g in enumerate(guards))
    return RecompileEvent(function, file, first_line, "0/1", reasons)


def test_a_guard_names_an_input_as_a_whole_token() -> None:
    assert _mentions("n == 1", "n")
    assert _mentions("tensor 'x' size mismatch at index 0. expected 2, actual 3", "x")
    assert not _mentions("G['n'] == 1", "n")  # a global named n is not the argument n
    assert not _mentions("nn == 1", "n")


def test_only_a_value_that_stopped_recompiling_counts_as_automatic_dynamic() -> None:
    became_dynamic = FunctionRecompiles("f", "/src/m.py", 3, [_event("f", "n == 1")])
    mark_dynamic(became_dynamic, {"n"})
    assert became_dynamic.dynamic == 1 and became_dynamic.counted(False) == 0 and became_dynamic.counted(True) == 1
    # Dynamo records a global int as dynamic and still specializes it: every recompile counts.
    still_static = FunctionRecompiles("g", "/src/m.py", 9, [
        _event("g", "G['STEP'] == 0"), _event("g", "G['STEP'] == 1", "G['STEP'] == 0"),
    ])
    mark_dynamic(still_static, {"G['STEP']"})
    assert still_static.dynamic == 0 and still_static.counted(False) == 2


def test_the_limit_reached_is_over_any_budget_and_unpredicted_says_so() -> None:
    events = (_event("f", "G['STEP'] == 0"), _event("f", "G['STEP'] == 1", "G['STEP'] == 0"))
    hit = LimitHit("recompile_limit", 8, "f", "/src/m.py", 3, "G['STEP'] == 7")
    [group] = group_by_function(events, (hit,))
    assert len(group.events) == 2 and group.limit == hit
    result = RecordedTest("t.py::test", allowed=5, functions=[group], count_dynamic=False)
    assert result.over() == [group]
    text = describe_test(result, "/src", "fail")
    assert "m.py:3: f recompiled 2 time(s), over the budget of 5" in text
    assert "recompile_limit (8) reached" in text
    assert "guard: G['STEP'] == 0  (/src/m.py:4 in f: return x * n)" in text
    assert "predicted by: not predicted" in text


def test_only_project_files_are_linted(tmp_path: Path) -> None:
    import json as stdlib_module

    mine = tmp_path / "model.py"
    mine.write_text("x = 1\n")
    static = StaticFindings()
    assert static.wanted(str(mine))
    assert not static.wanted(stdlib_module.__file__)  # the standard library
    assert not static.wanted(pytest.__file__)  # an installed package
    assert not static.wanted(str(tmp_path / "gone.py")) and not static.wanted("<string>")


class _Item:
    def __init__(self, mark: pytest.MarkDecorator | None) -> None:
        self.mark = mark.mark if mark is not None else None

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return self.mark if name == "recompiles" else None


def test_the_marker_sets_the_budget_and_a_malformed_one_is_named() -> None:
    assert allowed_for(_Item(None), 3) == 3
    assert allowed_for(_Item(pytest.mark.recompiles(max=2)), 0) == 2
    assert allowed_for(_Item(pytest.mark.recompiles(1)), 0) == 1
    for bad in (pytest.mark.recompiles(), pytest.mark.recompiles(max=-1), pytest.mark.recompiles(max="2"),
                pytest.mark.recompiles(max=True), pytest.mark.recompiles(maximum=2), pytest.mark.recompiles(1, max=2)):
        with pytest.raises(ValueError, match=r"takes max=N, a whole number 0 or more; got \("):
            allowed_for(_Item(bad), 0)


# ---- on: the sample project (torch in the subprocess) ------------------------------------


def _failed(output: str) -> list[str]:
    return sorted(line.split()[1] for line in output.splitlines() if line.startswith("FAILED "))


@pytest.mark.slow
def test_fail_mode_fails_exactly_the_over_budget_test(sample: Path) -> None:
    before = tree(sample)
    result = run_pytest(sample, "--recompiles=fail", "-rf")
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    # check_cache.py's second test would recompile the first one's graph if caches were kept.
    assert _failed(out) == [UNBOUNDED]
    assert "1 failed, 5 passed" in out
    failure = out[out.index("test_step_counter_recompiles_every_call ___"):out.index("short test summary")]
    assert "model.py:6: scale recompiled 8 time(s), over the budget of 0" in failure
    assert "recompile_limit (8) reached" in failure
    assert f"guard: G['STEP'] == 1  ({sample / 'model.py'}:7 in scale: return x * STEP)" in failure
    assert "predicted by: RCL101 at model.py:7" in failure
    assert "fix: Keep it in a 0-d tensor" in failure
    assert "Recompiling function" not in failure  # the recorder's log lines stay out of the report
    assert "== recompiles ==" in out and "1 test(s) recompiled beyond the budget (failed)" in out
    assert tree(sample) == before  # nothing written into the project (the lint cache is the user's)


@pytest.mark.slow
def test_warn_mode_exits_0_with_a_summary_and_a_json_explain_reads(sample: Path) -> None:
    from recompile_lint.explain.command import explain

    result = run_pytest(sample, "--recompiles=warn", "--recompiles-count-dynamic", "--recompiles-json", "out.json",
                        "check_model.py")
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "4 passed" in out
    assert "RecompileWarning" in out
    summary = out[out.index("== recompiles =="):]
    assert f"{UNBOUNDED}:" in summary
    # Counted, the recompile that made `n` dynamic puts the second test over its budget.
    assert "check_model.py::test_int_argument_becomes_dynamic:" in summary
    assert "affine recompiled 1 time(s) (1 by automatic dynamic shapes, counted)" in summary
    assert "2 test(s) recompiled beyond the budget (warned), 1 recompiled within it" in summary

    data = json.loads((sample / "out.json").read_text())
    assert {"command", "exit_code", "detail", "findings", "unpredicted", "limit_hits", "graphs", "events",
            "timed_out", "tests"} <= set(data)
    assert data["exit_code"] == 0 and data["limit_hits"][0]["function"] == "scale"
    assert {e["function"] for e in data["events"]} == {"scale", "affine", "activation"}
    verdicts = {f["code"]: f["verification"]["verdict"] for f in data["findings"]}
    assert verdicts["RCL101"] == "confirmed"
    tests = {t["nodeid"]: t for t in data["tests"]}
    assert tests[UNBOUNDED]["over_budget"] and tests[UNBOUNDED]["functions"][0]["predicted_by"] == "RCL101"
    assert not tests["check_model.py::test_three_activations"]["over_budget"]

    # The project lies outside the working directory: explain lints it when it is named.
    explained = CliRunner().invoke(explain, [str(sample / "out.json"), str(sample)])
    assert explained.exit_code == 1, explained.output  # 1: the input shows recompiles
    assert "scale: 8 recompile(s)" in explained.output
    assert "explained by RCL101" in explained.output


@pytest.mark.slow
def test_keep_cache_lets_one_test_recompile_what_another_compiled(sample: Path) -> None:
    result = run_pytest(sample, "--recompiles=fail", "--recompiles-keep-cache", "-rf", "check_cache.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert _failed(result.stdout) == ["check_cache.py::test_tanh_after_relu"]
    assert "guard: kind == 'relu'" in result.stdout
