"""An attribute every construction of a class leaves at one constant decides the tests on it
as a constant parameter does: Dynamo guards on ``self.dynamic_chunk`` and traces only the branch
it takes, so a graph break in the other branch is never met. Anything the project does not show
in full (another write, a subclass, a construction that passes another value, the class handed
on where it may be constructed with anything) leaves both branches live."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from recompile_lint.analysis.constants import NOT_CONSTANT, NOT_NONE
from recompile_lint.analysis.constructed import ConstructedAttributes
from recompile_lint.analysis.index import FactsStore, ProjectIndex
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths

MODEL = '''
import torch


def chunk_mask(x, dynamic):
    if dynamic:
        return x[: int(x.sum().item())]
    return x


class Encoder(torch.nn.Module):
    {class_body}
    def __init__(self, size: int, dynamic_chunk: bool = False):
        super().__init__()
        self.size = size
        self.dynamic_chunk = dynamic_chunk
        {init_extra}

    def forward(self, x):
        if self.dynamic_chunk:
            x = x * x.max().item()
        return chunk_mask(x, self.dynamic_chunk)
'''

TRAIN = '''
import torch
from pkg.model import Encoder

model = torch.compile(Encoder(8{arguments}))
for _ in range(10):
    model(torch.randn(4, 8))
{extra}
'''


def write(root: Path, arguments: str = "", extra: str = "", class_body: str = "", init_extra: str = "", more: dict[str, str] | None = None) -> list[str]:
    (root / "pkg").mkdir(exist_ok=True)
    (root / "pkg" / "__init__.py").write_text("")
    model = textwrap.dedent(MODEL).lstrip("\n").replace("{class_body}", class_body).replace("{init_extra}", init_extra)
    (root / "pkg" / "model.py").write_text(model)
    (root / "pkg" / "train.py").write_text(textwrap.dedent(TRAIN).lstrip("\n").replace("{arguments}", arguments).replace("{extra}", extra))
    for name, text in (more or {}).items():
        (root / "pkg" / name).write_text(textwrap.dedent(text).lstrip("\n"))
    return [str(p) for p in sorted((root / "pkg").glob("*.py"))]


def breaks(root: Path) -> list[int]:
    result = lint_paths([str(root)], Config(select=("RCL404",), cache=False))
    return sorted(f.line for f in result.findings if f.code == "RCL404")


def value(files: list[str], attr: str) -> object:
    index = ProjectIndex(files, FactsStore())
    path = next(f for f in files if f.endswith("model.py"))
    facts = index.facts(path)
    return ConstructedAttributes(index).value(facts, facts.cls("Encoder"), attr)


def test_a_default_no_construction_overrides_rules_out_both_breaks(tmp_path):
    files = write(tmp_path)
    assert value(files, "dynamic_chunk") is False
    assert breaks(tmp_path) == []


def test_a_construction_that_passes_another_value_leaves_them_live(tmp_path):
    files = write(tmp_path, extra="other = torch.compile(Encoder(4, dynamic_chunk=True))\n")
    assert value(files, "dynamic_chunk") is NOT_NONE  # two values: only ``is None`` is decided
    assert breaks(tmp_path) == [6, 20]


def test_every_construction_passing_the_same_literal_is_that_constant(tmp_path):
    files = write(tmp_path, arguments=", True", extra="other = Encoder(4, dynamic_chunk=True)\n")
    assert value(files, "dynamic_chunk") is True
    # The taken branch's breaks remain; nothing else decides them.
    assert breaks(tmp_path) == [6, 20]


def test_a_write_anywhere_else_leaves_them_live(tmp_path):
    write(tmp_path, extra="model.dynamic_chunk = True\n")
    assert breaks(tmp_path) == [6, 20]


def test_a_write_in_another_method_leaves_them_live(tmp_path):
    write(tmp_path, class_body="def enable(self):\n        self.dynamic_chunk = True\n\n   ")
    assert breaks(tmp_path) == [6, 23]


def test_type_tests_and_annotations_are_no_construction(tmp_path):
    files = write(tmp_path, extra="def check(m: Encoder) -> Encoder:\n    assert isinstance(m, (Encoder, torch.nn.Linear))\n    return m\n")
    assert value(files, "dynamic_chunk") is False


def test_a_construction_through_an_alias_counts(tmp_path):
    files = write(tmp_path, more={"other.py": "from pkg.model import Encoder as Lyrics\n\nenc = Lyrics(3, True)\n"})
    assert value(files, "dynamic_chunk") is NOT_NONE
    files = write(tmp_path, more={"other.py": "from pkg.model import Encoder as Lyrics\n\nenc = Lyrics(3, False)\n"})
    assert value(files, "dynamic_chunk") is False


@pytest.mark.parametrize("change", [
    {"extra": "REGISTRY = {'encoder': Encoder}\n"},  # handed on: constructed elsewhere with anything
    {"extra": "cfg = {}\nthird = Encoder(**cfg)\n"},  # a spread may pass anything
    {"more": {"sub.py": "from pkg.model import Encoder\n\nclass Streaming(Encoder):\n    pass\n"}},  # a subclass
    {"init_extra": "for k, v in {}.items():\n            setattr(self, k, v)"},  # setattr may set any attribute
])
def test_what_the_project_does_not_show_in_full_is_no_constant(tmp_path, change):
    files = write(tmp_path, **change)
    assert value(files, "dynamic_chunk") is NOT_CONSTANT


def test_a_literal_write_holds_even_in_a_class_nobody_constructs(tmp_path):
    files = write(tmp_path, init_extra="self.mode = 'eval'")
    (tmp_path / "pkg" / "train.py").write_text("")
    assert value(files, "mode") == "eval"
    assert value(files, "dynamic_chunk") is NOT_CONSTANT  # its users pass what they like


def test_a_class_level_default_never_written_is_a_constant(tmp_path):
    files = write(tmp_path, class_body="fused = False\n\n   ")
    assert value(files, "fused") is False


def test_two_values_neither_none_decide_only_is_none(tmp_path):
    files = write(tmp_path, init_extra="self.window = 4 if size > 2 else 8")
    assert value(files, "window") is NOT_CONSTANT  # a conditional expression: no literal
    files = write(tmp_path, init_extra="if size > 2:\n            self.window = 4\n        else:\n            self.window = 8")
    assert value(files, "window") is NOT_NONE


def test_training_is_written_by_train_and_eval(tmp_path):
    files = write(tmp_path, class_body="training = False\n\n   ")
    assert value(files, "training") is NOT_CONSTANT


GLOBAL_MODEL = '''
import torch

STEP = 0


class Scaler(torch.nn.Module):
    def __init__(self, warmup: bool = False):
        super().__init__()
        self.warmup = warmup

    def forward(self, x):
        if self.warmup:
            return x * STEP
        return x
'''

GLOBAL_TRAIN = '''
import torch
import pkg.scaler as scaler


class Trainer:
    # No run reaches the compiled call (a framework calls ``training_step``): the guard
    # model and the writes decide.
    def __init__(self):
        self.model = torch.compile(scaler.Scaler({arguments}))

    def training_step(self, batch):
        scaler.STEP += 1
        return self.model(batch)
'''


def test_the_guard_model_walks_only_the_branch_a_constant_attribute_takes(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "scaler.py").write_text(GLOBAL_MODEL.lstrip("\n"))

    def findings(arguments: str) -> list[str]:
        (tmp_path / "pkg" / "train.py").write_text(GLOBAL_TRAIN.lstrip("\n").replace("{arguments}", arguments))
        result = lint_paths([str(tmp_path)], Config(select=("RCL",), cache=False))
        return sorted(f"{f.code} {f.line}" for f in result.findings)

    # Every construction leaves ``warmup`` False: ``STEP`` is never read, never guarded.
    assert findings("") == []
    # The control: a construction that turns it on reads the counter at every call.
    assert findings("warmup=True") != []


SWITCHES = '''
import torch

history = []


class Switches:
    def __init__(self, audit: bool = False):
        self.audit = audit


SWITCHES = Switches()
STEP = 0


def infer(x):
    x = torch.tanh(x)
    if SWITCHES.audit:
        history.append(STEP)
        x = x * STEP
    return x
'''

SWITCHES_TRAIN = '''
import torch
import pkg.model as model
from pkg.model import infer


class Trainer:
    def __init__(self):
        self.fast = torch.compile(infer)

    def training_step(self, batch):
        model.STEP += 1
        return self.fast(batch)
{extra}
'''


def switches(root: Path, extra: str = "") -> list[str]:
    (root / "pkg").mkdir(exist_ok=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "model.py").write_text(SWITCHES.lstrip("\n"))
    (root / "pkg" / "train.py").write_text(SWITCHES_TRAIN.lstrip("\n").replace("{extra}", extra))
    result = lint_paths([str(root)], Config(select=("RCL",), cache=False))
    return sorted(f"{f.code} {f.line}" for f in result.findings)


def test_a_module_level_object_constructed_once_decides_its_tests(tmp_path):
    assert switches(tmp_path) == []


def test_a_module_level_object_turned_on_elsewhere_reads_the_counter(tmp_path):
    assert switches(tmp_path, extra="model.SWITCHES.audit = True\n") != []
    assert switches(tmp_path, extra="model.SWITCHES = model.Switches(True)\n") != []


def test_the_rules_trees_and_the_function_trees_are_kept_apart(tmp_path):
    # The rules keep their file trees in the run's memo; the analysis asks for the function
    # trees after them (a reached method's constants): each must find its own.
    from recompile_lint.analysis.index import FunctionTrees, function_trees
    from recompile_lint.rules._identity import Trees

    files = write(tmp_path)
    index = ProjectIndex(files, FactsStore())
    Trees.of(index)
    assert isinstance(function_trees(index), FunctionTrees)
    assert isinstance(Trees.of(index), Trees)


def test_a_construction_through_the_package_alone_counts(tmp_path):
    # ``import pkg`` then ``pkg.Encoder(...)``: no import line names the class or its module.
    files = write(tmp_path, more={"__init__.py": "from pkg.model import Encoder\n", "other.py": "import pkg\n\nenc = pkg.Encoder(3, True)\n"})
    assert value(files, "dynamic_chunk") is NOT_NONE
