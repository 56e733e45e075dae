"""Edge cases of the shape, rank and global-state rules (RCL2xx, RCL3xx) beyond their examples:
where the evidence comes from, what keeps them silent, and what their findings carry."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from helpers import lint_snippet
from recompile_lint.analysis.facts import collect_facts
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths
from recompile_lint.models import Boundedness, Guard, Severity


def select(*codes: str) -> Config:
    return Config(select=codes, cache=False)


def lint_project(tmp_path: Path, files: dict[str, str], *codes: str):
    for name, source in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    return lint_paths([str(tmp_path)], select(*codes))


def _mutations(path: Path):
    text = path.read_text(encoding="utf-8")
    return collect_facts(ast.parse(text), str(path), path.stem, False, text).mutations


def found(result, code: str) -> list[tuple[str, int]]:
    return [(Path(f.path).name, f.line) for f in result.findings if f.code == code]


NET = """
import torch
from torch import nn
from torch.utils.data import DataLoader


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)
"""


# ---- RCL205 / RCL204: DataLoaders ------------------------------------------------------------


def test_last_batch_drop_last_forwarded_through_a_helper_is_silent(tmp_path):
    files = {
        "data.py": """
            from torch.utils.data import DataLoader


            def make_loader(ds, batch_size=32, drop_last=False):
                return DataLoader(ds, batch_size=batch_size, drop_last=drop_last)
        """,
        "train.py": NET
        + """
from data import make_loader


def train(ds):
    model = torch.compile(Net())
    for x, y in make_loader(ds, drop_last=True):
        model(x)
    for x, y in make_loader(ds):
        model(x)
""",
    }
    result = lint_project(tmp_path, files, "RCL205")
    # Only the loop over the helper's default (drop_last=False) keeps the last batch.
    assert found(result, "RCL205") == [("train.py", 22)]


def test_last_batch_call_passing_a_keyword_forward_does_not_take_is_not_a_call_of_it(tmp_path):
    # ``model(input_ids=x)`` raises TypeError for ``Net.forward(self, x)``: what the program
    # calls there is something else (a candidate the analysis could not rule out).
    source = NET + """

def train(ds):
    model = torch.compile(Net())
    for x, y in DataLoader(ds, batch_size=32):
        model(input_ids=x)
    for x, y in DataLoader(ds, batch_size=32):
        model(x=x)
"""
    result = lint_snippet(tmp_path, source, config=select("RCL205"))
    assert [f.line for f in result.findings] == [20]


def test_writes_in_a_loop_whose_calls_cannot_bind_to_the_region_are_no_evidence(tmp_path):
    # A global and an attribute changed in the loop that calls ``model``: evidence when the
    # call can run ``Net.forward``, none when it passes a keyword ``forward`` does not take.
    program = """
import torch
from torch import nn

SCALE = 1.0


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)
        self.step = 0

    def forward(self, x):
        return self.fc(x) * SCALE + self.step


def set_scale(value):
    global SCALE
    SCALE = value


def train(batches):
    model = torch.compile(Net())
    for i, x in enumerate(batches):
        set_scale(i * 0.5)
        model.step += 1
        model(CALL)


if __name__ == "__main__":
    train([torch.randn(4, 8) for _ in range(10)])
"""
    bound = lint_snippet(tmp_path, program.replace("CALL", "x=x"), config=select("RCL101", "RCL104"))
    assert sorted(f.code for f in bound.findings) == ["RCL101", "RCL104"]
    unbound = lint_snippet(tmp_path, program.replace("CALL", "input_ids=x"), config=select("RCL101", "RCL104"))
    assert unbound.findings == ()


def test_last_batch_unknown_or_single_sample_loaders_are_silent(tmp_path):
    source = NET + """

def train(ds, args):
    model = torch.compile(Net())
    for x, y in DataLoader(ds, batch_size=32, drop_last=args.drop_last):
        model(x)
    for x, y in DataLoader(ds, batch_size=1):
        model(x)
"""
    assert lint_snippet(tmp_path, source, config=select("RCL205")).findings == ()


def test_dynamic_false_with_a_loader_is_rcl204_warning_not_rcl205(tmp_path):
    source = NET + """

def train(ds):
    model = torch.compile(Net(), dynamic=False)
    for x, y in DataLoader(ds, batch_size=32):
        model(x)
"""
    result = lint_snippet(tmp_path, source, config=select("RCL204", "RCL205"))
    assert [(f.code, f.line, f.severity, f.bounded) for f in result.findings] == [
        ("RCL204", 16, Severity.WARNING, Boundedness.BOUNDED)
    ]


def test_dynamic_false_literal_shapes_are_bounded_loop_sizes_are_not(tmp_path):
    few = """
import torch


@torch.compile(dynamic=False)
def f(x):
    return x * 2


def run():
    f(torch.randn(32, 8))
    f(torch.randn(7, 8))
"""
    result = lint_snippet(tmp_path, few, config=select("RCL204"))
    assert [(f.line, f.severity) for f in result.findings] == [(4, Severity.WARNING)]
    many = few.replace("    f(torch.randn(32, 8))\n    f(torch.randn(7, 8))\n", "    for n in range(2, 40):\n        f(torch.randn(n, 8))\n")
    result = lint_snippet(tmp_path, many, config=select("RCL204"))
    assert [(f.line, f.severity) for f in result.findings] == [(4, Severity.ERROR)]
    assert result.findings[0].subject.name == "x"


def test_dynamic_false_per_parameter_update_names_the_argument_dynamo_reports(tmp_path):
    # Measured on torch 2.13: ``tensor 'g' size mismatch at index 0`` (``L['g']`` sorts before
    # ``L['p']``), 8 graphs over the 8 shapes of the model's parameters.
    source = """
import torch
from torch import nn


@torch.compile(dynamic=False)
def update(p, g, lr):
    p.add_(g, alpha=-lr)


def run(model):
    for p in model.parameters():
        update(p, p.grad, 0.1)
"""
    result = lint_snippet(tmp_path, source, config=select("RCL204"))
    [finding] = result.findings
    assert finding.severity == Severity.ERROR
    assert "tensor 'g' size mismatch" in finding.message and "mark_dynamic(g, 0)" in finding.message


# ---- RCL206 ----------------------------------------------------------------------------------


def test_size_branch_silent_on_parameters_validation_and_static_regions(tmp_path):
    source = """
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        if self.fc.weight.shape[0] > 1:  # a parameter's shape never changes
            x = x * 2
        if x.shape[-1] != 8:
            raise ValueError("expected 8 features")
        return self.fc(x)


@torch.compile(dynamic=False)
def static(x):
    return x * 2 if x.shape[0] > 4 else x


model = torch.compile(Head())
"""
    assert lint_snippet(tmp_path, source, config=select("RCL206")).findings == ()


def test_size_branch_through_unpacked_sizes_in_a_while_loop(tmp_path):
    source = """
import torch


@torch.compile
def halve(x):
    n = x.size(0)
    while n > 1:
        x = x[: n // 2] + x[n // 2 : 2 * (n // 2)]
        n = n // 2
    return x


def run():
    for n in range(2, 12):
        halve(torch.randn(n, 3))
"""
    result = lint_snippet(tmp_path, source, config=select("RCL206"))
    assert [f.line for f in result.findings] == [7]


# ---- RCL201 / RCL202 -------------------------------------------------------------------------


def test_size_branch_needs_a_call_whose_sizes_differ(tmp_path):
    # No call of the region changes a size: nothing says the branch's other side is ever taken
    # after the size went dynamic, so there is no evidence of a recompile.
    source = """
import torch


@torch.compile
def orthogonalize(g):
    x = g / g.norm()
    if g.size(0) > g.size(1):
        x = x.T
    return x


def apply(update, p):
    p.data.add_(orthogonalize(update))
"""
    assert lint_snippet(tmp_path, source, config=select("RCL206")).findings == ()
    # A loop that builds the tensor from its variable before the call does change the size,
    # and so does a walk over a model's parameters (they differ in shape).
    for driver in (
        "\n\ndef sweep():\n    for n in (8, 16, 64):\n        g = torch.randn(n, 16)\n        orthogonalize(g)\n",
        "\n\ndef step(model):\n    for p in model.parameters():\n        orthogonalize(p.grad)\n",
    ):
        found = lint_snippet(tmp_path, source + driver, config=select("RCL206")).findings
        assert [f.line for f in found] == [7], driver


def test_variable_length_from_keyword_and_loop_variable_arguments(tmp_path):
    source = """
import torch


@torch.compile
def total(x, parts):
    return x + sum(parts)


def run(x, buckets):
    for i in range(len(buckets)):
        total(x, parts=buckets[:i])
"""
    result = lint_snippet(tmp_path, source, config=select("RCL202"))
    assert [(f.line, f.severity) for f in result.findings] == [(6, Severity.ERROR)]
    subject = result.findings[0].subject
    assert (subject.kind, subject.name) == ("length", "parts")


def test_a_loop_item_passed_whole_is_no_evidence_for_a_container_it_holds(tmp_path):
    # Each configuration the loop takes holds ``slopes=None``: the length of that field is never
    # guarded, whatever else differs between them (their ``dim`` is: 2 values, bounded).
    source = """
from dataclasses import dataclass
from typing import List, Union

import torch


@dataclass
class Params:
    dim: int = 64
    slopes: Union[torch.Size, List, None] = None


def pick(p):
    slopes = p.slopes
    if slopes is not None:
        if len(slopes) == 1:
            return 1
    return 2 if p.dim > 64 else 3


def fn(x, p):
    return x + pick(p)


def test_it(monkeypatch):
    compiled = torch.compile(fn, fullgraph=True)
    compiled(torch.zeros(8), Params())
    for changed in (Params(dim=128), Params(dim=64)):
        compiled(torch.zeros(8), changed)
"""
    result = lint_project(tmp_path, {"run.py": source, "pyproject.toml": "[project]\nname = 'p'\n"}, "RCL202", "RCL108")
    assert [(f.code, f.severity) for f in result.findings] == [("RCL108", Severity.WARNING)]


@pytest.mark.parametrize(
    "loop, grows",
    [
        ("for batch in data:\n        step(x, batch)", False),  # the caller's items: not known
        ("for i in range(12):\n        step(x, data[:i])", True),  # a slice sized by the loop
    ],
)
def test_a_loop_item_passed_whole_is_no_evidence_that_its_length_changes(tmp_path, loop, grows):
    # ``def train_function(data): for batch in data: step(batch)``: the batches a caller hands
    # over may all be (x, y); a slice sized by the loop grows. Items a project function builds
    # with different key sets still count (fixtures/programs/gnn_hetero_node_types).
    source = f"""
import torch


@torch.compile
def step(x, batch):
    return x * len(batch)


def fit(x, data):
    {loop}
"""
    result = lint_snippet(tmp_path, source, config=select("RCL202"))
    assert [f.line for f in result.findings] == ([6] if grows else [])


GROWN = """
import torch


@torch.compile
def total(x, parts):
    return x * len(parts)


def run(x):
    parts = []
    for epoch in range(3):
        {before}
        for step in range(12):
            parts.append(step)
            total(x, parts)
"""


@pytest.mark.parametrize(
    "before, grows",
    [
        ("pass", True),  # one list over every step of every epoch
        ("parts.clear()", True),  # emptied per epoch, still grown step by step in between
    ],
)
def test_a_list_grown_in_a_loop_is_a_growing_argument(tmp_path, before, grows):
    result = lint_snippet(tmp_path, GROWN.format(before=before), config=select("RCL202"))
    assert [(f.line, f.severity) for f in result.findings] == ([(6, Severity.ERROR)] if grows else [])


@pytest.mark.parametrize("emptied", ["parts.clear()", "parts = []", "parts = list()"])
def test_a_list_each_iteration_empties_before_filling_does_not_grow(tmp_path, emptied):
    # Each call sees one iteration's items: ``len(parts)`` is the same at every call.
    source = f"""
import torch


@torch.compile
def total(x, parts):
    return x * len(parts)


def run(x, steps):
    parts = []
    for step in range(steps):
        {emptied}
        parts.append(step)
        parts.append(step + 1)
        total(x, parts)
"""
    assert lint_snippet(tmp_path, source, config=select("RCL202", "RCL204")).findings == ()


def test_an_inner_loop_that_empties_before_filling_does_not_grow_in_the_outer_one(tmp_path):
    # The outer loop's own statements do not grow ``parts``; the inner loop's fill follows its
    # emptying (measured on torch 2.13 by the lab: one graph).
    source = """
import torch


@torch.compile(dynamic=False)
def total(x, parts):
    return x * len(parts)


def run(x, epochs, steps):
    parts = {0: 1.0}
    for epoch in range(epochs):
        for step in range(steps):
            parts.clear()
            parts.update({step: 1.0})
            total(x, parts)
"""
    assert lint_snippet(tmp_path, source, config=select("RCL202", "RCL204")).findings == ()


def test_shape_arguments_are_rank_not_length(tmp_path):
    source = """
import torch


@torch.compile
def reshape_to(x, shape: tuple):
    return x.view(*shape)


def run(x):
    reshape_to(x, (4, 4))
    reshape_to(x, (2, 2, 4))
"""
    result = lint_snippet(tmp_path, source, config=select("RCL201", "RCL202"))
    assert [(f.code, f.line) for f in result.findings] == [("RCL201", 6)]
    assert result.findings[0].subject.kind == "rank"


def test_rank_branch_in_an_inlined_helper_names_the_region(tmp_path):
    source = """
import torch


def as_batch(x):
    if x.ndim == 1:
        return x[None]
    return x


@torch.compile
def score(x):
    return as_batch(x).sum(-1)


def run():
    return score(torch.randn(8)), score(torch.randn(4, 8))
"""
    result = lint_snippet(tmp_path, source, config=select("RCL201"))
    assert (5, "snippet.score", "snippet.as_batch") in [(f.line, f.region, f.function) for f in result.findings]
    # Without callers that pass two ranks, nothing says the rank changes.
    quiet = lint_snippet(tmp_path, source.split("\n\ndef run")[0] + "\n", config=select("RCL201"))
    assert quiet.findings == ()


# ---- RCL203 ----------------------------------------------------------------------------------


def test_container_length_across_modules_and_sets(tmp_path):
    files = {
        "state.py": """
            seen = set()
            names = ["a"]


            def remember(name):
                seen.add(name)
        """,
        "step.py": """
            import torch

            from state import names, seen


            @torch.compile
            def step(x):
                return x * len(seen) + x * (names[0] == "a")
        """,
        "train.py": """
            from state import remember
            from step import step


            def train(batches):
                for i, x in enumerate(batches):
                    remember(f"batch-{i}")
                    step(x)
        """,
    }
    result = lint_project(tmp_path, files, "RCL203")
    # ``seen`` grows in state.py, called in the loop that calls ``step``; ``names`` never changes length.
    assert found(result, "RCL203") == [("step.py", 8)]
    assert result.findings[0].subject.module == "state"


STACK = """
import torch

_ranges = []


def push(name):
    _ranges.append(name)


def pop():
    if not _ranges:
        raise RuntimeError("empty")
    return _ranges.pop()


@torch.compile
def step(x):
    push("step")
    y = x * 2
    pop()
    return y
{outside}"""


@pytest.mark.parametrize(
    "outside, expected",
    [
        ("", []),  # pushed and popped in every call: its length between calls is not known to differ
        # Also pushed between calls, never popped there: it grows.
        ("\n\ndef train(batches):\n    for x in batches:\n        push('x')\n        step(x)\n", [("snippet.py", 7), ("snippet.py", 11)]),
    ],
)
def test_a_container_compiled_code_both_fills_and_empties_is_no_length_evidence(tmp_path, outside, expected):
    result = lint_snippet(tmp_path, STACK.format(outside=outside), config=select("RCL203"))
    assert found(result, "RCL203") == expected




@pytest.mark.parametrize("test", ["cache_key not in _cache", "not cache_key in _cache"])
def test_a_memo_that_gains_a_key_once_is_no_length_change_on_every_call(tmp_path, test):
    # Measured on torch 2.13: the first call adds the key, the second fails
    # ``not ___dict_contains('transformers', G['_cache'])`` once, and no call after: 2 graphs,
    # no length guard. A store that is not under that test still changes the length.
    files = {
        "pkg/__init__.py": "",
        "pkg/imports.py": f"""
            _cache = {{}}
            _log = {{}}


            def require(name, import_name=None):
                cache_key = import_name or name
                if {test}:
                    _cache[cache_key] = True
                if not _cache[cache_key]:
                    raise ImportError(name)


            def record(name, value):
                _log[name] = value
        """,
        "pkg/ops.py": """
            from pkg.imports import require


            def clone(x):
                require("transformers")
                return x.clone()
        """,
        "test_ops.py": """
            import torch

            from pkg.ops import clone


            def test_clone():
                compiled = torch.compile(clone, backend="eager", fullgraph=True)
                compiled(torch.randn(2))
        """,
    }
    result = lint_project(tmp_path, files, "RCL203")
    assert found(result, "RCL203") == []
    facts_of = {m.name: m.op for m in _mutations(tmp_path / "pkg/imports.py") if m.kind == "length"}
    assert facts_of == {"_log": "assign"}
# ---- RCL301-RCL303 ---------------------------------------------------------------------------


def test_grad_mode_contexts_nest_and_decorators_count(tmp_path):
    source = """
import torch


@torch.compile
def predict(x):
    return x.softmax(-1)


@torch.inference_mode()
def serve(x):
    return predict(x)


def finetune(x):
    with torch.no_grad():
        with torch.enable_grad():
            return predict(x)
"""
    result = lint_snippet(tmp_path, source, config=select("RCL301"))
    assert [(f.line, f.severity, f.bounded) for f in result.findings] == [(11, Severity.INFO, Boundedness.BY_DESIGN)]
    # inference_mode turns grad mode off: Dynamo's global-state guard names grad_mode.
    assert [f.guard for f in result.findings] == [Guard("GLOBAL_STATE", "", "grad_mode")]


def test_same_name_in_another_file_is_not_a_call_site(tmp_path):
    files = {
        "a.py": """
            import torch


            def main(x):
                model = torch.compile(torch.nn.Linear(4, 4))
                return model(x)
        """,
        "b.py": """
            import torch


            def evaluate(model, x):
                with torch.no_grad():
                    return model(x)
        """,
        "c.py": """
            import torch


            @torch.compile
            def predict(x):
                return x.softmax(-1)


            def run(x):
                return predict(x)
        """,
        "d.py": """
            import torch

            from c import predict


            def evaluate(x):
                with torch.no_grad():
                    return predict(x)
        """,
    }
    result = lint_project(tmp_path, files, "RCL301")
    # b.py's ``model`` is someone else's; d.py imports c.predict, so it is the same function.
    assert found(result, "RCL301") == [("d.py", 8)]


def test_a_local_of_the_same_name_holding_another_compiled_function_is_not_a_call_site(tmp_path):
    # Two tests of one file each compile their own ``fn`` into a local ``compiled``: the
    # second's calls (a loop of values) are not calls of the first's region.
    source = """
import torch


def test_first():
    def fn(x, k):
        return x * k

    compiled = torch.compile(fn)
    compiled(torch.randn(2), 2)


def test_second():
    def fn(x, k):
        return x + k

    compiled = torch.compile(fn)
    for k in (1, 2, 3, 4):
        compiled(torch.randn(2), k)
"""
    result = lint_project(tmp_path, {"test_two.py": source}, "RCL108")
    assert [(f.code, f.line, f.region) for f in result.findings] == [("RCL108", 14, "test_two.test_second.fn")]


def test_default_dtype_once_at_start_is_silent_a_switch_is_not(tmp_path):
    once = """
import torch


@torch.compile
def energy(x):
    return (x ** 2).sum()


def main(x):
    torch.set_default_dtype(torch.float64)
    return energy(x), energy(x)
"""
    assert lint_snippet(tmp_path, once, config=select("RCL303")).findings == ()
    after = once.replace("    torch.set_default_dtype(torch.float64)\n    return energy(x), energy(x)\n", "    a = energy(x)\n    torch.set_default_dtype(torch.float64)\n    return a, energy(x)\n")
    result = lint_snippet(tmp_path, after, config=select("RCL303"))
    assert [f.line for f in result.findings] == [11]
    assert [f.guard for f in result.findings] == [Guard("GLOBAL_STATE", "", "default_dtype")]


def test_info_rules_are_off_by_default(tmp_path):
    source = """
import torch


@torch.compile
def project(x, w):
    return x @ w


def run(x, w):
    with torch.autocast("cpu"):
        a = project(x, w)
    return a, project(x, w)
"""
    assert lint_snippet(tmp_path, source, config=Config(cache=False)).findings == ()
    assert [f.code for f in lint_snippet(tmp_path, source, config=select("RCL302")).findings] == ["RCL302"]


def test_helper_shared_by_a_static_and_a_dynamic_region_is_checked_for_each(tmp_path):
    source = """
import torch


def helper(x):
    if x.shape[0] > 4:
        return x * 2
    return x


@torch.compile(dynamic=False)
def a(x):
    return helper(x)


@torch.compile
def b(x):
    return helper(x)


def run():
    for n in range(2, 12):
        a(torch.randn(n, 3))
        b(torch.randn(n, 3))
"""
    result = lint_snippet(tmp_path, source, config=select("RCL206"))
    assert [(f.line, f.region) for f in result.findings] == [(5, "snippet.b")]


def test_size_branch_predicts_the_entry_argument_size_guard_only(tmp_path):
    source = """
import torch


def helper(t):
    if t.shape[0] > 4:
        return t * 2
    return t


@torch.compile
def chunked(x, y):
    if x.shape[0] > 4:
        x = x * 2
    z = torch.cat([x, y])
    if z.shape[0] > 8:
        z = z + 1
    return helper(y) + z.sum()


def run():
    for n in range(2, 12):
        chunked(torch.randn(n, 3), torch.randn(n, 3))
"""
    result = lint_snippet(tmp_path, source, config=select("RCL206"))
    by_line = {f.line: f.guard for f in result.findings}
    # The entry's argument: its first new size fails `tensor 'x' size mismatch` (source L['x']).
    assert by_line[12] == Guard("TENSOR_MATCH", "L['x']", "size")
    # A tensor made inside the region, and an inlined helper's argument, have no such source.
    assert by_line[15] is None
    assert by_line[5] is None
    # Compiled with dynamic=True the size is symbolic from the first call: the branch's own
    # guard (`5 <= x.size()[0]`) is what fails, not a static size guard.
    result = lint_snippet(tmp_path, source.replace("@torch.compile\n", "@torch.compile(dynamic=True)\n"), config=select("RCL206"))
    assert [f.guard for f in result.findings if f.line == 12] == [None]


def test_dynamic_false_fed_tensors_a_data_helper_sizes_per_element(tmp_path):
    files = {
        "data.py": """
import torch


def utterances(count, mels=20):
    lengths = [int(n) for n in torch.randint(40, 120, (count,))]
    return [torch.randn(1, SIZE, mels) for n in ITERABLE]
""",
        "run.py": """
import torch
from torch import nn

from data import utterances


class Encoder(nn.Module):
    def forward(self, frames):
        return frames.mean(1)


def main():
    encoder = Encoder()
    encoder.compile(dynamic=False)
    return [encoder(frames) for frames in utterances(10)]
""",
    }

    def findings(size: str, iterable: str):
        data = files["data.py"].replace("SIZE", size).replace("ITERABLE", iterable)
        return list(lint_project(tmp_path, {**files, "data.py": data}, "RCL204").findings)

    [finding] = findings("n", "lengths")
    assert (finding.path.endswith("run.py"), finding.line, finding.severity) == (True, 14, Severity.ERROR)
    assert finding.guard == Guard("TENSOR_MATCH", "L['frames']", "size")
    # Every element the same size, or a fixed set of literal sizes: not this evidence.
    assert findings("80", "lengths") == []
    assert findings("n", "(40, 80)") == []


RANK_BRANCHES = """
import torch
from torch import nn


@torch.compile
def normalise(x):
    if x.dim() == 4:
        return x / x.norm(dim=(1, 2, 3), keepdim=True)
    return x / x.norm(dim=-1, keepdim=True)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.image = nn.Conv2d(3, 4, 3)
        self.audio = SECOND

    def features(self, image, audio):
        return [self.image(image), self.audio(audio)]

    def forward(self, image, audio):
        return [normalise(feat) for feat in self.features(image, audio)]
"""


def test_rank_from_a_loop_over_outputs_of_layers_of_different_ranks(tmp_path):
    source = RANK_BRANCHES.replace("SECOND", "nn.Conv1d(8, 4, 3)")
    [finding] = lint_snippet(tmp_path, source, config=select("RCL201")).findings
    assert (finding.line, finding.severity) == (7, Severity.WARNING)
    assert finding.guard == Guard("TENSOR_MATCH", "L['x']", "rank")
    # Two layers whose outputs have the same rank: nothing says the rank changes.
    source = RANK_BRANCHES.replace("SECOND", "nn.Conv2d(8, 4, 3)")
    assert lint_snippet(tmp_path, source, config=select("RCL201")).findings == ()


PER_PARAMETER = """
import torch


@torch.compile(dynamic=False)
def update(param, grad, lr):
    param.sub_(grad * lr)


def step(model, lr):
    for p in model.parameters():
        update(p, SECOND, lr)
"""


def test_dynamic_false_guard_is_the_varying_argument_dynamo_checks_first(tmp_path):
    # `param` and `grad` both change shape per parameter: Dynamo orders guards by the length
    # of the source's name, then the name, so `tensor 'grad' ...` is the one reported.
    [finding] = lint_snippet(tmp_path, PER_PARAMETER.replace("SECOND", "p.grad"), config=select("RCL204")).findings
    assert finding.guard == Guard("TENSOR_MATCH", "L['grad']", "size")
    # A grad that does not follow the parameter (one fixed tensor): only `param` varies.
    [finding] = lint_snippet(tmp_path, PER_PARAMETER.replace("SECOND", "torch.ones(1)"), config=select("RCL204")).findings
    assert finding.guard == Guard("TENSOR_MATCH", "L['param']", "size")


def test_a_shape_length_from_a_tensors_own_rank_adds_no_rank_finding(tmp_path):
    # ``(1,) * (loss.ndim - mask.ndim)``: the ranks are the tensors', which Dynamo already
    # guards (a rank change fails their ``TENSOR_MATCH``); a length from a Python int
    # parameter (``nd``) is the value baked into the graph, reported.
    files = {"m.py": """
        import torch


        def expand(mask: torch.Tensor, loss: torch.Tensor):
            return mask.reshape(mask.shape + (1,) * (loss.ndim - mask.ndim))


        def index_view(splits: torch.Tensor, h: torch.Tensor):
            return splits.view(-1, 1, *([1] * (h.dim() - 1)))


        def pad(w: torch.Tensor, nd: int):
            return w.reshape(*w.shape, *([1] * (nd - w.ndim)))


        @torch.compile
        def step(mask, loss, splits, h, nd):
            return expand(mask, loss), index_view(splits, h), pad(mask, nd)
    """}
    result = lint_project(tmp_path, files, "RCL201")
    assert found(result, "RCL201") == [("m.py", 13)]


HANDLER = """
import torch

ALLOWED = {}


class Out:
    def __init__(self, a, b=None):
        self.a = a


def process(cls, d):
    try:
        if cls in ALLOWED:
            d = {k: d[k] for k in ALLOWED[cls]}
        return cls(**d)
    except TypeError:
        {write}
        return cls(**{"a": d["a"]})


@torch.compile
def f(x):
    return process(Out, {"a": x + 1, "c": x}).a


for i in range(6):
    f(torch.randn(3))
"""


def test_a_write_in_an_except_handler_is_not_made_at_every_call(tmp_path):
    # Measured on torch 2.13: the handler fills the table when construction fails (once per
    # class): one graph, no recompile.
    result = lint_project(tmp_path, {"run.py": HANDLER.replace("{write}", 'ALLOWED[cls] = ("a",)')}, "RCL203")
    assert found(result, "RCL203") == []


def test_an_unconditional_write_in_the_compiled_code_still_counts(tmp_path):
    result = lint_project(tmp_path, {"run.py": HANDLER.replace("{write}", "pass").replace("    try:\n", '    ALLOWED[len(ALLOWED)] = ("a",)\n    try:\n')}, "RCL203")
    assert found(result, "RCL203") == [("run.py", 12)]
