"""Which files the mutation scan parses: every place that can change a value a region reads
must be in the index before the rules ask for it."""

from __future__ import annotations

import textwrap
from pathlib import Path

from recompile_lint.config import Config
from recompile_lint.engine import lint_paths


def write(root: Path, files: dict[str, str]) -> None:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_a_value_read_through_a_module_chain_is_scanned(tmp_path):
    # ``pkg.state.FLAG`` is read after ``import pkg``: ``pkg.state`` is not imported by name,
    # yet its rebinding of FLAG (and a third module's) must be found.
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/state.py": """\
                FLAG = False


                def enable():
                    global FLAG
                    FLAG = True
                """,
            "pkg/model.py": """\
                import torch

                import pkg


                @torch.compile
                def step(x):
                    if pkg.state.FLAG:
                        return x + 1
                    return x
                """,
            "pkg/train.py": """\
                import pkg.state


                def warmup():
                    pkg.state.FLAG = False
                """,
        },
    )
    model = str(tmp_path / "pkg" / "model.py")
    result = lint_paths([model], Config(select=("RCL101",), cache=False))
    [finding] = result.findings
    assert (finding.line, finding.code) == (8, "RCL101")
    assert "pkg/state.py:6" in finding.message.replace("\\", "/")
    assert "pkg/train.py:5" in finding.message.replace("\\", "/")
