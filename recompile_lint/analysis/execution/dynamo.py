"""What Dynamo guards: the guards of one compiled call, read off the run of its body.

While the interpreter runs compiled code (``Interpreter.compiling > 0``), Dynamo wraps every
value the frame reads from outside itself with its **source** and installs a guard on it that
depends on the value's kind. The ``Tracer`` follows the same mechanism on the abstract run:

* sources: the compiled frame's arguments (defaults included) and its closure cells are
  ``L['name']``; a global of the compiled function's module is ``G['name']``, one of another
  module (read by an inlined helper) ``G['__import_pkg_dot_mod'].name``; an attribute of a
  sourced value is ``<source>.attr``, an item ``<source>['k']`` / ``<source>[0]``. An inlined
  call's parameters keep their caller's sources (a bound method's receiver is its
  ``.__self__``, a partial's bound values its ``.keywords['k']`` / ``.args[0]``); a submodule
  of an ``nn.Module`` is ``<source>._modules['name']``; a local the frame assigns itself has
  none (Dynamo built it), but an object keeps the source it was first read from in the call
  (Dynamo's source lives on the value: ``s = self.a if c else self.b``, a field of a
  dataclass the trace builds);
* guards, by kind: a Python int, float, str, bool or None is a ``CONSTANT_MATCH`` on its value;
  a project function (a ``def`` or a lambda) an ``ID_MATCH`` on ``<source>.__code__``, an Enum
  member one on ``<source>`` (``___check_obj_id``), and a global member that indexes a dict
  one on the dict's key, spelled on the dict (``list(dict.keys(G['W']))[0] is G['MODE']``); a tensor
  a ``TENSOR_MATCH`` (rank and sizes, dtype, device, ``requires_grad``), and so is each
  parameter of a library layer compiled code calls (``<layer>._parameters['weight']``, static
  shapes); a list or tuple a
  ``LENGTH_CHECK`` on ``len(<source>)``, a dict one where its keys are used (``len()``,
  iteration);
* uses that keep an int or float a constant of the graph even where automatic dynamic shapes
  would make it an input: a ``range()`` bound, an op argument that must be a Python number
  (``dropout`` ``p``, ``interpolate`` sizes, ``view`` / ``reshape`` / ``split`` sizes, ...).

Reads under ``if not torch.compiler.is_compiling():`` and inside disabled helpers are not
traced (the interpreter runs them with ``compiling == 0``); a value passed *to* a disabled
helper is still read by the traced caller, and realized for the eager call: the elements of a
list, tuple or named tuple and the values of a dict are guarded with it (``Tracer._passed``).
Nothing here imports torch.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace

from recompile_lint.analysis.execution.values import (
    NN_MODULE,
    TOP,
    BoundMethod,
    ClassValue,
    CodeRef,
    CompiledValue,
    Const,
    DictValue,
    Function,
    Instance,
    ListValue,
    ModuleValue,
    Partial,
    Property,
    Sym,
    TensorValue,
    TupleValue,
)
from recompile_lint.analysis.execution.overlays import nn_containers
from recompile_lint.analysis.execution.overlays.nn_module import LAYER_CONSTANTS, is_buffer
from recompile_lint.models import Location

# Calls whose int or float arguments Dynamo must keep concrete (the use named as the lab does).
CONCRETE_USES = {
    "builtins.range": "range-bound",
    "torch.nn.functional.dropout": "op-dropout-p",
    "torch.dropout": "op-dropout-p",
    "torch.nn.functional.interpolate": "op-interpolate",
    "torch.nn.functional.bernoulli": "op-bernoulli",
    "torch.nn.functional.scaled_dot_product_attention": "op-sdpa-dropout",
    "torch.bernoulli": "op-bernoulli",
    "torch.split": "op-split",
    "torch.reshape": "op-reshape",
    "torch.nn.functional.avg_pool1d": "op",
    "torch.nn.functional.max_pool1d": "op",
    "torch.nn.functional.one_hot": "op",
    "torch.chunk": "op",
    "math.exp": "op",
    "math.log": "op",
    "math.sqrt": "op",
    "math.pow": "op",
    "math.cos": "op",
    "math.sin": "op",
}
CONCRETE_METHODS = {
    "view": "op-view", "reshape": "op-reshape", "split": "op-split", "bernoulli_": "op-bernoulli", "bernoulli": "op-bernoulli",
    # Measured on torch 2.13 (docs/guard-model.md): an int these take stays specialised.
    "unfold": "op", "chunk": "op",
}
# Calls that use a container's keys or length (Dynamo unrolls them).
UNROLLING = frozenset({"builtins.len", "builtins.enumerate", "builtins.zip", "builtins.list", "builtins.tuple", "builtins.sorted", "builtins.sum", "builtins.reversed", "builtins.min", "builtins.max", "builtins.any", "builtins.all", "builtins.iter", "builtins.map"})
KEY_METHODS = frozenset({"keys", "items", "values"})
# How deep what traced code passes to a disabled function is realized (``L['cfg'].hp[0]``).
PASSED_DEPTH = 3
# Shape ops that take a whole tuple or list of sizes: each int in it is read.
SIZE_TUPLE_USES = frozenset({"op-view", "op-reshape", "op-interpolate-size"})
EAGER = "execution.eager"  # the call of a ``torch.compiler.disable``d function (overlays/torch_compile)


@dataclass(frozen=True)
class GuardRead:
    """One guard of a compiled call: its source, kind, the value it checks, and where compiled
    code read it (the line Dynamo names when it fails)."""

    source: str
    kind: str  # CONSTANT_MATCH, ID_MATCH, TENSOR_MATCH, LENGTH_CHECK
    value: object  # what the guard compares (a ``Const``, a ``CodeRef``, tensor metadata, a length)
    read: Location
    module_rooted: bool = False  # reached through an ``nn.Module`` instance (its ints stay constants)
    use: str = ""  # a use that keeps an int or float concrete (``range-bound``, ``op-view``), else ""
    branch: bool = False  # read in a test (``if``, ``while``, ``x if c else y``)
    passed: bool = False  # first read as what traced code passes to a disabled function
    key_of: str = ""  # a dict's key guard: the source of the Enum member its key must be
    owner: str = field(default="", compare=False)  # ``module.Class`` of the object whose attribute it is
    function: str = field(default="", compare=False)  # qualname of the function that read it

    @property
    def value_kind(self) -> str:
        if self.kind == "CONSTANT_MATCH" and isinstance(self.value, Const):
            return self.value.kind
        if self.kind == "CONSTANT_MATCH" and isinstance(self.value, Sym):
            return self.value.kind
        if self.kind == "ID_MATCH" and isinstance(self.value, Instance):
            return "enum"
        return {"ID_MATCH": "function", "TENSOR_MATCH": "tensor", "LENGTH_CHECK": "length", "TYPE_MATCH": "class"}.get(self.kind, "")


def _is_enum_member(interpreter, value: Instance) -> bool:
    """An Enum's member: an instance of an ``enum.Enum`` subclass (``records.class_defined``
    makes each member one, with ``_name_``)."""
    return interpreter.heap.has(value.addr, "_name_") and any(isinstance(c, ModuleValue) and c.name.startswith("enum.") for c in interpreter.mro(value.cls))


@dataclass(frozen=True)
class TensorMeta:
    """What a ``TENSOR_MATCH`` checks, where known (None / "" where not)."""

    sizes: tuple[int | None, ...] | None
    dtype: str
    device: str
    requires_grad: bool | None
    # An ``nn.Parameter``: Dynamo keeps its shapes static even under automatic dynamic
    # (``force_parameter_static_shapes``), measured on torch 2.13: one graph per shape.
    parameter: bool = field(default=False, compare=False)
    layout: str = ""  # ``TensorValue.layout``: the strides are guarded too


def meta_of(value: TensorValue, static: bool | None = None) -> TensorMeta:
    """What a ``TENSOR_MATCH`` on ``value`` checks (``static``: shapes kept static)."""
    return TensorMeta(value.sizes, value.dtype, value.device, value.requires_grad, value.parameter if static is None else static, value.layout)


@dataclass
class Trace:
    """The guards one compiled call installs, by source (the first read of each)."""

    region_keys: list[tuple]
    function: Function
    bound: dict[str, object]
    where: Location
    guards: dict[str, GuardRead] = field(default_factory=dict)
    concrete: dict[str, str] = field(default_factory=dict)  # source -> the concrete use seen
    # Source -> the number of chunks a ``split`` it sizes made (None where the run does not
    # know): Dynamo guards that count once the size is symbolic (``((7 + n) // n) == 2``).
    chunks: dict[str, int | None] = field(default_factory=dict)
    # Source -> the stack slot (``___stack1``) the result of an ``interpolate`` it scales takes
    # in the resume function: a symbolic int scale breaks the graph there (measured on torch
    # 2.13), and the resume function guards that result's sizes.
    resumes: dict[str, int] = field(default_factory=dict)
    # Sources read holding a partial, a bound method or an ``nn.Module``: Dynamo guards what
    # they hold (``.keywords['k']``, ``.__self__.k``, parameters), never the object as a constant.
    holders: set[str] = field(default_factory=set)
    passed: dict[str, list[Location]] = field(default_factory=dict)  # parameter -> writes of the local passed
    # Parameter -> how the call gives it (``positional``, ``keyword``, ``default``); None where
    # the call's ``*`` / ``**`` arguments hide it.
    given: dict[str, str] | None = None
    grad_mode: bool | None = None  # grad enabled at the call (None: unknown)
    # A bound method whose function a torch decorator wraps (``@torch.no_grad()``), compiled
    # directly: Dynamo compiles ``wrap_inline``'s ``inner(*args, **kwargs)`` around it.
    wrapped: bool = False
    # The compiled frame is a ``torch.func`` transform's wrapper in torch, which inlines the
    # function: its arguments are ``L['args'][i]``, what it holds ``L['func']``'s, and every
    # project global is another module's (``G['__import___main__'].STEP``).
    transformed: bool = False
    # Sources read with a known value that Dynamo installs no guard on (measured): a local or
    # attribute Enum member that only indexes a dict, ``W[self.mode]``.
    unguarded: set[str] = field(default_factory=set)
    # Source -> the outcome of each ``if`` test that read it (None where the run cannot tell):
    # a value Dynamo makes symbolic is guarded on the branch it takes.
    outcomes: dict[str, list[bool | None]] = field(default_factory=dict)
    # Heap address of each object compiled code read from a source -> that source: Dynamo's
    # source lives on the value, so the object keeps it through a local the trace assigns
    # (``s = self.a if c else self.b``) or a field of an object the trace builds.
    objects: dict[int, tuple[str, bool]] = field(default_factory=dict)
    expanded: set[int] = field(default_factory=set)  # modules whose submodules got their sources
    # A graph break below the compiled frame happened in this call: the functions between run
    # as frames of their own from then on, so a later call must run the body, not replay it.
    broke: bool = False


@dataclass
class _Pending:
    """A call being made from traced code: the sources of what it passes."""

    caller: int  # the caller frame's locals address
    args: list[tuple[str, bool] | None]
    kwargs: dict[str, tuple[str, bool] | None]
    receiver: tuple[str, bool] | None
    receiver_value: object = None  # the object ``receiver`` is the source of, where known
    code: CodeRef | None = None  # the code the call starts, where known (a hook may run first)
    function: tuple[str, bool] | None = None  # the source of the plain function called, where known


class Tracer:
    """Sources and guards while compiled code runs; one ``Trace`` per compiled call."""

    def __init__(self) -> None:
        self.traces: list[Trace] = []
        # (frame locals address, name) -> (source, reached through an nn.Module instance)
        self.sources: dict[tuple[int, str], tuple[str, bool]] = {}
        # A loop variable's item source while the loop's binding stands: (locals, name) ->
        # (source, module-rooted, where the loop bound it).
        self._loop_sources: dict[tuple[int, str], tuple[str, bool, object]] = {}
        # An inlined function's closure cells, read through the source it was called by.
        self._closure_sources: dict[int, dict[str, tuple[str, bool]]] = {}
        self._computed: set[int] = set()  # attribute nodes a property computes (no source of their own)
        self.compiled_frames: set[int] = set()  # locals addresses of the compiled frames
        self._pending: _Pending | None = None
        self._root = False  # the next frame of the compiled function is the compiled call's own
        self._roles: dict[CodeRef, tuple[set[int], set[int], set[int], set[int]]] = {}
        self._frame_code: dict[int, CodeRef] = {}  # locals address of each traced frame -> its code
        self._bases: dict[int, object] = {}  # attribute node -> the object its last traced read was on
        self._items: dict[int, tuple[object, object]] = {}  # subscript node -> (container, key) of its last traced read
        # The last read told (node, frame locals address, its source): the base of the read that
        # follows it, so a chain ``x[0][0]...`` costs one step per link, not the whole chain again.
        self._last_read: tuple[ast.expr, int, tuple[str, bool] | None] | None = None

    # ---- a compiled call ---------------------------------------------------------------

    def begin(self, region_keys: list[tuple], function: Function, bound: dict[str, object], where: Location, interpreter=None, compiled: CompiledValue | None = None) -> None:
        target = compiled.target if compiled is not None else None
        wrapped = isinstance(target, BoundMethod) and isinstance(target.function, Function) and target.function.code in interpreter.decorated_modes
        if wrapped:
            bound = {"fn": target}  # ``inner(*args, **kwargs)``: what Dynamo's sources start from
        transformed = isinstance(target, Partial) and bool(target.transform)
        self.traces.append(Trace(region_keys, function, bound, where, wrapped=wrapped, transformed=transformed))
        self._pending = None
        self._last_read = None
        self._root = True

    def frame_code(self, locals_addr: int) -> CodeRef | None:
        """The code of a traced frame, by its locals' address."""
        return self._frame_code.get(locals_addr)

    def end(self) -> Trace | None:
        self._last_read = None
        return self.traces.pop() if self.traces else None

    # ---- frames ------------------------------------------------------------------------

    def on_frame(self, interpreter, frame, function: Function, args: list[object], bound: dict[str, object], caller) -> None:
        """A frame starts in traced code: the compiled frame's own arguments are ``L['name']``;
        an inlined callee's parameters keep the sources of what its caller passed."""
        if not self.traces:
            return
        self._frame_code[frame.locals] = function.code
        pending, self._pending = self._pending, None
        trace = self.traces[-1]
        if self._root and function.code == trace.function.code:
            self._root = False
            self.compiled_frames.add(frame.locals)
            if trace.wrapped:
                self._wrapped_sources(interpreter, frame, function, args)
                return
            if trace.transformed:
                self._transformed_sources(interpreter, frame, function, args, bound)
                return
            for name in bound:
                self.sources[(frame.locals, name)] = (f"L[{name!r}]", False)
            return
        if pending is not None and caller is not None and pending.caller == caller.locals and pending.code in (None, function.code):
            self._bind_passed(interpreter, frame, function, args, bound, pending, trace)
            if pending.function is not None:
                self._function_held(interpreter, frame, function, args, bound, pending.function)
        for name, value in bound.items():
            # An object the call read keeps its source wherever it is passed (a hook's
            # ``module``, a module a container calls): Dynamo's source lives on the value.
            if isinstance(value, Instance) and (frame.locals, name) not in self.sources:
                found = trace.objects.get(value.addr)
                if found is not None:
                    self.sources[(frame.locals, name)] = found
        self._defaults(interpreter, frame, function, args, bound)

    def _function_held(self, interpreter, frame, function: Function, args: list[object], bound: dict[str, object], held: tuple[str, bool]) -> None:
        """A function traced code reached through a source (``fn(x)`` for a parameter ``fn``,
        ``self.act(x)``): what it holds is read through it, a default its call left as
        ``<fn>.__defaults__[i]`` and a closure cell as ``<fn>.__closure__[i].cell_contents``
        (measured on torch 2.13: ``self.act.__defaults__[0] == 0`` for a lambda whose default
        is the step, ``fn.__closure__[0].cell_contents == 0`` for a closure over it)."""
        node = interpreter.codes.get(function.code)
        if node is None or not hasattr(node, "args"):
            return
        self._bind_defaults(interpreter, frame, function, args, bound, f"{held[0]}.__defaults__", held[1])
        free = free_variables(interpreter, function)
        if free:
            self._closure_sources[frame.locals] = {name: (f"{held[0]}.__closure__[{i}].cell_contents", held[1]) for i, name in enumerate(free)}

    def _wrapped_sources(self, interpreter, frame, function: Function, args: list[object]) -> None:
        """The method ``wrap_inline`` calls as ``fn(*args, **kwargs)``: its receiver is
        ``L['fn'].__self__``, what it was passed by position ``L['args'][i]`` (measured on
        torch 2.13: ``fn.__self__.updates == 0`` for a ``@torch.no_grad()`` method)."""
        node = interpreter.codes.get(function.code)
        if node is None or not hasattr(node, "args"):
            return
        positional = [a.arg for a in node.args.posonlyargs + node.args.args]
        for i, name in enumerate(positional[: len(args)]):
            self.sources[(frame.locals, name)] = ("L['fn'].__self__", False) if i == 0 else (f"L['args'][{i - 1}]", False)

    def _transformed_sources(self, interpreter, frame, function: Function, args: list[object], bound: dict[str, object]) -> None:
        """The function a transform's wrapper ``wrapped(*args, **kwargs)`` calls: what it was
        passed by position is ``L['args'][i]`` (printed ``args[1] == 2.0``, measured on torch
        2.13), by keyword ``L['kwargs'][name]``, its closure cells and defaults ``L['func']``'s."""
        node = interpreter.codes.get(function.code)
        if node is None or not hasattr(node, "args"):
            return
        positional = [a.arg for a in node.args.posonlyargs + node.args.args]
        for i, name in enumerate(positional[: len(args)]):
            self.sources[(frame.locals, name)] = (f"L['args'][{i}]", False)
        for name in bound:
            if (frame.locals, name) not in self.sources and name not in positional:
                self.sources[(frame.locals, name)] = (f"L['kwargs'][{name!r}]", False)
        self._function_held(interpreter, frame, function, args, bound, ("L['func']", False))

    def _defaults(self, interpreter, frame, function: Function, args: list[object], bound: dict[str, object]) -> None:
        """An inlined method's parameter that took its default: Dynamo reads it off the class,
        ``dict(type(<receiver>).__dict__)['forward'].__defaults__[0]`` (measured on torch 2.13,
        a block a ``Sequential`` calls)."""
        node = interpreter.codes.get(function.code)
        if node is None or not hasattr(node, "args") or not args or not isinstance(args[0], Instance):
            return
        spec = node.args
        positional = [a.arg for a in spec.posonlyargs + spec.args]
        defaults, _ = interpreter.defaults_of(function)
        receiver = self.sources.get((frame.locals, positional[0])) if positional else None
        name = function.code.qualname.rsplit(".", 1)[-1]
        if not defaults or receiver is None or interpreter.class_attribute(args[0].cls, name) != function:
            return
        self._bind_defaults(interpreter, frame, function, args, bound, f"dict(type({receiver[0]}).__dict__)[{name!r}].__defaults__", receiver[1])

    def _bind_defaults(self, interpreter, frame, function: Function, args: list[object], bound: dict[str, object], prefix: str, rooted: bool) -> None:
        """Each parameter the call left to its default reads it as ``<prefix>[i]``."""
        node = interpreter.codes.get(function.code)
        defaults, _ = interpreter.defaults_of(function)
        if node is None or not defaults:
            return
        positional = [a.arg for a in node.args.posonlyargs + node.args.args]
        first = len(positional) - len(defaults)
        for i, default in enumerate(defaults):
            param = positional[first + i]
            if first + i >= len(args) and bound.get(param) is default and (frame.locals, param) not in self.sources:
                self.sources[(frame.locals, param)] = (f"{prefix}[{i}]", rooted)

    def _bind_passed(self, interpreter, frame, function: Function, args: list[object], bound: dict[str, object], pending: _Pending, trace: Trace) -> None:
        """The callee's parameters take the sources of what its caller passed."""
        node = interpreter.codes.get(function.code)
        if node is None or not hasattr(node, "args"):
            return
        spec = node.args
        positional = [a.arg for a in spec.posonlyargs + spec.args]
        passed = list(pending.args)
        receiver = pending.receiver
        if receiver is not None and pending.receiver_value is not None and args and args[0] != pending.receiver_value:
            # A library module calling the modules it holds (``Sequential``): each is bound to
            # its own source, read when the container was.
            receiver = trace.objects.get(args[0].addr) if isinstance(args[0], Instance) else None
        if len(args) == len(passed) + 1 and receiver is not None:
            sources: list[tuple[str, bool] | None] = [receiver] + passed
        elif len(args) >= len(passed):
            sources = [None] * (len(args) - len(passed)) + passed
        else:
            return  # a call the sources cannot be matched with
        for name, source in zip(positional, sources):
            if source is not None:
                self.sources[(frame.locals, name)] = source
        for name, source in pending.kwargs.items():
            if source is not None and name in bound:
                self.sources[(frame.locals, name)] = source

    # ---- reads -------------------------------------------------------------------------

    def source_of(self, interpreter, frame, node: ast.expr, memo: dict[int, tuple[str, bool] | None] | None = None) -> tuple[str, bool] | None:
        """The source of the value ``node`` evaluates to in ``frame`` (and whether it is reached
        through an ``nn.Module`` instance), or None when Dynamo would have none for it.
        ``memo`` keeps the sources found, by node, for a caller asking of every node of one
        expression (each link of a chain is then one step, not a walk to its root)."""
        if memo is None:
            return self._source_of(interpreter, frame, node, None)
        if id(node) not in memo:
            memo[id(node)] = self._source_of(interpreter, frame, node, memo)
        return memo[id(node)]

    def _source_of(self, interpreter, frame, node: ast.expr, memo) -> tuple[str, bool] | None:
        if isinstance(node, ast.Name):
            return self._name_source(interpreter, frame, node.id)
        if isinstance(node, ast.Attribute):
            base = self._base_source(interpreter, frame, node.value, memo)
            owner = self._bases.get(id(node))
            if base is None and isinstance(owner, Instance) and self.traces:
                base = self.traces[-1].objects.get(owner.addr)  # an object the trace built holds it
            if base is None or id(node) in self._computed:
                return None
            if self._submodule(interpreter, owner, node.attr):
                return f"{base[0]}._modules[{node.attr!r}]", True  # Dynamo's spelling of a submodule
            return f"{base[0]}.{node.attr}", base[1] or self._module_owner(interpreter, frame, node.value)
        if isinstance(node, ast.Subscript):
            base = self._base_source(interpreter, frame, node.value, memo)
            key = node.slice
            held = self._items.get(id(node))
            if base is not None and held is not None and nn_containers.kind(interpreter, held[0]):
                # A module container's item, by index or key: ``<source>._modules['0']``.
                name = nn_containers.item_key(interpreter, held[0], held[1])
                return (f"{base[0]}._modules[{name!r}]", True) if name is not None else None
            if base is None or not isinstance(key, ast.Constant) or type(key.value) not in (int, str):
                return None
            return f"{base[0]}[{key.value!r}]", base[1]
        return None

    def _held_source(self, interpreter, frame, node: ast.expr, value: object) -> tuple[str, bool] | None:
        """``source_of(node)``; for an object with none there (a local the trace assigned, a
        field of an object it built), the source the object was first read from in the call."""
        found = self.source_of(interpreter, frame, node)
        if found is None and isinstance(value, Instance) and self.traces:
            return self.traces[-1].objects.get(value.addr)
        return found

    def _base_source(self, interpreter, frame, node: ast.expr, memo=None) -> tuple[str, bool] | None:
        """``source_of(node)``, taken from the read just told when that read was ``node``'s own."""
        last = self._last_read
        if last is not None and last[0] is node and last[1] == frame.locals:
            return last[2]
        return self.source_of(interpreter, frame, node, memo)

    def _name_source(self, interpreter, frame, name: str) -> tuple[str, bool] | None:
        heap = interpreter.heap
        if name not in frame.declared_global:
            if heap.has(frame.locals, name):
                looped = self._loop_sources.get((frame.locals, name))
                if looped is not None and looped[2] == heap.origin(frame.locals, name):
                    return looped[0], looped[1]  # ``for w in weights``: ``L['weights'][i]``
                if heap.origin(frame.locals, name) is not None:
                    # Assigned in the traced code itself: no source, unless it holds an object
                    # the call read from one (``s = self.a if c else self.b``).
                    value = heap.read(frame.locals, name, None)
                    if isinstance(value, Instance) and self.traces:
                        return self.traces[-1].objects.get(value.addr)
                    return None
                return self.sources.get((frame.locals, name))
            for cells in frame.closure:
                if heap.has(cells, name):
                    # A closure cell of the compiled function is one of its locals to Dynamo.
                    if frame.locals in self.compiled_frames and not self.traces[-1].transformed:
                        return f"L[{name!r}]", False
                    return self._closure_sources.get(frame.locals, {}).get(name)
        if not heap.has(frame.globals, name):
            return None
        trace = self.traces[-1]
        if frame.path == trace.function.module and not trace.transformed:
            return f"G[{name!r}]", False
        module = interpreter.modules.get(frame.path)
        if module is None or not module.name:
            return None
        main = interpreter.heap.read(frame.globals, "__name__", None) == Const("__main__")
        return f"G['__import_{'__main__' if main else module.name.replace('.', '_dot_')}'].{name}", False

    def _owner(self, interpreter, node: ast.expr) -> str:
        """``module.Class`` of the object an attribute read is on, the dotted name of a library
        class an overlay made (``torch.nn.Conv2d``); ``""`` for anything else."""
        owner = self._bases.get(id(node)) if isinstance(node, ast.Attribute) else None
        if not isinstance(owner, Instance):
            return ""
        if not owner.cls.path:
            return owner.cls.qualname  # a library class the overlays made (``torch.nn.Conv2d``)
        module = interpreter.modules.get(owner.cls.path)
        return f"{module.name}.{owner.cls.qualname}" if module is not None and module.name else ""

    @staticmethod
    def _submodule(interpreter, owner: object, attr: str) -> bool:
        """Whether ``owner.attr`` is a submodule an ``nn.Module`` holds (``self.proj``)."""
        if not (isinstance(owner, Instance) and interpreter.is_nn_module(owner.cls)):
            return False
        value = interpreter.heap.read(owner.addr, attr, None)
        return isinstance(value, Instance) and interpreter.is_nn_module(value.cls)

    def _module_owner(self, interpreter, frame, node: ast.expr) -> bool:
        """Whether the value ``node`` names is an ``nn.Module`` instance (read without effects:
        only names, so nothing runs twice)."""
        if not isinstance(node, ast.Name):
            return False
        value = interpreter.heap.read(frame.locals, node.id, None)
        if value is None:
            value = interpreter.heap.read(frame.globals, node.id, None)
        if isinstance(value, CompiledValue):
            value = value.target
        return isinstance(value, Instance) and interpreter.is_nn_module(value.cls)

    def on_read(self, interpreter, frame, node: ast.expr, value: object) -> None:
        """Compiled code read ``value`` at ``node``: the guard Dynamo installs on it, if any."""
        if not self.traces:
            return
        self._pending = None  # a read ends any call or property the sources were kept for
        trace = self.traces[-1]
        found = self.source_of(interpreter, frame, node)
        if isinstance(value, Instance):
            if found is None:
                found = trace.objects.get(value.addr)  # read again through what the trace built
            elif value.addr not in trace.objects:
                trace.objects[value.addr] = found
            if found is not None and value.addr not in trace.expanded and interpreter.is_nn_module(value.cls):
                # Its submodules, however the code reaches them (iteration, ``values()``, a
                # container's own call), are ``<source>._modules['name']`` (once per call:
                # ``self`` is read at every line of a forward).
                trace.expanded.add(value.addr)
                for name, child in interpreter.heap.slots(value.addr).items():
                    if isinstance(name, str) and isinstance(child, Instance) and interpreter.is_nn_module(child.cls):
                        trace.objects.setdefault(child.addr, (f"{found[0]}._modules[{name!r}]", True))
        self._last_read = (node, frame.locals, found)
        if found is None:
            return
        source, module_rooted = found
        if isinstance(value, (Partial, BoundMethod)) or (isinstance(value, Instance) and interpreter.is_nn_module(value.cls)):
            trace.holders.add(source)
        read = interpreter.location(frame, node, "read")
        keys, tests, subscripts, lengths = self._node_roles(interpreter, frame)
        branch = id(node) in tests
        guard: GuardRead | None = None
        if isinstance(value, Const) or (isinstance(value, Sym) and value.origin == "iteration"):
            guard = GuardRead(source, "CONSTANT_MATCH", value, read, module_rooted, branch=branch, owner=self._owner(interpreter, node))
        elif isinstance(value, Function):
            guard = GuardRead(f"{source}.__code__", "ID_MATCH", value.code, read)
        elif isinstance(value, Instance) and _is_enum_member(interpreter, value):
            if id(node) in subscripts and source.startswith("L["):
                # Measured on torch 2.13: a local or attribute member that only indexes a
                # dict, ``W[mode]``, ``W[self.mode]``, installs no guard.
                trace.unguarded.add(source)
            else:
                # ``___check_obj_id(G['mode'], ...)``: an Enum member is guarded by its identity.
                guard = GuardRead(source, "ID_MATCH", value, read, module_rooted, branch=branch)
        elif isinstance(value, TensorValue):
            static = value.parameter
            if isinstance(node, ast.Attribute) and is_buffer(interpreter, self._bases.get(id(node)), node.attr) and source.endswith(f".{node.attr}"):
                # A registered buffer: Dynamo spells it ``self._buffers['mem']`` and keeps its
                # shapes static, as a parameter's (measured on torch 2.13: a buffer resized
                # before each call reaches the limit; a plain tensor attribute, 2 graphs).
                source, static = f"{source[: -len(node.attr) - 1]}._buffers[{node.attr!r}]", True
            guard = GuardRead(source, "TENSOR_MATCH", meta_of(value, static), read, branch=branch)
            if id(node) in lengths:
                trace.concrete.setdefault(source, "len")  # its first size read as a Python int
            elif id(node) in keys:
                trace.concrete.setdefault(source, "iteration")  # unrolled over its first size
        elif isinstance(value, (ListValue, TupleValue)) or (isinstance(value, DictValue) and id(node) in keys):
            length = container_length(interpreter, value)
            if length is not None:
                guard = GuardRead(f"len({source})", "LENGTH_CHECK", Const(length), read)
        elif isinstance(value, Instance) and id(node) in keys and nn_containers.kind(interpreter, value):
            # Iterating an ``nn.ModuleList`` / ``ModuleDict`` unrolls it over its submodules:
            # Dynamo guards how many there are (measured on torch 2.13: a layer appended
            # between calls fails ``len(self._modules['layers']._modules)`` every time).
            names = nn_containers.keys(interpreter, value)
            if names is not None and nn_containers.holds_parameters(value):
                # An ``nn.ParameterList`` iterates ``range(len(self))``: Dynamo guards its int
                # ``_size`` (measured on torch 2.13: one appended between calls fails
                # ``self._modules['ws']._size == 1`` every time, as a module's int attribute).
                guard = GuardRead(f"{source}._size", "CONSTANT_MATCH", Const(len(names)), read, module_rooted)
            elif names is not None:
                guard = GuardRead(f"len({source}._modules)", "LENGTH_CHECK", Const(len(names)), read, module_rooted)
        elif isinstance(value, Instance) and ("._modules[" in source or _ROOT_LOCAL.fullmatch(source)) and interpreter.is_nn_module(value.cls):
            # A submodule compiled code uses: Dynamo checks its class
            # (``___check_type_id(self._modules['head'], ...)``; measured on torch 2.13: a head
            # swapped between a Linear and a Sequential at each call, 2 graphs).
            guard = GuardRead(source, "TYPE_MATCH", module_class(value), read, module_rooted)
        if guard is not None and guard.source not in trace.guards:
            trace.guards[guard.source] = replace(guard, function=frame.qualname)

    def on_attribute(self, interpreter, frame, node: ast.Attribute, base: object) -> None:
        """Traced code reads an attribute of ``base``: a property's getter is inlined with the
        object as its ``self`` (the value it returns has no source of its own)."""
        if not self.traces:
            return
        if isinstance(base, CompiledValue):
            base = base.target
        self._bases[id(node)] = base
        if isinstance(base, Instance) and not interpreter.heap.has(base.addr, node.attr) and isinstance(interpreter.class_attribute(base.cls, node.attr), Property):
            self._computed.add(id(node))
            self._pending = _Pending(frame.locals, [], {}, self.source_of(interpreter, frame, node.value))

    def on_item(self, interpreter, frame, node: ast.Subscript, base: object, key: object) -> None:
        """Traced code looks a key up in a Python dict, list or tuple (``COEFFS[opts.kind]``):
        the lookup needs the key's Python value, so an int key stays a constant of the graph
        (automatic dynamic and ``dynamic_sources`` cannot make it symbolic)."""
        if not self.traces or isinstance(node.slice, ast.Slice):
            return
        if isinstance(base, CompiledValue):
            base = base.target
        self._items[id(node)] = (base, key)
        if isinstance(base, DictValue) and isinstance(key, Instance) and _is_enum_member(interpreter, key):
            self._member_key(interpreter, frame, node, key)
            return
        if isinstance(base, DictValue):
            use = "dict-key"
        elif isinstance(base, (ListValue, TupleValue)) or (isinstance(base, Instance) and interpreter.class_attribute(base.cls, "__tuple__") == Const(True)):
            use = "list-index"
        else:
            return
        if not (isinstance(key, Const) and type(key.value) is int) and not (isinstance(key, Sym) and key.origin == "iteration"):
            return
        trace = self.traces[-1]
        memo: dict[int, tuple[str, bool] | None] = {}
        for inner in ast.walk(node.slice):
            if isinstance(inner, (ast.Name, ast.Attribute, ast.Subscript)):
                found = self.source_of(interpreter, frame, inner, memo)
                if found is not None:
                    trace.concrete.setdefault(found[0], use)

    def on_iterate(self, interpreter, frame, stmt: ast.For | ast.AsyncFor | ast.comprehension, index: int, scope=None) -> None:
        """A ``for`` loop of traced code (or a comprehension's generator, its target in
        ``scope``) bound its target to item ``index`` of a list or tuple: Dynamo unrolls it,
        and the item keeps its source (``L['weights'][0]``), also through ``enumerate(xs)``
        and ``zip(xs, ys)``."""
        bound_in = scope if scope is not None else frame
        if not self.traces:
            return
        pairs: list[tuple[ast.expr, ast.expr]] = []
        iterable, target = stmt.iter, stmt.target
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and not iterable.keywords and isinstance(target, ast.Tuple):
            if iterable.func.id == "enumerate" and len(iterable.args) == 1 and len(target.elts) == 2:
                pairs = [(target.elts[1], iterable.args[0])]
            elif iterable.func.id == "zip" and len(iterable.args) == len(target.elts):
                pairs = list(zip(target.elts, iterable.args))
        else:
            pairs = [(target, iterable)]
        for name, container in pairs:
            if not isinstance(name, ast.Name) or isinstance(container, ast.Starred):
                continue
            value = self._container_value(interpreter, frame, container)
            found = self.source_of(interpreter, frame, container) if isinstance(value, (ListValue, TupleValue)) else None
            key = (bound_in.locals, name.id)
            if found is None:
                self._loop_sources.pop(key, None)
            else:
                self._loop_sources[key] = (f"{found[0]}[{index}]", found[1], interpreter.heap.origin(bound_in.locals, name.id))

    @staticmethod
    def _container_value(interpreter, frame, node: ast.expr) -> object:
        """What a plain name or attribute chain holds now (no call is made)."""
        if isinstance(node, ast.Name):
            value = interpreter.heap.read(frame.locals, node.id, None)
            return value if value is not None else interpreter.heap.read(frame.globals, node.id, None)
        if isinstance(node, ast.Attribute):
            base = Tracer._container_value(interpreter, frame, node.value)
            if isinstance(base, Instance):
                return interpreter.heap.read(base.addr, node.attr, None)
        return None

    def on_test(self, interpreter, frame, test: ast.expr, truth: bool | None) -> None:
        """Traced code takes a branch on ``test``: the outcome, for every guarded value the test
        read (a symbolic value is guarded on it: ``self.kind <= 3``)."""
        if not self.traces:
            return
        trace = self.traces[-1]
        memo: dict[int, tuple[str, bool] | None] = {}
        for inner in ast.walk(test):
            if isinstance(inner, (ast.Name, ast.Attribute, ast.Subscript)):
                found = self.source_of(interpreter, frame, inner, memo)
                if found is not None and found[0] in trace.guards:
                    trace.outcomes.setdefault(found[0], []).append(truth)

    def _member_key(self, interpreter, frame, node: ast.Subscript, member: Instance) -> None:
        """Traced code looks a global Enum member up in a dict (``COEFFS[MODE]``): Dynamo
        guards the dict's key as the member itself, ``list(dict.keys(G['COEFFS']))[0] is
        G['MODE']``, and that guard, spelled on the dict's source, is the one a new member
        fails first (measured on torch 2.13). The member's own guard, made by this read, is
        left to the key guard; a member read elsewhere keeps its own."""
        trace = self.traces[-1]
        found = self.source_of(interpreter, frame, node.slice)
        table = self._base_source(interpreter, frame, node.value) if found is not None and found[0].startswith("G[") else None
        if found is None or table is None:
            return
        read = interpreter.location(frame, node.slice, "read")
        held = trace.guards.get(found[0])
        if held is not None and held.read == read and held.kind == "ID_MATCH":
            del trace.guards[found[0]]
        guard = GuardRead(table[0], "ID_MATCH", member, read, table[1], key_of=found[0])
        trace.guards.setdefault(guard.source, guard)

    def on_call(self, interpreter, frame, node: ast.Call, callee: object, args: list[object], kwargs: dict[str, object]) -> None:
        """Traced code calls ``callee``: note the uses its arguments get, and the sources the
        callee's parameters will have."""
        if not self.traces:
            return
        trace = self.traces[-1]
        use = ""
        if isinstance(callee, ModuleValue) and not callee.path:
            use = CONCRETE_USES.get(callee.name, "")
            last = callee.name.rsplit(".", 1)[-1]
            if not use and callee.name.startswith("torch.") and last in ("interpolate", "dropout", "split", "reshape", "view", "scaled_dot_product_attention", "bernoulli"):
                use = CONCRETE_USES.get(f"torch.nn.functional.{last}", "") or CONCRETE_USES.get(f"torch.{last}", "op")
        elif isinstance(node.func, ast.Attribute) and node.func.attr in CONCRETE_METHODS and not isinstance(callee, (Function, BoundMethod)) or (
            isinstance(callee, BoundMethod) and isinstance(callee.receiver, TensorValue) and isinstance(node.func, ast.Attribute) and node.func.attr in CONCRETE_METHODS
        ):
            use = CONCRETE_METHODS[node.func.attr]  # type: ignore[union-attr]
        if use:
            named = [(i, None, arg) for i, arg in enumerate(node.args)] + [(-1, k.arg, k.value) for k in node.keywords if k.arg not in ("input", "training", "inplace")]
            for index, keyword, arg in named:
                this = use
                if use == "op-interpolate":
                    this = "op-interpolate-size" if keyword == "size" or index == 1 else "op-interpolate-scale" if keyword == "scale_factor" or index == 2 else ""
                if not this:
                    continue
                if this in SIZE_TUPLE_USES and not any(isinstance(a, ast.Starred) for a in node.args):
                    self._size_elements(interpreter, frame, arg, kwargs.get(keyword) if keyword else (args[index] if index < len(args) else None), this)
                # The argument and every sourced value it is computed from (``-self.n / tau``).
                chunks = _chunks(callee, node, args, kwargs, index, keyword) if this == "op-split" else None
                slot: int | None | bool = False  # not looked for yet
                for inner in ast.walk(arg):
                    if isinstance(inner, (ast.Name, ast.Attribute, ast.Subscript)):
                        found = self.source_of(interpreter, frame, inner)
                        if found is not None:
                            trace.concrete.setdefault(found[0], this)
                            if this == "op-split":
                                trace.chunks.setdefault(found[0], chunks)
                            elif this == "op-interpolate-scale":
                                if slot is False:
                                    slot = stack_slot(interpreter, frame, node) if frame.locals in self.compiled_frames else None
                                if slot is not None:
                                    trace.resumes.setdefault(found[0], slot)  # type: ignore[arg-type]
        starred = [a for a in node.args if isinstance(a, ast.Starred)]
        if len(starred) > 1:
            self._pending = None
            return
        if _disabled(callee) and not starred:
            self._passed(interpreter, frame, node, args, kwargs)
        arg_sources = self._spread_sources(interpreter, frame, node, args)
        kw_sources = {k.arg: self._held_source(interpreter, frame, k.value, kwargs.get(k.arg)) for k in node.keywords if k.arg}
        for spread in (k for k in node.keywords if k.arg is None):
            # ``f(**kwargs)``: each key passed has its source in the dict (``L['kwargs']['k']``).
            found = self.source_of(interpreter, frame, spread.value)
            for key in kwargs:
                if key not in kw_sources:
                    kw_sources[key] = (f"{found[0]}[{key!r}]", found[1]) if found is not None else None
        receiver = None
        found_callee = self._held_source(interpreter, frame, node.func, callee)
        callee_source = found_callee[0] if found_callee is not None else None
        rooted = found_callee[1] if found_callee is not None else False
        target = callee
        if isinstance(callee, CompiledValue):
            target = callee.target
        if isinstance(target, BoundMethod):
            if isinstance(node.func, ast.Attribute) and self._bases.get(id(node.func)) == target.receiver:
                receiver = self._held_source(interpreter, frame, node.func.value, target.receiver)  # ``obj.method(x)``: bound at the lookup
            elif callee_source is not None:
                receiver = (f"{callee_source}.__self__", rooted)  # a bound method held somewhere (``cfg.fn(x)``)
        elif isinstance(target, Instance):
            receiver = found_callee  # ``obj(x)``: ``__call__`` / ``forward`` bound to it
            if found_callee is not None and not target.cls.path and interpreter.is_nn_module(target.cls):
                self._parameters(interpreter, frame, node, target, found_callee)
        elif isinstance(target, Partial) and callee_source is not None:
            bound = [(f"{callee_source}.args[{i}]", rooted) for i in range(len(target.args))]
            arg_sources = bound + arg_sources
            for key, _ in target.keywords:
                kw_sources.setdefault(key, (f"{callee_source}.keywords[{key!r}]", rooted))
            # Dynamo guards a partial's bound values where it calls the partial (the line it
            # names when one fails), whatever the callee does with them.
            read = interpreter.location(frame, node, "read")
            held = [(f"{callee_source}.args[{i}]", v) for i, v in enumerate(target.args)]
            held += [(f"{callee_source}.keywords[{k!r}]", v) for k, v in target.keywords]
            for source, value in held:
                if isinstance(value, Const) or (isinstance(value, Sym) and value.origin == "iteration"):
                    trace.guards.setdefault(source, GuardRead(source, "CONSTANT_MATCH", value, read, rooted))
        elif isinstance(target, Partial):
            arg_sources = [None] * len(target.args) + arg_sources
        if isinstance(target, ClassValue):
            receiver = None
        receiver_value = target.receiver if isinstance(target, BoundMethod) else target if isinstance(target, Instance) else None
        function_source = found_callee if isinstance(target, Function) and callee_source is not None else None
        pending = _Pending(frame.locals, arg_sources, kw_sources, receiver, receiver_value, _started(interpreter, target), function_source)
        self._pending = pending

    def _size_elements(self, interpreter, frame, arg: ast.expr, value: object, use: str) -> None:
        """A tuple or list of sizes handed whole to a shape op (``x.reshape(shape)``,
        ``interpolate(x, size=hw)``): Dynamo reads each int in it, a ``CONSTANT_MATCH`` on
        ``<source>[i]`` (measured on torch 2.13: ``shape[0] == 24`` when one changes)."""
        if not isinstance(value, (TupleValue, ListValue)) or not isinstance(arg, (ast.Name, ast.Attribute, ast.Subscript)):
            return
        found = self.source_of(interpreter, frame, arg)
        if found is None:
            return
        elements = value.elements if isinstance(value, TupleValue) else interpreter.items(value)
        trace = self.traces[-1]
        read = interpreter.location(frame, arg, "read")
        for i, element in enumerate(elements or ()):
            if isinstance(element, Const) and type(element.value) is int:
                source = f"{found[0]}[{i}]"
                trace.guards.setdefault(source, GuardRead(source, "CONSTANT_MATCH", element, read, found[1], function=frame.qualname))
                trace.concrete.setdefault(source, use)

    def _spread_sources(self, interpreter, frame, node: ast.Call, args: list[object]) -> list[tuple[str, bool] | None]:
        """The sources of the values a call passes by position; the items of one ``*args``
        are ``<source of args>[i]``, as Dynamo spells them."""
        plain = [a for a in node.args if not isinstance(a, ast.Starred)]
        spread_count = len(args) - len(plain)
        out: list[tuple[str, bool] | None] = []
        position = 0
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                found = self.source_of(interpreter, frame, arg.value)
                out += [(f"{found[0]}[{i}]", found[1]) if found is not None else None for i in range(spread_count)]
                position += spread_count
            else:
                out.append(self._held_source(interpreter, frame, arg, args[position] if position < len(args) else None))
                position += 1
        return out

    def _parameters(self, interpreter, frame, node: ast.Call, layer: Instance, source: tuple[str, bool]) -> None:
        """Traced code calls a library layer (``nn.Linear``): Dynamo inlines its ``forward``,
        which reads each parameter, a ``TENSOR_MATCH`` on ``<layer>._parameters['name']`` with
        static shapes (``force_parameter_static_shapes``). Measured on torch 2.13, a shape change
        is reported on the parameter the layer registers last (``bias`` before ``weight``)."""
        trace = self.traces[-1]
        read = interpreter.location(frame, node, "read")
        params = [(name, value) for name, value in interpreter.heap.slots(layer.addr).items() if isinstance(name, str) and isinstance(value, TensorValue)]
        for name, value in reversed(params):
            guard = GuardRead(f"{source[0]}._parameters[{name!r}]", "TENSOR_MATCH", meta_of(value), read, source[1])
            trace.guards.setdefault(guard.source, guard)
        for attr, use in LAYER_CONSTANTS.get(layer.cls.qualname, ()):
            value = interpreter.heap.read(layer.addr, attr, None)
            if isinstance(value, Const) and type(value.value) in (int, float):
                guard = GuardRead(f"{source[0]}.{attr}", "CONSTANT_MATCH", value, read, True, function=frame.qualname)
                trace.guards.setdefault(guard.source, guard)
                trace.concrete.setdefault(guard.source, use)
    def _passed(self, interpreter, frame, node: ast.Call, args: list[object], kwargs: dict[str, object]) -> None:
        """Traced code passes values to a disabled function: Dynamo breaks the graph and builds
        the arguments for the eager call, which realizes what each one holds. A list, tuple or
        named tuple gets its length and each element guarded, a dict each value, a function the
        identity of its code, an Enum member its identity, a tensor its metadata, ``None`` its value (each with the source
        reached through the argument: ``L['hp'][0]``, ``L['cfg'].margin``); another object is
        passed as it is (its attributes are not read). Measured on the lab's proofs: a str or
        bool only passed along gets no guard, nor does an int, float, str or bool inside what
        is passed; an int or float argument passed itself does."""
        trace = self.traces[-1]
        read = interpreter.location(frame, node, "read")
        named = list(zip(node.args, args)) + [(k.value, kwargs[k.arg]) for k in node.keywords if k.arg in kwargs]
        for arg, value in named:
            found = self.source_of(interpreter, frame, arg)
            if found is not None:
                own = interpreter.location(frame, arg, "read")  # the argument's own read, just made
                self._realize(interpreter, trace, found[0], found[1], value, read, PASSED_DEPTH, own)

    def _realize(self, interpreter, trace: Trace, source: str, rooted: bool, value: object, read: Location, depth: int, own: Location | None = None) -> None:
        guard: GuardRead | None = None
        inner: list[tuple[str, object]] = []
        heap = interpreter.heap
        if isinstance(value, Const) or (isinstance(value, Sym) and value.origin == "iteration"):
            kind = value.kind
            if kind in ("str", "bool") and depth == PASSED_DEPTH:
                held = trace.guards.get(source)
                if held is not None and held.read == own:
                    del trace.guards[source]  # only passed along: rebuilt from its source, never guarded
                return
            if kind in ("str", "bool", "int", "float") and depth < PASSED_DEPTH:
                return  # a Python scalar inside what is passed: no guard (the lab's proofs)
            guard = GuardRead(source, "CONSTANT_MATCH", value, read, rooted, passed=True)
        elif isinstance(value, Function):
            guard = GuardRead(f"{source}.__code__", "ID_MATCH", value.code, read, passed=True)
        elif isinstance(value, Instance) and _is_enum_member(interpreter, value):
            # An Enum member, at any depth of what is passed: realized by its identity
            # (``___check_obj_id(hp['mode'], ...)``, measured on the lab's proofs).
            guard = GuardRead(source, "ID_MATCH", value, read, rooted, passed=True)
        elif isinstance(value, TensorValue):
            guard = GuardRead(source, "TENSOR_MATCH", meta_of(value), read, passed=True)
        elif isinstance(value, TupleValue):
            guard = GuardRead(f"len({source})", "LENGTH_CHECK", Const(len(value.elements)), read, passed=True)
            inner = [(f"{source}[{i}]", element) for i, element in enumerate(value.elements)]
        elif isinstance(value, ListValue):
            length = container_length(interpreter, value)
            if length is not None:
                guard = GuardRead(f"len({source})", "LENGTH_CHECK", Const(length), read, passed=True)
                inner = [(f"{source}[{i}]", heap.read(value.addr, i, TOP)) for i in range(length)]
        elif isinstance(value, DictValue):
            slots = heap.slots(value.addr)
            if not slots.get("__unknown__"):
                inner = [(f"{source}[{key!r}]", item) for key, item in slots.items() if type(key) in (int, str) and key != "__unknown__"]
        elif isinstance(value, Instance) and interpreter.class_attribute(value.cls, "__tuple__") == Const(True):
            fields = interpreter.class_attribute(value.cls, "__fields__")
            names = [f.value for f in fields.elements if isinstance(f, Const) and isinstance(f.value, str)] if isinstance(fields, TupleValue) else []
            inner = [(f"{source}.{name}", heap.read(value.addr, name, TOP)) for name in names if heap.has(value.addr, name)]
        if guard is not None:
            held = trace.guards.get(guard.source)
            if held is None:
                trace.guards[guard.source] = guard
            elif held.read in (read, own) and not held.passed:
                trace.guards[guard.source] = replace(held, passed=True)  # the argument's own read
        if depth > 0:
            for item_source, item in inner:
                self._realize(interpreter, trace, item_source, rooted, item, read, depth - 1)

    def _node_roles(self, interpreter, frame) -> tuple[set[int], set[int], set[int], set[int]]:
        """Ids of the nodes of the running function whose dict keys compiled code uses (the
        argument of ``len()`` and the unrolling builtins, the iterable of a ``for``, the object
        of ``.keys()`` / ``.items()`` / ``.values()``), of the nodes in its branches' tests, of
        the keys it subscripts with (``W[mode]``), and of the arguments of ``len()`` alone (a
        tensor's ``len()`` is not an iteration)."""
        key = self._frame_code.get(frame.locals)
        if key is None:
            return set(), set(), set(), set()
        found = self._roles.get(key)
        if found is not None:
            return found
        tree = interpreter.codes.get(key)
        keys: set[int] = set()
        tests: set[int] = set()
        subscripts: set[int] = set()
        lengths: set[int] = set()
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Subscript):
                subscripts.add(id(node.slice))
            if isinstance(node, (ast.For, ast.comprehension)):
                keys.add(id(node.iter))
            elif isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Name) and f"builtins.{func.id}" in UNROLLING:
                    keys.update(id(a) for a in node.args)
                    if func.id == "len":
                        lengths.update(id(a) for a in node.args)
                elif isinstance(func, ast.Attribute) and func.attr in KEY_METHODS:
                    keys.add(id(func.value))
            elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
                tests.update(id(inner) for inner in ast.walk(node.test))
        found = (keys, tests, subscripts, lengths)
        self._roles[key] = found
        return found


# A local of the compiled frame itself (``L['self']``, ``L['model']``).
_ROOT_LOCAL = re.compile(r"L\['[A-Za-z_][A-Za-z0-9_]*'\]")


def module_class(value: Instance) -> Const:
    """What a ``TYPE_MATCH`` on a module compares: its class (file and qualname)."""
    return Const(("class", value.cls.path, value.cls.qualname))


def free_variables(interpreter, function: Function) -> list[str]:
    """The names of a function's closure cells in ``__closure__`` order (CPython sorts
    ``co_freevars``): the names its body reads that its own scope does not bind and an
    enclosing scope of the run holds."""
    if not function.closure:
        return []
    node = interpreter.codes.get(function.code)
    if node is None or not hasattr(node, "args"):
        return []
    spec = node.args
    own = {a.arg for a in spec.posonlyargs + spec.args + spec.kwonlyargs} | {a.arg for a in (spec.vararg, spec.kwarg) if a is not None}
    body = node.body if isinstance(node.body, list) else [node.body]
    names = [n for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Name)]
    stored = {n.id for n in names if not isinstance(n.ctx, ast.Load)}
    loaded = {n.id for n in names if isinstance(n.ctx, ast.Load)}
    return sorted(name for name in loaded - own - stored if any(interpreter.heap.has(cells, name) for cells in function.closure))


def container_length(interpreter, value: object) -> int | None:
    """The length a ``LENGTH_CHECK`` compares: a tuple's, or a list's or dict's where its items
    are all known; None otherwise."""
    if isinstance(value, TupleValue):
        return len(value.elements)
    if not isinstance(value, (ListValue, DictValue)):
        return None
    slots = interpreter.heap.slots(value.addr)
    if slots.get("__unknown__"):
        return None
    return len([k for k in slots if k != "__unknown__"])


def stack_slot(interpreter, frame, call: ast.Call) -> int | None:
    """The slot of the Python stack that ``call``'s result takes when Dynamo breaks the graph
    at it and hands the stack to a resume function (``___stack<slot>``), counting the values
    its statement pushed before it (measured on torch 2.13, Python 3.11: ``y = f(x)[0]`` and
    ``y = f(x).relu()`` 0; ``y = torch.relu(f(x))`` 1, the function; ``y = a + f(x)`` 1;
    ``y = torch.add(a, other=f(x))`` 2). None where the statement is not an assignment (a
    ``return`` compiles no resume) or the path to the call holds what this does not count."""
    stmt = frame.statement
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
        return None

    def holds(tree: ast.AST) -> bool:
        return any(n is call for n in ast.walk(tree))

    slot, node = 0, stmt.value
    while node is not call:
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Subscript) and holds(node.value):
            node = node.value
        elif isinstance(node, ast.BinOp):
            slot += 0 if holds(node.left) else 1
            node = node.left if holds(node.left) else node.right
        elif isinstance(node, ast.Call):
            if holds(node.func):
                node = node.func
                continue
            if not _plain_callee(interpreter, frame, node.func):
                return None
            slot += 1  # the function (a module's function or a name: no ``self`` pushed)
            operands = [*node.args, *(k.value for k in node.keywords)]
            at = next((i for i, operand in enumerate(operands) if holds(operand)), None)
            if at is None or any(isinstance(operand, ast.Starred) for operand in operands[: at + 1]):
                return None
            slot += at
            node = operands[at]
        else:
            return None
    return slot


def _plain_callee(interpreter, frame, func: ast.expr) -> bool:
    """Whether calling ``func`` pushes the function alone: a name, or a module's attribute."""
    if isinstance(func, ast.Name):
        return True
    while isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name) and isinstance(interpreter.load_name(frame, func.id), ModuleValue)


def _chunks(callee: object, node: ast.Call, args: list[object], kwargs: dict[str, object], index: int, keyword: str | None) -> int | None:
    """How many chunks ``x.split(n, dim)`` / ``torch.split(x, n, dim)`` makes, where the tensor's
    size along ``dim`` and the int ``n`` (the argument at ``index``) are known; None otherwise."""
    method = isinstance(callee, BoundMethod) and isinstance(callee.receiver, TensorValue)
    tensor = callee.receiver if method else (args[0] if args else None)  # type: ignore[union-attr]
    size_at, dim_at = (0, 1) if method else (1, 2)
    if keyword not in (None, "split_size_or_sections", "split_size") or (keyword is None and index != size_at):
        return None
    size = kwargs.get(keyword) if keyword else (args[size_at] if len(args) > size_at else None)
    dim = kwargs.get("dim", args[dim_at] if len(args) > dim_at else Const(0))
    if not isinstance(tensor, TensorValue) or tensor.sizes is None or not isinstance(size, Const) or not isinstance(dim, Const):
        return None
    n, d = size.value, dim.value
    if type(n) is not int or type(d) is not int or n <= 0 or not -len(tensor.sizes) <= d < len(tensor.sizes):
        return None
    length = tensor.sizes[d]
    return None if length is None else -(-length // n)


def _started(interpreter, callee: object) -> CodeRef | None:
    """The code a call of ``callee`` passes its arguments to, where the run knows it: a
    function's own, a bound method's, an instance's ``__call__``, a module's ``forward`` (its
    hooks, which run first, take other arguments)."""
    if isinstance(callee, BoundMethod):
        callee = callee.function
    if isinstance(callee, Function):
        return callee.code
    if isinstance(callee, Instance):
        method = interpreter.class_attribute(callee.cls, "__call__")
        if not isinstance(method, Function) and interpreter.is_nn_module(callee.cls):
            method = interpreter.class_attribute(callee.cls, "forward")
        return method.code if isinstance(method, Function) else None
    return None


def _disabled(callee: object) -> bool:
    """Whether ``callee`` is a ``torch.compiler.disable``d function (its calls run eagerly)."""
    return isinstance(callee, Partial) and isinstance(callee.function, ModuleValue) and callee.function.name == EAGER
