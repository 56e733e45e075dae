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
