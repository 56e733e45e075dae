"""Text tests: whether a file can hold a compile site, call a wrapper or change a guarded
value, decided on its text before anything parses it (most files of a project fail them)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, fields, is_dataclass
from functools import lru_cache, partial
from typing import Callable, Iterable, Iterator

from recompile_lint.analysis.facts import LENGTH_METHODS


@dataclass
class Guarded:
    """Values regions read whose change elsewhere can make Dynamo recompile."""

    globals: set[tuple[str, str]]  # (path of the module that holds it, name)
    attributes: set[str]  # instance attributes the regions' classes initialise to scalars
    environ: bool = False  # a region reads os.environ

    def empty(self) -> bool:
        return not self.globals and not self.attributes and not self.environ


# Results of ``ProjectIndex.select``'s text tests, by (test, path, content digest): kept only
# by a resident server (``server``), which adds between commands the results a command
# computed (``new_tests``). A result depends on nothing but the test, the path and the text.
resident_tests: dict[tuple[str, str, str], bool] | None = None
new_tests: list[tuple[str, str, str, bool]] = []


def text_test_name(test: Callable[[str, str], bool]) -> str | None:
    """A digest naming a text test with its arguments (None when they cannot be named)."""
    func, args, keywords = (test.func, test.args, test.keywords) if isinstance(test, partial) else (test, (), {})
    try:
        named = (func.__module__, func.__qualname__, _canonical(args), _canonical(keywords))
    except (AttributeError, TypeError):
        return None
    return hashlib.blake2b(repr(named).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _canonical(value: object) -> object:
    """``value`` as plain tuples that ``repr`` spells the same for equal values (sets and
    dicts sorted), or TypeError."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_canonical(item) for item in value))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted((_canonical(item) for item in value), key=repr)))
    if isinstance(value, dict):
        return ("dict", tuple(sorted(((_canonical(k), _canonical(v)) for k, v in value.items()), key=repr)))
    if is_dataclass(value) and not isinstance(value, type):
        return (type(value).__qualname__, tuple((f.name, _canonical(getattr(value, f.name))) for f in fields(value)))
    raise TypeError(f"cannot name {type(value).__name__}")


# What a compile site looks like as text: ``x.compile(`` (``model.compile()``; not
# ``re.compile(`` nor a string argument), ``compile(`` (after ``from torch import compile``), a
# decorator, ``compile`` ending a line, an import of it, ``torch.compile``, ``optimize(``
# (``_dynamo.optimize``). A file without any of these cannot hold one. Every alternative
# starts with a character and puts its look-behind after it (``c(?<![\w.]c)ompile`` is
# ``(?<![\w.])compile``): ``re`` then tries only the positions holding one of those
# characters, 7-10x faster than with the look-behinds first.
COMPILE_SITE = re.compile(
    r"\.(?<!\bre\.)compile\s*\((?!\s*[rbuf]?['\"])|c(?<![\w.]c)ompile\s*\(|@[\w.]*compile\b|c(?<!\wc)ompile\b\s*$"
    r"|import[^\n]*\bcompile\b|t(?<!\wt)orch\.compile\b|o(?<!\wo)ptimize\s*\(",
    re.MULTILINE,
)


WORD = re.compile(r"\w+")


def occurs_near(text: str, token: str, pattern: re.Pattern[str]) -> bool:
    """Whether ``pattern`` matches around an occurrence of ``token`` (its line and the two
    after it, where a call's parenthesis may sit), outside comment lines. Searching only there
    is much cheaper than a search over the whole text, which costs more than parsing it."""
    at = text.find(token)
    while at != -1:
        start = text.rfind("\n", 0, at) + 1
        end = at
        for _ in range(3):
            end = text.find("\n", end + 1)
            if end == -1:
                end = len(text)
                break
        window = text[start:end]
        for match in pattern.finditer(window):
            if not on_comment_line(window, match.start()):
                return True
        at = text.find(token, at + len(token))
    return False


def on_comment_line(text: str, at: int) -> bool:
    """Whether position ``at`` is on a line whose first non-blank character is ``#``: a
    comment, or text inside a string literal; code in either case it is not. (A ``#`` later
    in a line may be inside a string, so only whole-line comments count.)"""
    return text[text.rfind("\n", 0, at) + 1 : at].lstrip().startswith("#")


@lru_cache(maxsize=None)
def call_pattern(name: str) -> re.Pattern[str]:
    """A call or decorator use of ``name`` (``name(``, ``mod.name(``, ``@name``)."""
    return re.compile(rf"(?<!\w){re.escape(name)}\s*\(|@[\w.]*(?<!\w){re.escape(name)}\b")


@lru_cache(maxsize=8)
def attribute_pattern(attrs: frozenset[str]) -> re.Pattern[str]:
    """``.attr`` for any of ``attrs`` (the attribute's name in group 1), or ``setattr(...)``
    naming one in quotes (group 2): one pass over a file finds every place to look at. The
    dot may end the line before (``o.\\`` / inside brackets), the call may span lines, and a
    name may end in a combining mark (not a word character to ``re``)."""
    names = "|".join(re.escape(attr) for attr in sorted(attrs))
    return re.compile(rf"\.\s*(?:\\\n\s*)*({names})(?!\w)|{_SETATTR_CALL}['\"]({names})['\"]")


# ``setattr(`` up to a quoted name, over lines, past arguments with one level of brackets.
_SETATTR_CALL = r"setattr\s*\((?:[^()]|\([^()]*\))*?"


def writes_attribute(text: str, attrs: frozenset[str]) -> bool:
    """Whether a line of ``text`` can write an attribute named in ``attrs``: as an assignment
    (plain, augmented, annotated, in a tuple of targets, also spread over lines), ``del``,
    ``for`` or ``with ... as`` target, or through ``setattr``; reads are told apart as
    ``writes_name`` tells them."""
    for match in attribute_pattern(attrs).finditer(text):
        if match.group(2) is not None:
            return True
        if _may_write_at(text, *match.span(1), attribute=True):
            return True
    # ``setattr(module, name, value)`` with ``name`` a parameter sets what the callers name in
    # quotes (``apply(partial(_set, "dilation", d))``): a file with both may write it.
    if "setattr" in text and _SETATTR_VARIABLE.search(text) is not None:
        names = "|".join(re.escape(attr) for attr in sorted(attrs))
        return re.search(rf"['\"]({names})['\"]", text) is not None
    return False


# ``setattr(obj, name`` with a name that is not a string literal.
_SETATTR_VARIABLE = re.compile(r"setattr\s*\((?:[^(),]|\([^()]*\))*,\s*[A-Za-z_]")


# The shapes of a line that can write a name (``writes_name``, ``writes_attribute``).
# An assignment's ``=``, augmented ones included (``>>=`` too), not ==, !=, <=, >=, :=.
ASSIGN_EQ = re.compile(r"(?:(?<=>>)|(?<=<<)|(?<![=!<>:]))=(?!=)")
COMPOUND_START = re.compile(r"\s*(?:if|elif|else|for|async|while|with|try|except|finally|match|case|def|class)\b")
DEL_OR_AS = re.compile(r"\b(?:del|as)\b")
FOR_WORD = re.compile(r"\bfor\b")
IN_WORD = re.compile(r"\bin\b")
CALL_AFTER = re.compile(r"((?:\s*\.\s*\w+)*)\s*\(")
CLOSED_TARGET = re.compile(r"[ \t]*(?:(?:\*\*|//|>>|<<|[-+*/%&|^@])?=(?!=)|in\b)")
ANNOTATED = re.compile(r"[ \t]*:(?!=)")
ONE_LINE_DOCSTRING = re.compile(r'""".*?"""' + r"|'''.*?'''")
EXPRESSION_START = re.compile(r"\s*(if|elif|while|return|assert|raise|yield|import|from)\b")
KEYWORD_END = re.compile(r"\b(?:in|is|not|and|or|if|else|return|yield|await|del|for|assert|raise|lambda|with|as|from|import|elif|while)$")
STRING_OR_COMMENT = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|#.*""")


def writes_name(text: str, name: str) -> bool:
    """Whether a line of ``text`` can write or mutate a value another module holds as
    ``name``.

    The facts record such a change only where the name is an assignment, augmented
    assignment, ``del``, ``for`` or ``with ... as`` target as an attribute (``mod.name``) or
    the receiver of one (``name.key = v``, ``name[k] = v``), where ``name.append(...)`` (or
    another length-changing method) is called, or in ``setattr``. A bare ``name = v`` binds
    a name of the file itself. So a file is passed over only where every occurrence is surely
    none of these; in doubt (a string on the line, a statement that goes on to the next line)
    it counts as a write.
    """
    for at in _word_positions(text, name):
        if _may_write_at(text, at, at + len(name), attribute=False):
            return True
    return False


def _may_write_at(text: str, at: int, stop_at: int, attribute: bool) -> bool:
    """Whether the statement on its line can write the name at ``text[at:stop_at]`` (looking
    further down where the line is an item of a list that goes on: ``(\n  self.a,\n) = t``)."""
    line_start = text.rfind("\n", 0, at) + 1
    line_stop = text.find("\n", stop_at)
    line_stop = line_stop if line_stop != -1 else len(text)
    start, end = at - line_start, stop_at - line_start
    line = text[line_start:line_stop]
    if line.lstrip().startswith("#"):
        return False  # a comment, or the inside of a string
    if "setattr" in line:
        return True
    code = _code_of(line)
    if code is None:
        return True  # a string this line does not close: in doubt, a write
    if code[start:end] != line[start:end]:
        return False  # in a string or a comment
    head = code[:start]
    # An attribute's dot (which ``writes_attribute`` found) may be on the line before.
    dotted = attribute or head.rstrip().endswith(".")
    if not dotted and code[end:].lstrip()[:1] not in (".", "["):
        return False  # not an attribute, nor the receiver of one
    call = CALL_AFTER.match(code, end)
    if call is not None:
        # A call on the name (``logger.warning(...)``) changes nothing the facts record,
        # unless it changes a container's length (anywhere: in a condition too).
        methods = call.group(1).replace(" ", "").replace("\t", "").split(".")[1:]
        return not attribute and len(methods) == 1 and methods[0] in LENGTH_METHODS
    if ";" not in code and _in_expression(code, head):
        return False  # in a condition, or a value returned, raised or asserted: no target
    simple = ";" not in code and COMPOUND_START.match(code) is None
    if simple and _annotation_before(head):
        return False  # ``x: torch.device = None``: in an annotation (or a lambda's body)
    if DEL_OR_AS.search(head) is not None:
        return True
    if FOR_WORD.search(head) is not None and IN_WORD.search(code, end) is not None:
        return True
    if _in_call_or_subscript(head):
        return False  # ``d[obj.name] = v``, ``f(obj.name).x = v``: not what is written
    if simple and _depth(head) == 0 and _head_shape(head)[0] and ANNOTATED.match(code, end) is not None:
        return True  # ``self.raw: torch.Tensor``: an annotated target
    if code.rstrip().endswith("\\"):
        return True  # the statement goes on: its ``=`` may be on the next line
    if _depth(code) > 0:
        if _depth(head) > 0:
            # Inside a bracket this line opens: a target only if that bracket is one
            # (``(self.a,\n self.b) = t``), not a call's (``f(obj.name,\n k=1)``).
            return _closes_into_target(text, line_start + end)
        return True
    eq = ASSIGN_EQ.search(code, end)
    if eq is None:
        # The item of a target list spread over lines (``(\n  self.a,\n  self.b\n) = t``):
        # it ends with a comma, or follows a line that does, that opens the list or that
        # ends with the dot of its attribute.
        return (code.rstrip().endswith(",") or _previous_code_ends(text, line_start, ("(", "[", ",", "."))) and _closes_into_target(text, line_stop)
    before = _depth(code[: eq.start()])
    if before > 0:
        return False  # ``f(obj.name, k=1)``: a keyword argument
    # ``obj.name, k=1)`` closes a bracket opened on an earlier line: the ``=`` is inside it.
    depth = before
    for char in code[eq.start() :]:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < before:
                return False
    # ``x.name, dtype=t.dtype`` among a call's arguments: the ``=`` is inside a bracket that
    # a later line closes.
    return not _inside_bracket(text, line_stop)


def _code_of(line: str) -> str | None:
    """``line`` with its strings and comment blanked out (same length), so that brackets,
    ``=`` and ``:`` in them do not count; None where a string goes on past the line."""
    if "'" not in line and '"' not in line and "#" not in line:
        return line
    if "'''" in line or '"""' in line:
        line = ONE_LINE_DOCSTRING.sub(_blank, line)
        if "'''" in line or '"""' in line:
            return None
    code = STRING_OR_COMMENT.sub(_blank, line)
    return None if "'" in code or '"' in code else code


def _blank(match: re.Match[str]) -> str:
    return (" " if match.group().startswith("#") else "_") * len(match.group())


def _closes_into_target(text: str, at: int) -> bool:
    """Whether the bracket that the lines from ``at`` close (one opened before them) is an
    assignment or ``for`` target: ``) = value``, ``) += value``, ``) in``. A target list holds
    only targets, commas and comments: where a string comes first (or no close within 60
    lines) it is none."""
    close = _closing_bracket(text, at, 60)
    return close is not None and CLOSED_TARGET.match(text, close + 1) is not None


def _previous_code_ends(text: str, line_start: int, ends: tuple[str, ...]) -> bool:
    """Whether the code of the nearest non-blank, non-comment line above ends with one of
    ``ends`` (a comment after it left out); in doubt (a string on it), True."""
    stop = line_start - 1
    while stop > 0:
        start = text.rfind("\n", 0, stop) + 1
        line = text[start:stop]
        stop = start - 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        code = _code_of(line)
        return code is None or code.rstrip().endswith(ends)
    return False


def _inside_bracket(text: str, at: int) -> bool:
    """Whether ``at`` is surely inside a bracket opened before it: one that the next 20
    lines close."""
    return _closing_bracket(text, at, 20) is not None


def _closing_bracket(text: str, at: int, lines: int) -> int | None:
    """Where the first bracket opened before ``at`` closes, skipping strings and comments
    (None: not within ``lines`` lines, or past a string that goes on over lines)."""
    depth = 0
    seen = 0
    i = at
    size = len(text)
    while i < size:
        char = text[i]
        if char == "\n":
            seen += 1
            if seen > lines:
                return None
        elif char == "#":
            stop = text.find("\n", i)
            i = size if stop == -1 else stop
            continue
        elif char in "'\"":
            # A string on one line is skipped; one that goes on may hold anything.
            if text.startswith(char * 3, i):
                return None
            string = STRING_OR_COMMENT.match(text, i)
            if string is None:
                return None
            i = string.end()
            continue
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return i
        i += 1
    return None


def _in_expression(code: str, head: str) -> bool:
    """Whether a name after ``head`` is in a statement that holds no target there: the
    condition of an ``if``/``elif``/``while`` (before its ``:``), what ``return``, ``raise``,
    ``assert`` or ``yield`` take, or an import."""
    keyword = EXPRESSION_START.match(code)
    if keyword is None:
        return False
    return keyword.group(1) not in ("if", "elif", "while") or not _annotation_before(head)


def _in_call_or_subscript(head: str) -> bool:
    """Whether the innermost bracket ``head`` leaves open is a call's or a subscript's (it
    follows a name or a closing bracket), not a tuple or list that may be a target."""
    opened: list[int] = []
    for i, char in enumerate(head):
        if char in "([{":
            opened.append(i)
        elif char in ")]}" and opened:
            opened.pop()
    if not opened:
        return False
    before = head[: opened[-1]].rstrip()
    return bool(before) and (_is_word_char(before[-1]) or before[-1] in ")]") and not KEYWORD_END.search(before)


def _depth(text: str) -> int:
    return text.count("(") + text.count("[") + text.count("{") - text.count(")") - text.count("]") - text.count("}")


def _annotation_before(head: str) -> bool:
    """Whether ``head`` (a line up to a name) has a ``:`` outside brackets, and closes no
    bracket opened before the line (where its depth would be unknown)."""
    opens_none, colon = _head_shape(head)
    return opens_none and colon


def _head_shape(head: str) -> tuple[bool, bool]:
    """(whether ``head`` closes no bracket opened before it, whether it has a ``:`` outside
    brackets up to where it would)."""
    depth = 0
    colon = False
    for i, char in enumerate(head):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return False, colon
        elif char == ":" and depth == 0 and head[i + 1 : i + 2] != "=":
            colon = True
    return True, colon


# Writes to the environment the facts record: ``environ[k] = v``, ``del environ[k]``, its
# length-changing methods; ``putenv``/``unsetenv`` are looked for as plain text.
ENVIRON_WRITE = re.compile(r"environ\s*(?:\[|\.\s*(?:" + "|".join(sorted(LENGTH_METHODS)) + r")\b)")


_ONE_IMPORT_LINE = re.compile(r"[ \t]*(?:from[ \t]+[\w.]+[ \t]+import\b.*|import[ \t]+.*)")


def import_lines(text: str) -> list[str]:
    """The lines of ``text`` that are import statements, in order. Only the lines that hold
    ``import`` can be, and only those are tested (a multi-line pattern's ``^`` would be tried
    at every position of the text)."""
    found = []
    at = text.find("import")
    while at != -1:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        if end == -1:
            end = len(text)
        line = text[start:end]
        if _ONE_IMPORT_LINE.fullmatch(line):
            found.append(line)
        at = text.find("import", end)
    return found


def mentions(text: str, word: str) -> bool:
    """Whether ``word`` occurs in ``text`` as a whole identifier (a substring search first:
    much faster than a regular expression over the whole text)."""
    return next(_word_positions(text, word), None) is not None


class Names:
    """Names looked for as whole identifiers (``mentions``) in many texts.

    Past a few names a text's words are collected once and intersected with the names: a
    search per name would cost names x text, the square of a module's size when each of its
    functions is a name.
    """

    def __init__(self, names: Iterable[str]):
        self.names = frozenset(names)
        # A run of word characters equals a name exactly when the name occurs with no word
        # character on either side, which is what ``mentions`` tests; other names are searched.
        self.plain = frozenset(name for name in self.names if WORD.fullmatch(name))
        self.other = tuple(sorted(self.names - self.plain))

    def __len__(self) -> int:
        return len(self.names)

    def in_text(self, text: str) -> set[str]:
        """Which of the names ``text`` mentions."""
        if len(self.names) <= 8:
            return {name for name in self.names if mentions(text, name)}
        found = set(WORD.findall(text)) & self.plain
        found.update(name for name in self.other if mentions(text, name))
        return found

    def any_in(self, text: str) -> bool:
        """Whether ``text`` mentions any of the names."""
        if len(self.names) <= 8:
            return any(mentions(text, name) for name in self.names)
        return not self.plain.isdisjoint(WORD.findall(text)) or any(mentions(text, name) for name in self.other)


def mentioned(text: str, names: Iterable[str]) -> set[str]:
    """Which of ``names`` occur in ``text`` as whole identifiers."""
    return Names(names).in_text(text)


def _word_positions(text: str, word: str) -> Iterator[int]:
    """Where ``word`` occurs in ``text`` as a whole identifier."""
    size = len(word)
    at = text.find(word)
    while at != -1:
        end = at + size
        if (at == 0 or not _is_word_char(text[at - 1])) and (end == len(text) or not _is_word_char(text[end])):
            yield at
        at = text.find(word, at + 1)


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def may_compile_text(path: str, text: str, extra_tokens: tuple[str, ...] = ()) -> bool:
    """Whether ``text`` can hold a compile site (or a call of a wrapper named in ``extra_tokens``)."""
    return any(occurs_near(text, token, COMPILE_SITE) for token in ("compile", "optimize")) or calls_any(path, text, extra_tokens)


def calls_any(path: str, text: str, tokens: tuple[str, ...]) -> bool:
    """Whether ``text`` can call (or decorate with) a function named in ``tokens``."""
    return any(occurs_near(text, token, call_pattern(token)) for token in tokens)


def may_mutate(path: str, text: str, owners: frozenset[str], by_name: dict[str, set[str]], guarded: Guarded) -> bool:
    """Whether ``path`` can change a guarded value: it holds one (``owners``), or its text
    can write a guarded attribute or the environment, or names a guarded global's module and
    can write the global (``ProjectIndex.scan_for_mutations``)."""
    if path in owners:
        return True
    if guarded.environ and ("putenv" in text or "unsetenv" in text or ("environ" in text and ENVIRON_WRITE.search(text) is not None)):
        return True
    if guarded.attributes and writes_attribute(text, frozenset(guarded.attributes)):
        return True
    words: set[str] | None = None
    for name, modules in by_name.items():
        if not mentions(text, name):
            continue
        if len(modules) <= 8:
            if any(mentions(text, module) for module in modules) and writes_global(text, name):
                return True
            continue
        if words is None:
            words = set(WORD.findall(text))
        if not modules.isdisjoint(words) and writes_global(text, name):
            return True
    return False


def writes_global(text: str, name: str) -> bool:
    """Whether ``text`` can change a value another module holds as ``name``, under that
    name or an alias it imports it by (``from m import name as alias``)."""
    if writes_name(text, name):
        return True
    if "setattr" in text and re.search(rf"{_SETATTR_CALL}['\"]{re.escape(name)}['\"]", text) is not None:
        return True  # ``setattr(\n    mod,\n    "name", v)``
    return any(writes_name(text, alias) for alias in re.findall(rf"\b{re.escape(name)}\s+as\s+(\w+)", text))
