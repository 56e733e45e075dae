"""Run the CLI with facts parsed in batches through ``recompile_lint.parallel``.

Usage: ``python bench/prefetch_harness.py [recompile-lint options] PATHS`` (same options as
``recompile-lint``; ``-j N`` picks the workers).

The engine parses facts lazily, one file at a time. This harness swaps in a ``ProjectIndex``
that parses each batch the engine is about to ask for (every file that may compile, then
every file a mutation scan selects) with ``parse_in_parallel`` first, so ``--jobs`` can be
measured before the engine calls it itself. ``PrefetchingIndex.prefetch`` is written to be
moved into ``ProjectIndex`` as it is.
"""

from __future__ import annotations

import sys
from typing import Iterable

from recompile_lint import engine
from recompile_lint.index import ProjectIndex
from recompile_lint.models import FileError
from recompile_lint.parallel import parse_in_parallel, worth_parallel


class PrefetchingIndex(ProjectIndex):
    """A ProjectIndex that parses batches of files in worker processes."""

    jobs = 1

    def prefetch(self, paths: Iterable[str]) -> None:
        """Parse the facts of ``paths`` now, in parallel when the batch is worth it.

        Files already parsed or cached are skipped; errors are recorded exactly as
        ``facts()`` records them; results go to the cache as ``facts()`` would put them.
        """
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
            return  # facts() parses them one by one, as before
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

    # The two places the engine asks for batches; in ProjectIndex they would be explicit
    # calls (see the report), here they are intercepted.
    _started = False

    def facts(self, path: str):
        if not self._started:
            self._started = True
            wrappers = tuple(w.rsplit(".", 1)[-1] for w in self.store.compile_functions)
            self.prefetch([p for p in self.paths if self.may_compile(p, wrappers)])
        return super().facts(path)

    def scan_for_mutations(self, names: set[str]) -> None:
        # Let the index choose the files as it does, but collect them instead of parsing
        # one by one; then parse the batch and hand the facts over.
        wanted: list[str] = []
        self.facts = wanted.append  # type: ignore[method-assign]
        try:
            super().scan_for_mutations(names)
        finally:
            del self.facts
        self.prefetch(wanted)
        for path in wanted:
            self.facts(path)
        self._mutations = None


def main() -> None:
    jobs = 1
    argv = sys.argv[1:]
    for i, arg in enumerate(argv):
        if arg in ("-j", "--jobs") and i + 1 < len(argv):
            jobs = int(argv[i + 1])
        elif arg.startswith("--jobs="):
            jobs = int(arg.split("=", 1)[1])
    PrefetchingIndex.jobs = jobs
    engine.ProjectIndex = PrefetchingIndex  # type: ignore[misc]
    from recompile_lint.cli import main as cli_main

    sys.argv = ["recompile-lint", *argv]
    cli_main()


if __name__ == "__main__":
    main()
