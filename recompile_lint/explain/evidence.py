"""What an input says about a run: its recompiles and limit hits, as plain data (no torch)."""

from __future__ import annotations

from dataclasses import dataclass

from recompile_lint.verify.results import LimitHit, RecompileEvent


class ExplainInputError(Exception):
    """The input cannot be read as a log, a trace or verifier JSON (exit code 2)."""


@dataclass(frozen=True)
class Evidence:
    """Everything read from one input.

    ``events`` are the recompiles in the order they happened (each with the failing guard of
    every cache entry Dynamo checked); ``refused`` are the (compile id, function) of recompile
    attempts that the limit stopped (logged like a recompile, but no graph was made); ``compiles``
    counts the graphs each function got, where the input says (a trace does, a log does not).
    """

    kind: str  # "log", "trace" or "verify-json"
    events: tuple[RecompileEvent, ...]
    limit_hits: tuple[LimitHit, ...] = ()
    refused: frozenset[tuple[str, str]] = frozenset()  # (compile id, function)
    compiles: tuple[tuple[tuple[str, int, str], int], ...] = ()  # (file, first line, name) -> graphs
    channels: tuple[str, ...] = ()  # which logging channels the input held
    inferred: bool = False  # failing guards deduced from how guard sets differ (guards channel only)
    warnings: tuple[str, ...] = ()
    records: int = 0  # log records or trace entries recognised (0: nothing from torch at all)

    def files(self) -> list[str]:
        """Every source path the input names (functions and guard locations), in order."""
        seen: dict[str, None] = {}
        for event in self.events:
            seen.setdefault(event.file, None)
            for failure in event.reasons:
                if failure.file:
                    seen.setdefault(failure.file, None)
        for hit in self.limit_hits:
            if hit.file:
                seen.setdefault(hit.file, None)
        return [path for path in seen if path]
