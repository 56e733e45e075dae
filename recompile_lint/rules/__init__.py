"""The rule catalogue: every ``Rule`` subclass defined in a module of this package.

Rules register themselves by being defined here; there is no hand-kept list to forget.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from recompile_lint.rules.base import Rule

__all__ = ["Rule", "all_rules", "rule_by_code", "validate_codes", "matches_code", "CODES"]

# Every rule code, so that settings can be checked without importing the rule modules (and
# libcst with them): a run answered from the cache needs no rule. A test keeps it equal to
# the codes of ``all_rules()``.
CODES = (
    "RCL101", "RCL102", "RCL103", "RCL104", "RCL105", "RCL106", "RCL107", "RCL108",
    "RCL201", "RCL202", "RCL203", "RCL204", "RCL205", "RCL206",
    "RCL301", "RCL302", "RCL303",
    "RCL401", "RCL402", "RCL403", "RCL404",
    "RCL901",
)  # fmt: skip


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class, sorted by code."""
    for info in pkgutil.iter_modules(__path__):
        if info.name != "base" and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    found: dict[str, type[Rule]] = {}
    stack = list(Rule.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if getattr(cls, "code", ""):
            if cls.code in found and found[cls.code] is not cls:
                raise RuntimeError(f"rule code {cls.code} is defined twice")
            found[cls.code] = cls
    return tuple(found[code] for code in sorted(found))


def rule_by_code(code: str) -> type[Rule] | None:
    code = code.strip().upper()
    for rule in all_rules():
        if rule.code == code:
            return rule
    return None


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
