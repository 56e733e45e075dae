"""Read the verifier's JSON: ``verify --run ... --format json`` (an object) or ``verify --format
json`` (an array of findings with their ``verification``).

A run report holds ``events``, every recompile the run recorded (older reports only
``unpredicted`` and, per confirmed finding, its guard lines); a probe report holds the guard
lines of each finding's probe. Guard lines read ``G['step'] == 0  (/src/train.py:14 in poly:
return x * step)``.
"""

from __future__ import annotations

import re
from typing import Any

from recompile_lint.explain.evidence import Evidence, ExplainInputError
from recompile_lint.verify.reasons import classify
from recompile_lint.verify.results import GuardFailure, LimitHit, RecompileEvent

_DESCRIBED = re.compile(r"^(?P<guard>.*?)  \((?P<file>.+?):(?P<line>\d+)(?: in (?P<fn>[^:]+))?(?:: (?P<src>.*))?\)$")


def described_failure(text: str) -> GuardFailure:
    """A ``GuardFailure.describe()`` line read back."""
    match = _DESCRIBED.match(text.strip())
    if match is None:
        guard = text.strip()
        return GuardFailure(guard, classify(guard))
    guard = match["guard"].strip()
    return GuardFailure(guard, classify(guard), "", (match["src"] or "").strip(), match["file"],
                        int(match["line"]), (match["fn"] or "").strip())


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _events_from_findings(items: list[Any], warnings: list[str]) -> list[RecompileEvent]:
    """One event per confirmed finding, from the guard lines its verification kept."""
    events = []
    for item in items:
        if not isinstance(item, dict):
            continue
        verification = item.get("verification")
        if not isinstance(verification, dict) or verification.get("verdict") != "confirmed":
            continue
        reasons = tuple(described_failure(str(r)) for r in verification.get("reasons", ()) if str(r).strip())
        if not reasons:
            continue
        region = str(item.get("region") or item.get("function") or "")
        first = next((r for r in reasons if r.file), None)
        events.append(RecompileEvent(_short(region) or (first.function if first else ""),
                                     first.file if first else str(item.get("path", "")), 0, "", reasons))
    if events:
        warnings.append("verifier JSON without recorded events: each confirmed finding's guard lines stand "
                        "for its recompiles (counts are not exact)")
    return events


def read_verify_json(data: Any) -> Evidence:
    """The recompiles a verifier report holds."""
    warnings: list[str] = []
    try:
        if isinstance(data, list):
            events = _events_from_findings(data, warnings)
            return Evidence("verify-json", tuple(events), warnings=tuple(warnings), records=len(data))
        if not isinstance(data, dict) or not ({"findings", "unpredicted", "events"} & set(data)):
            raise ExplainInputError("this JSON is not a report of `recompile-lint verify`")
        hits = tuple(LimitHit.from_dict(h) for h in data.get("limit_hits", ()) if isinstance(h, dict))
        if isinstance(data.get("events"), list):
            events = [RecompileEvent.from_dict(e) for e in data["events"] if isinstance(e, dict)]
        else:
            events = [RecompileEvent.from_dict(e) for e in data.get("unpredicted", ()) if isinstance(e, dict)]
            events.extend(_events_from_findings(list(data.get("findings", ())), warnings))
        graphs = data.get("graphs") if isinstance(data.get("graphs"), dict) else {}
        compiles = []
        for key, count in graphs.items():
            match = re.match(r"^(?P<file>.+):(?P<line>\d+) (?P<name>\S+)$", str(key))
            if match and isinstance(count, int):
                compiles.append(((match["file"], int(match["line"]), match["name"]), count))
        return Evidence("verify-json", tuple(events), hits, compiles=tuple(sorted(compiles)),
                        channels=("verify",), warnings=tuple(warnings), records=len(events) + len(hits) + 1)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise ExplainInputError(f"the verifier JSON has an unexpected shape ({type(exc).__name__}: {exc})") from exc
