"""Values that flow where Dynamo still guards them: what traced code passes to a disabled
function (``execution/dynamo.py``), and the count of a recompile the lab measured
(``execution/cache.py``, ``analysis/risks.py``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from recompile_lint.analysis.execution.interpreter import Interpreter
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths

from execution_helpers import Sources
from test_execution_guards import Traces


def traced(source: str) -> list[dict]:
    observer = Traces()
    Interpreter(Sources({"main.py": source}), observer).run_module("main.py", as_main=True)
    return observer.calls


def write(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))
    return root


def lint(root: Path):
    return list(lint_paths([str(root)], Config(select=("RCL",), cache=False)).findings)


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
    assert kinds["L['cfg'].k"] == "CONSTANT_MATCH"
    assert kinds["L['d']['w']"] == "TENSOR_MATCH"
    assert not any(source.startswith("L['box'].") for source in call)  # an object is passed as it is
    assert all(call[s].passed and call[s].read.line == 24 for s in ("L['hp'][0]", "L['cfg'].margin", "L['d']['w']"))


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


def test_a_measured_cell_decides_the_count_of_a_value_automatic_dynamic_frees():
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
    assert from_recompile(found, predicted) is None  # torch 2.13's rule: an input after one recompile
    from dataclasses import replace

    risk = from_recompile(replace(found, measured=True), predicted)
    assert risk is not None and risk.graphs == 2  # the lab measured the cell bounded: torch compiled twice
