"""Value flow: what a name, an attribute chain or a call may hold, without running anything.

The region finder asks it what ``torch.compile(x)`` compiles; the guard model asks it what
names, attributes, receivers of writes and callees hold. The answer is a set of abstract
values (``Value``), computed on demand from the per-file facts (``facts.FunctionFacts.flows``,
``returns``, ``ClassFacts.flows``, ``ModuleFacts.flows``: where each name is bound and to which
expression, as source spans) and memoised per query.

API (stable; everything else in this module is private)::

    flow = ValueFlow(index)
    flow.values_of(expr, facts, scope)        -> frozenset[Value]
    flow.attribute_values(owner, attr)        -> frozenset[Value]
    flow.element_values(container, key=None)  -> frozenset[Value]
    flow.call_values(callee, facts, scope, call=None) -> frozenset[Value]
    flow.callees(call, facts, scope)          -> tuple[FunctionRef, ...]
    flow.function_ref(value)                  -> FunctionRef | None
    flow.class_of(value)                      -> tuple[ModuleFacts, ClassFacts] | None
    flow.parameter_values(facts, scope, name) -> frozenset[Value]

``expr`` is an ``ast.expr`` or the source text of one (``"self._optimizer.step"``,
``"build_model(cfg)"``); ``scope`` is the ``FunctionFacts`` it appears in, ``None`` at module
level (a class body's names are looked up with the class's module scope). An ``ast.expr`` must
come from the file of ``facts`` (positions are not used, only its shape).

Sources followed:

- plain, annotated, tuple (``a, (b, c) = ...``, starred) and walrus assignments, ``for`` and
  comprehension targets (an element of the iterable; ``enumerate``, ``zip``, ``.items()``,
  ``.values()``, ``.named_children()``, ``.children()``, ``.modules()`` understood),
  ``with ... as`` (unknown);
- constructor calls (an ``instance`` of the project class, a ``torch-instance`` of a torch
  class); calls of project functions, methods, classmethods and staticmethods: the values of
  their ``return`` expressions, with the callee's parameters bound to the call's arguments,
  followed across modules to ``max_depth`` calls;
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
  ``max_callers`` of them).

Where it over-approximates (a superset of what can happen; the region finder reports every
candidate, the guard model should treat several values as "one of"):

- flow-insensitive per scope: every binding of a name in a function counts at every point of
  it (``model = Net(); model = torch.compile(model)`` holds the ``Net`` instance throughout);
- ``self.x`` is the union of every assignment in every method of the class and its bases;
- a list grown by ``append`` holds any of its appended values at any index;
- a parameter's values from call sites are the union over every call site found;
- a subscript whose key is not a literal holds any element of the container.

Where it under-approximates (the value is ``unknown``, with ``detail`` saying why, from
``UNKNOWN_REASONS``): values from outside the project other than torch (``external``),
parameters of functions nobody in the project calls (``parameter``), computed attribute names
and keys (``dynamic``), chains longer than the bounds (``depth``), names bound nowhere the
index sees (``unbound``), results of calls whose callee is not known (``call``), values that
``global`` statements in functions rebind.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from recompile_lint.analysis.facts import ClassFacts, FunctionFacts, ModuleFacts
from recompile_lint.analysis.index import FunctionRef, ProjectIndex

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

    @property
    def name(self) -> str:
        """The last component of ``ref`` (``AdamW``, ``forward``)."""
        return self.ref.rsplit(".", 1)[-1]

    def is_torch(self) -> bool:
        """A torch object (callable, class, instance, module, or a container of torch)."""
        return self.ref == "torch" or self.ref.startswith("torch.")


class ValueFlow:
    """Answers value questions over a project index, memoising every answer."""

    def __init__(self, index: ProjectIndex, max_depth: int = 4, max_callers: int = 24, max_values: int = 48):
        self.index = index
        self.max_depth = max_depth  # calls followed into callees (returns), and callers (parameters)
        self.max_callers = max_callers  # call sites looked at per parameter
        self.max_values = max_values  # values kept per answer (the rest: unknown "depth")

    def values_of(self, expr: ast.expr | str, facts: ModuleFacts, scope: FunctionFacts | None) -> frozenset[Value]:
        """What ``expr`` may evaluate to in ``scope`` of ``facts``'s module."""
        raise NotImplementedError

    def attribute_values(self, owner: Value, attr: str) -> frozenset[Value]:
        """What ``owner.attr`` may hold: assignments to ``self.attr`` in the class's methods,
        class attributes, methods (bound on an instance), properties; a module's global or
        submodule; a torch object's attribute (a bound method of a torch instance)."""
        raise NotImplementedError

    def element_values(self, container: Value, key: str | int | None = None) -> frozenset[Value]:
        """The elements of a container value; with ``key`` (a literal index or dict key), the
        one at that key where the container is exact, else every element."""
        raise NotImplementedError

    def call_values(self, callee: Value, facts: ModuleFacts, scope: FunctionFacts | None, call: ast.Call | None = None) -> frozenset[Value]:
        """What calling ``callee`` returns (with ``call``'s arguments bound to its parameters,
        evaluated in ``scope`` of ``facts``)."""
        raise NotImplementedError

    def callees(self, call: ast.Call | str, facts: ModuleFacts, scope: FunctionFacts | None) -> tuple[FunctionRef, ...]:
        """The project functions a call runs first: a function's or method's code, a class's
        ``__init__``, an nn.Module instance's ``forward``, an object's ``__call__``."""
        raise NotImplementedError

    def function_ref(self, value: Value) -> FunctionRef | None:
        """The project code object of a function, method, bound method, lambda or partial
        value; None for anything else."""
        raise NotImplementedError

    def class_of(self, value: Value) -> tuple[ModuleFacts, ClassFacts] | None:
        """The project class of an instance (or of a class value itself)."""
        raise NotImplementedError

    def parameter_values(self, facts: ModuleFacts, scope: FunctionFacts, name: str) -> frozenset[Value]:
        """What parameter ``name`` of ``scope`` may hold (see the module docstring)."""
        raise NotImplementedError
