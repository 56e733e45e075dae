"""``explain`` on logs and traces written by real torch during the test: the project in
``explain_data/proj``, a sample of the fixtures (one program per family), and the verifier's
run report. Each run imports torch once (seconds), so runs are shared per module."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from recompile_lint.config import Config  # noqa: E402
from recompile_lint.engine import lint_paths  # noqa: E402
from recompile_lint.explain.inputs import read_input  # noqa: E402
from recompile_lint.explain.match import Explanation, explain  # noqa: E402
from recompile_lint.frontends.cli import main  # noqa: E402

DATA = Path(__file__).parent / "explain_data"
ROOT = Path(__file__).parent.parent
# One program per family of causes, each with an error or warning finding the run shows.
FIXTURES = [
    "rcl1xx/global_int_counter.py", "rcl1xx/module_int_attribute.py", "rcl1xx/global_dict_value.py",
    "rcl1xx/environ_read.py", "rcl1xx/train_eval_toggle.py", "rcl2xx/global_history_length.py",
    "rcl2xx/rank_branch.py", "rcl2xx/dynamic_false_prefix.py", "rcl3xx/grad_mode_metrics.py",
    "rcl4xx/clip_by_item.py", "rcl4xx/debug_backend_per_call.py", "rcl4xx/activation_sweep.py",
]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"TORCH_LOGS", "TORCH_TRACE"}}
    env.update({"PYTHONDONTWRITEBYTECODE": "1", **extra})
    return env


@pytest.fixture(scope="module")
def proj_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path]]:
    """``proj/train.py`` run once with the recompiles channel and a trace: (project, log, trace)."""
    base = tmp_path_factory.mktemp("proj-run")
    copy = base / "proj"
    shutil.copytree(DATA / "proj", copy)
    trace = base / "trace"
    run = subprocess.run([sys.executable, "train.py"], cwd=copy, capture_output=True, text=True, timeout=600,
                         env=_env(TORCH_LOGS="recompiles", TORCH_TRACE=str(trace)))
    assert run.returncode == 0, run.stderr[-3000:]
    log = base / "run.log"
    log.write_text(run.stderr, encoding="utf-8")
    yield copy, log, trace


def _result(evidence_path: Path, project: Path) -> Explanation:
    findings = list(lint_paths([str(project)], Config(select=("RCL",), cache=False)).findings)
    files = [str(p) for p in project.rglob("*.py")]
    return explain(read_input(str(evidence_path)), findings, input_name=str(evidence_path), linted=[str(project)],
                   files=files)


def _mapping(result: Explanation) -> dict[tuple[str, str], list[tuple[str, str, str]]]:
    return {
        (f.function, g.source): [(m.finding.code, Path(m.finding.path).name, m.how) for m in g.matches]
        for f in result.functions for g in f.groups
    }


EXPECTED = {
    ("poly", "G['step']"): [("RCL101", "model.py", "guard")],
    ("forward_step", "G['__import_pkg_dot_ops'].STEP"): [("RCL101", "ops.py", "guard")],
    ("forward", "self.step"): [("RCL104", "model.py", "guard")],
    ("normalize", "x"): [("RCL201", "model.py", "guard")],
}


def test_a_live_recompiles_log_maps_every_recompile(proj_run) -> None:
    project, log, _ = proj_run
    result = _result(log, project)
    assert _mapping(result) == EXPECTED
    poly = {f.function: f for f in result.functions}["poly"]
    assert poly.recompiles == 7 and poly.limit is not None and poly.limit.limit_value == 8
    assert all(Path(f.file).parent.parent == project or Path(f.file).parent == project / "pkg" for f in result.functions)


def test_a_live_trace_maps_the_same_recompiles_and_counts_graphs(proj_run) -> None:
    project, _, trace = proj_run
    result = _result(trace, project)
    assert result.kind == "trace"
    assert _mapping(result) == EXPECTED
    functions = {f.function: f for f in result.functions}
    assert {name: functions[name].graphs for name in functions} == {
        "poly": 8, "forward_step": 3, "forward": 3, "normalize": 2}
    assert (functions["poly"].recompiles, functions["poly"].refused) == (7, 1)


def test_a_trace_cut_short_still_explains_what_it_holds(proj_run, tmp_path: Path) -> None:
    project, _, trace = proj_run
    [file] = list(trace.iterdir())
    data = file.read_bytes()
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / file.name).write_bytes(data[: len(data) // 2] + b'V1201 10:00:00.000000 1 torch/x.py:1] {"frame_id": 0, "fra')
    result = CliRunner().invoke(main, ["explain", "--no-cache", "--format", "json", str(cut), str(project)])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["functions"] and data["functions"][0]["function"] == "poly"
    assert any("not trace entries" in w for w in data["warnings"])


@pytest.fixture(scope="module")
def fixture_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sample of fixtures, run in one process: (log, trace)."""
    base = tmp_path_factory.mktemp("fixture-run")
    trace = base / "trace"
    files = [str(ROOT / "fixtures" / name) for name in FIXTURES]
    run = subprocess.run([sys.executable, str(DATA / "run_fixtures.py"), *files], capture_output=True, text=True,
                         timeout=900, cwd=base, env=_env(TORCH_LOGS="recompiles", TORCH_TRACE=str(trace)))
    assert run.returncode == 0 and "FAILED" not in run.stderr, run.stderr[-3000:]
    log = base / "fixtures.log"
    log.write_text(run.stderr, encoding="utf-8")
    return log, trace


@pytest.mark.parametrize("which", ["log", "trace"])
def test_every_recompile_of_the_fixture_sample_is_explained_by_its_own_finding(fixture_run, which: str) -> None:
    log, trace = fixture_run
    findings = list(lint_paths([str(ROOT / "fixtures" / f) for f in FIXTURES], Config(select=("RCL",), cache=False)).findings)
    files = [str(ROOT / "fixtures" / f) for f in FIXTURES]
    result = explain(read_input(str(log if which == "log" else trace)), findings, input_name=which, files=files)
    recompiled = {Path(f.file).name for f in result.functions}
    assert recompiled == {Path(f).name for f in FIXTURES}
    for func in result.functions:
        for group in func.groups:
            assert group.matches, f"{func.file} {func.function}: {group.source} unexplained"
            # Never another program's finding (a same-named function elsewhere is not it).
            assert {Path(m.finding.path).name for m in group.matches} == {Path(func.file).name}


def test_the_verifiers_run_report_explains_the_same_recompiles(proj_run, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from recompile_lint.verify.command import verify

    project, _, _ = proj_run
    monkeypatch.chdir(project)
    result = CliRunner().invoke(verify, ["--run", "python train.py", "--format", "json", "-q", "--timeout", "300",
                                         "--no-cache", "--exit-zero", str(project)])
    assert result.exit_code == 0, result.output
    report = tmp_path / "run.json"
    report.write_text(result.stdout)
    assert json.loads(result.stdout)["events"]  # the run report carries every recompile
    explained = _result(report, project)
    assert explained.kind == "verify-json"
    assert _mapping(explained) == EXPECTED
