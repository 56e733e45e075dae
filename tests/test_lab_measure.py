"""The lab's measure: how a program's findings are judged against its proof, and the figures.

The judging rules are tested on hand-made programs and proofs (no torch, no generator); one
test runs the real linter on a small program written for it.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from recompile_lint.lab import measure
from recompile_lint.lab.measure import Spot, judge
from recompile_lint.lab.program import Program
from recompile_lint.lab.proof import CodeRecord, GuardFailureRecord, Proof
from recompile_lint.models import Boundedness, Finding, Guard, Location, Severity

ROOT = Path(__file__).resolve().parent.parent
RUN = "run.py"


def program(*, cause=(RUN, 5), change=(RUN, 9), dims=(("location", "module-global"), ("type", "int")), files=None):
    files = files or ((RUN, "# a program\n"),)
    return Program(seed=0, index=0, files=files, dims=dims, cause=cause, change=change, intent="unbounded")


def failure(line=5, source="G['step']", guard="G['step'] == 0", file=RUN):
    return GuardFailureRecord(guard=guard, source=source, file=file, line=line)


def proof(key, *, graphs=8, limit_hit=True, failures=None, ran=True, limit_error=False, codes=None):
    if codes is None:
        failures = (failure(),) if failures is None else failures
        codes = (CodeRecord(RUN, 3, "f", graphs, graphs - 1, limit_hit, failures),)
    return Proof(key=key, torch="2.13.0", ran=ran, codes=codes, limit_error=limit_error)


def spot(severity="error", *places, code="RCL101", guard=Guard("CONSTANT_MATCH", "G['step']")):
    return Spot(code, severity, frozenset(places or ((RUN, 5),)), guard)


UNBOUNDED = dict(graphs=8, limit_hit=True)
BOUNDED = dict(graphs=2, limit_hit=False)
NEGATIVE = dict(graphs=1, limit_hit=False, failures=())


# -- unbounded -------------------------------------------------------------------------------


def test_unbounded_agrees_with_an_error_at_the_line_dynamo_pointed_at():
    p = program(cause=None, change=None)
    verdict = judge(p, proof(p.key, **UNBOUNDED), [spot("error", (RUN, 5))])
    assert (verdict.tier, verdict.agrees, verdict.guard_exact, verdict.why) == ("unbounded", True, True, "")


def test_an_error_at_another_line_does_not_count():
    p = program(cause=None, change=None)
    verdict = judge(p, proof(p.key, **UNBOUNDED), [spot("error", (RUN, 7))])
    assert not verdict.agrees
    assert "no error finding at the cause line" in verdict.why


def test_an_error_whose_evidence_names_the_cause_line_counts():
    p = program(cause=None, change=None)
    # Reported at the write in another file, with the read as evidence.
    assert judge(p, proof(p.key, **UNBOUNDED), [spot("error", ("train.py", 2), (RUN, 5))]).agrees


def test_the_marked_read_and_change_lines_are_cause_lines():
    p = program(cause=(RUN, 5), change=("train.py", 9))
    guard_elsewhere = proof(p.key, graphs=8, limit_hit=True, failures=(failure(line=40, file="<torch>/nn/x.py"),))
    assert judge(p, guard_elsewhere, [spot("error", ("train.py", 9))]).agrees
    assert judge(p, guard_elsewhere, [spot("error", (RUN, 5))]).agrees
    assert not judge(p, guard_elsewhere, [spot("error", (RUN, 6))]).agrees


def test_a_warning_for_an_unbounded_program_does_not_agree():
    p = program()
    verdict = judge(p, proof(p.key, **UNBOUNDED), [spot("warning", (RUN, 5))])
    assert not verdict.agrees and "found RCL101[warning]" in verdict.why


def test_fullgraph_raising_at_the_limit_is_unbounded_and_its_recompiling_code_decides():
    p = program(cause=None, change=None)
    raised = proof(p.key, graphs=8, limit_hit=False, limit_error=True)
    assert raised.tier == "unbounded"
    assert judge(p, raised, [spot("error", (RUN, 5))]).agrees


def test_only_the_code_that_hit_the_limit_gives_cause_lines():
    p = program(cause=None, change=None)
    codes = (
        CodeRecord(RUN, 3, "f", 8, 8, True, (failure(line=5),)),
        CodeRecord(RUN, 20, "g", 2, 1, False, (failure(line=22, source="L['n']", guard="n == 1"),)),
    )
    both = proof(p.key, codes=codes)
    assert measure.cause_places(p, both) == {(RUN, 5)}
    assert not judge(p, both, [spot("error", (RUN, 22))]).agrees


# -- bounded ---------------------------------------------------------------------------------


def test_bounded_agrees_with_a_warning_at_the_cause_line():
    p = program()
    assert judge(p, proof(p.key, **BOUNDED), [spot("warning", (RUN, 5))]).agrees


def test_bounded_does_not_agree_with_an_error_or_with_info():
    p = program()
    assert not judge(p, proof(p.key, **BOUNDED), [spot("error", (RUN, 5))]).agrees
    assert not judge(p, proof(p.key, **BOUNDED), [spot("info", (RUN, 5))]).agrees


def test_bounded_global_state_agrees_with_info():
    p = program()
    grad = failure(source="", guard="GLOBAL_STATE changed: grad_mode")
    bounded = proof(p.key, graphs=2, limit_hit=False, failures=(grad,))
    verdict = judge(p, bounded, [spot("info", (RUN, 5), code="RCL301", guard=Guard("GLOBAL_STATE", "", "grad_mode"))])
    assert verdict.agrees and verdict.guard_exact


# -- negative --------------------------------------------------------------------------------


def test_negative_agrees_when_silent_and_with_an_info_finding():
    p = program()
    assert judge(p, proof(p.key, **NEGATIVE), []).agrees
    assert judge(p, proof(p.key, **NEGATIVE), [spot("info", (RUN, 5))]).agrees


def test_negative_disagrees_with_a_warning_anywhere():
    p = program()
    verdict = judge(p, proof(p.key, **NEGATIVE), [spot("warning", ("other.py", 80))])
    assert not verdict.agrees
    assert verdict.why == "false alarm RCL101[warning] at other.py:80"
    assert verdict.guard_exact is None  # nothing failed: not counted in the guard figure


def test_the_tier_is_the_proofs_not_the_generators_intent():
    p = program()  # intent "unbounded"
    assert judge(p, proof(p.key, **NEGATIVE), []).tier == "negative"


# -- guard text ------------------------------------------------------------------------------


def test_guard_text_is_exact_only_with_dynamos_unstripped_source():
    p = program()
    unbounded = proof(p.key, failures=(failure(source="L['self'].k", guard="self.k == 0"),))
    named = judge(p, unbounded, [spot("error", (RUN, 5), guard=Guard("CONSTANT_MATCH", "L['self'].k"))])
    stripped = judge(p, unbounded, [spot("error", (RUN, 5), guard=Guard("CONSTANT_MATCH", "self.k"))])
    none = judge(p, unbounded, [spot("error", (RUN, 5), guard=None)])
    assert (named.guard_exact, stripped.guard_exact, none.guard_exact) == (True, False, False)
    assert stripped.agrees and stripped.why == "guard L['self'].k not named"


def test_every_distinct_failed_guard_must_be_named():
    p = program()
    two = proof(p.key, failures=(failure(), failure(source="G['n']", guard="G['n'] == 1"), failure()))
    assert len(measure.failed_guards(two)) == 2
    assert not judge(p, two, [spot("error", (RUN, 5))]).guard_exact
    both = [spot("error", (RUN, 5)), spot("warning", (RUN, 30), guard=Guard("CONSTANT_MATCH", "G['n']"))]
    assert judge(p, two, both).guard_exact


def test_sourceless_guards_are_matched_by_kind_and_what_changed():
    backend = failure(source="", guard="BACKEND_MATCH failure: torch.compile detected different backend callables.")
    assert measure.failure_predicted(spot(guard=Guard("BACKEND_MATCH", "")), backend)
    assert not measure.failure_predicted(spot(guard=Guard("GLOBAL_STATE", "")), backend)
    grad = failure(source="", guard="GLOBAL_STATE changed: grad_mode")
    assert measure.failure_predicted(spot(guard=Guard("GLOBAL_STATE", "", "grad_mode")), grad)
    assert not measure.failure_predicted(spot(guard=Guard("GLOBAL_STATE", "", "autocast")), grad)


def test_a_proof_that_did_not_run_is_not_judged():
    p = program()
    with pytest.raises(ValueError, match="did not run"):
        judge(p, proof(p.key, ran=False), [])


# -- the figures -----------------------------------------------------------------------------


def _verdict(key, tier, agrees, dims, guard_exact=None):
    return measure.Verdict(key, tier, agrees, dims, guard_exact)


def test_summary_counts_per_tier_and_per_dimension_value():
    a = (("location", "closure"), ("type", "int"))
    b = (("location", "module-global"), ("type", "int"))
    verdicts = (
        _verdict("1", "unbounded", True, a, True),
        _verdict("2", "unbounded", False, b, False),
        _verdict("3", "bounded", True, b, None),
        _verdict("4", "negative", False, a),
    )
    m = measure.Measurement(verdicts, programs=6, unproven=("5",), not_ran=("6",), dimensions=("location", "type"))
    s = measure.summarise(m)
    assert (s["programs"], s["proven"], s["unproven"], s["not_ran"]) == (6, 4, 1, 1)
    assert s["tiers"] == {"unbounded": [1, 2], "bounded": [1, 1], "negative": [0, 1]}
    assert s["guard_text"] == [1, 2]
    assert s["dimensions"]["location"]["closure"]["tiers"] == {"unbounded": [1, 1], "bounded": [0, 0], "negative": [0, 1]}
    assert s["dimensions"]["type"]["int"]["tiers"] == s["tiers"]
    json.dumps(s)  # the figures are JSON
    table = measure.format_table(s)
    assert "closure" in table and "1/2 (50 %)" in table
    assert "| location | closure | 1/1 (100 %) | - | 0/1 (0 %) | 1/1 (100 %) |" in measure.markdown_table(s)


def test_a_program_path_leaving_its_directory_is_refused(tmp_path):
    bad = program(files=(("../escape.py", "x = 1\n"),))
    with pytest.raises(ValueError, match="leaves the program's directory"):
        measure.write_project(bad, tmp_path / "p")
    assert not (tmp_path / "escape.py").exists()
    root = measure.write_project(program(files=((RUN, "x = 1\n"), ("pkg/mod.py", "y = 2\n"))), tmp_path / "q")
    assert (root / "pkg" / "mod.py").read_text() == "y = 2\n"
    assert (root / "pyproject.toml").is_file()  # its own project root


def test_finding_places_are_relative_to_the_program(tmp_path):
    finding = Finding(
        str(tmp_path / "model.py"), 4, 1, "RCL101", 4, 2, "mutated-global", Severity.ERROR, Boundedness.UNBOUNDED, "m",
        evidence=(Location(str(tmp_path / "train.py"), 9, 1, "write"),),
    )
    assert measure.finding_places(tmp_path, finding) == {("model.py", 4), ("train.py", 9)}


# -- the real linter on a small program ------------------------------------------------------

GLOBAL_STEP = textwrap.dedent("""\
    import torch

    step = 0


    @torch.compile
    def f(x):
        return x * step


    for i in range(12):
        step += 1
        f(torch.ones(2))
""")


def test_measure_lints_each_program_as_its_own_project():
    positive = Program(0, 0, ((RUN, GLOBAL_STEP),), (("location", "module-global"),), cause=(RUN, 8), change=(RUN, 12))
    negative = Program(0, 1, ((RUN, GLOBAL_STEP.replace("    step += 1\n", "")),), (("location", "module-global"),))
    proofs = {
        positive.key: proof(positive.key, failures=(failure(line=8, source="G['step']"),)),
        negative.key: proof(negative.key, **NEGATIVE),
    }
    missing = Program(0, 2, ((RUN, "print(1)\n"),), (("location", "module-global"),))
    result = measure.measure([positive, negative, missing], proofs, jobs=2)
    by_key = {v.key: v for v in result.verdicts}
    assert by_key[positive.key].agrees and by_key[positive.key].guard_exact, by_key[positive.key]
    assert by_key[negative.key].agrees, by_key[negative.key]
    assert result.unproven == (missing.key,)
    summary = result.summary()
    assert summary["tiers"]["unbounded"] == [1, 1] and summary["tiers"]["negative"] == [1, 1]
    assert summary["dimensions"]["location"]["module-global"]["proven"] == 2


# -- floors ----------------------------------------------------------------------------------


def _summary(unbounded, negative, dims):
    verdicts = [_verdict(str(i), "unbounded", i < unbounded[0], dims) for i in range(unbounded[1])]
    verdicts += [_verdict(f"n{i}", "negative", i < negative[0], dims) for i in range(negative[1])]
    return measure.summarise(measure.Measurement(tuple(verdicts), len(verdicts), dimensions=tuple(n for n, _ in dims)))


def test_floors_fail_below_and_pass_at_or_above():
    dims = (("location", "closure"),)
    floors = measure.raise_floors({}, _summary((2, 4), (3, 3), dims))
    assert floors["all"] == {"unbounded": 0.5, "negative": 1.0}
    assert floors["dimensions"]["location"]["closure"]["unbounded"] == 0.5
    assert measure.below_floors(_summary((2, 4), (3, 3), dims), floors) == []
    assert measure.below_floors(_summary((3, 4), (3, 3), dims), floors) == []
    below = measure.below_floors(_summary((1, 4), (3, 3), dims), floors)
    assert below == ["all unbounded: 0.250 is below its floor 0.500", "location=closure unbounded: 0.250 is below its floor 0.500"]


def test_floors_only_rise_and_a_vanished_value_fails():
    dims = (("location", "closure"),)
    floors = measure.raise_floors({}, _summary((3, 4), (3, 3), dims))
    lowered = measure.raise_floors(floors, _summary((1, 4), (3, 3), dims))
    assert lowered["all"]["unbounded"] == 0.75
    assert measure.raisable_floors(_summary((4, 4), (3, 3), dims), floors) == [
        "all unbounded: 1.000 is above its floor 0.750", "location=closure unbounded: 1.000 is above its floor 0.750"
    ]
    other = _summary((3, 4), (3, 3), (("location", "dict-value"),))
    assert "location=closure unbounded: no programs measured (floor 0.750)" in measure.below_floors(other, floors)


# -- the measure and the differential test judge alike ---------------------------------------


def _fixture_as_generated(directory):
    """A hand-written program of ``fixtures/programs/`` as a generated program and its proof:
    the files, the line its comments declare as the cause, and its ``observed.json`` as the proof."""
    import observe_programs as observe
    import test_differential as differential

    observed = differential.load_observed(directory)
    files = tuple((p.relative_to(directory).as_posix(), p.read_text(encoding="utf-8")) for p in sorted(directory.rglob("*.py")))
    causes = sorted({differential._where(g["cause"]) for f in observed["functions"] for g in f["guard_failures"] if g["cause"]})
    causes = causes or sorted(observe.expectations_of(directory))
    dims = (("program", directory.name), ("category", differential.category(directory)))
    generated = Program(0, 0, files, dims, cause=causes[0] if causes else None)
    codes = []
    for function in observed["functions"]:
        failures = tuple(
            GuardFailureRecord(g["guard"], g["source"], *(differential._where(g["location"]) or ("", 0)))
            for g in function["guard_failures"]
        )
        codes.append(CodeRecord(function["file"], function["first_line"], function["name"], function["graphs"],
                                function["recompile_events"], function["limit_hit"], failures))
    return generated, Proof(generated.key, observed["torch"], observed["exit_code"] == 0, tuple(codes))


def test_the_measure_gives_the_differential_tests_verdicts_on_the_hand_written_programs():
    """On fixtures/programs (which the linter passes), every tier agrees, as the differential
    test finds; a program whose judged tier is not its category would mean the two disagree."""
    import observe_programs as observe
    import test_differential as differential

    pairs = [_fixture_as_generated(d) for d in observe.program_dirs()]
    result = measure.measure([p for p, _ in pairs], {p.key: q for p, q in pairs}, jobs=2)
    wrong = [f"{dict(v.dims)['program']} ({v.tier}): {v.why}" for v in result.verdicts if not v.agrees]
    assert wrong == [], wrong
    summary = result.summary()
    assert summary["proven"] == len(pairs) == len(differential.PROGRAMS)
    category = summary["dimensions"]["category"]
    assert category["unbounded"]["tiers"]["unbounded"][1] == summary["tiers"]["unbounded"][1] >= 20
    assert category["negative"]["tiers"]["negative"][1] == summary["tiers"]["negative"][1] >= 15
    assert summary["guard_text"][1] > summary["guard_text"][0] > 0  # the guard gaps known_gaps.json lists


# -- CI: the fixed seed against its stored proofs, and a rotating sample re-proven -----------

FLOORS = ROOT / "bench" / "lab" / "floors.json"
REPROVE = "python bench/generated.py --seed {seed} --count {count} --prove"


def _floors() -> dict:
    if not FLOORS.is_file():
        pytest.fail(f"{FLOORS} is missing: measure the CI seed and write its floors with"
                    " python bench/generated.py --seed N --count K --floors bench/lab/floors.json --write-floors", pytrace=False)
    return json.loads(FLOORS.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def ci_programs():
    from recompile_lint.lab.generator import generate

    floors = _floors()
    return generate(floors["seed"], floors["count"])


@pytest.fixture(scope="module")
def stored_proofs():
    from recompile_lint.lab import store

    return store.load(store.DEFAULT_PATH)


@pytest.fixture(scope="module")
def ci_summary(ci_programs, stored_proofs, request):
    floors = _floors()
    missing = [p for p in ci_programs if p.key not in stored_proofs]
    if missing:
        pytest.fail(
            f"{len(missing)} of the {len(ci_programs)} programs of seed {floors['seed']} have no stored proof"
            f" (first: #{missing[0].index} {missing[0].key}): the generator's text changed. Prove them again"
            f" ({REPROVE.format(**floors)}) and commit the store; the floors stay.",
            pytrace=False,
        )
    result = measure.measure(ci_programs, stored_proofs, jobs=2)
    summary = measure.summarise(result)
    request.config.stash[_CI] = summary
    return summary


_CI = pytest.StashKey[dict]()


def test_the_ci_seed_is_large_and_distinct(ci_programs):
    assert len(ci_programs) >= 600
    assert len({p.key for p in ci_programs}) == len(ci_programs)


def test_the_ci_seed_measures_every_value_of_every_dimension(ci_summary):
    """No dimension value drops out of CI's figure (the grid's, not only those seen so far)."""
    from recompile_lint.lab import grid

    absent = [
        f"{name}={value}"
        for name, values in grid.summary()["dimensions"].items()
        for value in values
        if not ci_summary["dimensions"].get(name, {}).get(value, {}).get("proven")
    ]
    assert absent == [], absent


def test_almost_every_program_of_the_ci_seed_ran_on_torch(ci_summary):
    """A program that failed (on its own, or inside Dynamo: five int ``scale_factor`` programs
    under ``fullgraph=True`` on 2.13) proves nothing and is left out; more than 1 % of them
    would mean the generator writes broken programs or torch changed."""
    assert ci_summary["not_ran"] <= ci_summary["programs"] // 100, ci_summary["not_ran"]


def test_the_ci_seed_stays_above_its_floors(ci_summary):
    below = measure.below_floors(ci_summary, _floors())
    assert not below, "agreement fell below the floors of bench/lab/floors.json:\n" + "\n".join(below)


@pytest.fixture(scope="module", autouse=True)
def print_raisable(request):
    """After the module, print the CI seed's figures and whether its floors can be raised."""
    yield
    summary = request.config.stash.get(_CI, None)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if summary is None or reporter is None:
        return
    floors = _floors()
    tiers = ", ".join(f"{tier} {measure.share(pair)}" for tier, pair in summary["tiers"].items())
    lines = ["", f"lab measure, seed {floors['seed']} ({summary['proven']} programs): {tiers},"
             f" guard text {measure.share(summary['guard_text'])}"]
    raisable = measure.raisable_floors(summary, floors)
    if raisable:
        lines.append(f"  {len(raisable)} floor(s) can be raised: python bench/generated.py --seed {floors['seed']}"
                     f" --count {floors['count']} --floors bench/lab/floors.json --write-floors")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled():
        for line in lines:
            reporter.write_line(line)


def _graphs(proof):
    return sorted((c.file, c.line, c.name, c.graphs, c.limit_hit) for c in proof.codes)


@pytest.mark.slow
def test_a_rotating_sample_of_stored_proofs_still_holds_on_torch(ci_programs, stored_proofs):
    """Thirty programs of the CI seed, a different thirty each day, run again on the installed
    torch: the same tier and the same graphs per code object as their stored proof."""
    import datetime
    import importlib.util
    import random

    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    from recompile_lint.lab import prover

    proven = [p for p in ci_programs if p.key in stored_proofs and stored_proofs[p.key].ran]
    sample = random.Random(datetime.date.today().toordinal()).sample(proven, min(30, len(proven)))
    fresh = prover.prove(sample, jobs=2)
    changed = []
    for program in sample:
        old, new = stored_proofs[program.key], fresh[program.key]
        if (old.tier, _graphs(old)) != (new.tier, _graphs(new)):
            changed.append(f"#{program.index} {program.key}: stored {old.tier} {_graphs(old)}, now {new.tier} {_graphs(new)}")
    assert not changed, "stored proofs no longer hold on this torch:\n" + "\n".join(changed)


# -- bench/generated.py: the command's errors ------------------------------------------------


def _bench():
    import importlib.util as iu

    spec = iu.spec_from_file_location("bench_generated", ROOT / "bench" / "generated.py")
    module = iu.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_refuses_an_unknown_store(tmp_path, capsys):
    status = _bench().main(["--seed", "0", "--count", "3", "--store", str(tmp_path / "none.json")])
    err = capsys.readouterr().err
    assert status == 2 and f"no proof store at {tmp_path / 'none.json'}" in err and "Traceback" not in err


def test_bench_refuses_a_store_that_is_not_one(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    status = _bench().main(["--seed", "0", "--count", "3", "--store", str(bad)])
    assert status == 2 and "not JSON" in capsys.readouterr().err


def test_bench_prove_without_torch_says_so(tmp_path, capsys, monkeypatch):
    import importlib.util as iu

    bench = _bench()
    real = iu.find_spec
    monkeypatch.setattr(iu, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    status = bench.main(["--seed", "0", "--count", "3", "--prove", "--store", str(tmp_path / "new.json")])
    assert status == 2 and "--prove needs torch" in capsys.readouterr().err
    assert not (tmp_path / "new.json").exists()


def test_bench_measures_and_writes_the_json(tmp_path, capsys):
    """Three programs of a seed with no stored proof: counted as unproven, nothing judged."""
    empty = tmp_path / "empty.json"
    from recompile_lint.lab import store

    store.save(empty, {})
    out = tmp_path / "out.json"
    assert _bench().main(["--seed", "5", "--count", "3", "--store", str(empty), "--json", str(out), "--jobs", "1"]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert (data["programs"], data["proven"], data["unproven"], data["seed"]) == (3, 0, 3, 5)
    assert set(data) >= {"programs", "proven", "tiers", "guard_text", "dimensions"}
    assert "programs 3, proven 0 (unproven 3" in capsys.readouterr().out
