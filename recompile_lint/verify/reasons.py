"""Reading Dynamo's recompile messages: parse them, classify each reason, match it to a subject.

Dynamo's wording is torch-version specific; every pattern it relies on lives in this module so
that a new torch release is one visible change. Nothing here imports torch.
"""

from __future__ import annotations

import re
from typing import Iterable

from recompile_lint.models import Subject
from recompile_lint.verify.results import Family, GuardFailure, LimitHit, RecompileEvent

_HEADER = re.compile(r"^Recompiling function (?P<name>\S+) in (?P<file>.+):(?P<line>\d+)\s*$")
# ``0/1: G['step'] == 1   # return x * step  # pkg/mod.py:5 in poly``; the compile id prefix.
_ENTRY = re.compile(r"^(?P<entry>\d+/\d+(?:_\d+)?): (?P<text>.*)$")
_LOCATION = re.compile(r"#\s+(?P<file>\S+):(?P<line>\d+) in (?P<fn>[\w<>.$-]+)")
_STACK_FILE = re.compile(r'^File "(?P<file>.+)", line (?P<line>\d+), in (?P<fn>\S+)')
# ``'poly' (/path/file.py:3)`` in the recompile_limit warning.
_LIMIT_FUNCTION = re.compile(r"^'(?P<name>.+)' \((?P<file>.+):(?P<line>\d+)\)$")
_LEADING = re.compile(r"^[\s-]*")


def classify(guard: str) -> Family:
    """The family of one guard expression (the cause it points at)."""
    text = guard.strip()
    if text.startswith("GLOBAL_STATE") or "grad_mode" in text or "autocast" in text:
        return Family.GLOBAL_STATE
    if "default_dtype" in text or "deterministic_algorithms" in text or "num_threads" in text:
        return Family.GLOBAL_STATE
    if "BACKEND_MATCH" in text or "__code__" in text:
        return Family.IDENTITY
    if re.search(r"\b(rank|size|stride|storage_offset) mismatch\b", text):
        return Family.SHAPE
    if re.search(r"\b(dtype|device|requires_grad|dispatch key set|type) mismatch\b", text):
        return Family.TYPE
    if "___check_type_id" in text or "isinstance(" in text or "alias" in text.lower():
        return Family.TYPE
    if "___check_obj_id" in text or re.search(r"\bis not\b|\bis\b", text):
        return Family.IDENTITY
    if re.search(r"\.(size|stride)\(\)|\blen\(|dict\.keys\(|\bs\d+\b|\bEq\(|\bNe\(", text):
        return Family.SHAPE
    if re.search(r"==|!=|<=|>=|<|>", text):
        return Family.CONSTANT
    return Family.OTHER


def _clean(line: str) -> str:
    return _LEADING.sub("", line, count=1)


def parse_reason(text: str, fallback_file: str = "") -> GuardFailure:
    """One reason as Dynamo writes it (``0/0: guard  # source  # file:line in fn`` + stack)."""
    lines = [_clean(line) for line in text.strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    entry = ""
    match = _ENTRY.match(first)
    if match:
        entry, first = match.group("entry"), match.group("text")
    guard, _, rest = first.partition("  #")
    guard = guard.strip() if rest else first.strip()
    source, file, line, function = "", "", 0, ""
    locations = list(_LOCATION.finditer(first))
    if locations:
        loc = locations[-1]
        file, line, function = loc.group("file"), int(loc.group("line")), loc.group("fn")
        source = first[len(guard):loc.start()].strip().lstrip("#").strip()
    # Dynamo shortens the path in the comment; the user stack trace carries the full one.
    stack = [m for m in (_STACK_FILE.match(text) for text in lines[1:]) if m]
    for frame in reversed(stack):
        full = frame.group("file")
        if not file or (int(frame.group("line")) == line and _same_file(full, file)):
            file = full
            line = line or int(frame.group("line"))
            function = function or frame.group("fn")
            break
    if not file and fallback_file:
        file = fallback_file
    return GuardFailure(
        guard=" ".join(guard.split()),
        family=classify(guard),
        entry=entry,
        source=source,
        file=file,
        line=line,
        function=function,
    )


def _same_file(full: str, shortened: str) -> bool:
    """Whether Dynamo's shortened path (a suffix, maybe cut mid-name) names ``full``."""
    return full == shortened or full.endswith(shortened)


_BULLET = re.compile(r"^\s*- ?(?P<text>.*)$")


def _starts_reason(raw: str) -> bool:
    """Whether a body line opens a new failing guard rather than continuing one.

    Every release writes a reason as ``    - <guard>`` and its stack trace as ``    - User
    stack trace:`` followed by indented ``-   File ...`` / ``-     code`` lines. Torch <= 2.4
    has no ``0/0:`` entry prefix, so the bullet's own text decides: a guard starts right after
    the dash, stack lines are indented or say what they are.
    """
    if _ENTRY.match(_clean(raw)):
        return True
    bullet = _BULLET.match(raw)
    if bullet is None:
        return False
    text = bullet.group("text")
    if not text or text[0].isspace() or text.startswith("User stack trace"):
        return False
    return not _STACK_FILE.match(text)


def split_reasons(body: Iterable[str]) -> list[str]:
    """Group the lines after the header into one block per failing guard (one per cache entry,
    several per entry with ``recompiles_verbose``)."""
    blocks: list[list[str]] = []
    for raw in body:
        cleaned = _clean(raw)
        if not cleaned or cleaned.startswith("triggered by the following guard failure"):
            continue
        if re.match(r"^guard \d+ failures:", cleaned):  # recompiles_verbose wording
            continue
        if _starts_reason(raw) or not blocks:
            blocks.append([cleaned])
        else:
            blocks[-1].append(cleaned)
    return ["\n".join(block) for block in blocks]


def parse_recompile_message(message: str, compile_id: str = "") -> RecompileEvent | None:
    """A ``Recompiling function ...`` log message as an event; None for other messages."""
    lines = message.splitlines()
    if not lines:
        return None
    header = _HEADER.match(lines[0].strip())
    if not header:
        return None
    reasons = tuple(parse_reason(block) for block in split_reasons(lines[1:]))
    return RecompileEvent(
        function=header.group("name"),
        file=header.group("file"),
        first_line=int(header.group("line")),
        compile_id=compile_id,
        reasons=reasons,
    )


def parse_limit_args(args: object) -> LimitHit | None:
    """The ``recompile_limit`` warning's ``record.args`` as a LimitHit; None if unrecognised."""
    if not isinstance(args, tuple) or len(args) < 3:
        return None
    limit_type, limit_value, where = args[0], args[1], args[2]
    last_reason = str(args[3]) if len(args) > 3 else ""
    match = _LIMIT_FUNCTION.match(str(where).strip())
    try:
        value = int(limit_value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        value = 0
    if match:
        return LimitHit(
            limit_type=str(limit_type),
            limit_value=value,
            function=match.group("name"),
            file=match.group("file"),
            first_line=int(match.group("line")),
            last_reason=last_reason,
        )
    return LimitHit(str(limit_type), value, str(where), "", 0, last_reason)


def _global_ref(name: str) -> str:
    """A module global as guards spell it: ``G['name']`` or ``G['__import_x'].name``."""
    head, *rest = name.split(".")
    tail = "".join(rf"\.{re.escape(part)}" for part in rest)
    return rf"(?:G\['{re.escape(head)}'\]|\]\.{re.escape(head)}\b){tail}"


def _key_ref(key: str) -> str:
    if key.lstrip("-").isdigit():
        return rf"\[(?:{re.escape(key)}|'{re.escape(key)}')\]"
    return rf"\['{re.escape(key)}'\]"


def _parameter_ref(name: str) -> str:
    n = re.escape(name)
    return rf"(?:L\['{n}'\]|(?<![\w.'\[]){n}(?![\w']))"


def blames(subject: Subject | None, failure: GuardFailure) -> bool:
    """Whether a guard failure blames the value ``subject`` describes."""
    if subject is None:
        return False
    text = failure.guard
    kind = subject.kind
    if kind == "global":
        return bool(re.search(_global_ref(subject.name), text))
    if kind == "item":
        return bool(re.search(_global_ref(subject.name) + _key_ref(subject.key), text))
    if kind == "attribute":
        return bool(re.search(_global_ref(subject.name) + rf"\.{re.escape(subject.key)}\b", text))
    if kind == "state" and failure.family is Family.GLOBAL_STATE:
        # ``GLOBAL_STATE changed: grad_mode``, ``autocast(cpu)_enabled``, ``default_dtype``
        return not subject.name or subject.name in text
    if kind in {"instance-attribute", "state"}:
        return bool(re.search(rf"\.{re.escape(subject.name)}\b", text))
    if kind == "environ":
        if "environ" not in text:
            return False
        return not subject.key or f"'{subject.key}'" in text
    if kind == "parameter":
        if not subject.name:  # a tensor argument the rule could not name
            return failure.family is Family.SHAPE
        # ``n == 2``, ``L['n']``, ``tensor 'x' size mismatch``, ``5 <= x.size()[0]``
        return bool(re.search(_parameter_ref(subject.name), text)) or f"tensor '{subject.name}'" in text
    if kind == "rank":
        return "rank mismatch" in text or (
            bool(subject.name) and bool(re.search(_parameter_ref(subject.name), text))
            and failure.family is Family.CONSTANT
        )
    if kind == "length":
        return "len(" in text or "dict.keys(" in text
    if kind == "callable":
        # ``___check_obj_id(fn.__code__, ...)``, ``fn.power == 1``, ``fn.keywords['k'] == 0``
        if not subject.name:
            return failure.family is Family.IDENTITY
        return bool(re.search(_parameter_ref(subject.name), text))
    if kind == "graph-break":
        # The value crossing the break is guarded in the resume function Dynamo generates.
        prefix = f"torch_dynamo_resume_in_{subject.name.rsplit('.', 1)[-1]}_at_"
        return failure.function.startswith(prefix) or (not subject.name and "___stack" in text)
    return bool(subject.name) and subject.name in text
