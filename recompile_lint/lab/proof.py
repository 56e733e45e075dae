"""What torch did with a generated program: per compiled code object, the graphs it compiled,
its recompiles, whether it reached ``recompile_limit``, and each guard failure as Dynamo
printed it. Plain data, no torch; the prover makes these, the measure reads them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

TIERS = ("unbounded", "bounded", "negative")


@dataclass(frozen=True)
class GuardFailureRecord:
    """One distinct guard failure: the guard as the recompile reason prints it (``self.k == 0``,
    ``G['step'] == 1``), the unstripped source (``L['self'].k``), and the ``file:line`` it points at
    (file relative to the program)."""

    guard: str
    source: str
    file: str
    line: int

    def to_list(self) -> list[Any]:
        return [self.guard, self.source, self.file, self.line]

    @classmethod
    def from_list(cls, data: list[Any]) -> "GuardFailureRecord":
        return cls(str(data[0]), str(data[1]), str(data[2]), int(data[3]))


@dataclass(frozen=True)
class CodeRecord:
    """One compiled code object (file relative to the program, first line, name)."""

    file: str
    line: int
    name: str
    graphs: int
    recompiles: int
    limit_hit: bool
    failures: tuple[GuardFailureRecord, ...] = ()

    def to_list(self) -> list[Any]:
        return [self.file, self.line, self.name, self.graphs, self.recompiles, int(self.limit_hit),
                [f.to_list() for f in self.failures]]

    @classmethod
    def from_list(cls, data: list[Any]) -> "CodeRecord":
        return cls(str(data[0]), int(data[1]), str(data[2]), int(data[3]), int(data[4]), bool(data[5]),
                   tuple(GuardFailureRecord.from_list(f) for f in data[6]))


@dataclass(frozen=True)
class Proof:
    """The ground truth of one program on one torch.

    ``ran`` is False when the program failed for a reason of its own (an exception that is not
    the one ``fullgraph=True`` raises at the limit, a timeout): such a program proves nothing and
    is left out of every figure. ``error`` names the exception, if any; ``limit_error`` is True when
    ``fullgraph=True`` turned reaching the limit into an error.
    """

    key: str
    torch: str
    ran: bool
    codes: tuple[CodeRecord, ...] = ()
    error: str = ""
    limit_error: bool = False

    @property
    def tier(self) -> str:
        """``unbounded`` (a code object reached the limit), ``bounded`` (more than one graph),
        else ``negative``."""
        if self.limit_error or any(c.limit_hit for c in self.codes):
            return "unbounded"
        if any(c.graphs > 1 for c in self.codes):
            return "bounded"
        return "negative"

    def to_list(self) -> list[Any]:
        return [self.key, self.torch, int(self.ran), [c.to_list() for c in self.codes], self.error,
                int(self.limit_error)]

    @classmethod
    def from_list(cls, data: list[Any]) -> "Proof":
        return cls(str(data[0]), str(data[1]), bool(data[2]), tuple(CodeRecord.from_list(c) for c in data[3]),
                   str(data[4]), bool(data[5]))
