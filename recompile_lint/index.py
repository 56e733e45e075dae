"""The project index: module names, on-demand facts, and cross-module resolution.

Files are read as text first; only files that can hold a compile site, that a region reaches,
or that mention a name a region reads are parsed (with ``ast``, cached per content hash).
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import symtable
from dataclasses import dataclass, fields, is_dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Callable, Iterable, Iterator

from recompile_lint.facts import LENGTH_METHODS, Binding, ClassFacts, FunctionFacts, ModuleFacts, Mutation, collect_facts
from recompile_lint.models import FileError
from recompile_lint.source import SourceError, decode_source, read_bytes

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


def module_name_for(path: str) -> tuple[str, bool, str]:
    """(dotted module name, is_package, sys.path root) of a file, from the packages around it."""
    # os.path rather than pathlib: this runs for every file of the project on every run.
    directory, name = os.path.split(os.path.abspath(path))
    stem = name.rsplit(".", 1)[0]
    is_package = stem == "__init__"
    packages, root = _packages_around(directory)
    parts = packages if is_package else (*packages, stem)
    return ".".join(parts), is_package, root


@lru_cache(maxsize=4096)
def _packages_around(directory: str) -> tuple[tuple[str, ...], str]:
    """(the package names from the root down to ``directory``, the root): the directories
    upwards that hold an ``__init__``. Asked for every file, answered once per directory
    (``forget_package_layout`` starts a run afresh)."""
    parts: list[str] = []
    while os.path.exists(os.path.join(directory, "__init__.py")) or os.path.exists(os.path.join(directory, "__init__.pyi")):
        parent, base = os.path.split(directory)
        parts.append(base)
        if parent == directory:
            break
        directory = parent
    return tuple(reversed(parts)), directory


def forget_package_layout() -> None:
    """Drop what ``module_name_for`` learnt of the directories (a new run may see new
    ``__init__`` files)."""
    _packages_around.cache_clear()


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
    return False


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


def mentions(text: str, word: str) -> bool:
    """Whether ``word`` occurs in ``text`` as a whole identifier (a substring search first:
    much faster than a regular expression over the whole text)."""
    return next(_word_positions(text, word), None) is not None


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


def may_mutate(path: str, text: str, owners: frozenset[str], by_name: dict[str, set[str]], guarded: "Guarded") -> bool:
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


@dataclass
class Guarded:
    """Values regions read whose change elsewhere can make Dynamo recompile."""

    globals: set[tuple[str, str]]  # (path of the module that holds it, name)
    attributes: set[str]  # instance attributes the regions' classes initialise to scalars
    environ: bool = False  # a region reads os.environ

    def empty(self) -> bool:
        return not self.globals and not self.attributes and not self.environ


@dataclass(frozen=True)
class FunctionRef:
    """A function of the project: the file it is in and its qualname there."""

    path: str
    qualname: str


class FactsStore:
    """Where parsed facts come from: memory, then the cache, then a parse."""

    def __init__(self, compile_functions: tuple[str, ...] = (), cache: "object | None" = None):
        self.compile_functions = compile_functions
        self.cache = cache  # an object with get(key) -> ModuleFacts|None and put(key, facts)
        self._keys: dict[str, tuple[str, tuple[str, ...], str]] = {}
        # ``ast`` trees of parsed files that hold compile sites, by path and text: the
        # function-identity rules walk exactly those files again (``rules._identity.Trees``).
        self.compile_site_trees: dict[str, tuple[str, ast.Module]] = {}

    def key(self, path: str, text: str) -> str:
        # Asked for the same text by the parse and by the call-site collection: hashed once.
        known = self._keys.get(path)
        if known is not None and known[0] is text and known[1] == self.compile_functions:
            return known[2]
        key = self._key(path, text)
        self._keys[path] = (text, self.compile_functions, key)
        return key

    def _key(self, path: str, text: str) -> str:
        # The module name is part of the facts, and it comes from the path.
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16)
        digest.update(os.path.abspath(path).encode("utf-8", "surrogatepass"))
        digest.update(repr(self.compile_functions).encode())
        return digest.hexdigest()

    def parse(self, path: str, text: str) -> ModuleFacts:
        key = self.key(path, text)
        if self.cache is not None:
            cached = self.cache.get(key, path)
            if cached is not None:
                return cached
        module, is_package, _ = module_name_for(path)
        tree = ast.parse(text, filename=path)
        facts = collect_facts(tree, path, module, is_package, text, self.compile_functions)
        if facts.compile_sites:
            self.compile_site_trees[path] = (text, tree)
        if self.cache is not None:
            self.cache.put(key, path, facts)
        return facts


# What parsing raises on bad input: ast rejects some inputs with ValueError (NUL bytes), deep
# nesting recurses.
PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError)


def parse_error(path: str, exc: BaseException) -> FileError:
    """The error recorded for a file whose parse raised ``exc`` (one of ``PARSE_ERRORS``)."""
    if isinstance(exc, SyntaxError):
        return FileError(path=path, message=f"syntax error: {exc.msg}", line=exc.lineno or 0, column=exc.offset or 0)
    return FileError(path=path, message=f"cannot parse: {type(exc).__name__}: {exc}")


def syntax_error(path: str, text: str) -> FileError | None:
    """The error parsing ``text`` records (as ``ProjectIndex.facts`` would), or None.

    Checked by building the symbol table, which parses as ``ast.parse`` does without turning
    the tree into Python objects (about half the cost). It also rejects a few programs that
    parse (a misplaced ``nonlocal``): whatever it rejects is parsed again with ``ast``, and
    only ``ast``'s verdict counts.
    """
    try:
        symtable.symtable(text, path, "exec")
        return None
    except PARSE_ERRORS:
        pass
    try:
        compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except PARSE_ERRORS as exc:
        return parse_error(path, exc)
    return None


class ProjectIndex:
    """Every Python file of the project by module name; facts parsed on demand."""

    def __init__(self, files: Iterable[str], store: FactsStore, reader: Callable[[str], bytes] | None = None, jobs: int = 1):
        self.store = store
        self.jobs = jobs  # worker processes for batches of parses (0: one per core)
        self.reader = reader or read_bytes
        self.paths: list[str] = sorted(dict.fromkeys(files))
        self.by_module: dict[str, list[str]] = {}
        self.sys_root: dict[str, str] = {}
        self.module_names: dict[str, str] = {}
        for path in self.paths:
            module, _, root = module_name_for(path)
            self.sys_root[path] = root
            self.module_names[path] = module
            if module:
                self.by_module.setdefault(module, []).append(path)
        self._text: dict[str, str | None] = {}
        self._facts: dict[str, ModuleFacts | None] = {}
        self.errors: dict[str, FileError] = {}
        self._mutations: dict[tuple[str, str, str], list[Mutation]] | None = None
        self._scanned: set[str] = set()
        # Call sites of compiled objects, keyed by the names they are called by (callsites.py).
        self.call_site_cache: dict[frozenset[str], list] = {}
        self.primed_names: frozenset[str] = frozenset()  # names whose call sites are collected
        self._classes: dict[tuple[str, str | None], tuple[ModuleFacts, ClassFacts] | None] = {}
        self._mro: dict[tuple[str, str], list[tuple[ModuleFacts, ClassFacts]]] = {}
        # Derived data rules share within a run (e.g. the ``ast`` trees of compile-site files).
        self.memo: dict[str, object] = {}
        self.syntax_checked: set[str] = set()  # files known to compile (checked elsewhere)
        # Content digests of the files (the run cache computed them: ``RunCache.key``, or
        # ``RunCache.buffer_digests`` for unsaved buffers): what names a file's text in a
        # resident server's memory of text tests (``resident_tests``).
        self.digests: dict[str, str] = {}
        # Told of each file as its facts are about to be parsed (``parallel.BackgroundSyntaxCheck``).
        self.parse_listeners: list[Callable[[str], None]] = []

    # ---- reading -------------------------------------------------------------------------

    def text(self, path: str) -> str | None:
        if path not in self._text:
            try:
                self._text[path] = decode_source(self.reader(path), path)
            except SourceError as exc:
                self.errors[path] = FileError(path=path, message=str(exc))
                self._text[path] = None
        return self._text[path]

    def facts(self, path: str) -> ModuleFacts | None:
        """Parsed facts of a file (None, with an error recorded, when it cannot be parsed)."""
        if path not in self._facts:
            text = self.text(path)
            facts = None
            if text is not None:
                for listener in self.parse_listeners:
                    listener(path)
                try:
                    facts = self.store.parse(path, text)
                except PARSE_ERRORS as exc:
                    self.errors[path] = parse_error(path, exc)
            self._facts[path] = facts
        return self._facts[path]

    def prefetch(self, paths: Iterable[str]) -> None:
        """Parse the facts of ``paths`` now, in worker processes when the batch is worth it.

        Files already parsed or cached are skipped; errors are recorded exactly as ``facts()``
        records them, and results go to the cache as ``facts()`` would put them.
        """
        if self.jobs == 1:
            return
        from recompile_lint.parallel import parse_in_parallel, worth_parallel

        todo: list[tuple[str, str, str]] = []
        cache = self.store.cache
        for path in paths:
            if path in self._facts:
                continue
            text = self.text(path)
            if text is None:
                continue
            key = self.store.key(path, text)
            cached = cache.get(key, path) if cache is not None else None
            if cached is not None:
                self._facts[path] = cached
                continue
            todo.append((path, text, key))
        sources = [(path, text) for path, text, _ in todo]
        if not worth_parallel(sources, self.jobs):
            return  # facts() parses them one by one
        for path, _, _ in todo:
            for listener in self.parse_listeners:
                listener(path)
        results = parse_in_parallel(sources, self.store.compile_functions, self.jobs)
        for path, _, key in todo:
            result = results[path]
            if isinstance(result, FileError):
                self.errors[path] = result
                self._facts[path] = None
            else:
                self._facts[path] = result
                if cache is not None:
                    cache.put(key, path, result)

    def check_syntax(self, path: str) -> None:
        """Record a syntax error of a file no region needed (bad input must never pass)."""
        if path in self._facts or path in self.errors or path in self.syntax_checked:
            return
        text = self.text(path)
        if text is None:
            return
        error = syntax_error(path, text)
        if error is not None:
            self.errors[path] = error

    def record_syntax_checks(self, results: dict[str, "FileError | None"]) -> None:
        """Take syntax checks made elsewhere (``parallel.BackgroundSyntaxCheck``); a file
        the analysis parsed keeps what its own parse recorded."""
        for path, error in results.items():
            if path in self._facts or path in self.errors:
                continue
            if error is None:
                self.syntax_checked.add(path)
            else:
                self.errors[path] = error

    def reparse(self, paths: Iterable[str]) -> None:
        """Forget the facts of ``paths`` (after the store's settings changed)."""
        for path in paths:
            self._facts.pop(path, None)
        self._mutations = None
        self._classes.clear()
        self._mro.clear()

    def wrapper_functions(self) -> set[str]:
        """Dotted names of project functions that compile their own parameter and so act as
        ``torch.compile`` wrappers (``def maybe_compile(fn): return torch.compile(fn)``)."""
        out = set()
        for facts in self.parsed():
            for fn in facts.functions:
                if fn.compiles_param and not fn.parent and not fn.class_name:
                    out.add(f"{facts.module}.{fn.qualname}" if facts.module else fn.qualname)
        return out

    def is_parsed(self, path: str) -> bool:
        """Whether ``path`` was parsed (or failed to) in this run."""
        return path in self._facts

    def parsed(self) -> Iterator[ModuleFacts]:
        for facts in self._facts.values():
            if facts is not None:
                yield facts

    def select(self, paths: Iterable[str], test: Callable[[str, str], bool], meanwhile: Callable[[], None] | None = None) -> list[str]:
        """The readable ``paths`` whose text passes ``test(path, text)``, in order.

        With ``jobs`` above 1 and enough text on disk, worker processes read the files and
        run the tests (``test`` must then pickle: a module-level function or a
        ``functools.partial`` of one), and this process runs ``meanwhile`` while they do;
        otherwise ``meanwhile`` runs first. Either way it runs once. A file the workers cannot
        read is read here, so its error is recorded as a read here records it. In a resident
        server, results it remembers for a file's digest (``resident_tests``) are not tested again.
        """
        paths = list(paths)
        pending = [meanwhile] if meanwhile is not None else []

        def run_meanwhile() -> None:
            while pending:
                pending.pop()()

        name = text_test_name(test) if resident_tests is not None and self.digests else None
        known: dict[str, bool] = {}
        if name is not None:
            for path in paths:
                digest = self.digests.get(path)
                result = resident_tests.get((name, path, digest)) if digest is not None else None  # type: ignore[union-attr]
                if result is not None:
                    known[path] = result
        todo = [path for path in paths if path not in known] if known else paths
        tested: dict[str, bool] = {}  # the files of ``todo`` that could be read
        found = None
        if self.jobs != 1 and self.reader is read_bytes:
            from recompile_lint.parallel import select_in_parallel

            found = select_in_parallel(todo, test, self.jobs, run_meanwhile)
        if found is not None:
            chosen, unread = found
            for path in unread:
                self.text(path)
            missing = set(unread)
            tested = {path: path in chosen for path in todo if path not in missing}
        else:
            run_meanwhile()
            tested = {path: test(path, text) for path in todo if (text := self.text(path)) is not None}
        if name is not None:
            new_tests.extend((name, path, self.digests[path], result) for path, result in tested.items() if path in self.digests)
        return [path for path in paths if known.get(path) or tested.get(path)]

    # ---- modules -------------------------------------------------------------------------

    def module_path(self, module: str, from_path: str | None = None) -> str | None:
        """The file of ``module``, preferring the importer's own import root."""
        candidates = self.by_module.get(module)
        if not candidates:
            return None
        if len(candidates) == 1 or from_path is None:
            return candidates[0]
        root = self.sys_root.get(from_path) or module_name_for(from_path)[2]
        for candidate in candidates:
            if self.sys_root[candidate] == root:
                return candidate
        # Nearest by shared directory prefix: the sibling project, not one elsewhere in the tree.
        return max(candidates, key=lambda c: len(os.path.commonpath([c, from_path])))

    def module_facts(self, module: str, from_path: str | None = None) -> ModuleFacts | None:
        path = self.module_path(module, from_path)
        return self.facts(path) if path else None

    def split_dotted(self, dotted: str, from_path: str | None) -> tuple[ModuleFacts, str] | None:
        """Split ``pkg.mod.Name.attr`` into (facts of pkg.mod, "Name.attr") by the longest module."""
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):
            facts = self.module_facts(".".join(parts[:i]), from_path)
            if facts is not None:
                return facts, ".".join(parts[i:])
        return None

    # ---- resolution ----------------------------------------------------------------------

    def resolve_class(self, dotted: str, from_path: str | None) -> tuple[ModuleFacts, ClassFacts] | None:
        """The project class an absolute (or module-local) dotted name denotes."""
        key = (dotted, from_path)
        if key not in self._classes:
            self._classes[key] = None  # a cycle of re-exports resolves to nothing
            self._classes[key] = self._resolve_class(dotted, from_path)
        return self._classes[key]

    def _resolve_class(self, dotted: str, from_path: str | None) -> tuple[ModuleFacts, ClassFacts] | None:
        if not dotted:
            return None
        if from_path is not None:
            facts = self.facts(from_path)
            if facts is not None:
                local = facts.cls(dotted)
                if local is not None:
                    return facts, local
        split = self.split_dotted(dotted, from_path)
        if split is None:
            return None
        facts, rest = split
        cls = facts.cls(rest)
        if cls is not None:
            return facts, cls
        # Re-exported through a package ``__init__``: follow the import once more.
        head, _, tail = rest.partition(".")
        target = facts.import_target(head)
        if target and target != dotted:
            return self.resolve_class(f"{target}.{tail}" if tail else target, facts.path)
        return None

    def mro(self, facts: ModuleFacts, cls: ClassFacts, limit: int = 12) -> list[tuple[ModuleFacts, ClassFacts]]:
        """The class and its project base classes, nearest first."""
        key = (facts.path, cls.qualname)
        if key not in self._mro:
            self._mro[key] = self._linearize(facts, cls, limit)
        return self._mro[key]

    def _linearize(self, facts: ModuleFacts, cls: ClassFacts, limit: int) -> list[tuple[ModuleFacts, ClassFacts]]:
        out = [(facts, cls)]
        seen = {(facts.path, cls.qualname)}
        i = 0
        while i < len(out) and len(out) < limit:
            f, c = out[i]
            for base in c.bases:
                found = self.resolve_class(base, f.path)
                if found is not None and (found[0].path, found[1].qualname) not in seen:
                    seen.add((found[0].path, found[1].qualname))
                    out.append(found)
            i += 1
        return out

    def class_method(self, facts: ModuleFacts, cls: ClassFacts, name: str) -> FunctionRef | None:
        for f, c in self.mro(facts, cls):
            qual = c.method(name)
            if qual is not None:
                return FunctionRef(f.path, qual)
        return None

    def class_attr(self, facts: ModuleFacts, cls: ClassFacts, name: str):
        """(facts, class, AttrInit) where the attribute is initialised, nearest class first."""
        for f, c in self.mro(facts, cls):
            init = c.attr(name)
            if init is not None:
                return f, c, init
        return None

    def is_buffer(self, facts: ModuleFacts, cls: ClassFacts, name: str) -> bool:
        return any(name in c.buffers for _, c in self.mro(facts, cls))

    def class_submodule(self, facts: ModuleFacts, cls: ClassFacts, name: str) -> tuple[ModuleFacts, ClassFacts] | None:
        for f, c in self.mro(facts, cls):
            ref = c.submodule(name)
            if ref is not None:
                return self.resolve_class(ref, f.path)
        return None

    def function(self, ref: FunctionRef) -> FunctionFacts | None:
        facts = self.facts(ref.path)
        return facts.function(ref.qualname) if facts else None

    def resolve_function(self, dotted: str, from_path: str | None) -> FunctionRef | None:
        """A module-level function (or class method) an absolute dotted name denotes."""
        split = self.split_dotted(dotted, from_path)
        if split is None:
            return None
        facts, rest = split
        if facts.function(rest) is not None:
            return FunctionRef(facts.path, rest)
        head, _, tail = rest.partition(".")
        target = facts.import_target(head)
        if target and target != dotted and not tail:
            return self.resolve_function(target, facts.path)
        return None

    def global_binding(self, facts: ModuleFacts, name: str) -> tuple[ModuleFacts, Binding] | None:
        """The module-level binding ``name`` in ``facts``; follows ``from m import name``."""
        binding = facts.binding(name)
        target = facts.import_target(name)
        if target is not None:
            module, _, attr = target.rpartition(".")
            if module:
                other = self.module_facts(module, facts.path)
                if other is not None and other.path != facts.path:
                    found = other.binding(attr)
                    if found is not None and found.kind != "imported":
                        return other, found
                    if found is not None:
                        return self.global_binding(other, attr)
            return None
        if binding is not None:
            return facts, binding
        return None

    def dynamic_sources(self, paths: Iterable[str]) -> frozenset[str]:
        """Sources named in ``torch.compiler.config.dynamic_sources`` in the given files (a
        setting elsewhere in the tree may belong to another program)."""
        out: set[str] = set()
        for path in set(paths):
            facts = self.facts(path)
            if facts is None:
                continue
            for setting in facts.config_settings:
                if setting.key.endswith(".dynamic_sources"):
                    try:
                        value = ast.literal_eval(setting.value)
                    except (ValueError, SyntaxError):
                        continue
                    if isinstance(value, str):
                        out.update(v.strip() for v in value.split(",") if v.strip())
        return frozenset(out)

    # ---- mutations -----------------------------------------------------------------------

    def scan_for_mutations(self, guarded: "Guarded") -> None:
        """Parse every project file that can change a guarded value (facts hold its mutations).

        A global of module ``m`` can only be changed in ``m`` itself or in a file that names
        ``m`` (``import pkg.m``, ``from pkg import m``, ``from pkg.m import X``): both the value's
        name and the module's last name must appear as words, and the value's name (or its
        import alias) where a write can be (``writes_name``). ``os.environ`` writes are looked
        for when a region reads the environment. Instance attributes can be set anywhere: a file
        is selected where the attribute's name can be written (an assignment, ``del``,
        ``setattr``...).
        """
        if guarded.empty():
            return
        owners = {path for path, _ in guarded.globals}
        by_name: dict[str, set[str]] = {}
        for path, name in guarded.globals:
            by_name.setdefault(name, set()).add(self.module_last_name(path))
        unscanned = [path for path in self.paths if path not in self._facts and path not in self._scanned]
        selected = self.select(unscanned, partial(may_mutate, owners=frozenset(owners), by_name=by_name, guarded=guarded))
        self._scanned.update(unscanned)
        self.prefetch(selected)
        for path in selected:
            self.facts(path)
        self._mutations = None

    def module_last_name(self, path: str) -> str:
        """The name other files import ``path`` by: its module's last component."""
        module = self.module_names[path] if path in self.module_names else module_name_for(path)[0]
        return module.rsplit(".", 1)[-1] if module else Path(path).name.rsplit(".", 1)[0]

    def mutation_table(self) -> dict[tuple[str, str, str], list[Mutation]]:
        """(kind, path of the module holding the value, name) -> mutations, over parsed files."""
        if self._mutations is None:
            table: dict[tuple[str, str, str], list[Mutation]] = {}
            for facts in list(self.parsed()):
                for mutation in facts.mutations:
                    if mutation.kind == "instance-attribute":
                        table.setdefault((mutation.kind, "", mutation.name), []).append(mutation)
                        continue
                    if mutation.kind == "environ":
                        table.setdefault((mutation.kind, "", mutation.key), []).append(mutation)
                        table.setdefault((mutation.kind, "", "*"), []).append(mutation)
                        continue
                    target = self.module_path(mutation.module, mutation.path)
                    if target is None:
                        continue
                    table.setdefault((mutation.kind, target, mutation.name), []).append(mutation)
            self._mutations = table
        return self._mutations

    def mutations(self, kind: str, path: str, name: str) -> list[Mutation]:
        return self.mutation_table().get((kind, path, name), [])
