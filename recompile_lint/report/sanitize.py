"""Repository text made safe to print: the one filter every text surface uses.

Paths, source lines, comments, messages quoting code, a verifier's JSON and a recompile log all
come from the repository being linted, which is untrusted. Printed as they are, they could
drive the reader's terminal (an ``ESC ]0;...BEL`` that retitles it, an ``ESC [2K`` that erases
the line holding a finding), forge lines of the report (a file name holding a newline and
``Found 0 findings.``), turn text around on screen (bidi overrides), or issue GitHub Actions
workflow commands (a line that starts with ``::``, or the legacy ``##[`` form) from a CI log.

``escape`` writes every such character as a visible escape (``\\x1b``, ``\\n``, ``\\u202e``),
so nothing of the repository can end a line, move the cursor or reorder text, and the reader
still sees what is there. ``line_start`` keeps a line that begins with repository text (a
path) from reading as a workflow command. JSON and SARIF stay exact: JSON escapes the C0
controls itself and a string value never starts a line; ``safe_json`` writes what it leaves
raw (C1 controls, bidi characters, ``##[``) as ``\\uXXXX`` escapes, which parse to the same
values.
"""

from __future__ import annotations

import re

# C0 controls (newline, carriage return and tab included), DEL, C1 controls, the bidi
# embeddings, overrides and isolates, the line and paragraph separators, and the
# byte-order mark / zero-width no-break space.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\u200e\u200f\u061c\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# The legacy form of a workflow command, which the runner finds anywhere in a line.
_LEGACY_COMMAND = "##["


def _visible(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: object) -> str:
    """``text`` with every control, bidi and line-breaking character written as a visible
    escape, and the legacy workflow-command prefix broken up; printable text is unchanged."""
    value = str(text)
    if _UNSAFE.search(value):
        value = _UNSAFE.sub(_visible, value)
    if _LEGACY_COMMAND in value:
        value = value.replace(_LEGACY_COMMAND, "##\\x5b")
    return value


def line_start(text: str) -> str:
    """``text`` made safe to begin a line: a workflow command starts with ``::`` (after any
    blanks), so such a line gets ``./`` in front (a path stays the same path)."""
    if text.lstrip().startswith("::"):
        return "./" + text
    return text


def escape_path(path: object) -> str:
    """A repository path to start a line with: escaped, and never read as a workflow command."""
    return line_start(escape(path))


# What JSON leaves raw that a terminal or a CI runner may act on: DEL, the C1 controls, bidi
# and line-separator characters (JSON itself escapes the C0 controls), and ``##[``.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\u200e\u200f\u061c\ufeff]|##\\[")


def _json_escape(match: re.Match[str]) -> str:
    text = match.group(0)
    return "##\\u005b" if text == "##[" else f"\\u{ord(text):04x}"


def safe_json(text: str) -> str:
    """JSON text (``json.dumps``) with those characters written as ``\\uXXXX`` escapes: the
    same values when parsed, nothing raw when printed. They can only occur inside strings."""
    return _JSON_UNSAFE.sub(_json_escape, text)


def is_safe(text: str) -> bool:
    """True when ``text`` holds nothing ``escape`` would change (tests and assertions)."""
    return not _UNSAFE.search(text) and _LEGACY_COMMAND not in text
