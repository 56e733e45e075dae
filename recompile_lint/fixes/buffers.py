"""``module-buffer`` (RCL104, unsafe): an ``nn.Module`` int attribute becomes a registered
buffer updated in place.

``self.step = 0`` in ``__init__`` (after ``super().__init__()``) becomes
``self.register_buffer("step", torch.tensor(0), persistent=False)``; ``self.step += k`` becomes
``self.step.add_(k)`` (``-=``: ``sub_``), ``self.step = v`` elsewhere ``self.step.fill_(v)``,
in the class and at the finding's writes in the same file (``model.step = i``). A 0-d tensor
is a graph input, so its value is no guard. Unsafe: code that reads the attribute now reads
a tensor (a print, a checkpoint name, a comparison outside the compiled code), and a buffer
follows ``.to(device)``. Offered only when every read of the attribute in the class is
arithmetic (an operand of ``+ - * / // % **``, not under a builtin such as ``min``, ``int``,
``range``, not compared, not an index), where a tensor computes the same; ``persistent=False``
keeps it out of ``state_dict``, so checkpoints do not change.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from recompile_lint.fixes.base import Fixer, Reader, dotted, parse, same_file
from recompile_lint.fixes.settings import torch_import
from recompile_lint.models import Finding

# Calls whose arguments need a Python number, or that branch on one: a tensor there breaks the
# graph or changes the result's type.
PYTHON_NUMBER_CALLS = {"min", "max", "int", "float", "bool", "round", "range", "len", "str", "abs", "divmod", "pow", "format", "print", "isinstance"}
ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power)


def _self_attribute(node: cst.CSTNode, attr: str, receiver: str = "self") -> bool:
    return (
        isinstance(node, cst.Attribute)
        and node.attr.value == attr
        and isinstance(node.value, cst.Name)
        and node.value.value == receiver
    )


def _int_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, cst.Integer)


def _is_super_init(statement: cst.CSTNode) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return False
    func = small.value.func
    return isinstance(func, cst.Attribute) and func.attr.value == "__init__" and (
        (isinstance(func.value, cst.Call) and dotted(func.value.func) == "super") or dotted(func.value).endswith("Module")
    )


class ModuleBuffer(Fixer):
    name = "module-buffer"
    codes = ("RCL104",)
    safe = False
    summary = (
        "registers the int attribute as a buffer (`self.register_buffer(\"step\", torch.tensor(0), persistent=False)`) "
        "and updates it in place (`self.step.add_(1)`, `.fill_(v)`), when the class reads it only in arithmetic"
    )
    why = "code that reads the attribute gets a 0-d tensor instead of an int (prints, comparisons outside the compiled code), and the buffer follows `.to(device)`"

    def title(self, finding: Finding) -> str:
        name = finding.subject.name if finding.subject is not None else "the attribute"
        return f"Make `{name}` a buffer updated in place (reads elsewhere get a tensor)"

    def rewrite(self, finding: Finding, text: str, read: Reader) -> dict[str, str] | None:
        subject = finding.subject
        if subject is None or subject.kind != "instance-attribute" or subject.value_kind != "int" or not subject.owner:
            return None
        attr, owner = subject.name, subject.owner.rsplit(".", 1)[-1]
        wrapper = MetadataWrapper(parse(text), unsafe_skip_copy=True)
        module = wrapper.module
        positions = wrapper.resolve(PositionProvider)
        parents = wrapper.resolve(ParentNodeProvider)
        classes = [s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == owner]
        if len(classes) != 1:
            return None
        cls = classes[0]
        init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
        if init is None or not isinstance(init.body, cst.IndentedBlock):
            return None
        initial = None
        seen_super = False
        for statement in init.body.body:
            if _is_super_init(statement):
                seen_super = True
            if (
                isinstance(statement, cst.SimpleStatementLine)
                and len(statement.body) == 1
                and isinstance(statement.body[0], cst.Assign)
                and len(statement.body[0].targets) == 1
                and _self_attribute(statement.body[0].targets[0].target, attr)
            ):
                if initial is not None or not seen_super or not _int_literal(statement.body[0].value):
                    return None
                initial = statement
        if initial is None:
            return None
        torch = torch_import(module)
        if torch is None:
            return None
        torch_name = torch[1]

        replacements: dict[cst.CSTNode, cst.CSTNode] = {}
        value_code = module.code_for_node(initial.body[0].value)
        replacements[initial.body[0]] = cst.parse_statement(
            f'self.register_buffer("{attr}", {torch_name}.tensor({value_code}), persistent=False)\n'
        ).body[0]

        # Every use of ``self.<attr>`` in the class: updates rewritten, reads checked.
        found: list[cst.Attribute] = []

        class Uses(cst.CSTVisitor):
            def visit_Attribute(self, node: cst.Attribute) -> None:
                if _self_attribute(node, attr):
                    found.append(node)

        cls.visit(Uses())
        for node in found:
            parent = parents[node]
            if isinstance(parent, cst.AssignTarget):
                statement = parents[parent]
                if statement is initial.body[0]:
                    continue
                if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
                    return None
                replacements[statement] = _method_call(node, "fill_", statement.value)
            elif isinstance(parent, cst.AugAssign) and parent.target is node:
                method = {cst.AddAssign: "add_", cst.SubtractAssign: "sub_"}.get(type(parent.operator))
                if method is None:
                    return None
                replacements[parent] = _method_call(node, method, parent.value)
            elif not _arithmetic_read(node, parents):
                return None
        # The finding's writes in this file from outside the class (``model.step = i``).
        for location in finding.evidence:
            if location.role != "write" or not same_file(location.path, finding.path):
                continue
            span = positions[cls]
            if span.start.line <= location.line <= span.end.line:
                continue
            statement = _write_at(module, positions, location.line, attr)
            if statement is None:
                return None
            replacements[statement[0]] = statement[1]
        new_module = module.visit(_Replace(replacements))
        return {finding.path: new_module.code}


def _method_call(target: cst.Attribute, method: str, value: cst.BaseExpression) -> cst.Expr:
    return cst.Expr(cst.Call(func=cst.Attribute(value=target, attr=cst.Name(method)), args=[cst.Arg(value=value)]))


def _arithmetic_read(node: cst.CSTNode, parents) -> bool:
    """Whether a read sits in arithmetic only, up to its statement."""
    child, parent = node, parents[node]
    if not isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
        return False
    while not isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
        if isinstance(parent, cst.BinaryOperation) and not isinstance(parent.operator, ARITHMETIC):
            return False
        if isinstance(parent, (cst.Comparison, cst.BooleanOperation, cst.IfExp, cst.Subscript, cst.SubscriptElement, cst.FormattedString, cst.Lambda)):
            return False
        if isinstance(parent, cst.Call) and child is not parent.func:
            name = dotted(parent.func)
            if name in PYTHON_NUMBER_CALLS or name.startswith("math."):
                return False
        if isinstance(parent, (cst.If, cst.While)):
            return False
        child, parent = parent, parents[parent]
    return not isinstance(parent, (cst.If, cst.While, cst.Assert))


def _write_at(module: cst.Module, positions, line: int, attr: str) -> tuple[cst.CSTNode, cst.CSTNode] | None:
    """(the ``x.<attr> = v`` or ``x.<attr> += v`` statement on ``line``, its in-place form)."""
    out: list[tuple[cst.CSTNode, cst.CSTNode]] = []

    class Writes(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if positions[node].start.line == line and len(node.targets) == 1:
                target = node.targets[0].target
                if isinstance(target, cst.Attribute) and target.attr.value == attr and isinstance(target.value, cst.Name):
                    out.append((node, _method_call(target, "fill_", node.value)))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            method = {cst.AddAssign: "add_", cst.SubtractAssign: "sub_"}.get(type(node.operator))
            target = node.target
            if positions[node].start.line == line and method and isinstance(target, cst.Attribute) and target.attr.value == attr and isinstance(target.value, cst.Name):
                out.append((node, _method_call(target, method, node.value)))

    module.visit(Writes())
    return out[0] if len(out) == 1 else None


class _Replace(cst.CSTTransformer):
    def __init__(self, replacements: dict[cst.CSTNode, cst.CSTNode]) -> None:
        self.replacements = replacements

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> cst.CSTNode:
        return self.replacements.get(original_node, updated_node)
