"""The facts cache: reused across runs, never stale, never fatal, never committed."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from recompile_lint import cache as cache_module
from recompile_lint import engine as engine_module
from recompile_lint.analysis import index as index_module
from recompile_lint.cache import CACHE_DIR_NAME, FactsCache, dump_entry, load_entry, seal, unseal, user_key
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths
from recompile_lint.analysis.index import FactsStore
from recompile_lint.analysis.parsing import forget_package_layout

TRAIN = """
import torch

step = 0


@torch.compile
def scaled(x: torch.Tensor) -> torch.Tensor:
    return x * step


def train(x: torch.Tensor) -> None:
    global step
    for _ in range(10):
        scaled(x)
        step += 1
"""


def make_project(root: Path, source: str = TRAIN) -> Path:
    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n', encoding="utf-8")
    path = root / "train.py"
    path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def user_cache(tmp_path_factory, monkeypatch) -> Path:
    """A user cache directory (and so a key) of each test's own."""
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home / "recompile-lint"


def entries(directory: Path) -> list[Path]:
    """The facts entries of a cache directory."""
    return [p for p in directory.glob("facts-*/*") if p.is_file()]


def payload(entry: Path, kind: str = "facts") -> bytes | None:
    """What an entry holds, when this user's cache wrote it there."""
    key = user_key()
    assert key is not None
    return unseal(key, kind, entry.name, entry.read_bytes())


def reseal(entry: Path, data: bytes, kind: str = "facts") -> None:
    """Replace an entry's content with ``data``, sealed with this user's key (as only this
    user's cache could: what a bug, not an attacker, could leave)."""
    key = user_key()
    assert key is not None
    entry.write_bytes(seal(key, kind, entry.name, data))


def forget_runs(directory: Path) -> None:
    """Drop whole-run results, so that the next run has to read per-file facts."""
    for runs in directory.glob("runs-*"):
        shutil.rmtree(runs)


def as_dicts(result) -> tuple:
    return tuple(f.to_dict() for f in result.findings), result.errors, result.files_checked


def test_second_run_reads_facts_from_the_cache(tmp_path, monkeypatch):
    path = make_project(tmp_path)
    config = Config(cache_dir=str(tmp_path / "c"))
    first = lint_paths([str(path)], config)
    assert [f.code for f in first.findings] == ["RCL101"]
    assert entries(tmp_path / "c")

    def no_parsing(*args, **kwargs):
        raise AssertionError("parsed although the cache holds the facts")

    monkeypatch.setattr(index_module, "collect_facts", no_parsing)
    forget_runs(tmp_path / "c")
    second = lint_paths([str(path)], config)
    assert as_dicts(second) == as_dicts(first)


def test_cache_directory_is_git_ignored_and_tagged(tmp_path):
    path = make_project(tmp_path)
    lint_paths([str(path)], Config(cache_dir=str(tmp_path / "c")))
    assert (tmp_path / "c" / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"
    tag = (tmp_path / "c" / "CACHEDIR.TAG").read_text(encoding="ascii")
    assert tag.startswith("Signature: 8a477f597d28d172789f06886806bc55")


def test_default_location_is_the_project_root(tmp_path, monkeypatch):
    path = make_project(tmp_path)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    lint_paths([str(path)], Config())
    assert entries(tmp_path / CACHE_DIR_NAME)
    assert not (tmp_path / "sub" / CACHE_DIR_NAME).exists()


def test_config_source_decides_the_default_location(tmp_path):
    cache = FactsCache.for_config(Config(source=str(tmp_path / "cfg")))
    assert cache is not None
    assert Path(str(cache._directory)) == tmp_path / "cfg" / CACHE_DIR_NAME
    assert FactsCache.for_config(Config(cache=False)) is None
    explicit = FactsCache.for_config(Config(cache_dir=str(tmp_path / "x"), source=str(tmp_path)))
    assert Path(str(explicit._directory)) == tmp_path / "x"


def test_no_cache_writes_nothing(tmp_path, monkeypatch):
    path = make_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    lint_paths([str(path)], Config(cache=False))
    assert not (tmp_path / CACHE_DIR_NAME).exists()


def test_an_edited_file_is_never_answered_from_the_cache(tmp_path):
    path = make_project(tmp_path)
    config = Config(cache_dir=str(tmp_path / "c"))
    assert [f.code for f in lint_paths([str(path)], config).findings] == ["RCL101"]
    # The fix: the counter is no longer reassigned, so nothing may be reported.
    path.write_text(path.read_text(encoding="utf-8").replace("        step += 1\n", "        pass\n"), encoding="utf-8")
    assert lint_paths([str(path)], config).findings == ()


def test_package_layout_is_part_of_the_key(tmp_path):
    """The same bytes under a new ``__init__.py`` are another module: its facts say so."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    path = make_project(pkg)
    store = FactsStore((), FactsCache(tmp_path / "c"))
    text = path.read_text(encoding="utf-8")
    assert store.parse(str(path), text).module == "train"
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    forget_package_layout()  # as every run starts (lint_paths)
    store = FactsStore((), FactsCache(tmp_path / "c"))
    assert store.parse(str(path), text).module == "pkg.train"


@pytest.mark.parametrize(
    "damage",
    [b"", b"not an entry", b"RLC1\n" + b"\0" * 40, "sealed-garbage", "sealed-wrong-types", "sealed-wrong-shape"],
)
def test_corrupt_entries_are_ignored_and_rewritten(tmp_path, damage):
    path = make_project(tmp_path)
    config = Config(cache_dir=str(tmp_path / "c"))
    first = lint_paths([str(path)], config)
    for entry in entries(tmp_path / "c"):
        good = payload(entry)
        assert good is not None
        if damage == "sealed-garbage":
            reseal(entry, b"{not json")
        elif damage == "sealed-wrong-types":
            # Every int of the facts turned into a string: a valid entry of the wrong types.
            reseal(entry, json.dumps(_retype(json.loads(good))).encode())
        elif damage == "sealed-wrong-shape":
            reseal(entry, json.dumps({"path": str(path)}).encode())
        else:
            entry.write_bytes(damage)
    forget_runs(tmp_path / "c")
    assert as_dicts(lint_paths([str(path)], config)) == as_dicts(first)
    assert all(load_entry(payload(e) or b"") is not None for e in entries(tmp_path / "c"))


def _retype(value):
    if isinstance(value, list):
        return [_retype(item) for item in value]
    return str(value) if type(value) is int else value


class _Exploit:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_planted_pickle_cannot_run_code(tmp_path):
    """A pickle (the old format, or an exploit) is not an entry: nothing is unpickled."""
    marker = tmp_path / "pwned"
    exploit = pickle.dumps(_Exploit(str(marker)))
    assert load_entry(exploit) is None
    key = user_key()
    assert key is not None
    assert unseal(key, "facts", "x", exploit) is None
    assert not marker.exists()


def test_unwritable_cache_location_falls_back_silently(tmp_path, capsys):
    path = make_project(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    result = lint_paths([str(path)], Config(cache_dir=str(blocker / "cache")))
    assert [f.code for f in result.findings] == ["RCL101"]
    assert capsys.readouterr().err == ""


def test_unwritable_entries_fall_back_silently(tmp_path, monkeypatch):
    path = make_project(tmp_path)

    def refuse(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache_module, "write_file", refuse)
    result = lint_paths([str(path)], Config(cache_dir=str(tmp_path / "c")))
    assert [f.code for f in result.findings] == ["RCL101"]
    assert entries(tmp_path / "c") == []


def test_entries_round_trip_without_lookup_tables(tmp_path):
    path = make_project(tmp_path)
    facts = FactsStore().parse(str(path), path.read_text(encoding="utf-8"))
    facts.function("scaled")  # fills the lazy lookup tables
    loaded = load_entry(dump_entry(facts))
    assert loaded == facts and loaded is not facts
    assert loaded is not None and loaded._lookup == {}
    assert loaded.function("scaled") == facts.function("scaled")


def test_cli_cache_options(tmp_path):
    from click.testing import CliRunner

    from recompile_lint.frontends.cli import main

    path = make_project(tmp_path)
    runner = CliRunner()
    result = runner.invoke(main, ["--cache-dir", str(tmp_path / "c"), str(path)])
    assert result.exit_code == 1, result.output
    assert entries(tmp_path / "c")
    result = runner.invoke(main, ["--no-cache", "--cache-dir", str(tmp_path / "d"), str(path)])
    assert result.exit_code == 1, result.output
    assert not (tmp_path / "d").exists()


def test_facts_of_another_path_are_not_reused(tmp_path):
    path = make_project(tmp_path)
    store = FactsStore((), FactsCache(tmp_path / "c"))
    text = path.read_text(encoding="utf-8")
    facts = store.parse(str(path), text)
    cache = FactsCache(tmp_path / "c")
    key = store.key(str(path), text)
    cache.put(key, str(path), replace(facts, path=os.fspath(tmp_path / "elsewhere.py")))
    assert cache.get(key, str(path)) is None


def test_entries_of_another_schema_are_removed_and_nothing_else(tmp_path):
    """A facts directory of another schema is emptied of the entries this user's cache
    wrote, and removed; a file it did not write stays, and so does its directory."""
    path = make_project(tmp_path)
    config = Config(cache_dir=str(tmp_path / "c"))
    lint_paths([str(path)], config)
    (current,) = (tmp_path / "c").glob("facts-*")
    key = user_key()
    assert key is not None
    stale = tmp_path / "c" / "facts-0000000000000000"
    (stale / "calls").mkdir(parents=True)
    (stale / "ab12").write_bytes(seal(key, "facts", "ab12", b"[]"))
    (stale / "calls" / "cd34").write_bytes(seal(key, "calls", "cd34", b"[]"))
    old = tmp_path / "c" / "facts-1111111111111111"
    old.mkdir()
    (old / "ab12").write_bytes(seal(key, "facts", "ab12", b"[]"))
    (old / "notes.txt").write_text("not the cache's", encoding="utf-8")
    shutil.rmtree(current)  # as after an upgrade: the current schema's directory is new
    lint_paths([str(path)], config)
    assert not stale.exists()
    assert sorted(p.name for p in old.iterdir()) == ["notes.txt"]
    assert entries(tmp_path / "c")


# ---- whole-run results ------------------------------------------------------------------------


def no_analysis(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("analysed although the run cache holds the result")

    monkeypatch.setattr(engine_module, "analyse", refuse)


def test_an_unchanged_tree_is_answered_from_the_run_cache(tmp_path, monkeypatch):
    path = make_project(tmp_path)
    config = Config(cache_dir=str(tmp_path / "c"))
    first = lint_paths([str(path)], config)
    with monkeypatch.context() as patch:
        no_analysis(patch)
        second = lint_paths([str(path)], config)
    assert second == first
    # Another setting, another file named, or another file of the project: analysed again.
    assert lint_paths([str(path)], replace(config, ignore=("RCL101",))).findings == ()
    (tmp_path / "other.py").write_text("x = 1\n", encoding="utf-8")
    assert lint_paths([str(path)], config) == first
    assert lint_paths([str(path), str(tmp_path / "other.py")], config).files_checked == 2


def test_an_edit_within_the_same_mtime_tick_is_seen(tmp_path):
    """Same size, same mtime, other bytes: a digest recorded that soon is never trusted."""
    path = make_project(tmp_path)
    config = Config(cache_dir=str(tmp_path / "c"))
    assert [f.code for f in lint_paths([str(path)], config).findings] == ["RCL101"]
    before = os.stat(path)
    text = path.read_text(encoding="utf-8")
    edited = text.replace("        step += 1\n", "        pass     \n")
    assert len(edited) == len(text)
    path.write_text(edited, encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert lint_paths([str(path)], config).findings == ()


def age(path: Path, seconds: float = 3600) -> None:
    """Set a file's modification time back (out of the racy window)."""
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns - int(seconds * 1e9)))


def test_an_old_file_edited_in_place_with_its_mtime_restored_is_seen(tmp_path, monkeypatch):
    """The edit an attacker (or a tool that preserves timestamps) makes: same size, the old
    modification time put back. The file's status-change time still moved: it is hashed
    again and the new content decides."""
    path = make_project(tmp_path)
    age(path)
    config = Config(cache_dir=str(tmp_path / "c"))
    assert [f.code for f in lint_paths([str(path)], config).findings] == ["RCL101"]
    # The table is trusted for an unchanged old file: it is not read again (so the check
    # below is the status-change time at work, not a table that is never used).
    reads: list[str] = []
    from recompile_lint import source

    real_bytes = source.read_bytes
    monkeypatch.setattr(source, "read_bytes", lambda name: reads.append(name) or real_bytes(name))
    lint_paths([str(path)], config)
    assert str(path) not in [os.path.abspath(r) for r in reads]
    monkeypatch.undo()
    before = os.stat(path)
    text = path.read_text(encoding="utf-8")
    edited = text.replace("        step += 1\n", "        pass     \n")
    assert len(edited) == len(text)
    with open(path, "r+b") as handle:  # in place: same inode
        handle.write(edited.encode())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert lint_paths([str(path)], config).findings == ()


def test_damaged_or_foreign_run_entries_are_ignored(tmp_path):
    path = make_project(tmp_path)
    config = Config(cache_dir=str(tmp_path / "c"))
    first = lint_paths([str(path)], config)
    marker = tmp_path / "pwned"
    (runs,) = (tmp_path / "c").glob("runs-*/*")
    good = payload(runs, "run")
    assert good is not None
    clean = json.loads(good)
    clean[0] = []  # no findings
    key = user_key()
    assert key is not None
    for damage in (
        b"",
        b"garbage",
        pickle.dumps({"findings": ()}),
        pickle.dumps(_Exploit(str(marker))),
        seal(b"k" * 32, "run", runs.name, json.dumps(clean).encode()),  # another user's key
        seal(key, "run", "another-name", json.dumps(clean).encode()),  # sealed for another entry
        seal(key, "run", runs.name, json.dumps(_retype(json.loads(good))).encode()),
    ):
        runs.write_bytes(damage)
        assert lint_paths([str(path)], config) == first
        assert not marker.exists()
    (tmp_path / "c" / "file-digests.json").write_text("{not json", encoding="utf-8")
    assert lint_paths([str(path)], config) == first


@pytest.mark.parametrize(
    "table",
    [
        {"": [1, 2, 3, 4, "x"]},
        "path-as-key",
        [["a", [1, 2, 3, 4, 5]]],
        [["a", ["1", 2, 3, 4, "d"]]],
        [["a", [1, 2, 3, 4]]],
        {"a": None},
    ],
)
def test_a_type_corrupted_digest_table_is_a_miss_not_an_error(tmp_path, table):
    path = make_project(tmp_path)
    config = Config(cache_dir=str(tmp_path / "c"))
    first = lint_paths([str(path)], config)
    target = tmp_path / "c" / "file-digests.json"
    if table == "path-as-key":
        # The right shape for this very file, with its digest replaced by a number.
        info = path.stat()
        table = [[str(path), [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, 7]]]
    data = json.dumps(table).encode()
    for sealed in (False, True):
        key = user_key()
        assert key is not None
        target.write_bytes(seal(key, "table", target.name, data) if sealed else data)
        assert lint_paths([str(path)], config) == first


def test_unsaved_buffers_are_not_answered_from_the_run_cache(tmp_path):
    path = make_project(tmp_path)
    config = Config(cache_dir=str(tmp_path / "c"))
    lint_paths([str(path)], config)
    fixed = path.read_text(encoding="utf-8").replace("        step += 1\n", "        pass\n").encode()
    assert lint_paths([str(path)], config, reader=lambda p: fixed if p == str(path) else Path(p).read_bytes()).findings == ()


def test_call_sites_are_read_back_from_the_cache(tmp_path, monkeypatch):
    from recompile_lint.analysis import callsites

    path = make_project(tmp_path, TRAIN + "\n\ndef main():\n    for size in (1, 2, 3):\n        scaled(torch.randn(size, 4))\n")
    config = Config(select=("RCL",), cache_dir=str(tmp_path / "c"))
    first = lint_paths([str(path)], config)
    assert list((tmp_path / "c").glob("facts-*/calls/*")), "no call sites were cached"

    def no_collection(*args, **kwargs):
        raise AssertionError("call sites collected again although the file did not change")

    monkeypatch.setattr(callsites, "file_call_sites", no_collection)
    forget_runs(tmp_path / "c")
    assert lint_paths([str(path)], config) == first
    # A damaged entry is collected again, not trusted.
    monkeypatch.undo()
    for entry in (tmp_path / "c").glob("facts-*/calls/*"):
        entry.write_bytes(pickle.dumps(_Exploit(str(tmp_path / "pwned"))))
    forget_runs(tmp_path / "c")
    assert lint_paths([str(path)], config) == first
    assert not (tmp_path / "pwned").exists()


def test_a_new_package_init_is_seen_by_the_next_run(tmp_path):
    """Package layout is looked up once per directory within a run, and afresh each run: a
    directory that gains an ``__init__.py`` makes its modules part of the package."""
    from recompile_lint.config import Config
    from recompile_lint.engine import lint_paths

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "train.py").write_text(
        "import torch\n\nstep = 0\n\n\n@torch.compile\ndef f(x):\n    return x * step\n\n\n"
        "def loop(x):\n    global step\n    for _ in range(10):\n        f(x)\n        step += 1\n",
        encoding="utf-8",
    )
    config = Config(select=("RCL101",), cache=False)
    [before] = lint_paths([str(sub / "train.py")], config).findings
    assert "`train.f`" in before.message
    (sub / "__init__.py").write_text("", encoding="utf-8")
    [after] = lint_paths([str(sub / "train.py")], config).findings
    assert "`pkg.train.f`" in after.message


def test_the_linters_code_is_hashed_once_while_it_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    # flake8 opens a run cache per project (the bundled fixtures hold fifty): each used to read
    # and hash every module of the linter again.
    from recompile_lint import cache

    first = cache._code_fingerprint()
    reads: list[str] = []
    read_bytes = Path.read_bytes

    def counting(self):
        reads.append(self.name)
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    cache._schema_fingerprint()
    schema, reads[:] = list(reads), []
    assert cache._code_fingerprint() == first
    assert reads == schema  # the facts schema's few files, not the whole linter
    assert len(schema) < 10


def test_a_cached_run_holds_only_for_the_same_stage_switches(tmp_path, monkeypatch):
    """``RECOMPILE_LINT_NO_EXECUTION=1`` changes what a run finds: a run cached without it is
    not its answer (the switches measure a stage, and a measure read from the cache is wrong)."""
    from recompile_lint.analysis.execution import DISABLE_ENV
    from recompile_lint.analysis.risks import NO_VARIATION_ENV
    from recompile_lint.engine import ANALYSIS_SWITCHES

    assert set(ANALYSIS_SWITCHES) == {DISABLE_ENV, NO_VARIATION_ENV}
    path = make_project(tmp_path)
    config = Config(cache_dir=str(tmp_path / "c"))
    first = lint_paths([str(path)], config)
    got = {}

    def counting(self, *args, **kwargs):
        got["key"] = real(self, *args, **kwargs)
        return got["key"]

    real = cache_module.RunCache.key
    monkeypatch.setattr(cache_module.RunCache, "key", counting)
    lint_paths([str(path)], config)
    plain = got["key"]
    for name in ANALYSIS_SWITCHES:
        monkeypatch.setenv(name, "1")
        lint_paths([str(path)], config)
        assert got["key"] != plain
        monkeypatch.delenv(name)
    assert as_dicts(lint_paths([str(path)], config)) == as_dicts(first)
