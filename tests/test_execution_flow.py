"""Values that flow where Dynamo still guards them: what traced code passes to a disabled
function (``execution/dynamo.py``), and the count of a recompile the lab measured
(``execution/cache.py``, ``analysis/risks.py``)."""

from __future__ import annotations

import pytest

from recompile_lint.analysis.execution.interpreter import Interpreter

from execution_helpers import Sources, StubRegion
from test_execution_guards import Traces, lint, write


def traced(source: str) -> list[dict]:
    observer = Traces()
    Interpreter(Sources({"main.py": source}), observer).run_module("main.py", as_main=True)
    return observer.calls


PASSED = """
import torch
from typing import NamedTuple

seen = []

class Cfg(NamedTuple):
    margin: object
    act: object
    k: int

class Box:
    def __init__(self, t):
        self.t = t

def relu(t):
    return torch.relu(t)

@torch.compiler.disable
def note(*values):
    seen.append(values)

def step(x, hp, cfg, box, d):
    note(hp, cfg, box, d)
    return x + 1

torch.compile(step)(torch.randn(2), [torch.ones(2)], Cfg(torch.ones(2, dtype=torch.float64), relu, 3), Box(torch.ones(3)), {"w": torch.ones(4)})
"""


def test_what_traced_code_passes_to_a_disabled_function_is_realized_and_guarded():
    [call] = traced(PASSED)
    kinds = {source: guard.kind for source, guard in call.items()}
    assert kinds["len(L['hp'])"] == "LENGTH_CHECK" and kinds["L['hp'][0]"] == "TENSOR_MATCH"
    assert kinds["L['cfg'].margin"] == "TENSOR_MATCH" and call["L['cfg'].margin"].value.dtype == "torch.float64"
    assert kinds["L['cfg'].act.__code__"] == "ID_MATCH"
    assert "L['cfg'].k" not in kinds  # a Python scalar inside what is passed: no guard
    assert kinds["L['d']['w']"] == "TENSOR_MATCH"
    assert not any(source.startswith("L['box'].") for source in call)  # an object is passed as it is
    assert all(call[s].passed and call[s].read.line == 24 for s in ("L['hp'][0]", "L['cfg'].margin", "L['d']['w']"))


def test_a_str_or_bool_only_passed_to_a_disabled_function_is_not_guarded_an_int_is():
    [call] = traced(
        """
        import torch

        seen = []

        @torch.compiler.disable
        def note(*values):
            seen.append(values)

        def step(x, mode, flag, n):
            note(mode, flag, n)
            return x + 1

        torch.compile(step)(torch.randn(2), "train", True, 3)
        """
    )
    assert "L['mode']" not in call and "L['flag']" not in call
    assert call["L['n']"].kind == "CONSTANT_MATCH"


def test_a_value_only_a_disabled_function_reads_inside_is_not_guarded():
    [call] = traced(
        """
        import torch

        seen = []
        STEP = 1

        @torch.compiler.disable
        def note():
            seen.append(STEP)

        def step(x):
            note()
            return x + 1

        torch.compile(step)(torch.randn(2))
        """
    )
    assert "G['STEP']" not in call


LIST_PROGRAM = """
import torch

seen = []
SCHEDULE = (torch.ones(8, dtype=torch.float32), torch.ones(8, dtype=torch.float64))
ORDER = (0, 0, 0, 1, 1, 1)

@torch.compiler.disable
def note(cfg):
    seen.append(cfg{read})

def step(x, cfg):
    note(cfg)
    return x + 1

def main():
    cfg = {make}
    fast = torch.compile(step, backend="eager")
    for i in range(6):
        {write}
        fast(torch.randn(8), cfg)

if __name__ == "__main__":
    main()
"""


def test_a_list_element_passed_to_a_disabled_function_whose_dtype_changes_recompiles(tmp_path):
    program = LIST_PROGRAM.format(read="[0]", make="[torch.ones(8)]", write="cfg[0] = SCHEDULE[ORDER[i]]")
    [finding] = lint(write(tmp_path, {"run.py": program}))
    assert (finding.code, finding.severity.value, finding.guard.source, finding.guard.detail) == ("RCL201", "warning", "L['cfg'][0]", "dtype")
    assert any(loc.role == "write" and loc.line == 20 for loc in finding.evidence)


def test_an_object_attribute_passed_inside_its_object_to_a_disabled_function_is_not_guarded(tmp_path):
    program = "class Box:\n    pass\n" + LIST_PROGRAM.format(read=".t", make="Box()", write="cfg.t = SCHEDULE[ORDER[i]]")
    assert lint(write(tmp_path, {"run.py": program})) == []


def test_a_value_automatic_dynamic_frees_after_one_recompile_is_a_two_graph_risk():
    from recompile_lint.analysis.execution.cache import Recompile
    from recompile_lint.analysis.execution.dynamo import GuardRead
    from recompile_lint.analysis.execution.values import Const
    from recompile_lint.analysis.guards import PredictedGuard
    from recompile_lint.analysis.risks import from_recompile
    from recompile_lint.analysis.variation import Evidence
    from recompile_lint.models import Guard, Location

    class Region:
        dynamic = None

    read = Location("m.py", 3, 1, "read")
    guard = GuardRead("L['lag']", "CONSTANT_MATCH", Const(0.5), read)
    found = Recompile(Region, guard, Evidence((), 3, "why"), 2, argument=True, values=(Const(0.5), Const(0.75)))  # type: ignore[arg-type]
    predicted = PredictedGuard.__new__(PredictedGuard)
    object.__setattr__(predicted, "guard", Guard("CONSTANT_MATCH", "L['lag']", ""))
    risk = from_recompile(found, predicted)
    assert risk is not None and risk.graphs == 2  # torch compiles the second graph (the lab's bounded tier)


KEYED = """
import torch

LOOKUP = {3: 1.0, 4: 0.5}
SCALES = [1.0, 0.5, 0.25]
ORDER = (3, 3, 3, 4, 4, 4)

def decode(h, limit):
    return h * LOOKUP[limit] * SCALES[limit - 3] * h[:, :limit].sum()

def main():
    fast = torch.compile(decode, backend="eager")
    DYNAMIC
    for j in range(6):
        fast(torch.randn(8, 8), ORDER[j])

if __name__ == "__main__":
    main()
"""


def test_a_key_looked_up_in_a_python_dict_or_list_stays_concrete():
    observer = Traces()
    Interpreter(Sources({"main.py": KEYED.replace("DYNAMIC", "pass")}), observer).run_module("main.py", as_main=True)
    assert observer.uses[0]["L['limit']"] == "dict-key"  # the first lookup; a tensor's slice is none
    assert observer.calls[0]["L['limit']"].kind == "CONSTANT_MATCH"
    sliced = Traces()
    Interpreter(Sources({"main.py": KEYED.replace("LOOKUP[limit] * SCALES[limit - 3]", "1.0")}), sliced).run_module("main.py", as_main=True)
    assert "L['limit']" not in sliced.uses[0]


def test_dynamic_sources_does_not_free_an_int_a_dict_lookup_needs(tmp_path):
    program = KEYED.replace("DYNAMIC", "torch.compiler.config.dynamic_sources = \"L['limit']\"")
    [finding] = lint(write(tmp_path, {"run.py": program}))
    assert (finding.severity.value, finding.guard.source, finding.line) == ("warning", "L['limit']", 9)


RANGED = """
import torch

ORDER = (4, 4, 4, 5, 5, 5)

def infer(feats, opts):
    for _ in range(opts[0]):
        feats = feats * 0.9
    return feats

def advance(target, k):
    target[0] = ORDER[k]

def main():
    opts = [4]
    fast = torch.compile(infer, backend="eager")
    for k in range(6):
        advance(opts, k)
        fast(torch.randn(8), opts)

if __name__ == "__main__":
    main()
"""


def test_an_int_an_argument_holds_used_as_a_range_bound_is_reported(tmp_path):
    [finding] = lint(write(tmp_path, {"run.py": RANGED}))
    assert (finding.code, finding.severity.value, finding.guard.source, finding.line) == ("RCL106", "warning", "L['opts'][0]", 7)
    assert "`opts[0]` of argument `opts`" in finding.message
    assert any(loc.role == "write" and loc.line == 12 for loc in finding.evidence)


SCHEDULED = """
import torch

order_ = "eval"
NAMES = ("eval", "warmup", "export")
ORDER = (0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2)

@torch.compile(backend="eager")
def run_layer(x):
    if order_ == "eval":
        return x + 1
    return x - 1

def main():
    global order_
    for i in range(STEPS):
        order_ = NAMES[ORDER[i]]
        run_layer(torch.randn(4))

if __name__ == "__main__":
    main()
"""


def test_a_run_that_sees_a_schedule_come_round_again_counts_its_values(tmp_path):
    # Twelve calls over three strings: three graphs, not the limit a str global gets unseen.
    [finding] = lint(write(tmp_path, {"run.py": SCHEDULED.replace("STEPS", "12")}))
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL101", "warning", "G['order_']")
    assert "3 different values" in finding.message


def test_values_seen_once_each_keep_the_unbounded_count(tmp_path):
    # Three calls, three strings: nothing says the set ends there.
    [finding] = lint(write(tmp_path, {"run.py": SCHEDULED.replace("STEPS", "3")}))
    assert (finding.code, finding.severity.value) == ("RCL101", "error")


def test_a_schedule_run_in_a_loop_on_an_unknown_bound_keeps_the_unbounded_count(tmp_path):
    program = SCHEDULED.replace("def main():", "def main(steps):").replace("range(STEPS)", "range(steps)").replace("ORDER[i]", "ORDER[i % 12]")
    program = program.replace("    main()\n", "    import sys\n    main(int(sys.argv[1]))\n")
    [finding] = lint(write(tmp_path, {"run.py": program}))
    assert (finding.code, finding.severity.value) == ("RCL101", "error")


def test_the_length_of_a_list_argument_a_run_sees_grow_is_an_argument_length(tmp_path):
    program = """
    import torch

    seen = []

    @torch.compiler.disable
    def note(spec):
        seen.append(spec)

    def decode(inp, spec):
        note(spec)
        return inp + 1

    def main():
        spec = []
        fast = torch.compile(decode, backend="eager")
        for i in range(12):
            spec.append(2)
            fast(torch.randn(4), spec)

    if __name__ == "__main__":
        main()
    """
    [finding] = lint(write(tmp_path, {"run.py": program}))
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL202", "error", "len(L['spec'])")


def test_a_default_written_through_defaults_is_the_write_that_changes_it(tmp_path):
    program = """
    import torch

    VALUES = (torch.ones(8), torch.ones(8, requires_grad=True))
    ORDER = (0, 1, 0, 1, 0, 1)

    def fuse(h, horizon=torch.ones(8)):
        return h + horizon

    def main():
        fast = torch.compile(fuse, backend="eager")
        for n in range(6):
            fuse.__defaults__ = (VALUES[ORDER[n]],)
            fast(torch.randn(8))

    if __name__ == "__main__":
        main()
    """
    [finding] = lint(write(tmp_path, {"run.py": program}))
    assert (finding.code, finding.guard.source, finding.guard.detail) == ("RCL201", "L['horizon']", "requires_grad")
    assert [loc.line for loc in finding.evidence if loc.role == "write"] == [13]  # not the call (14)


FLOAT_SOURCE = """
import torch

RATES = (0.5, 0.75, 1.0)

class Box:
    rate = 0.5

box = Box()

def apply(x, b):
    return x * b.rate

def main():
    fast = torch.compile(apply, backend="eager"OPTIONS)
    torch.compiler.config.dynamic_sources = "L['b'].rate"
    for i in range(12):
        box.rate = RATES[i % 3]
        fast(torch.randn(4), box)

if __name__ == "__main__":
    main()
"""


def test_a_float_dynamic_sources_names_still_recompiles_once(tmp_path):
    [finding] = lint(write(tmp_path, {"run.py": FLOAT_SOURCE.replace("OPTIONS", "")}))
    assert (finding.severity.value, finding.guard.source) == ("warning", "L['b'].rate")
    assert lint(write(tmp_path, {"run.py": FLOAT_SOURCE.replace("OPTIONS", ", dynamic=True")})) == []


PARTIAL_COMPILE = """
import functools
import torch

compiler = functools.partial(torch.compile, backend="eager"OPTIONS)
SIZES = (2, 2, 2, 3, 3, 3)

def predict(x, h):
    return x.sum() + h.sum()

def main():
    fast = compiler(predict)
    for i in range(6):
        h = torch.ones(SIZES[i])
        fast(torch.randn(4), h)

if __name__ == "__main__":
    main()
"""


def test_the_dynamic_option_a_partial_of_torch_compile_passes_decides_the_count(tmp_path):
    [finding] = lint(write(tmp_path, {"run.py": PARTIAL_COMPILE.replace("OPTIONS", ", dynamic=False")}))
    assert (finding.code, finding.guard.source, finding.guard.detail) == ("RCL201", "L['h']", "size")
    assert lint(write(tmp_path, {"run.py": PARTIAL_COMPILE.replace("OPTIONS", ", dynamic=True")})) == []  # a symbolic size


def test_a_size_a_use_keeps_concrete_is_one_graph_per_size_even_under_dynamic_true():
    from recompile_lint.analysis.execution.cache import Observed, graphs_of
    from recompile_lint.analysis.execution.dynamo import GuardRead, TensorMeta
    from recompile_lint.models import Location

    Region = StubRegion

    sizes = [TensorMeta((n,), "", "", None) for n in (2, 3, 4)]
    guard = GuardRead("L['zz_unmeasured'][0][1]", "TENSOR_MATCH", sizes[0], Location("m.py", 3, 1, "read"))
    assert graphs_of(Region, guard, Observed(values=sizes), 3, "True") == 1  # symbolic from the first call
    assert graphs_of(Region, guard, Observed(values=sizes, use="iteration"), 3, "True") == 3  # unrolled over it
    assert graphs_of(Region, guard, Observed(values=sizes, use="op-split"), 3, "True") == 2  # the chunk count
    assert graphs_of(Region, guard, Observed(values=sizes, use="len"), 3, "True") == 1  # a symbolic len()
    assert graphs_of(Region, guard, Observed(values=sizes, use="len"), 3, None) == 2
    assert graphs_of(Region, guard, Observed(values=sizes), 3, "False") == 3


def test_an_argument_made_by_a_helper_names_the_helpers_return_as_its_write(tmp_path):
    program = """
    import torch

    VALUES = (torch.ones(8), torch.ones(8, requires_grad=True))
    ORDER = (0, 0, 0, 1, 1, 1)

    def advance(it):
        return VALUES[ORDER[it]]

    def predict(x, offset):
        return x + offset

    def main():
        fast = torch.compile(predict, backend="eager")
        for it in range(6):
            offset = advance(it)
            fast(torch.randn(8), offset)

    if __name__ == "__main__":
        main()
    """
    [finding] = lint(write(tmp_path, {"run.py": program}))
    assert (finding.code, finding.guard.source, finding.guard.detail) == ("RCL201", "L['offset']", "requires_grad")
    assert [loc.line for loc in finding.evidence if loc.role == "write"] == [16, 8]  # the assignment, the return


def test_a_tensor_iterated_over_is_unrolled_its_len_is_not():
    def uses(body: str) -> dict:
        observer = Traces()
        source = f"import torch\ndef f(x):\n    {body}\n    return x\ntorch.compile(f)(torch.randn(3, 2))\n"
        Interpreter(Sources({"main.py": source}), observer).run_module("main.py", as_main=True)
        return observer.uses[0]

    assert uses("for row in x: pass").get("L['x']") == "iteration"
    assert uses("n = len(x)").get("L['x']") == "len"


def test_an_int_argument_sizing_a_view_or_a_split_goes_symbolic_after_its_recompile():
    # The lab's cells (closure, dataclass and namedtuple fields; torch 2.13): an int argument
    # given to ``view`` / ``reshape`` costs 2 graphs over any number of values, to ``split`` 3
    # (its chunk count is guarded next); a global or module attribute stays one per value, and
    # so does any int under ``dynamic=False``.
    from recompile_lint.analysis.execution.cache import Observed, graphs_of
    from recompile_lint.analysis.execution.dynamo import GuardRead
    from recompile_lint.analysis.execution.values import Const
    from recompile_lint.models import Location

    Region = StubRegion

    values = [Const(n) for n in range(4, 16)]
    at = Location("m.py", 3, 1, "read")
    argument = GuardRead("L['zz_unmeasured'].n", "CONSTANT_MATCH", values[0], at)
    module_attr = GuardRead("L['self'].zz_unmeasured", "CONSTANT_MATCH", values[0], at, module_rooted=True)
    assert graphs_of(Region, argument, Observed(values=values, use="op-view"), None, None) == 2
    assert graphs_of(Region, argument, Observed(values=values, use="op-reshape"), None, "True") == 1
    assert graphs_of(Region, argument, Observed(values=values, use="op-split"), None, None) == 3
    # Where no cell was measured (an object's attribute; a dataclass field's cell was: 4 graphs).
    assert graphs_of(Region, argument, Observed(values=values, use="op-split", holder="object-attribute"), None, "True") == 1
    assert graphs_of(Region, argument, Observed(values=values, use="op-interpolate-scale"), None, None) == 2
    assert graphs_of(Region, argument, Observed(values=values[:2], use="op-split"), 2, None) == 2
    assert graphs_of(Region, argument, Observed(values=values, use="op-view"), None, "False") is None
    assert graphs_of(Region, module_attr, Observed(values=values, use="op-view"), None, None) is None


SPLIT_BY_RATIO = """
import torch


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ratio = 4

    def forward(self, h):
        return h.split(self.ratio, dim=1)[0] * 2


def main():
    block = Block()
    fast = torch.compile(block, backend="eager", dynamic=True)
    torch.compiler.config.dynamic_sources = "L['self'].ratio"
    for i in range(12):
        block.ratio = 4 + i
        fast(torch.randn(8, 8))


if __name__ == "__main__":
    main()
"""


def test_a_symbolic_split_size_costs_one_graph_per_chunk_count(tmp_path):
    # Measured on torch 2.13: ``dynamic_sources`` makes the module's ``ratio`` symbolic, and
    # Dynamo guards the chunk count (``((-1) + self.ratio + 8) // self.ratio == 2``): ratios 4..15
    # on 8 columns make 2 or 1 chunks, 2 graphs, not one per ratio.
    [finding] = lint(write(tmp_path, {"run.py": SPLIT_BY_RATIO}))
    assert (finding.severity.value, finding.guard.source) == ("warning", "L['self'].ratio")
    assert "2 graphs" in finding.message
    from recompile_lint.analysis.execution.cache import Observed, split_graphs
    from recompile_lint.analysis.execution.values import Const

    calls = [(Const(n), -(-8 // n)) for n in range(2, 14)]  # chunk counts 4, 3, 2, 2, ..., 1
    assert split_graphs(Observed(chunks=calls), symbolic=True) == 4
    assert split_graphs(Observed(chunks=calls), symbolic=False) == 1 + 3  # the first value's own graph
    assert split_graphs(Observed(chunks=calls + [(Const(99), None)]), symbolic=True) is None


def test_a_list_display_computed_from_the_loop_variable_keeps_its_length(tmp_path):
    # ``[1.0 - step / 12, step / 12]`` is two items at every call: ``len(weights)`` never
    # fails (measured on torch 2.13: the one recompile is ``weights[0] == 1.0``, a value).
    program = """
    import torch


    @torch.compile(backend="eager")
    def mix(xs, weights):
        return sum(w * x for w, x in zip(weights, xs))


    def main():
        for step in range(12):
            mix([torch.randn(4), torch.randn(4)], [1.0 - step / 12, step / 12])


    if __name__ == "__main__":
        main()
    """
    findings = lint(write(tmp_path, {"run.py": program}))
    assert not [f for f in findings if f.guard is not None and f.guard.kind == "LENGTH_CHECK"]


@pytest.mark.parametrize("loop", [
    "for w in weights:\n            out = out + w * xs[0]",
    "for i, w in enumerate(weights):\n            out = out + w * xs[i]",
    "for w, x in zip(weights, xs):\n            out = out + w * x",
    "out = sum(w * x for w, x in zip(weights, xs))",  # measured: the same recompile
])
def test_an_item_of_a_list_compiled_code_loops_over_keeps_its_source(tmp_path, loop):
    # Measured on torch 2.13 (the plain loop and zip): ``weights[0] == 1.0`` fails once, then
    # the float is an input (2 graphs).
    program = f"""
    import torch


    @torch.compile(backend="eager")
    def mix(xs, weights):
        out = 0
        {loop}
        return out


    def main():
        for step in range(12):
            mix([torch.randn(4), torch.randn(4)], [1.0 - step / 12, step / 12])


    if __name__ == "__main__":
        main()
    """
    findings = [f for f in lint(write(tmp_path, {"run.py": program})) if f.severity in ("error", "warning")]
    assert [(f.severity, f.bounded, f.guard.source) for f in findings] == [("warning", "bounded", "L['weights'][0]")]


SCHEDULE_FLOAT = """
import torch

TABLE = (0.1, 0.09, 0.081, 0.0729, 0.06561, 0.059, 0.0531, 0.0478, 0.043, 0.0387,
         0.0349, 0.0314, 0.0282, 0.0254, 0.0229, 0.0206, 0.0185, 0.0167, 0.015, 0.0135)


@torch.compile(dynamic=False)
def sgd_step(p, g, lr):
    p.add_(g, alpha=-lr)


def main():
    p = torch.zeros(8)
    for k in range(20):
        sgd_step(p, torch.randn(8), {lr})


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("lr", ["0.1 * 0.9 ** k", "0.1 / (k + 1)", "TABLE[k]", "2.0 ** -k"])
def test_a_value_one_to_one_with_a_long_loop_s_index_is_a_new_value_each_time(tmp_path, lr):
    # Twenty iterations run as iteration symbols: a power, a quotient or a table of distinct
    # constants indexed by the loop variable is still one value per iteration.
    [finding] = lint(write(tmp_path, {"run.py": SCHEDULE_FLOAT.replace("{lr}", lr)}))
    assert (finding.code, finding.severity.value) == ("RCL108", "error")


@pytest.mark.parametrize("lr", ["0.1 * (k // 5 + 1)", "(0.1, 0.2)[k % 2]", "1.0 ** k"])
def test_a_value_that_repeats_over_the_iterations_is_not_known_to_change_each_time(tmp_path, lr):
    assert [f.code for f in lint(write(tmp_path, {"run.py": SCHEDULE_FLOAT.replace("{lr}", lr)})) if f.severity.value == "error"] == []


DRIVEN = """
import itertools
import torch

@torch.compile(dynamic=False, backend="eager")
def step(x, scale):
    return x * scale

def one(k):
    return step(torch.randn(4), 0.5 * k)

def main():
    DRIVE

if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("drive", [
    "list(map(one, range(12)))",                                     # the mapped function runs per item
    "sum(map(one, range(40)))",                                      # too many items: run on iteration symbols
    "list(itertools.starmap(lambda a, b: step(a, b), [(torch.randn(4), 0.5 * k) for k in range(12)]))",
    "outs = [one(k) for k in range(40)]",                            # a long comprehension's element runs
    "total = sum(one(k).sum() for k in range(40))",                  # so does a consumed generator's
])
def test_calls_a_map_or_a_long_comprehension_makes_are_followed(tmp_path, drive):
    [finding] = lint(write(tmp_path, {"run.py": DRIVEN.replace("DRIVE", drive)}))
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL108", "error", "L['scale']")


@pytest.mark.parametrize("drive", [
    "list(map(one, [1, 1, 1]))",              # one value: one graph
    "outs = [one(1) for k in range(40)]",     # the element does not depend on the item
    "it = (one(k) for k in range(40))",       # a generator nobody consumes runs nothing
    "list(map(one, []))",
])
def test_a_map_or_a_comprehension_that_passes_one_value_is_silent(tmp_path, drive):
    assert lint(write(tmp_path, {"run.py": DRIVEN.replace("DRIVE", drive)})) == []


def test_an_optimizer_step_calls_its_closure(tmp_path):
    program = DRIVEN.replace("    DRIVE", """    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    for k in range(12):
        def closure():
            return step(torch.randn(4), 0.5 * k)
        optimizer.step(closure)""")
    [finding] = lint(write(tmp_path, {"run.py": program}))
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL108", "error", "L['scale']")


ASYNC = """
import asyncio
import torch

@torch.compile(dynamic=False, backend="eager")
def step(x, scale):
    return x * scale

async def one(k):
    await asyncio.sleep(0)
    return step(torch.randn(4), 0.5 * k)

DRIVER
"""


@pytest.mark.parametrize("driver", [
    "async def main():\n    for k in range(12):\n        await one(k)\n\nasyncio.run(main())",
    "async def main():\n    await asyncio.gather(*[one(k) for k in range(12)])\n\nasyncio.run(main())",
    "async def main():\n    tasks = [asyncio.create_task(one(k)) for k in range(12)]\n    for t in tasks:\n        await t\n\nasyncio.run(main())",
    "async def serve(requests):\n    for k in range(len(requests)):\n        await one(k)",  # a driver nobody calls: run as one
])
def test_coroutines_run_when_awaited_or_handed_to_asyncio(tmp_path, driver):
    [finding] = lint(write(tmp_path, {"run.py": ASYNC.replace("DRIVER", driver)}))
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL108", "error", "L['scale']")


def test_a_coroutine_never_awaited_never_runs(tmp_path):
    driver = "async def main():\n    pending = [one(k) for k in range(12)]\n    await one(1)\n\nasyncio.run(main())"
    assert lint(write(tmp_path, {"run.py": ASYNC.replace("DRIVER", driver)})) == []
