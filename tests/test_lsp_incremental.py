"""The language server's edit session (``frontends.editing``): after a sequence of edits, each
open document's result is what a fresh ``lint_paths([document], buffers=<open documents>,
relocate=True)`` returns on the edited project, while an edit parses only the edited file and
asks the guard model only about the regions that can have findings in the open documents."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from recompile_lint.analysis.index import FactsStore
from recompile_lint.config import load_config
from recompile_lint.engine import lint_paths
from recompile_lint.frontends.editing import EditSession, MemoryFacts, relevant_regions

OPS = """\
import torch

STEP = 0
LR = 0.1


@torch.compile
def scale(x):
    return x * STEP


@torch.compile
def rate(x):
    return x * LR
"""

TRAIN = """\
import torch

import ops


def train(batches):
    for i, x in enumerate(batches):
        ops.STEP = i
        ops.scale(x)
"""

SCHEDULE = """\
import ops


def warmup(steps):
    for step in range(steps):
        ops.rate(step)
"""


def full_lint(documents: dict[str, str], path: str):
    buffers = {p: text.encode("utf-8") for p, text in documents.items()}
    return lint_paths([path], load_config([path]), buffers=buffers, relocate=True)


def assert_same_as_full(session: EditSession, documents: dict[str, str]) -> dict:
    results = session.lint(documents)
    assert set(results) == set(documents)
    for path in documents:
        expected = full_lint(documents, path)
        got = results[path]
        assert got.findings == expected.findings, path
        assert got.errors == expected.errors, path
        assert (got.files_checked, got.suppressed, got.excluded) == (expected.files_checked, expected.suppressed, expected.excluded), path
    return results


@pytest.fixture
def crossmodule(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "ops.py").write_text(OPS, encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "schedule.py").write_text(SCHEDULE, encoding="utf-8")
    (tmp_path / "unrelated.py").write_text("def double(x):\n    return 2 * x\n", encoding="utf-8")
    return tmp_path


def test_edits_that_move_findings_between_documents_give_what_a_full_lint_gives(crossmodule: Path) -> None:
    train, ops = str(crossmodule / "train.py"), str(crossmodule / "ops.py")
    documents = {train: TRAIN, ops: OPS}
    session = EditSession()
    first = assert_same_as_full(session, documents)
    # ops.py: the global STEP (RCL101), and rate's int argument, which schedule.py's warm-up
    # loop changes at each call (RCL108, bounded: automatic dynamic frees it after a recompile).
    assert [f.code for f in first[train].findings] == ["RCL101"] and [f.code for f in first[ops].findings] == ["RCL101", "RCL108"]
    edits = [
        (train, TRAIN.replace("        ops.STEP = i\n", "")),  # the write goes: both clear
        (train, TRAIN.replace("ops.STEP = i", "ops.STEP = i  # noqa: RCL101")),  # suppressed in train.py only
        (ops, OPS.replace("return x * STEP", "return x * STEP * LR")),  # the read moves
        (train, TRAIN + "\n\ndef tune(batches):\n    for i, x in enumerate(batches):\n        ops.LR = i / 10\n        ops.rate(x)\n"),
        (ops, OPS.replace("import torch\n", "import torch\n\n\n")),  # every line of ops.py moves
        (train, "def broken(:\n"),  # a syntax error in a document
        (train, TRAIN),
    ]
    seen = set()
    for path, text in edits:
        documents[path] = text
        results = assert_same_as_full(session, documents)
        seen.add(tuple(len(results[p].findings) for p in sorted(documents)))
    assert len(seen) >= 3  # the edits did change what is reported
    assert session.runs == len(edits) + 1


def test_an_edit_parses_only_the_edited_file(crossmodule: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    train, ops = str(crossmodule / "train.py"), str(crossmodule / "ops.py")
    documents = {train: TRAIN, ops: OPS}
    session = EditSession()
    session.lint(documents)
    parsed: list[str] = []
    collect = FactsStore._collect

    def counting(self, path, text, module, is_package):
        parsed.append(path)
        return collect(self, path, text, module, is_package)

    monkeypatch.setattr(FactsStore, "_collect", counting)
    documents[train] = TRAIN.replace("ops.scale(x)", "ops.scale(x + 1)")
    session.lint(documents)
    assert parsed == [train]
    monkeypatch.undo()
    assert_same_as_full(session, documents)


def synthetic(root: Path, modules: int) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    try:
        from make_synthetic import generate
    finally:
        sys.path.pop(0)
    generate(root, modules)
    (root / "pyproject.toml").write_text("[project]\nname = 'synth'\n", encoding="utf-8")
    return root


def test_a_sequence_of_edits_on_a_synthetic_project_gives_what_a_full_lint_gives(tmp_path: Path) -> None:
    root = synthetic(tmp_path / "synth", 40)
    paths = sorted(str(p) for p in root.rglob("mod_*.py"))
    chosen = [paths[0], paths[10], paths[23]]  # two that compile, one that does not
    documents = {path: Path(path).read_text(encoding="utf-8") for path in chosen}
    session = EditSession()
    assert_same_as_full(session, documents)
    rng = random.Random(3)
    for number in range(6):
        path = rng.choice(chosen)
        lines = documents[path].split("\n")
        at = rng.randrange(len(lines))
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
        lines.insert(at, [f"{indent}STEP = {number}", f"{indent}pass", "", f"{indent}right.STEP = {number}"][number % 4] if indent or number % 4 != 1 else "")
        documents[path] = "\n".join(lines)
        assert_same_as_full(session, documents)
    # Only some regions were asked of the guard model again: those whose findings can be here.
    asked, found = session.regions_asked[-1]
    assert 0 < asked < found


def test_a_region_is_asked_when_an_open_document_writes_what_it_guards(crossmodule: Path) -> None:
    from recompile_lint.analysis.guards import predict_guards
    from recompile_lint.analysis.index import FunctionTrees
    from recompile_lint.analysis.index import ProjectIndex
    from recompile_lint.engine import analyse_index, selected_rules

    config = load_config([str(crossmodule)])
    files = sorted(str(p) for p in crossmodule.glob("*.py"))
    kept: dict = {}

    def keep(index, regions, guards):
        kept.update(index=index, regions=regions, guards=guards)
        return regions

    index = ProjectIndex(files, FactsStore((), MemoryFacts()))
    analyse_index(index, files, config, selected_rules(config), [], related=True, risk_regions=keep)
    by_name = {region.name.rsplit(".", 1)[-1]: region for region in kept["regions"]}
    assert set(by_name) == {"scale", "rate"}

    def asked(document: str) -> set[str]:
        chosen = relevant_regions(kept["index"], kept["regions"], kept["guards"], frozenset({str(crossmodule / document)}))
        return {region.name.rsplit(".", 1)[-1] for region in chosen}

    # ops.py holds both; train.py writes STEP (and imports ops); schedule.py drives rate.
    assert asked("ops.py") == {"scale", "rate"}
    assert "scale" in asked("train.py")
    assert "rate" in asked("schedule.py")
    assert asked("unrelated.py") == set()
    assert list(predict_guards(kept["index"], [by_name["scale"]], 6, FunctionTrees(kept["index"])))


def test_invalid_settings_are_the_documents_answer_and_other_projects_still_lint(tmp_path: Path, crossmodule: Path) -> None:
    from recompile_lint.config import ConfigError

    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "pyproject.toml").write_text('[project]\nname = "bad"\n\n[tool.recompile-lint]\nselekt = ["RCL"]\n', encoding="utf-8")
    (bad / "m.py").write_text("x = 1\n", encoding="utf-8")
    train = str(crossmodule / "train.py")
    documents = {str(bad / "m.py"): "x = 1\n", train: TRAIN}
    results = EditSession().lint(documents)
    assert isinstance(results[str(bad / "m.py")], ConfigError)
    assert [f.code for f in results[train].findings] == ["RCL101"]


def test_whole_file_trees_are_kept_for_their_text_and_snippets_are_parsed_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    from recompile_lint.analysis import parsing

    text = "def f(x):\n    return x\n\n\ndef g(y):\n    return y\n"
    assert parsing.parse_source(text, "m.py") is not parsing.parse_source(text, "m.py")  # nothing kept outside a session
    monkeypatch.setattr(parsing, "resident_trees", {"m.py": (text, None)})
    tree = parsing.parse_source(text, "m.py")
    assert parsing.parse_source(text, "m.py") is tree
    # A snippet of the file (which a stage renumbers in place) is never the kept tree.
    snippet = "def g(y):\n    return y"
    assert parsing.parse_source(snippet, "m.py") is not parsing.parse_source(snippet, "m.py")
    assert parsing.parse_source(text, "m.py") is tree
    assert parsing.parse_source(text + "z = 1\n", "m.py") is not tree  # another text: parsed
    assert parsing.parse_source(text, "other.py") is not tree  # a file the session did not name


def test_a_file_changed_on_disk_is_read_again_even_with_the_same_size_and_mtime(crossmodule: Path) -> None:
    import os

    ops, train = crossmodule / "ops.py", str(crossmodule / "train.py")
    session = EditSession()
    documents = {train: TRAIN}
    assert [f.code for f in session.lint(documents)[train].findings] == ["RCL101"]
    stat = ops.stat()
    # Same size, same modification time: the read no longer uses STEP.
    ops.write_text(OPS.replace("return x * STEP", "return x + 1234"), encoding="utf-8")
    os.utime(ops, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert ops.stat().st_size == stat.st_size
    assert_same_as_full(session, documents)
    assert session.lint(documents)[train].findings == ()
