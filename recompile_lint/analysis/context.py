"""What a rule sees: a function reached by a region (with its libcst node), or the project.

libcst is paid only here, and only for the top-level statements that hold region code: the
statement is parsed on its own and positions are shifted back to file coordinates.
"""

from __future__ import annotations

import builtins
import dataclasses
from dataclasses import dataclass
from typing import Callable, Mapping, Union

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from recompile_lint.analysis.facts import FunctionFacts, ModuleFacts, Span
from recompile_lint.analysis.index import FunctionRef, ProjectIndex
from recompile_lint.analysis.parsing import CstRefused, parse_cst
from recompile_lint.models import Boundedness, FileError, Guard, Location, Severity, Subject
from recompile_lint.analysis.regions import CompiledRegion, within

FunctionNode = Union[cst.FunctionDef, cst.Lambda]
BUILTIN_NAMES = frozenset(dir(builtins))

# Snippets parsed before, by their text, with their positions: kept only by a resident server
# (``server``), which parses between commands the snippets a command had to parse
# (``new_snippets``). A tree depends on nothing but its text.
resident_snippets: dict[str, tuple[cst.Module, Mapping]] | None = None
new_snippets: list[str] = []


@dataclass(frozen=True)
class Report:
    """What a rule says about one place; the engine turns it into a Finding."""

    path: str
    span: Span
    message: str
    severity: Severity | None = None
    bounded: Boundedness | None = None
    subject: Subject | None = None
    region: str = ""
    function: str = ""
    guard: Guard | None = None
    evidence: tuple[Location, ...] = ()


class ParsedStatement:
    """One parsed snippet. Positions cost a second pass over the tree, so they are resolved
    only when needed: to report, or to tell lambdas apart."""

    def __init__(self, module: cst.Module, line_offset: int, positions: Mapping | None = None):
        self.module = module
        self.wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.line_offset = line_offset
        self._positions: Mapping | None = positions
        self._lambdas: dict[tuple[int, int], cst.Lambda] | None = None

    @property
    def positions(self) -> Mapping:
        if self._positions is None:
            self._positions = positions_of(self.wrapper)
        return self._positions

    def outer_def(self, name: str) -> cst.FunctionDef | None:
        """The ``def`` the snippet was cut for: its first statement (inside ``if 1:`` when
        the snippet was indented)."""
        body = self.module.body
        if body and isinstance(body[0], cst.If) and isinstance(body[0].body, cst.IndentedBlock):
            body = body[0].body.body
        node = body[0] if body else None
        return node if isinstance(node, cst.FunctionDef) and node.name.value == name else None

    def lambda_at(self, line: int, column: int) -> cst.Lambda | None:
        if self._lambdas is None:
            self._lambdas = {}
            for node, pos in self.positions.items():
                if isinstance(node, cst.Lambda):
                    self._lambdas[(pos.start.line + self.line_offset, pos.start.column)] = node
        return self._lambdas.get((line, column))


def positions_of(wrapper: MetadataWrapper) -> Mapping[cst.CSTNode, CodeRange]:
    """``wrapper.resolve(PositionProvider)``, without the walk over the whole tree that
    ``resolve`` also makes, for the batchable providers asked for (none here): about half
    the cost."""
    return PositionProvider()._gen(wrapper)


def parse_snippet(snippet: str) -> tuple[cst.Module, Mapping] | None:
    """A snippet's tree and positions, as a resident server keeps them (None: it does not parse)."""
    try:
        module = parse_cst(snippet)
        return module, positions_of(MetadataWrapper(module, unsafe_skip_copy=True))
    except (cst.ParserSyntaxError, RecursionError, ValueError, CstRefused):
        return None


class CstCache:
    """libcst trees of the code that regions reach: each ``def`` on its own (a method is parsed
    without the rest of its class), a lambda with its top-level statement."""

    def __init__(self, index: ProjectIndex):
        self.index = index
        self._parsed: dict[tuple[str, int, int], ParsedStatement | None] = {}

    def statement(self, path: str, fn: FunctionFacts) -> ParsedStatement | None:
        first, last = (fn.stmt_line, fn.stmt_end_line) if fn.is_lambda else (fn.first_line, fn.end_line)
        key = (path, first, last)
        if key not in self._parsed:
            text = self.index.text(path)
            parsed = None
            if text is not None:
                lines = self.index.lines(path)[first - 1 : last]
                offset = first - 1
                if lines and lines[0][:1] in (" ", "\t"):
                    # An indented def parses as the body of a block; its columns stay as they are.
                    lines = ["if 1:", *lines]
                    offset -= 1
                snippet = "\n".join(lines) + "\n"
                kept = resident_snippets.get(snippet) if resident_snippets is not None else None
                if kept is not None:
                    parsed = ParsedStatement(kept[0], offset, kept[1])
                else:
                    try:
                        parsed = ParsedStatement(parse_cst(snippet), offset)
                    except (cst.ParserSyntaxError, RecursionError, ValueError, CstRefused) as exc:
                        # The function's facts stand, but no rule checks its body: say so.
                        why = str(exc) if isinstance(exc, CstRefused) else f"libcst cannot parse it ({type(exc).__name__})"
                        self.index.errors.setdefault(path, FileError(path, f"`{fn.qualname}` is only partly checked (the rules that walk its syntax skip it): {why}", fn.line, fn.column))
                        parsed = None
                    if resident_snippets is not None:
                        new_snippets.append(snippet)
            self._parsed[key] = parsed
        return self._parsed[key]

    def function_node(self, path: str, fn: FunctionFacts) -> tuple[FunctionNode, ParsedStatement] | None:
        parsed = self.statement(path, fn)
        if parsed is None:
            return None
        try:
            node: FunctionNode | None = parsed.lambda_at(fn.line, fn.column - 1) if fn.is_lambda else parsed.outer_def(fn.name)
        except (RecursionError, ValueError):
            return None
        return (node, parsed) if node is not None else None


class FunctionContext:
    """One function reached by one region, with helpers for scope and index questions."""

    def __init__(self, index: ProjectIndex, region: CompiledRegion, ref: FunctionRef, facts: ModuleFacts, fn: FunctionFacts, node: FunctionNode, parsed: ParsedStatement, depth: int, dead: tuple[tuple[int, int, int, int], ...] = ()):
        self.index = index
        # Spans of branches that constants every call passes rule out, in every region that
        # reaches the function (``CompiledRegion.dead``): Dynamo traces none of them.
        self.dead = dead
        self.region = region
        self.ref = ref
        self.module = facts
        self.function = fn
        self.node = node
        self.depth = depth
        self._parsed = parsed
        self.reports: list[Report] = []
        # Per-function results several rules share (body nodes, reads, nodes by class): computed once.
        self.memo: dict[object, object] = {}

    @property
    def path(self) -> str:
        return self.module.path

    @property
    def qualified_name(self) -> str:
        return f"{self.module.module}.{self.function.qualname}" if self.module.module else self.function.qualname

    @property
    def is_entry(self) -> bool:
        return self.depth == 0

    # ---- positions -----------------------------------------------------------------------

    def span(self, node: cst.CSTNode) -> Span:
        pos: CodeRange = self._parsed.positions[node]
        off = self._parsed.line_offset
        return Span(pos.start.line + off, pos.start.column + 1, pos.end.line + off, pos.end.column + 1)

    def is_dead(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` sits in a branch Dynamo never traces here (``self.dead``)."""
        if not self.dead:
            return False
        pos: CodeRange | None = self._parsed.positions.get(node)
        if pos is None:
            return False
        return within((pos.start.line + self._parsed.line_offset, pos.start.column), self.dead)

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        severity: Severity | None = None,
        bounded: Boundedness | None = None,
        subject: Subject | None = None,
        guard: Guard | None = None,
        evidence: tuple[Location, ...] = (),
    ) -> None:
        self.reports.append(
            Report(
                path=self.path,
                span=self.span(node),
                message=message,
                severity=severity,
                bounded=bounded,
                subject=subject,
                region=self.region.name,
                function=self.qualified_name,
                guard=guard,
                evidence=evidence + (self.region.site_location(),),
            )
        )

    # ---- walking -------------------------------------------------------------------------

    def body_nodes(self) -> tuple[cst.CSTNode, ...]:
        """Every node of the function body in source order, not descending into nested defs
        or classes (they are separate scopes, checked when a region reaches them), nor into
        the branches the constants of every region's calls rule out (``dead``)."""
        nodes = self.memo.get("body_nodes")
        if nodes is None:
            nodes = self._walk_body()[0]
        return nodes  # type: ignore[return-value]

    def nodes_of(self, *types: type) -> tuple[cst.CSTNode, ...]:
        """The body nodes (``body_nodes``, in source order) that are instances of ``types``:
        a class test per node class, where ``isinstance`` on libcst's abstract node classes
        costs as much per node as the rest of a rule's loop."""
        key = ("nodes_of", *types)
        found = self.memo.get(key)
        if found is None:
            verdicts: dict[type, bool] = {}
            picked = []
            for node in self.body_nodes():
                kind = type(node)
                verdict = verdicts.get(kind)
                if verdict is None:
                    verdict = verdicts[kind] = issubclass(kind, types)
                if verdict:
                    picked.append(node)
            found = self.memo[key] = tuple(picked)
        return found  # type: ignore[return-value]

    def parents(self) -> dict[int, cst.CSTNode]:
        """``id(node)`` -> parent for the body nodes (and for the nested defs and classes
        directly in them), recorded in the same walk as ``body_nodes``: libcst's ``children``
        runs a visitor of its own on every call."""
        parents = self.memo.get("parents")
        if parents is None:
            parents = self._walk_body()[1]
        return parents  # type: ignore[return-value]

    def _walk_body(self) -> tuple[tuple[cst.CSTNode, ...], dict[int, cst.CSTNode]]:
        nodes: list[cst.CSTNode] = []
        parents: dict[int, cst.CSTNode] = {}
        stack: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(self.node.body, None)]
        while stack:
            node, parent = stack.pop()
            if parent is not None:
                parents[id(node)] = parent
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                continue
            if self.dead and self.is_dead(node):
                continue  # a branch Dynamo never traces here: no rule looks at it
            nodes.append(node)
            stack.extend((child, node) for child in reversed(child_nodes(node)))
        self.memo["body_nodes"] = result = tuple(nodes)
        self.memo["parents"] = parents
        return result, parents

    # ---- scope ---------------------------------------------------------------------------

    def is_local(self, name: str) -> bool:
        fn = self.function
        return name in fn.local_names and name not in fn.global_decls


    def enclosing_class(self):
        fn = self.function
        while fn is not None and not fn.class_name:
            fn = self.module.function(fn.parent) if fn.parent else None
        return self.module.cls(fn.class_name) if fn is not None else None


# Per node class: the fields libcst's own visit goes through, in its (source) order. A few
# classes visit a field only when it is not None (an f-string's ``format_spec``): those fields
# are told apart, and there is an order per combination of them being None.
_FIELD_ORDER: dict[type, tuple[str, ...]] = {}
_NONE_DEPENDENT: dict[type, tuple[tuple[str, ...], dict[tuple[bool, ...], tuple[str, ...]]]] = {}
_IS_NODE: dict[type, bool] = {}


class _FieldRecorder(cst.CSTVisitor):
    """Records the fields, in order, that ``_visit_and_replace_children`` visits on one node."""

    def __init__(self, node: cst.CSTNode):
        self.node = node
        self.fields: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if node is self.node:
            self.fields.append(attribute)


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children`` without its cost: libcst's ``children`` (and every ``visit``) builds
    a new copy of the node to find them. The fields and their order are libcst's own, read
    from its visit once per node class (and per combination of the fields it visits only
    when they are not None)."""
    order = _FIELD_ORDER.get(type(node))
    if order is None:
        order = _field_order(node)
    out: list[cst.CSTNode] = []
    for name in order:
        value = getattr(node, name)
        if isinstance(value, (tuple, list)):
            out.extend(item for item in value if _is_node(item))
        elif _is_node(value):
            out.append(value)
    return out


def _field_order(node: cst.CSTNode) -> tuple[str, ...]:
    kind = type(node)
    known = _NONE_DEPENDENT.get(kind)
    if known is not None:
        fields, orders = known
        pattern = tuple(getattr(node, name) is None for name in fields)
        order = orders.get(pattern)
        if order is None:
            order = orders[pattern] = _recorded_order(node)
        return order
    order = _recorded_order(node)
    # A field this node left unvisited because it is None may be visited when it is not.
    unsure = tuple(f.name for f in dataclasses.fields(node) if f.name not in order and getattr(node, f.name) is None)
    if unsure:
        _NONE_DEPENDENT[kind] = (unsure, {(True,) * len(unsure): order})
    else:
        _FIELD_ORDER[kind] = order
    return order


def _recorded_order(node: cst.CSTNode) -> tuple[str, ...]:
    recorder = _FieldRecorder(node)
    node._visit_and_replace_children(recorder)
    return tuple(dict.fromkeys(recorder.fields))


def _is_node(value: object) -> bool:
    kind = type(value)
    known = _IS_NODE.get(kind)
    if known is None:
        known = _IS_NODE[kind] = issubclass(kind, cst.CSTNode)
    return known


class QuickVisitor(cst.CSTVisitor):
    """A ``CSTVisitor`` that visits exactly as libcst's does, with less dispatch: libcst
    formats and looks up a method name for every node and for every field of every node
    (``visit_Call_func``...). Handlers are looked up once per node class, and the per-field
    hooks are not called (subclasses must not define ``visit_<Node>_<field>`` handlers)."""

    _visit_table: dict[type, Callable | None]
    _leave_table: dict[type, Callable | None]

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._visit_table = {}
        cls._leave_table = {}

    @classmethod
    def _handler(cls, table: dict[type, Callable | None], prefix: str, node_class: type) -> Callable | None:
        handler = getattr(cls, prefix + node_class.__name__, None)
        # libcst's base classes define a do-nothing handler for every node class.
        if handler is not None and handler.__qualname__.startswith(("CSTTyped", "CSTVisitor.")):
            handler = None
        table[node_class] = handler
        return handler

    def on_visit(self, node: cst.CSTNode) -> bool:
        node_class = type(node)
        table = self._visit_table
        handler = table[node_class] if node_class in table else self._handler(table, "visit_", node_class)
        return handler is None or handler(self, node) is not False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        node_class = type(original_node)
        table = self._leave_table
        handler = table[node_class] if node_class in table else self._handler(table, "leave_", node_class)
        if handler is not None:
            handler(self, original_node)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        return None

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        return None

    def walk(self, node: cst.CSTNode) -> None:
        """``node.visit(self)``, without libcst building a copy of every node it visits."""
        if self.on_visit(node):
            for child in child_nodes(node):
                self.walk(child)
        self.on_leave(node)


class ProjectContext:
    """The whole run: index, regions, and a way to report at ast positions."""

    def __init__(self, index: ProjectIndex, regions: list[CompiledRegion], only: frozenset[str] | None = None):
        self.index = index
        self.regions = regions
        self.reports: list[Report] = []
        self.only = only  # the files whose findings are reported (None: every file)

    def wanted(self, path: str) -> bool:
        """Whether reports in ``path`` are kept: a rule may skip the work for other files."""
        return self.only is None or path in self.only

    def report(
        self,
        path: str,
        span: Span,
        message: str,
        *,
        severity: Severity | None = None,
        bounded: Boundedness | None = None,
        subject: Subject | None = None,
        region: str = "",
        function: str = "",
        guard: Guard | None = None,
        evidence: tuple[Location, ...] = (),
    ) -> None:
        self.reports.append(
            Report(path=path, span=span, message=message, severity=severity, bounded=bounded, subject=subject, region=region, function=function, guard=guard, evidence=evidence)
        )
