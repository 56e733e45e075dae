"""Capture every recompile in-process, without environment variables.

Channels (see GROUND_TRUTH.md, "Capturing recompiles in-process"):

* the ``recompiles`` artifact logger (``torch._dynamo.guards.__recompiles``), enabled through
  ``torch._logging._internal.log_state`` because ``set_logs`` is ignored when the user has
  ``TORCH_LOGS`` set; ``recompiles_verbose`` is listened to as well, in case the user enabled it;
* the ``recompile_limit`` WARNING on ``torch._dynamo.convert_frame``;
* cache entries per code object (``_debug_get_cache_entry_list`` over the code objects Dynamo
  has seen), which also count graphs that ``isolate_recompiles`` or a stance compiled silently;
* ``get_compilation_metrics()`` for the number of compiles per code object.

Most of these are private torch APIs: each is reached through a small function that returns a
neutral value when the API moved, so a torch upgrade degrades the evidence, never crashes.
torch is imported only when a recorder is entered.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from types import CodeType, TracebackType
from typing import Any

from recompile_lint.verify.reasons import parse_limit_args, parse_recompile_message
from recompile_lint.verify.results import LimitHit, RecompileEvent

RECOMPILES_LOGGER = "torch._dynamo.guards.__recompiles"
RECOMPILES_VERBOSE_LOGGER = "torch._dynamo.guards.__recompiles_verbose"
LIMIT_LOGGER = "torch._dynamo.convert_frame"
_ARTIFACTS = ("recompiles",)

CodeKey = tuple[str, int, str]  # (file, first line, function name)


@dataclass(frozen=True)
class Recording:
    """What a recorder saw, as plain data."""

    events: tuple[RecompileEvent, ...]
    limit_hits: tuple[LimitHit, ...]
    graphs: tuple[tuple[CodeKey, int], ...]  # per code object: graphs compiled (cache entries)

    def graphs_for(self, file: str, first_line: int | None = None, name: str | None = None) -> int:
        """Graphs of the code objects defined in ``file`` (at ``first_line``, named ``name``)."""
        counts = [
            n for (f, line, fn), n in self.graphs
            if f == file and (first_line is None or line == first_line) and (name is None or fn == name)
        ]
        return max(counts, default=0)


def _log_state() -> Any:
    """torch's logging state object (private), or None when it moved."""
    try:
        from torch._logging import _internal

        return _internal.log_state
    except (ImportError, AttributeError):
        return None


def _compile_id() -> str:
    """The compile id (``0/3``) of the compile in progress, or ``""``."""
    try:
        from torch._guards import CompileContext

        trace_id = CompileContext.current_trace_id()
        return str(trace_id.compile_id) if trace_id is not None else ""
    except Exception:  # noqa: BLE001 - private API; evidence only
        return ""


def _metrics() -> list[Any]:
    try:
        from torch._dynamo.utils import get_compilation_metrics

        return list(get_compilation_metrics())
    except Exception:  # noqa: BLE001 - private API; evidence only
        return []


def _seen_codes() -> list[CodeType]:
    """Every code object Dynamo has tried to compile since the last reset (private)."""
    try:
        from torch._dynamo import convert_frame

        refs = list(convert_frame.input_codes.seen)
    except Exception:  # noqa: BLE001 - private API; evidence only
        return []
    codes = []
    for ref in refs:
        code = ref()
        if isinstance(code, CodeType):
            codes.append(code)
    return codes


def cache_entries(target: Any) -> int:
    """Graphs cached for a function or code object (0 when torch cannot say)."""
    try:
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list

        code = target if isinstance(target, CodeType) else getattr(target, "__code__", target)
        return len(_debug_get_cache_entry_list(code))
    except Exception:  # noqa: BLE001 - private API; evidence only
        return 0


class _Handler(logging.Handler):
    """Feeds log records to the recorder; never raises into torch."""

    def __init__(self, recorder: "Recorder") -> None:
        super().__init__(level=logging.DEBUG)
        self._recorder = recorder

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._recorder._on_record(record)
        except Exception:  # noqa: BLE001 - a parsing problem must not break the user's run
            pass


class Recorder:
    """Context manager that records recompiles, limit hits and graphs per code object.

    Usage::

        with Recorder() as rec:
            run_compiled_code()
        rec.events, rec.limit_hits, rec.recording()

    It works whether or not ``TORCH_LOGS`` is set and restores every logger level, handler,
    ``propagate`` flag and enabled artifact it changed. When the user did not ask for recompile
    logs, the records stay out of their console.
    """

    def __init__(self) -> None:
        self.events: list[RecompileEvent] = []
        self.limit_hits: list[LimitHit] = []
        self._lock = threading.Lock()
        self._handler = _Handler(self)
        self._saved_loggers: list[tuple[logging.Logger, int, bool]] = []
        self._added_artifacts: list[str] = []
        self._metrics_before: set[int] = set()
        self._active = False

    def __enter__(self) -> "Recorder":
        import torch  # noqa: F401 - the recorder only means something with torch loaded

        # Import the modules that create the artifact loggers first: creating one reconfigures
        # it from torch's own logging state and would undo what is set below.
        try:
            import torch._dynamo.convert_frame  # noqa: F401
            import torch._dynamo.guards  # noqa: F401
        except ImportError:
            pass
        state = _log_state()
        if state is not None:
            for artifact in _ARTIFACTS:
                try:
                    if not state.is_artifact_enabled(artifact):
                        state.enable_artifact(artifact)
                        self._added_artifacts.append(artifact)
                except Exception:  # noqa: BLE001 - private API
                    pass
        user_asked = not self._added_artifacts
        for name in (RECOMPILES_LOGGER, RECOMPILES_VERBOSE_LOGGER):
            logger = logging.getLogger(name)
            self._saved_loggers.append((logger, logger.level, logger.propagate))
            if logger.getEffectiveLevel() > logging.DEBUG or logger.level == logging.NOTSET:
                logger.setLevel(logging.DEBUG)
            if not user_asked:
                # The user did not ask for these lines: record them without printing them.
                logger.propagate = False
            logger.addHandler(self._handler)
        limit_logger = logging.getLogger(LIMIT_LOGGER)
        self._saved_loggers.append((limit_logger, limit_logger.level, limit_logger.propagate))
        if limit_logger.getEffectiveLevel() > logging.WARNING:
            limit_logger.setLevel(logging.WARNING)
        limit_logger.addHandler(self._handler)
        self._metrics_before = {id(m) for m in _metrics()}
        self._active = True
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._graphs = self._count_graphs()
        self._active = False
        for logger, level, propagate in self._saved_loggers:
            logger.removeHandler(self._handler)
            logger.setLevel(level)
            logger.propagate = propagate
        self._saved_loggers.clear()
        state = _log_state()
        if state is not None:
            for artifact in self._added_artifacts:
                try:
                    state.artifact_names.discard(artifact)
                except Exception:  # noqa: BLE001 - private API
                    pass
        self._added_artifacts.clear()

    def _on_record(self, record: logging.LogRecord) -> None:
        if record.name in (RECOMPILES_LOGGER, RECOMPILES_VERBOSE_LOGGER):
            event = parse_recompile_message(record.getMessage(), _compile_id())
            if event is not None:
                with self._lock:
                    self.events.append(event)
        elif record.name == LIMIT_LOGGER and record.levelno >= logging.WARNING:
            if "recompile_limit" in str(record.msg) or "cache_size_limit" in str(record.msg) or (
                isinstance(record.args, tuple) and record.args and "limit" in str(record.args[0])
            ):
                hit = parse_limit_args(record.args)
                if hit is not None:
                    with self._lock:
                        self.limit_hits.append(hit)

    def _count_graphs(self) -> dict[CodeKey, int]:
        counts: dict[CodeKey, int] = {}
        for metric in _metrics():
            if id(metric) in self._metrics_before or getattr(metric, "co_name", None) is None:
                continue
            key = (str(metric.co_filename), int(metric.co_firstlineno), str(metric.co_name))
            counts[key] = counts.get(key, 0) + 1
        for code in _seen_codes():
            key = (code.co_filename, code.co_firstlineno, code.co_name)
            counts[key] = max(counts.get(key, 0), cache_entries(code))
        return {key: n for key, n in counts.items() if n}

    def graphs(self) -> dict[CodeKey, int]:
        """Graphs per code object: live while recording, frozen at exit."""
        return self._count_graphs() if self._active else dict(getattr(self, "_graphs", {}))

    def recording(self) -> Recording:
        """Everything recorded so far, as frozen data."""
        with self._lock:
            events, hits = tuple(self.events), tuple(self.limit_hits)
        return Recording(events=events, limit_hits=hits, graphs=tuple(sorted(self.graphs().items())))
