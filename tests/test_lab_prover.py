"""The lab's prover: many programs per child process, each proven as if it ran alone.

The slow tests run torch in child processes: the 51 hand-written programs of
``fixtures/programs/`` (their ``observed.json`` was measured one program per process) must get
the same graphs and limit hits from the batched prover; programs whose modules share names must
not see each other; a hung, crashing or failing program must not cost the rest of its batch.
"""

from __future__ import annotations

import importlib.util
import json
import textwrap
import time
from pathlib import Path

import pytest

from recompile_lint.lab.program import Program, write_program
from recompile_lint.lab.prover import programs_from_directories, proof_of, prove

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = sorted(p.parent for p in (ROOT / "fixtures" / "programs").glob("*/run.py"))
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is in the verify extra")


def program(index: int, **files: str) -> Program:
    """A program from ``name=text`` pairs (``pkg__mod`` is ``pkg/mod.py``)."""
    return Program(
        seed=0,
        index=index,
        files=tuple(sorted((name.replace("__", "/") + ".py", text) for name, text in files.items())),
        dims=(("case", str(index)),),
    )


COUNTER_MODEL = textwrap.dedent("""\
    import torch

    STEP = 0


    @torch.compile
    def step(x):
        return x * STEP
""")
COUNTER_RUN = textwrap.dedent("""\
    import model
    import torch

    for i in range({calls}):
        model.STEP = i
        model.step(torch.ones(2))
""")


def test_write_program_refuses_paths_outside_its_directory(tmp_path):
    bad = Program(seed=0, index=0, files=(("../escape.py", "x = 1\n"), ("run.py", "")), dims=())
    with pytest.raises(ValueError, match="leaves the program's directory"):
        write_program(bad, tmp_path / "p")
    assert not (tmp_path / "escape.py").exists()


def test_proof_of_a_raw_record_keeps_counts_and_distinct_guards(tmp_path):
    """The child's record becomes one code record per code object, each distinct guard once."""
    directory = write_program(program(0, run="x = 1\n", model="y = 2\n"), tmp_path / "p")
    file = str(directory / "model.py")
    reason = {"guard": "G['STEP'] == 0", "file": file, "line": 8, "function": "step"}
    message = (
        f"Recompiling function step in {file}:6\n    triggered by the following guard failure(s):\n"
        f"    - 0/0: G['STEP'] == 0  # return x * STEP  # {file}:8 in step"
    )
    data = {
        "exit_code": 0,
        "graphs": [[file, 6, "step", 8, "step"]],
        "limit_hits": [{"function": "step", "file": file, "first_line": 6}],
        "events": [{"function": "step", "file": file, "first_line": 6, "reasons": [reason]}] * 3,
        "messages": [message] * 3,
        "unstripped": {},
    }
    proof = proof_of("k", "2.13.0+cpu", data, directory)
    assert proof.ran and proof.tier == "unbounded"
    (code,) = proof.codes
    assert (code.file, code.line, code.name, code.graphs, code.recompiles, code.limit_hit) == ("model.py", 6, "step", 8, 3, True)
    assert [f.to_list() for f in code.failures] == [["G['STEP'] == 0", "G['STEP']", "model.py", 8]]


@pytest.mark.slow
@needs_torch
def test_batched_proofs_match_the_programs_measured_one_per_process():
    """Graphs and limit hits of every hand-written program, proven 13 to a child, are those of
    its ``observed.json`` (one program per process)."""
    programs = programs_from_directories(PROGRAMS)
    proofs = prove(programs, jobs=2, batch=13)
    wrong = []
    for directory, item in zip(PROGRAMS, programs):
        proof = proofs[item.key]
        observed = json.loads((directory / "observed.json").read_text(encoding="utf-8"))
        want = sorted(
            (f["file"], f["first_line"], f["name"], f["graphs"], f["limit_hit"])
            for f in observed["functions"] if f["graphs"] or f["limit_hit"]
        )
        got = sorted((c.file, c.line, c.name, c.graphs, c.limit_hit) for c in proof.codes if c.graphs or c.limit_hit)
        if not proof.ran or got != want:
            wrong.append(f"{directory.name}: ran={proof.ran} {proof.error} proven {got}, observed {want}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
@needs_torch
def test_programs_whose_modules_share_names_do_not_see_each_other():
    """The same program twice, and another with the same module names, in one child; a
    program's change to Dynamo's config ends with it."""
    two = program(3, model=COUNTER_MODEL, run="import torch._dynamo\ntorch._dynamo.config.recompile_limit = 2\n" + COUNTER_RUN.format(calls=12))
    eight = program(0, model=COUNTER_MODEL, run=COUNTER_RUN.format(calls=12))
    again = program(1, model=COUNTER_MODEL, run=COUNTER_RUN.format(calls=12) + "# the same program again\n")
    three = program(2, model=COUNTER_MODEL.replace("x * STEP", "x + STEP"), run=COUNTER_RUN.format(calls=3))
    proofs = prove([two, eight, three, again], jobs=1, batch=4)
    for item, graphs, limit in ((two, 2, True), (eight, 8, True), (again, 8, True), (three, 3, False)):
        proof = proofs[item.key]
        assert proof.ran, proof.error
        (code,) = proof.codes
        assert (code.file, code.name, code.graphs, code.limit_hit) == ("model.py", "step", graphs, limit)
        assert {f.source for f in code.failures} == {"G['STEP']"}


@pytest.mark.slow
@needs_torch
def test_failing_hung_and_crashing_programs_cost_only_themselves():
    ok = program(0, model=COUNTER_MODEL, run=COUNTER_RUN.format(calls=2))
    raises = program(1, run="raise ValueError('bad config')\n")
    hangs = program(2, run="import time\nwhile True:\n    time.sleep(0.1)\n")
    exits = program(3, run="import os\nos._exit(3)\n")
    fullgraph = program(4, model=COUNTER_MODEL.replace("@torch.compile", "@torch.compile(fullgraph=True)"),
                        run=COUNTER_RUN.format(calls=12))
    last = program(5, model=COUNTER_MODEL, run=COUNTER_RUN.format(calls=3) + "# last\n")
    proofs = prove([ok, raises, hangs, exits, fullgraph, last], jobs=1, batch=6, timeout=8)
    assert proofs[ok.key].ran and proofs[ok.key].tier == "bounded"
    assert not proofs[raises.key].ran and proofs[raises.key].error == "ValueError: bad config"
    assert not proofs[hangs.key].ran and proofs[hangs.key].error == "timeout"
    assert not proofs[exits.key].ran and proofs[exits.key].error == "the child exited with 3"
    limit = proofs[fullgraph.key]
    assert limit.ran and limit.limit_error and limit.tier == "unbounded", limit
    assert proofs[last.key].ran and proofs[last.key].codes[0].graphs == 3


def test_a_batch_that_breaks_the_prover_is_an_error_not_missing_proofs(monkeypatch):
    from recompile_lint.lab import prover

    def broken(item, workdir, timeout, record):
        raise RuntimeError("disk full")

    monkeypatch.setattr(prover, "_run_batch", broken)
    with pytest.raises(prover.ProverError, match="RuntimeError: disk full"):
        prove([program(0, run="x = 1\n")], jobs=1)


@pytest.mark.slow
@needs_torch
def test_processes_a_program_leaves_behind_end_with_its_child():
    import uuid

    marker = f"rcl-lab-stray-{uuid.uuid4().hex}"
    stray = program(0, run=(
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', {marker!r}])\n"
    ))
    proofs = prove([stray], jobs=1)
    assert proofs[stray.key].ran, proofs[stray.key].error

    def alive() -> list[str]:
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if marker.encode() in cmdline.read_bytes():
                    found.append(cmdline.parent.name)
            except OSError:
                continue
        return found

    deadline = time.monotonic() + 10  # SIGKILL is delivered, not waited for
    while alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(), f"processes of the program still running: {alive()}"
