"""Pieces the shape, rank and global-state rules share: tensor size and rank expressions,
parameters of a region's entry point and the call-site arguments that feed them, and the
DataLoader a loop walks."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable, Iterator

import libcst as cst

from recompile_lint.analysis.callsites import Argument, CallSite, Loop, binds, call_sites, names_of, primed_sites
from recompile_lint.analysis.context import child_nodes
from recompile_lint.analysis.facts import FunctionFacts, ModuleFacts, Param, dotted_name, span_of
from recompile_lint.analysis.index import FunctionRef, ProjectIndex
from recompile_lint.analysis.parsing import parse_source
from recompile_lint.analysis.regions import CompiledRegion
from recompile_lint.rules._common import place

# Methods and functions whose arguments are a shape: their rank is the shape's length.
SHAPE_METHODS = frozenset({"view", "reshape", "expand", "new_zeros", "new_ones", "new_empty", "repeat", "tile"})
SHAPE_FUNCTIONS = frozenset({"zeros", "ones", "empty", "randn", "rand", "reshape"})
SEQUENCE_ANNOTATIONS = ("list", "tuple", "dict", "set", "List", "Tuple", "Dict", "Set", "Sequence", "Mapping", "MutableSequence", "MutableMapping", "Size")
MARK_UNBACKED = frozenset({"torch._dynamo.decorators.mark_unbacked", "torch._dynamo.mark_unbacked"})


# ---- expressions inside a region ---------------------------------------------------------------


def _method_call(node: cst.CSTNode, names: tuple[str, ...]) -> cst.Call | None:
    """``x.<name>(...)`` on a plain name ``x``, for one of ``names``."""
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and isinstance(node.func.value, cst.Name)
        and node.func.attr.value in names
    ):
        return node
    return None


def _name_attribute(node: cst.CSTNode, name: str) -> cst.Name | None:
    """``x`` of ``x.<name>`` on a plain name ``x``."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.attr.value == name:
        return node.value
    return None


# Plain isinstance tests rather than libcst.matchers: these run on every node of every region,
# and importing the matchers costs more than a whole small lint.
def rank_receiver(node: cst.CSTNode) -> cst.Name | None:
    """The tensor name of ``x.dim()``, ``x.ndim``, ``x.ndimension()``, ``len(x.shape)``,
    ``len(x.size())``; None for anything else."""
    call = _method_call(node, ("dim", "ndimension"))
    if call is not None and not call.args:
        return call.func.value  # type: ignore[attr-defined, return-value]
    ndim = _name_attribute(node, "ndim")
    if ndim is not None:
        return ndim
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len" and len(node.args) == 1:
        inner = node.args[0].value
        shape = _name_attribute(inner, "shape")
        if shape is not None:
            return shape
        size = _method_call(inner, ("size",))
        if size is not None and not size.args:
            return size.func.value  # type: ignore[attr-defined, return-value]
    return None


def size_receiver(node: cst.CSTNode) -> cst.Name | None:
    """The tensor name of ``x.shape[i]``, ``x.size(i)``, ``x.size()[i]``, ``x.numel()``."""
    if isinstance(node, cst.Subscript):
        shape = _name_attribute(node.value, "shape")
        if shape is not None:
            return shape
        size = _method_call(node.value, ("size",))
        if size is not None and not size.args:
            return size.func.value  # type: ignore[attr-defined, return-value]
        return None
    size = _method_call(node, ("size",))
    if size is not None and size.args:
        return size.func.value  # type: ignore[attr-defined, return-value]
    numel = _method_call(node, ("numel",))
    if numel is not None and not numel.args:
        return numel.func.value  # type: ignore[attr-defined, return-value]
    return None


def is_whole_shape(node: cst.CSTNode) -> cst.Name | None:
    """The tensor name of ``x.shape`` / ``x.size()`` (a tuple of every size)."""
    shape = _name_attribute(node, "shape")
    if shape is not None:
        return shape
    size = _method_call(node, ("size",))
    if size is not None and not size.args:
        return size.func.value  # type: ignore[attr-defined, return-value]
    return None


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under ``node`` (itself included), not entering nested defs or lambdas."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in reversed(child_nodes(current)):
            if not isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                stack.append(child)


def branch_tests(nodes: Iterable[cst.CSTNode]) -> Iterator[tuple[cst.CSTNode, cst.BaseExpression]]:
    """(statement or expression, test) of every ``if`` / ``elif`` / ``while`` / ternary."""
    for node in nodes:
        if isinstance(node, (cst.If, cst.While, cst.IfExp)):
            yield node, node.test


def raises_only(node: cst.CSTNode) -> bool:
    """``if bad: raise ...`` (input validation: only one side ever runs in a healthy program)."""
    if not isinstance(node, cst.If) or node.orelse is not None:
        return False
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else node.body.body
    statements = [s for s in body]
    if len(statements) != 1:
        return False
    only = statements[0]
    small = only.body if isinstance(only, cst.SimpleStatementLine) else ()
    return len(small) == 1 and isinstance(small[0], cst.Raise)


# ---- the region's parameters and its call sites ------------------------------------------------


def entry_params(index: ProjectIndex, region: CompiledRegion) -> tuple[Param, ...]:
    """The entry's parameters as callers pass them (``self`` dropped for methods)."""
    fn = index.function(region.entry)
    if fn is None:
        return ()
    params = fn.params
    if fn.class_name and params and params[0].kind == "positional" and params[0].name in ("self", "cls"):
        params = params[1:]
    return params


def argument_for(site: CallSite, params: tuple[Param, ...], name: str) -> Argument | None:
    """The argument a call site passes for parameter ``name`` (None when absent or unknown)."""
    for key, arg in site.keywords:
        if key == name:
            return arg
    if any(a.kind == "starred" for a in site.args):
        return None
    for i, param in enumerate(params):
        if param.kind != "positional":
            break
        if param.name == name:
            return site.args[i] if i < len(site.args) else None
    return None


def is_sequence_annotation(annotation: str) -> bool:
    head = annotation.split("[", 1)[0].rsplit(".", 1)[-1].strip()
    return head in SEQUENCE_ANNOTATIONS


def is_slice_argument(arg: Argument) -> bool:
    """``xs[:i]``: a slice whose bounds use a loop variable (its length changes per call)."""
    if arg.kind != "subscript" or not arg.loop_names:
        return False
    try:
        tree = ast.parse(arg.text, mode="eval").body
    except SyntaxError:
        return False
    if not isinstance(tree, ast.Subscript):
        return False
    parts = tree.slice.elts if isinstance(tree.slice, ast.Tuple) else [tree.slice]
    for part in parts:
        if isinstance(part, ast.Slice) and any(isinstance(n, ast.Name) and n.id in arg.loop_names for n in ast.walk(part)):
            if not fixed_length(part, set(arg.loop_names)):
                return True
    return False


def fixed_length(part: ast.Slice, loop_names: set[str]) -> bool:
    """Whether a slice has the same length whatever the loop variable: ``x[i * n:(i + 1) * n]``,
    ``x[i:i + k]`` (the difference of its bounds does not involve the loop variable). Checked
    by evaluating the bounds for a few values of every name."""
    if part.lower is None or part.upper is None or part.step is not None:
        return False
    names = sorted({n.id for n in ast.walk(part) if isinstance(n, ast.Name)})
    lengths = set()
    for trial in range(4):
        values = {name: (trial + 2 if name in loop_names else 7 + 3 * i) for i, name in enumerate(names)}
        try:
            lower = _integer(part.lower, values)
            upper = _integer(part.upper, values)
        except (ValueError, ZeroDivisionError, OverflowError):
            return False
        lengths.add(upper - lower)
    return len(lengths) == 1


def _integer(node: ast.AST, values: dict[str, int]) -> int:
    """The value of a small integer expression (names, constants, + - * //)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name) and node.id in values:
        return values[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_integer(node.operand, values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        left, right = _integer(node.left, values), _integer(node.right, values)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        return left // right
    raise ValueError("not a small integer expression")


def sites_of(index: ProjectIndex, region: CompiledRegion) -> list[CallSite]:
    """Call sites that call this region's compiled object, not merely something of the same
    name: in the compiling file (in the compiling function when the compiled object is a
    local variable, or a function that takes it as a parameter of that name), or in another
    file through an import of the compiling module; not a call that cannot bind to the
    entry's parameters (``callsites.binds``). Computed once per region and run: three rules
    ask."""
    memo = index.memo.setdefault("sites_of", {})
    assert isinstance(memo, dict)
    key = (region.site_path, region.site, region.model_class, region.entry)
    if key not in memo:
        memo[key] = [call for call in _sites_of(index, region) if binds(index, region, call)]
    return list(memo[key])


def _sites_of(index: ProjectIndex, region: CompiledRegion) -> list[CallSite]:
    site = region.site
    facts = index.facts(region.site_path)
    home = facts.module if facts is not None else ""
    local = bool(site.function) and (site.form != "decorator") and not (site.assigned_to or site.target).startswith("self.")

    def keep_here(call: CallSite) -> bool:
        # A call in the compiling file.
        if not local or call.function == site.function or call.function.startswith(site.function + "."):
            return True
        return facts is not None and _takes_parameter(facts, call.function, call.callee.split(".", 1)[0])

    names = names_of(region, index)
    by_name = primed_sites(index, names)
    if by_name is not None:
        # Looked up by file and by the name a call resolves to: a name many regions share
        # (``forward``, ``step``) is not scanned once per region.
        found: list[tuple[int, CallSite]] = []
        aliases = region_aliases(index, region)
        for name in names:
            table = _SitesNamed.of(index, name, by_name)
            found.extend(entry for entry in table.by_path.get(region.site_path, ()) if keep_here(entry[1]))
            if not local and home:
                found.extend(entry for entry in table.resolved(index).get(f"{home}.{name}", ()) if entry[1].path != region.site_path)
            if aliases:
                # A parameter handed the compiled object (``evaluate(model, compiled)``).
                found.extend(entry for entry in table.entries if entry[1].function and (FunctionRef(entry[1].path, entry[1].function), entry[1].callee) in aliases)
        return [call for _, call in sorted(dict.fromkeys(found), key=lambda entry: entry[0])]
    out: list[CallSite] = []
    aliases = region_aliases(index, region)
    for call in call_sites(index, region):
        name = call.callee.rsplit(".", 1)[-1]
        if call.function and (FunctionRef(call.path, call.function), call.callee) in aliases:
            out.append(call)  # a parameter handed the compiled object (``evaluate(model, compiled)``)
            continue
        if call.path == region.site_path:
            if keep_here(call):
                out.append(call)
            continue
        if local or not home:
            continue
        other = index.facts(call.path)
        if other is not None and other.resolve(call.callee) == f"{home}.{name}":
            out.append(call)
    return out


def region_aliases(index: ProjectIndex, region: CompiledRegion) -> set:
    """(function, parameter) pairs that receive the compiled object or the compiled module
    (``variation.Variation.aliases``), once per region and run."""
    from recompile_lint.analysis.variation import variation_of

    return variation_of(index).aliases(region)


class _SitesNamed:
    """The project's call sites of one callee name (``callsites.prime``), by file and, built
    when first asked, by the dotted name the callee resolves to in its file."""

    def __init__(self, entries: list[tuple[int, CallSite]]):
        self.entries = entries
        self.by_path: dict[str, list[tuple[int, CallSite]]] = {}
        for entry in entries:
            self.by_path.setdefault(entry[1].path, []).append(entry)
        self._resolved: dict[str, list[tuple[int, CallSite]]] | None = None

    @classmethod
    def of(cls, index: ProjectIndex, name: str, by_name: dict[str, list[tuple[int, CallSite]]]) -> _SitesNamed:
        """The table of ``name`` from ``prime``'s collection ``by_name``, built once per run."""
        memo = index.memo.setdefault("sites_named", {})
        assert isinstance(memo, dict)
        table = memo.get(name)
        if table is None:
            memo[name] = table = cls(by_name.get(name, []))
        return table

    def resolved(self, index: ProjectIndex) -> dict[str, list[tuple[int, CallSite]]]:
        if self._resolved is None:
            self._resolved = {}
            for entry in self.entries:
                other = index.facts(entry[1].path)
                if other is not None:
                    self._resolved.setdefault(other.resolve(entry[1].callee), []).append(entry)
        return self._resolved


def _takes_parameter(facts: ModuleFacts, qualname: str, name: str) -> bool:
    fn = facts.function(qualname) if qualname else None
    return fn is not None and any(p.name == name for p in fn.params)


# ---- DataLoaders ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LoaderFacts:
    """A ``torch.utils.data.DataLoader`` a loop walks, with its keywords as written."""

    keywords: tuple[tuple[str, str], ...]
    where: str  # "path:line" of the DataLoader(...) call when known

    def keyword(self, name: str) -> str | None:
        for key, value in self.keywords:
            if key == name:
                return value
        return None

    @property
    def keeps_last_batch(self) -> bool | None:
        """True without ``drop_last=True``; None when ``drop_last`` is not a literal."""
        value = self.keyword("drop_last")
        if value is None or value == "False":
            return True
        if value == "True":
            return False
        return None

    @property
    def single_sample_batches(self) -> bool:
        return self.keyword("batch_size") == "1"


def is_dataloader(callee: str) -> bool:
    return callee.rsplit(".", 1)[-1] == "DataLoader" and (callee.startswith("torch.") or callee == "DataLoader")


def loader_of(index: ProjectIndex, site: CallSite, loop: Loop) -> LoaderFacts | None:
    """The DataLoader ``loop`` walks, directly or through a project function that returns one
    (``for batch in make_loader(ds)``); None when it walks something else or is unknown."""
    callee = loop.iter_callee
    if not callee:
        return None
    if is_dataloader(callee):
        return LoaderFacts(loop.iter_keywords, place(site.path, site.span.line))
    ref = index.resolve_function(callee, site.path)
    if ref is None:
        facts = index.facts(site.path)
        if facts is not None and facts.function(callee) is not None:
            ref_path, qualname = site.path, callee
        else:
            return None
    else:
        ref_path, qualname = ref.path, ref.qualname
    return _returned_loader(index, ref_path, qualname, dict(loop.iter_keywords))


def _returned_loader(index: ProjectIndex, path: str, qualname: str, passed: dict[str, str]) -> LoaderFacts | None:
    facts = index.facts(path)
    text = index.text(path)
    fn = facts.function(qualname) if facts is not None else None
    if facts is None or text is None or fn is None:
        return None
    try:
        tree = parse_source(text, path)
    except (SyntaxError, ValueError, RecursionError):
        return None
    node = _find_def(tree, fn)
    if node is None:
        return None
    built: dict[str, ast.Call] = {}
    found: ast.Call | None = None
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name):
            built[sub.targets[0].id] = sub.value
        if isinstance(sub, ast.Return) and sub.value is not None:
            value = sub.value
            if isinstance(value, ast.Name) and value.id in built:
                value = built[value.id]
            if isinstance(value, ast.Call) and is_dataloader(facts.resolve(dotted_name(value.func))):
                found = value
    if found is None:
        return None
    lines = text.split("\n")
    keywords: list[tuple[str, str]] = []
    defaults = {p.name: p.default for p in fn.params}
    for kw in found.keywords:
        if not kw.arg:
            continue
        value = ast.unparse(kw.value)
        # ``drop_last=drop_last`` forwards a parameter: what the caller passed, else its default.
        if isinstance(kw.value, ast.Name) and kw.value.id in defaults:
            value = passed.get(kw.value.id, defaults[kw.value.id]) or value
        keywords.append((kw.arg, value))
    return LoaderFacts(tuple(keywords), place(path, span_of(found, lines).line))


def _find_def(tree: ast.Module, fn: FunctionFacts) -> ast.AST | None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == fn.name and node.lineno == fn.line:
            return node
    return None


def loader_loop(index: ProjectIndex, site: CallSite) -> tuple[Loop, LoaderFacts] | None:
    """The innermost loop around ``site`` that walks a DataLoader."""
    for loop in reversed(site.loops):
        loader = loader_of(index, site, loop)
        if loader is not None:
            return loop, loader
    return None


def marks_unbacked(loop: Loop) -> bool:
    return any(c in MARK_UNBACKED or c.endswith(".mark_unbacked") or c == "mark_unbacked" for c in loop.body_calls)


def function_decorators(facts: ModuleFacts | None, qualname: str) -> tuple[str, ...]:
    fn = facts.function(qualname) if facts is not None and qualname else None
    return fn.decorators if fn is not None else ()


def module_of(ctx, region: CompiledRegion) -> str:
    """Dotted module of the region's entry function."""
    facts = ctx.index.facts(region.entry.path)
    return facts.module if facts is not None else ""


# ---- global state around call sites ---------------------------------------------------------


def state_at(index: ProjectIndex, site: CallSite, enter: frozenset[str], leave: frozenset[str] = frozenset()) -> str:
    """The context of ``enter`` (e.g. ``torch.no_grad``) active around ``site``, or "".

    The innermost ``with`` decides (``enable_grad`` inside ``no_grad`` leaves it); a decorator
    of the calling function (``@torch.no_grad()``) counts as the outermost context.
    """
    for context in reversed(site.contexts):
        if context in enter:
            return context
        if context in leave:
            return ""
    for decorator in function_decorators(index.facts(site.path), site.function):
        if decorator in enter:
            return decorator
        if decorator in leave:
            return ""
    return ""


def split_by_state(index: ProjectIndex, region: CompiledRegion, enter: frozenset[str], leave: frozenset[str] = frozenset()) -> tuple[list[tuple[CallSite, str]], list[CallSite]]:
    """(call sites inside one of ``enter`` with the context's name, call sites outside)."""
    inside: list[tuple[CallSite, str]] = []
    outside: list[CallSite] = []
    for site in sites_of(index, region):
        state = state_at(index, site, enter, leave)
        if state:
            inside.append((site, state))
        else:
            outside.append(site)
    return inside, outside


def site_function(site: CallSite) -> str:
    if not site.function:
        return site.module
    return f"{site.module}.{site.function}" if site.module else site.function
