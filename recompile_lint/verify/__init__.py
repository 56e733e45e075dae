"""The dynamic verifier: confirm findings by running compiled probes in child processes.

Importing this package never imports torch; only the processes it starts do (``supervisor``,
``child``), and the recorder imports it when entered. Stages: ``targets`` (finding -> module
to import), ``runner`` (lanes, run directory, orphan sweep; in the verify process),
``supervisor`` (one per lane: imports torch once, runs each job in a contained child) with
``procs`` (subreaper, process tree) and ``boot`` (command lines), ``child`` (import, locate,
synthesize arguments, probe), ``probes`` (what to vary per rule code), ``recorder`` +
``reasons`` (capture and read recompiles), ``verdicts`` / ``matcher`` (evidence -> verdict),
``report``; ``pytest_plugin`` records a pytest run's recompiles in pytest's own process and
holds each test to a recompile budget.
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
