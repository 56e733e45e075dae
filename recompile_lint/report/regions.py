"""``recompile-lint regions``: every compile site, what it compiles, as text or JSON.

The formatters take resolved sites (``analysis.regions.SiteResolution``) and the display
facts the command looked up for them (``SiteView``); they analyse nothing. The JSON schema is
documented in docs/regions.md and versioned by its ``version`` field.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from recompile_lint.analysis.regions import REASON_ACTIONS, SiteResolution
from recompile_lint.report.sanitize import escape_path

JSON_VERSION = 1


@dataclass(frozen=True)
class FunctionView:
    """A function a region reaches, as shown: qualified name, file, ``def`` line, depth."""

    name: str
    path: str
    line: int
    depth: int


@dataclass(frozen=True)
class SiteView:
    """A resolved site with what the report shows of it: its file as the user named it, the
    compiled expression as written, and per project region the functions it reaches."""

    resolution: SiteResolution
    path: str
    source: str
    reached: tuple[tuple[FunctionView, ...], ...]  # parallel to resolution.regions


def format_regions(views: Sequence[SiteView], output_format: str = "text", verbose: bool = False) -> str:
    """The report in ``text`` or ``json``."""
    if output_format == "json":
        return format_json(views)
    return format_text(views, verbose)


def _depth(reached: tuple[FunctionView, ...]) -> int:
    return max((f.depth for f in reached), default=0)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def format_text(views: Sequence[SiteView], verbose: bool = False) -> str:
    """One line per compile site (with ``verbose``, the functions each region reaches below
    it), then a summary."""
    lines: list[str] = []
    for view in views:
        resolution = view.resolution
        span = resolution.site.span
        where = f"{view.path}:{span.line}:{span.column}"
        if resolution.reason == "not-torch":
            lines.append(f"{where}: {view.source} -> not a compile site ({resolution.detail or 'not an nn.Module'})")
            continue
        if not resolution.resolved:
            detail = f": {resolution.detail}" if resolution.detail else ""
            action = REASON_ACTIONS.get(resolution.reason, "")
            lines.append(f"{where}: {view.source} -> unresolved ({resolution.reason}{detail})" + (f"; {action}" if action else ""))
            continue
        parts: list[str] = []
        for region, reached in zip(resolution.regions, view.reached):
            text = f"{region.form} {region.name}"
            if region.model_class:
                text += f" [{region.model_class}]"
            if region.container:
                text += f" from {region.container}"
            text += f" ({_plural(len(reached), 'function')}, depth {_depth(reached)})"
            parts.append(text)
        for library in resolution.library:
            text = f"{library.form} {library.entry.name}: {library.ref}"
            if library.model_class and library.model_class != library.ref:
                text += f" [{library.model_class}]"
            if library.container:
                text += f" from {library.container}"
            parts.append(text)
        lines.append(f"{where}: {view.source} -> " + "; ".join(parts))
        if verbose:
            for region, reached in zip(resolution.regions, view.reached):
                lines.append(f"    {region.name}:")
                for function in reached:
                    lines.append(f"      {'  ' * function.depth}{function.name}  {function.path}:{function.line}  depth {function.depth}")
            for library in resolution.library:
                for guard in library.entry.guards:
                    lines.append(f"    guards {guard.subject}: {guard.guard} `{guard.source}` ({guard.bounded}; measured: {guard.graphs} graph(s) over 10 changing calls)")
    summary = summarise(views)
    text = f"{_plural(summary['sites'], 'compile site')}: {summary['resolved']} resolved ({summary['project']} to project code, {summary['library']} to torch library entries)"
    if summary["unresolved"]:
        reasons = ", ".join(f"{reason} {count}" for reason, count in summary["unresolved"].items())
        text += f", {sum(summary['unresolved'].values())} unresolved ({reasons})"
    if summary["not_torch"]:
        text += f"; {_plural(summary['not_torch'], '.compile() call')} on something that is not an nn.Module"
    lines.append(text + ".")
    # Paths, expressions and names are repository text; none of this module's own text holds a
    # control character, so each line is escaped whole (``sanitize``).
    return "\n".join(escape_path(line) for line in lines) + "\n"


def summarise(views: Sequence[SiteView]) -> dict:
    """Counts: sites (``.compile()`` of non-modules apart), resolved to project code or only
    to library entries, unresolved by reason (most frequent first)."""
    counted = [v.resolution for v in views if v.resolution.reason != "not-torch"]
    reasons = Counter(r.reason for r in counted if not r.resolved)
    return {
        "sites": len(counted),
        "resolved": sum(1 for r in counted if r.resolved),
        "project": sum(1 for r in counted if r.regions),
        "library": sum(1 for r in counted if r.library and not r.regions),
        "unresolved": dict(sorted(reasons.items(), key=lambda item: (-item[1], item[0]))),
        "not_torch": len(views) - len(counted),
    }


def format_json(views: Sequence[SiteView]) -> str:
    """``{"version", "sites": [...], "summary": {...}}`` (schema in docs/regions.md)."""
    sites = []
    for view in views:
        resolution = view.resolution
        site = resolution.site
        span = site.span
        sites.append(
            {
                "path": view.path,
                "line": span.line,
                "column": span.column,
                "end_line": span.end_line,
                "end_column": span.end_column,
                "site": site.form,
                "source": view.source,
                "function": site.function,
                "compile_site": resolution.reason != "not-torch",
                "wrapper_body": resolution.wrapper_body,
                "resolved": resolution.resolved,
                "forms": list(resolution.forms),
                "regions": [
                    {
                        "entry": region.name,
                        "form": region.form,
                        "class": region.model_class,
                        "container": region.container,
                        "path": reached[0].path if reached else "",
                        "line": reached[0].line if reached else 0,
                        "depth": _depth(reached),
                        "reached": [{"function": f.name, "path": f.path, "line": f.line, "depth": f.depth} for f in reached],
                    }
                    for region, reached in zip(resolution.regions, view.reached)
                ],
                "library": [
                    {
                        "entry": library.entry.name,
                        "compiled": library.ref,
                        "form": library.form,
                        "class": library.model_class,
                        "container": library.container,
                        "guards": [
                            {
                                "subject": g.subject,
                                "guard": g.guard,
                                "source": g.source,
                                "value_kind": g.value_kind,
                                "bounded": g.bounded,
                                "graphs": g.graphs,
                            }
                            for g in library.entry.guards
                        ],
                    }
                    for library in resolution.library
                ],
                "reason": resolution.reason or None,
                "detail": resolution.detail,
                "action": REASON_ACTIONS.get(resolution.reason, "") if not resolution.resolved else "",
            }
        )
    from recompile_lint.report.sanitize import safe_json

    return safe_json(json.dumps({"version": JSON_VERSION, "sites": sites, "summary": summarise(views)}, indent=2)) + "\n"
