"""The value flow answers what names, attributes and calls hold, for each source it follows,
and says why when it cannot (the region finder and the guard model build on these answers)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from recompile_lint.analysis.facts import collect_facts
from recompile_lint.analysis.index import FactsStore, FunctionRef, ProjectIndex
from recompile_lint.analysis.valueflow import KINDS, UNKNOWN_REASONS, Value, ValueFlow

PROJECT = {
    "pyproject.toml": "",
    "zoo/__init__.py": """
        from .models import GPT, Block, Head, build_model
        from .registry import MODELS
    """,
    "zoo/models.py": """
        import torch
        from torch import nn


        class Block(nn.Module):
            def __init__(self, dim: int, idx: int) -> None:
                super().__init__()
                self.proj = nn.Linear(dim, dim)
                self.idx = idx

            def forward(self, x):
                return self.proj(x)


        class Head(nn.Module):
            def forward(self, x):
                return x


        class GPT(nn.Module):
            kind = "decoder"

            def __init__(self, dim: int = 8, depth: int = 2) -> None:
                super().__init__()
                self.layers = nn.ModuleList([Block(dim, i) for i in range(depth)])
                self.stack = nn.Sequential(Block(dim, 0), Head())
                self.heads = nn.ModuleDict({"lm": Head()})
                self.extra = []
                self.extra.append(Head())

            @classmethod
            def from_config(cls, config):
                return cls(config["dim"])

            @property
            def first(self):
                return self.layers[0]

            def setup(self):
                self.opt = torch.optim.AdamW(self.parameters())

            def forward(self, x):
                return x


        def build_model(config):
            model = GPT(config["dim"])
            return model.to("cpu")


        def pair():
            return GPT(), torch.optim.SGD([], lr=0.1)
    """,
    "zoo/registry.py": """
        from .models import GPT, Head

        MODELS = {"gpt": GPT, "head": Head}
    """,
    "train.py": """
        import functools
        from functools import partial

        import numpy
        import torch
        import torch.nn.functional as F
        from torch.nn.attention.flex_attention import flex_attention

        import zoo
        from zoo import MODELS, GPT, build_model
        from zoo.models import pair


        def decorate(fn):
            return fn


        @decorate
        def step_fn(x):
            return x


        def helper(model):
            return model


        def main(args, config):
            model = build_model(config)
            annotated: torch.nn.Module = GPT()
            net, opt = pair()
            if (fresh := GPT()) is not None:
                pass
            from_cls = GPT.from_config(config)
            by_key = MODELS["gpt"](8)
            by_get = MODELS.get("head")()
            via_getattr = getattr(model, "layers")
            partial_fn = partial(build_model, config=config)
            bound = model.forward
            for layer in model.layers:
                pass
            for name, child in model.layers.named_children():
                pass
            for i, block in enumerate(model.layers):
                pass
            blocks = [b for b in model.layers]
            helper(model)
            external = numpy.zeros(3)
            dynamic = getattr(model, args.name)
            orig = model
            model = torch.compile(model)
            return model
    """,
    "mixins.py": """
        from torch import nn

        from zoo import GPT


        class CompileMixin:
            model_class = None

            def build(self):
                return self.model_class()


        class GPTTests(CompileMixin):
            model_class = GPT
    """,
    "factory.py": """
        import torch


        def compiled(**options):
            def decorate(fn):
                return torch.compile(fn, **options)

            return decorate


        @compiled(dynamic=False)
        def loss(x):
            return x
    """,
}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("project")
    for name, text in PROJECT.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


@pytest.fixture(scope="module")
def flow(project: Path) -> ValueFlow:
    files = [str(p) for p in project.rglob("*.py")]
    return ValueFlow(ProjectIndex(files, FactsStore()))


def facts_of(flow: ValueFlow, project: Path, name: str):
    facts = flow.index.facts(str(project / name))
    assert facts is not None
    return facts


def values(flow: ValueFlow, project: Path, expr: str, file: str = "train.py", scope: str | None = "main") -> frozenset[Value]:
    facts = facts_of(flow, project, file)
    return flow.values_of(expr, facts, facts.function(scope) if scope else None)


def refs(found: frozenset[Value], kind: str | None = None) -> set[str]:
    return {v.ref for v in found if kind is None or v.kind == kind}


def test_constructor_and_factory_across_modules(flow, project):
    # build_model() returns ``model.to("cpu")``: ``to`` returns its receiver.
    assert refs(values(flow, project, "model"), "instance") == {"zoo.models.GPT"}
    assert refs(values(flow, project, "build_model(config)"), "instance") == {"zoo.models.GPT"}


def test_annotated_tuple_and_walrus_assignments(flow, project):
    assert refs(values(flow, project, "annotated")) == {"zoo.models.GPT"}
    assert refs(values(flow, project, "net")) == {"zoo.models.GPT"}
    assert values(flow, project, "opt") == frozenset({Value("torch-instance", ref="torch.optim.SGD")})
    assert refs(values(flow, project, "fresh")) == {"zoo.models.GPT"}


def test_classmethod_constructor_and_registry_with_literal_keys(flow, project):
    assert refs(values(flow, project, "from_cls"), "instance") == {"zoo.models.GPT"}
    assert refs(values(flow, project, "by_key"), "instance") == {"zoo.models.GPT"}
    # Only the looked-up entry, not every class of the registry.
    assert refs(values(flow, project, "by_get"), "instance") == {"zoo.models.Head"}


def test_self_attributes_from_any_method_and_class_attributes(flow, project):
    gpt = next(iter(values(flow, project, "model")))
    assert flow.attribute_values(gpt, "opt") == frozenset({Value("torch-instance", ref="torch.optim.AdamW")})
    assert refs(flow.attribute_values(gpt, "kind")) == {""}
    assert {v.detail for v in flow.attribute_values(gpt, "kind")} == {"str:'decoder'"}
    # A property holds what it returns.
    assert refs(flow.attribute_values(gpt, "first")) == {"zoo.models.Block"}


def test_container_elements(flow, project):
    gpt = next(iter(values(flow, project, "model")))
    (layers,) = flow.attribute_values(gpt, "layers")
    assert layers.kind == "container" and layers.ref == "torch.nn.ModuleList"
    assert refs(flow.element_values(layers)) == {"zoo.models.Block"}
    (stack,) = flow.attribute_values(gpt, "stack")
    assert stack.ref == "torch.nn.Sequential" and stack.detail == "exact"
    assert refs(flow.element_values(stack, 1)) == {"zoo.models.Head"}
    (heads,) = flow.attribute_values(gpt, "heads")
    assert heads.keys == ("lm",) and refs(flow.element_values(heads, "lm")) == {"zoo.models.Head"}
    # ``self.extra.append(Head())`` in __init__ adds to the list.
    assert refs(flow.element_values(next(iter(flow.attribute_values(gpt, "extra"))))) == {"zoo.models.Head"}


def test_loop_and_comprehension_targets(flow, project):
    for name in ("layer", "child", "block"):
        assert refs(values(flow, project, name)) == {"zoo.models.Block"}, name
    assert {v.detail for v in values(flow, project, "i")} == {"int:"}
    (blocks,) = values(flow, project, "blocks")
    assert refs(flow.element_values(blocks)) == {"zoo.models.Block"}


def test_getattr_with_a_literal_and_with_a_computed_name(flow, project):
    assert {v.ref for v in values(flow, project, "via_getattr")} == {"torch.nn.ModuleList"}
    assert values(flow, project, "dynamic") == frozenset({Value("unknown", detail="dynamic")})


def test_partial_bound_method_and_decorated_function(flow, project):
    (partial_fn,) = values(flow, project, "partial_fn")
    assert partial_fn.kind == "partial" and partial_fn.ref == "zoo.models.build_model" and partial_fn.detail == "config=config"
    assert flow.function_ref(partial_fn) == FunctionRef(str(project / "zoo/models.py"), "build_model")
    (bound,) = values(flow, project, "bound")
    assert bound.kind == "bound-method" and bound.ref == "zoo.models.GPT.forward"
    assert bound.elements[1].ref == "zoo.models.GPT"
    # A decorated def holds the function itself.
    assert values(flow, project, "step_fn", scope=None) == frozenset({Value("function", ref="train.step_fn", path=str(project / "train.py"))})


def test_flow_insensitive_rebinding_keeps_every_binding(flow, project):
    # ``model = torch.compile(model)`` holds what ``model`` held: ``orig`` and ``model`` agree.
    assert values(flow, project, "orig") == values(flow, project, "model")


def test_parameters_from_their_call_sites(flow, project):
    facts = facts_of(flow, project, "train.py")
    assert refs(flow.parameter_values(facts, facts.function("helper"), "model")) == {"zoo.models.GPT"}
    # A decorator factory's decorator is called where ``@compiled(...)`` is applied.
    other = facts_of(flow, project, "factory.py")
    assert refs(flow.parameter_values(other, other.function("compiled.decorate"), "fn")) == {"factory.loss"}


def test_self_in_a_base_class_may_be_a_subclass(flow, project):
    facts = facts_of(flow, project, "mixins.py")
    assert refs(flow.values_of("self.model_class()", facts, facts.function("CompileMixin.build")), "instance") == {"zoo.models.GPT"}


def test_torch_objects(flow, project):
    assert values(flow, project, "F.scaled_dot_product_attention") == frozenset({Value("torch-callable", ref="torch.nn.functional.scaled_dot_product_attention")})
    assert values(flow, project, "flex_attention") == frozenset({Value("torch-callable", ref="torch.nn.attention.flex_attention.flex_attention")})
    (step,) = values(flow, project, "opt.step")
    assert step.kind == "bound-method" and step.ref == "torch.optim.SGD.step" and step.elements[1].ref == "torch.optim.SGD"
    assert values(flow, project, "torch.zeros(3)") == frozenset({Value("tensor")})


def test_unknown_values_say_why(flow, project):
    assert {v.detail for v in values(flow, project, "external")} == {"external"}
    assert {v.detail for v in values(flow, project, "args")} == {"parameter"}
    assert {v.detail for v in values(flow, project, "nowhere")} == {"unbound"}
    assert {v.detail for v in values(flow, project, "args.fn()")} <= set(UNKNOWN_REASONS)


def test_callees_function_ref_and_class_of(flow, project):
    facts = facts_of(flow, project, "train.py")
    models = str(project / "zoo/models.py")
    assert flow.callees("build_model(config)", facts, facts.function("main")) == (FunctionRef(models, "build_model"),)
    # Calling an instance runs its forward; calling a class runs __init__.
    assert flow.callees("net(x)", facts, facts.function("main")) == (FunctionRef(models, "GPT.forward"),)
    assert flow.callees("GPT()", facts, facts.function("main")) == (FunctionRef(models, "GPT.__init__"),)
    found = flow.class_of(next(iter(values(flow, project, "model"))))
    assert found is not None and found[1].name == "GPT"


def test_every_value_kind_is_declared(flow, project):
    seen = set()
    for expr in ("model", "GPT", "build_model", "opt", "opt.step", "partial_fn", "F.relu", "zoo", "1", "torch.ones(1)", "model.layers", "external", "bound"):
        seen |= {v.kind for v in values(flow, project, expr)}
    assert seen <= KINDS
    assert {"instance", "class", "function", "bound-method", "partial", "torch-callable", "torch-instance", "module", "literal", "tensor", "container", "unknown"} <= seen


def test_flows_recorded_by_the_facts_pass():
    text = textwrap.dedent(
        """
        class A:
            size = 3

            def __init__(self):
                self.layers = []
                for i in range(3):
                    self.layers.append(B(i))
                a, (b, *c) = f()
                setattr(self, "k", 3)
                table["k"] = Foo
                return self.layers
        """
    )
    facts = collect_facts(ast.parse(text), "a.py", "a", False, text)
    init = facts.function("A.__init__")
    assert [(target, how) for target, how, *_ in init.flows] == [
        ("self.layers", "="),
        ("i", "iter"),
        ("self.layers", "elem"),
        ("a", "0"),
        ("b", "1.0"),
        ("c", "1.*"),
        ("self.k", "="),
        ("table", "elem:k"),
    ]
    assert len(init.returns) == 1
    assert [(target, how) for target, how, *_ in facts.cls("A").flows] == [("size", "=")]


def test_answers_do_not_depend_on_the_order_of_questions(project):
    """Cycles (``model = torch.compile(model)``) are cut: what was computed inside one must
    not be kept as the answer of a later, different question."""
    questions = ["model", "orig", "net", "layer", "child", "block", "by_key", "by_get", "via_getattr", "bound", "from_cls", "blocks"]
    files = [str(p) for p in project.rglob("*.py")]

    def ask(order: list[str]) -> dict[str, frozenset[Value]]:
        flow = ValueFlow(ProjectIndex(files, FactsStore()))
        return {q: values(flow, project, q) for q in order}

    assert ask(questions) == ask(list(reversed(questions)))


def test_a_question_past_its_steps_is_cut_and_keeps_nothing(tmp_path, monkeypatch):
    """A question answers at most ``MAX_QUESTION_STEPS`` open questions of its own: past that
    the rest is unknown (``depth``), and nothing it computed is kept, so a later question with
    steps to spare gets the whole answer."""
    from recompile_lint.analysis import valueflow

    functions = []
    for i in range(6):
        calls = ", ".join(f"f{j}(b, a)" for j in range(6) if j != i)
        functions.append(f"def f{i}(a, b):\n    if a:\n        return a\n    return ({calls})\n")
    (tmp_path / "m.py").write_text("\n".join(functions) + "\ndef main():\n    out = f0(1, 2)\n")

    def ask() -> tuple[ValueFlow, frozenset[Value]]:
        flow = ValueFlow(ProjectIndex([str(tmp_path / "m.py")], FactsStore()))
        facts = flow.index.facts(str(tmp_path / "m.py"))
        return flow, flow.values_of("out", facts, facts.function("main"))

    _, whole = ask()
    assert not any(v.kind == "unknown" and v.detail == "depth" for v in whole)
    monkeypatch.setattr(valueflow, "MAX_QUESTION_STEPS", 2)
    flow, cut = ask()
    assert flow._spent and cut == valueflow.SPENT
    monkeypatch.setattr(valueflow, "MAX_QUESTION_STEPS", 1_000)
    facts = flow.index.facts(str(tmp_path / "m.py"))
    assert flow.values_of("out", facts, facts.function("main")) == whole
