"""Literal constants of parameters: what a call binds, which ``if`` tests they decide.

Dynamo bakes a constant argument into the trace and traces only the branch a test on it
takes. The region reach (``regions``) and the guard model (``guards``) share these helpers:
``literal_of`` reads an argument, ``_passed_constants`` what every call of a function binds,
``unassigned`` which of them still hold at a test, ``constant_truth`` the test's outcome.
"""

from __future__ import annotations

import ast

from recompile_lint.analysis.facts import FunctionFacts
from recompile_lint.analysis.index import Stores


class _NotConstant:
    def __repr__(self) -> str:
        return "NOT_CONSTANT"


NOT_CONSTANT = _NotConstant()  # what a value that is no known literal is


class _NotNone:
    def __repr__(self) -> str:
        return "NOT_NONE"


# A value known only not to be None (``x.size(0)``, ``2.5``, ``[a, b]``, ``n + 1``): it decides
# ``p is None`` / ``p is not None``, nothing else.
NOT_NONE = _NotNone()


def constant_truth(test: ast.expr, constants: dict[str, object]) -> bool | None:
    """Whether ``test`` holds given parameters known to be constants (``flag``, ``not flag``,
    ``x is None``, ``mode == "eval"``, ``and`` / ``or`` of those); None when it is not known."""
    value = _constant_value(test, constants)
    if value is NOT_CONSTANT or value is NOT_NONE:
        return None
    try:
        return bool(value)
    except Exception:  # noqa: BLE001 - a constant whose truth raises: not known
        return None


def _constant_value(node: ast.expr, constants: dict[str, object]) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id, NOT_CONSTANT)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        # ``self.flag``: an attribute every instance holds at one constant (``constructed``).
        return constants.get(f"{node.value.id}.{node.attr}", NOT_CONSTANT)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = constant_truth(node.operand, constants)
        return NOT_CONSTANT if inner is None else not inner
    if isinstance(node, ast.BoolOp):
        truths = [constant_truth(value, constants) for value in node.values]
        if isinstance(node.op, ast.And):
            return False if False in truths else (True if all(t is True for t in truths) else NOT_CONSTANT)
        return True if True in truths else (False if all(t is False for t in truths) else NOT_CONSTANT)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left = _constant_value(node.left, constants)
        right = _constant_value(node.comparators[0], constants)
        if left is NOT_CONSTANT or right is NOT_CONSTANT:
            return NOT_CONSTANT
        op = node.ops[0]
        if left is NOT_NONE or right is NOT_NONE:
            if isinstance(op, (ast.Is, ast.IsNot)) and None in (left, right):
                return isinstance(op, ast.IsNot)  # ``p is None`` of a value that is not None
            return NOT_CONSTANT
        if isinstance(op, ast.Is):
            return left is right
        if isinstance(op, ast.IsNot):
            return left is not right
        if isinstance(op, (ast.Eq, ast.NotEq)) and type(left) is type(right):
            return (left == right) is isinstance(op, ast.Eq)
    return NOT_CONSTANT


def literal_constant(text: str) -> object:
    """The constant a literal's source text denotes (``None``, ``True``, ``3``, ``"eval"``),
    else ``NOT_CONSTANT``."""
    try:
        return literal_of(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return NOT_CONSTANT


# Tensor methods that return a size or a count (an int, never None).
_SIZE_METHODS = frozenset({"size", "dim", "ndimension", "numel", "nelement", "element_size"})


def literal_of(node: ast.expr) -> object:
    """The value of a constant argument (``True``, ``None``, ``3``, ``"eval"``); ``NOT_NONE`` for
    an expression that cannot be None (another literal, a display or comprehension, a lambda,
    arithmetic, an f-string, ``len()``, a tensor's size: ``x.size(0)``, ``x.shape[1]``); else
    unknown."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, (bool, int, str, type(None))) else NOT_NONE
    if isinstance(node, (ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda, ast.BinOp)):
        return NOT_NONE
    if isinstance(node, ast.UnaryOp):
        return NOT_NONE if literal_of(node.operand) is not NOT_CONSTANT or isinstance(node.op, ast.Not) else NOT_CONSTANT
    if isinstance(node, ast.Call) and not node.keywords:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "len" or isinstance(func, ast.Attribute) and func.attr in _SIZE_METHODS:
            return NOT_NONE
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
        return NOT_NONE
    return NOT_CONSTANT


def _passed_constants(calls: list[ast.Call], target: FunctionFacts, own: dict[str, object] | None = None, stores: Stores | None = None) -> dict[str, object]:
    """The parameters of ``target`` that every one of ``calls`` binds to the same constant:
    a literal argument, one of the caller's own parameters that holds a constant there
    (``own``: ``triangulate(..., assume_convex=True)`` passing ``assume_convex=assume_convex``
    on), or a literal default the call leaves (a call that spreads ``*args`` or ``**kwargs``
    may pass anything)."""
    if not calls:
        return {}

    def passed_value(arg: ast.expr, call: ast.Call) -> object:
        found = literal_of(arg)
        if found is NOT_CONSTANT and own and stores is not None and isinstance(arg, ast.Name) and arg.id in own:
            return unassigned({arg.id: own[arg.id]}, stores, call).get(arg.id, NOT_CONSTANT)
        if found is NOT_CONSTANT and own and isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name):
            return own.get(f"{arg.value.id}.{arg.attr}", NOT_CONSTANT)  # ``f(x, self.flag)``
        return found

    bound_method = bool(target.params) and target.params[0].kind == "positional" and bool(target.class_name) and "staticmethod" not in target.decorators
    out: dict[str, object] | None = None
    for call in calls:
        params = list(target.params)
        if bound_method and not _explicit_receiver(call):
            # Reached as a bound method, a module's forward or a classmethod (``self.head(x)``,
            # ``block(x, False)`` on a local instance): the receiver is no argument of the call.
            params = params[1:]
        spread = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
        positional = [p for p in params if p.kind == "positional"]
        bound: dict[str, object] = {}
        for param, arg in zip(positional, call.args):
            if isinstance(arg, ast.Starred):
                break
            bound[param.name] = passed_value(arg, call)
        for keyword in call.keywords:
            if keyword.arg is not None:
                bound[keyword.arg] = passed_value(keyword.value, call)
        if not spread:
            for param in params:
                if param.name not in bound and param.default and param.kind in ("positional", "keyword"):
                    bound[param.name] = literal_constant(param.default)
        known = {name: value for name, value in bound.items() if value is not NOT_CONSTANT}
        if out is None:
            out = known
            continue
        merged: dict[str, object] = {}
        for name, value in out.items():
            if name not in known:
                continue
            if _same(known[name], value):
                merged[name] = value
            elif known[name] is not None and value is not None:
                merged[name] = NOT_NONE  # two values, neither None: still not None
        out = merged
    return out or {}


def _explicit_receiver(call: ast.Call) -> bool:
    """``Base.forward(self, x)``: a method called through its class with the receiver first."""
    func, first = call.func, call.args[0] if call.args else None
    return (isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"))
            and isinstance(first, ast.Name) and first.id in ("self", "cls"))


def _same(a: object, b: object) -> bool:
    return type(a) is type(b) and a == b


def unassigned(constants: dict[str, object], stores: Stores, at: ast.AST) -> dict[str, object]:
    """The constants whose parameter still holds what the call passed at ``at`` (a test):
    the function stores it (``FunctionTrees.rebound``: an assignment, a loop target, ``del``)
    nowhere before it and nowhere in a loop around it. ``if p is None: p = default`` stores
    after its own test; ``p = p or default`` before a later one."""
    return {name: value for name, value in constants.items() if stores.held_at(name, at)} if constants else constants
