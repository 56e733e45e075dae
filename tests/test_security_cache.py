"""Linting an untrusted repository through its cache: nothing runs, nothing outside is touched,
no result is forged. Each test plants what an attacker could commit and checks all three."""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import os
import pickle
import shutil
import stat
import typing
from pathlib import Path

import pytest
from click.testing import CliRunner

from recompile_lint import cache as cache_module
from recompile_lint.analysis.callsites import CallSite
from recompile_lint.analysis.facts import ModuleFacts
from recompile_lint.cache import CACHE_DIR_NAME, Invalid, UnsupportedType, codec_for, dataclasses_reachable, decode, encode, seal, user_key
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths
from recompile_lint.frontends.cli import main
from recompile_lint.models import LintResult

from helpers import SEED_SOURCE

pytestmark = pytest.mark.skipif(not cache_module.SUPPORTED, reason="the cache needs descriptor-relative file operations")


@pytest.fixture(autouse=True)
def user_cache(tmp_path_factory, monkeypatch) -> Path:
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home / "recompile-lint"


class Exploit:
    """Unpickling this creates ``marker``: proof that a cache entry ran code."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def project(root: Path) -> Path:
    """A project whose one file has one RCL101 finding (line 8)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'victim'\n", encoding="utf-8")
    (root / ".git").mkdir(exist_ok=True)
    path = root / "train.py"
    path.write_text(SEED_SOURCE, encoding="utf-8")
    return path


def run(cwd: Path, *args: str) -> tuple[int, str, str]:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, list(args))
    finally:
        os.chdir(old)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Every entry under ``root`` (links not followed): its content digest or link target, mode."""
    out: dict[str, tuple[str, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            info = full.lstat()
            if stat.S_ISLNK(info.st_mode):
                what = "link:" + os.readlink(full)
            elif stat.S_ISDIR(info.st_mode):
                what = "dir"
            else:
                what = hashlib.sha256(full.read_bytes()).hexdigest()
            out[str(full.relative_to(root))] = (what, info.st_mode)
    return out


def outside(tmp_path: Path, count: int = 100) -> Path:
    """A directory of the victim's outside every project, with ``count`` files."""
    target = tmp_path / "victim-files"
    target.mkdir()
    for number in range(count):
        (target / f"file-{number:03d}.txt").write_text(f"precious {number}\n", encoding="utf-8")
    return target


def assert_finding_reported(code: int, out: str) -> None:
    assert code == 1, out
    assert "train.py:8:16: RCL101" in out


def cache_layout(tmp_path: Path, path: Path) -> Path:
    """A real cache of ``path``'s project made elsewhere: the names an attacker would plant."""
    elsewhere = tmp_path / "made-elsewhere"
    lint_paths([str(path)], Config(cache_dir=str(elsewhere)))
    assert list(elsewhere.glob("facts-*/*")) and list(elsewhere.glob("runs-*/*"))
    return elsewhere


# ---- code execution ---------------------------------------------------------------------------


@pytest.mark.parametrize("tag", ["ours", "forged", "absent"])
def test_a_committed_cache_of_pickles_runs_nothing_and_is_ignored(tmp_path, tag):
    """The attack: a repository that commits ``.recompile-lint-cache/`` with every entry a
    pickle that runs code, under the names a real cache uses. Linting it runs nothing and
    reports the real finding. A directory without this user's mark (forged or absent) is
    left exactly as it was; one with it (a pull into the user's own cache directory) gets
    its entries rewritten."""
    root = tmp_path / "repo"
    path = project(root)
    layout = cache_layout(tmp_path, path)
    planted = root / CACHE_DIR_NAME
    shutil.copytree(layout, planted)
    marker = tmp_path / "pwned"
    for entry in planted.rglob("*"):
        if entry.is_file() and entry.name != "CACHEDIR.TAG":
            entry.write_bytes(pickle.dumps(Exploit(str(marker)), protocol=4))
    if tag == "forged":
        (planted / "CACHEDIR.TAG").write_text(cache_module.CACHEDIR_TAG + "# recompile-lint owner " + "0" * 64 + "\n", encoding="ascii")
    elif tag == "absent":
        (planted / "CACHEDIR.TAG").unlink()
    before = snapshot(planted)
    for _ in range(2):
        code, out, _ = run(root, "train.py")
        assert_finding_reported(code, out)
    assert not marker.exists()
    if tag == "ours":
        assert all(pickle.dumps(Exploit(str(marker)), protocol=4) != e.read_bytes() for e in planted.glob("facts-*/*") if e.is_file())
    else:
        assert snapshot(planted) == before


def test_forged_entries_in_a_cache_of_this_user_are_misses(tmp_path):
    """Even inside a directory this user's cache made, an entry is believed only with this
    user's seal: entries written by a repository (a clean run result, facts without the
    compile site), sealed with any other key or for another entry, are recomputed."""
    root = tmp_path / "repo"
    path = project(root)
    code, out, _ = run(root, "train.py")
    assert_finding_reported(code, out)
    cache_dir = root / CACHE_DIR_NAME
    (run_entry,) = cache_dir.glob("runs-*/*")
    clean = {"findings": [], "errors": [], "files_checked": 1}
    forged_run = json.dumps([[], [], 1, 0, 0]).encode()
    for facts_entry in cache_dir.glob("facts-*/*"):
        if facts_entry.is_file():
            facts_entry.write_bytes(seal(b"attacker" * 4, "facts", facts_entry.name, b"[]"))
    for forged in (
        forged_run,
        seal(b"attacker" * 4, "run", run_entry.name, forged_run),
        seal(user_key() or b"", "run", "0" * 32, forged_run),  # this user's, for another entry
        json.dumps(clean).encode(),
    ):
        run_entry.write_bytes(forged)
        code, out, _ = run(root, "train.py")
        assert_finding_reported(code, out)


def test_another_users_cache_is_never_read(tmp_path, monkeypatch):
    """Entries of one user (key) are misses for another: the second user's result is
    computed, and the same."""
    root = tmp_path / "repo"
    path = project(root)
    first = lint_paths([str(path)], Config())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other-user"))
    cache_module._keys.clear()
    store_calls: list[str] = []
    from recompile_lint.analysis import index

    real = index.collect_facts
    monkeypatch.setattr(index, "collect_facts", lambda *a, **k: store_calls.append(a[1]) or real(*a, **k))
    assert lint_paths([str(path)], Config()) == first
    assert store_calls, "the other user's cache entries were trusted"


# ---- files outside the project ----------------------------------------------------------------


def test_a_symlinked_cache_directory_is_never_followed(tmp_path):
    root = tmp_path / "repo"
    project(root)
    target = outside(tmp_path)
    before = snapshot(target)
    (root / CACHE_DIR_NAME).symlink_to(target, target_is_directory=True)
    for _ in range(2):
        assert_finding_reported(*run(root, "train.py")[:2])
    assert snapshot(target) == before
    assert (root / CACHE_DIR_NAME).is_symlink()


def test_a_symlinked_cache_dir_option_is_not_used(tmp_path):
    """``--cache-dir`` may point anywhere, but not through a link at the cache itself."""
    root = tmp_path / "repo"
    project(root)
    target = outside(tmp_path)
    before = snapshot(target)
    link = tmp_path / "cache-link"
    link.symlink_to(target, target_is_directory=True)
    assert_finding_reported(*run(root, "--cache-dir", str(link), "train.py")[:2])
    assert snapshot(target) == before


@pytest.mark.parametrize("what", ["facts", "runs", "calls", "entry", "table", "tag", "gitignore"])
def test_links_planted_inside_the_cache_are_never_followed(tmp_path, what):
    """The cache's own directory, with one of its parts replaced by a link to the victim's
    files (as a ``git pull`` of a repository that tracks them would leave it)."""
    root = tmp_path / "repo"
    path = project(root)
    (root / "helper.py").write_text("def main():\n    for size in (1, 2, 3):\n        print(size)\n", encoding="utf-8")
    assert_finding_reported(*run(root, "train.py")[:2])
    cache_dir = root / CACHE_DIR_NAME
    target = outside(tmp_path)
    victim_file = target / "file-000.txt"
    (facts_dir,) = cache_dir.glob("facts-*")
    (runs_dir,) = cache_dir.glob("runs-*")
    if what == "facts":
        shutil.rmtree(facts_dir)
        facts_dir.symlink_to(target, target_is_directory=True)
        # And an old schema's directory that is a link: stale directories are removed.
        (cache_dir / "facts-0000000000000000").symlink_to(target, target_is_directory=True)
    elif what == "runs":
        shutil.rmtree(runs_dir)
        runs_dir.symlink_to(target, target_is_directory=True)
        (cache_dir / "runs-0000000000000000").symlink_to(target, target_is_directory=True)
    elif what == "calls":
        shutil.rmtree(facts_dir / "calls", ignore_errors=True)
        (facts_dir / "calls").symlink_to(target, target_is_directory=True)
    elif what == "entry":
        for entry in [*facts_dir.glob("*"), *runs_dir.glob("*")]:
            if entry.is_file():
                entry.unlink()
                entry.symlink_to(victim_file)
        stale = cache_dir / "facts-1111111111111111"
        stale.mkdir()
        (stale / ("ab" * 16)).symlink_to(victim_file)
    elif what == "table":
        (cache_dir / "file-digests.json").unlink()
        (cache_dir / "file-digests.json").symlink_to(victim_file)
    elif what == "tag":
        (cache_dir / "CACHEDIR.TAG").unlink()
        (cache_dir / "CACHEDIR.TAG").symlink_to(target / "created-by-the-linter")
    elif what == "gitignore":
        (cache_dir / ".gitignore").unlink()
        (cache_dir / ".gitignore").symlink_to(target / "created-by-the-linter")
    before = snapshot(target)
    (root / "train.py").write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # a new run
    for _ in range(2):
        assert_finding_reported(*run(root, "train.py")[:2])
    assert snapshot(target) == before


def test_a_dangling_cachedir_tag_link_creates_nothing(tmp_path):
    """An empty cache directory would be claimed, but one holding only a dangling link named
    ``CACHEDIR.TAG`` is not empty: it is not used, and the link's target is not created."""
    root = tmp_path / "repo"
    project(root)
    target = tmp_path / "victim"
    target.mkdir()
    (root / CACHE_DIR_NAME).mkdir()
    (root / CACHE_DIR_NAME / "CACHEDIR.TAG").symlink_to(target / "created")
    (root / CACHE_DIR_NAME / ".gitignore").symlink_to(target / "created-too")
    assert_finding_reported(*run(root, "train.py")[:2])
    assert list(target.iterdir()) == []


def test_an_empty_directory_of_the_user_is_claimed(tmp_path):
    """``mkdir .recompile-lint-cache`` (or a run stopped before marking it): it is used."""
    root = tmp_path / "repo"
    project(root)
    (root / CACHE_DIR_NAME).mkdir()
    assert_finding_reported(*run(root, "train.py")[:2])
    assert list((root / CACHE_DIR_NAME).glob("facts-*/*"))
    assert "recompile-lint owner" in (root / CACHE_DIR_NAME / "CACHEDIR.TAG").read_text(encoding="ascii")


def test_a_foreign_cache_directory_gives_way_to_the_users_own(tmp_path, user_cache):
    """The project's cache directory is not this user's: the project is cached in the user's
    cache directory instead (so a committed cache costs no speed), and its own is left alone."""
    root = tmp_path / "repo"
    path = project(root)
    planted = root / CACHE_DIR_NAME
    planted.mkdir()
    (planted / "README").write_text("committed\n", encoding="utf-8")
    before = snapshot(planted)
    first = lint_paths([str(path)], Config())
    assert snapshot(planted) == before
    assert list(user_cache.glob("projects/*/facts-*/*"))
    assert lint_paths([str(path)], Config()) == first


def test_pruning_deletes_only_what_the_cache_wrote(tmp_path):
    """Old run results beyond the number kept are removed, but a file planted among them
    (or a link) is not: only files with this user's seal are ever deleted."""
    root = tmp_path / "repo"
    path = project(root)
    config = Config()
    lint_paths([str(path)], config)
    (runs,) = (root / CACHE_DIR_NAME).glob("runs-*")
    target = outside(tmp_path, 3)
    planted = runs / ("0" * 32)
    planted.write_text("not the cache's\n", encoding="utf-8")
    link = runs / ("1" * 32)
    link.symlink_to(target / "file-000.txt")
    old = 1_000_000_000  # the oldest of all: first in line for pruning
    os.utime(planted, ns=(old, old))
    os.utime(link, ns=(old, old), follow_symlinks=False)
    before = snapshot(target)
    for number in range(cache_module.RUNS_KEPT + 3):
        lint_paths([str(path)], Config(ignore=("RCL1",) if number % 2 else (), max_depth=number + 1))
    assert planted.read_text(encoding="utf-8") == "not the cache's\n"
    assert link.is_symlink()
    assert snapshot(target) == before
    kept = [p for p in runs.iterdir() if p.name not in (planted.name, link.name)]
    assert len(kept) == cache_module.RUNS_KEPT


# ---- the key -----------------------------------------------------------------------------------


def test_the_key_is_private_and_outside_every_project(tmp_path, user_cache):
    root = tmp_path / "repo"
    path = project(root)
    lint_paths([str(path)], Config())
    key = user_cache / "key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(user_cache.stat().st_mode) == 0o700
    assert key.stat().st_size == 32
    assert not any(p.name == "key" for p in root.rglob("*"))


def test_a_key_others_could_read_is_replaced(tmp_path, user_cache):
    root = tmp_path / "repo"
    path = project(root)
    lint_paths([str(path)], Config())
    old = (user_cache / "key").read_bytes()
    cache_module._keys.clear()
    user_cache.chmod(0o755)
    assert user_key() not in (None, old)
    assert stat.S_IMODE(user_cache.stat().st_mode) == 0o700
    cache_module._keys.clear()
    (user_cache / "key").chmod(0o644)
    assert user_key() is not None
    assert stat.S_IMODE((user_cache / "key").stat().st_mode) == 0o600


def test_a_linked_key_or_user_directory_is_not_used(tmp_path, monkeypatch):
    """A user cache directory (or key) that is a link: no key, so nothing is cached (and the
    lint still works)."""
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "xdg").mkdir()
    (tmp_path / "xdg" / "recompile-lint").symlink_to(real, target_is_directory=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    cache_module._keys.clear()
    assert user_key() is None
    assert list(real.iterdir()) == []
    root = tmp_path / "repo"
    path = project(root)
    assert [f.code for f in lint_paths([str(path)], Config()).findings] == ["RCL101"]


# ---- the codec ---------------------------------------------------------------------------------

STORED = [ModuleFacts, tuple[CallSite, ...], LintResult]


def reachable() -> list[type]:
    found: list[type] = []
    for kind in STORED:
        for cls in dataclasses_reachable(kind):
            if cls not in found:
                found.append(cls)
    return found


def sample(kind: typing.Any, seed: int, empty: bool = False) -> typing.Any:
    """A value of ``kind``, varied by ``seed``; ``empty``: containers left empty."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is str:
        # With and without the separator the codec joins strings with, a non-UTF-8 name,
        # an empty string.
        return ["name", "two words", "caf\udce9.py", "", "x.y"][seed % 5] + ("" if seed % 5 == 3 else str(seed))
    if kind is bool:
        return seed % 2 == 0
    if kind is int:
        return seed * 7 - 3
    if kind is float:
        return seed + 0.25
    if kind is type(None):
        return None
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        members = list(kind)
        return members[seed % len(members)]
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        values = {
            item.name: sample(hints[item.name], seed + number, empty)
            for number, item in enumerate(dataclasses.fields(kind))
            if not item.name.startswith("_")
        }
        return kind(**values)
    if origin in (typing.Union, type(int | None)):
        choices = [arg for arg in args if arg is not type(None)]
        if type(None) in args and seed % 3 == 0:
            return None
        return sample(choices[seed % len(choices)], seed, empty)
    if origin is tuple and args[1:] == (Ellipsis,):
        return () if empty else tuple(sample(args[0], seed + i, empty) for i in range(3))
    if origin is tuple:
        return tuple(sample(arg, seed + i, empty) for i, arg in enumerate(args))
    if origin is frozenset:
        return frozenset() if empty else frozenset(sample(args[0], seed + i, empty) for i in range(3))
    if origin is list:
        return [] if empty else [sample(args[0], seed + i, empty) for i in range(2)]
    if origin is dict:
        return {} if empty else {sample(args[0], seed, empty): sample(args[1], seed + 1, empty)}
    raise AssertionError(f"no sample for {kind!r}")


def test_every_stored_dataclass_has_a_codec():
    """Facts, call sites and run results, and everything they hold: a field of a type the
    codec cannot store fails here (by name), not at run time as silent misses."""
    classes = reachable()
    assert {"ModuleFacts", "FunctionFacts", "Span", "CallSite", "Argument", "LintResult", "Finding", "Guard", "Location", "Subject", "FileError"} <= {
        cls.__name__ for cls in classes
    }
    for cls in classes:
        codec_for(cls)


@pytest.mark.parametrize("empty", [False, True], ids=["filled", "empty"])
def test_every_stored_dataclass_round_trips(empty):
    for cls in reachable():
        for seed in range(6):
            value = sample(cls, seed, empty)
            data = json.loads(json.dumps(encode(value, cls), ensure_ascii=True))
            back = decode(data, cls)
            assert back == value, cls.__name__
            assert type(back) is cls
            for item in dataclasses.fields(cls):
                if not item.name.startswith("_"):
                    assert type(getattr(back, item.name)) is type(getattr(value, item.name)), f"{cls.__name__}.{item.name}"


def test_derived_fields_are_left_out_and_rebuilt():
    facts = sample(ModuleFacts, 1)
    facts._lookup["functions"] = {"x": None}
    back = decode(encode(facts, ModuleFacts), ModuleFacts)
    assert back._lookup == {} and back == facts


def leaves(data: typing.Any, at: tuple = ()) -> typing.Iterator[tuple[tuple, typing.Any]]:
    yield at, data
    if isinstance(data, list):
        for number, item in enumerate(data):
            yield from leaves(item, (*at, number))


def replaced(data: typing.Any, at: tuple, value: typing.Any) -> typing.Any:
    if not at:
        return value
    copy = list(data)
    copy[at[0]] = replaced(copy[at[0]], at[1:], value)
    return copy


def wrong_for(value: typing.Any) -> list[typing.Any]:
    """Values of another JSON type than ``value``'s (an object never decodes)."""
    wrong: list[typing.Any] = [{"x": 1}]
    if type(value) is str:
        wrong.append(7)
    elif type(value) is int:
        wrong += ["7", 7.5, True]
    elif type(value) is bool:
        wrong += [1, "true"]
    elif type(value) is float:
        wrong.append("1.5")
    return wrong


def test_every_field_of_the_wrong_type_is_rejected():
    """Each value anywhere in an encoded entry, replaced by one of another type: the entry no
    longer decodes (so nothing of the wrong type reaches the analysis)."""
    checked = 0
    for cls in reachable():
        data = json.loads(json.dumps(encode(sample(cls, 2), cls)))
        for at, value in leaves(data):
            if value is None:
                continue  # an optional field: every other type of it is another test's value
            for wrong in wrong_for(value):
                with pytest.raises(Invalid):
                    decode(replaced(data, at, wrong), cls)
                checked += 1
    assert checked > 500


@dataclasses.dataclass(frozen=True)
class Later:
    """A facts class of the future with a field the codec cannot store."""

    name: str
    anything: object = None


@dataclasses.dataclass(frozen=True)
class Holder:
    items: tuple[Later, ...] = ()


def test_a_field_the_codec_cannot_store_is_named():
    """The check above can fail: a field of a type with no codec is an error naming it."""
    with pytest.raises(UnsupportedType, match="Later.anything"):
        codec_for(Later)
    with pytest.raises(UnsupportedType, match="Holder.items"):
        codec_for(Holder)


class Kind(str, enum.Enum):
    A = "a"
    B = "b"


@dataclasses.dataclass(frozen=True)
class Value:
    kind: Kind
    target: str
    rank: int | None = None
    weight: float = 1.0
    candidates: frozenset[str] = frozenset()
    chain: tuple[tuple[str, int], ...] = ()


@dataclasses.dataclass(frozen=True)
class Flow:
    values: tuple[Value, ...]
    by_name: dict[str, Value]
    either: Value | str | None = None


def test_new_fields_and_dataclasses_need_no_codec_change():
    """A dataclass added to the facts later, with the kinds of fields facts use, is stored
    as it is."""
    flow = Flow(
        (Value(Kind.A, "x", 2, 0.5, frozenset({"a b", "c"}), (("s", 1),)), Value(Kind.B, "")),
        {"k": Value(Kind.B, "y")},
        "text",
    )
    assert decode(json.loads(json.dumps(encode(flow, Flow))), Flow) == flow
    assert decode(json.loads(json.dumps(encode(Flow((), {}, Value(Kind.A, "z")), Flow))), Flow).either == Value(Kind.A, "z")
