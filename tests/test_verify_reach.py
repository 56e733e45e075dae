"""The verifier reaches findings a synthesized call cannot: import-time recompiles, the module's
own entry point, regions matched by file and qualified name, and ``not-exercised``.

All modules of ``verify_data/reach`` are probed in one verify run (one lane: torch is imported
once, each module's child is a fork of it)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from recompile_lint.config import Config  # noqa: E402
from recompile_lint.engine import lint_paths  # noqa: E402
from recompile_lint.models import Subject  # noqa: E402
from recompile_lint.verify.api import ModuleTiming, VerifyOptions, verify_findings  # noqa: E402
from recompile_lint.verify.results import Verdict, VerifiedFinding  # noqa: E402
from verify_helpers import VERIFY_DATA, line_of, make_finding  # noqa: E402

REACH = VERIFY_DATA / "reach"


@pytest.fixture(scope="module")
def reach() -> tuple[dict[str, VerifiedFinding], list[ModuleTiming]]:
    real = {f.region: f for f in lint_paths([str(REACH)], Config(cache=False)).findings}
    assert set(real) == {"sweep.shifted", "needs_run.Mixer.forward", "twin_other.poly"}
    main = REACH / "twin_main.py"
    # Over-reported: twin_main.poly never reads twin_main.step; twin_other.poly, another
    # function named poly in another file, recompiles on its own step when main() runs.
    over = make_finding(main, line_of(main, "return x * 2"), "RCL101", "twin_main.poly",
                        Subject("global", module="twin_main", name="step", value_kind="int"))
    # No probe for this code: the entry point runs, and never compiles ``unused``.
    unused = make_finding(main, line_of(main, "return x * step"), "RCL999", "twin_main.unused",
                          Subject("global", module="twin_main", name="step"))
    findings = [*real.values(), over, unused]
    timings: list[ModuleTiming] = []
    results = verify_findings(findings, VerifyOptions(timeout=240.0), timings=timings)
    by_region = {item.finding.region: item for item in results}
    by_region["over"] = results[len(real)]
    return by_region, timings


def test_a_sweep_at_import_is_confirmed_from_the_import_itself(reach) -> None:
    result = reach[0]["sweep.shifted"].verification
    assert result.verdict is Verdict.CONFIRMED, result.detail
    assert result.method == "import" and result.limit_hit and result.graphs == 8
    assert "importing sweep" in result.detail
    assert any("G['offset'] ==" in reason for reason in result.reasons)


def test_the_entry_point_runs_when_no_argument_can_be_synthesised(reach) -> None:
    result = reach[0]["needs_run.Mixer.forward"].verification
    assert result.verdict is Verdict.CONFIRMED, result.detail
    assert result.method == "needs_run.run()"
    assert "cannot construct Mixer" in result.detail
    assert any("G['step'] ==" in reason for reason in result.reasons)


def test_a_same_named_function_in_another_file_is_not_the_region(reach) -> None:
    over = reach[0]["over"].verification
    # main() made twin_other.poly recompile on its own ``step``: not this finding's evidence.
    assert over.verdict is Verdict.NOT_REPRODUCED, over.detail
    assert over.recompiles == 0 and not over.limit_hit
    other = reach[0]["twin_other.poly"].verification
    assert other.verdict is Verdict.CONFIRMED, other.detail


def test_a_region_the_entry_point_never_compiles_is_not_exercised(reach) -> None:
    result = reach[0]["twin_main.unused"].verification
    assert result.verdict is Verdict.NOT_EXERCISED, result.detail
    assert result.graphs == 0 and "never compiled" in result.detail
    assert result.method == "twin_main.main()"


def test_torch_is_imported_once_for_the_whole_run(reach) -> None:
    _, timings = reach
    assert {t.module for t in timings} == {"sweep", "needs_run", "twin_main", "twin_other"}
    # Each module's child is a fork of the lane's supervisor, which imported torch once.
    assert all(t.torch_import == 0.0 for t in timings)
    assert len({t.lane_torch_import for t in timings}) == 1 and timings[0].lane_torch_import > 0


def test_the_reach_tree_is_left_as_it_was() -> None:
    assert not any(p.name == "__pycache__" for p in Path(REACH).rglob("*"))
