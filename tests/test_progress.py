"""The counter a long lint draws on a terminal's standard error, and nothing elsewhere."""

from __future__ import annotations

import io
import time
from pathlib import Path

from helpers import SEED_SOURCE
from recompile_lint.config import Config
from recompile_lint.engine import lint_paths
from recompile_lint.frontends.progress import DELAY, LintProgress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_redrawn_counter_that_is_erased_at_the_end() -> None:
    stream = Terminal()
    with LintProgress(stream, delay=0.0, interval=0.01) as progress:
        for name in ("a.py", "b.py", "c.py"):
            progress.parsed(name)
        deadline = time.monotonic() + 10
        while "3 files parsed" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    text = stream.getvalue()
    assert "\rrecompile-lint: 0 s, 3 files parsed\x1b[K" in text
    assert text.endswith("\r\x1b[K")


def test_nothing_is_drawn_before_the_delay_or_off_a_terminal() -> None:
    assert DELAY == 2.0
    quick = Terminal()
    with LintProgress(quick) as progress:
        progress.parsed("a.py")
    assert quick.getvalue() == ""
    piped = io.StringIO()
    with LintProgress(piped, delay=0.0, interval=0.01) as progress:
        time.sleep(0.05)
    assert piped.getvalue() == ""


def test_the_engine_tells_progress_of_each_parsed_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "seed.py").write_text(SEED_SOURCE, encoding="utf-8")
    (tmp_path / "other.py").write_text("x = 1\n", encoding="utf-8")
    told: list[str] = []
    result = lint_paths([str(tmp_path)], Config(cache=False), progress=told.append)
    assert len(result.findings) == 1
    # The file that can compile is parsed; the other one only passes the text test.
    assert [Path(p).name for p in told] == ["seed.py"]
