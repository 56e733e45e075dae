"""Values the verifier produces: recorded recompiles, limit hits and per-finding verdicts.

Everything here is plain data that crosses the process boundary as JSON, so each type has a
``to_dict`` and a ``from_dict``. Nothing here imports torch.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping

from recompile_lint.models import Finding


class Verdict(str, enum.Enum):
    """What running a compiled probe said about a finding."""

    CONFIRMED = "confirmed"  # recompiles observed, blamed on what the finding names
    NOT_REPRODUCED = "not-reproduced"  # compiled once, or the guards blame something else
    UNVERIFIABLE = "unverifiable"  # no probe could run; ``detail`` says why
    NOT_EXERCISED = "not-exercised"  # the region never compiled (the run or probe never reached it)

    def __str__(self) -> str:
        return self.value


class Family(str, enum.Enum):
    """The cause a guard-failure reason points at."""

    CONSTANT = "constant"  # a Python value baked into the graph: ``G['step'] == 1``
    SHAPE = "shape"  # rank, size, stride, container length
    GLOBAL_STATE = "global-state"  # grad mode, autocast, default dtype
    IDENTITY = "identity"  # a different function, object or backend
    TYPE = "type"  # type, dtype, device, requires_grad, aliasing
    OTHER = "other"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class GuardFailure:
    """One failing guard of one cache entry, as Dynamo reported it."""

    guard: str  # the guard expression: ``G['step'] == 0``
    family: Family
    entry: str = ""  # compile id of the cache entry whose guard failed: ``0/0``
    source: str = ""  # the source line that created the guard
    file: str = ""  # full path where known (Dynamo shortens the one in the comment)
    line: int = 0
    function: str = ""  # function holding the line (a helper's name when inlined)

    def location(self) -> str:
        """``file:line in function``, or an empty string when the guard has no source."""
        if not self.file:
            return ""
        where = f"{self.file}:{self.line}"
        return f"{where} in {self.function}" if self.function else where

    def describe(self) -> str:
        """One line for reports: the guard, then the line it points at."""
        where = self.location()
        return f"{self.guard}  ({where}: {self.source})" if where and self.source else (
            f"{self.guard}  ({where})" if where else self.guard
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "guard": self.guard,
            "family": self.family.value,
            "entry": self.entry,
            "source": self.source,
            "file": self.file,
            "line": self.line,
            "function": self.function,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "GuardFailure":
        return cls(
            guard=str(data.get("guard", "")),
            family=Family(data.get("family", "other")),
            entry=str(data.get("entry", "")),
            source=str(data.get("source", "")),
            file=str(data.get("file", "")),
            line=int(data.get("line", 0)),
            function=str(data.get("function", "")),
        )


@dataclass(frozen=True)
class RecompileEvent:
    """Dynamo compiled another graph for a code object that already had one."""

    function: str
    file: str
    first_line: int
    compile_id: str = ""
    reasons: tuple[GuardFailure, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "file": self.file,
            "first_line": self.first_line,
            "compile_id": self.compile_id,
            "reasons": [r.to_dict() for r in self.reasons],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RecompileEvent":
        return cls(
            function=str(data.get("function", "")),
            file=str(data.get("file", "")),
            first_line=int(data.get("first_line", 0)),
            compile_id=str(data.get("compile_id", "")),
            reasons=tuple(GuardFailure.from_dict(r) for r in data.get("reasons", ())),
        )


@dataclass(frozen=True)
class LimitHit:
    """A code object reached ``recompile_limit``: new values run eagerly from here on."""

    limit_type: str
    limit_value: int
    function: str
    file: str
    first_line: int
    last_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "limit_type": self.limit_type,
            "limit_value": self.limit_value,
            "function": self.function,
            "file": self.file,
            "first_line": self.first_line,
            "last_reason": self.last_reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "LimitHit":
        return cls(
            limit_type=str(data.get("limit_type", "")),
            limit_value=int(data.get("limit_value", 0)),
            function=str(data.get("function", "")),
            file=str(data.get("file", "")),
            first_line=int(data.get("first_line", 0)),
            last_reason=str(data.get("last_reason", "")),
        )


@dataclass(frozen=True)
class Verification:
    """The verdict for one finding and the evidence behind it."""

    verdict: Verdict
    graphs: int = 0
    recompiles: int = 0
    limit_hit: bool = False
    reasons: tuple[str, ...] = ()
    detail: str = ""
    # How the probe reached the region: "probe" (synthesized call), "examples" (user-declared
    # inputs), "main()" / "run()" (the module's own entry point), "run" (run mode).
    method: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "graphs": self.graphs,
            "recompiles": self.recompiles,
            "limit_hit": self.limit_hit,
            "reasons": list(self.reasons),
            "detail": self.detail,
            "method": self.method,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Verification":
        return cls(
            verdict=Verdict(data.get("verdict", "unverifiable")),
            graphs=int(data.get("graphs", 0)),
            recompiles=int(data.get("recompiles", 0)),
            limit_hit=bool(data.get("limit_hit", False)),
            reasons=tuple(str(r) for r in data.get("reasons", ())),
            detail=str(data.get("detail", "")),
            method=str(data.get("method", "")),
        )


def unverifiable(detail: str, method: str = "") -> Verification:
    """A verdict that says why no probe could run."""
    return Verification(verdict=Verdict.UNVERIFIABLE, detail=detail, method=method)


@dataclass(frozen=True)
class VerifiedFinding:
    """A static finding with the verifier's verdict attached."""

    finding: Finding
    verification: Verification

    def to_dict(self) -> dict[str, Any]:
        data = self.finding.to_dict()
        data["verification"] = self.verification.to_dict()
        return data


@dataclass(frozen=True)
class RunReport:
    """Run mode: what the user's own program did under the recorder."""

    command: tuple[str, ...]
    exit_code: int | None  # the program's exit status; None when it never finished
    findings: tuple[VerifiedFinding, ...]
    unpredicted: tuple[RecompileEvent, ...]
    limit_hits: tuple[LimitHit, ...] = ()
    detail: str = ""  # why the run stopped early, when it did
    graphs: tuple[tuple[str, int], ...] = field(default=())  # "file:line function" -> graphs
    events: tuple[RecompileEvent, ...] = ()  # every recompile the run recorded, in order
    timed_out: bool = False  # the program ran past the timeout and was stopped

    def to_dict(self) -> dict[str, Any]:
        # Fields are only ever added here: other tools read this JSON.
        return {
            "command": list(self.command),
            "exit_code": self.exit_code,
            "detail": self.detail,
            "findings": [f.to_dict() for f in self.findings],
            "unpredicted": [e.to_dict() for e in self.unpredicted],
            "limit_hits": [h.to_dict() for h in self.limit_hits],
            "graphs": {key: count for key, count in self.graphs},
            "events": [e.to_dict() for e in self.events],
            "timed_out": self.timed_out,
        }
