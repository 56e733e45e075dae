"""The project index: module names, on-demand facts, and cross-module resolution.

Files are read as text first; only files that can hold a compile site, that a region reaches,
or that mention a name a region reads are parsed (with ``ast``, cached per content hash).
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Iterable, Iterator

from recompile_lint.analysis.facts import Binding, ClassFacts, FunctionFacts, ModuleFacts, Mutation, collect_facts
from recompile_lint.analysis import textscan
from recompile_lint.analysis.parsing import PARSE_ERRORS, module_name_for, namespace_names_for, on_deep_stack, package_name_for, parse_error, parse_source, project_name_for, raise_recursion_limit, syntax_error
from recompile_lint.analysis.textscan import Guarded, may_mutate
from recompile_lint.models import FileError
from recompile_lint.source import DEFAULT_MAX_FILE_BYTES, SourceError, decode_source, read_bytes, too_large

# A word of an import line (``ProjectIndex.import_naming``).
_IMPORT_WORD = re.compile(r"\w+")

# ``class X(A, pkg.B[T], metaclass=M):`` -> the text between the parentheses; a base's last name.
_CLASS_BASES = re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*\(([^)]*)\)", re.MULTILINE)
_BASE_NAME = re.compile(r"(?:^|,)\s*(?:\w+\s*\.\s*)*(\w+)")


@dataclass(frozen=True)
class FunctionRef:
    """A function of the project: the file it is in and its qualname there."""

    path: str
    qualname: str


class FactsStore:
    """Where parsed facts come from: memory, then the cache, then a parse."""

    def __init__(self, compile_functions: tuple[str, ...] = (), cache: "object | None" = None):
        self.compile_functions = compile_functions
        self.cache = cache  # an object with get(key) -> ModuleFacts|None and put(key, facts)
        self._keys: dict[str, tuple[str, tuple[str, ...], str]] = {}
        # ``ast`` trees of parsed files that hold compile sites, by path and text: the
        # function-identity rules walk exactly those files again (``rules._identity.Trees``).
        self.compile_site_trees: dict[str, tuple[str, ast.Module]] = {}

    def key(self, path: str, text: str) -> str:
        # Asked for the same text by the parse and by the call-site collection: hashed once.
        known = self._keys.get(path)
        if known is not None and known[0] is text and known[1] == self.compile_functions:
            return known[2]
        key = self._key(path, text)
        self._keys[path] = (text, self.compile_functions, key)
        return key

    def _key(self, path: str, text: str) -> str:
        # The module name is part of the facts, and it comes from the path.
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16)
        digest.update(os.path.abspath(path).encode("utf-8", "surrogatepass"))
        digest.update(repr(self.compile_functions).encode())
        return digest.hexdigest()

    def parse(self, path: str, text: str) -> ModuleFacts:
        """Facts of a file's text."""
        return self.parse_with_tree(path, text)[0]

    def parse_with_tree(self, path: str, text: str) -> tuple[ModuleFacts, ast.Module | None]:
        """Facts of a file's text and, when they were not cached, the ``ast`` tree they came from."""
        key = self.key(path, text)
        if self.cache is not None:
            cached = self.cache.get(key, path)
            if cached is not None:
                return cached, None
        module, is_package, _ = module_name_for(path)
        tree, facts = on_deep_stack(self._collect, path, text, module, is_package)
        if facts.compile_sites:
            self.compile_site_trees[path] = (text, tree)
        if self.cache is not None:
            self.cache.put(key, path, facts)
        return facts, tree

    def _collect(self, path: str, text: str, module: str, is_package: bool) -> tuple[ast.Module, ModuleFacts]:
        raise_recursion_limit()  # before the parse too: what parses must not depend on order
        tree = parse_source(text, path)
        return tree, collect_facts(tree, path, module, is_package, text, self.compile_functions)


class ProjectIndex:
    """Every Python file of the project by module name; facts parsed on demand."""

    def __init__(self, files: Iterable[str], store: FactsStore, reader: Callable[[str], bytes] | None = None, jobs: int = 1, max_bytes: int = DEFAULT_MAX_FILE_BYTES):
        self.store = store
        self.jobs = jobs  # worker processes for batches of parses (0: one per core)
        self.reader = reader or read_bytes
        self.max_bytes = max_bytes  # larger files are an error, never parsed
        self.paths: list[str] = sorted(dict.fromkeys(files))
        self.by_module: dict[str, list[str]] = {}
        self.sys_root: dict[str, str] = {}
        self.module_names: dict[str, str] = {}
        namespaced: dict[str, list[str]] = {}
        for path in self.paths:
            module, _, root = module_name_for(path)
            self.sys_root[path] = root
            self.module_names[path] = module
            if module:
                self.by_module.setdefault(module, []).append(path)
                qualified = package_name_for(module, root)
                if qualified:
                    self.by_module.setdefault(qualified, []).append(path)
                for namespaced_name in namespace_names_for(module, root):
                    namespaced.setdefault(namespaced_name, []).append(path)
                installed = project_name_for(module, root)
                if installed:
                    namespaced.setdefault(installed, []).append(path)
        # A name through a top-level namespace package only where no module has it already.
        for name, paths in namespaced.items():
            self.by_module.setdefault(name, paths)
        self._text: dict[str, str | None] = {}
        self._lines: dict[str, tuple[str, list[str]]] = {}
        self._facts: dict[str, ModuleFacts | None] = {}
        self.errors: dict[str, FileError] = {}
        self._mutations: dict[tuple[str, str, str], list[Mutation]] | None = None
        self._mutations_of = 0  # how many files were known when the table was built
        self._scanned: set[str] = set()
        # Call sites of compiled objects, keyed by the names they are called by (callsites.py).
        self.call_site_cache: dict[frozenset[str], list] = {}
        self.primed_names: frozenset[str] = frozenset()  # names whose call sites are collected
        self._classes: dict[tuple[str, str | None], tuple[ModuleFacts, ClassFacts] | None] = {}
        self._mro: dict[tuple[str, str], list[tuple[ModuleFacts, ClassFacts]]] = {}
        # Derived data rules share within a run (e.g. the ``ast`` trees of compile-site files).
        self.memo: dict[str, object] = {}
        self.syntax_checked: set[str] = set()  # files known to compile (checked elsewhere)
        # Content digests of the files (the run cache computed them: ``RunCache.key``, or
        # ``RunCache.buffer_digests`` for unsaved buffers): what names a file's text in a
        # resident server's memory of text tests (``resident_tests``).
        self.digests: dict[str, str] = {}
        # Told of each file as its facts are about to be parsed (``parallel.BackgroundSyntaxCheck``).
        self.parse_listeners: list[Callable[[str], None]] = []
        # ``ast`` trees of whole files that analyses keep for the run anyway (the value flow's,
        # the execution stage's), by path, with the text parsed: each such file is parsed once.
        self._whole_trees: dict[str, tuple[str, ast.Module]] = {}

    # ---- reading -------------------------------------------------------------------------

    def text(self, path: str) -> str | None:
        if path not in self._text:
            try:
                data = read_bytes(path, self.max_bytes) if self.reader is read_bytes else self.reader(path)
                if len(data) > self.max_bytes:
                    raise SourceError(too_large(len(data), self.max_bytes))
                self._text[path] = decode_source(data, path)
            except SourceError as exc:
                self.errors[path] = FileError(path=path, message=str(exc))
                self._text[path] = None
        return self._text[path]

    def import_lines_of(self, path: str) -> list[str]:
        """The import statement lines of a file's text, found once (``textscan.import_lines``)."""
        table = self.memo.setdefault("import-lines", {})
        assert isinstance(table, dict)
        if path not in table:
            text = self.text(path)
            table[path] = textscan.import_lines(text) if text and "import" in text else []
        return table[path]

    def import_naming(self) -> dict[str, list[str]]:
        """Each word of an import line of the project -> the files whose import lines hold it,
        in the project's order: which files may import a module named by its last word."""
        found = self.memo.get("import-naming")
        if found is None:
            naming: dict[str, list[str]] = {}
            for path in self.paths:
                for word in {word for line in self.import_lines_of(path) for word in _IMPORT_WORD.findall(line)}:
                    naming.setdefault(word, []).append(path)
            found = self.memo["import-naming"] = naming
        return found  # type: ignore[return-value]

    def know_text(self, path: str, text: str) -> None:
        """Take ``text`` as the decoded text of ``path`` before anything reads it (an editor's
        session keeps the texts of the files that did not change: the same string, so what
        is kept by text, a compile site's tree, still matches)."""
        if path not in self._text:
            self._text[path] = text

    def lines(self, path: str) -> list[str]:
        """The lines of a file's text (``text.split("\\n")``; none when it cannot be read),
        split once: the analysis asks per guard, write and site, so a split per question
        grows with the square of a module's size. Callers must not change the list."""
        text = self.text(path)
        if text is None:
            return []
        kept = self._lines.get(path)
        if kept is None or kept[0] is not text:
            kept = self._lines[path] = (text, text.split("\n"))
        return kept[1]

    def facts(self, path: str) -> ModuleFacts | None:
        """Parsed facts of a file (None, with an error recorded, when it cannot be parsed)."""
        if path not in self._facts:
            text = self.text(path)
            facts = None
            if text is not None:
                for listener in self.parse_listeners:
                    listener(path)
                try:
                    facts = self.store.parse(path, text)
                except PARSE_ERRORS as exc:
                    self.errors[path] = parse_error(path, exc)
            self._facts[path] = facts
        return self._facts[path]

    def kept_tree(self, path: str) -> ast.Module | None:
        """The ``ast`` tree of a file's current text that an analysis keeps (``keep_tree``) or
        the facts' parse kept (a file with compile sites), or None. Trees are shared: callers
        must not change them."""
        text = self.text(path)
        kept = self._whole_trees.get(path) or self.store.compile_site_trees.get(path)
        return kept[1] if kept is not None and kept[0] is text else None

    def keep_tree(self, path: str, text: str | None, tree: ast.Module | None) -> None:
        """Offer the tree of ``text`` (the file's text) to other analyses (``kept_tree``)."""
        if tree is not None and text is not None:
            self._whole_trees[path] = (text, tree)

    def facts_and_tree(self, path: str) -> tuple[ModuleFacts | None, ast.Module | None]:
        """Facts of a file and its ``ast`` tree from one parse when its facts are not known
        yet (the value flow reads the calls of files it parses for their facts)."""
        if path in self._facts:
            return self._facts[path], None
        text = self.text(path)
        if text is None:
            return self.facts(path), None
        for listener in self.parse_listeners:
            listener(path)
        tree = None
        try:
            self._facts[path], tree = self.store.parse_with_tree(path, text)
        except PARSE_ERRORS as exc:
            self.errors[path] = parse_error(path, exc)
            self._facts[path] = None
        return self._facts[path], tree

    def prefetch(self, paths: Iterable[str]) -> None:
        """Parse the facts of ``paths`` now, in worker processes when the batch is worth it.

        Files already parsed or cached are skipped; errors are recorded exactly as ``facts()``
        records them, and results go to the cache as ``facts()`` would put them.
        """
        if self.jobs == 1:
            return
        from recompile_lint.analysis.parallel import parse_in_parallel, worth_parallel

        todo: list[tuple[str, str, str]] = []
        cache = self.store.cache
        for path in paths:
            if path in self._facts:
                continue
            text = self.text(path)
            if text is None:
                continue
            key = self.store.key(path, text)
            cached = cache.get(key, path) if cache is not None else None
            if cached is not None:
                self._facts[path] = cached
                continue
            todo.append((path, text, key))
        sources = [(path, text) for path, text, _ in todo]
        if not worth_parallel(sources, self.jobs):
            return  # facts() parses them one by one
        for path, _, _ in todo:
            for listener in self.parse_listeners:
                listener(path)
        results = parse_in_parallel(sources, self.store.compile_functions, self.jobs)
        for path, _, key in todo:
            result = results[path]
            if isinstance(result, FileError):
                self.errors[path] = result
                self._facts[path] = None
            else:
                self._facts[path] = result
                if cache is not None:
                    cache.put(key, path, result)

    def check_syntax(self, path: str) -> None:
        """Record a syntax error of a file no region needed (bad input must never pass)."""
        if path in self._facts or path in self.errors or path in self.syntax_checked:
            return
        text = self.text(path)
        if text is None:
            return
        error = syntax_error(path, text)
        if error is not None:
            self.errors[path] = error

    def record_syntax_checks(self, results: dict[str, "FileError | None"]) -> None:
        """Take syntax checks made elsewhere (``parallel.BackgroundSyntaxCheck``); a file
        the analysis parsed keeps what its own parse recorded."""
        for path, error in results.items():
            if path in self._facts or path in self.errors:
                continue
            if error is None:
                self.syntax_checked.add(path)
            else:
                self.errors[path] = error

    def reparse(self, paths: Iterable[str]) -> None:
        """Forget the facts of ``paths`` (after the store's settings changed)."""
        for path in paths:
            self._facts.pop(path, None)
        self._mutations = None
        self._classes.clear()
        self._mro.clear()

    def wrapper_functions(self) -> set[str]:
        """Names of project functions that compile their own parameter and so act as
        ``torch.compile`` wrappers (``def maybe_compile(fn): return torch.compile(fn)``): the
        dotted name of a module-level function; the bare name of a method or a nested
        function (``self.compile_model(m)``, a decorator factory's inner ``decorate(fn)``),
        called through an attribute or a closure. Which calls of a bare name really run
        the wrapper, the regions decide by value. ``compile`` and ``optimize`` as method names
        stay method calls (``nn.Module.compile``), told apart by the receiver's class. A
        module global that may hold torch's compile itself (``ModuleFacts.compile_aliases``)
        is named too, by its dotted name: a module importing it calls it as torch's compile."""
        out = set()
        for facts in self.parsed():
            # A module global that may hold torch's compile, imported elsewhere and called there.
            out.update(f"{facts.module}.{name}" if facts.module else name for name in facts.compile_aliases)
            for fn in facts.functions:
                if not fn.compiles_param or fn.is_lambda:
                    continue
                self._add_wrapper(out, facts, fn)
                # A decorator factory: the function that returns it (``@compiled(mode=...)``).
                parent = facts.function(fn.parent) if fn.parent else None
                if parent is not None and not parent.compiles_param and self._returns_name(facts, parent, fn.name):
                    self._add_wrapper(out, facts, parent)
        return out

    @staticmethod
    def _add_wrapper(out: set[str], facts: ModuleFacts, fn: FunctionFacts) -> None:
        if not fn.parent and not fn.class_name:
            out.add(f"{facts.module}.{fn.qualname}" if facts.module else fn.qualname)
        elif fn.name not in ("compile", "optimize") and not fn.name.startswith("__"):
            out.add(fn.name)

    def _returns_name(self, facts: ModuleFacts, fn: FunctionFacts, name: str) -> bool:
        """Whether one of ``fn``'s ``return`` expressions is the bare name ``name``."""
        lines = self.lines(facts.path)
        for span in fn.returns:
            if 1 <= span[0] <= len(lines) and re.search(rf"\breturn\s+{re.escape(name)}\s*(#.*)?$", lines[span[0] - 1]):
                return True
        return False

    def is_parsed(self, path: str) -> bool:
        """Whether ``path`` was parsed (or failed to) in this run."""
        return path in self._facts

    def parsed(self) -> Iterator[ModuleFacts]:
        for facts in self._facts.values():
            if facts is not None:
                yield facts

    def known_count(self) -> int:
        """How many files' facts are known (or known to fail): it grows as files are parsed,
        so a table built from ``parsed()`` is up to date while it stays the same."""
        return len(self._facts)

    def select(self, paths: Iterable[str], test: Callable[[str, str], bool], meanwhile: Callable[[], None] | None = None) -> list[str]:
        """The readable ``paths`` whose text passes ``test(path, text)``, in order.

        With ``jobs`` above 1 and enough text on disk, worker processes read the files and
        run the tests (``test`` must then pickle: a module-level function or a
        ``functools.partial`` of one), and this process runs ``meanwhile`` while they do;
        otherwise ``meanwhile`` runs first. Either way it runs once. A file the workers cannot
        read is read here, so its error is recorded as a read here records it. In a resident
        server, results it remembers for a file's digest (``resident_tests``) are not tested again.
        """
        paths = list(paths)
        pending = [meanwhile] if meanwhile is not None else []

        def run_meanwhile() -> None:
            while pending:
                pending.pop()()

        name = textscan.text_test_name(test) if textscan.resident_tests is not None and self.digests else None
        known: dict[str, bool] = {}
        if name is not None:
            for path in paths:
                digest = self.digests.get(path)
                result = textscan.resident_tests.get((name, path, digest)) if digest is not None else None  # type: ignore[union-attr]
                if result is not None:
                    known[path] = result
        todo = [path for path in paths if path not in known] if known else paths
        tested: dict[str, bool] = {}  # the files of ``todo`` that could be read
        found = None
        if self.jobs != 1 and self.reader is read_bytes:
            from recompile_lint.analysis.parallel import select_in_parallel

            found = select_in_parallel(todo, test, self.jobs, run_meanwhile, self.max_bytes)
        if found is not None:
            chosen, unread = found
            for path in unread:
                self.text(path)
            missing = set(unread)
            tested = {path: path in chosen for path in todo if path not in missing}
        else:
            run_meanwhile()
            tested = {path: test(path, text) for path in todo if (text := self.text(path)) is not None}
        if name is not None:
            textscan.new_tests.extend((name, path, self.digests[path], result) for path, result in tested.items() if path in self.digests)
        return [path for path in paths if known.get(path) or tested.get(path)]

    # ---- modules -------------------------------------------------------------------------

    def module_path(self, module: str, from_path: str | None = None) -> str | None:
        """The file of ``module``, preferring the importer's own import root."""
        candidates = self.by_module.get(module)
        if not candidates:
            return None
        if len(candidates) == 1 or from_path is None:
            return candidates[0]
        root = self.sys_root.get(from_path) or module_name_for(from_path)[2]
        for candidate in candidates:
            if self.sys_root[candidate] == root:
                return candidate
        # Nearest by shared directory prefix: the sibling project, not one elsewhere in the tree.
        return max(candidates, key=lambda c: len(os.path.commonpath([c, from_path])))

    def module_facts(self, module: str, from_path: str | None = None) -> ModuleFacts | None:
        path = self.module_path(module, from_path)
        return self.facts(path) if path else None

    def split_dotted(self, dotted: str, from_path: str | None) -> tuple[ModuleFacts, str] | None:
        """Split ``pkg.mod.Name.attr`` into (facts of pkg.mod, "Name.attr") by the longest module."""
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):
            facts = self.module_facts(".".join(parts[:i]), from_path)
            if facts is not None:
                return facts, ".".join(parts[i:])
        return None

    # ---- resolution ----------------------------------------------------------------------

    def resolve_class(self, dotted: str, from_path: str | None) -> tuple[ModuleFacts, ClassFacts] | None:
        """The project class an absolute (or module-local) dotted name denotes."""
        key = (dotted, from_path)
        if key not in self._classes:
            self._classes[key] = None  # a cycle of re-exports resolves to nothing
            self._classes[key] = self._resolve_class(dotted, from_path)
        return self._classes[key]

    def _resolve_class(self, dotted: str, from_path: str | None) -> tuple[ModuleFacts, ClassFacts] | None:
        if not dotted:
            return None
        if from_path is not None:
            facts = self.facts(from_path)
            if facts is not None:
                local = facts.cls(dotted)
                if local is not None:
                    return facts, local
        split = self.split_dotted(dotted, from_path)
        if split is None:
            return None
        facts, rest = split
        cls = facts.cls(rest)
        if cls is not None:
            return facts, cls
        # Re-exported through a package ``__init__``: follow the import once more.
        head, _, tail = rest.partition(".")
        target = facts.import_target(head)
        if target and target != dotted:
            return self.resolve_class(f"{target}.{tail}" if tail else target, facts.path)
        return None

    def mro(self, facts: ModuleFacts, cls: ClassFacts, limit: int = 12) -> list[tuple[ModuleFacts, ClassFacts]]:
        """The class and its project base classes, nearest first."""
        key = (facts.path, cls.qualname)
        if key not in self._mro:
            self._mro[key] = self._linearize(facts, cls, limit)
        return self._mro[key]

    def _linearize(self, facts: ModuleFacts, cls: ClassFacts, limit: int) -> list[tuple[ModuleFacts, ClassFacts]]:
        out = [(facts, cls)]
        seen = {(facts.path, cls.qualname)}
        i = 0
        while i < len(out) and len(out) < limit:
            f, c = out[i]
            for base in c.bases:
                found = self.resolve_class(base, f.path)
                if found is not None and (found[0].path, found[1].qualname) not in seen:
                    seen.add((found[0].path, found[1].qualname))
                    out.append(found)
            i += 1
        return out

    def class_method(self, facts: ModuleFacts, cls: ClassFacts, name: str) -> FunctionRef | None:
        for f, c in self.mro(facts, cls):
            qual = c.method(name)
            if qual is not None:
                return FunctionRef(f.path, qual)
        return None

    def class_attr(self, facts: ModuleFacts, cls: ClassFacts, name: str):
        """(facts, class, AttrInit) where the attribute is initialised, nearest class first."""
        for f, c in self.mro(facts, cls):
            init = c.attr(name)
            if init is not None:
                return f, c, init
        return None

    def is_buffer(self, facts: ModuleFacts, cls: ClassFacts, name: str) -> bool:
        return any(name in c.buffers for _, c in self.mro(facts, cls))

    def class_submodule(self, facts: ModuleFacts, cls: ClassFacts, name: str) -> tuple[ModuleFacts, ClassFacts] | None:
        for f, c in self.mro(facts, cls):
            ref = c.submodule(name)
            if ref is not None:
                return self.resolve_class(ref, f.path)
        return None

    def classes_named(self, name: str) -> list[tuple[ModuleFacts, ClassFacts]]:
        """Every project class called ``name`` (``class Block``), wherever it is defined: what a
        helper that selects modules by class name (``m.__class__.__name__ in names``) means.
        Files are chosen by their text and parsed on demand."""
        key = f"classes_named:{name}"
        known = self.memo.get(key)
        if known is None:
            pattern = re.compile(rf"^[ \t]*class[ \t]+{re.escape(name)}\b", re.MULTILINE)
            found: list[tuple[ModuleFacts, ClassFacts]] = []
            for path in self.paths:
                text = self.text(path)
                if text is None or name not in text or pattern.search(text) is None:
                    continue
                facts = self.facts(path)
                if facts is not None:
                    found.extend((facts, cls) for cls in facts.classes if cls.name == name)
            known = self.memo[key] = found
        return known  # type: ignore[return-value]

    def subclasses(self, facts: ModuleFacts, cls: ClassFacts, limit: int = 400) -> list[tuple[ModuleFacts, ClassFacts]]:
        """Project classes that have ``cls`` among their bases, directly or not, nearest first
        (at most ``limit``). Files are chosen by a one-pass text index of ``class X(...)``
        statements by the last names of their bases, and parsed on demand."""
        key = f"subclasses:{facts.path}:{cls.qualname}"
        known = self.memo.get(key)
        if known is not None:
            return known  # type: ignore[return-value]
        self.memo[key] = []  # a cycle of bases finds nothing more
        by_base = self._classes_by_base()
        out: list[tuple[ModuleFacts, ClassFacts]] = []
        seen = {(facts.path, cls.qualname)}
        todo = [cls.name]
        names_done: set[str] = set()
        while todo and len(out) < limit:
            name = todo.pop(0)
            if name in names_done:
                continue
            names_done.add(name)
            for path in sorted(by_base.get(name, ())):
                other = self.facts(path)
                if other is None:
                    continue
                for candidate in other.classes:
                    if (other.path, candidate.qualname) in seen or not any(base.rsplit(".", 1)[-1] == name for base in candidate.bases):
                        continue
                    if any(f.path == facts.path and c.qualname == cls.qualname for f, c in self.mro(other, candidate)[1:]):
                        seen.add((other.path, candidate.qualname))
                        out.append((other, candidate))
                        todo.append(candidate.name)
        self.memo[key] = out
        return out

    def _classes_by_base(self) -> dict[str, set[str]]:
        """Last name of a base class -> the files with a ``class X(..., base, ...)`` statement."""
        known = self.memo.get("classes_by_base")
        if known is None:
            table: dict[str, set[str]] = {}
            for path in self.paths:
                text = self.text(path)
                if text is None or "class" not in text:
                    continue
                for bases in _CLASS_BASES.findall(text):
                    for base in _BASE_NAME.findall(bases):
                        table.setdefault(base, set()).add(path)
            known = self.memo["classes_by_base"] = table
        return known  # type: ignore[return-value]

    def function(self, ref: FunctionRef) -> FunctionFacts | None:
        facts = self.facts(ref.path)
        return facts.function(ref.qualname) if facts else None

    def resolve_function(self, dotted: str, from_path: str | None, _seen: frozenset[str] = frozenset()) -> FunctionRef | None:
        """A module-level function (or class method) an absolute dotted name denotes, following
        re-exports (``from .impl import f`` in a package ``__init__``), a cycle of them to none."""
        split = self.split_dotted(dotted, from_path)
        if split is None:
            return None
        facts, rest = split
        if facts.function(rest) is not None:
            return FunctionRef(facts.path, rest)
        head, _, tail = rest.partition(".")
        target = facts.import_target(head)
        # Re-exports can go round in a circle (``a`` imports it from ``b``, ``b`` from ``a``).
        if target and target != dotted and not tail and target not in _seen:
            return self.resolve_function(target, facts.path, _seen | {dotted})
        return None

    def resolve_export(self, dotted: str, from_path: str | None, _seen: frozenset[str] = frozenset()) -> str:
        """The name an absolute dotted name denotes after the project's re-exports (``pkg.utils.
        is_compiling`` where ``pkg/utils.py`` has ``from torch.compiler import is_compiling``
        gives ``torch.compiler.is_compiling``); itself where no project module imports it."""
        split = self.split_dotted(dotted, from_path)
        if split is None:
            return dotted
        facts, rest = split
        head, _, tail = rest.partition(".")
        target = facts.import_target(head)
        if not target or target == dotted or target in _seen:
            return dotted
        return self.resolve_export(f"{target}.{tail}" if tail else target, facts.path, _seen | {dotted})

    def global_binding(self, facts: ModuleFacts, name: str) -> tuple[ModuleFacts, Binding] | None:
        """The module-level binding ``name`` in ``facts``; follows ``from m import name``."""
        binding = facts.binding(name)
        target = facts.import_target(name)
        if target is not None:
            module, _, attr = target.rpartition(".")
            if module:
                other = self.module_facts(module, facts.path)
                if other is not None and other.path != facts.path:
                    found = other.binding(attr)
                    if found is not None and found.kind != "imported":
                        return other, found
                    if found is not None:
                        return self.global_binding(other, attr)
            return None
        if binding is not None:
            return facts, binding
        return None

    def dynamic_sources(self, paths: Iterable[str]) -> frozenset[str]:
        """Sources named in ``torch.compiler.config.dynamic_sources`` in the given files (a
        setting elsewhere in the tree may belong to another program)."""
        out: set[str] = set()
        for path in set(paths):
            facts = self.facts(path)
            if facts is None:
                continue
            for setting in facts.config_settings:
                if setting.key.endswith(".dynamic_sources"):
                    try:
                        value = ast.literal_eval(setting.value)
                    except (ValueError, SyntaxError):
                        continue
                    if isinstance(value, str):
                        out.update(v.strip() for v in value.split(",") if v.strip())
        return frozenset(out)

    # ---- mutations -----------------------------------------------------------------------

    def scan_for_mutations(self, guarded: Guarded) -> None:
        """Parse every project file that can change a guarded value (facts hold its mutations).

        A global of module ``m`` can only be changed in ``m`` itself or in a file that names
        ``m`` (``import pkg.m``, ``from pkg import m``, ``from pkg.m import X``): both the value's
        name and the module's last name must appear as words, and the value's name (or its
        import alias) where a write can be (``writes_name``). ``os.environ`` writes are looked
        for when a region reads the environment. Instance attributes can be set anywhere: a file
        is selected where the attribute's name can be written (an assignment, ``del``,
        ``setattr``...).
        """
        if guarded.empty():
            return
        owners = {path for path, _ in guarded.globals}
        by_name: dict[str, set[str]] = {}
        for path, name in guarded.globals:
            by_name.setdefault(name, set()).add(self.module_last_name(path))
        unscanned = [path for path in self.paths if path not in self._facts and path not in self._scanned]
        selected = self.select(unscanned, partial(may_mutate, owners=frozenset(owners), by_name=by_name, guarded=guarded))
        self._scanned.update(unscanned)
        self.prefetch(selected)
        for path in selected:
            self.facts(path)
        self._mutations = None

    def module_last_name(self, path: str) -> str:
        """The name other files import ``path`` by: its module's last component."""
        module = self.module_names[path] if path in self.module_names else module_name_for(path)[0]
        return module.rsplit(".", 1)[-1] if module else Path(path).name.rsplit(".", 1)[0]

    def mutation_table(self) -> dict[tuple[str, str, str], list[Mutation]]:
        """(kind, path of the module holding the value, name) -> mutations, over parsed files."""
        if self._mutations is None or self._mutations_of != len(self._facts):
            # Built over the files parsed so far; a file parsed since (a class's module the
            # analysis resolved) makes it stale.
            self._mutations_of = len(self._facts)
            table: dict[tuple[str, str, str], list[Mutation]] = {}
            for facts in list(self.parsed()):
                for mutation in facts.mutations:
                    if mutation.kind == "instance-attribute" or (mutation.kind == "length" and mutation.key == "instance"):
                        # Attributes of instances: by name (the owner says whose, when known).
                        table.setdefault((mutation.kind, "", mutation.name), []).append(mutation)
                        continue
                    if mutation.kind == "environ":
                        table.setdefault((mutation.kind, "", mutation.key), []).append(mutation)
                        table.setdefault((mutation.kind, "", "*"), []).append(mutation)
                        continue
                    target = self.module_path(mutation.module, mutation.path)
                    if target is None:
                        continue
                    table.setdefault((mutation.kind, target, mutation.name), []).append(mutation)
            self._mutations = table
        return self._mutations

    def mutations(self, kind: str, path: str, name: str) -> list[Mutation]:
        return self.mutation_table().get((kind, path, name), [])


def function_trees(index: "ProjectIndex") -> "FunctionTrees":
    """The run's function trees, shared by the region finder and the guard model."""
    trees = index.memo.get("function-trees")
    if trees is None:
        trees = index.memo["function-trees"] = FunctionTrees(index)
    return trees  # type: ignore[return-value]


@dataclass(frozen=True)
class Stores:
    """Where a function first stores each name (an assignment, a loop target, ``del``), and
    the spans of its loops: whether a parameter still holds what the call passed at a node."""

    first: dict[str, tuple[int, int]]  # name -> (line, column) of its first store
    loops: tuple[tuple[tuple[int, int], tuple[int, int]], ...]
    _until: dict[str, tuple[int, int]] = field(default_factory=dict, compare=False, repr=False)

    @staticmethod
    def of(function: ast.AST) -> "Stores":
        first: dict[str, tuple[int, int]] = {}
        loops = []
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                at = (node.lineno, node.col_offset)
                if node.id not in first or at < first[node.id]:
                    first[node.id] = at
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                loops.append(((node.lineno, node.col_offset), (node.end_lineno or node.lineno, node.end_col_offset or 0)))
        return Stores(first, tuple(loops))

    def __contains__(self, name: str) -> bool:
        return name in self.first

    def held_at(self, name: str, node: ast.AST) -> bool:
        """Whether ``name`` holds at ``node`` the value it had on entry: no store of it comes
        before ``node``, and none in a loop around ``node`` (the next iteration sees it). A
        loop around ``node`` that holds a later store holds the first store too, so ``node``
        must come before the first store and before every loop around it: one position per
        name, found once (linear in the loops, whatever the number of tests)."""
        if name not in self.first:
            return True
        until = self._until.get(name)
        if until is None:
            store = self.first[name]
            until = self._until[name] = min([store, *(start for start, end in self.loops if start <= store <= end)])
        return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0)) < until


class FunctionTrees:
    """``ast`` nodes of project functions, parsed statement by statement and kept per run."""

    def __init__(self, index: ProjectIndex):
        self.index = index
        self._statements: dict[tuple[str, int], ast.Module | None] = {}
        self._rebound: dict[int, "Stores"] = {}  # by a kept node's id

    def rebound(self, function: ast.AST) -> "Stores":
        """Where a function (one of this run's nodes) stores each name: assignments, loop
        targets, ``del``; and its loops. Once per function: the region reach and the guard
        model ask for each constant parameter's ``if``."""
        found = self._rebound.get(id(function))
        if found is None:
            found = self._rebound[id(function)] = Stores.of(function)
        return found

    def node(self, path: str, fn: FunctionFacts) -> ast.AST | None:
        key = (path, fn.stmt_line)
        if key not in self._statements:
            self._statements[key] = self._parse(path, fn)
        module = self._statements[key]
        if module is None:
            return None
        for node in ast.walk(module):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == fn.line and node.name == fn.name:
                return node
            if isinstance(node, ast.Lambda) and fn.is_lambda and node.lineno == fn.line:
                return node
        return None

    def _parse(self, path: str, fn: FunctionFacts) -> ast.Module | None:
        text = self.index.text(path)
        if text is None:
            return None
        lines = self.index.lines(path)[fn.stmt_line - 1 : fn.stmt_end_line]
        try:
            module = parse_source("\n".join(lines), path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        ast.increment_lineno(module, fn.stmt_line - 1)
        return module
