"""The dynamic verifier: confirm findings by running compiled probes in child processes.

Importing this package never imports torch; only the child processes do (``child``), and the
recorder imports it when entered. Stages: ``targets`` (finding -> module to import),
``runner`` (child process with timeout and cleanup), ``child`` (import, locate, synthesize
arguments, probe), ``probes`` (what to vary per rule code), ``recorder`` + ``reasons``
(capture and read recompiles), ``verdicts`` / ``matcher`` (evidence -> verdict), ``report``.
"""

from recompile_lint.verify.results import (
    Family,
    GuardFailure,
    LimitHit,
    RecompileEvent,
    RunReport,
    Verdict,
    Verification,
    VerifiedFinding,
)

__all__ = [
    "Family",
    "GuardFailure",
    "LimitHit",
    "RecompileEvent",
    "RunReport",
    "Verdict",
    "Verification",
    "VerifiedFinding",
]
