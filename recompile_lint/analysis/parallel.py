"""Parse many files' facts in worker processes, when there are enough of them to pay.

``parse_in_parallel`` is the one entry point: it takes decoded sources and returns, per path,
the same ``ModuleFacts`` (or ``FileError``) a single-process parse gives, so the engine can
use it for a batch of files and fall back to its lazy per-file parse for the rest. Workers
only run ``ast.parse`` and ``collect_facts``: pure functions of the text, nothing imported
from the linted project. Any failure of the pool itself (no semaphores in a sandbox, a
killed worker) falls back to parsing in this process: parallelism never changes results.
"""

from __future__ import annotations

import ast
import gc
import multiprocessing
import os
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Iterable, Sequence, TypeVar

from recompile_lint.analysis.facts import ModuleFacts, collect_facts
from recompile_lint.analysis.parsing import PARSE_ERRORS, module_name_for, on_deep_stack, parse_error, parse_source, raise_recursion_limit, syntax_error
from recompile_lint.models import FileError
from recompile_lint.source import DEFAULT_MAX_FILE_BYTES

# Below this much source, starting workers (~50 ms each with fork, more with spawn) and
# sending facts back costs more than parsing here: ast.parse + collect_facts run at roughly
# 1-2 MB/s per core.
MIN_PARALLEL_BYTES = 1_000_000
# Text tests cost a small fraction of a parse per byte: below this much text on disk, starting
# workers for them costs more than it saves.
MIN_SELECT_BYTES = 4_000_000
# Chunks per worker: enough that the last one to finish leaves the other workers idle only
# briefly (with 4, on the torch tree's batches, the workers sat idle for 5-8% of a batch's
# time; with 16, 2-3%), few enough to keep the per-task overhead (a pickle round trip, about
# a millisecond) small.
CHUNKS_PER_WORKER = 16

Source = tuple[str, str]  # (path, decoded text)
T = TypeVar("T")


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def effective_jobs(jobs: int) -> int:
    """Worker count for ``--jobs``: 0 means one per usable core, and never more than that (a
    repository's ``jobs = 32`` must not start 32 workers on a two-core machine: each holds
    a copy of the analysis)."""
    cores = usable_cores()
    return min(jobs, cores) if jobs > 0 else cores


def worth_parallel(sources: Sequence[Source], jobs: int, min_bytes: int | None = None) -> bool:
    """Whether parsing ``sources`` in ``jobs`` workers is expected to beat one process."""
    threshold = MIN_PARALLEL_BYTES if min_bytes is None else min_bytes
    return effective_jobs(jobs) > 1 and len(sources) > 1 and sum(len(text) for _, text in sources) >= threshold


# Source bytes whose ``ast`` trees a forked parse worker keeps until it ends (see
# ``_parse_chunk``): about 22 bytes of tree per byte of source, so up to ~180 MiB a worker.
KEEP_TREES_BYTES = 8_000_000
_kept_trees: list[ast.Module] = []
_kept_bytes = 0


def parse_one(path: str, text: str, compile_functions: tuple[str, ...], keep: bool = False) -> ModuleFacts | FileError:
    """Facts of one file, or the error the index records for it (same messages). With
    ``keep``, its tree is kept while ``KEEP_TREES_BYTES`` allows (``_parse_chunk``)."""
    global _kept_bytes
    try:
        module, is_package, _ = module_name_for(path)
        tree, facts = on_deep_stack(_collect, path, text, module, is_package, compile_functions)
    except PARSE_ERRORS as exc:
        return parse_error(path, exc)
    if keep and _kept_bytes + len(text) <= KEEP_TREES_BYTES:
        _kept_trees.append(tree)
        _kept_bytes += len(text)
    return facts


def _collect(path: str, text: str, module: str, is_package: bool, compile_functions: tuple[str, ...]) -> tuple[ast.Module, ModuleFacts]:
    raise_recursion_limit()
    tree = parse_source(text, path)
    return tree, collect_facts(tree, path, module, is_package, text, compile_functions)


def _parse_chunk(chunk: list[Source], compile_functions: tuple[str, ...], keep: bool = False) -> list[tuple[str, ModuleFacts | FileError]]:
    """The facts of a chunk. ``keep`` (forked workers only): freeing a file's ``ast`` tree
    costs about 8% of parsing it, node by node, and a forked worker ends without freeing
    anything (``os._exit``), so it keeps trees instead, up to ``KEEP_TREES_BYTES`` of source."""
    return [(path, parse_one(path, text, compile_functions, keep)) for path, text in chunk]


def make_chunks(sources: Sequence[T], count: int, size: Callable[[T], int] = lambda source: len(source[1])) -> list[list[T]]:  # type: ignore[index]
    """Split into ``count`` chunks of similar total ``size`` (by default, of text), largest
    file first (greedy). The chunks come largest first too: a pool hands them out in order,
    so a chunk that one large file makes long starts early and short ones fill the end."""
    count = max(1, min(count, len(sources)))
    chunks: list[list[T]] = [[] for _ in range(count)]
    sizes = [0] * count
    for source in sorted(sources, key=size, reverse=True):
        i = sizes.index(min(sizes))
        chunks[i].append(source)
        sizes[i] += size(source)
    order = sorted(range(count), key=lambda i: -sizes[i])
    return [chunks[i] for i in order if chunks[i]]


def _context() -> multiprocessing.context.BaseContext:
    # fork is the cheapest start and the workers need nothing but this module; it is unsafe
    # only with other threads alive, so a threaded host (an editor, a test runner) gets the
    # platform default instead.
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def parse_in_parallel(
    sources: Iterable[Source],
    compile_functions: tuple[str, ...] = (),
    jobs: int = 0,
    *,
    min_bytes: int | None = None,
) -> dict[str, ModuleFacts | FileError]:
    """Facts (or the parse error) of every source, computed in up to ``jobs`` processes.

    ``jobs``: 0 = one per core, 1 = in this process. Small batches (under ``min_bytes`` of
    source, default ``MIN_PARALLEL_BYTES``) are parsed here, because workers would not pay.
    The result is the same whichever way it was computed.
    """
    items = list(sources)
    if not worth_parallel(items, jobs, min_bytes):
        return dict(_parse_chunk(items, compile_functions))
    workers = min(effective_jobs(jobs), len(items))
    chunks = make_chunks(items, workers * CHUNKS_PER_WORKER)
    results: dict[str, ModuleFacts | FileError] = {}
    try:
        # Workers build long-lived acyclic facts too: no cyclic collector (see engine).
        context = _context()
        keep = context.get_start_method() == "fork"
        with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=gc.disable) as pool:
            for part in pool.map(_parse_chunk, chunks, [compile_functions] * len(chunks), [keep] * len(chunks)):
                results.update(part)
    except Exception:
        # No usable process pool here (restricted sandbox, killed worker, a result that does
        # not pickle): the same answer, serially. A real error in collect_facts raises again
        # below, exactly as it would in a single-process run.
        missing = [item for item in items if item[0] not in results]
        results.update(_parse_chunk(missing, compile_functions))
    # Input order, so callers that iterate the result see a stable order.
    return {path: results[path] for path, _ in items}


# The index and the collecting function the call-site workers use (they are forked with them:
# see call_sites_in_parallel).
_forked_index = None
_forked_collect: Callable | None = None


def call_sites_in_parallel(
    index, files: Sequence[tuple[str, tuple[str, ...]]], jobs: int, collect: Callable[[object, str, str, set[str]], tuple | None]
) -> dict[str, tuple | None] | None:
    """``collect(index, path, text, names)`` (``callsites.file_call_sites``) of each (path,
    names) in up to ``jobs`` workers; None
    when that would not pay or cannot be done (the caller collects them itself).

    The workers are forked from this process with ``index`` as it is, so each reads the
    facts and text of its files from there: they must have been read and parsed already (a
    worker's own reads would not reach this process). Only a fork start can do that.
    """
    global _forked_index, _forked_collect
    sizes = [(path, names, len(index.text(path) or "")) for path, names in files]
    if effective_jobs(jobs) < 2 or len(files) < 2 or sum(size for _, _, size in sizes) < MIN_PARALLEL_BYTES:
        return None
    workers = min(effective_jobs(jobs), len(files))
    chunks = [[(path, names) for path, names, _ in chunk] for chunk in make_chunks(sizes, workers * CHUNKS_PER_WORKER, size=lambda item: item[2])]
    results: dict[str, tuple | None] = {}
    _forked_index, _forked_collect = index, collect
    try:
        context = _context()
        if context.get_start_method() != "fork":
            return None
        with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=gc.disable) as pool:
            for part in pool.map(_call_sites_chunk, chunks):
                results.update(part)
    except Exception:  # noqa: BLE001 - no usable pool: the caller collects them itself
        return None
    finally:
        _forked_index = _forked_collect = None
    return results


def _call_sites_chunk(files: list[tuple[str, tuple[str, ...]]]) -> dict[str, tuple | None]:
    index, collect = _forked_index, _forked_collect
    return {path: collect(index, path, index.text(path) or "", set(names)) for path, names in files}


def _read(path: str, limit: int) -> str | None:
    """A worker's read of a file from disk; None where it cannot be read or decoded, or is
    larger than ``limit`` (the main process then reads it and records the error itself)."""
    from recompile_lint.source import SourceError, decode_source, read_bytes

    try:
        return decode_source(read_bytes(path, limit), path)
    except (SourceError, OSError):
        return None


def _select_chunk(paths: list[str], test: Callable[[str, str], bool], limit: int = DEFAULT_MAX_FILE_BYTES) -> tuple[list[str], list[str]]:
    """(the paths whose text passes ``test``, the paths that could not be read or decoded)."""
    chosen: list[str] = []
    unread: list[str] = []
    for path in paths:
        text = _read(path, limit)
        if text is None:
            unread.append(path)
        elif test(path, text):
            chosen.append(path)
    return chosen, unread


def select_in_parallel(
    paths: Sequence[str], test: Callable[[str, str], bool], jobs: int, meanwhile: Callable[[], None] | None = None, limit: int = DEFAULT_MAX_FILE_BYTES
) -> tuple[set[str], list[str]] | None:
    """(the paths whose text passes ``test``, the paths the workers could not read): up to
    ``jobs`` worker processes read the files from disk and test them, while this process
    runs ``meanwhile``. None when that would not pay (too little text) or the pool failed:
    the caller tests here (and runs ``meanwhile`` if it has not run)."""
    sizes = []
    for path in paths:
        try:
            sizes.append((path, os.path.getsize(path)))
        except OSError:
            sizes.append((path, 0))
    if effective_jobs(jobs) < 2 or len(paths) < 2 or sum(size for _, size in sizes) < MIN_SELECT_BYTES:
        return None
    workers = min(effective_jobs(jobs), len(paths))
    chunks = [[path for path, _ in chunk] for chunk in make_chunks(sizes, workers * CHUNKS_PER_WORKER, size=lambda item: item[1])]
    chosen: set[str] = set()
    unread: list[str] = []
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=_context(), initializer=gc.disable) as pool:
            futures = [pool.submit(_select_chunk, chunk, test, limit) for chunk in chunks]
            if meanwhile is not None:
                meanwhile()
            for future in futures:
                part, missing = future.result()
                chosen.update(part)
                unread.extend(missing)
    except Exception:  # noqa: BLE001 - no usable pool: the caller tests every file itself
        return None
    return chosen, unread


# ---- syntax checks in the background ---------------------------------------------------------


def _check_chunk(paths: list[str], skip: Callable[[str], bool] = lambda path: False, limit: int = DEFAULT_MAX_FILE_BYTES) -> list[tuple[str, FileError | None | bool]]:
    """(path, error or None) per file; False where the file could not be read or decoded
    here, or is larger than ``limit`` (the main process reads it and reports that itself),
    or ``skip`` says it need not be checked."""
    out: list[tuple[str, FileError | None | bool]] = []
    for path in paths:
        text = None if skip(path) else _read(path, limit)
        out.append((path, False if text is None else syntax_error(path, text)))
    return out


def _worker_setup(recursion_limit: int) -> None:
    gc.disable()
    sys.setrecursionlimit(recursion_limit)


class BackgroundSyntaxCheck:
    """Syntax checks of files the analysis may never parse, run in one worker process while
    the analysis goes on in this one (a second core is otherwise idle whenever this one works
    alone).

    The worker runs at a lower priority, so it takes the second core when this process works
    alone and yields it to the parse workers when they run. ``results()`` waits for it: path
    -> FileError, or None for a file that compiles. The chunks the worker has not claimed by
    then are checked in this process (which has nothing else left to do), from the last one
    back while the worker goes on from the front, skipping files the analysis has parsed
    since. Files that could not be read are left out, and so are the worker's files when it
    failed: the caller checks those itself, so the outcome never depends on this. A plain
    process and a lock, not a pool: a pool's thread would make every later fork unsafe.

    A file the analysis parses anyway needs no check: ``parsed(path)`` says so, and the
    worker passes over such files from then on. The analysis parses the larger modules more
    often (the ones regions reach), so the worker takes the smaller files first (``sizes``).
    """

    def __init__(self, paths: Sequence[str], sizes: Sequence[int] | None = None, max_bytes: int = DEFAULT_MAX_FILE_BYTES):
        self._process = None
        self._receive = None
        self._max_bytes = max_bytes
        if sizes is not None:
            paths = [path for _, path in sorted(zip(sizes, paths))]
        self._number = {path: number for number, path in enumerate(paths)}
        size = max(1, len(paths) // 64)
        self._chunks = [list(paths[i : i + size]) for i in range(0, len(paths), size)]
        self._parsed = None
        try:
            context = _context()
            # [next chunk from the front, one past the next chunk from the back]
            self._bounds = context.Array("i", [0, len(self._chunks)])
            # Per path (in ``paths`` order): 1 once the analysis has parsed it.
            self._parsed = context.Array("b", len(paths), lock=False)
            self._receive, send = context.Pipe(duplex=False)
            args = (self._chunks, self._bounds, self._parsed, self._number, send, sys.getrecursionlimit(), max_bytes)
            self._process = context.Process(target=_syntax_worker, args=args, daemon=True)
            self._process.start()
            send.close()
        except Exception:  # noqa: BLE001 - no worker: this process checks every chunk
            self.close()
            self._bounds = None

    def parsed(self, path: str) -> None:
        """The analysis parsed ``path`` (or will): the worker need not check it."""
        number = self._number.get(path)
        if number is not None and self._parsed is not None:
            self._parsed[number] = 1

    def results(self, skip: Callable[[str], bool] = lambda path: False) -> dict[str, FileError | None]:
        out: dict[str, FileError | None] = {}
        # One chunk claimed at a time (the worker goes on meanwhile); with no worker, all.
        numbers = range(len(self._chunks)) if self._bounds is None else iter(lambda: _claim(self._bounds, back=True), None)
        found = [_check_chunk([path for path in self._chunks[number] if not skip(path)], limit=self._max_bytes) for number in numbers]
        try:
            if self._receive is not None:
                found.extend(self._receive.recv())
        except Exception:  # noqa: BLE001 - a dead worker: its files are left to the caller
            pass
        finally:
            self.close()
        for chunk in found:
            for path, result in chunk:
                if result is not False:
                    out[path] = result  # type: ignore[assignment]
        return out

    def close(self) -> None:
        if self._receive is not None:
            self._receive.close()
            self._receive = None
        if self._process is not None:
            if self._process.is_alive():
                self._process.terminate()
            self._process.join()
            self._process = None


def _claim(bounds, back: bool) -> int | None:
    """The next chunk to check, from the front or the back; None when none is left."""
    with bounds.get_lock():
        if bounds[0] >= bounds[1]:
            return None
        if back:
            bounds[1] -= 1
            return bounds[1]
        bounds[0] += 1
        return bounds[0] - 1


def _syntax_worker(chunks: list[list[str]], bounds, parsed, numbers: dict[str, int], send, recursion_limit: int, limit: int = DEFAULT_MAX_FILE_BYTES) -> None:
    _worker_setup(recursion_limit)
    try:
        os.nice(10)
    except (AttributeError, OSError):
        pass
    found = []
    while (number := _claim(bounds, back=False)) is not None:
        found.append(_check_chunk(chunks[number], lambda path: parsed[numbers[path]] == 1, limit))
    send.send(found)
    send.close()
