"""Code under ``if not torch.compiler.is_compiling():`` is never traced, whatever the name the
module calls it by: a re-export of the project's own (``from pkg.common import
is_torchdynamo_compiling``, where ``pkg/common.py`` imports ``torch.compiler.is_compiling``
under that name) is resolved, in the guard model, in the region's reach and in the writes the
region makes at each call."""

from __future__ import annotations

import textwrap
from pathlib import Path

from recompile_lint.analysis.index import FactsStore, ProjectIndex
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths

COMMON = "from torch.compiler import is_compiling as is_torchdynamo_compiling  # re-exported\n"

MODULE = '''
import torch
from pkg.common import is_torchdynamo_compiling


def count_calls(module):
    module.calls += 1


class Table(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 0
        self.calls = 0

    def forward(self, x):
        {test}
            self.step += 1
            count_calls(self)
        if self.step > 100 or self.calls > 100:
            return x * 2
        return x


def build(compile):
    table = Table()
    return torch.compile(table, fullgraph=True) if compile else table
'''


def lint(root: Path, test: str) -> list[str]:
    (root / "pkg").mkdir(exist_ok=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "common.py").write_text(COMMON)
    (root / "pkg" / "table.py").write_text(textwrap.dedent(MODULE).lstrip("\n").replace("{test}", test))
    result = lint_paths([str(root)], Config(select=("RCL",), cache=False))
    return sorted(f"{f.code} {f.line}" for f in result.findings)


def test_writes_under_a_re_exported_is_compiling_test_are_not_traced(tmp_path):
    assert lint(tmp_path, "if not is_torchdynamo_compiling():") == []


def test_the_same_writes_under_any_other_test_are_evidence(tmp_path):
    # The control: a test Dynamo traces through leaves the increments in every call.
    assert lint(tmp_path, "if x.dim() > 0:") != []


def test_a_re_export_resolves_to_what_it_imports(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg.common import is_torchdynamo_compiling as compiling\n")
    (tmp_path / "pkg" / "common.py").write_text(COMMON)
    files = [str(tmp_path / "pkg" / "__init__.py"), str(tmp_path / "pkg" / "common.py")]
    index = ProjectIndex(files, FactsStore())
    assert index.resolve_export("pkg.compiling", files[0]) == "torch.compiler.is_compiling"
    assert index.resolve_export("pkg.common.is_torchdynamo_compiling", files[0]) == "torch.compiler.is_compiling"
    assert index.resolve_export("pkg.common.other", files[0]) == "pkg.common.other"
