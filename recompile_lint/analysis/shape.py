"""How deep text nests and how long its left-recursive chains are, measured without parsing it.

libcst's native parser recurses in native code once per level of nesting (no recursion limit
applies: 50,000 nested brackets overflow the C stack and kill the process), and takes time
that grows with the cube of a left-recursive chain's length (``a.b().c()...``, ``x + x +
...``: a 4,000-call chain takes minutes) when the text does not parse. Where ``ast`` parsed
the text first its tree tells both (``parsing.cst_shape``); where it did not (a syntax error,
or syntax newer than the interpreter's), nothing has measured the text. ``measure`` does, in
one pass over the text with an explicit stack (no recursion), in time linear in its length:

- **depth**: indentation levels, plus brackets and f-string replacement fields open, plus
  the operators that nest what follows them within one expression (``lambda``, ``not``,
  unary ``-``/``+``/``~``, ``await``, ``**``, a conditional expression's ``if``/``else``, and
  each string of an implicit concatenation), counted from the last ``,``, ``;``, ``=`` or end
  of line of their bracket;
- **chain**: the longest run of links of one left-recursive expression at one bracket level:
  attribute accesses, calls, subscripts and binary operators, each after an operand; a
  comparison, keyword, ``,``, ``:``, ``=`` or end of line ends a run;
- **f-strings**: how deep f-strings nest inside one another's replacement fields (PEP 701).

Every count is an upper bound of what a parser would build (the measure never parses, so it
errs on the side of more), and broken text (an unclosed string or bracket, a stray ``)``) is
measured as far as it goes: the measure never fails.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    """What ``measure`` found: the deepest nesting, the longest chain, the deepest f-string,
    and sums that grow as a parser's work does (``work``)."""

    depth: int
    chain: int
    fstrings: int
    # The depth at every token, summed (what a tree of the text holds grows with it); the
    # square of a chain's length so far at every link of it, summed (a chain of n links adds
    # about n**3/3: libcst's time on a chain it rejects); the square of the f-string nesting
    # at every f-string, summed (``newsyntax`` parses each field's text again, at every level).
    depth_work: int = 0
    chain_work: int = 0
    fstring_work: int = 0


def refusal(shape: Shape, most_depth: int, most_chain: int, most_fstrings: int | None = None) -> str | None:
    """Why text of this shape is not given to libcst (None: it may be)."""
    if most_fstrings is not None and shape.fstrings > most_fstrings:
        return f"its f-strings nest {shape.fstrings:,} deep, more than the {most_fstrings:,} the rules parse"
    if shape.chain > most_chain:
        return f"an expression chains {shape.chain:,} terms, more than the {most_chain:,} the rules parse"
    if shape.depth > most_depth:
        return f"its syntax nests {shape.depth:,} levels deep, more than the {most_depth:,} the rules follow"
    return None


_TOKEN = re.compile(
    r"""
    (?P<space>[ \t\f\r]+)
    | (?P<newline>\n)
    | (?P<comment>\#[^\n]*)
    | (?P<continuation>\\\r?\n)
    | (?P<name>[^\W\d]\w*)
    | (?P<number>\.?\d[\w.]*)
    | (?P<quote>'''|\"\"\"|'|")
    | (?P<ellipsis>\.\.\.)
    | (?P<power>\*\*=?)
    | (?P<assign>(?://|<<|>>|[-+*/%@&|^])=|:=|=(?!=))
    | (?P<compare>->|[=!<>]=|<(?!<)|>(?!>))
    | (?P<binary>//|<<|>>|[-+*/%@&|^])
    | (?P<open>[(\[{])
    | (?P<close>[)\]}])
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
# The rest of a plain string's body after its opening quote, escapes skipped (a single-quoted
# one ends at the end of its line when it is not closed).
_STRING_END = {
    "'": re.compile(r"(?:[^'\\\n]|\\.)*(?:'|(?=\n)|\Z)", re.DOTALL),
    '"': re.compile(r'(?:[^"\\\n]|\\.)*(?:"|(?=\n)|\Z)', re.DOTALL),
    "'''": re.compile(r"(?:[^\\]|\\.)*?(?:'''|\Z)", re.DOTALL),
    '"""': re.compile(r'(?:[^\\]|\\.)*?(?:"""|\Z)', re.DOTALL),
}
# The literal characters of an f-string up to the next one that matters.
_FSTRING_TEXT = re.compile(r"[^{}\\'\"\n]+")
_PREFIXES = frozenset({"r", "u", "b", "br", "rb", "f", "fr", "rf", "t", "tr", "rt"})
_NESTING_WORDS = frozenset({"lambda", "not", "await", "if", "else", "yield"})
_OPERAND_WORDS = frozenset({"None", "True", "False"})
_KEYWORDS = frozenset(keyword.kwlist) - _OPERAND_WORDS

# Frame kinds: a bracket, an f-string's literal text, a replacement field, a format spec.
_BRACKET, _FSTRING, _FIELD, _SPEC = range(4)


class _Frame:
    __slots__ = ("kind", "quote", "chain", "nesting", "after_operand", "after_string")

    def __init__(self, kind: int, quote: str = "") -> None:
        self.kind = kind
        self.quote = quote  # the f-string's closing quote, in its text, fields and specs
        self.chain = 0  # links of the current left-recursive run
        self.nesting = 0  # nesting operators since the last separator
        self.after_operand = False
        self.after_string = False


def measure(text: str) -> Shape:
    """The ``Shape`` of ``text`` (Python source, perhaps broken)."""
    return _Scanner(text).run()


class _Scanner:
    """One pass of ``measure``: a stack of frames, and the level they add up to."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.stack = [_Frame(_BRACKET)]
        self.level = 0  # frames open beyond the root, plus the nesting operators in them
        self.indents = [0]
        self.deepest = self.longest = self.fstrings = self.fstring_level = 0
        self.depth_work = self.chain_work = self.fstring_work = 0

    def run(self) -> Shape:
        text, stack = self.text, self.stack
        root = stack[0]
        at_line_start = True
        position, end = 0, len(text)
        match_token = _TOKEN.match
        while position < end:
            top = stack[-1]
            if top.kind == _FSTRING or top.kind == _SPEC:
                position = self.literal(top, position)
                self.note_depth()
                continue
            found = match_token(text, position)
            assert found is not None  # ``other`` matches any character
            kind, value = found.lastgroup, found.group()
            position = found.end()
            if kind == "space" or kind == "comment" or kind == "continuation":
                continue
            if kind == "newline":
                if len(stack) == 1:
                    at_line_start = True
                    self.separate(root)
                continue
            if at_line_start:
                at_line_start = False
                self.indent(_indent_width(text, position - len(value)))
            if kind == "name":
                if text.startswith(("'", '"'), position) and value.lower() in _PREFIXES:
                    position = self.string(position, value.lower())
                elif value in _KEYWORDS:
                    _separate_chain(top)
                    if value in _NESTING_WORDS:
                        self.nest(top)
                else:
                    self.operand(top)
            elif kind == "number" or kind == "ellipsis":
                self.operand(top)
            elif kind == "quote":
                position = self.string(position - len(value), "")
            elif kind == "open":
                if top.after_operand:
                    self.link(top)  # a call or subscript
                top.after_operand = top.after_string = False
                self.push(_Frame(_BRACKET))
            elif kind == "close":
                if top.kind == _FIELD:
                    if value == "}":
                        self.pop()  # back to the f-string's text
                elif len(stack) > 1:
                    self.pop()
                    self.operand(stack[-1])
            elif kind == "binary":
                if top.after_operand:
                    self.link(top)
                else:  # unary, or an unpacking star
                    self.nest(top)
                top.after_operand = top.after_string = False
            elif kind == "power":
                self.nest(top)  # right-associative: nests what follows
                top.after_operand = top.after_string = False
            elif value == ".":
                if top.after_operand:
                    self.link(top)
                top.after_operand = top.after_string = False
            elif value == ":" and top.kind == _FIELD:
                self.push(_Frame(_SPEC, top.quote))
            elif kind == "assign" or value == "," or value == ";":
                self.separate(top)
            else:  # a comparison, ``:``, ``!`` and anything else ends a chain
                _separate_chain(top)
            self.note_depth()
        return Shape(self.deepest, self.longest, self.fstrings, self.depth_work, self.chain_work, self.fstring_work)

    def literal(self, top: _Frame, position: int) -> int:
        """Read on in the literal text of an f-string or a format spec."""
        text = self.text
        found = _FSTRING_TEXT.match(text, position)
        if found:
            return found.end()
        char = text[position]
        quote = top.quote
        if char == "\\":
            return position + (1 if text[position + 1 : position + 2] in ("{", "}") else 2)
        if char == "\n":
            if len(quote) == 1:  # an unclosed one-line f-string ends with its line
                self.close_fstring()
            return position + 1
        if char in "'\"":
            if text.startswith(quote, position):
                self.close_fstring()
                self.operand(self.stack[-1], string=True)
                return position + len(quote)
            return position + 1
        if char == "{":
            if top.kind == _FSTRING and text.startswith("{{", position):
                return position + 2
            self.push(_Frame(_FIELD, quote))
            return position + 1
        # "}"
        if top.kind == _FSTRING:
            return position + (2 if text.startswith("}}", position) else 1)
        self.pop()  # the spec
        self.pop()  # and its field
        return position + 1

    def string(self, start: int, prefix: str) -> int:
        """Read the string whose opening quote is at ``start``: a plain one to its end, an
        f-string up to its text (its frame pushed). The position after."""
        text = self.text
        quote = '"""' if text.startswith('"""', start) else "'''" if text.startswith("'''", start) else text[start]
        body = start + len(quote)
        frame = self.stack[-1]
        if "f" not in prefix and "t" not in prefix:
            self.operand(frame, string=True)
            return _STRING_END[quote].match(text, body).end()  # type: ignore[union-attr]
        if frame.after_string:
            self.nest(frame)  # an implicit concatenation: libcst nests a level per string
        frame.after_operand = frame.after_string = False
        self.push(_Frame(_FSTRING, quote))
        self.fstring_level += 1
        self.fstring_work += self.fstring_level * self.fstring_level
        if self.fstring_level > self.fstrings:
            self.fstrings = self.fstring_level
        return body

    def close_fstring(self) -> None:
        """End the innermost f-string (and a spec or field of it still open: broken text)."""
        while len(self.stack) > 1:
            kind = self.stack[-1].kind
            self.pop()
            if kind == _FSTRING:
                self.fstring_level -= 1
                return

    def operand(self, frame: _Frame, string: bool = False) -> None:
        """An operand (name, number, string, bracketed expression) in ``frame``: a chain
        goes on through it."""
        if string and frame.after_string:
            self.nest(frame)  # an implicit concatenation: libcst nests a level per string
        frame.after_operand = True
        frame.after_string = string

    def link(self, frame: _Frame) -> None:
        frame.chain += 1
        self.chain_work += frame.chain * frame.chain
        if frame.chain > self.longest:
            self.longest = frame.chain

    def nest(self, frame: _Frame) -> None:
        frame.nesting += 1
        self.level += 1

    def separate(self, frame: _Frame) -> None:
        _separate_chain(frame)
        self.level -= frame.nesting
        frame.nesting = 0

    def push(self, frame: _Frame) -> None:
        self.stack.append(frame)
        self.level += 1

    def pop(self) -> None:
        if len(self.stack) > 1:
            frame = self.stack.pop()
            self.level -= 1 + frame.nesting

    def indent(self, width: int) -> None:
        indents = self.indents
        if width > indents[-1]:
            indents.append(width)
        else:
            while len(indents) > 1 and width < indents[-1]:
                indents.pop()

    def note_depth(self) -> None:
        depth = self.level + len(self.indents) - 1
        self.depth_work += depth
        if depth > self.deepest:
            self.deepest = depth


def _indent_width(text: str, start: int) -> int:
    """The width of the indentation before ``start`` (tabs to the next multiple of 8)."""
    line_start = text.rfind("\n", 0, start) + 1
    width = 0
    for char in text[line_start:start]:
        width = (width // 8 + 1) * 8 if char == "\t" else width + 1
    return width


def _separate_chain(frame: _Frame) -> None:
    frame.chain = 0
    frame.after_operand = frame.after_string = False
