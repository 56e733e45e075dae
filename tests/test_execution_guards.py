"""The guards a compiled call installs, read off the abstract run (``execution/dynamo.py``),
the cache entries built from them and the findings they give (``execution/cache.py``,
``analysis/risks.py``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from recompile_lint.analysis.execution import DISABLE_ENV
from recompile_lint.analysis.execution.cache import Observed, differs, graphs_of, tensor_change
from recompile_lint.analysis.execution.dynamo import GuardRead, TensorMeta, Tracer
from recompile_lint.analysis.execution.interpreter import Interpreter, Observer
from recompile_lint.analysis.execution.values import CodeRef, Const, iteration
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths
from recompile_lint.models import Location

from execution_helpers import Sources, StubRegion


class Traces(Observer):
    """Each compiled call's guards, by source."""

    def __init__(self):
        self.tracer = Tracer()
        self.calls: list[dict[str, GuardRead]] = []
        self.uses: list[dict[str, str]] = []  # the concrete uses each call saw, by source

    def on_compiled_call(self, interpreter, compiled, function, bound, where):
        self.tracer.begin([], function, bound, where, interpreter, compiled)

    def on_compiled_end(self, interpreter):
        trace = self.tracer.end()
        self.calls.append(trace.guards)
        self.uses.append(trace.concrete)

    def on_read(self, interpreter, frame, node, value):
        self.tracer.on_read(interpreter, frame, node, value)

    def on_call(self, interpreter, frame, node, callee, args, kwargs):
        self.tracer.on_call(interpreter, frame, node, callee, args, kwargs)

    def on_frame(self, interpreter, frame, function, args, bound, caller):
        self.tracer.on_frame(interpreter, frame, function, args, bound, caller)

    def on_attribute(self, interpreter, frame, node, base):
        self.tracer.on_attribute(interpreter, frame, node, base)

    def on_item(self, interpreter, frame, node, base, key):
        self.tracer.on_item(interpreter, frame, node, base, key)


def traced(source: str, **files: str) -> list[dict[str, GuardRead]]:
    observer = Traces()
    project = Sources({"main.py": source, **{f"{k}.py": v for k, v in files.items()}})
    Interpreter(project, observer).run_module("main.py", as_main=True)
    return observer.calls


def test_arguments_globals_attributes_and_items_get_dynamo_sources():
    [call] = traced(
        """
        import torch
        STEP = 3
        class Cfg:
            pass
        def f(x, n, cfg, d):
            return x * n + STEP + cfg.k + d["w"]
        cfg = Cfg()
        cfg.k = 2
        torch.compile(f)(torch.randn(2, 3), 4, cfg, {"w": 1.5})
        """
    )
    assert {s: (g.kind, g.value) for s, g in call.items() if g.kind == "CONSTANT_MATCH"} == {
        "L['n']": ("CONSTANT_MATCH", Const(4)),
        "G['STEP']": ("CONSTANT_MATCH", Const(3)),
        "L['cfg'].k": ("CONSTANT_MATCH", Const(2)),
        "L['d']['w']": ("CONSTANT_MATCH", Const(1.5)),
    }
    assert call["L['x']"].kind == "TENSOR_MATCH" and call["L['x']"].value.sizes == (2, 3)
    assert call["G['STEP']"].read.line == 7  # the line compiled code reads it on


def test_an_inlined_helper_keeps_its_callers_sources_and_spells_its_module_globals():
    [call] = traced(
        """
        import torch
        import ops
        def f(x, scale):
            return ops.helper(x, scale)
        torch.compile(f)(torch.randn(2), 2)
        """,
        ops="""
        RATE = 5
        def helper(t, s):
            return t * s * RATE
        """,
    )
    assert call["L['scale']"].value == Const(2)  # the parameter ``s`` of the helper
    assert call["G['__import_ops'].RATE"].value == Const(5)
    assert "L['s']" not in call and "L['t']" not in call


def test_an_object_keeps_its_source_through_a_local_and_a_field_the_trace_builds():
    """Dynamo's source lives on the value: a submodule chosen into a local of the traced code
    (``s = self.a if c else self.b``), or stored in a dataclass the trace builds and read
    back from it, is still ``L['self']._modules['b']`` (measured on torch 2.13: the guard
    ``self._modules['scale'].factor == 1`` fails through both)."""
    [call] = traced(
        """
        import torch
        from dataclasses import dataclass
        from torch import nn
        class Scale(nn.Module):
            def __init__(self):
                super().__init__()
                self.factor = 3
                self.bias = 2
            def forward(self, x):
                return x + self.bias
        @dataclass
        class Args:
            scale: Scale
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = Scale()
                self.b = Scale()
            def forward(self, x, paired):
                s = self.a if paired else self.b
                args = Args(scale=s)
                return self.inner(s(x), args) + s.factor
            def inner(self, x, args):
                return x * args.scale.factor
        torch.compile(Net())(torch.randn(2), False)
        """
    )
    factor = call["L['self']._modules['b'].factor"]
    assert call["L['self']._modules['b'].bias"].value == Const(2)  # its forward, called through the local
    assert (factor.kind, factor.value, factor.read.line) == ("CONSTANT_MATCH", Const(3), 25)
    assert "L['self']._modules['a'].factor" not in call  # the branch not taken reads nothing
    assert not any("args" in source or "['s']" in source for source in call)  # built by the trace: no source of their own


@pytest.mark.parametrize("body", ["return x * n{chain}.k", "if n{chain}.k:\n                return x\n            return -x"])
def test_a_long_chain_of_reads_costs_one_source_step_per_link(monkeypatch, body):
    """Each link of ``x.a.a...`` is a read, and its source is the previous link's plus one step:
    the source of each read is built from the one just told, not by walking the chain again
    (2,500 links took a minute that way), and so is each link's when a branch's test is
    looked over for the guarded values it read."""
    steps = []
    source_of = Tracer.source_of

    def counted(self, interpreter, frame, node, memo=None):
        steps.append(node)
        return source_of(self, interpreter, frame, node, memo)

    monkeypatch.setattr(Tracer, "source_of", counted)
    links = 300
    [call] = traced(
        f"""
        import torch
        class Node:
            pass
        n = Node()
        n.a = n
        n.k = 2
        def f(x, n):
            {body.format(chain=".a" * links)}
        torch.compile(f)(torch.randn(2), n)
        """
    )
    assert len(steps) < 4 * links, len(steps)
    assert call["L['n']" + ".a" * links + ".k"].value == Const(2)


def test_callables_guard_their_code_and_their_bound_values():
    [call] = traced(
        """
        import functools
        import torch
        class Scaler:
            def __init__(self):
                self.k = 3
            def scale(self, t):
                return t * self.k
        def apply(t, fn, part, method):
            return fn(t) + part(t) + method(t)
        def mul(t, k):
            return t * k
        torch.compile(apply)(torch.randn(2), lambda t: t * 2, functools.partial(mul, k=4), Scaler().scale)
        """
    )
    assert call["L['fn'].__code__"].kind == "ID_MATCH"
    assert "<lambda" in call["L['fn'].__code__"].value.qualname
    assert call["L['part'].keywords['k']"].value == Const(4)
    assert call["L['method'].__self__.k"].value == Const(3)


def test_a_property_is_inlined_on_its_object():
    [call] = traced(
        """
        import torch
        class Holder:
            def __init__(self):
                self._n = 7
            @property
            def n(self):
                return self._n
        def f(x, h):
            return x * h.n
        torch.compile(f)(torch.randn(2), Holder())
        """
    )
    assert call["L['h']._n"].value == Const(7)
    assert "L['h'].n" not in call  # what the getter returns is computed, not read


def test_a_closure_cell_of_the_compiled_function_is_one_of_its_locals():
    [call] = traced(
        """
        import torch
        def make():
            factor = 3
            def f(x):
                return x * factor
            return f
        torch.compile(make())(torch.randn(2))
        """
    )
    assert call["L['factor']"].value == Const(3)


def test_containers_guard_their_length_lists_on_any_read_dicts_where_keys_are_used():
    [call] = traced(
        """
        import torch
        def f(x, xs, d, e):
            return x * xs[0] * len(d) * e["a"]
        torch.compile(f)(torch.randn(2), [1, 2, 3], {"a": 1, "b": 2}, {"a": 1})
        """
    )
    assert call["len(L['xs'])"].value == Const(3)
    assert call["len(L['d'])"].value == Const(2)
    assert "len(L['e'])" not in call  # only the key it reads is guarded
    assert call["L['e']['a']"].value == Const(1)


def test_untraced_reads_add_no_guard_but_a_value_passed_to_a_disabled_helper_does():
    [call] = traced(
        """
        import torch
        seen = []
        COUNT = 0
        @torch.compiler.disable
        def note(xs):
            print(COUNT)
        def f(x, xs):
            if not torch.compiler.is_compiling():
                print(COUNT)
            note(xs)
            return x
        torch.compile(f)(torch.randn(2), [1, 2])
        """
    )
    assert "G['COUNT']" not in call
    assert call["len(L['xs'])"].value == Const(2)


def test_ops_that_need_a_python_number_mark_the_values_they_are_computed_from():
    observer = Traces()
    project = Sources(
        {
            "main.py": textwrap.dedent(
                """
                import math
                import torch
                import torch.nn.functional as F
                def f(x, p, n, tau, k):
                    x = F.dropout(x, p=p)
                    return x * math.exp(-n / tau) * k
                torch.compile(f)(torch.randn(2), 0.1, 3, 2.0, 4)
                """
            )
        }
    )
    Interpreter(project, observer).run_module("main.py", as_main=True)
    [uses] = observer.uses
    assert (uses["L['p']"], uses["L['n']"], uses["L['tau']"]) == ("op-dropout-p", "op", "op")
    assert "L['k']" not in uses  # plain arithmetic: automatic dynamic may free it


# ---- cache entries and counts ----------------------------------------------------------------


def test_a_counter_is_unbounded_whatever_loop_length_the_run_knew_a_finite_set_counts_its_members():
    from recompile_lint.analysis.execution.cache import RegionCaches

    caches = RegionCaches([], [], "run.py")
    caches.region_calls[("r",)] = 4
    assert caches.count(("r",), Observed(values=[Const(0), Const(1), Const(2), Const(3)])) is None
    assert caches.count(("r",), Observed(values=[Const("a"), Const("b"), Const("c"), Const("d")])) == 4
    assert caches.count(("r",), Observed(values=[Const(1), Const(5), Const(2), Const(9)])) == 4
    caches.region_calls[("r",)] = 12  # some calls hit a cached entry: a cycle
    assert caches.count(("r",), Observed(values=[Const(0), Const(1), Const(2), Const(3)])) == 4


def test_guard_values_differ_definitely_or_not_at_all():
    assert differs(Const(1), Const(2)) and not differs(Const(1), Const(1))
    assert differs(iteration("l", 0), iteration("l", 1))
    assert differs(CodeRef("a.py", "f", 1), CodeRef("a.py", "<lambda>", 2))
    assert differs(TensorMeta((2,), "", "", None), Const(None))
    # A tensor's guard checks its type, a number's its type and value (measured: 2 graphs for
    # a float at some calls and a 0-d tensor at others, fixtures/programs/contrastive_temperature).
    assert differs(Const(0.07), TensorMeta((), "", "", None)) and differs(TensorMeta((), "", "", None), Const(2))
    assert tensor_change(TensorMeta((2,), "", "", None), TensorMeta((2, 2), "", "", None)) == "rank"
    assert tensor_change(TensorMeta((2,), "", "", None), TensorMeta((3,), "", "", None)) == "size"
    assert tensor_change(TensorMeta(None, "", "", None), TensorMeta((3,), "", "", None)) == ""  # unknown: no evidence
    assert tensor_change(TensorMeta((3, 3), "", "", None, layout="contiguous"), TensorMeta((3, 3), "", "", None, layout="transposed")) == "stride"
    assert tensor_change(TensorMeta((3, 3), "", "", None, layout="contiguous"), TensorMeta((3, 3), "", "", None)) == ""  # unknown strides


def write(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))
    return root


def lint(root: Path):
    return list(lint_paths([str(root)], Config(select=("RCL",), cache=False)).findings)


def test_a_closure_counter_the_guard_model_does_not_predict_is_found_by_the_run(tmp_path, monkeypatch):
    root = write(
        tmp_path,
        {
            "run.py": """
            import torch

            def make():
                width = 2
                def apply(x):
                    return x.view(-1, width)
                def set_width(w):
                    nonlocal width
                    width = w
                return apply, set_width

            def main():
                apply, set_width = make()
                fast = torch.compile(apply, backend="eager")
                for i in (2, 3, 4, 6, 8, 9, 12, 16, 18, 24, 36, 48):
                    set_width(i)
                    fast(torch.randn(12, 12))

            if __name__ == "__main__":
                main()
            """
        },
    )
    [finding] = lint(root)
    # Measured on torch 2.13: ``width`` goes symbolic after its first recompile; the view's
    # shape checks (``(144 // width) != 12``) cost two more: 4 graphs, short of the limit.
    assert (finding.severity.value, finding.guard.source, finding.line) == ("warning", "L['width']", 7)
    assert any(loc.role == "write" and loc.line == 10 for loc in finding.evidence)
    monkeypatch.setenv(DISABLE_ENV, "1")
    assert lint(root) == []


def test_a_lambda_swapped_between_calls_is_an_identity_recompile(tmp_path):
    root = write(
        tmp_path,
        {
            "run.py": """
            import torch

            ACTS = (lambda t: t * 2, lambda t: t * 3)

            def block(x, act):
                return act(x)

            def main():
                fast = torch.compile(block, backend="eager")
                for i in range(12):
                    fast(torch.randn(4), ACTS[i // 6])

            if __name__ == "__main__":
                main()
            """
        },
    )
    [finding] = lint(root)
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL401", "warning", "L['act'].__code__")


def test_an_attribute_changed_between_calls_and_read_through_a_chosen_local_is_found(tmp_path):
    root = write(
        tmp_path,
        {
            "run.py": """
            import torch
            from torch import nn

            class Scale(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.factor = 1

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.short = Scale()
                    self.long = Scale()

                def forward(self, x, paired):
                    scale = self.long if paired else self.short
                    return x * scale.factor

            def main():
                net = Net()
                model = torch.compile(net, backend="eager")
                for step in range(12):
                    model(torch.randn(4), False)
                    net.short.factor += 1

            if __name__ == "__main__":
                main()
            """
        },
    )
    [finding] = lint(root)
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL104", "error", "L['self']._modules['short'].factor")
    assert finding.line == 18  # where compiled code reads it, through the local


def test_a_tensor_whose_rank_changes_is_a_shape_recompile(tmp_path):
    root = write(
        tmp_path,
        {
            "run.py": """
            import torch

            def block(x):
                return x * 2

            def main():
                fast = torch.compile(block, backend="eager")
                for i in range(12):
                    fast(torch.randn(4) if i < 6 else torch.randn(4, 4))

            if __name__ == "__main__":
                main()
            """
        },
    )
    [finding] = lint(root)
    assert (finding.code, finding.severity.value, finding.guard.source, finding.guard.detail) == ("RCL201", "warning", "L['x']", "rank")


LAYOUTS = """
import torch

def block(x):
    return x * 2

def main():
    fast = torch.compile(block, backend="eager")
    for i in range(12):
        x = torch.randn({sizes})
        fast({other} if i % 2 else x)

if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(
    "sizes, other, change",
    [
        ("4, 4", "x.t()", "stride"),  # a square matrix transposed: same sizes, other strides
        ("2, 3, 5", "x.permute(0, 2, 1).permute(0, 2, 1).contiguous().transpose(1, 2).transpose(1, 2)", None),
        ("4, 4", "x.t().contiguous()", None),
        ("4, 4", "x.t().t()", None),  # transposed back
        ("4, 1", "x.t().t()", None),
        ("1, 1, 4", "x.permute(1, 0, 2)", None),  # dims of one element swapped: the same strides
        ("4, 1, 4", "x.permute(2, 1, 0)", "stride"),
        ("4, 4", "torch.ones_like(x.t())", "stride"),  # a ``*_like`` tensor takes its model's strides
        ("4, 4", "x.t() * 2", None),  # what an op does to strides is not known: no evidence
    ],
)
def test_a_transposed_tensor_where_a_contiguous_one_was_is_a_stride_recompile(tmp_path, sizes, other, change):
    """Dynamo guards a tensor's strides (measured: ``tensor 'images' stride mismatch at index 1``,
    2 graphs, fixtures/programs/image_layout_mixed). Known only where they are: a new tensor is
    contiguous, swapping two dims of more than one element is not, ``.contiguous()`` is."""
    root = write(tmp_path, {"run.py": LAYOUTS.format(sizes=sizes, other=other)})
    found = [(f.code, f.severity.value, f.guard.source, f.guard.detail) for f in lint(root)]
    assert found == ([("RCL201", "warning", "L['x']", change)] if change else [])


def test_an_int_argument_costs_two_graphs_then_is_an_input_unless_dynamic_false(tmp_path):
    program = """
    import torch

    def block(x, n):
        return x * n

    def main():
        fast = torch.compile(block, backend="eager"{options})
        for i in range(12):
            fast(torch.randn(4), i)

    if __name__ == "__main__":
        main()
    """
    # One recompile, then an input: the second graph is a bounded cost (torch 2.13: 2 graphs).
    [finding] = lint(write(tmp_path, {"run.py": program.format(options="")}))
    assert (finding.severity.value, finding.guard.source) == ("warning", "L['n']")
    assert "2 graphs" in finding.message
    assert lint(write(tmp_path, {"run.py": program.format(options=", dynamic=True")})) == []  # symbolic from the first call
    [finding] = lint(write(tmp_path, {"run.py": program.format(options=", dynamic=False")}))
    assert (finding.severity.value, finding.guard.source) == ("error", "L['n']")


def test_a_bound_methods_field_given_by_keyword_is_counted_as_an_argument_not_a_default(tmp_path):
    # The lab measured a bound method's int field read through a default parameter of an
    # inlined method (``__defaults__``) as never going symbolic; given by the call, the same
    # field becomes an input after one recompile (torch 2.13: 2 graphs, under fullgraph too).
    program = """
    import torch

    class Weighter:
        def __init__(self, k):
            self.k = k

        def run(self, t):
            return t * self.k

    def denoise(h, *, mode{default}):
        return h + mode(h)

    def main():
        fast = torch.compile(denoise, backend="eager", fullgraph=True)
        for i in range(12):
            fast(torch.randn(4), {passed})

    if __name__ == "__main__":
        main()
    """
    given = program.format(default="", passed="mode=Weighter(i + 2).run")
    [finding] = lint(write(tmp_path, {"run.py": given}))
    assert (finding.severity.value, finding.guard.source) == ("warning", "L['mode'].__self__.k")
    assert "2 graphs" in finding.message


def test_the_count_follows_where_the_value_lives_and_how_it_is_used():
    Region = StubRegion

    read = Location("m.py", 3, 1, "read")
    ints = Observed(values=[Const(1), Const(2), Const(3)])
    global_int = GuardRead("G['zz_unmeasured']['k']", "CONSTANT_MATCH", Const(1), read)
    assert graphs_of(Region, global_int, ints, 3) == 3  # a global's member stays a constant: one graph per value
    floats = Observed(values=[Const(0.1), Const(0.2), Const(0.3)])
    float_member = GuardRead("G['zz_unmeasured']['p']", "CONSTANT_MATCH", Const(0.1), read)
    assert graphs_of(Region, float_member, floats, 3) == 2  # a float becomes an input after one recompile
    assert graphs_of(Region, float_member, Observed(values=floats.values, use="op-dropout-p"), 3) == 3  # unless an op needs it
    sizes = Observed(values=[TensorMeta((2,), "", "", None), TensorMeta((3,), "", "", None)])
    tensor = GuardRead("L['zz'][0][1]", "TENSOR_MATCH", sizes.values[0], read)
    assert graphs_of(Region, tensor, sizes, 2) == 2  # a size goes dynamic after one recompile


HELD = """
import torch

import model

SCHEDULE = {values}
ORDER = (0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1)

def main():
    fast = torch.compile(model.apply, backend="eager")
    for i in range(12):
        model.ACT = SCHEDULE[ORDER[i]]
        fast(torch.randn(4, 4))

if __name__ == "__main__":
    main()
"""
HELD_MODEL = """
import torch

ACT = "tanh"

def apply(x):
    return getattr(torch, ACT)(x)
"""


def test_a_write_the_run_executed_that_keeps_the_value_is_no_evidence(tmp_path):
    """The variation stage sees a global assigned in the loop that calls the region; the run
    executed that assignment at every iteration and the value stayed "tanh": no finding. The
    same loop over two values is a finding."""
    (tmp_path / "same").mkdir()
    (tmp_path / "differ").mkdir()
    same = write(tmp_path / "same", {"run.py": HELD.format(values='("tanh", "tanh")'), "model.py": HELD_MODEL})
    assert lint(same) == []
    differ = write(tmp_path / "differ", {"run.py": HELD.format(values='("tanh", "sin")'), "model.py": HELD_MODEL})
    [finding] = lint(differ)
    assert finding.guard.source == "G['ACT']" and finding.line == 7


def test_sameness_needs_every_write_executed_a_concrete_value_and_one_value_in_every_run(monkeypatch):
    """``Execution.held``: the rule itself, on a run's recorded values."""
    from types import SimpleNamespace

    from recompile_lint.analysis.execution import Execution
    from recompile_lint.analysis.execution import cache as cache_module
    from recompile_lint.analysis.variation import Evidence

    monkeypatch.setattr(cache_module, "region_key", lambda region: ("region",))
    monkeypatch.setattr("recompile_lint.analysis.execution.region_key", lambda region: ("region",))
    execution = Execution.__new__(Execution)
    execution.enabled = True
    execution.run_entries_of = lambda region: None
    guard = SimpleNamespace(region=None, guard=SimpleNamespace(source="G['ACT']"))
    write_here = Location("run.py", 12, 8, "write")
    evidence = Evidence((write_here,), None, "assigned in the loop")
    execution._held = set()
    execution.ran = {("run.py", 12)}
    execution._values = {(("region",), "G['ACT']"): [Const("tanh")] * 12}
    assert execution.held(guard, evidence)
    execution.ran = set()  # the write never ran: nothing known
    assert not execution.held(guard, evidence)
    execution.ran = {("run.py", 12)}
    execution._values = {(("region",), "G['ACT']"): [Const("tanh")] * 6 + [Const("sin")] * 6}
    assert not execution.held(guard, evidence)
    execution._values = {(("region",), "G['ACT']"): [Const("tanh")]}  # one call only
    assert not execution.held(guard, evidence)
    execution._values = {(("region",), "G['ACT']"): [Const("tanh")] * 12}
    execution._held = {(("region",), "G['ACT']")}  # another run saw it change, or did not know it
    assert not execution.held(guard, evidence)


DYNAMIC_RUN = """
import torch

import model

torch.compiler.config.dynamic_sources = "G['N']"

def main():
    fast = torch.compile(model.{function}, backend="eager")
    for i in range(1, 13):
        model.N = i
        fast(torch.randn(12, 12))

if __name__ == "__main__":
    main()
"""
DYNAMIC_MODEL = """
import torch

N = 1

def scale(x):
    return x * N

def repeat(x):
    for _ in range(N):
        x = x + 1
    return x
"""


def test_dynamic_sources_set_in_the_entry_file_applies_to_a_region_compiled_in_another(tmp_path):
    """``torch.compiler.config`` is process-wide: the entry file's setting makes ``G['N']`` an
    input of ``model.scale``; a ``range()`` bound stays a Python int all the same."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    scaled = write(tmp_path / "a", {"run.py": DYNAMIC_RUN.format(function="scale"), "model.py": DYNAMIC_MODEL})
    assert [f for f in lint(scaled) if f.guard is not None and f.guard.source == "G['N']"] == []
    repeated = write(tmp_path / "b", {"run.py": DYNAMIC_RUN.format(function="repeat"), "model.py": DYNAMIC_MODEL})
    found = [f for f in lint(repeated) if f.guard is not None and f.guard.source == "G['N']"]
    assert found and found[0].line == 10  # the range() bound


def test_a_region_compiled_inside_a_project_wrapper_is_the_wrapper_calls(tmp_path):
    """``torch.compile`` runs in the wrapper's body; the region is the wrapper's call site, so
    the run's calls of what it returned are that region's calls."""
    (tmp_path / "p").mkdir()
    root = write(
        tmp_path / "p",
        {
            "run.py": """
            import torch

            LEVELS = ("tanh", "sin", "cos")

            def compiled(fn, *args, **kwargs):
                return torch.compile(fn, *args, **kwargs)

            def apply(x, level):
                return getattr(torch, level)(x)

            def main():
                fast = compiled(apply, backend="eager")
                for i in range(12):
                    fast(torch.randn(4, 4), LEVELS[i % 3])

            if __name__ == "__main__":
                main()
            """
        },
    )
    [finding] = lint(root)
    assert (finding.guard.source, finding.line, finding.severity.value) == ("L['level']", 10, "warning")
    assert any(loc.role == "call" and loc.line == 15 for loc in finding.evidence)


def test_a_global_enum_member_that_indexes_a_dict_is_guarded_as_the_dicts_key(tmp_path):
    # Measured on torch 2.13: ``COEFFS[MODE]`` fails ``list(dict.keys(G['COEFFS']))[0] is
    # G['MODE']`` when the member changes, a guard on the dict's source; the write that changes
    # it is the member's.
    root = write(
        tmp_path,
        {
            "run.py": """
            import enum
            import torch

            class Mode(enum.Enum):
                A = 1
                B = 2
                C = 3

            MODE = Mode.A
            COEFFS = {Mode.A: 1.0, Mode.B: 0.5, Mode.C: 0.25}
            SCHEDULE = (Mode.A, Mode.B, Mode.C)

            def step(x):
                return x * COEFFS[MODE]

            def main():
                global MODE
                fast = torch.compile(step, backend="eager")
                for i in range(12):
                    MODE = SCHEDULE[i % 3]
                    fast(torch.randn(4))

            if __name__ == "__main__":
                main()
            """
        },
    )
    [finding] = lint(root)
    assert (finding.severity.value, finding.guard.kind, finding.guard.source, finding.line) == ("warning", "ID_MATCH", "G['COEFFS']", 15)
    assert "G['MODE']" in finding.guard.detail
    assert [loc.line for loc in finding.evidence if loc.role == "write"] == [21]
    [call, *_] = traced(textwrap.dedent(
        """
        import enum
        import torch
        class Mode(enum.Enum):
            A = 1
            B = 2
        MODE = Mode.A
        COEFFS = {Mode.A: 1.0, Mode.B: 0.5}
        def step(x):
            return x * COEFFS[MODE]
        torch.compile(step)(torch.randn(2))
        """
    ))
    assert call["G['COEFFS']"].key_of == "G['MODE']"
    assert "G['MODE']" not in call  # the key guard is the one a new member fails


def test_an_enum_member_passed_to_a_disabled_helper_is_guarded_at_any_depth():
    # Measured on the lab's proofs: ``note(hp)`` with ``hp = {"mode": Mode.A}`` fails
    # ``___check_obj_id(hp['mode'], ...)`` when the member changes (a str or int there does not).
    [call] = traced(
        """
        import enum
        import torch
        class Mode(enum.Enum):
            A = 1
            B = 2
        @torch.compiler.disable
        def note(hp, mode):
            print(hp, mode)
        def f(x, hp, mode):
            note(hp, mode)
            return x
        torch.compile(f)(torch.randn(2), {"mode": Mode.A, "k": 1}, Mode.B)
        """
    )
    assert call["L['hp']['mode']"].kind == "ID_MATCH" and call["L['hp']['mode']"].passed
    assert call["L['mode']"].kind == "ID_MATCH"
    assert "L['hp']['k']" not in call


def test_an_attribute_passed_to_a_compiled_call_is_changed_where_its_slot_is_written(tmp_path):
    # ``fast(x, knobs.t)``: the value changes where ``knobs`` stores it (through a property:
    # the slot its getter returns), not at the call.
    root = write(
        tmp_path,
        {
            "run.py": """
            import torch

            @torch.compiler.disable
            def note(t):
                print(t)

            def step(x, t):
                note(t)
                return x * 2

            class Knobs:
                def __init__(self, t):
                    self._t = t

                @property
                def t(self):
                    return self._t

                @t.setter
                def t(self, t):
                    self._t = t

            SCHEDULE = (torch.ones(2), torch.ones(2, 2))

            def main():
                fast = torch.compile(step, backend="eager")
                knobs = Knobs(torch.ones(2))
                for i in range(12):
                    knobs.t = SCHEDULE[i // 6]
                    fast(torch.randn(4), knobs.t)

            if __name__ == "__main__":
                main()
            """
        },
    )
    [finding] = lint(root)
    assert (finding.guard.source, finding.guard.detail) == ("L['t']", "rank")
    assert [loc.line for loc in finding.evidence if loc.role == "write"] == [22]


def test_an_enum_members_lab_use_is_the_one_the_run_saw(tmp_path):
    # A member read for its ``.value`` is an arithmetic use: the lab's negative cell for a
    # member that only indexes a dict (no guard there) says nothing about it.
    root = write(
        tmp_path,
        {
            "run.py": """
            import enum
            from typing import NamedTuple
            import torch

            class Mode(enum.Enum):
                A = 1
                B = 2
                C = 3

            class Spec(NamedTuple):
                mode: Mode = Mode.A

            SCHEDULE = (Mode.A, Mode.B, Mode.C)

            def step(x, spec):
                return x * spec.mode.value

            def main():
                fast = torch.compile(step, backend="eager")
                spec = Spec()
                for i in range(12):
                    spec = spec._replace(mode=SCHEDULE[i % 3])
                    fast(torch.randn(4), spec)

            if __name__ == "__main__":
                main()
            """
        },
    )
    [finding] = lint(root)
    assert (finding.severity.value, finding.guard.kind, finding.guard.source) == ("warning", "ID_MATCH", "L['spec'].mode")


SYMBOLIC_BRANCH = """
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.kind = 2

    def forward(self, h):
        if self.kind > 3:
            h = h * 2
        return h

VALUES = {values}

def main():
    net = Block()
    fast = torch.compile(net, backend="eager")
    torch.compiler.config.dynamic_sources = "L['self'].kind"
    for i in range(12):
        net.kind = VALUES[i % len(VALUES)]
        fast(torch.randn(4))

if __name__ == "__main__":
    main()
"""


def test_a_symbolic_int_recompiles_only_where_the_branch_it_takes_changes(tmp_path):
    # Measured by the lab's ``dynamic`` twins: with ``dynamic_sources`` naming it, an int read
    # by an ``if`` is guarded on the outcome (``self.kind <= 3``), not on its value.
    flips, same = tmp_path / "flips", tmp_path / "same"
    flips.mkdir()
    same.mkdir()
    [finding] = lint(write(flips, {"run.py": SYMBOLIC_BRANCH.format(values="(2, 3, 4)")}))
    assert (finding.severity.value, finding.guard.source, finding.line) == ("warning", "L['self'].kind", 11)
    assert lint(write(same, {"run.py": SYMBOLIC_BRANCH.format(values="(2, 3)")})) == []


SIZED_BRANCH = """
import torch

def block(h, act=torch.ones(2)):
    h = torch.relu(h)
    if act.shape[0] > 3:
        h = h * 2
    return h

def main():
    fast = torch.compile(block, backend="eager", dynamic=True)
    for n in {values}:
        setattr(block, "__defaults__", (torch.ones(n),))
        fast(torch.randn(8, 8))

if __name__ == "__main__":
    main()
"""
INT_BRANCH = """
import torch

def denoise(h, *, head):
    if head > 5:
        h = h * 2
    return h

def main():
    fast = torch.compile(denoise, backend="eager", dynamic=True)
    for head in {values}:
        fast(torch.randn(8, 8), head=head)

if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(
    "program, flipping, same, expected, says",
    [
        # The lab's cell: a default argument's size that changes every call, an ``if`` on it.
        (SIZED_BRANCH, "range(2, 14)", "range(4, 16)", ("RCL201", "L['act']"), "Dynamo guards the branch a test on it takes, so each branch taken compiles its own graph"),
        # The lab's cell: an int keyword argument tested against 5, a new value per call.
        (INT_BRANCH, "range(4, 16)", "range(6, 18)", ("RCL108", "L['head']"), "compiled code tests it"),
    ],
)
def test_a_value_symbolic_from_the_first_call_recompiles_where_a_branch_on_it_flips(tmp_path, program, flipping, same, expected, says):
    # Measured on torch 2.13 under ``dynamic=True``: Dynamo guards the branch taken
    # (``2 <= act.size()[0] <= 3``, ``head <= 5``), 2 graphs; values that all take one branch
    # share one graph.
    flips, kept = tmp_path / "flips", tmp_path / "kept"
    flips.mkdir()
    kept.mkdir()
    [finding] = lint(write(flips, {"run.py": program.format(values=flipping)}))
    assert (finding.code, finding.guard.source, finding.severity.value) == (*expected, "warning")
    assert says in finding.message and "(bounded: 2 graphs)" in finding.message
    assert lint(write(kept, {"run.py": program.format(values=same)})) == []


def test_a_global_int_stays_a_constant_under_dynamic_true_whatever_branch_it_takes(tmp_path):
    # The lab's cell (a global int tested against 3, set to 2 then 3, ``dynamic=True``): torch
    # guards ``G['HOPS'] == 2``, 2 graphs, though both values take the same branch.
    program = """
    import torch

    HOPS = 2

    def block(h):
        if HOPS > 3:
            h = h * 2
        return h

    def main():
        global HOPS
        fast = torch.compile(block, backend="eager", dynamic=True)
        for i in range(12):
            HOPS = 2 if i < 6 else 3
            fast(torch.randn(8, 8))

    if __name__ == "__main__":
        main()
    """
    [finding] = lint(write(tmp_path, {"run.py": program}))
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL101", "warning", "G['HOPS']")


def test_a_number_the_run_saw_index_no_dict_is_counted_as_arithmetic(tmp_path):
    # The lab's cell (a callable object's int field, a new value per call, read in arithmetic):
    # 2 graphs on torch. A measured dict-key cell (one graph per value, the limit) is not a
    # candidate for a read the run saw used in arithmetic only.
    program = """
    import torch

    class Rescale:
        def __init__(self, k):
            self.k = k

        def __call__(self, t):
            return t * self.k

    def infer(x, scale):
        return x + scale(x)

    def main():
        fast = torch.compile(infer, backend="eager")
        for i in range(12):
            fast(torch.randn(8, 8), Rescale(i + 2))

    if __name__ == "__main__":
        main()
    """
    [finding] = [f for f in lint(write(tmp_path, {"run.py": program})) if f.code == "RCL108"]
    assert (finding.severity.value, finding.guard.source) == ("warning", "L['scale'].k")
    assert "(bounded: 2 graphs)" in finding.message


def test_a_closure_cell_that_bounds_a_range_is_one_graph_per_value(tmp_path):
    # The lab's cell (a closure int set through a ``nonlocal`` setter, a range() bound, three
    # values cycled): 3 graphs on torch. The run found it; no rule owned a closure's range bound.
    program = """
    import torch

    def make_attend():
        tick = 4

        def attend(x):
            for _ in range(tick):
                x = x * 0.9
            return x

        def set_tick(value):
            nonlocal tick
            tick = value

        return attend, set_tick

    def main():
        attend, set_tick = make_attend()
        fast = torch.compile(attend, backend="eager")
        for j in range(12):
            set_tick(4 + j % 3)
            fast(torch.randn(8, 8))

    if __name__ == "__main__":
        main()
    """
    [finding] = lint(write(tmp_path, {"run.py": program}))
    assert (finding.code, finding.severity.value, finding.guard.source, finding.line) == ("RCL106", "warning", "L['tick']", 8)
    assert "closure cell `tick`" in finding.message and "(bounded: 3 graphs)" in finding.message


LAST_BATCH = """
import torch

def block(x):
    return x * 2

def main():
    fast = torch.compile(block, backend="eager"{options})
    for i in range(12):
        fast(torch.ones({last} if i == 11 else 8, 4))

if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("options", ["", ", dynamic=True"])
def test_a_last_batch_of_one_is_specialised_even_where_sizes_are_dynamic(tmp_path, options):
    # Measured on torch 2.13: sizes 8 then 1 are 2 graphs by default and under dynamic=True
    # (``2 <= x.size()[0]`` fails: 0/1 specialisation); 8 then 5 is one graph under dynamic=True.
    [finding] = lint(write(tmp_path, {"run.py": LAST_BATCH.format(options=options, last=1)}))
    # Spelled as Dynamo prints the failure: the size's range guard once it is symbolic.
    source = "L['x'].size()[0]" if options else "L['x']"
    assert (finding.code, finding.severity.value, finding.guard.source, finding.guard.detail) == ("RCL201", "warning", source, "small-size")
    assert "(bounded: 2 graphs)" in finding.message and "drop_last=True" in finding.fix
    other = tmp_path / "other"
    other.mkdir()
    found = lint(write(other, {"run.py": LAST_BATCH.format(options=options, last=5)}))
    assert [(f.guard.detail, "2 graphs" in f.message) for f in found] == ([] if options else [("size", True)])


def test_a_value_compiled_code_formats_in_an_f_string_is_guarded_as_a_constant():
    calls = traced(
        """
        import torch
        def f(x, split, step):
            return {f"{split}/loss": x.sum(), "step": f"{step:04d}"}
        fast = torch.compile(f)
        for split in ("train", "val"):
            fast(torch.ones(2), split, 3)
        """
    )
    assert [call["L['split']"].value for call in calls] == [Const("train"), Const("val")]
    assert all(call["L['step']"].kind == "CONSTANT_MATCH" for call in calls)  # read under a format spec too


PARAMETER_UPDATE = """
import torch
from torch import nn


@torch.compile{options}
def update(param, grad):
    param.add_(grad * 0.1)


def main():
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 5))
    with torch.no_grad():
        for _ in range(2):
            for p in model.parameters():
                update(p, {grad})


if __name__ == "__main__":
    main()
"""


def test_tensors_are_reported_in_dynamos_order_and_parameters_keep_static_shapes(tmp_path):
    # Measured on torch 2.13: ``update(param, torch.randn_like(param))`` over a model's
    # parameters reports ``tensor 'grad' rank mismatch`` though ``param`` is read first (the
    # shorter source is checked first); with a fixed-size ``grad``, each parameter shape is its
    # own graph even under automatic dynamic (``force_parameter_static_shapes``): four graphs.
    (tmp_path / "main.py").write_text(PARAMETER_UPDATE.format(options="", grad="torch.randn_like(p)"))
    [finding] = lint(tmp_path)
    assert finding.guard.source == "L['grad']"
    (tmp_path / "main.py").write_text(PARAMETER_UPDATE.format(options="", grad="torch.randn(1)"))
    [finding] = lint(tmp_path)
    assert (finding.guard.source, finding.severity.value) == ("L['param']", "warning")
    assert "4 graphs" in finding.message
    # Renamed so that the parameter's source is the shorter one: ``tensor 'p' rank mismatch``.
    renamed = PARAMETER_UPDATE.replace("update(param, grad):\n    param.add_(grad * 0.1)", "update(p, gradient):\n    p.add_(gradient * 0.1)")
    assert renamed != PARAMETER_UPDATE
    (tmp_path / "main.py").write_text(renamed.format(options="", grad="torch.randn_like(p)"))
    [finding] = lint(tmp_path)
    assert finding.guard.source == "L['p']"


def test_the_tensor_reported_is_the_first_in_dynamos_order_never_an_alias():
    from recompile_lint.analysis.execution.cache import RegionCaches

    at = Location("m.py", 1, 1, "read")

    def guards(**sizes):
        return {f"L[{n!r}]": GuardRead(f"L[{n!r}]", "TENSOR_MATCH", TensorMeta((s,), "", "", None), at) for n, s in sizes.items()}

    entries = [guards(q=1, k=1, v=1, gradient=1, zz=1)]
    now = guards(q=2, k=2, v=2, gradient=2, zz=2)
    [(source, _)] = RegionCaches.failing(entries, now)
    assert source == "L['k']"  # the shorter source, then by name
    [(source, _)] = RegionCaches.failing(entries, now, frozenset({"L['k']", "L['v']"}))
    assert source == "L['q']"  # ``f(doc, doc, doc)``: k and v are q
    [(source, _)] = RegionCaches.failing([guards(gradient=1, zz=1)], guards(gradient=2, zz=2))
    assert source == "L['zz']"


def test_each_python_value_that_changes_at_a_recompile_is_a_cause_of_its_own(tmp_path):
    # Measured on torch 2.13 (the diffusion_alpha_table program): with ``t`` fixed, ``t_prev``
    # alone reaches the limit; Dynamo reports only the first failing guard, the linter both.
    program = """
    import enum
    import torch

    TABLE = [0.1 * i for i in range(20)]

    class Phase(enum.Enum):
        A = 1
        B = 2

    @torch.compile
    def step(x, t, t_prev, phase):
        x = x * TABLE[t]
        x = x + TABLE[t_prev]
        return x * phase.value

    def main():
        x = torch.randn(4)
        for i in range(12):
            step(x, i, i + 1, Phase.A if i % 2 else Phase.B)

    if __name__ == "__main__":
        main()
    """
    findings = lint(write(tmp_path, {"run.py": program}))
    sources = {f.guard.source for f in findings if f.guard is not None}
    assert {"L['t']", "L['t_prev']", "L['phase']"} <= sources
    assert "L['phase'].value" not in sources  # read off a member that changes: the same cause


def test_a_global_enum_key_set_to_the_value_it_already_has_is_no_recompile(tmp_path):
    # Compiled code looks a global Enum member up in a dict; a method run between calls sets the
    # global, through its module, to the one member a schedule holds. The run reads the member
    # through the dict's key guard (``list(dict.keys(G['TABLE']))[0] is G['MODE']``): that is
    # the member's value at every call, so the write is shown to give the value it had.
    # torch 2.13: one graph.
    root = write(
        tmp_path,
        {
            "modes.py": """
            import enum

            class Mode(enum.Enum):
                FAST = 1
                SLOW = 2

            SCHEDULE = (Mode.FAST,)
            ORDER = (0,) * 12
            """,
            "blocks.py": """
            import modes

            MODE = modes.Mode.FAST
            TABLE = {modes.Mode.FAST: 1.0, modes.Mode.SLOW: 0.5}

            def block(x):
                return x * TABLE[MODE]
            """,
            "run.py": """
            import torch

            import blocks
            import modes

            class Stepper:
                def update(self, i):
                    blocks.MODE = modes.SCHEDULE[modes.ORDER[i]]

            def main():
                fast = torch.compile(blocks.block, backend="eager")
                stepper = Stepper()
                for i in range(12):
                    stepper.update(i)
                    fast(torch.randn(4))

            if __name__ == "__main__":
                main()
            """,
        },
    )
    assert [(f.code, f.severity.value) for f in lint(root)] == []
    modes = root / "modes.py"
    modes.write_text(modes.read_text().replace("(Mode.FAST,)", "(Mode.FAST, Mode.SLOW)").replace("(0,) * 12", "(0,) * 6 + (1,) * 6"))
    [finding] = lint(root)
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL101", "warning", "G['TABLE']")


def test_a_value_a_wrapper_hands_on_through_args_and_kwargs_is_changed_where_its_caller_wrote_it(tmp_path):
    # The compiled block gets ``level`` through an outer module's ``forward(x, *args, **kwargs)``;
    # the change between calls is the write to ``state.level``, not the wrapper's forwarding call.
    root = write(
        tmp_path,
        {
            "run.py": """
            import types

            import torch
            from torch import nn

            class Block(nn.Module):
                def forward(self, x, scale, *, level):
                    return x * level + scale

            class Outer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.block = Block()

                def forward(self, x, *args, **kwargs):
                    return self.block(x, *args, **kwargs)

            def main():
                state = types.SimpleNamespace(level=1, scale=2)
                net = Outer()
                net.block.compile(backend="eager")
                for i in range(12):
                    state.level = i
                    state.scale = i * 2
                    net(torch.randn(4), state.scale, level=state.level)

            if __name__ == "__main__":
                main()
            """
        },
    )
    found = {f.guard.source: f for f in lint(root)}
    writes = {source: [loc.line for loc in f.evidence if loc.role == "write"] for source, f in found.items()}
    assert writes["L['level']"] == [24]
    assert writes["L['scale']"] == [25]


PER_LAYER = """
import torch
from torch import nn

seen = []

@torch.compiler.disable
def note(t):
    seen.append(t.shape)

class Block(nn.Module):
    def __init__(self, i):
        super().__init__()
        self.idx = i
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        x = self.lin(x)
        note(x)
        return x * self.idx

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.blocks = nn.ModuleList([Block(i) for i in range(n)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x

def main():
    fast = torch.compile(Model(12), backend="eager")
    for _ in range(3):
        fast(torch.randn(4, 8))

if __name__ == "__main__":
    main()
"""


def test_a_block_that_breaks_the_graph_is_a_frame_of_its_own_shared_by_every_block(tmp_path):
    # Measured on torch 2.13: the disabled call in the inlined block breaks the compiled
    # model's frame at the block's call, so ``Block.forward`` compiles on its own, one cache for
    # all twelve blocks: its resume function recompiles on ``self.idx == 0``, ``== 1``, ... and
    # hits the limit; the block's input gains requires_grad after the first block (2 graphs).
    root = write(tmp_path, {"run.py": PER_LAYER})
    found = {f.guard.source: f for f in lint(root)}
    idx = found["L['self'].idx"]
    assert (idx.code, idx.severity.value, idx.line, idx.region) == ("RCL104", "error", 20, "run.Block.forward")
    assert any(loc.role == "write" and loc.line == 14 for loc in idx.evidence)  # ``self.idx = i``
    site = next(loc for loc in idx.evidence if loc.role == "compile-site")
    assert "`run.Model.forward` is compiled here; `run.Block.forward` breaks its graph at line 19" in site.note
    assert "remove the graph break (line 19)" in idx.message
    x = found["L['x']"]
    assert (x.code, x.severity.value) == ("RCL201", "warning")
    # Without the break the model inlines every block: each index is a constant of one graph.
    (root / "run.py").write_text(textwrap.dedent(PER_LAYER).replace("        note(x)\n        return", "        return"))
    assert lint(root) == []
    # A break in the compiled frame itself resumes there; the blocks are still inlined.
    moved = PER_LAYER.replace("        note(x)\n        return", "        return").replace(
        "        for block in self.blocks:", "        note(x)\n        for block in self.blocks:")
    (root / "run.py").write_text(textwrap.dedent(moved))
    assert lint(root) == []


@pytest.mark.parametrize("breaks", ["torch._dynamo.graph_break()", "print(x.shape)", "scale = x.sum().item()"])
def test_any_graph_break_in_an_inlined_block_makes_it_a_frame_of_its_own(tmp_path, breaks):
    # Measured on torch 2.13 with each of these in place of the disabled call: the same limit
    # hit on ``self.idx`` in the block's resume function.
    root = write(tmp_path, {"run.py": PER_LAYER.replace("        note(x)\n", f"        {breaks}\n")})
    found = {f.guard.source: f for f in lint(root) if f.guard is not None}
    assert (found["L['self'].idx"].code, found["L['self'].idx"].severity.value) == ("RCL104", "error")


def test_a_compiled_frame_that_breaks_in_a_loop_of_its_own_is_skipped(tmp_path):
    # Measured on torch 2.13: the model's loop over its blocks breaks (in each block), so Dynamo
    # skips the model's frame ("graph break in a for/while loop"): its ``self.step``, changed
    # between calls, is never guarded. Without the loop (two blocks called in turn) the model's
    # frame compiles, and ``self.step == 0``, ``== 1``, ... reach the limit.
    looped = PER_LAYER.replace("        return x * self.idx", "        return x * 2").replace(
        "        for block in self.blocks:", "        x = x * self.step\n        for block in self.blocks:").replace(
        "        self.blocks = nn.ModuleList([Block(i) for i in range(n)])",
        "        self.blocks = nn.ModuleList([Block(i) for i in range(n)])\n        self.step = 0").replace(
        '    fast = torch.compile(Model(12), backend="eager")\n    for _ in range(3):\n        fast(torch.randn(4, 8))',
        '    model = Model(12)\n    fast = torch.compile(model, backend="eager")\n    for _ in range(12):\n        fast(torch.randn(4, 8))\n        model.step += 1')
    assert "model.step += 1" in looped
    root = write(tmp_path, {"run.py": looped})
    assert [f.guard.source for f in lint(root) if f.guard is not None] == ["L['x']"]
    unrolled = looped.replace("        for block in self.blocks:\n            x = block(x)\n",
                              "        x = self.blocks[0](x)\n        x = self.blocks[1](x)\n")
    (root / "run.py").write_text(textwrap.dedent(unrolled))
    found = {f.guard.source: f for f in lint(root) if f.guard is not None}
    assert (found["L['self'].step"].code, found["L['self'].step"].severity.value) == ("RCL104", "error")


def test_calls_after_the_first_break_run_the_frames_of_their_own_not_a_replay(tmp_path):
    # The break is found at the first call, inside the inlined helpers: from then on Dynamo
    # runs ``with_hops`` and ``late`` as frames of their own, so the change of ``hops`` at the
    # seventh call recompiles ``with_hops`` (torch 2.13, the lab's proofs: ``G['hops'] == 0.5``,
    # 2 graphs; ``v == 0.5`` in ``late``'s resume function). A replay of the first call's entry
    # would have skipped those frames until the change.
    root = write(tmp_path, {"run.py": """
        import torch

        hops = 0.5

        def late(t, v):
            torch._dynamo.graph_break()
            return t * v

        def with_hops(x):
            return late(x, hops)

        def propagate(x):
            x = torch.relu(x)
            return with_hops(x)

        def main():
            global hops
            fast = torch.compile(propagate, backend="eager")
            for i in range(12):
                hops = 0.5 if i < 6 else 0.75
                fast(torch.randn(8, 8))

        if __name__ == "__main__":
            main()
    """})
    found = {f.guard.source: f for f in lint(root) if f.guard is not None}
    assert (found["G['hops']"].code, found["G['hops']"].severity.value, found["G['hops']"].region) == ("RCL101", "warning", "run.with_hops")
    assert (found["L['v']"].severity.value, found["L['v']"].region) == ("warning", "run.late")


# ``torch.func`` transforms: the compiled frame is the transform's ``wrapped(*args, **kwargs)``
# in torch, which inlines the function. Each case as torch 2.13 printed it (``TORCH_LOGS=
# recompiles``): a global of the script is ``G['__import___main__'].STEP`` (the limit), an
# argument ``args[1] == 2.0`` and a closure cell ``func.__closure__[0].cell_contents == 0``
# (one recompile each: a float and an int become symbolic).
TRANSFORMED = {
    "global": ("""
        STEP = 0


        def f(x):
            return x * STEP


        g = torch.compile(torch.vmap(f))


        def main():
            global STEP
            for i in range(10):
                STEP = i
                g(torch.randn(3, 4))
    """, "G['__import___main__'].STEP", "error"),
    "argument": ("""
        def make(k):
            def f(x, s):
                return x * k * s
            return f


        def main():
            for i in range(12):
                g = torch.compile(torch.func.vmap(make(0), (0, None)))
                g(torch.randn(3, 4), 2.0 + i)
    """, "L['args'][1]", "warning"),
    "closure": ("""
        from torch.func import vmap


        def make(k):
            def f(x):
                return x * k
            return f


        def main():
            for i in range(12):
                g = torch.compile(vmap(make(i)))
                g(torch.randn(3, 4))
    """, "L['func'].__closure__[0].cell_contents", "warning"),
}


@pytest.mark.parametrize("case", sorted(TRANSFORMED))
def test_a_function_under_a_torch_func_transform_is_guarded_from_torchs_wrapper(tmp_path, case):
    body, source, severity = TRANSFORMED[case]
    program = "import torch\n" + textwrap.dedent(body) + '\n\nif __name__ == "__main__":\n    main()\n'
    findings = lint(write(tmp_path, {"prog.py": program}))
    assert [(f.severity.value, f.guard.source) for f in findings if f.guard is not None] == [(severity, source)]
