"""The execution stage: abstract values, the interpreter and its overlays, cache entries per
region, and the evidence it adds to the guard model on small projects."""

from __future__ import annotations

import gc
import textwrap
from pathlib import Path

import pytest

from recompile_lint.analysis.execution import DISABLE_ENV, Execution
from recompile_lint.analysis.execution.cache import parse_source
from recompile_lint.analysis.execution.frames import OutOfBudget
from recompile_lint.analysis.execution.interpreter import Interpreter
from recompile_lint.analysis.execution.overlays import TABLE
from recompile_lint.analysis.execution.overlays.grad_mode import grad_enabled
from recompile_lint.analysis.execution.values import (
    TOP,
    CompiledValue,
    Const,
    ContextValue,
    Instance,
    Partial,
    Sym,
    TensorValue,
    definitely_different,
    iteration,
    join,
)
from recompile_lint.analysis.guards import predict_guards
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths

from execution_helpers import Calls, Sources

# ---- values --------------------------------------------------------------------------------


def test_two_different_concrete_values_differ_definitely():
    assert definitely_different(Const(1), Const(2))
    assert definitely_different(Const("train"), Const("eval"))
    assert not definitely_different(Const(3), Const(3))


def test_two_iterations_of_one_loop_differ_and_other_symbols_never_do():
    assert definitely_different(iteration("L", 0), iteration("L", 1))
    assert not definitely_different(iteration("L", 1), iteration("L", 1))
    assert not definitely_different(iteration("L", 0), iteration("M", 1))  # two loops: nothing known
    assert not definitely_different(Sym("data", name="item"), Sym("data", name="item"))
    assert not definitely_different(Sym("parameter", name="n"), Const(1))


def test_top_is_never_a_difference():
    for other in (TOP, Const(1), iteration("L", 0), TensorValue(addr=-1)):
        assert not definitely_different(TOP, other)
        assert not definitely_different(other, TOP)


def test_join_keeps_equal_values_and_loses_different_ones():
    assert join(Const(1), Const(1)) == Const(1)
    assert join(Const(1), Const(2)) is TOP


# ---- the interpreter -------------------------------------------------------------------------


def run(source: str, **files: str) -> tuple[Interpreter, dict, Calls]:
    project = Sources({"main.py": source, **{f"{k}.py": v for k, v in files.items()}})
    calls = Calls()
    interpreter = Interpreter(project, calls)
    interpreter.run_module("main.py", as_main=True)
    return interpreter, interpreter.heap.slots(interpreter.globals["main.py"]), calls


def test_assignments_augmented_tuple_attribute_and_subscript():
    _, g, _ = run(
        """
        class C:
            pass
        a, (b, c) = 1, (2, "x")
        a += 10
        obj = C()
        obj.k = b * 3
        d = {"n": 1}
        d["n"] = d["n"] + 1
        xs = [1, 2]
        xs.append(3)
        n = len(xs)
        """
    )
    assert g["a"] == Const(11) and g["b"] == Const(2) and g["c"] == Const("x")
    assert g["n"] == Const(3)


def test_if_runs_the_known_branch_and_joins_both_when_unknown():
    interpreter, g, _ = run(
        """
        import random
        x = 1 if __name__ == "__main__" else 2
        flag = random.random() > 0.5
        same = 0
        if flag:
            y = 1
            same = 5
        else:
            y = 2
            same = 5
        """
    )
    assert g["x"] == Const(1)
    assert g["y"] is TOP  # 1 or 2
    assert g["same"] == Const(5)  # both branches agree


def test_functions_defaults_globals_and_closures():
    _, g, _ = run(
        """
        counter = 0
        def bump(by=2):
            global counter
            counter += by
        def make():
            total = 0
            def add(v):
                nonlocal total
                total += v
                return total
            add(3)
            return add(4)
        bump()
        bump(by=5)
        got = make()
        square = (lambda v: v * v)(6)
        """
    )
    assert g["counter"] == Const(7)
    assert g["got"] == Const(7)
    assert g["square"] == Const(36)


def test_a_short_known_loop_runs_item_by_item():
    _, g, _ = run(
        """
        seen = []
        total = 0
        for i, name in enumerate(["a", "b", "c"]):
            total += i
            seen.append(name)
        last = seen[-1]
        """
    )
    assert g["total"] == Const(3)
    assert g["last"] == Const("c")


def test_a_long_loop_gives_a_counter_a_fresh_iteration_symbol_each_time():
    _, _, calls = run(
        """
        import torch
        step = 0
        @torch.compile
        def f(x, n):
            return x * n
        for i in range(100):
            step += 1
            f(torch.ones(2), step)
            f(torch.ones(2), i)
        """
    )
    steps = [bound["n"] for _, _, bound, line in calls.seen if line == 9]
    loop_vars = [bound["n"] for _, _, bound, line in calls.seen if line == 10]
    assert len(steps) == 3 and all(s.origin == "iteration" for s in steps)
    assert definitely_different(steps[0], steps[1]) and definitely_different(steps[1], steps[2])
    assert definitely_different(loop_vars[0], loop_vars[2])


def test_a_value_reset_in_each_iteration_is_not_a_counter():
    _, _, calls = run(
        """
        import torch
        @torch.compile
        def f(x, n):
            return x * n
        while True:
            k = 0
            k += 1
            f(torch.ones(2), k)
        """
    )
    values = [bound["n"] for _, _, bound, _ in calls.seen]
    assert values and all(v == Const(1) for v in values)


def test_classes_init_properties_and_super():
    _, g, _ = run(
        """
        class Base:
            def __init__(self, k):
                self.k = k
        class Child(Base):
            def __init__(self):
                super().__init__(4)
                self._epoch = 0
            @property
            def epoch(self):
                return self._epoch
            @epoch.setter
            def epoch(self, value):
                self._epoch = value
        c = Child()
        c.epoch = 9
        k = c.k
        epoch = c.epoch
        """
    )
    assert g["k"] == Const(4)
    assert g["epoch"] == Const(9)


def test_enum_members_are_not_their_values():
    _, g, _ = run(
        """
        import enum
        class Mode(enum.Enum):
            TRAIN = 1
            SEARCH = 2
        a = Mode.TRAIN
        b = Mode.SEARCH
        """
    )
    # Members are objects of their own, not their values: no constant difference between them
    # (what Dynamo guards on them, their identity, is the guard side's).
    assert not definitely_different(g["a"], g["b"])
    assert isinstance(g["a"], Instance) and g["a"] != g["b"]


def test_imports_run_the_imported_module_once():
    _, g, _ = run(
        """
        import cfg
        from cfg import STEP
        cfg.STEP = 3
        after = cfg.STEP
        """,
        cfg="STEP = 1\n",
    )
    assert g["STEP"] == Const(1)
    assert g["after"] == Const(3)


def test_the_budget_stops_a_run():
    source = "x = 0\nwhile True:\n    while True:\n        while True:\n            x = x + 1\n"
    with pytest.raises(OutOfBudget):
        Interpreter(Sources({"main.py": source}), steps=100).run_module("main.py")
    Interpreter(Sources({"main.py": source}), steps=1000).run_module("main.py")  # bounded loops end


# ---- overlays ------------------------------------------------------------------------------


def test_every_compile_form_gives_a_compiled_value():
    interpreter, g, _ = run(
        """
        import torch
        from torch import nn
        class Net(nn.Module):
            def forward(self, x):
                return x
        def fn(x):
            return x
        @torch.compile
        def deco(x):
            return x
        @torch.compile(dynamic=False, fullgraph=True)
        def deco_options(x):
            return x
        called = torch.compile(fn)
        model = torch.compile(Net(), mode="reduce-overhead")
        net = Net()
        net.compile()
        """
    )
    for name in ("deco", "deco_options", "called", "model"):
        assert isinstance(g[name], CompiledValue), name
    assert dict(g["deco_options"].options) == {"dynamic": "False", "fullgraph": "True"}
    assert g["deco_options"].line == 12  # the decorator's line: where the region's site is
    assert isinstance(g["model"].target, Instance)
    assert isinstance(interpreter.heap.read(g["net"].addr, "__compiled__"), CompiledValue)


def test_calling_a_module_calls_forward_and_the_compiled_module_forwards_attributes():
    interpreter, g, calls = run(
        """
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.step = 0
            def forward(self, x):
                return self.step
        net = Net()
        plain = net(1)
        model = torch.compile(net)
        model.step = 5
        read = model.step
        model(1)
        model.eval()
        training = net.training
        orig = model._orig_mod
        """
    )
    assert g["plain"] == Const(0)
    assert interpreter.heap.read(g["net"].addr, "step") == Const(5)  # the write reached the original
    assert g["read"] == Const(5)
    assert g["training"] == Const(False)
    assert g["orig"] == g["net"]
    [(compiled, qualname, bound, _)] = calls.seen
    assert qualname == "Net.forward" and bound["self"] == g["net"]


def test_partial_binds_arguments():
    _, g, _ = run(
        """
        import functools
        def scale(x, k, bias=0):
            return x * k + bias
        double = functools.partial(scale, k=2)
        got = double(5, bias=1)
        """
    )
    assert isinstance(g["double"], Partial)
    assert g["got"] == Const(11)


def test_tensors_item_and_in_place_ops():
    _, g, _ = run(
        """
        import torch
        t = torch.zeros(2, 3)
        same = t.add_(1)
        s = torch.zeros(())
        v = s.item()
        """
    )
    assert isinstance(g["t"], TensorValue) and g["t"].sizes == (2, 3)
    assert g["same"] == g["t"]  # in place: the same tensor
    assert g["s"].rank == 0
    assert isinstance(g["v"], Sym) and g["v"].origin == "data"


def test_grad_mode_contexts_and_decorators():
    interpreter, g, _ = run(
        """
        import torch
        @torch.no_grad()
        def infer(x):
            return x
        kept = infer(3)
        with torch.no_grad():
            inside = torch.is_grad_enabled()
        ctx = torch.set_grad_enabled(False)
        """
    )
    assert g["kept"] == Const(3)  # the decorator leaves the function as it is
    assert isinstance(g["ctx"], ContextValue)
    assert grad_enabled([ContextValue("no_grad")]) is False
    assert grad_enabled([ContextValue("set_grad_enabled", Const(True))]) is True
    assert not interpreter.grad_modes  # left on exit


def test_is_compiling_is_false_outside_and_true_inside_compiled_code():
    _, g, _ = run(
        """
        import torch
        seen = []
        @torch.compile
        def f(x):
            seen.append(torch.compiler.is_compiling())
            return x
        outside = torch.compiler.is_compiling()
        f(1)
        inside = seen[0]
        """
    )
    assert g["outside"] == Const(False)
    assert g["inside"] == Const(True)


def test_a_disabled_helper_runs_outside_compiled_code():
    _, g, _ = run(
        """
        import torch
        seen = []
        @torch.compiler.disable
        def log(x):
            seen.append(torch.compiler.is_compiling())
            return x
        @torch.compile
        def f(x):
            return log(x)
        got = f(2)
        inside = seen[0]
        """
    )
    assert g["got"] == Const(2)
    assert g["inside"] == Const(False)


def test_unmodelled_library_calls_are_top():
    _, g, _ = run("import numpy\nx = numpy.load('a.npy')\n")
    assert g["x"] is TOP
    assert "torch.compile" in TABLE and "nn.Module.train" in TABLE and "functools.partial" in TABLE


# ---- guard sources -------------------------------------------------------------------------


def test_guard_sources_parse_as_dynamo_spells_them():
    assert parse_source("G['step']") == ("G", "step", [])
    assert parse_source("L['self'].trainer.epoch") == ("L", "self", [("attr", "trainer"), ("attr", "epoch")])
    assert parse_source("L['self']._modules['blocks'].k") == ("L", "self", [("attr", "blocks"), ("attr", "k")])
    assert parse_source("G['CFG']['lr']") == ("G", "CFG", [("key", "lr")])
    assert parse_source("len(L['xs'])") is None


# ---- whole programs --------------------------------------------------------------------------


def write(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def lint(root: Path):
    return list(lint_paths([str(root)], Config(select=("RCL",), cache=False)).findings)


def execution_evidence(root: Path) -> dict:
    """source -> Evidence that the execution stage alone finds."""
    keep: list = []
    lint_paths([str(root)], Config(select=("RCL",), cache=False), retain=keep)
    gc.unfreeze()
    analysis = next(k for k in keep if hasattr(k, "regions"))
    guards = list(predict_guards(analysis.index, analysis.regions))
    execution = Execution(analysis.index, analysis.regions, guards)
    return {g.guard.source: execution.evidence(g) for g in guards if execution.evidence(g) is not None}


MODEL = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.step = 0

    def forward(self, x):
        return self.lin(x) * self.step


model = torch.compile(Net())
"""

TRAIN = """
import torch
from model import model


def main():
    x = torch.randn(2, 4)
    for _ in range(10):
        {change}
        model(x)


if __name__ == "__main__":
    main()
"""


def test_a_write_through_the_imported_compiled_module_in_another_file(tmp_path, monkeypatch):
    root = write(tmp_path, {"model.py": MODEL, "train.py": TRAIN.format(change="model.step += 1")})
    [finding] = lint(root)
    assert (finding.code, finding.severity.value, finding.bounded) == ("RCL104", "error", "unbounded")
    assert finding.guard.source == "L['self'].step"
    assert any(loc.path.endswith("train.py") and loc.line == 9 and loc.role == "write" for loc in finding.evidence)
    monkeypatch.setenv(DISABLE_ENV, "1")
    assert lint(root) == []  # the shapes the variation stage knows do not reach this write


def test_a_value_fixed_before_the_first_call_is_no_evidence(tmp_path):
    root = write(tmp_path, {"model.py": MODEL, "train.py": TRAIN.format(change="model.step = 3")})
    assert lint(root) == []
    assert execution_evidence(root) == {}


def test_a_zero_dim_tensor_updated_in_place_is_no_evidence(tmp_path):
    model = MODEL.replace("self.step = 0", "self.register_buffer('step', torch.zeros((), dtype=torch.long))")
    root = write(tmp_path, {"model.py": model, "train.py": TRAIN.format(change="model.step += 1")})
    assert lint(root) == []


def test_a_value_read_only_outside_compiled_code_is_no_evidence(tmp_path):
    model = MODEL.replace(
        "        return self.lin(x) * self.step",
        "        if not torch.compiler.is_compiling():\n            print(self.step)\n        return self.lin(x)",
    )
    root = write(tmp_path, {"model.py": model, "train.py": TRAIN.format(change="model.step += 1")})
    assert lint(root) == []


def test_an_unknown_value_is_no_evidence(tmp_path):
    root = write(tmp_path, {"model.py": MODEL, "train.py": TRAIN.format(change="model.step = load_step()")})
    assert execution_evidence(root) == {}


def test_a_finite_set_of_values_counts_its_members(tmp_path):
    root = write(
        tmp_path,
        {
            "run.py": """
            import torch
            from torch import nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.mode = "a"

                def forward(self, x):
                    return x + 1 if self.mode == "a" else x - 1

            def main():
                net = Net()
                model = torch.compile(net)
                for mode in ("a", "b", "c"):
                    net.mode = mode
                    model(torch.ones(2))

            if __name__ == "__main__":
                main()
            """
        },
    )
    evidence = execution_evidence(root)["L['self'].mode"]
    assert evidence.values == 3
    assert evidence.kinds == {"str"}
    assert [loc.line for loc in evidence.locations if loc.role == "write"] == [17]


def test_an_epoch_set_on_the_trainer_in_its_loop_and_read_through_a_property(tmp_path):
    root = write(
        tmp_path,
        {
            "run.py": """
            import torch
            from torch import nn

            class Trainer:
                def __init__(self):
                    self._epoch = 0

                @property
                def current_epoch(self):
                    return self._epoch

                def fit(self, model, x):
                    model.trainer = self
                    for epoch in range(20):
                        self._epoch = epoch
                        model(x)

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.trainer = None

                def forward(self, x):
                    return x * self.trainer.current_epoch

            if __name__ == "__main__":
                Trainer().fit(torch.compile(Net()), torch.randn(3))
            """
        },
    )
    evidence = execution_evidence(root)["L['self'].trainer._epoch"]
    assert evidence.values is None  # an iteration symbol per epoch: unbounded
    assert [loc.line for loc in evidence.locations if loc.role == "write"] == [16]
    [finding] = lint(root)
    assert finding.severity.value == "error"


def test_a_global_counter_in_a_driver_function_with_unknown_parameters(tmp_path):
    root = write(
        tmp_path,
        {
            "loop.py": """
            import torch
            from ops import poly

            def train(loader, epochs):
                import ops
                for batch in loader:
                    ops.STEP += 1
                    poly(batch)
            """,
            "ops.py": """
            import torch
            STEP = 0

            @torch.compile
            def poly(x):
                return x * STEP
            """,
        },
    )
    evidence = execution_evidence(root)["G['STEP']"]
    assert evidence.values is None
    assert any(loc.path.endswith("loop.py") and loc.line == 8 for loc in evidence.locations)


# A function compiled with ``dynamic=False`` that a driver calls with a new float each time.
STEPPED = """
import click
import fire
import hydra
import torch
import torch.multiprocessing as mp
from absl import app
from jsonargparse import CLI
from helpers import requires_cuda

@torch.compile(dynamic=False)
def step(x, scale):
    return x * scale

class Trainer:
    def fit(self, steps):
        for k in range(steps):
            step(torch.randn(4), 0.5 * k)

{driver}

if __name__ == "__main__":
    {launch}
"""


def stepped_finding(tmp_path, driver: str, launch: str):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "train.py").write_text(STEPPED.format(driver=driver, launch=launch))
    [finding] = lint(tmp_path)
    return finding.code, finding.severity.value, finding.guard.source


@pytest.mark.parametrize("decorator", ["@hydra.main(config_path='conf', config_name='train')", "@click.command()", "@requires_cuda"])
def test_a_driver_a_decorator_the_run_does_not_model_wraps_runs_as_written(tmp_path, decorator):
    # ``@hydra.main`` makes ``main`` an unknown value, so ``main()`` ran nothing: the driver
    # runs undecorated, its parameters unknown, as any driver function does.
    driver = f"{decorator}\ndef main(cfg):\n    for k in range(20):\n        step(torch.randn(4), 0.5 * k)"
    assert stepped_finding(tmp_path, driver, "main()") == ("RCL108", "error", "L['scale']")


@pytest.mark.parametrize("launch", ["fire.Fire(main)", "mp.spawn(main, args=(2,), nprocs=2)", "app.run(main)", "CLI(main)"])
def test_a_function_the_main_block_hands_to_a_launcher_runs_as_a_driver(tmp_path, launch):
    # ``fire.Fire(main)`` calls ``main`` with what the command line gives; ``main`` has no loop
    # of its own (the trainer has), so it was no driver and the launcher an unknown call.
    driver = "def main(rank=0, world_size=1):\n    Trainer().fit(20)"
    assert stepped_finding(tmp_path, driver, launch) == ("RCL108", "error", "L['scale']")


def test_an_undecorated_driver_runs_only_where_the_decorator_is_unknown(tmp_path):
    # A decorator the run follows (a project one that never calls the function) keeps it.
    root = write(
        tmp_path,
        {
            "train.py": """
            import torch

            REGISTRY = []

            def register(fn):
                REGISTRY.append(fn.__name__)
                return None

            @torch.compile(dynamic=False)
            def step(x, scale):
                return x * scale

            @register
            def main(cfg):
                for k in range(20):
                    step(torch.randn(4), 0.5 * k)
            """
        },
    )
    assert lint(root) == []


def test_a_driver_is_a_file_whose_imports_name_the_compiled_module(tmp_path):
    from recompile_lint.analysis.execution.entries import EntryFinder
    from recompile_lint.analysis.index import FactsStore, ProjectIndex

    files = {
        "pkg/__init__.py": "",
        "pkg/model.py": "import torch\n@torch.compile\ndef f(x):\n    return x\n",
        "run.py": "from pkg.model import f\nfor i in range(3):\n    f(i)\n",
        "other.py": "from pkg import model\nif __name__ == '__main__':\n    model.f(1)\n",
        "prose.py": "# the model is compiled elsewhere\nfor i in range(3):\n    print('pkg model')\n",
    }
    write(tmp_path, files)
    index = ProjectIndex([str(tmp_path / name) for name in files], FactsStore())
    finder = EntryFinder(index, [])
    assert finder.imports(str(tmp_path / "run.py"), "pkg.model")
    assert finder.imports(str(tmp_path / "other.py"), "pkg.model")
    assert not finder.imports(str(tmp_path / "prose.py"), "pkg.model")


def test_a_known_loop_of_twelve_items_runs_item_by_item_so_a_cycle_counts_its_values(tmp_path):
    root = write(
        tmp_path,
        {
            "run.py": """
            import torch

            SCHEDULE = (4, 5, 6)
            factor = 4

            @torch.compile
            def scale(x):
                return x * factor

            def main():
                global factor
                for j in range(12):
                    factor = SCHEDULE[j % 3]
                    scale(torch.ones(2))

            if __name__ == "__main__":
                main()
            """
        },
    )
    evidence = execution_evidence(root)["G['factor']"]
    assert evidence.values == 3  # 4, 5, 6: a bounded set, not a fresh value per iteration


def test_the_guard_model_skips_the_side_dynamo_does_not_trace(tmp_path):
    root = write(
        tmp_path,
        {
            "run.py": """
            import torch

            history = []
            STEP = 0

            def block(x):
                if not torch.compiler.is_compiling():
                    history.append(STEP)
                if torch.compiler.is_compiling():
                    x = x * 2
                else:
                    x = x * STEP
                return x

            fast = torch.compile(block)
            """
        },
    )
    keep: list = []
    lint_paths([str(root)], Config(select=("RCL",), cache=False), retain=keep)
    gc.unfreeze()
    analysis = next(k for k in keep if hasattr(k, "regions"))
    sources = [g.guard.source for g in predict_guards(analysis.index, analysis.regions)]
    assert sources and not [s for s in sources if "history" in s or "STEP" in s]


def test_the_variation_stage_can_be_left_out_to_measure_what_it_still_decides(monkeypatch):
    # An episode's length set by data: the runs see no definite difference (the lengths come
    # from a random walk), only the variation stage's evidence says it changes.
    program = Path(__file__).resolve().parent.parent / "fixtures" / "programs" / "rl_discounted_returns"

    def codes() -> list[str]:
        return [f.code for f in lint_paths([str(program)], Config(select=("RCL",), cache=False)).findings]

    assert "RCL106" in codes()
    monkeypatch.setenv("RECOMPILE_LINT_NO_VARIATION", "1")
    assert "RCL106" not in codes()
