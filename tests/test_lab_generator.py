"""The lab's generator: deterministic, pairwise covering over the valid grid, programs that parse,
name their modules uniquely, mark the read and the change on the right lines, give every positive
its negative twins, and run on torch."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import subprocess
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path

import pytest

from recompile_lint.lab import generator, grid
from recompile_lint.lab.generator import (
    DIMS, TWIN_KINDS, covering_rows, generate, pairwise_programs, twin_kinds, valid_pairs,
)
from recompile_lint.lab.program import Program

ROOT = Path(__file__).resolve().parent.parent
PYENV = Path.home() / ".pyenv" / "versions"


@pytest.fixture(scope="module")
def seed0() -> list[Program]:
    return generate(0, 1200)


def row_of(program: Program) -> dict[str, str]:
    return {d: program.dim(d) for d in DIMS}


def test_the_same_seed_gives_the_same_programs_byte_for_byte():
    first = [p.to_dict() for p in generate(4, 200)]
    again = [p.to_dict() for p in generate(4, 200)]
    assert first == again
    # A shorter run is a prefix of a longer one: count only cuts.
    assert [p.to_dict() for p in generate(4, 120)] == first[:120]


# The stored proofs are keyed by program text: the runs they hold must regenerate unchanged.
# A change here voids bench/lab's proofs of those runs (re-prove them in the same change).
FROZEN_RUNS = {(0, 900): "669fe8172f6e3617", (7, 900): "ed6dea01907a0fa3", (1, 300): "582b5abca1fdc5aa",
               (3, 50): "cea459e79f72e151"}


@pytest.mark.parametrize(("seed", "count"), sorted(FROZEN_RUNS))
def test_the_stored_runs_regenerate_the_same_text(seed, count):
    keys = " ".join(p.key for p in generate(seed, count))
    assert hashlib.sha256(keys.encode()).hexdigest()[:16] == FROZEN_RUNS[(seed, count)]


def test_a_refinement_changes_only_the_programs_it_refines(monkeypatch):
    """``grid.REFINEMENTS`` are drawn apart from the sampling: without them the same seed gives
    the same programs except those a refinement picked, so adding one voids only their proofs."""
    from recompile_lint.lab import grid

    refined = generate(0, 300)
    refinements = dict(grid.REFINEMENTS)
    monkeypatch.setattr(grid, "REFINEMENTS", {})
    plain = generate(0, 300)
    changed = [(a, b) for a, b in zip(refined, plain) if a.key != b.key]
    # Each refinement takes half of its sampled value's programs: a minority of all of them.
    assert changed and len(changed) < len(plain) // 3
    seen = set()
    for a, b in changed:
        for dim in (d for d in DIMS if a.dim(d) != b.dim(d)):  # values refined, nothing drawn anew
            assert a.dim(dim) in refinements[dim][b.dim(dim)]
            seen.add(dim)
    assert seen == set(refinements)
    for a, b in zip(refined, plain):
        if a.key == b.key:
            assert not any(a.dim(d) in values for d, by_value in refinements.items() for values in by_value.values())


def test_different_seeds_give_different_programs():
    keys0 = {p.key for p in generate(0, 200)}
    keys1 = {p.key for p in generate(1, 200)}
    assert not keys0 & keys1


@pytest.mark.parametrize("version", ["3.10.13", "3.12.1", "3.13.0"])
def test_other_pythons_generate_the_same_text(version):
    python = PYENV / version / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no Python {version} here")
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]);"
              "from recompile_lint.lab.generator import generate;"
              "print(json.dumps([p.key for p in generate(2, 150)]))")
    done = subprocess.run([str(python), "-c", script, str(ROOT)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONHASHSEED": "random"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [p.key for p in generate(2, 150)]


def test_the_first_programs_cover_every_valid_pair(seed0):
    from recompile_lint.lab.grid import sampled_value

    count = pairwise_programs(0)
    assert count <= len(seed0)
    covered = set()
    for program in seed0[:count]:
        row = {d: sampled_value(d, v) for d, v in row_of(program).items()}  # the sampling's pairs
        covered.update((d1, row[d1], d2, row[d2]) for d1, d2 in combinations(DIMS, 2))
    missing = set(valid_pairs()) - covered
    assert missing == set()
    # The covering is far smaller than the product of the dimensions.
    assert count < 1500


def test_every_value_of_every_dimension_can_be_written_and_is():
    pairs = valid_pairs()
    held = {(d, v) for d1, v1, d2, v2 in pairs for d, v in ((d1, v1), (d2, v2))}
    assert held == {(d, v) for d, values in grid.DIMENSIONS for v in values}


def test_unwritable_pairs_are_not_claimed_and_each_says_why():
    pairs = set(valid_pairs())
    unwritable = grid.unwritable_pairs()
    assert unwritable
    for item in unwritable:
        assert item["why"]
        d1, v1 = item["a"].split("=", 1)
        d2, v2 = item["b"].split("=", 1)
        assert (d1, v1, d2, v2) not in pairs


def test_cells_that_cannot_be_written_are_listed_with_why():
    summary = grid.summary()
    cells = summary["cells"]
    assert cells["valid"] + cells["unwritable"] == cells["total"]
    listed = summary["unwritable_cells"]
    assert len(listed) == cells["unwritable"]
    assert all(item["why"] for item in listed)
    bad = {(c["location"], c["type"], c["use"]) for c in listed}
    assert ("global", "str", "arithmetic") in bad  # a str does not enter arithmetic
    assert ("global", "int", "arithmetic") not in bad
    json.dumps(summary)  # the docs page is generated from it


def test_every_program_is_valid_and_compiles(seed0):
    for program in seed0:
        assert grid.valid(row_of(program)), program.dims
        paths = [path for path, _ in program.files]
        assert "run.py" in paths and "pyproject.toml" in paths
        for path, text in program.files:
            if path.endswith(".py"):
                compile(text, path, "exec")  # parses, and passes the compiler's scope checks


def test_every_valid_cell_is_written_after_the_pairs(seed0):
    rows = covering_rows(0)
    written = {(row["location"], row["type"], row["use"]) for row in rows}
    assert written == set(grid.valid_cells())
    # The programs follow the rows, each positive with its twins.
    assert [row_of(p) for p in seed0 if p.twin_of is None] == rows[: len([p for p in seed0 if p.twin_of is None])]


def module_names(program: Program) -> set[str]:
    names = set()
    for path, _ in program.files:
        if path.endswith(".py") and path != "run.py":
            names.add(path.split("/", 1)[0].removesuffix(".py"))
    return names


def test_module_names_are_unique_across_programs_and_seeds(seed0):
    seen: Counter[str] = Counter()
    for program in seed0[:600] + generate(1, 600):
        seen.update(module_names(program))
    assert seen and max(seen.values()) == 1


def test_cause_and_change_lines_name_the_value(seed0):
    for program in seed0:
        stem = program.name.strip("_").lower()
        assert stem
        marks = [program.change] + ([program.cause] if program.dim("variant") != "outside" else [])
        for mark in marks:
            assert mark is not None, program.dims
            path, line = mark
            assert stem in program.text(path).splitlines()[line - 1].lower(), (program.dims, mark)


def test_the_cause_is_in_compiled_code_and_the_change_outside_it(seed0):
    for program in seed0:
        if program.cause is None:
            continue
        path, line = program.cause
        tree = ast.parse(program.text(path))
        enclosing = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.lineno <= line <= n.end_lineno]
        # The read sits in a function (the compiled one, a helper it calls, or a disabled helper).
        assert enclosing, program.dims


def test_every_positive_is_followed_by_its_negative_twins(seed0):
    by_key = {p.key: p for p in seed0}
    positives = [p for p in seed0 if p.intent != "negative" and p.twin_of is None]
    assert positives
    twins_of: dict[str, list[Program]] = {}
    for program in seed0:
        if program.twin_of is not None:
            assert program.intent == "negative"
            assert program.twin_of in by_key
            twins_of.setdefault(program.twin_of, []).append(program)
    for positive in positives[:-1]:  # the last one may be cut by count
        kinds = [t.dim("variant") for t in twins_of.get(positive.key, [])]
        assert kinds == twin_kinds(row_of(positive)) and "fixed" in kinds
        for twin in twins_of[positive.key]:
            assert row_of(twin) == row_of(positive)
            assert twin.files != positive.files


def test_some_programs_read_the_object_through_a_local_of_the_compiled_code(seed0):
    """Drawn with the names: an attribute of the compiled module or of an object passed in is
    read through a local the compiled code assigns (``owner = self``, ``held_cfg = cfg``)."""
    aliased = [p for p in seed0 if any(" owner = self\n" in text or " held_" in text for _, text in p.files)]
    assert 20 <= len(aliased) <= len(seed0) / 5
    assert {dict(p.dims)["location"] for p in aliased} <= {"module-attribute", "object-attribute", "dataclass-field"}
    assert {dict(p.dims)["location"] for p in aliased} == {"module-attribute", "object-attribute", "dataclass-field"}


CONTAINERS = {"module-list": "ModuleList", "sequential": "Sequential", "module-dict": "ModuleDict"}


def test_the_block_of_a_module_reach_sits_in_every_kind_of_container(seed0):
    """Drawn with the names, last: the compiled module's block is held directly or in an
    nn.ModuleList, nn.Sequential or nn.ModuleDict; ``nest`` in the dims says which, "none"
    where no module is compiled."""
    held = Counter((p.dim("reach"), p.dim("nest")) for p in seed0)
    for reach in grid.MODULE_REACHES:
        for nest in ("direct", *CONTAINERS):
            assert held[(reach, nest)] >= 3, (reach, nest)
        assert held[(reach, "none")] == 0
    assert {nest for (reach, nest) in held if reach not in grid.MODULE_REACHES} == {"none"}
    assert all(p.dims[-1][0] == "nest" and p.dims[-2][0] == "variant" for p in seed0)


def test_a_sequential_is_only_written_where_the_block_takes_the_input_alone(seed0):
    """nn.Sequential passes one input on: a program whose compiled call passes the value or its
    carrier too holds the block in an nn.ModuleList, and its dims say so."""
    passes_more = grid.CARRIER_LOCATIONS | {"positional-argument", "keyword-argument"}
    sequential = [p for p in seed0 if p.dim("nest") == "sequential"]
    assert sequential
    assert not [p.dims for p in sequential if p.dim("location") in passes_more]
    for program in sequential:
        model = next(text for path, text in program.files if "nn.Sequential(" in text)
        assert "*args" not in model.split("nn.Sequential(", 1)[1], program.dims
    # Such a program drew sequential and got a list.
    listed = [p for p in seed0 if p.dim("nest") == "module-list" and p.dim("location") in passes_more]
    assert listed


def test_the_nest_draw_leaves_every_other_program_as_it_was(seed0, monkeypatch):
    """Forcing every program's block to be held directly changes only the container programs."""
    draw = generator._draw_nest
    monkeypatch.setattr(generator, "_draw_nest", lambda rng: (draw(rng), "direct")[1])
    direct = generate(0, len(seed0))
    assert [p.dims[:-1] for p in direct] == [p.dims[:-1] for p in seed0]
    for program, plain in zip(seed0, direct):
        if program.dim("nest") in ("none", "direct"):
            assert program.files == plain.files, program.dims
        else:
            assert program.files != plain.files and plain.dim("nest") == "direct", program.dims


def test_each_container_program_builds_its_container_and_reaches_the_block_through_it(seed0):
    for program in seed0:
        nest = program.dim("nest")
        if nest not in CONTAINERS:
            continue
        trees = {path: ast.parse(text) for path, text in program.files if path.endswith(".py")}
        built = [node for tree in trees.values() for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Attribute) and node.func.attr in CONTAINERS.values()]
        assert [node.func.attr for node in built] == [CONTAINERS[nest]], program.dims
        # It holds the block: the module whose forward the value reaches (the one with ``proj``).
        (blocks,) = [node.name for tree in trees.values() for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                     and "self.proj = nn.Linear(8, 8)" in ast.unparse(node)]
        held = ast.unparse(built[0].args[0])
        assert held in (f"{blocks}()", f"[{blocks}()]", f"{{'main': {blocks}()}}"), held
        run = program.text("run.py")
        block = "[0]" if nest != "module-dict" else '["main"]'
        compiled = {"compile-model": r"fast = torch\.compile\(net, ", "model-compile": r"net\.compile\(",
                    "submodule-in-place": rf"net\.\w+{re.escape(block)}\.compile\("}[program.dim("reach")]
        assert re.search(compiled, run), program.dims
        if program.dim("location") == "module-attribute" and program.dim("variant") != "rebuilt":
            assert re.search(rf"net\.\w+{re.escape(block)}", run), program.dims
        if program.dim("variant") == "dynamic" and program.dim("reach") != "submodule-in-place":
            source = re.search(r'dynamic_sources = "([^"]+)"', run).group(1)
            assert source.startswith(("L['self']._modules[", "L['args'][0]", "L['kwargs'][", "G[")), source


def test_names_vary_across_programs(seed0):
    names = Counter(p.name for p in seed0)
    assert len(names) >= 20
    assert names.most_common(1)[0][1] < len(seed0) / 10


def test_the_program_round_trips_through_its_dict(seed0):
    for program in seed0[:50]:
        again = Program.from_dict(json.loads(json.dumps(program.to_dict())))
        assert again == program and again.key == program.key and again.name == program.name


def test_a_negative_count_is_refused():
    with pytest.raises(ValueError):
        generate(0, -1)
    assert generate(0, 0) == []


def test_generating_a_thousand_programs_is_quick():
    import time

    start = time.perf_counter()
    generate(11, 1000)
    assert time.perf_counter() - start < 10


RUNNER = """
import runpy, sys
import torch
from recompile_lint.verify.child import force_backend
force_backend(torch, "eager")
sys.path.insert(0, ".")
runpy.run_path("run.py", run_name="__main__")
"""


@pytest.mark.slow
def test_a_handful_of_programs_run_on_torch(tmp_path):
    pytest.importorskip("torch")
    programs = generate(0, 400)
    # One of each driver, reach and module split, and a fullgraph one.
    chosen: dict[tuple[str, str], Program] = {}
    for program in programs:
        for dim in ("driver", "reach", "modules", "options"):
            chosen.setdefault((dim, program.dim(dim)), program)
    picked = list({p.key: p for p in chosen.values()}.values())[:12]
    for program in picked:
        directory = tmp_path / program.key
        for path, text in program.files:
            target = directory / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        done = subprocess.run([sys.executable, "-c", RUNNER], cwd=directory, capture_output=True, text=True,
                              timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
        limit_error = program.dim("options") == "fullgraph" and "FailOnRecompileLimitHit" in done.stderr
        assert done.returncode == 0 or limit_error, (program.dims, done.stderr[-2000:])


def test_the_generator_page_names_every_value_of_the_grid():
    page = (ROOT / "docs" / "lab-generator.md").read_text(encoding="utf-8")
    missing = [f"{d}={v}" for d, values in grid.DIMENSIONS for v in (d, *values) if f"`{v}`" not in page]
    assert missing == []
    assert all(f"| `{kind}` |" in page for kind in TWIN_KINDS)


@pytest.mark.parametrize(("assignment", "says"), [
    ({"use": "disabled-helper", "options": "fullgraph"}, "graph break"),
    ({"reach": "decorator", "options": "dynamic-true"}, "no options"),
    ({"location": "module-attribute", "reach": "compile-fn"}, "forward"),
    ({"location": "other-module-global", "modules": "two-import"}, "module besides"),
    ({"type": "bool", "change": "every"}, "2 values"),
    ({"location": "dict-keys", "type": "str", "use": "arithmetic"}, "read by"),
    ({"location": "namedtuple-field", "writer": "setattr-apply"}, "_replace"),
    ({"writer": "holder-module", "modules": "one"}, "imports no module"),
    ({"location": "global", "writer": "instances"}, "not one per object"),
    ({"use": "after-break", "options": "fullgraph"}, "graph break"),
    ({"type": "str", "use": "after-break"}, "int, a float or a bool"),
    ({"location": "class-attribute", "writer": "instances"}, "not one per object"),
    ({"location": "keyword-argument", "writer": "instances"}, "passed at the call"),
])
def test_combinations_that_cannot_be_written_say_why(assignment, says):
    reason = grid.why_invalid(assignment)
    assert reason is not None and says in reason


def test_an_instances_program_builds_one_object_per_value_and_writes_nothing_between_calls(seed0):
    programs = [p for p in seed0 if p.dim("writer") == "instances"]
    assert {p.dim("location") for p in programs} == set(grid.INSTANCE_LOCATIONS)
    for program in programs:
        run = dict(program.files)["run.py"]
        main = run[run.index("def main():"):]
        build, _, calls = main.partition("    for slot in range(")[2].partition("\n    for ")
        assert build, program.key
        # The change is the value each object is given as it is built, before the calls (a
        # closure's is its setter's assignment, called there).
        if program.change is not None and program.dim("location") != "closure" and program.dim("variant") != "rebuilt":
            path, line = program.change
            assert path == "run.py" and ("[slot]" in run.splitlines()[line - 1] or "[0]" in run.splitlines()[line - 1]), program.key
        # Each call takes an object from the list; no line of the calling loop writes a value.
        pool = build.split(".append(")[0].split()[-1]
        assert f"= {pool}[" in main, program.key
    compiled_each = [p for p in programs if p.dim("location") in ("module-attribute", "closure")]
    assert compiled_each and all("for slot in range(" in dict(p.files)["run.py"] for p in compiled_each)


def test_combinations_that_can_be_written_are_not_refused():
    assert grid.why_invalid({"location": "global", "type": "int", "use": "range-bound", "options": "fullgraph",
                             "change": "every", "writer": "holder-module", "reach": "decorator-options",
                             "modules": "three-import", "driver": "trainer"}) is None
    assert grid.why_invalid({"location": "list-length", "type": "int", "use": "len"}) is None
