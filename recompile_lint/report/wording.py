"""How a finding is worded: its message split into headline, explanation and fix, and the
wording of a finding reported at another of its locations (the file a commit changed).

Rules write one message, ``<what>: <why and how much>. Fix: <fix>``. This module is the one
place that cuts it, so every output (text, SARIF, GitHub, LSP) shows the same three parts.
A rule that gives the parts itself (``title``/``fix`` on its report) skips the cutting.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable, Iterable

from recompile_lint.models import Location

# Where the fix starts, in the order tried: ``... (unbounded). Fix: keep it in a tensor``.
FIX_MARKERS = (". Fix: ", ". To keep one: ")
# A last sentence that is itself the advice: ``Fix the cause ...``, ``Fine when intended; ...``.
ADVICE_SENTENCE = re.compile(r"(?:Fix|Fine when intended|Compile|Pass|Keep|Move|Use)\b")

# A note for a location whose rule left it empty, worded from its role.
ROLE_NOTES = {
    "compile-site": "compiled here",
    "read": "read here",
    "use": "used here",
    "write": "changed here",
    "call": "called here",
    "primary": "reported here in a whole-project run",
}

# A headline longer than this loses its bracketed lists of places to the explanation.
TITLE_LENGTH = 100

# ``train.py:23`` or ``/abs/pkg/ops.py:13`` in a message.
_PLACE = r"[^\s,;:()`'\"]+\.pyi?:\d+"
# `` at a.py:3, b.py:9 (+2 more)`` after a verb: a list of places, as ``_common.places`` writes it.
_AT_PLACES = re.compile(rf",? at ({_PLACE}(?:, {_PLACE})*(?: \(\+\d+ more\))?)")
_ABSOLUTE_PLACE = re.compile(r"(?<![\w./-])(/[^\s,;:()`'\"]+\.pyi?)(?=:\d)")


@dataclass(frozen=True)
class Wording:
    """A message in three parts."""

    title: str
    explanation: str
    fix: str


def split_message(message: str, evidence: Iterable[Location] = ()) -> Wording:
    """Cut ``message`` into a headline, the explanation and the fix.

    The headline is the message's first clause (up to the first ``: `` or ``; `` outside
    backticks and brackets), without the ``at a.py:3`` lists whose places the finding's
    ``evidence`` already shows as related locations; what it drops stays in nothing else, so
    only places that are shown elsewhere are dropped.
    """
    body, fix = _cut_fix(message.strip())
    title, explanation = _first_clause(body)
    evidence = tuple(evidence)
    shown = {f"{loc.path}:{loc.line}" for loc in evidence}
    title = _drop_shown_places(title, shown)
    # A bracketed detail that a related location's note already says (``(in the loop that
    # calls `poly`)`` beside ``this update changes `step` in the loop that calls `poly` ``).
    notes = [loc.note for loc in evidence if loc.note]
    title, _ = _pop_groups(title, lambda group: any(group in note for note in notes))
    if len(title) > TITLE_LENGTH:
        # Lists of places in brackets make a headline long; they lead the explanation instead.
        title, seen = _pop_groups(title, lambda group: re.search(_PLACE, group) is not None)
        if seen:
            explanation = f"Where: {'; '.join(seen)}. {explanation}".strip()
    fix = fix.strip()
    return Wording(title=title.strip(), explanation=explanation.strip(), fix=fix[:1].upper() + fix[1:])


def _cut_fix(message: str) -> tuple[str, str]:
    for marker in FIX_MARKERS:
        at = _find_top_level(message, marker, last=True)
        if at >= 0:
            return message[: at + 1], message[at + len(marker) :]
    at = _find_top_level(message, ". ", last=True)
    if at >= 0 and ADVICE_SENTENCE.match(message, at + 2):
        return message[: at + 1], message[at + 2 :]
    return message, ""


def _first_clause(body: str) -> tuple[str, str]:
    cuts = [at for at in (_find_top_level(body, ": "), _find_top_level(body, "; ")) if at >= 0]
    if not cuts:
        return body.rstrip("."), ""
    at = min(cuts)
    rest = body[at + 2 :]
    return body[:at], rest[:1].upper() + rest[1:]


def _find_top_level(text: str, needle: str, last: bool = False) -> int:
    """The index of ``needle`` outside backticks, brackets and quotes (-1 when absent)."""
    found = -1
    depth = 0
    code = False
    for i, char in enumerate(text):
        if char == "`":
            code = not code
        elif code:
            continue
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif depth == 0 and text.startswith(needle, i):
            if not last:
                return i
            found = i
    return found


def _drop_shown_places(title: str, shown: set[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        places = re.findall(_PLACE, match.group(1))
        if places and all(_normal(place) in shown for place in places) and "more)" not in match.group(1):
            return ""
        return match.group(0)

    return _AT_PLACES.sub(replace, title)


def _pop_groups(title: str, drop: Callable[[str], bool]) -> tuple[str, list[str]]:
    """``title`` without its top-level ``(...)`` groups whose contents ``drop`` accepts, and
    those contents."""
    spans: list[tuple[int, int]] = []
    depth, code, start = 0, False, 0
    for i, char in enumerate(title):
        if char == "`":
            code = not code
        elif code:
            continue
        elif char == "(":
            if depth == 0:
                start = i
            depth += 1
        elif char == ")" and depth:
            depth -= 1
            if depth == 0 and drop(title[start + 1 : i]):
                spans.append((start, i + 1))
    if not spans:
        return title, []
    pieces, last = [], 0
    for begin, end in spans:
        pieces.append(title[last:begin])
        last = end
    pieces.append(title[last:])
    text = re.sub(r" +(?=[,;:]|$)", "", re.sub(r" {2,}", " ", "".join(pieces)))
    return text.strip(), [title[begin + 1 : end - 1] for begin, end in spans]


def _normal(place: str) -> str:
    path, _, line = place.rpartition(":")
    return f"{shown_path(path)}:{line}"


def shown_path(path: str) -> str:
    """``path`` relative to the working directory (``../lib/x.py`` above it), absolute only
    where no relative path exists (another drive)."""
    try:
        return os.path.relpath(os.path.abspath(path))
    except ValueError:
        return path


def relative_places(text: str) -> str:
    """``text`` with every absolute ``/path/x.py:12`` made relative to the working directory."""
    if "/" not in text:
        return text
    return _ABSOLUTE_PLACE.sub(lambda m: shown_path(m.group(1)), text)


def note_of(location: Location) -> str:
    """The note of a location, worded from its role where the rule left it empty."""
    return location.note or ROLE_NOTES.get(location.role, "involved here")


def place_of(location: Location) -> str:
    return f"{location.path}:{location.line}"


def reported_elsewhere(title: str, at: Location, primary: Location, function: str, region: str) -> str:
    """The headline of a finding reported at ``at`` (a location in a named file) instead of
    at ``primary`` (where the finding is analysed), worded from ``at``.

    A write reads ``this assignment changes `STEP` in the loop that calls `step`;
    `pkg.ops.scale` (inlined into compiled `pkg.model.step`) reads it at pkg/ops.py:13``; any
    other location says what it is and what the finding at the primary location is.
    """
    note = note_of(at)
    if at.role == "write":
        if function and region and function != region:
            reader = f"`{function}` (inlined into compiled `{region}`)"
        else:
            reader = f"compiled `{function or region}`" if (function or region) else "compiled code"
        return f"{note}; {reader} reads it at {place_of(primary)}"
    return f"{note}: at {place_of(primary)}, {title}"


# The longest concise line (``path:line:col: CODE [severity] headline (rule-name)``); the why
# and the fix are in the full format, the whole message in JSON.
CONCISE_WIDTH = 160
# The fewest characters of headline a concise line keeps, however long its path is.
CONCISE_MIN_HEADLINE = 40
# Dotted names keep this many trailing parts when a line must shrink (``pkg.mod.Net.forward``
# -> ``Net.forward``).
SHORT_NAME_PARTS = 2
# A quoted expression longer than this keeps only its end when a line must shrink.
SHORT_CODE_LENGTH = 32
ELLIPSIS = "..."
_CODE_SPAN = re.compile(r"`([^`]+)`")
# Words a cut headline does not end on: they announce what was cut.
_DANGLING = frozenset({"a", "an", "and", "as", "at", "by", "compiled", "for", "from", "in", "inside", "is", "its", "of", "on", "or", "so", "the", "to", "which", "with"})
_DOTTED_NAME = re.compile(r"[\w<>:]+(?:\.[\w<>:]+)*")


def short_name(name: str, parts: int = SHORT_NAME_PARTS) -> str:
    """The last ``parts`` parts of a qualified name, without ``<locals>``
    (``tests.models.test_bert.BertTest.test_compile.<locals>.fn`` -> ``test_compile.fn``)."""
    pieces = [piece for piece in name.split(".") if piece and piece != "<locals>"]
    return ".".join(pieces[-parts:]) if len(pieces) > parts else name


def concise_headline(title: str, room: int, names: Iterable[str] = (), measure: Callable[[str], int] = len) -> str:
    """``title`` made to fit in ``room`` characters (as ``measure`` counts them), losing the
    least first: the qualified ``names`` (a finding's region and function) shortened to their
    last two parts, then the bracketed details, then those names to their last part, then the
    start of long quoted expressions (``...`` in front), and last the end of the sentence (cut
    at a word, with ``...``: ASCII, which every output encoding shows)."""
    room = max(room, CONCISE_MIN_HEADLINE)
    names = sorted({n for n in names if n}, key=len, reverse=True)

    def fits(text: str) -> bool:
        return measure(text) <= room

    def shorten_names(text: str, parts: int) -> str:
        for name in names:
            short = short_name(name, parts)
            if short != name:
                text = text.replace(f"`{name}`", f"`{short}`")
        return text

    def shorten_code(match: re.Match[str]) -> str:
        code = match.group(1)
        if len(code) <= SHORT_CODE_LENGTH or _DOTTED_NAME.fullmatch(code):
            return match.group(0)  # a name is shortened by its parts, never cut
        return f"`{ELLIPSIS}{code[-(SHORT_CODE_LENGTH - len(ELLIPSIS)):]}`"

    steps = (
        lambda text: shorten_names(text, SHORT_NAME_PARTS),
        lambda text: _pop_groups(text, lambda group: True)[0],
        lambda text: shorten_names(text, 1),
        lambda text: _CODE_SPAN.sub(shorten_code, text),
    )
    text = title
    for step in steps:
        if fits(text):
            return text
        text = step(text)
    return text if fits(text) else _cut_at_word(text, room, measure)


def _cut_at_word(text: str, room: int, measure: Callable[[str], int]) -> str:
    """The longest start of ``text`` that ends at a word and fits in ``room`` with ``...``
    after it, never inside a quoted expression."""
    words = text.split(" ")
    best = ""
    for count in range(1, len(words) + 1):
        candidate = " ".join(words[:count]).rstrip(",;:")
        if candidate.count("`") % 2:
            continue  # it would end inside `...`
        if measure(candidate + ELLIPSIS) > room:
            break
        if count > 1 and words[count - 1].rstrip(",;:").lower() in _DANGLING:
            continue  # ``read in compiled...`` says less than ``read in...``
        best = candidate
    if not best:  # one long word: cut it anywhere
        best = text
        while best and measure(best + ELLIPSIS) > room:
            best = best[:-1]
        if best.count("`") % 2:
            best = best.replace("`", "")
    return best + ELLIPSIS
