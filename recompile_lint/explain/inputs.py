"""Decide what an input is (a trace directory, a trace file, verifier JSON, a text log) and read
it into ``Evidence``. Errors a user can act on are ``ExplainInputError`` (exit code 2)."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

from recompile_lint.explain.evidence import Evidence, ExplainInputError
from recompile_lint.explain.textlog import read_log
from recompile_lint.explain.trace import looks_like_trace, read_trace, trace_files
from recompile_lint.explain.verifyjson import read_verify_json

HEAD = 65536
# An object, or an array of objects: ``[2023-11-21 19:02:13,073] torch._dynamo...`` is a log.
_JSON_START = re.compile(r"^\s*(?:\{|\[\s*(?:[\[{\]\"]|$))")
MAX_JSON = 256 * 1024 * 1024  # verifier JSON is read whole; larger is not one of ours


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def read_input(path: str) -> Evidence:
    """The recompiles recorded in ``path`` (``-``: standard input, read as a text log)."""
    if path == "-":
        import sys

        data = sys.stdin.buffer.read()
        return _read_text(io.StringIO(data.decode("utf-8", errors="replace")), "standard input")
    target = Path(path)
    try:
        if target.is_dir():
            files = trace_files(target)
            if not files:
                raise ExplainInputError(f"{path}: the directory holds no trace files (set TORCH_TRACE to it "
                                        "when running the program)")
            evidence = read_trace(target)
            if not evidence.records:
                raise ExplainInputError(f"{path}: no file in this directory is a TORCH_TRACE log")
            return evidence
        if not target.exists():
            raise ExplainInputError(f"{path}: no such file or directory")
        if not target.is_file():
            raise ExplainInputError(f"{path}: not a regular file")
        with target.open("rb") as handle:
            head = handle.read(HEAD)
    except OSError as exc:
        raise ExplainInputError(f"{path}: cannot be read ({_why(exc)})") from exc
    if b"\0" in head:
        raise ExplainInputError(f"{path}: a binary file, not a log, a trace or verifier JSON")
    text = head.decode("utf-8", errors="replace")
    if _JSON_START.match(text):
        return _read_json(target, path)
    if looks_like_trace(text):
        return read_trace(target)
    try:
        with target.open(encoding="utf-8", errors="replace", newline="") as stream:
            return _read_text(stream, path)
    except OSError as exc:
        raise ExplainInputError(f"{path}: cannot be read ({_why(exc)})") from exc


def _read_json(target: Path, shown: str) -> Evidence:
    try:
        size = os.path.getsize(target)
        if size > MAX_JSON:
            raise ExplainInputError(f"{shown}: {size} bytes of JSON is not a verifier report")
        data = json.loads(target.read_text(encoding="utf-8", errors="replace"))
    except RecursionError as exc:
        raise ExplainInputError(f"{shown}: the JSON nests too deeply to be a verifier report") from exc
    except ValueError as exc:
        raise ExplainInputError(f"{shown}: not valid JSON ({exc}); a verifier report is written by "
                                "`recompile-lint verify --format json`") from exc
    except OSError as exc:
        raise ExplainInputError(f"{shown}: cannot be read ({_why(exc)})") from exc
    return read_verify_json(data)


def _read_text(stream: io.TextIOBase, shown: str) -> Evidence:
    evidence = read_log(stream)  # type: ignore[arg-type]
    if not evidence.records:
        raise ExplainInputError(
            f"{shown}: no torch.compile log records found; run the program with "
            "TORCH_LOGS=recompiles (or TORCH_TRACE=DIR) and pass what it wrote"
        )
    return evidence
