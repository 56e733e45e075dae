"""One file on its own: the module name its path gives it, what parsing its text raises, and
parsing that is safe on any valid Python.

Deeply nested code is valid Python (a 7,100-term ``and``, an ``elif`` chain of thousands):
``ast`` and the visitors over it recurse once per level, and libcst's native parser recurses
in native code, where no recursion limit applies and the C stack simply overflows. So:

- ``on_deep_stack`` runs a parse where the stack is known to be large enough for the
  recursion limit the visitors raise (``DEEP_CODE_FRAMES``): the main thread with the
  usual 8 MiB or more, else a thread of its own with ``DEEP_STACK_BYTES``.
- ``parse_cst`` (the rules' libcst trees) measures a snippet before handing it to libcst: a
  tree deeper than ``MAX_CST_DEPTH`` levels, whose walk by the rules would exhaust the
  recursion limit, or a left-recursive chain longer than ``MAX_CST_CHAIN`` terms (``a + a +
  ...``, ``a[0][0]...``: libcst's parser takes time that grows with the cube of its length), is
  not parsed: ``CstRefused`` says why, and the function's findings are reported missing.
"""

from __future__ import annotations

import ast
import keyword
import os
import sys
import symtable
import threading
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from recompile_lint.models import FileError

if TYPE_CHECKING:
    import libcst

T = TypeVar("T")


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
    while _has_init(directory):
        parent, base = os.path.split(directory)
        parts.append(base)
        if parent == directory:
            break
        directory = parent
    return tuple(reversed(parts)), directory


def _has_init(directory: str) -> bool:
    return os.path.exists(os.path.join(directory, "__init__.py")) or os.path.exists(os.path.join(directory, "__init__.pyi"))


def package_name_for(module: str, root: str) -> str:
    """The name ``module`` is also imported by when its root directory is a namespace portion
    of a package (``pkg/layers/lora/`` with no ``__init__`` inside ``pkg/layers/``, which
    has one): ``pkg.layers.lora.linear`` for ``linear``, else "". Its files keep their short
    name too: a script there imports its siblings by theirs (``from model import Layer``)."""
    prefix = _namespace_package(root) if module else ""
    return f"{prefix}.{module}" if prefix else ""


def relative_base_for(path: str, module: str) -> str:
    """The module name a file's relative imports resolve from: its package-qualified name
    where its directory is a namespace portion of a package (``from ...common import f`` in
    ``pkg/layers/linear/fp16.py``, no ``__init__`` in ``linear/``, works only when it is
    imported as ``pkg.layers.linear.fp16``), else ``module``."""
    if not module:
        return module
    _, _, root = module_name_for(path)
    return package_name_for(module, root) or module


NAMESPACE_LEVELS = 3  # how many directories above a root may be namespace packages


def namespace_names_for(module: str, root: str) -> list[str]:
    """The names ``module`` has when its root directory is a namespace package (a directory
    with no ``__init__`` whose parent has none either) imported from one of the directories
    above it: ``src/fairchem/core/models.py``, root ``src/fairchem``: ``fairchem.core.models``;
    ``app/vjepa/utils.py``, root ``app/vjepa``: ``vjepa.utils``, ``app.vjepa.utils``. Up to
    ``NAMESPACE_LEVELS`` directories, while each is a name. Any such root may be one (which
    directory is on ``sys.path`` is not written in the project), so the index gives way to
    every other module of these names."""
    return [f"{prefix}.{module}" for prefix in _namespace_prefixes(root)] if module else []


@lru_cache(maxsize=4096)
def _namespace_prefixes(root: str) -> tuple[str, ...]:
    """``("vjepa", "app.vjepa")`` for a root directory ``app/vjepa`` (once per root directory:
    the directories above it are looked at for every file under it)."""
    prefixes: list[str] = []
    prefix, directory = "", root
    for _ in range(NAMESPACE_LEVELS):
        parent, base = os.path.split(directory)
        if parent == directory or not base.isidentifier() or keyword.iskeyword(base) or _has_init(parent):
            break
        prefix = f"{base}.{prefix}" if prefix else base
        prefixes.append(prefix)
        directory = parent
    return tuple(prefixes)


PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


def project_name_for(module: str, root: str) -> str:
    """The name ``module`` is imported by when a package directory above it is a project's
    own directory (it holds ``pyproject.toml``, ``setup.py`` or ``setup.cfg``) that also holds
    a stray ``__init__.py``: the project is installed or run from there, so its packages are
    top-level (``xlstm/xlstm/xlstm_large/model.py`` in a repository ``xlstm/`` with an
    ``__init__.py`` is ``xlstm.xlstm_large.model``, not ``xlstm.xlstm.xlstm_large.model``);
    else "". The deepest such directory counts."""
    parts = module.split(".") if module else []
    cut, directory = 0, root
    for level, part in enumerate(parts[:-1], start=1):
        directory = os.path.join(directory, part)
        if _is_project_directory(directory):
            cut = level
    return ".".join(parts[cut:]) if cut else ""


@lru_cache(maxsize=4096)
def _is_project_directory(directory: str) -> bool:
    return any(os.path.exists(os.path.join(directory, name)) for name in PROJECT_FILES)


@lru_cache(maxsize=4096)
def _namespace_package(root: str) -> str:
    """``pkg.layers.lora`` for a root directory ``pkg/layers/lora`` that is a namespace
    portion of a package, else "" (once per root directory); so is ``pkg/helpers/models``
    where neither ``helpers`` nor ``models`` has an ``__init__`` (up to ``NAMESPACE_LEVELS``
    such directories: ``from .helpers.models.net import Net`` in ``pkg``)."""
    names: list[str] = []
    directory = root
    for _ in range(NAMESPACE_LEVELS):
        parent, base = os.path.split(directory)
        if not base.isidentifier() or keyword.iskeyword(base) or parent == directory:
            return ""
        names.append(base)
        if _has_init(parent):
            packages, _ = _packages_around(parent)
            return ".".join((*packages, *reversed(names)))
        directory = parent
    return ""


def forget_package_layout() -> None:
    """Drop what ``module_name_for`` learnt of the directories (a new run may see new
    ``__init__`` files)."""
    _packages_around.cache_clear()
    _namespace_package.cache_clear()
    _namespace_prefixes.cache_clear()
    _is_project_directory.cache_clear()


# What parsing raises on bad input: ast rejects some inputs with ValueError (NUL bytes), deep
# nesting recurses.
PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError)


# Trees of whole files, kept only by an editor's session (``frontends.editing``) between its
# runs: path -> (the file's whole text, its tree or None until first parsed). Only a parse of
# exactly that text is answered from here, so a snippet of the file (which a stage may
# renumber) is always parsed anew. A tree depends on nothing but its text; the stages that
# ask for whole files never change the trees they are given.
resident_trees: dict[str, tuple[str, ast.Module | None]] | None = None


def parse_source(text: str, path: str = "<unknown>") -> ast.Module:
    """``ast.parse(text)``, and on an interpreter older than 3.12 the ``ast`` 3.12 gives for
    syntax only newer Pythons read (PEP 695 type parameters and aliases, PEP 701 f-strings:
    ``newsyntax``). Raises what ``ast.parse`` raises for text no Python up to 3.13 reads."""
    kept = resident_trees.get(path) if resident_trees is not None else None
    if kept is None or not (kept[0] is text or kept[0] == text):
        return _parse_source(text, path)
    if kept[1] is None:
        tree = _parse_source(text, path)
        resident_trees[path] = (kept[0], tree)  # type: ignore[index]
        return tree
    return kept[1]


def _parse_source(text: str, path: str) -> ast.Module:
    try:
        return ast.parse(text, filename=path)
    except SyntaxError as exc:
        from recompile_lint.analysis import newsyntax

        if not newsyntax.NEEDED:
            raise
        try:
            return newsyntax.parse_module(text, path)
        except newsyntax.Refused as refused:
            # The interpreter's own error stands, with why the newer syntax was not tried.
            raise SyntaxError(f"{exc.msg} (not read as Python 3.12 syntax: {refused})", (exc.filename, exc.lineno, exc.offset, exc.text)) from None
        except (SyntaxError, newsyntax.Unsupported, RecursionError, ValueError):
            raise exc from None


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
    raise_recursion_limit()
    try:
        on_deep_stack(symtable.symtable, text, path, "exec")
        return None
    except PARSE_ERRORS:
        pass
    try:
        on_deep_stack(parse_source, text, path)
    except PARSE_ERRORS as exc:
        return parse_error(path, exc)
    return None


# ---- parsing on a stack deep enough ---------------------------------------------------------

# The stack a parse thread gets (address space, paid for only as it is used).
DEEP_STACK_BYTES = 256 * 1024 * 1024
# The main thread's stack below which parses move to a thread of their own: with the
# visitors' raised recursion limit, ``ast`` recurses up to three times that limit in C, about
# 4 MiB at the limit the facts use (measured: 60,000 levels fit in 8 MiB).
MAIN_STACK_BYTES = 8 * 1024 * 1024
_stack_lock = threading.Lock()


@lru_cache(maxsize=1)
def _main_stack_is_large() -> bool:
    try:
        import resource
    except ImportError:  # not POSIX: the platform's default main stack (1 MiB on Windows)
        return False
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    except (OSError, ValueError):
        return False
    return soft == resource.RLIM_INFINITY or soft >= MAIN_STACK_BYTES


def on_deep_stack(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` where the stack is large enough for deep recursion: here on a main
    thread with a large stack, else in a thread with ``DEEP_STACK_BYTES`` (an editor or a test
    runner may call from a thread with a small stack). Exceptions are raised here."""
    if threading.current_thread() is threading.main_thread() and _main_stack_is_large():
        return function(*args)
    outcome: list[tuple[bool, Any]] = []

    def target() -> None:
        try:
            outcome.append((True, function(*args)))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            outcome.append((False, exc))

    with _stack_lock:  # the size applies to every thread started meanwhile
        previous = threading.stack_size()
        try:
            threading.stack_size(DEEP_STACK_BYTES)
        except (ValueError, RuntimeError):
            return function(*args)  # no larger stacks here: the platform's default
        try:
            thread = threading.Thread(target=target, name="recompile-lint-parse", daemon=True)
            thread.start()
        finally:
            threading.stack_size(previous)
    thread.join()
    ok, value = outcome[0]
    if ok:
        return value
    raise value


# ---- libcst, guarded --------------------------------------------------------------------------

# Levels of nesting of a libcst tree the rules walk safely: their visitors recurse a few
# frames per level within the recursion limit the facts set (``DEEP_CODE_FRAMES``, 10,000);
# 3,000 levels were measured to pass, 5,000 to fail, on a main thread's 8 MiB stack. The
# rules walk the tree in the caller's thread: one that is not the main thread may have a
# much smaller stack (512 KiB on macOS), and gets the smaller bound.
MAX_CST_DEPTH = 2_500
MAX_CST_DEPTH_OFF_MAIN = 250
# Terms of one left-recursive chain libcst parses in reasonable time: its parser takes about
# 0.7 s for a 1,000-term ``a + a + ...`` and 4 s for 2,000, 1.6 s for a 1,000-term
# ``a[0][0]...`` and 24 s for 2,000 (CPython compiles such chains up to about 3,000 terms).
MAX_CST_CHAIN = 1_000
# Source characters of one snippet libcst is given at most.
MAX_CST_BYTES = 2_000_000
# Characters that can extend a left-recursive chain: operators, attribute access, calls and
# subscripts. A snippet with fewer of them than ``MAX_CST_CHAIN`` cannot hold a longer chain,
# and one shorter than four characters a level cannot nest deeper than ``MAX_CST_DEPTH``:
# only others are measured.
_CHAIN_CHARACTERS = ".([+-*/%|&^@<>~"
_CHAIN_KINDS = {ast.BinOp: "left", ast.Attribute: "value", ast.Subscript: "value", ast.Call: "func"}


class CstRefused(Exception):
    """A snippet the rules do not parse with libcst; the message says why (for the user)."""


def parse_cst(snippet: str) -> "libcst.Module":
    """``libcst.parse_module(snippet)``, guarded (see the module's docstring). Raises
    ``CstRefused`` for a snippet that is too large, deep or long-chained, and what libcst
    raises for one it cannot parse."""
    import libcst

    if len(snippet) > MAX_CST_BYTES:
        raise CstRefused(f"it is {len(snippet):,} characters long, more than the {MAX_CST_BYTES:,} the rules parse")
    check_cst_shape(snippet)
    raise_recursion_limit()  # as the facts do, here too when the facts came from the cache
    return on_deep_stack(libcst.parse_module, snippet)


# Frames the ast visitors may need for the deepest code CPython itself compiles.
DEEP_CODE_FRAMES = 10_000


def raise_recursion_limit() -> None:
    """The recursion limit the visitors over deep code need (``DEEP_CODE_FRAMES``), on
    stacks ``on_deep_stack`` makes sure of: ``ast`` then recurses up to three times as deep
    in C, about 4 MiB at 10,000."""
    if sys.getrecursionlimit() < DEEP_CODE_FRAMES:
        sys.setrecursionlimit(DEEP_CODE_FRAMES)


def check_cst_shape(snippet: str) -> None:
    """Raise ``CstRefused`` when ``snippet``'s libcst tree would nest deeper than
    ``MAX_CST_DEPTH`` or hold a chain longer than ``MAX_CST_CHAIN``; cheap for the snippets
    that cannot (most)."""
    most = MAX_CST_DEPTH if threading.current_thread() is threading.main_thread() and _main_stack_is_large() else MAX_CST_DEPTH_OFF_MAIN
    chain_characters = sum(snippet.count(character) for character in _CHAIN_CHARACTERS)
    if chain_characters <= MAX_CST_CHAIN and len(snippet) <= 4 * most:
        return
    try:
        tree = on_deep_stack(ast.parse, snippet)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # No tree to measure (newer syntax, or broken): the text is measured instead, and
        # libcst's own verdict counts for what passes.
        from recompile_lint.analysis.shape import measure, refusal

        reason = refusal(measure(snippet), most, MAX_CST_CHAIN)
        if reason is not None:
            raise CstRefused(reason) from None
        return
    depth, chain = cst_shape(tree, snippet)
    if chain > MAX_CST_CHAIN:
        raise CstRefused(f"an expression chains {chain:,} terms, more than the {MAX_CST_CHAIN:,} the rules parse")
    if depth > most:
        raise CstRefused(f"its syntax nests {depth:,} levels deep, more than the {most:,} the rules follow")


def cst_shape(tree: ast.AST, source: str) -> tuple[int, int]:
    """(the nesting depth of the libcst tree of ``source``, its longest left-recursive chain),
    from its ``ast`` ``tree`` (walked without recursion). libcst nests what ``ast`` keeps flat:
    ``a and b and c`` is one ``BoolOp`` but two ``BooleanOperation`` levels, and implicitly
    concatenated strings (one ``Constant``) a level per string."""
    deepest = longest = 0
    stack: list[tuple[ast.AST, int, int]] = [(tree, 0, 0)]
    while stack:
        node, depth, chain = stack.pop()
        depth += 1
        kind = type(node)
        if kind is ast.BoolOp:
            depth += len(node.values) - 1  # type: ignore[attr-defined]
        elif kind is ast.JoinedStr or (kind is ast.Constant and isinstance(node.value, (str, bytes))):  # type: ignore[attr-defined]
            depth += _string_parts(node, source)
        if depth > deepest:
            deepest = depth
        if chain > longest:
            longest = chain
        link = _CHAIN_KINDS.get(kind)
        for child in ast.iter_child_nodes(node):
            # The chain goes on down the left operand (the receiver) when it is one more link.
            if link is not None and child is getattr(node, link) and type(child) in _CHAIN_KINDS:
                stack.append((child, depth, chain + 1))
            else:
                stack.append((child, depth, 1 if type(child) in _CHAIN_KINDS else 0))
    return deepest, longest


def _string_parts(node: ast.AST, source: str) -> int:
    """How many literals an implicit concatenation joined into ``node``, less one (libcst
    nests a level per literal). Only a long literal can hold enough of them to matter (each
    takes three characters at least): only those are tokenized."""
    first, last = getattr(node, "lineno", 0), getattr(node, "end_lineno", 0) or 0
    if first == last and (getattr(node, "end_col_offset", 0) or 0) - node.col_offset < 3 * MAX_CST_DEPTH:  # type: ignore[attr-defined]
        return 0
    segment = ast.get_source_segment(source, node) or ""
    if len(segment) < 3 * MAX_CST_DEPTH:
        return 0
    import io
    import tokenize

    kinds = {tokenize.STRING, getattr(tokenize, "FSTRING_START", tokenize.STRING)}
    try:
        count = sum(1 for token in tokenize.generate_tokens(io.StringIO(f"({segment})").readline) if token.type in kinds)
    except (tokenize.TokenError, SyntaxError):
        return len(segment) // 3
    return max(0, count - 1)
