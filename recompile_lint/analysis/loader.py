"""Which files the analysis reads, when and how: the one seam for the speed measures.

The analysis (``engine.analyse_index``) asks the loader for parsed facts at three points of
its data flow, and the loader decides how to get them cheaply:

1. ``compiling_files``: the files that can hold a compile site, chosen by a text test before
   any parse (``textscan.may_compile_text``), parsed as one batch (in worker processes with
   ``--jobs``), with the named files the test left out syntax-checked in the background; then
   project functions that compile their parameter (wrappers) widen the test once.
2. ``modules_read_by``: the project modules whose values the reached functions can read, as
   one batch.
3. ``writers_of``: the files that can change a value the regions guard, chosen by text tests
   (``textscan.may_mutate``) over the whole project, parsed for their writes.

Everything else reads facts on demand (``ProjectIndex.facts``); no stage needs to know which
were prefetched, skipped or cached. The ``regions`` listing reads the same files a lint run
does: ``find_sites`` resolves every compile site of the files ``compiling_files`` chooses.
"""

from __future__ import annotations

import os
import re
from functools import partial
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

from recompile_lint.analysis.index import ProjectIndex
from recompile_lint.analysis.regions import CompiledRegion, RegionFinder, SiteResolution
from recompile_lint.analysis.textscan import Guarded, calls_any, may_compile_text
from recompile_lint.analysis.wrappers import infer_wrappers
from recompile_lint.source import read_bytes

if TYPE_CHECKING:
    from recompile_lint.analysis.facts import FunctionFacts, ModuleFacts


# Rounds of wrapper inference: each infers wrappers on the facts parsed so far and reads the
# files new to it that call one (a wrapper of a wrapper defined in a file only the previous
# round read). The inference itself is a fixpoint within a round (``wrappers.infer_wrappers``),
# and every file is parsed at most twice whatever the number of rounds.
WRAPPER_ROUNDS = 4


def _short_names(names: Sequence[str]) -> tuple[str, ...]:
    """The names wrapper calls are written with, ``compile``/``optimize`` left out."""
    return tuple(sorted({name.rsplit(".", 1)[-1] for name in names} - {"compile", "optimize"}))


def _names_torch_like_wrapper(facts: ModuleFacts | None, new: set[str]) -> bool:
    """Whether a file parsed before the wrappers ``new`` were known calls one named like
    torch's own (``compile``, ``optimize``: words too common to test the text for): a
    module-level wrapper its module defines, or one it imports (``from .utils import
    compile``). Its calls are compile sites only once the facts know the wrapper."""
    if facts is None:
        return False
    for name in new:
        module, _, last = name.rpartition(".")
        if last not in ("compile", "optimize") or not module:
            continue
        if module == facts.module or facts.import_target(last) == name:
            return True
    return False


class Loader:
    """Reads the files each stage of one run needs (see the module docstring)."""

    def __init__(self, index: ProjectIndex, given: Sequence[str], background: list):
        self.index = index
        self.given = given
        self.background = background  # syntax checks running in workers, closed by the caller

    def compiling_files(self, compile_functions: Sequence[str], meanwhile: Callable[[], None] | None = None) -> list[str]:
        """Parse the files that can compile something; their paths. ``meanwhile`` runs while
        workers test the files' text (the rules' imports)."""
        index = self.index
        store = index.store
        wrappers = tuple(w.rsplit(".", 1)[-1] for w in compile_functions)
        candidates = index.select(index.paths, partial(may_compile_text, extra_tokens=wrappers), meanwhile=meanwhile)
        # Every named file must be syntax-checked, and most are never parsed: with workers, one
        # checks them from here on at a lower priority, on the core this process leaves idle
        # whenever it works alone (a check of a file parsed later is simply not used).
        chosen = set(candidates)
        check = syntax_checks_in_background(index, [p for p in self.given if p not in chosen])
        if check is not None:
            self.background.append(check)
            index.parse_listeners.append(check.parsed)
        self._parse(candidates)
        # Project functions that compile their parameter, directly or through other such
        # functions, are wrappers too: calls to them compile their argument. Each round infers
        # them on the facts parsed so far (a fixpoint, ``wrappers.infer_wrappers``) and parses
        # only the files new to it that call one; at the end, the files parsed before the last
        # wrappers were known and naming one are parsed once again, with all of them known.
        batches = [(candidates, tuple(store.compile_functions))]
        index.memo["configured-wrappers"] = frozenset(store.compile_functions)  # the user's, before any inferred
        for _ in range(WRAPPER_ROUNDS):
            found = sorted(infer_wrappers(index) - set(store.compile_functions))
            if not found:
                break
            store.compile_functions = store.compile_functions + tuple(found)
            short = _short_names(found)
            # A file the first test chose (``chosen``) passes this wider one too: only the others
            # are read, and only for calls of the wrappers found.
            more = set(index.select([p for p in index.paths if p not in chosen], partial(calls_any, tokens=short))) if short else set()
            chosen |= more
            fresh = [p for p in index.paths if p in more]
            self._parse(fresh)
            batches.append((fresh, tuple(store.compile_functions)))
        # Any file parsed so far (a base class's, read on demand, too) was parsed knowing the
        # wrappers of its batch, or the first set.
        known_at = {path: known for paths, known in batches for path in paths}
        final = set(store.compile_functions)
        missing_of: dict[tuple[str, ...], tuple[str, ...]] = {}
        again = []
        for path in index.paths:
            if not index.is_parsed(path):
                continue
            known = known_at.get(path, batches[0][1])
            if known not in missing_of:
                # ``compile``/``optimize`` wrappers are called like torch's own: COMPILE_SITE finds them.
                missing_of[known] = _short_names(sorted(final - set(known)))
            missing = missing_of[known]
            if missing and any(name in (index.text(path) or "") for name in missing):
                again.append(path)
            elif _names_torch_like_wrapper(index.facts(path), final - set(known)):
                again.append(path)
        if again:
            index.reparse(again)
        candidates = [p for p in index.paths if p in chosen]
        self._parse(candidates)
        return candidates

    def modules_read_by(self, regions: Sequence[CompiledRegion], only: set[str] | None) -> None:
        """Parse, as one batch, the project modules whose values the functions the regions
        reach can read (with ``only``: the functions in those files)."""
        self.index.prefetch(modules_read_by_reached(self.index, regions, only))

    def writers_of(self, regions: Sequence[CompiledRegion], only: set[str] | None, guards: Iterable) -> Guarded:
        """Parse the files that can change a value the regions read (``guarded_names``) or the
        guard model guards (``guards``: its predicted guards); the values, for the record."""
        guarded = guarded_names(self.index, regions, only)
        add_guard_sources(guarded, guards)
        self.index.scan_for_mutations(guarded)
        return guarded

    def _parse(self, paths: list[str]) -> None:
        self.index.prefetch(paths)
        for path in paths:
            self.index.facts(path)


def compile_site_files(index: ProjectIndex) -> list[str]:
    """The project files that hold compile sites, parsed, as a lint run finds them: files
    whose text may compile (or call a configured wrapper), then files that call the project's
    own wrappers (functions that compile their parameter), which become configured wrappers of
    the index's store."""
    candidates = Loader(index, (), []).compiling_files(index.store.compile_functions)
    return [path for path in candidates if (facts := index.facts(path)) is not None and facts.compile_sites]


def find_sites(index: ProjectIndex, paths: "set[str] | None" = None, max_depth: int = 6, namesakes: bool = False) -> list[SiteResolution]:
    """Every compile site of the project (with ``paths``, of those files only), resolved,
    sorted by file and position; with ``namesakes``, the calls of a wrapper's name that
    compile nothing too (``not-torch``: ``RegionFinder.resolve``)."""
    finder = RegionFinder(index, max_depth)
    out: list[SiteResolution] = []
    for path in sorted(compile_site_files(index)):
        if paths is not None and path not in paths:
            continue
        facts = index.facts(path)
        if facts is not None:
            out.extend(finder.resolve(facts, namesakes))
    out.sort(key=lambda r: (r.site_path, r.site.span.line, r.site.span.column))
    return out


def syntax_checks_in_background(index: ProjectIndex, paths: Sequence[str]):
    """With ``--jobs`` above 1 and enough source, the syntax of ``paths`` is checked in a
    worker process (``parallel.BackgroundSyntaxCheck``). None when that would not pay, or
    files come from a reader (an editor's buffers) rather than from disk."""
    if index.reader is not read_bytes or index.jobs == 1:
        return None
    from recompile_lint.analysis import parallel

    if parallel.effective_jobs(index.jobs) < 2:
        return None
    paths = sorted(set(paths))
    try:
        sizes = [os.path.getsize(p) for p in paths]
    except OSError:
        return None
    if sum(sizes) < parallel.MIN_PARALLEL_BYTES:
        return None
    return parallel.BackgroundSyntaxCheck(paths, sizes, index.max_bytes)


def add_guard_sources(guarded: Guarded, guards) -> None:
    """Add the values of the guard model's guards to ``guarded``: each global it guards (and the
    attributes of its members), each scalar attribute (``current_epoch`` of
    ``L['self'].trainer.current_epoch``: a file that can write it holds the writes), the
    environment."""
    for guard in guards:
        storage = guard.storage
        if storage.kind in ("global", "member"):
            guarded.globals.add((storage.path, storage.name))
        elif storage.kind == "environ":
            guarded.environ = True
        if storage.kind == "attribute" and guard.value_kind in ("int", "str", "float", "bool", "enum", "unknown", "none"):
            guarded.attributes.add(storage.name)
        elif storage.kind == "member":
            guarded.attributes.update(member[1:] for member in storage.members if member.startswith("."))


def guarded_names(index: ProjectIndex, regions: Sequence[CompiledRegion], only: set[str] | None = None) -> Guarded:
    """The values regions read that a change elsewhere could make Dynamo recompile:
    module-level values (of the function's module or a project module it imports) and
    attributes that the regions' classes initialise to a Python scalar. Functions, classes
    and modules are not values a rule follows; names imported from outside the project
    cannot be changed by a project file in a way the index records. With ``only``, just the
    functions in those files are considered."""
    guarded = Guarded(globals=set(), attributes=set())
    for facts, fn in reached_functions(index, regions, only):
        free = fn.identifiers - fn.local_names
        if "environ" in free or "getenv" in free:
            guarded.environ = True
        guard_module_values(index, guarded, facts, free)
        for path in read_modules(index, facts, fn):
            other = index.facts(path)
            if other is not None:
                guard_module_values(index, guarded, other, free)
        cls = facts.cls(fn.class_name) if fn.class_name else None
        if cls is not None:
            for f, c in index.mro(facts, cls):
                guarded.attributes.update(attr for attr, init in c.attrs if attr in free and init.kind not in ("tensor", "object", "function"))
    return guarded


def modules_read_by_reached(index: ProjectIndex, regions: Sequence[CompiledRegion], only: set[str] | None = None) -> list[str]:
    """The project modules ``guarded_names`` reads first: those whose values the functions
    the regions reach can read (``read_modules``). Known up front, they can be parsed as one
    batch (in workers with ``--jobs``) instead of one by one as it comes to them."""
    return list(dict.fromkeys(path for facts, fn in reached_functions(index, regions, only) for path in read_modules(index, facts, fn)))


def reached_functions(index: ProjectIndex, regions: Sequence[CompiledRegion], only: set[str] | None = None) -> Iterator[tuple[ModuleFacts, FunctionFacts]]:
    """Each function the regions reach, once, with its module's facts (with ``only``, just
    those in these files)."""
    done: set = set()
    for region in regions:
        for ref, _, _ in region.reached:
            if ref in done or (only is not None and ref.path not in only):
                continue
            done.add(ref)
            facts = index.facts(ref.path)
            fn = facts.function(ref.qualname) if facts else None
            if facts is not None and fn is not None:
                yield facts, fn


def read_modules(index: ProjectIndex, facts: ModuleFacts, fn: FunctionFacts) -> Iterator[str]:
    """The files of the project modules whose values ``fn`` can read by name: those its
    module imports, and those its body reaches through a dotted chain from an import
    (``torch.fx._symbolic_trace.flag`` after ``import torch``). Its own file left out."""
    for target in [target for _, target in facts.imports] + [facts.resolve(chain) for chain in sorted(fn.module_chains)]:
        path = index.module_path(target, facts.path) if "." in target or target in index.by_module else None
        if path is not None and path != facts.path:
            yield path


def guard_module_values(index: ProjectIndex, guarded: Guarded, facts, names: Iterable[str]) -> None:
    """Guard the module-level values of ``facts`` among ``names``."""
    for name in names:
        binding = facts.binding(name)
        if binding is None or binding.kind in NOT_VALUES:
            continue
        if binding.kind == "imported":
            # ``from config import LR``: the value lives in a project module, or it is
            # something of a library (``from torch import Tensor``) no rule follows.
            found = index.global_binding(facts, name)
            if found is None or found[1].kind in NOT_VALUES:
                continue
            guarded.globals.add((found[0].path, found[1].name))
        guarded.globals.add((facts.path, name))


# Binding kinds that are not values a recompile rule follows through mutations.
NOT_VALUES = frozenset({"function", "class", "module"})


def report_scope(index: ProjectIndex, regions: Sequence[CompiledRegion], given: set[str]) -> set[str]:
    """The files outside ``given`` whose functions rules must check too, because a finding
    there can have a location in ``given`` (where a commit changed the code): functions of
    a region compiled in a given file (the compile site), and functions that read a value a
    given file can change. The second is a text test, as the mutation scan's
    (``textscan.may_mutate``): a module-level value of module ``m`` changes in ``m`` itself
    (``global x``, an assignment at the start of a line) or in a file that names ``m`` and can
    write the name; an attribute that the function's class initialises to a Python value
    (``self.step = 0``) wherever its name can be written. These are the values
    ``guarded_names`` follows. It may choose too much, never too little, for those two kinds
    of location: the rules decide.
    """
    from recompile_lint.analysis.textscan import WORD, writes_attribute, writes_global

    texts = {path: index.text(path) or "" for path in sorted(given)}
    words = {path: frozenset(WORD.findall(text)) for path, text in texts.items()}
    every_word = frozenset().union(*words.values()) if words else frozenset()

    def owner_of(facts: ModuleFacts, name: str) -> str | None:
        """The file holding the module-level value ``name`` read in ``facts``' module."""
        binding = facts.binding(name)
        if binding is None or binding.kind in NOT_VALUES:
            return None
        if binding.kind != "imported":
            return facts.path
        found = index.global_binding(facts, name)
        return found[0].path if found is not None and found[1].kind not in NOT_VALUES else None

    def changes(facts: ModuleFacts, name: str, attributes: set[str]) -> bool:
        """Whether a given file's text can change the value ``name`` read in ``facts``' module
        (``attributes``: those the function's class initialises to a Python value)."""
        owner = owner_of(facts, name)
        for path, text in texts.items():
            if name not in words[path]:
                continue
            if owner is None:
                if name in attributes and writes_attribute(text, frozenset({name})):
                    return True
            elif owner == path:
                if re.search(rf"^[ \t]*(?:global\b[^\n]*\b{name}\b|{name}\s*(?:[-+*/%&|^@]|//|\*\*|>>|<<)?=(?!=))", text, re.M):
                    return True
            elif index.module_last_name(owner) in words[path] and writes_global(text, name):
                return True
        return False

    out: set[str] = set()
    for region in regions:
        compiled_here = region.site_path in given
        for ref, _, _ in region.reached:
            if ref.path in given or ref.path in out:
                continue
            if compiled_here:
                out.add(ref.path)
                continue
            facts = index.facts(ref.path)
            fn = facts.function(ref.qualname) if facts is not None else None
            if facts is None or fn is None:
                continue
            read = (fn.identifiers - fn.local_names) & every_word
            if not read:
                continue
            attributes: set[str] = set()
            cls = facts.cls(fn.class_name) if fn.class_name else None
            if cls is not None:
                for _, found in index.mro(facts, cls):
                    attributes.update(attr for attr, init in found.attrs if init.kind not in ("tensor", "object", "function"))
            if any(changes(facts, name, attributes) for name in sorted(read)):
                out.add(ref.path)
    return out
