"""What the execution stage and the variation stage share between questions, so that a run
costs what it finds: entry files per region, importers per module, the regions by function."""

from __future__ import annotations

import gc
import textwrap
from pathlib import Path

from recompile_lint.analysis.execution import Execution
from recompile_lint.analysis.execution.cache import RegionCaches, RegionTable, region_key
from recompile_lint.analysis.execution.entries import EntryFinder
from recompile_lint.analysis.guards import predict_guards
from recompile_lint.analysis.variation import Variation
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths

FILES = {
    "pkg/__init__.py": "",
    "pkg/model.py": """
        import torch

        @torch.compile
        def f(x):
            return x + 1

        @torch.compile
        def g(x):
            return x * 2
    """,
    "run.py": """
        from pkg.model import f, g
        for i in range(3):
            f(i)
            g(i)
    """,
    "sub.py": """
        import pkg.model.inner as inner
        for i in range(3):
            print(i)
    """,
    "namesake.py": """
        import pkg.modelx
        for i in range(3):
            print(i)
    """,
}


def analysis_of(root: Path, files: dict[str, str]):
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    keep: list = []
    lint_paths([str(root)], Config(select=("RCL",), cache=False), retain=keep)
    gc.unfreeze()
    return next(k for k in keep if hasattr(k, "regions"))


def test_a_regions_entry_files_are_found_once_and_handed_out_as_copies(tmp_path):
    analysis = analysis_of(tmp_path, FILES)
    finder = EntryFinder(analysis.index, analysis.regions)
    region = next(r for r in analysis.regions if r.entry.qualname == "f")
    first = finder.files_for(region)
    assert str(tmp_path / "run.py") in first and str(tmp_path / "namesake.py") not in first
    first.append("changed by the caller")
    assert finder.files_for(region) == first[:-1]
    # A file that is no driver was not scanned up front: its import lines are read when asked.
    assert finder.imports(str(tmp_path / "pkg/model.py"), "torch")


def test_importers_are_the_files_importing_the_module_or_a_submodule_not_a_namesake(tmp_path):
    analysis = analysis_of(tmp_path, FILES)
    index = analysis.index
    for path in ("run.py", "sub.py", "namesake.py"):
        index.facts(str(tmp_path / path))
    variation = Variation(index, analysis.regions)
    region = next(r for r in analysis.regions if r.entry.qualname == "f")
    found = variation._importers(region)
    assert str(tmp_path / "run.py") in found and str(tmp_path / "sub.py") in found
    assert str(tmp_path / "namesake.py") not in found
    # A file parsed after the first question is an importer for the next one.
    late = tmp_path / "late.py"
    late.write_text("from pkg.model import g\n")
    index.paths = tuple(index.paths) + (str(late),)
    index.facts(str(late))
    assert str(late) in variation._importers(region)


def test_a_compiled_call_is_matched_to_the_regions_of_its_function_only(tmp_path):
    analysis = analysis_of(tmp_path, FILES)
    table = RegionTable(analysis.regions)
    assert set(table.keyed) == {region_key(r) for r in analysis.regions}
    assert {key for entries in table.by_entry.values() for key, _ in entries} == set(table.keyed)
    guards = list(predict_guards(analysis.index, analysis.regions))
    execution = Execution(analysis.index, analysis.regions, guards)
    execution.run()
    # Each call of f and g reached its own region (three calls each), none the other's.
    calls = {key[1]: count for key, count in execution._region_calls.items()}
    assert calls == {"f": 3, "g": 3}
    caches = RegionCaches(analysis.regions, guards, "run.py", table)
    assert caches.regions is table.keyed


# ---- a call that hits a cache entry --------------------------------------------------------

SCHEDULE = {
    "train.py": """
        import torch
        from torch import nn

        STAGES = [(1, 3)] * 10 + [(2, 5)] * 4


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4)
                self.window = 1
                {extra_init}

            def forward(self, x):
                {extra_forward}
                for _ in range(12):
                    x = self.lin(x) * 2 + 1
                    x = x * self.lin(x) - x
                return x * self.window


        model = torch.compile(Net(), dynamic=False)
        x = torch.randn(2, 4)
        for short, long in STAGES:
            model.window = long
            model(x)
    """,
}


def _schedule(tmp_path, extra_init="", extra_forward="pass", steps=400):
    files = {"train.py": SCHEDULE["train.py"].format(extra_init=extra_init or "pass", extra_forward=extra_forward)}
    analysis = analysis_of(tmp_path, files)
    guards = list(predict_guards(analysis.index, analysis.regions))
    execution = Execution(analysis.index, analysis.regions, guards, steps=steps, driving_steps=0)
    found = execution.run()
    return execution, {source: r for (_, source), r in found.items()}


def test_a_call_whose_guards_pass_on_an_entry_runs_that_graph_without_its_body(tmp_path):
    # 14 calls of a forward of ~40 statements on a budget of 400: only the calls that compile
    # run the body; the others evaluate the entry's guards, as Dynamo does, so the stage
    # change at the 11th call is reached (running every body, it is not: see below).
    execution, found = _schedule(tmp_path)
    assert execution.calls == 14
    change = found["L['self'].window"]
    assert [v.value for v in change.values] == [3, 5] and change.graphs == 2


def test_a_body_that_writes_to_older_state_runs_at_every_call(tmp_path):
    # ``self.last = x`` in compiled code: a hit cannot skip the body (the write is the
    # caller's to see), so 400 steps end before the stage change.
    execution, found = _schedule(tmp_path, extra_init="self.last = None", extra_forward="self.last = x")
    assert "L['self'].window" not in found
    # A counter it bumps is seen at every call, each call running the body again.
    execution, found = _schedule(tmp_path, extra_init="self.seen = 0", extra_forward="self.seen = self.seen + 1", steps=50_000)
    assert "L['self'].seen" in found


def test_a_cached_call_counts_as_a_call_of_its_region(tmp_path):
    analysis = analysis_of(tmp_path, {"train.py": SCHEDULE["train.py"].format(extra_init="pass", extra_forward="pass")})
    guards = list(predict_guards(analysis.index, analysis.regions))
    caches = RegionCaches(analysis.regions, guards, "train.py")
    from recompile_lint.analysis.execution import IndexProject
    from recompile_lint.analysis.execution.interpreter import Interpreter

    interpreter = Interpreter(IndexProject(analysis.index), caches, steps=50_000)
    interpreter.run_module(str(tmp_path / "train.py"), as_main=True)
    [key] = caches.region_calls
    assert caches.region_calls[key] == 14 and caches.replayed == 12  # two graphs, twelve hits
    assert len(caches.entries[key]) == 2


def test_an_entry_that_calls_compiled_code_gets_the_driving_steps(tmp_path):
    # The same schedule with a body that runs at every call (it writes ``self.last``): 400
    # steps end before the stage change, but a run that has made a compiled call goes on with
    # its driving steps.
    files = {"train.py": SCHEDULE["train.py"].format(extra_init="self.last = None", extra_forward="self.last = x")}
    analysis = analysis_of(tmp_path, files)
    guards = list(predict_guards(analysis.index, analysis.regions))
    for driving, found in ((0, False), (50_000, True)):
        run = Execution(analysis.index, analysis.regions, guards, steps=400, driving_steps=driving).run()
        assert ("L['self'].window" in {source for _, source in run}) is found


def test_torch_is_the_modelled_library_even_where_the_project_holds_a_torch_package(tmp_path):
    # Linting torch's own tree: ``import torch`` in an entry would run the project's
    # ``torch/__init__.py`` (and what it imports) once per entry, and stand its code in for
    # the model of torch's API. The interpreter never imports a ``torch`` module from the
    # project; the project's other modules it does.
    from recompile_lint.analysis.execution import IndexProject

    files = dict(FILES)
    files["torch/__init__.py"] = "def compile(fn=None, **kwargs):\n    return fn\n"
    files["torch/nn/__init__.py"] = ""
    analysis = analysis_of(tmp_path, files)
    project = IndexProject(analysis.index)
    run = str(tmp_path / "run.py")
    assert project.module_path("torch", run) is None and project.module_path("torch.nn", run) is None
    assert project.module_path("pkg.model", run) == str(tmp_path / "pkg/model.py")
    assert analysis.index.module_path("torch", run) == str(tmp_path / "torch/__init__.py")


def test_a_functions_callers_are_the_calls_of_its_name_or_an_alias_resolved_to_it(tmp_path):
    # Callers are found per function, resolving only the calls that can name it: by its own
    # name or a name it is imported as; a namesake elsewhere and the function's own recursive
    # call are not its callers, an ``apply(fn)`` is.
    files = {
        "m.py": "def step():\n    return step()\n",
        "a.py": "from m import step as tick\n\n\ndef loop():\n    for i in range(3):\n        tick()\n",
        "b.py": "import m\n\n\ndef run(model):\n    m.step()\n    model.apply(m.step)\n",
        "c.py": "def step():\n    pass\n\n\ndef other():\n    step()\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    from recompile_lint.analysis.index import FactsStore, FunctionRef, ProjectIndex

    index = ProjectIndex([str(tmp_path / name) for name in files], FactsStore())
    for name in files:
        index.facts(str(tmp_path / name))
    variation = Variation(index, [])
    found = [(c.qualname if c else None, text, bool(loops)) for c, text, loops in variation.callers(FunctionRef(str(tmp_path / "m.py"), "step"))]
    assert sorted(found) == [("loop", "tick", True), ("run", "m.step", False), ("run", "model.apply", False)]
    assert [c.qualname for c, _, _ in variation.callers(FunctionRef(str(tmp_path / "c.py"), "step"))] == ["other"]
