"""SARIF 2.1.0 output (``--format sarif``), the format GitHub code scanning uploads.

One run; ``tool.driver.rules`` is the whole catalogue (so ``ruleIndex`` is stable between
runs), results point at files by URIs relative to ``%SRCROOT%`` (the working directory of the
run), and file errors become ``invocations[0].toolExecutionNotifications``.

Each rule's page (``recompile-lint rule CODE``, read from the installed package) is its
``help``, as markdown and as text, so a viewer shows the fix with no link to follow. There is
no ``helpUri``: SARIF wants an absolute address there and none serves the pages.

A result's message links its related locations (the compile site, the write) in SARIF's
``[text](id)`` form, each ``id`` one of ``relatedLocations``; the message's literal brackets
are escaped (``\\[``, ``\\]``; a backslash just before one is doubled).

``partialFingerprints`` has one key, ``recompileLint/v1``: the first 32 hex digits of the
SHA-256 of the rule code, the file's path relative to ``%SRCROOT%``, the region (the compiled
entry point that reaches the line) and the reported line's source with its ends stripped and
each run of blanks made one space, then ``:N``, N being 1 plus the number of earlier results
of the run with the same hash. No line or column number goes in, so code scanning follows a
finding through commits that move it; editing that line, renaming the region or moving the
file makes it a new finding.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from recompile_lint import __version__
from recompile_lint.models import FileError, Finding, LintResult, Location, Severity

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"

# SARIF has no "info" level; "note" is its name for a finding that is not a problem by itself.
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


# The key of the fingerprint in ``partialFingerprints`` (the module's docstring says what it
# hashes); the version changes when the scheme does.
FINGERPRINT_KEY = "recompileLint/v1"


def rule_help_uri(code: str) -> str:
    """Where a rule's page is on this machine, as a ``file:`` URI (the language server's
    link; SARIF embeds the page instead)."""
    from recompile_lint.report.pages import rule_page_uri

    return rule_page_uri(code) or ""


def _rule_descriptor(rule: Any) -> dict[str, Any]:
    from recompile_lint.report.pages import rule_page

    descriptor: dict[str, Any] = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary or rule.name},
        "fullDescription": {"text": inspect.cleandoc(rule.__doc__ or rule.summary or rule.name)},
        "defaultConfiguration": {"level": LEVELS[rule.severity], "enabled": rule.severity is not Severity.INFO},
        "properties": {"bounded": rule.bounded.value, "tags": ["torch.compile", "performance"]},
    }
    page = rule_page(rule.code)
    if page:
        # Code scanning shows ``help`` beside an alert: the whole page, which says the fix.
        descriptor["help"] = {"text": page, "markdown": page}
    return descriptor


def artifact_location(path: str, base: Path) -> dict[str, Any]:
    """A file URI: relative to ``%SRCROOT%`` when the file is under ``base``, else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(base)
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": quote(PurePosixPath(*relative.parts).as_posix()), "uriBaseId": SRCROOT}


def _region(finding: Finding | Location) -> dict[str, int]:
    region = {"startLine": max(finding.line, 1), "startColumn": max(finding.column, 1)}
    end_line, end_column = finding.end_line, finding.end_column
    # SARIF's endColumn is the column after the region, as ours is; an empty or inverted span
    # would be invalid, so it is left out and the consumer highlights the start.
    if end_line >= region["startLine"] and end_column >= 1 and (end_line, end_column) > (region["startLine"], region["startColumn"]):
        region["endLine"] = end_line
        region["endColumn"] = end_column
    return region


def escape_message(text: str) -> str:
    """Message text with its literal brackets escaped (``\\[``, ``\\]``), and the backslashes
    just before one doubled, so that only our ``[text](id)`` links read as links."""
    return re.sub(r"(\\*)([\[\]])", lambda match: match.group(1) * 2 + "\\" + match.group(2), text)


def _result(finding: Finding, rule_index: dict[str, int], base: Path) -> dict[str, Any]:
    location: dict[str, Any] = {
        "physicalLocation": {"artifactLocation": artifact_location(finding.path, base), "region": _region(finding)},
    }
    if finding.function:
        location["logicalLocations"] = [{"fullyQualifiedName": finding.function, "kind": "function"}]
    text = escape_message(finding.message)
    related = [_related(i, evidence, base) for i, evidence in enumerate(finding.evidence, start=1)]
    if related:
        # The compile site, the write, and (for a finding reported where the change is) the
        # primary location: linked from the message, listed beside the alert.
        links = ", ".join(f"[{escape_message(_link_text(evidence, base))}]({i})" for i, evidence in enumerate(finding.evidence, start=1))
        text = f"{text} ({links})"
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": LEVELS[finding.severity],
        "message": {"text": text},
        "locations": [location],
        "properties": {"name": finding.name, "severity": finding.severity.value, "bounded": finding.bounded.value},
    }
    if related:
        result["relatedLocations"] = related
    if finding.code in rule_index:
        result["ruleIndex"] = rule_index[finding.code]
    if finding.region:
        result["properties"]["region"] = finding.region
    return result


def _link_text(location: Location, base: Path) -> str:
    """``changed at train.py:14``: what a link in a result's message says."""
    from recompile_lint.report.text import ROLE_LABELS

    return f"{ROLE_LABELS.get(location.role, location.role)} at {_relative(location.path, base)}:{location.line}"


def _relative(path: str, base: Path) -> str:
    """A path relative to ``base`` when under it (POSIX), else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        return PurePosixPath(*absolute.relative_to(base).parts).as_posix()
    except ValueError:
        return absolute.as_posix()


def fingerprint(finding: Finding, base: Path, line: str | None) -> str:
    """The hash of ``FINGERPRINT_KEY`` (without its occurrence number): rule, relative path,
    region and the normalised source ``line`` (empty when the file cannot be read)."""
    normalised = " ".join((line or "").split())
    key = "\0".join((finding.code, _relative(finding.path, base), finding.region, normalised))
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _results(findings: tuple[Finding, ...], rule_index: dict[str, int], base: Path) -> list[dict[str, Any]]:
    """The results, each with its ``partialFingerprints``; equal hashes are numbered in order."""
    from recompile_lint.report.text import SourceLines

    lines = SourceLines()
    seen: dict[str, int] = {}
    results = []
    for finding in findings:
        result = _result(finding, rule_index, base)
        digest = fingerprint(finding, base, lines.line(finding.path, finding.line))
        seen[digest] = seen.get(digest, 0) + 1
        result["partialFingerprints"] = {FINGERPRINT_KEY: f"{digest}:{seen[digest]}"}
        results.append(result)
    return results


def _related(number: int, location: Location, base: Path) -> dict[str, Any]:
    from recompile_lint.report.text import ROLE_LABELS
    from recompile_lint.report.wording import note_of

    return {
        "id": number,
        "physicalLocation": {"artifactLocation": artifact_location(location.path, base), "region": _region(location)},
        "message": {"text": escape_message(f"{ROLE_LABELS.get(location.role, location.role)}: {note_of(location)}")},
    }


def _notification(error: FileError, base: Path) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": artifact_location(error.path, base)}
    if error.line > 0:
        physical["region"] = {"startLine": error.line, "startColumn": max(error.column, 1)}
    return {
        "level": "error",
        "message": {"text": f"{error.path}: {error.message}"},
        "locations": [{"physicalLocation": physical}],
        "descriptor": {"id": "E999" if error.line else "E902"},
    }


def _not_analysed(result: LintResult) -> list[dict[str, Any]]:
    """A warning notification for the compile sites the findings do not cover."""
    if not result.sites_not_analysed:
        return []
    from recompile_lint.report.text import sites_not_analysed

    return [{"level": "warning", "message": {"text": sites_not_analysed(result.sites_not_analysed)}, "descriptor": {"id": "sites-not-analysed"}}]


def build_sarif(result: LintResult, base: str | Path | None = None) -> dict[str, Any]:
    """The SARIF log as a dict; ``base`` is the directory ``%SRCROOT%`` stands for (default: cwd)."""
    from recompile_lint.rules import all_rules

    root = Path(os.path.abspath(base if base is not None else os.getcwd()))
    rules = list(all_rules())
    rule_index = {rule.code: i for i, rule in enumerate(rules)}
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "recompile-lint",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [_rule_descriptor(rule) for rule in rules],
            }
        },
        "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri().rstrip("/") + "/"}},
        "invocations": [
            {
                "executionSuccessful": not result.errors,
                "toolExecutionNotifications": [_notification(e, root) for e in result.errors] + _not_analysed(result),
            }
        ],
        # Our columns count characters, not UTF-16 code units (SARIF's default).
        "columnKind": "unicodeCodePoints",
        "results": _results(result.findings, rule_index, root),
    }
    return {"$schema": SARIF_SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


def format_sarif(result: LintResult) -> str:
    """The SARIF log as indented JSON text."""
    from recompile_lint.report.sanitize import safe_json

    return safe_json(json.dumps(build_sarif(result), indent=2, ensure_ascii=False)) + "\n"
