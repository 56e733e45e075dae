"""Which files the analysis parses beyond the compile-site candidates: every place that can
change a value a region reads must be in the index before the rules ask for it, and every
file that calls a project's compile wrapper must be read for compile sites."""

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
                import torch

                import pkg.state
                from pkg.model import step


                def train():
                    x = torch.ones(2)
                    for _ in range(10):
                        step(x)
                        pkg.state.enable()
                        pkg.state.FLAG = _ % 2 == 0
                """,
        },
    )
    model = str(tmp_path / "pkg" / "model.py")
    result = lint_paths([model], Config(select=("RCL101",), cache=False))
    [finding] = result.findings
    assert (finding.line, finding.code) == (8, "RCL101")
    assert "pkg/state.py:6" in finding.message.replace("\\", "/")
    assert "pkg/train.py:12" in finding.message.replace("\\", "/")


def test_a_wrapper_is_followed_into_files_that_never_mention_compile(tmp_path):
    # ``fast`` compiles its parameter; train.py only calls it, so the first text test (compile
    # sites) passes it over and the wrapper pass must pick it up.
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/wrap.py": """\
                import torch


                def fast(fn):
                    return torch.compile(fn)
                """,
            "pkg/train.py": """\
                from pkg.wrap import fast

                scale = 1


                def body(x):
                    return x * scale


                step = fast(body)


                def main(xs):
                    global scale
                    for x in xs:
                        scale += 1
                        step(x)
                """,
        },
    )
    train = str(tmp_path / "pkg" / "train.py")
    result = lint_paths([train], Config(select=("RCL101",), cache=False))
    assert [(f.line, f.code) for f in result.findings] == [(7, "RCL101")]
