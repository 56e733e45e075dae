"""An editor's lint session: what the language server keeps between edits.

``recompile-lint lsp`` answers every edit with the diagnostics of each open document, as
``recompile-lint FILE`` would report them with the open documents' unsaved text standing in
for their files. A fresh run of the whole pipeline costs about a second on a few hundred
files, most of it spent on work an edit cannot change. An ``EditSession`` keeps, between
edits:

* the text of every project file, by its size and modification time (an unchanged file is
  not read or decoded again; one modified just before it was read is read again and
  compared), and of every open document;
* the facts of every file, by content (``MemoryFacts``, in front of the on-disk cache): an
  edit parses the edited file again and nothing else;
* the results of the text tests that choose which files to parse, by content digest
  (``textscan.resident_tests``), the ``ast`` trees of whole files, by their text
  (``parsing.resident_trees``), and the libcst trees of the function bodies the rules walked
  (``context.resident_snippets``);
* each document's last result.

An edit then runs the analysis over this state with every open document as a named file,
and asks the guard model's costly stage (guards, evidence by execution) only about the
regions whose findings can be in an open document (``relevant_regions``). Each document's
findings are then collected as ``lint_paths([document], relocate=True)`` collects them: a
test compares the two over a sequence of edits.

Everything kept is named by content (a digest, a text): nothing kept goes stale.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from functools import partial
from typing import Any, Mapping, Sequence

from recompile_lint.config import Config, ConfigError, load_config
from recompile_lint.discovery import Discovered, discover, find_project_root
from recompile_lint.models import LintResult
from recompile_lint.source import SourceError, decode_source, read_bytes

# Facts, call sites, text tests and snippets kept at most (beyond, the table starts again).
KEPT_FACTS = 50_000
KEPT_TESTS = 500_000
KEPT_SNIPPETS = 20_000
# Characters of file text whose ``ast`` trees are kept (a tree takes some ten times its text).
KEPT_TREE_TEXT = 20_000_000
# A file read less than this after its modification time is read again next time.
RACY_NS = 2_000_000_000


class MemoryFacts:
    """Facts and call sites by content key, kept in memory, in front of the on-disk facts
    cache (``disk``, or None). Facts are frozen values: a run never changes what it is given."""

    def __init__(self, disk: Any = None) -> None:
        self.disk = disk
        self.facts: dict[str, Any] = {}
        self.calls: dict[str, Any] = {}

    def _get(self, table: dict[str, Any], key: str, path: str, method: str) -> Any:
        found = table.get(key)
        if found is None and self.disk is not None:
            found = getattr(self.disk, method)(key, path)
            if found is not None:
                self._keep(table, key, found)
        return found

    def _keep(self, table: dict[str, Any], key: str, value: Any) -> None:
        if len(table) >= KEPT_FACTS:
            table.clear()
        table[key] = value

    def get(self, key: str, path: str) -> Any:
        return self._get(self.facts, key, path, "get")

    def put(self, key: str, path: str, facts: Any) -> None:
        self._keep(self.facts, key, facts)
        if self.disk is not None:
            self.disk.put(key, path, facts)

    def get_call_sites(self, key: str, path: str) -> Any:
        return self._get(self.calls, key, path, "get_call_sites")

    def put_call_sites(self, key: str, path: str, sites: Any) -> None:
        self._keep(self.calls, key, sites)
        if self.disk is not None:
            self.disk.put_call_sites(key, path, sites)


@dataclass(frozen=True)
class Kept:
    """A file's bytes and decoded text, as last read (``stamp``: its mtime and size)."""

    stamp: tuple[int, int]
    data: bytes
    text: str
    digest: str
    read_ns: int = 0  # when it was read (wall clock, ns)


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def relevant_regions(index, regions: list, guards: list, documents: frozenset[str]) -> list:
    """The regions whose guard-model findings can have a location in ``documents``: those
    compiled, entered or reached there, run from there (``EntryFinder``: the files that compile
    them, hold their code, or import their module and drive it), and those whose guarded
    values (a global, an attribute, a member, the environment) or whose modules a document
    names. A finding's locations are the read in reached code, the compile site, the call in a
    driver and the writes of the guarded value, so a region none of these can place in an open
    document has no finding there. Chosen by name, it may choose too many, never too few."""
    from recompile_lint.analysis.execution.entries import EntryFinder
    from recompile_lint.analysis.textscan import WORD

    words: set[str] = set()
    for path in documents:
        words.update(WORD.findall(index.text(path) or ""))

    def named(storage) -> bool:
        """Whether an open document can change the value ``storage`` holds: a module's value
        in that module or in a file that names the module and the value; an attribute, the
        environment, an argument wherever their names are written (an argument's call sites
        name the region's module, checked below)."""
        if storage.kind in ("global", "member"):
            return storage.path in documents or (index.module_last_name(storage.path) in words and storage.name in words) if storage.path else storage.name in words
        if storage.kind == "environ":
            return bool(words & {"environ", "getenv", "putenv", "unsetenv"})
        if storage.kind == "parameter":
            return False  # passed by the region's callers: see ``calls`` below
        return bool(words.intersection(WORD.findall(" ".join((storage.name, *storage.members)))))

    def calls(region) -> bool:
        """Whether an open document can call the region: it names what is compiled or what
        the compiled object is bound to (a caller elsewhere names it, or imports its module)."""
        site = region.site
        names = {region.entry.qualname.split(".", 1)[0], region.model_class.rsplit(".", 1)[-1]}
        names.update(WORD.findall(" ".join((site.target, site.assigned_to, site.decorated, site.class_ref, region.container))))
        return bool(words & names)

    changed: set[int] = {id(guard.region) for guard in guards if named(guard.storage) or (guard.storage.kind == "parameter" and calls(guard.region))}
    entries = EntryFinder(index, regions)
    out = []
    for region in regions:
        files = {region.site_path, region.entry.path, *(ref.path for ref, _, _ in region.reached)}
        if id(region) in changed or files & documents or documents.intersection(entries.files_for(region)):
            out.append(region)
        elif words.intersection(index.module_last_name(path) for path in files):
            out.append(region)  # a document names a module of the region: it may call it
    return out


class EditSession:
    """The state an editor's lint runs share (see the module docstring)."""

    def __init__(self) -> None:
        self._files: dict[str, Kept] = {}  # files on disk
        self._buffers: dict[str, Kept] = {}  # open documents
        self._facts: dict[tuple[str, Config], MemoryFacts] = {}
        self.tests: dict[tuple[str, str, str], bool] = {}
        self.snippets: dict[str, Any] = {}
        self.trees: dict[str, tuple[str, Any]] = {}  # ``parsing.resident_trees``
        self._new_snippets: list[str] = []
        self.runs = 0  # analysis runs made (for tests and measures)
        self.regions_asked: list[tuple[int, int]] = []  # (regions asked, regions found) per run

    # ---- reading -------------------------------------------------------------------------

    def _disk(self, path: str, limit: int) -> Kept | None:
        try:
            stat = os.stat(path)
        except OSError:
            return None
        stamp = (stat.st_mtime_ns, stat.st_size)
        kept = self._files.get(path)
        # A file changed within ``RACY_NS`` of when it was read may change again with the same
        # stamp (as git treats racy-clean files): it is read again and compared.
        if kept is not None and kept.stamp == stamp and kept.read_ns - stamp[0] > RACY_NS:
            return kept
        read_ns = time.time_ns()
        try:
            data = read_bytes(path, limit)
            if kept is not None and kept.data == data:
                kept = self._files[path] = Kept(stamp, data, kept.text, kept.digest, read_ns)  # the same text object
                return kept
            text = decode_source(data, path) if len(data) <= limit else None
        except SourceError:
            text = None
        if text is None:
            self._files.pop(path, None)
            return None
        kept = self._files[path] = Kept(stamp, data, text, _digest(data), read_ns)
        return kept

    def _buffer(self, path: str, text: str) -> Kept:
        data = text.encode("utf-8", "surrogatepass")
        kept = self._buffers.get(path)
        if kept is None or kept.data != data:
            try:
                decoded = decode_source(data, path)
            except SourceError:
                decoded = text
            kept = self._buffers[path] = Kept((0, len(data)), data, decoded, _digest(data))
        return kept

    def forget(self, path: str) -> None:
        """A document was closed: its file is read from disk again."""
        self._buffers.pop(os.path.abspath(path), None)

    # ---- linting -------------------------------------------------------------------------

    def lint(self, documents: Mapping[str, str]) -> dict[str, LintResult | ConfigError]:
        """Each document's result (absolute path -> text of the open documents): what
        ``lint_paths([path], config, buffers=<every open document>, relocate=True)`` returns,
        or the ``ConfigError`` of its settings."""
        from recompile_lint.engine import project_scope

        out: dict[str, LintResult | ConfigError] = {}
        groups: dict[tuple, list[str]] = {}
        buffers = {os.path.abspath(path): self._buffer(os.path.abspath(path), text) for path, text in documents.items()}
        for path in sorted(buffers):
            try:
                config = load_config([path])
                root, files = project_scope([path], config)
            except ConfigError as exc:
                out[path] = exc
                continue
            groups.setdefault((config, root, tuple(files)), []).append(path)
        for (config, root, files), paths in groups.items():
            out.update(self._lint_group(config, root, files, paths, buffers))
        return out

    def _lint_group(self, config: Config, root: str, files: Sequence[str], paths: list[str], buffers: Mapping[str, Kept]) -> dict[str, LintResult]:
        from recompile_lint.analysis import context, parsing, textscan
        from recompile_lint.analysis.index import FactsStore, ProjectIndex
        from recompile_lint.analysis.parsing import forget_package_layout
        from recompile_lint.engine import analyse_index, collect, cyclic_gc_paused, make_cache, selected_rules

        excludes = config.exclude + config.extend_exclude
        named: dict[str, tuple[dict[str, str], Discovered]] = {}
        for path in paths:
            discovered = discover([path], excludes, str(find_project_root([path], excludes)), config.respect_gitignore)
            named[path] = ({os.path.abspath(p): p for p in discovered.files}, discovered)
        given = {absolute: shown for mapping, _ in named.values() for absolute, shown in mapping.items()}
        all_files = sorted({os.path.abspath(p) for p in files} | set(given))
        open_here = {path: kept for path, kept in buffers.items()}

        def reader(path: str) -> bytes:
            kept = open_here.get(os.path.abspath(path))
            return kept.data if kept is not None else read_bytes(path)

        facts = self._facts.get((root, config))
        if facts is None:
            facts = self._facts[(root, config)] = MemoryFacts(make_cache(config, root))
        forget_package_layout()  # a new run sees the packages as they are now
        store = FactsStore(config.compile_functions, facts)
        index = ProjectIndex(all_files, store, reader, jobs=config.jobs, max_bytes=config.max_file_bytes)
        digests: dict[str, str] = {}
        for path in all_files:
            kept = open_here.get(path) or self._disk(path, config.max_file_bytes)
            if kept is None or len(kept.data) > config.max_file_bytes:
                continue
            index.know_text(path, kept.text)
            digests[path] = kept.digest
        index.digests = digests
        self._register_trees(index, all_files, open_here, config.max_file_bytes)
        chosen = partial(_chosen, self, frozenset(given))
        saved = (textscan.resident_tests, textscan.new_tests, context.resident_snippets, context.new_snippets, parsing.resident_trees)
        textscan.resident_tests, textscan.new_tests = self.tests, []
        context.resident_snippets, context.new_snippets = self.snippets, []
        parsing.resident_trees = self.trees
        background: list = []
        try:
            with cyclic_gc_paused():
                analysis = analyse_index(index, list(given), config, partial(selected_rules, config), background, related=True, risk_regions=chosen)
                results = {path: collect(analysis, mapping, discovered, config, True, True) for path, (mapping, discovered) in named.items()}
            if len(self.tests) + len(textscan.new_tests) > KEPT_TESTS:
                self.tests.clear()
            for name, path, digest, result in textscan.new_tests:
                self.tests[(name, path, digest)] = result
            self._new_snippets.extend(context.new_snippets)
        finally:
            for check in background:
                check.close()
            textscan.resident_tests, textscan.new_tests, context.resident_snippets, context.new_snippets, parsing.resident_trees = saved
        self.runs += 1
        return results

    def _register_trees(self, index, paths: Sequence[str], open_here: Mapping[str, Kept], limit: int) -> None:
        """Name the texts whose trees the run may keep (``parsing.resident_trees``): every
        file's current text, a tree kept only while that text stays the same."""
        trees, total = {}, 0
        for path in paths:
            text = index.text(path) if path in open_here or path in self._files else None
            if text is None:
                continue
            total += len(text)
            if total > KEPT_TREE_TEXT:
                break
            kept = self.trees.get(path)
            trees[path] = kept if kept is not None and (kept[0] is text or kept[0] == text) else (text, None)
        self.trees.clear()
        self.trees.update(trees)

    def keep_snippets(self) -> None:
        """Parse the function bodies the last runs had to parse, for the next edit (an editor
        calls this once the diagnostics are out)."""
        from recompile_lint.analysis import context

        todo, self._new_snippets = self._new_snippets, []
        for snippet in todo:
            if snippet in self.snippets:
                continue
            if len(self.snippets) >= KEPT_SNIPPETS:
                self.snippets.clear()
            parsed = context.parse_snippet(snippet)
            if parsed is not None:
                self.snippets[snippet] = parsed


def _chosen(session: EditSession, documents: frozenset[str], index, regions: list, guards: list) -> list:
    out = relevant_regions(index, regions, guards, documents)
    session.regions_asked.append((len(out), len(regions)))
    return out
