"""Function-identity rules (RCL401-RCL404) and RCL901: the cases their examples do not show."""

from __future__ import annotations

from helpers import lint_snippet
from recompile_lint.config import Config
from recompile_lint.models import Boundedness, Guard, Severity


def only(code: str) -> Config:
    return Config(select=(code,), cache=False)


# ---- RCL401 varying-callable-argument ------------------------------------------------------


def test_rcl401_names_call_sites_and_subject(tmp_path):
    result = lint_snippet(
        tmp_path,
        """
        import torch


        @torch.compile
        def apply(fn, x: torch.Tensor) -> torch.Tensor:
            return fn(x) + 1


        def run(x):
            apply(torch.sin, x)
            apply(torch.cos, x)
        """,
        config=only("RCL401"),
    )
    [finding] = result.findings
    assert (finding.line, finding.severity, finding.bounded) == (6, Severity.WARNING, Boundedness.BOUNDED)
    assert "torch.sin" in finding.message and "torch.cos" in finding.message and "2 graphs" in finding.message
    assert finding.subject is not None and finding.subject.kind == "callable" and finding.subject.name == "fn"
    assert set(finding.subject.examples) == {"torch.sin", "torch.cos"}
    # Builtins are checked by their own identity, not a code object.
    assert finding.guard == Guard("ID_MATCH", "L['fn']")


CALLABLE_PAIR = """
import torch
import torch.nn.functional as F


def halve(t):
    return t / 2


@torch.compile
def per_column(loss, pred, target):
    return loss(pred, target, reduction="none").mean(0)


def run(pred, target):
    per_column(F.smooth_l1_loss, pred, target)
    per_column(SECOND, pred, target)
"""


def test_rcl401_guard_is_the_code_object_for_python_functions(tmp_path):
    result = lint_snippet(tmp_path, CALLABLE_PAIR.replace("SECOND", "F.mse_loss"), config=only("RCL401"))
    [finding] = result.findings
    assert finding.guard == Guard("ID_MATCH", "L['loss'].__code__")
    result = lint_snippet(tmp_path, CALLABLE_PAIR.replace("SECOND", "halve"), config=only("RCL401"))
    [finding] = result.findings
    assert finding.guard == Guard("ID_MATCH", "L['loss'].__code__")



PARTIAL_FACTORY = """
from functools import partial

import torch


def scale(logits, temperature):
    return logits / temperature


def strategy(name):
    table = {"precise": 0.3, "creative": 1.3}
    return partial(scale, temperature=TEMPERATURE)


@torch.compile
def probs(logits, transform):
    return transform(logits).softmax(-1)


def serve(requests):
    presets = ["precise", "creative"]
    for i in range(requests):
        probs(torch.randn(1, 4), strategy(ARGUMENT))
"""


def test_rcl401_follows_a_factory_returning_a_partial_built_per_iteration(tmp_path):
    source = PARTIAL_FACTORY.replace("TEMPERATURE", "table[name]").replace("ARGUMENT", "presets[i % 2]")
    [finding] = lint_snippet(tmp_path, source, config=only("RCL401")).findings
    assert (finding.line, finding.severity) == (17, Severity.WARNING)
    assert finding.guard == Guard("CONSTANT_MATCH", "L['transform'].keywords['temperature']")


def test_rcl401_factory_partial_with_a_fixed_keyword_or_argument_is_silent(tmp_path):
    # The same preset every iteration: one stored value, one graph.
    source = PARTIAL_FACTORY.replace("TEMPERATURE", "table[name]").replace("ARGUMENT", '"precise"')
    assert lint_snippet(tmp_path, source, config=only("RCL401")).findings == ()
    # The keyword does not depend on the factory's parameter.
    source = PARTIAL_FACTORY.replace("TEMPERATURE", "0.7").replace("ARGUMENT", "presets[i % 2]")
    assert lint_snippet(tmp_path, source, config=only("RCL401")).findings == ()


def test_rcl401_no_guard_predicted_when_a_builtin_and_a_function_mix(tmp_path):
    # Which check fails first then depends on which function compiled first.
    result = lint_snippet(tmp_path, CALLABLE_PAIR.replace("SECOND", "torch.sub"), config=only("RCL401"))
    [finding] = result.findings
    assert finding.guard is None


def test_rcl401_more_functions_than_the_limit_is_an_error(tmp_path):
    defs = "\n\n".join(f"def f{i}(t):\n    return t * {i}\n" for i in range(9))
    result = lint_snippet(
        tmp_path,
        "import torch\n\n"
        + defs
        + "\n\n@torch.compile\ndef apply(fn, x):\n    return fn(x)\n\n\ndef run(x):\n"
        + "".join(f"    apply(f{i}, x)\n" for i in range(9)),
        config=only("RCL401"),
    )
    [finding] = result.findings
    assert finding.severity is Severity.ERROR and finding.bounded is Boundedness.UNBOUNDED
    assert "9 of them" in finding.message


def test_rcl401_keyword_argument_and_method_entry(tmp_path):
    result = lint_snippet(
        tmp_path,
        """
        import torch


        class Head(torch.nn.Module):
            def forward(self, x, act=None):
                return act(x)


        head = torch.compile(Head())


        def run(x):
            head(x, act=torch.relu)
            head(x, act=torch.tanh)
        """,
        config=only("RCL401"),
    )
    assert [(f.line, f.code) for f in result.findings] == [(6, "RCL401")]


def test_rcl401_silent_when_the_callable_is_forwarded_or_unknown(tmp_path):
    result = lint_snippet(
        tmp_path,
        """
        import torch


        @torch.compile
        def apply(fn, x):
            return fn(x)


        def run(fn, x, table):
            apply(fn, x)  # a parameter of run: unknown here
            apply(table["act"], x)  # not a function we can name
            apply(torch.relu, x)
        """,
        config=only("RCL401"),
    )
    assert result.findings == ()


def test_rcl401_same_def_from_two_sites_is_one_graph(tmp_path):
    result = lint_snippet(
        tmp_path,
        """
        import torch


        def act(t):
            return t.relu()


        @torch.compile
        def apply(fn, x):
            return fn(x)


        def run(x, y):
            apply(act, x)
            apply(act, y)
            for _ in range(3):
                apply(lambda t: t * 2, x)
        """,
        config=only("RCL401"),
    )
    # ``act`` from two sites is one code object and the loop's lambda line another: 2 graphs.
    assert [(f.severity, f.bounded) for f in result.findings] == [(Severity.WARNING, Boundedness.BOUNDED)]
    assert "2 different functions" in result.findings[0].message


# ---- RCL402 compile-in-loop ----------------------------------------------------------------


def test_rcl402_module_level_int_is_unbounded_and_names_the_global(tmp_path):
    result = lint_snippet(
        tmp_path,
        """
        import torch

        x = torch.randn(4)
        for step in range(100):
            torch.compile(lambda t: t * step)(x)
        """,
        config=only("RCL402"),
    )
    [finding] = result.findings
    assert (finding.line, finding.severity, finding.bounded) == (5, Severity.ERROR, Boundedness.UNBOUNDED)
    assert "G['step']" in finding.message
    assert finding.subject is not None and (finding.subject.kind, finding.subject.name) == ("global", "step")


def test_rcl402_function_level_float_is_bounded(tmp_path):
    result = lint_snippet(
        tmp_path,
        """
        import torch


        def sweep(x):
            for lr in [0.1, 0.01, 0.001]:
                @torch.compile
                def update(p):
                    return p - lr * p

                update(x)
        """,
        config=only("RCL402"),
    )
    [finding] = result.findings
    assert (finding.severity, finding.bounded) == (Severity.WARNING, Boundedness.BOUNDED)
    assert "2 graphs" in finding.message and finding.subject.kind == "closure"


def test_rcl402_silent_without_a_captured_loop_variable_or_a_call_in_the_loop(tmp_path):
    result = lint_snippet(
        tmp_path,
        """
        import torch


        def run(x, items):
            for i in range(10):
                torch.compile(lambda t: t + 1)(x)  # reads nothing from the loop
            fns = [torch.compile(lambda t, k=k: t * k) for k in range(3)]  # a parameter, not a closure
            later = []
            for j in range(4):
                later.append(torch.compile(lambda t: t * j))  # called after the loop
            for item in items:
                torch.compile(lambda t: t * item)(x)  # unknown kind: could be a tensor
            return fns, later
        """,
        config=only("RCL402"),
    )
    assert result.findings == ()


# ---- RCL403 per-call-backend ---------------------------------------------------------------


def test_rcl403_reports_the_backend_expression_with_the_guard_text(tmp_path):
    result = lint_snippet(
        tmp_path,
        """
        import functools

        import torch


        def tuned(gm, inputs, level=0):
            return gm.forward


        def step(fn, x):
            return torch.compile(
                fn,
                backend=functools.partial(tuned, level=2),
            )(x)


        def train(fn, xs):
            for x in xs:
                step(fn, x)
        """,
        config=only("RCL403"),
    )
    [finding] = result.findings
    assert (finding.line, finding.column) == (13, 17)
    assert "BACKEND_MATCH" in finding.message and finding.severity is Severity.ERROR
    assert finding.guard == Guard("BACKEND_MATCH", "")
    assert finding.subject is not None and finding.subject.name == "backend"


def test_rcl403_local_variable_holding_a_lambda_and_decorator_in_loop(tmp_path):
    result = lint_snippet(
        tmp_path,
        """
        import torch


        def step(fn, x):
            be = lambda gm, inputs: gm.forward
            return torch.compile(fn, backend=be)(x)


        def sweep(x):
            for k in range(3):
                @torch.compile(backend=lambda gm, inputs: gm.forward)
                def f(t):
                    return t + 1

                f(x)


        def run(fn, xs):
            for x in xs:
                step(fn, x)
        """,
        config=only("RCL403"),
    )
    assert [f.line for f in result.findings] == [6, 11]


def test_rcl403_silent_for_shared_backends_and_unknown_factories(tmp_path):
    result = lint_snippet(
        tmp_path,
        """
        import torch

        BACKEND = lambda gm, inputs: gm.forward  # created once


        def get_backend(name):
            return name


        def step(fn, x):
            torch.compile(fn, backend=BACKEND)(x)
            torch.compile(fn, backend=get_backend("eager"))(x)  # a function call: unknown
            return torch.compile(fn, backend="inductor")(x)


        compiled = torch.compile(torch.sin, backend=lambda gm, inputs: gm.forward)  # module level, once
        """,
        config=only("RCL403"),
    )
    assert result.findings == ()


# ---- RCL404 graph-break-value --------------------------------------------------------------


def test_rcl404_tensor_casts_only_when_the_operand_is_a_tensor(tmp_path):
    result = lint_snippet(
        tmp_path,
        """
        import torch


        @torch.compile
        def f(x: torch.Tensor, n, scale: float):
            total = x.sum()
            a = int(total)
            b = float(x.mean() * 2)
            c = int(n)
            d = float(scale)
            e = int(x.size(0))
            g = int(len(x.shape))
            return x * a * b * c * d * e * g
        """,
        config=only("RCL404"),
    )
    assert [f.line for f in result.findings] == [7, 8]
    assert all(f.severity is Severity.WARNING and f.bounded is Boundedness.BOUNDED for f in result.findings)
    assert "capture_scalar_outputs" in result.findings[0].message


def test_rcl404_in_an_inlined_helper_names_the_region(tmp_path):
    result = lint_snippet(
        tmp_path,
        """
        import random as rnd

        import torch


        def jitter(x):
            return x * rnd.uniform(0.9, 1.1)


        @torch.compile
        def step(x: torch.Tensor):
            return jitter(x).sum()
        """,
        config=only("RCL404"),
    )
    [finding] = result.findings
    assert finding.line == 7 and finding.region.endswith("step") and "inlines" in finding.message


RCL404_OPTIONS = """
import time

import torch


def head(x, mask):
    n = mask.sum().item()
    started = time.time()
    return x * n + started


class Net(torch.nn.Module):
    def forward(self, x, mask):
        return head(x, mask)


model = torch.compile(Net(){options})
"""


def test_rcl404_follows_the_regions_dynamic_option(tmp_path):
    # The resume function is compiled with the region's options (measured on torch 2.13, 12
    # calls with new values): dynamic=False keeps the value a constant there (the limit), and
    # dynamic=True makes it symbolic from its first graph (no recompile).
    default = lint_snippet(tmp_path, RCL404_OPTIONS.format(options=""), config=only("RCL404"))
    assert [(f.line, f.severity, f.bounded) for f in default.findings] == [
        (7, Severity.WARNING, Boundedness.BOUNDED), (8, Severity.WARNING, Boundedness.BOUNDED)]
    fixed = lint_snippet(tmp_path, RCL404_OPTIONS.format(options=", dynamic=False"), config=only("RCL404"))
    assert [(f.line, f.severity, f.bounded) for f in fixed.findings] == [
        (7, Severity.ERROR, Boundedness.UNBOUNDED), (8, Severity.ERROR, Boundedness.UNBOUNDED)]
    assert "dynamic=False" in fixed.findings[0].message and "recompile_limit" in fixed.findings[0].message
    symbolic = lint_snippet(tmp_path, RCL404_OPTIONS.format(options=", dynamic=True"), config=only("RCL404"))
    assert list(symbolic.findings) == []
    # fullgraph=True leaves no resume function: `.item()` is traced, a clock raises at once.
    whole = lint_snippet(tmp_path, RCL404_OPTIONS.format(options=", dynamic=False, fullgraph=True"), config=only("RCL404"))
    assert list(whole.findings) == []


def test_rcl404_capture_scalar_outputs_in_the_running_script_silences_item_not_tolist(tmp_path):
    (tmp_path / "model.py").write_text(
        "import torch\n\n\n@torch.compile\ndef f(x):\n    v = x.max().item()\n    w = x.tolist()\n    return x / v + w[0]\n",
        encoding="utf-8",
    )
    (tmp_path / "train.py").write_text(
        "import torch\n\nfrom model import f\n\ntorch._dynamo.config.capture_scalar_outputs = True\nf(torch.randn(3))\n",
        encoding="utf-8",
    )
    (tmp_path / "other.py").write_text("import torch\n", encoding="utf-8")
    # A project marker: the analysis then sees the script beside the linted file.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    from recompile_lint.engine import lint_paths

    result = lint_paths([str(tmp_path / "model.py")], only("RCL404"))
    assert [(f.line, f.code) for f in result.findings] == [(7, "RCL404")]


def test_rcl404_in_code_only_the_first_call_runs_is_no_finding(tmp_path):
    # Measured on torch 2.13: the body of ``if "k" not in TABLE: TABLE["k"] = make()`` (or
    # ``if self.cache is None: self.cache = make()``) is traced at the first call only; the
    # fill fails the test's guard once, and no later graph traces the body or its break.
    result = lint_snippet(
        tmp_path,
        """
        import torch

        TABLE = {}


        def make():
            return torch.tensor(torch.linspace(0.1, 1, 3).tolist())


        def build(n):
            return torch.tensor(torch.linspace(0.1, 1, n).tolist())


        def cached():
            return torch.tensor(torch.linspace(0.2, 1, 3).tolist())


        def tabled():
            return torch.tensor(torch.linspace(0.3, 1, 3).tolist())


        class Holder:
            def __init__(self):
                self.cache = None

            def get(self, x):
                if self.cache is None:
                    self.cache = cached()
                return x + self.cache.sum()

            def lazy(self, x):
                if not hasattr(self, "table"):
                    self.table = tabled()
                return x + self.table.sum()


        HOLDER = Holder()


        @torch.compile
        def once(x):
            if "dynamic" not in TABLE:
                TABLE["dynamic"] = make()
            return x * TABLE["dynamic"].sum() + HOLDER.get(x) + HOLDER.lazy(x)


        @torch.compile
        def each(x, n: int):
            if n not in TABLE:
                TABLE[n] = build(n)
            return x * TABLE[n].sum()


        @torch.compile
        def fresh(x):
            box = Holder()
            if not hasattr(box, "table"):
                box.table = boxed()
            if box.cache is None:
                box.cache = built()
            return x + box.table.sum() + box.cache.sum()


        def built():
            return torch.tensor(torch.linspace(0.5, 1, 3).tolist())


        def boxed():
            return torch.tensor(torch.linspace(0.4, 1, 3).tolist())
        """,
        config=only("RCL404"),
    )
    # ``each`` reaches a break at every new key; ``fresh`` fills an object it builds per call.
    assert [(f.line, f.region.rsplit(".", 1)[-1]) for f in result.findings] == [(11, "each"), (65, "fresh"), (69, "fresh")]


def test_rcl404_behind_a_default_every_call_of_a_local_compiled_object_leaves(tmp_path):
    # ``compiled(a, b)`` is the only use of ``compiled``: ``label`` is None at every call, and
    # Dynamo never traces the branch that needs it. A compiled object that escapes (returned)
    # may be called with a label.
    result = lint_snippet(
        tmp_path,
        """
        import torch


        class Loss(torch.nn.Module):
            def forward(self, a, b, label=None):
                loss = (a - b).sum()
                if label is not None:
                    loss = loss / (label != -100).sum().item()
                return loss


        class Other(torch.nn.Module):
            def forward(self, a, b, label=None):
                loss = (a - b).sum()
                if label is not None:
                    loss = loss / (label != -100).sum().item()
                return loss


        def bench(a, b):
            compiled = torch.compile(Loss())
            return lambda: compiled(a, b)


        def escapes(a, b):
            compiled = torch.compile(Other())
            return compiled
        """,
        config=only("RCL404"),
    )
    assert [(f.line, f.region.rsplit(".", 2)[-2]) for f in result.findings] == [(16, "Other")]


# ---- RCL901 recompile-limit-raised ---------------------------------------------------------


def test_rcl901_names_the_hidden_regions_and_ignores_lowered_or_unknown_values(tmp_path):
    result = lint_snippet(
        tmp_path,
        """
        import torch
        import torch._dynamo.config as dc


        @torch.compile
        def poly(x):
            return x + 1


        def configure(n):
            dc.cache_size_limit = 4
            dc.recompile_limit = n
            dc.recompile_limit += 8
            torch.compile(poly, options={"recompile_limit": 16})
        """,
        config=only("RCL901"),
    )
    assert [f.line for f in result.findings] == [13, 14]
    assert all("`snippet.poly`" in f.message and f.severity is Severity.WARNING for f in result.findings)


def test_rcl901_noqa_suppresses(tmp_path):
    result = lint_snippet(
        tmp_path,
        """
        import torch

        torch._dynamo.config.recompile_limit = 64  # noqa: RCL901
        """,
        config=only("RCL901"),
    )
    assert result.findings == () and result.suppressed == 1


# ---- the ast trees the identity rules share ----------------------------------------------


def test_trees_parents_and_node_lookup_agree_with_a_full_walk():
    """Parents are found by descending through the lines that hold a node; every node of
    the fixtures (decorators above their ``def`` included) gets the parent a full walk gives,
    and every call is found again from its span."""
    import ast
    from pathlib import Path

    from recompile_lint.analysis.facts import span_of
    from recompile_lint.analysis.index import FactsStore, ProjectIndex
    from recompile_lint.rules._identity import Trees

    root = Path(__file__).resolve().parent.parent / "fixtures"
    paths = sorted(str(p) for p in root.rglob("*.py"))
    index = ProjectIndex(paths, FactsStore())
    trees = Trees(index)
    checked = decorators = 0
    # ``Load``, ``Store`` and operators are shared instances: they have no one parent.
    shared = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
    for path in paths:
        tree = trees.tree(path)
        if tree is None:
            continue
        lines = trees.lines(path)
        fresh = Trees(index)  # a new lookup per file: no parent map filled by earlier calls
        fresh_tree = fresh.tree(path)
        fresh_expected = {id(child): parent for parent in ast.walk(fresh_tree) for child in ast.iter_child_nodes(parent)}
        for node in ast.walk(fresh_tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.decorator_list:
                decorators += 1
                alone = Trees(index)  # the decorator asked for first, above its def's lines
                decorated = next(n for n in ast.walk(alone.tree(path)) if isinstance(n, type(node)) and n.lineno == node.lineno)
                assert alone.parent(path, decorated.decorator_list[0]) is decorated
            if isinstance(node, shared):
                continue
            assert fresh.parent(path, node) is fresh_expected.get(id(node))
            checked += 1
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                found = trees.node_at(path, span_of(node, lines), ast.Call)
                assert found is not None and span_of(found, lines) == span_of(node, lines)
    assert checked > 10_000 and decorators > 50


def test_rcl401_counts_only_the_calls_of_its_own_compiled_function(tmp_path):
    # Two scripts each compile their own ``f(x, fn)``: the functions one passes are not the
    # other's (measured on torch 2.13: a new lambda of the same code per call, no recompile).
    from test_execution_guards import lint, write

    same = """
    import torch


    @torch.compile(backend="eager")
    def f(x, fn):
        return fn(x)


    def main():
        for i in range(12):
            f(torch.randn(4), lambda t: t * 2)


    if __name__ == "__main__":
        main()
    """
    other = same.replace("f(torch.randn(4), lambda t: t * 2)", "f(torch.randn(4), lambda t: t * 3)\n            f(torch.randn(4), lambda t: t + 1)")
    findings = lint(write(tmp_path, {"same.py": same, "other.py": other}))
    assert [f for f in findings if f.path.endswith("same.py") and f.severity in ("error", "warning")] == []
