"""Rule codes and code patterns (``RCL``, ``RCL1``, ``RCL101``), known without importing the
rules: settings are checked and a run answered from the cache needs no rule (nor libcst)."""

from __future__ import annotations

__all__ = ["CODES", "matches_code", "validate_codes"]

# Every rule code. A test keeps it equal to the codes of ``rules.all_rules()``.
CODES = (
    "RCL101", "RCL102", "RCL103", "RCL104", "RCL105", "RCL106", "RCL107", "RCL108",
    "RCL201", "RCL202", "RCL203", "RCL204", "RCL205", "RCL206",
    "RCL301", "RCL302", "RCL303",
    "RCL401", "RCL402", "RCL403", "RCL404",
    "RCL901",
)  # fmt: skip


def matches_code(code: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``code`` equals or starts with one of ``patterns`` (``RCL``, ``RCL1``, ``RCL101``)."""
    return any(code.startswith(p.strip().upper()) for p in patterns if p.strip())


def validate_codes(patterns: tuple[str, ...]) -> list[str]:
    """The patterns that match no rule code (``ALL`` matches every code)."""
    codes = CODES
    bad = []
    for pattern in patterns:
        p = pattern.strip().upper()
        if p == "ALL":
            continue
        if not p or not any(code.startswith(p) for code in codes):
            bad.append(pattern)
    return bad
