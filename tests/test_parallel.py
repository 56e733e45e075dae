"""Parsing in worker processes gives exactly the facts (and errors) of a single process."""

from __future__ import annotations

import ast
import os
import textwrap
from pathlib import Path

import pytest

from recompile_lint.analysis import parallel
from recompile_lint.analysis.facts import ModuleFacts
from recompile_lint.analysis.index import FactsStore, ProjectIndex
from recompile_lint.models import FileError
from recompile_lint.analysis.parallel import effective_jobs, make_chunks, parse_in_parallel, worth_parallel

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

SOURCES = {
    "pkg/__init__.py": "",
    "pkg/model.py": """
        import torch
        from torch import nn

        SCALE = 2


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.step = 0

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return x * SCALE + self.step


        model = torch.compile(Net())
    """,
    "pkg/train.py": """
        from pkg import model as m


        def main():
            for _ in range(3):
                m.SCALE += 1
                m.model.step += 1
    """,
    "broken.py": "def f(:\n    pass\n",
}


def write_tree(root: Path) -> list[tuple[str, str]]:
    out = []
    for name, source in SOURCES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = textwrap.dedent(source).lstrip("\n")
        path.write_text(text, encoding="utf-8")
        out.append((str(path), text))
    return out


def serial(sources: list[tuple[str, str]]) -> dict[str, ModuleFacts | FileError]:
    """What the index itself records for each file, parsed one by one in this process."""
    index = ProjectIndex([p for p, _ in sources], FactsStore())
    out: dict[str, ModuleFacts | FileError] = {}
    for path, _ in sources:
        facts = index.facts(path)
        out[path] = facts if facts is not None else index.errors[path]
    return out


def test_workers_give_the_facts_and_errors_of_one_process(tmp_path):
    sources = write_tree(tmp_path)
    parallel_result = parse_in_parallel(sources, (), jobs=2, min_bytes=0)
    assert parallel_result == serial(sources)
    assert list(parallel_result) == [p for p, _ in sources]
    broken = parallel_result[str(tmp_path / "broken.py")]
    assert isinstance(broken, FileError) and broken.message.startswith("syntax error") and broken.line == 1


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="no fixtures tree")
def test_fixture_facts_are_identical_in_workers():
    paths = sorted(str(p) for p in FIXTURES.rglob("*.py"))
    sources = [(p, Path(p).read_text(encoding="utf-8")) for p in paths]
    assert parse_in_parallel(sources, ("my.compile_wrapper",), jobs=2, min_bytes=0) == {
        p: parallel.parse_one(p, t, ("my.compile_wrapper",)) for p, t in sources
    }


def test_a_worker_keeps_trees_up_to_its_bound_and_gives_the_same_facts(tmp_path, monkeypatch):
    sources = [(p, t) for p, t in write_tree(tmp_path) if not p.endswith("broken.py")]
    monkeypatch.setattr(parallel, "_kept_trees", [])
    monkeypatch.setattr(parallel, "_kept_bytes", 0)
    bound = sum(len(t) for _, t in sources[:2])
    monkeypatch.setattr(parallel, "KEEP_TREES_BYTES", bound)
    assert parallel._parse_chunk(sources, (), keep=True) == parallel._parse_chunk(sources, ())
    assert len(parallel._kept_trees) >= 2 and parallel._kept_bytes <= bound
    assert all(isinstance(tree, ast.Module) for tree in parallel._kept_trees)
    parallel._parse_chunk(sources, (), keep=True)
    assert parallel._kept_bytes <= bound  # across chunks too
    assert len(parallel._kept_trees) < 2 * len(sources)


def test_compile_functions_reach_the_workers(tmp_path):
    path = tmp_path / "w.py"
    text = "from tools import fast\n\n\ndef f(x):\n    return x\n\n\ng = fast(f)\n"
    path.write_text(text, encoding="utf-8")
    sources = [(str(path), text), (str(tmp_path / "other.py"), "x = 1\n")]
    with_wrapper = parse_in_parallel(sources, ("tools.fast",), jobs=2, min_bytes=0)[str(path)]
    assert isinstance(with_wrapper, ModuleFacts) and with_wrapper.compile_sites
    without = parse_in_parallel(sources, (), jobs=2, min_bytes=0)[str(path)]
    assert isinstance(without, ModuleFacts) and not without.compile_sites


def test_small_batches_stay_in_this_process(tmp_path, monkeypatch):
    sources = write_tree(tmp_path)
    assert not worth_parallel(sources, 2)  # a few hundred bytes never pay for workers
    assert not worth_parallel(sources, 1, min_bytes=0)

    def no_pool(*args, **kwargs):
        raise AssertionError("started workers for a small batch")

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", no_pool)
    assert parse_in_parallel(sources, (), jobs=2) == serial(sources)


def test_a_failing_pool_falls_back_to_one_process(tmp_path, monkeypatch):
    sources = write_tree(tmp_path)

    class Broken:
        def __init__(self, *args, **kwargs):
            raise OSError(38, "Function not implemented")

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", Broken)
    assert parse_in_parallel(sources, (), jobs=2, min_bytes=0) == serial(sources)


def test_jobs_zero_means_one_per_core():
    assert effective_jobs(0) >= 1
    assert effective_jobs(3) == min(3, effective_jobs(0))  # never more than the cores


def test_chunks_cover_every_file_once_and_balance_sizes():
    sources = [(f"f{i}.py", "x" * size) for i, size in enumerate([900, 10, 10, 300, 300, 300, 50, 50])]
    chunks = make_chunks(sources, 3)
    assert sorted(s for c in chunks for s in c) == sorted(sources)
    totals = [sum(len(t) for _, t in c) for c in chunks]
    assert totals[0] == 900  # the largest file alone, handed out first; the rest spread over the others
    assert totals == sorted(totals, reverse=True)
    assert totals == [900, 600, 420]
    assert make_chunks(sources[:2], 8) and len(make_chunks(sources[:2], 8)) == 2


def lint_tree(root: Path, jobs: int):
    from recompile_lint.config import Config
    from recompile_lint.engine import lint_paths

    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n', encoding="utf-8")
    (root / "undecodable.py").write_bytes(b"x = '\xff\xfe'\n")
    (root / "fine.py").write_text("y = 1\n", encoding="utf-8")
    return lint_paths([str(root)], Config(select=("RCL",), cache=False, jobs=jobs))


def test_background_syntax_checks_report_what_one_process_reports(tmp_path, monkeypatch):
    """With workers, files the analysis never parses are syntax-checked in one of them: the
    errors (syntax, decoding) and findings are those of a single-process run."""
    write_tree(tmp_path / "one")
    write_tree(tmp_path / "two")
    single = lint_tree(tmp_path / "one", jobs=1)
    started = []
    original = parallel.BackgroundSyntaxCheck.__init__

    def spy(self, paths, sizes=None, *more):
        started.append(list(paths))
        original(self, paths, sizes, *more)

    flagged = []
    original_parsed = parallel.BackgroundSyntaxCheck.parsed

    def parsed(self, path):
        flagged.append(path)
        original_parsed(self, path)

    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(parallel.BackgroundSyntaxCheck, "__init__", spy)
    monkeypatch.setattr(parallel.BackgroundSyntaxCheck, "parsed", parsed)
    workers = lint_tree(tmp_path / "two", jobs=2)
    assert started and any(p.endswith("broken.py") for p in started[0]), "no background check ran"
    # The module the mutation scan parses is one the worker is told it need not check.
    assert any(p.endswith("train.py") for p in flagged) and any(p.endswith("train.py") for p in started[0])
    relative = lambda result: ([(f.code, Path(f.path).name, f.line) for f in result.findings], [(Path(e.path).name, e.message, e.line) for e in result.errors])  # noqa: E731
    assert relative(workers) == relative(single)
    assert {Path(e.path).name for e in single.errors} == {"broken.py", "undecodable.py"}


def test_a_failing_background_pool_changes_nothing(tmp_path, monkeypatch):
    write_tree(tmp_path / "one")
    write_tree(tmp_path / "two")
    single = lint_tree(tmp_path / "one", jobs=1)

    class Broken:
        def __init__(self, *args, **kwargs):
            raise OSError(38, "Function not implemented")

    class BrokenContext:
        def __getattr__(self, name):
            raise OSError(38, "Function not implemented")

    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(parallel, "ProcessPoolExecutor", Broken)
    monkeypatch.setattr(parallel, "_context", BrokenContext)
    workers = lint_tree(tmp_path / "two", jobs=2)
    assert [(Path(e.path).name, e.message) for e in workers.errors] == [(Path(e.path).name, e.message) for e in single.errors]


def test_a_background_worker_that_dies_changes_nothing(tmp_path, monkeypatch):
    """The files of the chunks a dying worker had claimed are checked by the caller."""
    write_tree(tmp_path / "one")
    write_tree(tmp_path / "two")
    single = lint_tree(tmp_path / "one", jobs=1)

    def dying(chunks, bounds, send, recursion_limit):
        while parallel._claim(bounds, back=False) is not None:
            pass
        os._exit(3)

    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(parallel, "_syntax_worker", dying)
    workers = lint_tree(tmp_path / "two", jobs=2)
    relative = lambda result: ([(f.code, Path(f.path).name, f.line) for f in result.findings], [(Path(e.path).name, e.message, e.line) for e in result.errors])  # noqa: E731
    assert relative(workers) == relative(single)


def test_text_selection_in_workers_is_the_selection_of_one_process(monkeypatch):
    """Which files may hold a compile site (and, with a project's guards, which may change a
    guarded value) is decided in workers with -j 2: the same files, in the same order."""
    from functools import partial

    from recompile_lint.analysis.textscan import may_compile_text

    paths = sorted(str(p) for p in FIXTURES.rglob("*.py"))
    test = partial(may_compile_text, extra_tokens=("maybe_compile",))
    serial_index = ProjectIndex(paths, FactsStore(), jobs=1)
    expected = serial_index.select(paths, test)
    assert 0 < len(expected) < len(paths)
    monkeypatch.setattr(parallel, "MIN_SELECT_BYTES", 0)
    started = []
    real_pool = parallel.ProcessPoolExecutor

    def counting_pool(*args, **kwargs):
        started.append(kwargs.get("max_workers"))
        return real_pool(*args, **kwargs)

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", counting_pool)
    ran = []
    assert ProjectIndex(paths, FactsStore(), jobs=2).select(paths, test, meanwhile=lambda: ran.append(1)) == expected
    assert started == [2] and ran == [1]

    class Broken:
        def __init__(self, *args, **kwargs):
            raise OSError(38, "Function not implemented")

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", Broken)
    ran.clear()
    assert ProjectIndex(paths, FactsStore(), jobs=2).select(paths, test, meanwhile=lambda: ran.append(1)) == expected
    assert ran == [1]


def test_files_workers_cannot_read_get_the_errors_of_one_process(tmp_path, monkeypatch):
    """With workers reading the files, an undecodable or vanished file is still reported by
    this process exactly as a single-process run reports it, and the rest are tested."""
    from functools import partial

    from recompile_lint.analysis.textscan import may_compile_text

    sources = write_tree(tmp_path)
    (tmp_path / "latin.py").write_bytes(b"import torch\nname = '\xff'\ntorch.compile(f)\n")
    paths = [path for path, _ in sources] + [str(tmp_path / "latin.py"), str(tmp_path / "gone.py")]
    test = partial(may_compile_text, extra_tokens=())
    one = ProjectIndex(paths, FactsStore(), jobs=1)
    expected = one.select(paths, test)
    monkeypatch.setattr(parallel, "MIN_SELECT_BYTES", 0)
    two = ProjectIndex(paths, FactsStore(), jobs=2)
    assert two.select(paths, test) == expected and expected
    assert set(two.errors) == set(one.errors) == {str(tmp_path / "latin.py"), str(tmp_path / "gone.py")}
    assert {p: e.message for p, e in two.errors.items()} == {p: e.message for p, e in one.errors.items()}


@pytest.mark.parametrize("wait_for_worker", [False, True])
def test_background_syntax_checks_are_shared_with_this_process(tmp_path, wait_for_worker):
    """Asked at once, most chunks are checked in this process; asked late, all came from the
    worker: the results are the same, and those of a check made here."""
    from recompile_lint.analysis.parsing import syntax_error

    paths = []
    for number in range(80):
        path = tmp_path / f"m{number:02d}.py"
        if number % 9 == 4:
            path.write_text(f"def f(:\n    return {number}\n", encoding="utf-8")
        elif number == 30:
            path.write_bytes(b"x = '\xff\xfe'\n")
        else:
            path.write_text(f"x = {number}\n", encoding="utf-8")
        paths.append(str(path))
    check = parallel.BackgroundSyntaxCheck(paths)
    assert len(check._chunks) > 2 and check._process is not None
    if wait_for_worker:
        check._process.join(timeout=60)
        assert list(check._bounds) == [len(check._chunks), len(check._chunks)]  # all claimed there
    results = check.results()
    expected = {p: syntax_error(p, Path(p).read_text(encoding="utf-8")) for p in paths if not p.endswith("m30.py")}
    assert results == expected
    assert sum(error is not None for error in results.values()) == 9


def test_the_background_check_takes_small_files_first_and_passes_over_parsed_ones(tmp_path):
    paths, sizes = [], []
    for number in range(70):
        path = tmp_path / f"m{number:02d}.py"
        path.write_text("def f(:\n" if number == 3 else f"x = {number}\n" + "# padding\n" * (70 - number), encoding="utf-8")
        paths.append(str(path))
        sizes.append(path.stat().st_size)
    check = parallel.BackgroundSyntaxCheck(paths, sizes)
    try:
        order = [path for chunk in check._chunks for path in chunk]
        assert order == [path for _, path in sorted(zip(sizes, paths))]
        assert order[0].endswith("m03.py") and order[-1].endswith("m00.py")
    finally:
        check.close()
    # A file the analysis parses is passed over, as if it could not be read: no result.
    checked = parallel._check_chunk(paths[:5], skip=lambda path: path.endswith("m03.py"))
    assert [result for _, result in checked][3] is False
    assert all(result is None for _, result in checked[:3] + checked[4:])
    assert parallel._check_chunk(paths[3:4])[0][1] is not None


def test_call_sites_collected_in_workers_are_those_collected_here(tmp_path, monkeypatch):
    import sys

    from recompile_lint.analysis.callsites import file_call_sites, names_of
    from recompile_lint.config import Config
    from recompile_lint.engine import analyse
    from recompile_lint.analysis.textscan import mentions

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from make_synthetic import generate

    generate(tmp_path, 40)
    files = sorted(str(p) for p in tmp_path.rglob("*.py"))
    analysis = analyse(files, files, Config(select=("RCL",), cache=False, jobs=1), lambda: [])
    index = analysis.index
    names = set().union(*(names_of(region, index) for region in analysis.regions))
    wanted = [(path, tuple(sorted(n for n in names if mentions(index.text(path) or "", n)))) for path in files]
    wanted = [(path, present) for path, present in wanted if present]
    for path, _ in wanted:
        index.facts(path)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    found = parallel.call_sites_in_parallel(index, wanted, 2, file_call_sites)
    if parallel._context().get_start_method() != "fork":
        assert found is None  # only forked workers can read this process's index
        return
    here = {path: file_call_sites(index, path, index.text(path) or "", set(present)) for path, present in wanted}
    assert found == here
    assert sum(len(sites or ()) for sites in here.values()) > 10
