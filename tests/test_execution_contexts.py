"""Project context managers a driver enters around its calls (``execution/contexts.py``): what
``__enter__`` / ``__exit__`` and a ``@contextmanager`` generator write before and after the
body. Counts measured on torch 2.13 (``TORCH_LOGS=recompiles``) for each program here."""

from __future__ import annotations

import pytest

from test_execution_guards import lint, write

PROGRAM = """
import contextlib
import torch


class Attn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = None
        self.scale = 1.0

    def forward(self, x):
        if self.cache is None:
            return x * self.scale
        return x * self.scale + self.cache


MANAGER

def main():
    model = Attn()
    compiled = torch.compile(model, dynamic=False)
    for step in range(12):
        DRIVE


if __name__ == "__main__":
    main()
"""

GENERATOR = """
@contextlib.contextmanager
def using(model, cache, scale=1.0):
    previous = model.scale
    model.cache = cache
    model.scale = scale
    try:
        yield model
    finally:
        model.cache = None
        model.scale = previous
"""

CLASS = """
class using:
    def __init__(self, model, cache, scale=1.0):
        self.model, self.new, self.scale = model, cache, scale

    def __enter__(self):
        self.previous = self.model.scale
        self.model.cache = self.new
        self.model.scale = self.scale
        return self.model

    def __exit__(self, *exc):
        self.model.cache = None
        self.model.scale = self.previous
        return False
"""

# The cache set inside and cleared on exit, a call inside and one after: 2 graphs.
ALTERNATING = """with using(model, torch.zeros(3)):
            compiled(torch.ones(3))
        compiled(torch.ones(3))"""


@pytest.mark.parametrize("manager", [GENERATOR, CLASS], ids=["contextmanager", "class"])
def test_a_value_a_manager_sets_on_entry_and_clears_on_exit_differs_between_calls(tmp_path, manager):
    program = PROGRAM.replace("MANAGER", manager).replace("DRIVE", ALTERNATING)
    [finding] = lint(write(tmp_path, {"run.py": program}))
    assert (finding.severity.value, finding.guard.source) == ("warning", "L['self'].cache")
    roles = {(e.role, e.line) for e in finding.evidence}
    assert ("write", program.splitlines().index("        model.cache = None") + 1 if manager is GENERATOR else
            program.splitlines().index("        self.model.cache = None") + 1) in roles


@pytest.mark.parametrize("manager", [GENERATOR, CLASS], ids=["contextmanager", "class"])
def test_a_value_a_manager_sets_per_step_recompiles_every_step(tmp_path, manager):
    drive = """with using(model, None, scale=0.5 * step) as entered:
            compiled(torch.ones(3))"""
    [finding] = lint(write(tmp_path, {"run.py": PROGRAM.replace("MANAGER", manager).replace("DRIVE", drive)}))
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL104", "error", "L['self'].scale")


@pytest.mark.parametrize("manager", [GENERATOR, CLASS], ids=["contextmanager", "class"])
def test_every_call_inside_one_managed_value_is_silent(tmp_path, manager):
    # Set on entry, restored on exit, and every call runs inside: one graph.
    drive = """with using(model, torch.zeros(3), scale=2.0):
            compiled(torch.ones(3))"""
    assert lint(write(tmp_path, {"run.py": PROGRAM.replace("MANAGER", manager).replace("DRIVE", drive)})) == []


def test_the_finally_of_a_generator_runs_when_the_body_raises(tmp_path):
    # The first call raises inside the manager: its finally clears the cache, so the call after
    # the ``try`` sees None as the others do (and the calls inside see the cache): 2 graphs.
    drive = """try:
            with using(model, torch.zeros(3)):
                compiled(torch.ones(3))
                raise ValueError("stop")
        except ValueError:
            pass
        compiled(torch.ones(3))"""
    program = PROGRAM.replace("MANAGER", GENERATOR).replace("DRIVE", drive)
    [finding] = lint(write(tmp_path, {"run.py": program}))
    assert finding.guard.source == "L['self'].cache"


def test_a_manager_method_of_another_object_is_followed(tmp_path):
    manager = """
class Runner:
    def __init__(self, model):
        self.model = model

    @contextlib.contextmanager
    def scaled(self, value):
        previous = self.model.scale
        self.model.scale = value
        try:
            yield self.model
        finally:
            self.model.scale = previous
"""
    drive = """with Runner(model).scaled(0.5 * step) as entered:
            compiled(torch.ones(3))"""
    [finding] = lint(write(tmp_path, {"run.py": PROGRAM.replace("MANAGER", manager).replace("DRIVE", drive)}))
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL104", "error", "L['self'].scale")


def test_a_manager_a_generator_enters_around_its_yield_holds_for_the_body(tmp_path):
    # ``with Scaled(...): yield``: the inner manager sets the scale on entry, puts it back on exit.
    manager = """
class Scaled:
    def __init__(self, model, scale):
        self.model, self.scale = model, scale

    def __enter__(self):
        self.model.scale = self.scale

    def __exit__(self, *exc):
        self.model.scale = 1.0


@contextlib.contextmanager
def using(model, cache, scale=1.0):
    with Scaled(model, scale):
        yield model
"""
    drive = """with using(model, None, scale=0.5 * step):
            compiled(torch.ones(3))"""
    program = PROGRAM.replace("MANAGER", manager).replace("DRIVE", drive)
    [finding] = lint(write(tmp_path, {"run.py": program}))
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL104", "error", "L['self'].scale")


@pytest.mark.parametrize("manager", ["""
@contextlib.contextmanager
def scaled(k):
    yield 0.5 * k  # gives
""", """
class scaled:
    def __init__(self, k):
        self.k = k

    def __enter__(self):
        return 0.5 * self.k  # gives

    def __exit__(self, *exc):
        return False
"""], ids=["contextmanager", "class"])
def test_the_value_a_manager_gives_as_its_target_is_written_where_it_is_given(tmp_path, manager):
    program = f"""
import contextlib
import torch

@torch.compile(dynamic=False, backend="eager")
def step(x, scale):
    return x * scale
{manager}
for k in range(12):
    with scaled(k) as scale:
        step(torch.ones(3), scale)
"""
    [finding] = lint(write(tmp_path, {"run.py": program}))
    assert (finding.code, finding.severity.value, finding.guard.source) == ("RCL108", "error", "L['scale']")
    gives = next(n for n, line in enumerate(program.splitlines(), 1) if line.endswith("# gives"))
    assert ("write", gives) in {(e.role, e.line) for e in finding.evidence}
