"""The flake8 plugin reports what the CLI reports: same codes, lines and columns."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from recompile_lint.config import ConfigError
from recompile_lint.frontends import flake8_plugin
from recompile_lint.frontends.flake8_plugin import RecompileLintPlugin, findings_for, info_codes

REPO = Path(__file__).resolve().parent.parent
LOCATION = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+)\b")

MODEL = """\
import torch

scale = 1


@torch.compile
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * scale{comment}
"""

TRAIN = """\
import torch

from pkg import model


def main() -> None:
    for epoch in range(10):
        model.scale = epoch
        model.poly(torch.ones(3))
"""

CLEAN = """\
import torch

SCALE = 3


@torch.compile
def poly(x: torch.Tensor) -> torch.Tensor:
    return x * SCALE
"""


def make_project(root: Path, comment: str = "") -> Path:
    """A package whose compiled function reads a global that another module reassigns."""
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pkg" / "model.py").write_text(MODEL.format(comment=comment), encoding="utf-8")
    (root / "pkg" / "train.py").write_text(TRAIN, encoding="utf-8")
    (root / "pkg" / "clean.py").write_text(CLEAN, encoding="utf-8")
    return root


def run_flake8(cwd: Path, *args: str, stdin: str | None = None, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    # --isolated: no user or project flake8 configuration changes what is selected.
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", *args],
        cwd=cwd, input=stdin, capture_output=True, text=True, timeout=timeout,
    )


def run_cli(cwd: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recompile_lint", "--no-cache", *args],
        cwd=cwd, capture_output=True, text=True, timeout=timeout,
    )


def locations(output: str, prefix: str = "RCL") -> set[tuple[str, int, int, str]]:
    """(path, line, column, code) of every reported line whose code starts with ``prefix``."""
    out = set()
    for line in output.splitlines():
        match = LOCATION.match(line)
        if match and match["code"].startswith(prefix):
            out.add((os.path.normpath(match["path"]), int(match["line"]), int(match["col"]), match["code"]))
    return out


def test_flake8_reports_the_cli_findings_at_the_same_line_and_column(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    flake8 = run_flake8(root, "--select", "RCL", "pkg")
    cli = run_cli(root, "--select", "RCL", "pkg")
    assert flake8.returncode == 1, flake8.stderr
    assert cli.returncode == 1, cli.stderr
    expected = {(os.path.join("pkg", "model.py"), 8, 16, "RCL101")}
    assert locations(cli.stdout) == expected
    assert locations(flake8.stdout) == expected
    # The message is the CLI's, ending in the rule name `recompile-lint rule` accepts.
    assert "changed at pkg/train.py:8" in flake8.stdout
    assert flake8.stdout.rstrip().endswith("(mutated-global)")


def test_cross_module_finding_when_flake8_checks_only_the_region_file(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    result = run_flake8(root, "--select", "RCL", os.path.join("pkg", "model.py"))
    assert locations(result.stdout) == {(os.path.join("pkg", "model.py"), 8, 16, "RCL101")}


def test_clean_file_passes(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    result = run_flake8(root, "--select", "RCL", os.path.join("pkg", "clean.py"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


# One compiled function per comment; each reads its own global, which main() reassigns.
NOQA_VARIANTS = (
    ("  # noqa: RCL101", True),
    ("  # noqa:RCL101,E501", True),
    ("  # noqa: RCL1", True),  # a prefix, as flake8 accepts
    ("  # noqa", True),
    ("  # NOQA: RCL101", True),
    ("", False),
    ("  # noqa: E501", False),
    ("  # noqa: RCL102", False),
)


def noqa_module() -> str:
    parts = ["import torch\n"]
    for i, (comment, _) in enumerate(NOQA_VARIANTS):
        parts.append(f"g{i} = 0\n\n\n@torch.compile\ndef f{i}(x: torch.Tensor) -> torch.Tensor:\n    return x * g{i}{comment}\n")
    names = ", ".join(f"g{i}" for i in range(len(NOQA_VARIANTS)))
    parts.append(f"\ndef main() -> None:\n    global {names}\n")
    parts.extend(f"    g{i} += 1\n" for i in range(len(NOQA_VARIANTS)))
    return "\n".join(parts)


def test_noqa_is_the_same_in_flake8_and_the_cli(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    text = noqa_module()
    (tmp_path / "m.py").write_text(text, encoding="utf-8")
    lines = text.splitlines()
    expected = set()
    for i, (comment, suppressed) in enumerate(NOQA_VARIANTS):
        number = next(n for n, line in enumerate(lines, 1) if line.startswith(f"    return x * g{i}"))
        if not suppressed:
            expected.add(("m.py", number, 16, "RCL101"))
    flake8 = locations(run_flake8(tmp_path, "--select", "RCL", "m.py").stdout)
    cli = locations(run_cli(tmp_path, "--select", "RCL", "m.py").stdout)
    assert cli == expected
    assert flake8 == expected


def test_per_file_ignores_and_extend_select(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    ignored = run_flake8(root, "--select", "RCL", "--per-file-ignores", "pkg/model.py:RCL101", "pkg")
    assert locations(ignored.stdout) == set()
    assert ignored.returncode == 0
    # Selecting only pycodestyle's E9 hides ours; --extend-select brings RCL101 back.
    only_e9 = run_flake8(root, "--select", "E9", "pkg")
    assert locations(only_e9.stdout) == set()
    extended = run_flake8(root, "--select", "E9", "--extend-select", "RCL101", "pkg")
    assert locations(extended.stdout) == {(os.path.join("pkg", "model.py"), 8, 16, "RCL101")}


def test_plain_flake8_run_includes_error_rules(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    result = run_flake8(root, "pkg")
    assert (os.path.join("pkg", "model.py"), 8, 16, "RCL101") in locations(result.stdout)


def test_info_rules_are_off_in_flake8_by_default_like_the_cli() -> None:
    class Manager:
        def __init__(self) -> None:
            self.ignored: list[str] = []

        def extend_default_ignore(self, codes: list[str]) -> None:
            self.ignored.extend(codes)

    manager = Manager()
    RecompileLintPlugin.add_options(manager)
    from recompile_lint.rules import all_rules

    info = {rule.code for rule in all_rules() if rule.severity.value == "info"}
    assert set(manager.ignored) == info == set(info_codes())
    assert not any(code.startswith("RCL101") for code in manager.ignored)


def test_standard_input_is_linted(tmp_path: Path) -> None:
    source = (tmp_path / "m.py")
    source.write_text(MODEL.format(comment="") + "\n\ndef main() -> None:\n    global scale\n    scale += 1\n", encoding="utf-8")
    result = run_flake8(tmp_path, "--select", "RCL", "-", stdin=source.read_text(encoding="utf-8"))
    assert locations(result.stdout) == {("stdin", 8, 16, "RCL101")}
    # The message cites the mutation by the name flake8 shows, not a temporary file.
    assert "changed at stdin:13" in result.stdout
    named = run_flake8(tmp_path, "--select", "RCL", "--stdin-display-name", "m.py", "-", stdin=source.read_text(encoding="utf-8"))
    assert locations(named.stdout) == {("m.py", 8, 16, "RCL101")}


def test_unsaved_buffer_is_linted_instead_of_the_file_on_disk(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    model = root / "pkg" / "model.py"
    buffer = ["\n", "\n"] + model.read_text(encoding="utf-8").splitlines(keepends=True)
    found = findings_for(str(model), buffer)
    # Two lines inserted above the read in the editor move the finding down by two.
    assert [(f.line, f.column, f.code) for f in found] == [(10, 16, "RCL101")]


def test_memoised_project_analysis_follows_edits(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    model, train = root / "pkg" / "model.py", root / "pkg" / "train.py"
    lines = model.read_text(encoding="utf-8").splitlines(keepends=True)
    assert [(f.line, f.code) for f in findings_for(str(model), lines)] == [(8, "RCL101")]
    assert findings_for(str(root / "pkg" / "clean.py"), None) == ()
    # Remove the reassignment elsewhere: the finding in model.py must go away.
    train.write_text(TRAIN.replace("model.scale = epoch", "print(epoch)"), encoding="utf-8")
    stat = train.stat()
    os.utime(train, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert findings_for(str(model), lines) == ()


def test_plugin_yields_zero_based_columns_with_the_code_first(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    model = root / "pkg" / "model.py"
    plugin = RecompileLintPlugin(tree=None, filename=str(model), lines=model.read_text(encoding="utf-8").splitlines(keepends=True))  # type: ignore[arg-type]
    [(line, column, text, kind)] = list(plugin.run())
    assert (line, column) == (8, 15)
    assert text.startswith("RCL101 ")
    assert kind is RecompileLintPlugin


def test_flake8_matches_the_cli_on_the_fixtures(tmp_path: Path) -> None:
    """The acceptance check: ``flake8 --select RCL`` and ``recompile-lint --select RCL`` agree
    on the shipped fixtures (or on a small project of our own when there are none).

    The fixtures are linted as a copy, a project of their own, so both runs see one tree.
    """
    fixtures = REPO / "fixtures"
    if fixtures.is_dir() and any(fixtures.rglob("*.py")):
        cwd, target = tmp_path, "fixtures"
        shutil.copytree(fixtures, tmp_path / "fixtures", ignore=shutil.ignore_patterns("__pycache__"))
        (tmp_path / "pyproject.toml").write_text('[project]\nname = "fixtures"\n', encoding="utf-8")
    else:
        cwd, target = make_project(tmp_path), "pkg"
    # Both analyse in their own processes: a resident server another test left running (of
    # this user, possibly of another checkout) must not answer one of them.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RECOMPILE_LINT_NO_SERVER", "1")
        # pyflakes, which flake8 runs on every file, exceeds the interpreter's default
        # recursion limit on the fixture of a 320-branch elif chain and stops the whole run;
        # the plugin no longer lends it a raised limit. Both tools leave that file out.
        deep = ("--extend-exclude", "generated_dispatch.py")
        flake8 = run_flake8(cwd, "--select", "RCL", *deep, target, timeout=900)
        cli = run_cli(cwd, "--select", "RCL", *deep, target, timeout=900)
    assert flake8.returncode in (0, 1), flake8.stdout + flake8.stderr
    assert cli.returncode in (0, 1), cli.stderr
    assert locations(flake8.stdout) == locations(cli.stdout)
    assert locations(cli.stdout), "the comparison must cover at least one finding"


def test_flake8_disable_noqa_shows_suppressed_findings(tmp_path: Path) -> None:
    root = make_project(tmp_path, "  # noqa: RCL101")
    result = run_flake8(root, "--select", "RCL", "--disable-noqa", os.path.join("pkg", "model.py"))
    assert locations(result.stdout) == {(os.path.join("pkg", "model.py"), 8, 16, "RCL101")}


@pytest.mark.parametrize(
    "table, word",
    [('max-depth = "deep"\n', "max-depth"), ("no-such-setting = 1\n", "no-such-setting"), ('select = ["RCL999"]\n', "RCL999")],
)
def test_invalid_settings_are_one_diagnostic_per_file_and_other_plugins_still_report(tmp_path: Path, table: str, word: str) -> None:
    """A typo in ``[tool.recompile-lint]`` does not end the flake8 run: pyflakes' findings are
    still reported, and each checked file gets one RCL000 at line 1 naming the setting."""
    root = make_project(tmp_path)
    (root / "pyproject.toml").write_text(f'[project]\nname = "demo"\n\n[tool.recompile-lint]\n{table}', encoding="utf-8")
    (root / "pkg" / "unused.py").write_text("import os\n", encoding="utf-8")
    result = run_flake8(root, "--select", "F,RCL", os.path.join("pkg", "model.py"), os.path.join("pkg", "unused.py"))
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output and not result.stderr.strip(), output
    assert locations(result.stdout, "F") == {(os.path.join("pkg", "unused.py"), 1, 1, "F401")}
    assert locations(result.stdout, "RCL") == {(os.path.join("pkg", "model.py"), 1, 1, "RCL000"), (os.path.join("pkg", "unused.py"), 1, 1, "RCL000")}
    for line in result.stdout.splitlines():
        if "RCL000" in line:
            assert word in line and "pyproject.toml" in line, line


def test_a_configuration_error_quotes_the_settings_on_one_line() -> None:
    text = flake8_plugin.config_error_text(ConfigError("pyproject.toml: unknown setting 'a\nb\x1b[2J'"))
    assert "\n" not in text and "\x1b" not in text
    assert text == "pyproject.toml: unknown setting 'a b\\x1b[2J'"


PROBE = '''\
import sys


class Probe:
    """Reports the recursion limit it finds: what the plugins flake8 runs after ours see."""

    name = "probe"
    version = "0"

    def __init__(self, tree):
        self.limit = sys.getrecursionlimit()

    def run(self):
        yield 1, 0, f"X100 recursion limit {self.limit}", type(self)
'''


def test_the_plugin_leaves_the_recursion_limit_as_it_found_it(tmp_path: Path) -> None:
    # Another plugin of the same flake8 process sees the limit flake8 started with, on every
    # file (``-j 1``: one process checks them all, ours among the plugins of each).
    root = make_project(tmp_path)
    (root / "probe.py").write_text(PROBE, encoding="utf-8")
    (root / "flake8.cfg").write_text("[flake8:local-plugins]\nextension =\n    X1 = probe:Probe\npaths = .\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-c", "import sys; print('start', sys.getrecursionlimit()); from flake8.main.cli import main; main()",
         "--config", "flake8.cfg", "-j", "1", "--select", "RCL,X1", "pkg"],
        cwd=root, capture_output=True, text=True, timeout=300, env=dict(os.environ, RECOMPILE_LINT_NO_SERVER="1"),
    )
    start = int(result.stdout.split("\n", 1)[0].split()[1])
    limits = re.findall(r"X100 recursion limit (\d+)", result.stdout)
    assert len(limits) == 4, result.stdout + result.stderr  # one per file of pkg
    assert set(limits) == {str(start)}, result.stdout
    assert (os.path.join("pkg", "model.py"), 8, 16, "RCL101") in locations(result.stdout)


def test_the_analysis_runs_with_its_limit_and_the_plugin_restores_the_callers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recompile_lint.analysis.facts import DEEP_CODE_FRAMES

    root = make_project(tmp_path)
    seen: list[int] = []
    lint = flake8_plugin.lint_paths

    def recording(*args, **kwargs):
        result = lint(*args, **kwargs)
        seen.append(sys.getrecursionlimit())
        return result

    monkeypatch.setattr(flake8_plugin, "lint_paths", recording)
    before = sys.getrecursionlimit()
    monkeypatch.setattr(flake8_plugin, "_MEMO", flake8_plugin.ProjectMemo())
    sys.setrecursionlimit(1200)
    try:
        model = root / "pkg" / "model.py"
        plugin = RecompileLintPlugin(tree=None, filename=str(model), lines=model.read_text(encoding="utf-8").splitlines(keepends=True))  # type: ignore[arg-type]
        assert sys.getrecursionlimit() == 1200
    finally:
        sys.setrecursionlimit(before)
    assert seen and seen[0] >= DEEP_CODE_FRAMES > 1200  # the analysis had the limit it needs
    assert [f.code for f in plugin.findings] == ["RCL101"]


def test_the_project_is_walked_once_per_flake8_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # flake8 asks for every file it checks: a walk of the whole project each time made the
    # plugin's cost grow with the square of the project's size.
    root = make_project(tmp_path)
    walks: list[str] = []
    scope = flake8_plugin.project_scope

    def counting(paths, config):
        walks.append(paths[0])
        return scope(paths, config)

    monkeypatch.setattr(flake8_plugin, "project_scope", counting)
    monkeypatch.setattr(flake8_plugin, "_LISTINGS", {})
    monkeypatch.setattr(flake8_plugin, "_MEMO", flake8_plugin.ProjectMemo())
    monkeypatch.setattr(flake8_plugin, "_RUN", [0])
    monkeypatch.setattr(RecompileLintPlugin, "named", None)
    RecompileLintPlugin.parse_options(type("Options", (), {"filenames": [str(root / "pkg")]})())
    files = sorted((root / "pkg").glob("*.py"))
    found = {path.name: findings_for(str(path), path.read_text(encoding="utf-8").splitlines(keepends=True), RecompileLintPlugin.named) for path in files}
    assert len(walks) == 1
    assert [f.code for f in found["model.py"]] == ["RCL101"] and found["clean.py"] == ()
    # A new run (or a caller outside flake8) sees a file added since.
    (root / "pkg" / "extra.py").write_text("X = 1\n", encoding="utf-8")
    RecompileLintPlugin.parse_options(type("Options", (), {"filenames": [str(root / "pkg")]})())
    findings_for(str(root / "pkg" / "extra.py"), ["X = 1\n"], RecompileLintPlugin.named)
    assert len(walks) == 2 and str(root / "pkg" / "extra.py") in flake8_plugin._LISTINGS[next(iter(flake8_plugin._LISTINGS))][0].files


def test_workers_take_turns_on_a_projects_analysis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # While one flake8 worker analyses a project it holds the cache directory's lock; another
    # worker waits, then finds the result in the run cache.
    from dataclasses import replace

    from recompile_lint.config import load_config

    root = make_project(tmp_path)
    config = replace(load_config([str(root)]), cache=True, cache_dir=str(tmp_path / "cache"))
    first = str(root / "pkg" / "model.py")
    monkeypatch.setattr(flake8_plugin, "_PARALLEL", [True])  # flake8 -j 2
    monkeypatch.setattr(flake8_plugin, "_RUN", [0])
    monkeypatch.setattr(RecompileLintPlugin, "named", None)
    probe = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
        "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n    print('free')\n"
        "except BlockingIOError:\n    print('held')\n"
    )
    def state() -> str:
        return subprocess.run([sys.executable, "-c", probe, str(tmp_path / "cache")], capture_output=True, text=True, timeout=60).stdout.strip()

    with flake8_plugin.one_worker_at_a_time(config, str(root), first):
        held = state()
    assert (held, state()) == ("held", "free")
    # Without a cache there is nothing to share, with one process no one to wait for: no lock.
    with flake8_plugin.one_worker_at_a_time(replace(config, cache=False), str(root), first):
        assert state() == "free"
    monkeypatch.setattr(flake8_plugin, "_PARALLEL", [False])
    with flake8_plugin.one_worker_at_a_time(config, str(root), first):
        assert state() == "free"
    # flake8's -j as parse_options sees it.
    for jobs, parallel in ((type("Jobs", (), {"is_auto": True, "n_jobs": 4})(), True), (type("Jobs", (), {"is_auto": False, "n_jobs": 1})(), False), (2, True)):
        RecompileLintPlugin.parse_options(type("Options", (), {"filenames": ["pkg"], "jobs": jobs})())
        assert flake8_plugin._PARALLEL == [parallel]

