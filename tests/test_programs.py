"""Values passed in two different programs meet in no cache: a script no project file imports
runs only as ``__main__``, in its own process, so an argument it passes and another script's
are each compiled once. Test modules are one program (pytest imports them all into one
process), and a script another file imports runs wherever that file does."""

from __future__ import annotations

from pathlib import Path

from recompile_lint.config import Config
from recompile_lint.engine import lint_paths

LIBRARY = """
import torch


def step(x, scale):
    return x * scale


fast_step = torch.compile(step)


def generate(x, scale=3.0):
    return fast_step(x, scale)
"""


def script(*scales: float) -> str:
    calls = "".join(f"generate(torch.randn(4), scale={scale})\n" for scale in scales)
    return f"import torch\nfrom lib import generate\n\n{calls}"


def lint(root: Path, files: dict[str, str]) -> list:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "lib.py").write_text(LIBRARY)
    for name, text in files.items():
        (root / name).write_text(text)
    return [f for f in lint_paths([str(root)], Config(select=("RCL",), cache=False)).findings if f.code == "RCL108"]


def test_two_scripts_each_passing_one_value_compile_one_graph_each(tmp_path):
    assert lint(tmp_path, {"simple.py": script(3.0), "clone.py": script(4.0)}) == []


def test_one_script_passing_two_values_recompiles(tmp_path):
    found = lint(tmp_path, {"simple.py": script(3.0, 4.0), "clone.py": script(4.0)})
    assert [(Path(f.path).name, f.line) for f in found] == [("lib.py", 6)]


def test_test_modules_are_one_program(tmp_path):
    found = lint(tmp_path, {"test_simple.py": "def test_simple():\n    " + script(3.0).replace("\n", "\n    "), "test_clone.py": "def test_clone():\n    " + script(4.0).replace("\n", "\n    ")})
    assert [(Path(f.path).name, f.line) for f in found] == [("lib.py", 6)]


def test_a_script_another_file_imports_runs_in_that_program(tmp_path):
    found = lint(tmp_path, {"simple.py": script(3.0), "clone.py": script(4.0), "both.py": "import simple\nimport clone\n"})
    assert [(Path(f.path).name, f.line) for f in found] == [("lib.py", 6)]
