"""Python 3.12 and 3.13 syntax lints on 3.10 and 3.11 as it does on 3.12: PEP 695 type
parameters and aliases, PEP 696 defaults, PEP 701 f-strings. On an older interpreter the
facts come from ``newsyntax`` (libcst's parse, brought to the ``ast`` 3.12 builds); where a
newer interpreter is installed, its own facts of the same files must be equal."""

from __future__ import annotations

import ast
import glob
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from recompile_lint.analysis.facts import ModuleFacts, collect_facts
from recompile_lint.analysis.parsing import parse_source, syntax_error
from recompile_lint.cache import decode
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths

from helpers import compare, expectations

REPO = Path(__file__).resolve().parent.parent
older = pytest.mark.skipif(sys.version_info >= (3, 12), reason="this interpreter reads the new syntax itself")

# A compiled function reading globals through new f-strings, a generic helper it calls, an
# alias and a generic class: the findings must be the ones 3.12 gives.
PROGRAM = '''\
import torch

type Scale[T: (int, float)] = dict[str, T]
CONFIG = {"mode": "fast", "width": 4}
step = 0


def describe[T](value: T, names: list[str]) -> str:
    return f"{CONFIG["mode"]}: {'\\n'.join(names)} {value!r:>{CONFIG["width"]}} {step = }"  # RCL101


class Holder[T, *Ts, **P](object):
    def get(self) -> T: ...


@torch.compile
def poly(x):
    label = f"{describe(x, [f"{CONFIG["mode"]}"])}"
    return x * step  # RCL101


def train(x):
    global step
    for _ in range(10):
        poly(x)
        step += 1
        print(f"é{step!s}" f"{
            step  # a comment inside a replacement field
        }")
'''

SAMPLES = {
    "fstrings": '''\
CONFIG = {"a": 1}
names = ["x"]
x = f"{CONFIG["a"]}"
y = f"{'\\n'.join(names)}" 'tail' f"{x!r:>{len(names)}}"
z = rf"{CONFIG["a"]}\\d{{}}" f"""multi
{f"{f"{x}"}"}
"""
w = f"{
    CONFIG["a"]  # comment
    + 1
}"
def f(a=f"{CONFIG["a"]}", *, b: f"{x}" = 1) -> f"{y}":
    return lambda: f"{a = }{b=!s:^10}"
d = {f"{k["key"]}": v for k, v in []}
''',
    "types": '''\
import typing
type Alias = int
type Generic[T] = list[T]
type Bounded[T: (int, str), *Ts, **P] = typing.Callable[P, T]
type Spread[
    T,  # a comment in the parameters
    U: int,
] = tuple[T, U]


def one[T](x: T) -> T:
    type Local = list[T]
    return x


async def two[T: int, **P](x: T) -> None:
    pass


class Box[T](typing.Generic[T], metaclass=type):
    type Inner = T

    def method[S](self, s: S) -> S:
        return s


class Bare[T]:
    pass
''',
    "unicode": '''\
données = {"clé": "é"}
x = f"é{données["clé"]}é" + f"{données["clé"]!r}"; y = données
def fé[T](é: T = f"{données["clé"]}") -> T: return é
''',
}

DEFAULTS_313 = '''\
type WithDefault[T = int] = list[T]


def f[T = str, *Ts = *tuple[int], **P = [int]](x: T) -> T:
    return x


class C[T: int = bool]:
    pass
'''


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.write_text(text, encoding="utf-8")
    return path


def facts_here(path: Path) -> ModuleFacts:
    text = path.read_text(encoding="utf-8")
    return collect_facts(parse_source(text, str(path)), str(path), "m", False, text)


def newer_pythons() -> list[tuple[str, tuple[int, int]]]:
    """Interpreters of 3.12 and later found on this machine: (executable, version)."""
    candidates = {os.environ.get("RECOMPILE_LINT_NEWER_PYTHON", "")}
    for version in ("3.12", "3.13", "3.14"):
        candidates.add(f"/usr/bin/python{version}")
        candidates.update(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}*/bin/python{version}")))
    found = []
    for candidate in sorted(c for c in candidates if c and os.path.isfile(c)):
        try:
            said = subprocess.run([candidate, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, timeout=30)
        except OSError:
            continue
        if said.returncode == 0:
            version = tuple(int(part) for part in said.stdout.split())
            if version >= (3, 12) and version not in [v for _, v in found]:
                found.append((candidate, version))
    return found


FACTS_THERE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from recompile_lint.analysis.facts import collect_facts, ModuleFacts
from recompile_lint.cache import encode
import ast
path = sys.argv[2]
text = open(path, encoding="utf-8").read()
print(json.dumps(encode(collect_facts(ast.parse(text, path), path, "m", False, text), ModuleFacts)))
"""


@older
def test_a_program_in_312_syntax_lints_with_its_findings(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'modern'\n", encoding="utf-8")
    path = write(tmp_path, "modern.py", PROGRAM)
    with pytest.raises(SyntaxError):
        ast.parse(PROGRAM)  # this interpreter's own parser rejects it
    result = lint_paths([str(path)], Config(select=("RCL",), cache=False))
    assert result.errors == ()
    missing, unexpected = compare(expectations(PROGRAM), result)
    assert not missing and not unexpected, (missing, unexpected)


@older
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_new_syntax_is_not_a_syntax_error(tmp_path, name):
    path = write(tmp_path, f"{name}.py", SAMPLES[name])
    assert syntax_error(str(path), SAMPLES[name]) is None
    tree = parse_source(SAMPLES[name], str(path))
    assert isinstance(tree, ast.Module)
    for node in ast.walk(tree):
        if "lineno" in node._attributes and hasattr(node, "lineno"):
            assert node.end_lineno >= node.lineno


def test_real_syntax_errors_stay_errors(tmp_path):
    for bad in ('print "x"\n', "def f(:\n", 'x = f"{"\n', "type = = 1\n", "def f[](x): pass\n"):
        assert syntax_error("bad.py", bad) is not None, bad


@older
def test_positions_outside_the_new_syntax_are_the_files(tmp_path):
    """Replacements keep every other byte where it was: the column of what follows a
    rewritten f-string on its line (after non-ASCII text) is the file's."""
    source = 'données = {}\nx = f"é{données["k"]}é" + données_two\n'
    tree = parse_source(source)
    name = [node for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == "données_two"][0]
    line = source.split("\n")[1]
    assert name.col_offset == len(line[: line.index("données_two")].encode("utf-8"))
    inner = [node for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == "données" and node.lineno == 2][0]
    assert inner.col_offset == len(line[: line.index("données")].encode("utf-8"))
    alias = parse_source("x = 1\ntype   Spaced [T] = list[T]\n").body[1]
    assert type(alias).__name__ == "TypeAlias" and (alias.lineno, alias.col_offset) == (2, 0)
    assert (alias.name.lineno, alias.name.col_offset) == (2, 7)
    assert [p.name for p in alias.type_params] == ["T"]


NEWER = newer_pythons()


def unparsed_alike(facts: ModuleFacts) -> ModuleFacts:
    """``facts`` with the expression texts of parameters (``ast.unparse``'s output) replaced
    by their trees: unparse writes nested f-string quotes differently from 3.12 on (for any
    f-string, new syntax or not), and that is the interpreter's, not the facts'."""
    from dataclasses import replace

    def tree(text: str) -> str:
        return ast.dump(parse_source(text)) if text else ""

    functions = tuple(
        replace(fn, params=tuple(replace(p, default=tree(p.default), annotation=tree(p.annotation)) for p in fn.params)) for fn in facts.functions
    )
    return replace(facts, functions=functions)


@older
@pytest.mark.skipif(not NEWER, reason="no Python 3.12 or later on this machine to compare with")
@pytest.mark.parametrize("name", [*sorted(SAMPLES), "program", "defaults"])
def test_facts_equal_those_of_a_newer_python(tmp_path, name):
    text = {"program": PROGRAM, "defaults": DEFAULTS_313}.get(name) or SAMPLES[name]
    path = write(tmp_path, f"{name}.py", text)
    mine = facts_here(path)
    compared = 0
    for python, version in NEWER:
        if name == "defaults" and version < (3, 13):
            continue
        there = subprocess.run([python, "-c", FACTS_THERE, str(REPO), str(path)], capture_output=True, text=True, timeout=120)
        assert there.returncode == 0, there.stderr
        theirs = decode(json.loads(there.stdout), ModuleFacts)
        assert unparsed_alike(theirs) == unparsed_alike(mine), f"facts differ from Python {version}"
        compared += 1
    if not compared:
        pytest.skip("no Python 3.13 here for its defaults")


@older
def test_a_file_of_new_syntax_no_region_needs_is_not_an_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'modern'\n", encoding="utf-8")
    paths = [write(tmp_path, f"{name}.py", text) for name, text in SAMPLES.items()]
    result = lint_paths([str(p) for p in paths], Config(cache=False))
    assert result.errors == ()
    assert result.files_checked == len(paths)
