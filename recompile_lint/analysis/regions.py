"""Compiled regions: the code objects Dynamo traces, from each compile site through the
callees it inlines."""

from __future__ import annotations

from dataclasses import dataclass

from recompile_lint.analysis.facts import CompileSite, FunctionFacts, ModuleFacts
from recompile_lint.analysis.index import FunctionRef, ProjectIndex
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

    def site_location(self) -> Location:
        """Where the compiled object is made, as a finding's location."""
        span = self.site.span
        return Location(self.site_path, span.line, span.column, "compile-site", f"`{self.name}` is compiled here", span.end_line, span.end_column)

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


class RegionFinder:
    """Turns compile sites into regions and follows calls the way Dynamo inlines them."""

    def __init__(self, index: ProjectIndex, max_depth: int = 6):
        self.index = index
        self.max_depth = max_depth

    # ---- entry points --------------------------------------------------------------------

    def regions(self, facts: ModuleFacts) -> list[CompiledRegion]:
        out = []
        for site in facts.compile_sites:
            entry, model_class = self.entry_of(facts, site)
            if entry is None:
                continue
            fn = self.index.function(entry)
            if fn is None or is_disabled(fn):
                continue
            out.append(
                CompiledRegion(
                    entry=entry,
                    name=display_name(self.index, entry),
                    site=site,
                    site_path=facts.path,
                    reached=tuple(self.reach(entry)),
                    model_class=model_class,
                )
            )
        return out

    def entry_of(self, facts: ModuleFacts, site: CompileSite) -> tuple[FunctionRef | None, str]:
        if site.form == "decorator":
            return FunctionRef(facts.path, site.decorated), ""
        if site.target_kind == "lambda":
            return FunctionRef(facts.path, site.lambda_qualname), ""
        if site.target_kind == "call":
            return self.forward_of_class(site.class_ref, facts)
        scope = facts.function(site.function) if site.function else None
        if site.form == "method":
            return self.forward_of_value(site.target, facts, scope)
        return self.callable_of(site.target, facts, scope)

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

    def reach(self, entry: FunctionRef) -> list[tuple[FunctionRef, int, FunctionRef | None]]:
        """The entry and every callee Dynamo would inline, breadth first, up to max_depth."""
        out: list[tuple[FunctionRef, int, FunctionRef | None]] = [(entry, 0, None)]
        seen = {entry}
        i = 0
        while i < len(out):
            ref, depth, _ = out[i]
            i += 1
            if depth >= self.max_depth:
                continue
            facts = self.index.facts(ref.path)
            fn = facts.function(ref.qualname) if facts else None
            if facts is None or fn is None:
                continue
            for text in fn.calls:
                callee = self.callee(text, facts, fn)
                if callee is None or callee in seen:
                    continue
                target = self.index.function(callee)
                if target is None or is_disabled(target):
                    continue
                seen.add(callee)
                out.append((callee, depth + 1, ref))
        return out

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
