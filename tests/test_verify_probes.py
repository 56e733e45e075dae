"""Probe mode with real torch (CPU): each module is probed in one child process.

Children are grouped per module and shared through module-scoped fixtures, since each one
imports torch (seconds); timeouts are generous because CI machines are slow, except for the
module that hangs on purpose.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip("torch")

from recompile_lint.config import Config  # noqa: E402
from recompile_lint.engine import lint_paths  # noqa: E402
from recompile_lint.models import Subject  # noqa: E402
from recompile_lint.verify.api import VerifyOptions, verify_findings  # noqa: E402
from recompile_lint.verify.results import Verdict, VerifiedFinding  # noqa: E402
from verify_helpers import VERIFY_DATA, line_of, make_finding, processes_with, tree_digest  # noqa: E402

OPTIONS = VerifyOptions(timeout=240.0, jobs=2)
SEED = VERIFY_DATA / "seedcase" / "poly_seed.py"
ZOO = VERIFY_DATA / "probes" / "zoo.py"
FAULTS = VERIFY_DATA / "faults"


@pytest.fixture(scope="module")
def seed_results() -> Iterator[tuple[list[VerifiedFinding], dict[str, str], dict[str, str]]]:
    """The seed module's real lint findings plus one over-reported finding, probed once."""
    before = tree_digest(VERIFY_DATA)
    findings = list(lint_paths([str(SEED)], Config(cache=False)).findings)
    assert [f.code for f in findings] == ["RCL101"]
    never_read = make_finding(SEED, line_of(SEED, "return x * step"), "RCL101", "poly_seed.poly",
                              Subject("global", module="poly_seed", name="scale", value_kind="int"))
    results = verify_findings([*findings, never_read], OPTIONS)
    yield results, before, tree_digest(VERIFY_DATA)


def test_seed_case_is_confirmed_at_the_recompile_limit(seed_results) -> None:
    results, _, _ = seed_results
    seed = results[0].verification
    assert seed.verdict is Verdict.CONFIRMED, seed.detail
    assert seed.limit_hit is True
    assert seed.graphs == 8
    assert seed.recompiles >= 8
    assert any("G['step'] ==" in reason for reason in seed.reasons)
    assert any(f"{SEED.name}:{line_of(SEED, 'return x * step')}" in reason for reason in seed.reasons)


def test_a_finding_whose_global_is_never_read_is_not_reproduced(seed_results) -> None:
    results, _, _ = seed_results
    over = results[1].verification
    assert over.verdict is Verdict.NOT_REPRODUCED, over.detail
    assert over.recompiles == 0 and over.graphs == 1 and not over.limit_hit


def test_the_fixed_twin_has_no_finding() -> None:
    assert lint_paths([str(SEED.with_name("poly_seed_fixed.py"))], Config(cache=False)).findings == ()


def test_probing_leaves_the_users_tree_untouched(seed_results) -> None:
    _, before, after = seed_results
    assert after == before
    assert not any("__pycache__" in path for path in after)


@pytest.fixture(scope="module")
def zoo_results() -> list[VerifiedFinding]:
    """Every kind of blamed value in one module: one child varies each in turn."""
    module = "zoo"
    findings = [
        make_finding(ZOO, line_of(ZOO, 'CFG["scale"]'), "RCL102", f"{module}.scaled",
                     Subject("item", module=module, name="CFG", key="scale", value_kind="int")),
        make_finding(ZOO, line_of(ZOO, 'CFG["scale"]'), "RCL102", f"{module}.scaled",
                     Subject("attribute", module=module, name="Hparams", key="SHIFT", value_kind="int")),
        make_finding(ZOO, line_of(ZOO, "self.step + 1"), "RCL104", f"{module}.Warmup.forward",
                     Subject("instance-attribute", module=module, owner="Warmup", name="step", value_kind="int")),
        make_finding(ZOO, line_of(ZOO, "for i in range(start, end)"), "RCL106", f"{module}.span_sum",
                     Subject("parameter", module=module, name="end", value_kind="int")),
        make_finding(ZOO, line_of(ZOO, "RCL_TEST_CHUNKS"), "RCL105", f"{module}.chunked",
                     Subject("environ", key="RCL_TEST_CHUNKS")),
        make_finding(ZOO, line_of(ZOO, "if training"), "RCL101", f"{module}.flagged",
                     Subject("global", module=module, name="training", value_kind="bool")),
        make_finding(ZOO, line_of(ZOO, "if training"), "RCL999", f"{module}.flagged", None),
        make_finding(ZOO, line_of(ZOO, 'return x * CFG["scale"]'), "RCL102", f"{module}.fixed_shape",
                     Subject("item", module=module, name="CFG", key="scale", value_kind="int")),
    ]
    examples = (("zoo.fixed_shape", "(torch.ones(3, 5),)"),)
    return verify_findings(findings, replace(OPTIONS, examples=examples))


@pytest.mark.parametrize(
    ("position", "guard"),
    [(0, "G['CFG']['scale'] =="), (1, "G['Hparams'].SHIFT =="), (2, ".step =="), (3, "end =="),
     (4, "RCL_TEST_CHUNKS")],
)
def test_each_kind_of_value_is_varied_until_the_limit(zoo_results, position: int, guard: str) -> None:
    verification = zoo_results[position].verification
    assert verification.verdict is Verdict.CONFIRMED, verification.detail
    assert verification.limit_hit, verification.detail
    assert any(guard in reason for reason in verification.reasons), verification.reasons


def test_a_bounded_global_is_confirmed_with_two_graphs(zoo_results) -> None:
    flag = zoo_results[5].verification
    assert flag.verdict is Verdict.CONFIRMED, flag.detail
    assert flag.graphs == 2 and not flag.limit_hit


def test_declared_example_inputs_reach_a_region_no_synthesized_input_fits(zoo_results) -> None:
    declared = zoo_results[7].verification
    assert declared.verdict is Verdict.CONFIRMED, declared.detail
    assert declared.method == "examples" and "declared example inputs" in declared.detail


def test_an_unknown_rule_code_is_unverifiable_with_a_reason(zoo_results) -> None:
    unknown = zoo_results[6].verification
    assert unknown.verdict is Verdict.UNVERIFIABLE
    assert "no probe for RCL999" in unknown.detail


@pytest.fixture(scope="module")
def marker() -> Iterator[str]:
    value = f"rcl-verify-test-{uuid.uuid4().hex[:12]}"
    old = os.environ.get("RCL_TEST_MARKER")
    os.environ["RCL_TEST_MARKER"] = value
    yield value
    if old is None:
        os.environ.pop("RCL_TEST_MARKER", None)
    else:
        os.environ["RCL_TEST_MARKER"] = old


@pytest.fixture(scope="module")
def fault_results(marker: str) -> list[VerifiedFinding]:
    """Misbehaving code in three modules that fail at import and one that fails when called."""
    misbehaving = FAULTS / "misbehaving.py"

    def step_finding(region: str) -> object:
        return make_finding(misbehaving, line_of(misbehaving, "return x * step"), "RCL101",
                            f"misbehaving.{region}", Subject("global", module="misbehaving", name="step"))

    findings = [
        make_finding(FAULTS / "import_raises.py", 11, "RCL101", "import_raises.f", Subject("global", name="g")),
        make_finding(FAULTS / "import_exits.py", 11, "RCL101", "import_exits.f", Subject("global", name="g")),
        step_finding("raises_when_compiled"),
        step_finding("spawns"),
        step_finding("chatty"),
        step_finding("exits"),
        step_finding("hard_exit"),
    ]
    return verify_findings(findings, OPTIONS)


def test_a_module_that_raises_at_import_is_unverifiable(fault_results) -> None:
    result = fault_results[0].verification
    assert result.verdict is Verdict.UNVERIFIABLE
    assert "RuntimeError: this module needs a dataset" in result.detail
    assert "import_raises.py:5" in result.detail


def test_sys_exit_at_import_is_unverifiable(fault_results) -> None:
    result = fault_results[1].verification
    assert result.verdict is Verdict.UNVERIFIABLE
    assert "sys.exit(4)" in result.detail


def test_a_compiled_function_that_raises_is_unverifiable(fault_results) -> None:
    result = fault_results[2].verification
    assert result.verdict is Verdict.UNVERIFIABLE
    assert "call 1 of the compiled region raised" in result.detail
    assert "graph_break" in result.detail or "Unsupported" in result.detail


def test_spawning_and_printing_do_not_stop_the_probes(fault_results, marker: str) -> None:
    assert fault_results[3].verification.verdict is Verdict.CONFIRMED, fault_results[3].verification.detail
    assert fault_results[4].verification.verdict is Verdict.CONFIRMED, fault_results[4].verification.detail
    assert processes_with(marker) == []


def test_exits_inside_the_region_are_unverifiable_and_named(fault_results) -> None:
    exits, hard = fault_results[5].verification, fault_results[6].verification
    assert exits.verdict is Verdict.UNVERIFIABLE and "sys.exit(3)" in exits.detail
    assert hard.verdict is Verdict.UNVERIFIABLE and "status 7" in hard.detail


def test_a_module_that_hangs_times_out_and_leaves_no_process(marker: str) -> None:
    hangs = FAULTS / "import_hangs.py"
    finding = make_finding(hangs, line_of(hangs, "return x"), "RCL101", "import_hangs.f", Subject("global", name="g"))
    [result] = verify_findings([finding], VerifyOptions(timeout=15.0))
    assert result.verification.verdict is Verdict.UNVERIFIABLE
    assert "timed out after 15s" in result.verification.detail
    assert processes_with(marker) == []


def test_the_fixture_tree_is_untouched_by_fault_runs(fault_results) -> None:
    assert not any(p.name == "__pycache__" for p in Path(FAULTS).rglob("*"))
