"""Containment of the code verify runs: every descendant is stopped at the deadline, a killed
supervisor or a killed verify process leaves nothing running and no temporary directory, a
timeout is a non-zero exit, and verify writes nothing into the project."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from recompile_lint.models import Subject  # noqa: E402
from recompile_lint.verify import procs  # noqa: E402
from recompile_lint.verify.api import VerifyOptions, verify_findings  # noqa: E402
from recompile_lint.verify.command import verify  # noqa: E402
from recompile_lint.verify.results import Verdict  # noqa: E402
from verify_helpers import VERIFY_DATA, line_of, make_finding, processes_with, tree_digest  # noqa: E402

CONTAINMENT = VERIFY_DATA / "containment"
SEED = VERIFY_DATA / "seedcase" / "poly_seed.py"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def marker(monkeypatch: pytest.MonkeyPatch) -> str:
    value = f"rcl-contain-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("RCL_TEST_MARKER", value)
    return value


def _wait_until(check, timeout: float) -> bool:  # noqa: ANN001 - a predicate
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()


def _run_dirs() -> set[str]:
    base = Path(os.environ.get("TMPDIR", "/tmp")) / f"recompile-lint-verify-{os.getuid()}"
    return {p.name for p in base.iterdir()} if base.is_dir() else set()


def test_a_killed_supervisor_gives_a_verdict_and_leaves_nothing(marker: str) -> None:
    path = CONTAINMENT / "kills_supervisor.py"
    killer = make_finding(path, line_of(path, "return x * step"), "RCL101", "kills_supervisor.poly",
                          Subject("global", module="kills_supervisor", name="step"))
    seed = make_finding(SEED, line_of(SEED, "return x * step"), "RCL101", "poly_seed.poly",
                        Subject("global", module="poly_seed", name="step"))
    before = _run_dirs()
    killed, after = verify_findings([killer, seed], VerifyOptions(timeout=120.0))
    assert killed.verification.verdict is Verdict.UNVERIFIABLE
    assert "supervisor process was killed" in killed.verification.detail
    # The orphan it started (clean environment, own session) came back to verify and was killed.
    assert _wait_until(lambda: processes_with(marker) == [], 10)
    # A new supervisor took over: the next module is verified as usual.
    assert after.verification.verdict is Verdict.CONFIRMED, after.verification.detail
    assert _run_dirs() <= before
    assert not procs.is_subreaper()  # verify gave the setting back


def test_sigkill_of_the_verify_process_leaves_nothing_running_and_no_temp_dir(marker: str, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    shutil.copy(CONTAINMENT / "escapes.py", project / "escapes.py")
    (project / "pyproject.toml").write_text("")
    before = _run_dirs()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    verify_proc = subprocess.Popen(
        [sys.executable, "-m", "recompile_lint", "verify", "-q", "--timeout", "300", str(project)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path,
    )
    try:
        # Both escapees run: the job is well under way.
        assert _wait_until(lambda: len(processes_with(marker)) >= 2, 240), "the module never started"
        supervisors = procs.children_of(verify_proc.pid)
        assert supervisors
        verify_proc.send_signal(signal.SIGKILL)
        verify_proc.wait(timeout=30)
        assert _wait_until(lambda: processes_with(marker) == [], 30), processes_with(marker)
        assert _wait_until(lambda: not any(procs.alive(pid) for pid in supervisors), 30)
        assert _wait_until(lambda: _run_dirs() <= before, 10), _run_dirs() - before
    finally:
        if verify_proc.poll() is None:
            verify_proc.kill()
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_a_timed_out_module_stops_every_descendant_at_the_deadline_and_exits_1(marker: str, tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    started = time.monotonic()
    result = CliRunner().invoke(verify, ["-q", "--timeout", "15", "--format", "json", str(CONTAINMENT / "escapes.py")],
                                env=env)
    elapsed = time.monotonic() - started
    assert result.exit_code == 1, result.output
    [item] = json.loads(result.stdout)
    assert item["verification"]["verdict"] == "unverifiable"
    assert "timed out after 15s" in item["verification"]["detail"]
    assert "ran past the 15s timeout: escapes" in result.stderr
    # The escapees sleep 600 s and one holds the output pipe: neither may hold verify up (the
    # rest is starting a lane, which imports torch, and linting).
    assert elapsed < 200, elapsed
    # A grandchild in its own session with a clean environment, and an orphaned daemon.
    assert processes_with(marker) == []


def test_exit_zero_and_nothing_written_into_the_project(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    shutil.copy(SEED, project / "poly_seed.py")
    (project / "pyproject.toml").write_text("")
    before = tree_digest(project)
    cache = tmp_path / "cache"
    result = CliRunner().invoke(verify, ["-q", "--exit-zero", str(project)], env={"XDG_CACHE_HOME": str(cache)})
    assert result.exit_code == 0, result.output  # confirmed, but --exit-zero
    assert "1 confirmed" in result.stdout
    assert tree_digest(project) == before  # no lint cache, no __pycache__
    assert any(cache.rglob("*")), "the lint cache lives in the user's cache directory"
    shutil.rmtree(cache)
    result = CliRunner().invoke(verify, ["-q", "--no-cache", str(project)], env={"XDG_CACHE_HOME": str(cache)})
    assert result.exit_code == 1 and "1 confirmed" in result.stdout
    assert tree_digest(project) == before and not cache.exists()


def test_a_fresh_interpreter_per_module_works_as_the_cuda_path_does() -> None:
    """Lanes for ``--device cuda`` start a fresh interpreter per module (CUDA does not survive
    a fork); the same lane runs here on CPU."""
    from recompile_lint.verify.api import _job
    from recompile_lint.verify.runner import Runner
    from recompile_lint.verify.targets import import_target

    seed = make_finding(SEED, line_of(SEED, "return x * step"), "RCL101", "poly_seed.poly",
                        Subject("global", module="poly_seed", name="step"))
    target = import_target(seed)
    assert target is not None
    with Runner(fork=False) as runner:
        outcome = runner.run(_job(target, [(0, seed)], VerifyOptions()), timeout=240.0)
    assert outcome.data["verifications"]["0"]["verdict"] == "confirmed"
    assert outcome.data["torch_import_s"] > 0  # imported in the child itself
    assert outcome.lane_torch_import == 0.0


def test_verify_writes_no_bytecode_into_the_data_tree() -> None:
    assert not any(p.name == "__pycache__" for p in CONTAINMENT.rglob("*"))


def test_subreaper_and_process_tree_helpers() -> None:
    """The helpers the containment rests on, on this very process tree."""
    if not procs.proc_available():
        pytest.skip("no /proc")
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"])
    try:
        assert _wait_until(lambda: len(procs.descendants(child.pid)) == 1, 30)
        assert child.pid in procs.children_of(os.getpid())
        killed = procs.kill_tree(child.pid, include_root=True)
        assert killed == 2
        assert not procs.alive(child.pid)
    finally:
        child.kill()
        child.wait()


@pytest.fixture(autouse=True)
def _no_leftovers() -> Iterator[None]:
    yield
    assert not procs.is_subreaper()
