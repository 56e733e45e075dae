"""The on-disk cache of per-file facts, keyed by content hash, tool version and facts schema.

A second run over an unchanged tree reads each file's facts back instead of parsing it. The
cache is an optimisation only: a cache that cannot be created, read or written (read-only
checkout, full disk, corrupt or foreign entries) silently behaves as no cache. Entries are
read with an unpickler that only accepts the facts classes, so a cache directory planted in
an untrusted checkout cannot run code.

Layout: ``<root>/.recompile-lint-cache/`` holds a ``.gitignore`` (``*``: it is never
committed) and one directory per tool version and facts schema, sharded by the first two
hex digits of the entry name. Deleting the directory is always safe.
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
from typing import Any

from recompile_lint import __version__
from recompile_lint.facts import ModuleFacts

CACHE_DIR_NAME = ".recompile-lint-cache"
GITIGNORE_TEXT = "# Created by recompile-lint; safe to delete.\n*\n"
CACHEDIR_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This directory holds recompile-lint's cache; backup tools may skip it.\n"
_FACTS_MODULE = "recompile_lint.facts"
_ALLOWED_BUILTINS = frozenset({"frozenset", "set", "dict", "list", "tuple", "str", "int", "float", "bool", "bytes"})


def _schema_fingerprint() -> str:
    """A digest of the code that decides what facts hold, so editing it never reads stale facts.

    The version string alone does not change between development commits; the source of
    ``facts.py`` (and the index's module naming) does.
    """
    digest = hashlib.blake2b(digest_size=8)
    digest.update(__version__.encode())
    digest.update(f"{sys.implementation.name}-{sys.version_info[0]}.{sys.version_info[1]}".encode())
    here = Path(__file__).resolve().parent
    for name in ("facts.py", "index.py"):
        try:
            digest.update((here / name).read_bytes())
        except OSError:
            digest.update(name.encode())
    return digest.hexdigest()


class _FactsUnpickler(pickle.Unpickler):
    """Builds only facts dataclasses and plain containers; anything else is a corrupt entry."""

    def find_class(self, module: str, name: str) -> Any:
        if module == _FACTS_MODULE and not name.startswith("_"):
            return super().find_class(module, name)
        if module == "builtins" and name in _ALLOWED_BUILTINS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a facts cache entry")


def load_entry(data: bytes) -> ModuleFacts | None:
    """The facts pickled in ``data``, or None when it is not a well-formed entry."""
    try:
        facts = _FactsUnpickler(io.BytesIO(data)).load()
    except Exception:  # noqa: BLE001 - any damage to an entry means "not cached"
        return None
    return facts if isinstance(facts, ModuleFacts) else None


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
        try:
            data = entry.read_bytes()
        except OSError:
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
        if not self._writable:
            return
        entry = self._entry_path(key, path)
        if entry is None:
            return
        try:
            shard = entry.parent
            if shard.name not in self._made_shards:
                shard.mkdir(parents=True, exist_ok=True)
                self._made_shards.add(shard.name)
            # Write then rename: a concurrent run (pre-commit runs hooks in parallel) never
            # reads half an entry.
            fd, tmp = tempfile.mkstemp(dir=shard, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(dump_entry(facts))
                os.replace(tmp, entry)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except (OSError, pickle.PicklingError, TypeError, AttributeError, RecursionError):
            self._writable = False

    # ---- layout ---------------------------------------------------------------------------

    @property
    def directory(self) -> Path | None:
        """The cache directory in use (None until a file's root decided it, or when disabled)."""
        return None if self._disabled else self._directory

    def _entry_path(self, key: str, path: str) -> Path | None:
        entries = self._entries or self._open(path)
        if entries is None:
            return None
        module, is_package = self._module_of(path)
        # The same bytes at another path, or under another package layout, are other facts.
        name = hashlib.blake2b(f"{key}\0{os.path.abspath(path)}\0{module}\0{is_package}".encode(), digest_size=16).hexdigest()
        return entries / name[:2] / name

    def _module_of(self, path: str) -> tuple[str, bool]:
        found = self._modules.get(path)
        if found is None:
            from recompile_lint.index import module_name_for

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
