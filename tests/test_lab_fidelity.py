"""The execution stage's fidelity measure (``lab/fidelity.py``): guard sources evaluated on the
interpreter's state at each compiled call, and the judgement of a program and of its twins.
Hand-made programs and proofs; no torch."""

from __future__ import annotations

import textwrap

from recompile_lint.lab import fidelity
from recompile_lint.lab.fidelity import Known, differ, project, split_source
from recompile_lint.lab.program import Program
from recompile_lint.lab.proof import CodeRecord, GuardFailureRecord, Proof
from recompile_lint.analysis.execution.values import TOP, CodeRef, Const, TensorValue, iteration

RUN = "run.py"

POSITIVE = """
import torch

STEP = 0


@torch.compile(backend="eager")
def fn(x):
    return x * STEP


def main():
    global STEP
    for i in range(12):
        STEP = i
        fn(torch.randn(8, 8))


if __name__ == "__main__":
    main()
"""


def program(text: str, variant: str = "original", twin_of: str | None = None) -> Program:
    dims = (("location", "global"), ("type", "int"), ("variant", variant))
    return Program(seed=0, index=0, files=((RUN, textwrap.dedent(text)),), dims=dims, cause=(RUN, 9), change=(RUN, 15), intent="x", twin_of=twin_of)


def proof(key: str, failures=()) -> Proof:
    graphs = 8 if failures else 1
    code = CodeRecord(RUN, 7, "fn", graphs, graphs - 1, bool(failures), tuple(failures))
    return Proof(key=key, torch="2.13.0", ran=True, codes=(code,))


STEP_FAILURE = GuardFailureRecord(guard="G['STEP'] == 0", source="G['STEP']", file=RUN, line=9)


def test_a_counter_the_loop_writes_is_reached_concrete_and_faithful():
    positive = program(POSITIVE)
    result = fidelity.fidelity(positive, proof(positive.key, [STEP_FAILURE]), {})
    assert result.reached and result.calls == 12
    assert result.concrete and result.faithful
    assert dict(result.values)["G['STEP']"][:3] == ("0", "1", "2")


def test_a_fixed_twin_is_faithful_when_its_values_never_differ_and_clean():
    positive = program(POSITIVE)
    fixed = program(POSITIVE.replace("        STEP = i\n", ""), "fixed", twin_of=positive.key)
    proofs = {positive.key: proof(positive.key, [STEP_FAILURE])}
    result = fidelity.fidelity(fixed, proof(fixed.key), proofs)
    assert result.sources == ("G['STEP']",)  # the twin's sources are the positive's
    assert result.reached and not result.differs and result.faithful is True
    assert result.clean is True


def test_a_twin_whose_values_differ_is_not_faithful():
    positive = program(POSITIVE)
    wrong = program(POSITIVE, "fixed", twin_of=positive.key)  # same code: the value does change
    proofs = {positive.key: proof(positive.key, [STEP_FAILURE])}
    result = fidelity.fidelity(wrong, proof(wrong.key), proofs)
    assert result.differs and result.faithful is False


def test_an_unknown_value_is_reached_but_not_concrete():
    unknown = program(POSITIVE.replace("STEP = i", "STEP = unknown()"))
    result = fidelity.fidelity(unknown, proof(unknown.key, [STEP_FAILURE]), {})
    assert result.reached and not result.concrete and result.faithful is False


def test_the_figures_count_positives_twins_and_negatives_apart():
    positive = program(POSITIVE)
    fixed = program(POSITIVE.replace("        STEP = i\n", ""), "fixed", twin_of=positive.key)
    proofs = {positive.key: proof(positive.key, [STEP_FAILURE]), fixed.key: proof(fixed.key)}
    results = fidelity.measure_fidelity([positive, fixed], proofs, jobs=1)
    summary = fidelity.summarise(results)
    assert summary["all"] == {"reached": [1, 1], "concrete": [1, 1], "faithful": [1, 1], "twins": [1, 1], "clean": [1, 1]}
    assert summary["dimensions"]["variant"]["fixed"]["twins"] == [1, 1]
    assert "faithful" in fidelity.format_table(summary)


def test_sources_are_split_as_dynamo_spells_them():
    assert split_source("L['self'].k") == (False, "L", "self", [("attr", "k")])
    assert split_source("len(L['xs'])") == (True, "L", "xs", [])
    assert split_source("L['t'].size()[0]") == (False, "L", "t", [("call", "size"), ("key", 0)])
    assert split_source("G['cfg']['k'][1]") == (False, "G", "cfg", [("key", "k"), ("key", 1)])
    assert split_source("x + 1") is None


def test_a_guard_compares_what_it_checks_of_the_value():
    small = TensorValue(addr=-1, sizes=(2,), dtype="float32", device="cpu", requires_grad=False)
    large = TensorValue(addr=-2, sizes=(3, 3), dtype="float64", device="cpu", requires_grad=False)
    dtype = "tensor 'x' dtype mismatch. expected Float, actual Double"
    assert differ(project(dtype, small), project(dtype, large))
    rank = "tensor 'x' rank mismatch. expected 1, actual 2"
    assert project(rank, small) == Const(1) and project(rank, large) == Const(2)
    size = "tensor 'x' size mismatch at index 0. expected 2, actual 3"
    assert differ(project(size, small), project(size, large))
    assert project(dtype, TensorValue(addr=-3)) is TOP  # dtype unknown: nothing to compare
    code = "___check_obj_id(f.__code__, <id>), type=<class 'code'>"
    a, b = Known("code", CodeRef(RUN, "f", 1)), Known("code", CodeRef(RUN, "g", 2))
    assert differ(project(code, a), project(code, b)) and not differ(project(code, a), project(code, a))
    assert differ(project("x is None", Const(None)), project("x is None", small))
    assert differ(iteration("L", 0), iteration("L", 1)) and not differ(TOP, Const(1))


def test_a_shape_guard_reads_every_size_its_expression_names():
    guard = "(((-1) + feats.size()[0] + G['defaults_x'].Tunables.cursor.size()[0]) // 2) == 3"
    assert fidelity.shape_terms(guard) == ["G['defaults_x'].Tunables.cursor.size()[0]", "L['feats'].size()[0]"]
    assert fidelity.shape_terms("len(xs) == 1") == []
