"""The rule catalogue: every ``Rule`` subclass defined in a module of this package.

Rules register themselves by being defined here; there is no hand-kept list to forget.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from recompile_lint.codes import CODES, matches_code, validate_codes
from recompile_lint.rules.base import Rule

__all__ = ["Rule", "all_rules", "rule_by_code", "validate_codes", "matches_code", "CODES"]


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
