"""A counter on standard error for a lint that takes a while, when a person is watching.

Nothing shows for a run shorter than ``DELAY`` seconds, nor when standard error is not a
terminal (a pipe, a file, CI): the counter is a line redrawn in place, which only a terminal
shows as one line. It is erased before the report is printed.
"""

from __future__ import annotations

import threading
import time
from typing import IO

DELAY = 2.0  # seconds before the counter appears
INTERVAL = 0.25  # seconds between redraws


class LintProgress:
    """Counts files as the analysis parses them (an ``index.parse_listeners`` callback) and,
    after ``delay`` seconds, redraws ``recompile-lint: 12 s, 345 files parsed`` on ``stream``."""

    def __init__(self, stream: IO[str], delay: float = DELAY, interval: float = INTERVAL) -> None:
        self.stream = stream
        self.delay = delay
        self.interval = interval
        self.parsed_files = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown = False
        self._start = 0.0

    def parsed(self, path: str) -> None:
        """Told of each file as its facts are parsed."""
        self.parsed_files += 1

    @staticmethod
    def wanted(stream: IO[str]) -> bool:
        """Whether ``stream`` is a terminal (the only place a redrawn line reads as one)."""
        try:
            return stream.isatty()
        except (AttributeError, ValueError, OSError):
            return False

    def line(self) -> str:
        elapsed = time.monotonic() - self._start
        files = self.parsed_files
        return f"recompile-lint: {elapsed:.0f} s, {files} file{'s' if files != 1 else ''} parsed"

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while True:
            self._write(f"\r{self.line()}\x1b[K")
            self._shown = True
            if self._stop.wait(self.interval):
                return

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self._stop.set()

    def __enter__(self) -> "LintProgress":
        self._start = time.monotonic()
        if self.wanted(self.stream):
            self._thread = threading.Thread(target=self._run, name="recompile-lint-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._shown:
            self._write("\r\x1b[K")  # the report starts on a clean line
