"""``recompile-lint --fix``, ``--unsafe-fixes``, ``--diff`` and ``--add-noqa`` end to end on a
small project: what each writes, prints and exits with."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from recompile_lint.frontends.cli import main
from test_fixes import GLOBAL_INT, GLOBAL_INT_FIXED, LOADER


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    (tmp_path / "train.py").write_text(GLOBAL_INT, encoding="utf-8")
    (tmp_path / "loader.py").write_text(LOADER, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def invoke(*args: str):
    result = CliRunner().invoke(main, ["--no-cache", "--output-format", "concise", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def codes(output: str) -> list[str]:
    return sorted(word for line in output.splitlines() for word in line.split() if word.startswith("RCL") and ":" in line[:80])


def test_diff_prints_the_fixes_changes_nothing_and_exits_1(project):
    result = invoke("--diff", ".")
    assert result.exit_code == 1
    assert "--- a/train.py" in result.stdout and "+++ b/train.py" in result.stdout
    assert "+torch.compiler.config.dynamic_sources = \"G['step']\"" in result.stdout
    assert "drop_last" not in result.stdout  # unsafe: not shown without --unsafe-fixes
    assert "1 unsafe fix not shown" in result.stderr
    assert (project / "train.py").read_text(encoding="utf-8") == GLOBAL_INT
    unsafe = invoke("--diff", "--unsafe-fixes", ".")
    assert "+        drop_last=True," in unsafe.stdout
    assert (project / "loader.py").read_text(encoding="utf-8") == LOADER


def test_diff_of_a_project_without_fixes_is_empty_and_exits_0(project):
    (project / "loader.py").unlink()
    (project / "train.py").write_text(GLOBAL_INT_FIXED, encoding="utf-8")
    result = invoke("--diff", ".")
    assert result.exit_code == 0 and result.stdout == ""


def test_fix_applies_the_safe_fixes_and_reports_what_is_left(project):
    result = invoke("--fix", ".")
    assert (project / "train.py").read_text(encoding="utf-8") == GLOBAL_INT_FIXED
    assert (project / "loader.py").read_text(encoding="utf-8") == LOADER
    assert "fixed 1 finding in 1 file (1 unsafe fix not applied: --unsafe-fixes applies them)" in result.stderr
    assert "RCL205" in result.stdout and "RCL101" not in result.stdout
    assert result.exit_code == 1  # the unsafe one is still a finding


def test_unsafe_fixes_apply_every_fix_and_the_run_is_clean(project):
    result = invoke("--unsafe-fixes", ".")
    assert "fixed 2 findings in 2 files" in result.stderr
    assert "drop_last=True" in (project / "loader.py").read_text(encoding="utf-8")
    assert "Found 0 findings" in result.stdout
    assert result.exit_code == 0
    again = invoke("--unsafe-fixes", ".")
    assert "fixed 0 findings in 0 files" in again.stderr
    assert again.exit_code == 0


def test_add_noqa_writes_one_suppression_per_line_and_says_how_many(project):
    text = GLOBAL_INT.replace("    return x * step\n", "    return x * step  # noqa: E501\n")
    (project / "train.py").write_text(text, encoding="utf-8")
    result = invoke("--add-noqa", ".")
    assert result.exit_code == 0
    assert "added 2 noqa directives" in result.stderr
    assert "    return x * step  # noqa: E501, RCL101\n" in (project / "train.py").read_text(encoding="utf-8")
    assert "        model(x)  # noqa: RCL205\n" in (project / "loader.py").read_text(encoding="utf-8")
    after = invoke(".")
    assert after.exit_code == 0 and "Found 0 findings" in after.stdout


@pytest.mark.parametrize(
    "args",
    [("--add-noqa", "--fix", "."), ("--fix", "--stdin-filename", "train.py")],
)
def test_options_that_do_not_combine_are_a_usage_error(project, args):
    result = CliRunner().invoke(main, ["--no-cache", *args], input=GLOBAL_INT)
    assert result.exit_code == 2
    assert "recompile-lint: error:" in result.stderr
    assert (project / "train.py").read_text(encoding="utf-8") == GLOBAL_INT


def test_a_fix_is_not_written_through_a_link(project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside") / "train.py"
    outside.write_text(GLOBAL_INT, encoding="utf-8")
    (project / "train.py").unlink()
    (project / "sub").mkdir()
    (project / "sub" / "real.py").write_text(GLOBAL_INT, encoding="utf-8")
    (project / "train.py").symlink_to(project / "sub" / "real.py")
    result = invoke("--fix", "train.py")
    assert "symbolic link" in result.stderr
    assert (project / "sub" / "real.py").read_text(encoding="utf-8") == GLOBAL_INT
    assert outside.read_text(encoding="utf-8") == GLOBAL_INT


def test_the_diff_shows_control_characters_of_the_code_escaped(project):
    (project / "train.py").write_text(GLOBAL_INT.replace("step = 0\n", "step = 0  # \x1b]0;owned\x07\n"), encoding="utf-8")
    result = invoke("--diff", "train.py")
    assert result.exit_code == 1
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "\\x1b]0;owned\\x07" in result.stdout


def test_a_fix_that_cannot_be_written_is_a_file_error_and_exits_2(project, monkeypatch):
    from recompile_lint.fixes import apply
    from recompile_lint.fixes.files import FileFixError

    def refuse(source, text):
        raise FileFixError("it changed on disk since it was read: not written (run again)")

    monkeypatch.setattr(apply, "write_source", refuse)
    result = invoke("--fix", "train.py")
    assert result.exit_code == 2
    assert any(
        line.startswith("train.py:") and "not fixed: it changed on disk since it was read" in line
        for line in (result.stdout + result.stderr).splitlines()
    )
    assert (project / "train.py").read_text(encoding="utf-8") == GLOBAL_INT


def test_the_diff_of_tab_indented_code_keeps_its_tabs_and_applies(project):
    import subprocess

    tabbed = GLOBAL_INT.replace("    ", "\t").replace("import torch\n", "import torch\ntry:\n\timport math\nexcept ImportError:\n\tmath = None\n", 1)
    (project / "train.py").write_text(tabbed, encoding="utf-8")
    (project / "loader.py").unlink()
    result = invoke("--diff", "train.py")
    assert result.exit_code == 1
    assert "\n \timport math\n" in result.stdout
    (project / "fix.diff").write_text(result.stdout, encoding="utf-8")
    applied = subprocess.run(["git", "apply", "--unsafe-paths", "fix.diff"], cwd=project, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    assert 'torch.compiler.config.dynamic_sources = "G[\'step\']"' in (project / "train.py").read_text(encoding="utf-8")
