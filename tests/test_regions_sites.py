"""Every compile site in the forms real projects write is listed, resolved to what it compiles,
or owned up to with a reason; the lint summary and SARIF say how many were not analysed; the
corpus bench's independent count finds the same sites."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

from click.testing import CliRunner

from recompile_lint.analysis.index import FactsStore, ProjectIndex
from recompile_lint.analysis.loader import find_sites
from recompile_lint.analysis.regions import REASON_ACTIONS, UNRESOLVED_REASONS, SiteResolution
from recompile_lint.frontends.cli import main

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from site_count import count_sites, relative  # noqa: E402

MODELS = '''
import torch
from torch import nn

_registry = {}


def register_model(fn):
    _registry[fn.__name__] = fn
    return fn


def create_model(name, **kwargs):
    return _registry[name](**kwargs)


class Net(nn.Module):
    def forward(self, x):
        return x + 1

    def configure(self):
        self.k = 1
        return self


class Other(nn.Module):
    def forward(self, x):
        return x * 2


class Transform:
    def __call__(self, x):
        return x


@register_model
def net_small(**kwargs):
    return Net()


@register_model
def other_big(**kwargs):
    return Other()


def make_model_and_transforms():
    return Net(), Transform(), Transform()
'''

TRAIN = '''
import torch
from zoo.models import Net, Other, make_model_and_transforms, create_model


def by_key(k):
    d = {"a": Net(), "b": Other()}
    lst = [Other()]
    return torch.compile(d[k]), torch.compile(lst[0])


class Holder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mods = torch.nn.ModuleDict({"n": Net()})

    def build(self, name):
        return torch.compile(self.mods[name])


def alias(cfg):
    compile = torch.compile if cfg.compile else (lambda m: m)
    return compile(Net())


def returns_self(device):
    a = torch.compile(Net().to(device))
    b = torch.compile(Net().cuda().eval())
    c = torch.compile(Net().configure())
    return a, b, c


def unpacked():
    model, pre, post = make_model_and_transforms()
    return torch.compile(model)


def registry(name):
    return torch.compile(create_model(name))
'''

WRAPPERS = '''
import torch
from zoo.models import Net, Other


def maybe_compile(*args, **kwargs):
    return torch.compile(*args, **kwargs)


def compile_second(cfg, model):
    return torch.compile(model, mode=cfg)


def compile_by_keyword(*, module):
    module.compile()
    return module


def outer(m):
    return compile_second("max-autotune", m)


def compiled(**options):
    def decorate(fn):
        return torch.compile(fn, **options)
    return decorate


@compiled(dynamic=False)
def step(x):
    return x * 3


def main():
    a = maybe_compile(Other(), mode="reduce-overhead")
    b = compile_second("default", Net())
    c = outer(Other())
    d = compile_by_keyword(module=Net())
    return a, b, c, d


class TestThing:
    def compile(self, model):
        return torch.compile(model, backend="eager")

    def test_it(self):
        self.compile(Other())


class Task:
    def __init__(self):
        self.model = Net()

    def compile(self, backend="inductor"):
        self.model = torch.compile(self.model, backend=backend)


def run_task():
    task = Task()
    task.compile(backend="eager")
'''

# Another module's function of the same name as a wrapper, which compiles nothing.
SAME_NAME = '''
def compile_second(cfg, model):
    return model


def use():
    return compile_second(1, 2)
'''

UNRESOLVED = '''
import torch
from transformers import AutoModel
from hydra.utils import instantiate


def external():
    return torch.compile(AutoModel.from_pretrained("gpt2"))


def configured(cfg):
    return torch.compile(instantiate(cfg.model))


def public(model):
    return torch.compile(model)
'''


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))


def resolve(root: Path) -> list[SiteResolution]:
    files = [str(p) for p in sorted(root.rglob("*.py"))]
    return find_sites(ProjectIndex(files, FactsStore()))


def by_line(sites: list[SiteResolution], root: Path) -> dict[tuple[str, int], list]:
    out: dict[tuple[str, int], list] = {}
    for s in sites:
        key = (os.path.relpath(s.site_path, root), s.site.span.line)
        items = [(r.form, r.name) for r in s.regions] if s.resolved else [("unresolved", s.reason)]
        out.setdefault(key, []).extend(items)
    return out


def project(tmp_path: Path) -> Path:
    write(tmp_path, {"zoo/__init__.py": "", "zoo/models.py": MODELS, "train.py": TRAIN, "wrappers.py": WRAPPERS, "other.py": SAME_NAME})
    return tmp_path


def test_subscripts_aliases_chains_tuples_and_registries(tmp_path):
    found = by_line(resolve(project(tmp_path)), tmp_path)
    # d[k] holds either model; lst[0] the one it holds; a ModuleDict's element by a key.
    assert found[("train.py", 8)] == [("per-block", "zoo.models.Net.forward"), ("per-block", "zoo.models.Other.forward"), ("per-block", "zoo.models.Other.forward")]
    assert found[("train.py", 17)] == [("per-block", "zoo.models.Net.forward")]
    # compile = torch.compile if ... else (lambda m: m)
    assert found[("train.py", 22)] == [("module", "zoo.models.Net.forward")]
    # .to(device), .cuda().eval(), a project method whose every return is self.
    assert found[("train.py", 26)] == found[("train.py", 27)] == found[("train.py", 28)] == [("module", "zoo.models.Net.forward")]
    # Only the model's position of the factory's tuple: the transforms are no region.
    assert found[("train.py", 34)] == [("module", "zoo.models.Net.forward")]
    # Every registered model is a candidate of the registry's lookup.
    assert found[("train.py", 38)] == [("module", "zoo.models.Net.forward"), ("module", "zoo.models.Other.forward")]


def test_wrappers_inferred_from_their_bodies(tmp_path):
    sites = resolve(project(tmp_path))
    found = by_line(sites, tmp_path)
    # Calls of wrappers: through *args, at the compiled parameter's position, by keyword.
    assert found[("wrappers.py", 34)] == [("module", "zoo.models.Other.forward")]
    assert found[("wrappers.py", 35)] == [("module", "zoo.models.Net.forward")]
    # A wrapper of a wrapper (``outer``), inferred over the parameters it passes on.
    assert found[("wrappers.py", 36)] == [("module", "zoo.models.Other.forward")]
    assert found[("wrappers.py", 37)] == [("module", "zoo.models.Net.forward")]
    # The decorator factory's application is a site of the decorated function.
    assert found[("wrappers.py", 28)] == [("decorated", "wrappers.step")]
    # A test class's own compile(model) helper compiles its argument, not the test class.
    assert found[("wrappers.py", 46)] == [("module", "zoo.models.Other.forward")]
    # The wrappers' own sites are their callers' regions: not counted twice by a lint.
    bodies = {s.site.span.line for s in sites if s.wrapper_body and s.site_path.endswith("wrappers.py")}
    assert {6, 10, 14, 24, 43} <= bodies
    # A call of another function of a wrapper's name that compiles nothing is no site.
    assert not any(s.site_path.endswith("other.py") for s in sites)
    # A class's own compile() that compiles an attribute is not nn.Module.compile of Task.
    task = next(s for s in sites if s.site.span.line == 59)
    assert task.reason == "not-torch" and "compiles none of its parameters" in task.detail
    assert found[("wrappers.py", 54)] == [("module", "zoo.models.Net.forward")]


# Wrappers several wrappers deep: a nested helper, a method chain, and a chain across files
# where each file is read only once the wrapper it calls is known.
DEEP_WRAPPERS = {
    "zoo/__init__.py": "",
    "zoo/models.py": MODELS,
    "deep/__init__.py": "from deep.regional import compile_regions\n",
    "deep/regional.py": """
        import torch


        def compile_regions(module, **kwargs):
            def _compile(m, **kw):
                return torch.compile(m, **kw)
            return _compile(module, **kwargs)


        def describe(module):
            return repr(module)
        """,
    "deep/level2.py": """
        from deep import compile_regions


        def prepare(model, mode):
            return compile_regions(model, mode=mode)
        """,
    "deep/level3.py": """
        from deep.level2 import prepare


        def setup(cfg, net):
            return prepare(net, cfg)
        """,
    "deep/engine.py": """
        from deep.regional import describe, compile_regions


        class Base:
            def _compile_one(self, obj):
                return compile_regions(obj)


        class Engine(Base):
            def prepare(self, *args):
                return [self._compile_one(a) for a in args]

            def show(self, model):
                return describe(model)
        """,
    "deep/cli.py": """
        import pytest
        from deep.regional import compile_regions


        def main(model):
            return compile_regions(model)


        if __name__ == "__main__":
            pytest.main([__file__])
        """,
    "main.py": """
        from zoo.models import Net, Other
        from deep.level3 import setup
        from deep.engine import Engine


        def main():
            a = setup("default", Net())
            b = Engine().prepare(Other())
            c = Engine().show(Net())
            return a, b, c
        """,
}


def test_wrappers_of_wrappers_inferred_as_a_fixpoint(tmp_path):
    write(tmp_path, DEEP_WRAPPERS)
    sites = resolve(tmp_path)
    found = by_line(sites, tmp_path)
    # Three wrappers deep across files, main.py read only once ``setup`` is known a wrapper.
    assert found[("main.py", 7)] == [("module", "zoo.models.Net.forward")]
    # A method's call of its base's method that calls the re-exported wrapper, on each of *args.
    assert found[("deep/engine.py", 11)] == [("per-block", "zoo.models.Other.forward")]
    # Passing a parameter on to a function that compiles nothing makes no wrapper.
    assert ("main.py", 9) not in found
    assert ("deep/engine.py", 14) not in found
    # Another library's function of a wrapper's name is none of the project's wrappers.
    assert ("deep/cli.py", 6) in found and ("deep/cli.py", 10) not in found
    # The wrappers' calls between themselves are listed as their bodies.
    assert {(os.path.relpath(s.site_path, tmp_path), s.site.span.line) for s in sites if s.wrapper_body} >= {("deep/regional.py", 6), ("deep/regional.py", 7), ("deep/level2.py", 5), ("deep/level3.py", 5), ("deep/engine.py", 6)}


def test_a_project_wrapper_named_compile_makes_its_callers_sites(tmp_path):
    # A module-level ``compile`` gated by a flag, imported by files parsed before the wrapper
    # was known: as a call, a decorator and a method's decorator, and in its own module.
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/utils.py": """
            import os
            import torch
            enabled = os.environ.get("COMPILE", "0") == "1"

            def compile(function, *args, **kwargs):
                if enabled:
                    return torch.compile(function, *args, **kwargs)
                return function

            def double(x):
                return x * 2
            double = compile(double)
        """,
        "pkg/blocks.py": """
            from torch import nn
            from .utils import compile

            def rms(x):
                return x * 2
            rms = compile(rms)

            class Attention(nn.Module):
                @compile
                def forward(self, x):
                    return x * 3
        """,
        "pkg/only.py": """
            from pkg.utils import compile

            @compile
            def step(x):
                return x - 1
        """,
        "pkg/builtin.py": """
            code = compile("x = 1", "<text>", "exec")
        """,
    })
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("pkg/blocks.py", 6)] == [("function", "pkg.blocks.rms")]
    assert found[("pkg/blocks.py", 9)] == [("decorated", "pkg.blocks.Attention.forward")]
    assert found[("pkg/only.py", 3)] == [("decorated", "pkg.only.step")]
    assert found[("pkg/utils.py", 12)] == [("function", "pkg.utils.double")]
    # Python's own compile() in a file that imports no wrapper is no site.
    assert not any(path == "pkg/builtin.py" for path, _ in found)


# A conversion helper that returns its argument, or a new norm layer when the argument is one.
CONVERSION = {
    "norm.py": """
        import torch
        from torch import nn


        class BatchNormAct2d(nn.BatchNorm2d):
            def forward(self, x):
                return x


        class SyncBatchNormAct(nn.SyncBatchNorm):
            def forward(self, x):
                return x


        def convert_sync_batchnorm(module, process_group=None):
            module_output = module
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                if isinstance(module, BatchNormAct2d):
                    module_output = SyncBatchNormAct(module.num_features)
                else:
                    module_output = torch.nn.SyncBatchNorm(module.num_features)
            for name, child in module.named_children():
                module_output.add_module(name, convert_sync_batchnorm(child, process_group))
            return module_output
        """,
    "train.py": """
        import torch
        from torch import nn
        from norm import BatchNormAct2d, convert_sync_batchnorm


        class Net(nn.Module):
            def forward(self, x):
                return x


        def main(loaded):
            model = Net()
            model = convert_sync_batchnorm(model)
            model = torch.compile(model)
            norm = convert_sync_batchnorm(BatchNormAct2d(4))
            norm = torch.compile(norm)
            other = torch.compile(convert_sync_batchnorm(loaded))
        """,
}


def test_a_value_made_only_for_other_arguments_is_no_candidate(tmp_path):
    write(tmp_path, CONVERSION)
    found = by_line(resolve(tmp_path), tmp_path)
    # The model is no ``_BatchNorm`` (a private torch base, read as a class): the helper
    # hands it back, and the norm layers it makes for norm layers are no candidates.
    assert found[("train.py", 14)] == [("module", "train.Net.forward")]
    # A norm layer's class derives from a torch class that may derive from ``_BatchNorm``:
    # not decided by name, so both branches stay.
    assert ("module", "norm.SyncBatchNormAct.forward") in found[("train.py", 16)]
    # An argument nothing is known of makes no norm layer either: the site says why.
    assert found[("train.py", 17)] == [("unresolved", "parameter")]


def test_unresolved_sites_say_what_to_do(tmp_path):
    write(tmp_path, {"pyproject.toml": "", "m.py": UNRESOLVED})
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(main, ["regions", "--no-cache", "--format", "json", "."], catch_exceptions=False)
        text = CliRunner().invoke(main, ["regions", "--no-cache", "."], catch_exceptions=False).output
    finally:
        os.chdir(cwd)
    report = json.loads(result.output)
    reasons = {s["line"]: (s["reason"], s["action"]) for s in report["sites"]}
    assert reasons[7] == ("external", REASON_ACTIONS["external"])
    assert reasons[11] == ("configuration", REASON_ACTIONS["configuration"])
    assert reasons[15] == ("parameter", REASON_ACTIONS["parameter"])
    assert set(REASON_ACTIONS) <= set(UNRESOLVED_REASONS)
    assert "-> unresolved (configuration: hydra.utils.instantiate()); built from configuration: its class is data, known only when it runs; not resolvable statically" in text
    assert "-> unresolved (parameter: m.public.model); public API: no caller in the project passes it; lint the code that calls it" in text


def test_lint_summary_and_sarif_count_sites_not_analysed(tmp_path):
    write(tmp_path, {"pyproject.toml": "", "m.py": UNRESOLVED, "ok.py": "import torch\n\n\n@torch.compile\ndef f(x):\n    return x\n"})
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        text = CliRunner().invoke(main, ["--no-cache", "--format", "concise", "."], catch_exceptions=False).output
        sarif = json.loads(CliRunner().invoke(main, ["--no-cache", "--format", "sarif", "."], catch_exceptions=False).output)
        only_ok = CliRunner().invoke(main, ["--no-cache", "--format", "concise", "ok.py"], catch_exceptions=False).output
    finally:
        os.chdir(cwd)
    assert text.splitlines()[-1] == "Found 0 findings, 2 files checked, 3 compile sites not analysed (run recompile-lint regions)."
    notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert notes == [{"level": "warning", "message": {"text": "3 compile sites not analysed (run recompile-lint regions)"}, "descriptor": {"id": "sites-not-analysed"}}]
    # Only the checked files' sites count.
    assert only_ok.splitlines()[-1] == "Found 0 findings, 1 file checked."


def test_independent_count_finds_the_listed_sites(tmp_path):
    root = project(tmp_path)
    files = [str(p) for p in sorted(root.rglob("*.py"))]
    counted = {(os.path.relpath(p, root), line) for p, line in count_sites(files)}
    listed = {(os.path.relpath(s.site_path, root), s.site.span.line) for s in resolve(root) if s.reason != "not-torch"}
    assert listed <= counted
    # The count holds the wrappers' calls and the factory's decorator, and no call of the
    # same-named function elsewhere is a wrapper's body.
    assert {("wrappers.py", 28), ("wrappers.py", 34), ("wrappers.py", 36), ("wrappers.py", 37)} <= counted
    assert ("train.py", 22) in counted


ALIAS_ONCE = '''
import torch

shift = 0.05
records = []


def infer(x):
    if not torch.compiler.is_compiling():
        records.append(x)
    return x * shift


compile = torch.compile if hasattr(torch, "compile") else (lambda fn, **kwargs: fn)


class Stepper:
    def update(self, value):
        global shift
        shift = value


def main():
    fast = compile(infer, backend="eager")
    stepper = Stepper()
    stepper.update(0.1)
    for _ in range(8):
        fast(torch.randn(4))
'''


def test_sites_newly_reached_are_judged_as_dynamo_runs_them(tmp_path):
    """The alias site is analysed now: a list appended to only when not compiling is never
    guarded, and a callback-named method the program calls once, before the loop, does not
    change the global between calls."""
    write(tmp_path, {"pyproject.toml": "", "run.py": ALIAS_ONCE})
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        regions = CliRunner().invoke(main, ["regions", "--no-cache", "."], catch_exceptions=False).output
        text = CliRunner().invoke(main, ["--no-cache", "--format", "concise", "."], catch_exceptions=False).output
        (tmp_path / "run.py").write_text((tmp_path / "run.py").read_text().replace("    stepper.update(0.1)\n    for _ in range(8):\n", "    for i in range(8):\n        stepper.update(0.1 * i)\n"))
        changed = CliRunner().invoke(main, ["--no-cache", "--format", "concise", "."], catch_exceptions=False).output
    finally:
        os.chdir(cwd)
    assert "compile(infer, backend=\"eager\") -> function run.infer" in regions
    assert text.splitlines()[-1] == "Found 0 findings, 1 file checked."
    # Changed in the loop that calls it: found.
    assert "RCL101" in changed and "RCL203" not in changed


def test_args_spread_by_a_caller_is_a_parameter(tmp_path):
    """``*args`` a caller fills with a spread of its own: the positions are its callers', so
    the reason is a parameter no call in the project fills, not a computed value: the
    caller's own ``*args``, which nothing calls."""
    write(tmp_path, {"m.py": '''
import torch


def compile_all(*objs):
    return [torch.compile(o) for o in objs]


def prepare(*args):
    return compile_all(*args)
'''})
    (site,) = [s for s in resolve(tmp_path) if s.site.span.line == 5]
    assert site.reason == "parameter" and site.detail == "m.prepare.*args"


def test_a_partial_of_torch_compile_is_a_compile_function(tmp_path):
    """``compiler = functools.partial(torch.compile, backend=...)`` (or ``from functools import
    partial``): each ``compiler(fn)`` compiles ``fn``; a partial of another function is no site."""
    write(
        tmp_path,
        {
            "run.py": textwrap.dedent(
                """\
                import functools
                from functools import partial

                import torch

                compiler = functools.partial(torch.compile, backend="eager")
                other = partial(torch.compile, mode="reduce-overhead")
                printer = functools.partial(print, end="")


                def step(x):
                    return x * 2


                fast = compiler(step)
                faster = other(step)
                printer(step)
                """
            )
        },
    )
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("run.py", 15)] == [("function", "run.step")]
    assert found[("run.py", 16)] == [("function", "run.step")]
    assert ("run.py", 17) not in found


# A method that hands its own ``*args`` on (``self._prepare(*args)``): the tuple its callee
# sees is the one its own callers pass, positions before the spread included.
FORWARDED_VARARGS = {
    "lib.py": """
        import torch


        class Runner:
            def prepare(self, *args):
                return self._prepare(*args)

            def prepare_first(self, first, *args):
                return self._prepare(first, *args)

            def _prepare(self, *args):
                for obj in args:
                    if isinstance(obj, torch.nn.Module):
                        model = obj
                return torch.compile(model)
        """,
    "train.py": """
        import torch
        from lib import Runner


        class Net(torch.nn.Module):
            def forward(self, x):
                return x + 1


        class Other(torch.nn.Module):
            def forward(self, x):
                return x - 1


        def main():
            runner = Runner()
            runner.prepare(Net(), 3)
            runner.prepare_first(Other(), 3)
        """,
}


def test_forwarded_varargs_reach_the_callee_from_the_callers_callers(tmp_path):
    write(tmp_path, FORWARDED_VARARGS)
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("lib.py", 15)] == [("module", "train.Net.forward"), ("module", "train.Other.forward")]


def test_count_takes_a_wrapper_call_only_at_the_parameter_it_compiles(tmp_path):
    """A helper that builds the model inside and passes its own flags on to a wrapper at
    parameters the wrapper does not compile is no wrapper: its calls are no sites, by the
    count as by the linter; one that passes its parameter at the compiled position is."""
    write(tmp_path, {"t.py": '''
import torch


class Case:
    def _common(self, mod, inputs, is_qat=False):
        return torch.compile(mod)(*inputs)

    def _helper(self, device, is_qat=False):
        mod = torch.nn.Linear(2, 2).to(device)
        return self._common(mod, (torch.ones(2),), is_qat=is_qat)

    def _passes_model(self, model):
        return self._common(model, (torch.ones(2),))

    def test_one(self):
        self._helper("cpu", is_qat=True)
        self._passes_model(torch.nn.Linear(2, 2))
'''})
    counted = {line for _, line in count_sites([str(tmp_path / "t.py")])}
    listed = {s.site.span.line for s in resolve(tmp_path) if s.reason != "not-torch"}
    assert 16 not in counted and 16 not in listed
    assert counted == {6, 10, 13, 17} and {6, 10, 13, 17} <= listed


def test_a_registry_built_by_ordered_dict_or_dict_holds_its_classes(tmp_path):
    """``OrderedDict([(name, Class), ...])`` and ``dict(name=Class)`` are keyed containers
    of the project's classes, not another library's objects: a lookup by a literal key gives
    its class, by an unknown key every registered one."""
    write(tmp_path, {"pipes.py": '''
from collections import OrderedDict

import torch


class Unet(torch.nn.Module):
    def forward(self, x):
        return x


class Vae(torch.nn.Module):
    def forward(self, x):
        return x


MAPPING = OrderedDict([("unet", Unet), ("vae", Vae)])
PLAIN = dict(unet=Unet)


def build(name):
    return MAPPING.get(name)()


def main(name):
    a = torch.compile(build(name))
    b = torch.compile(MAPPING["vae"]())
    c = torch.compile(PLAIN["unet"]())
    return a, b, c
'''})
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("pipes.py", 25)] == [("module", "pipes.Unet.forward"), ("module", "pipes.Vae.forward")]
    assert found[("pipes.py", 26)] == [("module", "pipes.Vae.forward")]
    assert found[("pipes.py", 27)] == [("module", "pipes.Unet.forward")]


def test_a_parameter_its_callers_fill_with_another_librarys_model_says_so(tmp_path):
    """``parameter`` is the reason only where no project code passes the parameter: a
    function its callers hand another library's model says ``external``, with the model."""
    write(tmp_path, {"m.py": '''
import torch
from transformers import AutoModel


def setup(model):
    return torch.compile(model)


def public(model):
    return torch.compile(model)


def main():
    return setup(AutoModel.from_pretrained("gpt2"))
'''})
    sites = {s.site.span.line: s for s in resolve(tmp_path)}
    assert (sites[6].reason, sites[6].detail) == ("external", "transformers.AutoModel.from_pretrained()")
    assert (sites[10].reason, sites[10].detail) == ("parameter", "m.public.model")


def test_count_takes_no_call_of_another_librarys_module_for_a_wrapper(tmp_path):
    """``re.compile(...)`` beside a test class's own ``compile(self, model)`` wrapper is
    another library's function: no site, by the count as by the linter."""
    write(tmp_path, {"t.py": '''
import re

import torch

PATTERN = re.compile(r"x+")


class Case:
    def compile(self, model):
        return torch.compile(model)

    def test_one(self):
        return self.compile(torch.nn.Linear(2, 2))
'''})
    counted = {line for _, line in count_sites([str(tmp_path / "t.py")])}
    listed = {s.site.span.line for s in resolve(tmp_path) if s.reason != "not-torch"}
    assert counted == {10, 13} and 5 not in listed


# A call that is one branch of a conditional expression testing its argument's class passes
# only what that test lets through: the modules never reach the helper that compiles.
BRANCH_OF_A_CLASS_TEST = {
    "lib.py": """
        import torch


        class Runner:
            def prepare(self, *args):
                result = [self._prepare_one(obj) if not isinstance(obj, torch.nn.Module) else obj for obj in args]
                models = [self.prepare_model(obj) if isinstance(obj, Net) else obj for obj in args]
                return result, models

            def _prepare_one(self, obj):
                return self.prepare_model(obj)

            def prepare_model(self, model):
                return torch.compile(model)


        class Net(torch.nn.Module):
            def forward(self, x):
                return x + 1
        """,
    "train.py": """
        import torch
        from lib import Net, Runner


        class Other(torch.nn.Module):
            def forward(self, x):
                return x - 1


        def main():
            Runner().prepare(Net(), Other(), 3)
        """,
}


def test_a_call_a_class_test_picks_passes_only_what_the_test_lets_through(tmp_path):
    write(tmp_path, BRANCH_OF_A_CLASS_TEST)
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("lib.py", 6)] == [("unresolved", "no-code")]  # no module reaches it
    assert found[("lib.py", 7)] == [("per-block", "lib.Net.forward")]
    assert found[("lib.py", 14)] == [("module", "lib.Net.forward")]


# Calls that only share the name of a wrapper the project defines: a function imported from
# another library, and an attribute that holds a module.
NAMESAKES = {
    "lib.py": """
        import torch


        def main(model):
            return torch.compile(model)


        def call(model):
            return torch.compile(model)
        """,
    "train.py": """
        from subprocess import call
        from unittest import mock

        import torch
        from torch import nn

        from lib import main


        class Generator(nn.Module):
            def __init__(self):
                super().__init__()
                self.main = nn.Sequential(nn.Linear(2, 2), nn.ReLU())

            def forward(self, x):
                return self.main(x)


        def run():
            call(["true"])
            mock.call(3)
            return main(Generator())
        """,
}


def test_a_call_that_only_shares_a_wrappers_name_is_no_site(tmp_path):
    write(tmp_path, NAMESAKES)
    sites = [s for s in resolve(tmp_path) if s.site_path.endswith("train.py")]
    # ``subprocess.call`` and ``self.main`` (an ``nn.Sequential``) run no project wrapper.
    assert [(s.site.span.line, s.reason) for s in sites] == [(22, "")]
    assert by_line(sites, tmp_path)[("train.py", 22)] == [("module", "train.Generator.forward")]


TORCH_NAMESAKES = {
    "pkg/__init__.py": """
        import torch


        def compile(fn, fx=False):
            return torch.compile(fn) if fx else fn


        def cross_entropy(fn, *args):
            return torch.compile(fn)(*args)


        class Recipe:
            def apply(self, model):
                return torch.compile(model)
    """,
    "train.py": """
        import torch
        import torch.nn.functional as F

        import pkg


        class Net(torch.nn.Module):
            def forward(self, x):
                return x + 1

            def init(self, m):
                pass


        class Square(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * x


        def main(x, y):
            net = Net()
            net.apply(net.init)
            loss = F.cross_entropy(x, y) + torch.nn.functional.cross_entropy(x, y)
            z = Square.apply(x)
            fast = pkg.compile(net, fx=True)
            recipe = pkg.Recipe()
            return recipe.apply(net), fast, loss, z
    """,
}


def test_a_call_of_torchs_own_function_is_no_call_of_a_wrapper_of_the_same_name(tmp_path):
    # ``cross_entropy`` and ``apply`` are project wrappers; ``F.cross_entropy``, an
    # ``nn.Module``'s ``apply`` and an ``autograd.Function``'s ``apply`` are torch's own and
    # compile nothing. ``pkg.compile(net, fx=True)`` calls the project module's wrapper, not
    # ``nn.Module.compile`` of a module: what it compiles is its argument (with ``fx=False``,
    # its default, it compiles nothing).
    write(tmp_path, TORCH_NAMESAKES)
    sites = [s for s in resolve(tmp_path) if s.site_path.endswith("train.py")]
    assert [(s.site.span.line, s.reason) for s in sites] == [(26, ""), (28, "")]
    found = by_line(sites, tmp_path)
    assert found[("train.py", 26)] == found[("train.py", 28)] == [("module", "train.Net.forward")]


def test_in_torchs_own_tree_its_wrappers_are_project_code(tmp_path):
    # Linting torch itself: ``torch._hops.compile_and_call`` is the project's wrapper, not a
    # function of the modelled library.
    write(tmp_path, {
        "torch/__init__.py": "",
        "torch/_hops.py": """
            import torch


            def compile_and_call(fn, *args):
                return torch.compile(fn)(*args)
        """,
        "torch/ops.py": """
            from torch._hops import compile_and_call


            def body(x):
                return x + 1


            def run(x):
                return compile_and_call(body, x)
        """,
    })
    found = by_line([s for s in resolve(tmp_path) if os.path.basename(s.site_path) == "ops.py"], tmp_path)
    assert found == {("torch/ops.py", 9): [("function", "torch.ops.body")]}


def test_a_decorator_of_another_library_is_no_call_of_a_wrapper_of_its_name(tmp_path):
    # ``main`` is a project wrapper; ``@hydra.main(...)`` is hydra's, and decorates a script.
    write(tmp_path, {
        "tools.py": """
            import torch


            def main(model):
                return torch.compile(model)
        """,
        "train.py": """
            import hydra
            import torch

            from tools import main


            @hydra.main(config_path="conf", config_name="config")
            def run(cfg):
                return main(torch.nn.Linear(2, 2))
        """,
    })
    sites = [(os.path.basename(s.site_path), s.site.span.line, s.site.form) for s in resolve(tmp_path)]
    assert sites == [("tools.py", 5, "call"), ("train.py", 9, "wrapper")]


def test_a_project_modules_compile_that_returns_torchs_is_a_decorator(tmp_path):
    # ``compiler.compile()`` returns ``torch.compile`` (or a no-op where torch has none):
    # ``@compiler.compile()`` compiles the function under it.
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/compiler.py": """
            import torch


            def noop(fn):
                return fn


            def compile():
                if hasattr(torch, "compile"):
                    return torch.compile
                return noop
        """,
        "pkg/ops.py": """
            from pkg import compiler


            @compiler.compile()
            def scale(x, k: int):
                return x * k
        """,
    })
    found = by_line([s for s in resolve(tmp_path) if s.site_path.endswith("ops.py")], tmp_path)
    assert found == {("pkg/ops.py", 4): [("decorated", "pkg.ops.scale")]}


SHADOWED = {
    "tools.py": """
        import torch


        def compiled(mode):
            def fn(module):
                return torch.compile(module, mode=mode)
            return fn


        def record(calls, fn, *args, **kwargs):
            calls.append(fn.__name__)
            return fn(*args, **kwargs)


        def hook(module, name, *args, **kwargs):
            fn = getattr(module, name)
            return fn(*args, **kwargs)


        def fit(module, *args):
            return hook(module, "fit", *args)
    """,
}


def test_a_call_through_a_parameter_is_no_call_of_a_wrapper_of_the_same_name(tmp_path):
    # ``fn`` is a wrapper (a decorator factory's inner function), but ``record``'s ``fn`` is
    # its own parameter and ``hook``'s a local it assigned: each calls whatever it holds, and
    # compiles nothing of its own (nor does ``fit``, which passes its arguments to ``hook``).
    write(tmp_path, SHADOWED)
    sites = [(s.site.span.line, s.site.function) for s in resolve(tmp_path)]
    assert sites == [(6, "compiled.fn")]


def test_count_takes_no_bare_call_of_a_local_for_a_wrapper_defined_elsewhere(tmp_path):
    # The independent count: ``fn`` is a wrapper in tools.py; another file's ``fn(...)``,
    # neither defined there nor imported, calls a local or a parameter.
    write(tmp_path, {
        "tools.py": SHADOWED["tools.py"],
        "hooks.py": """
            def hook(module, name, *args):
                fn = getattr(module, name)
                return fn(*args)


            def each(fn, items):
                return [fn(item) for item in items]
        """,
    })
    counted = relative(count_sites([str(p) for p in sorted(tmp_path.rglob("*.py"))]), str(tmp_path))
    assert ("tools.py", 6) in counted
    assert not any(path == "hooks.py" for path, _ in counted)


PIPELINE = '''
from typing import Self

import torch
from torch import nn


class Encoder(nn.Module):
    def forward(self, x):
        return x + 1


class Decoder(nn.Module):
    def forward(self, x):
        return x * 2


class Pipeline:
    def register(self, **kwargs):
        for name, module in kwargs.items():
            setattr(self, name, module)

    @classmethod
    def from_pretrained(cls, path) -> Self:
        chosen = _lookup(path)
        return chosen(**_load(path))

    def to(self, device) -> Self:
        return _moved(self, device)


class EncodePipeline(Pipeline):
    def __init__(self, encoder: Encoder):
        self.register(encoder=encoder)


class DecodePipeline(Pipeline):
    def __init__(self, decoder: Decoder):
        self.register(decoder=decoder)


def _lookup(path):
    return {"enc": EncodePipeline, "dec": DecodePipeline}[path]


def main():
    pipe = EncodePipeline.from_pretrained("enc").to("cpu")
    pipe.encoder = torch.compile(pipe.encoder)
'''


def test_a_method_typed_to_return_self_gives_its_receiver(tmp_path):
    """``-> Self`` says what a call returns whatever its body does: an instance of the class
    a classmethod is called on, the object a method is called on. Following the body instead
    (a lookup over every pipeline class) attributed the site to whichever class came first."""
    write(tmp_path, {"m.py": PIPELINE})
    (site,) = resolve(tmp_path)
    assert site.resolved
    assert [r.name for r in site.regions] == ["m.Encoder.forward"]


def test_an_attribute_set_per_keyword_by_a_registering_method_is_known(tmp_path):
    """A method that ``setattr``s each keyword it is given onto ``self`` binds the attribute a
    call names to the value passed: ``self.register(encoder=encoder)``, not an unbound name;
    a keyword another subclass passes is not this instance's."""
    write(tmp_path, {"m.py": PIPELINE + '''

def other():
    pipe = DecodePipeline(Decoder())
    return torch.compile(pipe.encoder)
'''})
    sites = {s.site.function: s for s in resolve(tmp_path)}
    assert [r.name for r in sites["main"].regions] == ["m.Encoder.forward"]
    unbound = sites["other"]
    assert not unbound.resolved and unbound.reason == "unbound"


def test_a_module_imported_by_a_call_is_another_library_not_a_model(tmp_path):
    # ``pytest.importorskip`` and ``importlib.import_module`` import the module they name and
    # return it: its ``compile`` is that library's, as after ``import mlx.core as mx``.
    write(tmp_path, {
        "test_parity.py": """
            import importlib

            import pytest
            import torch

            mx = pytest.importorskip("mlx.core")


            def gelu(x):
                return x * 2


            def test_parity():
                fast = mx.compile(gelu)
                graph = importlib.import_module("jax.experimental")
                graph.compile(*[gelu])
                model = torch.nn.Linear(2, 2)
                model.compile()
                return fast, model
        """,
    })
    sites = resolve(tmp_path)
    reasons = {s.site.span.line: (s.reason, s.detail) for s in sites if not s.resolved}
    assert reasons == {14: ("not-torch", "mx"), 16: ("not-torch", "graph")}
    # The model's own ``compile()`` is still a site, resolved to torch's module.
    assert [s.site.span.line for s in sites if s.resolved] == [18]


def test_a_class_decorated_with_torch_compile_compiles_its_instances_forward(tmp_path):
    # torch 2.13 compiles a decorated class's ``__call__``: every instance, of it or of a
    # subclass, runs the compiled forward (its own, a base's, or a torch module's).
    write(tmp_path, {
        "blocks.py": """
            import torch
            from torch import nn


            class Pad(nn.Module):
                def forward(self, x):
                    return x + 1


            @torch.compile(dynamic=True)
            class Block(nn.Module):
                def forward(self, x):
                    return x * 2


            @torch.compile
            class ChunkPad(Pad):
                pass


            @torch.compile(mode="max-autotune")
            class Conv(nn.Conv2d):
                pass


            @torch.compile
            class Plain(nn.Module):
                pass
        """,
    })
    sites = resolve(tmp_path)
    found = by_line(sites, tmp_path)
    assert found[("blocks.py", 10)] == [("decorated", "blocks.Block.forward")]
    assert found[("blocks.py", 16)] == [("decorated", "blocks.Pad.forward")]
    conv = next(s for s in sites if s.site.span.line == 21)
    assert conv.resolved and [r.model_class for r in conv.library] == ["blocks.Conv"]
    # A module with no forward anywhere has no code to compile.
    assert found[("blocks.py", 26)] == [("unresolved", "no-code")]
    # The region keeps its class, so the runs match its instances' calls.
    block = next(s for s in sites if s.site.span.line == 10)
    assert [r.model_class for r in block.regions] == ["blocks.Block"]
    assert ("dynamic", "True") in block.site.options


def test_a_namespace_portion_inside_a_package_is_found_by_its_package_name(tmp_path):
    # ``pkg/layers/lora/`` has no ``__init__`` but sits in a package: ``import
    # pkg.layers.lora.linear`` finds it, and a script there still imports its siblings by name.
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/layers/__init__.py": "",
        "pkg/layers/lora/linear.py": """
            from torch import nn


            class LoRALinear(nn.Module):
                def forward(self, x):
                    return x * 2
        """,
        "pkg/layers/lora/bench.py": """
            import torch
            from linear import LoRALinear

            fast = torch.compile(LoRALinear())
        """,
        "pkg/train.py": """
            import torch
            from pkg.layers.lora.linear import LoRALinear

            model = torch.compile(LoRALinear())
        """,
    })
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("pkg/train.py", 4)] == [("module", "linear.LoRALinear.forward")]
    assert found[("pkg/layers/lora/bench.py", 4)] == [("module", "linear.LoRALinear.forward")]


def test_a_package_in_a_top_level_namespace_package_is_found_by_its_full_name(tmp_path):
    # ``src/org/core/`` is a package; ``src/org/`` has no ``__init__`` (a namespace package
    # imported from ``src/``): ``from org.core.models import Net`` finds it. A module of that
    # name elsewhere in the project is not shadowed by the namespace name.
    write(tmp_path, {
        "src/org/core/__init__.py": "",
        "src/org/core/models.py": """
            from torch import nn


            class Net(nn.Module):
                def forward(self, x):
                    return x * 2
        """,
        "tests/test_net.py": """
            import torch
            from org.core.models import Net

            fast = torch.compile(Net())
        """,
        "lib/org/__init__.py": "",
        "lib/org/tools.py": """
            from torch import nn


            class Tool(nn.Module):
                def forward(self, x):
                    return x + 1
        """,
        "scripts/run_tool.py": """
            import torch
            from org.tools import Tool

            fast = torch.compile(Tool())
        """,
    })
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("tests/test_net.py", 4)] == [("module", "core.models.Net.forward")]
    assert found[("scripts/run_tool.py", 4)] == [("module", "org.tools.Tool.forward")]


def test_a_module_registered_by_name_is_the_attribute_of_that_name(tmp_path):
    write(tmp_path, {
        "lib.py": """
            from torch.nn import Module


            class Plain(Module):
                def forward(self, x):
                    return x


            class Decoder(Module):
                def __init__(self, head: Plain | None = None, tail: Plain | None = None):
                    super().__init__()
                    self.add_module("head", head)
                    self.register_module("tail", tail)

                def compile_parts(self):
                    self.head.compile()
                    self.tail.compile()
        """,
    })
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("lib.py", 16)] == [("module", "lib.Plain.forward")]
    assert found[("lib.py", 17)] == [("module", "lib.Plain.forward")]


def test_an_abstract_annotation_stands_for_its_concrete_subclasses_and_a_sequence_for_its_elements(tmp_path):
    # Library code with no caller: the decoder's layers come as ``Sequence[Layer]`` and its
    # norm is registered with ``register_module``; both classes declare an abstract
    # ``forward``, so what runs is a concrete subclass's.
    write(tmp_path, {
        "lib.py": """
            from abc import ABC, abstractmethod
            from collections.abc import Sequence

            from torch.nn import Module, ModuleList


            class Layer(Module, ABC):
                @abstractmethod
                def forward(self, x):
                    \"\"\"Apply the layer.\"\"\"


            class StdLayer(Layer):
                def forward(self, x):
                    return x * 2


            class Norm(Module, ABC):
                @abstractmethod
                def forward(self, x):
                    \"\"\"Normalize.\"\"\"


            class RMS(Norm):
                def forward(self, x):
                    return x


            class Plain(Module):
                def forward(self, x):
                    return x


            class Decoder(Module):
                def __init__(self, layers: Sequence[Layer], layer_norm: Norm | None = None, head: Plain | None = None):
                    super().__init__()
                    self.layers = ModuleList(layers)
                    self.layer_norm: Norm | None
                    self.register_module("layer_norm", layer_norm)
                    self.add_module("head", head)

                def compile_layerwise(self, *args, **kwargs):
                    for layer in self.layers:
                        layer.compile(*args, **kwargs)
                    if self.layer_norm is not None:
                        self.layer_norm.compile(*args, **kwargs)
                    self.head.compile()
        """,
    })
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("lib.py", 44)] == [("per-block", "lib.StdLayer.forward")]
    assert found[("lib.py", 46)] == [("module", "lib.RMS.forward")]
    assert found[("lib.py", 47)] == [("module", "lib.Plain.forward")]


def test_an_abstract_method_called_on_self_runs_the_subclasses_own_and_generic_bases_count(tmp_path):
    # A base class builds through an abstract classmethod its subclasses define; the subclasses
    # derive from the base as a generic (``Config[Opt]``), which is still the base.
    write(tmp_path, {
        "optim.py": """
            from abc import ABC, abstractmethod
            from typing import Generic, TypeVar

            import torch

            Opt = TypeVar("Opt")


            class Config(ABC, Generic[Opt]):
                @classmethod
                @abstractmethod
                def optimizer(cls):
                    raise NotImplementedError

                def build(self, params):
                    optim = self.optimizer()(params)
                    optim.step = torch.compile(optim.step)
                    return optim


            class Fast(torch.optim.Optimizer):
                def step(self, closure=None):
                    return None


            class FastConfig(Config[Fast]):
                @classmethod
                def optimizer(cls):
                    return Fast
        """,
    })
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("optim.py", 17)] == [("method", "optim.Fast.step")]


def test_an_abstract_annotation_outside_the_tests_leaves_the_tests_subclasses_out(tmp_path):
    # A trainer compiles whatever model it is given, annotated by an abstract base; a test
    # module's subclass is a candidate only where a test hands it over.
    write(tmp_path, {
        "lib/__init__.py": "",
        "lib/base.py": """
            from abc import ABC, abstractmethod

            import torch
            from torch.nn import Module


            class Model(Module, ABC):
                @abstractmethod
                def forward(self, x):
                    \"\"\"Run.\"\"\"


            class Real(Model):
                def forward(self, x):
                    return x


            def fit(model: Model):
                return torch.compile(model)
        """,
        "tests/__init__.py": "",
        "tests/test_fit.py": """
            from lib.base import Model


            class Tiny(Model):
                def forward(self, x):
                    return x + 1
        """,
    })
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("lib/base.py", 19)] == [("module", "lib.base.Real.forward")]



def test_namespace_packages_two_levels_deep_are_found_by_their_full_name(tmp_path):
    # ``app/`` and ``app/train/`` have no ``__init__``: the script imports ``app.train.utils``
    # from the repository root.
    write(tmp_path, {
        "app/train/utils.py": """
            from torch import nn


            class Net(nn.Module):
                def forward(self, x):
                    return x


            def init_model():
                return Net()
        """,
        "app/train/main.py": """
            from app.train.utils import init_model


            def main():
                model = init_model()
                model.compile()
        """,
    })
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("app/train/main.py", 6)] == [("module", "utils.Net.forward")]


def test_a_modules_dict_looked_up_by_name_is_a_registry_of_its_functions_and_classes(tmp_path):
    # The factory looks a model up in a module's ``__dict__``, by a name it is given and by a
    # literal one (the layout is vjepa2's: namespace packages two levels deep).
    write(tmp_path, {
        "src/models/vit.py": """
            from torch import nn


            class ViT(nn.Module):
                def forward(self, x):
                    return x


            class Predictor(nn.Module):
                def forward(self, x):
                    return x * 2


            def vit_small():
                return ViT()


            def predictor():
                return Predictor()
        """,
        "app/train/utils.py": """
            import src.models.vit as vit


            def init_model(name):
                encoder = vit.__dict__[name]()
                head = vit.__dict__["predictor"]()
                return encoder, head
        """,
        "app/train/main.py": """
            from app.train.utils import init_model


            def main(name):
                encoder, head = init_model(name)
                encoder.compile()
                head.compile()
        """,
    })
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("app/train/main.py", 6)] == [("module", "vit.Predictor.forward"), ("module", "vit.ViT.forward")]
    assert found[("app/train/main.py", 7)] == [("module", "vit.Predictor.forward")]


def test_a_conditional_alias_written_over_several_lines(tmp_path):
    # The alias is a local of the constructor, its conditional parenthesised over several
    # lines, the other branch a lambda: the call of the alias is a compile site.
    write(tmp_path, {"wrap.py": '''
        import torch
        from packaging import version


        class Net(torch.nn.Module):
            def forward(self, x):
                return x + 1


        class Wrapper(torch.nn.Module):
            def __init__(self, compile_model: bool = False):
                super().__init__()
                compile = (
                    torch.compile
                    if version.parse(torch.__version__) >= version.parse("2.0.0") and compile_model
                    else lambda x: x
                )
                self.inner = compile(Net())
        '''})
    assert by_line(resolve(tmp_path), tmp_path) == {("wrap.py", 18): [("module", "wrap.Net.forward")]}


def test_a_function_under_a_torch_func_transform(tmp_path):
    # ``torch.vmap(f)`` (and ``torch.func.grad``, ...) hands back a function that runs ``f``:
    # compiling it compiles ``f``, inlined from the transform's wrapper.
    write(tmp_path, {"t.py": '''
        import torch
        from torch import func


        def per_sample(x, y):
            return x + y


        def loss(w):
            return (w * 2).sum()


        def run(x, y):
            batched = torch.vmap(per_sample, (1, None))
            compiled = torch.compile(batched, fullgraph=True)
            return compiled(x, y), torch.compile(func.grad(loss))(x)
        '''})
    found = by_line(resolve(tmp_path), tmp_path)
    assert found == {("t.py", 15): [("transform", "t.per_sample")], ("t.py", 16): [("transform", "t.loss")]}


def test_a_project_directory_with_a_stray_init_imports_its_packages_as_top_level(tmp_path):
    # The repository's own directory holds ``pyproject.toml`` and an ``__init__.py``: its
    # package ``lstm/`` is installed (and imported by the tests) as ``lstm``, not by the name
    # the stray ``__init__`` would give it (``<repository>.lstm``).
    repo = tmp_path / "lstm"
    write(repo, {
        "__init__.py": "",
        "pyproject.toml": "[project]\nname = 'lstm'\n",
        "lstm/__init__.py": "",
        "lstm/model.py": """
            from torch import nn


            class Cell(nn.Module):
                def forward(self, x):
                    return x * 2
        """,
        "tests/test_cell.py": """
            import torch
            from lstm.model import Cell

            fast = torch.compile(Cell())
        """,
    })
    assert by_line(resolve(repo), repo) == {("tests/test_cell.py", 4): [("module", "lstm.lstm.model.Cell.forward")]}


def test_an_abstract_method_on_self_outside_the_tests_leaves_the_tests_subclasses_out(tmp_path):
    # As for an abstract annotation: the base's own subclass is what ``self.optimizer()`` may
    # run; a test module's subclass (a fixture) is not.
    write(tmp_path, {
        "lib/__init__.py": "",
        "lib/optim.py": """
            from abc import ABC, abstractmethod

            import torch


            class Config(ABC):
                @classmethod
                @abstractmethod
                def optimizer(cls):
                    raise NotImplementedError

                def build(self, params):
                    optim = self.optimizer()(params)
                    optim.step = torch.compile(optim.step)
                    return optim


            class Fast(torch.optim.Optimizer):
                def step(self, closure=None):
                    return None


            class FastConfig(Config):
                @classmethod
                def optimizer(cls):
                    return Fast
        """,
        "tests/__init__.py": "",
        "tests/test_optim.py": """
            import torch
            from lib.optim import Config


            class Dummy(torch.optim.Optimizer):
                def step(self, closure=None):
                    return 1


            class DummyConfig(Config):
                @classmethod
                def optimizer(cls):
                    return Dummy
        """,
    })
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("lib/optim.py", 14)] == [("method", "lib.optim.Fast.step")]


JIT = """
import torch

jit_fuser = torch.jit.script


def enable_jit_fuser():
    global jit_fuser
    jit_fuser = torch.compile


def local_only():
    compile_here = torch.compile
    return compile_here


enable_jit_fuser()
"""

FUSED = """
import torch
from pkg.jit import jit_fuser, local_only
from pkg import jit


@jit_fuser
def bias_gelu(x, bias):
    return torch.nn.functional.gelu(x + bias)


def swiglu(x):
    return x * torch.sigmoid(x)


fused_swiglu = jit_fuser(swiglu)
by_module = jit.jit_fuser(swiglu)
compile_here = local_only()
"""


def test_a_compile_alias_imported_from_another_module_makes_its_uses_sites(tmp_path):
    # ``megatron.core.jit``'s shape: a module global set to torch.compile by a function the
    # module runs at import (``global jit_fuser``), imported and used as a decorator and a call.
    write(tmp_path, {"pkg/__init__.py": "", "pkg/jit.py": JIT, "pkg/fused.py": FUSED, "pyproject.toml": "[project]\nname = 'pkg'\n"})
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("pkg/fused.py", 6)] == [("decorated", "pkg.fused.bias_gelu")]
    assert found[("pkg/fused.py", 15)] == [("function", "pkg.fused.swiglu")]
    assert found[("pkg/fused.py", 16)] == [("function", "pkg.fused.swiglu")]
    # A function's own local alias is no module global: calling what the function returns
    # is not a call of an alias by name.
    assert ("pkg/fused.py", 17) not in found
    files = [str(p) for p in sorted(tmp_path.rglob("*.py"))]
    counted = {(os.path.relpath(p, tmp_path), line) for p, line in count_sites(files)}
    assert {("pkg/fused.py", 6), ("pkg/fused.py", 15)} <= counted


def test_a_name_assigned_torch_compile_only_as_a_local_is_not_exported(tmp_path):
    jit = JIT.replace("    global jit_fuser\n", "")
    write(tmp_path, {"pkg/__init__.py": "", "pkg/jit.py": jit, "pkg/fused.py": FUSED, "pyproject.toml": "[project]\nname = 'pkg'\n"})
    found = by_line(resolve(tmp_path), tmp_path)
    assert ("pkg/fused.py", 6) not in found and ("pkg/fused.py", 15) not in found


CHECKS = """
import torch
from torch import nn


class Base(nn.Module):
    pass


def validate_jit(model: Base, inputs=()):
    compiled = torch.compile(model)
    return compiled(*inputs)


def public_compile(model: Base):
    return torch.compile(model)
"""

CHECKED = """
import torch
from torch import nn

from pkg import checks


class Net(nn.Module):
    def forward(self, x):
        return x * 2


def test_net():
    assert checks.validate_jit(Net(), (torch.ones(2),)) is not None
"""


def test_a_wrappers_own_site_is_analysed_at_its_calls(tmp_path):
    # ``validate_jit``'s parameter is annotated with a base class with no ``forward``; its calls
    # are sites, each resolved by what it passes: the wrapper's own site says so and is not
    # counted as not analysed. ``public_compile``, which nothing in the project calls, is.
    write(tmp_path, {"pyproject.toml": "", "pkg/__init__.py": "", "pkg/checks.py": CHECKS, "tests/test_net.py": CHECKED})
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("pkg/checks.py", 10)] == [("unresolved", "wrapper")]
    assert found[("pkg/checks.py", 15)] == [("unresolved", "no-code")]
    assert found[("tests/test_net.py", 13)] == [("module", "test_net.Net.forward")]
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        text = CliRunner().invoke(main, ["--no-cache", "--format", "concise", "."], catch_exceptions=False).output
        regions = CliRunner().invoke(main, ["regions", "--no-cache", "pkg/checks.py"], catch_exceptions=False).output
    finally:
        os.chdir(cwd)
    assert text.splitlines()[-1] == "Found 0 findings, 3 files checked, 1 compile site not analysed (run recompile-lint regions)."
    assert f"-> unresolved (wrapper: validate_jit()); {REASON_ACTIONS['wrapper']}" in regions


def test_an_import_is_a_definition_that_reaches_the_site(tmp_path):
    # The name is first bound to None, then imported under a ``try``: at the site, the import
    # is what reaches (a torch library entry); a later rebinding does not reach back.
    write(tmp_path, {"attn.py": '''
        import torch

        flex_attention = None

        try:
            from torch.nn.attention.flex_attention import flex_attention
            if torch.cuda.is_available():
                flex_attention = torch.compile(flex_attention)
        except ImportError:
            pass
        ''', "local.py": '''
        import torch

        Net = None


        def build():
            from models import Net
            return torch.compile(Net())
        ''', "models.py": '''
        import torch


        class Net(torch.nn.Module):
            def forward(self, x):
                return x + 1
        '''})
    sites = {(os.path.relpath(s.site_path, tmp_path), s.site.span.line): s for s in resolve(tmp_path)}
    assert [r.ref for r in sites[("attn.py", 8)].library] == ["torch.nn.attention.flex_attention.flex_attention"]
    assert [r.name for r in sites[("local.py", 8)].regions] == ["models.Net.forward"]


def test_a_tests_parameter_is_the_pytest_fixture_of_its_name(tmp_path):
    # pytest fills a test's parameters with the fixtures of the same names: from the test's
    # module, its class, or the conftest.py files from its directory up; a fixture that yields
    # gives what it yields; a fixture named like the package it imports and returns.
    write(tmp_path, {"pkg/__init__.py": "from pkg.model import Net\n", "pkg/model.py": '''
        import torch


        class Net(torch.nn.Module):
            def forward(self, x):
                return x + 1


        class Other(torch.nn.Module):
            def forward(self, x):
                return x * 2
        ''', "tests/conftest.py": '''
        import pytest


        @pytest.fixture()
        def pkg():
            import pkg
            return pkg


        @pytest.fixture
        def net():
            from pkg.model import Net
            yield Net()
        ''', "tests/unit/test_a.py": '''
        import pytest
        import torch
        from pkg.model import Other


        def test_module(pkg):
            model = torch.compile(pkg.Net())


        def test_yielded(net):
            model = torch.compile(net)


        @pytest.fixture
        def other():
            return Other()


        class TestIt:
            @pytest.fixture
            def net(self):
                return Other()

            def test_own(self, net, other):
                torch.compile(net)
                torch.compile(other)


        def helper(net):
            return torch.compile(net)
        '''})
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("tests/unit/test_a.py", 7)] == [("module", "pkg.model.Net.forward")]
    assert found[("tests/unit/test_a.py", 11)] == [("module", "pkg.model.Net.forward")]
    # The class's own fixture before the conftest's; the module's own.
    assert found[("tests/unit/test_a.py", 25)] == [("module", "pkg.model.Other.forward")]
    assert found[("tests/unit/test_a.py", 26)] == [("module", "pkg.model.Other.forward")]
    # Not a test: pytest fills nothing, and nothing calls it.
    assert found[("tests/unit/test_a.py", 30)][0][0] == "unresolved"


def test_a_type_test_of_either_class_narrows_and_another_librarys_classes_say_external(tmp_path):
    # ``m.compile()`` under ``isinstance(m, A) or isinstance(m, B)`` over ``model.modules()``:
    # the project's classes A and B, or, where the test names only another library's classes,
    # their model (reason external, naming one), not an unknown call.
    write(tmp_path, {"blocks.py": '''
        import torch
        from torchtune.modules import SelfAttentionLayer, CrossAttentionLayer


        class A(torch.nn.Module):
            def forward(self, x):
                return x + 1


        class B(torch.nn.Module):
            def forward(self, x):
                return x * 2


        class C(torch.nn.Module):
            def forward(self, x):
                return x - 1


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = torch.nn.ModuleList([A(), B(), C()])


        def compile_blocks(model: Net):
            for m in model.layers:
                if isinstance(m, A) or isinstance(m, B):
                    m.compile()


        def compile_decoder(decoder):
            for m in reversed(list(decoder.modules())):
                if isinstance(m, SelfAttentionLayer) or isinstance(m, CrossAttentionLayer):
                    m.compile()
        '''})
    sites = {(os.path.relpath(s.site_path, tmp_path), s.site.span.line): s for s in resolve(tmp_path)}
    assert sorted(r.name for r in sites[("blocks.py", 29)].regions) == ["blocks.A.forward", "blocks.B.forward"]
    external = sites[("blocks.py", 35)]
    assert not external.resolved and external.reason == "external" and external.detail.startswith("torchtune.modules.")


def test_a_wrapper_factory_call_without_its_function_is_no_site_of_its_own(tmp_path):
    # ``@try_compile(dynamic=False)`` calls the wrapper without ``func`` (None): that call
    # returns the decorator and compiles nothing; the decorated function is the one site.
    write(tmp_path, {"ops.py": """
        import torch


        def try_compile(func=None, **kwargs):
            def decorator(fn):
                return torch.compile(fn, **kwargs)

            if func is None:
                return decorator
            return decorator(func)


        @try_compile(dynamic=False)
        def scale(x, k: int):
            return x * k


        @try_compile
        def shift(x):
            return x + 1


        double = try_compile(lambda x: x * 2, dynamic=True)
    """})
    assert by_line(resolve(tmp_path), tmp_path) == {
        ("ops.py", 6): [("function", "ops.scale"), ("function", "ops.shift"), ("lambda", "ops.<lambda:23:21>")],
        ("ops.py", 10): [("function", "ops.shift"), ("lambda", "ops.<lambda:23:21>")],
        ("ops.py", 13): [("decorated", "ops.scale")],
        ("ops.py", 18): [("decorated", "ops.shift")],
        ("ops.py", 23): [("lambda", "ops.<lambda:23:21>")],
    }


def test_a_wrapper_whose_factory_call_returns_a_lambda_is_a_wrapper_site(tmp_path):
    # ``@maybe_compile()`` returns ``lambda f: maybe_compile(f, **kw)``: the lambda's parameter
    # is filled by the decorated functions, each a site of its own; the body's site says so.
    write(tmp_path, {"ops.py": """
        import torch


        def maybe_compile(fn=None, **kwargs):
            if fn is None:
                return lambda f: maybe_compile(f, **kwargs)
            return torch.compile(fn, **kwargs)


        @maybe_compile()
        def scale(x, k: int):
            return x * k
    """})
    [body] = [s for s in resolve(tmp_path) if s.site.span.line == 7]
    assert (body.reason, body.detail) == ("wrapper", "maybe_compile()")


def test_a_wrapper_call_whose_constants_rule_out_every_compile_is_no_site(tmp_path):
    # ``compile_model(pipe, each_part=True)`` hands ``pipe`` to ``compile_torch``, which compiles
    # it only in the ``else`` of ``if each_part:`` (it compiles the parts instead): that call
    # compiles nothing of what it passes, and the pipeline's ``__call__`` is no region.
    write(tmp_path, {"app.py": """
        import torch


        class Net(torch.nn.Module):
            def forward(self, x):
                return x + 1


        class Pipeline:
            def __init__(self):
                self.net = Net()

            def __call__(self, x):
                return self.net(x).item()


        def compile_torch(model, each_part=True, mode=None):
            def compile_one(m):
                return torch.compile(m, mode=mode)

            if each_part:
                model.net = compile_one(model.net)
            else:
                model = compile_one(model)
            return model


        def compile_model(model, each_part=True):
            if mode_of(model) == "none":
                return model
            return compile_torch(model, each_part=each_part, mode="default")


        def mode_of(model):
            return "default"


        def main():
            pipe = Pipeline()
            pipe = compile_model(pipe, each_part=True)
            pipe = compile_model(pipe)
            net = compile_model(Net(), each_part=False)
    """})
    resolutions = resolve(tmp_path)
    sites = by_line(resolutions, tmp_path)
    assert ("app.py", 40) not in sites and ("app.py", 41) not in sites
    assert sites[("app.py", 42)] == [("module", "app.Net.forward")]
    # The wrappers' own sites are resolved at their calls, not analysed themselves.
    assert all(s.wrapper_body for s in resolutions if s.site.span.line in (19, 24, 31))
    # A compile the first call alone runs is still a compile of what the call passes.
    write(tmp_path, {"lazy.py": """
        import torch

        _COMPILED = None


        def compile_once(model, scale=1.0):
            global _COMPILED
            if _COMPILED is None:
                _COMPILED = torch.compile(model)
            return _COMPILED


        class Net(torch.nn.Module):
            def forward(self, x):
                return x - 1


        def main(x):
            return compile_once(Net())(x)
    """})
    assert by_line(resolve(tmp_path), tmp_path)[("lazy.py", 19)] == [("module", "lazy.Net.forward")]
    # A count that checks every call of a wrapper's name sees the two calls, as no sites.
    files = [str(p) for p in sorted(tmp_path.rglob("*.py"))]
    kept = {s.site.span.line: s for s in find_sites(ProjectIndex(files, FactsStore()), namesakes=True)}
    assert kept[40].reason == kept[41].reason == "not-torch" and "rule out" in kept[40].detail


def test_a_wrapper_defined_on_one_side_of_an_if_is_a_wrapper(tmp_path):
    # ``if USE: def compile_func(fn): return torch.compile(fn)`` / ``else: def
    # compile_func(fn): return fn``: either def may be bound, so its calls may compile.
    write(tmp_path, {
        "common.py": """
            import os

            import torch

            USE = os.environ.get("USE_COMPILE") == "1"

            if USE:
                def compile_func(fn, **kwargs):
                    kwargs.setdefault("dynamic", False)
                    return torch.compile(fn, **kwargs)
            else:
                def compile_func(fn, **kwargs):
                    return fn
        """,
        "ops.py": """
            from common import compile_func


            def scale(x):
                return x * 2


            scale = compile_func(scale)
        """,
    })
    sites = by_line(resolve(tmp_path), tmp_path)
    assert sites[("ops.py", 8)] == [("function", "ops.scale")]


def test_relative_imports_of_a_namespace_portion_resolve_from_its_package_name(tmp_path):
    # ``pkg/layers/linear/`` has no ``__init__``: its files are imported as
    # ``pkg.layers.linear.<name>``, where ``from ...common import compile_func`` is pkg.common's.
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/common.py": """
            import torch


            def compile_func(fn):
                return torch.compile(fn)
        """,
        "pkg/layers/__init__.py": "",
        "pkg/layers/linear/fp16.py": """
            from ...common import compile_func


            def matmul(x, w):
                return x @ w


            matmul = compile_func(matmul)
        """,
    })
    sites = by_line(resolve(tmp_path), tmp_path)
    assert sites[(os.path.join("pkg", "layers", "linear", "fp16.py"), 8)] == [("function", "fp16.matmul")]


def test_a_call_that_fills_no_wrappers_compiled_parameter_is_no_site(tmp_path):
    # ``Runner.train(self, cfg, model)`` compiles ``model``; ``model.train(True)`` on a value the
    # flow does not know passes one argument, where ``model`` would be the second: it runs
    # something else (``nn.Module.train``), no site. ``runner.train(cfg, net)`` may be the wrapper.
    write(tmp_path, {"run.py": """
        import torch


        class Runner:
            def train(self, cfg, model):
                return torch.compile(model)


        def epoch(model, runner, cfg, net):
            model.train(True)
            model.train()
            runner.train(cfg, net)
    """})
    lines = {s.site.span.line: s.reason for s in resolve(tmp_path) if not s.wrapper_body}
    assert lines == {12: "call"}


SUPER_INIT = """
import torch


class Encoder(torch.nn.Module):
    def forward(self, x):
        return x * 2


class Base(torch.nn.Module):
    def __init__(self, encoder, compile_it=True):
        super().__init__()
        self.encoder = encoder
        if compile_it:
            self.encoder = torch.compile(self.encoder)


class Child(Base):
    def __init__({params}):
        {call}


def build():
    return Child({args})
"""


def test_a_subclass_constructors_super_init_call_is_a_caller(tmp_path):
    # ``super().__init__(encoder)`` in ``Child.__init__`` runs ``Base.__init__``: what it
    # passes, and so what ``Child(...)``'s callers pass, is ``Base``'s ``encoder``.
    write(tmp_path, {"m.py": SUPER_INIT.format(params="self, encoder, scale=2", call="super().__init__(encoder)", args="Encoder(), 3")})
    assert by_line(resolve(tmp_path), tmp_path)[("m.py", 14)] == [("module", "m.Encoder.forward")]


def test_a_keyword_passed_on_through_kwargs_reaches_the_base_constructor(tmp_path):
    # ``def __init__(self, scale=2, **kwargs): super().__init__(**kwargs)`` hands ``encoder=``
    # of its callers on to ``Base.__init__``.
    write(tmp_path, {"m.py": SUPER_INIT.format(params="self, scale=2, **kwargs", call="super().__init__(**kwargs)", args="encoder=Encoder(), scale=3")})
    assert by_line(resolve(tmp_path), tmp_path)[("m.py", 14)] == [("module", "m.Encoder.forward")]


def test_a_tests_parameter_takes_the_values_pytest_parametrizes_it_with(tmp_path):
    write(tmp_path, {
        "layers.py": """
            import torch


            class Plain(torch.nn.Module):
                def forward(self, x):
                    return x + 1


            class Fused(torch.nn.Module):
                def forward(self, x):
                    return x * 2


            class Other(torch.nn.Module):
                def forward(self, x):
                    return x - 1
        """,
        "tests/test_layers.py": """
            import pytest
            import torch

            from layers import Fused, Other, Plain

            CONFIGS = [
                (Plain, {}, "plain"),
                (Fused, {"k": 2}, "fused"),
            ]


            @pytest.mark.parametrize("cls,kwargs,name", CONFIGS)
            class TestCompile:
                def test_compile(self, cls, kwargs, name):
                    torch.compile(cls())(torch.randn(2))


            @pytest.mark.parametrize("cls", [Plain, pytest.param(Other, id="other")])
            def test_each(cls):
                torch.compile(cls())(torch.randn(2))


            @pytest.mark.parametrize(("cls", "scale"), [(Fused, 1), pytest.param(Other, 2, id="o")])
            def test_pairs(cls, scale):
                torch.compile(cls())(torch.randn(2))


            @pytest.fixture(params=[Plain, pytest.param(Fused, id="fused")])
            def layer_class(request):
                return request.param


            def test_fixture(layer_class):
                torch.compile(layer_class())(torch.randn(2))


            @pytest.fixture
            def made(request):
                return request.param()


            @pytest.mark.parametrize("made", [Plain], indirect=True)
            def test_indirect(made):
                torch.compile(made)(torch.randn(2))
        """,
    })
    sites = by_line(resolve(tmp_path), tmp_path)
    test = os.path.join("tests", "test_layers.py")
    assert sites[(test, 15)] == [("module", "layers.Fused.forward"), ("module", "layers.Plain.forward")]
    assert sites[(test, 20)] == [("module", "layers.Other.forward"), ("module", "layers.Plain.forward")]
    assert sites[(test, 25)] == [("module", "layers.Fused.forward"), ("module", "layers.Other.forward")]
    assert sites[(test, 34)] == [("module", "layers.Fused.forward"), ("module", "layers.Plain.forward")]
    assert sites[(test, 44)] == [("unresolved", "parameter")]


def test_a_function_rebound_to_its_wrapped_self_compiles_the_function(tmp_path):
    # ``norm = compile_with_fallback(norm)`` reads ``norm`` before the statement rebinds it:
    # the ``def``, not the wrapper the call returns.
    write(tmp_path, {"kernels.py": """
        import functools

        import torch


        def fallback(compiled, func):
            @functools.wraps(func)
            def wrapper(*args, **kwargs):
                return compiled(*args, **kwargs)

            return wrapper


        def compile_with_fallback(func):
            compiled = torch.compile(func)
            return fallback(compiled, func)


        def norm(x):
            return x * 2


        norm = compile_with_fallback(norm)
    """})
    assert by_line(resolve(tmp_path), tmp_path) == {
        ("kernels.py", 15): [("function", "kernels.norm")],
        ("kernels.py", 23): [("function", "kernels.norm")],
    }


def test_count_takes_no_call_of_a_compiled_functions_arguments_for_a_compile(tmp_path):
    # ``torch.compile(_shift)(x, scale)`` compiles ``_shift`` and calls it with ``x``: the
    # method compiles none of its parameters, and its calls are no sites.
    write(tmp_path, {"t.py": '''
import torch


def _shift(x, scale):
    return x * scale


class Block(torch.nn.Module):
    def shift(self, x, scale):
        return torch.compile(_shift)(x, scale)

    def forward(self, x):
        return self.shift(x, 2.0)
'''})
    counted = {line for _, line in count_sites([str(tmp_path / "t.py")])}
    listed = {s.site.span.line for s in resolve(tmp_path) if s.reason != "not-torch"}
    assert counted == listed == {10}


def test_a_name_a_star_import_binds_is_the_exporting_modules(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/modules.py": """
            import torch

            __all__ = ["Decoder"]


            class Decoder(torch.nn.Module):
                def forward(self, x):
                    return x + 1


            class Hidden(torch.nn.Module):
                def forward(self, x):
                    return x - 1
        """,
        "pkg/model.py": """
            import torch

            from .modules import *


            class Model(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.decoder = Decoder()
                    self.hidden = Hidden()

                def optimize(self):
                    self.decoder = torch.compile(self.decoder)
                    self.hidden = torch.compile(self.hidden)
        """,
    })
    sites = by_line(resolve(tmp_path), tmp_path)
    model = os.path.join("pkg", "model.py")
    assert sites[(model, 13)] == [("module", "pkg.modules.Decoder.forward")]
    assert sites[(model, 14)] == [("unresolved", "call")]  # not in `__all__`: not bound here


def test_a_star_import_of_a_package_re_exports_what_it_star_imports(tmp_path):
    # ``from .nets import *`` where ``nets/__init__.py`` is itself ``from .impl import *``:
    # the package's namespace holds impl's exported names, so the outer star import binds them.
    write(tmp_path, {
        "zoo/__init__.py": "from .nets import *\n",
        "zoo/nets/__init__.py": "from .impl import *\n",
        "zoo/nets/impl.py": """
            import torch

            __all__ = ["small"]


            class Net(torch.nn.Module):
                def forward(self, x):
                    return x + 1


            def small():
                return Net()


            def hidden():
                return Net()
        """,
        "test_zoo.py": """
            import torch

            import zoo


            def test_small():
                torch.compile(zoo.small())
                torch.compile(zoo.hidden())
        """,
    })
    sites = by_line(resolve(tmp_path), tmp_path)
    assert sites[("test_zoo.py", 7)] == [("module", "zoo.nets.impl.Net.forward")]
    assert sites[("test_zoo.py", 8)][0][0] == "unresolved"  # not in impl's `__all__`


def test_a_modules_namespace_indexed_by_name_is_its_attribute(tmp_path):
    # ``models.__dict__[arch]`` is ``getattr(models, arch)`` and ``globals()[arch]`` the module's
    # own global, for every name the key may hold, what its star imports bind included (a key
    # that is no literal: the registry test above).
    write(tmp_path, {
        "models/__init__.py": """
            from .nets import *


            def build(arch):
                return globals()[arch]()
        """,
        "models/nets.py": """
            import torch


            class A(torch.nn.Module):
                def forward(self, x):
                    return x + 1


            class B(torch.nn.Module):
                def forward(self, x):
                    return x - 1
        """,
        "test_models.py": """
            import pytest
            import torch

            import models


            @pytest.mark.parametrize("arch", ["A", "B"])
            def test_arch(arch):
                torch.compile(models.__dict__[arch]())
                torch.compile(models.build(arch))
        """,
    })
    sites = by_line(resolve(tmp_path), tmp_path)
    both = [("module", "models.nets.A.forward"), ("module", "models.nets.B.forward")]
    assert sorted(sites[("test_models.py", 9)]) == both
    assert sorted(sites[("test_models.py", 10)]) == both


def test_super_attribute_is_the_next_bases_bound_to_the_receiver(tmp_path):
    # ``return super().to(*args)`` in an override of ``to`` returns the receiver (torch's
    # ``Module.to``); ``super(Flip, self).build()`` runs the project base's ``build`` on it.
    write(tmp_path, {"aug.py": """
        import torch


        class Base(torch.nn.Module):
            def to(self, *args, **kwargs):
                self.moved = True
                return super().to(*args, **kwargs)

            def build(self):
                return self


        class Flip(Base):
            def forward(self, x):
                return x.flip(-1)

            def build(self):
                self.ready = True
                return super(Flip, self).build()


        def main():
            torch.compile(Flip().to("cpu"))
            torch.compile(Flip().build())
    """})
    sites = by_line(resolve(tmp_path), tmp_path)
    assert sites[("aug.py", 23)] == [("module", "aug.Flip.forward")]
    assert sites[("aug.py", 24)] == [("module", "aug.Flip.forward")]


def test_a_wrapper_calling_its_parameters_compile_method_compiles_no_model_with_its_own(tmp_path):
    # ``compile_model(model)`` runs ``model.compile(loss=...)``: a project model whose class has
    # a ``compile`` method of its own (a Keras-style trainer) runs that, not nn.Module.compile.
    write(tmp_path, {"train.py": """
        import torch


        class Trainer(torch.nn.Module):
            def compile(self, loss=None, optimizer=None):
                self.loss = loss

            def forward(self, x):
                return x + 1


        class Plain(torch.nn.Module):
            def forward(self, x):
                return x * 2


        def compile_model(model):
            model.compile(loss="mse")


        compile_model(Trainer())
        compile_model(Plain())
    """})
    sites = by_line(resolve(tmp_path), tmp_path)
    assert ("train.py", 21) not in sites
    assert sites[("train.py", 22)] == [("module", "train.Plain.forward")]


PATH_TESTS = """
import sys
import torch
from torch import nn


class Big(nn.Module):
    def forward(self, x):
        return x + 1


class Small(nn.Module):
    def forward(self, x):
        return x - 1


def main(args):
    model = Big()
    if args.tiny:
        pass
    elif args.small and args.fast:
        model = Small()
    if args.parallel:
        model = nn.DataParallel(model)
    if args.compile:
        if args.small or args.bf32:
            sys.exit(0)
        model = torch.compile(model)
    return model


def other(args):
    model = Big()
    if args.small:
        model = Small()
    if args.small:
        return model
    return torch.compile(model)


def rebound(args):
    model = Big()
    if args.small:
        model = Small()
    args = args.next
    if args.small:
        return model
    return torch.compile(model)


def attribute(self):
    model = Big()
    if self.small:
        model = Small()
    if self.small:
        return model
    return torch.compile(model)
"""


def test_an_assignment_under_a_test_the_site_rules_out_does_not_reach_it(tmp_path):
    """``if args.small and ...: model = Small()`` and, later, ``if args.small or ...: exit()``
    before ``torch.compile(model)``: the path that assigns ``Small`` never reaches the compile,
    through an assignment between them too (``model = DataParallel(model)``). Not where the
    tested name is rebound between, nor for an attribute of ``self`` (a call may change it)."""
    write(tmp_path, {"main.py": PATH_TESTS})
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("main.py", 27)] == [("module", "main.Big.forward")]
    assert found[("main.py", 37)] == [("module", "main.Big.forward")]
    assert found[("main.py", 47)] == [("module", "main.Big.forward"), ("module", "main.Small.forward")]
    assert found[("main.py", 56)] == [("module", "main.Big.forward"), ("module", "main.Small.forward")]


def test_a_compile_method_given_arguments_torch_compile_does_not_take_is_not_a_site(tmp_path):
    """``model.compile(optimizer=..., loss=...)`` (a Keras model): ``nn.Module.compile``
    passes its arguments on to ``torch.compile``, which takes no positional argument there
    and none of these keywords. A project's own ``compile`` method handed the model is still
    a wrapper; torch's keywords or a spread keep a module's ``compile()`` a site."""
    write(tmp_path, {"main.py": """
        import torch
        from torch import nn


        class Net(nn.Module):
            def forward(self, x):
                return x + 1


        class Helper:
            def compile(self, model, mode=None):
                return torch.compile(model, mode=mode)

            def run(self):
                return self.compile(Net(), mode="max-autotune")


        def keras_like(model, engine):
            model.compile(optimizer="adam", loss="mse")
            model.compile("sgd")
            engine.compile(backend="inductor", compile_kwargs={})


        net = Net()
        net.compile(dynamic=True)
        net.compile(fullgraph=True, **{})
    """})
    sites = {s.site.span.line: s for s in resolve(tmp_path)}
    assert [sites[line].reason for line in (19, 20)] == ["not-torch", "not-torch"]
    assert sites[19].detail == "arguments `nn.Module.compile` does not take"
    # An override beside torch's own options (a DeepSpeed engine's) may still compile.
    assert sites[21].reason != "not-torch"
    assert all(sites[line].resolved for line in (12, 15, 25, 26))


def test_a_factory_choosing_by_a_literal_argument_builds_only_that_class(tmp_path):
    """``load_model(path, "warping")`` over ``if kind == "appearance": ... elif kind ==
    "warping": ...``: the literal the call passes decides the chain (``==``, ``!=``, ``in``,
    ``not``), so the site compiles the one class it builds, not every branch's. A value the
    flow does not know, or a parameter the body rebinds, leaves every branch."""
    write(tmp_path, {"main.py": """
        import torch
        from torch import nn


        class Appearance(nn.Module):
            def forward(self, x):
                return x + 1


        class Warping(nn.Module):
            def forward(self, x):
                return x - 1


        class Decoder(nn.Module):
            def forward(self, x):
                return x * 2


        def load_model(path, kind):
            if kind == "appearance":
                model = Appearance()
            elif kind in ("warping", "warp"):
                model = Warping()
            elif not kind != "decoder":
                model = Decoder()
            else:
                raise ValueError(kind)
            return model


        def load_lower(kind):
            kind = kind.lower()
            if kind == "appearance":
                return Appearance()
            return Warping()


        def main(path, name):
            warping = torch.compile(load_model(path, "warping"))
            decoder = torch.compile(load_model(path, "decoder"))
            any_one = torch.compile(load_model(path, name))
            lowered = torch.compile(load_lower("APPEARANCE"))
            return warping, decoder, any_one, lowered
    """})
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("main.py", 40)] == [("module", "main.Warping.forward")]
    assert found[("main.py", 41)] == [("module", "main.Decoder.forward")]
    assert len(found[("main.py", 42)]) == 3
    # The body rebinds the parameter before its test: the call's literal decides nothing.
    assert len(found[("main.py", 43)]) == 2


def test_a_name_two_loops_bind_holds_in_each_loop_that_loops_item(tmp_path):
    write(tmp_path, {"run.py": '''
        import torch


        class A(torch.nn.Module):
            def forward(self, x):
                return x


        class B(torch.nn.Module):
            def forward(self, x):
                return x


        def build():
            first = torch.nn.ModuleList([A()])
            second = torch.nn.ModuleList([B()])
            for block in first:
                torch.compile(block)
            for block in second:
                torch.compile(block)
            return torch.compile(block)
    '''})
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("run.py", 18)] == [("per-block", "run.A.forward")]
    assert found[("run.py", 20)] == [("per-block", "run.B.forward")]
    # After both loops: the last item of the second (or the first's, when it is empty).
    assert sorted(found[("run.py", 21)]) == [("per-block", "run.A.forward"), ("per-block", "run.B.forward")]


def test_a_constructor_classmethod_of_a_library_base_builds_the_project_class(tmp_path):
    write(tmp_path, {"run.py": '''
        import torch
        from transformers import PreTrainedModel


        class Net(PreTrainedModel):
            def forward(self, x):
                return x


        def build(path):
            return torch.compile(Net.from_pretrained(path).to("cuda").eval())
    '''})
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("run.py", 11)] == [("module", "run.Net.forward")]


# ---- a node package: namespace directories, two block loops, a library base's constructor ----

NODE_MODELS = '''
import torch
from diffusers.models.modeling_utils import ModelMixin


class SingleBlock(torch.nn.Module):
    def forward(self, x):
        return x + 1


class DoubleBlock(torch.nn.Module):
    def forward(self, x):
        return x * 2


class Transformer(ModelMixin):
    def __init__(self):
        super().__init__()
        self.single_blocks = torch.nn.ModuleList([SingleBlock() for _ in range(2)])
        self.double_blocks = torch.nn.ModuleList([DoubleBlock() for _ in range(2)])
'''

NODES = '''
import torch
from .helpers.models.packed import Transformer


def load(path, single, double):
    transformer = Transformer.from_pretrained(path).cpu().to(torch.bfloat16)
    if single:
        for i, block in enumerate(transformer.single_blocks):
            transformer.single_blocks[i] = torch.compile(block)
    if double:
        for i, block in enumerate(transformer.double_blocks):
            transformer.double_blocks[i] = torch.compile(block)
    return transformer
'''


def test_a_node_package_resolves_through_namespace_directories_and_each_loop_compiles_its_own_blocks(tmp_path):
    # ``helpers/`` and ``helpers/models/`` have no ``__init__``: namespace portions of the
    # package, imported relatively; ``from_pretrained`` and ``.cpu().to()`` come from the
    # library base (``ModelMixin``) and return the model; ``block`` in the second loop is that
    # loop's item, not the first's.
    write(tmp_path, {"node/__init__.py": "", "node/nodes.py": NODES, "node/helpers/models/packed.py": NODE_MODELS})
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("node/nodes.py", 9)] == [("per-block", "packed.SingleBlock.forward")]
    assert found[("node/nodes.py", 12)] == [("per-block", "packed.DoubleBlock.forward")]
    result = CliRunner().invoke(main, ["regions", "--no-cache", str(tmp_path)])
    lines = [line for line in result.output.splitlines() if "nodes.py:12:" in line]
    assert len(lines) == 1 and "from transformer.double_blocks" in lines[0], result.output


def test_items_written_into_an_object_the_scope_did_not_build_make_no_container(tmp_path):
    # ``patcher.model.blocks[i] = torch.compile(block)``: ``patcher`` comes from outside,
    # so its blocks are not a dict of the writes (whose keys are no code); and a loop that binds
    # ``block`` says nothing of ``block.forward`` but that it is the item's own.
    write(tmp_path, {"run.py": '''
        import torch


        def compile_blocks(patcher):
            for i, block in enumerate(patcher.model.blocks):
                patcher.model.blocks[i] = torch.compile(block)
            patcher.model["dtype"] = "bf16"


        def compile_forwards(blocks):
            for block in blocks:
                block.forward = torch.compile(block.forward)
    '''})
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("run.py", 6)] == [("unresolved", "parameter")]
    assert found[("run.py", 12)] == [("unresolved", "parameter")]


LAZY_JIT = '''
import os

import torch


def lazy_compile(func):
    compiled = None

    def wrapper(*args, **kwargs):
        nonlocal compiled
        if compiled is None:
            compiled = torch.compile(func)
        return compiled(*args, **kwargs)

    return wrapper


def shadowing(func):
    def inner(func):
        return torch.compile(func)

    return func


fuser = lambda func: func
if os.getenv("USE_COMPILE", "1") == "1":
    fuser = lazy_compile
gelu_fuser = fuser
'''

LAZY_FUSED = '''
import torch

from pkg.jit import fuser, gelu_fuser, shadowing


@fuser
def bias_gelu(bias, y):
    return torch.nn.functional.gelu(bias + y)


@gelu_fuser
def dgelu(g, x):
    return g * x


@shadowing
def not_compiled(x):
    return x
'''


def test_a_closure_compiling_the_parameter_and_its_module_aliases_make_wrappers(tmp_path):
    # ``lazy_compile`` compiles its parameter in the function it returns; ``fuser`` holds it on
    # one side of an ``if`` (an identity lambda on the other), ``gelu_fuser`` holds ``fuser``:
    # each decorated function is a compile site, and the inner ``torch.compile(func)`` is the
    # wrapper's own site. ``shadowing``'s inner function compiles a parameter of its own.
    write(tmp_path, {"pkg/__init__.py": "", "pkg/jit.py": LAZY_JIT, "pkg/ops.py": LAZY_FUSED})
    found = by_line(resolve(tmp_path), tmp_path)
    assert found[("pkg/ops.py", 6)] == [("decorated", "pkg.ops.bias_gelu")]
    assert found[("pkg/ops.py", 11)] == [("decorated", "pkg.ops.dgelu")]
    assert ("pkg/ops.py", 16) not in found
    assert found[("pkg/jit.py", 12)] == [("unresolved", "wrapper")]
