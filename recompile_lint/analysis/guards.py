"""Guards: what Dynamo 2.13 checks before it reuses a compiled region's graph.

Dynamo installs a guard on every Python value the trace depends on, and compiles another graph
when a guarded value differs on a later call. This module predicts those guards. For each
compiled region it walks the code Dynamo traces (the entry, and what Dynamo inlines from it:
project functions, ``self.`` methods, submodules' ``forward``, properties, module containers
unrolled in loops) with an environment of symbolic values, and records a guard wherever a
Python value is used: a global scalar (``G['step']``, ``G['__import_pkg_dot_mod'].STEP`` when an
inlined function of another module reads its own global, ``G['cfg'].N`` through an imported
object or module), an attribute of the module or of what it holds (``L['self'].step``,
``L['self']._modules['blocks']._modules['0'].k``, ``L['self'].trainer.current_epoch``), an argument
(``L['n']``, ``L['cfg'].window``, ``len(L['xs'])``), a callable argument's code
(``L['fn'].__code__``), the
environment (``G['os'].environ._data[b'N']``).

Sources are spelled as Dynamo's guards spell them (``L['self'].step``, ``G['step']``): the
recompile messages of torch 2.13 print locals by their bare name (``self.step == 0``), so the
verifier and ``explain`` compare them with ``L[...]`` stripped.

Each guard carries where its value lives (a ``Storage``): ``variation`` looks there for the
writes and call sites that change it. No guard is a finding on its own: a value set once
before the first call compiles once.
"""

from __future__ import annotations

import ast
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Iterator

from recompile_lint.analysis.facts import ClassFacts, FunctionFacts, ModuleFacts, char_column, dotted_name
from recompile_lint.analysis.index import FunctionRef, FunctionTrees, ProjectIndex
from recompile_lint.analysis.constants import NOT_CONSTANT, NOT_NONE, constant_truth, literal_constant, literal_of, unassigned
from recompile_lint.analysis.constructed import object_constants
from recompile_lint.analysis.regions import DISABLE_DECORATORS, CompiledRegion, compiling_test, ends_in_exit
from recompile_lint.models import Guard, Location

SCALAR_KINDS = frozenset({"int", "str", "float", "bool", "enum", "none", "bytes"})
CONTAINER_KINDS = frozenset({"list", "tuple", "dict", "set"})
# Bases that make a class an ``nn.Module`` (its int attributes are static to Dynamo).
MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "nn.Module", "Module"})
MODULE_CONTAINERS = frozenset({"ModuleList", "Sequential", "ModuleDict"})
# Calls whose arguments must be concrete Python values: an int flowing there stays a constant
# even where Dynamo would otherwise make it dynamic after one recompile (measured on torch 2.13,
# docs/guard-model.md: ``x.unfold(-1, n, 1)``, ``x.chunk(n)``, ``x.split(n)``,
# ``F.avg_pool1d(kernel_size=n)``, ``F.one_hot(num_classes=n)``, ``range(n)``, ``math.exp(n)``,
# indexing a Python list; while ``x * n``, slices, ``F.pad``, ``narrow``, ``repeat``,
# ``torch.arange``, ``torch.zeros``, ``roll``, ``topk``, ``interpolate(size=n)``, conv
# ``dilation`` and ``expand`` take a symbolic int).
SPECIALIZING_CALLS = frozenset(
    {
        "range", "math.exp", "math.log", "math.sqrt", "math.pow", "math.cos", "math.sin", "math.floor", "math.ceil",
        "math.log2", "math.log10", "math.tanh", "torch.split", "torch.chunk", "torch.tensor_split",
        "torch.nn.functional.avg_pool1d", "torch.nn.functional.avg_pool2d", "torch.nn.functional.avg_pool3d",
        "torch.nn.functional.max_pool1d", "torch.nn.functional.max_pool2d", "torch.nn.functional.max_pool3d",
        "torch.nn.functional.one_hot",
    }
)  # fmt: skip
SPECIALIZING_METHODS = frozenset({"unfold", "chunk", "split", "tensor_split"})
ENVIRON = "os.environ"
# torch's own modules Dynamo does not inline (its skip rules): only matters when torch's own
# tree is the project being linted.
OPAQUE_TORCH_MODULES = (
    "torch._dynamo.", "torch._inductor.", "torch.fx.", "torch._subclasses.", "torch._higher_order_ops.",
    "torch.compiler.", "torch._guards", "torch._logging.", "torch.utils._", "torch._C.", "torch._export.", "torch.export.",
)  # fmt: skip
# Calls that consume a whole container: Dynamo unrolls it, guarding its length.
UNROLLING_CALLS = frozenset(
    {"sum", "zip", "enumerate", "sorted", "reversed", "list", "tuple", "max", "min", "any", "all", "map", "torch.stack", "torch.cat", "torch.concat", "torch.concatenate", "torch.hstack", "torch.vstack", "torch.dstack"}
)
CONTAINER_METHODS = frozenset({"items", "keys", "values", "append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "setdefault"})
# Decorators that wrap a function in a context manager's ``decorate_context``: compiling the
# decorated bound method traces the wrapper, and ``self`` is reached as ``L['fn'].__self__``.
WRAPPING_DECORATORS = frozenset({"torch.no_grad", "torch.inference_mode", "torch.enable_grad", "torch.autocast", "torch.amp.autocast"})
# A tensor's metadata: guarded by the tensor's own guard (rank, sizes, dtype), not as a constant.
TENSOR_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device", "T", "mT", "H", "data", "grad", "requires_grad", "is_cuda", "layout", "names", "real", "imag"})


@dataclass(frozen=True)
class Storage:
    """Where a guarded value lives, so that writes to it can be found.

    ``kind``:
    * ``global``: module-level name ``name`` of the module in file ``path``;
    * ``member``: ``members`` (``(".scale",)``, ``("['k']",)``) of that global (a config object,
      a dict, a class, a namespace);
    * ``attribute``: attribute ``name`` of instances of class ``owner`` (qualified);
    * ``parameter``: argument ``name`` of the compiled entry ``owner`` (in ``path``), with
      ``members`` below it (``cfg.window``: ``(".window",)``);
    * ``closure``: cell ``name`` of function ``owner``;
    * ``environ``: the environment variable ``name``.
    ``length``: the guarded value is the container's length (or its keys), not an element.
    """

    kind: str
    path: str = ""
    name: str = ""
    members: tuple[str, ...] = ()
    owner: str = ""
    length: bool = False

    def describe(self) -> str:
        """``step``, ``CFG['scale']``, ``Model.step``, ``argument n``: for messages."""
        base = self.name
        if self.kind == "attribute" and self.owner == HOOKED:
            base = f"<hooked module>.{self.name}"
        elif self.kind == "attribute":
            base = f"{self.owner.rsplit('.', 1)[-1]}.{self.name}"
        elif self.kind == "parameter":
            base = f"argument `{self.name}{''.join(self.members)}`"
            return f"the length of {base}" if self.length else base
        elif self.kind == "environ":
            base = f"os.environ[{self.name!r}]"
        text = f"`{base}{''.join(self.members)}`"
        return f"the length of {text}" if self.length else text


@dataclass(frozen=True)
class PredictedGuard:
    """A guard a region installs, where compiled code reads its value, and where it lives."""

    region: CompiledRegion
    guard: Guard
    storage: Storage
    value_kind: str
    read: Location
    function: FunctionRef  # the function that reads it (the entry or an inlined callee)
    depth: int
    use: Location | None = None  # the line Dynamo names (first use), where it differs
    # Why the value stays a constant even where Dynamo makes values dynamic after one
    # recompile: "global", "module attribute", "dynamic=False", "range() bound", ... ("" when
    # it may become dynamic).
    specialized: str = ""
    initial: str = ""  # the literal it starts from, when known
    module_attribute: bool = False  # read through an nn.Module instance
    choices: int | None = None  # how many values it can take at most (an enum's members)


@dataclass(frozen=True)
class Sym:
    """What the walk knows of a value: how Dynamo spells it and where it lives."""

    source: str | None = None
    kind: str = "unknown"  # a scalar kind, tensor, module, object, class, modref, function, method, modules, builtin, container kinds, unknown
    storage: Storage | None = None
    cls: tuple[str, str] | None = None  # (path, qualname) of the class of an instance / the class itself
    module_rooted: bool = False  # reached through an nn.Module instance
    function: FunctionRef | None = None
    receiver: "Sym | None" = None  # the instance a method is bound to
    modpath: str = ""  # a project module's file (kind modref)
    read: Location | None = None  # where a local copy read it (kept until its first use)
    element: tuple[str, str] | None = None  # element class of a module container
    initial: str = ""
    specialized: str = ""
    dotted: str = ""  # resolved dotted name (builtins, torch callables)
    choices: int | None = None
    # A literal (``rollout=True`` passed to an inlined function, a default ``None`` no call
    # overrides): a constant to Dynamo, which traces only the branch an ``if`` on it takes
    # (for a parameter the function never rebinds). ``NOT_CONSTANT`` for anything else.
    constant: object = NOT_CONSTANT


UNKNOWN = Sym()


@dataclass
class _Frame:
    ref: FunctionRef
    facts: ModuleFacts
    fn: FunctionFacts
    env: dict[str, Sym]
    depth: int
    globals_base: str  # "G" for the entry's module, else "G['__import_pkg_dot_mod']"
    returned: list[Sym] = field(default_factory=list)


def mangled_module(module: str) -> str:
    """How Dynamo names another module's globals in the root frame: ``G['__import_pkg_dot_mod']``."""
    return f"G['__import_{module.replace('.', '_dot_')}']"


def local_source(name: str) -> str:
    """A local of the compiled frame as Dynamo's guards spell it (its recompile messages print
    the bare name: ``L['self'].step`` is logged as ``self.step``)."""
    return f"L[{name!r}]"


def global_spelling(base: str, name: str) -> str:
    return f"G[{name!r}]" if base == "G" else f"{base}.{name}"


def is_module_class(index: ProjectIndex, facts: ModuleFacts, cls: ClassFacts) -> bool:
    """Whether ``cls`` derives from ``torch.nn.Module`` (through project classes too)."""
    for f, c in index.mro(facts, cls):
        for base in c.bases:
            if base in MODULE_BASES or base.startswith("torch.nn.") or base.rsplit(".", 1)[-1] in ("Module", "LightningModule"):
                return True
    return False


class GuardWalker:
    """Walks one region as Dynamo traces it and collects the guards it installs."""

    def __init__(self, index: ProjectIndex, trees: FunctionTrees, region: CompiledRegion, max_depth: int = 6):
        self.index = index
        self.trees = trees
        self.region = region
        self.max_depth = max_depth
        self.guards: dict[tuple, PredictedGuard] = {}
        self.entry_facts = index.facts(region.entry.path)
        self.stack: list[FunctionRef] = []
        self.dynamic_false = (region.site.option("dynamic") or "").strip() == "False"
        self.dynamic_true = (region.site.option("dynamic") or "").strip() == "True"
        # Attributes the trace has assigned, by source, with the depth of branches the write was
        # in: Dynamo reads them back from its side-effect table, so a later read installs no
        # guard on the attribute and uses the value assigned (``self.mask = mask`` then ``if
        # self.mask == ...``: measured on torch 2.13, the guard is on ``mask``). A write in a
        # branch holds for the rest of that branch only.
        self.written: dict[str, tuple[Sym, int]] = {}
        self.conditional = 0  # how many branches, loop bodies or handlers the walk is inside
        self._object_constants: dict[tuple[str, str, int], dict[str, object]] = {}

    def object_constants(self, frame: _Frame) -> dict[str, object]:
        """The attributes a function's tests read of objects whose every instance holds them at
        one constant (``constructed.object_constants``: the receiver, a module-level object),
        found once per function."""
        key = (frame.facts.path, frame.fn.qualname, frame.fn.line)
        found = self._object_constants.get(key)
        if found is None:
            node = self.trees.node(frame.facts.path, frame.fn)
            found = self._object_constants[key] = object_constants(self.index, frame.facts, frame.fn, node) if node is not None else {}
        return found

    # ---- entry ---------------------------------------------------------------------------

    def walk(self) -> list[PredictedGuard]:
        facts = self.entry_facts
        fn = self.index.function(self.region.entry)
        if facts is None or fn is None:
            return []
        env: dict[str, Sym] = {}
        owner = self.enclosing_class(facts, fn)
        params = list(fn.params)
        if owner is not None and params and params[0].kind == "positional" and "staticmethod" not in fn.decorators:
            first = params.pop(0)
            module = is_module_class(self.index, *owner)
            source = local_source(first.name)
            if any(d in WRAPPING_DECORATORS for d in fn.decorators) and self.region.site.form != "decorator":
                # ``torch.compile(obj.method)`` of a method under ``@torch.no_grad()``: Dynamo
                # traces the decorator's wrapper, whose ``fn`` is the bound method.
                source = "L['fn'].__self__"
            env[first.name] = Sym(source=source, kind="module" if module else "object", cls=(owner[0].path, owner[1].qualname), module_rooted=module)
        for index, param in enumerate(params):
            env[param.name] = self.parameter_sym(fn, param)
            if self.region.form == "transform" and param.kind in ("positional", "keyword"):
                # The compiled frame is the transform's ``wrapped(*args, **kwargs)``.
                source = f"L['args'][{index}]" if param.kind == "positional" else f"L['kwargs'][{param.name!r}]"
                env[param.name] = replace(env[param.name], source=source)
        self.call(self.region.entry, facts, fn, env, 0)
        if owner is not None and is_module_class(self.index, *owner):
            self.walk_hooks()
        return list(self.guards.values())

    def walk_hooks(self) -> None:
        """Forward hooks registered on modules run inside the compiled module's call (Dynamo
        inlines them): their reads of the hooked module are guarded. Which submodule a hook
        sits on is not known here, so those guards have no source. Only hooks registered by
        code under the import root of the compile site or the compiled class can sit on its
        modules (a script of another program in the same repository cannot)."""
        region = self.region
        roots = frozenset(self.index.sys_root.get(path, "") for path in (region.site_path, region.entry.path))
        for ref in forward_hooks(self.index, roots):
            facts = self.index.facts(ref.path)
            fn = self.index.function(ref)
            if facts is None or fn is None or not fn.params:
                continue
            env = {p.name: UNKNOWN for p in fn.params}
            env[fn.params[0].name] = Sym(source="", kind="hooked", module_rooted=True)
            self.call(ref, facts, fn, env, 1)

    def parameter_sym(self, fn: FunctionFacts, param) -> Sym:
        kind = {"int": "int", "float": "float", "bool": "bool", "str": "str"}.get(param.annotation, "")
        if not kind:
            annotation = param.annotation.replace("typing.", "")
            head = annotation.split("[", 1)[0]
            kind = {
                "list": "list", "List": "list", "tuple": "tuple", "Tuple": "tuple", "dict": "dict", "Dict": "dict",
                "Sequence": "list", "Mapping": "dict", "Callable": "callable", "torch.Tensor": "tensor", "Tensor": "tensor",
            }.get(head, "")  # fmt: skip
        if not kind and param.default_kind in SCALAR_KINDS:
            kind = param.default_kind
        if param.kind == "vararg":
            kind = "tuple"
        elif param.kind == "kwarg":
            kind = "dict"
        storage = Storage("parameter", path=self.region.entry.path, name=param.name, owner=self.region.entry.qualname)
        cls = None
        if not kind and param.annotation and self.entry_facts is not None:
            # An argument annotated with a project class: its attributes are that class's.
            annotation = param.annotation.strip("'\"").split("[", 1)[0]
            found = self.index.resolve_class(self.entry_facts.resolve(annotation), self.entry_facts.path)
            if found is not None and not found[1].is_enum:
                kind = "module" if is_module_class(self.index, *found) else "object"
                cls = (found[0].path, found[1].qualname)
        return Sym(source=local_source(param.name), kind=kind or "unknown", storage=storage, cls=cls, initial=param.default if param.default_kind in SCALAR_KINDS else "")

    def enclosing_class(self, facts: ModuleFacts, fn: FunctionFacts) -> tuple[ModuleFacts, ClassFacts] | None:
        if not fn.class_name:
            return None
        cls = facts.cls(fn.class_name)
        if cls is None:
            return None
        if self.region.model_class and fn is self.index.function(self.region.entry):
            found = self.index.resolve_class(self.region.model_class, facts.path)
            if found is not None:
                return found
        return facts, cls

    def _script(self, path: str) -> bool:
        """Whether a file runs as ``__main__`` (it has a ``__main__`` block): its globals are
        ``G['__import___main__']`` to a frame of another module."""
        text = self.index.text(path) or ""
        return "__name__" in text and "__main__" in text

    # ---- inlining ------------------------------------------------------------------------

    def call(self, ref: FunctionRef, facts: ModuleFacts, fn: FunctionFacts, env: dict[str, Sym], depth: int) -> Sym:
        """Walk ``fn`` with ``env`` bound to its parameters; the value it returns."""
        if ref in self.stack or depth > self.max_depth or any(d in DISABLE_DECORATORS for d in fn.decorators):
            return UNKNOWN
        if depth > 0 and facts.module.startswith(OPAQUE_TORCH_MODULES):
            return UNKNOWN  # Dynamo does not trace into its own machinery (when torch itself is linted)
        node = self.trees.node(facts.path, fn)
        if node is None:
            return UNKNOWN
        entry = self.entry_facts
        # The compiled frame's own module is ``G``; another's, and every module under a
        # ``torch.func`` transform (the compiled frame is the transform's wrapper in torch), by import.
        own = entry is not None and entry.path == facts.path
        base = "G" if own and self.region.form != "transform" else mangled_module("__main__" if own and self._script(facts.path) else facts.module)
        frame = _Frame(ref, facts, fn, env, depth, base)
        self.stack.append(ref)
        try:
            body = node.body if isinstance(node.body, list) else [ast.Return(value=node.body, lineno=node.lineno, col_offset=node.col_offset)]
            self.statements(frame, body)
        finally:
            self.stack.pop()
        returned = [s for s in frame.returned if s is not UNKNOWN]
        return returned[0] if len(returned) == 1 else UNKNOWN

    def inline(self, frame: _Frame, ref: FunctionRef, args: list[ast.expr], keywords: list[ast.keyword], receiver: Sym | None) -> Sym:
        facts = self.index.facts(ref.path)
        fn = self.index.function(ref)
        if facts is None or fn is None:
            self.uses(frame, args, keywords)
            return UNKNOWN
        env: dict[str, Sym] = {}
        params = list(fn.params)
        if receiver is not None and params and "staticmethod" not in fn.decorators:
            env[params.pop(0).name] = receiver
        positional = [p for p in params if p.kind == "positional"]
        values = [_not_none(a, self.expr(frame, a, passthrough=True)) if not isinstance(a, ast.Starred) else self.expr(frame, a.value) for a in args]
        for param, value in zip(positional, values):
            env[param.name] = value
        by_name = {p.name: p for p in params}
        for kw in keywords:
            value = _not_none(kw.value, self.expr(frame, kw.value, passthrough=True))
            if kw.arg and kw.arg in by_name:
                env[kw.arg] = value
        for param in params:
            if param.name not in env:
                if param.default_kind in SCALAR_KINDS and param.default:
                    constant = literal_constant(param.default) if not _spreads(args, keywords) else NOT_CONSTANT
                    env[param.name] = Sym(kind=param.default_kind, initial=param.default, constant=constant)
                else:
                    env[param.name] = UNKNOWN
        return self.call(ref, facts, fn, env, frame.depth + 1)

    # ---- statements ----------------------------------------------------------------------

    def statements(self, frame: _Frame, body: list[ast.stmt]) -> None:
        for stmt in body:
            if self.statement(frame, stmt):
                break  # an ``if`` traced on one side only, which returns or raises: nothing after it runs

    def statement(self, frame: _Frame, stmt: ast.stmt) -> bool | None:
        """Walk one statement; True where it is an ``if`` Dynamo traces on one side only and
        that side ends in a ``return`` or ``raise``."""
        if isinstance(stmt, ast.Assign):
            value = self.expr(frame, stmt.value, passthrough=True)
            for target in stmt.targets:
                self.bind(frame, target, value)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.bind(frame, stmt.target, self.expr(frame, stmt.value, passthrough=True))
        elif isinstance(stmt, ast.AugAssign):
            # ``self.step += 1`` reads the value to compute the new one.
            self.expr(frame, _load(stmt.target))
            self.expr(frame, stmt.value)
            if isinstance(stmt.target, ast.Name):
                frame.env[stmt.target.id] = UNKNOWN
        elif isinstance(stmt, ast.Return):
            if stmt.value is not None:
                frame.returned.append(self.expr(frame, stmt.value, passthrough=frame.depth > 0))
        elif isinstance(stmt, ast.Expr):
            self.expr(frame, stmt.value)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            element = self.iterate(frame, stmt.iter)
            with self.branch():
                self.bind(frame, stmt.target, element)
                self.statements(frame, stmt.body)
            with self.branch():
                self.statements(frame, stmt.orelse)
        elif isinstance(stmt, ast.While):
            self.test(frame, stmt.test)
            with self.branch():
                self.statements(frame, stmt.body)
            with self.branch():
                self.statements(frame, stmt.orelse)
        elif isinstance(stmt, ast.If):
            if _is_type_checking(stmt.test):
                self.statements(frame, stmt.orelse)
                return
            compiling = compiling_test(stmt.test, self.index, frame.facts)
            if compiling is not None:
                # Dynamo traces only the side it runs on: ``is_compiling()`` is True there.
                side = stmt.body if compiling else stmt.orelse
                self.statements(frame, side)
                return ends_in_exit(side)
            # Only parameters the call bound to a literal and the function never rebinds
            # (a local set in a loop may hold something else at the next iteration), and the
            # attributes every construction leaves at one constant (``constructed``) of the
            # receiver or of a module-level object.
            constants = {p.name: frame.env[p.name].constant for p in frame.fn.params if p.name in frame.env and frame.env[p.name].constant is not NOT_CONSTANT} if frame.depth > 0 else {}
            constants.update(self.object_constants(frame))
            if constants:
                node = self.trees.node(frame.facts.path, frame.fn)
                constants = unassigned(constants, self.trees.rebound(node), stmt) if node is not None else {}
                truth = constant_truth(stmt.test, constants) if constants else None
                if truth is not None:
                    # A test on constants an inlined call passed: only the branch it takes is traced.
                    side = stmt.body if truth else stmt.orelse
                    self.statements(frame, side)
                    return ends_in_exit(side)
            self.test(frame, stmt.test)
            with self.branch():  # each side on its own: a write on one is not made on the other
                self.statements(frame, stmt.body)
            with self.branch():
                self.statements(frame, stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                value = self.expr(frame, item.context_expr)
                if item.optional_vars is not None:
                    self.bind(frame, item.optional_vars, UNKNOWN if value.kind != "tensor" else value)
            self.statements(frame, stmt.body)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            with self.branch():  # a statement of the body may not run: one before it raised
                self.statements(frame, stmt.body)  # type: ignore[attr-defined]
                self.statements(frame, stmt.orelse)  # type: ignore[attr-defined]
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                with self.branch():
                    self.statements(frame, handler.body)
            self.statements(frame, stmt.finalbody)  # type: ignore[attr-defined]
        elif isinstance(stmt, (ast.Raise, ast.Assert)):
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self.expr(frame, child)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qual = f"{frame.fn.qualname}.{stmt.name}"
            if frame.facts.function(qual) is not None:
                frame.env[stmt.name] = Sym(kind="function", function=FunctionRef(frame.facts.path, qual))
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    frame.env.pop(target.id, None)
        elif isinstance(stmt, ast.Match):
            self.expr(frame, stmt.subject)
            for case in stmt.cases:
                with self.branch():
                    self.statements(frame, case.body)

    @contextmanager
    def branch(self) -> Iterator[None]:
        """Walk a part that may not run (a branch, a loop body, a handler): the attribute
        writes made inside it are forgotten at its end."""
        self.conditional += 1
        try:
            yield
        finally:
            self.conditional -= 1
            self.written = {source: entry for source, entry in self.written.items() if entry[1] <= self.conditional}

    def test(self, frame: _Frame, node: ast.expr) -> None:
        """A branch condition: a container tested for truth guards its length."""
        inner = node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) else node
        if isinstance(inner, (ast.Name, ast.Attribute, ast.Subscript)):
            sym = self.expr(frame, inner, passthrough=True)
            if self.is_container(sym):
                self.length_guard(frame, sym, inner)
                return
            self.use(frame, sym, inner)
            return
        self.expr(frame, node)

    @staticmethod
    def is_container(sym: Sym) -> bool:
        """A list, tuple or dict Dynamo unrolls (an argument of unknown kind may be one: its
        callers tell)."""
        if sym.source is None or sym.storage is None:
            return False
        return sym.kind in ("list", "tuple", "dict", "set") or (sym.kind == "unknown" and sym.storage.kind == "parameter" and not sym.storage.members)

    def bind(self, frame: _Frame, target: ast.expr, value: Sym) -> None:
        if isinstance(target, ast.Name):
            frame.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self.bind(frame, elt.value if isinstance(elt, ast.Starred) else elt, UNKNOWN)
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            # A write inside compiled code: its receiver is read (``variation`` sees the write).
            receiver = self.expr(frame, target.value, passthrough=True)
            if isinstance(target, ast.Subscript):
                self.expr(frame, target.slice)
            elif receiver.source:
                self.written[f"{receiver.source}.{target.attr}"] = (value, self.conditional)

    def iterate(self, frame: _Frame, node: ast.expr) -> Sym:
        """The element a ``for`` binds: a module of a container (unrolled: its first element),
        or nothing known. Iterating a container argument guards its length."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("enumerate", "reversed", "zip") and node.args:
            self.iterate(frame, node.args[0])
            for extra in node.args[1:]:
                self.expr(frame, extra)
            return UNKNOWN
        if isinstance(node, ast.Call) and self.callee_name(frame, node.func) == "range":
            for arg in node.args:
                self.expr(frame, arg, specializing="a range() bound")
            return Sym(kind="int")
        container = self.expr(frame, node, passthrough=True)
        if container.kind == "modules" and container.element is not None:
            source = f"{container.source}._modules['0']" if container.source else None
            return Sym(source=source, kind="module", cls=container.element, module_rooted=True)
        if self.is_container(container):
            self.length_guard(frame, container, node)
        else:
            self.use(frame, container, node)
        return UNKNOWN

    # ---- expressions ---------------------------------------------------------------------

    def expr(self, frame: _Frame, node: ast.expr, passthrough: bool = False, specializing: str = "") -> Sym:
        """The value of ``node``. A read of a guardable value is recorded as a guard when it is
        used; with ``passthrough`` (an assignment's right side, an inlined call's argument, a
        return to an inlining caller) the read is carried to wherever it is used."""
        sym = self._expr(frame, node, specializing)
        if not passthrough:
            self.use(frame, sym, node, specializing)
            return replace(sym, read=None) if sym.read is not None else sym
        if sym.read is None and sym.source is not None and (sym.kind in SCALAR_KINDS or sym.kind in ("unknown", "size", "rank")) and sym.storage is not None:
            sym = replace(sym, read=self.location(frame, node, "read"))
        return sym

    def _expr(self, frame: _Frame, node: ast.expr, specializing: str) -> Sym:
        if isinstance(node, ast.Name):
            return self.name(frame, node.id)
        if isinstance(node, ast.Attribute):
            base = self.expr(frame, node.value, passthrough=True)
            return self.attribute(frame, base, node.attr)
        if isinstance(node, ast.Subscript):
            base = self.expr(frame, node.value, passthrough=True)
            # An int indexing a Python list or tuple must be concrete (a tensor index need not).
            indexes_python = base.kind in ("list", "tuple") or (
                base.kind == "unknown" and base.storage is not None and base.storage.kind in ("global", "member", "attribute")
            )
            specializing = "an index into a Python list" if indexes_python else ""
            key = self.expr(frame, node.slice, passthrough=True)
            if not self.member_key(frame, base, key, node.slice):
                self.use(frame, key, node.slice, specializing)
                key = replace(key, read=None) if key.read is not None else key
            return self.subscript(frame, base, node.slice, key, node)
        if isinstance(node, ast.Call):
            return self.call_expr(frame, node, specializing)
        if isinstance(node, ast.Constant):
            kind = {bool: "bool", int: "int", float: "float", str: "str", type(None): "none", bytes: "bytes"}.get(type(node.value), "unknown")
            return Sym(kind="literal-" + kind, constant=node.value if isinstance(node.value, (bool, int, str, type(None))) else NOT_CONSTANT)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for gen in node.generators:
                element = self.iterate(frame, gen.iter)
                self.bind(frame, gen.target, element)
                for cond in gen.ifs:
                    self.expr(frame, cond)
            if isinstance(node, ast.DictComp):
                self.expr(frame, node.key)
                self.expr(frame, node.value)
            else:
                self.expr(frame, node.elt)
            return Sym(kind="list")
        if isinstance(node, ast.Lambda):
            return UNKNOWN
        if isinstance(node, ast.IfExp):
            self.expr(frame, node.test)
            self.expr(frame, node.body)
            self.expr(frame, node.orelse)
            return UNKNOWN
        if isinstance(node, ast.NamedExpr):
            value = self.expr(frame, node.value)
            frame.env[node.target.id] = value
            return value
        if isinstance(node, ast.Starred):
            return self._expr(frame, node.value, specializing)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)) and isinstance(node.comparators[0], ast.Constant) and isinstance(node.comparators[0].value, int) and not isinstance(node.comparators[0].value, bool):
            # ``if op == 3``: a dispatch on the int's value keeps a graph per value, even once
            # the int is symbolic (each value takes its own branch).
            self.expr(frame, node.left, specializing=specializing or "a dispatch on its value")
            return Sym(kind="bool")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and (isinstance(node.left, (ast.List, ast.Tuple)) or isinstance(node.right, (ast.List, ast.Tuple))):
            # ``[1] * n``: the list's length, hence the rank of a shape built from it.
            self.expr(frame, node.left, specializing="the length of a Python list")
            self.expr(frame, node.right, specializing="the length of a Python list")
            return Sym(kind="list")
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(frame, child, specializing=specializing)
        if isinstance(node, (ast.Compare, ast.BoolOp)) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            return Sym(kind="bool")
        if isinstance(node, (ast.List, ast.Tuple, ast.Dict, ast.Set)):
            return Sym(kind=type(node).__name__.lower())
        return UNKNOWN

    def name(self, frame: _Frame, name: str) -> Sym:
        if name in frame.env:
            return frame.env[name]
        fn = frame.fn
        if name in fn.local_names and name not in fn.global_decls:
            return UNKNOWN
        # A name of an enclosing function: a closure cell.
        parent = frame.facts.function(fn.parent) if fn.parent else None
        while parent is not None:
            if name in parent.local_names:
                return Sym(kind="unknown", storage=Storage("closure", path=frame.facts.path, name=name, owner=parent.qualname))
            parent = frame.facts.function(parent.parent) if parent.parent else None
        return self.global_name(frame, frame.facts, name, global_spelling(frame.globals_base, name))

    def global_name(self, frame: _Frame, facts: ModuleFacts, name: str, source: str) -> Sym:
        """A module-level name of ``facts`` (a project module), spelled ``source``."""
        target = facts.import_target(name)
        if target is not None:
            module_facts = self.index.module_facts(target, facts.path)
            if module_facts is not None and module_facts.module == target:
                return Sym(source=source, kind="modref", modpath=module_facts.path)
            module, _, attr = target.rpartition(".")
            origin = self.index.module_facts(module, facts.path) if module else None
            if origin is not None:
                found = self.index.global_binding(origin, attr)
                if found is not None:
                    ofacts, binding = found
                    if binding.kind in SCALAR_KINDS:
                        # ``from cfg import N``: this module's own copy of the value.
                        return Sym(source=source, kind=binding.kind, storage=Storage("global", facts.path, name), initial=binding.value)
                    return self.binding_sym(frame, ofacts, binding, source)
                cls = origin.cls(attr)
                if cls is not None:
                    return Sym(source=source, kind="class", cls=(origin.path, cls.qualname), storage=Storage("global", origin.path, attr))
                fn = origin.function(attr)
                if fn is not None:
                    return Sym(kind="function", function=FunctionRef(origin.path, attr))
            return Sym(source=source, kind="external", dotted=target)
        binding = facts.binding(name)
        if binding is None:
            if name in _BUILTINS:
                return Sym(kind="builtin", dotted=name)
            return UNKNOWN
        return self.binding_sym(frame, facts, binding, source)

    def binding_sym(self, frame: _Frame, facts: ModuleFacts, binding, source: str) -> Sym:
        storage = Storage("global", facts.path, binding.name)
        kind = binding.kind
        if kind == "function":
            return Sym(kind="function", function=FunctionRef(facts.path, binding.name))
        if kind == "class":
            cls = facts.cls(binding.name)
            return Sym(source=source, kind="class", cls=(facts.path, cls.qualname) if cls else None, storage=storage)
        if kind == "module":
            target = facts.import_target(binding.name) or binding.name
            module_facts = self.index.module_facts(target, facts.path)
            if module_facts is not None:
                return Sym(source=source, kind="modref", modpath=module_facts.path)
            return Sym(source=source, kind="external", dotted=target)
        if kind == "object":
            found = self.index.resolve_class(binding.class_ref, facts.path) if binding.class_ref else None
            cls = (found[0].path, found[1].qualname) if found else None
            module = found is not None and is_module_class(self.index, *found)
            return Sym(source=source, kind="module" if module else "object", cls=cls, storage=storage, module_rooted=module)
        if kind in ("unknown", "none"):
            kinds = {m.value_kind for m in self.index.mutations("global", facts.path, binding.name)} - {"", "unknown", "none"}
            if any(m.op == "augassign" for m in self.index.mutations("global", facts.path, binding.name)):
                kinds.add("int")
            if len(kinds) == 1:
                kind = kinds.pop()
        choices = self.enum_members(facts, binding.value) if kind == "enum" else None
        return Sym(source=source, kind=kind, storage=storage, initial=binding.value, choices=choices)

    def enum_members(self, facts: ModuleFacts, member: str) -> int | None:
        """How many members the enum of ``member`` (``Phase.WARMUP``) has."""
        cls_text = member.rpartition(".")[0]
        found = self.index.resolve_class(facts.resolve(cls_text), facts.path) if cls_text else None
        if found is None or not found[1].is_enum:
            return None
        return len([name for name, init in found[1].attrs if init.class_level]) or None

    def attribute(self, frame: _Frame, base: Sym, attr: str) -> Sym:
        assigned = self.written.get(f"{base.source}.{attr}") if base.source else None
        if assigned is not None:
            return assigned[0]  # the value this trace assigned: no guard on the attribute
        if base.kind == "hooked":
            # An attribute of a module a hook is registered on (its path from the compiled
            # module is not known: no source).
            return Sym(source="", kind="unknown", storage=Storage("attribute", name=attr, owner=HOOKED), module_rooted=True)
        source = f"{base.source}.{attr}" if base.source else None
        if attr == "shape" and base.kind in ("tensor", "unknown") and base.storage is not None and base.storage.kind == "parameter" and not base.storage.members:
            return Sym(source=base.source, kind="shape", storage=base.storage)
        if attr == "ndim" and base.kind in ("tensor", "unknown") and base.storage is not None and base.storage.kind == "parameter" and not base.storage.members:
            return Sym(source=base.source, kind="rank", storage=replace(base.storage, members=(".ndim",)))
        if attr in TENSOR_ATTRIBUTES and base.kind in ("tensor", "unknown") and base.storage is not None and base.storage.kind == "parameter":
            return Sym(kind="tensor-meta")
        if base.kind in ("tensor", "tensor-meta"):
            return Sym(kind="tensor-meta")
        if base.kind == "modref":
            facts = self.index.facts(base.modpath)
            if facts is None:
                return Sym(source=source)
            sub = self.index.module_facts(f"{facts.module}.{attr}", facts.path) if facts.is_package else None
            if sub is not None:
                return Sym(source=source, kind="modref", modpath=sub.path)
            if facts.function(attr) is not None:
                return Sym(kind="function", function=FunctionRef(facts.path, attr))
            return self.global_name(frame, facts, attr, source or "")
        if base.kind == "external":
            dotted = f"{base.dotted}.{attr}"
            if dotted == ENVIRON:
                return Sym(source=source, kind="environ", dotted=dotted)
            return Sym(source=source, kind="external", dotted=dotted)
        if base.kind in ("module", "object") and base.cls is not None:
            return self.instance_attribute(frame, base, attr, source)
        if base.kind == "class" and base.cls is not None:
            found = self.class_of(base.cls)
            if found is not None:
                facts, cls = found
                if cls.is_enum:
                    return Sym(kind="enum-literal")
                init = self.index.class_attr(facts, cls, attr)
                if init is not None and base.storage is not None:
                    storage = replace(base.storage, kind="member", members=base.storage.members + (f".{attr}",))
                    return Sym(source=source, kind=init[2].kind, storage=storage, initial=init[2].value)
                method = self.index.class_method(facts, cls, attr)
                if method is not None:
                    return Sym(kind="function", function=method)
            return Sym(source=source)
        if base.storage is not None and base.kind == "object" and base.storage.kind == "attribute" and base.cls is None:
            # An attribute of an object of a class the project does not define.
            return Sym(source=source, kind="unknown", storage=Storage("attribute", name=attr), module_rooted=base.module_rooted)
        if base.storage is not None and base.kind in ("object", "unknown", "dict") and base.storage.kind in ("global", "member", "parameter"):
            storage = replace(base.storage, kind="member" if base.storage.kind != "parameter" else "parameter", members=base.storage.members + (f".{attr}",))
            kind = self.member_kind(base, attr)
            return Sym(source=source, kind=kind, storage=storage, module_rooted=base.module_rooted)
        if base.kind == "modules":
            return Sym(source=source)
        return Sym(source=source, module_rooted=base.module_rooted)

    def member_kind(self, base: Sym, attr: str) -> str:
        """The kind of ``obj.attr`` for a global object built with keywords or changed by writes."""
        storage = base.storage
        if storage is None or storage.kind != "global" or storage.members:
            return "unknown"
        facts = self.index.facts(storage.path)
        binding = facts.binding(storage.name) if facts else None
        if binding is not None:
            kind = binding.item_kind(attr)
            if kind:
                return kind
        kinds = {m.value_kind for m in self.index.mutations("attribute", storage.path, storage.name) if m.key == attr} - {"", "unknown", "none"}
        return kinds.pop() if len(kinds) == 1 else "unknown"

    def class_of(self, cls: tuple[str, str]) -> tuple[ModuleFacts, ClassFacts] | None:
        facts = self.index.facts(cls[0])
        if facts is None:
            return None
        found = facts.cls(cls[1])
        return (facts, found) if found is not None else None

    def instance_attribute(self, frame: _Frame, base: Sym, attr: str, source: str | None) -> Sym:
        found = self.class_of(base.cls)  # type: ignore[arg-type]
        if found is None:
            return Sym(source=source, module_rooted=base.module_rooted)
        facts, cls = found
        module = base.kind == "module"
        method = self.index.class_method(facts, cls, attr)
        if method is not None:
            fn = self.index.function(method)
            if fn is not None and ("property" in fn.decorators or "functools.cached_property" in fn.decorators):
                value = self.call_property(frame, method, base)
                return value
            return Sym(kind="method", function=method, receiver=base)
        if self.index.is_buffer(facts, cls, attr):
            return Sym(source=source, kind="tensor")
        sub = self.index.class_submodule(facts, cls, attr)
        element = self.element_class(facts, cls, attr)
        if element is not None:
            sub_source = f"{base.source}._modules[{attr!r}]" if base.source and module else source
            return Sym(source=sub_source, kind="modules", element=element, module_rooted=True)
        if sub is not None:
            sub_module = is_module_class(self.index, *sub)
            sub_source = source
            if base.source and module and sub_module:
                sub_source = f"{base.source}._modules[{attr!r}]"
            return Sym(
                source=sub_source,
                kind="module" if sub_module else "object",
                cls=(sub[0].path, sub[1].qualname),
                storage=Storage("attribute", facts.path, attr, owner=f"{facts.module}.{cls.qualname}"),
                module_rooted=base.module_rooted or sub_module,
            )
        init = self.index.class_attr(facts, cls, attr)
        if base.storage is not None and base.storage.kind == "parameter":
            # An attribute of an argument object: a member of the argument.
            storage = replace(base.storage, members=base.storage.members + (f".{attr}",))
            ainit = init[2] if init is not None else None
            return Sym(source=source, kind=ainit.kind if ainit else "unknown", storage=storage, initial=ainit.value if ainit else "", module_rooted=base.module_rooted)
        if base.storage is not None and base.storage.kind in ("global", "member") and not module:
            # An attribute of a module-level object (a config instance): a member of that global.
            storage = replace(base.storage, kind="member", members=base.storage.members + (f".{attr}",))
            ainit = init[2] if init is not None else None
            return Sym(source=source, kind=ainit.kind if ainit else "unknown", storage=storage, initial=ainit.value if ainit else "", module_rooted=base.module_rooted)
        if init is None and attr == "training" and module:
            return Sym(source=source, kind="bool", storage=Storage("attribute", facts.path, "training", owner=f"{facts.module}.{cls.qualname}"), module_rooted=True)
        if init is None:
            owner = f"{facts.module}.{cls.qualname}"
            return Sym(source=source, kind="unknown", storage=Storage("attribute", facts.path, attr, owner=owner), module_rooted=base.module_rooted)
        ofacts, ocls, ainit = init
        owner = f"{ofacts.module}.{ocls.qualname}"
        kind = ainit.kind
        if kind in ("object", "none", "unknown"):
            assigned = self.assigned_class(attr, owner)
            if assigned is not None:
                return Sym(source=source, kind="object", cls=assigned, storage=Storage("attribute", ofacts.path, attr, owner=owner), module_rooted=base.module_rooted)
        if kind == "object":
            return Sym(source=source, kind="object", storage=Storage("attribute", ofacts.path, attr, owner=owner), module_rooted=base.module_rooted)
        return Sym(
            source=source,
            kind=kind,
            storage=Storage("attribute", ofacts.path, attr, owner=owner),
            module_rooted=base.module_rooted,
            initial=ainit.value,
        )

    def assigned_class(self, attr: str, owner: str) -> tuple[str, str] | None:
        """The one project class whose instances are stored in ``<obj>.attr`` by the program
        (``model.trainer = self`` in ``Trainer``; ``self.trainer = Trainer()``), if one."""
        found: set[tuple[str, str]] = set()
        for mutation in self.index.mutations("instance-attribute", "", attr):
            if mutation.owner and mutation.owner != owner:
                writer = self.index.resolve_class(mutation.owner, mutation.path)
                if writer is not None and owner not in {f"{f.module}.{c.qualname}" for f, c in self.index.mro(*writer)}:
                    continue  # an attribute of the same name on another project class
            facts = self.index.facts(mutation.path)
            if facts is None:
                continue
            value = mutation.value
            if value == "self" and mutation.function:
                fn = facts.function(mutation.function)
                cls = facts.cls(fn.class_name) if fn is not None and fn.class_name else None
                if cls is not None:
                    found.add((facts.path, cls.qualname))
                continue
            head = value.split("(", 1)[0] if value.endswith(")") else ""
            resolved = self.index.resolve_class(facts.resolve(head), facts.path) if head else None
            if resolved is not None:
                found.add((resolved[0].path, resolved[1].qualname))
        return found.pop() if len(found) == 1 else None

    def element_class(self, facts: ModuleFacts, cls: ClassFacts, attr: str) -> tuple[str, str] | None:
        for f, c in self.index.mro(facts, cls):
            ref = c.element(attr)
            if ref is not None:
                found = self.index.resolve_class(ref, f.path)
                if found is not None:
                    return (found[0].path, found[1].qualname)
        return None

    def call_property(self, frame: _Frame, method: FunctionRef, receiver: Sym) -> Sym:
        facts = self.index.facts(method.path)
        fn = self.index.function(method)
        if facts is None or fn is None or not fn.params:
            return UNKNOWN
        return self.call(method, facts, fn, {fn.params[0].name: receiver}, frame.depth + 1)

    def subscript(self, frame: _Frame, base: Sym, key_node: ast.expr, key: Sym, node: ast.expr) -> Sym:
        literal = key_node.value if isinstance(key_node, ast.Constant) and isinstance(key_node.value, (str, int, bytes)) else None
        if isinstance(key_node, ast.UnaryOp) and isinstance(key_node.op, ast.USub) and isinstance(key_node.operand, ast.Constant) and isinstance(key_node.operand.value, int):
            literal = -key_node.operand.value
        if base.kind == "shape":
            # ``x.shape[0]``: one of the argument's sizes (a guard on the tensor where it must
            # be concrete).
            return Sym(source=base.source, kind="size", storage=replace(base.storage, members=(f".shape[{literal}]",)) if isinstance(literal, int) and base.storage else None)  # type: ignore[arg-type]
        if base.kind in ("list", "tuple") and base.source and base.storage is not None and not isinstance(literal, str):
            # Indexing a list checks its length first.
            self.length_guard(frame, base, node)
            return UNKNOWN
        if base.kind == "environ" and isinstance(literal, str):
            source = f"{base.source}._data[{literal.encode()!r}]" if base.source else None
            return Sym(source=source, kind="str", storage=Storage("environ", name=literal))
        if literal is None:
            if base.kind in ("list", "tuple", "dict") and base.source and base.storage is not None:
                self.length_guard(frame, base, node)
            return UNKNOWN
        source = f"{base.source}[{literal!r}]" if base.source else None
        if base.kind == "modules" and base.element is not None:
            return Sym(source=f"{base.source}._modules[{str(literal)!r}]" if base.source else None, kind="module", cls=base.element, module_rooted=True)
        if base.storage is not None and base.storage.kind in ("global", "member", "parameter") and base.kind in ("dict", "unknown", "object", "list", "tuple"):
            storage = replace(base.storage, kind="member" if base.storage.kind != "parameter" else "parameter", members=base.storage.members + (f"[{literal!r}]",))
            kind = "unknown"
            if base.storage.kind == "global" and not base.storage.members:
                facts = self.index.facts(base.storage.path)
                binding = facts.binding(base.storage.name) if facts else None
                if binding is not None and isinstance(literal, str):
                    kind = binding.item_kind(literal) or "unknown"
            return Sym(source=source, kind=kind, storage=storage, module_rooted=base.module_rooted)
        return Sym(source=source)

    def callee_name(self, frame: _Frame, func: ast.expr) -> str:
        text = dotted_name(func)
        if not text:
            return ""
        head = text.split(".")[0]
        if head in frame.env or (head in frame.fn.local_names and head not in frame.fn.global_decls):
            return ""
        return frame.facts.resolve(text)

    def call_expr(self, frame: _Frame, node: ast.Call, specializing: str) -> Sym:
        name = self.callee_name(frame, node.func)
        if name == "len" and node.args:
            value = self.expr(frame, node.args[0], passthrough=True)
            if value.kind == "shape":
                return Sym(source=value.source, kind="rank", storage=replace(value.storage, members=(".ndim",)))  # type: ignore[arg-type]
            if self.is_container(value) or (value.kind == "unknown" and value.source and value.storage is not None):
                # The length is guarded as such (LENGTH_CHECK), and the int it gives is a constant.
                self.length_guard(frame, value, node)
                return Sym(kind="int")
            self.use(frame, value, node.args[0])
            return Sym(kind="int")
        if name in ("getattr", "hasattr") and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            base = self.expr(frame, node.args[0], passthrough=True)
            value = self.attribute(frame, base, node.args[1].value)
            for extra in node.args[2:]:
                self.expr(frame, extra)
            return value if name == "getattr" else Sym(kind="bool")
        if name in ("int", "float", "bool", "str") and len(node.args) == 1:
            inner = self.expr(frame, node.args[0], passthrough=True)
            if inner.kind == "str" and inner.storage is not None and inner.storage.kind == "environ":
                self.use(frame, inner, node.args[0], "converted to a number")
                return Sym(kind=name)
            self.use(frame, inner, node.args[0], specializing or ("converted to a string" if name == "str" else ""))
            return Sym(kind=name)
        if name == "super":
            return Sym(kind="super")
        environ = self.environ_read(frame, node, name)
        if environ is not None:
            return environ
        special = specializing or ("an argument of " + name.rsplit(".", 1)[-1] + "()" if name in SPECIALIZING_CALLS else "")
        if name in UNROLLING_CALLS and node.args:
            first = node.args[0].value if isinstance(node.args[0], ast.Starred) else node.args[0]
            container = self.expr(frame, first, passthrough=True)
            if self.is_container(container):
                self.length_guard(frame, container, first)
            else:
                self.use(frame, container, first, special)
            for arg in node.args[1:]:
                self.expr(frame, arg.value if isinstance(arg, ast.Starred) else arg)
            for kw in node.keywords:
                self.expr(frame, kw.value)
            return Sym(kind="tensor") if name.startswith("torch.") else UNKNOWN
        func = node.func
        # ``super().forward(x)``: the parent class's method with the same self.
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and dotted_name(func.value.func) == "super":
            owner = self.enclosing_class(frame.facts, frame.fn)
            receiver = frame.env.get(frame.fn.params[0].name) if frame.fn.params else None
            if owner is not None and receiver is not None:
                for f, c in self.index.mro(*owner)[1:]:
                    qual = c.method(func.attr)
                    if qual is not None:
                        return self.inline(frame, FunctionRef(f.path, qual), node.args, node.keywords, receiver)
            self.uses(frame, node.args, node.keywords)
            return UNKNOWN
        if isinstance(func, ast.Attribute):
            receiver = self.expr(frame, func.value, passthrough=True)
            if receiver.kind in ("module", "object", "class", "modref", "external", "modules", "environ"):
                callee = self.attribute(frame, receiver, func.attr)
            elif receiver.kind == "unknown" and receiver.storage is not None and receiver.storage.kind in ("global", "member") and not self.is_container(receiver):
                # A method of a module-level value of unknown kind (``meta['k'].update(...)``):
                # neither the method nor the value is a guarded scalar.
                self.uses(frame, node.args, node.keywords)
                return UNKNOWN
            elif func.attr in ("dim", "ndimension") and not node.args and receiver.kind in ("tensor", "unknown") and receiver.storage is not None and receiver.storage.kind == "parameter" and not receiver.storage.members:
                return Sym(source=receiver.source, kind="rank", storage=replace(receiver.storage, members=(".ndim",)))
            elif func.attr == "size" and len(node.args) == 1 and receiver.kind in ("tensor", "unknown") and receiver.storage is not None and receiver.storage.kind == "parameter" and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, int):
                return Sym(source=receiver.source, kind="size", storage=replace(receiver.storage, members=(f".shape[{node.args[0].value}]",)))
            elif self.is_container(receiver) and func.attr in CONTAINER_METHODS:
                # ``d.items()``, ``history.append(x)``: the container is unrolled (and, for a
                # global, changed by the compiled code itself: a write the evidence finds).
                self.length_guard(frame, receiver, func.value)
                self.uses(frame, node.args, node.keywords)
                return UNKNOWN
            else:
                # A method of a tensor, a string, a container: the receiver is what is used.
                self.use(frame, receiver, func.value, special)
                if func.attr in SPECIALIZING_METHODS:
                    for arg in node.args:
                        self.expr(frame, arg, specializing=f"an argument of {func.attr}()")
                    for kw in node.keywords:
                        self.expr(frame, kw.value, specializing=f"an argument of {func.attr}()")
                else:
                    self.uses(frame, node.args, node.keywords)
                return Sym(kind="tensor") if receiver.kind in ("tensor", "unknown") else UNKNOWN
        else:
            callee = self.expr(frame, func, passthrough=True)
        if callee.kind == "function" and callee.function is not None:
            return self.inline(frame, callee.function, node.args, node.keywords, None)
        if callee.kind == "method" and callee.function is not None:
            return self.inline(frame, callee.function, node.args, node.keywords, callee.receiver)
        if callee.kind == "module" and callee.cls is not None:
            found = self.class_of(callee.cls)
            if found is not None:
                forward = self.index.class_method(*found, "forward")
                if forward is not None:
                    return self.inline(frame, forward, node.args, node.keywords, callee)
        if callee.kind == "class" and callee.cls is not None:
            self.uses(frame, node.args, node.keywords)
            found = self.class_of(callee.cls)
            module = found is not None and is_module_class(self.index, *found)
            return Sym(kind="module" if module else "object", cls=callee.cls)
        if callee.source and callee.storage is not None and callee.storage.kind == "parameter" and callee.kind in ("unknown", "callable"):
            # A function passed in and called: Dynamo guards its code object.
            self.identity_guard(frame, callee, node.func)
            self.uses(frame, node.args, node.keywords)
            return UNKNOWN
        self.use(frame, callee, func)
        for arg in node.args:
            self.expr(frame, arg.value if isinstance(arg, ast.Starred) else arg, specializing=special)
        for kw in node.keywords:
            self.expr(frame, kw.value, specializing=special if kw.arg in (None, "kernel_size", "split_size_or_sections", "size", "scale_factor", "sections", "chunks") or name == "range" else "")
        if name.startswith("torch.") or callee.kind == "tensor":
            return Sym(kind="tensor")
        return UNKNOWN

    def environ_read(self, frame: _Frame, node: ast.Call, name: str) -> Sym | None:
        """``os.environ.get("K", d)`` / ``os.getenv("K")``: Dynamo reads ``os.environ``'s data."""
        if name not in ("os.environ.get", "os.getenv") or not node.args:
            return None
        key = node.args[0]
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        for extra in node.args[1:]:
            self.expr(frame, extra)
        os_name = name.split(".", 1)[0]
        local = next((local for local, target in frame.facts.imports if target == "os"), os_name)
        base = global_spelling(frame.globals_base, local)
        return Sym(source=f"{base}.environ._data[{key.value.encode()!r}]", kind="str", storage=Storage("environ", name=key.value))

    def uses(self, frame: _Frame, args: list[ast.expr], keywords: list[ast.keyword]) -> None:
        for arg in args:
            self.expr(frame, arg.value if isinstance(arg, ast.Starred) else arg)
        for kw in keywords:
            self.expr(frame, kw.value)

    # ---- guards --------------------------------------------------------------------------

    def location(self, frame: _Frame, node: ast.AST, role: str) -> Location:
        lines = self.index.lines(frame.facts.path)
        line = getattr(node, "lineno", frame.fn.line)
        column = char_column(lines, line, getattr(node, "col_offset", 0)) if lines else 1
        end_line = getattr(node, "end_lineno", None) or line
        end_column = char_column(lines, end_line, getattr(node, "end_col_offset", 0) or 0) if lines else column
        return Location(frame.facts.path, line, column, role, "", end_line, end_column)

    def use(self, frame: _Frame, sym: Sym, node: ast.AST, specializing: str = "") -> None:
        """``sym`` is used by the trace: a guard on it, when it is a Python value Dynamo guards."""
        if sym.source is None or sym.storage is None:
            return
        if sym.kind == "rank":
            # A tensor's rank is always static: using it guards the tensor's rank.
            here = self.location(frame, node, "read")
            self.add(frame, Guard("TENSOR_MATCH", sym.source, "rank"), sym, sym.read or here, None, "a tensor's rank")
            return
        if sym.kind == "size":
            if specializing:
                # A size that must be concrete: the tensor's guard keeps that size.
                here = self.location(frame, node, "read")
                index = sym.storage.members[0][len(".shape[") : -1] if sym.storage.members else ""
                self.add(frame, Guard("TENSOR_MATCH", sym.source, f"size {index}"), sym, sym.read or here, None, specializing)
            return
        if sym.kind not in SCALAR_KINDS and sym.kind != "unknown":
            return
        if sym.kind == "unknown" and sym.storage.kind == "closure":
            return
        if sym.source == "" and sym.storage.owner != HOOKED:
            return
        here = self.location(frame, node, "read")
        read = sym.read or here
        use = replace(here, role="use") if sym.read is not None and (here.path, here.line) != (read.path, read.line) else None
        guard_kind = "ID_MATCH" if sym.kind == "enum" else "CONSTANT_MATCH"
        detail = ""
        source = sym.source
        if sym.kind == "enum":
            detail = "___check_obj_id"
        self.add(frame, Guard(guard_kind, source, detail), sym, read, use, specializing or sym.specialized)

    def member_key(self, frame: _Frame, table: Sym, key: Sym, node: ast.expr) -> bool:
        """A global Enum member looked up in a dict (``COEFFS[MODE]``): Dynamo guards the
        dict's key as the member, ``list(dict.keys(G['COEFFS']))[0] is G['MODE']``, the guard a
        new member fails first (measured on torch 2.13). It is spelled on the dict's source and
        kept on the member's storage (the member is what changes). False for any other key."""
        if key.kind != "enum" or not key.source or not key.source.startswith("G[") or key.storage is None:
            return False
        if not table.source or table.kind not in ("dict", "unknown"):
            return False
        here = self.location(frame, node, "read")
        self.add(frame, Guard("ID_MATCH", table.source, f"a key is {key.source}"), key, key.read or here, None, key.specialized)
        return True

    def length_guard(self, frame: _Frame, container: Sym, node: ast.AST, emit: bool = True) -> Sym:
        storage = replace(container.storage, length=True)  # type: ignore[arg-type]
        source = f"len({container.source})"
        sym = Sym(source=source, kind="int", storage=storage, module_rooted=container.module_rooted)
        if emit:
            here = self.location(frame, node, "read")
            self.add(frame, Guard("LENGTH_CHECK", source), replace(sym, kind=container.kind if container.kind != "unknown" else "list"), container.read or here, None, "")
        return sym

    def identity_guard(self, frame: _Frame, callee: Sym, node: ast.AST) -> None:
        here = self.location(frame, node, "read")
        sym = replace(callee, kind="callable")
        self.add(frame, Guard("ID_MATCH", f"{callee.source}.__code__", "___check_obj_id"), sym, callee.read or here, None, "")

    def add(self, frame: _Frame, guard: Guard, sym: Sym, read: Location, use: Location | None, specialized: str) -> None:
        key = (sym.storage, guard.source, frame.ref)
        if key in self.guards:
            known = self.guards[key]
            if specialized and not known.specialized:
                # A later use needs the value concrete: the guard stays a constant after all.
                self.guards[key] = replace(known, specialized=specialized)
            return
        reason = specialized
        root = sym.storage.kind if sym.storage else ""
        if not reason:
            if root in ("global", "member") and (guard.source.startswith("G[")):
                reason = "global"
            elif sym.module_rooted and root in ("attribute", "member"):
                reason = "module attribute"
            elif self.dynamic_false and root == "parameter":
                reason = "dynamic=False"
            elif self.dynamic_true and root == "parameter" and sym.kind in ("int", "float"):
                return  # dynamic=True: a symbolic input from the first call, one graph
            elif guard.source.startswith("G["):
                reason = "global"
            elif sym.module_rooted:
                reason = "module attribute"
        self.guards[key] = PredictedGuard(
            region=self.region,
            guard=guard,
            storage=sym.storage,  # type: ignore[arg-type]
            value_kind=sym.kind,
            read=read,
            function=frame.ref,
            depth=frame.depth,
            use=use,
            specialized=reason,
            initial=sym.initial,
            module_attribute=sym.module_rooted,
            choices=sym.choices,
        )


_BUILTINS = frozenset({"len", "range", "int", "float", "str", "bool", "min", "max", "abs", "sum", "getattr", "hasattr", "setattr", "isinstance", "print", "enumerate", "zip", "list", "tuple", "dict", "set", "sorted", "reversed", "round", "super"})


# The owner of an attribute read on a module through a forward hook.
HOOKED = "<hooked module>"


def first_checked(parameters: list[str]) -> str:
    """Of the entry's arguments whose tensor guards fail together, the one Dynamo reports.

    torch 2.13 builds the guards of a frame in ``Guard.sort_key`` order: by source kind, then
    by the length of the source's name, then by the name (``L['b']`` before ``L['grad']``
    before ``L['param']``, ``L['xx']`` before ``L['yy']``), whatever the order of the
    arguments or of their uses, and the recompile message names the first guard that fails
    (docs/torch-2.13.md, measured). Names Dynamo cannot spell (``#2``, a star argument's
    position) come last; "" when none.
    """
    named = [p for p in parameters if p and not p.startswith("#")]
    if not named:
        return parameters[0] if parameters else ""
    return min(named, key=lambda p: (len(f"L[{p!r}]"), f"L[{p!r}]"))


HOOK_REGISTRATIONS = frozenset({"register_forward_pre_hook", "register_forward_hook"})


def forward_hooks(index: ProjectIndex, roots: frozenset[str] | None = None) -> list[FunctionRef]:
    """Project functions registered as forward (pre-)hooks on some module (with ``roots``:
    registered by files under one of those import roots)."""
    found: list[FunctionRef] = []
    for facts in list(index.parsed()):
        if roots is not None and index.sys_root.get(facts.path) not in roots:
            continue
        for call in facts.method_calls:
            if call.method not in HOOK_REGISTRATIONS or not call.args:
                continue
            name = call.args[0]
            if not name.isidentifier():
                continue
            ref = None
            if facts.function(name) is not None:
                ref = FunctionRef(facts.path, name)
            else:
                target = facts.import_target(name)
                ref = index.resolve_function(target, facts.path) if target else None
            if ref is not None and ref not in found:
                found.append(ref)
    return found


def _load(target: ast.expr) -> ast.expr:
    """``target`` as an expression that reads it (for ``x += 1``)."""
    return target


def _is_type_checking(test: ast.expr) -> bool:
    text = dotted_name(test)
    return text in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def predict_guards(index: ProjectIndex, regions: list[CompiledRegion], max_depth: int = 6, trees: FunctionTrees | None = None) -> Iterator[PredictedGuard]:
    """Every guard of every region, region by region."""
    trees = trees or FunctionTrees(index)
    for region in regions:
        yield from GuardWalker(index, trees, region, max_depth).walk()


def _spreads(args: list[ast.expr], keywords: list[ast.keyword]) -> bool:
    """Whether a call passes ``*args`` or ``**kwargs``: any parameter may be given then."""
    return any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in keywords)


def _not_none(arg: ast.expr, value: Sym) -> Sym:
    """``value`` known not to be None where its expression cannot be (``x.size(0)``, a float):
    it decides ``p is None`` in the inlined function (``constants.literal_of``)."""
    if value.constant is NOT_CONSTANT and literal_of(arg) is NOT_NONE:
        return replace(value, constant=NOT_NONE)
    return value
