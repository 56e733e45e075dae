"""Python 3.12 and 3.13 syntax on an older interpreter: the ``ast`` that 3.12 would give.

Facts come from the interpreter's ``ast``, which on 3.10 and 3.11 rejects PEP 695 (``type X =
...``, ``def f[T](x)``, ``class C[T]``, 3.13's type parameter defaults) and PEP 701 f-strings
(the enclosing quote reused inside a replacement field, backslashes or comments in one). Such
a file would be a syntax error and its findings lost. libcst's native parser accepts all of it
whatever the interpreter, so ``parse_module`` parses the file with libcst, rewrites only those
constructs into older syntax of the same shape, and parses that with ``ast``:

- ``type X[T] = value`` becomes ``X = value`` with the keyword and parameters blanked, then
  its ``Assign`` is turned back into a ``TypeAlias`` node (``ast.TypeAlias`` where it exists,
  else a class of the same name and fields, so visitors dispatch on it as on 3.12);
- a ``def``'s or ``class``'s type parameters are blanked (``def f   (x)`` parses), and the
  node gets them back as ``type_params``;
- an f-string older ``ast`` rejects is replaced by a placeholder of the same extent, which is
  then replaced by the ``JoinedStr`` 3.12 builds, each replacement field's expression parsed
  on its own (recursively, for nested new f-strings) and moved to its place in the file.

Every other byte stays where it was, so line and column of everything else are those of the
file, and facts and findings are the ones 3.12 gives. Text of any kind is only parsed here,
never run.

No ``ast`` has measured such a text, and libcst's native parser would overflow the C stack on
deep nesting, or take minutes on a long left-recursive chain or a large file it rejects: so
the text is measured first (``shape.measure``, no parse), and one larger than
``MAX_BYTES``, nesting deeper than ``MAX_DEPTH`` or chaining more than ``MAX_CHAIN`` terms
is not given to libcst (``Refused`` says why). The limits keep the worst case measured
(libcst's parse of text that fails at its end) to a few seconds and well under 1 GB.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from typing import Any

NEEDED = sys.version_info < (3, 12)

# What libcst is given whole, measured on a loaded 2-core machine (Python 3.11, libcst 1.x):
# - its parse runs at roughly 25 KB a second, holding about 1.3 KB of memory a byte of
#   ordinary code, and as long when it fails at the end of the text;
# - nesting costs memory: 32 KB of 199 nested brackets a line held 410 MB, of 390 nested
#   lambdas 329 MB (Shape.depth_work 3.2 and 1.5 million): 200 bytes a unit of depth work,
#   rounded up; 50,000 nested brackets overflowed the C stack;
# - a chain costs time with the cube of its length when the text fails to parse: 108 chains
#   of 298 links took 1.7 s (Shape.chain_work 479 million), one of 4,000 calls 234 s;
# - the rewriting below parses each f-string field's text again at every level of nesting:
#   1,100 f-strings of 20 levels took 40 s (Shape.fstring_work 3.4 million), one of 200 76 s.
# The limits keep each of these to 2 or 3 s and 500 MB, and a file holding all of them at
# once (tests/test_security_parsers.py, ``limit_all_error``) well under the 10 s and 1 GB a
# file may cost. Python itself refuses more than 200 nested brackets, 100 levels of
# indentation and (3.12) 150 nested f-strings: valid code stays far below all of them.
MAX_BYTES = 64 * 1024
MAX_DEPTH = 400
MAX_CHAIN = 300
MAX_FSTRINGS = 20
MAX_DEPTH_WORK = 2_500_000
MAX_CHAIN_WORK = 200_000_000
MAX_FSTRING_WORK = 80_000


def _node_class(name: str, fields: tuple[str, ...], base: type) -> type:
    """``ast.<name>`` where this interpreter has it, else a stand-in with the same fields."""
    found = getattr(ast, name, None)
    if found is not None:
        return found
    return type(name, (base,), {"_fields": fields, "__module__": __name__})


# Their fields as in Python 3.13 (3.12 has no defaults): a visitor walking ``_fields`` sees
# what it would see there.
TypeAlias = _node_class("TypeAlias", ("name", "type_params", "value"), ast.stmt)
TypeVar = _node_class("TypeVar", ("name", "bound", "default_value"), ast.AST)
ParamSpec = _node_class("ParamSpec", ("name", "default_value"), ast.AST)
TypeVarTuple = _node_class("TypeVarTuple", ("name", "default_value"), ast.AST)


class Unsupported(Exception):
    """Text that libcst parses but that cannot be turned into an older ``ast``."""


class Refused(Unsupported):
    """Text not given to libcst at all; the message says why (for the user)."""


def refusal(text: str) -> str | None:
    """Why ``text`` is not given to libcst whole (None: it may be): too large, too deep or
    too long a chain (see the module's docstring)."""
    from recompile_lint.analysis.shape import measure, refusal as shape_refusal

    if len(text) > MAX_BYTES:
        return f"a file over {MAX_BYTES // 1024} KiB is not read as newer syntax"
    shape = measure(text)
    reason = shape_refusal(shape, MAX_DEPTH, MAX_CHAIN, MAX_FSTRINGS)
    if reason is not None:
        return reason
    if shape.depth_work > MAX_DEPTH_WORK:
        return "it nests too deeply for its size"
    if shape.chain_work > MAX_CHAIN_WORK:
        return "its chained expressions are too long for its size"
    if shape.fstring_work > MAX_FSTRING_WORK:
        return "its f-strings nest too deeply for their number"
    return None


@dataclass(frozen=True)
class _Edit:
    """Replace the characters from (line, column) to (end_line, end_column), 1-based lines and
    0-based columns in characters, keeping the lines the file has."""

    line: int
    column: int
    end_line: int
    end_column: int
    kind: str  # "string", "alias", "params"
    node: Any  # the libcst node rewritten
    name: str = ""  # the alias's name


def parse_module(text: str, path: str = "<unknown>") -> ast.Module:
    """The ``ast`` of ``text`` as Python 3.12 parses it. Raises SyntaxError where libcst
    rejects the text too (or it cannot be brought to an older ``ast``), ``Refused`` for text
    not given to libcst (``refusal``)."""
    reason = refusal(text)
    if reason is not None:
        raise Refused(reason)
    import libcst
    from libcst.metadata import MetadataWrapper, PositionProvider

    try:
        module = libcst.parse_module(text)
    except (libcst.ParserSyntaxError, RecursionError, ValueError) as exc:
        raise SyntaxError(str(exc).splitlines()[0] if str(exc) else "invalid syntax") from exc
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    lines = text.split("\n")
    edits = _Collector(positions, lines).collect(wrapper.module)
    rewritten, placeholders, aliases, params = _apply(lines, edits)
    try:
        tree = ast.parse("\n".join(rewritten), filename=path)
    except SyntaxError as exc:
        raise SyntaxError(f"cannot bring newer syntax to this interpreter's: {exc.msg}") from exc
    _Restore(lines, positions, placeholders, aliases, params).visit(tree)
    ast.fix_missing_locations(tree)
    return tree


class _Collector:
    """The edits that bring a libcst tree's new syntax to older syntax."""

    def __init__(self, positions: Any, lines: list[str]):
        self.positions = positions
        self.lines = lines
        self.edits: list[_Edit] = []

    def collect(self, module: Any) -> list[_Edit]:
        import libcst

        outer = self

        class Visitor(libcst.CSTVisitor):
            def visit_TypeAlias(self, node: Any) -> bool:
                start = outer.positions[node].start
                end = outer.positions[node.type_parameters or node.name].end
                outer.edits.append(_Edit(start.line, start.column, end.line, end.column, "alias", node, node.name.value))
                outer.visit_expression(node.value)
                return False

            def visit_FunctionDef(self, node: Any) -> bool:
                outer.params(node)
                return True

            def visit_ClassDef(self, node: Any) -> bool:
                outer.params(node)
                return True

            def visit_ConcatenatedString(self, node: Any) -> bool:
                return not outer.string(node)

            def visit_FormattedString(self, node: Any) -> bool:
                return not outer.string(node)

        module.visit(Visitor())
        return self.edits

    def visit_expression(self, node: Any) -> None:
        import libcst

        class Strings(libcst.CSTVisitor):
            def visit_ConcatenatedString(inner, node: Any) -> bool:  # noqa: N805
                return not self.string(node)

            def visit_FormattedString(inner, node: Any) -> bool:  # noqa: N805
                return not self.string(node)

        node.visit(Strings())

    def params(self, node: Any) -> None:
        if node.type_parameters is not None:
            where = self.positions[node.type_parameters]
            self.edits.append(_Edit(where.start.line, where.start.column, where.end.line, where.end.column, "params", node))

    def source(self, node: Any) -> str:
        where = self.positions[node]
        return _slice(self.lines, where.start.line, where.start.column, where.end.line, where.end.column)

    def string(self, node: Any) -> bool:
        """Record an edit for a string this interpreter's ``ast`` rejects; whether it did."""
        text = self.source(node)
        try:
            ast.parse(f"({text})", mode="eval")
            return False
        except SyntaxError:
            pass
        where = self.positions[node]
        self.edits.append(_Edit(where.start.line, where.start.column, where.end.line, where.end.column, "string", node))
        return True


def _slice(lines: list[str], line: int, column: int, end_line: int, end_column: int) -> str:
    if line == end_line:
        return lines[line - 1][column:end_column]
    return "\n".join([lines[line - 1][column:], *lines[line : end_line - 1], lines[end_line - 1][:end_column]])


def _byte_column(text: str, column: int) -> int:
    """A character column of a line as the UTF-8 byte offset ``ast`` reports."""
    return len(text[:column].encode("utf-8"))


def _apply(lines: list[str], edits: list[_Edit]) -> tuple[list[str], dict, dict, dict]:
    """The lines with the edits made; the places (line, byte column) of the placeholders of
    the strings and the aliases, and the type parameter lists by line, in the rewritten text.

    Every replacement has the UTF-8 length of what it replaces, so the byte columns ``ast``
    reports for the rest of a line are those of the file (the facts turn them into character
    columns with the file's own lines). Edits are made from the end of the text back, so the
    character columns of those still to make stay valid."""
    out = list(lines)
    placeholders: dict[tuple[int, int], _Edit] = {}
    aliases: dict[tuple[int, int], _Edit] = {}
    params: dict[int, _Edit] = {}
    taken: list[_Edit] = []
    for edit in sorted(edits, key=lambda e: (e.line, e.column)):
        if any((t.line, t.column) <= (edit.line, edit.column) < (t.end_line, t.end_column) for t in taken):
            continue  # inside another edit's span (a string in a blanked bound)
        taken.append(edit)
    for edit in reversed(taken):
        key = _blank(out, lines, edit)
        if edit.kind == "string":
            placeholders[key] = edit
        elif edit.kind == "alias":
            aliases[key] = edit
        else:
            params[edit.line] = edit
    return out, placeholders, aliases, params


def _blank(out: list[str], lines: list[str], edit: _Edit) -> tuple[int, int]:
    """Overwrite an edit's span in ``out`` (the same UTF-8 length on its last line, lines
    kept); the place of what now stands for it: the placeholder expression (a string literal
    of the same length, or ``(`` ... ``0)`` over several lines), or the alias's name."""
    first, last = edit.line - 1, edit.end_line - 1
    start = _byte_column(lines[first], edit.column)
    if first == last:
        line = out[first]
        width = len(line[edit.column : edit.end_column].encode("utf-8"))
        if edit.kind == "string":
            filler = '"' + " " * (width - 2) + '"'
        elif edit.kind == "alias":
            filler = edit.name.ljust(width)
        else:
            filler = " " * width
        out[first] = line[: edit.column] + filler + line[edit.end_column :]
        return edit.line, start
    head, tail = out[first][: edit.column], out[last][edit.end_column :]
    width = len(out[last][: edit.end_column].encode("utf-8"))
    if edit.kind == "string":
        # In parentheses a literal's lines may break anywhere; ``0)`` ends it on the last line.
        if width < 2:
            raise Unsupported("a string ending at the start of a line")
        out[first] = head + "("
        for number in range(first + 1, last):
            out[number] = ""
        out[last] = " " * (width - 2) + "0)" + tail
        return edit.end_line, width - 2
    # A type alias's name and parameters, or a parameter list, over several lines: blanked,
    # the lines joined with backslashes (outside brackets a newline ends a statement).
    out[first] = head + (edit.name if edit.kind == "alias" else "") + " \\"
    for number in range(first + 1, last):
        out[number] = " \\"
    out[last] = " " * width + tail
    return edit.line, start


class _Restore(ast.NodeTransformer):
    """Put the new syntax back into the ``ast`` of the rewritten text: ``TypeAlias`` nodes,
    ``type_params``, and the f-strings."""

    def __init__(self, lines: list[str], positions: Any, placeholders: dict, aliases: dict, params: dict):
        self.lines = lines
        self.positions = positions
        self.placeholders = placeholders
        self.aliases = aliases
        self.params = params

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        edit = self.placeholders.get((node.lineno, node.col_offset))
        if edit is None:
            return node
        return _strings(edit.node, self.positions, self.lines)

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        self.generic_visit(node)
        edit = self.aliases.get((node.lineno, node.col_offset))
        if edit is None:
            return node
        where = self.positions[edit.node.name]
        name = ast.Name(id=edit.name, ctx=ast.Store(), **_span(self.lines, where))
        params = _type_params(edit.node.type_parameters, self.positions, self.lines)
        start = self.positions[edit.node].start
        alias = TypeAlias(name=name, type_params=params, value=node.value)
        alias.lineno, alias.col_offset = start.line, _byte_column(self.lines[start.line - 1], start.column)
        alias.end_lineno, alias.end_col_offset = node.end_lineno, node.end_col_offset
        return alias

    def _with_params(self, node: ast.AST) -> ast.AST:
        self.generic_visit(node)
        # The parameters follow the name, on the line of the ``def`` or ``class`` keyword.
        edit = self.params.get(node.lineno)
        if edit is not None and edit.node.name.value == node.name:  # type: ignore[attr-defined]
            node.type_params = _type_params(edit.node.type_parameters, self.positions, self.lines)  # type: ignore[attr-defined]
        elif not hasattr(node, "type_params"):
            node.type_params = []  # type: ignore[attr-defined]
        return node

    visit_FunctionDef = _with_params
    visit_AsyncFunctionDef = _with_params
    visit_ClassDef = _with_params


def _span(lines: list[str], where: Any) -> dict[str, int]:
    """``ast`` position attributes of a libcst range (columns as UTF-8 byte offsets)."""
    return {
        "lineno": where.start.line,
        "col_offset": _byte_column(lines[where.start.line - 1], where.start.column),
        "end_lineno": where.end.line,
        "end_col_offset": _byte_column(lines[where.end.line - 1], where.end.column),
    }


def _expression(node: Any, positions: Any, lines: list[str]) -> ast.expr:
    """The ``ast`` of a libcst expression, parsed from the file's own text (the new syntax
    inside it too) and placed where it is in the file."""
    where = positions[node]
    text = _slice(lines, where.start.line, where.start.column, where.end.line, where.end.column)
    source = f"({text})"
    try:
        tree = ast.parse(source, mode="eval")
        expression = tree.body
    except SyntaxError:
        module = parse_module(source)
        if len(module.body) != 1 or not isinstance(module.body[0], ast.Expr):
            raise Unsupported("not an expression")
        expression = module.body[0].value
    # The text's first line is the file's from the expression's column (after the added
    # parenthesis); its other lines are the file's own.
    shift = _byte_column(lines[where.start.line - 1], where.start.column) - 1
    for inner in ast.walk(expression):
        if "lineno" not in inner._attributes:
            continue
        if getattr(inner, "lineno", None) == 1:
            inner.col_offset += shift  # type: ignore[attr-defined]
        if getattr(inner, "end_lineno", None) == 1:
            inner.end_col_offset += shift  # type: ignore[attr-defined]
        if getattr(inner, "lineno", None) is not None:
            inner.lineno += where.start.line - 1  # type: ignore[attr-defined]
        if getattr(inner, "end_lineno", None) is not None:
            inner.end_lineno += where.start.line - 1  # type: ignore[attr-defined]
    return expression


def _type_params(node: Any, positions: Any, lines: list[str]) -> list[ast.AST]:
    """The ``ast`` type parameters of a libcst ``TypeParameters`` (None: none)."""
    import libcst

    out: list[ast.AST] = []
    for param in node.params if node is not None else ():
        inner = param.param
        default = _expression(param.default, positions, lines) if getattr(param, "default", None) is not None else None
        span = _span(lines, positions[param])
        if isinstance(inner, libcst.TypeVar):
            bound = _expression(inner.bound, positions, lines) if inner.bound is not None else None
            out.append(TypeVar(name=inner.name.value, bound=bound, default_value=default, **span))
        elif isinstance(inner, libcst.ParamSpec):
            out.append(ParamSpec(name=inner.name.value, default_value=default, **span))
        else:
            out.append(TypeVarTuple(name=inner.name.value, default_value=default, **span))
    return out


_CONVERSIONS = {None: -1, "s": 115, "r": 114, "a": 97}


def _strings(node: Any, positions: Any, lines: list[str]) -> ast.expr:
    """The ``ast`` of a libcst string expression (an f-string, or an implicit concatenation
    holding one): a ``JoinedStr`` whose adjacent literal parts are merged, as 3.12 builds it."""
    import libcst

    values: list[ast.expr] = []
    pending: list[str] = []
    pending_span: list[dict[str, int]] = []

    def flush() -> None:
        if pending and "".join(pending):
            span = {**pending_span[0], "end_lineno": pending_span[-1]["end_lineno"], "end_col_offset": pending_span[-1]["end_col_offset"]}
            values.append(ast.Constant(value="".join(pending), **span))
        pending.clear()
        pending_span.clear()

    def literal(text: str, prefix: str, quote: str, where: dict[str, int]) -> None:
        try:
            pending.append(ast.literal_eval(f"{prefix}{quote}{text}{quote}"))
        except (SyntaxError, ValueError) as exc:
            raise Unsupported(f"a string part that does not evaluate: {exc}") from exc
        pending_span.append(where)

    def parts(items: Any, prefix: str, quote: str) -> list[ast.expr]:
        """The values of a sequence of f-string parts (also of a format spec)."""
        for part in items:
            where = _span(lines, positions[part])
            if isinstance(part, libcst.FormattedStringText):
                literal(part.value.replace("{{", "{").replace("}}", "}"), prefix, quote, where)
                continue
            if part.equal is not None:
                # ``{x = }``: the expression's text and the ``=`` (with their spaces) are a
                # literal part, and the value is shown by repr unless said otherwise.
                text = _slice(lines, where["lineno"], _character(lines, where["lineno"], where["col_offset"]) + 1, *_equal_end(part, positions, lines))
                pending.append(text)
                pending_span.append(where)
            flush()
            value = _expression(part.expression, positions, lines)
            conversion = _CONVERSIONS.get(part.conversion, -1)
            if part.equal is not None and part.conversion is None and part.format_spec is None:
                conversion = 114
            spec = None
            if part.format_spec is not None:
                saved = values[:]
                values.clear()
                parts(part.format_spec, prefix, quote)
                flush()
                spec = ast.JoinedStr(values=values[:], **_spec_span(part, positions, lines))
                values[:] = saved
            values.append(ast.FormattedValue(value=value, conversion=conversion, format_spec=spec, **where))
        return values

    pieces = _pieces(node)
    for piece in pieces:
        prefix = "".join(c for c in piece.prefix.lower() if c in "rb")
        if isinstance(piece, libcst.SimpleString):
            literal(piece.raw_value, prefix, piece.quote, _span(lines, positions[piece]))
        else:
            quote = piece.end
            parts(piece.parts, "r" if "r" in piece.start.lower() else "", quote)
    flush()
    return ast.JoinedStr(values=values, **_span(lines, positions[node]))


def _pieces(node: Any) -> list[Any]:
    """The strings of an implicit concatenation, in order (a single string: itself)."""
    import libcst

    if isinstance(node, libcst.ConcatenatedString):
        return _pieces(node.left) + _pieces(node.right)
    return [node]


def _character(lines: list[str], line: int, byte_column: int) -> int:
    return len(lines[line - 1].encode("utf-8")[:byte_column].decode("utf-8", "ignore"))


def _equal_end(part: Any, positions: Any, lines: list[str]) -> tuple[int, int]:
    """Where the literal text of a ``{x = }`` field ends: after the spaces following ``=``."""
    where = positions[part.equal]
    line, column = where.end.line, where.end.column
    text = lines[line - 1]
    while column < len(text) and text[column] in " \t":
        column += 1
    return line, column


def _spec_span(part: Any, positions: Any, lines: list[str]) -> dict[str, int]:
    """A format spec's extent, from its ``:`` as 3.12 has it."""
    first, last = positions[part.format_spec[0]], positions[part.format_spec[-1]]
    return {
        "lineno": first.start.line,
        "col_offset": _byte_column(lines[first.start.line - 1], first.start.column) - 1,
        "end_lineno": last.end.line,
        "end_col_offset": _byte_column(lines[last.end.line - 1], last.end.column),
    }
