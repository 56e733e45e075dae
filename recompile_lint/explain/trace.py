"""Read a ``TORCH_TRACE`` directory: the structured log tlparse reads.

Each file is one process. A line is a glog prefix and a JSON object; a payload, when the object
says ``has_payload``, follows on lines that start with a tab. What this reads (torch 2.13):

* ``{"str": [path, n]}``: the interned file names that ``dynamo_start`` stacks refer to;
* ``dynamo_start`` with ``frame_id`` / ``frame_compile_id``: the compiled frame (the last entry
  of ``stack``: ``name``, ``filename``, ``line``);
* the ``recompile_reasons`` artifact: a JSON list of reasons (a single reason is written as
  plain text), one per cache entry, as the ``recompiles`` channel prints them;
* ``compilation_metrics``: ``co_name``, ``co_filename``, ``co_firstlineno`` of each compile, and
  ``fail_type`` / ``fail_reason`` where the recompile limit refused one ("Limit type:
  recompile_limit"; ``co_name`` is null there).

A line that is not JSON (a file cut short by a crash) is skipped with a warning.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from recompile_lint.explain.evidence import Evidence
from recompile_lint.verify.reasons import parse_reason
from recompile_lint.verify.results import LimitHit, RecompileEvent

MAX_LINE = 1 << 22  # payload lines of graphs can be long; nothing useful here is that long
_PREFIX = re.compile(r"^[VIWEDC]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ .+?:\d+\] (?=\{)")
_LIMIT_TYPE = re.compile(r"Limit type: (\w+)|\b(recompile_limit|cache_size_limit|accumulated_\w+_limit)\b")
_LIMIT_VALUE = re.compile(r"currently set to (\d+)|\((\d+)\)")


def looks_like_trace(head: str) -> bool:
    """Whether the first lines of a file are structured trace lines."""
    lines = [line for line in head.splitlines() if line.strip()][:5]
    return bool(lines) and all(_PREFIX.match(line) or line.startswith("\t") for line in lines)


@dataclass
class _Compile:
    """One compile attempt of one frame, as the trace tells it (in the order it happened)."""

    cid: str
    reasons: list[str] | None = None  # None: the first compile of the frame (no recompile)
    frame: tuple[str, str, int] | None = None  # name, file, first line (from dynamo_start)
    metrics: dict[str, Any] | None = None


@dataclass
class _Process:
    """What one trace file (one process) said. Compile ids restart after ``torch._dynamo.reset()``,
    so compiles are kept in order, each tied to the frame that was current at the time."""

    strings: dict[int, str] = field(default_factory=dict)
    frames: dict[int, tuple[str, str, int]] = field(default_factory=dict)  # frame id -> latest start
    compiles: list[_Compile] = field(default_factory=list)
    open: dict[str, _Compile] = field(default_factory=dict)  # compile id -> its latest record

    def record(self, cid: str) -> _Compile:
        current = self.open.get(cid)
        if current is None:
            current = _Compile(cid)
            self.compiles.append(current)
            self.open[cid] = current
        return current


def _compile_id(meta: dict[str, Any]) -> str:
    frame, number = meta.get("frame_id"), meta.get("frame_compile_id")
    if isinstance(frame, int) and isinstance(number, int):
        return f"{frame}/{number}"
    return ""


def _payload_reasons(payload: str) -> list[str]:
    """The reasons of a ``recompile_reasons`` artifact: a JSON list, or one reason as text."""
    text = payload.strip()
    if not text:
        return []
    try:
        data = json.loads(text)
    except ValueError:
        return [text]
    if isinstance(data, list):
        return [str(item) for item in data if isinstance(item, (str, int, float))]
    return [str(data)] if isinstance(data, str) else []


def _read_process(stream: IO[str], name: str, warnings: list[str]) -> tuple[_Process, int]:
    process = _Process()
    entries = 0
    bad = 0
    pending: tuple[dict[str, Any], list[str]] | None = None

    def finish(item: tuple[dict[str, Any], list[str]] | None) -> None:
        if item is None:
            return
        meta, payload = item
        artifact = meta.get("artifact")
        if isinstance(artifact, dict) and artifact.get("name") == "recompile_reasons":
            cid = _compile_id(meta)
            if cid:
                # A new attempt of this compile id: after a reset the ids start again.
                process.open.pop(cid, None)
                process.record(cid).reasons = _payload_reasons("\n".join(payload))

    for raw in iter(lambda: stream.readline(MAX_LINE), ""):
        line = raw.rstrip("\r\n")
        if line.startswith("\t"):
            if pending is not None:
                pending[1].append(line[1:])
            continue
        if not line.strip():
            continue
        finish(pending)
        pending = None
        prefix = _PREFIX.match(line)
        if prefix is None:
            bad += 1
            continue
        try:
            meta = json.loads(line[prefix.end():])
        except ValueError:
            bad += 1
            continue
        if not isinstance(meta, dict):
            bad += 1
            continue
        entries += 1
        if "has_payload" in meta:
            pending = (meta, [])
        _take(process, meta)
    finish(pending)
    if bad:
        warnings.append(f"{name}: {bad} line(s) are not trace entries (the file may be cut short); skipped")
    return process, entries


def _take(process: _Process, meta: dict[str, Any]) -> None:
    strings = meta.get("str")
    if isinstance(strings, list) and len(strings) == 2 and isinstance(strings[1], int):
        process.strings[strings[1]] = str(strings[0])
        return
    start = meta.get("dynamo_start")
    frame = meta.get("frame_id")
    if isinstance(start, dict) and isinstance(frame, int):
        stack = start.get("stack")
        if isinstance(stack, list) and stack and isinstance(stack[-1], dict):
            top = stack[-1]
            line = top.get("line")
            file = top.get("filename")
            path = process.strings.get(file, "") if isinstance(file, int) else str(file or "")
            info = (str(top.get("name", "")), path, line if isinstance(line, int) else 0)
            process.frames[frame] = info
            cid = _compile_id(meta)
            if cid:
                record = process.open.get(cid)
                if record is None or record.frame is not None or record.metrics is not None:
                    process.open.pop(cid, None)  # a first compile (or one after a reset)
                process.record(cid).frame = info
        return
    metrics = meta.get("compilation_metrics")
    if isinstance(metrics, dict):
        cid = str(metrics.get("compile_id") or _compile_id(meta))
        if cid:
            record = process.record(cid)
            if record.frame is None:
                number = cid.split("/", 1)[0]
                record.frame = process.frames.get(int(number)) if number.isdigit() else None
            record.metrics = metrics


def _where(record: _Compile) -> tuple[str, str, int]:
    """(function, file, first line) of a compile: its metrics, else its frame's start."""
    metrics = record.metrics or {}
    name, file, line = metrics.get("co_name"), metrics.get("co_filename"), metrics.get("co_firstlineno")
    if isinstance(name, str) and isinstance(file, str) and isinstance(line, int):
        return name, file, line
    if record.frame is not None:
        return record.frame
    return f"frame {record.cid.split('/', 1)[0]}", "", 0


def trace_files(path: Path) -> list[Path]:
    """The trace files of a ``TORCH_TRACE`` directory (or the one file given)."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))


def read_trace(path: Path) -> Evidence:
    """Every recompile and limit hit recorded in a trace directory or file."""
    warnings: list[str] = []
    events: list[RecompileEvent] = []
    hits: list[LimitHit] = []
    refused: set[tuple[str, str]] = set()
    compiles: dict[tuple[str, int, str], int] = {}
    total = 0
    for file in trace_files(path):
        try:
            with file.open(encoding="utf-8", errors="replace") as stream:
                head = stream.read(65536)
                if not looks_like_trace(head):
                    warnings.append(f"{file.name}: not a trace file; skipped")
                    continue
                stream.seek(0)
                process, entries = _read_process(stream, file.name, warnings)
        except OSError as exc:
            warnings.append(f"{file.name}: cannot be read ({exc.strerror or exc}); skipped")
            continue
        total += entries
        for record in process.compiles:
            if record.frame is None and record.metrics is None:
                # The frame of a recompile that ended before its start was logged: the frame
                # id's latest start names it.
                number = record.cid.split("/", 1)[0]
                record.frame = process.frames.get(int(number)) if number.isdigit() else None
            function, source_file, first_line = _where(record)
            metrics = record.metrics or {}
            fail = f"{metrics.get('fail_type') or ''} {metrics.get('fail_reason') or ''}"
            limit = _LIMIT_TYPE.search(fail) if "limit" in fail.lower() else None
            if record.reasons is not None:
                reasons = tuple(parse_reason(text) for text in record.reasons if text.strip())
                events.append(RecompileEvent(function, source_file, first_line, record.cid, reasons))
            if limit is not None:
                value = _LIMIT_VALUE.search(fail)
                reason = str(metrics.get("recompile_reason") or "")
                hits.append(LimitHit(
                    limit_type=limit.group(1) or limit.group(2),
                    limit_value=int(value.group(1) or value.group(2)) if value else 0,
                    function=function, file=source_file, first_line=first_line,
                    last_reason=reason.splitlines()[0] if reason else "",
                ))
                refused.add((record.cid, function))
            elif record.metrics is not None and metrics.get("has_guarded_code", True) and not metrics.get("fail_type"):
                key = (source_file, first_line, function)
                compiles[key] = compiles.get(key, 0) + 1
    if not trace_files(path):
        warnings.append(f"{path}: the directory holds no trace files")
    return Evidence(
        kind="trace",
        events=tuple(events),
        limit_hits=tuple(hits),
        refused=frozenset(refused),
        compiles=tuple(sorted(compiles.items())),
        channels=("recompile_reasons", "compilation_metrics") if total else (),
        warnings=tuple(warnings),
        records=total,
    )
