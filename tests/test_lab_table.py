"""The measured cell table: built from programs and proofs, read by the analysis, and the
committed page ``docs/lab.md`` generated from the committed table (no torch)."""

from __future__ import annotations

import json

import pytest

from recompile_lint.analysis import measured
from recompile_lint.lab import cli, store, table
from recompile_lint.lab.program import Program
from recompile_lint.lab.proof import CodeRecord, GuardFailureRecord, Proof

CELL = (("location", "global"), ("type", "int"), ("use", "arithmetic"), ("options", "default"), ("change", "every"))


def program(index: int, dims=CELL) -> Program:
    return Program(seed=7, index=index, files=(("run.py", f"# {index}\n"),), dims=dims + (("driver", "for"),))


def proof(item: Program, graphs: int, guard: str = "G['step'] == 0", source: str = "G['step']", **kw) -> Proof:
    failures = (GuardFailureRecord(guard, source, "run.py", 9),) if graphs > 1 else ()
    code = CodeRecord("run.py", 5, "step", graphs, graphs if graphs >= 8 else graphs - 1, graphs >= 8, failures)
    return Proof(key=item.key, torch="2.13.0+cpu", ran=True, codes=(code,), **kw)


@pytest.mark.parametrize("text, expected", [
    ("G['step'] == 3", "G['<name>'] == <int>"),
    ("self._modules['cache'].length == 0", "self._modules['<name>'].<name> == <int>"),
    ("L['self']._modules['cache'].length", "L['self']._modules['<name>'].<name>"),
    ("G['__import_pkg_dot_mod'].SCALE == 0.5", "G['<name>'].<name> == <float>"),
    ("mode == 'train'", "<name> == <str>"),
    ("L['cfg'].flag == True", "L['<name>'].<name> == <bool>"),
    ("len(L['xs']) == 4", "len(L['<name>']) == <int>"),
    ("___check_obj_id(L['fn'].__code__, <id>)", "___check_obj_id(L['<name>'].__code__, <id>)"),
    ("tensor 'x' size mismatch at index 0. expected 2, actual 3",
     "tensor '<name>' size mismatch at index <int>. expected <value>, actual <value>"),
    ("tensor 'L['batch']['x']' dtype mismatch. expected Float, actual Double",
     "tensor 'L['<name>']['<name>']' dtype mismatch. expected <value>, actual <value>"),
    ("((7 + L['x'].size()[0]) // L['x'].size()[0]) == 2", "((<int> + L['<name>'].size()[0]) // L['<name>'].size()[0]) == <int>"),
    ("GLOBAL_STATE changed: grad_mode", "GLOBAL_STATE changed: grad_mode"),
])
def test_template_keeps_dynamos_structure_and_hides_the_programs_names_and_values(text, expected):
    assert table.template(text) == expected


def test_build_aggregates_each_cell_over_its_programs():
    a, b, c, d, e = (program(i) for i in range(5))
    other = program(9, dims=CELL[:4] + (("change", "never"),))
    twin = program(10, dims=CELL + (("variant", "tensor"),))
    proofs = {
        twin.key: proof(twin, 1),
        a.key: proof(a, 8),
        b.key: proof(b, 8, guard="G['lr_step'] == 4", source="G['lr_step']"),
        c.key: proof(c, 2),
        d.key: Proof(key=d.key, torch="2.13.0+cpu", ran=False, error="timeout"),
        other.key: proof(other, 1),
    }
    data = table.build([a, b, c, d, e, other, twin, a], proofs, made_from=[(7, 6)])
    assert data["counts"] == {"programs": 7, "proven": 5, "failed": 1, "unproven": 1, "without_cell": 0}
    assert data["made_from"] == [(7, 6)] and data["torch"] == ["2.13.0+cpu"]
    rows = {row["change"]: row for row in data["cells"]}
    every = rows["every"]
    assert (every["programs"], every["failed"], every["tier"], every["tiers"]) == (3, 1, "unbounded", [2, 1, 0])
    assert (every["graphs"], every["limit"], every["limit_error"]) == ([2, 8], 2, 0)
    assert every["twins"] == [0, 0, 1]  # the negative twin is counted apart from the cell's outcome
    # Two programs' guards differ only by the name: one spelling, counted three times.
    assert every["guards"] == [["G['<name>'] == <int>", "G['<name>']", 3]]
    assert rows["never"]["tier"] == "negative" and rows["never"]["guards"] == []


def test_a_tie_goes_to_the_costlier_tier_and_fullgraph_errors_are_counted():
    a, b = program(0), program(1)
    limit = Proof(key=b.key, torch="2.13.0+cpu", ran=True, codes=proof(b, 8).codes, error="FailOnRecompileLimitHit: x", limit_error=True)
    (row,) = table.build([a, b], {a.key: proof(a, 2), b.key: limit})["cells"]
    assert row["tier"] == "unbounded" and row["limit_error"] == 1 and row["limit"] == 1


def test_the_analysis_reads_behaviour_from_the_table(tmp_path, monkeypatch):
    a, b = program(0), program(1, dims=CELL[:4] + (("change", "once"),))
    path = tmp_path / "measured.json"
    path.write_text(table.dumps(table.build([a, b], {a.key: proof(a, 8), b.key: proof(b, 2)})), encoding="utf-8")
    monkeypatch.setattr(measured, "TABLE", path)
    measured._cells.cache_clear()
    try:
        assert measured.behaviour("global", "int", "arithmetic", "default", "every") == ("unbounded", 8)
        assert measured.behaviour("global", "int", "arithmetic", "default", "once") == ("bounded", 2)
        assert measured.behaviour("global", "int", "arithmetic", "default", "never") is None
        path.write_text("{broken", encoding="utf-8")
        measured._cells.cache_clear()
        assert measured.behaviour("global", "int", "arithmetic", "default", "every") is None
    finally:
        measured._cells.cache_clear()


def test_dumps_is_one_cell_per_line_and_loads_back():
    a = program(0)
    data = table.build([a], {a.key: proof(a, 8)}, made_from=[(7, 1)])
    text = table.dumps(data)
    assert len(text.splitlines()) == 3  # head, one cell, closing bracket
    assert json.loads(text) == json.loads(json.dumps(data))


def test_the_committed_page_is_generated_from_the_committed_table():
    """``docs/lab.md`` is what ``python -m recompile_lint.lab table`` writes from measured.json."""
    data = table.load(table.TABLE_PATH)
    expected = table.render(data, cli._unwritable())
    assert table.PAGE_PATH.read_text(encoding="utf-8") == expected, (
        "docs/lab.md is not current: python -m recompile_lint.lab table --page-only"
    )
    assert cli.main(["table", "--page-only", "--check"]) == 0
    for row in data["cells"]:
        assert measured.behaviour(row["location"], row["type"], row["use"], row["options"], row["change"]) == (
            (row["tier"], row["graphs"][1]) if row["programs"] else None
        )


def test_the_page_lists_every_measured_cell(tmp_path):
    a, b = program(0), program(1, dims=CELL[:2] + (("use", "range-bound"),) + CELL[3:])
    data = table.build([a, b], {a.key: proof(a, 8), b.key: proof(b, 3)})
    page = table.render(data, [{"location": "global", "type": "str", "use": "arithmetic", "why": "a str does not enter tensor arithmetic"}])
    assert "| global | int | arithmetic | default | every | 1 | 8 | unbounded | 1/0/0 | 1 | 0 | 0/0/0 | `G['<name>'] == <int>` | `G['<name>']` |" in page
    assert "| global | int | range-bound | default | every | 1 | 3 | bounded |" in page
    assert "| a str does not enter tensor arithmetic | 1 | str | arithmetic | global |" in page


def test_unwritable_cells_are_listed_as_products_per_reason():
    why = "the op takes an int size"
    cells = [{"location": loc, "type": t, "use": u, "why": why}
             for loc in table._grid_values()["location"] for t in ("float", "bool") for u in ("op-view", "op-split")]
    cells.append({"location": "global", "type": "str", "use": "op-view", "why": why})
    lines = table._render_unwritable(cells)
    assert f"| {why} | {len(cells)} | float, bool | op-view, op-split | all |" in lines
    assert "|  |  | str | op-view | global |" in lines


def test_the_table_command_fails_clearly_on_a_bad_store(tmp_path, capsys):
    bad = tmp_path / "proofs.json"
    bad.write_text("not json", encoding="utf-8")
    page, out = tmp_path / "lab.md", tmp_path / "measured.json"
    code = cli.main(["table", "--seed", "0", "--count", "3", "--proofs", str(bad), "--table", str(out), "--page", str(page)])
    assert code == 2
    assert "not JSON" in capsys.readouterr().err
    assert not page.exists() and not out.exists()
    assert cli.main(["table", "--page-only", "--table", str(out), "--page", str(page)]) == 2


def test_the_table_command_rebuilds_table_and_page_from_generated_programs(tmp_path, monkeypatch):
    a, b = program(0), program(1)
    monkeypatch.setattr(cli, "_generate", lambda runs: [a, b] if (7, 2) in runs else [])
    proofs = tmp_path / "proofs.json"
    store.save(proofs, {a.key: proof(a, 8)})
    out, page = tmp_path / "measured.json", tmp_path / "lab.md"
    args = ["--proofs", str(proofs), "--table", str(out), "--page", str(page)]
    assert cli.main(["table", "--seed", "7", "--count", "2", *args]) == 0
    data = table.load(out)
    assert data["made_from"] == [[7, 2]] and data["counts"]["unproven"] == 1
    assert page.read_text(encoding="utf-8") == table.render(data, cli._unwritable())
    # With no --seed the command regenerates the runs the table names.
    assert cli.main(["table", "--check", *args]) == 0
    store.save(proofs, {a.key: proof(a, 8), b.key: proof(b, 2)})
    assert cli.main(["table", "--check", *args]) == 1
    # Several runs at once; a bad spelling is a clear error.
    assert cli.main(["table", "--runs", "7:2,8:0", *args]) == 0
    assert table.load(out)["made_from"] == [[7, 2], [8, 0]]
    assert cli.main(["table", "--runs", "7-2", *args]) == 2
