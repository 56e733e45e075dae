"""Value types shared by every stage: findings, file errors, severities and subjects."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(str, enum.Enum):
    """How bad a finding is; the order follows how much speed it costs."""

    ERROR = "error"  # reaches recompile_limit: the function ends up running eagerly
    WARNING = "warning"  # bounded, but each extra graph costs a compile
    INFO = "info"  # by design (global state); off unless selected

    def __str__(self) -> str:
        return self.value


class Boundedness(str, enum.Enum):
    """Whether a pattern reaches recompile_limit or costs a fixed number of graphs."""

    UNBOUNDED = "unbounded"
    BOUNDED = "bounded"
    BY_DESIGN = "by-design"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Subject:
    """What a finding blames, in terms the verifier can vary.

    ``kind`` is one of: ``global`` (module-level name), ``item`` (``container[key]``),
    ``attribute`` (``obj.attr`` on a module-level object or class), ``instance-attribute``
    (``self.attr`` of ``owner``), ``environ``, ``parameter`` (an argument; ``value_kind``
    ``tensor`` for size-driven rules), ``length`` (a container's length), ``rank``,
    ``callable`` (the functions seen are in ``examples``), ``closure`` (a loop variable captured
    by a function compiled in the loop), ``graph-break`` (``name`` is the function), ``state``
    (``training``, ``grad_mode``, ``autocast``, ``default_dtype``), ``config`` (``backend`` or a
    limit name).
    """

    kind: str
    module: str = ""  # dotted module that holds the value (or the region's module)
    name: str = ""  # the global, parameter, or attribute name
    key: str = ""  # dict key or attribute for item/attribute subjects
    owner: str = ""  # qualified class name for instance attributes
    value_kind: str = ""  # int, str, float, bool, list, dict, ...
    # Concrete values seen in the source (call-site literals, initialisers), as source text.
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class Guard:
    """A guard Dynamo installs, as Dynamo spells it.

    ``kind``: ``CONSTANT_MATCH`` (a Python scalar's value), ``ID_MATCH`` (an object's or a
    function's identity), ``TYPE_MATCH``, ``LENGTH_CHECK`` (a container's length),
    ``DICT_KEYS``, ``TENSOR_MATCH`` (a tensor's rank, sizes, dtype or ``requires_grad``:
    ``detail`` says which), ``GLOBAL_STATE`` (grad mode, autocast, default dtype: ``detail``),
    ``BACKEND_MATCH``. ``source`` is the guarded value in Dynamo's spelling: ``G['step']``,
    ``G['__import_pkg_dot_mod'].X``, ``L['self'].step``, ``len(L['xs'])``, ``L['x']``.
    ``then``: the guards a later value fails once Dynamo has made this one symbolic (a split's
    chunk count, ``L['t'].size()[0]``; the sizes a resume function's stack input takes,
    ``L['___stack0']``), in the order they fail.
    """

    kind: str
    source: str
    detail: str = ""
    then: tuple[tuple[str, str, str], ...] = ()  # (kind, source, detail) of each

    def chain(self) -> tuple["Guard", ...]:
        """This guard, then each guard that fails after it."""
        return (self, *(Guard(kind, source, detail) for kind, source, detail in self.then))

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"kind": self.kind, "source": self.source, "detail": self.detail}
        if self.then:
            data["then"] = [guard.to_dict() for guard in self.chain()[1:]]
        return data


# Roles of a finding's locations: where the compiled object is made, where compiled code reads
# the guarded value, the line Dynamo names when the guard fails (its first use in the trace),
# where the value is changed, and the call that passes a varying value or runs the change.
# ``primary`` is where a whole-project run reports the finding: it appears only on a finding
# reported at another of its locations because the named files hold that one (pre-commit).
LOCATION_ROLES = ("compile-site", "read", "use", "write", "call", "primary")


@dataclass(frozen=True)
class Location:
    """One place a finding involves, with its role and a note worded from that place."""

    path: str
    line: int
    column: int
    role: str
    note: str = ""
    end_line: int = 0
    end_column: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line or self.line,
            "end_column": self.end_column or self.column,
            "role": self.role,
            "note": self.note,
        }


@dataclass(frozen=True, order=True)
class Finding:
    """One reported problem. Lines and columns are 1-based, as in the CLI output."""

    path: str
    line: int
    column: int
    code: str
    end_line: int = field(compare=False)
    end_column: int = field(compare=False)
    name: str = field(compare=False)
    severity: Severity = field(compare=False)
    bounded: Boundedness = field(compare=False)
    message: str = field(compare=False)
    # Qualified name (``module.func``) of the compiled entry point that reaches the line.
    region: str = field(compare=False, default="")
    # Qualified name of the function the line is in (the region itself or an inlined callee).
    function: str = field(compare=False, default="")
    subject: Subject | None = field(compare=False, default=None)
    # The guard whose failures the finding predicts (None where no single guard is blamed).
    guard: Guard | None = field(compare=False, default=None)
    # The other places involved: the compile site, the write or call that changes the value.
    evidence: tuple[Location, ...] = field(compare=False, default=())
    # ``message`` in three parts: a headline of what is wrong (about 100 characters), why it
    # recompiles and how much, and the fix. Empty where the message could not be split.
    title: str = field(compare=False, default="")
    explanation: str = field(compare=False, default="")
    fix: str = field(compare=False, default="")

    @property
    def primary(self) -> Location | None:
        """Where a whole-project run reports this finding, when it is reported elsewhere."""
        return next((location for location in self.evidence if location.role == "primary"), None)

    def to_dict(self) -> dict[str, object]:
        """The stable JSON shape of a finding (documented in the README)."""
        data: dict[str, object] = {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "bounded": self.bounded.value,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "message": self.message,
            "title": self.title or self.message,
            "explanation": self.explanation,
            "fix": self.fix,
            "region": self.region,
            "function": self.function,
        }
        if self.subject is not None:
            data["subject"] = {
                "kind": self.subject.kind,
                "module": self.subject.module,
                "name": self.subject.name,
                "key": self.subject.key,
                "owner": self.subject.owner,
                "value_kind": self.subject.value_kind,
                "examples": list(self.subject.examples),
            }
        data["guard"] = self.guard.to_dict() if self.guard is not None else None
        data["evidence"] = [location.to_dict() for location in self.evidence]
        return data


@dataclass(frozen=True, order=True)
class FileError:
    """A file that could not be linted, with the reason in words a user can act on."""

    path: str
    message: str
    line: int = 0
    column: int = 0


@dataclass(frozen=True)
class LintResult:
    """Everything a lint run produced: sorted findings and sorted file errors."""

    findings: tuple[Finding, ...]
    errors: tuple[FileError, ...]
    files_checked: int
    suppressed: int = 0
    excluded: int = 0  # files named explicitly but matching an exclude pattern
    # Compile sites of the checked files that resolved to nothing: their code was not analysed
    # (``recompile-lint regions`` lists them with the reason).
    sites_not_analysed: int = 0
