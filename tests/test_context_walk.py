"""The rules' walks over libcst trees go through the nodes exactly as libcst's own visit does,
and the positions they report are libcst's.

``context.child_nodes`` reads a node's children from its fields, in the order libcst's visit
takes them (learnt per node class), instead of letting libcst build a copy of the node; these
tests hold it to libcst's ``children`` and ``visit`` on every node of real code, and
``context.positions_of`` to ``MetadataWrapper.resolve(PositionProvider)``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from recompile_lint.analysis import context
from recompile_lint.analysis.context import QuickVisitor, child_nodes, positions_of

REPO = Path(__file__).resolve().parent.parent
# Code with every kind of statement and expression the rules meet: the fixtures, the
# rules, and syntax that neither may use (match, walrus, star expressions, f-strings...).
SOURCES = sorted(REPO.glob("fixtures/**/*.py")) + sorted((REPO / "recompile_lint" / "rules").glob("*.py"))
EXTRA = '''
plain = f"{a}"  # an f-string expression without a format spec comes first
import a.b as c, d
from .e import (f as g, h)
async def k(p, /, q: int = 1, *r, s, t=2, **u) -> "v":
    global w
    x = [y async for y in z if y if not y] ; x += 1
    async with l as (m, n), o:
        await m
    async for i in j:
        yield i
    match x:
        case [1, *rest] | {"k": _, **kw} if rest:
            pass
        case Point(x=0, y=yy) as pt:
            del pt
        case _:
            raise ValueError("no") from None
    try:
        pass
    except* (TypeError, KeyError) as e:
        print(f"{e!r:>{width}} {x = }", *x, sep="", **kw)
    else:
        assert x, "y"
    finally:
        nonlocal_ = lambda a, *b, c=1, **d: (a, b, c, d)
    while (n := len(x)) > 1:
        x = x[1:-1:2], x[...], {**kw}, {1, 2}, {k: v for k, v in kw.items()}, (i for i in x)
        continue
    else:
        break
    return x if x else ~-x @ x ** 2 // 3 % 4 << 5 >> 6 & 7 | 8 ^ 9 and not x or x is not None
class C(B, metaclass=M):
    @decorated(1)
    def method(self): ...
    t: list[int] = []
'''


@pytest.fixture(scope="module")
def trees() -> list[cst.Module]:
    return [cst.parse_module(EXTRA)] + [cst.parse_module(path.read_text(encoding="utf-8")) for path in SOURCES]


@pytest.fixture(autouse=True)
def nothing_learnt(monkeypatch):
    # Each test learns the field orders from its own corpus, in its order.
    for name in ("_FIELD_ORDER", "_NONE_DEPENDENT"):
        monkeypatch.setattr(context, name, {})


def test_child_nodes_are_libcsts_children_in_its_order(trees):
    checked = set()
    for module in trees:
        stack: list[cst.CSTNode] = [module]
        while stack:
            node = stack.pop()
            expected = list(node.children)
            got = child_nodes(node)
            assert [id(child) for child in got] == [id(child) for child in expected], type(node).__name__
            checked.add(type(node))
            stack.extend(expected)
    # The corpus reaches far enough to mean something.
    assert {cst.Match, cst.NamedExpr, cst.FormattedString, cst.TryStar, cst.Lambda, cst.ClassDef} <= checked
    assert len(checked) > 120


class Order(QuickVisitor):
    """Every node visited and left, in order; calls and lambdas are not entered."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.events.append(("visit", id(node)))
        return not isinstance(node, (cst.Call, cst.Lambda))

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.events.append(("leave", id(original_node)))


@pytest.fixture
def deep_recursion():
    # libcst's visit and codegen take about four frames per level of nesting (long ``+`` chains).
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    yield
    sys.setrecursionlimit(limit)


def test_quick_visitor_walk_is_libcsts_visit(trees, deep_recursion):
    for module in trees:
        by_libcst, by_walk = Order(), Order()
        module.visit(by_libcst)
        by_walk.walk(module)
        assert by_walk.events == by_libcst.events


def test_positions_are_libcsts(trees, deep_recursion):
    for module in trees[::3]:  # a third of the corpus: the other syntax repeats
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        assert dict(positions_of(wrapper)) == dict(wrapper.resolve(PositionProvider))


def test_nodes_of_is_an_isinstance_filter_of_the_body(monkeypatch):
    from recompile_lint.config import Config
    from recompile_lint.engine import lint_paths

    contexts = []

    class Recorded(context.FunctionContext):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            contexts.append(self)

    monkeypatch.setattr(context, "FunctionContext", Recorded)
    lint_paths([str(REPO / "fixtures" / "rcl2xx"), str(REPO / "fixtures" / "rcl1xx")], Config(cache=False))
    assert len(contexts) > 20
    kinds = [(cst.Call,), (cst.If, cst.While, cst.IfExp), (cst.BaseSmallStatement, cst.Name), (cst.BaseExpression,)]
    for ctx in contexts:
        for types in kinds:
            assert ctx.nodes_of(*types) == tuple(node for node in ctx.body_nodes() if isinstance(node, types))
