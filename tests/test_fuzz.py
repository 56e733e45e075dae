"""The linter must not crash on any syntactically valid module, and must say the same thing,
in the same order, every time it lints the same code.

Two generators: programs assembled from the constructs the rules look at (compiled regions in
every spelling, globals of every kind and their mutations, classes and modules, lambdas, nested
functions, walrus, match, async, decorators, star-args), with names drawn from a small pool so
they collide in every way; and hypothesmith's grammar-derived programs (weird but valid
syntax), with every function made a compiled region so the rules run on their bodies.
Example counts are bounded so the suite stays fast.
"""

from __future__ import annotations

import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from recompile_lint.config import Config
from recompile_lint.engine import lint_paths
from recompile_lint.analysis.facts import DEEP_CODE_FRAMES
from recompile_lint.models import LintResult

# The linter raises the recursion limit on first use (deeply nested valid code); raise it
# before hypothesis records the limit, so it does not warn that the limit changed under it.
sys.setrecursionlimit(max(sys.getrecursionlimit(), DEEP_CODE_FRAMES))

ALL = Config(select=("RCL",), cache=False)

GLOBALS = ("step", "CFG", "mode", "n", "x", "scale")
FUNCS = ("f", "helper", "forward", "step", "poly")
CLASSES = ("Net", "Cfg", "Mode")
KEYS = ("k", "step", "N")

MODULE_VALUES = (
    "{g} = 0",
    "{g} = 'a'",
    "{g} = 0.5",
    "{g} = True",
    "{g} = None",
    "{g} = torch.zeros(())",
    "{g} = {{'{k}': 1, 'other': 2.0}}",
    "{g} = [1, 2, 3]",
    "{g} = ({g2}, 1) if {g2} else 1",
    "{g}: int = 3",
    "{g} = {g2} = 4",
    "{g}, {g2} = 1, 2",
    "{g} = {c}()",
    "{g} = lambda t, *a, **k: t * {g2}",
    "from {mod} import {g2} as {g}",
    "import {mod} as {g}",
    "from {mod} import *",
    "class {c}:\n    {g} = 1\n    {g2}: str = 'x'",
    "class {c}(Enum):\n    A = 1\n    B = 2\n{g} = {c}.A",
    "@dataclass\nclass {c}:\n    {g}: int = 0",
)

DECORATORS = (
    "@torch.compile",
    "@torch.compile()",
    "@torch.compile(dynamic=False, backend='eager')",
    "@torch._dynamo.optimize('eager')",
    "@torch.compiler.disable",
    "@torch._dynamo.disable",
    "@functools.lru_cache(maxsize=None)",
    "@functools.wraps({f2})",
    "",
)

SIGNATURES = (
    "(x)",
    "(x, n: int)",
    "(x: torch.Tensor, start: int, end: int = 4)",
    "(x, *args, **kwargs)",
    "(x, /, n=3, *, k: int = 1)",
    "(*xs)",
    "()",
)

BODY = (
    "x = x * {g}",
    "return x * {g}",
    "global {g}\n{g} += 1",
    "global {g}\n{g} = {g} + 1",
    "nonlocal_value = {g}\ndel nonlocal_value",
    "for i in range(n):\n    x = x + i",
    "for i in range({g}, n):\n    x = x + {g}",
    "if (y := {g}) > 0:\n    x = x * y",
    "match {g}:\n    case 1:\n        x = x + 1\n    case [a, *rest]:\n        x = x + a\n    case {{'{k}': v}}:\n        x = x * v\n    case {c}(a=b):\n        pass\n    case _:\n        pass",
    "x = x * {g}['{k}']",
    "{g}['{k}'] += 1",
    "{g}.{g2} += 1",
    "x = x * {c}.{g2}",
    "x = x * int(os.environ.get('{k}', '1'))",
    "x = x * float(os.environ['{k}'])",
    "x = x + len(os.getenv('{k}') or '')",
    "fn = lambda t, *a, k={g}: t * {g} * k\nx = fn(x)",
    "def inner(t, *a, **kw):\n    return t * {g}\nx = inner(x)",
    "def inner(t):\n    nonlocal x\n    x = t\n    return {g}",
    "x = {f2}(x)",
    "x = {f2}(x, *[1], **{{}})",
    "with torch.no_grad():\n    x = x + {g}",
    "with torch.autocast('cpu'), open(__file__) as fh:\n    x = x * 2",
    "try:\n    x = x / {g}\nexcept (ZeroDivisionError, TypeError) as e:\n    raise ValueError(e) from None\nfinally:\n    pass",
    "x = [t * {g} for t in (x,) if t is not None][0]",
    "x = {{k: v for k, v in {g}.items()}} if isinstance({g}, dict) else x",
    "x = x if {g} else -x",
    "x, *rest = x, 1, 2",
    "assert {g}, f'{{{g}!r:>{{n}}}}'",
    "x = x.reshape(*x.shape[:1], -1) if x.dim() > 1 else x",
    "if x.shape[0] > 4:\n    x = x[:4]",
    "x = x * self.{g}" ,
    "self.{g} += 1",
    "yield x",
    "x = (yield)",
    "await asyncio.sleep(0)",
    "async for a in agen():\n    x = a",
    "del {g}",
    "print(*x, sep='', **{{}})",
    "x = x @ x.T if x.ndim == 2 else x",
    "x = x[..., None]",
    "x = torch.compile(lambda t: t * {g})(x)",
    "return",
    "pass",
)

TOP_LEVEL = (
    "{f}(torch.ones(2))",
    "for i in range(3):\n    {g} = i\n    {f}(torch.ones(2))",
    "{g} += 1",
    "{g}['{k}'] = 3",
    "{c}.{g2} = 5",
    "os.environ['{k}'] = '2'",
    "compiled = torch.compile({f})",
    "compiled = torch.compile({f}, dynamic=True)\ncompiled(torch.ones(2))",
    "model = torch.compile({c}())\nmodel.train()\nmodel.eval()",
    "net = {c}()\nnet.compile()\nnet.{g} = 3",
    "torch.compile(lambda t: t * {g})(torch.ones(1))",
    "torch._dynamo.config.recompile_limit = 64",
    "torch._dynamo.config.cache_size_limit = {g}",
    "torch.compiler.config.dynamic_sources = \"G['{g}']\"",
    "if __name__ == '__main__':\n    {f}(torch.ones(2))",
    "def main():\n    global {g}\n    for {g} in range(10):\n        {f}(torch.ones({g}))",
    "with torch.no_grad():\n    {f}(torch.ones(2))",
    "for fn in (torch.sin, torch.cos):\n    {f}(fn, torch.ones(1))",
    "{f}([torch.ones(1)] * 3)",
    "{f}(torch.ones(7, 3))\n{f}(torch.ones(1, 3))",
)

CLASS_TEMPLATE = """\
class {c}({base}):
    {attr} = 1

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.{g} = 0
        self.{g2} = torch.zeros(())

    {deco}
    def {f}{sig}:
{body}
"""


def fill(template: str, draw) -> str:
    return template.format(
        g=draw(st.sampled_from(GLOBALS)),
        g2=draw(st.sampled_from(GLOBALS)),
        f=draw(st.sampled_from(FUNCS)),
        f2=draw(st.sampled_from(FUNCS)),
        c=draw(st.sampled_from(CLASSES)),
        k=draw(st.sampled_from(KEYS)),
        mod=draw(st.sampled_from(("helpers", "main"))),
    )


@st.composite
def function_def(draw, indent: str = "") -> str:
    deco = fill(draw(st.sampled_from(DECORATORS)), draw)
    name = draw(st.sampled_from(FUNCS))
    sig = draw(st.sampled_from(SIGNATURES))
    kind = draw(st.sampled_from(("def", "def", "def", "async def")))
    statements = [fill(s, draw) for s in draw(st.lists(st.sampled_from(BODY), min_size=1, max_size=6))]
    body = textwrap.indent("\n".join(statements), indent + "    ")
    head = f"{indent}{deco}\n" if deco else ""
    return f"{head}{indent}{kind} {name}{sig}:\n{body}\n"


@st.composite
def class_def(draw) -> str:
    statements = [fill(s, draw) for s in draw(st.lists(st.sampled_from(BODY), min_size=1, max_size=4))]
    return CLASS_TEMPLATE.format(
        c=draw(st.sampled_from(CLASSES)),
        base=draw(st.sampled_from(("torch.nn.Module", "nn.Module", "object", "Enum", ""))),
        attr=draw(st.sampled_from(GLOBALS)),
        g=draw(st.sampled_from(GLOBALS)),
        g2=draw(st.sampled_from(GLOBALS)),
        deco=fill(draw(st.sampled_from(DECORATORS)), draw) or "# plain",
        f=draw(st.sampled_from(("forward", "step", "helper"))),
        sig=draw(st.sampled_from(("(self, x)", "(self, x, n: int = 2)", "(self, *args)"))),
        body=textwrap.indent("\n".join(statements), "        "),
    )


@st.composite
def module_source(draw) -> str:
    header = "import asyncio\nimport functools\nimport os\nfrom dataclasses import dataclass\nfrom enum import Enum\n\nimport torch\nfrom torch import nn\n"
    parts = []
    for _ in range(draw(st.integers(min_value=1, max_value=7))):
        choice = draw(st.sampled_from(("value", "function", "function", "class", "top")))
        if choice == "value":
            parts.append(fill(draw(st.sampled_from(MODULE_VALUES)), draw))
        elif choice == "function":
            parts.append(draw(function_def()))
        elif choice == "class":
            parts.append(draw(class_def()))
        else:
            parts.append(fill(draw(st.sampled_from(TOP_LEVEL)), draw))
    return header + "\n\n".join(parts) + "\n"


def is_valid(source: str) -> bool:
    """Whether the interpreter accepts ``source`` as a module (syntax and symbol tables)."""
    try:
        compile(source, "<fuzz>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def signature(result: LintResult) -> list[tuple]:
    """Everything a user sees of a run, in output order."""
    return [
        (f.path, f.line, f.column, f.end_line, f.end_column, f.code, f.severity.value, f.message, f.region, f.function, f.subject)
        for f in result.findings
    ] + [(e.path, e.line, e.column, e.message) for e in result.errors]


def lint_project(files: dict[str, str]) -> None:
    """Lint a project of ``files`` twice: no exception, no file error, identical results."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[project]\nname = 'fuzz'\n", encoding="utf-8")
        for name, text in files.items():
            (root / name).write_text(text, encoding="utf-8")
        paths = [str(root / name) for name in sorted(files)]
        first = lint_paths(paths, ALL)
        second = lint_paths(list(reversed(paths)), ALL)
    assert first.errors == (), f"valid code reported as a file error: {first.errors}"
    assert signature(first) == signature(second), "two runs over the same code differ"
    assert list(first.findings) == sorted(first.findings), "findings are not sorted"


def fuzz_settings(examples: int) -> settings:
    # derandomize: CI sees the same examples every run; a failure found locally stays found.
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
        derandomize=True,
    )


@fuzz_settings(20)
@given(main=module_source(), helpers=module_source())
def test_generated_projects_lint_without_internal_error(main, helpers):
    assume(is_valid(main) and is_valid(helpers))
    lint_project({"main.py": main, "helpers.py": helpers})


@fuzz_settings(25)
@given(source=module_source())
def test_generated_module_alone(source):
    """One file, as a pre-commit hook passing a single changed file sees it."""
    assume(is_valid(source))
    lint_project({"main.py": source})


hypothesmith = pytest.importorskip("hypothesmith", reason="hypothesmith is in the test extra")


def compile_every_function(source: str) -> str | None:
    """``source`` with ``@torch.compile`` on every function and ``import torch`` first, so the
    rules run on grammar-generated bodies; None when libcst cannot round-trip it."""
    import libcst as cst

    class Decorate(cst.CSTTransformer):
        def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
            deco = cst.Decorator(decorator=cst.parse_expression("torch.compile"))
            return updated.with_changes(decorators=[deco, *updated.decorators])

    try:
        module = cst.parse_module(source)
    except Exception:  # noqa: BLE001 - libcst's grammar lags the interpreter's in places
        return None
    return "import torch\n" + module.visit(Decorate()).code + "\ncompiled = torch.compile(lambda x: x)\n"


@fuzz_settings(20)
@given(source=hypothesmith.from_grammar())
def test_grammar_generated_modules(source):
    decorated = compile_every_function(source)
    assume(decorated is not None and is_valid(decorated))
    lint_project({"main.py": decorated})


@fuzz_settings(30)
@given(source=hypothesmith.from_grammar())
def test_expression_text_is_what_ast_unparse_gives(source):
    """Parameter annotations and defaults take a short cut past ``ast.unparse``; for every
    expression of grammar-generated code the text must be the same."""
    import ast

    from recompile_lint.analysis.facts import expression_text

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        assume(False)
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.expr):
            assert expression_text(node) == ast.unparse(node)


def test_expression_text_short_cuts():
    import ast

    from recompile_lint.analysis.facts import expression_text

    for text in ("a", "a.b.c", "None", "True", "False", "0", "12345678901234567890", "x.y()", "-1", "1.5", "'s'", "a[b].c", "(a).b", "'''q\"'''"):
        node = ast.parse(text, mode="eval").body
        assert expression_text(node) == ast.unparse(node), text
