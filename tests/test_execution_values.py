"""The values compiled code reaches through another: a bound method held somewhere, a compile
wrapper's options, and what they cost (``execution/dynamo.py``, ``execution/cache.py``)."""

from __future__ import annotations

from recompile_lint.analysis.execution.cache import Observed, graphs_of
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


def test_a_size_an_op_needs_as_a_python_int_recompiles_under_dynamic_true():
    meta = [TensorMeta((n,), "torch.float32", "cpu", False) for n in (2, 3, 4)]
    read = _read("G['cfg'].width", "TENSOR_MATCH", meta[0])
    split = Observed(values=list(meta), use="op-split", options=(("dynamic", "True"),))
    assert graphs_of(_Region(), read, split, 3) == 2
    plain = Observed(values=list(meta), options=(("dynamic", "True"),))
    assert graphs_of(_Region(), read, plain, 3) == 1  # symbolic from the first call
