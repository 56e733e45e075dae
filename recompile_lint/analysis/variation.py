"""Variation: evidence that a guarded value differs between calls of the same compiled code.

A guard (``guards``) fails only when its value changes between calls. This module looks for
what changes it, where the value lives (its ``Storage``):

* a write that runs between calls: inside the compiled region itself (every call); in a loop
  that also calls the region; in a function called from such a loop, or that calls the
  region and is itself called in a loop; in a hook or a function ``apply``'d per step; in a
  framework callback (``on_train_epoch_start``, ``training_step``); an increment in a function
  nothing in the project calls (someone calls it, and a counter only counts when called again);
* different values at the call sites of the region (literals, loop variables, values that
  grow per iteration, data-dependent values);
* instances compiled one by one from one class whose value differs per instance.

A write that runs only before the first call (at import, in ``__init__``, in setup code that
runs once, a config or argparse read once) is not evidence: the value is fixed when the region
first compiles. Each piece of evidence counts the values it allows: an increment, a loop
variable or a value read from data is unbounded; literals count one value each.
"""

from __future__ import annotations

import ast
import os
import re
import textwrap
from typing import Callable, Iterator
from dataclasses import dataclass, field

from recompile_lint.analysis.callsites import CallSite, binds, call_sites, collect_call_sites, names_of
from recompile_lint.analysis.facts import FunctionFacts, ModuleFacts, Mutation, expects_error
from recompile_lint.analysis.guards import HOOKED, PredictedGuard, Storage, forward_hooks
from recompile_lint.analysis.index import FunctionRef, FunctionTrees, ProjectIndex
from recompile_lint.analysis.parsing import parse_source
from recompile_lint.analysis.regions import CompiledRegion, within
from recompile_lint.analysis.textscan import Names
from recompile_lint.models import Location

# Methods a framework calls again and again (Lightning, Keras-style trainers, PyTorch's own
# Module/optimizer/scheduler protocol): a write in them runs between steps.
CALLBACK_PREFIXES = ("on_",)
CALLBACK_NAMES = frozenset(
    {
        "training_step", "validation_step", "test_step", "predict_step", "forward", "__call__", "step", "__next__",
        "__iter__", "__getitem__", "backward", "optimizer_step", "update", "train_step", "eval_step",
    }
)  # fmt: skip
# Method names too common to tell a receiver's class by (``obj.update()`` may be a dict's).
COMMON_METHODS = frozenset(
    {
        "forward", "update", "step", "get", "set", "append", "pop", "add", "run", "call", "apply", "reset", "clear",
        "copy", "items", "keys", "values", "to", "train", "eval", "backward", "zero_grad", "state_dict", "load_state_dict",
        "close", "open", "read", "write", "start", "stop", "put", "send", "format", "join", "split", "sum", "mean",
    }
)  # fmt: skip
HOOK_METHODS = frozenset({"register_forward_pre_hook", "register_forward_hook", "register_module_forward_pre_hook", "register_module_forward_hook"})
# How deep to follow callers (a write in a helper of a helper of the training loop).
CALLER_DEPTH = 4
UNBOUNDED = None


def variation_of(index: ProjectIndex, regions: list[CompiledRegion] | None = None) -> "Variation":
    """The run's one ``Variation`` (its call graph and file walks are shared by every
    question); the engine creates it with the run's regions."""
    found = index.memo.get("variation")
    if not isinstance(found, Variation) or (regions is not None and found.regions != regions):
        found = Variation(index, list(regions or []))
        index.memo["variation"] = found
        index.memo["aliases"] = found.aliases  # for the call sites of local compiled objects
    return found


@dataclass(frozen=True)
class Evidence:
    """Why a guarded value takes more than one value across calls, and how many it can take."""

    locations: tuple[Location, ...]  # the writes or calls that change it (roles write / call)
    values: int | None  # distinct values the evidence allows (None: unbounded)
    why: str  # a short phrase: "incremented in the loop that calls `poly`"
    inside: bool = False  # the compiled code itself changes it (on every call)
    kinds: frozenset[str] = frozenset()  # kinds of the values written or passed
    per_instance: bool = False


@dataclass
class _Writes:
    locations: list[Location] = field(default_factory=list)
    literals: set[str] = field(default_factory=set)
    unbounded: bool = False
    inside: bool = False
    why: list[str] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)


# A call in a loop: (callee as written, the lines of the loops around it).
_LoopCall = tuple[str, tuple[int, ...]]


class Variation:
    """Evidence for the guards of a run's regions."""

    def __init__(self, index: ProjectIndex, regions: list[CompiledRegion]):
        self.index = index
        self.regions = regions
        self._callers: dict[FunctionRef, list[tuple[FunctionRef | None, str, tuple[int, ...]]]] = {}
        self._by_name: tuple[dict[str, list], dict[str, set[str]]] | None = None  # ``_calls_by_name``
        self._executes: dict[tuple[int, FunctionRef], bool] = {}
        self._names: dict[int, set[str]] = {}
        self._reached: dict[int, set[FunctionRef]] = {}
        self._hooks: set[FunctionRef] | None = None
        self._aliases: dict[int, set[tuple[FunctionRef, str]]] = {}
        self._methods: dict[str, list[FunctionRef]] | None = None
        self._wanted: set[str] | None = None
        self._function_trees: FunctionTrees | None = None
        self._passed: dict[str, list[tuple[str, FunctionRef, str, str]]] = {}
        self._function_sites: dict[FunctionRef, list[CallSite]] = {}
        self._strings: dict[str, list[tuple[tuple[str | None, ...], tuple[tuple[str, str], ...]]]] | None = None
        self._resolved: dict[tuple[str, str, str], FunctionRef | None] = {}
        self._tops: set[str] | None = None
        # Region-independent indexes that let a region look only at the calls that can run it
        # (``region_calls``), rather than at every call of a loop once per region.
        self._region_ids: set[int] | None = None
        self._any_aliases: set[tuple[FunctionRef, str]] | None = None
        self._alias_params: dict[int, dict[FunctionRef, set[str]]] = {}
        self._may_execute: dict[tuple[FunctionRef, int], bool] = {}
        self._call_tables: dict[tuple[str, str], tuple[dict[str, list[_LoopCall]], list[_LoopCall], dict[_LoopCall, int]]] = {}
        self._unbound: dict[int, set[tuple[str, str, str]]] = {}
        self._wanted_names: Names | None = None
        # Each dotted prefix of a parsed file's import targets -> those files (``_importers``),
        # built as files are parsed: asking per region costs what it finds.
        self._importing: dict[str, set[str]] = {}
        self._import_indexed: set[str] = set()
        self._import_known = -1  # ``index.known_count()`` when the table was last brought up to date
        self._handlers: dict[str, list[tuple[int, int]]] = {}  # a file's ``except`` handlers' lines

    # ---- entry ---------------------------------------------------------------------------

    def evidence(self, guard: PredictedGuard) -> Evidence | None:
        storage = guard.storage
        if storage.kind == "parameter":
            return self.parameter_evidence(guard)
        if storage.kind == "closure":
            return None
        writes = self.writes_of(guard)
        found = self.judge_writes(guard, writes) if writes else None
        if found is None and storage.kind == "attribute":
            found = self.per_instance_evidence(guard)
        return found

    def per_instance_evidence(self, guard: PredictedGuard) -> Evidence | None:
        """Instances of one class compiled one by one (``for block in blocks: block.compile()``,
        ``[torch.compile(Block(c, 2 ** i)) for i in ...]``) share the method's code object and so
        one cache: an attribute each instance sets from its constructor's argument is a
        different constant per instance."""
        region = guard.region
        storage = guard.storage
        if not region.site.in_loop or not region.model_class or guard.depth != 0:
            return None
        if self._resets_before_site(region):
            return None  # Dynamo is reset before each compile here: no instance finds another's entry
        found = self.index.resolve_class(storage.owner, storage.path)
        init = self.index.class_attr(*found, storage.name) if found is not None else None
        if init is None or not init[2].from_param or init[2].kind not in ("int", "str", "unknown"):
            return None
        # Instances built alike (``for layer in model.layers: layer.compile()`` over layers a
        # factory made with one configuration) hold equal values, and the guards pass: only
        # instances whose constructor is handed a loop's variable for this attribute differ.
        if found is None or not self._built_per_iteration(found, init, storage.name):
            return None
        site = region.site_location()
        note = f"compiles each instance of `{init[1].name}` on its own, each with its own `{storage.name}`"
        return Evidence(
            (Location(site.path, site.line, site.column, "call", note, site.end_line, site.end_column),),
            UNBOUNDED,
            f"set per instance from `{init[1].name}.__init__`'s argument",
            kinds=frozenset({init[2].kind}),
            per_instance=True,
        )

    def _resets_before_site(self, region: CompiledRegion) -> bool:
        """Whether the code that runs the region's compile call resets Dynamo first at every
        run of it (``torch._dynamo.reset()`` earlier in the same function, inside the loop
        that repeats the call if there is one): each instance compiled there starts from an
        empty cache, as a test helper that resets before each model it compiles does."""
        tree = self._tree_of(region.site_path)
        if tree is None:
            return False
        line = region.site.span.line
        if resets_before(tree.body, line):
            return True
        if region.site.form != "wrapper":
            return False
        # A project wrapper's call (``self._test_common(model, ...)``): the wrapper resets
        # before each compile call of its own.
        facts = self.index.facts(region.site_path)
        call = next((n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.lineno == line and n.col_offset + 1 == region.site.span.column), None)
        if facts is None or call is None:
            return False
        ref = self.resolve_callee(facts, facts.function(region.site.function) if region.site.function else None, _dotted(call.func))
        wrapper = self.index.facts(ref.path) if ref is not None else None
        inner = [site for site in wrapper.compile_sites if site.function == ref.qualname] if wrapper is not None and ref is not None else []
        wrapper_tree = self._tree_of(ref.path) if inner and ref is not None else None
        return wrapper_tree is not None and all(resets_before(wrapper_tree.body, site.span.line) for site in inner)

    def _tree_of(self, path: str) -> ast.Module | None:
        """A file's tree: the one another analysis kept (``kept_tree``), else parsed here and
        not kept (keeping every tree would cost the run its memory); None where it does not parse."""
        tree = self.index.kept_tree(path)
        if tree is not None:
            return tree
        text = self.index.text(path)
        if text is None:
            return None
        try:
            return parse_source(text, path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None

    def _built_per_iteration(self, compiled: tuple, init: tuple, attr: str) -> bool:
        """Whether some construction of the compiled class hands the ``__init__`` parameter
        that ``attr`` is set from a variable of a loop or comprehension around the call
        (``[Block(dim, i) for i in range(depth)]``, ``torch.compile(Block(c, 2 ** i))``)."""
        params = self._init_params_of(init[0], init[1], attr)
        if not params:
            return False
        positions, names = params
        class_name = compiled[1].name
        pattern = re.compile(rf"\b{re.escape(class_name)}\s*\(")
        for facts in list(self.index.parsed()):
            text = self.index.text(facts.path) or ""
            if pattern.search(text) is None:
                continue
            tree = self._tree_of(facts.path)
            if tree is None:
                continue
            try:
                calls = [(call, loop_names) for call, loop_names in _calls_in_loops(tree, frozenset()) if loop_names and _dotted(call.func).rsplit(".", 1)[-1] == class_name]
            except RecursionError:
                continue
            for call, loop_names in calls:
                handed = [a for i, a in enumerate(call.args) if i in positions and not isinstance(a, ast.Starred)]
                handed += [kw.value for kw in call.keywords if kw.arg in names]
                if any(_uses_loop_value(a, loop_names) for a in handed):
                    return True
        return False

    def _init_params_of(self, facts: ModuleFacts, cls, attr: str) -> tuple[set[int], set[str]] | None:
        """(positions after ``self``, names) of the ``__init__`` parameters that
        ``self.<attr> = ...`` in ``cls.__init__`` is computed from."""
        fn = facts.function(f"{cls.qualname}.__init__")
        if fn is None:
            return None
        node = self._trees().node(facts.path, fn)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        arguments = [a.arg for a in [*node.args.posonlyargs, *node.args.args]][1:]
        keyword_only = {a.arg for a in node.args.kwonlyargs}
        used: set[str] = set()
        for stmt in ast.walk(node):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else []
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr == attr and isinstance(target.value, ast.Name) and target.value.id == "self":
                    used |= {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}  # type: ignore[union-attr]
        names = used & (set(arguments) | keyword_only)
        if not names:
            return None
        return {i for i, name in enumerate(arguments) if name in names}, names

    def _trees(self) -> FunctionTrees:
        if self._function_trees is None:
            self._function_trees = FunctionTrees(self.index)
        return self._function_trees

    # ---- writes --------------------------------------------------------------------------

    def writes_of(self, guard: PredictedGuard) -> list[Mutation]:
        storage = guard.storage
        index = self.index
        if storage.kind == "environ":
            # A write whose variable is not known (``os.environ[k] = v``, ``update(saved)``) is
            # no evidence that this one changes; ``clear()`` changes every one.
            return [m for m in index.mutations("environ", "", "environ") + self._environ_writes() if m.key in (storage.name, "*")]
        if storage.length:
            if storage.kind == "global":
                return index.mutations("length", storage.path, storage.name)
            return []
        if storage.kind == "global":
            return [m for m in index.mutations("global", storage.path, storage.name) if m.op != "replace"]
        if storage.kind == "member":
            return self.member_writes(storage)
        if storage.kind == "attribute":
            return self.attribute_writes(storage, guard)
        return []

    def _environ_writes(self) -> list[Mutation]:
        out = []
        for facts in self.index.parsed():
            out.extend(m for m in facts.mutations if m.kind == "environ")
        return out

    def member_writes(self, storage: Storage) -> list[Mutation]:
        index = self.index
        first = storage.members[0]
        out: list[Mutation] = []
        # Rebinding the global itself changes every member of it.
        out.extend(m for m in index.mutations("global", storage.path, storage.name) if m.op not in ("replace",))
        if first.startswith("."):
            key = first[1:]
            name = storage.name
            out.extend(m for m in index.mutations("attribute", storage.path, name) if m.key == key)
            facts = index.facts(storage.path)
            binding = facts.binding(name) if facts else None
            if binding is not None and binding.kind == "object" and binding.class_ref:
                found = index.resolve_class(binding.class_ref, storage.path)
                if found is not None:
                    owners = {f"{f.module}.{c.qualname}" for f, c in index.mro(*found)}
                    out.extend(m for m in index.mutations("instance-attribute", "", key) if m.owner in owners)
            if binding is not None and binding.kind == "class":
                owner = f"{facts.module}.{name}" if facts and facts.module else name
                out.extend(m for m in index.mutations("instance-attribute", "", key) if m.owner == owner)
        else:
            key = first[2:-2] if first.startswith("['") or first.startswith('["') else first[1:-1]
            out.extend(m for m in index.mutations("item", storage.path, storage.name) if m.key in (key, ""))
        return sorted(set(out), key=lambda m: (m.path, m.line, m.column))

    def attribute_writes(self, storage: Storage, guard: PredictedGuard) -> list[Mutation]:
        index = self.index
        if storage.owner == HOOKED:
            # Read through a forward hook: the hook's own writes to the module it sits on.
            hooks = set(forward_hooks(index))
            return [m for m in index.mutations("instance-attribute", "", storage.name) if m.function and FunctionRef(m.path, m.function) in hooks]
        if not storage.owner:
            return []
        found = index.resolve_class(storage.owner, storage.path)
        owners: set[str] = {storage.owner}
        if found is not None:
            owners |= {f"{f.module}.{c.qualname}" for f, c in index.mro(*found)}
        out = []
        class_module = storage.owner.rsplit(".", 1)[0]
        for mutation in index.mutations("instance-attribute", "", storage.name):
            if mutation.owner:
                if mutation.owner in owners:
                    out.append(mutation)
                    continue
                # A write in a subclass's method (the compiled instance may be one); a class
                # that only shares a base with the owner (``ModelMixin``) is another object.
                sub = index.resolve_class(mutation.owner, mutation.path)
                owner = f"{found[0].module}.{found[1].qualname}" if found is not None else storage.owner
                if sub is not None and any(f"{f.module}.{c.qualname}" == owner for f, c in index.mro(*sub)):
                    out.append(mutation)
                continue
            held = self.held_class(mutation)
            if held is not None:
                # ``self.<held>.attr`` where the writer's class holds a known class there: the
                # storage's only where that class is the storage's class or a subclass of it.
                held_names = {f"{f.module}.{c.qualname}" for f, c in index.mro(*held)}
                if (f"{found[0].module}.{found[1].qualname}" if found is not None else storage.owner) in held_names:
                    out.append(mutation)
                continue
            if self.unknown_receiver_may_be(mutation, class_module):
                out.append(mutation)
        if storage.name == "training":
            out.extend(self.train_eval_calls(guard))
        out.extend(self.setattr_writes(storage.name))
        return out

    def setattr_writes(self, attr: str) -> list[Mutation]:
        """``setattr(obj, name, v)`` where the function's parameter ``name`` is given ``attr``
        by a caller, a ``partial`` or an ``apply(partial(f, "attr", ...))``."""
        out = []
        for mutation in self.index.mutations("instance-attribute", "", ""):
            if not mutation.key.startswith("param:"):
                continue
            param = mutation.key[len("param:") :]
            facts = self.index.facts(mutation.path)
            fn = facts.function(mutation.function) if facts is not None and mutation.function else None
            if fn is None:
                continue
            position = next((i for i, p in enumerate(p for p in fn.params if p.kind == "positional") if p.name == param), None)
            if position is not None and attr in self.literal_arguments(FunctionRef(mutation.path, fn.qualname), position, param):
                out.append(Mutation(
                    mutation.kind, mutation.module, attr, mutation.line, mutation.column, owner=mutation.owner,
                    value_kind=mutation.value_kind, op=mutation.op, function=mutation.function, path=mutation.path,
                    loop_lines=mutation.loop_lines, value=mutation.value,
                ))
        return out

    def literal_arguments(self, ref: FunctionRef, position: int, name: str) -> set[str]:
        """The string literals callers pass ``ref`` for its parameter ``name`` (at
        ``position``): in calls, and in ``partial(ref, ...)`` anywhere (``apply(partial(...))``)."""
        found: set[str] = set()
        for args, keywords in self.string_arguments().get(ref.qualname.rsplit(".", 1)[-1], ()):
            if position < len(args) and args[position] is not None:
                found.add(args[position])  # type: ignore[arg-type]
            found.update(value for key, value in keywords if key == name)
        return found

    def string_arguments(self) -> dict[str, list[tuple[tuple[str | None, ...], tuple[tuple[str, str], ...]]]]:
        """By callee name: the string literals of each call's positional arguments (None for
        other arguments) and keywords, ``partial(f, ...)`` counted as a call of ``f``. One walk
        of the files that call ``setattr`` with a parameter's name, or name such a function."""
        if self._strings is not None:
            return self._strings
        table: dict[str, list[tuple[tuple[str | None, ...], tuple[tuple[str, str], ...]]]] = {}
        self._strings = table
        setters = {m.function.rsplit(".", 1)[-1] for m in self.index.mutations("instance-attribute", "", "") if m.key.startswith("param:") and m.function}
        if not setters:
            return table
        # A file passes a literal to one only where the text shows it: ``name("...`` or
        # ``partial(name, "...``.
        # ``\b(?:names)\s*(?:\(|,)\s*['"]``, looked for in the reversed text (a text holds
        # one exactly when its reverse holds the reversed one): the pattern then starts with
        # the quote, which the search skips to, not with the names, tried at every position.
        literal_call = re.compile(r"['\"]\s*(?:\(|,)\s*(?:" + "|".join(re.escape(n[::-1]) for n in sorted(setters)) + r")\b")
        for facts in list(self.index.parsed()):
            text = self.index.text(facts.path) or ""
            if literal_call.search(text[::-1]) is None:
                continue
            tree = self._tree_of(facts.path)
            if tree is None:
                continue
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                args, keywords = node.args, node.keywords
                callee = _dotted(node.func)
                if callee.rsplit(".", 1)[-1] == "partial" and node.args:
                    callee, args = _dotted(node.args[0]), node.args[1:]
                last = callee.rsplit(".", 1)[-1]
                if last not in setters:
                    continue
                table.setdefault(last, []).append(
                    (
                        tuple(a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None for a in args),
                        tuple((kw.arg, kw.value.value) for kw in keywords if kw.arg and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)),
                    )
                )
        return table

    def held_class(self, mutation: Mutation):
        """The class of the object a write through ``self.<held>.attr`` changes (``key``
        ``of:<held>``): what the writing method's class (or a base) assigns to ``<held>``,
        where the index knows it; else None."""
        if not mutation.key.startswith("of:") or not mutation.function:
            return None
        facts = self.index.facts(mutation.path)
        fn = facts.function(mutation.function) if facts is not None else None
        cls = facts.cls(fn.class_name) if fn is not None and fn.class_name else None
        if cls is None:
            return None
        return self.index.class_submodule(facts, cls, mutation.key[3:])

    def unknown_receiver_may_be(self, mutation: Mutation, class_module: str) -> bool:
        """A write to ``<something>.attr`` whose receiver's class is unknown: it may be the
        class's instance when the writing module can see the class (defines or imports its
        module) and the receiver is not an autograd context or another framework object."""
        facts = self.index.facts(mutation.path)
        if facts is None:
            return False
        fn = facts.function(mutation.function) if mutation.function else None
        if fn is not None and fn.params and fn.params[0].name == "ctx" and "staticmethod" in fn.decorators:
            return False
        if facts.module == class_module:
            return True
        return any(target == class_module or target.startswith(class_module + ".") or target.rsplit(".", 1)[0] == class_module for _, target in facts.imports)

    def train_eval_calls(self, guard: PredictedGuard) -> list[Mutation]:
        """``model.train()`` / ``model.eval()`` set ``training``: as writes of ``True``/``False``."""
        out = []
        for facts in self.index.parsed():
            for call in facts.method_calls:
                if call.method in ("train", "eval"):
                    value = "False" if call.method == "eval" or call.args[:1] == ("False",) else "True"
                    out.append(
                        Mutation("instance-attribute", facts.module, "training", call.span.line, call.span.column, function=call.function, path=facts.path, loop_lines=call.loop_lines, value=value, value_kind="bool")
                    )
        return out

    # ---- when a write runs ----------------------------------------------------------------

    def judge_writes(self, guard: PredictedGuard, mutations: list[Mutation]) -> Evidence | None:
        region = guard.region
        acc = _Writes()
        judged = []
        for mutation in mutations:
            if self.lazy_init(mutation):
                continue
            when = self.runs_between_calls(region, mutation)
            if when is not None:
                judged.append((mutation, when))
        if guard.storage.length and _grows_and_shrinks(m for m, (inside, _) in judged if inside):
            # The compiled code both adds to the container and takes from it (a stack pushed
            # and popped in one call): how its length differs between calls is not known.
            judged = [(m, when) for m, when in judged if not when[0]]
        for mutation, (inside, why) in judged:
            count = self.values_written(mutation)
            acc.locations.append(
                Location(mutation.path, mutation.line, mutation.column, "write", f"{_verb(mutation)} {guard.storage.describe()} {why}")
            )
            acc.why.append(why)
            acc.inside = acc.inside or inside
            if mutation.value_kind in ("", "unknown") and _TENSOR_VALUE.match(mutation.value or ""):
                acc.kinds.add("tensor")  # ``lengths.clone()``, ``torch.arange(n)``: a tensor
            elif mutation.value_kind:
                acc.kinds.add(mutation.value_kind)
            if count is UNBOUNDED:
                acc.unbounded = True
            else:
                acc.literals.update(count)
        if not acc.locations:
            return None
        acc.locations = list(dict.fromkeys(acc.locations))
        if acc.unbounded:
            values = UNBOUNDED
        else:
            literals = set(acc.literals)
            if guard.initial:
                literals.add(guard.initial)
            values = len(literals)
            if values <= 1:
                return None
        return Evidence(tuple(acc.locations), values, acc.why[0], acc.inside, frozenset(acc.kinds))

    def lazy_init(self, mutation: Mutation) -> bool:
        """Whether ``mutation`` is a plain assignment in the block of an ``if x is None:`` (or
        ``if not x:``) test: the idiom that creates a value on first use and never again."""
        if mutation.op != "assign":
            return False
        text = self.index.text(mutation.path)
        if text is None:
            return False
        lines = self.index.lines(mutation.path)
        if not 0 < mutation.line <= len(lines):
            return False
        line = lines[mutation.line - 1]
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            return False  # no line above is indented less: the walk back would find no test
        # The enclosing block's test; past it, an outer ``if x is None:`` whose subject is the
        # written value (or a local read from it) still runs the write once at most: ``cache =
        # self._cached; if cache is None: ...; if self.cached: self._cached = ...``.
        first = True
        for number in range(mutation.line - 2, -1, -1):
            above = lines[number]
            stripped = above.strip()
            if not stripped or stripped.startswith("#"):
                continue
            level = len(above) - len(above.lstrip())
            if level >= indent:
                continue
            match = _LAZY_TEST.match(stripped)
            if match is not None and (first or self._reads_written(match.group(1) or match.group(2), mutation, lines, number)):
                return True
            if first and match is None and not stripped.startswith("if "):
                return False
            if level == 0 or stripped.startswith(("def ", "async def ", "class ")):
                return False
            first = False
            indent = level
        return False

    @staticmethod
    def _reads_written(subject: str, mutation: Mutation, lines: list[str], test_line: int) -> bool:
        """Whether a lazy test's subject is the attribute ``mutation`` writes, or a local the
        enclosing function assigned from it before the test."""
        attr = mutation.name
        if subject == attr or subject.endswith("." + attr):
            return True
        if "." in subject:
            return False
        read = re.compile(rf"\s*{re.escape(subject)}\s*=\s*[\w.]*\.{re.escape(attr)}\s*(?:#.*)?$")
        for number in range(test_line - 1, -1, -1):
            above = lines[number]
            if read.match(above):
                return True
            if above.lstrip().startswith(("def ", "async def ")):
                return False
        return False

    def runs_between_calls(self, region: CompiledRegion, mutation: Mutation) -> tuple[bool, str] | None:
        """(inside the region, why) when ``mutation`` runs between two calls of ``region``."""
        ref = FunctionRef(mutation.path, mutation.function) if mutation.function else None
        if ref is not None and ref in self.reached(region):
            if within((mutation.line, mutation.column - 1), dict(region.dead).get(ref, ())):  # a mutation's column counts from 1
                # In a branch the region does not trace: ruled out by the constants its calls
                # pass, or a first-call fill (``if not self.compiled: ...; self.compiled = True``).
                return None
            if self._in_handler(mutation):
                # ``except: TABLE[cls] = keys``: it runs when the try raises (a miss the
                # handler fills), not at every call; nothing says how often.
                return None
            return True, f"inside compiled `{region.name}`, on every call"
        if ref is not None and ref in self.hooks():
            return False, "in a hook that runs at every step"
        facts = self.index.facts(mutation.path)
        if facts is None:
            return None
        fn = facts.function(mutation.function) if mutation.function else None
        # The write and a call of the region share a loop.
        if mutation.loop_lines:
            for callee, loops in self.region_calls(region, facts, fn):
                if set(loops) & set(mutation.loop_lines) and self.calls_region(region, facts, fn, callee):
                    return False, f"in the loop that calls `{_short(region.name)}`"
        if fn is None:
            return None
        # A function called in such a loop, or one that calls the region and runs in a loop.
        found = self.called_per_step(region, ref, fn, set(), 0)  # type: ignore[arg-type]
        if found:
            return False, found
        # A callback's name says a framework calls it every step, unless the project calls it
        # itself, and never in a loop (the loop would have been found above): ``update(0)``
        # once before training.
        if _is_callback(fn) and not any(not loops for _, _, loops in self.callers(ref)):  # type: ignore[arg-type]
            return False, f"in `{fn.qualname}`, which a training framework calls every step"
        # An increment in a method nobody in the project calls (an API's ``step()``) runs per
        # use; not a constructor, which sets up an instance before it is compiled (instances
        # compiled one by one are ``per_instance_evidence``'s question).
        # Not a function whose own calls of the region cannot run it (``binds``).
        if mutation.op == "augassign" and fn.name != "__init__" and not self.callers(ref) and not self._holds_unbound(region, mutation.path, fn.qualname):  # type: ignore[arg-type]
            return False, f"in `{fn.qualname}`, which updates it each time it is called"
        return None

    def _in_handler(self, mutation: Mutation) -> bool:
        """Whether ``mutation`` is in an ``except`` handler (one walk of its file)."""
        spans = self._handlers.get(mutation.path)
        if spans is None:
            tree = self._tree_of(mutation.path)
            kinds = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)
            spans = self._handlers[mutation.path] = [
                (handler.lineno, handler.end_lineno or handler.lineno)
                for node in (ast.walk(tree) if tree is not None else ())
                if isinstance(node, kinds)
                for handler in node.handlers
            ]
        return any(start <= mutation.line <= end for start, end in spans)

    def called_per_step(self, region: CompiledRegion, ref: FunctionRef, fn: FunctionFacts, seen: set[FunctionRef], depth: int) -> str:
        if depth > CALLER_DEPTH or ref in seen:
            return ""
        seen.add(ref)
        own = self.executes(region, ref)
        for caller, callee, loops in self.callers(ref):
            caller_facts = self.index.facts(caller.path) if caller is not None else None
            if loops:
                if own:
                    return f"in `{fn.qualname}`, which calls `{_short(region.name)}` and runs in a loop"
                path = caller.path if caller is not None else ""
                facts = self.index.facts(path) if path else None
                caller_fn = facts.function(caller.qualname) if facts is not None and caller is not None else None
                calls = self.region_calls(region, facts, caller_fn) if facts is not None else ()
                for other, other_loops in calls:
                    if set(other_loops) & set(loops) and facts is not None and self.calls_region(region, facts, caller_fn, other):
                        return f"in `{fn.qualname}`, called in the loop that calls `{_short(region.name)}`"
            if caller is not None and caller_facts is not None:
                caller_fn = caller_facts.function(caller.qualname)
                if caller_fn is not None:
                    found = self.called_per_step(region, caller, caller_fn, seen, depth + 1)
                    if found:
                        return found
        return ""

    def runs_repeatedly(self, ref: FunctionRef, depth: int = 0, seen: set[FunctionRef] | None = None) -> str:
        """Why the code of ``ref`` runs more than once in a run ("" when nothing says so): it is
        called in a loop, from several places, or by a framework every step; a function only
        called once, by functions themselves called once, runs once (``main()`` at the bottom
        of a script, a test calling a helper)."""
        seen = seen if seen is not None else set()
        if ref in seen or depth > CALLER_DEPTH:
            return ""
        seen.add(ref)
        facts = self.index.facts(ref.path)
        fn = facts.function(ref.qualname) if facts is not None else None
        if fn is None:
            return ""
        if _is_callback(fn):
            return f"`{fn.qualname}` is called by a training framework every step"
        callers = self.callers(ref)
        if any(loops for _, _, loops in callers):
            return f"`{fn.qualname}` is called in a loop"
        if len(callers) > 1:
            return f"`{fn.qualname}` is called from {len(callers)} places"
        for caller, _, _ in callers:
            if caller is not None:
                found = self.runs_repeatedly(caller, depth + 1, seen)
                if found:
                    return found
        return ""

    def values_written(self, mutation: Mutation) -> set[str] | None:
        """The literal values a write can store (None: any number of values)."""
        if mutation.op in ("augassign", "loop", "delete", "call"):
            return UNBOUNDED
        if not mutation.value:
            return {"True", "False"} if mutation.value_kind == "bool" else UNBOUNDED
        try:
            node = ast.parse(mutation.value, mode="eval").body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return UNBOUNDED
        if mutation.op == "assign" and _dotted(node).startswith("self.") and mutation.function:
            # A copy of another attribute of the object (``self.sub.kind = self.kind``): it
            # holds what that attribute holds, whose own writes say whether that changes.
            return set()
        literals = _values_of(node)
        if literals is None and mutation.op == "assign" and mutation.function:
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - _PURE_BUILTINS
            if len(names) == 1:
                # A value made from one parameter alone (``device_type``, ``scale * 2``,
                # ``mode.lower()``) has at most as many values as the callers pass.
                [name] = names
                passed = self.passed_values(mutation, name)
                if passed is not _NOT_PASSED:
                    return passed if isinstance(node, ast.Name) or passed is UNBOUNDED else {f"{mutation.value}<{v}>" for v in passed}
        return literals

    def passed_values(self, mutation: Mutation, name: str):
        """What a write of the writing function's own parameter (``self.device_type =
        device_type``) can store: what the function's callers pass for it (a literal, a
        literal default where a call leaves it out, a loop's value: UNBOUNDED, followed into
        the callers' own parameters). A value no caller makes known (``x.device.type``) is no
        evidence: it adds nothing. ``_NOT_PASSED`` where ``name`` is no such parameter (or
        the function binds it again)."""
        facts = self.index.facts(mutation.path)
        fn = facts.function(mutation.function) if facts is not None else None
        param = next((p for p in fn.params if p.name == name), None) if fn is not None else None
        if param is None or param.kind not in ("positional", "keyword"):
            return _NOT_PASSED
        if fn.class_name and param is fn.params[0] and "staticmethod" not in fn.decorators:
            return _NOT_PASSED  # the receiver (``self.step = self.step + 1``): what it holds is the object's
        node = self._trees().node(mutation.path, fn)
        if node is None or name in self._trees().rebound(node):
            return _NOT_PASSED
        position = _param_position(fn, name, method=bool(fn.class_name))
        storage = Storage("parameter", mutation.path, name, owner=fn.qualname)
        acc = _Arguments()
        values: set[str] = set()
        try:
            default = _values_of(ast.parse(param.default, mode="eval").body) if param.default else None
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            default = None  # a default whose text does not parse (a cached fact) is no value
        for site in self.function_call_sites(FunctionRef(mutation.path, fn.qualname)):
            argument = _argument(site, name, position)
            if argument is not None:
                self.argument_values(site, argument, storage, acc, 0)
            elif default and not site.spread:
                values |= default  # left out: the default is passed
        if acc.unbounded:
            return UNBOUNDED
        return values | set(acc.programs)

    # ---- call graph ----------------------------------------------------------------------

    def reached(self, region: CompiledRegion) -> set[FunctionRef]:
        key = id(region)
        if key not in self._reached:
            self._reached[key] = {ref for ref, _, _ in region.reached}
        return self._reached[key]

    def names(self, region: CompiledRegion) -> set[str]:
        key = id(region)
        if key not in self._names:
            self._names[key] = names_of(region, self.index)
        return self._names[key]

    def calls_region(self, region: CompiledRegion, facts: ModuleFacts, fn: FunctionFacts | None, callee: str) -> bool:
        """Whether calling ``callee`` (as written in ``fn``) runs ``region``."""
        if (facts.path, fn.qualname if fn is not None else "", callee) in self.unbound_calls(region):
            return False
        if callee.rsplit(".", 1)[-1] in self.names(region) and self.may_name(region, facts, fn, callee):
            return True
        if fn is not None and "." not in callee and (FunctionRef(facts.path, fn.qualname), callee) in self.aliases(region):
            return True
        ref = self.resolve_callee(facts, fn, callee)
        return ref is not None and self.executes(region, ref)

    def unbound_calls(self, region: CompiledRegion) -> set[tuple[str, str, str]]:
        """(file, function, callee) where every call by a name of the region passes a keyword
        its entry does not take (``callsites.binds``): Python raises there before the body
        runs, so the callee holds something else and those calls do not run the region."""
        found = self._unbound.get(id(region))
        if found is None:
            bound: set[tuple[str, str, str]] = set()
            unbound: set[tuple[str, str, str]] = set()
            for call in call_sites(self.index, region):
                (bound if binds(self.index, region, call) else unbound).add((call.path, call.function, call.callee))
            found = self._unbound[id(region)] = unbound - bound
        return found

    def _holds_unbound(self, region: CompiledRegion, path: str, qualname: str) -> bool:
        return any(call[0] == path and call[1] == qualname for call in self.unbound_calls(region))

    def region_calls(self, region: CompiledRegion, facts: ModuleFacts, fn: FunctionFacts | None) -> list[_LoopCall]:
        """The loop calls of ``fn`` (module level when None) for which ``calls_region`` can be
        true, in their order: those by a name of the region, by a parameter the region is
        handed to, or of a function that may run some region (``may_execute``). Every other
        call is false for every region, so a loop of N calls is not scanned once per region."""
        calls = fn.loop_calls if fn is not None else facts.toplevel_loop_calls
        if len(calls) <= 8 or id(region) not in self._all_region_ids():
            return list(calls)
        by_name, executing, position = self._call_table(facts, fn)
        wanted = set(self.names(region))
        if fn is not None:
            wanted |= self._region_alias_params(region).get(FunctionRef(facts.path, fn.qualname), set())
        chosen = {call for name in wanted for call in by_name.get(name, ())}
        chosen.update(executing)
        return sorted(chosen, key=position.__getitem__)

    def _all_region_ids(self) -> set[int]:
        if self._region_ids is None:
            self._region_ids = {id(region) for region in self.regions}
        return self._region_ids

    def _region_alias_params(self, region: CompiledRegion) -> dict[FunctionRef, set[str]]:
        key = id(region)
        if key not in self._alias_params:
            table: dict[FunctionRef, set[str]] = {}
            for ref, param in self.aliases(region):
                table.setdefault(ref, set()).add(param)
            self._alias_params[key] = table
        return self._alias_params[key]

    def _call_table(self, facts: ModuleFacts, fn: FunctionFacts | None) -> tuple[dict[str, list[_LoopCall]], list[_LoopCall], dict[_LoopCall, int]]:
        """(loop calls by the callee's last name, loop calls of a function that may run a
        region, the position of each call: the calls a region looks at keep their order)."""
        key = (facts.path, fn.qualname if fn is not None else "")
        if key not in self._call_tables:
            by_name: dict[str, list[_LoopCall]] = {}
            executing: list[_LoopCall] = []
            calls = fn.loop_calls if fn is not None else facts.toplevel_loop_calls
            position = {call: number for number, call in enumerate(calls)}
            for call in calls:
                callee = call[0]
                by_name.setdefault(callee.rsplit(".", 1)[-1], []).append(call)
                ref = self.resolve_callee(facts, fn, callee)
                if ref is not None and self.may_execute(ref):
                    executing.append(call)
            self._call_tables[key] = (by_name, executing, position)
        return self._call_tables[key]

    def may_execute(self, ref: FunctionRef, chain: int = CALLER_DEPTH + 1) -> bool:
        """Whether ``executes(region, ref)`` can be true for some region of the run: ``ref``
        calls a name of one or a parameter one is handed to, or calls such a function, within
        the ``chain`` functions ``executes`` can follow. False means false for every region."""
        key = (ref, chain)
        if key in self._may_execute:
            return self._may_execute[key]
        self._may_execute[key] = True  # a cycle: assume it may (never wrong to look)
        facts = self.index.facts(ref.path)
        fn = facts.function(ref.qualname) if facts else None
        result = False
        if facts is not None and fn is not None and chain > 0:
            names = self._any_names()
            aliases = self._all_aliases()
            for callee in fn.calls:
                if callee.rsplit(".", 1)[-1] in names or (ref, callee) in aliases:
                    result = True
                    break
                inner = self.resolve_callee(facts, fn, callee)
                if inner is not None and inner != ref and self.may_execute(inner, chain - 1):
                    result = True
                    break
        self._may_execute[key] = result
        return result

    def _any_names(self) -> set[str]:
        if self._wanted is None:
            self._wanted = set()
            for region in self.regions:
                self._wanted |= self.names(region)
        return self._wanted

    def _all_aliases(self) -> set[tuple[FunctionRef, str]]:
        if self._any_aliases is None:
            found: set[tuple[FunctionRef, str]] = set()
            for region in self.regions:
                found |= self.aliases(region)
            self._any_aliases = found
        return self._any_aliases

    def executes(self, region: CompiledRegion, ref: FunctionRef, depth: int = 0) -> bool:
        """Whether calling ``ref`` calls ``region`` (directly or through its callees)."""
        key = (id(region), ref)
        if key in self._executes:
            return self._executes[key]
        self._executes[key] = False  # a recursive call resolves to no
        facts = self.index.facts(ref.path)
        fn = facts.function(ref.qualname) if facts else None
        result = False
        if facts is not None and fn is not None and depth <= CALLER_DEPTH:
            names = self.names(region)
            aliases = self.aliases(region)
            unbound = self.unbound_calls(region)
            for callee in fn.calls:
                if (ref.path, ref.qualname, callee) in unbound:
                    continue
                if (callee.rsplit(".", 1)[-1] in names and self.may_name(region, facts, fn, callee)) or (ref, callee) in aliases:
                    result = True
                    break
                inner = self.resolve_callee(facts, fn, callee)
                if inner is not None and inner != ref and self.executes(region, inner, depth + 1):
                    result = True
                    break
        self._executes[key] = result
        return result

    def aliases(self, region: CompiledRegion) -> set[tuple[FunctionRef, str]]:
        """(function, parameter) pairs that are handed the compiled object: ``trainer.fit(model,
        compiled)`` makes ``fit``'s second parameter the region, so ``step_fn(x)`` in ``fit``
        calls it."""
        key = id(region)
        if key not in self._aliases:
            names = self.names(region)
            site = region.site
            found: set[tuple[FunctionRef, str]] = set()
            # The name is the compiled object where it was compiled (that file, and that
            # function when it is a local), then wherever an alias hands it on.
            holders = {(region.site_path, site.function)} if site.function and site.form != "decorator" else None
            # Only files that can hold the name walk their calls: the site's file, the files
            # importing from the site's or the entry's module, then the files of the functions
            # an alias was handed to.
            files = {region.site_path} if holders is not None else self._importers(region)
            for _ in range(CALLER_DEPTH):
                added = False
                for path in sorted(files):
                    for name, ref, param, fn in self.passed_in(path):
                        if (ref, param) in found:
                            continue
                        home = name in names and (
                            (path, fn) in holders if holders is not None else self.may_name(region, self.index.facts(path), self.index.function(FunctionRef(path, fn)) if fn else None, name)  # type: ignore[arg-type]
                        )
                        handed = (FunctionRef(path, fn), name) in found if fn else False
                        if home or handed:
                            found.add((ref, param))
                            added = True
                if not added:
                    break
                files |= {ref.path for ref, _ in found}
            self._aliases[key] = found
        return self._aliases[key]

    def _importers(self, region: CompiledRegion) -> set[str]:
        """The site's file and the parsed files that import from the site's or the entry's
        module: where a name can be the compiled object (``may_name``)."""
        site_facts = self.index.facts(region.site_path)
        entry_facts = self.index.facts(region.entry.path)
        modules = {f.module for f in (site_facts, entry_facts) if f is not None} - {""}
        files = {region.site_path}
        if self._import_known != self.index.known_count():
            self._import_known = self.index.known_count()
            for facts in list(self.index.parsed()):
                if facts.path in self._import_indexed:
                    continue
                self._import_indexed.add(facts.path)
                for _, target in facts.imports:
                    parts = target.split(".")
                    for end in range(1, len(parts) + 1):
                        self._importing.setdefault(".".join(parts[:end]), set()).add(facts.path)
        # A name passed on is a plain name (``model``), the compiled object only where it is
        # imported from those modules (the module itself or one of its submodules).
        for module in modules:
            files |= self._importing.get(module, set())
        return files

    def passed_in(self, path: str) -> list[tuple[str, FunctionRef, str, str]]:
        """(name, function, parameter, calling function) for each argument of a call in the
        file ``path`` that is named like a compiled object of the run and that a project
        function receives: one walk of the file, only when its text mentions such a name."""
        if path in self._passed:
            return self._passed[path]
        wanted = self._any_names()
        if self._wanted_names is None:
            self._wanted_names = Names(wanted)
        found: list[tuple[str, FunctionRef, str, str]] = []
        self._passed[path] = found
        facts = self.index.facts(path)
        text = self.index.text(path) or ""
        # A name handed on as an argument is a whole identifier of the text.
        if facts is None or not wanted or not self._wanted_names.any_in(text):
            return found
        tree = self._tree_of(facts.path)
        if tree is None:
            return found
        for fn, call in _calls_with_functions(tree):
            passed = [(i, _last_name(a)) for i, a in enumerate(call.args) if _last_name(a) in wanted]
            passed_kw = [(kw.arg, _last_name(kw.value)) for kw in call.keywords if kw.arg and _last_name(kw.value) in wanted]
            if not passed and not passed_kw:
                continue
            callee = _dotted(call.func)
            fn_facts = facts.function(fn) if fn else None
            target = self.resolve_callee(facts, fn_facts, callee) if callee else None
            target_fn = self.index.function(target) if target is not None else None
            if target_fn is None:
                continue
            params = [p for p in target_fn.params if p.kind == "positional"]
            if target_fn.class_name and params and params[0].name in ("self", "cls"):
                params = params[1:]
            for i, name in passed:
                if i < len(params):
                    found.append((name, target, params[i].name, fn))  # type: ignore[arg-type]
            for param, name in passed_kw:
                found.append((name, target, param, fn))  # type: ignore[arg-type]
        return found

    def may_name(self, region: CompiledRegion, facts: ModuleFacts, fn: FunctionFacts | None, callee: str) -> bool:
        """Whether ``callee``, written in ``fn`` of ``facts``, can be the region's compiled
        object: the same module as the compile site, or a module that imports it or its module
        (call sites are found by name; a same-named function elsewhere is not this region)."""
        site_facts = self.index.facts(region.site_path)
        if "." not in callee and self.callee_is_other(region, facts, fn, callee):
            return False
        if site_facts is None or facts.path == region.site_path:
            return True
        entry_facts = self.index.facts(region.entry.path)
        modules = {site_facts.module, entry_facts.module if entry_facts is not None else ""} - {""}
        head = callee.split(".", 1)[0]
        target = facts.import_target(head) or ""
        if any(target == m or target.startswith(m + ".") for m in modules):
            return True
        # ``self.model(x)`` / ``trainer.model(x)``: an attribute holding the compiled object,
        # set where it was compiled; any module that imports the compiling module may call it,
        # unless the value flow shows the receiver is something else (``model.generate(...)``
        # on a model of another class than the compiled method's).
        if not ("." in callee and any(t == m or t.startswith(m + ".") or m.startswith(t + ".") for _, t in facts.imports for m in modules)):
            return False
        return not self.receiver_is_other(region, facts, fn, callee)

    def callee_is_other(self, region: CompiledRegion, facts: ModuleFacts, fn: FunctionFacts | None, callee: str) -> bool:
        """Whether a bare ``callee`` holds, by the value flow, only project functions or
        instances other than what the region compiles (``compiled = torch.compile(other)``
        in another test of the same file)."""
        entry = self.index.function(region.entry)
        entry_facts = self.index.facts(region.entry.path)
        values = self._flow_values(callee, facts, fn) if fn is not None else frozenset()
        if entry is None or entry_facts is None or not values:
            return False
        owner = f"{entry_facts.module}.{entry.class_name}" if entry.class_name else ""
        for value in values:
            if value.kind in ("function", "lambda") and value.path:
                if value.path == region.entry.path and (value.ref == entry.qualname or value.ref.endswith("." + entry.qualname)):
                    return False
            elif not (value.kind == "instance" and value.path and owner and self._of_other_class(value, owner)):
                return False  # unknown, a parameter, a torch object, the class's instance: it may be the region
        return True

    def receiver_is_other(self, region: CompiledRegion, facts: ModuleFacts, fn: FunctionFacts | None, callee: str) -> bool:
        """Whether ``callee`` (``obj.method``) calls the method on an object the value flow
        knows, none of whose values is an instance of the compiled method's class."""
        entry = self.index.function(region.entry)
        entry_facts = self.index.facts(region.entry.path)
        receiver, _, method = callee.rpartition(".")
        if entry is None or entry_facts is None or not entry.class_name or method != entry.name or receiver in ("self", "cls"):
            return False
        owner = f"{entry_facts.module}.{entry.class_name}"
        values = self._flow_values(receiver, facts, fn)
        # Unknown, a parameter, a torch object...: it may be one.
        return bool(values) and all(value.kind == "instance" and self._of_other_class(value, owner) for value in values)

    def _flow_values(self, text: str, facts: ModuleFacts, fn: FunctionFacts | None) -> frozenset:
        """What the value flow says ``text`` holds in ``fn``; empty where it cannot tell."""
        flow = self.index.memo.get("flow")
        if flow is None:
            return frozenset()
        try:
            return flow.values_of(text, facts, fn)
        except (RecursionError, ValueError):
            return frozenset()

    def _of_other_class(self, value, owner: str) -> bool:
        """Whether an instance value's class is known and is not ``owner`` or a subclass of it."""
        found = self.index.resolve_class(value.ref, value.path or None)
        return found is not None and not any(f"{f.module}.{c.qualname}" == owner for f, c in self.index.mro(*found))

    def resolve_callee(self, facts: ModuleFacts, fn: FunctionFacts | None, callee: str) -> FunctionRef | None:
        """The project function ``callee`` (as written in ``fn``) calls, where it can be told
        (asked for every call of the project: remembered per file, function and text)."""
        key = (facts.path, fn.qualname if fn is not None else "", callee)
        if key not in self._resolved:
            self._resolved[key] = self._resolve_callee(facts, fn, callee)
        return self._resolved[key]

    def _resolve_callee(self, facts: ModuleFacts, fn: FunctionFacts | None, callee: str) -> FunctionRef | None:
        head, _, rest = callee.partition(".")
        index = self.index
        if head == "self" and fn is not None and fn.class_name and rest and "." not in rest:
            cls = facts.cls(fn.class_name)
            if cls is not None:
                return index.class_method(facts, cls, rest)
            return None
        if fn is not None and rest and "." not in rest:
            for var, cls_text in fn.instances:
                if var == head:
                    found = index.resolve_class(cls_text, facts.path)
                    return index.class_method(*found, rest) if found is not None else None
        if not rest and fn is not None:
            # A function nested in this one.
            nested = facts.function(f"{fn.qualname}.{head}")
            if nested is not None:
                return FunctionRef(facts.path, nested.qualname)
        if not rest and facts.function(head) is not None:
            return FunctionRef(facts.path, head)
        if rest and facts.binding(head) is not None and facts.binding(head).kind == "object":
            binding = facts.binding(head)
            found = index.resolve_class(binding.class_ref, facts.path) if binding.class_ref else None
            if found is not None and "." not in rest:
                return index.class_method(*found, rest)
        resolved = facts.resolve(callee)
        if resolved.split(".", 1)[0] not in self.top_names():
            if facts.import_target(head) is not None:
                return None  # ``torch.cuda.set_device``: another library's function
            resolved = ""  # a builtin, or a local's method: only the unique-name fallback is left
        if resolved and (resolved != callee or "." in callee):
            found = index.resolve_function(resolved, facts.path)
            if found is not None:
                return found
            owner, _, method = resolved.rpartition(".")
            cls = index.resolve_class(owner, facts.path) if owner else None
            if cls is not None:
                return index.class_method(*cls, method)
        method = callee.rsplit(".", 1)[-1]
        if rest and method not in COMMON_METHODS:
            # ``module.set_active(name)``, ``self.model.use_adapter(t)`` on a receiver of
            # unknown class: the one project method of that name, when there is exactly one.
            return self.unique_method(method)
        return None

    def top_names(self) -> set[str]:
        """The first components of the project's module names (what a project call starts with)."""
        if self._tops is None:
            self._tops = {module.split(".", 1)[0] for module in self.index.by_module}
        return self._tops

    def unique_method(self, name: str) -> FunctionRef | None:
        if self._methods is None:
            table: dict[str, list[FunctionRef]] = {}
            for facts in list(self.index.parsed()):
                for cls in facts.classes:
                    for method, qual in cls.methods:
                        table.setdefault(method, []).append(FunctionRef(facts.path, qual))
            self._methods = table
        found = self._methods.get(name, [])
        return found[0] if len(found) == 1 else None

    def callers(self, ref: FunctionRef) -> list[tuple[FunctionRef | None, str, tuple[int, ...]]]:
        """(caller or None for module level, callee text, loops around the call) for each call
        of ``ref`` in the parsed project (``apply(fn)`` and ``partial(fn, ...)`` count). Only
        the calls that can name it are resolved: those whose last name is the function's, or
        an import alias of it (``from m import f as g``)."""
        found = self._callers.get(ref)
        if found is None:
            found = self._callers[ref] = self._callers_of(ref)
        return found

    def _callers_of(self, ref: FunctionRef) -> list[tuple[FunctionRef | None, str, tuple[int, ...]]]:
        by_name, aliases = self._calls_by_name()
        name = ref.qualname.rsplit(".", 1)[-1]
        candidates = [call for alias in sorted({name} | aliases.get(name, set())) for call in by_name.get(alias, ())]
        candidates.sort(key=lambda call: call[0])  # the project's order, as the calls were met
        out: list[tuple[FunctionRef | None, str, tuple[int, ...]]] = []
        for _, facts, fn, callee, loops, text, applied in candidates:
            caller = FunctionRef(facts.path, fn.qualname) if fn is not None else None
            target = self.resolve_callee(facts, fn, text)
            if target == ref and (applied or target != caller):
                out.append((caller, callee, loops))
        return out

    def _calls_by_name(self) -> tuple[dict[str, list], dict[str, set[str]]]:
        """Every call of the parsed project by the last name it calls, with its place in the
        project's order (facts, function or None at module level, callee text as reported,
        loops around it, text to resolve, whether it is an ``apply(fn)``); and for each
        imported name, the other names it is imported as (``from m import f as g``). Built once,
        with no resolution."""
        if self._by_name is None:
            table: dict[str, list] = {}
            aliases: dict[str, set[str]] = {}
            order = 0
            for facts in list(self.index.parsed()):
                for local, target in facts.imports:
                    imported = target.rsplit(".", 1)[-1]
                    if imported != local:
                        aliases.setdefault(imported, set()).add(local)
                calls: list[tuple[FunctionFacts | None, str, tuple[int, ...], str, bool]] = []
                for fn in facts.functions:
                    in_loop = {callee: loops for callee, loops in fn.loop_calls}
                    calls.extend((fn, callee, in_loop.get(callee, ()), callee, False) for callee in fn.calls)
                calls.extend((None, callee, loops, callee, False) for callee, loops in facts.toplevel_loop_calls)
                for call in facts.method_calls:
                    if call.method != "apply" or not call.args:
                        continue
                    text = _function_reference(call.args[0])
                    if text:
                        fn = facts.function(call.function) if call.function else None
                        calls.append((fn, f"{call.receiver}.apply", call.loop_lines, text, True))
                for fn, callee, loops, text, applied in calls:
                    order += 1
                    table.setdefault(text.rsplit(".", 1)[-1], []).append((order, facts, fn, callee, loops, text, applied))
            self._by_name = (table, aliases)
        return self._by_name

    def hooks(self) -> set[FunctionRef]:
        """Functions registered as forward hooks: they run inside every call of the module."""
        if self._hooks is None:
            found: set[FunctionRef] = set()
            for facts in list(self.index.parsed()):
                for call in facts.method_calls:
                    if (call.method in HOOK_METHODS or ("hook" in call.method and call.method.startswith("register_"))) and call.args:
                        text = _function_reference(call.args[0])
                        fn = facts.function(call.function) if call.function else None
                        target = self.resolve_callee(facts, fn, text) if text else None
                        if target is not None:
                            found.add(target)
            self._hooks = found
        return self._hooks

    # ---- arguments -----------------------------------------------------------------------

    def parameter_evidence(self, guard: PredictedGuard) -> Evidence | None:
        """Different values at the region's call sites for the guarded argument (or its
        length, or a member of it), followed into the callers' own arguments."""
        fn = self.index.function(guard.region.entry)
        if fn is None:
            return None
        acc = _Arguments(program=self.program_of)
        position = _param_position(fn, guard.storage.name, method=bool(fn.class_name))
        for site in call_sites(self.index, guard.region):
            if any(expects_error(context) for context in site.contexts):
                continue  # a call expected to raise: whether it leaves a graph cached is not known
            site_facts = self.index.facts(site.path)
            caller = site_facts.function(site.function) if site_facts is not None and site.function else None
            if site_facts is None or not self.may_name(guard.region, site_facts, caller, site.callee):
                continue
            argument = _argument(site, guard.storage.name, position)
            if argument is not None:
                self.argument_values(site, argument, guard.storage, acc, 0)
        if not acc.locations:
            return None
        if acc.unbounded:
            return Evidence(tuple(dict.fromkeys(acc.locations)), UNBOUNDED, acc.why or "different values", kinds=frozenset(acc.kinds))
        count = acc.distinct()
        if count <= 1:
            return None
        return Evidence(tuple(dict.fromkeys(acc.locations)), count, acc.why or f"{count} different values at its call sites", kinds=frozenset(acc.kinds))

    def program_of(self, path: str) -> str | None:
        """The program a call in file ``path`` runs in, where only one can run it: the file
        itself when no project file imports it (no import line of the project names its
        module) and it is no test module (pytest runs every test module in one process).
        Such a file runs only as ``__main__``, its own process: values its calls pass meet no
        other script's in any cache. None where any program importing it may run it."""
        name = os.path.basename(path)
        if name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py"):
            return None
        module = self.index.module_names.get(path, "") or name[: -len(".py")]
        return None if module.rsplit(".", 1)[-1] in self.index.import_naming() else path

    def argument_values(self, site: CallSite, argument, storage: Storage, acc: "_Arguments", depth: int) -> None:
        """Add what ``argument`` (at ``site``) can pass for ``storage`` to ``acc``."""
        kind = argument.kind
        here = Location(site.path, argument.line or site.span.line, site.span.column, "call", "")
        loop = next((loop for loop in reversed(site.loops) if argument.text in loop.targets), None) if kind == "name" else None
        if storage.length:
            # A display's items are counted (``[1.0 - step / 12, step / 12]`` has two, whatever
            # the loop variable they are computed from).
            counted = kind == "list" and argument.length is not None
            # A loop's item passed whole says nothing of a container it holds (``len(p.shape)``
            # of each ``p`` a loop takes from a tuple of configurations): that needs its value.
            # Nor is the item of a loop over a parameter, passed whole, evidence that its own
            # length changes (``def train_function(data): for batch in data: step(batch)``):
            # what the caller's items hold is not known.
            item = kind == "name" and (bool(storage.members) or (loop is not None and self._over_parameter(site, loop.iter_text)))
            if argument.grown or (argument.loop_names and kind in ("subscript", "call", "list", "name") and not counted and not item):
                acc.add_unbounded(replace_note(here, "passes a container that grows between calls"), "a container that grows between calls")
            elif argument.length is not None:
                acc.add_value(_container_shape(argument.text, argument.length), kind, replace_note(here, f"passes {argument.length} item(s)"))
            elif kind == "attribute":
                # ``memory.items``: an object's list that one of its methods grows between calls.
                grown = self.grown_attribute(site, argument.text)
                if grown:
                    acc.add_unbounded(replace_note(here, "passes a container that grows between calls"), grown)
            return
        if storage.members and storage.members[0] == ".ndim":
            # The rank of a tensor argument: tensors of another rank at the call sites.
            if argument.rank is not None:
                acc.add_value(str(argument.rank), "tensor", replace_note(here, f"passes a tensor of rank {argument.rank}"))
            elif over_parameters(site, argument.text):
                acc.add_unbounded(replace_note(here, "passes each parameter of a model (of several ranks)"), "the parameters of a model, of several ranks")
            elif loop is not None and argument.loop_var and len(loop.targets) == 1:
                # Items of a loop over the outputs of submodules whose layer types fix different
                # ranks (a Conv2d's output has rank 4, a Conv1d's 3): one rank per item. Items
                # of unknown rank say nothing.
                for rank, layer in self.loop_item_ranks(site, loop.iter_text):
                    acc.add_value(str(rank), "tensor", replace_note(here, f"passes the output of `{layer}` (rank {rank})"))
            return
        if storage.members and storage.members[0].startswith(".shape["):
            # A size of a tensor argument: tensors sized by the loop, grown, or sliced per call.
            if argument.grown:
                acc.add_unbounded(replace_note(here, "passes a tensor built from a list that grows between calls"), "tensors of a different size each time (built from a list that grows)")
            elif argument.loop_names and (argument.shape or kind in ("subscript", "call")):
                acc.add_unbounded(replace_note(here, "passes a tensor sized by the loop"), "tensors sized by a loop variable")
            elif argument.shape:
                acc.add_value(repr(argument.shape), kind, replace_note(here, f"passes a tensor of shape ({', '.join(argument.shape)})"))
            return
        if storage.members:
            # ``cfg.window`` of an object built per call, from the loop variable: the member
            # changes when the constructor (or the factory that builds it) is given it.
            built = argument.text if kind == "call" else argument.origin if kind == "name" else ""
            targets = {t for loop in site.loops for t in loop.targets}
            if built and targets & _words(built) and self.sets_member(site, built, storage.members[0].lstrip(".")):
                acc.add_unbounded(replace_note(here, "passes an object built anew each iteration"), "an object built per call from the loop variable")
            return
        if argument.loop_names and not argument.loop_var and _looks_up(argument.text, set(argument.loop_names)):
            # ``group["lr"]``, ``cfg.scale``, ``p.grad``: data read from the loop's items, which
            # may well be the same in every item; nothing says the value changes.
            return
        if loop is not None or argument.loop_var or argument.loop_names:
            count = loop.count if loop is not None and len(argument.loop_names) <= 1 else None
            if count is not None and count <= 8:
                acc.add_count(count, "int", replace_note(here, f"passes each of {count} values"), f"each of the {count} values of a loop")
            else:
                acc.add_unbounded(replace_note(here, "passes a different value each iteration"), "a loop variable")
            return
        if kind in ("int", "str", "float", "bool", "none"):
            acc.add_value(argument.text, kind, replace_note(here, f"passes {argument.text}"))
            return
        if kind == "name" and depth < CALLER_DEPTH:
            # A parameter of the calling function: what its own callers pass.
            facts = self.index.facts(site.path)
            caller = facts.function(site.function) if facts is not None and site.function else None
            if caller is None or argument.text not in {p.name for p in caller.params}:
                return
            ref = FunctionRef(site.path, caller.qualname)
            position = _param_position(caller, argument.text, method=bool(caller.class_name))
            for outer in self.function_call_sites(ref):
                outer_argument = _argument(outer, argument.text, position)
                if outer_argument is not None:
                    before = len(acc.locations)
                    self.argument_values(outer, outer_argument, storage, acc, depth + 1)
                    if len(acc.locations) > before:
                        acc.locations.insert(before, replace_note(here, f"passes `{argument.text}` on, from `{caller.qualname}`'s callers"))

    def _over_parameter(self, site: CallSite, iter_text: str) -> bool:
        """Whether a loop at ``site`` iterates one of the calling function's parameters
        (``data``, ``enumerate(data)``, ``data.items()``)."""
        facts = self.index.facts(site.path)
        caller = facts.function(site.function) if facts is not None and site.function else None
        text = iter_text
        for prefix in ("enumerate(", "list(", "tuple(", "reversed("):
            if text.startswith(prefix) and text.endswith(")"):
                text = text[len(prefix) : -1].split(",")[0].strip()
        for suffix in (".items()", ".values()"):
            if text.endswith(suffix):
                text = text[: -len(suffix)]
        return caller is not None and text in {p.name for p in caller.params}

    def sets_member(self, site: CallSite, built: str, member: str) -> bool:
        """Whether the call ``built`` (``TaskConfig(name=n, scale=s)``,
        ``AttentionConfig.for_context(c)``) gives the object's ``member``: as a keyword or a
        positional argument of the constructor, or in what a factory it calls returns."""
        try:
            node = ast.parse(built, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return True
        if not isinstance(node, ast.Call):
            return True
        if any(kw.arg == member or kw.arg is None for kw in node.keywords):
            return True
        facts = self.index.facts(site.path)
        callee = _dotted(node.func)
        if facts is None or not callee:
            return True
        cls = self.index.resolve_class(facts.resolve(callee), facts.path)
        if cls is not None:
            # Positional arguments fill the fields in order (a dataclass's ``__init__``).
            fields = [name for name, init in cls[1].attrs if init.class_level]
            return member in fields[: len(node.args)]
        caller = facts.function(site.function) if site.function else None
        ref = self.resolve_callee(facts, caller, callee)
        fn = self.index.function(ref) if ref is not None else None
        if fn is None:
            return True
        # A factory: look at the constructor calls it returns.
        tree_facts = self.index.facts(ref.path)  # type: ignore[union-attr]
        body = "\n".join(self.index.lines(ref.path)[fn.line - 1 : fn.end_line])  # type: ignore[union-attr]
        try:
            tree = ast.parse(textwrap.dedent(body))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return True
        returns = [n.value for n in ast.walk(tree) if isinstance(n, ast.Return) and isinstance(n.value, ast.Call)]
        if not returns or tree_facts is None:
            return True
        return any(any(kw.arg == member or kw.arg is None for kw in call.keywords) or call.args for call in returns)

    def loop_item_ranks(self, site: CallSite, iter_text: str) -> list[tuple[int, str]]:
        """(rank, layer) for each item of ``iter_text`` whose rank its layer type fixes: a list
        display of submodule calls (``[self.image(a), self.audio(b)]``), directly or as the one
        ``return`` of a method of the calling class (``self.features(batch)``)."""
        facts = self.index.facts(site.path)
        caller = facts.function(site.function) if facts is not None and site.function else None
        if facts is None or caller is None or not caller.class_name:
            return []
        cls = facts.cls(caller.class_name)
        if cls is None:
            return []
        try:
            items: ast.expr = ast.parse(iter_text, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return []
        if isinstance(items, ast.Call):
            method = _dotted(items.func)
            qual = cls.method(method[len("self."):]) if method.startswith("self.") and method.count(".") == 1 else None
            items = self._single_return(facts, qual) if qual else None
        if not isinstance(items, (ast.List, ast.Tuple)):
            return []
        out: list[tuple[int, str]] = []
        for element in items.elts:
            callee = _dotted(element.func) if isinstance(element, ast.Call) else ""
            if not callee.startswith("self.") or callee.count(".") != 1:
                continue
            layer = cls.submodule(callee[len("self."):]) or ""
            rank = LAYER_OUTPUT_RANKS.get(layer.rsplit(".", 1)[-1])
            if rank is not None:
                out.append((rank, layer))
        return out

    def _single_return(self, facts: ModuleFacts, qualname: str) -> ast.expr | None:
        """The value of the one ``return`` of function ``qualname`` of ``facts``, else None."""
        text = self.index.text(facts.path)
        fn = facts.function(qualname)
        if text is None or fn is None:
            return None
        tree = self._tree_of(facts.path)
        if tree is None:
            return None
        name = qualname.rsplit(".", 1)[-1]
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name and node.lineno == fn.line:
                returns = [n.value for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None]
                return returns[0] if len(returns) == 1 else None
        return None

    def grown_attribute(self, site: CallSite, text: str) -> str:
        """Why ``obj.attr`` (passed at ``site``) grows between calls of the region called
        there ("" if nothing says it does): a write to its length that runs between calls."""
        head, _, attr = text.rpartition(".")
        facts = self.index.facts(site.path)
        caller = facts.function(site.function) if facts is not None and site.function else None
        if facts is None or "." in head or not attr:
            return ""
        owner = ""
        if head == "self" and caller is not None and caller.class_name:
            owner = f"{facts.module}.{caller.class_name}"
        elif caller is not None:
            for var, cls_text in caller.instances:
                if var == head:
                    found = self.index.resolve_class(cls_text, facts.path)
                    owner = f"{found[0].module}.{found[1].qualname}" if found is not None else ""
        if not owner:
            return ""
        for mutation in self.index.mutations("length", "", attr):
            if mutation.owner == owner:
                for region in self.regions:
                    if site.callee.rsplit(".", 1)[-1] in self.names(region):
                        when = self.runs_between_calls(region, mutation)
                        if when is not None:
                            return f"`{text}` grows {when[1]}"
        return ""

    def function_call_sites(self, ref: FunctionRef) -> list[CallSite]:
        """The project's calls of a project function or method (``model(x)`` for a module's
        ``forward``), found by the names it is called by and kept where they resolve to it."""
        if ref in self._function_sites:
            return self._function_sites[ref]
        self._function_sites[ref] = []
        facts = self.index.facts(ref.path)
        fn = facts.function(ref.qualname) if facts is not None else None
        if facts is None or fn is None:
            return []
        names = {fn.name}
        owner = f"{facts.module}.{fn.class_name}" if fn.class_name else ""
        if fn.class_name and fn.name in ("forward", "__call__"):
            for other in list(self.index.parsed()):
                for function in other.functions:
                    for var, cls_text in function.instances:
                        found = self.index.resolve_class(cls_text, other.path)
                        if found is not None and f"{found[0].module}.{found[1].qualname}" == owner:
                            names.add(var)
        sites = []
        for site in collect_call_sites(self.index, frozenset(names)):
            site_facts = self.index.facts(site.path)
            caller = site_facts.function(site.function) if site_facts is not None and site.function else None
            if site_facts is None:
                continue
            target = self.resolve_callee(site_facts, caller, site.callee)
            if target is None and caller is not None and "." not in site.callee:
                for var, cls_text in caller.instances:
                    if var == site.callee:
                        found = self.index.resolve_class(cls_text, site.path)
                        target = self.index.class_method(*found, "forward") if found is not None else None
            if target == ref:
                sites.append(site)
        self._function_sites[ref] = sites
        return sites


@dataclass
class _Arguments:
    """The values a region's call sites pass for one argument, with the program each is
    passed in (``program``: a call site's file -> the one script that runs it, or None)."""

    program: Callable[[str], str | None] = lambda path: None
    locations: list[Location] = field(default_factory=list)
    unbounded: bool = False
    kinds: set[str] = field(default_factory=set)
    why: str = ""
    programs: dict[str, set[str | None]] = field(default_factory=dict)  # each value -> its programs

    def distinct(self) -> int:
        """How many different values one process can pass: the values of one script, with
        those any program may pass (two scripts, each calling once with its own value, each
        compile one graph)."""
        scripts = {program for programs in self.programs.values() for program in programs} - {None}
        if not scripts:
            return len(self.programs)
        return max(sum(1 for programs in self.programs.values() if None in programs or script in programs) for script in scripts)

    def add_unbounded(self, location: Location, why: str) -> None:
        self.unbounded = True
        self.locations.append(location)
        self.why = self.why or why

    def add_value(self, value: str, kind: str, location: Location) -> None:
        self._add(value, location)
        self.kinds.add(kind)
        self.locations.append(location)

    def add_count(self, count: int, kind: str, location: Location, why: str) -> None:
        for i in range(count):
            self._add(f"<{location.path}:{location.line}:{i}>", location)
        self.kinds.add(kind)
        self.locations.append(location)
        self.why = self.why or why

    def _add(self, value: str, location: Location) -> None:
        self.programs.setdefault(value, set()).add(self.program(location.path))


_NOT_PASSED = object()  # ``passed_values``: the value written is not the function's parameter
# Builtins whose result depends only on their arguments (a value made with them from one
# parameter has no more values than the parameter).
_PURE_BUILTINS = frozenset({"int", "float", "str", "bool", "abs", "round", "min", "max", "len", "tuple", "list"})


# What a loop over a model's parameters looks like: ``model.parameters()``,
# ``named_parameters()``, ``self.params``, ``group["params"]``.
PARAMETERS = re.compile(r"(?:\bparameters\(|\bnamed_parameters\(|\bparams\b|\[['\"]params['\"]\])")


# The rank of a batched output of layers whose type fixes it (an unbatched input gives one less,
# which is as different between the kinds).
LAYER_OUTPUT_RANKS = {
    "Conv1d": 3, "Conv2d": 4, "Conv3d": 5, "ConvTranspose1d": 3, "ConvTranspose2d": 4, "ConvTranspose3d": 5,
    "LazyConv1d": 3, "LazyConv2d": 4, "LazyConv3d": 5,
}  # fmt: skip


def over_parameters(site: CallSite, text: str) -> bool:
    """Whether ``text`` (an argument at ``site``) is, or belongs to, the variable of a loop over
    a model's parameters (weights and biases of different layers differ in shape and rank)."""
    root = text.split(".", 1)[0].split("[", 1)[0]
    return any(root in loop.targets and PARAMETERS.search(loop.iter_text) is not None for loop in site.loops)


def _looks_up(text: str, loop_names: set[str]) -> bool:
    """Whether ``text`` reads something out of a loop variable (``group["lr"]``, ``item.size``,
    ``batch.get("k")``) rather than computing from it (``i * 2``, ``step + 1``)."""
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and node.id in loop_names and not isinstance(ast.parse(text, mode="eval").body, ast.Name)


def _container_shape(text: str, length: int) -> str:
    """What a container display passes, for counting distinct values: its length, and for a
    dict its keys (same length, other keys: another guard value)."""
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return str(length)
    if isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) for k in node.keys):
        return repr(tuple(k.value for k in node.keys))  # type: ignore[union-attr]
    return str(length)


def replace_note(location: Location, note: str) -> Location:
    return Location(location.path, location.line, location.column, location.role, note, location.end_line, location.end_column)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


# Methods that add to a container, and those (with ``del c[k]``) that take from it.
_GROWING_METHODS = frozenset({"append", "extend", "insert", "add", "appendleft", "extendleft", "setdefault", "update"})
_SHRINKING_METHODS = frozenset({"pop", "popitem", "popleft", "remove", "discard", "clear"})


def _grows_and_shrinks(mutations) -> bool:
    """Whether the length changes among ``mutations`` both add to a container and take from it."""
    grows = shrinks = False
    for mutation in mutations:
        if mutation.op == "delete" or mutation.value in _SHRINKING_METHODS:
            shrinks = True
        elif mutation.op == "augassign" or mutation.value in _GROWING_METHODS:
            grows = True
    return grows and shrinks


def _values_of(node: ast.expr) -> set[str] | None:
    """The values an expression can have, when they are a few known ones: literals, enum
    members, either branch of a conditional, a boolean (None: any number of values)."""
    if isinstance(node, ast.IfExp):
        left, right = _values_of(node.body), _values_of(node.orelse)
        return None if left is None or right is None else left | right
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool, bytes, type(None))):
        return {repr(node.value)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return {repr(-node.operand.value)} if isinstance(node.operand.value, (int, float)) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) or isinstance(node, ast.Compare):
        return {"True", "False"}
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id[:1].isupper() and node.attr.isupper():
        return {ast.unparse(node)}  # ``Mode.TRAIN``: an enum member or a class constant
    return None


# ``torch._dynamo.reset()``, ``torch.compiler.reset()``, ``torch._dynamo.reset_code_caches()``
# (and through ``import torch._dynamo as dynamo``): each empties every code object's cache.
_RESETS = frozenset({("_dynamo", "reset"), ("compiler", "reset"), ("dynamo", "reset"), ("_dynamo", "reset_code_caches"), ("dynamo", "reset_code_caches")})


def _is_reset(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
        and tuple(_dotted(stmt.value.func).split(".")[-2:]) in _RESETS
    )


def resets_before(block: list[ast.stmt], line: int) -> bool:
    """Whether a statement-level reset of Dynamo runs before ``line`` at every run of it: a
    reset earlier in a block that leads to the line, with no loop or function boundary between
    them (a reset before a loop runs once for all its iterations; one outside the function is
    not part of its calls)."""
    found = False
    while True:
        for position, stmt in enumerate(block):
            end = getattr(stmt, "end_lineno", None) or stmt.lineno
            if stmt.lineno <= line <= end:
                break
        else:
            return False
        found = found or any(_is_reset(earlier) for earlier in block[:position])
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor, ast.While)):
            found = False  # a new scope, or a body that repeats: what ran before it ran once
        blocks = [getattr(stmt, name) for name in ("body", "orelse", "finalbody") if isinstance(getattr(stmt, name, None), list)]
        blocks += [handler.body for handler in getattr(stmt, "handlers", [])]
        blocks += [case.body for case in getattr(stmt, "cases", [])]
        inner = [b for b in blocks if b and b[0].lineno <= line <= (getattr(b[-1], "end_lineno", None) or b[-1].lineno)]
        if not inner:
            return found  # the statement that holds the compile call
        block = inner[0]


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _last_name(node: ast.AST) -> str:
    text = _dotted(node)
    return text.rsplit(".", 1)[-1] if text else ""


# A value written that is a tensor by its last call: ``torch.zeros(n)``, ``x.clone()``,
# ``lengths.to(device)``, ``ids.unsqueeze(0).long()``.
_TENSOR_VALUE = re.compile(
    r"^\s*(?:torch\.[\w.]+\(.*\)|.*\.(?:clone|detach|to|cuda|cpu|float|half|bfloat16|double|long|int|bool|"
    r"unsqueeze|squeeze|view|reshape|contiguous|expand|repeat|flatten|permute|transpose|new_zeros|new_ones|"
    r"new_full|new_empty|new_tensor|sum|mean|cumsum|argmax|softmax)\(.*\))\s*$",
    re.S,
)

# ``if x is None:``, ``if self.cache is None:``, ``if not x:`` heading a block.
_LAZY_TEST = re.compile(r"if\s+(?:not\s+([\w.]+)|([\w.]+)\s+is\s+None)\s*:\s*(?:#.*)?$")


def _uses_loop_value(expr: ast.expr, loop_names: frozenset[str]) -> bool:
    """Whether ``expr`` computes with a loop variable itself (``i``, ``2 ** i``, ``dims[i]``),
    not with an attribute or item of it (``child.embed_dim`` copies what an existing
    instance holds)."""
    owners = {id(n.value) for n in ast.walk(expr) if isinstance(n, (ast.Attribute, ast.Subscript))}
    return any(isinstance(n, ast.Name) and n.id in loop_names and id(n) not in owners for n in ast.walk(expr))


def _calls_in_loops(node: ast.AST, names: frozenset[str]) -> Iterator[tuple[ast.Call, frozenset[str]]]:
    """Every call under ``node`` with the names the ``for`` loops and comprehensions around
    it bind (within its function)."""
    inner = names
    if isinstance(node, (ast.For, ast.AsyncFor)):
        inner = names | {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        inner = names | {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        inner = frozenset()
    if isinstance(node, ast.Call):
        yield node, names
    for child in ast.iter_child_nodes(node):
        yield from _calls_in_loops(child, inner)


def _calls_with_functions(tree: ast.Module):
    """(qualname of the enclosing function or "", call) for every call of a module."""
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, qual = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                stack.append((child, f"{qual}.{child.name}" if qual else child.name))
                continue
            if isinstance(child, ast.Call):
                yield qual, child
            stack.append((child, qual))


def _argument(site: CallSite, name: str, position: int | None):
    for key, argument in site.keywords:
        if key == name:
            return argument
    if position is not None and position < len(site.args):
        argument = site.args[position]
        return None if argument.kind == "starred" else argument
    return None


def _param_position(fn: FunctionFacts, name: str, method: bool) -> int | None:
    positional = [p for p in fn.params if p.kind == "positional"]
    if method and positional and positional[0].name in ("self", "cls"):
        positional = positional[1:]
    for i, param in enumerate(positional):
        if param.name == name:
            return i
    return None


def _function_reference(text: str) -> str:
    """``fn`` in ``fn`` / ``functools.partial(fn, k)`` / ``partial(fn, k=1)``."""
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    if isinstance(node, ast.Call) and node.args and ast.unparse(node.func).rsplit(".", 1)[-1] == "partial":
        node = node.args[0]
    if isinstance(node, (ast.Name, ast.Attribute)):
        return ast.unparse(node)
    return ""



def _is_callback(fn: FunctionFacts) -> bool:
    return bool(fn.class_name) and (fn.name.startswith(CALLBACK_PREFIXES) or fn.name in CALLBACK_NAMES)


def _verb(mutation: Mutation) -> str:
    if mutation.op == "augassign":
        return "this update changes"
    if mutation.op == "delete":
        return "this deletion changes"
    if mutation.op == "call":
        return "this call changes"
    return "this assignment changes"


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1] if name.count(".") > 1 else name
