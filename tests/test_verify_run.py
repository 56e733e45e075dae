"""Run mode with real torch: the user's own script under the recorder, through the CLI."""

from __future__ import annotations

import os

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from recompile_lint.verify.command import verify  # noqa: E402
from verify_helpers import VERIFY_DATA, line_of, tree_digest  # noqa: E402

SCRIPT = VERIFY_DATA / "runmode" / "train.py"


@pytest.fixture(scope="module")
def run_output() -> tuple[int, dict, dict, dict]:
    # The run mode's report needs a recompile no finding predicts: normalize's dtype change,
    # which only the execution stage predicts (RCL201); the static stages leave it unpredicted.
    os.environ["RECOMPILE_LINT_NO_EXECUTION"] = "1"
    try:
        return _run_output()
    finally:
        os.environ.pop("RECOMPILE_LINT_NO_EXECUTION", None)


def _run_output() -> tuple[int, dict, dict, dict]:
    before = tree_digest(VERIFY_DATA)
    result = CliRunner().invoke(
        verify,
        ["--run", f"python {SCRIPT} --steps 4", "--format", "json", "--timeout", "240", "-q", str(SCRIPT)],
    )
    return result.exit_code, json.loads(result.stdout), before, tree_digest(VERIFY_DATA)


def test_run_confirms_the_predicted_recompile(run_output) -> None:
    exit_code, data, _, _ = run_output
    assert exit_code == 1
    assert data["exit_code"] == 0
    [finding] = data["findings"]
    assert finding["code"] == "RCL101" and finding["line"] == line_of(SCRIPT, "return x * step")
    verification = finding["verification"]
    assert verification["verdict"] == "confirmed"
    assert verification["recompiles"] == 3  # steps 1, 2, 3 after the first graph
    assert any("G['step'] ==" in reason for reason in verification["reasons"])


def test_run_reports_the_recompile_no_finding_predicted(run_output) -> None:
    _, data, _, _ = run_output
    [surprise] = data["unpredicted"]
    assert surprise["function"] == "normalize"
    reason = surprise["reasons"][0]
    assert "dtype mismatch" in reason["guard"] and reason["family"] == "type"


def test_run_leaves_the_tree_untouched(run_output) -> None:
    _, _, before, after = run_output
    assert after == before


def test_run_with_a_missing_script_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    result = CliRunner().invoke(verify, ["--run", f"python {tmp_path / 'nope.py'}", str(tmp_path)])
    assert result.exit_code == 2
    assert "no such script" in result.output


def test_cuda_without_a_gpu_is_a_clear_usage_error(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    (tmp_path / "m.py").write_text("x = 1\n")
    result = CliRunner().invoke(verify, ["--device", "cuda", "--timeout", "240", str(tmp_path)])
    assert result.exit_code == 2
    assert "--device cuda" in result.output and "Traceback" not in result.output


def test_probe_mode_without_findings_exits_0() -> None:
    fixed = VERIFY_DATA / "seedcase" / "poly_seed_fixed.py"
    result = CliRunner().invoke(verify, ["-q", "--format", "json", str(fixed)])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == []


def test_verify_of_the_changed_file_probes_the_finding_lint_reports_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit that changes only train.py: lint reports the finding there, and verify on the
    same file probes it in model.py (where compiled code reads the global) and confirms it."""
    from test_verify_scope import MODEL, TRAIN

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    result = CliRunner().invoke(verify, ["-q", "--format", "json", "--timeout", "240", "train.py"])
    assert result.exit_code == 1, result.output
    [finding] = json.loads(result.stdout)
    assert finding["code"] == "RCL101" and finding["path"].endswith("model.py")
    assert finding["verification"]["verdict"] == "confirmed"
