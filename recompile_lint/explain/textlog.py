"""Read a text log of a run: the ``recompiles``, ``recompiles_verbose`` and ``guards`` channels
and the recompile-limit warning, in the layouts torch has printed them since 2.0.

Layouts seen in torch's own issue threads and in 2.13 (``tests/explain_data`` keeps examples):

* 2.3 and later, glog style, every line of a message prefixed the same way::

      V1201 10:31:53.646000 11339 torch/_dynamo/guards.py:5396] [0/1] [__recompiles] Recompiling function poly in /tmp/ex/seed.py:6

  (the ``[0/1]`` compile id is missing in 2.3; reasons carry a ``0/0:`` entry prefix from 2.5);
* 2.1 and 2.2, ``[2023-11-21 19:02:13,073] torch._dynamo.guards.__recompiles: [DEBUG] ...``
  on every line; the limit warning's later lines unprefixed in 2.0;
* 2.0, one tuple per recompile and no line number:
  ``torch._dynamo.convert_frame.__recompiles: [DEBUG] ('Recompiling function step in f.py',
  "triggered by the following guard failure: L['t'] == 0")``;
* the limit warning: ``torch._dynamo hit config.cache_size_limit (8)`` (``recompile_limit``
  from 2.6), then ``function: 'fn' (file:line)`` and ``last reason:`` (``reasons:`` in 2.0).

Lines of the program's own output in between are skipped. The log is read as untrusted text:
nothing in it is evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import IO, Iterator

from recompile_lint.explain.evidence import Evidence
from recompile_lint.explain.sources import guard_source
from recompile_lint.verify.reasons import classify, parse_reason, parse_recompile_message
from recompile_lint.verify.results import GuardFailure, LimitHit, RecompileEvent

MAX_LINE = 1 << 20  # longer lines are cut: a log is text, not a place for megabyte lines

_CID = r"!?\d+/\d+(?:_\d+)?(?:/\d+)?"
_GLOG = re.compile(
    r"^(?P<level>[VIWEDC])(?P<date>\d{4}) (?P<time>\d\d:\d\d:\d\d\.\d+) +(?P<pid>\d+) (?P<loc>.+?:\d+)\] "
    rf"(?:\[(?P<cid>{_CID})\] ?)?(?:\[(?P<art>__\w+)\] ?)?(?P<body>.*)$"
)
_DATED = re.compile(
    r"^\[(?P<date>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d+)\] "
    rf"(?:\[(?P<cid>{_CID})\] )?(?P<logger>[\w.]+): \[(?P<level>[A-Z]+)\] ?(?P<body>.*)$"
)
_BARE = re.compile(rf"^(?:\[(?P<cid>{_CID})\] ?)?\[(?P<art>__\w+)\] ?(?P<body>.*)$")
_BARE_CID = re.compile(rf"^\[(?P<cid>{_CID})\] ?(?P<body>.*)$")

_LIMIT = re.compile(r"hit config\.(?P<type>\w+) \((?P<value>\d+)\)")
_LIMIT_FUNCTION = re.compile(r"function: '(?P<name>.*)' \((?P<file>.*):(?P<line>\d+)\)")
_LIMIT_REASON = re.compile(r"^\s*(?:last reason|reasons): ?(?P<reason>.*)$")
_TUPLE = re.compile(
    r"""^\('Recompiling function (?P<name>\S+) in (?P<file>.+?)', (?P<q>["'])"""
    r"""(?:triggered by the following guard failures?: ?)?(?P<reason>.*)(?P=q)\)\s*$"""
)
_TREE = re.compile(r"^[\s|]*\+-\s*")
_GUARD_KIND = re.compile(r"^(?P<kind>[A-Z][A-Z0-9_]+): (?P<expr>.*)$")
_NOT_A_GUARD = (
    "GUARDS:", "TREE_GUARD_MANAGER", "RootGuardManager", "GuardManager:", "DictGuardManager",
    "DictSubclassGuardManager", "Guard eval latency", "Python shape guard", "def ", "return ",
    "_var", "guard_fn", "___make_guard_fn", "KeyValueManager", "KeyManager", "ValueManager",
)


@dataclass
class _Record:
    """Consecutive lines of one log message."""

    key: tuple[str, ...]
    channel: str
    compile_id: str
    line: int  # 1-based line of the message's first line in the log
    lines: list[str] = field(default_factory=list)


def _channel(artifact: str, logger: str, body: str) -> str:
    name = (artifact or logger.rsplit(".", 1)[-1]).lstrip("_")
    if _LIMIT.search(body):
        return "limit"
    if name in {"recompiles", "recompiles_verbose", "guards"}:
        return name
    if body.startswith("Recompiling function") or body.startswith("('Recompiling function"):
        return "recompiles"
    return name or "other"


def _starts_message(body: str) -> bool:
    text = body.strip()
    return (
        text.startswith("Recompiling function")
        or text.startswith("('Recompiling function")
        or bool(_LIMIT.search(text))
        or text.startswith("GUARDS:")
    )


class _Lines:
    """The log's lines, each cut at ``MAX_LINE``; counts what it had to cut."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.cut = 0

    def __iter__(self) -> Iterator[tuple[int, str]]:
        number = 0
        continuing = False
        while True:
            chunk = self.stream.readline(MAX_LINE)
            if not chunk:
                return
            complete = chunk.endswith("\n")
            if not continuing:
                number += 1
                yield number, chunk.rstrip("\r\n")
            if not complete and len(chunk) >= MAX_LINE:
                if not continuing:
                    self.cut += 1
                continuing = True
            else:
                continuing = False


def _bare(raw: str, current: _Record | None) -> re.Match[str] | None:
    """A line copied without its glog prefix: ``[0/1] [__recompiles] ...``, or ``[0/8] ...`` when
    it starts a message or continues the one with that compile id."""
    match = _BARE.match(raw)
    if match:
        return match
    match = _BARE_CID.match(raw)
    if match is None:
        return None
    if _starts_message(match["body"]):
        return match
    if current is not None and current.key[0] == "bare" and current.compile_id == match["cid"]:
        return match
    return None


def _prefixed(raw: str, current: _Record | None) -> tuple[tuple[str, ...], str, str, str] | None:
    """(record key, body, compile id, channel) of a line with a torch log prefix, else None.
    Lines of one message share the key: glog and dated prefixes repeat on every line."""
    match = _GLOG.match(raw)
    if match:
        cid, art = match["cid"] or "", match["art"] or ""
        key = ("glog", match["date"], match["time"], match["pid"], cid, art)
        return key, match["body"], cid, _channel(art, "", match["body"])
    match = _DATED.match(raw)
    if match:
        cid = match["cid"] or ""
        return ("dated", match["date"], cid, match["logger"]), match["body"], cid, _channel("", match["logger"], match["body"])
    match = _bare(raw, current)
    if match:
        art, cid, body = match.groupdict().get("art") or "", match["cid"] or "", match["body"]
        channel = _channel(art, "", body)
        if not art and not _starts_message(body) and current is not None:
            channel = current.channel
        return ("bare", cid, art), body, cid, channel
    return None


def _continues(raw: str) -> bool:
    """An unprefixed line that belongs to the message before it (torch 2.0's limit warning)."""
    return raw[:1].isspace() or raw.lower().startswith(("to diagnose", "to log", "user stack"))


def records(stream: IO[str]) -> Iterator[_Record]:
    """The torch log messages in ``stream`` (other lines dropped), in order."""
    current: _Record | None = None
    lines = _Lines(stream)
    for number, raw in lines:
        found = _prefixed(raw, current)
        if found is None:
            # An unprefixed line: a message copied without its prefix, the continuation of an
            # old multi-line warning, or the program's own output (dropped).
            if _starts_message(raw):
                if current is not None:
                    yield current
                body = raw.strip()
                current = _Record(("plain", str(number)), _channel("", "", body), "", number, [body])
            elif current is not None and _continues(raw):
                current.lines.append(raw)
            elif current is not None:
                yield current
                current = None
            continue
        key, body, cid, channel = found
        if current is not None and current.key == key and not _starts_message(body):
            current.lines.append(body)
            continue
        if current is not None:
            yield current
        current = _Record(key, channel, cid, number, [body])
    if current is not None:
        yield current
    if lines.cut:
        yield _Record(("cut",), "cut", "", 0, [str(lines.cut)])


def _limit_hit(record: _Record) -> LimitHit | None:
    text = "\n".join(record.lines)
    limit = _LIMIT.search(text)
    if limit is None:
        return None
    function = _LIMIT_FUNCTION.search(text)
    reason = ""
    for line in record.lines:
        found = _LIMIT_REASON.match(line)
        if found:
            reason = found["reason"].strip()
            break
    return LimitHit(
        limit_type=limit["type"],
        limit_value=int(limit["value"]),
        function=function["name"] if function else "",
        file=function["file"] if function else "",
        first_line=int(function["line"]) if function else 0,
        last_reason=reason,
    )


def _tuple_event(body: str, compile_id: str) -> RecompileEvent | None:
    """torch 2.0: ``('Recompiling function f in file.py', "triggered by ...: L['t'] == 0")``."""
    match = _TUPLE.match(body.strip())
    if match is None:
        return None
    reason = match["reason"].replace("\\'", "'").replace('\\"', '"')
    failure = parse_reason(reason) if reason.strip() else None
    return RecompileEvent(match["name"], match["file"], 0, compile_id, (failure,) if failure else ())


def _guard_line(body: str) -> GuardFailure | None:
    """One guard of a ``guards`` channel dump (the tree of 2.13, or the flat list before)."""
    text = _TREE.sub("", body).strip()
    if not text or text.startswith(_NOT_A_GUARD):
        return None
    kind = _GUARD_KIND.match(text)
    expr = kind["expr"] if kind else text
    if not kind and not re.search(r"==|!=|___check|hasattr|isinstance|\bL\[|\bG\[", expr):
        return None
    parsed = parse_reason(expr)
    return parsed if parsed.guard else None


def _entry_numbers(compile_id: str) -> tuple[str, int] | None:
    match = re.match(r"^(!?\d+(?:/\d+)*?)/(\d+)(?:_\d+)?$", compile_id)
    return (match.group(1), int(match.group(2))) if match else None


def _in_torch(path: str) -> bool:
    parts = re.split(r"[\\/]+", path)
    return "torch" in parts or any(p.startswith("_dynamo") or p.startswith("_inductor") for p in parts)


def infer_from_guards(guard_sets: dict[str, list[GuardFailure]]) -> list[RecompileEvent]:
    """Recompiles deduced from the ``guards`` channel alone.

    Entry ``F/k`` (k >= 1) of frame ``F`` was compiled because a call failed the guards of
    entries ``F/0`` .. ``F/k-1``; the guards that failed are those whose value (source) the
    entries share but check differently (``G['step'] == 0`` then ``G['step'] == 1``).
    """
    frames: dict[str, dict[int, list[GuardFailure]]] = {}
    for compile_id, guards in guard_sets.items():
        numbers = _entry_numbers(compile_id)
        if numbers is not None:
            frames.setdefault(numbers[0], {})[numbers[1]] = guards
    events = []
    for frame, entries in frames.items():
        for k in sorted(entries):
            if k == 0 or k - 1 not in entries:
                continue
            newer_texts = {g.guard for g in entries[k]}
            newer_sources = {guard_source(g.guard) for g in entries[k]}
            reasons = []
            for j in range(k - 1, -1, -1):
                for old in entries.get(j, ()):
                    if old.guard not in newer_texts and guard_source(old.guard) in newer_sources:
                        reasons.append(GuardFailure(old.guard, classify(old.guard), f"{frame}/{j}", old.source,
                                                    old.file, old.line, old.function))
                        break
            # The frame's own function is where a guard on one of its locals (``L['x']``) was
            # made; a global's guard may point into an inlined helper, and ambient guards point
            # into torch itself ("_dynamo/output_graph.py ... in init_ambient_guards").
            # Functions Dynamo inlined have their code objects guarded (``G['ops'].scale.__code__``).
            inlined = {m.group(1) for g in entries[k] for m in re.finditer(r"(\w+)'?\]?\.__code__", g.guard)}
            user = [g for g in entries[k] if g.file and g.function and not _in_torch(g.file)
                    and g.function not in inlined]
            locals_first = [g for g in user if g.guard.startswith(("L[", "hasattr(L[", "check_tensor(L["))]
            located = next(iter([*locals_first, *user, *(g for g in reasons if g.file and g.function)]), None)
            function = located.function if located else f"frame {frame}"
            events.append(RecompileEvent(function, located.file if located else "", 0, f"{frame}/{k}", tuple(reasons)))
    return events


def read_log(stream: IO[str]) -> Evidence:
    """Every recompile and limit hit in a text log, with warnings for what it could not read."""
    events: list[RecompileEvent] = []
    # Compile ids restart after torch._dynamo.reset(): an event is the same one only when the
    # other recompile channel logged it (same id, function and file).
    seen: dict[tuple[str, str, str, int], str] = {}
    hits: list[LimitHit] = []
    refused: set[tuple[str, str]] = set()
    channels: dict[str, None] = {}
    guard_sets: dict[str, list[GuardFailure]] = {}
    warnings: list[str] = []
    count = 0
    for record in records(stream):
        if record.channel == "cut":
            warnings.append(f"{record.lines[0]} line(s) longer than {MAX_LINE} characters were cut")
            continue
        count += 1
        body = record.lines[0].strip() if record.lines else ""
        if record.channel == "limit":
            hit = _limit_hit(record)
            if hit is not None:
                channels.setdefault("limit", None)
                hits.append(hit)
                if record.compile_id:
                    refused.add((record.compile_id, hit.function))
            continue
        if record.channel == "guards":
            channels.setdefault("guards", None)
            for line in record.lines:
                guard = _guard_line(line)
                if guard is not None:
                    guard_sets.setdefault(record.compile_id or f"?{record.line}", []).append(guard)
            continue
        event = None
        if body.startswith("('Recompiling function"):
            event = _tuple_event(body, record.compile_id)
        elif body.startswith("Recompiling function"):
            event = parse_recompile_message("\n".join(line for line in record.lines), record.compile_id)
        if event is None:
            continue
        channels.setdefault(record.channel if record.channel.startswith("recompiles") else "recompiles", None)
        if not event.reasons:
            warnings.append(f"line {record.line}: the recompile of {event.function} lists no guard failure "
                            "(the log may be cut short here)")
        if record.compile_id:
            key = (record.compile_id, event.function, event.file, event.first_line)
            if seen.get(key, record.channel) != record.channel:
                continue  # recompiles and recompiles_verbose both log each recompile
            seen[key] = record.channel
        events.append(event)
    inferred = False
    if not events and guard_sets:
        events = infer_from_guards(guard_sets)
        inferred = bool(events)
    return Evidence(
        kind="log",
        events=tuple(events),
        limit_hits=tuple(hits),
        refused=frozenset(refused),
        channels=tuple(channels),
        inferred=inferred,
        warnings=tuple(warnings),
        records=count,
    )
