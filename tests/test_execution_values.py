"""The values compiled code reaches through another: a bound method held somewhere, a
library layer's parameters, a compile wrapper's options, and what they cost
(``execution/dynamo.py``, ``execution/cache.py``)."""

from __future__ import annotations

import textwrap

import pytest

from recompile_lint.analysis.execution.cache import Observed, graphs_of, lab_cells
from recompile_lint.analysis.execution.dynamo import GuardRead, TensorMeta
from recompile_lint.analysis.execution.values import Const
from recompile_lint.models import Location

from test_execution_guards import lint, traced, write


def test_a_bound_method_held_in_an_attribute_guards_its_receiver_through_dunder_self():
    [call] = traced(
        """
        import torch
        class Scaler:
            def __init__(self, k):
                self.k = k
            def scale(self, t):
                return t * self.k
        class Spec:
            def __init__(self):
                self.fn = Scaler(3).scale
                self.k = 5
            def own(self, t):
                return t * self.k
        def apply(t, spec):
            return spec.fn(t) + spec.own(t)
        torch.compile(apply)(torch.randn(2), Spec())
        """
    )
    # ``spec.fn`` is held by the object: its receiver is the method's ``__self__``;
    # ``spec.own`` is bound at the lookup: its receiver is ``spec`` itself.
    assert call["L['spec'].fn.__self__.k"].value == Const(3)
    assert call["L['spec'].k"].value == Const(5)
    assert "L['spec'].k" in call and not any(s.startswith("L['spec'].fn.k") for s in call)


def test_a_library_layer_called_in_compiled_code_guards_its_parameters_spelled_as_dynamo_does():
    [call] = traced(
        """
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(8, 2)
            def forward(self, x):
                return self.proj(x)
        net = Net()
        torch.compile(net)(torch.randn(4, 8))
        """
    )
    weight = call["L['self']._modules['proj']._parameters['weight']"]
    bias = call["L['self']._modules['proj']._parameters['bias']"]
    assert (weight.kind, weight.value.sizes, bias.value.sizes) == ("TENSOR_MATCH", (2, 8), (2,))
    assert bias.module_rooted
    # The layer's last registered parameter comes first: torch 2.13 reports a shape change on it.
    sources = [s for s in call if "_parameters" in s]
    assert sources == ["L['self']._modules['proj']._parameters['bias']", "L['self']._modules['proj']._parameters['weight']"]


def test_a_layer_swapped_for_one_of_another_shape_recompiles_per_shape(tmp_path):
    program = """
    import torch
    from torch import nn

    LAYERS = (nn.Linear(8, 2), nn.Linear(8, 3), nn.Linear(8, 4))

    def make():
        layer = nn.Linear(8, 2)

        @torch.compile(backend="eager")
        def run(x):
            return x + layer(x).sum()

        def swap(value):
            nonlocal layer
            layer = value

        return run, swap

    def main():
        run, swap = make()
        for i in range(12):
            swap(LAYERS[{order}])
            run(torch.randn(8, 8))

    if __name__ == "__main__":
        main()
    """
    [finding] = lint(write(tmp_path, {"run.py": program.format(order="i % 3")}))
    assert (finding.severity.value, finding.guard.source, finding.line) == ("warning", "L['layer']._parameters['bias']", 12)
    assert "3 graphs" in finding.message  # parameters keep static shapes: one graph per shape
    assert lint(write(tmp_path, {"run.py": program.format(order="0")})) == []  # the same shape every call


def test_a_compile_wrapper_s_options_are_the_ones_its_call_passed(tmp_path):
    program = """
    import torch

    REGISTRY = {{}}

    def register(name, fn):
        REGISTRY[name] = torch.compile(fn, backend="eager"{options})
        return REGISTRY[name]

    class Scaler:
        def __init__(self, k):
            self.k = k

        def apply(self, t):
            return t * self.k

    def step(x, fn):
        return x + fn(x)

    def main():
        register("train", step)
        fast = REGISTRY["train"]
        for i in range(12):
            fast(torch.randn(4), Scaler(i + 2).apply)

    if __name__ == "__main__":
        main()
    """
    # The region's site is the ``register(...)`` call; ``dynamic=False`` is inside the wrapper.
    [finding] = lint(write(tmp_path, {"run.py": program.format(options=", dynamic=False")}))
    assert (finding.severity.value, finding.guard.source) == ("error", "L['fn'].__self__.k")
    [finding] = lint(write(tmp_path, {"run.py": program.format(options="")}))
    assert (finding.severity.value, finding.guard.source) == ("warning", "L['fn'].__self__.k")  # 2 graphs, then an input


class _Site:
    def __init__(self, options):
        self.options = options

    def option(self, name):
        return self.options.get(name)


class _Region:
    def __init__(self, **options):
        self.site = _Site(options)

    @property
    def dynamic(self):
        return self.site.option("dynamic")


def _read(source: str, kind: str, value: object, rooted: bool = False) -> GuardRead:
    return GuardRead(source, kind, value, Location("m.py", 3, 0, "read"), rooted)


def test_held_values_are_named_in_the_lab_s_cells_by_their_holder():
    meta = TensorMeta((2,), "torch.float32", "cpu", True)
    shapes = Observed(values=[meta, TensorMeta((3,), "torch.float32", "cpu", True)])
    cells = lab_cells(_Region(), _read("L['self']._modules['proj']._parameters['bias']", "TENSOR_MATCH", meta, True), shapes, 2)
    assert cells == [("module-attribute", "parameter-shapes", "arithmetic", "default", "once")]
    method = Observed(values=[Const(2), Const(3), Const(4)])
    cells = lab_cells(_Region(dynamic="False"), _read("L['cfg'].fn.__self__.k", "CONSTANT_MATCH", Const(2)), method, None)
    assert {c[0] for c in cells} == {"object-attribute", "dataclass-field", "namedtuple-field"}
    assert {c[1:] for c in cells} == {("bound-method", "arithmetic", "dynamic-false", "every")}
    part = Observed(values=[Const(2), Const(3)])
    [cell] = lab_cells(_Region(), _read("G['step'].keywords['k']", "CONSTANT_MATCH", Const(2)), part, 2)
    assert cell == ("global", "partial", "arithmetic", "default", "once")


def test_a_size_an_op_needs_as_a_python_int_recompiles_under_dynamic_true():
    meta = [TensorMeta((n,), "torch.float32", "cpu", False) for n in (2, 3, 4)]
    read = _read("G['cfg'].width", "TENSOR_MATCH", meta[0])
    split = Observed(values=list(meta), use="op-split", options=(("dynamic", "True"),))
    assert graphs_of(_Region(), read, split, 3) == 2
    plain = Observed(values=list(meta), options=(("dynamic", "True"),))
    assert graphs_of(_Region(), read, plain, 3) == 1  # symbolic from the first call


def test_a_partial_s_bound_values_are_guarded_where_it_is_called(tmp_path):
    blocks = """
    import functools

    def scale_by(t, k):
        return t * k

    GAIN = functools.partial(scale_by, k=2)

    def score(x):
        x = x + 1
        return x + GAIN(x)
    """
    program = """
    import functools
    import torch
    import blocks

    SCHEDULE = (functools.partial(blocks.scale_by, k=2), functools.partial(blocks.scale_by, k=3), functools.partial(blocks.scale_by, k=4))

    def main():
        fast = torch.compile(blocks.score, backend="eager")
        for i in range(12):
            blocks.GAIN = {value}
            fast(torch.randn(4))

    if __name__ == "__main__":
        main()
    """
    call = traced(textwrap.dedent(program.format(value="SCHEDULE[i % 3]")), blocks=textwrap.dedent(blocks))[0]
    guard = call["G['GAIN'].keywords['k']"]
    assert (guard.kind, guard.value, guard.read.line) == ("CONSTANT_MATCH", Const(2), 11)  # the partial's call, not ``t * k``
    files = {"blocks.py": blocks}
    [finding] = lint(write(tmp_path, {**files, "run.py": program.format(value="SCHEDULE[i % 3]")}))
    assert (finding.severity.value, finding.guard.source, finding.line) == ("warning", "G['GAIN'].keywords['k']", 11)
    assert any(loc.role == "write" and loc.line == 11 and loc.path.endswith("run.py") for loc in finding.evidence)  # the write that rebinds it
    # A new partial each call, made by the same code with the same value: nothing changes.
    assert lint(write(tmp_path, {**files, "run.py": program.format(value="functools.partial(blocks.scale_by, k=2)")})) == []


def test_an_enum_member_is_guarded_by_its_identity(tmp_path):
    program = """
    import enum
    import torch

    class Mode(enum.Enum):
        TRAIN = 1
        EVAL = 2
        TEST = 3

    ORDER = (Mode.TRAIN, Mode.EVAL, Mode.TEST)

    def step(x, mode):
        if mode is Mode.TRAIN:
            return x * 2
        return x

    def main():
        fast = torch.compile(step, backend="eager")
        for i in range(12):
            fast(torch.randn(4), ORDER[{index}])

    if __name__ == "__main__":
        main()
    """
    call = traced(textwrap.dedent(program.format(index="0")))[0]
    guard = call["L['mode']"]
    assert (guard.kind, guard.value_kind, guard.branch) == ("ID_MATCH", "enum", True)
    [finding] = lint(write(tmp_path, {"run.py": program.format(index="i % 3")}))
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL108", "warning", "L['mode']")
    assert "3 graphs" in finding.message and "identity" in finding.message
    assert lint(write(tmp_path, {"run.py": program.format(index="0")})) == []  # one member every call


def test_an_int_an_argument_holds_used_as_a_range_bound_is_reported_by_range_bound_argument(tmp_path):
    program = """
    import torch

    def infer(x, opts):
        for _ in range(opts[0]):
            x = x * 0.9
        return x

    def main():
        opts = [4]
        fast = torch.compile(infer, backend="eager")
        for k in range(12):
            opts[0] = {value}
            fast(torch.randn(4), opts)

    if __name__ == "__main__":
        main()
    """
    [finding] = lint(write(tmp_path, {"run.py": program.format(value="4 if k < 6 else 5")}))
    assert (finding.code, finding.severity.value, finding.guard.source, finding.line) == ("RCL106", "warning", "L['opts'][0]", 5)
    assert finding.message.startswith("`opts[0]` of argument `opts`")
    [finding] = lint(write(tmp_path, {"run.py": program.format(value="k + 1")}))
    assert (finding.code, finding.severity.value) == ("RCL106", "error")  # a range() bound stays a constant
    assert lint(write(tmp_path, {"run.py": program.format(value="4")})) == []


def test_a_local_enum_member_that_only_indexes_a_dict_is_not_guarded():
    call = traced(
        """
        import enum
        import torch
        class Mode(enum.Enum):
            TRAIN = 1
            EVAL = 2
        WEIGHTS = {Mode.TRAIN: 1.0, Mode.EVAL: 0.5}
        def step(x, mode, other):
            return x * WEIGHTS[mode] * (2 if other is Mode.TRAIN else 1)
        torch.compile(step)(torch.randn(2), Mode.TRAIN, Mode.EVAL)
        """
    )[0]
    # Measured on torch 2.13: one graph whichever member a local key is (the lab's enum
    # dict-key cells); the member compared in a branch is guarded.
    assert "L['mode']" not in call
    assert call["L['other']"].kind == "ID_MATCH"


def test_an_int_used_as_a_dict_key_stays_a_constant_even_where_dynamic_sources_names_it(tmp_path):
    program = """
    import torch

    COEFFS = {{1: 1.0, 2: 0.5, 3: 0.3, 4: 0.25, 5: 0.2, 6: 0.16, 7: 0.14, 8: 0.12, 9: 0.11, 10: 0.1, 11: 0.09, 12: 0.08}}

    class Opts:
        kind = 3

    def step(x, opts):
        return x * COEFFS[opts.kind]

    def main():
        opts = Opts()
        fast = torch.compile(step, backend="eager", dynamic=True)
        torch.compiler.config.dynamic_sources = "L['opts'].kind"
        for i in range(12):
            opts.kind = {value}
            fast(torch.randn(4), opts)

    if __name__ == "__main__":
        main()
    """
    call = traced(textwrap.dedent(program.format(value="i + 1")))[0]
    assert call["L['opts'].kind"].kind == "CONSTANT_MATCH"
    [finding] = lint(write(tmp_path, {"run.py": program.format(value="i + 1")}))
    assert (finding.severity.value, finding.guard.source, finding.line) == ("error", "L['opts'].kind", 10)
    assert lint(write(tmp_path, {"run.py": program.format(value="3")})) == []


def test_a_global_cycling_over_a_schedule_costs_one_graph_per_value_not_the_limit(tmp_path):
    program = """
    import torch

    MODE = "eval"
    FACTORS = {{"eval": 1.0, "warmup": 0.5, "export": 0.3}}
    SCHEDULE = ("eval", "warmup", "export")

    def run_layer(x):
        return x * FACTORS[MODE]

    def main():
        global MODE
        fast = torch.compile(run_layer, backend="eager")
        for k in range(12):
            MODE = {value}
            fast(torch.randn(4))

    if __name__ == "__main__":
        main()
    """
    # The write indexes a schedule by the loop variable: the run sees the three values come
    # back (calls that find a cached entry), so the count is theirs, not the limit.
    [finding] = lint(write(tmp_path, {"run.py": program.format(value="SCHEDULE[k % 3]")}))
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL101", "warning", "G['MODE']")
    assert "3 graphs" in finding.message
    [finding] = lint(write(tmp_path, {"run.py": program.format(value="f'mode{k}'")}))
    assert (finding.code, finding.severity.value) == ("RCL101", "error")  # a new value at every call


def test_a_float_named_by_dynamic_sources_still_recompiles_once(tmp_path):
    program = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.rate = {start}

        def forward(self, x):
            return x * self.rate

    def main():
        net = Net()
        net.compile(backend="eager"{options})
        torch.compiler.config.dynamic_sources = "L['self'].rate"
        for i in range(12):
            net.rate = {value}
            net(torch.randn(4))

    if __name__ == "__main__":
        main()
    """
    floats = {"start": "0.5", "value": "(0.5, 0.75, 1.0)[i % 3]"}
    [finding] = lint(write(tmp_path, {"run.py": program.format(options="", **floats)}))
    assert (finding.severity.value, finding.guard.source) == ("warning", "L['self'].rate")
    assert "2 graphs" in finding.message
    assert lint(write(tmp_path, {"run.py": program.format(options=", dynamic=True", **floats)})) == []  # symbolic from the first call
    ints = {"start": "1", "value": "(1, 2, 3)[i % 3]"}
    assert lint(write(tmp_path, {"run.py": program.format(options="", **ints)})) == []  # an int it names is an input


def test_a_module_global_swapped_for_another_of_the_same_shape_is_no_constant(tmp_path):
    knobs = """
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, t):
            return self.lin(t)

    def built(module):
        return module

    heads = built(Block())

    def apply_heads(x):
        return x + heads(x)

    HEADS = (built(Block()), built(Block()))
    ORDER = (0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1)
    """
    program = """
    import torch
    import knobs

    def main():
        fast = torch.compile(knobs.apply_heads, backend="eager")
        for i in range(12):
            knobs.heads = knobs.HEADS[knobs.ORDER[i]]
            fast(torch.randn(8, 8))

    if __name__ == "__main__":
        main()
    """
    # Dynamo guards the module's parameters (same shapes here), never the module as a
    # constant: the guard model's CONSTANT_MATCH on ``G['heads']`` is not reported.
    assert lint(write(tmp_path, {"knobs.py": knobs, "run.py": program})) == []


def test_a_size_marked_dynamic_is_no_guard_the_runs_compare(tmp_path):
    program = """
    import torch

    @torch.compile
    def attend(q):
        return q.softmax(-1)

    def main():
        for t in (16, 32, 48, 128):
            q = torch.randn(2, t, 8)
            {mark}
            attend(q)

    if __name__ == "__main__":
        main()
    """
    [finding] = lint(write(tmp_path, {"run.py": program.format(mark="pass")}))
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL201", "warning", "L['q']")  # 2 graphs, then symbolic
    assert lint(write(tmp_path, {"run.py": program.format(mark="torch._dynamo.mark_dynamic(q, 1)")})) == []
    assert lint(write(tmp_path, {"run.py": program.format(mark="torch._dynamo.mark_dynamic(q, [0, 1])")})) == []


FLOAT_ATTRIBUTE = """
import functools
import torch

class Constants:
    scale = 0.5

compiler = functools.partial(torch.compile, backend="eager"{options})

def mix(x):
    return x * Constants.scale{test}

def main():
    fast = compiler(mix)
    for i in range(12):
        Constants.scale = 0.5 + i
        fast(torch.randn(4))

if __name__ == "__main__":
    main()
"""


def test_a_partials_keywords_are_the_options_of_what_it_compiles():
    import ast

    from recompile_lint.analysis.facts import collect_facts

    text = FLOAT_ATTRIBUTE.format(options=", dynamic=True", test="") + "\nslow = compiler(mix, dynamic=False)\n"
    sites = collect_facts(ast.parse(text), "run.py", "run", False, text).compile_sites
    assert [(s.option("dynamic"), s.option("backend")) for s in sites] == [("True", "'eager'"), ("False", "'eager'")]



def test_a_float_global_follows_the_dynamic_option_and_a_test_on_it_guards_the_branch():
    # Measured on torch 2.13 (a global and a class attribute, 6 values in arithmetic): one graph
    # under dynamic=True, one per value under dynamic=False, 2 graphs by default.
    values = [Const(0.1 + i) for i in range(5)]
    plain = _read("G['lr']", "CONSTANT_MATCH", values[0])
    tested = GuardRead("G['lr']", "CONSTANT_MATCH", values[0], Location("m.py", 3, 0, "read"), branch=True)
    seen = Observed(values=list(values))
    assert graphs_of(_Region(dynamic="True"), plain, seen, 5) == 1
    assert graphs_of(_Region(dynamic="False"), plain, seen, 5) == 5
    assert graphs_of(_Region(), plain, seen, 5) == 2
    # Symbolic from the first call, but the test's outcome is guarded: a second graph.
    assert graphs_of(_Region(dynamic="True"), tested, seen, 5) == 2


ENUM_SCHEDULE = """
import enum
import torch

class Mode(enum.Enum):
    TRAIN = 1
    EVAL = 2

MODE = Mode.TRAIN
SCHEDULE = ({schedule})
ORDER = (0, 0, 0, 0, 0, 0, {last}, {last}, {last}, {last}, {last}, {last})

def encode(x):
    if MODE is Mode.TRAIN:
        x = x * 2
    return x

def main():
    fast = torch.compile(encode, backend="eager", dynamic=False)
    global MODE
    for j in range(12):
        MODE = SCHEDULE[ORDER[j]]
        fast(torch.randn(4))

if __name__ == "__main__":
    main()
"""


def test_an_enum_member_the_runs_see_the_same_at_every_call_is_no_evidence(tmp_path, monkeypatch):
    # The write runs at every iteration but gives the member the global already held: one
    # graph on torch (the ID_MATCH on G['MODE'] always passes). Sameness compares the member
    # by class and name, as the same member is in every run.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "one").mkdir()
    assert lint(write(tmp_path / "one", {"run.py": ENUM_SCHEDULE.format(schedule="Mode.TRAIN,", last=0)})) == []
    (tmp_path / "two").mkdir()
    [finding] = lint(write(tmp_path / "two", {"run.py": ENUM_SCHEDULE.format(schedule="Mode.TRAIN, Mode.EVAL", last=1)}))
    assert (finding.line, finding.severity.value) == (14, "warning")  # `if MODE is Mode.TRAIN:`, 2 graphs


ENUM_KEY = """
import enum
import torch
from torch import nn

class Phase(enum.Enum):
    A = 1
    B = 2
    C = 3

FACTORS = {Phase.A: 1.0, Phase.B: 0.5, Phase.C: 0.25}
ORDER = (Phase.A, Phase.B, Phase.C)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.phase = Phase.A

    def forward(self, x):
        return USE

def main():
    net = Net()
    net.compile(backend="eager")
    for i in range(12):
        net.phase = ORDER[i % 3]
        net(torch.randn(2, 4))

if __name__ == "__main__":
    main()
"""


def test_an_enum_attribute_that_only_indexes_a_dict_installs_no_guard(tmp_path, monkeypatch):
    # Measured on torch 2.13 (the lab's enum x dict-key cells): a local or attribute member
    # used only as a key of a Python dict compiles one graph; guarded, the guard model's
    # prediction on it is dropped. Read in a test, it is guarded by identity: one per member.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "key").mkdir()
    assert lint(write(tmp_path / "key", {"run.py": ENUM_KEY.replace("USE", "self.proj(x) * FACTORS[self.phase]")})) == []
    (tmp_path / "test").mkdir()
    [finding] = lint(write(tmp_path / "test", {"run.py": ENUM_KEY.replace("USE", "self.proj(x) * (2 if self.phase is Phase.A else 3)")}))
    assert finding.line == 21


def test_a_float_the_run_sees_change_under_dynamic_true_is_not_reported(tmp_path, monkeypatch):
    # Measured on torch 2.13: a class attribute float changed before every call, compiled with
    # dynamic=True (here through a partial), is one graph; by default it is 2 graphs.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dynamic").mkdir()
    assert lint(write(tmp_path / "dynamic", {"run.py": FLOAT_ATTRIBUTE.format(options=", dynamic=True", test="")})) == []
    (tmp_path / "default").mkdir()
    [finding] = lint(write(tmp_path / "default", {"run.py": FLOAT_ATTRIBUTE.format(options="", test="")}))
    assert (finding.severity.value, finding.bounded) == ("warning", "bounded")


@pytest.mark.parametrize("use", ["x.unfold(-1, cfg.n, 1)", "x.chunk(cfg.n)[0]", "torch.chunk(x, cfg.n)[0]",
                                 "F.one_hot(x.long().clamp(0, 1), num_classes=cfg.n).float()"])
def test_an_int_an_op_needs_as_a_python_int_stays_specialised_past_the_limit(tmp_path, use):
    """Measured on torch 2.13 (12 values, an int argument of a plain object): ``unfold``,
    ``chunk``, ``torch.chunk`` and ``one_hot`` each reach the limit, where the same int in
    arithmetic becomes dynamic after one recompile."""
    root = write(tmp_path, {"run.py": f"""
        import torch
        import torch.nn.functional as F


        class Cfg:
            def __init__(self, n):
                self.n = n


        @torch.compile(backend="eager")
        def kernel(x, cfg):
            return {use}.sum()


        for n in range(2, 14):
            kernel(torch.randn(4, 16), Cfg(n))
        """})
    [finding] = [f for f in lint(root) if f.severity in ("error", "warning")]
    assert (finding.severity, finding.bounded, finding.guard.source) == ("error", "unbounded", "L['cfg'].n")


@pytest.mark.parametrize("flag, found", [("True", False), ("not CONFIG['compile']", False), ("False", True), ("CONFIG['compile']", True)])
def test_a_compile_call_disabled_by_a_known_option_compiles_nothing(tmp_path, flag, found):
    program = f"""
    import torch

    CONFIG = {{"compile": False}}

    class Generator:
        def __init__(self):
            self.calls = 0
            self.prefill = torch.compile(self.prefill, disable={flag})

        def prefill(self, x):
            self.calls += 1
            return x * self.calls

    def main():
        gen = Generator()
        for _ in range(12):
            gen.prefill(torch.randn(4))

    if __name__ == "__main__":
        main()
    """
    # ``disable=True`` makes ``torch.compile`` hand back the method itself: nothing recompiles.
    findings = lint(write(tmp_path, {"run.py": program}))
    assert any(f.guard is not None and f.guard.source.endswith(".calls") for f in findings) is found


def test_a_field_is_counted_in_the_lab_cell_of_the_object_that_holds_it(tmp_path):
    # A named tuple passed to a disabled helper has its fields realized and guarded (measured:
    # ``___check_obj_id(hp.width.__code__, ...)``, the limit for a new lambda per call); the
    # lab's cell for a dataclass field in the same use is one graph (no guard): the run knows
    # which the object is, and counts by its own cell, not the dataclass's.
    program = """
    from typing import NamedTuple

    import torch

    SCHEDULE = (
        lambda t: t * 2, lambda t: t * 3, lambda t: t * 4, lambda t: t * 5,
        lambda t: t * 6, lambda t: t * 7, lambda t: t * 8, lambda t: t * 9,
        lambda t: t * 10, lambda t: t * 11, lambda t: t * 12, lambda t: t * 13,
    )


    class RunSpec(NamedTuple):
        width: object = None


    journal = []


    @torch.compiler.disable
    def note(hp):
        journal.append(hp.width)


    @torch.compile(backend="eager", dynamic=True)
    def step(x, hp):
        note(hp)
        return x + 1


    def main():
        hp = RunSpec()
        for i in range(12):
            hp = hp._replace(width=SCHEDULE[i])
            step(torch.randn(2), hp)


    if __name__ == "__main__":
        main()
    """
    [finding] = lint(write(tmp_path, {"run.py": program}))
    assert (finding.severity.value, finding.guard.source) == ("error", "L['hp'].width.__code__")


# A module whose instances each hold their own ``k`` (compiled one by one, they share
# ``forward``'s cache unless Dynamo is reset between them).
SCALED = """
import torch


class M(torch.nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return x * self.k
"""


@pytest.mark.parametrize("reset, found", [
    ("torch._dynamo.reset()", False),
    ("torch.compiler.reset()", False),
    ("torch._dynamo.reset_code_caches()", False),
    ("pass", True),
])
def test_a_reset_before_each_compiled_model_leaves_nothing_to_recompile(tmp_path, reset, found):
    # Measured on torch 2.13: a helper that resets Dynamo and compiles each model it is given
    # compiles 12 instances with 12 different ``k`` without one recompile; without the reset
    # they share ``forward``'s cache and reach the limit.
    program = SCALED + textwrap.dedent(f"""

        def check(mod, x):
            {reset}
            return torch.compile(mod)(x)


        def test_scales():
            for k in range(12):
                check(M(k), torch.randn(2))
    """)
    findings = [f for f in lint(write(tmp_path, {"test_scales.py": program})) if f.severity in ("error", "warning")]
    assert any(f.guard is not None and f.guard.source.endswith("k") for f in findings) is found


def test_a_reset_before_the_loop_does_not_reset_the_calls_inside_it(tmp_path):
    # One reset, then the instances compiled one by one share the cache again: the limit.
    program = SCALED + textwrap.dedent("""

        def test_scales():
            torch._dynamo.reset()
            for k in range(12):
                torch.compile(M(k))(torch.randn(2))
    """)
    findings = [f for f in lint(write(tmp_path, {"test_scales.py": program})) if f.severity == "error"]
    assert [f.guard.source for f in findings if f.guard is not None] == ["L['self'].k"]


@pytest.mark.parametrize("reset, found", [("torch._dynamo.reset()", False), ("pass", True)])
def test_a_wrapper_that_resets_before_it_compiles_shares_no_cache_between_instances(tmp_path, reset, found):
    # The model the helper compiles is what another library makes of it (unknown to a run):
    # only the wrapper's own code says that each instance compiled there starts afresh.
    program = SCALED + textwrap.dedent(f"""
        import converters


        class Suite:
            def _check(self, mod, x):
                {reset}
                mod = converters.convert(mod)
                return torch.compile(mod)(x)

            def _helper(self):
                for k in range(12):
                    self._check(M(k), torch.randn(2))
    """)
    findings = [f for f in lint(write(tmp_path, {"test_suite.py": program})) if f.severity == "error"]
    assert any(f.guard is not None and f.guard.source.endswith(".k") for f in findings) is found


DROPOUT_SCHEDULE = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = torch.nn.Dropout(0.0)
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.drop(self.lin(x))


def main():
    net = Net()
    model = torch.compile(net, backend="eager")
    for step in range(12):
        net.drop.p = {p}
        model(torch.randn(2, 4))


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("p, expected", [
    ("0.05 * step", ("error", "unbounded")),  # measured: the limit
    ("0.1 if step % 2 else 0.2", ("warning", "bounded")),  # measured: 2 graphs
    ("0.1", None),
])
def test_a_dropout_probability_changed_between_calls_is_a_constant_of_each_graph(tmp_path, p, expected):
    # ``nn.Dropout.forward`` reads ``self.p`` as a Python float: Dynamo guards
    # ``self._modules['drop'].p == 0.0`` and never makes it an input.
    findings = [f for f in lint(write(tmp_path, {"run.py": DROPOUT_SCHEDULE.format(p=p)})) if f.severity in ("error", "warning")]
    if expected is None:
        assert findings == []
        return
    [finding] = findings
    assert (finding.severity, finding.bounded, finding.guard.source) == (*expected, "L['self']._modules['drop'].p")


def test_a_lambda_default_held_by_a_module_attribute_is_read_through_it(tmp_path):
    # Measured on torch 2.13: ``self.act.__defaults__[0] == 0`` fails at every step (a new
    # lambda whose default is the step, stored on the compiled module): the limit.
    program = """
    import torch


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.act = torch.relu

        def forward(self, x):
            return self.act(self.lin(x))


    def main():
        net = Net()
        model = torch.compile(net, backend="eager")
        for step in range(12):
            net.act = lambda t, k=step: t * k
            model(torch.randn(2, 4))


    if __name__ == "__main__":
        main()
    """
    [finding] = [f for f in lint(write(tmp_path, {"run.py": program})) if f.severity in ("error", "warning")]
    assert (finding.severity, finding.bounded, finding.guard.source) == ("error", "unbounded", "L['self'].act.__defaults__[0]")


def test_a_closure_cell_of_a_function_argument_is_read_through_it(tmp_path):
    # Measured on torch 2.13: ``fn.__closure__[0].cell_contents == 0`` fails once, then the
    # int is an input (2 graphs).
    program = """
    import torch


    @torch.compile(backend="eager")
    def f(x, fn):
        return fn(x)


    def main():
        for i in range(12):
            def g(t):
                return t * i
            f(torch.randn(4), g)


    if __name__ == "__main__":
        main()
    """
    [finding] = [f for f in lint(write(tmp_path, {"run.py": program})) if f.severity in ("error", "warning")]
    assert (finding.severity, finding.bounded, finding.guard.source) == ("warning", "bounded", "L['fn'].__closure__[0].cell_contents")
