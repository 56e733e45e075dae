"""The counter a long lint draws on standard error: ``[n/N]`` files and the time left, on a
terminal or when asked, never with the machine formats."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import SEED_SOURCE
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths
from recompile_lint.frontends import progress as progress_module
from recompile_lint.frontends.progress import DELAY, LintProgress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def wait_for(stream: io.StringIO, text: str) -> None:
    deadline = time.monotonic() + 10
    while text not in stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_terminal_gets_a_redrawn_counter_that_is_erased_at_the_end() -> None:
    stream = Terminal()
    with LintProgress(stream, delay=0.0, interval=0.01) as progress:
        progress.planned(["/p/a.py", "/p/b.py", "/p/c.py", "/p/d.py"])
        for name in ("/p/a.py", "/p/b.py", "/p/c.py", "/p/a.py", "/p/elsewhere.py"):
            progress.parsed(name)  # a file counts once, and only a planned one
        wait_for(stream, "[3/4] files")
    text = stream.getvalue()
    assert "\rrecompile-lint: [3/4] files, 0 s, about 1 s left\x1b[K" in text
    assert text.endswith("\r\x1b[K")


def test_the_time_left_is_the_files_to_do_at_the_pace_so_far() -> None:
    progress = LintProgress(io.StringIO())
    progress._start = 100.0
    progress.planned([f"/p/{i}.py" for i in range(1000)])
    assert progress.line(now=101.0) == "recompile-lint: [0/1000] files, 1 s"  # nothing done: no estimate
    for i in range(250):
        progress.parsed(f"/p/{i}.py")
    # 250 files in the 9 s since the first line: 750 to go at that pace.
    assert progress.line(now=110.0) == "recompile-lint: [250/1000] files, 10 s, about 27 s left"
    # Nothing done for 10 s (the rules run): the pace of the whole run, 12.5 files a second.
    assert progress.line(now=120.0) == "recompile-lint: [250/1000] files, 20 s, about 1 min left"
    # Then 500 files in 5 s (the syntax checks that end a run): the last 15 s went faster
    # (33 a second) than the whole run (30), and their pace counts.
    for i in range(250, 750):
        progress.parsed(f"/p/{i}.py")
    assert progress.line(now=125.0) == "recompile-lint: [750/1000] files, 25 s, about 7 s left"
    for i in range(750, 1000):
        progress.parsed(f"/p/{i}.py")
    assert progress.line(now=200.0) == "recompile-lint: [1000/1000] files, 100 s"
    assert progress_module._duration(190) == "3 min 10 s"


def test_nothing_is_drawn_before_the_delay_or_off_a_terminal_unless_asked() -> None:
    assert DELAY == 2.0
    quick = Terminal()
    with LintProgress(quick) as progress:
        progress.parsed("a.py")
    assert quick.getvalue() == ""
    piped = io.StringIO()
    with LintProgress(piped, delay=0.0, interval=0.01) as progress:
        time.sleep(0.05)
    assert piped.getvalue() == ""
    # Asked for off a terminal (a CI log): whole lines, nothing redrawn or erased.
    asked = io.StringIO()
    with LintProgress(asked, delay=0.0, interval=0.01, show=True) as progress:
        progress.planned(["/p/a.py", "/p/b.py"])
        progress.parsed("/p/a.py")
        wait_for(asked, "[1/2]")
    text = asked.getvalue()
    assert text.startswith("recompile-lint: [") and text.endswith("\n")
    assert "\r" not in text and "\x1b" not in text


def test_the_engine_tells_progress_of_each_parsed_file_and_each_checked_one(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "seed.py").write_text(SEED_SOURCE, encoding="utf-8")
    (tmp_path / "other.py").write_text("x = 1\n", encoding="utf-8")
    told: list[str] = []
    planned: list[list[str]] = []
    result = lint_paths([str(tmp_path)], Config(cache=False), progress=told.append, planned=planned.append)
    assert len(result.findings) == 1
    assert [sorted(Path(p).name for p in paths) for paths in planned] == [["other.py", "seed.py"]]
    # The file that can compile is parsed first; the other one only passes the text test and
    # is told when its syntax check ends.
    assert Path(told[0]).name == "seed.py"
    assert sorted({Path(p).name for p in told}) == ["other.py", "seed.py"]
    counter = LintProgress(io.StringIO())
    counter.planned(planned[0])
    for path in told:
        counter.parsed(path)
    assert counter.done == counter.total == 2


@pytest.mark.parametrize(("args", "shown"), [
    (["--progress"], True),
    (["--progress", "--output-format", "concise"], True),
    (["--progress", "--statistics"], True),
    ([], False),  # standard error is not a terminal
    (["--progress", "--format", "json"], False),
    (["--progress", "--format", "sarif"], False),
    (["--progress", "--format", "github"], False),
])
def test_the_command_shows_it_when_asked_and_never_for_machine_formats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], shown: bool) -> None:
    import recompile_lint.engine as engine
    from recompile_lint.frontends.cli import main

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "seed.py").write_text(SEED_SOURCE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(progress_module, "DELAY", 0.0)
    monkeypatch.setattr(progress_module, "LOG_INTERVAL", 0.01)
    real = engine.lint_paths

    def slow(*a, **k):
        time.sleep(0.3)  # long enough for the counter to be drawn
        return real(*a, **k)

    monkeypatch.setattr(engine, "lint_paths", slow)
    result = CliRunner().invoke(main, ["--no-cache", "--exit-zero", *args, "seed.py"])
    assert result.exit_code == 0, result.output
    assert ("recompile-lint: [" in result.stderr) is shown, result.stderr
    assert "recompile-lint: [" not in result.stdout
