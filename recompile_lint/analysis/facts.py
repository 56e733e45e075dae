"""Per-file facts from one cheap ``ast`` pass: imports, bindings, functions, classes,
mutation sites and compile sites.

Everything here is plain, picklable data computed from one file alone (plus its module name),
so it can be cached by content hash and computed in parallel. Cross-file questions (which
module does ``ops`` name, which class does ``Net`` mean) are answered by ``index``.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterator

from recompile_lint.analysis.parsing import DEEP_CODE_FRAMES, relative_base_for

# Calls that build a tensor: a global bound to one is data, not a guarded constant.
TENSOR_FACTORIES = frozenset(
    {
        "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "rand", "randn",
        "randint", "randperm", "arange", "linspace", "logspace", "eye", "zeros_like", "ones_like",
        "empty_like", "full_like", "rand_like", "randn_like", "Tensor", "FloatTensor",
        "LongTensor", "stack", "cat", "Parameter", "Buffer",
    }
)
TENSOR_METHODS = frozenset({"to", "clone", "detach", "cuda", "cpu", "float", "half", "long", "contiguous", "view", "reshape", "requires_grad_"})
# nn.Module methods that return the module itself.
SELF_RETURNING_METHODS = frozenset({"eval", "train", "to", "cuda", "cpu", "half", "float", "double", "bfloat16", "requires_grad_", "share_memory", "to_empty"})
LENGTH_METHODS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "popitem", "setdefault", "update", "add", "discard", "appendleft", "popleft", "extendleft"}
)
ENUM_BASES = frozenset({"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "enum.Enum", "enum.IntEnum", "enum.StrEnum", "enum.Flag", "enum.IntFlag"})


@dataclass(frozen=True)
class Span:
    """A source range; columns are 1-based character offsets."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # positional, vararg, keyword, kwarg
    annotation: str = ""
    default: str = ""  # source text of the default, "" when none
    default_kind: str = ""


@dataclass(frozen=True)
class FunctionFacts:
    qualname: str  # within the module: ``Net.forward``, ``outer.inner``, ``<lambda:12:8>``
    name: str
    line: int  # the ``def`` (or ``lambda``) line
    column: int
    end_line: int
    first_line: int  # first decorator line, else the def line
    stmt_line: int  # first line of the enclosing top-level statement
    stmt_end_line: int
    class_name: str = ""  # qualname of the class for methods
    parent: str = ""  # qualname of the enclosing function for nested functions
    params: tuple[Param, ...] = ()
    decorators: tuple[str, ...] = ()  # resolved dotted names (``torch.compile``)
    is_lambda: bool = False
    local_names: frozenset[str] = frozenset()
    global_decls: frozenset[str] = frozenset()
    nonlocal_decls: frozenset[str] = frozenset()
    # The dotted texts of the callees of its calls (``self.f``, ``ops.scale``), each once, in
    # the order they first appear. Plain strings: a function has many, and an object each
    # would cost ten times as much to send from a parse worker or read from the cache.
    calls: tuple[str, ...] = ()
    # Local variable -> dotted text of the class it is built from (``teacher = Teacher(...)``).
    instances: tuple[tuple[str, str], ...] = ()
    identifiers: frozenset[str] = frozenset()  # every Name id and attribute name in the body
    # Dotted chains from an imported name that the body reads attributes of, as written
    # (``torch.fx._symbolic_trace`` in ``torch.fx._symbolic_trace.flag``): modules whose
    # values it may read though its module does not import them by that name.
    module_chains: frozenset[str] = frozenset()
    # Loop variable -> dotted text of what it iterates (``block`` -> ``model.blocks``).
    loop_sources: tuple[tuple[str, str], ...] = ()
    # Name of a parameter the function passes to torch.compile: the function is a wrapper.
    compiles_param: str = ""
    # (callee text, parameter, where) for each call that hands one of the function's own
    # parameters on as an argument: where is its position (``"0"``), ``"=name"`` for a keyword,
    # ``"*"`` for ``*param`` or a position after one (``_compile(module, **kw)``, ``run(*args)``):
    # the edges over which wrappers of wrappers are inferred without parsing again
    # (``analysis/wrappers.py``).
    passes: tuple[tuple[str, str, str], ...] = ()
    # Where the body binds names and attribute chains, for the value flow (``valueflow``):
    # (target, how, line, column, end_line, end_column) with the span of the value expression
    # (``ast`` positions: columns are UTF-8 byte offsets). See ``FLOW_HOWS``.
    flows: tuple[tuple[str, str, int, int, int, int], ...] = ()
    # Spans of the ``return`` expressions (a lambda: its body), as in ``flows``.
    returns: tuple[tuple[int, int, int, int], ...] = ()
    # Spans of the ``yield`` expressions' values (a pytest fixture's value is what it yields).
    yields: tuple[tuple[int, int, int, int], ...] = ()
    # Calls made inside loops of this function: (callee text, lines of the enclosing loops,
    # outermost first). A call and a write that share a loop run in turns.
    loop_calls: tuple[tuple[str, tuple[int, ...]], ...] = ()


@dataclass(frozen=True)
class AttrInit:
    kind: str
    line: int
    class_level: bool = False
    # Set from an ``__init__`` parameter (``self.layer_idx = layer_idx``): it can differ
    # between instances of the class.
    from_param: bool = False
    value: str = ""  # the source of a literal initial value (``0``, ``'train'``), else ""


@dataclass(frozen=True)
class ClassFacts:
    qualname: str
    name: str
    line: int
    bases: tuple[str, ...]  # resolved dotted names
    methods: tuple[tuple[str, str], ...]  # method name -> function qualname
    attrs: tuple[tuple[str, AttrInit], ...]  # self.x / class-level initialisers
    submodules: tuple[tuple[str, str], ...]  # self.x = Cls(...) -> dotted class text
    buffers: frozenset[str] = frozenset()
    is_enum: bool = False
    elements: tuple[tuple[str, str], ...] = ()  # container attr -> dotted class of its elements
    # Bindings of the class body (``_blocks = ["Block"]``, ``forward = _forward``), as
    # ``FunctionFacts.flows``.
    flows: tuple[tuple[str, str, int, int, int, int], ...] = ()
    decorators: tuple[str, ...] = ()  # resolved dotted names, as ``FunctionFacts.decorators``

    def element(self, name: str) -> str | None:
        for key, cls in self.elements:
            if key == name:
                return cls
        return None

    def attr(self, name: str) -> AttrInit | None:
        for key, init in self.attrs:
            if key == name:
                return init
        return None

    def method(self, name: str) -> str | None:
        for key, qual in self.methods:
            if key == name:
                return qual
        return None

    def submodule(self, name: str) -> str | None:
        for key, cls in self.submodules:
            if key == name:
                return cls
        return None


@dataclass(frozen=True)
class Binding:
    """A module-level name and the kind of value it is first bound to."""

    name: str
    kind: str  # int, float, bool, str, enum, tensor, dict, list, set, tuple, object, class, function, module, unknown
    line: int
    class_ref: str = ""  # for objects: dotted text of the class called
    items: tuple[tuple[str, str], ...] = ()  # dict literal key -> value kind; object kwargs
    value: str = ""  # the source of a literal initial value (``0``, ``'train'``), else ""

    def item_kind(self, key: str) -> str:
        for k, kind in self.items:
            if k == key:
                return kind
        return ""


@dataclass(frozen=True)
class Mutation:
    """A place that changes a value a region may have baked into a guard.

    ``kind``: ``global`` (rebinding ``module.name``), ``item`` (``name[key]``), ``attribute``
    (``name.key`` on a module-level object), ``instance-attribute`` (``<owner>.name``), ``length``
    (container size change), ``environ`` (``os.environ[key]``).
    """

    kind: str
    module: str
    name: str
    line: int
    column: int
    # For an item, its key; for an instance attribute written through ``self.<held>.name``,
    # ``of:<held>``; through ``setattr(obj, param, v)``, ``param:<param>``.
    key: str = ""
    owner: str = ""  # resolved dotted class for instance attributes ("" when unknown)
    value_kind: str = ""
    op: str = "assign"  # assign, augassign, delete, call, loop
    function: str = ""  # qualname of the function it happens in ("" at module level)
    path: str = ""
    # Lines of the loops around it in its function (or at module level), outermost first.
    loop_lines: tuple[int, ...] = ()
    # The source of the value written (short; "" when not a plain assignment): a literal, a
    # loop variable, an expression; for a length changed by a method call, the method.
    value: str = ""


@dataclass(frozen=True)
class CompileSite:
    """A place that compiles something: decorator, ``torch.compile(x)``, ``x.compile()``."""

    span: Span
    form: str  # decorator, call, method, optimize, wrapper
    target: str  # dotted text of the compiled thing, "" for decorators
    target_kind: str  # function, lambda, name, attribute, call, self-attribute
    function: str  # qualname of the enclosing function ("" at module level)
    decorated: str = ""  # qualname of the decorated function (form == decorator)
    lambda_qualname: str = ""
    class_ref: str = ""  # for torch.compile(Net(...)): dotted class text
    assigned_to: str = ""  # dotted text of the assignment target of the result
    options: tuple[tuple[str, str], ...] = ()  # keyword -> source text
    option_kinds: tuple[tuple[str, str], ...] = ()  # keyword -> lambda, name, call, str, ...
    loop_vars: tuple[str, ...] = ()  # variables of the loops around the site
    in_loop: bool = False

    def option(self, key: str) -> str | None:
        for k, v in self.options:
            if k == key:
                return v
        return None


@dataclass(frozen=True)
class MethodCall:
    """A call of a method whose receiver matters to a rule (``model.eval()``)."""

    receiver: str  # dotted text
    method: str
    span: Span
    function: str  # enclosing function qualname ("" at module level)
    args: tuple[str, ...] = ()  # source text of positional arguments
    loop_lines: tuple[int, ...] = ()  # lines of the loops around the call in its function


@dataclass(frozen=True)
class ConfigSetting:
    """An assignment to a torch compiler setting (``torch._dynamo.config.recompile_limit = 64``)."""

    key: str  # e.g. ``torch._dynamo.config.recompile_limit``
    value: str  # source text of the value
    span: Span
    function: str = ""


# How a flow's target is bound to the value at its span (``FunctionFacts.flows``):
#   "="         target = value (plain, annotated, walrus; a decorated ``def`` is not a flow)
#   "0", "1.2"  target = value[0], value[1][2] (tuple unpacking; "*" marks a starred target:
#               any element)
#   "iter"      target is an element of value (``for``, comprehensions); "iter.1": element[1]
#   "with"      target = value.__enter__()
#   "elem"      value is added to the container target (``append``, ``insert``, ``add``)
#   "elem:KEY"  value is stored in target under the literal KEY (``t["k"] = v``, ``add_module``)
#   "elem:"     value is stored under a key that is not a literal
#   "elems"     every element of value is added (``extend``, ``update``, ``+=`` a display)
#   "import:M"  target is what the function's own import binds it to (module or name M)
FLOW_HOWS = ("=", "iter", "with", "elem", "elems", "import")

CONFIG_PREFIXES = ("torch._dynamo.config.", "torch.compiler.config.", "torch._inductor.config.")

# Calls that put a value into their receiver (a container) or set an attribute: flows.
FLOW_METHODS = frozenset({"append", "add", "appendleft", "insert", "extend", "update", "add_module", "register_module", "__setitem__"})

# Method calls worth remembering by receiver.
# ``train``/``eval`` toggle ``training``; hooks registered on a module run inside its compiled
# call; ``apply(fn)`` calls ``fn`` on every submodule where it is called.
TRACKED_METHODS = frozenset(
    {"train", "eval", "apply", "register_forward_pre_hook", "register_forward_hook", "register_module_forward_pre_hook", "register_module_forward_hook"}
)


@dataclass(frozen=True)
class ModuleFacts:
    path: str
    module: str
    is_package: bool
    imports: tuple[tuple[str, str], ...]  # local name -> absolute dotted target
    bindings: tuple[Binding, ...]
    functions: tuple[FunctionFacts, ...]
    classes: tuple[ClassFacts, ...]
    mutations: tuple[Mutation, ...]
    compile_sites: tuple[CompileSite, ...]
    method_calls: tuple[MethodCall, ...] = ()
    config_settings: tuple[ConfigSetting, ...] = ()
    lines: int = 0
    # Calls inside loops of module-level code (``for ...: step(); model(x)`` in a script).
    toplevel_loop_calls: tuple[tuple[str, tuple[int, ...]], ...] = ()
    _lookup: dict = field(default_factory=dict, compare=False, repr=False)
    # Bindings of the module's top-level code (and of its ``if``/``try``/``with`` blocks), as
    # ``FunctionFacts.flows``.
    flows: tuple[tuple[str, str, int, int, int, int], ...] = ()
    # Module globals that may hold torch's compile (``jit_fuser = torch.compile``, at the top
    # level or in a function declaring it ``global``): another module importing one calls it
    # as it would torch's compile (``_exported_aliases``).
    compile_aliases: tuple[str, ...] = ()

    def _table(self, name: str) -> dict:
        table = self._lookup.get(name)
        if table is None:
            if name == "imports":
                table = dict(self.imports)
            elif name == "bindings":
                table = {}
                for b in self.bindings:
                    table.setdefault(b.name, b)
            elif name == "functions":
                table = {f.qualname: f for f in self.functions}
            elif name == "classes":
                table = {c.qualname: c for c in self.classes}
            self._lookup[name] = table
        return table

    def import_target(self, local: str) -> str | None:
        return self._table("imports").get(local)

    def binding(self, name: str) -> Binding | None:
        return self._table("bindings").get(name)

    def function(self, qualname: str) -> FunctionFacts | None:
        return self._table("functions").get(qualname)

    def cls(self, qualname: str) -> ClassFacts | None:
        return self._table("classes").get(qualname)

    def resolve(self, dotted: str) -> str:
        """Rewrite the first component of ``dotted`` through the import table."""
        head, _, rest = dotted.partition(".")
        target = self.import_target(head)
        if target is None:
            return dotted
        return f"{target}.{rest}" if rest else target


# --------------------------------------------------------------------------------------------


def dotted_name(node: ast.AST) -> str:
    """``a.b.c`` for Name/Attribute chains; ``""`` for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


# What a ``with`` block expecting an error calls: ``pytest.raises``, ``self.assertRaises``.
EXPECTED_ERRORS = frozenset({"raises", "assertRaises", "assertRaisesRegex"})


def expects_error(callee: str) -> bool:
    """Whether a ``with`` item calling ``callee`` (dotted) expects its block to raise."""
    return callee.rpartition(".")[2] in EXPECTED_ERRORS


# Calls that import the module their literal argument names and return it.
IMPORTING_CALLS = frozenset({"importlib.import_module", "pytest.importorskip"})


@lru_cache(maxsize=64)
def _wrapper_names(compile_functions: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str], tuple[str, ...], frozenset[str]]:
    """What ``_Collector.is_compile_callee`` tests a callee's names against, from the
    configured and inferred wrappers (once, not per call and wrapper): their dotted names,
    those without a dot, their suffixes (``.name``) and their last names."""
    return (
        frozenset(compile_functions),
        frozenset(w for w in compile_functions if "." not in w),
        tuple("." + w for w in compile_functions),
        frozenset(w.rsplit(".", 1)[-1] for w in compile_functions),
    )


def expression_text(node: ast.AST) -> str:
    """``ast.unparse(node)``, without building an unparser for the commonest cases (a name, a
    dotted name, ``None``/``True``/``False`` or an int): annotations and defaults are mostly
    those, and every parameter of every function has its text in the facts."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        dotted = dotted_name(node)
        if dotted:
            return dotted
    elif isinstance(node, ast.Constant) and (node.value is None or type(node.value) in (bool, int)):
        return repr(node.value)
    return ast.unparse(node)


def literal_text(node: ast.AST | None) -> str:
    """The source of a literal constant (``0``, ``-1``, ``'eval'``, ``None``), else ""."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = literal_text(node.operand)
        return f"-{inner}" if inner and isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool, type(None))):
        text = repr(node.value)
        return text if len(text) <= 80 else ""
    return ""


def initial_text(node: ast.AST | None, kind: str) -> str:
    """What a binding starts from, when it is one known value: a literal or an enum member."""
    text = literal_text(node)
    if not text and kind == "enum" and isinstance(node, ast.Attribute):
        return expression_text(node)
    return text


def value_text(node: ast.AST | None) -> str:
    """A short source text of an assigned value ("" when too long to be worth keeping)."""
    if node is None:
        return ""
    text = expression_text(node)
    return text if len(text) <= 80 else text[:77] + "..."


# Bytes of source on one line an assigned value is unparsed lazily within, and levels of
# nesting of a longer one (``_unparses_safely``).
_SAFE_UNPARSE_BYTES = 200
_SAFE_UNPARSE_DEPTH = 200
# Bits of an integer literal surely printed within Python's limit on digits (640 at least).
_SAFE_INT_BITS = 2_000


def _unparses_safely(node: ast.AST) -> bool:
    """Whether ``value_text(node)`` cannot raise, for the value of an assignment statement:
    nothing nests deeper than a few hundred levels (the unparser recurses a few frames a
    level, far within the recursion limit the facts set: statements nest at most 100 deep),
    and no integer literal has digits enough to exceed Python's limit on printing one. Its
    source on one line, at most ``_SAFE_UNPARSE_BYTES`` long, is enough (every level of
    nesting takes a character at least); a longer one is walked to tell. Others are unparsed
    where they are met, as any raise must be."""
    line = getattr(node, "lineno", None)
    end = getattr(node, "end_col_offset", None)
    if line is not None and end is not None and getattr(node, "end_lineno", None) == line and end - node.col_offset <= _SAFE_UNPARSE_BYTES:  # type: ignore[attr-defined]
        return True
    pending: list[tuple[ast.AST, int]] = [(node, 1)]
    while pending:
        current, depth = pending.pop()
        if type(current) is ast.Constant:
            value = current.value  # type: ignore[attr-defined]
            if isinstance(value, int) and value.bit_length() > _SAFE_INT_BITS:
                return False
            continue
        if depth > _SAFE_UNPARSE_DEPTH:
            return False
        depth += 1
        for field in current._fields:
            child = getattr(current, field, None)
            if isinstance(child, ast.AST):
                pending.append((child, depth))
            elif isinstance(child, list):
                pending.extend((item, depth) for item in child if isinstance(item, ast.AST))
    return True


def char_column(lines: list[str], line: int, byte_offset: int) -> int:
    """ast gives UTF-8 byte offsets; findings use 1-based character columns."""
    if 1 <= line <= len(lines):
        text = lines[line - 1]
        if text.isascii():
            return byte_offset + 1
        return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore")) + 1
    return byte_offset + 1


def _rooted_at_name(node: ast.expr) -> bool:
    """``a.b[0].c[k]``: a chain of attributes and subscripts that starts at a name."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return isinstance(node, ast.Name)


def span_of(node: ast.AST, lines: list[str]) -> Span:
    line = getattr(node, "lineno", 1)
    end_line = getattr(node, "end_lineno", None) or line
    return Span(
        line,
        char_column(lines, line, getattr(node, "col_offset", 0)),
        end_line,
        char_column(lines, end_line, getattr(node, "end_col_offset", None) or 0),
    )


def _environ_keys(call: ast.Call) -> list[str]:
    """The variables an ``os.environ`` method call changes: the constant keys it names
    (``pop("K")``, ``setdefault("K", v)``, ``update({"K": v})``, ``update(K=v)``), ``"*"``
    for ``clear()`` and ``popitem()`` (every one), ``""`` where a key is not known."""
    method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    if method in ("clear", "popitem"):
        return ["*"]
    keys: list[str] = []
    if method in ("pop", "setdefault"):
        first = call.args[0] if call.args else None
        return [first.value] if isinstance(first, ast.Constant) and isinstance(first.value, str) else [""]
    if method == "update":
        for arg in call.args:
            if isinstance(arg, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in arg.keys):
                keys.extend(k.value for k in arg.keys)  # type: ignore[union-attr]
            else:
                return [""]
        for keyword in call.keywords:
            if keyword.arg is None:
                return [""]
            keys.append(keyword.arg)
    return keys or [""]


def resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    """Absolute module for ``from .x import y`` inside ``module``."""
    if level == 0:
        return target or ""
    parts = module.split(".") if module else []
    base = parts if is_package else parts[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)] if len(base) >= level - 1 else []
    prefix = ".".join(base)
    if target:
        return f"{prefix}.{target}" if prefix else target
    return prefix


# Node classes with no children and no handler: context and operator markers.
_LEAF_NODES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


class _Collector(ast.NodeVisitor):
    """One walk over a module, tracking the scope stack."""

    def __init__(self, path: str, module: str, is_package: bool, lines: list[str], compile_functions: tuple[str, ...]):
        self.path = path
        self.module = module
        self.is_package = is_package
        self.lines = lines
        self.compile_functions = compile_functions
        self.imports: dict[str, str] = {}
        self.bindings: list[Binding] = []
        self.bound_once: dict[str, int] = {}
        self.functions: list[FunctionFacts] = []
        self.classes: list[ClassFacts] = []
        self.mutations: list[Mutation] = []
        self.compile_sites: list[CompileSite] = []
        self.method_calls: list[MethodCall] = []
        self.config_settings: list[ConfigSetting] = []
        # Scope stack entries: ("module"|"class"|"function", qualname, data dict)
        self.scopes: list[tuple[str, str, dict]] = [("module", "", {"flows": []})]
        self.function_scopes: list[tuple[str, str, dict]] = []
        self.loop_vars: list[list[str]] = [[]]  # per scope: loop targets around the current node
        self.loop_lines: list[list[int]] = [[]]  # per scope: lines of the loops around the current node
        self.toplevel_loop_calls: dict[tuple[str, tuple[int, ...]], None] = {}
        self.conditional_depth = 0  # module-level if/try nesting
        # The tests of the ``if`` statements whose body is being visited, with the function
        # scope each belongs to (``if key not in cache: cache[key] = ...``).
        self.if_tests: list[tuple[ast.expr, int]] = []
        self.top_stmt: ast.stmt | None = None
        self.class_names: set[str] = set()
        self.enum_classes: set[str] = set()
        self.has_declarations = True
        # Names (and ``self.x`` chains) assigned torch's compile itself, alone or as one
        # branch of a choice: ``compile = torch.compile if cfg.compile else (lambda m: m)``.
        # Names bound to ``torch.compile`` -> the keywords a ``functools.partial`` gave it.
        self.compile_aliases: dict[str, tuple[ast.keyword, ...]] = {}

    # ---- helpers -------------------------------------------------------------------------

    def qualify_class(self, dotted: str) -> str:
        """Absolute dotted name of a class named ``dotted`` here (imports or this module)."""
        if not dotted:
            return ""
        resolved = self.resolve(dotted)
        if resolved != dotted:
            return resolved
        if dotted.split(".")[0] in self.class_names and self.module:
            return f"{self.module}.{dotted}"
        return dotted

    def resolve(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        target = self.imports.get(head)
        if target is None:
            return dotted
        return f"{target}.{rest}" if rest else target

    def is_compile_callee(self, node: ast.AST) -> str:
        """``call``/``optimize``/``wrapper`` if calling ``node`` compiles its argument, else ""."""
        text = dotted_name(node)
        if not text:
            return ""
        full = self.resolve(text)
        if full in ("torch.compile", "torch.compiler.compile") or text in self.compile_aliases:
            return "call"
        if full in ("torch._dynamo.optimize", "torch._dynamo.eval_frame.optimize"):
            return "optimize"
        if not self.compile_functions:
            return ""
        local = f"{self.module}.{full}" if self.module and full == text else full
        last = full.rsplit(".", 1)[-1]
        # A call of a wrapper: its dotted name here or in this module, its bare name, a
        # dotted name that ends with it, or (imported through a re-export, ``from pkg.utils
        # import compile_regions``: the regions confirm by value which function a call of the
        # name runs) its last name.
        names, undotted, suffixes, lasts = _wrapper_names(self.compile_functions)
        if full in names or local in names or last in undotted or full.endswith(suffixes):
            return "wrapper"
        if last in lasts and last not in ("compile", "optimize"):
            return "wrapper"
        return ""

    def imported_by_call(self, value: ast.AST) -> str:
        """The module a call imports and returns (``importlib.import_module("x.y")``,
        ``pytest.importorskip("x.y")``, with the name a literal), else ""."""
        if not (isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Constant) and isinstance(value.args[0].value, str)):
            return ""
        if self.resolve(dotted_name(value.func)) not in IMPORTING_CALLS:
            return ""
        name = value.args[0].value
        return name if name and all(part.isidentifier() for part in name.split(".")) else ""

    def bound_to_a_value(self, name: str) -> bool:
        """Whether a bare ``name`` read here is, as Python scopes it, a parameter or an
        assigned local of the innermost function that binds it (bound so far), rather than a
        ``def`` of that name or a module-level or imported one."""
        for _, _, data in reversed(self.function_scopes):
            if name in data["param_names"]:
                return True
            if name in data["locals"]:
                return name not in data["defs"]
        return False

    def with_alias_options(self, callee: ast.AST, keywords: list[ast.keyword]) -> list[ast.keyword]:
        """``keywords`` of a compile call, then those of the ``functools.partial`` the callee
        names (``compiler = partial(torch.compile, dynamic=True)``) that the call does not
        give itself: the options the compiled object really has."""
        bound = self.compile_aliases.get(dotted_name(callee) or "", ())
        given = {kw.arg for kw in keywords}
        return list(keywords) + [kw for kw in bound if kw.arg not in given]

    @property
    def scope(self) -> tuple[str, str, dict]:
        return self.scopes[-1]

    def function_scope(self) -> tuple[str, str, dict] | None:
        """The innermost function scope (kept on its own stack: this is asked per name)."""
        return self.function_scopes[-1] if self.function_scopes else None

    def _nested_binds(self, since: int, outer: str, inner: str, name: str) -> bool:
        """Whether a function nested in ``outer`` down to ``inner`` (qualnames) binds ``name``
        itself (a parameter or a local of its own), so that ``inner`` does not read ``outer``'s;
        the nested functions are those added to ``functions`` since ``since``."""
        by_name = {fn.qualname: fn for fn in self.functions[since:]}
        current = inner
        while current and current != outer:
            fn = by_name.get(current)
            if fn is None:
                return True  # not found: not known to be the closure's
            if name not in fn.nonlocal_decls and (name in fn.local_names or any(p.name == name for p in fn.params)):
                return True
            current = fn.parent
        return False

    def enclosing_function_name(self) -> str:
        scope = self.function_scope()
        return scope[1] if scope else ""

    def class_scope(self) -> tuple[str, str, dict] | None:
        """The class whose method we are directly in (for ``self``)."""
        if len(self.scopes) >= 2 and self.scopes[-1][0] == "function" and self.scopes[-2][0] == "class":
            return self.scopes[-2]
        # Nested functions inside a method still see ``self`` through the closure.
        for i in range(len(self.scopes) - 1, 0, -1):
            if self.scopes[i][0] == "function" and self.scopes[i - 1][0] == "class":
                return self.scopes[i - 1]
        return None

    def qual(self, name: str) -> str:
        parent = self.scope[1]
        return f"{parent}.{name}" if parent else name

    def kind_of(self, node: ast.AST | None) -> tuple[str, str]:
        """(kind, class_ref) of the value an expression builds."""
        if node is None:
            return "unknown", ""
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool):
                return "bool", ""
            if isinstance(value, int):
                return "int", ""
            if isinstance(value, float):
                return "float", ""
            if isinstance(value, (str, bytes)):
                return "str", ""
            if value is None:
                return "none", ""
            return "unknown", ""
        if isinstance(node, ast.JoinedStr):
            return "str", ""
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return "bool", ""
            return self.kind_of(node.operand)
        if isinstance(node, ast.BinOp):
            left, _ = self.kind_of(node.left)
            right, _ = self.kind_of(node.right)
            if "tensor" in (left, right):
                return "tensor", ""
            if left == right and left in ("int", "float", "str"):
                return (left if not isinstance(node.op, ast.Div) else "float"), ""
            if {left, right} == {"int", "float"}:
                return "float", ""
            return "unknown", ""
        if isinstance(node, (ast.Compare, ast.BoolOp)):
            return "bool", ""
        if isinstance(node, (ast.Dict, ast.DictComp)):
            return "dict", ""
        if isinstance(node, (ast.List, ast.ListComp)):
            return "list", ""
        if isinstance(node, (ast.Set, ast.SetComp)):
            return "set", ""
        if isinstance(node, ast.Tuple):
            return "tuple", ""
        if isinstance(node, ast.Lambda):
            return "function", ""
        if isinstance(node, ast.Name):
            scope = self.function_scope()
            if scope is not None:
                for param in scope[2]["params"]:
                    if param.name == node.id:
                        kind = {"int": "int", "float": "float", "bool": "bool", "str": "str"}.get(param.annotation, "")
                        return (kind or param.default_kind or "unknown"), ""
                if node.id in scope[2]["locals"]:
                    return "unknown", ""
            for b in reversed(self.bindings):
                if b.name == node.id:
                    return b.kind, b.class_ref
            if node.id in self.class_names:
                return "class", node.id
            return "unknown", ""
        if isinstance(node, ast.Attribute):
            base = dotted_name(node.value)
            if base and base in self.enum_classes:
                return "enum", base
            return "unknown", ""
        if isinstance(node, ast.Call):
            func = dotted_name(node.func)
            full = self.resolve(func) if func else ""
            last = full.rsplit(".", 1)[-1] if full else ""
            if full.startswith("torch.") and last in TENSOR_FACTORIES:
                return "tensor", ""
            if full in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer"):
                return "tensor", ""
            if isinstance(node.func, ast.Attribute) and node.func.attr in TENSOR_METHODS:
                inner, inner_ref = self.kind_of(node.func.value)
                if inner == "tensor":
                    return "tensor", ""
                if inner == "object" and node.func.attr in SELF_RETURNING_METHODS:
                    return inner, inner_ref  # ``Net().to(device)``: the module itself
            if isinstance(node.func, ast.Attribute) and node.func.attr in SELF_RETURNING_METHODS and isinstance(node.func.value, ast.Call):
                inner, inner_ref = self.kind_of(node.func.value)
                if inner == "object":
                    return inner, inner_ref  # ``Net().eval()``, ``Net().requires_grad_(False)``
            if full in ("int", "len", "round", "abs") or full == "math.floor" or full == "math.ceil":
                return ("int" if full != "abs" else self.kind_of(node.args[0])[0] if node.args else "int"), ""
            if full in ("float", "math.sqrt", "math.exp", "math.log"):
                return "float", ""
            if full in ("str", "repr", "format"):
                return "str", ""
            if full == "bool":
                return "bool", ""
            if full in ("dict", "collections.OrderedDict", "collections.defaultdict", "OrderedDict", "defaultdict"):
                return "dict", ""
            if full in ("list", "collections.deque", "deque"):
                return "list", ""
            if full == "set":
                return "set", ""
            if full == "tuple":
                return "tuple", ""
            if full in ("os.environ.get", "os.getenv"):
                return "str", ""
            if full in ("types.SimpleNamespace", "argparse.Namespace"):
                return "object", full
            if last[:1].isupper():
                return "object", self.qualify_class(func)
            return "unknown", ""
        if isinstance(node, ast.Subscript):
            base = dotted_name(node.value)
            if self.resolve(base) == "os.environ":
                return "str", ""
            return "unknown", ""
        return "unknown", ""

    # The value of the assignment being recorded (``Mutation.value``): its text, or the node
    # whose text it is, made only when a mutation is recorded (``handle_target``).
    written: "str | ast.AST" = ""

    def add_mutation(self, **kwargs) -> None:
        if "value" not in kwargs:
            written = self.written
            if not isinstance(written, str):
                written = self.written = value_text(written)
            kwargs["value"] = written
        kwargs.setdefault("function", self.enclosing_function_name())
        kwargs.setdefault("path", self.path)
        kwargs.setdefault("loop_lines", tuple(self.loop_lines[-1]))
        self.mutations.append(Mutation(**kwargs))

    # ---- imports -------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.imports[alias.asname] = alias.name
            else:
                head = alias.name.split(".")[0]
                self.imports.setdefault(head, head)
        if self.scope[0] == "module":
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                self.record_binding(name, "module", node)
        elif self.scope[0] == "function":
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                self.add_import_flow(name, alias.name if alias.asname else name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = resolve_relative(relative_base_for(self.path, self.module) if node.level else self.module, self.is_package, node.level or 0, node.module)
        for alias in node.names:
            if alias.name == "*":
                continue
            local = alias.asname or alias.name
            self.imports[local] = f"{base}.{alias.name}" if base else alias.name
            if self.scope[0] == "module":
                self.record_binding(local, "imported", node)
            elif self.scope[0] == "function":
                self.add_import_flow(local, self.imports[local], node)

    def add_import_flow(self, local: str, target: str, node: ast.stmt) -> None:
        """A function's own import binds a local name (``how`` is ``import:<module.name>``): the
        value flow reads it like an assignment, where the module's import table would give the
        module-level binding of the same name (``def pkg(): import pkg; return pkg``)."""
        self.scope[2]["flows"].append((local, f"import:{target}", *_position(node)))

    # ---- bindings and mutations ------------------------------------------------------------

    def record_binding(self, name: str, kind: str, node: ast.AST, class_ref: str = "", items: tuple = (), value: str = "") -> None:
        if name in self.bound_once:
            return
        self.bound_once[name] = getattr(node, "lineno", 0)
        self.bindings.append(Binding(name=name, kind=kind, line=getattr(node, "lineno", 0), class_ref=class_ref, items=items, value=value))

    def module_level_loop(self) -> bool:
        return self.scope[0] == "module" and bool(self.loop_vars[-1])

    def handle_target(self, target: ast.AST, value: ast.AST | None, op: str, stmt: ast.AST) -> None:
        """Record what an assignment target binds or mutates."""
        previous = self.written
        if op not in ("assign", "augassign"):
            self.written = ""
        elif value is not None and isinstance(stmt, ast.stmt) and _unparses_safely(value):
            self.written = value  # most assignments record no mutation: their text is not needed
        else:
            self.written = value_text(value)
        try:
            self._handle_target(target, value, op, stmt)
        finally:
            self.written = previous

    def _handle_target(self, target: ast.AST, value: ast.AST | None, op: str, stmt: ast.AST) -> None:
        scope_kind, _, data = self.scope
        value_kind, class_ref = self.kind_of(value) if value is not None else ("unknown", "")
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self.handle_target(elt.value if isinstance(elt, ast.Starred) else elt, None, op, stmt)
            return
        if isinstance(target, ast.Name):
            name = target.id
            if scope_kind == "module":
                items: tuple = ()
                if isinstance(value, ast.Dict):
                    items = tuple(
                        (k.value, self.kind_of(v)[0])
                        for k, v in zip(value.keys, value.values)
                        if isinstance(k, ast.Constant) and isinstance(k.value, str)
                    )
                elif isinstance(value, ast.Call) and value_kind == "object":
                    items = tuple((kw.arg, self.kind_of(kw.value)[0]) for kw in value.keywords if kw.arg)
                mutated = (
                    op in ("augassign", "loop", "delete")
                    or self.module_level_loop()
                    or (name in self.bound_once and self.conditional_depth == 0 and op == "assign")
                )
                if mutated and name in self.bound_once:
                    op = self.rebinding_op(name, value, op, target)
                    self.add_mutation(kind="global", module=self.module, name=name, line=target.lineno, column=target.col_offset + 1, value_kind=value_kind, op=op)
                    if op == "augassign" and isinstance(value, (ast.List, ast.Tuple)):
                        self.add_mutation(kind="length", module=self.module, name=name, line=target.lineno, column=target.col_offset + 1, op=op)
                elif mutated and op == "loop":
                    self.record_binding(name, value_kind if value_kind != "unknown" else "int", stmt, class_ref, items, initial_text(value, value_kind))
                    self.add_mutation(kind="global", module=self.module, name=name, line=target.lineno, column=target.col_offset + 1, value_kind=value_kind, op=op)
                else:
                    self.record_binding(name, value_kind, stmt, class_ref, items, initial_text(value, value_kind))
            elif scope_kind == "function":
                if name in data["global_decls"]:
                    op = self.rebinding_op(name, value, op, target)
                    self.add_mutation(kind="global", module=self.module, name=name, line=target.lineno, column=target.col_offset + 1, value_kind=value_kind, op=op)
                    if op == "augassign" and isinstance(value, (ast.List, ast.Tuple)):
                        self.add_mutation(kind="length", module=self.module, name=name, line=target.lineno, column=target.col_offset + 1, op=op)
                elif name not in data["nonlocal_decls"]:
                    data["locals"].add(name)
                    if value_kind == "object" and class_ref:
                        data["instances"][name] = class_ref
            elif scope_kind == "class":
                data["attrs"].setdefault(name, AttrInit(value_kind, target.lineno, class_level=True, value=initial_text(value, value_kind)))
                if value_kind == "object" and class_ref:
                    data["submodules"].setdefault(name, class_ref)
            return
        if isinstance(target, ast.Attribute):
            self.handle_attribute_target(target, value, value_kind, class_ref, op)
            return
        if isinstance(target, ast.Subscript):
            self.handle_subscript_target(target, value_kind, op)
            return
        if isinstance(target, ast.Starred):
            self.handle_target(target.value, None, op, stmt)

    def rebinding_op(self, name: str, value: ast.AST | None, op: str, target: ast.Name) -> str:
        """``replace`` for ``cfg = dataclasses.replace(cfg, k=v)`` (only ``k`` changes: recorded
        as attribute mutations), else ``op`` unchanged."""
        if not isinstance(value, ast.Call) or op != "assign":
            return op
        callee = dotted_name(value.func)
        full = self.resolve(callee) if callee else ""
        if full not in ("dataclasses.replace", "copy.replace") and not callee.endswith("._replace"):
            return op
        for kw in value.keywords:
            if kw.arg:
                self.add_mutation(
                    kind="attribute", module=self.module, name=name, key=kw.arg, line=target.lineno,
                    column=target.col_offset + 1, value_kind=self.kind_of(kw.value)[0], op="replace",
                )
        return "replace"

    def element_class(self, value: ast.AST | None) -> str:
        """The class of the elements of ``nn.ModuleList(Block(...) for ...)``,
        ``[Block(...) for ...]`` or ``nn.Sequential(*[Block() ...])``, else ""."""
        if isinstance(value, ast.Call) and value.args:
            inner = value.args[0]
            if isinstance(inner, ast.Starred):
                inner = inner.value
            if dotted_name(value.func).rsplit(".", 1)[-1] in ("ModuleList", "Sequential", "list", "tuple"):
                value = inner
        if isinstance(value, (ast.ListComp, ast.GeneratorExp)):
            value = value.elt
        elif isinstance(value, (ast.List, ast.Tuple)) and value.elts:
            value = value.elts[0]
        else:
            return ""
        if isinstance(value, ast.Call):
            kind, class_ref = self.kind_of(value)
            return class_ref if kind == "object" else ""
        return ""

    def receiver_owner(self, name: str) -> str:
        """The dotted class of a local receiver, if this or an enclosing function built it."""
        for scope_kind, _, data in reversed(self.scopes):
            if scope_kind == "function":
                if name in data["instances"]:
                    return data["instances"][name]
                for param in data["params"]:
                    if param.name == name and param.annotation:
                        return self.qualify_class(param.annotation)
            elif scope_kind == "module":
                for b in reversed(self.bindings):
                    if b.name == name and b.kind == "object":
                        return b.class_ref
        return ""

    def is_local(self, name: str) -> bool:
        scope_kind, _, data = self.scope
        if scope_kind != "function":
            return False
        return name in data["locals"] or any(p.name == name for p in data["params"])

    def global_ref(self, name: str) -> tuple[str, str] | None:
        """(module, name) if ``name`` here denotes a module-level value of some module."""
        if self.scope[0] == "function":
            if self.is_local(name) and name not in self.scope[2]["global_decls"]:
                return None
            # A name local to an enclosing function is a closure cell, not a global.
            for scope_kind, _, data in self.scopes[1:-1]:
                if scope_kind == "function" and (name in data["locals"] or any(p.name == name for p in data["params"])):
                    return None
        target = self.imports.get(name)
        if target is not None:
            module, _, attr = target.rpartition(".")
            return (module, attr) if module else None
        return (self.module, name)

    def handle_attribute_target(self, target: ast.Attribute, value: ast.AST | None, value_kind: str, class_ref: str, op: str) -> None:
        full = self.resolve(dotted_name(target)) if dotted_name(target) else ""
        if full.startswith(CONFIG_PREFIXES):
            self.config_settings.append(
                ConfigSetting(full, ast.unparse(value) if value is not None else "", span_of(target, self.lines), self.enclosing_function_name())
            )
            return
        attr = target.attr
        base = target.value
        line, col = target.lineno, target.col_offset + 1
        if isinstance(base, ast.Name):
            name = base.id
            cls = self.class_scope()
            if name == "self" and cls is not None and self.function_scope() is not None:
                owner = f"{self.module}.{cls[1]}" if self.module else cls[1]
                if self.enclosing_function_name().endswith(".__init__") and op == "assign" and self.scopes[-1][0] == "function" and self.scopes[-2][0] == "class":
                    from_param = isinstance(value, ast.Name) and any(p.name == value.id for p in self.scopes[-1][2]["params"])
                    cls[2]["attrs"].setdefault(attr, AttrInit(value_kind, line, from_param=from_param, value=initial_text(value, value_kind)))
                    if value_kind == "object" and class_ref:
                        cls[2]["submodules"].setdefault(attr, class_ref)
                    element = self.element_class(value)
                    if element:
                        cls[2]["elements"].setdefault(attr, element)
                    return
                cls[2]["attrs"].setdefault(attr, AttrInit(value_kind, line, value=initial_text(value, value_kind) if op == "assign" else ""))
                self.add_mutation(kind="instance-attribute", module=self.module, name=attr, owner=owner, line=line, column=col, value_kind=value_kind, op=op)
                return
            imported = self.imports.get(name)
            if imported is not None and not self.is_local(name):
                # ``mod.X = v`` rebinds a global of another module; ``obj.x = v`` on an imported
                # object mutates that module's object. The index tells the two apart.
                self.add_mutation(kind="global", module=imported, name=attr, line=line, column=col, value_kind=value_kind, op=op)
                module, _, obj = imported.rpartition(".")
                if module:
                    self.add_mutation(kind="attribute", module=module, name=obj, key=attr, line=line, column=col, value_kind=value_kind, op=op)
                return
            owner = self.receiver_owner(name)
            ref = self.global_ref(name)
            if ref is not None and not self.is_local(name) and (name in self.bound_once or name in self.class_names):
                self.add_mutation(kind="attribute", module=ref[0], name=ref[1], key=attr, owner=owner, line=line, column=col, value_kind=value_kind, op=op)
            self.add_mutation(kind="instance-attribute", module=self.module, name=attr, owner=owner, line=line, column=col, value_kind=value_kind, op=op)
            return
        base_text = dotted_name(base)
        if base_text:
            resolved = self.resolve(base_text)
            if resolved != base_text or base_text.split(".")[0] in self.imports:
                # ``pkg.ops.STEP = v`` through ``import pkg.ops``: the index keeps it only when
                # ``pkg.ops`` names a project module.
                self.add_mutation(kind="global", module=resolved, name=attr, line=line, column=col, value_kind=value_kind, op=op)
        # Deeper receivers (``self.teacher.updates += 1``): matched by attribute name, or, for
        # ``self.<held>.attr`` in a method, by the class of what the instance holds there
        # (``key`` names it: ``of:teacher``), where the index knows it.
        held = f"of:{base.attr}" if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.value.id == "self" and self.class_scope() is not None else ""
        self.add_mutation(kind="instance-attribute", module=self.module, name=attr, owner="", key=held, line=line, column=col, value_kind=value_kind, op=op)

    def handle_subscript_target(self, target: ast.Subscript, value_kind: str, op: str) -> None:
        base = dotted_name(target.value)
        if not base:
            return
        key_node = target.slice
        key = key_node.value if isinstance(key_node, ast.Constant) and isinstance(key_node.value, (str, int)) else None
        line, col = target.lineno, target.col_offset + 1
        if self.resolve(base) == "os.environ":
            self.add_mutation(kind="environ", module="os", name="environ", key=str(key) if key is not None else "", line=line, column=col, op=op)
            return
        head, _, rest = base.partition(".")
        if rest:
            # ``cfg.table['k'] = v``: the object attribute's content changes.
            ref = self.global_ref(head)
            if ref is not None:
                self.add_mutation(kind="item", module=ref[0], name=f"{ref[1]}.{rest}", key=str(key) if key is not None else "", line=line, column=col, value_kind=value_kind, op=op)
            return
        ref = self.global_ref(head)
        if ref is None:
            return
        self.add_mutation(kind="item", module=ref[0], name=ref[1], key=str(key) if key is not None else "", line=line, column=col, value_kind=value_kind, op=op)
        binding = None
        for b in self.bindings:
            if b.name == ref[1]:
                binding = b
        known_key = binding is not None and key is not None and binding.item_kind(str(key)) != ""
        if op == "assign" and self.inserts_missing_key(target.value, key_node):
            return
        if op == "delete" or (op == "assign" and not known_key and (binding is None or binding.kind != "list")):
            self.add_mutation(kind="length", module=ref[0], name=ref[1], key=str(key) if key is not None else "", line=line, column=col, op=op)

    # ---- statements ----------------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        imported = self.imported_by_call(node.value)
        if imported and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            # ``mx = pytest.importorskip("mlx.core")``: an ``import mlx.core as mx``.
            self.imports[node.targets[0].id] = imported
            if self.scope[0] == "module":
                self.record_binding(node.targets[0].id, "module", node)
        for target in node.targets:
            self.add_flows(target, node.value, "=")
            self.handle_target(target, node.value, "assign", node)
            self.visit_target_expressions(target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self.add_flows(node.target, node.value, "=")
        if self.scope[0] == "class" and isinstance(node.target, ast.Name) and node.value is None:
            kind = {"int": "int", "float": "float", "bool": "bool", "str": "str"}.get(dotted_name(node.annotation), "unknown")
            self.scope[2]["attrs"].setdefault(node.target.id, AttrInit(kind, node.lineno, class_level=True))
            return
        if node.value is not None or self.scope[0] != "module":
            self.handle_target(node.target, node.value, "assign", node)
        self.visit_target_expressions(node.target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        if isinstance(node.op, ast.Add) and isinstance(node.value, (ast.List, ast.Tuple, ast.ListComp, ast.Name, ast.Attribute)):
            # ``layers += [Block()]``: the container gains the value's elements.
            self.add_flows(node.target, node.value, "elems")
        self.handle_target(node.target, node.value, "augassign", node)
        self.visit_target_expressions(node.target)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self.handle_target(target, None, "delete", node)
            self.visit_target_expressions(target)

    def visit_target_expressions(self, target: ast.AST) -> None:
        """Visit the loads inside a target (``a[f(x)] = ...``) without re-binding."""
        if isinstance(target, ast.Subscript):
            self.visit(target.value)
            self.visit(target.slice)
        elif isinstance(target, ast.Attribute):
            self.visit(target.value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self.visit_target_expressions(elt)

    def loop(self, node: ast.For | ast.AsyncFor | ast.While) -> None:
        names: list[str] = []
        if isinstance(node, (ast.For, ast.AsyncFor)):
            self.visit(node.iter)
            self.add_flows(node.target, node.iter, "iter")
            # The target is rebound on every iteration: its writes are inside the loop.
            self.loop_lines[-1].append(node.lineno)
            self.handle_target(node.target, None, "loop", node)
            self.loop_lines[-1].pop()
            names = [n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)]
            scope = self.function_scope()
            if scope is not None and isinstance(node.target, ast.Name) and dotted_name(node.iter):
                # ``for block in model.blocks``: the element type of a module container.
                scope[2]["loop_sources"][node.target.id] = dotted_name(node.iter)
        else:
            self.visit(node.test)
            names = ["<while>"]
        self.loop_vars[-1].extend(names)
        self.loop_lines[-1].append(node.lineno)
        for stmt in node.body:
            self.visit(stmt)
        self.loop_lines[-1].pop()
        del self.loop_vars[-1][len(self.loop_vars[-1]) - len(names):]
        for stmt in node.orelse:
            self.visit(stmt)

    visit_For = loop
    visit_AsyncFor = loop
    visit_While = loop

    def comprehension(self, node: ast.AST) -> None:
        """A comprehension runs its element once per item: calls in it are calls in a loop."""
        self.loop_lines[-1].append(node.lineno)
        self.generic_visit(node)
        self.loop_lines[-1].pop()

    visit_ListComp = comprehension
    visit_SetComp = comprehension
    visit_DictComp = comprehension
    visit_GeneratorExp = comprehension

    def conditional(self, node: ast.AST) -> None:
        module_level = self.scope[0] == "module"
        is_main = isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) if module_level else False
        if module_level and not is_main:
            self.conditional_depth += 1
        if isinstance(node, ast.If):
            self.visit(node.test)
            self.if_tests.append((node.test, len(self.function_scopes)))
            for stmt in node.body:
                self.visit(stmt)
            self.if_tests.pop()
            for stmt in node.orelse:
                self.visit(stmt)
        else:
            self.generic_visit(node)
        if module_level and not is_main:
            self.conditional_depth -= 1

    def inserts_missing_key(self, container: ast.expr, key: ast.expr) -> bool:
        """Whether a store ``container[key] = ...`` runs only when the key is missing (``if
        key not in container:``, in this function): a memo that gains each key once, its
        length changed by a new key, never by the same one again."""
        wanted, depth = ast.dump(key), len(self.function_scopes)
        for test, at in reversed(self.if_tests):
            if at != depth:
                break
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Compare) and [type(o) for o in test.operand.ops] == [ast.In]:
                left, right = test.operand.left, test.operand.comparators[0]
            elif isinstance(test, ast.Compare) and [type(o) for o in test.ops] == [ast.NotIn]:
                left, right = test.left, test.comparators[0]
            else:
                continue
            if ast.dump(left) == wanted and dotted_name(right) == dotted_name(container) != "":
                return True
        return False

    visit_If = conditional
    visit_Try = conditional
    if hasattr(ast, "TryStar"):
        visit_TryStar = conditional

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self.add_flows(item.optional_vars, item.context_expr, "with")
                self.handle_target(item.optional_vars, None, "assign", node)
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncWith = visit_With

    def visit_Global(self, node: ast.Global) -> None:
        scope = self.function_scope()
        if scope is not None and scope is self.scope:
            scope[2]["global_decls"].update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        scope = self.function_scope()
        if scope is not None and scope is self.scope:
            scope[2]["nonlocal_decls"].update(node.names)

    # ---- expressions ---------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> None:
        scope = self.function_scope()
        if scope is not None:
            scope[2]["identifiers"].add(node.id)
            if isinstance(node.ctx, ast.Store) and scope is self.scope and node.id not in scope[2]["global_decls"] and node.id not in scope[2]["nonlocal_decls"]:
                scope[2]["locals"].add(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        scope = self.function_scope()
        if scope is not None:
            scope[2]["identifiers"].add(node.attr)
            base = node.value
            if isinstance(base, ast.Attribute):
                parts = []
                while isinstance(base, ast.Attribute):
                    parts.append(base.attr)
                    base = base.value
                if isinstance(base, ast.Name) and base.id in self.imports:
                    parts.append(base.id)
                    scope[2]["module_chains"].add(".".join(reversed(parts)))
        self.visit(node.value)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self.add_flows(node.target, node.value, "=")
        self.handle_target(node.target, node.value, "assign", node)

    def visit_Call(self, node: ast.Call) -> None:
        func_text = dotted_name(node.func)
        scope = self.function_scope()
        if func_text and scope is not None:
            scope[2]["calls"][func_text] = None
            names = scope[2]["param_names"]
            if names:
                starred = False
                for position, arg in enumerate(node.args):
                    if isinstance(arg, ast.Starred):
                        starred = True
                        if isinstance(arg.value, ast.Name) and arg.value.id in names:
                            scope[2]["passes"][(func_text, arg.value.id, "*")] = None
                    elif isinstance(arg, ast.Name) and arg.id in names:
                        # After a ``*x`` the position is not known: ``*`` too.
                        scope[2]["passes"][(func_text, arg.id, "*" if starred else str(position))] = None
                for kw in node.keywords:
                    if kw.arg and isinstance(kw.value, ast.Name) and kw.value.id in names:
                        scope[2]["passes"][(func_text, kw.value.id, "=" + kw.arg)] = None
        if func_text and self.loop_lines[-1]:
            key = (func_text, tuple(self.loop_lines[-1]))
            if scope is not None and scope is self.scope:
                scope[2]["loop_calls"][key] = None
            elif self.scope[0] == "module":
                self.toplevel_loop_calls[key] = None
        if isinstance(node.func, ast.Attribute) and (node.func.attr in TRACKED_METHODS or (node.func.attr.startswith("register_") and "hook" in node.func.attr)):
            receiver = dotted_name(node.func.value)
            if receiver:
                self.method_calls.append(
                    MethodCall(
                        receiver, node.func.attr, span_of(node, self.lines), self.enclosing_function_name(),
                        tuple(ast.unparse(a) for a in node.args), tuple(self.loop_lines[-1]),
                    )
                )
        form = self.is_compile_callee(node.func)
        if form == "wrapper" and isinstance(node.func, ast.Name) and self.bound_to_a_value(node.func.id):
            # ``fn(*args, **kwargs)`` with ``fn`` a parameter or an assigned local of this
            # function or an enclosing one (``fn = getattr(module, name)``): a call of whatever
            # it holds, not of a wrapper that shares its name.
            form = ""
        if form == "wrapper" and scope is not None:
            # Every name a wrapper call passes: which of them the wrapper compiles, the
            # regions decide by value (``run(cfg, model)`` compiles its second argument).
            scope[2].setdefault("wrapper_args", []).extend(
                a.id for a in list(node.args) + [kw.value for kw in node.keywords] if isinstance(a, ast.Name)
            )
        if form == "call" or form == "wrapper":
            target = node.args[0] if node.args else self.keyword(node, "model")
            if target is None and form == "wrapper":
                # ``wrapper(module=m)``: which keyword the wrapper compiles, the regions decide.
                target = next((kw.value for kw in node.keywords if kw.arg), None)
            self.record_compile_call(node, form, target, self.with_alias_options(node.func, node.keywords))
        elif isinstance(node.func, ast.Call) and self.is_compile_callee(node.func.func) in ("call", "wrapper") and not node.func.args:
            # torch.compile(backend="eager")(fn): the configured decorator applied by hand.
            self.record_compile_call(node, "call", node.args[0] if node.args else None, self.with_alias_options(node.func.func, node.func.keywords))
        elif isinstance(node.func, ast.Call) and self.is_compile_callee(node.func.func) == "optimize":
            # torch._dynamo.optimize(backend)(fn)
            self.record_compile_call(node, "optimize", node.args[0] if node.args else None, node.func.keywords + [ast.keyword(arg="backend", value=node.func.args[0])] if node.func.args else node.func.keywords)
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "compile" and not form:
            receiver = dotted_name(node.func.value)
            if receiver and self.resolve(receiver) not in ("re", "torch", "regex") and not self.resolve(receiver).startswith("torch."):
                self.record_compile_site(node, "method", receiver, "name" if "." not in receiver else "attribute", node.keywords)
            elif not receiver and isinstance(node.func.value, ast.Subscript) and _rooted_at_name(node.func.value):
                # ``net.blocks[0].compile()``, ``self.layers[name].compile()``: still a site;
                # the value flow says what the item holds, or why not.
                self.record_compile_site(node, "method", ast.unparse(node.func.value)[:200], "subscript", node.keywords)
        # Length changes through methods: ``history.append(x)``, ``os.environ.update(...)``.
        if isinstance(node.func, ast.Attribute) and node.func.attr in FLOW_METHODS or func_text == "setattr":
            self.add_call_flows(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr in LENGTH_METHODS:
            base = dotted_name(node.func.value)
            if base and "." not in base:
                ref = self.global_ref(base)
                if ref is not None and (base in self.bound_once or base in self.imports):
                    self.add_mutation(kind="length", module=ref[0], name=ref[1], line=node.lineno, column=node.col_offset + 1, op="call", value=node.func.attr)
                    if node.func.attr in ("update", "setdefault", "pop", "popitem", "clear"):
                        self.add_mutation(kind="item", module=ref[0], name=ref[1], key="", line=node.lineno, column=node.col_offset + 1, op="call")
            elif base and self.resolve(base) == "os.environ":
                for key in _environ_keys(node):
                    self.add_mutation(kind="environ", module="os", name="environ", key=key, line=node.lineno, column=node.col_offset + 1, op="call")
            elif base and base.count(".") == 1:
                # ``self.items.append(x)``: an instance attribute's container grows.
                head, attr = base.split(".")
                cls = self.class_scope()
                owner = (f"{self.module}.{cls[1]}" if self.module else cls[1]) if head == "self" and cls is not None else self.receiver_owner(head)
                self.add_mutation(kind="length", module=self.module, name=attr, owner=owner, key="instance", line=node.lineno, column=node.col_offset + 1, op="call", value=node.func.attr)
        if func_text and self.resolve(func_text) in ("os.putenv", "os.unsetenv"):
            key = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else ""
            self.add_mutation(kind="environ", module="os", name="environ", key=str(key), line=node.lineno, column=node.col_offset + 1, op="call")
        if func_text == "setattr" and len(node.args) >= 3 and isinstance(node.args[1], ast.Name):
            # ``setattr(module, name, value)`` with ``name`` a parameter: which attribute it sets
            # is decided by the callers (``apply(partial(_set, "dilation", d))``).
            scope = self.function_scope()
            if scope is not None and any(p.name == node.args[1].id for p in scope[2]["params"]):
                previous, self.written = self.written, value_text(node.args[2])
                owner = self.receiver_owner(dotted_name(node.args[0])) if dotted_name(node.args[0]) else ""
                self.add_mutation(kind="instance-attribute", module=self.module, name="", key=f"param:{node.args[1].id}", owner=owner, line=node.lineno, column=node.col_offset + 1, value_kind="unknown", op="assign")
                self.written = previous
        if func_text == "setattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            fake = ast.Attribute(value=node.args[0], attr=node.args[1].value, ctx=ast.Store(), lineno=node.lineno, col_offset=node.col_offset)
            previous, self.written = self.written, value_text(node.args[2]) if len(node.args) > 2 else ""
            self.handle_attribute_target(fake, node.args[2] if len(node.args) > 2 else None, self.kind_of(node.args[2])[0] if len(node.args) > 2 else "unknown", "", "assign")
            self.written = previous
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("register_buffer", "register_parameter"):
            cls = self.class_scope()
            if cls is not None and dotted_name(node.func.value) == "self" and node.args and isinstance(node.args[0], ast.Constant):
                cls[2]["buffers"].add(str(node.args[0].value))
        self.generic_visit(node)

    @staticmethod
    def keyword(node: ast.Call, name: str) -> ast.AST | None:
        for kw in node.keywords:
            if kw.arg == name:
                return kw.value
        return None

    def record_compile_call(self, node: ast.Call, form: str, target: ast.AST | None, keywords: list[ast.keyword]) -> None:
        if target is None:
            # torch.compile(backend=...) used as a decorator factory: the decorator handles it.
            return
        if isinstance(target, ast.Lambda):
            self.record_compile_site(node, form, "", "lambda", keywords, lambda_node=target)
        elif isinstance(target, ast.Call):
            self.record_compile_site(node, form, dotted_name(target.func), "call", keywords)
        else:
            text = dotted_name(target)
            if not text:
                # ``torch.compile(d[k])``, ``torch.compile(*args)``, ``torch.compile(a or b)``:
                # still a site; the value flow says what it holds, or why not.
                kind = "subscript" if isinstance(target, ast.Subscript) else ("starred" if isinstance(target, ast.Starred) else "expression")
                self.record_compile_site(node, form, ast.unparse(target)[:200], kind, keywords)
                return
            kind = "name" if "." not in text else ("self-attribute" if text.startswith("self.") else "attribute")
            self.record_compile_site(node, form, text, kind, keywords)

    def record_compile_site(self, node: ast.Call, form: str, target: str, target_kind: str, keywords: list[ast.keyword], lambda_node: ast.Lambda | None = None) -> None:
        options = []
        kinds = []
        for kw in keywords:
            if kw.arg:
                options.append((kw.arg, ast.unparse(kw.value)))
                kinds.append((kw.arg, self.expression_kind(kw.value)))
        assigned = self.current_assign_target(node)
        self.compile_sites.append(
            CompileSite(
                span=span_of(node, self.lines),
                form=form,
                target=target,
                target_kind=target_kind,
                function=self.enclosing_function_name(),
                lambda_qualname=self.lambda_qualname(lambda_node) if lambda_node is not None else "",
                class_ref=target if target_kind == "call" else "",
                assigned_to=assigned,
                options=tuple(options),
                option_kinds=tuple(kinds),
                loop_vars=tuple(v for vs in self.loop_vars for v in vs),
                in_loop=bool(self.loop_vars[-1]) or bool(self.loop_lines[-1]),
            )
        )

    def expression_kind(self, node: ast.AST) -> str:
        if isinstance(node, ast.Lambda):
            return "lambda"
        if isinstance(node, ast.Constant):
            return type(node.value).__name__
        if isinstance(node, ast.Call):
            return "call"
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = dotted_name(node)
            scope = self.function_scope()
            if scope is not None and "." not in name and name in scope[2]["defs"]:
                return "local-function"
            if scope is not None and "." not in name and (name in scope[2]["locals"] or any(p.name == name for p in scope[2]["params"])):
                return "local"
            return "name"
        return type(node).__name__.lower()

    def current_assign_target(self, node: ast.AST) -> str:
        stmt = self.current_stmt
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and getattr(stmt, "value", None) is node:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            return dotted_name(targets[0])
        return ""

    current_stmt: ast.AST | None = None

    # Dispatch is most of this walk's cost (``NodeVisitor`` builds a method name per node and
    # walks fields through generators): handlers are looked up once per node class.
    _handlers: dict[type, Callable | None] = {}

    def visit(self, node: ast.AST):  # type: ignore[override]
        cls = type(node)
        try:
            handler = self._handlers[cls]
        except KeyError:
            handler = self._handlers[cls] = getattr(type(self), "visit_" + cls.__name__, None)
        if isinstance(node, ast.stmt):
            previous = self.current_stmt
            self.current_stmt = node
            try:
                return handler(self, node) if handler is not None else self.generic_visit(node)
            finally:
                self.current_stmt = previous
        return handler(self, node) if handler is not None else self.generic_visit(node)

    def generic_visit(self, node: ast.AST) -> None:
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST) and not isinstance(item, _LEAF_NODES):
                        self.visit(item)
            elif isinstance(value, ast.AST) and not isinstance(value, _LEAF_NODES):
                self.visit(value)

    def visit_Constant(self, node: ast.Constant) -> None:
        """A constant has no child nodes (``NodeVisitor``'s version only looks for the
        handlers of the node classes removed in Python 3.12)."""

    def lambda_qualname(self, node: ast.Lambda) -> str:
        return self.qual(f"<lambda:{node.lineno}:{node.col_offset}>")

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.enter_function(node, self.lambda_qualname(node), "<lambda>", [])

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.visit(node.iter)
        self.add_flows(node.target, node.iter, "iter")
        self.visit(node.target)
        for test in node.ifs:
            self.visit(test)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            scope = self.function_scope()
            if scope is not None and scope is self.scope:
                scope[2]["returns"].append(_position(node.value))
            self.visit(node.value)

    def visit_Yield(self, node: ast.Yield) -> None:
        if node.value is not None:
            scope = self.function_scope()
            if scope is not None and scope is self.scope:
                scope[2]["yields"].append(_position(node.value))
            self.visit(node.value)

    # ---- value flow ----------------------------------------------------------------------

    def add_flows(self, target: ast.AST, value: ast.AST, how: str) -> None:
        """Record what ``target`` is bound to (``FLOW_HOWS``) in the current scope's flows;
        tuple targets bind each name to its position in the value (``0``, ``1.2``)."""
        if isinstance(target, ast.Name):
            self.scope[2]["flows"].append((target.id, how, *_position(value)))
        elif isinstance(target, ast.Attribute):
            text = dotted_name(target)
            if text:
                self.scope[2]["flows"].append((text, how, *_position(value)))
        elif isinstance(target, (ast.Tuple, ast.List)):
            if how.startswith("elem"):
                return
            prefix = "" if how == "=" else how + "."
            for i, elt in enumerate(target.elts):
                if isinstance(elt, ast.Starred):
                    self.add_flows(elt.value, value, f"{prefix}*")
                else:
                    self.add_flows(elt, value, f"{prefix}{i}")
        elif isinstance(target, ast.Subscript) and how == "=":
            base = dotted_name(target.value)
            key = target.slice
            if base:
                literal = key.value if isinstance(key, ast.Constant) and isinstance(key.value, (str, int)) else None
                self.scope[2]["flows"].append((base, f"elem:{literal}" if literal is not None else "elem:", *_position(value)))

    def add_call_flows(self, node: ast.Call) -> None:
        """Containers filled by method calls (``layers.append(Block())``, ``add_module``) and
        ``setattr(obj, "name", value)``."""
        func = node.func
        if isinstance(func, ast.Attribute):
            method = func.attr
            receiver = dotted_name(func.value)
            if not receiver or not node.args:
                return
            flows = self.scope[2]["flows"]
            if method in ("append", "add", "appendleft") and len(node.args) == 1:
                flows.append((receiver, "elem", *_position(node.args[0])))
            elif method == "insert" and len(node.args) == 2:
                flows.append((receiver, "elem", *_position(node.args[1])))
            elif method in ("extend", "update") and len(node.args) == 1:
                flows.append((receiver, "elems", *_position(node.args[0])))
            elif method in ("add_module", "register_module", "__setitem__") and len(node.args) == 2:
                key = node.args[0]
                literal = key.value if isinstance(key, ast.Constant) and isinstance(key.value, (str, int)) else None
                flows.append((receiver, f"elem:{literal}" if literal is not None else "elem:", *_position(node.args[1])))
                if method != "__setitem__" and isinstance(literal, str) and literal.isidentifier():
                    # ``self.register_module("norm", norm)``: the module's attribute ``norm`` too.
                    flows.append((f"{receiver}.{literal}", "=", *_position(node.args[1])))
        elif isinstance(func, ast.Name) and func.id == "setattr" and len(node.args) == 3:
            receiver = dotted_name(node.args[0])
            name = node.args[1]
            if receiver and isinstance(name, ast.Constant) and isinstance(name.value, str):
                self.scope[2]["flows"].append((f"{receiver}.{name.value}", "=", *_position(node.args[2])))

    # ---- definitions ---------------------------------------------------------------------

    def params_of(self, args: ast.arguments) -> list[Param]:
        params: list[Param] = []
        positional = list(args.posonlyargs) + list(args.args)
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        for arg, default in zip(positional, defaults):
            params.append(self.param(arg, "positional", default))
        if args.vararg:
            params.append(self.param(args.vararg, "vararg", None))
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            params.append(self.param(arg, "keyword", default))
        if args.kwarg:
            params.append(self.param(args.kwarg, "kwarg", None))
        return params

    def record_decorator_site(self, deco: ast.expr, name: str, kind: str, qualname: str, keywords: list[ast.keyword]) -> None:
        """A compile decorator on the ``def`` or ``class`` (``kind``) ``qualname``."""
        self.compile_sites.append(
            CompileSite(
                span=span_of(deco, self.lines),
                form="decorator",
                target=name,
                target_kind=kind,
                function=self.enclosing_function_name(),
                decorated=qualname,
                options=tuple((kw.arg, ast.unparse(kw.value)) for kw in keywords if kw.arg),
                option_kinds=tuple((kw.arg, self.expression_kind(kw.value)) for kw in keywords if kw.arg),
                loop_vars=tuple(v for vs in self.loop_vars for v in vs),
                in_loop=bool(self.loop_vars[-1]),
            )
        )

    def param(self, arg: ast.arg, kind: str, default: ast.AST | None) -> Param:
        annotation = expression_text(arg.annotation) if arg.annotation is not None else ""
        return Param(
            name=arg.arg,
            kind=kind,
            annotation=annotation,
            default=expression_text(default) if default is not None else "",
            default_kind=self.kind_of(default)[0] if default is not None else "",
        )

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for deco in node.decorator_list:
            self.visit(deco)
        for default in list(node.args.defaults) + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(default)
        qualname = self.qual(node.name)
        decorators = []
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            text = dotted_name(target)
            resolved = self.resolve(text) if text else ""
            decorators.append(resolved)
            form = self.is_compile_callee(target)
            if not form and isinstance(deco, ast.Call) and isinstance(deco.func, ast.Call) and self.is_compile_callee(deco.func.func) == "optimize":
                form = "optimize"
            if form:
                keywords = self.with_alias_options(target, deco.keywords if isinstance(deco, ast.Call) else [])
                if form == "optimize" and isinstance(deco, ast.Call) and deco.args:
                    keywords = list(keywords) + [ast.keyword(arg="backend", value=deco.args[0])]
                self.record_decorator_site(deco, node.name, "function", qualname, keywords)
        scope_kind, _, data = self.scope
        if scope_kind == "module":
            self.record_binding(node.name, "function", node)
        elif scope_kind == "function":
            data["locals"].add(node.name)
            data["defs"].add(node.name)
        self.enter_function(node, qualname, node.name, decorators)

    visit_AsyncFunctionDef = visit_FunctionDef

    def enter_function(self, node: ast.AST, qualname: str, name: str, decorators: list[str]) -> None:
        args = node.args  # type: ignore[attr-defined]
        if isinstance(node, ast.Lambda):
            for default in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
                self.visit(default)
        params = self.params_of(args)
        cls = self.scope if self.scope[0] == "class" else None
        parent_fn = self.function_scope()
        data = {
            "locals": set(),
            "global_decls": set(),
            "nonlocal_decls": set(),
            "calls": {},
            "instances": {},
            "loop_sources": {},
            "identifiers": set(),
            "module_chains": set(),
            "params": params,
            "param_names": frozenset(p.name for p in params) - {"self", "cls"},
            "passes": {},
            "defs": set(),
            "flows": [],
            "returns": [_position(node.body)] if isinstance(node, ast.Lambda) else [],
            "yields": [],
            "loop_calls": {},
        }
        self.scopes.append(("function", qualname, data))
        self.function_scopes.append(self.scopes[-1])
        self.loop_vars.append([])
        self.loop_lines.append([])
        sites_before = len(self.compile_sites)
        functions_before = len(self.functions)
        # Declarations apply to the whole body whatever their position: read them first.
        body = node.body if isinstance(node.body, list) else [node.body]  # type: ignore[attr-defined]
        if self.has_declarations:
            _declarations(body, data["global_decls"], data["nonlocal_decls"])
        for stmt in body:
            self.visit(stmt)
        self.loop_vars.pop()
        self.loop_lines.pop()
        self.scopes.pop()
        self.function_scopes.pop()
        compiles_param = _compiled_parameter(self.compile_sites[sites_before:], qualname, params, data.get("wrapper_args", ()),
                                              lambda outer, inner, name: self._nested_binds(functions_before, outer, inner, name))
        top = self.top_stmt or node
        first_line = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
        self.functions.append(
            FunctionFacts(
                qualname=qualname,
                name=name,
                line=node.lineno,
                column=char_column(self.lines, node.lineno, node.col_offset),
                end_line=node.end_lineno or node.lineno,
                first_line=first_line,
                stmt_line=min([d.lineno for d in getattr(top, "decorator_list", [])] + [top.lineno]),
                stmt_end_line=top.end_lineno or top.lineno,
                class_name=cls[1] if cls else "",
                parent=parent_fn[1] if parent_fn else "",
                params=tuple(params),
                decorators=tuple(decorators),
                is_lambda=isinstance(node, ast.Lambda),
                local_names=frozenset(data["locals"] | {p.name for p in params}),
                global_decls=frozenset(data["global_decls"]),
                nonlocal_decls=frozenset(data["nonlocal_decls"]),
                calls=tuple(data["calls"]),
                instances=tuple(sorted(data["instances"].items())),
                loop_sources=tuple(sorted(data["loop_sources"].items())),
                identifiers=frozenset(data["identifiers"]),
                module_chains=frozenset(data["module_chains"]),
                compiles_param=compiles_param,
                passes=tuple(data["passes"]),
                flows=tuple(data["flows"]),
                returns=tuple(data["returns"]),
                yields=tuple(data["yields"]),
                loop_calls=tuple(data["loop_calls"]),
            )
        )
        if parent_fn is not None:
            # A nested function's calls and identifiers matter to whoever inlines the parent.
            parent_fn[2]["identifiers"].update(data["identifiers"])
            parent_fn[2]["module_chains"].update(data["module_chains"])

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for deco in node.decorator_list:
            self.visit(deco)
        for base in node.bases:
            self.visit(base)
        # A generic base (``OptimConfig[torch.optim.Adam]``, ``Generic[T]``) is its class.
        origins = [b.value if isinstance(b, ast.Subscript) else b for b in node.bases]
        bases = tuple(self.resolve(dotted_name(b)) for b in origins if dotted_name(b))
        qualname = self.qual(node.name)
        for deco in node.decorator_list:
            # ``@torch.compile`` on a class compiles its ``__call__``: every instance's forward.
            target = deco.func if isinstance(deco, ast.Call) else deco
            if self.is_compile_callee(target) == "call":
                keywords = self.with_alias_options(target, deco.keywords if isinstance(deco, ast.Call) else [])
                self.record_decorator_site(deco, node.name, "class", qualname, keywords)
        is_enum = any(b in ENUM_BASES or b.rsplit(".", 1)[-1] in ENUM_BASES for b in bases)
        self.class_names.add(node.name)
        if is_enum:
            self.enum_classes.add(node.name)
        if self.scope[0] == "module":
            self.record_binding(node.name, "class", node)
        elif self.scope[0] == "function":
            self.scope[2]["locals"].add(node.name)
        data = {"attrs": {}, "submodules": {}, "buffers": set(), "elements": {}, "flows": []}
        self.scopes.append(("class", qualname, data))
        self.loop_vars.append([])
        self.loop_lines.append([])
        for stmt in node.body:
            self.visit(stmt)
        self.loop_lines.pop()
        self.loop_vars.pop()
        self.scopes.pop()
        methods = tuple(
            (stmt.name, f"{qualname}.{stmt.name}") for stmt in node.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
        )
        self.classes.append(
            ClassFacts(
                qualname=qualname,
                name=node.name,
                line=node.lineno,
                bases=bases,
                methods=methods,
                attrs=tuple(sorted(data["attrs"].items())),
                submodules=tuple(sorted(data["submodules"].items())),
                buffers=frozenset(data["buffers"]),
                is_enum=is_enum,
                elements=tuple(sorted(data["elements"].items())),
                flows=tuple(data["flows"]),
                decorators=tuple(self.resolve(text) for d in node.decorator_list if (text := dotted_name(d.func if isinstance(d, ast.Call) else d))),
            )
        )

    def visit_Module(self, node: ast.Module) -> None:
        for stmt in node.body:
            self.top_stmt = stmt
            self.visit(stmt)


def _position(node: ast.AST) -> tuple[int, int, int, int]:
    """An expression's ``ast`` span (columns in UTF-8 bytes), as flows record it."""
    return (node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]


def _declarations(body: list[ast.stmt], globals_: set[str], nonlocals: set[str]) -> None:
    """``global`` / ``nonlocal`` names of a function body, not of the functions nested in it."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Global):
            globals_.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            nonlocals.update(node.names)
        elif isinstance(node, (ast.stmt, ast.ExceptHandler, ast.match_case)) and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _compiled_parameter(sites: list[CompileSite], qualname: str, params: list[Param], wrapper_args=(), nested_binds: Callable[[str, str, str], bool] | None = None) -> str:
    """The parameter of function ``qualname`` that one of its own compile sites compiles: its
    name, or ``*args`` for the first element of its ``*args`` (``torch.compile(*args)``,
    ``torch.compile(args[0])``); or that a function nested in it hands to ``torch.compile``
    through the closure (``def lazy_compile(func): def wrapper(*a): ... torch.compile(func)
    ...; return wrapper``, where no function between binds the name: ``nested_binds``; a
    ``func.compile(...)`` there may be another library's method); else the first parameter it
    passes to a wrapper in any position (a candidate the regions confirm by value); "" when
    none."""
    # ``self.compile()`` compiles the instance, not a parameter a caller passes.
    names = {p.name for p in params} - {"self", "cls"}
    vararg = next((p.name for p in params if p.kind == "vararg"), "")
    for site in sites:
        if site.function != qualname:
            continue
        if site.target_kind == "name" and site.target in names and site.form != "wrapper":
            return site.target
        if vararg and site.target in (f"*{vararg}", f"{vararg}[0]") and site.form != "wrapper":
            return f"*{vararg}"
    for site in sites:
        if (nested_binds is not None and site.function.startswith(f"{qualname}.") and site.target_kind == "name"
                and site.target in names and site.form in ("call", "optimize") and not nested_binds(qualname, site.function, site.target)):
            return site.target
    for site in sites:
        if site.function == qualname and site.form == "wrapper" and site.target_kind == "name" and site.target in names:
            return site.target
    return next((name for name in wrapper_args if name in names), "")


# The nodes that hold statements: statements, ``except`` handlers and ``case`` blocks.
_STATEMENT_HOLDERS = (ast.stmt, ast.excepthandler, ast.match_case)


def _walk_statements(tree: ast.AST) -> Iterator[ast.AST]:
    """The nodes ``ast.walk(tree)`` gives that are ``tree`` or hold statements, in its order
    (breadth first): the statements are all of them, and the expressions, which hold none, are
    not walked."""
    pending = deque([tree])
    while pending:
        node = pending.popleft()
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                pending.extend(item for item in value if isinstance(item, _STATEMENT_HOLDERS))
        yield node


# Text an alias of ``torch.compile`` has: ``= torch.compile`` on one line, or ``compile``
# uncalled between ``=``, ``(``, ``if``, ``else``, ``or``, ``and`` and the end of an expression, with
# only space between, line breaks included (``compile = (\n    torch.compile\n    if cfg.compile\n    else ...)``).
_ALIAS_TEXT = re.compile(r"=[^\n=]*\bcompile\b(?!\s*\()")
_ALIAS_BEFORE = re.compile(r"(?:=|\(|\bif|\belse|\bor|\band)\s*(?:\w+\.)*\Z")
_ALIAS_AFTER = re.compile(r"\s*(?:[)\],;#]|$|if\b|else\b|or\b|and\b)", re.MULTILINE)


def _may_alias(text: str) -> bool:
    """Whether the text may assign ``torch.compile`` uncalled (``_ALIAS_TEXT``, or a
    ``compile`` word with what ``_ALIAS_BEFORE`` and ``_ALIAS_AFTER`` allow around it). Each
    occurrence of the word is looked at, not every position of the text: one pattern
    searched over the whole text cost 3.7 s on the torch tree."""
    if _ALIAS_TEXT.search(text) is not None:
        return True
    at = text.find("compile")
    while at != -1:
        end = at + 7
        word = (at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")) and (end >= len(text) or not (text[end].isalnum() or text[end] == "_"))
        if word and _ALIAS_AFTER.match(text, end) and _ALIAS_BEFORE.search(text, max(0, at - 120), at):
            return True
        at = text.find("compile", end)
    return False


def _compile_aliases(tree: ast.Module, text: str, assigned: set[int] | None = None) -> dict[str, tuple[ast.keyword, ...]]:
    """Names and attribute chains assigned ``torch.compile`` (or ``torch.compiler.compile``)
    uncalled, alone, as a branch of a conditional or ``or``/``and``, or bound by
    ``functools.partial`` (with the keywords the partial binds). ``assigned`` gets the ids of
    those assignment statements."""
    if not _may_alias(text):
        return {}
    imports: dict[str, str] = {}
    assigns: list[ast.Assign | ast.AnnAssign] = []
    for node in _walk_statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                imports[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            assigns.append(node)

    def is_compile(value: ast.AST) -> bool:
        if isinstance(value, ast.Call) and value.args:
            # ``functools.partial(torch.compile, backend=...)``: calling it compiles its argument.
            callee = dotted_name(value.func)
            head, _, rest = callee.partition(".") if callee else ("", "", "")
            target = imports.get(head, head)
            if (f"{target}.{rest}" if rest else target) == "functools.partial":
                return is_compile(value.args[0])
            return False
        if isinstance(value, ast.IfExp):
            return is_compile(value.body) or is_compile(value.orelse)
        if isinstance(value, ast.BoolOp):
            return any(is_compile(v) for v in value.values)
        text = dotted_name(value)
        if not text:
            return False
        head, _, rest = text.partition(".")
        target = imports.get(head, head)
        return (f"{target}.{rest}" if rest else target) in ("torch.compile", "torch.compiler.compile")

    def bound_keywords(value: ast.AST) -> tuple[ast.keyword, ...]:
        # Only a partial that is the whole value binds for certain; a conditional's branches
        # may differ, so they bind nothing known.
        if isinstance(value, ast.Call) and value.args:
            inner = bound_keywords(value.args[0])
            given = {kw.arg for kw in value.keywords}
            return tuple(kw for kw in value.keywords if kw.arg) + tuple(kw for kw in inner if kw.arg not in given)
        return ()

    out: dict[str, tuple[ast.keyword, ...]] = {}
    for node in assigns:
        if is_compile(node.value):
            if assigned is not None:
                assigned.add(id(node))
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                name = dotted_name(target)
                if name and name not in ("torch.compile",):
                    out[name] = bound_keywords(node.value)
    return out


def _exported_aliases(tree: ast.Module, assigned: set[int]) -> tuple[str, ...]:
    """The plain names that are module globals where an assignment in ``assigned`` (ids of
    the statements ``_compile_aliases`` found assigning torch's compile) binds them:
    at the module's top level (its ``if``/``try``/``with`` blocks too), or in a function that
    declares the name ``global`` (``def enable(): global jit_fuser; jit_fuser = torch.compile``).
    A name assigned in a class body or as a function's local is not."""
    names = {
        target.id
        for node in ast.walk(tree)
        if id(node) in assigned
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])  # type: ignore[attr-defined]
        if isinstance(target, ast.Name)
    }
    out: set[str] = set()

    def visit(body: list, declared: frozenset[str] | None) -> None:
        # ``declared``: None at the module's top level, else the enclosing function's globals.
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                globals_ = frozenset(n for node in ast.walk(stmt) if isinstance(node, ast.Global) for n in node.names)
                if globals_ & names:
                    visit(stmt.body, globals_)
                continue
            if isinstance(stmt, ast.ClassDef):
                continue
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and id(stmt) in assigned:
                for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                    if isinstance(target, ast.Name) and target.id in names and (declared is None or target.id in declared):
                        out.add(target.id)
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list):
                    visit(inner, declared)
            for item in getattr(stmt, "handlers", None) or getattr(stmt, "cases", None) or ():
                visit(item.body, declared)

    visit(tree.body, None)
    return tuple(sorted(out))


def collect_facts(tree: ast.Module, path: str, module: str, is_package: bool, text: str, compile_functions: tuple[str, ...] = ()) -> ModuleFacts:
    """Facts of one parsed module."""
    lines = text.split("\n")
    collector = _Collector(path, module, is_package, lines, compile_functions)
    # Most files declare no globals: skip looking for declarations in every function then.
    collector.has_declarations = "global " in text or "nonlocal " in text
    assigned: set[int] = set()
    collector.compile_aliases = _compile_aliases(tree, text, assigned)
    exported = _exported_aliases(tree, assigned) if assigned else ()
    # Classes may be used above their definition (in function bodies): know their names first.
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            collector.class_names.add(stmt.name)
            bases = [collector.resolve(dotted_name(b)) for b in stmt.bases]
            if any(b in ENUM_BASES or b.rsplit(".", 1)[-1] in ENUM_BASES for b in bases if b):
                collector.enum_classes.add(stmt.name)
    # Valid code nests deeper than the default 1000 frames allow a recursive visitor (an elif
    # chain or a sum of a few hundred terms); CPython compiles it, so must we.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), DEEP_CODE_FRAMES))
    collector.visit(tree)
    return ModuleFacts(
        path=path,
        module=module,
        is_package=is_package,
        imports=tuple(sorted(collector.imports.items())),
        bindings=tuple(collector.bindings),
        functions=tuple(sorted(collector.functions, key=lambda f: (f.line, f.column))),
        classes=tuple(collector.classes),
        mutations=tuple(collector.mutations),
        compile_sites=tuple(collector.compile_sites),
        method_calls=tuple(collector.method_calls),
        config_settings=tuple(collector.config_settings),
        flows=tuple(collector.scopes[0][2]["flows"]),
        lines=len(lines),
        toplevel_loop_calls=tuple(collector.toplevel_loop_calls),
        compile_aliases=exported,
    )
