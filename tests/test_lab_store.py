"""The stored proofs: compact JSON that round-trips, merges, and proves only what it lacks."""

from __future__ import annotations

import json

import pytest

from recompile_lint.lab import store
from recompile_lint.lab.program import Program
from recompile_lint.lab.proof import CodeRecord, GuardFailureRecord, Proof


def program(index: int) -> Program:
    return Program(seed=3, index=index, files=(("run.py", f"print({index})\n"),), dims=(("location", "global"),))


def proof_for(item: Program, graphs: int = 8, torch: str = "2.13.0+cpu") -> Proof:
    failure = GuardFailureRecord("G['step'] == 0", "G['step']", "run.py", 7)
    code = CodeRecord("run.py", 5, "step", graphs, graphs, graphs >= 8, (failure,))
    return Proof(key=item.key, torch=torch, ran=True, codes=(code,))


def test_round_trip_is_exact_compact_and_sorted(tmp_path):
    items = [program(i) for i in range(3)]
    proofs = {p.key: proof_for(p, graphs=i + 1) for i, p in enumerate(items)}
    proofs[items[2].key] = Proof(key=items[2].key, torch="2.13.0+cpu", ran=False, error="timeout")
    path = tmp_path / "lab" / "proofs.json"
    store.save(path, proofs)
    assert store.load(path) == proofs
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n"  # no indentation, no spaces
    assert list(data["proofs"]) == sorted(data["proofs"])
    assert data["torch"] == ["2.13.0+cpu"]
    # Saving again what was loaded changes nothing (a proving run only adds rows).
    store.save(path, store.load(path))
    assert path.read_text(encoding="utf-8") == text


def test_a_missing_store_is_empty_and_a_bad_one_is_a_clear_error(tmp_path):
    assert store.load(tmp_path / "none.json") == {}
    for text, message in (
        ("{not json", "not JSON"),
        ('{"format": 99, "proofs": {}}', "not a store of proofs"),
        ('{"format": 1, "proofs": {"abc": [1]}}', "the proof of abc is malformed"),
        ('{"format": 1, "proofs": {"abc": ["xyz", "2.13", 1, [], "", 0]}}', "stored under abc is of xyz"),
    ):
        path = tmp_path / "bad.json"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(store.StoreError, match=message):
            store.load(path)


def test_merge_adds_new_rows_and_the_new_proof_wins():
    a, b, c = program(0), program(1), program(2)
    old = {a.key: proof_for(a, 1), b.key: proof_for(b, 1)}
    new = {b.key: proof_for(b, 8), c.key: proof_for(c, 2)}
    merged = store.merge(old, new)
    assert merged == {a.key: old[a.key], b.key: new[b.key], c.key: new[c.key]}
    assert old[b.key].codes[0].graphs == 1  # the inputs are left as they were


def test_prove_missing_proves_only_what_the_store_lacks():
    a, b, c = program(0), program(1), program(2)
    stored = {a.key: proof_for(a, 1)}
    asked: list[list[str]] = []

    def fake_prove(programs, **options):
        asked.append([p.key for p in programs])
        assert options == {"jobs": 2}
        return {p.key: proof_for(p, 3) for p in programs}

    proofs = store.prove_missing([a, b, c, b], stored, prove=fake_prove, jobs=2)
    assert asked == [[b.key, c.key]]
    assert proofs[a.key] is stored[a.key] and proofs[c.key].codes[0].graphs == 3
    assert store.prove_missing([a, b], proofs, prove=fake_prove, jobs=2) == proofs
    assert len(asked) == 1  # nothing left to prove: the prover is not called
    assert store.missing([a, b], proofs, torch="2.14.0") == [a, b]
