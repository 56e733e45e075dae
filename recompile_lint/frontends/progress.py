"""A counter on standard error for a lint that takes a while: ``[n/N]`` files and the time left.

``recompile-lint: [1037/2328] files, 21 s, about 29 s left``: N is the number of files the
run checks (the named files), n those done (parsed, or syntax-checked when no region needed
them), and the time left is the files still to do at the pace of the last ``WINDOW`` seconds,
or of the whole run where that was faster. Parsing comes first and costs more per file than
the syntax checks that end a run, so the estimate errs long, not short.

Nothing shows for a run shorter than ``DELAY`` seconds. By default the counter shows only
when standard error is a terminal, as a line redrawn in place and erased before the report;
asked for (``--progress``) elsewhere (a CI log, a pipe), it is a line every
``LOG_INTERVAL`` seconds instead. The command shows none for the machine formats (JSON,
SARIF, GitHub annotations), whatever is asked.
"""

from __future__ import annotations

import threading
import time
from typing import IO, Iterable

DELAY = 2.0  # seconds before the counter appears
INTERVAL = 0.25  # seconds between redraws on a terminal
LOG_INTERVAL = 5.0  # seconds between lines off a terminal (asked for with --progress)
# No estimate of the time left before this share of the files is done (too few to judge).
ESTIMATE_AFTER = 0.02
WINDOW = 10.0  # seconds of recent pace the estimate looks at


class LintProgress:
    """Counts the files of a run as they are done and, after ``delay`` seconds, shows
    ``recompile-lint: [n/N] files, 12 s, about 30 s left`` on ``stream``.

    The engine tells ``planned`` the files to check (once) and ``parsed`` each file as it is
    parsed and each named file as its check ends; a file counts once, and only a planned one.
    ``show``: True draws it whatever ``stream`` is, False never, None when ``stream`` is a
    terminal.
    """

    def __init__(self, stream: IO[str], delay: float | None = None, interval: float | None = None, show: bool | None = None) -> None:
        self.stream = stream
        self.delay = DELAY if delay is None else delay
        self.terminal = self.wanted(stream)
        self.show = self.terminal if show is None else show
        self.interval = interval if interval is not None else (INTERVAL if self.terminal else LOG_INTERVAL)
        self.total = 0
        self._planned: set[str] = set()
        self._done: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown = False
        self._start = 0.0
        self._paces: list[tuple[float, int]] = []  # (time, files done) at each line drawn

    @property
    def done(self) -> int:
        return len(self._done)

    def planned(self, paths: Iterable[str]) -> None:
        """Told the files the run checks, before it starts on them."""
        with self._lock:
            self._planned = set(paths)
            self.total = len(self._planned)
            self._done &= self._planned

    def parsed(self, path: str) -> None:
        """Told of each file as its facts are parsed, and of each named file as its check ends."""
        if path in self._planned and path not in self._done:
            with self._lock:
                self._done.add(path)

    @staticmethod
    def wanted(stream: IO[str]) -> bool:
        """Whether ``stream`` is a terminal (the only place a redrawn line reads as one)."""
        try:
            return stream.isatty()
        except (AttributeError, ValueError, OSError):
            return False

    def line(self, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        elapsed = now - self._start
        done, total = self.done, self.total
        self._paces.append((now, done))
        while len(self._paces) > 2 and self._paces[1][0] <= now - WINDOW:
            self._paces.pop(0)
        text = f"recompile-lint: [{done}/{total}] file{'s' if total != 1 else ''}, {elapsed:.0f} s"
        if total and done >= max(1, ESTIMATE_AFTER * total) and done < total and elapsed > 0:
            pace = done / elapsed
            since, then = self._paces[0]
            if now - since > 0:
                pace = max(pace, (done - then) / (now - since))
            text += f", about {_duration((total - done) / pace)} left"
        return text

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while True:
            if self.terminal:
                self._write(f"\r{self.line()}\x1b[K")
            else:
                self._write(self.line() + "\n")
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
        if self.show:
            self._thread = threading.Thread(target=self._run, name="recompile-lint-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._shown and self.terminal:
            self._write("\r\x1b[K")  # the report starts on a clean line


def _duration(seconds: float) -> str:
    """``45 s``, ``3 min 10 s``."""
    seconds = max(1, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
