"""Cached, parallel and single-process runs report exactly the same thing.

Runs the whole pipeline over a snapshot of ``fixtures/`` and over a generated multi-module
project three ways: one process without a cache; facts parsed in worker processes (the batch
threshold lowered so that small trees use workers too) into an empty cache; one process
reading that cache (the whole-run result, then the per-file facts). Findings are compared field by field (message, severity, subject).
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from recompile_lint.analysis import parallel
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
sys.path.insert(0, str(REPO / "bench"))

from make_synthetic import generate  # noqa: E402


def outcome(result) -> tuple:
    return (
        tuple(f.to_dict() for f in result.findings),
        tuple(result.errors),
        result.files_checked,
        result.suppressed,
    )


def parallel_run(paths: list[str], config: Config, monkeypatch) -> tuple:
    """A run whose facts are parsed in two workers (and stored in the cache of ``config``)."""
    with monkeypatch.context() as patch:
        # Every batch goes to the workers, however small the test project is.
        patch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
        patch.setattr(parallel, "MIN_SELECT_BYTES", 0)
        return outcome(lint_paths(paths, replace(config, jobs=2)))


def three_ways(paths: list[str], tmp_path: Path, monkeypatch) -> list[tuple]:
    single = outcome(lint_paths(paths, Config(select=("RCL",), cache=False, jobs=1)))
    cached = Config(select=("RCL",), cache_dir=str(tmp_path / "cache"), jobs=1)
    workers_cold_cache = parallel_run(paths, cached, monkeypatch)
    assert any((tmp_path / "cache").rglob("facts-*/*/*")), "the cache was not filled"
    warm_run = outcome(lint_paths(paths, cached))  # answered from the run cache
    for runs in (tmp_path / "cache").glob("runs-*"):
        shutil.rmtree(runs)
    warm_facts = outcome(lint_paths(paths, cached))  # analysed again from cached facts
    assert warm_run == warm_facts
    return [single, workers_cold_cache, warm_facts]


@pytest.mark.skipif(not any(FIXTURES.rglob("*.py")), reason="fixtures/ holds no files yet")
def test_fixtures_report_the_same_every_way(tmp_path, monkeypatch):
    # A snapshot: the fixtures tree may change while the runs happen. fixtures/programs/ is left
    # out: whole projects with the same module names, each linted on its own (test_differential).
    snapshot = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, snapshot, ignore=shutil.ignore_patterns("__pycache__", ".recompile-lint-cache", "programs"))
    single, workers, warm = three_ways([str(snapshot)], tmp_path, monkeypatch)
    assert single[0], "the fixtures should produce findings"
    assert workers == single
    assert warm == single


def test_synthetic_project_reports_the_same_every_way(tmp_path, monkeypatch):
    project = tmp_path / "project"
    generate(project, 30)
    monkeypatch.chdir(project)
    single, workers, warm = three_ways(["."], tmp_path, monkeypatch)
    assert {f["code"] for f in single[0]} >= {"RCL101"}
    # Findings reach across modules: a helper's global read, reported in the helper's file.
    assert any(not f["region"].startswith(Path(f["path"]).with_suffix("").as_posix().replace("/", ".")) for f in single[0])
    assert workers == single
    assert warm == single


def findings_by_file(result) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for finding in result.findings:
        out.setdefault(str(Path(finding.path).resolve()), []).append(finding.to_dict() | {"path": ""})
    return out


def one_file_at_a_time(root: Path, files: list[Path], config: Config) -> None:
    """Linting one file reports exactly what linting its whole project reports in that file:
    the work skipped for the other files (their rules, the mutation sites only they need)
    must never change a finding."""
    whole = findings_by_file(lint_paths([str(root)], config))
    assert whole, "the project should produce findings"
    for path in files:
        alone = findings_by_file(lint_paths([str(path)], config))
        assert set(alone) <= {str(path.resolve())}
        assert alone.get(str(path.resolve()), []) == whole.get(str(path.resolve()), []), path


def test_one_file_reports_what_the_whole_fixture_tree_reports_there(tmp_path):
    snapshot = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, snapshot, ignore=shutil.ignore_patterns("__pycache__", ".recompile-lint-cache", "programs"))
    (snapshot / "pyproject.toml").write_text('[project]\nname = "f"\nversion = "0"\n', encoding="utf-8")
    config = Config(select=("RCL",), cache_dir=str(tmp_path / "cache"))
    whole = findings_by_file(lint_paths([str(snapshot)], config))
    # Every file of the multi-module projects, and in each group a file with findings and one without.
    files = sorted((snapshot / "projects").rglob("*.py"))
    for group in sorted(p for p in snapshot.iterdir() if p.is_dir() and p.name != "projects"):
        members = sorted(group.rglob("*.py"))
        flagged = [p for p in members if str(p.resolve()) in whole]
        clean = [p for p in members if str(p.resolve()) not in whole]
        files += flagged[:2] + clean[:1]
    one_file_at_a_time(snapshot, files, config)


def test_one_file_reports_what_the_whole_synthetic_project_reports_there(tmp_path):
    project = tmp_path / "project"
    written = generate(project, 30)
    config = Config(select=("RCL",), cache_dir=str(tmp_path / "cache"))
    # A module that compiles, one whose helpers others' regions reach, one that only mutates.
    one_file_at_a_time(project, [written[0], written[1], written[7], written[29]], config)


def test_the_garbage_collector_is_restored_after_a_run(tmp_path):
    """A run pauses the cyclic collector; a long-lived host (flake8, the verifier) gets it back."""
    import gc

    project = tmp_path / "project"
    generate(project, 3)
    assert gc.isenabled()
    lint_paths([str(project)], Config(cache=False))
    assert gc.isenabled()
    gc.disable()
    try:
        lint_paths([str(project)], Config(cache=False))
        assert not gc.isenabled()  # a host that had it off keeps it off
    finally:
        gc.enable()


def test_a_retained_analysis_outlives_the_call_and_changes_nothing(tmp_path):
    """The script keeps the run's analysis until the process ends, out of the cyclic
    collector's sight; the result is the same."""
    import weakref

    project = tmp_path / "project"
    generate(project, 3)
    config = Config(select=("RCL",), cache=False)
    import gc

    plain = lint_paths([str(project)], config)
    kept: list = []
    try:
        assert lint_paths([str(project)], config, retain=kept) == plain
        [analysis] = kept
        assert analysis.regions and analysis.index.paths
        # Kept out of the collector's sight: the index refers to itself through the rules'
        # memos, so only a collection could free it, and none will look at it.
        watched = weakref.ref(analysis.index)
        assert gc.get_freeze_count() > 0
        kept.clear()
        del analysis
        gc.collect()
        assert watched() is not None
    finally:
        gc.unfreeze()
    gc.collect()
    assert watched() is None  # nothing but the frozen cycle held it
