"""Compiled regions: the code objects Dynamo traces, from each compile site through the
callees it inlines.

Every compile site is resolved on the value flow (``valueflow``): what the compiled
expression may hold decides the region(s). A site resolves to project code (one region per
entry function), to a modelled torch library entry (``library``), or to nothing, with a reason.
How it resolved is its form (``RESOLUTION_FORMS``); why it did not, its reason
(``UNRESOLVED_REASONS``). docs/regions.md describes both lists with examples.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import Callable

from recompile_lint.analysis.constants import _passed_constants, _same, constant_truth, unassigned
from recompile_lint.analysis.constructed import object_constants
from recompile_lint.analysis.facts import CompileSite, FunctionFacts, ModuleFacts, dotted_name
from recompile_lint.analysis.index import FunctionRef, ProjectIndex, Stores, function_trees
from recompile_lint.analysis.library import LibraryRegion, entry_for
from recompile_lint.analysis.valueflow import GENERIC_TORCH, TORCH_WRAPPERS, Value, ValueFlow, _argument, _is_method, literal_text
from recompile_lint.models import Location
# Decorators that stop Dynamo from tracing into a function (a graph break, no guards).
DISABLE_DECORATORS = frozenset(
    {
        "torch._dynamo.disable",
        "torch.compiler.disable",
        "torch._dynamo.eval_frame.disable",
        "torch._disable_dynamo",
        "torch.jit.ignore",
        "torch._dynamo.decorators.disable",
    }
)


@dataclass(frozen=True)
class CompiledRegion:
    """One compiled entry point, the compile site that made it, and what it reaches."""

    entry: FunctionRef
    name: str  # display name: ``module.qualname``
    site: CompileSite
    site_path: str
    # (function, depth, caller) for the entry (depth 0, caller None) and every inlined callee.
    reached: tuple[tuple[FunctionRef, int, FunctionRef | None], ...]
    model_class: str = ""  # ``module.Class`` when an nn.Module instance was compiled
    form: str = ""  # how the site was resolved (RESOLUTION_FORMS)
    # For per-block compiles (an instance taken from a container), the container as written
    # (``model.layers``); "" otherwise.
    container: str = ""
    # For a function the execution stage finds run as a frame of its own (a graph break in it
    # while the compiled region inlined it): the compiled region's name, and the break's line.
    frame_of: str = ""
    break_at: Location | None = None
    # For each reached function with parameters every call in the region binds to constants,
    # the (line, column, end line, end column) spans of the branches those constants rule out
    # (columns from 0): Dynamo never traces them.
    dead: tuple[tuple[FunctionRef, tuple[tuple[int, int, int, int], ...]], ...] = ()

    def site_location(self) -> Location:
        """Where the compiled object is made, as a finding's location."""
        span = self.site.span
        note = f"`{self.name}` is compiled here"
        if self.frame_of:
            where = f" at line {self.break_at.line}" if self.break_at is not None else ""
            note = (f"`{self.frame_of}` is compiled here; `{self.name}` breaks its graph{where}, so Dynamo "
                    f"runs each call of it as a frame of its own, with one cache for every caller")
        return Location(self.site_path, span.line, span.column, "compile-site", note, span.end_line, span.end_column)

    @property
    def dynamic(self) -> str | None:
        """The ``dynamic=`` option as written ("False", "True", "None") or None when absent."""
        return self.site.option("dynamic")


def display_name(index: ProjectIndex, ref: FunctionRef) -> str:
    facts = index.facts(ref.path)
    module = facts.module if facts else ""
    return f"{module}.{ref.qualname}" if module else ref.qualname


def is_disabled(fn: FunctionFacts) -> bool:
    return any(d in DISABLE_DECORATORS for d in fn.decorators)


# How a compile site resolved: the kind of object compiled, or how it was found.
RESOLUTION_FORMS = {
    "decorated": "a `def` decorated with `@torch.compile` (or `@torch.compile(...)`, `@torch._dynamo.optimize(...)`)",
    "function": "a project function: by name, import, re-export, factory result, `functools.partial`, a parameter's callers",
    "lambda": "a lambda",
    "transform": "a project function under a `torch.func` transform: `torch.compile(torch.vmap(fn))`; Dynamo inlines `fn` from torch's wrapper",
    "method": "a project method, bound or not: `torch.compile(self._forward)`, `torch.compile(model.forward)`",
    "module": "an instance of a project class: its `forward` (or `__call__`): `torch.compile(model)`, `model.compile()`",
    "per-block": "instances taken from a container: `for layer in model.layers: layer.compile()`, `torch.compile(self.blocks[i])`",
    "by-class-name": "instances a helper selects by class or class name: `isinstance(m, Block)`, `m.__class__.__name__ in names`",
    "library": "a torch callable or torch class instance: the entry modelled in `analysis/library.py`",
}

# Why a compile site did not resolve (a short fixed list; docs/regions.md explains each).
UNRESOLVED_REASONS = {
    "external": "the compiled object comes from a library other than torch, or from a module outside the project",
    "parameter": "the compiled object is a parameter that no call site in the project passes a known value to",
    "dynamic": "the compiled object is computed at run time (a computed attribute or key, an expression)",
    "call": "the compiled object is the result of a call whose callee or return value is not known",
    "unbound": "a name on the way is bound nowhere the index sees (a star import of another library, a global set elsewhere)",
    "depth": "the chain from the site to the object is longer than the bounds followed",
    "no-code": "the object has no code Dynamo would trace (a class without `forward`, a container, a literal)",
    "disabled": "every candidate is decorated with `torch._dynamo.disable` / `torch.compiler.disable`",
    "configuration": "the compiled object is built by a configuration system (hydra's `instantiate`, an mmengine registry): unknown until run",
    "not-torch": "`.compile()` of something that is not an nn.Module (`re`, another library's `compile`, a project class's own `compile` method): not a compile site",
    "wrapper": "a project wrapper's own compile of its parameter, which the wrapper's calls fill: each call is a compile site of its own, resolved there",
}
# What a user can do about each reason, as the reports say it.
REASON_ACTIONS = {
    "external": "another library's model: its code is not analysed",
    "parameter": "public API: no caller in the project passes it; lint the code that calls it",
    "dynamic": "computed at run time: compile a named module or function to have it analysed",
    "call": "a call the analysis does not follow: if it is a compile wrapper outside the project, add it to `compile-functions`",
    "unbound": "a name bound nowhere the analysis sees (a star import of another library, a global set elsewhere)",
    "depth": "longer than the chains followed",
    "no-code": "nothing Dynamo would trace",
    "disabled": "compiled, but every candidate disables Dynamo",
    "configuration": "built from configuration: its class is data, known only when it runs; not resolvable statically",
    "wrapper": "what the wrapper's callers pass: each call is listed as a site of its own",
}
# torch's callables that compile what they are given (a method ending in ``.compile`` too).
COMPILING_CALLABLES = frozenset({"torch.compile", "torch.compiler.compile", "torch._dynamo.optimize", "torch._dynamo.eval_frame.optimize"})
# Values built by a configuration system: their class is named by data, not code.
CONFIGURATION_BUILDERS = ("hydra.", "omegaconf.", "mmengine.", "mmcv.", "detectron2.config.", "lazy_instantiate", "instantiate(", "build_from_cfg(")
# When candidates disagree, the reason shown is the first of these that applies.
# An unknown candidate is more likely the real object than a stray one with no code (a
# name rebound to something else later in the scope), so it names the reason first.
_REASON_ORDER = ("disabled", "configuration", "external", "parameter", "call", "dynamic", "unbound", "depth", "no-code", "not-torch")


@dataclass(frozen=True)
class SiteResolution:
    """What one compile site compiles: project regions, library regions, or a reason."""

    site: CompileSite
    site_path: str
    regions: tuple[CompiledRegion, ...] = ()
    library: tuple[LibraryRegion, ...] = ()
    reason: str = ""  # UNRESOLVED_REASONS when nothing resolved, else ""
    detail: str = ""  # what was found instead (an external name, a parameter), when known
    # A wrapper's own ``torch.compile(param)``: its callers are compile sites themselves, so
    # its regions are theirs (the engine does not count them twice).
    wrapper_body: bool = False

    @property
    def resolved(self) -> bool:
        return bool(self.regions or self.library)

    @property
    def forms(self) -> tuple[str, ...]:
        """The forms of its regions, each once, in order."""
        return tuple(dict.fromkeys([r.form for r in self.regions] + [r.form for r in self.library]))


class RegionFinder:
    """Turns compile sites into regions and follows calls the way Dynamo inlines them."""

    def __init__(self, index: ProjectIndex, max_depth: int = 6, flow: ValueFlow | None = None):
        self.index = index
        self.max_depth = max_depth
        self.flow = flow if flow is not None else ValueFlow(index)
        index.memo["flow"] = self.flow  # the run's value flow, for the evidence that asks about receivers
        self.trees = function_trees(index)

    # ---- entry points --------------------------------------------------------------------

    def regions(self, facts: ModuleFacts) -> list[CompiledRegion]:
        """The project regions of the module's compile sites (a wrapper's own site left out:
        its callers' sites carry the same regions)."""
        out: list[CompiledRegion] = []
        for resolution in self.resolve(facts):
            if not resolution.wrapper_body:
                out.extend(resolution.regions)
        return out

    def resolve(self, facts: ModuleFacts, namesakes: bool = False) -> list[SiteResolution]:
        """Every compile site of the module, resolved. A call that only shares a wrapper's
        name (the value flow shows it runs a function that compiles none of its parameters,
        or none of what this call passes) is no site at all: left out, unless ``namesakes``
        (kept as ``not-torch``, for a count that checks every call of a wrapper's name)."""
        out = []
        for site in facts.compile_sites:
            resolution = self.resolve_site(facts, site)
            if resolution.wrapper_body and resolution.reason in ("no-code", "parameter", "unbound"):
                # Not a reason the callers' values gave (``external`` where they pass another
                # library's model says more, and stays). ``unbound``: the parameter of the
                # decorator a factory call returns (``lambda f: wrap(f, **kw)``), which the
                # decorated functions fill, each a site of its own.
                scope = _compiling_scope(facts, site, facts.function(site.function) if site.function else None)
                if scope is not None and (facts.path, scope.qualname) in self._called_wrappers():
                    # Its calls are sites, each resolved by what it passes: that is where it is analysed.
                    resolution = replace(resolution, reason="wrapper", detail=f"{scope.qualname}()")
            if namesakes or not (site.form in ("wrapper", "decorator") and resolution.reason == "not-torch"):
                out.append(resolution)
        return out

    def _called_wrappers(self) -> frozenset[tuple[str, str]]:
        """(file, qualname) of each project function that a compile site of the parsed files
        calls as a wrapper (``validate_jit(model)``, a class's ``self.compile(model)``)."""
        key = "called-wrappers"
        if key not in self.index.memo:
            called: set[tuple[str, str]] = set()
            for facts in list(self.index.parsed()):  # the flow may parse more files on the way
                for site in facts.compile_sites:
                    if site.form == "decorator":
                        # ``@jit_fuser`` where the module global holds a wrapper (``wrappers``).
                        ref = self._aliased_wrapper(facts, self._site_call(facts, site))
                        if ref is not None:
                            called.add((ref.path, ref.qualname))
                        continue
                    if site.form not in ("wrapper", "method"):
                        continue
                    call = self._site_call(facts, site)
                    if isinstance(call, ast.Call):
                        scope = facts.function(site.function) if site.function else None
                        called.update((ref.path, ref.qualname) for ref in self.flow.callees(call, facts, scope))
            self.index.memo[key] = frozenset(called)
        return self.index.memo[key]

    def _aliased_wrapper(self, facts: ModuleFacts, node: ast.expr | None) -> FunctionRef | None:
        """The wrapper a decorator names through module globals bound to it (``@jit_fuser``,
        ``jit_fuser = lazy_compile``: ``wrappers._module_aliases``); None for any other."""
        text = dotted_name(node.func if isinstance(node, ast.Call) else node) if node is not None else ""
        if not text:
            return None
        full = facts.resolve(text)
        if full == text and "." not in text and facts.module:
            full = f"{facts.module}.{text}"
        aliases = self.index.memo.get("wrapper-aliases") or {}
        assert isinstance(aliases, dict)
        seen: set[str] = set()
        while full in aliases and full not in seen:
            seen.add(full)
            full = aliases[full]
        return self.index.resolve_function(full, facts.path) if full not in aliases else None

    def resolve_site(self, facts: ModuleFacts, site: CompileSite) -> SiteResolution:
        if site.form == "decorator" and site.target_kind == "class":
            return self._decorated_class(facts, site)
        if site.form == "decorator":
            other = self._other_decorator(facts, site)
            if other:
                # ``@hydra.main(...)`` beside a project wrapper named ``main``.
                return SiteResolution(site, facts.path, reason="not-torch", detail=other)
            return self._resolved(facts, site, [(FunctionRef(facts.path, site.decorated), "decorated", "", "")], [])
        scope = facts.function(site.function) if site.function else None
        if site.form == "method":
            decorated = self._compiling_decorator(facts, site, scope)
            if decorated is not None:
                # ``@compiler.compile()`` where that call returns ``torch.compile``.
                return self._resolved(facts, site, [(FunctionRef(facts.path, decorated.qualname), "decorated", "", "")], [])
        wrapper_body = self._is_wrapper_body(facts, site, scope)
        if site.target_kind == "lambda" and site.lambda_qualname:
            return self._resolved(facts, site, [(FunctionRef(facts.path, site.lambda_qualname), "lambda", "", "")], [], wrapper_body)
        target, other = self._target(facts, site, scope)
        if other:
            # A call of a project function that shares a wrapper's name, or a project class's
            # own ``compile`` method, that compiles none of its parameters: not a compile site.
            return SiteResolution(site, facts.path, reason="not-torch", detail=other, wrapper_body=wrapper_body)
        if target is NOT_CONSTANT_CALLEE:
            return SiteResolution(site, facts.path, reason="call", detail=f"{ast.unparse(self._site_call(facts, site).func)}()", wrapper_body=wrapper_body)
        if target is None:
            return SiteResolution(site, facts.path, reason="dynamic", wrapper_body=wrapper_body)
        if site.form == "method" and self._not_torch(facts, target):
            return SiteResolution(site, facts.path, reason="not-torch", detail=ast.unparse(target), wrapper_body=wrapper_body)
        if site.form == "method" and not _module_compile_binds(self._site_call(facts, site), target):
            # ``model.compile(optimizer=..., loss=...)``: ``nn.Module.compile`` hands its
            # arguments to ``torch.compile``, which raises at these: another library's model.
            return SiteResolution(site, facts.path, reason="not-torch", detail="arguments `nn.Module.compile` does not take", wrapper_body=wrapper_body)
        values = self.flow.values_of(target, facts, scope)
        if site.form == "wrapper" and self._compiles_by_method(self._site_call(facts, site), facts, scope):
            # ``compile_model(model)`` whose body runs ``model.compile(loss=...)``: an object
            # of a project class with a ``compile`` method of its own (a Keras model) runs that.
            own = {v: ref for v in values if (ref := self._own_compile_of(v)) is not None}
            if own and len(own) == len(values):
                name = display_name(self.index, next(iter(own.values())))
                return SiteResolution(site, facts.path, reason="not-torch", detail=f"what it passes runs its own {name}()", wrapper_body=wrapper_body)
            values = frozenset(v for v in values if v not in own)
        if isinstance(target, ast.Name):
            # ``self._prepare(obj) if not isinstance(obj, nn.Module) else obj``: what the class test lets through.
            values = self.flow.narrowed_at(facts, scope, (site.span.line, site.span.column - 1), target.id, values)
        container = self._container(facts, scope, target)
        narrowed = self._narrow(facts, scope, site, target, values)
        by_name = narrowed is not None
        if narrowed is not None:
            values = narrowed
        form_of_instance = "by-class-name" if by_name else ("per-block" if container else "module")
        entries: list[tuple[FunctionRef, str, str, str]] = []
        library: list[LibraryRegion] = []
        reasons: list[tuple[str, str]] = []
        for value in sorted(values, key=lambda v: (v.kind, v.ref, v.path, v.detail)):
            self._classify(value, site, facts, form_of_instance, container, entries, library, reasons, 0)
        return self._resolved(facts, site, entries, library, wrapper_body, reasons)

    def _decorated_class(self, facts: ModuleFacts, site: CompileSite) -> SiteResolution:
        """``@torch.compile`` on a class: its instances, as ``torch.compile(instance)`` would
        resolve them (the forward or ``__call__`` each runs, its own or a base's, or a torch
        module's forward where it keeps one)."""
        cls = facts.cls(site.decorated)
        if cls is None:
            return SiteResolution(site, facts.path, reason="no-code", detail=site.decorated)
        model_class = f"{facts.module}.{cls.qualname}" if facts.module else cls.qualname
        entries: list = []
        library: list = []
        reasons: list = []
        self._classify(Value("instance", ref=model_class, path=facts.path), site, facts, "decorated", "", entries, library, reasons, 0)
        return self._resolved(facts, site, entries, library, reasons=reasons)

    def _classify(self, value: Value, site: CompileSite, facts: ModuleFacts, instance_form: str, container: str, entries: list, library: list, reasons: list, depth: int) -> None:
        """Sort one compiled value into an entry, a library region or a reason."""
        kind = value.kind
        if kind in ("function", "lambda", "method", "bound-method", "partial", "transform") and value.path:
            ref = self.flow.function_ref(value)
            if ref is None:
                reasons.append(("unbound", value.ref))
                return
            target = value.elements[0] if kind in ("partial", "transform") and value.elements else value
            form = "transform" if kind == "transform" else {"lambda": "lambda", "method": "method", "bound-method": "method"}.get(target.kind, "function")
            if site.form == "method":
                reasons.append(("no-code", value.ref))  # ``fn.compile()``: functions have no compile method
                return
            entries.append((ref, form, "", ""))
            return
        if kind == "instance":
            found = self.flow.class_of(value)
            if found is None:
                reasons.append(("unbound", value.ref))
                return
            ref = self.index.class_method(found[0], found[1], "forward") or self.index.class_method(found[0], found[1], "__call__")
            model_class = f"{found[0].module}.{found[1].qualname}" if found[0].module else found[1].qualname
            if ref is None:
                torch_base = self.flow.torch_base(*found)
                # A subclass of a concrete torch module keeps its forward (``nn.Sequential``);
                # one of ``nn.Module`` itself has none: an abstract base, another's ``self``.
                concrete = torch_base and torch_base not in GENERIC_TORCH
                entry = entry_for(Value("torch-instance", ref=torch_base)) if concrete else None
                if entry is not None:
                    # A project subclass of a torch module that keeps torch's forward.
                    library.append(LibraryRegion(entry, torch_base, site, facts.path, model_class, instance_form if instance_form != "module" else "library", container))
                else:
                    reasons.append(("no-code", value.ref))
                return
            entries.append((ref, instance_form, model_class, container))
            return
        if kind == "torch-instance" and value.name in TORCH_WRAPPERS:
            # A wrapper (DistributedDataParallel, ...) runs the forward of what it wraps; one
            # that wraps the compiled name itself (``model = DDP(model)``) adds nothing.
            if depth < 3:
                for inner in value.elements:
                    self._classify(inner, site, facts, instance_form, container, entries, library, reasons, depth + 1)
            return
        if kind == "container" and value.ref == "torch.nn.Sequential" and value.elements and depth < 3:
            for inner in value.elements:
                self._classify(inner, site, facts, instance_form, container or "nn.Sequential", entries, library, reasons, depth + 1)
            return
        if kind == "unknown":
            reason = value.detail or "dynamic"
            if reason in ("external", "call") and _from_configuration(value.ref):
                reason = "configuration"
            reasons.append((reason, value.ref))
            return
        if value.is_torch():
            entry = entry_for(value)
            if entry is None:
                reasons.append(("no-code", value.ref))
                return
            model_class = value.ref if kind == "torch-instance" else (value.elements[1].ref if kind == "bound-method" and len(value.elements) > 1 else "")
            library.append(LibraryRegion(entry, value.ref, site, facts.path, model_class, instance_form if kind == "torch-instance" and instance_form != "module" else "library", container))
            return
        if kind == "unknown":
            reasons.append((value.detail or "dynamic", value.ref))
            return
        if kind == "literal" and value.detail.startswith("none:"):
            return  # ``model = None`` before the real assignment: no candidate
        reasons.append(("no-code", value.ref or kind))

    def _resolved(self, facts: ModuleFacts, site: CompileSite, entries: list, library: list, wrapper_body: bool = False, reasons: list | None = None) -> SiteResolution:
        regions: list[CompiledRegion] = []
        disabled: list[str] = []
        seen: set = set()
        for ref, form, model_class, container in entries:
            if (ref, model_class) in seen:
                continue
            seen.add((ref, model_class))
            fn = self.index.function(ref)
            if fn is None:
                continue
            if is_disabled(fn):
                disabled.append(display_name(self.index, ref))
                continue
            reached, dead = self.reach(ref, self._every_call(facts, site))
            regions.append(
                CompiledRegion(
                    entry=ref,
                    name=display_name(self.index, ref),
                    site=site,
                    site_path=facts.path,
                    reached=tuple(reached),
                    dead=dead,
                    model_class=model_class,
                    form=form,
                    container=container,
                )
            )
        unique_library: list[LibraryRegion] = []
        for region in library:
            if (region.entry.name, region.ref, region.model_class) not in {(r.entry.name, r.ref, r.model_class) for r in unique_library}:
                unique_library.append(region)
        if regions or unique_library:
            return SiteResolution(site, facts.path, tuple(regions), tuple(unique_library), wrapper_body=wrapper_body)
        found = list(reasons or [])
        if disabled:
            found.append(("disabled", ", ".join(disabled)))
        if not found:
            found.append(("no-code", ""))
        reason, detail = min(found, key=lambda item: _REASON_ORDER.index(item[0]) if item[0] in _REASON_ORDER else len(_REASON_ORDER))
        return SiteResolution(site, facts.path, reason=reason, detail=detail, wrapper_body=wrapper_body)

    # ---- what a site compiles ------------------------------------------------------------

    def _site_call(self, facts: ModuleFacts, site: CompileSite) -> ast.expr | None:
        """The expression at a site's span (a call), parsed from the file."""
        text = self.index.text(facts.path)
        if text is None:
            return None
        lines = self.index.lines(facts.path)
        span = site.span
        if not 1 <= span.line <= span.end_line <= len(lines):
            return None
        start = len(lines[span.line - 1][: span.column - 1].encode("utf-8", "surrogatepass"))
        end = len(lines[span.end_line - 1][: span.end_column - 1].encode("utf-8", "surrogatepass"))
        return self.flow.expression_at(facts, (span.line, start, span.end_line, end))

    def _target(self, facts: ModuleFacts, site: CompileSite, scope: FunctionFacts | None) -> tuple[ast.expr | None, str]:
        """The expression a site compiles: ``torch.compile(X)``, ``torch.compile(**kw)(X)``,
        ``X.compile()``, the argument a wrapper call passes for the parameter the wrapper
        compiles (``wrapper(cfg, X)``, ``self.compile(X)`` of a project method); with, for a
        call that compiles nothing after all, what it calls instead."""
        node = self._site_call(facts, site)
        if not isinstance(node, ast.Call):
            return None, ""
        if site.form == "method":
            if not isinstance(node.func, ast.Attribute):
                return None, ""
            own = self._own_compile_method(node.func.value, facts, scope)
            if own is not None:
                return self._wrapper_argument(own, node, facts, scope)
            return node.func.value, ""
        if site.form == "wrapper":
            return self._wrapper_target(node, facts, scope, 0)
        if isinstance(node.func, ast.Call):
            return _first_element(node.args[0]) if node.args else None, ""
        return _first_element(_first_argument(node)), ""

    def _wrapper_target(self, node: ast.Call, facts: ModuleFacts, scope: FunctionFacts | None, depth: int) -> tuple[ast.expr | None, str]:
        """What a call of a wrapper compiles, by the callee's value: a project wrapper's
        compiled parameter as this call fills it; for a wrapper outside the project (the
        ``compile-functions`` setting), its first argument."""
        refs = [ref for ref in self.flow.callees(node, facts, scope) if self.index.function(ref) is not None]
        why = ""
        for ref in refs:
            found = self._wrapper_argument(ref, node, facts, scope, depth)
            if found[0] is not None or not found[1]:
                return found
            why = why or found[1]
        if refs:
            return None, why or f"{display_name(self.index, refs[0])}() compiles none of its parameters"
        other = self._namesake(node.func, facts, scope)
        if other:
            return None, other
        name = _callee_name(node.func)
        held = self._not_a_function(node.func, facts, scope)
        if held:
            # ``self.main(x)`` where ``self.main`` holds an ``nn.Sequential``: a call of what
            # the attribute holds, which shares a wrapper's name only.
            return None, f"{ast.unparse(node.func)} holds {held}, not a function"
        if name in self._inferred_short():
            # A method or nested wrapper's name called on something the value flow does not
            # know: which function it runs is not known, so neither is what it compiles;
            # unless the call fills no wrapper of that name's compiled parameter
            # (``model.train(True)`` beside a ``def train(self, cfg, model)`` that compiles
            # ``model``): then it runs something else, or compiles nothing.
            candidates = self._short_wrappers(name)
            if candidates and not any(self._may_fill(node, fn, depth) for fn in candidates):
                return None, f"{ast.unparse(node.func)}() passes nothing a project wrapper named `{name}` compiles"
            return NOT_CONSTANT_CALLEE, ""
        return _first_element(_first_argument(node)), ""

    def _namesake(self, func: ast.expr, facts: ModuleFacts, scope: FunctionFacts | None) -> str:
        """What a call of ``func``, which shares the name of a wrapper the project defines, runs
        instead of a compile: another library's function (``pytest.main([...])``, ``call(cmd)``
        after ``from subprocess import call``, ``mock.call(...)``, ``@hydra.main(...)``) or
        torch's own (``F.cross_entropy(logits, y)``, ``Fn.apply(x)`` of an
        ``autograd.Function``, ``self.apply(init)`` of an ``nn.Module``); "" where it may be a
        wrapper, or ``compile-functions`` names it."""
        if self._configured(facts, func):
            return ""
        head = func
        while isinstance(head, ast.Attribute):
            head = head.value
        foreign = isinstance(func, ast.Attribute) and self._not_torch(facts, func.value)
        if foreign or (isinstance(head, ast.Name) and self._foreign(facts, head.id)):
            return f"{ast.unparse(func)}() is another library's function"
        own = self._torch_function(func, facts, scope)
        return f"{ast.unparse(func)}() is torch's {own}, not a wrapper" if own else ""

    def _foreign(self, facts: ModuleFacts, name: str) -> bool:
        """Whether ``name`` is imported from a module that is neither torch nor the project's."""
        target = facts.import_target(name)
        if not target or target == "torch" or target.startswith("torch."):
            return False
        module = target.rsplit(".", 1)[0] if "." in target else target
        return all(self.index.module_path(m, facts.path) is None for m in (target, module, module.split(".")[0]))

    def _torch_function(self, func: ast.expr, facts: ModuleFacts, scope: FunctionFacts | None) -> str:
        """The dotted name of torch's function that calling ``func`` runs, "" where it may be
        anything else or compiles: a name torch's own by its imports (``F.cross_entropy``
        after ``import torch.nn.functional as F``), or a method a project class or instance
        inherits from a torch base (``Fn.apply`` of an ``autograd.Function``, ``net.apply``
        of an ``nn.Module``), where the value flow knows every receiver. A global that holds
        a torch function is not taken: a function may rebind it (``global f; f = torch.compile``)."""
        text = ast.unparse(func)
        full = facts.resolve(text) if all(part.isidentifier() for part in text.split(".")) else ""
        if full.startswith("torch.") and facts.import_target(text.split(".")[0]):
            # Torch's own unless the project is torch (its tree linted: its functions are code).
            own = not (full in COMPILING_CALLABLES or full.endswith(".compile") or self._in_project(full, facts))
            return full if own else ""
        if not isinstance(func, ast.Attribute):
            return ""
        receivers = self.flow.values_of(func.value, facts, scope)
        if not receivers or any(v.kind not in ("instance", "class") or not v.path for v in receivers):
            return ""
        names = set()
        for value in self.flow.values_of(func, facts, scope):
            if value.kind == "bound-method" and not value.path and value.elements and value.elements[0].kind == "torch-callable":
                value = value.elements[0]
            if value.kind != "torch-callable" or not value.ref or value.ref in COMPILING_CALLABLES or value.ref.endswith(".compile") or (value.ref.startswith("torch.") and self._in_project(value.ref, facts)):
                return ""
            names.add(value.ref)
        return sorted(names)[0] if names else ""

    def _in_project(self, dotted: str, facts: ModuleFacts) -> bool:
        """Whether a dotted name of torch's is code the project holds (torch's own tree): a
        module of the project is a prefix of it."""
        parts = dotted.split(".")
        return any(self.index.module_path(".".join(parts[:n]), facts.path) is not None for n in range(len(parts), 0, -1))

    def _not_a_function(self, func: ast.expr, facts: ModuleFacts, scope: FunctionFacts | None) -> str:
        """What ``func`` holds where the value flow knows every value and none is a function a
        call could run as a wrapper: a torch module or tensor, a container, a constant, or an
        instance of a project class with no ``__call__`` of its own (calling an
        ``nn.Module`` runs its ``forward``); "" otherwise."""
        if not isinstance(func, ast.Attribute):
            return ""
        values = self.flow.values_of(func, facts, scope)
        if not values:
            return ""
        held = set()
        for value in values:
            if value.kind in ("tensor", "container", "literal"):
                held.add(f"a {value.kind}")
                continue
            if value.kind == "instance":
                found = self.flow.class_of(value)
                if found is None or self.index.class_method(found[0], found[1], "__call__") is not None:
                    return ""
            elif value.kind != "torch-instance":
                return ""
            held.add(f"an instance of {value.name}")
        return ", ".join(sorted(held))

    def _wrapper_argument(self, ref: FunctionRef, node: ast.Call, facts: ModuleFacts, scope: FunctionFacts | None, depth: int = 0) -> tuple[ast.expr | None, str]:
        """The argument ``node`` passes for the parameter project function ``ref`` compiles;
        (None, what it is) when ``ref`` compiles none."""
        fn = self._wrapper_def(ref)
        param = self.compiled_parameter(ref, depth)
        if fn is None or not param:
            return None, f"{display_name(self.index, ref)}() compiles none of its parameters"
        skip = 0
        if _is_method(fn) and "staticmethod" not in fn.decorators and isinstance(node.func, ast.Attribute):
            receivers = self.flow.values_of(node.func.value, facts, scope)
            skip = 0 if receivers and all(v.kind == "class" for v in receivers) and "classmethod" not in fn.decorators else 1
        positional = [p for p in fn.params if p.kind == "positional"]
        if param.startswith("*"):
            at = len(positional) - skip
            if at < len(node.args) and not any(isinstance(a, ast.Starred) for a in node.args[: at + 1]):
                return node.args[at], ""
            return None, ""
        index = next((i for i, p in enumerate(positional) if p.name == param), -1)
        arg = _argument(node, fn.params, index - skip if index >= 0 else -1, param, skip)
        if arg is None and _leaves_default(node, fn, param, index - skip):
            # ``@_try_compile(dynamic=False)``: the factory call of a wrapper that compiles
            # ``func=None`` only when given it; the function it decorates is the site's.
            return None, f"{display_name(self.index, ref)}() is not given `{param}` here (its default is None): it compiles nothing of this call's"
        if arg is None or isinstance(arg, ast.Starred):
            return None, ""
        if not self._compiles_under(ref, _passed_constants([node], fn), depth):
            # ``compile_diffusers(pipe, apply_to_components=True)`` where the wrapper compiles
            # its argument only in the ``else`` of ``if apply_to_components:``.
            return None, f"{display_name(self.index, ref)}() compiles `{param}` only in branches this call's constant arguments rule out"
        return arg, ""

    def _compiles_under(self, ref: FunctionRef, constants: dict[str, object], depth: int = 0) -> bool:
        """Whether a wrapper called with ``constants`` (its parameters a call binds to
        literals, or leaves to literal defaults) may still compile its compiled parameter: one
        of its compile sites of it (its own ``torch.compile(param)``, or a call handing it to
        another wrapper, judged the same way with what that call passes on) lies in code the
        constants leave live. True where nothing is decided. Once per wrapper and constants
        (a module's many ``compile_func(f)`` calls pass the same ones)."""
        if not constants:
            return True
        key = ("compiles-under", ref, repr(sorted(constants.items())), depth)
        memo = self.index.memo
        if key not in memo:
            memo[key] = self._compiles_under_uncached(ref, constants, depth)
        return memo[key]

    def _compiles_under_uncached(self, ref: FunctionRef, constants: dict[str, object], depth: int) -> bool:
        fn = self._wrapper_def(ref)
        facts = self.index.facts(ref.path)
        param = self.compiled_parameter(ref, depth)
        if fn is None or facts is None or not param or depth >= 6:
            return True
        node = self.trees.node(facts.path, fn)
        if node is None:
            return True
        stores = self.trees.rebound(node)
        branches = _branches(node, constants, stores)
        vararg = param[1:] if param.startswith("*") else ""
        for site in facts.compile_sites:
            if site.function != fn.qualname:
                continue
            call = self._site_call(facts, site)
            if not isinstance(call, ast.Call):
                return True
            if branches.decided(call):
                continue  # in a branch the constants rule out
            if site.form != "wrapper":
                if site.target == param or (vararg and site.target in (f"*{vararg}", f"{vararg}[0]")):
                    return True
                continue
            arg = self._wrapper_target(call, facts, fn, depth + 1)[0]
            passed = isinstance(arg, ast.Name) and arg.id == param or (vararg and isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name) and arg.value.id == vararg)
            if not passed:
                continue
            callees = [r for r in self.flow.callees(call, facts, fn) if self.index.function(r) is not None]
            if not callees:
                return True  # a wrapper outside the project: it compiles what it is given
            for callee in callees:
                inner = _passed_constants([call], self._wrapper_def(callee), constants, stores)
                if self._compiles_under(callee, inner, depth + 1):
                    return True
        return False

    def _wrapper_def(self, ref: FunctionRef) -> FunctionFacts | None:
        """The ``def`` of ``ref`` that compiles a parameter, where the module defines the name
        more than once (``if use_compile: def compile_func(fn): return torch.compile(fn)``,
        ``else: def compile_func(fn): return fn``): either may be bound at run time, so a call
        may compile. The one the index keeps otherwise."""
        facts = self.index.facts(ref.path)
        kept = facts.function(ref.qualname) if facts is not None else None
        if kept is None or kept.compiles_param:
            return kept
        return next((f for f in facts.functions if f.qualname == ref.qualname and f.compiles_param), kept)  # type: ignore[union-attr]

    def compiled_parameter(self, ref: FunctionRef, depth: int = 0) -> str:
        """The parameter a project function compiles (``*args`` for the first of its
        ``*args``), confirmed by its own sites: one compiles the parameter itself, or hands it
        to a wrapper at that wrapper's compiled position; "" when none does."""
        key = ("compiled-parameter", ref)
        memo = self.index.memo
        if key in memo:
            return memo[key]
        memo[key] = ""  # a recursive wrapper confirms nothing by itself
        fn = self._wrapper_def(ref)
        facts = self.index.facts(ref.path)
        found = ""
        if fn is not None and facts is not None and fn.compiles_param and depth < 6:
            param = fn.compiles_param
            vararg = param[1:] if param.startswith("*") else ""
            for site in facts.compile_sites:
                if site.function != fn.qualname:
                    continue
                if site.form != "wrapper":
                    if site.target == param or (vararg and site.target in (f"*{vararg}", f"{vararg}[0]")):
                        found = param
                        break
                    continue
                node = self._site_call(facts, site)
                arg = self._wrapper_target(node, facts, fn, depth + 1)[0] if isinstance(node, ast.Call) else None
                if isinstance(arg, ast.Name) and any(p.name == arg.id and p.kind in ("positional", "keyword") for p in fn.params):
                    found = arg.id
                    break
                if vararg and isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name) and arg.value.id == vararg:
                    found = param
                    break
        memo[key] = found
        return found

    def _other_decorator(self, facts: ModuleFacts, site: CompileSite) -> str:
        """What a decorator site runs instead of a compile, where its callee only shares a
        project wrapper's name (``_namesake``); "" for torch's compile or an alias of it."""
        node = self._site_call(facts, site)
        func = node.func if isinstance(node, ast.Call) else node
        if not isinstance(func, (ast.Name, ast.Attribute)):
            return ""
        text = ast.unparse(func)
        if facts.resolve(text) in COMPILING_CALLABLES or text in facts.compile_aliases:
            return ""
        return self._namesake(func, facts, facts.function(site.function) if site.function else None)

    def _compiling_decorator(self, facts: ModuleFacts, site: CompileSite, scope: FunctionFacts | None) -> FunctionFacts | None:
        """The function a ``.compile(...)`` call decorates where the call returns torch's
        compile (a project's ``def compile(): return torch.compile``, applied as
        ``@compiler.compile()``); None otherwise."""
        line = site.span.line
        decorated = next((fn for fn in facts.functions if not fn.is_lambda and fn.first_line <= line < fn.line and fn.parent == (scope.qualname if scope else "")), None)
        if decorated is None:
            return None
        node = self._site_call(facts, site)
        if not isinstance(node, ast.Call):
            return None
        values = self.flow.values_of(node, facts, scope)
        return decorated if any(v.kind == "torch-callable" and v.ref in COMPILING_CALLABLES for v in values) else None

    def _own_compile_method(self, receiver: ast.expr, facts: ModuleFacts, scope: FunctionFacts | None) -> FunctionRef | None:
        """A project class's own ``compile`` method that ``receiver.compile(...)`` runs (a test
        class's ``self.compile(model)`` helper), not ``nn.Module.compile``; or a project
        module's own ``compile`` function (``import pkg`` then ``pkg.compile(model)``)."""
        for value in self.flow.values_of(receiver, facts, scope):
            if value.kind == "module" and value.path:
                # Only a wrapper of its argument: ``compiler.compile()`` that returns
                # ``torch.compile`` (a decorator factory) is not one.
                ref = self.index.resolve_function(f"{value.ref}.compile", facts.path)
                if ref is not None and self.compiled_parameter(ref):
                    return ref
                continue
            ref = self._own_compile_of(value)
            if ref is not None:
                return ref
        return None

    def _own_compile_of(self, value) -> FunctionRef | None:
        """The project's own ``compile`` method an instance value's class has, if any."""
        found = self.flow.class_of(value) if value.kind == "instance" else None
        return self.index.class_method(found[0], found[1], "compile") if found is not None else None

    def _compiles_by_method(self, node: ast.AST | None, facts: ModuleFacts, scope: FunctionFacts | None) -> bool:
        """Whether every project wrapper a call may run compiles its parameter only as
        ``param.compile(...)`` (never ``torch.compile(param)``): what the call passes decides
        which ``compile`` that is."""
        if not isinstance(node, ast.Call):
            return False
        refs = [ref for ref in self.flow.callees(node, facts, scope) if self.index.function(ref) is not None]
        if not refs:
            return False
        for ref in refs:
            param = self.compiled_parameter(ref)
            wrapper = self.index.facts(ref.path)
            sites = [site for site in wrapper.compile_sites if site.function == ref.qualname and site.target == param] if wrapper is not None and param else []
            if not sites or any(site.form != "method" for site in sites):
                return False
        return True

    def _configured(self, facts: ModuleFacts, func: ast.expr) -> bool:
        """Whether a call of ``func`` names a ``compile-functions`` entry the user configured
        (not one the project's wrappers put there)."""
        key = "configured-wrappers"  # set by the loader before it infers any
        if key not in self.index.memo:
            self.index.memo[key] = frozenset(self.index.store.compile_functions) - self.index.wrapper_functions()
        full = facts.resolve(ast.unparse(func))
        return any(full == w or full.endswith("." + w) or ("." not in w and full.rsplit(".", 1)[-1] == w) for w in self.index.memo[key])

    def _short_wrappers(self, name: str) -> list[tuple[FunctionRef, FunctionFacts]]:
        """The methods and nested functions named ``name`` that compile a parameter; none
        where a decorator factory has that name too (its calls fill no parameter of its own)."""
        key = ("short-wrappers",)
        table = self.index.memo.get(key)
        if table is None:
            table, factories = {}, set()
            for facts in self.index.parsed():
                for fn in facts.functions:
                    if fn.compiles_param and not fn.is_lambda:
                        if fn.parent or fn.class_name:
                            table.setdefault(fn.name, []).append((FunctionRef(facts.path, fn.qualname), fn))
                        parent = facts.function(fn.parent) if fn.parent else None
                        if parent is not None and not parent.compiles_param:
                            factories.add(parent.name)
            for name in factories:
                table.pop(name, None)
            self.index.memo[key] = table
        return table.get(name, [])

    def _may_fill(self, node: ast.Call, wrapper: tuple[FunctionRef, FunctionFacts], depth: int) -> bool:
        """Whether ``node`` may pass an argument for the parameter ``wrapper`` compiles: by
        keyword, at its position (a method's receiver not counted), or through a spread."""
        ref, fn = wrapper
        param = self.compiled_parameter(ref, depth)
        if not param:
            return False
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return True
        skip = 1 if _is_method(fn) and "staticmethod" not in fn.decorators else 0
        positional = [p.name for p in fn.params if p.kind == "positional"]
        if param.startswith("*"):
            return len(node.args) > len(positional) - skip
        index = positional.index(param) if param in positional else -1
        return _argument(node, fn.params, index - skip if index >= 0 else -1, param, skip) is not None

    def _inferred_short(self) -> frozenset[str]:
        key = ("inferred-wrappers",)
        if key not in self.index.memo:
            self.index.memo[key] = frozenset(w for w in self.index.wrapper_functions() if "." not in w)
        return self.index.memo[key]

    def _not_torch(self, facts: ModuleFacts, receiver: ast.expr) -> bool:
        """``x.compile()`` where ``x`` starts from an imported module that is neither torch nor
        the project's (``pytest.mark.compile``, ``regex.compile``)."""
        head = receiver
        while isinstance(head, ast.Attribute):
            head = head.value
        if not isinstance(head, ast.Name):
            return False
        binding = facts.binding(head.id)
        target = facts.import_target(head.id)
        # ``import x`` / ``import x.y as z`` bind a module (at module level the binding says
        # so; in a function, the import statement's text does).
        if target is None:
            return False
        if not ((binding is not None and binding.kind == "module") or target == head.id or self._imports_module(facts, target, head.id)):
            return False
        return not (target == "torch" or target.startswith("torch.")) and self.index.module_path(target.split(".")[0], facts.path) is None and self.index.module_path(target, facts.path) is None

    def _imports_module(self, facts: ModuleFacts, target: str, name: str) -> bool:
        """Whether the file has ``import target as name`` (not ``from ... import``), or binds
        ``name`` to a call that imports ``target`` (``name = importlib.import_module("target")``)."""
        text = self.index.text(facts.path) or ""
        if re.search(rf"^\s*import\s+{re.escape(target)}\s+as\s+{re.escape(name)}\b", text, re.MULTILINE):
            return True
        return re.search(rf"^\s*{re.escape(name)}\s*=\s*[\w.]*\b(?:import_module|importorskip)\(\s*[\"']{re.escape(target)}[\"']", text, re.MULTILINE) is not None

    def _is_wrapper_body(self, facts: ModuleFacts, site: CompileSite, scope: FunctionFacts | None) -> bool:
        """A wrapper's ``torch.compile(param)``, where calls of the wrapper are sites too; the
        site may sit in a function nested in the wrapper, compiling its parameter through the
        closure (``lazy_compile``'s inner ``wrapper``)."""
        scope = _compiling_scope(facts, site, scope)
        if scope is None:
            return False
        dotted = f"{facts.module}.{scope.qualname}" if facts.module else scope.qualname
        if scope.name == "compile" and _is_method(scope):
            return True  # a class's own ``compile(model)`` helper: its callers' method sites
        return dotted in self.index.store.compile_functions or scope.name in self.index.store.compile_functions

    def _container(self, facts: ModuleFacts, scope: FunctionFacts | None, target: ast.expr) -> str:
        """The container a compiled instance is taken from, as written (``model.layers``),
        when the site compiles a loop variable or an element: a per-block compile."""
        if isinstance(target, ast.Subscript):
            if isinstance(target.value, ast.Name) and scope is not None and any(p.kind == "vararg" and p.name == target.value.id for p in scope.params):
                return ""  # ``torch.compile(*args)``: the first argument a caller passes, not a block
            return _strip_iterator(ast.unparse(target.value))
        if not isinstance(target, ast.Name):
            return ""
        fn = scope
        while fn is not None:
            # The loop that bound the name last before the site (the one around it, where a
            # function loops over two containers in turn).
            loops = [flow for flow in fn.flows if flow[0] == target.id and flow[1].startswith("iter")]
            if loops:
                before = [flow for flow in loops if flow[2:4] <= (target.lineno, target.col_offset)]
                flow = max(before or loops, key=lambda f: f[2:4])
                node = self.flow.expression_at(facts, flow[2:6])
                return _strip_iterator(ast.unparse(node)) if node is not None else ""
            if target.id in fn.local_names:
                return ""
            fn = facts.function(fn.parent) if fn.parent else None
        return ""

    def _narrow(self, facts: ModuleFacts, scope: FunctionFacts | None, site: CompileSite, target: ast.expr, values: frozenset[Value]) -> frozenset[Value] | None:
        """The instances a site compiles when it sits under a test of the compiled name's
        class (``isinstance(m, Block)``, ``m.__class__.__name__ in names``,
        ``type(m).__name__ == "Block"``); None when there is no such test."""
        if not isinstance(target, ast.Name):
            return None
        tree = self.flow.tree(facts.path)
        if tree is None:
            return None
        tests = _tests_around(tree, site.span.line, target.id)
        if not tests:
            return None
        classes: set[Value] = set()
        names: set[str] = set()
        external: set[Value] = set()  # classes of another library the test names
        for test in tests:
            kind, expr = test
            found = self.flow.values_of(expr, facts, scope)
            if kind == "class":
                for value in found:
                    if value.kind == "class":
                        classes.add(value)
                    elif value.kind == "container":
                        classes.update(e for e in value.elements if e.kind == "class")
                    elif value.kind == "unknown" and value.detail == "external" and value.ref:
                        external.add(value)
            else:
                for value in found:
                    for item in ([value] if value.kind == "literal" else list(value.elements) if value.kind == "container" else []):
                        name = literal_text(item)
                        if isinstance(name, str) and name:
                            names.add(name)
        if names:
            # The named classes among what the name may hold (a model's own blocks) first;
            # only when none is, every project class of that name.
            own = [v for v in values if v.kind == "instance" and v.name in names]
            if own:
                return frozenset(own) if not classes else frozenset(own) | self._narrow_to(values, classes)
            for name in sorted(names):
                for cfacts, cls in self.index.classes_named(name):
                    classes.add(Value("class", ref=f"{cfacts.module}.{cls.qualname}" if cfacts.module else cls.qualname, path=cfacts.path))
        if not classes:
            # Only another library's classes pass the test: what the site compiles is theirs.
            return frozenset(external) if external and all(v.kind == "unknown" for v in values) else None
        return self._narrow_to(values, classes)

    def _narrow_to(self, values: frozenset[Value], classes: set[Value]) -> frozenset[Value]:
        """The values that are instances of ``classes``; a class none of them is gives its own
        instance (what the test lets through, whatever the name held)."""
        out: set[Value] = set()
        for cls in classes:
            matching = [v for v in values if self._is_instance_of(v, cls)]
            if matching:
                out.update(matching)
            elif cls.path:
                found_cls = self.flow.class_of(cls)
                if found_cls is not None:
                    out.add(Value("instance", ref=cls.ref, path=cls.path))
            else:
                out.add(Value("torch-instance", ref=cls.ref))
        return frozenset(out)

    def _is_instance_of(self, value: Value, cls: Value) -> bool:
        if value.kind == "torch-instance":
            return value.ref == cls.ref
        found = self.flow.class_of(value) if value.kind == "instance" else None
        if found is None:
            return False
        return any((f"{f.module}.{c.qualname}" if f.module else c.qualname) == cls.ref for f, c in self.index.mro(*found))

    # ---- callees of reached code, by name and facts ----------------------------------

    def forward_of_class(self, dotted: str, facts: ModuleFacts) -> tuple[FunctionRef | None, str]:
        found = self.index.resolve_class(self.qualify(dotted, facts), facts.path)
        if found is None:
            return None, ""
        cfacts, cls = found
        ref = self.index.class_method(cfacts, cls, "forward")
        return ref, f"{cfacts.module}.{cls.qualname}"

    @staticmethod
    def qualify(dotted: str, facts: ModuleFacts) -> str:
        """``dotted`` through the module's imports; a module-local name stays as it is
        (resolve_class looks in the module itself first)."""
        return facts.resolve(dotted) if dotted else dotted

    def instance_class(self, name: str, facts: ModuleFacts, scope: FunctionFacts | None) -> str:
        """Dotted class of a variable holding an instance, from this or enclosing functions
        (including a loop variable over a container of modules: ``for block in model.blocks``)."""
        while scope is not None:
            for var, cls in scope.instances:
                if var == name:
                    return cls
            for var, source in scope.loop_sources:
                if var == name:
                    element = self.element_class_of(source, facts, scope)
                    if element:
                        return element
            for param in scope.params:
                if param.name == name and param.annotation:
                    return self.qualify(param.annotation, facts)
            scope = facts.function(scope.parent) if scope.parent else None
        found = self.index.global_binding(facts, name)
        if found is not None and found[1].kind == "object":
            return found[1].class_ref
        return ""

    def element_class_of(self, source: str, facts: ModuleFacts, scope: FunctionFacts) -> str:
        """The element class of ``owner.attr`` when ``owner``'s class fills ``attr`` with
        instances of one class (``nn.ModuleList(Block(...) for ...)``)."""
        owner, _, attr = source.rpartition(".")
        if not owner or "." in attr:
            return ""
        if owner == "self":
            cls = self.enclosing_class(facts, scope)
            found = (facts, cls) if cls is not None else None
        else:
            found = self.index.resolve_class(self.instance_class(owner, facts, scope), facts.path)
        if found is None:
            return ""
        for f, c in self.index.mro(*found):
            element = c.element(attr)
            if element:
                return element
        return ""

    def forward_of_value(self, text: str, facts: ModuleFacts, scope: FunctionFacts | None) -> tuple[FunctionRef | None, str]:
        """The ``forward`` of the nn.Module a name or ``self.attr`` holds."""
        if text.startswith("self.") and scope is not None:
            cls = self.enclosing_class(facts, scope)
            if cls is not None:
                found = self.index.class_submodule(facts, cls, text.split(".", 1)[1])
                if found is not None:
                    ref = self.index.class_method(found[0], found[1], "forward")
                    return ref, f"{found[0].module}.{found[1].qualname}"
            return None, ""
        cls_text = self.instance_class(text, facts, scope)
        if cls_text:
            return self.forward_of_class(cls_text, facts)
        return None, ""

    def enclosing_class(self, facts: ModuleFacts, fn: FunctionFacts):
        while fn is not None and not fn.class_name:
            fn = facts.function(fn.parent) if fn.parent else None
        return facts.cls(fn.class_name) if fn is not None else None

    def callable_of(self, text: str, facts: ModuleFacts, scope: FunctionFacts | None) -> tuple[FunctionRef | None, str]:
        """What ``torch.compile(text)`` compiles: a function, a method, or a module's forward."""
        head, _, rest = text.partition(".")
        if not rest:
            # Nested function of the enclosing scope(s), then module level, then imports.
            fn = scope
            while fn is not None:
                nested = facts.function(f"{fn.qualname}.{head}")
                if nested is not None:
                    return FunctionRef(facts.path, nested.qualname), ""
                fn = facts.function(fn.parent) if fn.parent else None
            if facts.function(head) is not None:
                return FunctionRef(facts.path, head), ""
            cls_text = self.instance_class(head, facts, scope)
            if cls_text:
                return self.forward_of_class(cls_text, facts)
            target = facts.import_target(head)
            if target:
                ref = self.index.resolve_function(target, facts.path)
                if ref is not None:
                    return ref, ""
            return None, ""
        if head == "self" and scope is not None:
            cls = self.enclosing_class(facts, scope)
            if cls is not None:
                ref = self.index.class_method(facts, cls, rest)
                if ref is not None:
                    return ref, ""
            return self.forward_of_value(text, facts, scope)
        # ``obj.method`` on an instance, or ``mod.func`` on a module.
        cls_text = self.instance_class(head, facts, scope)
        if cls_text and "." not in rest:
            found = self.index.resolve_class(cls_text, facts.path)
            if found is not None:
                ref = self.index.class_method(found[0], found[1], rest)
                if ref is not None:
                    return ref, ""
                sub = self.index.class_submodule(found[0], found[1], rest)
                if sub is not None:
                    return self.index.class_method(sub[0], sub[1], "forward"), f"{sub[0].module}.{sub[1].qualname}"
        ref = self.index.resolve_function(facts.resolve(text), facts.path)
        if ref is not None:
            return ref, ""
        if facts.cls(head) is not None:
            return self.index.class_method(facts, facts.cls(head), rest) if "." not in rest else None, ""
        return None, ""

    # ---- inlining ------------------------------------------------------------------------

    def reach(self, entry: FunctionRef, entry_calls: list[ast.Call] | None = None) -> tuple[list[tuple[FunctionRef, int, FunctionRef | None]], tuple]:
        """The entry and every callee Dynamo would inline, breadth first, up to max_depth; and
        for each of them with constant parameters, the spans of the branches those rule out
        (``CompiledRegion.dead``).

        A callee's parameters that every call of it in the region passes the same constant
        (``self.vqbet(batch, rollout=True)``, or a default no call overrides) are constants to
        Dynamo, which traces only the branch an ``if`` on them takes: the calls in the other
        branch are not reached (``else: loss = self.head.loss_fn(...)``)."""
        out: list[tuple[FunctionRef, int, FunctionRef | None]] = [(entry, 0, None)]
        depth_of = {entry: 0}
        entry_fn = self.index.function(entry) if entry_calls else None
        constants: dict[FunctionRef, dict[str, object]] = {entry: _passed_constants(entry_calls or [], entry_fn) if entry_fn is not None else {}}
        dead: dict[FunctionRef, tuple] = {}  # the last processing's, under the final constants
        pending = [entry]
        while pending:
            ref = pending.pop(0)
            depth = depth_of[ref]
            facts = self.index.facts(ref.path)
            fn = facts.function(ref.qualname) if facts else None
            if facts is None or fn is None or (depth >= self.max_depth and not constants[ref]):
                continue
            node = self.trees.node(facts.path, fn)
            # The parameters' constants, and the attributes of ``self`` or of a module-level
            # object that every construction leaves at one constant (``constructed``), which
            # decide tests the same way.
            own = {**constants[ref], **object_constants(self.index, facts, fn, node)} if node is not None else constants[ref]
            stores = self.trees.rebound(node) if own and node is not None else None
            compiling = lambda test, facts=facts: compiling_test(test, self.index, facts)  # noqa: E731
            branches = _branches(node, own, stores, compiling) if node is not None else None
            dead[ref] = branches.dead if branches is not None else ()
            if depth >= self.max_depth:
                continue
            for text in fn.calls:
                if branches is not None and text in branches.ruled_out:
                    continue  # only in a branch the constants rule out
                callee = self.callee(text, facts, fn)
                if callee is None:
                    continue
                target = self.index.function(callee)
                if target is None or is_disabled(target):
                    continue
                passed = _passed_constants(branches.live.get(text, []) if branches is not None else [], target, own, stores)
                if callee not in depth_of:
                    depth_of[callee] = depth + 1
                    constants[callee] = passed
                    out.append((callee, depth + 1, ref))
                    pending.append(callee)
                    continue
                known = constants[callee]
                kept = {name: value for name, value in known.items() if name in passed and _same(passed[name], value)}
                if kept != known:
                    # Another call passes something else: its branches are live again.
                    constants[callee] = kept
                    pending.append(callee)
        return out, tuple((ref, dead[ref]) for ref, _, _ in out if dead.get(ref))

    def _every_call(self, facts: ModuleFacts, site: CompileSite) -> list[ast.Call] | None:
        """Every call of a compiled object a function keeps in a local name and only calls
        (``compiled = torch.compile(op); return lambda: compiled(a, b)``): the name is bound
        once, and each of its reads in the function, lambdas and nested functions included, is
        a call's callee. None where it may escape (returned, stored, passed on) or is not local.
        The region's entry takes those calls' constants as a callee takes its caller's."""
        name = site.assigned_to
        fn = facts.function(site.function) if site.function else None
        if fn is None or not name.isidentifier():
            return None
        node = self.trees.node(facts.path, fn)
        if node is None:
            return None
        callees: set[int] = set()
        calls: list[ast.Call] = []
        stores = 0
        for inner in ast.walk(node):
            if isinstance(inner, (ast.Global, ast.Nonlocal)) and name in inner.names:
                return None
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == name:
                callees.add(id(inner.func))
                calls.append(inner)
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and inner.id == name:
                if isinstance(inner.ctx, ast.Store):
                    stores += 1
                elif id(inner) not in callees:
                    return None
            elif isinstance(inner, ast.arg) and inner.arg == name:
                return None
        return calls if stores == 1 and calls else None

    def callee(self, text: str, facts: ModuleFacts, fn: FunctionFacts) -> FunctionRef | None:
        head, _, rest = text.partition(".")
        if head == "self" and rest:
            cls = self.enclosing_class(facts, fn)
            if cls is None:
                return None
            first, _, more = rest.partition(".")
            if not more:
                ref = self.index.class_method(facts, cls, first)
                if ref is not None:
                    return ref
                sub = self.index.class_submodule(facts, cls, first)
                if sub is not None:
                    return self.index.class_method(sub[0], sub[1], "forward")
                return None
            sub = self.index.class_submodule(facts, cls, first)
            if sub is not None and "." not in more:
                return self.index.class_method(sub[0], sub[1], more)
            return None
        if not rest and head in fn.local_names and facts.function(f"{fn.qualname}.{head}") is None:
            # A local variable or parameter: a callable passed in, or an instance.
            cls_text = self.instance_class(head, facts, fn)
            if cls_text:
                found = self.index.resolve_class(cls_text, facts.path)
                if found is not None:
                    return self.index.class_method(found[0], found[1], "forward")
            return None
        ref, _ = self.callable_of(text, facts, fn)
        return ref


def _compiling_scope(facts: ModuleFacts, site: CompileSite, scope: FunctionFacts | None) -> FunctionFacts | None:
    """The function whose parameter ``site`` compiles (``FunctionFacts.compiles_param``): the
    site's own, or one it is nested in, read through the closure; None when there is none."""

    def compiles(fn: FunctionFacts) -> bool:
        param = fn.compiles_param
        return bool(param) and (site.target == param or (param.startswith("*") and site.target in (param, f"{param[1:]}[0]")))

    while scope is not None and not compiles(scope):
        scope = facts.function(scope.parent) if scope.parent else None
    return scope


def _strip_iterator(text: str) -> str:
    """``model.layers`` for ``model.layers.named_children()``, ``enumerate(model.layers)``."""
    for prefix in ("enumerate(", "list(", "reversed(", "tuple("):
        if text.startswith(prefix) and text.endswith(")"):
            text = text[len(prefix) : -1].split(",")[0].strip()
    for suffix in (".named_children()", ".children()", ".named_modules()", ".modules()", ".items()", ".values()"):
        if text.endswith(suffix):
            return text[: -len(suffix)]
    return text


def _tests_around(tree: ast.Module, line: int, name: str) -> list[tuple[str, ast.expr]]:
    """Class tests on ``name`` that guard ``line``: (``class``, the class expression) for
    ``isinstance(name, C)`` / ``type(name) is C``; (``name``, the names expression) for
    ``name.__class__.__name__ in names`` / ``type(name).__name__ == "Block"``. An ``if``
    whose body holds the line counts, and ``if not <test>: continue`` before it in a loop."""
    found: list[tuple[str, ast.expr]] = []

    def visit(body: list[ast.stmt]) -> None:
        for i, stmt in enumerate(body):
            end = getattr(stmt, "end_lineno", stmt.lineno) or stmt.lineno
            if not stmt.lineno <= line <= end:
                # ``if not isinstance(m, Block): continue`` before the site, in the same body.
                if isinstance(stmt, ast.If) and stmt.lineno < line and len(stmt.body) == 1 and isinstance(stmt.body[0], (ast.Continue, ast.Return)):
                    test = stmt.test
                    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                        found.extend(_class_tests(test.operand, name))
                    elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotIn):
                        found.extend(_class_tests(ast.Compare(left=test.left, ops=[ast.In()], comparators=test.comparators), name))
                continue
            if isinstance(stmt, ast.If) and any(s.lineno <= line <= (s.end_lineno or s.lineno) for s in stmt.body):
                found.extend(_class_tests(stmt.test, name))
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list):
                    visit([s for s in inner if isinstance(s, ast.stmt)] if field != "handlers" else [s for h in inner for s in h.body])
            return

    visit(tree.body)
    return found


def _class_tests(test: ast.expr, name: str) -> list[tuple[str, ast.expr]]:
    out: list[tuple[str, ast.expr]] = []
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for value in test.values:
            out.extend(_class_tests(value, name))
        return out
    if isinstance(test, ast.BoolOp):
        # ``isinstance(m, A) or isinstance(m, B)``: either class, when each side tests one.
        sides = [_class_tests(value, name) for value in test.values]
        return [t for side in sides for t in side] if all(sides) else []
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" and len(test.args) == 2:
        if isinstance(test.args[0], ast.Name) and test.args[0].id == name:
            out.append(("class", test.args[1]))
        return out
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right, op = test.left, test.comparators[0], test.ops[0]
        if _is_class_name_of(right, name) and isinstance(op, (ast.Eq, ast.In)):
            left, right = right, left
        if _is_class_name_of(left, name) and isinstance(op, (ast.Eq, ast.In)):
            out.append(("name", right))
        elif _is_type_of(left, name) and isinstance(op, (ast.Is, ast.Eq, ast.In)):
            out.append(("class", right))
    return out


def _is_class_name_of(node: ast.expr, name: str) -> bool:
    """``name.__class__.__name__`` or ``type(name).__name__``."""
    if not (isinstance(node, ast.Attribute) and node.attr in ("__name__", "__qualname__")):
        return False
    return _is_type_of(node.value, name)


def _is_type_of(node: ast.expr, name: str) -> bool:
    """``name.__class__`` or ``type(name)``."""
    if isinstance(node, ast.Attribute) and node.attr == "__class__":
        return isinstance(node.value, ast.Name) and node.value.id == name
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type" and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id == name


# A wrapper call whose callee the value flow does not know (a marker, never compiled).
NOT_CONSTANT_CALLEE = ast.Constant(value=None)


def _from_configuration(ref: str) -> bool:
    """Whether an unknown value's name says a configuration system built it."""
    return any(marker in ref if marker.endswith("(") or not marker.endswith(".") else ref.startswith(marker) for marker in CONFIGURATION_BUILDERS)


def _first_argument(node: ast.Call) -> ast.expr | None:
    if node.args:
        return node.args[0]
    for kw in node.keywords:
        if kw.arg in ("model", "fn", "func", "module"):
            return kw.value
    return None


def _first_element(node: ast.expr | None) -> ast.expr | None:
    """``args[0]`` for ``*args`` (torch.compile compiles its first argument), else ``node``."""
    if isinstance(node, ast.Starred):
        return ast.copy_location(ast.Subscript(value=node.value, slice=ast.copy_location(ast.Constant(0), node), ctx=ast.Load()), node)
    return node


def _leaves_default(call: ast.Call, fn: FunctionFacts, param: str, position: int) -> bool:
    """Whether ``call`` certainly leaves parameter ``param`` of ``fn`` (at ``position`` among
    the positional arguments it can be given, -1 if keyword-only) to its default of None: no
    keyword names it, no ``*args`` or ``**kwargs`` may fill it, and fewer positional arguments
    than its position are passed."""
    declared = next((p for p in fn.params if p.name == param), None)
    if declared is None or declared.default != "None":
        return False
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None or k.arg == param for k in call.keywords):
        return False
    return position < 0 or position >= len(call.args)


def _callee_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


_SKIPPED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass
class _Branches:
    """A function's calls split by the ``if`` tests its constant parameters decide."""

    live: dict[str, list[ast.Call]]  # callee text -> the calls in code the constants leave live
    ruled_out: set[str]  # callee texts called only in code the constants rule out
    dead: tuple[tuple[int, int, int, int], ...]  # (line, column, end line, end column) of each ruled-out branch
    once: tuple[tuple[int, int, int, int], ...] = ()  # those of ``dead`` only the first call runs (``fills_once``)

    def decided(self, node: ast.AST) -> bool:
        """Whether the constants rule ``node`` out (it lies in a span of ``dead`` that is no
        first-call fill: that one runs, once)."""
        at = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        return within(at, tuple(span for span in self.dead if span not in self.once))


def within(at: tuple[int, int], spans: tuple[tuple[int, int, int, int], ...]) -> bool:
    """Whether a (line, ``ast`` column) position lies in one of ``spans`` (line, column, end
    line, end column), as ``CompiledRegion.dead`` holds them."""
    return any((line, column) <= at <= (end_line, end_column) for line, column, end_line, end_column in spans)


# ``torch.compiler.is_compiling()`` and its older spellings: True while Dynamo traces.
IS_COMPILING = frozenset({"torch.compiler.is_compiling", "torch.compiler.is_dynamo_compiling", "torch._dynamo.is_compiling", "torch._dynamo.external_utils.is_compiling", "torch._utils.is_compiling"})
# Spellings taken for it without resolution (a module imported under another name).
IS_COMPILING_TEXTS = frozenset({"torch.compiler.is_compiling", "torch._dynamo.is_compiling", "compiler.is_compiling", "is_compiling"})


def compiling_test(test: ast.expr, index: ProjectIndex | None = None, facts: ModuleFacts | None = None) -> bool | None:
    """``is_compiling()`` -> True, ``not is_compiling()`` -> False (the side Dynamo traces is
    the body, or the ``else``); None for any other test. The callee is resolved through the
    module's imports and the project's re-exports (``from pkg.utils import
    is_torchdynamo_compiling``, where ``pkg/utils.py`` imports ``torch.compiler.is_compiling``
    under that name)."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    call = test.operand if negated else test  # type: ignore[attr-defined]
    if not (isinstance(call, ast.Call) and not call.args and not call.keywords):
        return None
    text = dotted_name(call.func)
    if not text:
        return None
    if text in IS_COMPILING_TEXTS:
        return not negated
    if facts is not None:
        full = facts.resolve(text)
        if full in IS_COMPILING or (index is not None and full != text and index.resolve_export(full, facts.path) in IS_COMPILING):
            return not negated
    return None


def ends_in_exit(body: list[ast.stmt]) -> bool:
    """Whether a block ends in a ``return`` or ``raise``: nothing after the ``if`` whose taken
    side it is runs in the trace."""
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def _branches(function: ast.AST, constants: dict[str, object], stores: Stores | None, compiling: Callable[[ast.expr], bool | None] | None = None) -> _Branches:
    """One walk of ``function``'s body outside nested scopes (they are functions of their
    own): each ``if`` (or conditional expression) whose test the constants of parameters that
    still hold their values there (and of the attributes every construction leaves at one
    constant, ``self.flag``, ``SWITCHES.audit``) decide has its other branch ruled out; so has the side of
    an ``if is_compiling():`` (``compiling``: ``compiling_test`` in the function's module)
    Dynamo never traces."""
    body = function.body if isinstance(function.body, list) else [function.body]  # type: ignore[attr-defined]
    live: dict[str, list[ast.Call]] = {}
    elsewhere: set[str] = set()
    dead: list[tuple[int, int, int, int]] = []
    once: list[tuple[int, int, int, int]] = []

    def decide(node: ast.If | ast.IfExp) -> bool | None:
        if compiling is not None:
            truth = compiling(node.test)
            if truth is not None:
                return truth
        if not constants:
            return None
        held = unassigned(constants, stores, node) if stores is not None else {}
        return constant_truth(node.test, held) if held else None

    def rule_out(part: ast.AST) -> tuple[ast.AST, bool]:
        dead.append((part.lineno, part.col_offset, getattr(part, "end_lineno", None) or part.lineno, getattr(part, "end_col_offset", None) or 0))  # type: ignore[attr-defined]
        return part, False

    def block(stmts: list, reached: bool) -> list[tuple[ast.AST, bool]]:
        # A decided ``if`` whose taken branch returns or raises ends the block there: the
        # statements after it are never traced (``if assume_convex: return cells``).
        out: list[tuple[ast.AST, bool]] = []
        for at, stmt in enumerate(stmts):
            out.append((stmt, reached))
            if reached and (constants or compiling is not None) and isinstance(stmt, ast.If):
                truth = decide(stmt)
                taken = (stmt.body if truth else stmt.orelse) if truth is not None else []
                if ends_in_exit(taken):
                    out.extend(rule_out(rest) for rest in stmts[at + 1 :])
                    break
        return out

    def children(node: ast.AST, reached: bool) -> list[tuple[ast.AST, bool]]:
        out: list[tuple[ast.AST, bool]] = []
        for _, value in ast.iter_fields(node):
            if isinstance(value, list):
                if value and all(isinstance(item, ast.stmt) for item in value):
                    out.extend(block(value, reached))
                else:
                    out.extend((item, reached) for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                out.append((value, reached))
        return out

    declared = {name for node in ast.walk(function) if isinstance(node, ast.Global) for name in node.names}
    arguments = function.args if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else None
    params = {a.arg for a in (arguments.posonlyargs + arguments.args + arguments.kwonlyargs + [x for x in (arguments.vararg, arguments.kwarg) if x])} if arguments is not None else set()
    stored = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} - declared
    local = stored | (params - declared)
    stack: list[tuple[ast.AST, bool]] = list(reversed(block(body, True)))
    while stack:
        node, reached = stack.pop()
        if isinstance(node, _SKIPPED_SCOPES):
            continue
        if reached and isinstance(node, ast.If) and fills_once(node, local, stored):
            # ``if "dynamic" not in table: table["dynamic"] = make()``: the first call fills
            # what the test reads, and every later graph leaves the body out. Its calls are
            # traced once, never again (what they read, write or break costs that first call
            # only): the body counts as a branch the region does not trace.
            for stmt in node.body:
                rule_out(stmt)
                once.append(dead[-1])
            stack.extend(reversed([(node.test, True), *[(stmt, False) for stmt in node.body], *block(node.orelse, True)]))
            continue
        if reached and (constants or compiling is not None) and isinstance(node, (ast.If, ast.IfExp)):
            truth = decide(node)
            if truth is not None:
                taken, other = (node.body, node.orelse) if truth else (node.orelse, node.body)
                stack.extend(rule_out(part) for part in (other if isinstance(other, list) else [other]))
                stack.extend(reversed(block(taken, True) if isinstance(taken, list) else [(taken, True)]))
                stack.append((node.test, True))
                continue
        if isinstance(node, ast.Call):
            text = dotted_name(node.func)
            if text and reached:
                live.setdefault(text, []).append(node)
            elif text:
                elsewhere.add(text)
        stack.extend(reversed(children(node, reached)))
    return _Branches(live, elsewhere - set(live), tuple(sorted(dead)), tuple(once))


def fills_once(node: ast.If, local: set[str], stored: set[str]) -> bool:
    """Whether an ``if`` runs its body at the first call only: its test asks whether a store
    that outlives the call is still empty and its body fills it, unconditionally, with the
    same key. ``if "k" not in d:`` (a literal key) and ``d["k"] = ...``; ``if x is None:`` and
    ``x = ...``; ``if not hasattr(self, "a"):`` and ``self.a = ...``, where the store is an
    attribute or a module-level name (``local``: the names the function binds, parameters
    included, a ``global`` one excepted; ``stored``: those it assigns). A local name refilled
    per call, an object the call builds, or a key that varies, is not. A flag is a fill too:
    ``if not self.compiled:`` and ``self.compiled = True``. Under ``and`` one such test is
    enough (``if not self.compiled and self.mode is not None:``): once filled, it is false."""
    filled: dict[str, ast.expr] = {}
    for stmt in node.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                filled[_filled_text(target)] = stmt.value
    tests = node.test.values if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And) else [node.test]
    return any(_fill_test(test, filled, local, stored) for test in tests)


def _fill_test(test: ast.expr, filled: dict[str, ast.expr], local: set[str], stored: set[str]) -> bool:
    """Whether ``test`` asks whether a store ``filled`` (target text -> value) fills is still
    empty (``fills_once``)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, (ast.Name, ast.Attribute)):
        value = filled.get(ast.unparse(test.operand))
        truthy = isinstance(value, ast.Constant) and bool(value.value) and isinstance(value.value, (bool, int, float, str))
        return truthy and _outlives(test.operand, local, stored)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotIn):
        key, store = test.left, test.comparators[0]
        return isinstance(key, ast.Constant) and isinstance(key.value, (str, int)) and _outlives(store, local, stored) and f"{ast.unparse(store)}[{key.value!r}]" in filled
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is):
        value = test.comparators[0]
        return isinstance(value, ast.Constant) and value.value is None and _outlives(test.left, local, stored) and ast.unparse(test.left) in filled
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Call):
        call = test.operand
        if dotted_name(call.func) == "hasattr" and len(call.args) == 2 and isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str):
            # The object outlives the call: an attribute chain, ``self`` or another parameter,
            # a module-level name; not one the function builds.
            owner = call.args[0]
            built = isinstance(owner, ast.Name) and owner.id in stored
            return not built and isinstance(owner, (ast.Name, ast.Attribute)) and f"{ast.unparse(owner)}.{call.args[1].value}" in filled
    return False


def _outlives(node: ast.expr, local: set[str], stored: set[str]) -> bool:
    """Whether ``node`` names a store that outlives a call: an attribute chain on something the
    function does not build (``self.cache``), or a module-level name (one the function does
    not bind, or declares ``global``)."""
    if isinstance(node, ast.Attribute):
        root = dotted_name(node).split(".", 1)[0]
        return bool(root) and root not in stored
    return isinstance(node, ast.Name) and node.id not in local


def _filled_text(node: ast.expr) -> str:
    """An assignment target as ``fills_once`` compares it (``d['k']``, ``self.cache``)."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return f"{ast.unparse(node.value)}[{node.slice.value!r}]"
    return ast.unparse(node)


# The keywords ``torch.compile`` takes after the callable (``nn.Module.compile(*args,
# **kwargs)`` passes its arguments on after its own ``_call_impl``).
COMPILE_KEYWORDS = frozenset({"fullgraph", "dynamic", "backend", "mode", "options", "disable"})


def _module_compile_binds(call: ast.expr | None, target: ast.expr) -> bool:
    """Whether ``x.compile(...)``'s arguments can be ``nn.Module.compile``'s, where ``target``
    is its receiver ``x`` (not an argument a project's own ``compile`` method is handed): no
    positional argument (the callable is its own ``_call_impl``) and only ``torch.compile``'s
    keywords; a spread (``*args``, ``**options``) may hold anything, and a call that names
    one of ``torch.compile``'s options beside its own may be an override that compiles."""
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return True
    receiver = call.func.value
    if (getattr(target, "lineno", None), getattr(target, "col_offset", None)) != (receiver.lineno, receiver.col_offset):
        return True
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords):
        return True
    if any(k.arg in COMPILE_KEYWORDS for k in call.keywords):
        # ``engine.compile(backend=..., compile_kwargs=...)``: a library's module overriding
        # ``compile`` with options of its own, which still compiles with torch.
        return True
    return not call.args and not call.keywords
