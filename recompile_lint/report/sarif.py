"""SARIF 2.1.0 output (``--format sarif``), the format GitHub code scanning uploads.

One run; ``tool.driver.rules`` is the whole catalogue (so ``ruleIndex`` is stable between
runs), results point at files by URIs relative to ``%SRCROOT%`` (the working directory of the
run), and file errors become ``invocations[0].toolExecutionNotifications``.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from recompile_lint import __version__
from recompile_lint.models import FileError, Finding, LintResult, Location, Severity

# The one place the project's public address is written down. Rule pages live in ``rules/``
# at the repository root, so a rule's help link is RULE_DOCS_BASE_URL + "RCL101.md".
PROJECT_URL = "https://github.com/recompile-lint/recompile-lint"
RULE_DOCS_BASE_URL = f"{PROJECT_URL}/blob/main/rules/"

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"

# SARIF has no "info" level; "note" is its name for a finding that is not a problem by itself.
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def rule_help_uri(code: str) -> str:
    """The address of a rule's documentation page."""
    return f"{RULE_DOCS_BASE_URL}{code}.md"


def _rule_descriptor(rule: Any) -> dict[str, Any]:
    from recompile_lint.report.pages import rule_page

    descriptor: dict[str, Any] = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary or rule.name},
        "fullDescription": {"text": inspect.cleandoc(rule.__doc__ or rule.summary or rule.name)},
        "helpUri": rule_help_uri(rule.code),
        "defaultConfiguration": {"level": LEVELS[rule.severity], "enabled": rule.severity is not Severity.INFO},
        "properties": {"bounded": rule.bounded.value, "tags": ["torch.compile", "performance"]},
    }
    page = rule_page(rule.code)
    if page:
        # Code scanning shows ``help`` beside an alert; the rule page is the fix a user needs.
        descriptor["help"] = {"text": f"{rule.summary}. See {rule_help_uri(rule.code)}", "markdown": page}
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


def _result(finding: Finding, rule_index: dict[str, int], base: Path) -> dict[str, Any]:
    location: dict[str, Any] = {
        "physicalLocation": {"artifactLocation": artifact_location(finding.path, base), "region": _region(finding)},
    }
    if finding.function:
        location["logicalLocations"] = [{"fullyQualifiedName": finding.function, "kind": "function"}]
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": LEVELS[finding.severity],
        "message": {"text": finding.message},
        "locations": [location],
        "properties": {"name": finding.name, "severity": finding.severity.value, "bounded": finding.bounded.value},
    }
    if finding.evidence:
        # The compile site, the write, and (for a finding reported where the change is) the
        # primary location: code scanning lists them beside the alert.
        result["relatedLocations"] = [_related(i, location, base) for i, location in enumerate(finding.evidence, start=1)]
    if finding.code in rule_index:
        result["ruleIndex"] = rule_index[finding.code]
    if finding.region:
        result["properties"]["region"] = finding.region
    return result


def _related(number: int, location: Location, base: Path) -> dict[str, Any]:
    from recompile_lint.report.text import ROLE_LABELS
    from recompile_lint.report.wording import note_of

    return {
        "id": number,
        "physicalLocation": {"artifactLocation": artifact_location(location.path, base), "region": _region(location)},
        "message": {"text": f"{ROLE_LABELS.get(location.role, location.role)}: {note_of(location)}"},
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
                "informationUri": PROJECT_URL,
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
        "results": [_result(f, rule_index, root) for f in result.findings],
    }
    return {"$schema": SARIF_SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


def format_sarif(result: LintResult) -> str:
    """The SARIF log as indented JSON text."""
    from recompile_lint.report.sanitize import safe_json

    return safe_json(json.dumps(build_sarif(result), indent=2, ensure_ascii=False)) + "\n"
