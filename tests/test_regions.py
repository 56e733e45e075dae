"""Every form of compile site resolves to what it compiles (the fixture projects), a site that
cannot be resolved says why from the fixed list, and ``recompile-lint regions`` reports both."""

from __future__ import annotations

import ast
import json
import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from recompile_lint.analysis.index import FactsStore, ProjectIndex
from recompile_lint.analysis.library import ENTRIES, entry_for
from recompile_lint.analysis.loader import find_sites
from recompile_lint.analysis.regions import RESOLUTION_FORMS, UNRESOLVED_REASONS, RegionFinder, SiteResolution
from recompile_lint.analysis.valueflow import Value
from recompile_lint.frontends.cli import main

REPO = Path(__file__).resolve().parent.parent
PROJECTS = REPO / "fixtures" / "projects"


def resolve(directory: Path) -> list[SiteResolution]:
    files = [str(p) for p in sorted(directory.rglob("*.py"))]
    return find_sites(ProjectIndex(files, FactsStore()))


def summary(sites: list[SiteResolution], root: Path) -> dict[tuple[str, int], list[tuple[str, str, str, str]]]:
    """(file, line) -> [(form, entry or library entry, class, container)] for every site."""
    out = {}
    for site in sites:
        key = (os.path.relpath(site.site_path, root), site.site.span.line)
        items = [(r.form, r.name, r.model_class, r.container) for r in site.regions]
        items += [(r.form, r.entry.name, r.model_class, r.container) for r in site.library]
        out[key] = items if site.resolved else [("unresolved", site.reason, "", "")]
    return out


def test_rebinding_forms():
    root = PROJECTS / "rebinding"
    assert summary(resolve(root), root) == {
        ("train.py", 20): [("module", "models.GPT.forward", "models.GPT", "")],
        ("train.py", 23): [("module", "models.Encoder.forward", "models.Encoder", "")],
        ("train.py", 26): [("module", "models.Decoder.forward", "models.Decoder", "")],
    }


def test_factory_classmethod_registry_and_instantiate():
    root = PROJECTS / "factories"
    found = summary(resolve(root), root)
    assert found == {
        ("train.py", 14): [("module", "zoo.models.Transformer.forward", "zoo.models.Transformer", "")],
        ("train.py", 16): [("module", "zoo.models.MoE.forward", "zoo.models.MoE", "")],
        ("train.py", 17): [("module", "zoo.models.Llama.forward", "zoo.models.Llama", "")],
        ("train.py", 18): [("module", "zoo.models.T5.forward", "zoo.models.T5", "")],
    }
    # Mamba is registered too, under a key nobody looks up.
    assert not any("Mamba" in item[1] for items in found.values() for item in items)


def test_methods_in_place_swapped_self_compiled_and_called_at_once():
    root = PROJECTS / "methods"
    assert summary(resolve(root), root) == {
        ("heads.py", 40): [("method", "heads.Scorer._forward", "", "")],
        ("serve.py", 25): [("module", "heads.Tagger.forward", "heads.Tagger", "")],
        ("serve.py", 27): [("method", "heads.Ranker.forward", "", "")],
        ("serve.py", 31): [("function", "serve.temperature", "", "")],
    }


def test_per_block_and_by_class_name():
    root = PROJECTS / "blocks"
    assert summary(resolve(root), root) == {
        ("compile_utils.py", 10): [("per-block", "model.Block.forward", "model.Block", "model.layers")],
        ("compile_utils.py", 17): [("by-class-name", "model.MLPBlock.forward", "model.MLPBlock", "model")],
        ("compile_utils.py", 23): [("per-block", "model.DecoderBlock.forward", "model.DecoderBlock", "model.decoder_blocks")],
    }


def test_wrappers_and_decorator_factories():
    root = PROJECTS / "wrappers"
    sites = resolve(root)
    assert summary(sites, root) == {
        ("compiling.py", 10): [("function", "train.train_step", "", "")],
        ("compiling.py", 15): [("function", "losses.smoothed_nll", "", "")],
        # The decorator factory's applications are sites of their own.
        ("losses.py", 11): [("decorated", "losses.smoothed_nll", "", "")],
        ("train.py", 22): [("function", "train.train_step", "", "")],
    }
    # The wrappers' own sites are not counted twice by the lint: their callers (and the
    # factory's decorators) are sites themselves.
    assert all(s.wrapper_body for s in sites if s.site_path.endswith("compiling.py"))
    index = ProjectIndex([str(p) for p in root.rglob("*.py")], FactsStore())
    find_sites(index)
    finder = RegionFinder(index)
    assert finder.regions(index.facts(str(root / "compiling.py"))) == []
    assert [r.name for r in finder.regions(index.facts(str(root / "losses.py")))] == ["losses.smoothed_nll"]


def test_sites_in_tests_and_benchmarks():
    root = PROJECTS / "testsuite"
    assert summary(resolve(root), root) == {
        ("benchmarks/bench_vision.py", 11): [("module", "vision.FrameClassifier.forward", "vision.FrameClassifier", "")],
        ("tests/test_vision.py", 10): [("module", "vision.FrameEncoder.forward", "vision.FrameEncoder", "")],
    }


def test_torch_library_entries():
    root = PROJECTS / "library"
    assert summary(resolve(root), root) == {
        ("attention.py", 11): [("library", "flex-attention", "", "")],
        ("attention.py", 12): [("library", "sdpa", "", "")],
        ("attention.py", 13): [("library", "nn-module", "torch.nn.LayerNorm", "")],
        ("trainer.py", 21): [("library", "optimizer-step", "torch.optim.AdamW", "")],
    }


UNRESOLVED = {
    "pyproject.toml": "",
    "cases.py": """
        import pytest
        import torch
        from transformers import AutoModel


        class Config:
            pass


        @torch._dynamo.disable
        def skipped(x):
            return x


        def public_api(model):
            return torch.compile(model)


        def run(name, module):
            pretrained = torch.compile(AutoModel.from_pretrained("gpt2"))
            plain = torch.compile(Config())
            off = torch.compile(skipped)
            picked = torch.compile(getattr(module, name))
            mark = pytest.mark.compile(run)
            return pretrained, plain, off, picked, mark
    """,
}


@pytest.fixture(scope="module")
def unresolved(tmp_path_factory) -> dict[int, SiteResolution]:
    root = tmp_path_factory.mktemp("unresolved")
    for name, text in UNRESOLVED.items():
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"))
    return {s.site.span.line: s for s in resolve(root)}


@pytest.mark.parametrize(
    "line, reason",
    [(16, "parameter"), (20, "external"), (21, "no-code"), (22, "disabled"), (23, "dynamic"), (24, "not-torch")],
)
def test_unresolved_sites_say_why(unresolved, line, reason):
    site = unresolved[line]
    assert not site.resolved
    assert site.reason == reason
    assert reason in UNRESOLVED_REASONS


def test_forms_and_reasons_are_documented():
    page = (REPO / "docs" / "regions.md").read_text(encoding="utf-8")
    for name in list(RESOLUTION_FORMS) + list(UNRESOLVED_REASONS):
        assert f"`{name}`" in page, name


# ---- library entries -------------------------------------------------------------------------


def test_library_entries_are_measured_cases():
    """Every modelled guard names the case of bench/library_guards.py that measured it."""
    tree = ast.parse((REPO / "bench" / "library_guards.py").read_text(encoding="utf-8"))
    cases = next(
        {key.value for key in node.value.keys}
        for node in tree.body
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CASES" for t in node.targets)
    )
    for entry in ENTRIES:
        assert entry.guards, entry.name
        for guard in entry.guards:
            assert guard.case in cases, (entry.name, guard.case)
            assert guard.bounded in ("unbounded", "bounded", "none")


def test_library_entry_for_torch_values():
    adamw = Value("torch-instance", ref="torch.optim.AdamW")
    step = Value("bound-method", ref="torch.optim.AdamW.step", elements=(Value("torch-callable", ref="torch.optim.AdamW.step"), adamw))
    assert entry_for(step).name == "optimizer-step"
    assert entry_for(Value("torch-callable", ref="torch.nn.attention.flex_attention.flex_attention")).name == "flex-attention"
    assert entry_for(Value("torch-instance", ref="torch.nn.Linear")).name == "nn-module"
    assert entry_for(Value("torch-callable", ref="torch.sin")).name == "torch-function"
    # A scheduler's step is not an optimizer step; a project value is no library entry.
    scheduler = Value("torch-instance", ref="torch.optim.lr_scheduler.StepLR")
    assert entry_for(Value("bound-method", ref="torch.optim.lr_scheduler.StepLR.step", elements=(Value("torch-callable"), scheduler))) is None
    assert entry_for(Value("instance", ref="pkg.Net", path="pkg.py")) is None


# ---- the command -----------------------------------------------------------------------------


def run(args: list[str], cwd: Path):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, ["regions", "--no-cache", *args], catch_exceptions=False)
    finally:
        os.chdir(old)


def test_command_text(tmp_path):
    result = run(["fixtures/projects/blocks"], REPO)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "fixtures/projects/blocks/compile_utils.py:10:9: layer.compile() -> per-block model.Block.forward [model.Block] from model.layers (1 function, depth 0)" in lines
    assert lines[-1] == "3 compile sites: 3 resolved (3 to project code, 0 to torch library entries)."


def test_command_verbose_lists_reached_functions_and_library_guards():
    result = run(["-v", "fixtures/projects/library/trainer.py", "fixtures/projects/methods/serve.py"], REPO)
    assert result.exit_code == 0, result.output
    assert "    guards len(param_groups): LENGTH_CHECK `len(self.param_groups)`" in result.output
    assert "      serve.temperature  fixtures/projects/methods/serve.py:14  depth 0" in result.output


def test_command_json():
    result = run(["--format", "json", "fixtures/projects/factories", "fixtures/projects/library/attention.py"], REPO)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["version"] == 1
    assert report["summary"] == {"sites": 7, "resolved": 7, "project": 4, "library": 3, "unresolved": {}, "not_torch": 0}
    moe = next(s for s in report["sites"] if "MoE" in json.dumps(s["regions"]))
    assert moe["path"] == "fixtures/projects/factories/train.py" and moe["line"] == 16 and moe["site"] == "call"
    (region,) = moe["regions"]
    assert region["entry"] == "zoo.models.MoE.forward" and region["class"] == "zoo.models.MoE" and region["form"] == "module"
    assert region["reached"][0] == {"function": "zoo.models.MoE.forward", "path": "fixtures/projects/factories/zoo/models.py", "line": 30, "depth": 0}
    sdpa = next(s for s in report["sites"] if s["library"] and s["library"][0]["entry"] == "sdpa")
    assert sdpa["library"][0]["compiled"] == "torch.nn.functional.scaled_dot_product_attention"
    assert {g["subject"] for g in sdpa["library"][0]["guards"]} >= {"dropout_p", "scale", "is_causal"}


def test_command_unresolved_and_not_torch(tmp_path):
    for name, text in UNRESOLVED.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip("\n"))
    result = run(["--format", "json", "."], tmp_path)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["summary"]["unresolved"] == {
        "disabled": 1,
        "dynamic": 1,
        "external": 1,
        "no-code": 1,
        "parameter": 1,
    }
    mark = next(s for s in report["sites"] if s["reason"] == "not-torch")
    assert mark["compile_site"] is False and report["summary"]["not_torch"] == 1
    text = run(["."], tmp_path).output
    assert "cases.py:24:12: pytest.mark.compile(run) -> not a compile site (pytest.mark)" in text
    assert "cases.py:20:18: torch.compile(AutoModel.from_pretrained(\"gpt2\")) -> unresolved (external: transformers.AutoModel.from_pretrained())" in text


def test_command_bad_input(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "ok.py").write_text("import torch\n\n\n@torch.compile\ndef f(x):\n    return x\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    result = run(["."], tmp_path)
    # The good file's site is still listed; the broken file is one error line, exit 2.
    assert result.exit_code == 2
    assert "ok.py:4:2: @torch.compile -> decorated ok.f (1 function, depth 0)" in result.output
    assert "recompile-lint: error: ./broken.py:1:7: syntax error" in result.output
    assert "Traceback" not in result.output
    missing = run(["nowhere.py"], tmp_path)
    assert missing.exit_code == 2 and "nowhere.py" in missing.output and "compile site" not in missing.output


def test_command_output_file(tmp_path):
    target = tmp_path / "regions.json"
    result = run(["--format", "json", "-o", str(target), "fixtures/projects/rebinding"], REPO)
    assert result.exit_code == 0 and result.output == ""
    assert json.loads(target.read_text())["summary"]["resolved"] == 3


CONSTANT_BRANCHES = '''
import torch
from torch import nn


class Head(nn.Module):
    def loss_fn(self, x):
        return x.sum().item()

    def regularise(self, x):
        return x.norm().item()


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Head()

    def forward(self, x, rollout: bool, targets=None):
        if targets is not None:
            self.head.regularise(x)
        if rollout:
            return x * 2
        else:
            return self.head.loss_fn(x)


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = Model()

    def predict(self, x):
        return self.model(x, rollout=True)

    def both(self, x):
        return self.model(x, True) + self.model(x, rollout=False, targets=x)


policy = Policy()
fast = torch.compile(policy.predict)
slow = torch.compile(policy.both)
'''


def test_a_branch_ruled_out_by_constant_arguments_is_not_reached(tmp_path):
    # Dynamo specializes on the constants every call passes (``rollout=True``, ``targets``
    # left at its default ``None``) and traces only the branch they take; a second call
    # with other values makes both branches live.
    (tmp_path / "policy.py").write_text(CONSTANT_BRANCHES)
    sites = {s.site.span.line: s for s in resolve(tmp_path)}
    reached = {line: sorted(ref.qualname for ref, _, _ in site.regions[0].reached) for line, site in sites.items()}
    assert reached == {
        41: ["Model.forward", "Policy.predict"],
        42: ["Head.loss_fn", "Head.regularise", "Model.forward", "Policy.both"],
    }


def test_a_guard_read_only_in_a_branch_constant_arguments_rule_out_is_no_finding(tmp_path):
    # ``helper(x, False)``: Dynamo traces only ``return x + 1`` (measured on torch 2.13: no
    # recompile while ``STEP`` changes); once a call passes ``True``, the read is traced.
    from recompile_lint.config import Config
    from recompile_lint.engine import lint_paths

    program = textwrap.dedent('''
        import torch

        STEP = 0


        def helper(x, training, scale=None):
            if training:
                return x * STEP
            if scale is not None:
                return x * STEP
            return x + 1


        @torch.compile
        def f(x):
            return helper(x, CALLED)


        class Loop:
            def fit(self):
                global STEP
                for i in range(12):
                    STEP = i
                    f(torch.randn(2))
    ''')
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    found = {}
    for called in ("False", "True", "rebound"):
        text = program.replace("CALLED", "True" if called == "True" else "False")
        if called == "rebound":
            # The parameter is rebound before the test: what it holds there is not the literal.
            text = text.replace("    if training:\n", "    training = training or x.numel() > 1\n    if training:\n")
        (tmp_path / "prog.py").write_text(text)
        found[called] = [(f.code, f.line) for f in lint_paths([str(tmp_path)], Config(cache=False)).findings]
    assert found == {"False": [], "True": [("RCL101", 9)], "rebound": [("RCL101", 10)]}


def test_a_function_rule_leaves_out_a_branch_every_region_rules_out(tmp_path):
    # ``self.model(x, rollout=True)``: the ``.item()`` after the ``if rollout:`` return is
    # never traced. Compiling the model itself too (``rollout`` a guarded argument of the
    # compiled frame) makes it live in that region, and the warning is back.
    from recompile_lint.config import Config
    from recompile_lint.engine import lint_paths

    program = textwrap.dedent('''
        import torch
        from torch import nn


        class Model(nn.Module):
            def forward(self, x, rollout: bool):
                if rollout:
                    return x * 2
                else:
                    return x * x.sum().item()


        class Policy(nn.Module):
            def __init__(self):
                super().__init__()
                self.model = Model()

            def predict(self, x):
                return self.model(x, rollout=True)


        policy = Policy()
        fast = torch.compile(policy.predict)
    ''')
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    found = {}
    for extra in ("", "whole = torch.compile(policy.model)\n"):
        (tmp_path / "policy.py").write_text(program + extra)
        found[bool(extra)] = [(f.code, f.line) for f in lint_paths([str(tmp_path)], Config(cache=False)).findings]
    # A parameter the function rebinds before the test holds something else there.
    (tmp_path / "policy.py").write_text(program.replace("        if rollout:\n", "        rollout = rollout and x.numel() > 4\n        if rollout:\n"))
    found["rebound"] = [(f.code, f.line) for f in lint_paths([str(tmp_path)], Config(cache=False)).findings]
    assert found == {False: [], True: [("RCL404", 11)], "rebound": [("RCL404", 12)]}


def test_a_module_called_through_a_local_binds_its_arguments_after_self(tmp_path):
    # ``block(x, False)`` on a local instance runs ``Block.forward(self, x, rollout)``: the
    # literal is ``rollout`` (the ``.item()`` branch is taken), not ``x`` with ``rollout``
    # left at its default ``True``.
    from recompile_lint.config import Config
    from recompile_lint.engine import lint_paths

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "block.py").write_text(textwrap.dedent('''
        import torch
        from torch import nn


        class Block(nn.Module):
            def forward(self, x, rollout=True):
                if rollout:
                    return x * 2
                else:
                    return x * x.sum().item()


        def predict(x):
            block = Block()
            return block(x, False)


        fast = torch.compile(predict)
    '''))
    assert [(f.code, f.line) for f in lint_paths([str(tmp_path)], Config(cache=False)).findings] == [("RCL404", 11)]


def _codes_by_case(tmp_path, program: str, placeholder: str, cases: dict[str, str]) -> dict[str, list[str]]:
    """The finding codes of ``program`` with ``placeholder`` replaced by each case's text."""
    from recompile_lint.config import Config
    from recompile_lint.engine import lint_paths

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    found = {}
    for case, text in cases.items():
        (tmp_path / "prog.py").write_text(program.replace(placeholder, text))
        found[case] = sorted(f.code for f in lint_paths([str(tmp_path)], Config(cache=False)).findings)
    return found


def test_a_parameter_set_after_its_own_test_still_decides_it(tmp_path):
    # ``if dim_size is None: dim_size = int(index.max()) + 1``: the store comes after the test,
    # so what every call passes decides it. A size (``x.size(0)``) is never None: the ``int()``
    # of a tensor there is never traced (no graph break). A caller leaving it at its default
    # makes the branch live again.
    program = textwrap.dedent('''
        import torch


        def scatter(src: torch.Tensor, index: torch.Tensor, dim_size=None):
            if dim_size is None:
                dim_size = int(index.max()) + 1
            return torch.zeros(dim_size).index_add(0, index, src)


        @torch.compile
        def gather(x, index):
            return scatter(x, index, CALLED)
    ''')
    found = _codes_by_case(tmp_path, program, ", CALLED", {"size": ", dim_size=x.size(0)", "shape": ", x.shape[0]", "default": ""})
    assert found == {"size": [], "shape": [], "default": ["RCL404"]}


def test_a_store_before_a_test_or_in_a_loop_around_it_undecides_it():
    import ast

    from recompile_lint.analysis.index import Stores

    fn = ast.parse(textwrap.dedent('''
        def f(a, b, c, items):
            if a is None:
                a = 1
            b = b or 2
            if b is None:
                pass
            for item in items:
                if c is None:
                    pass
                c = item
    ''')).body[0]
    stores = Stores.of(fn)
    tests = {n.test.left.id: n for n in ast.walk(fn) if isinstance(n, ast.If)}
    assert stores.held_at("a", tests["a"])  # stored after its own test
    assert not stores.held_at("b", tests["b"])  # stored before the test
    assert not stores.held_at("c", tests["c"])  # stored later in the loop: the next iteration sees it
    assert stores.held_at("items", tests["c"]) and "items" not in stores


def test_a_constant_passed_on_and_a_branch_that_returns_end_the_traced_code(tmp_path):
    # ``triangulate(x, fast=True)`` hands ``fast`` on to ``_polygons(x, fast=fast)``, whose
    # ``if fast: return`` ends what Dynamo traces: the ``.item()`` and the global read after it
    # never run in the graph (no break, no guard on ``STEP``). ``fast=False`` traces them.
    program = textwrap.dedent('''
        import torch

        STEP = 0


        def _polygons(x: torch.Tensor, fast: bool):
            y = x * 2
            if fast:
                return y
            scale = x.abs().max().item()
            return y * scale * STEP


        def triangulate(x: torch.Tensor, fast: bool = False):
            return _polygons(x, fast=fast)


        @torch.compile
        def fan(x):
            return triangulate(x, fast=FAST)


        def main():
            global STEP
            for i in range(12):
                STEP = i
                fan(torch.randn(4))


        if __name__ == "__main__":
            main()
    ''')
    found = _codes_by_case(tmp_path, program, "FAST", {"True": "True", "False": "False"})
    assert found == {"True": [], "False": ["RCL101", "RCL404"]}


def test_the_guard_model_walks_only_the_side_a_size_argument_decides(tmp_path):
    # ``norm(x, n=x.size(0))``: ``n is None`` is False, so the global read under it is never
    # traced (no guard on ``EPS``; torch 2.13: one graph while ``EPS`` changes). Left at its
    # default, the read is traced and each value recompiles.
    program = textwrap.dedent('''
        import torch

        EPS = 0


        def norm(x: torch.Tensor, n=None):
            if n is None:
                n = x.numel() + EPS
            return x / n


        @torch.compile
        def f(x):
            return norm(xCALLED)


        def main():
            global EPS
            for i in range(12):
                EPS = i
                f(torch.randn(4))


        if __name__ == "__main__":
            main()
    ''')
    found = _codes_by_case(tmp_path, program, "CALLED", {"size": ", n=x.size(0)", "default": ""})
    assert found == {"size": [], "default": ["RCL101"]}
