"""Fixes that edit the code around a compiled call or a compile site.

* ``drop-last`` (RCL205): ``drop_last=True`` on the DataLoader whose batches the compiled
  model is called on. Unsafe: the last, smaller batch is no longer seen (evaluation loses
  samples); where every sample matters, mark the batch unbacked instead (see the rule's page).
* ``mark-unbacked`` (RCL205, the alternative ``fixes_for`` also returns): ``mark_unbacked(x, 0)`` on
  the batch before the call, keeping every sample. Unsafe: code that needs a concrete batch
  size can fail to compile once the size is unbacked.
* ``hoist-backend`` (RCL403): a ``backend=lambda ...`` written in the call to
  ``torch.compile`` becomes one function at module level, made once, so every compile gets
  the same backend. Safe, and offered only when the lambda reads no name of the functions
  around it (it then computes the same wherever it is defined).
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from recompile_lint.fixes.base import Fixer, Reader, dotted, parse
from recompile_lint.models import Finding


def _wrapped(text: str) -> tuple[MetadataWrapper, dict]:
    wrapper = MetadataWrapper(parse(text), unsafe_skip_copy=True)
    return wrapper, wrapper.resolve(PositionProvider)


class _Collect(cst.CSTVisitor):
    """Every node of the given types, with its ancestors (outermost first)."""

    def __init__(self, types: tuple[type, ...]) -> None:
        self.types = types
        self.stack: list[cst.CSTNode] = []
        self.found: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, self.types):
            self.found.append((node, tuple(self.stack)))
        self.stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


def _collect(module: cst.Module, *types: type) -> list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]]:
    visitor = _Collect(types)
    module.visit(visitor)
    return visitor.found


def _is_dataloader(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and dotted(node.func).rsplit(".", 1)[-1] == "DataLoader"


class DropLast(Fixer):
    name = "drop-last"
    codes = ("RCL205",)
    safe = False
    summary = "adds `drop_last=True` to the DataLoader the compiled model's loop walks (written in that loop or assigned once in its function)"
    why = "the last, smaller batch of each epoch is no longer seen: evaluation loses samples, training one partial step"

    def title(self, finding: Finding) -> str:
        return "Add drop_last=True to the DataLoader (drops the last, smaller batch)"

    def rewrite(self, finding: Finding, text: str, read: Reader) -> dict[str, str] | None:
        wrapper, positions = _wrapped(text)
        module = wrapper.module
        loops = [
            (node, ancestors)
            for node, ancestors in _collect(module, cst.For)
            if positions[node.body].start.line <= finding.line <= positions[node.body].end.line
        ]
        # The innermost loop around the call that walks a DataLoader.
        loader = next((found for found in (self._loader(loop, ancestors) for loop, ancestors in reversed(loops)) if found is not None), None)
        if loader is None:
            return None
        keywords = [arg for arg in loader.args if arg.keyword is not None and arg.keyword.value == "drop_last"]
        if keywords:
            value = keywords[0].value
            if not (isinstance(value, cst.Name) and value.value == "False"):
                return None  # True already, or not a literal: not this fix's to change
            new_args = [arg.with_changes(value=cst.Name("True")) if arg is keywords[0] else arg for arg in loader.args]
        elif any(arg.star for arg in loader.args):
            return None  # ``**options`` may hold drop_last
        else:
            new_args = list(loader.args)
            added = cst.Arg(value=cst.Name("True"), keyword=cst.Name("drop_last"), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
            if new_args and isinstance(new_args[-1].comma, cst.Comma):
                # A trailing comma (one argument a line): the new one takes the last line's place.
                before = new_args[-2].comma if len(new_args) > 1 and isinstance(new_args[-2].comma, cst.Comma) else new_args[-1].comma
                added = added.with_changes(comma=new_args[-1].comma)
                new_args[-1] = new_args[-1].with_changes(comma=before)
            new_args.append(added)
        return {finding.path: module.deep_replace(loader, loader.with_changes(args=new_args)).code}

    @staticmethod
    def _loader(loop: cst.For, ancestors: tuple[cst.CSTNode, ...]) -> cst.Call | None:
        """The ``DataLoader(...)`` call ``loop`` walks: its iterable, or the one assignment
        of the name it walks in the same function."""
        if _is_dataloader(loop.iter):
            return loop.iter  # type: ignore[return-value]
        if not isinstance(loop.iter, cst.Name):
            return None
        name = loop.iter.value
        scope = next((node for node in reversed(ancestors) if isinstance(node, (cst.FunctionDef, cst.Module))), None)
        if scope is None:
            return None
        assigned = []
        for node, inner in _collect(scope, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For, cst.With, cst.NamedExpr):
            if any(isinstance(a, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and a is not scope for a in inner):
                continue
            targets: list[cst.BaseExpression] = []
            if isinstance(node, cst.Assign):
                targets = [t.target for t in node.targets]
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr)):
                targets = [node.target]
            elif isinstance(node, cst.With):
                targets = [item.asname.name for item in node.items if item.asname is not None]
            for target in targets:
                if any(isinstance(n, cst.Name) and n.value == name for n in _names(target)):
                    assigned.append(node)
        if len(assigned) != 1 or not isinstance(assigned[0], cst.Assign) or not _is_dataloader(assigned[0].value):
            return None
        return assigned[0].value  # type: ignore[return-value]


def _names(node: cst.CSTNode) -> list[cst.Name]:
    return [n for n, _ in _collect(node, cst.Name)] if not isinstance(node, cst.Name) else [node]


def _read_names(node: cst.CSTNode) -> list[cst.Name]:
    """The names an expression reads: not attribute names (``gm.forward``) nor keywords."""
    out = []
    for name, ancestors in _collect(node, cst.Name):
        parent = ancestors[-1] if ancestors else None
        if isinstance(parent, cst.Attribute) and parent.attr is name:
            continue
        if isinstance(parent, cst.Arg) and parent.keyword is name:
            continue
        out.append(name)
    return [node] if isinstance(node, cst.Name) else out


class MarkUnbacked(Fixer):
    name = "mark-unbacked"
    codes = ("RCL205",)
    safe = False
    summary = (
        "calls `torch._dynamo.decorators.mark_unbacked(x, 0)` on the batch before the compiled call in the loop "
        "(the batch passed as a name), so every batch size, 0 and 1 included, shares one graph"
    )
    why = "Dynamo may no longer specialise on the batch size: code that needs a concrete size (a view computed from it) can fail to compile"

    def title(self, finding: Finding) -> str:
        return "Mark the batch's first dimension unbacked before the call (one graph for every size)"

    def rewrite(self, finding: Finding, text: str, read: Reader) -> dict[str, str] | None:
        from recompile_lint.fixes.settings import torch_import

        wrapper, positions = _wrapped(text)
        module = wrapper.module
        torch = torch_import(module)
        if torch is None:
            return None
        for call, ancestors in _collect(module, cst.Call):
            start = positions[call].start
            if (start.line, start.column + 1) != (finding.line, finding.column) or dotted(call.func).endswith("mark_unbacked"):
                continue
            first = call.args[0] if call.args and call.args[0].keyword is None and not call.args[0].star else None
            if first is None or not isinstance(first.value, cst.Name):
                return None  # only a name can be marked without computing the batch twice
            return self._insert(module, ancestors, f"{torch[1]}._dynamo.decorators.mark_unbacked({first.value.value}, 0)", finding)
        return None

    @staticmethod
    def _insert(module: cst.Module, ancestors: tuple[cst.CSTNode, ...], code: str, finding: Finding) -> dict[str, str] | None:
        # The statement holding the call, in the block of the loop around it.
        for index in range(len(ancestors) - 1, 0, -1):
            node, block = ancestors[index], ancestors[index - 1]
            if isinstance(node, cst.BaseStatement) and isinstance(block, cst.IndentedBlock):
                break
        else:
            return None
        if not any(isinstance(a, cst.For) for a in ancestors[:index]):
            return None
        body = list(block.body)
        position = body.index(node)
        if position > 0 and isinstance(body[position - 1], cst.SimpleStatementLine) and module.code_for_node(body[position - 1].body[0]).strip() == code:
            return None  # marked already
        marked = cst.parse_statement(code + "\n").with_changes(leading_lines=node.leading_lines)
        body[position] = node.with_changes(leading_lines=[])
        body.insert(position, marked)
        return {finding.path: module.deep_replace(block, block.with_changes(body=body)).code}


class _Scope(cst.CSTVisitor):
    """The names a function binds (parameters, assignments, imports, defs, loop targets)."""

    def __init__(self) -> None:
        self.bound: set[str] = set()

    def visit_Param(self, node: cst.Param) -> None:
        self.bound.add(node.name.value)

    def visit_Name(self, node: cst.Name) -> None:
        pass

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.bound.update(n.value for n in _names(node.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.bound.update(n.value for n in _names(node.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.bound.update(n.value for n in _names(node.target))

    def visit_For(self, node: cst.For) -> None:
        self.bound.update(n.value for n in _names(node.target))

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.bound.update(n.value for n in _names(node.target))

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.bound.update(n.value for n in _names(node.target))

    def visit_AsName(self, node: cst.AsName) -> None:
        self.bound.update(n.value for n in _names(node.name))

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            self.bound.add(dotted(node.name).split(".")[0])

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.bound.add(node.name.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.bound.add(node.name.value)


class HoistBackend(Fixer):
    name = "hoist-backend"
    codes = ("RCL403",)
    safe = True
    summary = "moves a `backend=lambda ...` written in the call to `torch.compile` to one function at module level"
    why = "offered only when the lambda reads no name of the functions around it, so it computes the same wherever it is defined"

    def title(self, finding: Finding) -> str:
        return "Define the backend once, at module level"

    def rewrite(self, finding: Finding, text: str, read: Reader) -> dict[str, str] | None:
        wrapper, positions = _wrapped(text)
        module = wrapper.module
        for call, ancestors in _collect(module, cst.Call):
            if dotted(call.func).rsplit(".", 1)[-1] != "compile":
                continue
            for arg in call.args:
                if arg.keyword is None or arg.keyword.value != "backend" or not isinstance(arg.value, cst.Lambda):
                    continue
                where = positions[arg.value].start
                if (where.line, where.column + 1) != (finding.line, finding.column):
                    continue
                return self._hoist(module, arg.value, ancestors, finding)
        return None

    def _hoist(self, module: cst.Module, lam: cst.Lambda, ancestors: tuple[cst.CSTNode, ...], finding: Finding) -> dict[str, str] | None:
        functions = [node for node in ancestors if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef))]
        if not functions or not isinstance(ancestors[1] if len(ancestors) > 1 else None, (cst.FunctionDef, cst.ClassDef)):
            return None  # at module level it is made once already, or nested in an expression
        if any(isinstance(node, cst.ClassDef) for node in functions):
            return None  # a class body's names are not the module's
        bound: set[str] = set()
        for function in functions:
            scope = _Scope()
            function.visit(scope)
            bound |= scope.bound
        params = {p.name.value for p in _params(lam.params)}
        read = {n.value for n in _read_names(lam.body)} - params
        if read & bound or _params(lam.params) != list(lam.params.params):
            return None  # it reads the enclosing function's names, or takes defaults: not moved
        top = ancestors[1]
        taken = {n.value for n, _ in _collect(module, cst.Name)}
        base = f"_{top.name.value.lstrip('_')}_backend"
        name, counter = base, 2
        while name in taken:
            name, counter = f"{base}_{counter}", counter + 1
        params_code = module.code_for_node(lam.params)
        body_code = module.code_for_node(lam.body)
        definition = cst.parse_statement(f"def {name}({params_code}):\n    return {body_code}\n")
        definition = definition.with_changes(leading_lines=top.leading_lines)
        replaced = module.deep_replace(lam, cst.Name(name))
        body = list(replaced.body)
        index = next(i for i, statement in enumerate(module.body) if statement is top)
        body[index] = body[index].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        body.insert(index, definition)
        return {finding.path: replaced.with_changes(body=body).code}


def _params(parameters: cst.Parameters) -> list[cst.Param]:
    """Plain positional parameters without defaults; others make the list differ."""
    plain = not isinstance(parameters.star_arg, (cst.Param, cst.ParamStar)) and parameters.star_kwarg is None
    plain = plain and not parameters.kwonly_params and not parameters.posonly_params
    return [p for p in parameters.params if p.default is None] if plain else []
