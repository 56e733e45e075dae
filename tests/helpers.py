"""Test support: inline expectations (``# RCL101`` / ``# RCL101[warning]``) and linting snippets."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from recompile_lint.config import Config
from recompile_lint.engine import lint_paths
from recompile_lint.models import LintResult

EXPECT = re.compile(r"#\s*(RCL\d{3}(?:\[\w+\])?(?:[ ,]+RCL\d{3}(?:\[\w+\])?)*)\s*$")
ITEM = re.compile(r"(RCL\d{3})(?:\[(\w+)\])?")

ALL_RULES = Config(select=("RCL",), cache=False)

# The seed case: a compiled function reading a global that the training loop increments
# (one RCL101 at line 8, column 16).
SEED_SOURCE = """\
import torch

step = 0


@torch.compile
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * step


def main() -> None:
    global step
    for _ in range(10):
        step += 1
        poly(torch.ones(3))
"""


def expectations(text: str) -> set[tuple[int, str, str | None]]:
    """(line, code, severity or None) for every line ending in an expectation comment."""
    out: set[tuple[int, str, str | None]] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            for code, severity in ITEM.findall(match.group(1)):
                out.add((number, code, severity or None))
    return out


def compare(expected: set[tuple[int, str, str | None]], result: LintResult, path: str | None = None) -> tuple[set, set]:
    """(missing, unexpected) between expectations and findings (of ``path`` when given)."""
    got = {(f.line, f.code, f.severity.value) for f in result.findings if path is None or f.path == path}
    missing = set()
    for line, code, severity in expected:
        if not any(g[0] == line and g[1] == code and (severity is None or g[2] == severity) for g in got):
            missing.add((line, code, severity))
    unexpected = {g for g in got if not any(e[0] == g[0] and e[1] == g[1] for e in expected)}
    return missing, unexpected


def lint_snippet(tmp_path: Path, source: str, name: str = "snippet.py", config: Config = ALL_RULES) -> LintResult:
    """Lint ``source`` as a one-file project in ``tmp_path``."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    return lint_paths([str(path)], config)
