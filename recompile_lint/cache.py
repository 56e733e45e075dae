"""The on-disk cache: per-file facts, and the results of whole runs.

Facts are keyed by content hash, tool version and facts schema: a run reads each unchanged
file's facts back instead of parsing it. A run result is keyed by the linter's code, the
settings, the paths named and every project file's content digest: a second run over an
unchanged tree returns it without any analysis (``RunCache``). The
cache is an optimisation only: a cache that cannot be created, read or written (read-only
checkout, full disk, corrupt or foreign entries) silently behaves as no cache. Entries are
read with an unpickler that only accepts the facts classes, so a cache directory planted in
an untrusted checkout cannot run code.

Layout: ``<root>/.recompile-lint-cache/`` holds a ``.gitignore`` (``*``: it is never
committed), one ``facts-*`` directory per tool version and facts schema, sharded by the first
two hex digits of the entry name (call sites collected per file in its ``calls/``), one ``runs-*`` directory per version of the linter's code
with the last results, and ``file-digests.json`` (content digests by size, mtime and inode).
Deleting the directory is always safe.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from recompile_lint import __version__

if TYPE_CHECKING:
    from recompile_lint.analysis.facts import ModuleFacts

CACHE_DIR_NAME = ".recompile-lint-cache"
GITIGNORE_TEXT = "# Created by recompile-lint; safe to delete.\n*\n"
CACHEDIR_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This directory holds recompile-lint's cache; backup tools may skip it.\n"
_FACTS_MODULE = "recompile_lint.analysis.facts"
_ALLOWED_BUILTINS = frozenset({"frozenset", "set", "dict", "list", "tuple", "str", "int", "float", "bool", "bytes"})

# Entries already read, by entry path: kept only by a resident server (``server``), which fills
# it between commands. An entry's name is a digest of the content, path and module it holds
# facts of, under a directory named by the facts schema, so what it held once it always holds.
resident: dict[str, Any] | None = None
# The facts directories this process has opened (what a resident server reads next).
opened_directories: set[str] = set()


def _schema_fingerprint() -> str:
    """A digest of the code that decides what facts hold, so editing it never reads stale facts.

    The version string alone does not change between development commits; the source of
    ``facts.py`` (and the index's module naming, and the call-site collector) does.
    """
    digest = hashlib.blake2b(digest_size=8)
    digest.update(__version__.encode())
    digest.update(f"{sys.implementation.name}-{sys.version_info[0]}.{sys.version_info[1]}".encode())
    here = Path(__file__).resolve().parent / "analysis"
    for name in ("facts.py", "parsing.py", "index.py", "callsites.py"):
        try:
            digest.update((here / name).read_bytes())
        except OSError:
            digest.update(name.encode())
    return digest.hexdigest()


def content_digest(data: bytes) -> str:
    """The digest that names a file's content (the run cache's table, a server's memory)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class _FactsUnpickler(pickle.Unpickler):
    """Builds only facts dataclasses and plain containers; anything else is a corrupt entry."""

    def find_class(self, module: str, name: str) -> Any:
        if module == _FACTS_MODULE and not name.startswith("_"):
            return super().find_class(module, name)
        if module == "builtins" and name in _ALLOWED_BUILTINS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a facts cache entry")


class _CallSitesUnpickler(pickle.Unpickler):
    """Builds only call-site records (and the facts ``Span`` they hold)."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "recompile_lint.analysis.callsites" and name in ("CallSite", "Argument", "Loop"):
            return super().find_class(module, name)
        if module == _FACTS_MODULE and name == "Span":
            return super().find_class(module, name)
        if module == "builtins" and name in _ALLOWED_BUILTINS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a call-site cache entry")


def load_entry(data: bytes) -> ModuleFacts | None:
    """The facts pickled in ``data``, or None when it is not a well-formed entry."""
    from recompile_lint.analysis.facts import ModuleFacts

    return _load(data, _FactsUnpickler, ModuleFacts)


def load_call_sites(data: bytes) -> tuple | None:
    """The call sites pickled in ``data``, or None when it is not a well-formed entry."""
    return _load(data, _CallSitesUnpickler, tuple)


def _load(data: bytes, unpickler: type[pickle.Unpickler], kind: type) -> Any:
    try:
        value = unpickler(io.BytesIO(data)).load()
    except Exception:  # noqa: BLE001 - any damage to an entry means "not cached"
        return None
    return value if isinstance(value, kind) else None


def dump_entry(facts: ModuleFacts) -> bytes:
    """The bytes stored for ``facts`` (its lazily built lookup tables are left out)."""
    if facts._lookup:
        # Lookup tables are rebuilt on demand; storing them would only make entries larger.
        facts = _without_lookup(facts)
    return pickle.dumps(facts, protocol=pickle.HIGHEST_PROTOCOL)


def _without_lookup(facts: ModuleFacts) -> ModuleFacts:
    from dataclasses import replace

    return replace(facts, _lookup={})


class FactsCache:
    """Per-file facts on disk, with the ``get``/``put`` interface ``FactsStore`` calls.

    ``directory`` is the cache directory itself (``.../.recompile-lint-cache``); when it is
    None it is chosen on first use as ``.recompile-lint-cache`` in the project root above
    the first file asked for.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None):
        self._directory: Path | None = Path(directory) if directory is not None else None
        self._entries: Path | None = None
        self._entries_text: str | None = None  # the same, absolute, as text
        self._disabled = False
        self._writable = True
        self._made_shards: set[str] = set()
        self._modules: dict[str, tuple[str, bool]] = {}
        self.hits = 0
        self.misses = 0

    @classmethod
    def for_config(cls, config: Any, root: str | os.PathLike[str] | None = None) -> "FactsCache | None":
        """The cache a config asks for: ``cache_dir``, else beside the config's pyproject,
        else in ``root`` (the engine's project root), else found from the first file linted.
        None when caching is off."""
        if not getattr(config, "cache", True):
            return None
        if getattr(config, "cache_dir", None):
            return cls(config.cache_dir)
        base = getattr(config, "source", None) or root
        return cls(Path(base) / CACHE_DIR_NAME if base else None)

    # ---- the FactsStore interface ---------------------------------------------------------

    def get(self, key: str, path: str) -> ModuleFacts | None:
        """The cached facts of ``path`` whose content hashes to ``key``, or None."""
        entry = self._entry_path(key, path)
        if entry is None:
            return None
        if resident is not None:
            kept = resident.get(entry)
            if kept is not None and getattr(kept, "path", None) == path:
                self.hits += 1
                return kept
        data = _read(entry)
        if data is None:
            self.misses += 1
            return None
        facts = load_entry(data)
        if facts is None or facts.path != path:
            self.misses += 1
            return None
        self.hits += 1
        return facts

    def put(self, key: str, path: str, facts: ModuleFacts) -> None:
        """Store ``facts``; failures turn writing off for the rest of the run, silently."""
        self._store(key, path, lambda: dump_entry(facts))

    def get_call_sites(self, key: str, path: str) -> tuple | None:
        """Call sites collected in ``path`` (content ``key``) for a set of callee names."""
        entry = self._entry_path(key, path, "calls")
        if entry is None:
            return None
        if resident is not None:
            kept = resident.get(entry)
            if isinstance(kept, tuple):
                return kept
        data = _read(entry)
        sites = load_call_sites(data) if data is not None else None
        if sites is None or any(getattr(site, "path", None) != path for site in sites):
            return None
        return sites

    def put_call_sites(self, key: str, path: str, sites: tuple) -> None:
        self._store(key, path, lambda: pickle.dumps(sites, protocol=pickle.HIGHEST_PROTOCOL), "calls")

    def _store(self, key: str, path: str, data, namespace: str = "") -> None:
        if not self._writable:
            return
        entry = self._entry_path(key, path, namespace)
        if entry is None:
            return
        try:
            shard = os.path.dirname(entry)
            if shard not in self._made_shards:
                os.makedirs(shard, exist_ok=True)
                self._made_shards.add(shard)
            # Write then rename: a concurrent run (pre-commit runs hooks in parallel) never
            # reads half an entry.
            fd, tmp = tempfile.mkstemp(dir=shard, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data())
                os.replace(tmp, entry)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except (OSError, pickle.PicklingError, TypeError, AttributeError, RecursionError):
            self._writable = False

    def run_cache(self, first_path: str) -> "RunCache | None":
        """The whole-run results cache kept in the same directory (None when it is unusable)."""
        if self._open(first_path) is None or self._directory is None:
            return None
        return RunCache(self._directory)

    # ---- layout ---------------------------------------------------------------------------

    @property
    def directory(self) -> Path | None:
        """The cache directory in use (None until a file's root decided it, or when disabled)."""
        return None if self._disabled else self._directory

    def _entry_path(self, key: str, path: str, namespace: str = "") -> str | None:
        """The absolute path of the entry for ``path`` with content ``key`` (None: no cache)."""
        entries = self._entries_text or (self._open(path) and self._entries_text)
        if entries is None:
            return None
        module, is_package = self._module_of(path)
        # The same bytes at another path, or under another package layout, are other facts.
        name = hashlib.blake2b(f"{key}\0{os.path.abspath(path)}\0{module}\0{is_package}".encode(), digest_size=16).hexdigest()
        return f"{entries}/{namespace}/{name[:2]}/{name}" if namespace else f"{entries}/{name[:2]}/{name}"

    def _module_of(self, path: str) -> tuple[str, bool]:
        found = self._modules.get(path)
        if found is None:
            from recompile_lint.analysis.parsing import module_name_for

            module, is_package, _ = module_name_for(path)
            found = (module, is_package)
            self._modules[path] = found
        return found

    def _open(self, first_path: str) -> Path | None:
        if self._disabled:
            return None
        try:
            if self._directory is None:
                from recompile_lint.discovery import find_project_root

                self._directory = Path(find_project_root([first_path])) / CACHE_DIR_NAME
            entries = self._directory / f"facts-{_schema_fingerprint()}"
            if not entries.is_dir():
                self._create(self._directory)
                entries.mkdir(exist_ok=True)
                # Entries of another version or facts schema can never be read again.
                for stale in self._directory.glob("facts-*"):
                    if stale != entries:
                        shutil.rmtree(stale, ignore_errors=True)
            self._entries = entries
            self._entries_text = os.path.abspath(entries)
            opened_directories.add(self._entries_text)
            return entries
        except (OSError, ValueError, RuntimeError):
            # Unwritable or unusable location: run without a cache.
            self._disabled = True
            return None

    @staticmethod
    def _create(directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in ((".gitignore", GITIGNORE_TEXT), ("CACHEDIR.TAG", CACHEDIR_TAG)):
            marker = directory / name
            if not marker.exists():
                marker.write_text(text, encoding="utf-8")


def resident_entries(entries: str, known: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Every well-formed entry under a facts directory not in ``known``, read: (entry path,
    facts or call sites)."""
    for shard in _subdirectories(entries):
        if os.path.basename(shard) == "calls":
            for calls in _subdirectories(shard):
                for name in _files(calls):
                    data = None if name in known else _read(name)
                    sites = load_call_sites(data) if data is not None else None
                    if sites is not None:
                        yield name, sites
            continue
        for name in _files(shard):
            data = None if name in known else _read(name)
            facts = load_entry(data) if data is not None else None
            if facts is not None:
                yield name, facts


def _subdirectories(directory: str) -> list[str]:
    try:
        return sorted(entry.path for entry in os.scandir(directory) if entry.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _files(directory: str) -> list[str]:
    try:
        return [entry.path for entry in os.scandir(directory) if not entry.name.startswith(".") and entry.is_file(follow_symlinks=False)]
    except OSError:
        return []


def _read(name: str) -> bytes | None:
    try:
        with open(name, "rb") as handle:
            return handle.read()
    except OSError:
        return None


# ---- whole-run results ----------------------------------------------------------------------

_MODELS_MODULE = "recompile_lint.models"
_RUN_CLASSES = frozenset({"LintResult", "Finding", "FileError", "Subject", "Severity", "Boundedness", "Guard", "Location"})
RUNS_KEPT = 32  # results of this many distinct runs (argument lists, configs) are kept
FILE_TABLE = "file-digests.json"
# A file modified this close to when its digest was recorded may change again within the same
# mtime tick without its size or mtime changing: such an entry is hashed again, never trusted.
RACY_NS = 2_000_000_000


def _code_fingerprint() -> str:
    """A digest of every module of the linter (rules included): results of other code never count."""
    digest = hashlib.blake2b(_schema_fingerprint().encode(), digest_size=16)
    here = Path(__file__).resolve().parent
    for path in sorted(here.rglob("*.py")):
        if "verify" in path.relative_to(here).parts:
            continue
        try:
            digest.update(str(path.relative_to(here)).encode())
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"?")
    return digest.hexdigest()


class _RunUnpickler(pickle.Unpickler):
    """Builds only result value types and plain containers."""

    def find_class(self, module: str, name: str) -> Any:
        if module == _MODELS_MODULE and name in _RUN_CLASSES:
            return super().find_class(module, name)
        if module == "builtins" and name in _ALLOWED_BUILTINS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a run cache entry")


class RunCache:
    """The result of a whole run, keyed by everything it depends on.

    The key covers the linter's own code, the settings, the files named and the content digest
    of every file of the project, so a second run over an unchanged tree returns the first
    run's result without reading any facts. Content digests are kept in a table by (size,
    mtime, inode), as ``git status`` does, and recomputed for any file whose stat changed or
    was recorded too soon after its last modification to be trusted. Like the facts cache it
    is an optimisation only: any failure means "not cached".
    """

    def __init__(self, directory: Path):
        self.directory = directory
        self.runs = directory / f"runs-{_code_fingerprint()}"
        self._table: dict[str, list] | None = None
        self._table_changed = False
        self.digests: dict[str, str] = {}  # path -> content digest, of the files ``key`` read

    # ---- file digests ---------------------------------------------------------------------

    def _load_table(self) -> dict[str, list]:
        if self._table is None:
            try:
                import json

                data = json.loads((self.directory / FILE_TABLE).read_text(encoding="utf-8"))
                self._table = data if isinstance(data, dict) else {}
            except (OSError, ValueError):
                self._table = {}
        return self._table

    def digest(self, path: str) -> str | None:
        """The content digest of ``path`` (None when it cannot be read)."""
        table = self._load_table()
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
        entry = table.get(path)
        if isinstance(entry, list) and len(entry) == 5 and entry[:3] == stamp and entry[4] - entry[1] > RACY_NS:
            return str(entry[3])
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return None
        value = content_digest(data)
        import time

        table[path] = [*stamp, value, time.time_ns()]
        self._table_changed = True
        return value

    def save_table(self, keep: Iterable[str]) -> None:
        """Write the digest table back (only the project's files), if anything changed."""
        if not self._table_changed or self._table is None:
            return
        import json

        keep = set(keep)
        table = {path: entry for path, entry in self._table.items() if path in keep}
        self._write(self.directory / FILE_TABLE, json.dumps(table, separators=(",", ":")).encode())

    def buffer_digests(self, files: Sequence[str], buffers: Mapping[str, bytes]) -> None:
        """``digests`` of a run over ``files`` in which ``buffers`` (path -> unsaved text)
        stand in for some of them; files that cannot be read get none."""
        for path in files:
            value = content_digest(buffers[path]) if path in buffers else self.digest(path)
            if value is not None:
                self.digests[path] = value

    # ---- results --------------------------------------------------------------------------

    def key(self, settings: str, given: Sequence[tuple[str, str]], files: Sequence[str]) -> str | None:
        """The key of a run, or None when a file cannot be read (such runs are not cached)."""
        digest = hashlib.blake2b(settings.encode("utf-8", "surrogatepass"), digest_size=16)
        for absolute, display in given:
            digest.update(f"given\0{absolute}\0{display}\0".encode("utf-8", "surrogatepass"))
        for path in files:
            value = self.digest(path)
            if value is None:
                return None
            self.digests[path] = value
            digest.update(f"{path}\0{value}\0".encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    def get(self, key: str) -> Any:
        try:
            data = (self.runs / key).read_bytes()
            result = _RunUnpickler(io.BytesIO(data)).load()
        except Exception:  # noqa: BLE001 - a missing or damaged entry means "not cached"
            return None
        from recompile_lint.models import LintResult

        return result if isinstance(result, LintResult) else None

    def put(self, key: str, result: Any) -> None:
        try:
            if not self.runs.is_dir():
                self.runs.mkdir(parents=True, exist_ok=True)
                for stale in self.directory.glob("runs-*"):
                    if stale != self.runs:
                        shutil.rmtree(stale, ignore_errors=True)
            self._write(self.runs / key, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
            entries = sorted(self.runs.iterdir(), key=lambda p: p.stat().st_mtime_ns)
            for old in entries[:-RUNS_KEPT]:
                old.unlink()
        except (OSError, pickle.PicklingError, TypeError, AttributeError, RecursionError):
            pass

    @staticmethod
    def _write(target: Path, data: bytes) -> None:
        """Write then rename, so a concurrent run never reads half a file; failures are silent."""
        try:
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, target)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
