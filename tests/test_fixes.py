"""The codemods of ``recompile_lint.fixes``: what each rewrites, that a second run changes
nothing, that the linter no longer reports a fixed finding, and that a file the fixes must not
touch (broken, a link) is left as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import ALL_RULES, lint_snippet
from recompile_lint.engine import lint_paths
from recompile_lint.fixes import FIXERS, apply_edits, attempt, fix_safety, fixers_for_code, fixes_for
from recompile_lint.fixes.apply import plan, unified_diff, within
from recompile_lint.fixes.files import FileFixError, read_source, write_source
from recompile_lint.fixes.noqa import add_noqa, with_noqa
from recompile_lint.rules import all_rules

GLOBAL_INT = """\
\"\"\"A global step read by compiled code.\"\"\"

import torch

step = 0


@torch.compile
def poly(x):
    return x * step


def train():
    global step
    for _ in range(10):
        poly(torch.ones(3))
        step += 1
"""

GLOBAL_INT_FIXED = """\
\"\"\"A global step read by compiled code.\"\"\"

import torch

torch.compiler.config.dynamic_sources = "G['step']"

step = 0


@torch.compile
def poly(x):
    return x * step


def train():
    global step
    for _ in range(10):
        poly(torch.ones(3))
        step += 1
"""

TWO_GLOBALS = """\
import torch

torch.compiler.config.dynamic_sources = "G['other']"
step = 0
scale = 1


@torch.compile
def poly(x):
    return x * step + scale


def train():
    global step, scale
    for _ in range(10):
        poly(torch.ones(3))
        step += 1
        scale += 2
"""

RANGE_BOUND = """\
import torch

n_layers = 1


@torch.compile
def deep(x):
    for _ in range(n_layers):
        x = x + 1
    return x


def train():
    global n_layers
    for _ in range(10):
        deep(torch.ones(3))
        n_layers += 1
"""

MODULE_ATTRIBUTE = """\
import torch
from torch import nn


class Warmup(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 0

    def forward(self, x):
        self.step += 1
        return x * min(self.step, 10)


def train():
    model = torch.compile(Warmup())
    for _ in range(20):
        model(torch.ones(3))
"""

ITEM = """\
import torch


@torch.compile
def clip_(grads):
    norm = grads.norm().item()
    return grads * min(1.0, 1.0 / (norm + 1e-6))


def train():
    for _ in range(4):
        clip_(torch.randn(8))
"""

LOADER = """\
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)


def train():
    data = TensorDataset(torch.randn(97, 8))
    loader = DataLoader(
        data,
        batch_size=32,
        shuffle=True,
    )
    model = torch.compile(Net())
    for (x,) in loader:
        model(x)
"""

BACKEND = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)


def evaluate(model, x):
    compiled = torch.compile(model, backend=lambda gm, example_inputs: gm.forward)
    return compiled(x)


def main():
    model = Net()
    for _ in range(10):
        evaluate(model, torch.randn(4, 8))
"""

BACKEND_CLOSURE = BACKEND.replace("def evaluate(model, x):\n", "def evaluate(model, x, tag=0):\n").replace(
    "lambda gm, example_inputs: gm.forward", "lambda gm, example_inputs: gm.forward if tag else gm"
)


SET_OUTSIDE = """\
import torch
from torch import nn


class Denoiser(nn.Module):
    def __init__(self, num_steps=10):
        super().__init__()
        self.net = nn.Linear(8, 8)
        self.num_steps = num_steps
        self.timestep = 0

    def forward(self, x):
        return self.net(x) * (1 - self.timestep / self.num_steps)


def main(steps=10):
    model = torch.compile(Denoiser(steps))
    x = torch.randn(2, 8)
    for t in reversed(range(steps)):
        model.timestep = t
        x = model(x)
"""

SET_OUTSIDE_BUFFER = SET_OUTSIDE.replace(
    "        self.timestep = 0\n", '        self.register_buffer("timestep", torch.tensor(0), persistent=False)\n'
).replace("        model.timestep = t\n", "        model.timestep.fill_(t)\n")

# (source, code, the codemod, whether it is safe): one case per codemod.
CASES = [
    (GLOBAL_INT, "RCL101", "dynamic-sources", True),
    (SET_OUTSIDE, "RCL104", "module-buffer", False),
    (ITEM, "RCL404", "capture-scalar-outputs", True),
    (LOADER, "RCL205", "drop-last", False),
    (LOADER, "RCL205", "mark-unbacked", False),
    (BACKEND, "RCL403", "hoist-backend", True),
]


def findings_of(tmp_path: Path, source: str, code: str, name: str = "m.py"):
    result = lint_snippet(tmp_path, source, name)
    found = [f for f in result.findings if f.code == code]
    assert found, f"no {code} in {[f.code for f in result.findings]}"
    return found, (tmp_path / name).read_text(encoding="utf-8")


def fixed_text(tmp_path: Path, source: str, code: str, unsafe: bool = False) -> tuple[str, list]:
    """The file after one round of fixes (safe, or unsafe too), and the fixes applied."""
    found, text = findings_of(tmp_path, source, code)
    planned = plan(found, unsafe=unsafe, allowed=within([str(tmp_path)]))
    path = os.path.normpath(found[0].path)
    return planned.texts.get(path, text), planned.applied


def test_a_global_int_is_listed_in_dynamic_sources_after_the_imports(tmp_path):
    text, applied = fixed_text(tmp_path, GLOBAL_INT, "RCL101")
    assert text == GLOBAL_INT_FIXED
    assert [(fix.fixer, fix.safe) for _, fix in applied] == [("dynamic-sources", True)]


def test_a_fixed_file_is_not_reported_and_a_second_run_changes_nothing(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    result = lint_snippet(tmp_path / "a", GLOBAL_INT_FIXED, "m.py")
    assert [f for f in result.findings if f.code == "RCL101"] == []
    # The finding of the original, offered the fixed text, has no fix left to make.
    original, _ = findings_of(tmp_path / "b", GLOBAL_INT, "RCL101")
    assert fixes_for(original[0], GLOBAL_INT_FIXED) == []


def test_two_values_of_one_file_extend_the_setting_the_file_has(tmp_path):
    text, applied = fixed_text(tmp_path, TWO_GLOBALS, "RCL101")
    assert len(applied) == 2
    assert 'torch.compiler.config.dynamic_sources = "G[\'other\'],G[\'scale\'],G[\'step\']"' in text or (
        'torch.compiler.config.dynamic_sources = "G[\'other\'],G[\'step\'],G[\'scale\']"' in text
    )
    assert text.count("dynamic_sources") == 1
    (tmp_path / "m.py").write_text(text, encoding="utf-8")
    assert [f for f in lint_paths([str(tmp_path / "m.py")], ALL_RULES).findings if f.code == "RCL101"] == []


def test_a_range_bound_gets_no_dynamic_source(tmp_path):
    """Dynamo specialises a loop's trip count whatever dynamic_sources says."""
    found, text = findings_of(tmp_path, RANGE_BOUND, "RCL101")
    assert fixes_for(found[0], text) == []


def test_an_int_through_math_exp_gets_no_dynamic_source_and_through_math_cos_does(tmp_path):
    """``math.exp(-n / tau)`` specialises the int again (8 graphs under dynamic_sources);
    ``math.cos`` was measured to stay one graph."""
    source = "import math\n" + MODULE_ATTRIBUTE.replace("x * min(self.step, 10)", "x * math.exp(-self.step / 10)")
    found, text = findings_of(tmp_path, source, "RCL104")
    assert fixes_for(found[0], text) == []
    (tmp_path / "cos").mkdir()
    found, text = findings_of(tmp_path / "cos", source.replace("math.exp", "math.cos"), "RCL104")
    assert [fix.fixer for fix in fixes_for(found[0], text)][:1] == ["dynamic-sources"]


def test_a_module_int_attribute_is_listed_by_its_local_source(tmp_path):
    text, applied = fixed_text(tmp_path, MODULE_ATTRIBUTE, "RCL104")
    assert 'torch.compiler.config.dynamic_sources = "L[\'self\'].step"\n' in text
    assert text.index("dynamic_sources") > text.index("from torch import nn")
    assert applied[0][1].safe


def test_item_gets_capture_scalar_outputs(tmp_path):
    text, applied = fixed_text(tmp_path, ITEM, "RCL404")
    assert text == ITEM.replace("import torch\n", "import torch\n\ntorch._dynamo.config.capture_scalar_outputs = True\n", 1)
    (tmp_path / "m.py").write_text(text, encoding="utf-8")
    assert [f for f in lint_paths([str(tmp_path / "m.py")], ALL_RULES).findings if f.code == "RCL404"] == []
    (tmp_path / "again").mkdir()
    found, _ = findings_of(tmp_path / "again", ITEM, "RCL404")
    assert fixes_for(found[0], text) == []


def test_drop_last_is_unsafe_and_applied_only_when_asked(tmp_path):
    text, applied = fixed_text(tmp_path, LOADER, "RCL205")
    assert applied == [] and text == LOADER
    text, applied = fixed_text(tmp_path, LOADER, "RCL205", unsafe=True)
    assert [(fix.fixer, fix.safe) for _, fix in applied] == [("drop-last", False)]
    assert "        shuffle=True,\n        drop_last=True,\n    )\n" in text
    (tmp_path / "m.py").write_text(text, encoding="utf-8")
    assert [f for f in lint_paths([str(tmp_path / "m.py")], ALL_RULES).findings if f.code == "RCL205"] == []


def test_mark_unbacked_is_the_alternative_that_keeps_every_batch(tmp_path):
    found, text = findings_of(tmp_path, LOADER, "RCL205")
    fixes = fixes_for(found[0], text)
    assert [(fix.fixer, fix.safe) for fix in fixes] == [("drop-last", False), ("mark-unbacked", False)]
    fixed = apply_edits(text, fixes[1].edits)
    assert "    for (x,) in loader:\n        torch._dynamo.decorators.mark_unbacked(x, 0)\n        model(x)\n" in fixed
    (tmp_path / "m.py").write_text(fixed, encoding="utf-8")
    assert [f for f in lint_paths([str(tmp_path / "m.py")], ALL_RULES).findings if f.code == "RCL205"] == []


def test_mark_unbacked_needs_the_batch_as_a_name(tmp_path):
    found, text = findings_of(tmp_path, LOADER.replace("        model(x)\n", "        model(x * 2)\n"), "RCL205")
    assert fix_by(found[0], text, "mark-unbacked") is None


def test_drop_last_false_becomes_true_and_an_unknown_value_is_left(tmp_path):
    text, _ = fixed_text(tmp_path, LOADER.replace("shuffle=True,", "shuffle=True, drop_last=False,"), "RCL205", unsafe=True)
    assert "drop_last=True," in text and "drop_last=False" not in text


def test_a_backend_lambda_becomes_one_module_level_function(tmp_path):
    text, applied = fixed_text(tmp_path, BACKEND, "RCL403")
    assert "def _evaluate_backend(gm, example_inputs):\n    return gm.forward\n\n\ndef evaluate(model, x):" in text
    assert "backend=_evaluate_backend)" in text
    assert applied[0][1].safe
    (tmp_path / "m.py").write_text(text, encoding="utf-8")
    assert [f for f in lint_paths([str(tmp_path / "m.py")], ALL_RULES).findings if f.code == "RCL403"] == []


def test_a_backend_lambda_reading_the_function_s_names_is_not_moved(tmp_path):
    found, text = findings_of(tmp_path, BACKEND_CLOSURE, "RCL403")
    assert fixes_for(found[0], text) == []


def fix_by(finding, text: str, fixer: str):
    return next((fix for fix in fixes_for(finding, text) if fix.fixer == fixer), None)


def test_a_module_attribute_becomes_a_buffer_updated_in_place_as_an_unsafe_fix(tmp_path):
    found, text = findings_of(tmp_path, SET_OUTSIDE, "RCL104")
    fixes = fixes_for(found[0], text)
    assert [(fix.fixer, fix.safe) for fix in fixes] == [("dynamic-sources", True), ("module-buffer", False)]
    assert apply_edits(text, fixes[1].edits) == SET_OUTSIDE_BUFFER
    (tmp_path / "m.py").write_text(SET_OUTSIDE_BUFFER, encoding="utf-8")
    assert [f for f in lint_paths([str(tmp_path / "m.py")], ALL_RULES).findings if f.code == "RCL104"] == []


@pytest.mark.parametrize(
    "read",
    [
        "        return self.net(x) * min(1.0, self.timestep / self.num_steps)\n",  # a builtin needs a number
        "        return self.net(x) if self.timestep > 2 else x\n",  # compared
        "        return self.net(x)[self.timestep]\n",  # an index
    ],
)
def test_no_buffer_where_the_class_reads_the_attribute_as_a_python_number(tmp_path, read):
    source = SET_OUTSIDE.replace("        return self.net(x) * (1 - self.timestep / self.num_steps)\n", read)
    found, text = findings_of(tmp_path, source, "RCL104")
    assert fix_by(found[0], text, "module-buffer") is None


@pytest.mark.parametrize(("source", "code", "fixer", "safe"), CASES, ids=[case[2] for case in CASES])
def test_each_codemod_fixes_once_and_a_second_run_changes_nothing(tmp_path, source, code, fixer, safe):
    found, text = findings_of(tmp_path, source, code)
    fix = fix_by(found[0], text, fixer)
    assert fix is not None and fix.safe is safe and fix.code == code
    fixed = apply_edits(text, fix.edits)
    assert fixed != text
    compile(fixed, "m.py", "exec")
    assert fix_by(found[0], fixed, fixer) is None


@pytest.mark.parametrize(("source", "code", "fixer", "safe"), CASES, ids=[case[2] for case in CASES])
def test_each_codemod_leaves_a_file_with_a_syntax_error_untouched(tmp_path, source, code, fixer, safe):
    found, text = findings_of(tmp_path, source, code)
    broken = text + "\ndef broken(:\n"
    fixes, problems = attempt(found[0], broken)
    assert fixes == []
    assert any(problem.startswith(f"{fixer}: does not parse") for problem in problems)
    (tmp_path / "m.py").write_text(broken, encoding="utf-8")
    planned = plan(found, unsafe=True, allowed=within([str(tmp_path)]))
    assert planned.changed() == {}
    assert (tmp_path / "m.py").read_text(encoding="utf-8") == broken


@pytest.mark.parametrize(("source", "code", "fixer", "safe"), CASES, ids=[case[2] for case in CASES])
def test_each_codemod_follows_no_link(tmp_path, source, code, fixer, safe):
    found, text = findings_of(tmp_path, source, code)
    target = tmp_path / "target.py"
    target.write_text(text, encoding="utf-8")
    (tmp_path / "m.py").unlink()
    (tmp_path / "m.py").symlink_to(target)
    planned = plan(found, unsafe=True, allowed=within([str(tmp_path)]))
    assert planned.applied == [] and planned.changed() == {}
    assert any("symbolic link" in why for _, why in planned.problems)
    assert target.read_text(encoding="utf-8") == text


def test_a_fix_whose_result_does_not_parse_is_dropped_with_a_reason(tmp_path, monkeypatch):
    found, text = findings_of(tmp_path, GLOBAL_INT, "RCL101")
    from recompile_lint.fixes import settings

    monkeypatch.setattr(settings.DynamicSources, "rewrite", lambda self, finding, text, read: {finding.path: text + "\ndef (:\n"})
    fixes, problems = attempt(found[0], text)
    assert fixes == []
    assert problems and "does not parse" in problems[0]


def test_a_file_with_a_syntax_error_is_untouched(tmp_path):
    found, _ = findings_of(tmp_path, GLOBAL_INT, "RCL101")
    broken = GLOBAL_INT + "\ndef broken(:\n"
    (tmp_path / "m.py").write_text(broken, encoding="utf-8")
    planned = plan(found, unsafe=True, allowed=within([str(tmp_path)]))
    assert planned.changed() == {}
    assert any("does not parse" in why for _, why in planned.problems)
    assert (tmp_path / "m.py").read_text(encoding="utf-8") == broken


def test_a_link_is_neither_read_nor_written(tmp_path):
    found, _ = findings_of(tmp_path, GLOBAL_INT, "RCL101")
    outside = tmp_path / "outside.py"
    outside.write_text(GLOBAL_INT, encoding="utf-8")
    (tmp_path / "m.py").unlink()
    (tmp_path / "m.py").symlink_to(outside)
    planned = plan(found, unsafe=True, allowed=within([str(tmp_path)]))
    assert planned.changed() == {}
    assert any("symbolic link" in why for _, why in planned.problems)
    assert outside.read_text(encoding="utf-8") == GLOBAL_INT
    with pytest.raises(FileFixError, match="symbolic link"):
        read_source(str(tmp_path / "m.py"))


def test_a_file_changed_on_disk_since_it_was_read_is_not_written(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(GLOBAL_INT, encoding="utf-8")
    source = read_source(str(path))
    path.write_text(GLOBAL_INT + "# edited meanwhile\n", encoding="utf-8")
    with pytest.raises(FileFixError, match="changed on disk"):
        write_source(source, GLOBAL_INT_FIXED)
    assert path.read_text(encoding="utf-8").endswith("# edited meanwhile\n")
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]  # no temporary file left


def test_a_write_keeps_the_encoding_line_endings_and_mode(tmp_path):
    path = tmp_path / "m.py"
    path.write_bytes(b"\xef\xbb\xbf" + GLOBAL_INT.replace("\n", "\r\n").encode())
    path.chmod(0o640)
    source = read_source(str(path))
    assert source.text == GLOBAL_INT
    write_source(source, GLOBAL_INT_FIXED)
    assert path.read_bytes() == b"\xef\xbb\xbf" + GLOBAL_INT_FIXED.replace("\n", "\r\n").encode()
    assert path.stat().st_mode & 0o777 == 0o640


def test_mixed_line_endings_are_not_fixed(tmp_path):
    path = tmp_path / "m.py"
    path.write_bytes(b"import torch\r\nstep = 0\n")
    with pytest.raises(FileFixError, match="line endings"):
        read_source(str(path))


def test_the_edits_of_a_fix_turn_the_old_text_into_the_new(tmp_path):
    found, text = findings_of(tmp_path, BACKEND, "RCL403")
    (fix,) = fixes_for(found[0], text)
    assert all(edit.path == found[0].path for edit in fix.edits)
    result = apply_edits(text, fix.edits)
    assert "def _evaluate_backend(gm, example_inputs):" in result and "lambda" not in result


def test_the_diff_names_the_file_and_shows_the_added_line(tmp_path):
    found, _ = findings_of(tmp_path, GLOBAL_INT, "RCL101")
    diff = unified_diff(plan(found, unsafe=False, allowed=within([str(tmp_path)])))
    assert diff.splitlines()[0].startswith("--- a/") and diff.splitlines()[0].endswith("m.py")
    assert "+torch.compiler.config.dynamic_sources = \"G['step']\"" in diff.splitlines()


def test_files_outside_the_linted_paths_are_not_changed(tmp_path):
    found, _ = findings_of(tmp_path, GLOBAL_INT, "RCL101")
    planned = plan(found, unsafe=True, allowed=within([str(tmp_path / "elsewhere")]))
    assert planned.applied == [] and planned.changed() == {}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("    return x * step", "    return x * step  # noqa: RCL101"),
        ("    return x * step  # noqa: E501", "    return x * step  # noqa: E501, RCL101"),
        ("    return x * step  # noqa: E501 - long", "    return x * step  # noqa: E501, RCL101 - long"),
        ("    return x * step  # noqa", "    return x * step  # noqa"),
        ("    return x * step  # noqa: RCL101", "    return x * step  # noqa: RCL101"),
    ],
)
def test_noqa_is_added_or_merged(line, expected):
    assert with_noqa(line, ["RCL101"]) == expected


def test_add_noqa_suppresses_the_findings_and_leaves_a_string_line_alone(tmp_path):
    result = lint_snippet(tmp_path, GLOBAL_INT, "m.py")
    text, count, refused = add_noqa(GLOBAL_INT, [f for f in result.findings if f.code == "RCL101"])
    assert count == 1 and refused == []
    (tmp_path / "m.py").write_text(text, encoding="utf-8")
    assert [f for f in lint_paths([str(tmp_path / "m.py")], ALL_RULES).findings if f.code == "RCL101"] == []
    assert add_noqa(text, [f for f in result.findings if f.code == "RCL101"])[1] == 0  # idempotent
    inside = 'DOC = """\nline two\n"""\n'
    finding = result.findings[0]
    import dataclasses

    _, count, refused = add_noqa(inside, [dataclasses.replace(finding, line=2)])
    assert count == 0 and refused == [2]


def test_every_fixer_belongs_to_a_rule_and_the_safety_is_what_it_says():
    codes = {rule.code for rule in all_rules()}
    for fixer in FIXERS:
        assert fixer.name and fixer.summary and fixer.why and set(fixer.codes) <= codes
    assert fix_safety("RCL101") == "safe"
    assert fix_safety("RCL205") == "unsafe"
    assert fix_safety("RCL104") == "safe or unsafe"
    assert fix_safety("RCL107") == "none" and fixers_for_code("RCL107") == ()


def test_docs_fixes_names_every_fixer_and_every_rule_without_one():
    """docs/fixes.md cannot claim a fix the code does not make, nor miss one it makes."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "fixes.md").read_text(encoding="utf-8")
    for fixer in FIXERS:
        assert f"| `{fixer.name}` | {', '.join(fixer.codes)} | {'safe' if fixer.safe else 'unsafe'} |" in page
    without = page.split("Rules with **no automatic fix**:", 1)[1].split(".", 1)[0]
    listed = {word.strip(", \n") for word in without.split() if word.strip(", \n").startswith("RCL")}
    assert listed == {rule.code for rule in all_rules() if not fixers_for_code(rule.code)}


def test_rule_pages_say_whether_the_fix_is_automatic():
    from recompile_lint.report.pages import rule_page

    assert "**dynamic-sources** (safe, applied by `--fix`)" in rule_page("RCL101")
    assert "**drop-last** (unsafe, applied by `--unsafe-fixes`)" in rule_page("RCL205")
    assert "No automatic fix" in rule_page("RCL402")
    assert "**module-buffer** (unsafe, an alternative for editors" in rule_page("RCL104")


def test_the_setting_goes_after_an_import_of_torch_that_follows_other_code(tmp_path):
    source = GLOBAL_INT.replace('import torch\n', 'import sys\n\nsys.path.insert(0, ".")\nimport torch\n', 1)
    text, applied = fixed_text(tmp_path, source, "RCL101")
    assert applied
    assert text.index("import torch\n") < text.index("torch.compiler.config.dynamic_sources")


def test_drop_last_finds_the_loader_loop_around_an_inner_loop(tmp_path):
    source = LOADER.replace("    for (x,) in loader:\n        model(x)\n", "    for (x,) in loader:\n        for _ in range(2):\n            model(x)\n")
    text, applied = fixed_text(tmp_path, source, "RCL205", unsafe=True)
    assert [fix.fixer for _, fix in applied] == ["drop-last"]
    assert "drop_last=True" in text


@pytest.mark.slow
def test_every_fix_of_the_fixtures_parses_and_takes_its_finding_away(tmp_path):
    """On a copy of the rule fixtures: every fix made is Python, and after ``--unsafe-fixes``
    no fixed finding is reported again and no new finding appears."""
    import shutil

    repo = Path(__file__).resolve().parent.parent / "fixtures"
    for family in ("rcl1xx", "rcl2xx", "rcl3xx", "rcl4xx", "rcl9xx"):
        shutil.copytree(repo / family, tmp_path / family)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'fixtures'\n", encoding="utf-8")
    before = lint_paths([str(tmp_path)], ALL_RULES)
    planned = plan(before.findings, unsafe=True, allowed=within([str(tmp_path)]))
    assert planned.problems == []
    assert len(planned.applied) >= 20
    for path, text in planned.changed().items():
        compile(text, path, "exec")
        Path(path).write_text(text, encoding="utf-8")
    after = lint_paths([str(tmp_path)], ALL_RULES)

    def key(finding):
        return os.path.normpath(os.path.abspath(finding.path)), finding.code, finding.message.split(":")[0]

    fixed = {key(finding) for finding, _ in planned.applied}
    remaining = {key(finding) for finding in after.findings}
    assert fixed & remaining == set()
    assert remaining <= {key(finding) for finding in before.findings}
