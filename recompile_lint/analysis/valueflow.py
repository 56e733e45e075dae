"""Value flow: what a name, an attribute chain or a call may hold, without running anything.

The region finder asks it what ``torch.compile(x)`` compiles; the guard model asks it what
names, attributes, receivers of writes and callees hold. The answer is a set of abstract
values (``Value``), computed on demand from the per-file facts (``facts.FunctionFacts.flows``,
``returns``, ``ClassFacts.flows``, ``ModuleFacts.flows``: where each name is bound and to which
expression, as source spans) and memoised per query.

API (stable; names starting with ``_`` are private)::

    flow = ValueFlow(index)
    flow.values_of(expr, facts, scope)        -> frozenset[Value]
    flow.attribute_values(owner, attr)        -> frozenset[Value]
    flow.element_values(container, key=None)  -> frozenset[Value]
    flow.call_values(callee, facts, scope, call=None) -> frozenset[Value]
    flow.callees(call, facts, scope)          -> tuple[FunctionRef, ...]
    flow.function_ref(value)                  -> FunctionRef | None
    flow.class_of(value)                      -> tuple[ModuleFacts, ClassFacts] | None
    flow.parameter_values(facts, scope, name) -> frozenset[Value]
    flow.callers(ref)                         -> list[(facts, scope, ast.Call, skipped)]
    flow.code_of(value)                       -> FunctionRef | None
    flow.torch_base(facts, cls)               -> str
    flow.expression_at(facts, span)           -> ast.expr | None
    flow.tree(path)                           -> ast.Module | None

``expr`` is an ``ast.expr`` or the source text of one (``"self._optimizer.step"``,
``"build_model(cfg)"``); ``scope`` is the ``FunctionFacts`` it appears in, ``None`` at module
level (a class body's names are looked up with the class's module scope). An ``ast.expr``
comes from the file of ``facts``: its positions matter only for a lambda, which is found by
its position among the file's functions.

Sources followed:

- plain, annotated, tuple (``a, (b, c) = ...``, starred) and walrus assignments, ``for`` and
  comprehension targets (an element of the iterable; ``enumerate``, ``zip``, ``.items()``,
  ``.values()``, ``.named_children()``, ``.children()``, ``.modules()`` understood),
  ``with ... as`` (unknown);
- constructor calls (an ``instance`` of the project class, a ``torch-instance`` of a torch
  class); calls of project functions, methods, classmethods and staticmethods: the values of
  their ``return`` expressions, with the callee's parameters bound to the call's arguments,
  followed across modules to ``max_depth`` calls; a ``from_*`` classmethod whose returns the
  flow cannot follow, or that a project class inherits from another library's base, builds
  an instance of its class; ``accelerator.prepare(...)`` and
  Lightning Fabric's ``setup(...)`` return their arguments (``PASS_THROUGH``), and so do
  torch's ``parallelize_module``, ``fully_shard`` and the like (``TORCH_RETURNS_MODULE``);
- ``self.x = ...`` in any method of the class or its project base classes, class attributes,
  methods (a ``bound-method`` on an instance, a ``method`` on the class), properties (their
  return values);
- elements of lists, tuples, dicts, sets, ``nn.ModuleList``, ``nn.ModuleDict``,
  ``nn.Sequential`` from their displays and constructor arguments, plus ``append``,
  ``extend``, ``insert``, ``add_module``, ``x[key] = v`` and ``update`` on the same receiver;
  subscripts with a literal key pick the element, other subscripts any element; ``.get(k)``;
- ``getattr(obj, "literal"[, default])``; imports and re-exports through ``__init__.py``;
  decorators (a decorated ``def`` holds the function itself: a wrapping decorator's wrapper
  inlines it, so compiling either traces the same code); ``functools.partial``;
  ``torch.compile(x)`` holds what ``x`` holds (the wrapper forwards attributes);
- parameters: ``self`` (an instance of the enclosing class), ``cls``, the annotation (a
  project or torch class), the default, and, when nothing else is known, the arguments passed
  at the function's call sites in the project (found by name, confirmed by the callee's value,
  ``max_callers`` of them). A call followed with its arguments bound skips the branches of
  ``if isinstance(param, C):`` that those arguments cannot take.

Where it over-approximates (a superset of what can happen; the region finder reports every
candidate, the guard model should treat several values as "one of"):

- flow-insensitive per scope: every binding of a name in a function counts at every point of
  it (``model = Net(); model = torch.compile(model)`` holds the ``Net`` instance throughout);
- ``self.x`` is the union of every assignment in every method of the class and its bases;
  in a method, ``self`` may be an instance of any subclass: an attribute the class leaves
  unset (and torch's nn.Module does not provide) or sets to ``None`` or an empty container is
  looked up on every project subclass (their class bodies, methods and properties, and their
  other bases: mixins);
- a list grown by ``append`` holds any of its appended values at any index;
- a parameter's values from call sites are the union over every call site found;
- a subscript whose key is not a literal holds any element of the container.

Where it under-approximates (the value is ``unknown``, with ``detail`` saying why, from
``UNKNOWN_REASONS``): values from outside the project other than torch (``external``),
parameters of functions nobody in the project calls (``parameter``), computed attribute names
and keys (``dynamic``), chains longer than the bounds (``depth``), names bound nowhere the
index sees (``unbound``), results of calls whose callee is not known (``call``), values that
``global`` statements in functions rebind. One question (a call of the public API) answers at
most ``MAX_QUESTION_STEPS`` questions of its own that are not answered yet: past that, what is
still open is unknown (``depth``) and nothing it computed is kept, so a project whose callers
and parameters loop through each other costs a bounded time per question, not an exponential
one.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
import zlib
from dataclasses import dataclass, replace

from recompile_lint.analysis.facts import ClassFacts, FunctionFacts, ModuleFacts, dotted_name, resolve_relative
from recompile_lint.analysis.index import FunctionRef, ProjectIndex
from recompile_lint.analysis.parsing import on_deep_stack, parse_source, relative_base_for
from recompile_lint.analysis.textscan import mentions

# What a value is. ``ref`` names it: a project object's qualified name (``pkg.mod.Class``,
# ``pkg.mod.func``, ``pkg.mod.Class.method``, ``pkg.mod`` for a module), a torch object's
# (``torch.optim.AdamW``, ``torch.nn.functional.scaled_dot_product_attention``).
KINDS = frozenset(
    {
        "instance",  # an instance of a project class; ref: the class
        "class",  # a class (project or torch); ref: the class
        "function",  # a project function or nested function; ref: the function
        "method",  # a method looked up on its class (unbound); ref: the function
        "bound-method",  # a method looked up on an instance; ref: the function; elements: (function, receiver)
        "lambda",  # a lambda; ref: ``pkg.mod.<lambda:LINE:COL>`` (its qualname in the facts)
        "partial",  # functools.partial; elements: (target,); detail: its keywords as source text
        "transform",  # a torch.func transform of a callable (``torch.vmap(f)``); elements: (target,); detail: the transform
        "torch-callable",  # a function of torch; ref: its dotted name
        "torch-instance",  # an instance of a torch class; ref: the class
        "module",  # a module; ref: its dotted name; path: its file when in the project
        "literal",  # a Python constant; detail: ``kind:text`` (``int:0``, ``str:'gpt'``)
        "tensor",  # a tensor (a torch factory, a tensor method, a Parameter, a buffer)
        "container",  # list/tuple/dict/set/ModuleList/ModuleDict/Sequential; ref: which; elements
        "unknown",  # detail: why (UNKNOWN_REASONS); ref: the dotted name when one is known
    }
)

# Why a value is unknown: a short fixed list, shared with the region finder's reasons.
UNKNOWN_REASONS = (
    "external",  # comes from a library other than torch (or a module outside the project)
    "parameter",  # a parameter: no annotation, default or call site in the project tells
    "dynamic",  # a computed attribute name, key or callee
    "depth",  # the chain goes past the configured bounds
    "unbound",  # the name is bound nowhere the index sees
    "call",  # the result of a call whose callee is unknown or returns nothing known
)


@dataclass(frozen=True)
class Value:
    """One abstract value a name or expression may hold.

    ``kind``: one of ``KINDS``. ``ref``: the qualified name of what it is (see ``KINDS``).
    ``path``: the file of a project definition (a class, function, module), "" otherwise.
    ``detail``: a literal's ``kind:text``; a partial's keywords (``k=1, j=x``); ``exact`` for a
    container whose ``elements`` are positional (a display, a tuple returned); ``self`` for the
    ``self`` of a method (an instance of the class or of any subclass); for ``unknown``, the
    reason (``UNKNOWN_REASONS``). ``elements``: a container's elements (in order when exact, a
    set of candidates otherwise); a partial's target; a bound method's function and receiver.
    ``keys``: for keyed containers (dict, ModuleDict), the literal key of each element
    (``""`` where not literal), parallel to ``elements``.
    """

    kind: str
    ref: str = ""
    path: str = ""
    detail: str = ""
    elements: tuple["Value", ...] = ()
    keys: tuple[str, ...] = ()

    def __hash__(self) -> int:
        # The same in every process, unlike a hash of its strings (``PYTHONHASHSEED``): sets
        # of values iterate in the same order whatever the seed, and so the queries a set's
        # values lead to run in the same order (a cycle is cut at the same place).
        known = self.__dict__.get("_hash")
        if known is None:
            text = "\x00".join((self.kind, self.ref, self.path, self.detail, *self.keys)).encode("utf-8", "surrogatepass")
            known = hash((zlib.crc32(text), tuple(hash(e) for e in self.elements)))
            object.__setattr__(self, "_hash", known)
        return known

    @property
    def name(self) -> str:
        """The last component of ``ref`` (``AdamW``, ``forward``)."""
        return self.ref.rsplit(".", 1)[-1]

    def is_torch(self) -> bool:
        """A torch object (callable, class, instance, module, or a container of torch)."""
        return self.ref == "torch" or self.ref.startswith("torch.")



def unknown(reason: str, ref: str = "") -> Value:
    """An unknown value and why (``UNKNOWN_REASONS``)."""
    return Value("unknown", ref=ref, detail=reason)


# What a question past ``MAX_QUESTION_STEPS`` gets for each part still open.
SPENT: frozenset[Value] = frozenset({unknown("depth")})


def literal(node: ast.Constant) -> Value:
    """A constant's value: ``literal`` with ``kind:text`` as its detail."""
    value = node.value
    kind = "none" if value is None else type(value).__name__
    text = repr(value)
    return Value("literal", detail=f"{kind}:{text[:60]}")


def literal_text(value: Value) -> str | int | None:
    """The Python value of a str or int literal (``str:'gpt'`` -> ``gpt``), else None."""
    if value.kind != "literal":
        return None
    kind, _, text = value.detail.partition(":")
    if kind in ("str", "int"):
        try:
            out = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return None
        return out if isinstance(out, (str, int)) else None
    return None


# torch modules (a dotted name under torch that is one of these is a module, not a callable).
TORCH_MODULES = frozenset(
    {
        "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.utils", "torch.nn.modules",
        "torch.nn.parallel", "torch.nn.attention", "torch.nn.attention.flex_attention", "torch.optim",
        "torch.optim.lr_scheduler", "torch.distributed", "torch.distributed.fsdp", "torch.distributed.tensor",
        "torch.utils", "torch.utils.data", "torch.utils.checkpoint", "torch.cuda", "torch.cuda.amp", "torch.amp",
        "torch.autograd", "torch.fx", "torch.linalg", "torch.fft", "torch.special", "torch.compiler", "torch._dynamo",
        "torch._inductor", "torch.export", "torch.jit", "torch.backends", "torch.testing", "torch.library", "torch.ops",
        "torch.distributions", "torch.quantization", "torch.ao", "torch.func", "torch.sparse", "torch.nested",
    }
)
# torch callables whose result is a tensor when called.
TENSOR_MODULES = frozenset({"torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special"})
# torch containers of modules, by their last name.
TORCH_CONTAINERS = frozenset({"ModuleList", "ModuleDict", "Sequential", "ParameterList", "ParameterDict"})
# torch classes that wrap a module and run its forward (the value holds what it wraps).
TORCH_WRAPPERS = frozenset({"DistributedDataParallel", "DataParallel", "FullyShardedDataParallel"})
# torch functions that change a module in place (or wrap it and run its forward) and return
# it: ``parallelize_module(model, ...)``, ``fully_shard(model)``.
TORCH_RETURNS_MODULE = frozenset({"parallelize_module", "fully_shard", "replicate", "checkpoint_wrapper", "offload_wrapper", "quantize_dynamic"})
# Base classes too general to say what an annotated parameter holds.
GENERIC_TORCH = frozenset(
    {"torch.nn.Module", "torch.nn.modules.module.Module", "torch.optim.Optimizer", "torch.optim.optimizer.Optimizer", "torch.Tensor"}
)
# Methods of modules and tensors that return their receiver (``model.to(device)``).
RETURNS_SELF = frozenset(
    {"to", "cuda", "cpu", "float", "half", "bfloat16", "double", "train", "eval", "requires_grad_", "share_memory", "to_empty", "type", "apply"}
)
# Those of them an ``nn.Module`` of another library's base class surely has.
MOVES_SELF = frozenset({"to", "cuda", "cpu", "float", "half", "bfloat16", "double", "train", "eval", "requires_grad_"})
# Attributes every nn.Module has (a subclass does not set them: torch does).
NN_MODULE_ATTRIBUTES = frozenset(
    {
        "to", "cuda", "cpu", "float", "half", "bfloat16", "double", "train", "eval", "training", "forward", "compile",
        "parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children", "modules",
        "named_modules", "state_dict", "load_state_dict", "register_buffer", "register_parameter", "register_module",
        "add_module", "apply", "zero_grad", "requires_grad_", "get_submodule", "get_parameter", "get_buffer", "__call__",
        "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook", "type", "to_empty",
    }
)
# Methods of modules that iterate over their submodules.
MODULE_ITERATORS = frozenset({"children", "modules", "named_children", "named_modules"})
# Methods of a container that the value flow follows (iteration, lookups).
CONTAINER_METHODS = frozenset({"children", "modules", "values", "parameters", "items", "keys", "named_children", "named_modules", "get", "__getitem__", "forward", "copy"})
# Builtins that return a container of their argument's elements.
ELEMENT_COPIES = frozenset({"list", "tuple", "sorted", "reversed", "set", "frozenset", "iter"})
# Calls that return (a copy of) their first argument.
IDENTITY_CALLS = frozenset({"copy.copy", "copy.deepcopy", "typing.cast"})
# torch.func transforms: each returns a function that runs its argument under the transform;
# compiled, Dynamo traces the transform's wrapper and inlines the argument.
FUNCTION_TRANSFORMS = frozenset(
    f"{module}.{name}"
    for module in ("torch", "torch.func", "functorch", "torch._functorch.apis", "torch._functorch.eager_transforms")
    for name in ("vmap", "grad", "grad_and_value", "jacrev", "jacfwd", "hessian")
)


@dataclass(frozen=True)
class _Ctx:
    """Where an expression is evaluated: a module, a function of it (or a class body), the
    function's parameters bound by a call being followed, and how deep the query is."""

    facts: ModuleFacts
    fn: FunctionFacts | None
    env: tuple[tuple[str, frozenset[Value]], ...] = ()
    depth: int = 0
    cls: ClassFacts | None = None  # a class body being evaluated
    # The nodes evaluated carry their file's positions: a name's value at its line can be
    # told from the assignments that reach it (not for source text parsed on its own).
    positions: bool = True
    # Tests known to hold at a later use in this scope that an assignment's value reaches
    # (``model = wrap(model)`` evaluated for ``torch.compile(model)`` after ``if args.fp8:
    # exit()``), and the first line of that chain: ``_contradicts`` reads them too.
    assumed: tuple[tuple[str, bool], ...] = ()
    assumed_from: int = 0

    def bound(self, name: str) -> frozenset[Value] | None:
        for key, values in self.env:
            if key == name:
                return values
        return None


EMPTY: frozenset[Value] = frozenset()
# A name a file calls (``name(``, ``.name(``) or decorates with (``@name``, ``@x.name``).
CALLED_NAME = re.compile(r"\b(\w+)[ \t]*\(")
# ``CALLED_NAME`` over the reversed text: it starts with a character, which the search skips
# to, where ``CALLED_NAME``'s leading word is tried at every position (ten times as slow).
_CALLED_NAME_REVERSED = re.compile(r"\([ \t]*(\w+)")
DECORATED_NAME = re.compile(r"@\s*(?:\w+\s*\.\s*)*(\w+)")
# Exact containers made per display at most (one per combination of its positions' values).
MAX_COMBINATIONS = 8
# Questions not answered yet one outermost question may compute (``ValueFlow._guarded``). The
# torch tree's largest question takes 842, diffusers' 2,600; accelerate's four largest took
# millions (minutes each). A question past it is cut (its open parts unknown), never answered
# wrong.
MAX_QUESTION_STEPS = 5_000


class ValueFlow:
    """Answers value questions over a project index, memoising every answer."""

    def __init__(self, index: ProjectIndex, max_depth: int = 4, max_callers: int = 24, max_values: int = 48):
        self.index = index
        self.max_depth = max_depth  # calls followed into callees (returns), and callers (parameters)
        self.max_callers = max_callers  # call sites looked at per parameter
        self._if_calls: dict[str, dict[tuple[int, int], tuple[ast.expr, bool]]] = {}  # path -> calls a conditional expression picks
        self.max_values = max_values  # values kept per answer (the rest: unknown "depth")
        self.max_caller_files = 60  # files parsed per search for a function's call sites
        # Call sites are searched for a parameter met this many calls deep at most: a
        # parameter's callers' parameters' callers... each level reads more files.
        self.max_caller_depth = 3
        self._memo: dict[tuple, frozenset[Value]] = {}
        self._star_sources: dict[tuple[str, str, int], ModuleFacts | None] = {}
        self._active: set[tuple] = set()
        self._stack: list[tuple] = []  # the queries in progress, outermost first
        # Queries in progress whose answer used a cut cycle -> stack index of the cycle's start.
        self._tainted: dict[tuple, int] = {}
        self._steps = 0  # questions computed since the outermost one in progress began
        self._spent = False  # whether it has computed MAX_QUESTION_STEPS of them
        self._snippets: dict[tuple[str, int, int, int, int], ast.expr | None] = {}
        self._lines: dict[str, list[bytes]] = {}
        self._trees: dict[str, ast.Module | None] = {}
        self._decorators: dict[str, dict[int, list[ast.expr]]] = {}  # ``_test_decorators``
        self._callers: dict[tuple[str, str], list] = {}
        self._mentions: dict[str, list[str]] = {}
        self._call_index: dict[tuple[str, str], list[ast.Call]] = {}
        self._by_target: dict[tuple[str, str, str], dict[str, list[tuple]]] = {}
        self._called: dict[str, frozenset[str]] = {}
        self._import_tails: dict[str, tuple[str, str | None]] = {}
        self._dead_ranges: dict[tuple, list[tuple[int, int]]] = {}
        self._rebound: dict[tuple[str, str], list[tuple[str, int, tuple[tuple[int, int], ...]]]] = {}
        self._path_facts: dict[tuple[str, str, int], dict[str, bool]] = {}
        self._reaching_defs: dict[tuple, tuple | None] = {}
        self._defs: dict[tuple[str, str], ast.FunctionDef | ast.AsyncFunctionDef | None] = {}
        self._setters: dict[tuple[str, str], bool] = {}  # methods that setattr per keyword

    # ---- public API ----------------------------------------------------------------------

    def values_of(self, expr: ast.expr | str, facts: ModuleFacts, scope: FunctionFacts | None) -> frozenset[Value]:
        """What ``expr`` may evaluate to in ``scope`` of ``facts``'s module."""
        if isinstance(expr, str):
            try:
                node = ast.parse(expr.strip(), mode="eval").body
            except SyntaxError:
                return frozenset({unknown("dynamic")})
            return self._eval(node, _Ctx(facts, scope, positions=False))
        return self._eval(expr, _Ctx(facts, scope))

    def attribute_values(self, owner: Value, attr: str) -> frozenset[Value]:
        """What ``owner.attr`` may hold: assignments to ``self.attr`` in the class's methods,
        class attributes, methods (bound on an instance), properties; a module's global or
        submodule; a torch object's attribute (a bound method of a torch instance)."""
        return self._attribute(owner, attr, 0)

    def element_values(self, container: Value, key: str | int | None = None) -> frozenset[Value]:
        """The elements of a container value; with ``key`` (a literal index or dict key), the
        one at that key where the container is exact, else every element."""
        return self._elements(container, key, 0)

    def call_values(self, callee: Value, facts: ModuleFacts, scope: FunctionFacts | None, call: ast.Call | None = None) -> frozenset[Value]:
        """What calling ``callee`` returns (with ``call``'s arguments bound to its parameters,
        evaluated in ``scope`` of ``facts``)."""
        return self._call_value(callee, call, _Ctx(facts, scope))

    def callees(self, call: ast.Call | str, facts: ModuleFacts, scope: FunctionFacts | None) -> tuple[FunctionRef, ...]:
        """The project functions a call runs first: a function's or method's code, a class's
        ``__init__``, an nn.Module instance's ``forward``, an object's ``__call__``."""
        if isinstance(call, str):
            try:
                node = ast.parse(call.strip(), mode="eval").body
            except SyntaxError:
                return ()
            func = node.func if isinstance(node, ast.Call) else node
            ctx = _Ctx(facts, scope, positions=False)
        else:
            func = call.func
            ctx = _Ctx(facts, scope)
        out: list[FunctionRef] = []
        for value in sorted(self._eval(func, ctx), key=_order):
            ref = self.code_of(value)
            if ref is not None and ref not in out:
                out.append(ref)
        return tuple(out)

    def function_ref(self, value: Value) -> FunctionRef | None:
        """The project code object of a function, method, bound method, lambda or partial
        value; None for anything else."""
        if value.kind in ("partial", "transform") and value.elements:
            return self.function_ref(value.elements[0])
        if value.kind not in ("function", "method", "bound-method", "lambda") or not value.path:
            return None
        facts = self.index.facts(value.path)
        if facts is None:
            return None
        qualname = value.ref[len(facts.module) + 1 :] if facts.module and value.ref.startswith(facts.module + ".") else value.ref
        return FunctionRef(value.path, qualname) if facts.function(qualname) is not None else None

    def code_of(self, value: Value) -> FunctionRef | None:
        """What calling ``value`` runs first in the project: a function's code, an instance's
        ``forward`` (nn.Module) or ``__call__``, a class's ``__init__``."""
        ref = self.function_ref(value)
        if ref is not None:
            return ref
        found = self.class_of(value)
        if found is None:
            return None
        if value.kind == "class":
            return self.index.class_method(found[0], found[1], "__init__")
        return self.index.class_method(found[0], found[1], "forward") or self.index.class_method(found[0], found[1], "__call__")

    def class_of(self, value: Value) -> tuple[ModuleFacts, ClassFacts] | None:
        """The project class of an instance (or of a class value itself)."""
        if value.kind not in ("instance", "class") or not value.path:
            return None
        facts = self.index.facts(value.path)
        if facts is None:
            return None
        qualname = value.ref[len(facts.module) + 1 :] if facts.module and value.ref.startswith(facts.module + ".") else value.ref
        cls = facts.cls(qualname)
        return (facts, cls) if cls is not None else None

    def parameter_values(self, facts: ModuleFacts, scope: FunctionFacts, name: str) -> frozenset[Value]:
        """What parameter ``name`` of ``scope`` may hold (see the module docstring)."""
        return self._parameter(_Ctx(facts, scope), name)

    def callers(self, ref: FunctionRef) -> list[tuple[ModuleFacts, FunctionFacts | None, ast.Call, int]]:
        """Call sites of a project function found in the project, confirmed by the callee's
        value: (facts, enclosing function, call, how many leading parameters the call does
        not pass: 1 for a method called on an instance or a class's ``__init__``). A
        decorator application counts as a call with the decorated object as its argument."""
        return self._find_callers(ref, 0)

    # ---- values of project objects -------------------------------------------------------

    def _module_value(self, module: str, path: str | None = None) -> Value:
        if path is None:
            path = self.index.module_path(module) or ""
        return Value("module", ref=module, path=path)

    @staticmethod
    def _qualified(facts: ModuleFacts, qualname: str) -> str:
        return f"{facts.module}.{qualname}" if facts.module else qualname

    def _function_value(self, facts: ModuleFacts, fn: FunctionFacts) -> Value:
        kind = "lambda" if fn.is_lambda else ("method" if _is_method(fn) else "function")
        return Value(kind, ref=self._qualified(facts, fn.qualname), path=facts.path)

    def _class_value(self, facts: ModuleFacts, cls: ClassFacts) -> Value:
        return Value("class", ref=self._qualified(facts, cls.qualname), path=facts.path)

    def _instance(self, facts: ModuleFacts, cls: ClassFacts, detail: str = "") -> Value:
        return Value("instance", ref=self._qualified(facts, cls.qualname), path=facts.path, detail=detail)

    @staticmethod
    def _torch(dotted: str) -> Value:
        """A dotted name under torch: a module, a class, or a callable."""
        if dotted in TORCH_MODULES:
            return Value("module", ref=dotted)
        last = dotted.rsplit(".", 1)[-1]
        if last.lstrip("_")[:1].isupper():
            # ``torch.nn.BatchNorm2d``, and the private bases ``isinstance`` tests name
            # (``torch.nn.modules.batchnorm._BatchNorm``, ``_ConvNd``).
            return Value("class", ref=dotted)
        return Value("torch-callable", ref=dotted)

    def _dotted(self, dotted: str, from_path: str | None, depth: int) -> frozenset[Value]:
        """The values of an absolute dotted name (an import target)."""
        if dotted == "torch" or dotted.startswith("torch."):
            return frozenset({self._torch(dotted)})
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            module = ".".join(parts[:i])
            path = self.index.module_path(module, from_path)
            if path is None:
                continue
            values = frozenset({self._module_value(module, path)})
            for attr in parts[i:]:
                values = self._union(self._attribute(v, attr, depth) for v in values)
            return values
        return frozenset({unknown("external", dotted)})

    # ---- expressions ---------------------------------------------------------------------

    def _eval(self, node: ast.AST, ctx: _Ctx) -> frozenset[Value]:
        if isinstance(node, ast.Name):
            return self._name(node.id, ctx, node.lineno if ctx.positions else 0)
        if isinstance(node, ast.Attribute):
            if ctx.positions:
                # ``self.model`` / ``pipe.unet`` rebound earlier in the same function.
                text = dotted_name(node)
                reaching = self._reaching(ctx, text, node.lineno) if text and "." in text else None
                if reaching is not None:
                    return reaching
            inherited = self._super_attribute(node, ctx)
            if inherited is not None:
                return inherited
            base = self._eval(node.value, ctx)
            out = self._union(self._attribute(v, node.attr, ctx.depth) for v in base)
            # ``pipe.unet = ...`` rebinds the attribute here too (flow-insensitive).
            text = dotted_name(node)
            if text and not text.startswith("self.") and self._binds(ctx, text):
                local = self._flow_values(ctx, text)
                if local:
                    out = self._union(({v for v in out if v.kind != "unknown"}, local))
            return out
        if isinstance(node, ast.Call):
            return self._call(node, ctx)
        if isinstance(node, ast.Constant):
            return frozenset({literal(node)})
        if isinstance(node, ast.Lambda):
            fn = self._lambda_at(ctx.facts, node)
            return frozenset({self._function_value(ctx.facts, fn) if fn is not None else unknown("unbound")})
        if isinstance(node, ast.Subscript):
            named = self._namespace_item(node, ctx)
            if named is not None:
                return named
            base = self._eval(node.value, ctx)
            key = self._key(node.slice, ctx)
            if isinstance(node.slice, ast.Slice):
                return self._union(frozenset({Value("container", ref=v.ref, elements=tuple(self._elements(v, None, ctx.depth)))}) if v.kind == "container" else frozenset({v}) for v in base)
            return self._union(self._elements(v, key, ctx.depth) for v in base)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            ref = {ast.List: "list", ast.Tuple: "tuple", ast.Set: "set"}[type(node)]
            return self._display(ref, list(node.elts), ctx)
        if isinstance(node, ast.Dict):
            keys = [self._key(k, ctx) if k is not None else None for k in node.keys]
            values = [self._eval(v, ctx) if k is not None else self._union(self._elements(c, None, ctx.depth) for c in self._eval(v, ctx)) for k, v in zip(node.keys, node.values)]
            return self._container("dict", values, keys)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return frozenset({Value("container", ref="set" if isinstance(node, ast.SetComp) else "list", elements=tuple(sorted(self._eval(node.elt, ctx), key=_order)))})
        if isinstance(node, ast.DictComp):
            inner = tuple(sorted(self._eval(node.value, ctx), key=_order))
            return frozenset({Value("container", ref="dict", elements=inner, keys=("",) * len(inner))})
        if isinstance(node, ast.IfExp):
            return self._union((self._eval(node.body, ctx), self._eval(node.orelse, ctx)))
        if isinstance(node, ast.BoolOp):
            return self._union(self._eval(v, ctx) for v in node.values)
        if isinstance(node, ast.NamedExpr):
            return self._eval(node.value, ctx)
        if isinstance(node, ast.Starred):
            return self._union(self._elements(v, None, ctx.depth) for v in self._eval(node.value, ctx))
        if isinstance(node, ast.Await):
            return self._eval(node.value, ctx)
        if isinstance(node, (ast.JoinedStr,)):
            return frozenset({Value("literal", detail="str:")})
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare)):
            left = self._eval(node.left, ctx) if isinstance(node, ast.BinOp) else EMPTY
            if any(v.kind == "tensor" for v in left):
                return frozenset({Value("tensor")})
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and any(v.kind == "container" for v in left):
                right = self._eval(node.right, ctx)
                elements = [e for v in left | right for e in self._elements(v, None, ctx.depth)]
                return frozenset({Value("container", ref="list", elements=tuple(sorted(set(elements), key=_order)))})
            return frozenset({unknown("dynamic")})
        return frozenset({unknown("dynamic")})

    def _super_attribute(self, node: ast.Attribute, ctx: _Ctx) -> frozenset[Value] | None:
        """``super().attr`` in a method: the attribute of the next class after the method's own
        in its MRO, bound to the method's receiver (``return super().to(*args)`` in an
        ``nn.Module`` subclass's override of ``to`` returns the receiver). None when the node
        is no ``super()`` attribute, or not in a method of a project class."""
        call = node.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "super" and not call.keywords):
            return None
        fn = ctx.fn
        if fn is None or not _is_method(fn) or not fn.params or "staticmethod" in fn.decorators or "classmethod" in fn.decorators:
            return None
        if len(call.args) not in (0, 2) or self._shadowed("super", ctx):
            return None
        cls = ctx.facts.cls(fn.class_name)
        if cls is None:
            return None
        if call.args and not (isinstance(call.args[0], ast.Name) and call.args[0].id == cls.name and isinstance(call.args[1], ast.Name) and call.args[1].id == fn.params[0].name):
            return None  # ``super(Other, obj)``: another class's MRO, or another receiver
        out: set[Value] = set()
        for receiver in self._name(fn.params[0].name, ctx, 0):
            if receiver.kind != "instance":
                out.add(unknown("dynamic", f"super().{node.attr}"))
                continue
            out.update(self._inherited(ctx.facts, cls, receiver, node.attr))
        return self._cap(out) if out else None

    def _inherited(self, facts: ModuleFacts, cls: ClassFacts, receiver: Value, attr: str) -> set[Value]:
        """A method ``attr`` of the bases of ``cls`` (its MRO without it), bound to ``receiver``;
        a torch base's method where no project base defines one."""
        for base_facts, base in self.index.mro(facts, cls)[1:]:
            qual = base.method(attr)
            fn = base_facts.function(qual) if qual is not None else None
            if fn is None:
                continue
            value = self._function_value(base_facts, fn)
            if "staticmethod" in fn.decorators:
                return {Value("function", ref=value.ref, path=value.path)}
            if any(d.rsplit(".", 1)[-1] in ("property", "cached_property") for d in fn.decorators):
                return {unknown("dynamic", f"super().{attr}")}
            return {Value("bound-method", ref=value.ref, path=value.path, elements=(value, receiver))}
        if self.torch_base(facts, cls):
            return {self._torch_method(receiver, attr)}
        return {unknown("external", f"super().{attr}")}

    def _namespace_item(self, node: ast.Subscript, ctx: _Ctx) -> frozenset[Value] | None:
        """A module's namespace indexed by name: ``models.__dict__[arch]`` is ``getattr(models,
        arch)`` and ``globals()[arch]`` the module's own global, for each str value the key may
        hold (a parametrized test's, a loop's), star imports included. None when the subscript
        is of something else or a key is not a literal (``__dict__`` is then a registry of the
        module's own functions and classes: ``_module_attribute``)."""
        owner = node.value
        if isinstance(owner, ast.Attribute) and owner.attr == "__dict__":
            modules = self._eval(owner.value, ctx)
            if not modules or any(v.kind != "module" for v in modules):
                return None
            lookup = lambda name: self._union(self._attribute(m, name, ctx.depth) for m in modules)  # noqa: E731
        elif (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "globals"
              and not owner.args and not owner.keywords and self._global_is_builtin(ctx.facts, "globals")):
            lookup = lambda name: self._global(ctx.facts, name, ctx.depth + 1)  # noqa: E731
        else:
            return None
        keys = self._eval(node.slice, ctx)
        names = [literal_text(v) for v in keys]
        if not names or not all(isinstance(name, str) for name in names):
            return None
        return self._union(lookup(name) for name in sorted(set(names)))

    def _global_is_builtin(self, facts: ModuleFacts, name: str) -> bool:
        """Whether ``name`` at module level is still Python's builtin (the module binds no
        def, class, assignment or import of that name)."""
        return facts.function(name) is None and facts.cls(name) is None and name not in self._targets(facts, None) and facts.import_target(name) is None

    def _key(self, node: ast.AST, ctx: _Ctx) -> str | int | None:
        """A subscript key or dict key as a literal, when it is one (a name bound to one
        literal counts)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int):
            return -node.operand.value
        if isinstance(node, (ast.Name, ast.Attribute)):
            values = self._eval(node, ctx)
            if len(values) == 1:
                return literal_text(next(iter(values)))
        return None

    def _display(self, ref: str, elts: list[ast.expr], ctx: _Ctx) -> frozenset[Value]:
        values: list[frozenset[Value]] = []
        for elt in elts:
            if isinstance(elt, ast.Starred):
                # Positions after a starred element are not known.
                inner = self._eval(elt, ctx)
                return self._container(ref, values + [inner], None, exact=False)
            values.append(self._eval(elt, ctx))
        return self._container(ref, values, None)

    def _container(self, ref: str, values: list[frozenset[Value]], keys: list | None, exact: bool = True) -> frozenset[Value]:
        """Containers of the given per-position values: exact ones (positions and keys kept),
        one per combination of the positions' candidates while there are few combinations,
        else one holding the set of every candidate."""
        combinations = 1
        for options in values:
            combinations *= max(len(options), 1)
        if exact and combinations <= MAX_COMBINATIONS and all(values) and (keys is None or all(k is not None for k in keys)):
            rows: list[tuple[Value, ...]] = [()]
            for options in values:
                rows = [row + (v,) for row in rows for v in sorted(options, key=_order)]
            key_texts = tuple(str(k) for k in keys) if keys is not None else ()
            return frozenset(Value("container", ref=ref, detail="exact", elements=row, keys=key_texts) for row in rows)
        pairs: dict[Value, str] = {}
        for i, options in enumerate(values):
            key = keys[i] if keys is not None and i < len(keys) and keys[i] is not None else ""
            for v in sorted(options, key=_order):
                pairs.setdefault(v, str(key))
        elements = tuple(pairs)
        return frozenset({Value("container", ref=ref, elements=elements, keys=tuple(pairs.values()) if keys is not None else ())})

    # ---- names ---------------------------------------------------------------------------

    def _name(self, name: str, ctx: _Ctx, line: int = 0) -> frozenset[Value]:
        bound = ctx.bound(name)
        if bound is not None and not (line and ctx.fn is not None and name in ctx.fn.local_names and self._binds(ctx, name)):
            return bound
        if line:
            reaching = self._reaching(ctx, name, line)
            if reaching is not None:
                return reaching
        if ctx.cls is not None:
            values = self._class_body_name(ctx, name)
            if values:
                return values
        fn = ctx.fn
        facts = ctx.facts
        first = True
        while fn is not None:
            if name in fn.global_decls:
                break
            nested = facts.function(f"{fn.qualname}.{name}")
            if nested is not None:
                return frozenset({self._function_value(facts, nested)})
            nested_cls = facts.cls(f"{fn.qualname}.{name}")
            if nested_cls is not None:
                return frozenset({self._class_value(facts, nested_cls)})
            scope_ctx = ctx if first else _Ctx(facts, fn, (), ctx.depth)
            if any(p.name == name for p in fn.params):
                return self._parameter(scope_ctx, name)
            if name in fn.local_names:
                if self._binds(scope_ctx, name):
                    # Empty inside a cycle (``model = torch.compile(model)``): the outer
                    # query of the same name has the values.
                    return self._flow_values(scope_ctx, name)
                return frozenset({unknown("unbound")})
            first = False
            # A method does not see its class body's names: go to the enclosing function or module.
            fn = facts.function(fn.parent) if fn.parent else None
        return self._global(facts, name, ctx.depth)

    def _class_body_name(self, ctx: _Ctx, name: str) -> frozenset[Value]:
        cls = ctx.cls
        assert cls is not None
        facts = ctx.facts
        qual = cls.method(name)
        if qual is not None:
            fn = facts.function(qual)
            if fn is not None:
                return frozenset({self._function_value(facts, fn)})
        inner = facts.cls(f"{cls.qualname}.{name}")
        if inner is not None:
            return frozenset({self._class_value(facts, inner)})
        flows = self._targets(facts, cls).get(name)
        if flows:
            return self._union(self._flow(ctx, f) for f in flows)
        return EMPTY

    def _global(self, facts: ModuleFacts, name: str, depth: int) -> frozenset[Value]:
        """A module-level name of ``facts``: a def, a class, an assignment, an import."""
        key = ("global", facts.path, name, depth)
        return self._memoised(key, lambda: self._global_uncached(facts, name, depth))

    def _global_uncached(self, facts: ModuleFacts, name: str, depth: int) -> frozenset[Value]:
        out: set[Value] = set()
        fn = facts.function(name)
        if fn is not None:
            out.add(self._function_value(facts, fn))
        cls = facts.cls(name)
        if cls is not None:
            out.add(self._class_value(facts, cls))
        ctx = _Ctx(facts, None, (), depth)
        flows = self._targets(facts, None).get(name, ())
        for flow in flows:
            if not flow[1].startswith("elem"):
                out.update(self._flow(ctx, flow))
        out.update(self._added_elements(ctx, out, flows))
        out.update(self._registered(facts, name, out, depth))
        target = facts.import_target(name)
        if target is not None and not out:
            if target == self._qualified(facts, name):
                return frozenset({unknown("unbound", target)})
            out.update(self._dotted(target, facts.path, depth))
        if not out:
            starred = self._star_imported(facts, name, depth)
            if starred:
                return self._cap(starred)
            if name in BUILTINS:
                return frozenset({unknown("external", f"builtins.{name}")})
            return frozenset({unknown("unbound", self._qualified(facts, name))})
        return self._cap(out)

    def _star_imported(self, facts: ModuleFacts, name: str, depth: int) -> set[Value]:
        """What ``from m import *`` at the module's top level binds ``name`` to, where ``m`` is
        a project module that binds it (a def, a class, an assignment, an import) and exports
        it: listed in its ``__all__`` if it has one, else not starting with ``_``. The last
        such import wins, as at run time."""
        other = self._star_source(facts, name, depth)
        return set(self._global(other, name, depth + 1)) if other is not None else set()

    def _star_source(self, facts: ModuleFacts, name: str, depth: int) -> ModuleFacts | None:
        """The project module whose ``from m import *`` (at the top level of ``facts``) binds
        ``name``, the last one as at run time; None when none does."""
        key = (facts.path, name, depth)
        if key not in self._star_sources:
            self._star_sources[key] = self._star_source_uncached(facts, name, depth)
        return self._star_sources[key]

    def _star_source_uncached(self, facts: ModuleFacts, name: str, depth: int) -> ModuleFacts | None:
        tree = self.tree(facts.path)
        if tree is None or depth > self.max_caller_depth:
            return None
        for stmt in reversed(tree.body):
            if not (isinstance(stmt, ast.ImportFrom) and any(alias.name == "*" for alias in stmt.names)):
                continue
            module = resolve_relative(relative_base_for(facts.path, facts.module) if stmt.level else facts.module, facts.is_package, stmt.level or 0, stmt.module)
            path = self.index.module_path(module, facts.path) if module else None
            other = self.index.facts(path) if path is not None and path != facts.path else None
            if other is not None and self._exports(other, name, depth + 1):
                return other
        return None

    def _exports(self, facts: ModuleFacts, name: str, depth: int) -> bool:
        """Whether ``from <module> import *`` binds ``name``: the module binds it at its top
        level, itself or by a star import of its own (a package's ``__init__`` that re-exports
        its submodules with ``from .impl import *``), and exports it (``__all__``, where it has
        a literal one, else no ``_`` prefix)."""
        bound = facts.function(name) is not None or facts.cls(name) is not None or name in self._targets(facts, None) or facts.import_target(name) is not None
        if not bound and self._star_source(facts, name, depth) is None:
            return False
        tree = self.tree(facts.path)
        for stmt in tree.body if tree is not None else ():
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets):
                if isinstance(stmt.value, (ast.List, ast.Tuple)):
                    return any(isinstance(e, ast.Constant) and e.value == name for e in stmt.value.elts)
                return True  # an ``__all__`` built otherwise: it may hold the name
        return not name.startswith("_")

    def _registered(self, facts: ModuleFacts, name: str, values: set[Value], depth: int) -> set[Value]:
        """A module-level container that the module's functions fill (a registry:
        ``_models[name] = fn`` in the ``register_model`` decorator): the container with what
        each adds, evaluated in that function (a decorator's parameter holds every function it
        decorates). Replaces the container values in ``values`` (returned: the new ones)."""
        if not any(v.kind == "container" for v in values):
            return set()
        out: set[Value] = set()
        for fn in facts.functions:
            if name in fn.local_names and name not in fn.global_decls:
                continue
            adds = [flow for flow in self._targets(facts, fn).get(name, ()) if flow[1].startswith("elem")]
            if adds:
                found = self._added_elements(_Ctx(facts, fn, (), depth), values, adds)
                if found:
                    values = set(found) | {v for v in values if v.kind != "container"}
                    out = set(found)
        return out

    def _reaching(self, ctx: _Ctx, name: str, line: int) -> frozenset[Value] | None:
        """What ``name`` (or an attribute chain) holds at ``line`` of ``ctx``'s function (or
        module), from the assignments of that scope that reach the line in statement order;
        None when they do not decide it (the value comes from outside the scope, or a binding
        the walk does not follow): the caller then uses every binding of the scope."""
        if ctx.cls is not None or not self._binds(ctx, name):
            return None
        fn = ctx.fn
        key = (ctx.facts.path, fn.qualname if fn is not None else "", name, line)
        if key not in self._reaching_defs:
            body = self._body(ctx.facts, fn)
            found = _reaching(body, name, line) if body is not None else None
            self._reaching_defs[key] = None if found is None or ENTRY in found else tuple(found)
        defs = self._reaching_defs[key]
        if defs is None:
            return None

        def compute() -> frozenset[Value]:
            out: set[Value] = set()
            for item in defs:
                if isinstance(item, _ImportDef):
                    dotted = resolve_relative(relative_base_for(ctx.facts.path, ctx.facts.module) if item.level else ctx.facts.module, ctx.facts.is_package, item.level, item.module)
                    out.update(self._imported(ctx.facts, dotted, ctx.depth))
                    continue
                if isinstance(item, _LoopTarget):
                    for flow in self._targets(ctx.facts, fn).get(name, ()):
                        if (flow[2], flow[3]) == (item.line, item.column) and flow[1].startswith("iter") and not self._dead(ctx, flow[2]):
                            out.update(self._flow(ctx, flow))
                    continue
                if isinstance(item, _DefBinding):
                    qualname = f"{fn.qualname}.{name}" if fn is not None else name
                    found = next((f for f in ctx.facts.functions if f.qualname == qualname and f.line == item.line), None)
                    out.add(self._function_value(ctx.facts, found) if found is not None else unknown("dynamic", qualname))
                    continue
                expr, path = item if isinstance(item, tuple) else (item, ())
                if self._dead(ctx, getattr(expr, "lineno", 0)):
                    continue  # under an ``isinstance`` test the call's arguments fail
                at = getattr(expr, "lineno", 0)
                known = self._known(ctx, line, at)
                if self._contradicts(ctx, known, at):
                    continue  # ``if args.fp8: model = f(model)`` ... ``if args.fp8: exit()``
                values = self._eval(expr, replace(ctx, assumed=tuple(sorted(known.items())), assumed_from=min(at, line, ctx.assumed_from or line)) if known else ctx)
                for position in path:
                    values = self._union(self._elements(v, position, ctx.depth) for v in values)
                out.update(values)
            return self._cap(out)

        # In a loop an assignment can reach itself (``xs = xs + [x]``): a cycle like any other.
        return self._memoised(("reach", *key, ctx.env, ctx.depth, ctx.assumed, ctx.assumed_from), compute)

    def _imported(self, facts: ModuleFacts, dotted: str, depth: int) -> frozenset[Value]:
        """What an import binds its name to: the module or name ``dotted`` (absolute); nothing
        known where a module imports a name of its own."""
        if not dotted or dotted == self._qualified(facts, dotted.rsplit(".", 1)[-1]):
            return frozenset({unknown("unbound", dotted)})
        return self._dotted(dotted, facts.path, depth)

    def _body(self, facts: ModuleFacts, fn: FunctionFacts | None) -> list[ast.stmt] | None:
        """The statements of a function (of the module when ``fn`` is None), found once."""
        if fn is None:
            tree = self.tree(facts.path)
            return tree.body if tree is not None else None
        node = self._def(facts, fn)
        return node.body if node is not None else None

    def _def(self, facts: ModuleFacts, fn: FunctionFacts) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The ``def`` statement of a function (None for a lambda), found once."""
        key = (facts.path, fn.qualname)
        if key not in self._defs:
            tree = self.tree(facts.path)
            self._defs[key] = _def_of(tree, fn) if tree is not None else None
        return self._defs[key]

    def _returns_self(self, ref: FunctionRef) -> bool:
        """Whether a method declares that it returns its receiver's type (``-> Self``)."""
        facts = self.index.facts(ref.path)
        fn = facts.function(ref.qualname) if facts is not None else None
        node = self._def(facts, fn) if fn is not None else None
        annotation = node.returns if node is not None else None
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            text = annotation.value.strip()
        elif annotation is not None:
            text = dotted_name(annotation)
        else:
            return False
        return text.rsplit(".", 1)[-1] == "Self"

    def _targets(self, facts: ModuleFacts, owner: FunctionFacts | ClassFacts | None) -> dict[str, list[tuple]]:
        """The flows of a scope (a function, a class body, the module) by target, once."""
        key = (facts.path, type(owner).__name__, owner.qualname if owner is not None else "")
        known = self._by_target.get(key)
        if known is None:
            known = {}
            for flow in owner.flows if owner is not None else facts.flows:
                known.setdefault(flow[0], []).append(flow)
            self._by_target[key] = known
        return known

    def _binds(self, ctx: _Ctx, target: str) -> bool:
        """Whether the scope of ``ctx`` has a flow to ``target``."""
        return target in self._targets(ctx.facts, ctx.fn)

    def _flow_values(self, ctx: _Ctx, target: str) -> frozenset[Value]:
        """What the flows of ``ctx``'s scope bind ``target`` to (memoised per scope)."""
        fn = ctx.fn
        flows = self._targets(ctx.facts, fn).get(target, ())
        key = ("flow", ctx.facts.path, fn.qualname if fn is not None else "", ctx.env, target, ctx.depth, ctx.assumed, ctx.assumed_from)

        def compute() -> frozenset[Value]:
            live = [flow for flow in flows if not self._dead(ctx, flow[2])]
            out: set[Value] = set()
            for flow in live:
                if not flow[1].startswith("elem"):
                    out.update(self._flow(ctx, flow))
            out.update(self._added_elements(ctx, out, live))
            return self._cap(out)

        return self._memoised(key, compute)

    def _known(self, ctx: _Ctx, use: int, line: int) -> dict[str, bool]:
        """The tests known to hold at ``use`` (``_path_facts``) and at the later uses its value
        reaches (``ctx.assumed``), of names and chains no statement of the scope rebinds from
        ``line`` on (a binding before, outside any loop around it, holds throughout:
        ``args = parse_args()`` at the top)."""
        body = self._body(ctx.facts, ctx.fn) if use and line else None
        if body is None:
            return {}
        known = dict(ctx.assumed)
        known.update(self._facts_at(ctx, body, use))
        if not known:
            return known
        rebound = self._bindings(ctx, body)
        first = min(line, use, ctx.assumed_from or use)
        changing = {t for t, at, loops in rebound if at >= first or any(start <= first <= end for start, end in loops)}
        fn = ctx.fn
        # A function's own locals and parameters (not ``self.flag``, which a method call
        # between may change, nor a global another function may rebind).
        owned = (lambda root: root in fn.local_names or any(p.name == root for p in fn.params)) if fn is not None else (lambda root: True)
        return {
            atom: value for atom, value in known.items()
            if atom.split(".", 1)[0] not in ("self", "cls") and owned(atom.split(".", 1)[0])
            and not any(atom == t or atom.startswith(t + ".") or t.startswith(atom + ".") for t in changing)
        }

    def _facts_at(self, ctx: _Ctx, body: list[ast.stmt], line: int) -> dict[str, bool]:
        """``_path_facts`` of a line of ``ctx``'s scope, found once: every assignment reaching
        a use asks of the use's line, and of its own in every query it takes part in."""
        key = (ctx.facts.path, ctx.fn.qualname if ctx.fn is not None else "", line)
        found = self._path_facts.get(key)
        if found is None:
            found = self._path_facts[key] = _path_facts(body, line)
        return found

    def _contradicts(self, ctx: _Ctx, known: dict[str, bool], line: int) -> bool:
        """Whether the tests that lead to an assignment at ``line`` cannot hold with those
        ``known`` at its use: the assignment sits under ``if args.fp8 and ...:`` and the use
        after ``if args.fp8 or ...: exit(0)`` (or under ``if not args.fp8:``). The value it
        assigns never reaches the use."""
        if not known or not line:
            return False
        body = self._body(ctx.facts, ctx.fn)
        if body is None:
            return False
        return any(known.get(atom) is (not value) for atom, value in self._facts_at(ctx, body, line).items())

    def _dead(self, ctx: _Ctx, line: int) -> bool:
        """Whether ``line`` of ``ctx``'s function cannot run for the parameters the call being
        followed binds: it sits under ``if isinstance(param, C):`` and no value bound to the
        parameter is a ``C`` (or in the ``else`` when every one is)."""
        if not ctx.env or ctx.fn is None:
            return False
        key = (ctx.facts.path, ctx.fn.qualname, ctx.env)
        ranges = self._dead_ranges.get(key)
        if ranges is None:
            ranges = self._dead_ranges[key] = self._branches_not_taken(ctx)
        return any(start <= line <= end for start, end in ranges)

    def _branches_not_taken(self, ctx: _Ctx) -> list[tuple[int, int]]:
        fn = ctx.fn
        assert fn is not None
        body = self._body(ctx.facts, fn)
        if body is None:
            return []
        out: list[tuple[int, int]] = []
        stack: list[ast.AST] = list(body)
        while stack:
            stmt = stack.pop()
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(stmt, ast.If):
                taken = self._isinstance_test(stmt.test, ctx)
                if taken is None:
                    taken = self._literal_test(stmt.test, ctx)
                if taken is False and stmt.body:
                    out.append((stmt.body[0].lineno, stmt.body[-1].end_lineno or stmt.body[-1].lineno))
                elif taken is True and stmt.orelse:
                    out.append((stmt.orelse[0].lineno, stmt.orelse[-1].end_lineno or stmt.orelse[-1].lineno))
            stack.extend(child for child in ast.iter_child_nodes(stmt) if isinstance(child, ast.stmt))
        return out

    def _rebinds(self, ctx: _Ctx, name: str) -> bool:
        """Whether ``ctx``'s function binds ``name`` anywhere in its body (``kind =
        kind.lower()``): a test of it may not see what the call passed."""
        body = self._body(ctx.facts, ctx.fn)
        return body is None or any(text == name for text, _, _ in self._bindings(ctx, body))

    def _bindings(self, ctx: _Ctx, body: list[ast.stmt]) -> list[tuple[str, int, tuple[tuple[int, int], ...]]]:
        """``_rebound_texts`` of ``ctx``'s scope, found once."""
        key = (ctx.facts.path, ctx.fn.qualname if ctx.fn is not None else "")
        found = self._rebound.get(key)
        if found is None:
            found = self._rebound[key] = _rebound_texts(body)
        return found

    def _literal_test(self, test: ast.expr, ctx: _Ctx) -> bool | None:
        """True/False when ``param == "name"`` (``!=``, ``in (...)``, ``not in``, ``not ...``)
        against str or int literals is decided for every value the call binds to ``param``,
        each a str or int literal (``load_model(path, cfg, "warping_module")`` over an
        ``if model_type == ...: elif ...`` chain); None otherwise."""
        negate = False
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, negate = test.operand, not negate
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return None
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(right, ast.Name) and isinstance(op, (ast.Eq, ast.NotEq)):
            left, right = right, left
        if not isinstance(left, ast.Name):
            return None
        if isinstance(op, (ast.Eq, ast.NotEq)):
            options = [right]
        elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            options = list(right.elts)
        else:
            return None
        if not all(isinstance(o, ast.Constant) and type(o.value) in (str, int) for o in options):
            return None
        given = ctx.bound(left.id)
        if not given or self._rebinds(ctx, left.id):
            return None  # not a parameter the call binds, or one the body rebinds
        values = [literal_text(v) for v in given]
        if any(v is None for v in values):
            return None  # a value the flow does not know, or not a str or int literal
        wanted = {o.value for o in options}  # type: ignore[attr-defined]
        outcomes = {(v in wanted) != isinstance(op, (ast.NotEq, ast.NotIn)) for v in values}
        if len(outcomes) != 1:
            return None
        return outcomes.pop() != negate

    def _isinstance_test(self, test: ast.expr, ctx: _Ctx) -> bool | None:
        """True/False when ``isinstance(param, C)`` (or its ``not``) is decided for every value
        the call binds to ``param``; None when it is not such a test or not decided."""
        parts = _isinstance_parts(test)
        if parts is None:
            return None
        name, negate, class_expr = parts
        given = ctx.bound(name)
        if not given:
            return None
        # The known values decide: an argument the flow does not know is reported as such at
        # the site, and a branch only it could take adds candidates no known value reaches
        # (``convert_sync_batchnorm(model)`` makes a norm layer only from a norm layer). With
        # no known value at all, the ``isinstance`` branch adds none either (its ``else`` stays).
        bound = frozenset(v for v in given if v.kind != "unknown")
        if not bound:
            return None if negate else False
        if any(v.kind not in ("instance", "torch-instance", "container") for v in bound):
            return None
        members = self._test_classes(class_expr, _Ctx(ctx.facts, ctx.fn, (), ctx.depth))
        if members is None:
            return None
        if any(self._torch_subclass_undecided(v, c) for v in bound for c in members):
            return None
        matches = [any(self.is_instance(v, c) for c in members) for v in bound]
        if all(matches):
            return not negate
        if not any(matches):
            return negate
        return None

    def _test_classes(self, class_expr: ast.expr, ctx: _Ctx) -> list[Value] | None:
        """The classes an ``isinstance`` test names (one class or a tuple of them); None when
        any of them is not a class the flow knows."""
        classes = self._eval(class_expr, ctx)
        members = [c for v in classes for c in (v.elements if v.kind == "container" else (v,))]
        if not members or any(c.kind != "class" for c in members):
            return None
        return members

    def _torch_subclass_undecided(self, value: Value, cls: Value) -> bool:
        """Whether ``isinstance(value, cls)`` for a torch class ``cls`` cannot be told from the
        names alone: ``value``'s class derives from another concrete torch class, which may
        derive from ``cls`` (``nn.BatchNorm2d`` from ``_BatchNorm``)."""
        if not cls.is_torch() or cls.ref in GENERIC_TORCH:
            return False
        if value.kind in ("torch-instance", "container"):
            return value.ref != cls.ref and _may_derive(value.ref, cls.ref)
        found = self.class_of(value) if value.kind == "instance" else None
        if found is None:
            return False
        return any((base := f.resolve(b)).startswith("torch.") and base != cls.ref and _may_derive(base, cls.ref) for f, c in self.index.mro(*found) for b in c.bases)

    def is_instance(self, value: Value, cls: Value) -> bool:
        """Whether ``value`` is an instance of the class value ``cls`` (project classes by
        their bases, torch classes by name)."""
        if value.kind in ("torch-instance", "container"):
            return value.ref == cls.ref or (cls.ref in GENERIC_TORCH and value.ref.startswith("torch.nn."))
        found = self.class_of(value) if value.kind == "instance" else None
        if found is None:
            return False
        if any(self._qualified(f, c.qualname) == cls.ref for f, c in self.index.mro(*found)):
            return True
        # A torch base class among the project bases (``isinstance(model, nn.Module)``).
        return bool(cls.is_torch()) and any(f.resolve(b) == cls.ref for f, c in self.index.mro(*found) for b in c.bases)

    def _added_elements(self, ctx: _Ctx, values: set[Value], flows) -> set[Value]:
        """Containers of a target with the elements its scope adds (``append``, ``t[k] = v``,
        ``extend``; ``flows``: the target's flows): replaces the container values in
        ``values`` (returned: the new ones)."""
        added: list[tuple[str, Value]] = []
        for flow in flows:
            if not flow[1].startswith("elem"):
                continue
            if flow[1] == "elems":
                for v in self._flow_value_expr(ctx, flow):
                    added.extend(("", e) for e in self._elements(v, None, ctx.depth))
            else:
                key = flow[1].partition(":")[2]
                added.extend((key, v) for v in self._flow_value_expr(ctx, flow))
        if not added:
            return set()
        containers = [v for v in values if v.kind == "container"]
        receiver = ctx.fn.params[0].name + "." if ctx.fn is not None and ctx.fn.params and _is_method(ctx.fn) else None
        if not containers and any("." in f[0] and not (receiver and f[0].startswith(receiver)) for f in flows):
            # ``pipe.model.blocks[i] = b`` on an object the scope did not build: what else it
            # holds, and of what kind it is, is not known; no container is made of the writes.
            # (An attribute of the method's own object is built by the class's methods, whose
            # writes are joined: ``self.funcs.append(layer)`` beside ``self.funcs = []``.)
            return set()
        if not containers:
            keyed = any(":" in f[1] for f in flows if f[1].startswith("elem"))
            containers = [Value("container", ref="dict" if keyed else "list")]
        out = set()
        for container in containers:
            values.discard(container)
            pairs = dict(zip(container.elements, container.keys or ("",) * len(container.elements)))
            for key, v in added:
                pairs.setdefault(v, key)
            keyed = container.ref in ("dict", "torch.nn.ModuleDict") or any(pairs.values())
            out.add(Value("container", ref=container.ref, elements=tuple(pairs), keys=tuple(pairs.values()) if keyed else ()))
        return out

    def _flow_value_expr(self, ctx: _Ctx, flow: tuple) -> frozenset[Value]:
        node = self.expression_at(ctx.facts, flow[2:6])
        if node is None:
            return frozenset({unknown("dynamic")})
        return self._eval(node, ctx)

    def _flow(self, ctx: _Ctx, flow: tuple) -> frozenset[Value]:
        """The value one flow binds its target to."""
        how = flow[1]
        if how.startswith("import:"):
            return self._imported(ctx.facts, how[len("import:"):], ctx.depth)
        values = self._flow_value_expr(ctx, flow)
        if how == "=":
            return values
        if how == "with":
            return frozenset({unknown("external")})
        out = values
        for step in how.split("."):
            if step == "iter":
                out = self._union(self._iterate(v, ctx.depth) for v in out)
            elif step == "*":
                out = self._union(self._elements(v, None, ctx.depth) for v in out)
            elif step.isdigit():
                out = self._union(self._elements(v, int(step), ctx.depth) for v in out)
            elif step == "with":
                return frozenset({unknown("external")})
        return out

    def _iterate(self, value: Value, depth: int) -> frozenset[Value]:
        """What iterating over ``value`` yields (a dict yields its keys)."""
        if value.kind == "container" and value.ref in ("dict", "torch.nn.ModuleDict", "torch.nn.ParameterDict"):
            return frozenset(Value("literal", detail=f"str:{k!r}") if k else Value("literal", detail="str:") for k in value.keys) or frozenset({Value("literal", detail="str:")})
        return self._elements(value, None, depth)

    # ---- parameters ----------------------------------------------------------------------

    def _parameter(self, ctx: _Ctx, name: str) -> frozenset[Value]:
        fn = ctx.fn
        assert fn is not None
        bound = ctx.bound(name)
        if bound is not None:
            return bound
        key = ("param", ctx.facts.path, fn.qualname, name, ctx.depth)
        return self._memoised(key, lambda: self._parameter_uncached(ctx, name))

    def _parameter_uncached(self, ctx: _Ctx, name: str) -> frozenset[Value]:
        facts, fn = ctx.facts, ctx.fn
        assert fn is not None
        params = fn.params
        index = next(i for i, p in enumerate(params) if p.name == name)
        param = params[index]
        if param.kind == "vararg" and ctx.depth < self.max_caller_depth:
            found = self._caller_varargs(ctx, index)
            if found:
                return self._cap(found)
        if param.kind in ("vararg", "kwarg"):
            return frozenset({unknown("parameter", f"{self._qualified(facts, fn.qualname)}.*{name}")})
        if _is_method(fn) and index == 0 and "staticmethod" not in fn.decorators:
            cls = facts.cls(fn.class_name)
            if cls is not None:
                if "classmethod" in fn.decorators or fn.name in ("__new__", "__init_subclass__", "__class_getitem__"):
                    return frozenset({self._class_value(facts, cls)})
                return frozenset({self._instance(facts, cls, detail="self")})
        out: set[Value] = set()
        if param.annotation:
            out.update(self._annotation(ctx, param.annotation))
        if param.default and param.default != "None":
            parent = facts.function(fn.parent) if fn.parent else None
            out.update(self._eval_text(param.default, _Ctx(facts, parent, (), ctx.depth)))
        passed: set[Value] = set()
        if not any(_known(v) for v in out) and ctx.depth < self.max_caller_depth:
            passed = self._caller_arguments(ctx, index)
            out.update(passed)
        if not any(_known(v) for v in out) and ctx.depth < self.max_caller_depth:
            out.update(self._fixture(ctx, name))
        if not any(_known(v) for v in out) and ctx.depth < self.max_caller_depth:
            out.update(self._parametrized(ctx, name))
        known = {v for v in out if v.kind != "unknown"}
        if known:
            return self._cap(known)
        # Callers in the project pass only values the flow does not know: say why (another
        # library's model, an outer parameter nothing fills), not that nothing passes it.
        why = {v for v in passed if v.kind == "unknown" and v.detail in ("external", "parameter", "call", "unbound")}
        if why:
            return self._cap(why)
        return frozenset({unknown("parameter", f"{self._qualified(facts, fn.qualname)}.{name}")})

    def _fixture(self, ctx: _Ctx, name: str) -> frozenset[Value]:
        """What pytest passes a test's (or a fixture's) parameter: the value of the fixture of
        that name, a function decorated ``pytest.fixture`` in the test's class, its module or a
        ``conftest.py`` in its directory or one above (the nearest wins), as its ``return`` or
        ``yield`` gives it. Empty outside the tests or where no fixture has the name."""
        facts, fn = ctx.facts, ctx.fn
        assert fn is not None
        if not _test_module(facts.module) or fn.parent or not (fn.name.startswith("test") or _is_fixture(fn)):
            return EMPTY
        for path in self._fixture_files(facts.path):
            other = facts if path == facts.path else self.index.facts(path)
            if other is None:
                continue
            owners = [fn.class_name, ""] if path == facts.path and fn.class_name else [""]
            for owner in owners:
                fixture = other.function(f"{owner}.{name}" if owner else name)
                if fixture is not None and _is_fixture(fixture) and fixture is not fn:
                    return self._fixture_value(other, fixture, ctx.depth + 1)
        return EMPTY

    def _parametrized(self, ctx: _Ctx, name: str) -> frozenset[Value]:
        """What ``@pytest.mark.parametrize`` on a test (or on its class) passes its parameter:
        the value at the parameter's position in each of the argument values (``"cls,kw"``
        over ``[(A, {}), (B, {})]``, ``pytest.param(A, id="a")``), a literal list or a name the
        flow evaluates. Empty outside the tests, where no decorator names the parameter, or
        where ``indirect`` hands the values to a fixture."""
        facts, fn = ctx.facts, ctx.fn
        assert fn is not None
        if not _test_module(facts.module) or fn.parent:
            return EMPTY
        decorators = self._test_decorators(facts.path).get(fn.line, [])
        module = _Ctx(facts, None, (), ctx.depth + 1)
        out: set[Value] = set()
        for deco in decorators:
            if not isinstance(deco, ast.Call) or not facts.resolve(dotted_name(deco.func)).endswith("mark.parametrize"):
                continue
            if any(k.arg == "indirect" for k in deco.keywords):
                continue
            names_node = deco.args[0] if deco.args else _keyword(deco, "argnames")
            values_node = deco.args[1] if len(deco.args) > 1 else _keyword(deco, "argvalues")
            names = _parameter_names(names_node)
            if name not in names or values_node is None:
                continue
            position = names.index(name)
            if isinstance(values_node, (ast.List, ast.Tuple)):
                for item in values_node.elts:
                    item = _pytest_param(item, len(names))
                    if len(names) == 1:
                        out.update(self._eval(item, module))
                    elif isinstance(item, (ast.List, ast.Tuple)) and len(item.elts) == len(names):
                        out.update(self._eval(item.elts[position], module))
                    else:
                        out.update(self._union(self._elements(v, position, ctx.depth) for v in self._eval(item, module)))
            else:
                for table in self._eval(values_node, module):
                    for item in self._elements(table, None, ctx.depth):
                        out.update({item} if len(names) == 1 else self._elements(item, position, ctx.depth))
        return frozenset(out)

    def _fixture_files(self, path: str) -> list[str]:
        """The test file, then the ``conftest.py`` files of the project from its directory up."""
        out = [path]
        directory = os.path.dirname(path)
        while True:
            conftest = os.path.join(directory, "conftest.py")
            if conftest in self.index.module_names and conftest != path:  # one of the project's files
                out.append(conftest)
            parent = os.path.dirname(directory)
            if parent == directory:
                return out
            directory = parent

    def _fixture_value(self, facts: ModuleFacts, fixture: FunctionFacts, depth: int) -> frozenset[Value]:
        key = ("fixture", facts.path, fixture.qualname, depth)

        def compute() -> frozenset[Value]:
            ctx = _Ctx(facts, fixture, (), depth)
            out: set[Value] = set()
            for span in fixture.returns + fixture.yields:
                node = self.expression_at(facts, span)
                if isinstance(node, ast.Attribute) and node.attr == "param" and isinstance(node.value, ast.Name) and node.value.id == "request":
                    # ``@pytest.fixture(params=[A, B])`` returning ``request.param``: each of them.
                    params = self._fixture_params(facts, fixture, depth)
                    if params:
                        out.update(params)
                        continue
                out.update(self._eval(node, ctx) if node is not None else {unknown("dynamic")})
            return self._cap(out)

        return self._memoised(key, compute)

    def _test_decorators(self, path: str) -> dict[int, list[ast.expr]]:
        """Each function's ``def`` line -> its decorators and, for a method, its class's
        (``@pytest.mark.parametrize`` on a class applies to each test in it): one walk of the
        file."""
        found = self._decorators.get(path)
        if found is None:
            found = self._decorators[path] = {}
            tree = self.tree(path)
            for node in ast.walk(tree) if tree is not None else ():
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found.setdefault(node.lineno, []).extend(node.decorator_list)
                elif isinstance(node, ast.ClassDef) and node.decorator_list:
                    for item in node.body:
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                            found.setdefault(item.lineno, []).extend(node.decorator_list)
        return found

    def _fixture_params(self, facts: ModuleFacts, fixture: FunctionFacts, depth: int) -> set[Value]:
        """The values of a fixture's ``params=[...]`` (``pytest.param(A, id="a")`` gives A)."""
        module = _Ctx(facts, None, (), depth + 1)
        out: set[Value] = set()
        for deco in self._test_decorators(facts.path).get(fixture.line, []):
            params = _keyword(deco, "params") if isinstance(deco, ast.Call) and facts.resolve(dotted_name(deco.func)).endswith("fixture") else None
            if isinstance(params, (ast.List, ast.Tuple)):
                for item in params.elts:
                    out.update(self._eval(_pytest_param(item, 1), module))
            elif params is not None:
                out.update(self._union(self._elements(v, None, depth) for v in self._eval(params, module)))
        return out

    def _annotation(self, ctx: _Ctx, text: str) -> set[Value]:
        """Instances of the classes an annotation names (``Optional``/``|`` unions too);
        generic bases (``nn.Module``) say nothing. A sequence of a class (``Sequence[Layer]``,
        ``list[Layer]``) is a list of its instances; an abstract class (an ``@abstractmethod``
        ``forward``) stands for its concrete project subclasses, whose code runs."""
        try:
            node = ast.parse(text.strip("'\""), mode="eval").body
        except SyntaxError:
            return set()
        return self._annotated(ctx, node, 0)

    def _annotated(self, ctx: _Ctx, node: ast.expr, depth: int) -> set[Value]:
        names: list[ast.expr] = []
        sequences: list[ast.expr] = []
        stack = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, ast.BinOp) and isinstance(item.op, ast.BitOr):
                stack.extend((item.left, item.right))
            elif isinstance(item, ast.Subscript) and dotted_name(item.value).rsplit(".", 1)[-1] in ("Optional", "Union"):
                inner = item.slice
                stack.extend(inner.elts if isinstance(inner, ast.Tuple) else [inner])
            elif isinstance(item, ast.Subscript) and dotted_name(item.value).rsplit(".", 1)[-1] in SEQUENCE_ANNOTATIONS and depth < 2:
                inner = item.slice
                elements = inner.elts if isinstance(inner, ast.Tuple) else [inner]
                sequences.extend(e for e in elements if not (isinstance(e, ast.Constant) and e.value is Ellipsis))
            elif isinstance(item, (ast.Name, ast.Attribute)):
                names.append(item)
        out: set[Value] = set()
        for item in names:
            for value in self._eval(item, _Ctx(ctx.facts, None, (), ctx.depth)):
                if value.kind == "class" and value.path:
                    found = self.class_of(value)
                    if found is not None:
                        out |= self._concrete_instances(*found, tests=_test_module(ctx.facts.module))
                elif value.kind == "class" and value.is_torch() and value.ref not in GENERIC_TORCH:
                    out |= self._construct_torch(value.ref, None, ctx)
        if sequences:
            held: set[Value] = set()
            for element in sequences:
                held |= self._annotated(ctx, element, depth + 1)
            if held:
                out |= self._container("list", [frozenset(held)], None, exact=False)
        return out

    def _overrides(self, facts: ModuleFacts, cls: ClassFacts, attr: str, owner: Value) -> set[Value]:
        """The methods named ``attr`` that the project subclasses of ``cls`` define, bound to an
        instance of each (or its class, for a classmethod); unknown where none does. As for an
        annotation (``_concrete_instances``), a base outside the tests leaves the test modules'
        subclasses out, and past ``max_values`` subclasses the rest is unknown."""
        out: set[Value] = set()
        tests = _test_module(facts.module)
        subclasses = self.index.subclasses(facts, cls)
        if len(subclasses) > self.max_values:
            out.add(unknown("depth", f"{self._qualified(facts, cls.qualname)} subclasses"))
        for sub_facts, sub in subclasses[: self.max_values]:
            if not tests and _test_module(sub_facts.module):
                continue
            qual = dict(sub.methods).get(attr)
            fn = sub_facts.function(qual) if qual else None
            if fn is None or _is_abstract(fn):
                continue
            value = self._function_value(sub_facts, fn)
            if "staticmethod" in fn.decorators:
                out.add(Value("function", ref=value.ref, path=value.path))
                continue
            receiver = self._class_value(sub_facts, sub) if "classmethod" in fn.decorators else self._instance(sub_facts, sub, detail="self")
            out.add(Value("bound-method", ref=value.ref, path=value.path, elements=(value, receiver)))
        return out or {unknown("call", f"{owner.ref}.{attr}")}

    def _concrete_instances(self, facts: ModuleFacts, cls: ClassFacts, tests: bool = False) -> set[Value]:
        """An instance of the class, or, where its ``forward`` is abstract, one of each project
        subclass that defines its own: what an annotation naming it holds at run time. Outside
        the tests, the test modules' subclasses (their fixtures' models) are not among them: a
        test that hands one over is a caller the flow follows. Past ``max_values`` subclasses,
        the rest is unknown."""
        if not _abstract_forward(facts, cls):
            return {self._instance(facts, cls)}
        out: set[Value] = set()
        subclasses = self.index.subclasses(facts, cls)
        for sub_facts, sub in subclasses[: self.max_values]:
            if not tests and _test_module(sub_facts.module):
                continue
            if dict(sub.methods).get("forward") and not _abstract_forward(sub_facts, sub):
                out.add(self._instance(sub_facts, sub))
        if len(subclasses) > self.max_values:
            out.add(unknown("depth", f"{self._qualified(facts, cls.qualname)} subclasses"))
        return out or {self._instance(facts, cls)}

    def _caller_varargs(self, ctx: _Ctx, index: int) -> set[Value]:
        """The ``*args`` tuples the function's call sites pass: per call, the positional
        arguments past the named ones, in order (exact while no call spreads a ``*``)."""
        facts, fn = ctx.facts, ctx.fn
        assert fn is not None
        out: set[Value] = set()
        for caller_facts, scope, call, skipped in self._find_callers(FunctionRef(facts.path, fn.qualname), ctx.depth + 1):
            caller_ctx = _Ctx(caller_facts, scope, (), ctx.depth + 1)
            extra = call.args[max(index - skipped, 0) :]
            forwarded = self._forwarded_varargs(call, extra, caller_ctx)
            if forwarded is not None:
                out.update(forwarded)
                continue
            if any(isinstance(a, ast.Starred) for a in call.args):
                # Positions a spread hides: what the caller's own callers pass is not known here.
                out.add(unknown("parameter", f"{self._qualified(facts, fn.qualname)}.*{fn.params[index].name}"))
                continue
            out.update(self._container("tuple", [self._eval(a, caller_ctx) for a in extra], None))
        return out

    def _forwarded_varargs(self, call: ast.Call, extra: list[ast.expr], caller_ctx: _Ctx) -> set[Value] | None:
        """The ``*args`` tuples of a call that hands on its caller's own ``*args``
        (``self._prepare(*args)`` in ``def prepare(self, *args)``): the positions before the
        spread, then each tuple the caller's own call sites pass. None when the call spreads
        anything else, or the spread is not the last positional argument past the named ones."""
        starred = [i for i, a in enumerate(call.args) if isinstance(a, ast.Starred)]
        if len(starred) != 1 or not extra or extra[-1] is not call.args[starred[0]]:
            return None
        spread = extra[-1].value
        fn = caller_ctx.fn
        if not (isinstance(spread, ast.Name) and fn is not None and any(p.kind == "vararg" and p.name == spread.id for p in fn.params)):
            return None
        head = [self._eval(a, caller_ctx) for a in extra[:-1]]
        out: set[Value] = set()
        for value in self._eval(spread, caller_ctx):
            if value.kind == "container" and value.detail == "exact":
                out.update(self._container("tuple", head + [frozenset({e}) for e in value.elements], None))
            elif value.kind == "container":
                out.update(self._container("tuple", head + [frozenset(value.elements)], None, exact=False))
            else:
                out.add(value)
        return out

    def _caller_arguments(self, ctx: _Ctx, index: int) -> set[Value]:
        """The values passed for parameter ``index`` of ``ctx.fn`` at its call sites."""
        facts, fn = ctx.facts, ctx.fn
        assert fn is not None
        param = fn.params[index]
        out: set[Value] = set()
        for caller_facts, scope, call, skipped in self._find_callers(FunctionRef(facts.path, fn.qualname), ctx.depth + 1):
            caller_ctx = _Ctx(caller_facts, scope, (), ctx.depth + 1)
            arg = _argument(call, fn.params, index - skipped, param.name, skipped)
            if arg is None:
                out.update(self._forwarded_keyword(caller_facts, scope, call, param.name, ctx.depth + 1))
                continue
            if isinstance(arg, ast.Starred):
                out.add(unknown("dynamic"))
                continue
            out.update(self._narrowed_by_test(caller_ctx, call, arg, self._eval(arg, caller_ctx)))
        return out

    def _forwarded_keyword(self, facts: ModuleFacts, scope: FunctionFacts | None, call: ast.Call, name: str, depth: int) -> set[Value]:
        """What a call that spreads its function's own ``**kwargs`` (``super().__init__(**kwargs)``)
        passes as keyword ``name``: what the function's callers pass as that keyword, followed
        through their own such spreads. Empty where the call spreads nothing of the kind, or the
        function takes ``name`` itself (then it is no part of ``kwargs``)."""
        if scope is None or depth >= self.max_caller_depth:
            return set()
        kwarg = next((p.name for p in scope.params if p.kind == "kwarg"), None)
        if kwarg is None or any(p.name == name for p in scope.params):
            return set()
        if not any(k.arg is None and isinstance(k.value, ast.Name) and k.value.id == kwarg for k in call.keywords):
            return set()
        out: set[Value] = set()
        for caller_facts, caller_scope, outer, _ in self._find_callers(FunctionRef(facts.path, scope.qualname), depth + 1):
            value = _keyword(outer, name)
            if value is not None:
                out.update(self._eval(value, _Ctx(caller_facts, caller_scope, (), depth + 1)))
            else:
                out.update(self._forwarded_keyword(caller_facts, caller_scope, outer, name, depth + 1))
        return out

    def _narrowed_by_test(self, ctx: _Ctx, call: ast.Call, arg: ast.expr, values: frozenset[Value]) -> frozenset[Value]:
        """The values a call's argument ``name`` passes where the call is one branch of a
        conditional expression testing that name's class: ``f(obj) if not isinstance(obj, C)
        else obj`` passes no instance of ``C``, ``f(obj) if isinstance(obj, C) else g(obj)``
        only those. Values the flow does not know, and classes it cannot tell, are kept."""
        if not isinstance(arg, ast.Name):
            return values
        return self.narrowed_at(ctx.facts, ctx.fn, (call.lineno, call.col_offset), arg.id, values)

    def narrowed_at(self, facts: ModuleFacts, fn: FunctionFacts | None, where: tuple[int, int], name: str, values: frozenset[Value]) -> frozenset[Value]:
        """``_narrowed_by_test`` for the call that starts at ``where`` (line, ``ast`` column)
        and passes ``name``."""
        found = self._branch_tests(facts.path).get(where)
        if found is None:
            return values
        test, in_body = found
        parts = _isinstance_parts(test)
        if parts is None or parts[0] != name:
            return values
        _, negated, class_expr = parts
        wanted = in_body != negated
        members = self._test_classes(class_expr, _Ctx(facts, fn, (), 0))
        if members is None:
            return values
        kept = set()
        for value in values:
            if value.kind not in ("instance", "torch-instance") or any(self._torch_subclass_undecided(value, c) for c in members):
                kept.add(value)
            elif any(self.is_instance(value, c) for c in members) == wanted:
                kept.add(value)
        return frozenset(kept)

    def _branch_tests(self, path: str) -> dict[tuple[int, int], tuple[ast.expr, bool]]:
        """Each call of a file that is the body or the ``else`` of a conditional expression,
        by where it starts: the test, and whether the call is the body. Found once per file."""
        if path not in self._if_calls:
            table: dict[tuple[int, int], tuple[ast.expr, bool]] = {}
            tree = self.tree(path)
            for node in ast.walk(tree) if tree is not None else ():
                if isinstance(node, ast.IfExp):
                    for branch, in_body in ((node.body, True), (node.orelse, False)):
                        if isinstance(branch, ast.Call):
                            table[(branch.lineno, branch.col_offset)] = (node.test, in_body)
            self._if_calls[path] = table
        return self._if_calls[path]

    # ---- attributes ----------------------------------------------------------------------

    def _attribute(self, owner: Value, attr: str, depth: int) -> frozenset[Value]:
        key = ("attr", owner, attr, depth)
        return self._memoised(key, lambda: self._attribute_uncached(owner, attr, depth))

    def _attribute_uncached(self, owner: Value, attr: str, depth: int) -> frozenset[Value]:
        kind = owner.kind
        if kind == "module":
            return self._module_attribute(owner, attr, depth)
        if kind == "instance":
            return self._instance_attribute(owner, attr, depth)
        if kind == "class":
            if owner.path:
                return self._class_attribute(owner, attr, depth)
            return frozenset({self._torch(f"{owner.ref}.{attr}") if owner.is_torch() else unknown("external", f"{owner.ref}.{attr}")})
        if kind == "torch-instance":
            if attr == "module" and owner.elements:
                return frozenset(owner.elements)
            if attr in ("weight", "bias"):
                return frozenset({Value("tensor")})
            return frozenset({self._torch_method(owner, attr)})
        if kind in ("function", "method", "lambda") and attr in ("__wrapped__", "__func__"):
            return frozenset({owner})
        if kind == "bound-method" and attr == "__func__" and owner.elements:
            return frozenset({owner.elements[0]})
        if kind == "bound-method" and attr == "__self__" and len(owner.elements) > 1:
            return frozenset({owner.elements[1]})
        if kind == "container" and owner.ref in ("torch.nn.ModuleDict",) and attr in owner.keys:
            return frozenset(e for e, k in zip(owner.elements, owner.keys) if k == attr)
        if kind == "container" and (attr in CONTAINER_METHODS or (owner.ref.startswith("torch.nn.") and attr in RETURNS_SELF | MODULE_ITERATORS)):
            return frozenset({Value("bound-method", ref=f"{owner.ref}.{attr}", elements=(Value("torch-callable", ref=f"{owner.ref}.{attr}"), owner))})
        if kind == "torch-callable":
            # ``torch.ops.mylib.my_op``: a namespace of callables; a class of a torch module
            # the table does not list (``torch.nn.modules.batchnorm._BatchNorm``).
            return frozenset({self._torch(f"{owner.ref}.{attr}")})
        if kind == "partial" and attr == "func" and owner.elements:
            return frozenset({owner.elements[0]})
        if kind == "unknown":
            return frozenset({unknown(owner.detail or "dynamic", f"{owner.ref}.{attr}" if owner.ref else "")})
        return frozenset({unknown("dynamic")})

    def _torch_method(self, owner: Value, attr: str) -> Value:
        ref = f"{owner.ref}.{attr}"
        return Value("bound-method", ref=ref, elements=(Value("torch-callable", ref=ref), owner))

    def _module_attribute(self, owner: Value, attr: str, depth: int) -> frozenset[Value]:
        if owner.is_torch() or not owner.path:
            dotted = f"{owner.ref}.{attr}"
            if owner.is_torch():
                return frozenset({self._torch(dotted)})
            return frozenset({unknown("external", dotted)})
        facts = self.index.facts(owner.path)
        if facts is None:
            return frozenset({unknown("unbound", f"{owner.ref}.{attr}")})
        if attr == "__dict__":
            # ``models.__dict__[name](...)``: the module's functions and classes by name (a
            # registry without a register call); a key the flow does not know is any of them.
            named = [(fn.qualname, self._function_value(facts, fn)) for fn in facts.functions if "." not in fn.qualname]
            named += [(cls.qualname, self._class_value(facts, cls)) for cls in facts.classes if "." not in cls.qualname]
            named = named[: self.max_values]
            return self._container("dict", [frozenset({v}) for _, v in named], [k for k, _ in named], exact=False)
        values = self._global(facts, attr, depth)
        if all(v.kind == "unknown" and v.detail == "unbound" for v in values):
            sub = f"{owner.ref}.{attr}"
            path = self.index.module_path(sub, owner.path)
            if path is not None:
                return frozenset({self._module_value(sub, path)})
        return values

    def _class_attribute(self, owner: Value, attr: str, depth: int) -> frozenset[Value]:
        found = self.class_of(owner)
        if found is None:
            return frozenset({unknown("unbound", f"{owner.ref}.{attr}")})
        for facts, cls in self.index.mro(*found):
            qual = cls.method(attr)
            if qual is not None:
                fn = facts.function(qual)
                if fn is None:
                    continue
                value = self._function_value(facts, fn)
                if "classmethod" in fn.decorators:
                    return frozenset({Value("bound-method", ref=value.ref, path=value.path, elements=(value, owner))})
                return frozenset({Value("function", ref=value.ref, path=value.path) if "staticmethod" in fn.decorators else value})
            inner = facts.cls(f"{cls.qualname}.{attr}")
            if inner is not None:
                return frozenset({self._class_value(facts, inner)})
            flows = self._targets(facts, cls).get(attr)
            if flows:
                ctx = _Ctx(facts, None, (), depth, cls)
                return self._union(self._flow(ctx, f) for f in flows)
        torch_base = self.torch_base(*found)
        if torch_base:
            return frozenset({self._torch(f"{torch_base}.{attr}")})
        return frozenset({unknown("unbound", f"{owner.ref}.{attr}")})

    def torch_base(self, facts: ModuleFacts, cls: ClassFacts) -> str:
        """The first torch base class among the class's bases (``torch.nn.Module``), else ""."""
        for f, c in self.index.mro(facts, cls):
            for base in c.bases:
                full = f.resolve(base)
                if full == "torch" or full.startswith("torch."):
                    return full
        return ""

    def _instance_attribute(self, owner: Value, attr: str, depth: int) -> frozenset[Value]:
        found = self.class_of(owner)
        if found is None:
            return frozenset({unknown("unbound", f"{owner.ref}.{attr}")})
        out: set[Value] = set()
        target = f"self.{attr}"
        mro = self.index.mro(*found)
        setters = self._keyword_setters(mro)
        for facts, cls in mro:
            for _, qual in cls.methods:
                fn = facts.function(qual)
                if fn is None:
                    continue
                if target in self._targets(facts, fn):
                    ctx = _Ctx(facts, fn, (("self", frozenset({owner})),), depth)
                    out.update(self._flow_values(ctx, target))
                for setter in setters:
                    if f"self.{setter}" in fn.calls:
                        out.update(self._set_by_keyword(facts, fn, setter, attr, owner, depth))
        # The class level: a method (bound to the instance), a property, a class attribute.
        for facts, cls in mro:
            qual = cls.method(attr)
            if qual is not None:
                fn = facts.function(qual)
                if fn is None:
                    continue
                value = self._function_value(facts, fn)
                if any(d.rsplit(".", 1)[-1] in ("property", "cached_property") for d in fn.decorators):
                    if depth < self.max_depth:
                        out.update(self._returns(FunctionRef(facts.path, qual), (("self", frozenset({owner})),), depth + 1))
                    else:
                        out.add(unknown("depth"))
                elif "staticmethod" in fn.decorators:
                    out.add(Value("function", ref=value.ref, path=value.path))
                elif owner.detail == "self" and _is_abstract(fn):
                    # ``self.build()`` in a base whose ``build`` is abstract: ``self`` is an
                    # instance of a subclass, and the subclass's own ``build`` runs.
                    out.update(self._overrides(facts, cls, attr, owner))
                else:
                    receiver = self._class_value(*found) if "classmethod" in fn.decorators else owner
                    out.add(Value("bound-method", ref=value.ref, path=value.path, elements=(value, receiver)))
                break
            inner = facts.cls(f"{cls.qualname}.{attr}")
            if inner is not None:
                out.add(self._class_value(facts, inner))
                break
            flows = self._targets(facts, cls).get(attr)
            if flows:
                ctx = _Ctx(facts, None, (), depth, cls)
                for flow in flows:
                    for value in self._flow(ctx, flow):
                        if value.kind == "function" and value.path:
                            # A function stored in the class body is a method of the instance.
                            value = Value("bound-method", ref=value.ref, path=value.path, elements=(value, owner))
                        out.add(value)
                break
        if owner.detail == "self" and all(_placeholder(v) for v in out) and not (not out and attr in NN_MODULE_ATTRIBUTES):
            # ``self`` in a method of a base class may be an instance of any subclass: a class
            # attribute the subclasses set (``model_class = Net``) is what it holds there.
            # Mixins too: the attribute may come from another base of the subclass.
            for facts, cls in self.index.subclasses(*found)[: self.max_values]:
                for value in self._attribute(self._instance(facts, cls), attr, depth):
                    if value.kind != "unknown":
                        out.add(value)
        if not out:
            torch_base = self.torch_base(*found)
            if torch_base:
                out.add(self._torch_method(owner, attr) if attr not in ("weight", "bias") else Value("tensor"))
            elif attr in MOVES_SELF and self._external_base(*found):
                # ``.to(device)`` of a model whose base is another library's module class
                # (diffusers' ``ModelMixin``): ``nn.Module``'s, which returns the model.
                out.add(self._torch_method(owner, attr))
            else:
                out.add(unknown("unbound", f"{owner.ref}.{attr}"))
        return self._cap(out)

    def _keyword_setters(self, mro: list[tuple[ModuleFacts, ClassFacts]]) -> tuple[str, ...]:
        """The methods of a class that set an attribute per keyword argument they are given
        (``def register(self, **kw): for name, value in kw.items(): setattr(self, name, value)``)."""
        out: list[str] = []
        for facts, cls in mro:
            for _, qual in cls.methods:
                fn = facts.function(qual)
                if fn is None or "setattr" not in fn.calls or fn.name in out:
                    continue
                key = (facts.path, qual)
                if key not in self._setters:
                    self._setters[key] = self._sets_per_keyword(facts, fn)
                if self._setters[key]:
                    out.append(fn.name)
        return tuple(out)

    def _sets_per_keyword(self, facts: ModuleFacts, fn: FunctionFacts) -> bool:
        kwarg = next((p.name for p in fn.params if p.kind == "kwarg"), None)
        node = self._def(facts, fn)
        if kwarg is None or node is None or not fn.params or not _is_method(fn):
            return False
        receiver = fn.params[0].name
        for loop in ast.walk(node):
            if not (
                isinstance(loop, ast.For)
                and isinstance(loop.target, ast.Tuple)
                and len(loop.target.elts) == 2
                and all(isinstance(e, ast.Name) for e in loop.target.elts)
                and isinstance(loop.iter, ast.Call)
                and dotted_name(loop.iter.func) == f"{kwarg}.items"
            ):
                continue
            name, value = (e.id for e in loop.target.elts)
            for stmt in loop.body:
                for call in ast.walk(stmt):
                    if (
                        isinstance(call, ast.Call)
                        and dotted_name(call.func) == "setattr"
                        and len(call.args) == 3
                        and [dotted_name(a) for a in call.args] == [receiver, name, value]
                    ):
                        return True
        return False

    def _set_by_keyword(self, facts: ModuleFacts, fn: FunctionFacts, setter: str, attr: str, owner: Value, depth: int) -> frozenset[Value]:
        """What ``fn``'s calls ``self.<setter>(attr=value)`` set ``attr`` to."""
        node = self._def(facts, fn)
        if node is None or not fn.params:
            return EMPTY
        receiver = fn.params[0].name
        ctx = _Ctx(facts, fn, ((receiver, frozenset({owner})),), depth)
        out: set[Value] = set()
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and dotted_name(call.func) == f"{receiver}.{setter}" and not self._dead(ctx, call.lineno):
                for kw in call.keywords:
                    if kw.arg == attr:
                        out.update(self._eval(kw.value, ctx))
        return frozenset(out)

    # ---- elements ------------------------------------------------------------------------

    def _elements(self, container: Value, key: str | int | None, depth: int) -> frozenset[Value]:
        if container.kind == "torch-instance" and container.elements:
            return self._union(self._elements(e, key, depth) for e in container.elements)
        if container.kind != "container":
            if container.kind == "unknown":
                return frozenset({container})
            if container.kind == "tensor":
                return frozenset({container})
            if container.kind == "instance":
                # A project subclass of a torch container: the elements its __init__ adds.
                return frozenset({unknown("dynamic", f"{container.ref}[...]")})
            return frozenset({unknown("dynamic")})
        elements = container.elements
        if key is not None and container.detail == "exact":
            if container.keys:
                picked = [e for e, k in zip(elements, container.keys) if k == str(key)]
                if picked:
                    return frozenset(picked)
            elif isinstance(key, int) and -len(elements) <= key < len(elements):
                return frozenset({elements[key]})
        if key is not None and container.keys:
            picked = [e for e, k in zip(elements, container.keys) if k == str(key)]
            if picked:
                return frozenset(picked)
        if not elements:
            return frozenset({unknown("dynamic", f"{container.ref}[...]")})
        return frozenset(elements)

    # ---- calls ---------------------------------------------------------------------------

    def _call(self, node: ast.Call, ctx: _Ctx) -> frozenset[Value]:
        func = node.func
        # Builtins and standard helpers the value flow understands.
        if isinstance(func, ast.Name) and ctx.bound(func.id) is None and not self._shadowed(func.id, ctx):
            name = func.id
            if name == "getattr" and len(node.args) >= 2:
                attr = node.args[1]
                if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
                    out = self._union(self._attribute(v, attr.value, ctx.depth) for v in self._eval(node.args[0], ctx))
                    if len(node.args) > 2:
                        out = self._union((out - {unknown("unbound")}, self._eval(node.args[2], ctx)))
                    return out
                return frozenset({unknown("dynamic")})
            if name in ELEMENT_COPIES and node.args:
                inner = self._union(self._iterate(v, ctx.depth) for v in self._eval(node.args[0], ctx))
                return frozenset({Value("container", ref="list" if name != "tuple" else "tuple", elements=tuple(sorted(inner, key=_order)))})
            if name == "next" and node.args:
                return self._union(self._elements(v, None, ctx.depth) for v in self._eval(node.args[0], ctx))
            if name == "enumerate" and node.args:
                inner = self._union(self._iterate(v, ctx.depth) for v in self._eval(node.args[0], ctx))
                return frozenset({Value("container", ref="list", elements=tuple(Value("container", ref="tuple", detail="exact", elements=(Value("literal", detail="int:"), e)) for e in sorted(inner, key=_order)))})
            if name == "zip" and node.args:
                columns = [self._union(self._iterate(v, ctx.depth) for v in self._eval(a, ctx)) for a in node.args]
                rows = self._container("tuple", columns, None)
                return frozenset({Value("container", ref="list", elements=tuple(sorted(rows, key=_order)))})
            if name == "type" and len(node.args) == 1:
                out = set()
                for v in self._eval(node.args[0], ctx):
                    found = self.class_of(v)
                    out.add(self._class_value(*found) if found is not None and v.kind == "instance" else unknown("dynamic"))
                return frozenset(out)
            if name in ("super",):
                return frozenset({unknown("dynamic", "super()")})
        dotted = dotted_name(func)
        if dotted and ((dotted == "dict" and ctx.bound("dict") is None and not self._shadowed("dict", ctx)) or (ctx.facts.resolve(dotted) == "collections.OrderedDict" and ctx.bound(dotted.split(".")[0]) is None)):
            return self._dict_call(node, ctx)
        callees = self._eval(func, ctx)
        out: set[Value] = set()
        for callee in sorted(callees, key=_order):
            out.update(self._call_value(callee, node, ctx))
        if isinstance(func, ast.Attribute) and func.attr.startswith("from_") and out and all(v.kind == "unknown" for v in out):
            # ``Net.from_pretrained(...)`` on a project class that has no such method of its
            # own: a constructor classmethod of another library's base class (diffusers'
            # ``ModelMixin``, transformers' ``PreTrainedModel``) builds an instance of it.
            built = self._inherited_constructor(func.value, ctx)
            if built:
                return built
        return self._cap(out)

    def _inherited_constructor(self, receiver: ast.expr, ctx: _Ctx) -> frozenset[Value]:
        """Instances of the project classes ``receiver`` holds, where each has a base class
        of another library (whose ``from_*`` classmethods it inherits); empty otherwise."""
        out: set[Value] = set()
        for value in self._eval(receiver, ctx):
            found = self.class_of(value) if value.kind == "class" else None
            if found is None or not self._external_base(*found):
                return EMPTY
            out.add(self._instance(*found))
        return frozenset(out)

    def _external_base(self, facts: ModuleFacts, cls: ClassFacts) -> bool:
        """Whether a class of the project (or one of its project bases) derives from a class
        of another library than torch (torch's classes have no ``from_*`` constructors)."""
        for base_facts, base in self.index.mro(facts, cls):
            for text in base.bases:
                if "." in text and not text.startswith(("torch.", "typing.", "abc.", "enum.", "collections.")) and self.index.resolve_class(text, base_facts.path) is None:
                    return True
        return False

    def _dict_call(self, node: ast.Call, ctx: _Ctx) -> frozenset[Value]:
        """``dict(...)`` / ``collections.OrderedDict(...)`` of a display of pairs, a dict
        display or keywords: a keyed container (a registry ``OrderedDict([("sd", Pipe), ...])``),
        not another library's object."""
        keys: list = []
        values: list[frozenset[Value]] = []
        for arg in node.args[:1]:
            if isinstance(arg, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Tuple) and len(e.elts) == 2 for e in arg.elts):
                for pair in arg.elts:
                    keys.append(self._key(pair.elts[0], ctx))
                    values.append(self._eval(pair.elts[1], ctx))
            else:
                found = self._eval(arg, ctx)
                for value in found:
                    if value.kind == "container":
                        keys.extend(value.keys or ("",) * len(value.elements))
                        values.extend(frozenset({e}) for e in value.elements)
                    else:
                        values.append(frozenset({value}))
                        keys.append(None)
        for kw in node.keywords:
            if kw.arg is None:
                inner = self._union(self._elements(c, None, ctx.depth) for c in self._eval(kw.value, ctx))
                values.append(inner)
                keys.append(None)
            else:
                keys.append(kw.arg)
                values.append(self._eval(kw.value, ctx))
        return self._container("dict", values, keys)

    def _shadowed(self, name: str, ctx: _Ctx) -> bool:
        """Whether a builtin's name is bound by the code (a local, or a module global)."""
        fn = ctx.fn
        while fn is not None:
            if name in fn.local_names:
                return True
            fn = ctx.facts.function(fn.parent) if fn.parent else None
        return ctx.facts.binding(name) is not None or ctx.facts.function(name) is not None

    def _call_value(self, callee: Value, call: ast.Call | None, ctx: _Ctx) -> frozenset[Value]:
        kind = callee.kind
        if kind == "class":
            if callee.path:
                found = self.class_of(callee)
                return frozenset({self._instance(*found)}) if found is not None else frozenset({unknown("unbound", callee.ref)})
            if callee.is_torch():
                return self._construct_torch(callee.ref, call, ctx)
            return frozenset({unknown("external", callee.ref)})
        if kind == "torch-callable":
            return self._call_torch(callee.ref, call, ctx)
        if kind in ("function", "method", "lambda", "bound-method"):
            if kind == "bound-method" and callee.name in RETURNS_SELF and not callee.path and len(callee.elements) > 1:
                return frozenset({callee.elements[1]})
            if kind == "bound-method" and not callee.path and len(callee.elements) > 1:
                return self._torch_bound_call(callee, call, ctx)
            ref = self.function_ref(callee)
            if ref is None:
                return frozenset({unknown("call", callee.ref)})
            if ctx.depth >= self.max_depth:
                return frozenset({unknown("depth", callee.ref)})
            if kind == "bound-method" and len(callee.elements) > 1 and self._returns_self(ref):
                # ``-> Self``: the receiver (a method), or an instance of the receiving class
                # (``Pipe.from_pretrained(...)`` on a classmethod), whatever the body does.
                receiver = callee.elements[1]
                if receiver.kind != "class":
                    return frozenset({receiver})
                found = self.class_of(receiver)
                if found is not None:
                    return frozenset({self._instance(*found)})
            env = self._bind(ref, callee, call, ctx)
            returned = self._returns(ref, env, ctx.depth + 1)
            if kind == "bound-method" and callee.name.startswith("from_") and len(callee.elements) > 1 and callee.elements[1].kind == "class":
                if not any(_known(v) for v in returned):
                    # ``Net.from_pretrained(...)``: a classmethod constructor whose body the
                    # flow cannot follow (a checkpoint, a config) builds an instance of its class.
                    found = self.class_of(callee.elements[1])
                    if found is not None:
                        return frozenset({self._instance(*found)})
            return returned
        if kind in ("partial", "transform") and callee.elements:
            return self._call_value(callee.elements[0], None, ctx)
        if kind == "instance":
            found = self.class_of(callee)
            if found is not None:
                ref = self.index.class_method(found[0], found[1], "__call__")
                if ref is not None and ctx.depth < self.max_depth:
                    return self._returns(ref, (("self", frozenset({callee})),), ctx.depth + 1)
            return frozenset({unknown("call", callee.ref)})
        if kind == "unknown":
            if callee.ref in ("functools.partial", "partial") or callee.ref.endswith("functools.partial"):
                return self._partial(call, ctx)
            if callee.ref in FUNCTION_TRANSFORMS:
                return self._transform(callee.ref, call, ctx)
            if callee.ref in IDENTITY_CALLS and call is not None and call.args:
                return self._eval(call.args[0], ctx)
            if call is not None and call.args and _passes_through(callee.ref):
                # ``accelerator.prepare(model, opt)``: the library hands back (wrappers of) its
                # arguments, in order.
                if len(call.args) == 1:
                    return self._eval(call.args[0], ctx)
                return self._container("tuple", [self._eval(a, ctx) for a in call.args], None)
            return frozenset({unknown(callee.detail if callee.detail in ("external", "parameter", "depth") else "call", f"{callee.ref}()" if callee.ref else "")})
        return frozenset({unknown("call")})

    def _transform(self, ref: str, call: ast.Call | None, ctx: _Ctx) -> frozenset[Value]:
        """``torch.vmap(f, ...)``: a callable that runs ``f`` (Dynamo inlines it from the
        transform's own wrapper); the function argument is the first or ``func=``."""
        target = call.args[0] if call is not None and call.args else (_keyword(call, "func") if call is not None else None)
        if target is None:
            return frozenset({unknown("dynamic", f"{ref}()")})
        return frozenset(Value("transform", ref=v.ref, path=v.path, detail=ref, elements=(v,)) for v in self._eval(target, ctx))

    def _partial(self, call: ast.Call | None, ctx: _Ctx) -> frozenset[Value]:
        if call is None or not call.args:
            return frozenset({unknown("dynamic")})
        keywords = ", ".join(f"{kw.arg}={ast.unparse(kw.value)}" for kw in call.keywords if kw.arg)
        out = set()
        for target in self._eval(call.args[0], ctx):
            out.add(Value("partial", ref=target.ref, path=target.path, detail=keywords, elements=(target,)))
        return frozenset(out)

    def _construct_torch(self, ref: str, call: ast.Call | None, ctx: _Ctx) -> frozenset[Value]:
        last = ref.rsplit(".", 1)[-1]
        canonical = f"torch.nn.{last}" if ref.startswith("torch.nn.") and last in TORCH_CONTAINERS else ref
        if last in TORCH_CONTAINERS and ref.startswith("torch.nn"):
            if call is None or not call.args:
                return frozenset({Value("container", ref=canonical, detail="exact")})
            if last in ("Sequential",) and not (len(call.args) == 1 and isinstance(call.args[0], ast.Starred)):
                if len(call.args) == 1:
                    only = self._eval(call.args[0], ctx)
                    if any(v.kind == "container" and v.ref in ("dict", "collections.OrderedDict") for v in only):
                        return frozenset(Value("container", ref=canonical, detail=v.detail, elements=v.elements, keys=v.keys) for v in only if v.kind == "container")
                return self._display(canonical, list(call.args), ctx)
            inner = self._eval(call.args[0], ctx)
            out = set()
            for v in inner:
                if v.kind == "container":
                    out.add(Value("container", ref=canonical, detail=v.detail, elements=v.elements, keys=v.keys))
                else:
                    out.add(Value("container", ref=canonical, elements=(v,)))
            return frozenset(out)
        if last in TORCH_WRAPPERS and call is not None and call.args:
            wrapped = self._eval(call.args[0], ctx)
            return frozenset({Value("torch-instance", ref=ref, elements=tuple(sorted(wrapped, key=_order)))})
        return frozenset({Value("torch-instance", ref=ref)})

    def _call_torch(self, ref: str, call: ast.Call | None, ctx: _Ctx) -> frozenset[Value]:
        if ref in ("torch.compile", "torch.compiler.compile", "torch._dynamo.optimize"):
            if call is not None and call.args and ref != "torch._dynamo.optimize":
                return self._eval(call.args[0], ctx)
            model = _keyword(call, "model") if call is not None else None
            if model is not None:
                return self._eval(model, ctx)
            # ``torch.compile(**options)``: a decorator that compiles what it is applied to.
            return frozenset({Value("torch-callable", ref="torch.compile")})
        module, _, last = ref.rpartition(".")
        if ref in FUNCTION_TRANSFORMS:
            return self._transform(ref, call, ctx)
        if last in TORCH_RETURNS_MODULE and call is not None and call.args:
            # Applied to a module in place (or wrapping it): it returns that module.
            return self._eval(call.args[0], ctx)
        if module in TENSOR_MODULES or last in ("Parameter", "Buffer"):
            return frozenset({Value("tensor")})
        return frozenset({unknown("external", f"{ref}()")})

    def _torch_bound_call(self, callee: Value, call: ast.Call | None, ctx: _Ctx) -> frozenset[Value]:
        """A method of a torch object or container called: iterators over submodules and
        items, ``get``; anything else is unknown."""
        method = callee.name
        receiver = callee.elements[1]
        if receiver.kind == "container":
            if method in ("children", "modules", "values", "parameters"):
                return frozenset({Value("container", ref="list", elements=receiver.elements)})
            if method in ("named_children", "named_modules", "items"):
                rows = tuple(Value("container", ref="tuple", detail="exact", elements=(Value("literal", detail=f"str:{k!r}" if k else "str:"), e)) for e, k in zip(receiver.elements, receiver.keys or ("",) * len(receiver.elements)))
                return frozenset({Value("container", ref="list", elements=rows)})
            if method == "keys":
                return frozenset({Value("container", ref="list", elements=tuple(Value("literal", detail=f"str:{k!r}") for k in receiver.keys))})
            if method == "copy":
                return frozenset({receiver})
            if method in ("get", "__getitem__") and call is not None and call.args:
                key = self._key(call.args[0], ctx)
                out = self._elements(receiver, key, ctx.depth)
                if len(call.args) > 1:
                    out = self._union((out, self._eval(call.args[1], ctx)))
                return out
        if method in MODULE_ITERATORS and receiver.kind in ("instance", "torch-instance"):
            named = method.startswith("named_")
            parts = self._submodules(receiver, method.endswith("modules"), ctx.depth)
            if named:
                parts = frozenset(Value("container", ref="tuple", detail="exact", elements=(Value("literal", detail="str:"), p)) for p in parts)
            return frozenset({Value("container", ref="list", elements=tuple(sorted(parts, key=_order)))})
        return frozenset({unknown("external", f"{callee.ref}()")})

    def _submodules(self, owner: Value, recursive: bool, depth: int) -> frozenset[Value]:
        """The modules an instance holds as attributes (and, ``recursive``, theirs, and itself)."""
        out: set[Value] = {owner} if recursive else set()
        todo = [owner]
        seen = {owner}
        while todo and len(out) < self.max_values:
            current = todo.pop()
            found = self.class_of(current)
            if found is None:
                continue
            # Plainly an instance of its class (``self`` of a base class would look up every
            # subclass's attributes: its submodules are its own class's).
            current = Value(current.kind, ref=current.ref, path=current.path)
            for attr in self._self_attributes(*found):
                for value in self._attribute(current, attr, depth):
                    if value.kind == "container" and value.ref.startswith("torch.nn."):
                        # A ModuleList is a child module itself; its elements are its children.
                        members = [value] + (list(value.elements) if recursive else [])
                    elif value.kind in ("instance", "torch-instance"):
                        members = [value]
                    else:
                        continue
                    for member in members:
                        if member.kind in ("instance", "torch-instance", "container") and member not in seen:
                            seen.add(member)
                            out.add(member)
                            if recursive and member.kind != "container":
                                todo.append(member)
        return frozenset(out)

    def _self_attributes(self, facts: ModuleFacts, cls: ClassFacts) -> list[str]:
        names: dict[str, None] = {}
        for f, c in self.index.mro(facts, cls):
            for _, qual in c.methods:
                fn = f.function(qual)
                if fn is None:
                    continue
                for flow in fn.flows:
                    if flow[0].startswith("self.") and flow[0].count(".") == 1:
                        names.setdefault(flow[0][5:], None)
        return list(names)

    def _bind(self, ref: FunctionRef, callee: Value, call: ast.Call | None, ctx: _Ctx) -> tuple[tuple[str, frozenset[Value]], ...]:
        """The callee's parameters bound to the call's arguments (evaluated in ``ctx``)."""
        fn = self.index.function(ref)
        if fn is None:
            return ()
        params = [p for p in fn.params if p.kind in ("positional", "keyword")]
        env: dict[str, frozenset[Value]] = {}
        skip = 0
        if callee.kind == "bound-method" and len(callee.elements) > 1 and params and "staticmethod" not in fn.decorators:
            env[params[0].name] = frozenset({callee.elements[1]})
            skip = 1
        if call is None:
            return tuple(sorted(env.items()))
        positional = [p for p in params if p.kind == "positional"][skip:]
        for param, arg in zip(positional, call.args):
            if isinstance(arg, ast.Starred):
                break
            env[param.name] = self._eval(arg, ctx)
        for kw in call.keywords:
            if kw.arg and any(p.name == kw.arg for p in params):
                env[kw.arg] = self._eval(kw.value, ctx)
        return tuple(sorted(env.items(), key=lambda item: item[0]))

    def _returns(self, ref: FunctionRef, env: tuple, depth: int) -> frozenset[Value]:
        """What a project function returns, its parameters bound by ``env``."""
        key = ("returns", ref, env, depth)

        def compute() -> frozenset[Value]:
            facts = self.index.facts(ref.path)
            fn = facts.function(ref.qualname) if facts is not None else None
            if facts is None or fn is None:
                return frozenset({unknown("unbound", ref.qualname)})
            if not fn.returns:
                return frozenset({Value("literal", detail="none:None")})
            ctx = _Ctx(facts, fn, env, depth)
            out: set[Value] = set()
            for span in fn.returns:
                if self._dead(ctx, span[0]):
                    continue
                node = self.expression_at(facts, span)
                out.update(self._eval(node, ctx) if node is not None else {unknown("dynamic")})
            return self._cap(out)

        return self._memoised(key, compute)

    # ---- callers -------------------------------------------------------------------------

    def _find_callers(self, ref: FunctionRef, depth: int) -> list[tuple[ModuleFacts, FunctionFacts | None, ast.Call, int]]:
        key = (ref.path, ref.qualname)
        if key in self._callers:
            return self._callers[key]
        # A search that comes back to itself (evaluating a callee asks for this function's
        # callers again) finds nothing more there, and is cut like a memoised query.
        return self._guarded(("callers", ref.path, ref.qualname), lambda: self._search_callers(ref, depth), lambda found: self._callers.__setitem__(key, found), [])

    def _search_callers(self, ref: FunctionRef, depth: int) -> list[tuple[ModuleFacts, FunctionFacts | None, ast.Call, int]]:
        facts = self.index.facts(ref.path)
        fn = facts.function(ref.qualname) if facts is not None else None
        if facts is None or fn is None:
            return []
        target = self._function_value(facts, fn)
        name = fn.name
        offset = 0
        if _is_method(fn) and "staticmethod" not in fn.decorators:
            offset = 1
        cls = facts.cls(fn.class_name) if fn.class_name else None
        if fn.name == "__init__" and cls is not None:
            name = cls.name
            target = self._class_value(facts, cls)
        names = {name}
        parent = facts.function(fn.parent) if fn.parent else None
        if parent is not None and not parent.class_name:
            # A nested function its parent returns (a decorator factory's decorator) is
            # called where the parent's result is: ``@factory(...)``, ``factory(...)(fn)``.
            names.add(parent.name)
        found: list[tuple[ModuleFacts, FunctionFacts | None, ast.Call, int]] = []
        for path in self._caller_files(facts, cls, names):
            tree = self.tree(path)
            other = self.index.facts(path)
            if tree is None or other is None:
                continue
            for call in [c for n in sorted(names) for c in self._calls_named(path, tree, n)]:
                scope = _scope_at(other, call.lineno, call.col_offset)
                ctx = _Ctx(other, scope, (), depth)
                values = self._eval(call.func, ctx)
                skipped = -1
                for value in values:
                    if value.ref == target.ref and value.path == target.path and value.kind in ("class", "function", "lambda"):
                        skipped = offset if value.kind == "class" else 0
                    elif value.ref == target.ref and value.path == target.path and value.kind == "bound-method":
                        skipped = offset
                    elif value.ref == target.ref and value.path == target.path and value.kind == "method":
                        skipped = 0
                if skipped >= 0:
                    found.append((other, scope, call, skipped))
                    if len(found) >= self.max_callers:
                        break
            if len(found) >= self.max_callers:
                break
        if cls is not None and _is_method(fn) and len(found) < self.max_callers:
            found.extend(self._super_callers(facts, cls, fn, offset, depth)[: self.max_callers - len(found)])
        return found

    def _super_callers(self, facts: ModuleFacts, cls: ClassFacts, fn: FunctionFacts, offset: int, depth: int) -> list[tuple[ModuleFacts, FunctionFacts | None, ast.Call, int]]:
        """The calls ``super().<name>(...)`` in methods of the class's subclasses that run this
        method (``super().__init__(**kwargs)`` of a subclass's constructor): callers too."""
        own = self._function_value(facts, fn)
        found = []
        for sub_facts, sub in self.index.subclasses(facts, cls)[: self.max_values]:
            tree = self.tree(sub_facts.path)
            if tree is None:
                continue
            for call in self._calls_named(sub_facts.path, tree, fn.name):
                func = call.func
                if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Name) and func.value.func.id == "super"):
                    continue
                scope = _scope_at(sub_facts, call.lineno, call.col_offset)
                if scope is None or scope.class_name != sub.qualname:
                    continue
                values = self._eval(func, _Ctx(sub_facts, scope, (), depth))
                if any(v.kind == "bound-method" and v.ref == own.ref and v.path == own.path for v in values):
                    found.append((sub_facts, scope, call, offset))
        return found

    def _caller_files(self, facts: ModuleFacts, cls: ClassFacts | None, names: set[str]) -> list[str]:
        """The files a search for calls of a function of ``facts`` (named ``names``, a method
        of ``cls``) looks at: those that call one of the names and can reach the function by
        name: its own file, files that name its module or import one of the names (or the
        class), nearest directories first, at most ``max_caller_files``."""
        module_name = facts.module.rsplit(".", 1)[-1] if facts.module else ""
        words = set(names) | ({cls.name} if cls is not None else set())
        out = []
        for path in {p for n in names for p in self._mentioning(n)}:
            if path == facts.path:
                out.append(path)
                continue
            text = self.index.text(path) or ""
            if (module_name and mentions(text, module_name)) or any(self._imports_name(path, text, word) for word in words if word in text):
                out.append(path)
        here = os.path.dirname(facts.path)
        out.sort(key=lambda p: (p != facts.path, -len(os.path.commonpath([here, os.path.dirname(p)])), p))
        return out[: self.max_caller_files]

    def _mentioning(self, name: str) -> list[str]:
        """Project files whose text can call ``name`` or decorate with it (``name(``,
        ``.name(``, ``@name``)."""
        known = self._mentions.get(name)
        if known is None:
            known = []
            for path in self.index.paths:
                called = self._called.get(path)
                if called is None:
                    # A name it calls is in its text: the text is searched only for files whose
                    # names are not known yet (a search per name of every file's text was the cost).
                    text = self.index.text(path)
                    if text is None or name not in text:
                        continue
                    # The names a file calls or decorates with, once per file that has a name asked for.
                    called = self._called[path] = called_names(text) | frozenset(DECORATED_NAME.findall(text))
                if name in called:
                    known.append(path)
            self._mentions[name] = known
        return known

    def _imports_name(self, path: str, text: str, name: str) -> bool:
        """``_imports_name(text, name)`` for the text of ``path``: the import statements' text
        is cut out of the file once, and each name is looked for there only."""
        if not _WORD.fullmatch(name):
            return _imports_name(text, name)
        tails = self._import_tails.get(path)
        if tails is None or tails[0] is not text:
            tails = self._import_tails[path] = (text, _import_tails(text))
        return tails[1] is not None and re.search(rf"\b{re.escape(name)}\b", tails[1]) is not None

    def _calls_named(self, path: str, tree: ast.Module, name: str) -> list[ast.Call]:
        """The calls of ``name`` in a file (``_calls_by_name``), looked for only in the
        statements whose lines mention it."""
        key = (path, name)
        known = self._call_index.get(key)
        if known is None:
            text = self.index.text(path) or ""
            lines = {number for number, line in enumerate(text.split("\n"), 1) if name in line}
            known = self._call_index[key] = _calls_by_name(tree, lines).get(name, [])
        return known

    def tree(self, path: str) -> ast.Module | None:
        """The ``ast`` tree of a project file (None when it cannot be parsed), parsed once."""
        if path not in self._trees and not self.index.is_parsed(path):
            # Its facts are needed too: one parse gives both.
            self._trees[path] = self.index.facts_and_tree(path)[1]
            if self._trees[path] is not None:
                self.index.keep_tree(path, self.index.text(path), self._trees[path])
                return self._trees[path]
            del self._trees[path]
        if path not in self._trees:
            text = self.index.text(path)
            kept = self.index.kept_tree(path)
            if kept is not None:
                # The parse of the facts kept the tree of a file with compile sites, or
                # another analysis parsed the file.
                self._trees[path] = kept
                return kept
            try:
                self._trees[path] = on_deep_stack(parse_source, text, path) if text is not None else None
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._trees[path] = None
            self.index.keep_tree(path, text, self._trees[path])
        return self._trees[path]

    # ---- plumbing ------------------------------------------------------------------------

    def expression_at(self, facts: ModuleFacts, span: tuple[int, int, int, int]) -> ast.expr | None:
        """The expression at a span of the file (a flow's: line, byte column, end line, end
        byte column), parsed from its text with file positions; None when it does not parse."""
        key = (facts.path, *span)
        if key in self._snippets:
            return self._snippets[key]
        node = None
        lines = self._lines.get(facts.path)
        if lines is None:
            text = self.index.text(facts.path) or ""
            lines = self._lines[facts.path] = [line.encode("utf-8", "surrogatepass") for line in text.split("\n")]
        line, col, end_line, end_col = span
        if 1 <= line <= end_line <= len(lines):
            if line == end_line:
                chunk = lines[line - 1][col:end_col]
            else:
                chunk = b"\n".join([lines[line - 1][col:]] + lines[line : end_line - 1] + [lines[end_line - 1][:end_col]])
            try:
                node = ast.parse(b"(" + chunk + b"\n)", mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                node = None
            if node is not None:
                _shift(node, line, col)
        self._snippets[key] = node
        return node

    def _lambda_at(self, facts: ModuleFacts, node: ast.Lambda) -> FunctionFacts | None:
        for fn in facts.functions:
            if fn.is_lambda and fn.line == node.lineno and fn.qualname.endswith(f"<lambda:{node.lineno}:{node.col_offset}>"):
                return fn
        return None

    def _eval_text(self, text: str, ctx: _Ctx) -> frozenset[Value]:
        try:
            node = ast.parse(text.strip(), mode="eval").body
        except SyntaxError:
            return frozenset({unknown("dynamic")})
        return self._eval(node, _Ctx(ctx.facts, ctx.fn, ctx.env, ctx.depth, ctx.cls, positions=False))

    def _memoised(self, key: tuple, compute) -> frozenset[Value]:
        """``compute()`` once per key (``_guarded``)."""
        known = self._memo.get(key)
        if known is not None:
            return known
        return self._guarded(key, compute, lambda value: self._memo.__setitem__(key, value), EMPTY, SPENT)

    def _guarded(self, key: tuple, compute, keep, cut, spent=None):
        """``compute()`` with ``key`` on the stack of queries under way; ``keep(answer)`` where
        the answer is complete. A query that comes back to itself (``model =
        torch.compile(model)``) is cut with ``cut`` there; the answers computed inside the
        cycle are incomplete, so they are not kept: only the query the cycle started from
        is, and the answers do not depend on the order of the queries. An outermost query
        that has computed ``MAX_QUESTION_STEPS`` others gets ``spent`` (else ``cut``) for
        each one still to compute, and nothing under it is kept."""
        if not self._stack:
            self._steps, self._spent = 0, False
        elif key not in self._active and self._steps >= MAX_QUESTION_STEPS:
            self._spent = True  # every query in progress is incomplete from here on
            return cut if spent is None else spent
        if key in self._active:
            # The queries from that one up to here depend on the cut (marked on the way back).
            start = self._stack.index(key)
            if start < len(self._stack) - 1:
                top = self._stack[-1]
                self._tainted[top] = min(self._tainted.get(top, start), start)
            return cut
        self._steps += 1
        self._active.add(key)
        self._stack.append(key)
        try:
            value = compute()
        finally:
            self._active.discard(key)
            self._stack.pop()
        start = self._tainted.pop(key, None)
        if start is None:
            if not self._spent:
                keep(value)
        elif start < len(self._stack) - 1:
            # The enclosing query used this incomplete answer, and is inside the cycle too.
            parent = self._stack[-1]
            self._tainted[parent] = min(self._tainted.get(parent, start), start)
        return value

    def _union(self, parts) -> frozenset[Value]:
        out: set[Value] = set()
        for part in parts:
            out.update(part)
        return self._cap(out)

    def _cap(self, values: set[Value] | frozenset[Value]) -> frozenset[Value]:
        if len(values) <= self.max_values:
            return frozenset(values)
        kept = sorted(values, key=_order)[: self.max_values]
        return frozenset(kept + [unknown("depth")])


BUILTINS = frozenset(dir(__import__("builtins")))


def _order(value: Value) -> tuple:
    return (value.kind, value.ref, value.path, value.detail, len(value.elements))


# Methods of training libraries outside the project that return their arguments (wrapped for
# distribution or mixed precision, forwarding to the same modules): (package, method name).
PASS_THROUGH = frozenset(
    {
        ("accelerate", "prepare"), ("accelerate", "prepare_model"), ("lightning", "setup"),
        ("lightning", "setup_module"), ("lightning_fabric", "setup"), ("lightning_fabric", "setup_module"),
    }
)


def _passes_through(ref: str) -> bool:
    """Whether an external call (``accelerate.Accelerator().prepare``) is in ``PASS_THROUGH``."""
    package = ref.split(".", 1)[0]
    method = ref.rsplit(".", 1)[-1]
    return (package, method) in PASS_THROUGH


def _may_derive(torch_class: str, base: str) -> bool:
    """Whether torch class ``torch_class`` may derive from torch class ``base``, told by name
    (torch's classes are not read): a class derives from the base of its family, whose name
    it holds (``BatchNorm2d`` and ``SyncBatchNorm`` from ``_BatchNorm``, ``Conv2d`` from
    ``_ConvNd``, every ``...Norm...`` from ``_NormBase``); ``ModuleDict`` from none of those."""
    if torch_class in GENERIC_TORCH:
        return False
    stem = base.rsplit(".", 1)[-1].lstrip("_")
    for suffix in ("Nd", "Base"):
        if stem.endswith(suffix) and len(stem) > len(suffix):
            stem = stem[: -len(suffix)]
    return stem in torch_class.rsplit(".", 1)[-1]


SEQUENCE_ANNOTATIONS = frozenset({"Sequence", "MutableSequence", "List", "list", "Iterable", "Collection", "Tuple", "tuple"})


def _abstract_forward(facts: ModuleFacts, cls: ClassFacts) -> bool:
    """Whether the class's own ``forward`` is an ``@abstractmethod``."""
    qualname = dict(cls.methods).get("forward")
    fn = facts.function(qualname) if qualname else None
    return fn is not None and _is_abstract(fn)


def _test_module(module: str) -> bool:
    """Whether a dotted module name is a test module by pytest's conventions (``test_x``,
    ``x_test``, ``conftest``) or sits in a ``tests`` / ``test`` package."""
    parts = module.split(".")
    last = parts[-1]
    return last.startswith("test_") or last.endswith("_test") or last == "conftest" or any(p in ("tests", "test") for p in parts[:-1])


def _parameter_names(node: ast.expr | None) -> list[str]:
    """The names ``@pytest.mark.parametrize`` gives values to: ``"a,b"``, ``("a", "b")``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [part.strip() for part in node.value.split(",") if part.strip()]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e.value.strip() for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _pytest_param(node: ast.expr, count: int) -> ast.expr:
    """The values of a ``pytest.param(a, b, id=...)`` item (its one value for one name), or
    the item itself."""
    if isinstance(node, ast.Call) and dotted_name(node.func).rsplit(".", 1)[-1] == "param" and node.args and not any(isinstance(a, ast.Starred) for a in node.args):
        return node.args[0] if count == 1 else ast.Tuple(elts=list(node.args), ctx=ast.Load())
    return node


def _is_fixture(fn: FunctionFacts) -> bool:
    """Whether a function is a pytest fixture (``@pytest.fixture``, ``@pytest.fixture(...)``)."""
    return any(d == "fixture" or d.endswith(".fixture") for d in fn.decorators)


def _is_abstract(fn: FunctionFacts) -> bool:
    return any(d.rsplit(".", 1)[-1] == "abstractmethod" for d in fn.decorators)


def _is_method(fn: FunctionFacts) -> bool:
    """A function defined directly in a class body."""
    return bool(fn.class_name) and fn.qualname == f"{fn.class_name}.{fn.name}" and not fn.is_lambda


def _placeholder(value: Value) -> bool:
    """``None`` or an empty container: what a base class sets for its subclasses to fill."""
    if value.kind == "literal":
        return value.detail.startswith("none:")
    return value.kind == "container" and not value.elements


def _known(value: Value) -> bool:
    """A value that says something (not unknown, not ``None``)."""
    return value.kind != "unknown" and value.detail != "none:None"




def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _argument(call: ast.Call, params, position: int, name: str, skipped: int) -> ast.expr | None:
    """The argument expression a call passes for a parameter (by position or keyword)."""
    value = _keyword(call, name)
    if value is not None:
        return value
    positional = [p for p in params if p.kind == "positional"]
    if position < 0 or position + skipped >= len(positional) or positional[position + skipped].name != name:
        return None
    if position < len(call.args):
        arg = call.args[position]
        if any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
            return ast.Starred(value=arg)
        return arg
    return None


def _imports_name(text: str, name: str) -> bool:
    """Whether ``text`` imports ``name`` (``from m import a, name``, also parenthesised)."""
    return re.search(rf"\bimport\b[^\n]*\b{re.escape(name)}\b|\bimport\s*\([^)]*\b{re.escape(name)}\b", text) is not None


def called_names(text: str) -> frozenset[str]:
    """``frozenset(CALLED_NAME.findall(text))``: each word (a whole one) that ``(`` follows,
    spaces or tabs between. Searched for in the reversed text, from each ``(`` back to the
    word before it (the same words: a match's word is a whole one either way, and no match
    can hold another's start)."""
    return frozenset(word[::-1] for word in _CALLED_NAME_REVERSED.findall(text[::-1]))


_WORD = re.compile(r"\w+")
_WORD_CHARACTER = re.compile(r"\w")
# ``import`` first (what a search skips to fast), the rest looked ahead at: each occurrence
# is kept, and the word boundary before it is tested apart.
_IMPORT_LINE = re.compile(r"import\b(?=([^\n]*))")
_IMPORT_PARENTHESES = re.compile(r"import\s*\((?=([^)]*))")


def _import_tails(text: str) -> str | None:
    """The text ``_imports_name`` looks for a name in (None when there is none): the rest of
    the line after each ``import`` word, and what the parentheses after an ``import`` hold,
    joined by line breaks. A whole word (``\\w+``) occurs in this text as a word exactly
    when one of ``_imports_name``'s patterns matches in ``text``: each piece starts after a
    character that is not part of a word, ends before one (or at the end), and the joins
    are none."""
    pieces = []
    for pattern in (_IMPORT_LINE, _IMPORT_PARENTHESES):
        for match in pattern.finditer(text):
            start = match.start()
            if start == 0 or not _WORD_CHARACTER.match(text, start - 1):  # ``\\bimport``
                pieces.append(match.group(1))
    return "\n".join(pieces) if pieces else None


def _last_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _calls_by_name(tree: ast.Module, lines: set[int]) -> dict[str, list[ast.Call]]:
    """The calls of a tree by the last name of their callee: ``name(...)`` and
    ``x.name(...)`` under ``name``; ``name(...)(...)`` (a factory's result applied) under
    ``name`` too; decorator applications (``@name``, ``@x.name``, ``@name(...)``) as calls
    with the decorated object as their argument. Only statements that span one of ``lines``
    are looked into."""
    out: dict[str, list[ast.Call]] = {}
    for node in _nodes_on(tree, lines):
        if isinstance(node, ast.Call):
            func = node.func
            name = _last_name(func) or (_last_name(func.func) if isinstance(func, ast.Call) else "")
            if name:
                out.setdefault(name, []).append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for deco in node.decorator_list:
                name = _last_name(deco.func if isinstance(deco, ast.Call) else deco)
                if name:
                    applied = ast.Call(func=deco, args=[ast.Name(id=node.name, ctx=ast.Load())], keywords=[])
                    ast.copy_location(applied, deco)
                    ast.copy_location(applied.args[0], deco)
                    out.setdefault(name, []).append(applied)
    return out


def _nodes_on(tree: ast.Module, lines: set[int]):
    """The nodes of the statements of ``tree`` that span one of ``lines`` (a statement that
    spans none is skipped with everything in it)."""
    ordered = sorted(lines)
    stack: list[ast.AST] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt):
            start = min([d.lineno for d in getattr(node, "decorator_list", ())] + [node.lineno])
            end = node.end_lineno or node.lineno
            at = bisect.bisect_left(ordered, start)
            if at == len(ordered) or ordered[at] > end:
                continue
        yield node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _scope_at(facts: ModuleFacts, line: int, column: int) -> FunctionFacts | None:
    """The innermost function of ``facts`` whose body holds ``line`` (None: module level)."""
    best = None
    for fn in facts.functions:
        if fn.line < line <= fn.end_line:
            if best is None or fn.line >= best.line:
                best = fn
    return best


def _shift(node: ast.AST, line: int, col: int) -> None:
    """Positions of a parsed snippet moved back to the file's (the snippet starts with "(")."""
    for child in ast.walk(node):
        if hasattr(child, "lineno"):
            if child.lineno == 1:
                child.col_offset += col - 1
            if getattr(child, "end_lineno", None) == 1:
                child.end_col_offset += col - 1
            child.lineno += line - 1
            if getattr(child, "end_lineno", None) is not None:
                child.end_lineno += line - 1


# The value a name has on entry to its scope (a parameter, a global, another method's
# assignment): in a set of reaching definitions, it means the scope's own do not decide.
ENTRY: ast.expr = ast.Constant(value=None)


@dataclass(frozen=True)
class _ImportDef:
    """An import statement's binding of the name, as a reaching definition (``from m import
    f as g`` binds ``g`` to ``m.f``; ``import a.b`` binds ``a``); ``level`` for a relative one."""

    module: str
    level: int


@dataclass(frozen=True)
class _LoopTarget:
    """A ``for`` loop's binding of the name, by the span of its iterable (as flows record it):
    each iteration binds the name before the body runs, so a use in the body sees this
    binding or one made earlier in the same iteration, never an earlier loop's."""

    line: int
    column: int


@dataclass(frozen=True)
class _DefBinding:
    """An undecorated ``def`` of the name, by its line, as a reaching definition."""

    line: int


class _GiveUp(Exception):
    """A binding the reaching-definitions walk does not follow (tuple targets, loops over
    the name, ``with ... as`` the name, ``global``)."""




def _def_of(tree: ast.Module, scope: FunctionFacts) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The ``def`` statement of the function ``scope`` (None for a lambda)."""
    if scope.is_lambda:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == scope.line and node.name == scope.name:
            return node
    return None


def _path_facts(body: list[ast.stmt], line: int) -> dict[str, bool]:
    """The tests known at ``line`` of ``body``, as ``{name or attribute chain: truth}``: those
    of the ``if`` statements around it (their body: the test holds; their ``else``: it does
    not), and those an earlier ``if`` whose block always leaves rules out (``if a or b:
    return`` leaves ``a`` and ``b`` false after it)."""
    facts: dict[str, bool] = {}
    block: list[ast.stmt] | None = body
    while block:
        inner: list[ast.stmt] | None = None
        for stmt in block:
            if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                    return facts
                if isinstance(stmt, ast.If):
                    if stmt.body and stmt.body[0].lineno <= line <= (stmt.body[-1].end_lineno or stmt.body[-1].lineno):
                        facts.update(_atoms(stmt.test, True))
                        inner = stmt.body
                    elif stmt.orelse and stmt.orelse[0].lineno <= line:
                        facts.update(_atoms(stmt.test, False))
                        inner = stmt.orelse
                else:
                    for child in _blocks(stmt):
                        if child and child[0].lineno <= line <= (child[-1].end_lineno or child[-1].lineno):
                            inner = child
                            break
                break
            if isinstance(stmt, ast.If):
                if _leaves(stmt.body) and not _leaves(stmt.orelse):
                    facts.update(_atoms(stmt.test, False))
                elif _leaves(stmt.orelse) and not _leaves(stmt.body):
                    facts.update(_atoms(stmt.test, True))
        block = inner
    return facts


def _atoms(test: ast.expr, truth: bool) -> dict[str, bool]:
    """What ``test`` being ``truth`` says of the names and attribute chains it tests: ``a and
    b`` true makes both true, ``a or b`` false both false, ``not a`` flips; nothing else."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _atoms(test.operand, not truth)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And if truth else ast.Or):
        out: dict[str, bool] = {}
        for value in test.values:
            for atom, held in _atoms(value, truth).items():
                if out.get(atom, held) is not held:
                    return {}
                out[atom] = held
        return out
    text = dotted_name(test) if isinstance(test, (ast.Name, ast.Attribute)) else ""
    return {text: truth} if text else {}


_EXITS = frozenset({"exit", "quit", "sys.exit", "os._exit"})


def _leaves(block: list[ast.stmt]) -> bool:
    """Whether ``block`` always leaves the code after it: it ends in ``return``, ``raise``,
    ``continue``, ``break``, ``exit()`` / ``sys.exit()``, or an ``if`` both of whose blocks do."""
    if not block:
        return False
    last = block[-1]
    if isinstance(last, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return True
    if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) and dotted_name(last.value.func) in _EXITS:
        return True
    return isinstance(last, ast.If) and _leaves(last.body) and _leaves(last.orelse)


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement blocks of a compound statement other than ``if``."""
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [stmt.body]
    if isinstance(stmt, ast.Try) or (hasattr(ast, "TryStar") and isinstance(stmt, ast.TryStar)):
        return [stmt.body] + [h.body for h in stmt.handlers] + [stmt.orelse, stmt.finalbody]  # type: ignore[attr-defined]
    if hasattr(ast, "Match") and isinstance(stmt, ast.Match):
        return [case.body for case in stmt.cases]
    return []


def _rebound_texts(body: list[ast.stmt]) -> list[tuple[str, int, tuple[tuple[int, int], ...]]]:
    """The names and attribute chains a scope binds (assignments, loop and ``with`` targets,
    ``del``, walrus, imports, ``global`` / ``nonlocal``), each with its line and the spans of
    the loops around it: a test of one may change between an assignment and a use."""
    out: list[tuple[str, int, tuple[tuple[int, int], ...]]] = []

    def visit(node: ast.AST, loops: tuple[tuple[int, int], ...]) -> None:
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
            targets = [node.target]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets = [node.optional_vars]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            out.extend((name, 0, ((0, 1 << 30),)) for name in node.names)  # changed from anywhere
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.extend(((alias.asname or alias.name).split(".")[0], line, loops) for alias in node.names)
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, (ast.Name, ast.Attribute)):
                    text = dotted_name(part)
                    if text:
                        out.append((text, line, loops))
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            loops = loops + ((node.lineno, node.end_lineno or node.lineno),)
        for child in ast.iter_child_nodes(node):
            visit(child, loops)

    for stmt in body:
        visit(stmt, ())
    return out


def _reaching(body: list[ast.stmt], name: str, line: int) -> set | None:
    """The value expressions of the assignments to ``name`` that reach ``line`` (``ENTRY``
    for the value it had on entry), or None when a binding is beyond this walk."""
    try:
        out, reached = _walk(body, name, line, {ENTRY})
    except _GiveUp:
        return None
    return out if reached else None


def _walk(body: list[ast.stmt], name: str, line: int, defs: set) -> tuple[set, bool]:
    """(definitions after ``body``, or at ``line`` when it is in ``body``; whether it is)."""
    for stmt in body:
        end = stmt.end_lineno or stmt.lineno
        if stmt.lineno <= line <= end:
            return _into(stmt, name, line, defs)
        defs = _transfer(stmt, name, defs)
    return defs, False


def _into(stmt: ast.stmt, name: str, line: int, defs: set) -> tuple[set, bool]:
    """The definitions reaching ``line`` inside the compound statement ``stmt``."""
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
        if isinstance(stmt, (ast.For, ast.AsyncFor)) and _binds(stmt.target, name):
            if not _binds_name(stmt.target, name):
                raise _GiveUp  # ``for block in ...: block.forward``: each item's own attribute
            target = {_LoopTarget(stmt.iter.lineno, stmt.iter.col_offset)}
            found, reached = _walk(stmt.body, name, line, target)
            if reached:
                return found, True
            if stmt.iter.lineno <= line <= (stmt.iter.end_lineno or stmt.iter.lineno):
                return defs | target | _transfer_all(stmt.body, name, target), True
            raise _GiveUp
        # A later iteration sees what the body assigned in the earlier ones.
        looped = defs | _transfer_all(stmt.body + stmt.orelse, name, defs)
        for block in (stmt.body, stmt.orelse):
            found, reached = _walk(block, name, line, looped)
            if reached:
                return found, True
        return defs, True
    if isinstance(stmt, ast.If):
        for block in (stmt.body, stmt.orelse):
            found, reached = _walk(block, name, line, defs)
            if reached:
                return found, True
        return defs, True
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        if any(item.optional_vars is not None and _binds(item.optional_vars, name) for item in stmt.items):
            raise _GiveUp
        found, reached = _walk(stmt.body, name, line, defs)
        return (found, True) if reached else (defs, True)
    if isinstance(stmt, ast.Try) or (hasattr(ast, "TryStar") and isinstance(stmt, ast.TryStar)):
        blocks = [stmt.body] + [h.body for h in stmt.handlers] + [stmt.orelse, stmt.finalbody]
        anywhere = defs | _transfer_all([s for b in blocks for s in b], name, defs)
        for block in blocks:
            found, reached = _walk(block, name, line, anywhere)
            if reached:
                return found, True
        return defs, True
    # The site's own statement: its right-hand side sees what reached it.
    return defs, True


def _transfer(stmt: ast.stmt, name: str, defs: set) -> set:
    """The definitions after ``stmt``."""
    if isinstance(stmt, ast.Assign):
        if any(_target_text(t) == name for t in stmt.targets):
            return {stmt.value}
        for target in stmt.targets:
            position = _position_in(target, name)
            if position:
                return {(stmt.value, position)}
        if any(_is_prefix(_target_text(t), name) for t in stmt.targets):
            return {ENTRY}  # ``model = Net()`` before ``model.forward``: the new object's own
        if any(_binds(t, name) for t in stmt.targets):
            raise _GiveUp
        return defs
    if isinstance(stmt, ast.AnnAssign):
        if _target_text(stmt.target) == name:
            return {stmt.value} if stmt.value is not None else defs
        if _is_prefix(_target_text(stmt.target), name):
            return {ENTRY}
        return defs
    if isinstance(stmt, ast.AugAssign):
        if _target_text(stmt.target) == name:
            raise _GiveUp
        return defs
    if isinstance(stmt, ast.If):
        return _walk(stmt.body, name, 0, defs)[0] | _walk(stmt.orelse, name, 0, defs)[0]
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
        if isinstance(stmt, (ast.For, ast.AsyncFor)) and _binds(stmt.target, name):
            if stmt.orelse or not _binds_name(stmt.target, name):
                raise _GiveUp
            # After the loop: what it had before (no iteration), or the last iteration's.
            target = {_LoopTarget(stmt.iter.lineno, stmt.iter.col_offset)}
            return defs | target | _transfer_all(stmt.body, name, target)
        return defs | _walk(stmt.body, name, 0, defs)[0] | _walk(stmt.orelse, name, 0, defs)[0]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        if any(item.optional_vars is not None and _binds(item.optional_vars, name) for item in stmt.items):
            raise _GiveUp
        return _walk(stmt.body, name, 0, defs)[0]
    if isinstance(stmt, ast.Try) or (hasattr(ast, "TryStar") and isinstance(stmt, ast.TryStar)):
        return defs | _transfer_all(stmt.body + [s for h in stmt.handlers for s in h.body] + stmt.orelse + stmt.finalbody, name, defs)
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        if stmt.name == name:
            if isinstance(stmt, ast.ClassDef) or stmt.decorator_list:
                raise _GiveUp
            # ``def norm(x): ...`` then ``norm = wrap(norm)``: the call reads the function.
            return {_DefBinding(stmt.lineno)}
        return defs
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for alias in reversed(stmt.names):  # the last alias binding the name wins
            local = alias.asname or alias.name.split(".")[0]
            if name == local:
                if alias.name == "*":
                    raise _GiveUp
                if isinstance(stmt, ast.ImportFrom):
                    return {_ImportDef(f"{stmt.module}.{alias.name}" if stmt.module else alias.name, stmt.level or 0)}
                return {_ImportDef(alias.name if alias.asname else local, 0)}
            if name.startswith(local + "."):
                return {ENTRY}  # an attribute of the module the import binds
        if any(alias.name == "*" for alias in stmt.names):
            raise _GiveUp
        return defs
    if isinstance(stmt, (ast.Global, ast.Nonlocal, ast.Delete)) or (hasattr(ast, "Match") and isinstance(stmt, ast.Match)):
        if name.split(".")[0] in {a.asname or a.name.split(".")[0] for a in getattr(stmt, "names", ()) if not isinstance(a, str)} | set(n for n in getattr(stmt, "names", ()) if isinstance(n, str)):
            raise _GiveUp
        if hasattr(ast, "Match") and isinstance(stmt, ast.Match) and name in ast.unparse(stmt):
            raise _GiveUp
        if isinstance(stmt, ast.Delete) and any(_target_text(t) == name for t in stmt.targets):
            raise _GiveUp
        return defs
    if any(isinstance(node, ast.NamedExpr) and _binds(node.target, name) for node in ast.walk(stmt)):
        raise _GiveUp
    return defs


def _transfer_all(body: list[ast.stmt], name: str, defs: set) -> set:
    """Every assignment to ``name`` in ``body`` (whatever order they run in)."""
    out: set = set()
    for stmt in body:
        out |= _transfer(stmt, name, set()) - {ENTRY}
    return out


def _target_text(node: ast.AST) -> str:
    return dotted_name(node) if isinstance(node, (ast.Name, ast.Attribute)) else ""


def _position_in(target: ast.AST, name: str) -> tuple[int, ...]:
    """Where a tuple target binds ``name`` (``a, (b, model) = ...`` -> (1, 1)); () when it
    does not, or binds it through a starred element."""
    if not isinstance(target, (ast.Tuple, ast.List)):
        return ()
    for i, elt in enumerate(target.elts):
        if isinstance(elt, ast.Starred):
            if _binds(elt, name):
                return ()
            continue
        if _target_text(elt) == name:
            return (i,)
        inner = _position_in(elt, name)
        if inner:
            return (i, *inner)
    return ()


def _is_prefix(text: str, name: str) -> bool:
    """``model`` for ``model.forward``: rebinding it replaces the object the chain reads."""
    return bool(text) and name.startswith(text + ".")


def _binds(target: ast.AST, name: str) -> bool:
    """Whether an assignment target binds ``name`` (also inside tuples and stars)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_binds(t, name) for t in target.elts)
    if isinstance(target, ast.Starred):
        return _binds(target.value, name)
    text = _target_text(target)
    return text == name or (bool(text) and name.startswith(text + "."))


def _binds_name(target: ast.AST, name: str) -> bool:
    """Whether an assignment target binds ``name`` itself (not an object a chain of it reads)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_binds_name(t, name) for t in target.elts)
    if isinstance(target, ast.Starred):
        return _binds_name(target.value, name)
    return _target_text(target) == name


def _isinstance_parts(test: ast.expr) -> tuple[str, bool, ast.expr] | None:
    """``isinstance(name, C)`` or ``not isinstance(name, C)``: the name, whether the test is
    negated, and the class expression; None for any other test."""
    negated = False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        negated, test = True, test.operand
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" and len(test.args) == 2 and isinstance(test.args[0], ast.Name)):
        return None
    return test.args[0].id, negated, test.args[1]
