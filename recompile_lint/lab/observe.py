"""Running a program under the verifier's recorder and reading what Dynamo printed.

Shared by the prover (many generated programs per child process) and
``tests/observe_programs.py`` (one hand-written program per child): ``record`` runs a callable
with every recompile message, limit hit and graph count captured, the guard text kept as Dynamo
printed it and before it stripped the local scope (``self.k == 0`` and ``L['self'].k == 0``);
``recompile_events`` turns that record into one item per failing cache entry, with its guard's
kind and source in Dynamo's spelling. torch is imported only inside ``record``.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

RECOMPILES_LOGGER = "torch._dynamo.guards.__recompiles"


def record(run: Callable[[], object]) -> dict[str, Any]:
    """Call ``run`` under the recorder; return the raw record as plain JSON-able data.

    ``exit_code`` (0, a ``SystemExit`` code, or 1 when ``run`` raised), ``detail``
    (``Type: first line`` of what it raised), ``exception`` (the exception's qualified type),
    ``events``, ``messages`` (the recompile records, one per event), ``unstripped`` (printed
    guard line -> unstripped line), ``limit_hits``, ``graphs`` (``[file, line, name, graphs,
    qualname]`` per code object), ``seconds``, ``cpu_seconds``. The caller has forced the
    backend already (``recompile_lint.verify.child.force_backend``).
    """
    import torch._dynamo.guards as guards
    from torch._dynamo import convert_frame

    from recompile_lint.verify.recorder import Recorder, cache_entries

    data: dict[str, Any] = {"exit_code": 0, "detail": "", "exception": ""}
    unstripped: dict[str, str] = {}
    strip = guards.strip_local_scope

    def keep_unstripped(text: str) -> str:
        # Called once per failing cache entry with ``compile_id: reason [+ user stack]``.
        stripped = strip(text)
        unstripped[stripped.splitlines()[0].strip()] = text.splitlines()[0].strip()
        return stripped

    guards.strip_local_scope = keep_unstripped
    messages: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    keeper = Keep(level=logging.DEBUG)
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        with Recorder() as recorder:
            logging.getLogger(RECOMPILES_LOGGER).addHandler(keeper)
            try:
                run()
            except SystemExit as exc:
                data["exit_code"] = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException as exc:  # noqa: BLE001 - the record says the program failed
                data["exit_code"] = 1
                data["detail"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                data["exception"] = f"{type(exc).__module__}.{type(exc).__qualname__}"
                traceback.print_exc()
            finally:
                logging.getLogger(RECOMPILES_LOGGER).removeHandler(keeper)
    finally:
        guards.strip_local_scope = strip
    data["seconds"] = time.perf_counter() - started
    data["cpu_seconds"] = time.process_time() - cpu_started
    recording = recorder.recording()
    # Graphs per code object are its cache entries (what Dynamo keeps, the limit included).
    # Two code objects can share file, line and name (Dynamo makes a resume function per
    # graph break it meets); the one with the most graphs is the one that recompiled.
    qualnames: dict[str, str] = {}
    entries: dict[str, int] = {}
    for ref in list(convert_frame.input_codes.seen):
        code = ref()
        if code is not None:
            key = f"{code.co_filename}:{code.co_firstlineno}:{code.co_name}"
            qualnames[key] = getattr(code, "co_qualname", code.co_name)
            entries[key] = max(entries.get(key, 0), cache_entries(code))
    data["events"] = [event.to_dict() for event in recording.events]
    data["messages"] = messages
    data["unstripped"] = unstripped
    data["limit_hits"] = [hit.to_dict() for hit in recording.limit_hits]
    data["graphs"] = [
        [file, line, name, entries.get(f"{file}:{line}:{name}") or count, qualnames.get(f"{file}:{line}:{name}", name)]
        for (file, line, name), count in recording.graphs
    ]
    return data


# --------------------------------------------------------------------------------------------
# Reading the record.
# --------------------------------------------------------------------------------------------

_TENSOR = re.compile(r"^tensor '(?P<source>.+?)' (?P<what>[\w ]+?) mismatch")
_CHECK_ID = re.compile(r"^___check_(?P<what>obj|type)_id\((?P<source>.+?), (?:\d+|<id>)\)")
_COMPARE = re.compile(r"\s(==|!=|<=|>=|<|>)\s")
_CHAIN = re.compile(r"(?:[LG])\['[^']*'\](?:\.\w+(?:\(\))?|\[[^\]]*\])*")
_ENTRY = re.compile(r"^\d+/\d+(?:_\d+)?: ")
_TORCH_PATH = re.compile(r"[\w./+-]*/site-packages/torch/")
_ADDRESS = re.compile(r"\b(\d{9,}|0x[0-9a-f]{8,})\b")


def guard_kind_and_source(guard: str) -> tuple[str, str, str]:
    """(kind, source, detail) of one unstripped guard expression, in Dynamo's spelling.

    ``L['self'].step == 3`` -> (CONSTANT_MATCH, ``L['self'].step``, ""); ``len(L['xs']) == 2``
    -> (LENGTH_CHECK, ``len(L['xs'])``); ``list(dict.keys(L['d']))[0] == 'a'`` -> (DICT_KEYS,
    ``list(dict.keys(L['d']))``); ``tensor 'L['x']' size mismatch ...`` -> (TENSOR_MATCH,
    ``L['x']``, ``size``); ``___check_obj_id(L['fn'].__code__, 1)`` -> (ID_MATCH,
    ``L['fn'].__code__``); ``GLOBAL_STATE changed: grad_mode`` -> (GLOBAL_STATE, "",
    ``grad_mode``); ``BACKEND_MATCH failure: ...`` -> (BACKEND_MATCH, "", ""). A symbolic guard
    (the shape environment's: ``2 <= L['x'].size()[0]``, ``32*L['s'][0] >= 2``) -> (SHAPE_ENV,
    the first source it names, the compared expression).
    """
    text = guard.strip()
    if text.startswith("GLOBAL_STATE changed:"):
        return "GLOBAL_STATE", "", text.split(":", 1)[1].strip()
    if text.startswith("BACKEND_MATCH"):
        return "BACKEND_MATCH", "", ""
    match = _TENSOR.match(text)
    if match:
        return "TENSOR_MATCH", match.group("source"), match.group("what").strip()
    match = _CHECK_ID.match(text)
    if match:
        return ("ID_MATCH" if match.group("what") == "obj" else "TYPE_MATCH"), match.group("source"), ""
    if text.startswith("not ") and _CHAIN.fullmatch(text[4:].strip()):
        return "LENGTH_CHECK", text[4:].strip(), "empty"  # a container's truth value
    body = text[4:] if text.startswith("not ") else text
    parts = _COMPARE.split(body, maxsplit=1)
    left = parts[0].strip()
    right = parts[2].strip() if len(parts) == 3 else ""
    operand = right if right and not _CHAIN.search(left) else left
    if operand.startswith("___dict_contains("):
        chain = _CHAIN.search(operand)
        return "DICT_CONTAINS", chain.group(0) if chain else operand, operand
    keys = re.fullmatch(r"(list\(dict\.keys\(.+\)\))\[\d+\]", operand)
    if keys:
        return "DICT_KEYS", keys.group(1), ""
    if re.fullmatch(r"len\(.+\)", operand):
        return "LENGTH_CHECK", operand, ""
    if _CHAIN.fullmatch(operand):
        if re.search(r"\.(size|stride|storage_offset)\(\)", operand):
            return "SHAPE_ENV", operand, ""
        return ("CONSTANT_MATCH" if len(parts) == 3 else "OTHER"), operand, ""
    chain = _CHAIN.search(operand)
    return "SHAPE_ENV", chain.group(0) if chain else operand, operand


@functools.lru_cache(maxsize=1)
def torch_dir() -> str:
    """Where torch is installed, found without importing it (the parent never imports torch)."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    return str(spec.submodule_search_locations[0]) if spec and spec.submodule_search_locations else ""


def normalise(text: str, program: Path) -> str:
    """A reason without what changes from run to run: object ids and absolute paths.

    Dynamo shortens the path in a reason's comment by a prefix that depends on where torch is
    installed; every spelling of a program file becomes its path relative to the program.
    """
    text = _ADDRESS.sub("<id>", text)
    text = text.replace(str(program) + os.sep, "")
    text = _TORCH_PATH.sub("<torch>/", text)
    for path in program.rglob("*.py"):
        rel = path.relative_to(program).as_posix()
        text = re.sub(r"[\w.+-]*[\w./+-]*/" + re.escape(rel) + r"(?=:\d)", rel, text)
    return text


def relative_file(file: str, program: Path) -> str:
    """A code object's or reason's file relative to the program; ``<torch>/...`` for torch's own
    files, ``<outside>/NAME`` for anything else."""
    prefix = str(program) + os.sep
    if file.startswith(prefix):
        return Path(file[len(prefix):]).as_posix()
    # Dynamo shortens paths in its comments; the full path ends with what it kept.
    for path in program.rglob("*.py"):
        if str(path).endswith(file):
            return path.relative_to(program).as_posix()
    if _TORCH_PATH.search(file):
        return _TORCH_PATH.sub("<torch>/", file)
    if not os.path.isabs(file) and torch_dir() and (Path(torch_dir()) / file).is_file():
        return f"<torch>/{Path(file).as_posix()}"  # shortened relative to torch's package
    return file if not os.path.isabs(file) else f"<outside>/{Path(file).name}"


def reason_blocks(body: list[str]) -> list[list[str]]:
    """The lines after ``Recompiling function ...``, one block per failing cache entry."""
    blocks: list[list[str]] = []
    for raw in body:
        line = re.sub(r"^\s*-\s?", "", raw, count=1).rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith("triggered by the following guard failure"):
            continue
        if _ENTRY.match(stripped):
            blocks.append([stripped])
        elif blocks:
            blocks[-1].append(line)
    return blocks


@dataclass(frozen=True)
class Failure:
    """One failing cache entry of one recompile event, as read from the record."""

    reason: dict[str, Any]  # the recorder's parsed reason (``guard``, ``file``, ``line``, ``function``)
    block: tuple[str, ...]  # the printed lines of this entry's reason, user stack included
    guard: str  # the guard before Dynamo stripped the local scope (``L['self'].k == 0``)
    kind: str
    source: str
    detail: str
    location: str  # ``file:line`` relative to the program, or ""


def recompile_events(data: dict[str, Any], program: Path) -> Iterator[tuple[tuple[str, int, str], list[Failure]]]:
    """Per recompile event of a record: its code object (file relative to the program, first
    line, name) and one ``Failure`` per failing cache entry it lists."""
    unstripped: dict[str, str] = data.get("unstripped", {})
    for event, message in zip(data.get("events", []), data.get("messages", [])):
        code = (relative_file(event["file"], program), int(event["first_line"]), str(event["function"]))
        failures = []
        for reason, block in zip(event["reasons"], reason_blocks(message.splitlines()[1:])):
            printed = block[0].strip()
            raw_line = unstripped.get(printed, printed)
            guard_text = _ENTRY.sub("", raw_line).split("  #", 1)[0].strip()
            kind, source, detail = guard_kind_and_source(guard_text)
            location = f"{relative_file(reason['file'], program)}:{reason['line']}" if reason.get("file") else ""
            failures.append(Failure(reason, tuple(block), guard_text, kind, source, detail, location))
        yield code, failures
