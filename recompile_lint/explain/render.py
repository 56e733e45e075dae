"""Render an ``Explanation`` as text, JSON or one self-contained HTML page (no analysis here).

Everything that came from the log, a verifier's JSON or the linted files is untrusted: the
text format shows control characters, bidi overrides and newlines as visible escapes on every
line it prints (``report.sanitize``: a log must not drive the terminal nor forge a line), the
HTML page escapes every string for HTML and the same characters as in the text, and loads
nothing.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from recompile_lint.explain.match import Explanation, FunctionRecompiles, GuardGroup, Match
from recompile_lint.report.sanitize import escape, escape_path, safe_json


def clean(text: object) -> str:
    """``text`` with control characters, bidi overrides and newlines shown as escapes."""
    return escape(text)


def _where(file: str, line: int, function: str = "") -> str:
    place = f"{file}:{line}" if line else file
    return f"{place} in {function}" if function else place


def _limit_text(func: FunctionRecompiles) -> str:
    if func.limit is None:
        return ""
    value = f" ({func.limit.limit_value})" if func.limit.limit_value else ""
    return f"reached {func.limit.limit_type}{value}: new values run eagerly from here on"


def _function_summary(func: FunctionRecompiles) -> str:
    parts = [f"{func.recompiles} recompile(s)"]
    if func.graphs is not None:
        parts.append(f"{func.graphs} graph(s)")
    if func.refused:
        parts.append(f"{func.refused} refused by the limit")
    limit = _limit_text(func)
    if limit:
        parts.append(limit)
    return ", ".join(parts)


def _values(group: GuardGroup) -> str:
    if group.distinct <= 4:
        return " | ".join(group.guards)
    return " | ".join(group.guards[:3]) + f" | ... ({group.distinct} distinct)"


def _match_lines(match: Match) -> list[str]:
    f = match.finding
    how = {"guard": "predicted guard", "line": "guard created on its line", "reason": "blamed value"}[match.how]
    lines = [f"explained by {f.code} {f.name} at {f.path}:{f.line}:{f.column} ({how}"
             + (f": {f.guard.source}" if match.how == "guard" and f.guard else "") + ")"]
    lines.append(f"  {f.message}")
    for location in f.evidence:
        note = f": {location.note}" if location.note else ""
        lines.append(f"  {location.role} {location.path}:{location.line}{note}")
    return lines


def render_text(result: Explanation) -> str:
    """Functions, their guard groups with the finding behind each, then what nothing explains."""
    out: list[str] = []
    channels = ", ".join(result.channels) or "none"
    out.append(f"{clean(result.input)}: {result.kind} ({channels}); {result.recompiles} recompile(s) "
               f"in {len(result.functions)} function(s)")
    if result.inferred:
        out.append("note: only the guards channel was logged; the failing guards are deduced from how "
                   "each function's guard sets differ")
    if result.linted:
        out.append(f"static model: {result.findings} finding(s) in {', '.join(clean(p) for p in result.linted)}")
    else:
        out.append("static model: not run (no local source files; pass PATHS)")
    for error in result.lint_errors:
        out.append(f"lint error: {clean(error)}")
    for func in result.functions:
        out.append("")
        out.append(f"{clean(_where(func.file, func.first_line))} {clean(func.function)}: {_function_summary(func)}")
        for group in func.groups:
            label = clean(group.source) or "(no guard text)"
            out.append(f"  {label} [{group.family.value}] failed in {group.failures} recompile attempt(s): {clean(_values(group))}")
            code = f": {clean(group.code)}" if group.code else ""
            where = "at" if group.located_by == "guard" else "in the function at"
            out.append(f"    {where} {clean(_where(group.file, group.line, group.function))}{code}")
            if not group.matches:
                out.append("    no finding explains it")
            for match in group.matches:
                out.extend("    " + clean(line) for line in _match_lines(match))
    for hit in result.other_limit_hits:
        out.append("")
        out.append(f"{clean(_where(hit.file, hit.first_line))} {clean(hit.function)}: reached {clean(hit.limit_type)} "
                   f"({hit.limit_value}); last reason: {clean(hit.last_reason) or '?'}")
    unexplained = result.unexplained()
    out.append("")
    out.append(f"Unexplained guard failures ({len(unexplained)}):")
    for func, group in unexplained:
        code = f": {clean(group.code)}" if group.code else ""
        out.append(f"  {clean(_where(group.file, group.line, group.function))}{code}  "
                   f"[{clean(group.source) or clean(group.guards[0] if group.guards else '?')} in {clean(func.function)}, "
                   f"{group.failures} recompile(s)]")
    for warning in result.warnings:
        out.append(f"warning: {clean(warning)}")
    groups = sum(len(f.groups) for f in result.functions)
    limits = sum(1 for f in result.functions if f.limit) + len(result.other_limit_hits)
    out.append(f"Explained {groups - len(unexplained)} of {groups} guard source(s); "
               f"{limits} function(s) reached the recompile limit.")
    # Every field is escaped where it is placed; each line is escaped again whole, so a field
    # missed above (a limit's type, a verifier JSON's value) still cannot act.
    return "\n".join(escape_path(line) for line in out) + "\n"


def _finding_dict(match: Match) -> dict[str, Any]:
    return {"how": match.how, "finding": match.finding.to_dict()}


def to_dict(result: Explanation) -> dict[str, Any]:
    """The JSON shape (documented in docs/explain.md)."""
    functions = []
    for func in result.functions:
        functions.append({
            "function": func.function,
            "file": func.file,
            "first_line": func.first_line,
            "recompiles": func.recompiles,
            "refused": func.refused,
            "graphs": func.graphs,
            "limit_hit": func.limit is not None,
            "limit": func.limit.to_dict() if func.limit else None,
            "guards": [
                {
                    "source": g.source,
                    "family": g.family.value,
                    "failures": g.failures,
                    "guards": list(g.guards),
                    "distinct": g.distinct,
                    "location": {"file": g.file, "line": g.line, "function": g.function, "code": g.code,
                                 "located_by": g.located_by},
                    "explained_by": [_finding_dict(m) for m in g.matches],
                }
                for g in func.groups
            ],
        })
    return {
        "input": result.input,
        "kind": result.kind,
        "channels": list(result.channels),
        "inferred": result.inferred,
        "recompiles": result.recompiles,
        "functions": functions,
        "other_limit_hits": [h.to_dict() for h in result.other_limit_hits],
        "unexplained": [
            {"function": func.function, "function_file": func.file, "source": g.source, "guards": list(g.guards),
             "failures": g.failures, "file": g.file, "line": g.line, "in": g.function, "code": g.code}
            for func, g in result.unexplained()
        ],
        "static": {"paths": list(result.linted), "findings": result.findings, "errors": list(result.lint_errors)},
        "warnings": list(result.warnings),
    }


def render_json(result: Explanation) -> str:
    """``to_dict`` as indented JSON."""
    return safe_json(json.dumps(to_dict(result), indent=2)) + "\n"


# Words are never broken inside: text and code wrap at spaces only (a word with a hyphen, which
# a browser would break after it, ``/tmp/my-proj/x.py`` or ``mutated-global``, is kept whole
# in a ``.w`` span); a table too wide for the page scrolls sideways in its own box, and so do
# source lines.
_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#222;hyphens:manual}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:2em;border-bottom:1px solid #ccc}
code,pre{font-family:ui-monospace,monospace;font-size:13px}
code{background:#f3f3f3;padding:0 .2em;border-radius:3px}.w{white-space:nowrap}
pre{background:#f6f6f6;padding:.5em;margin:.3em 0;white-space:pre;overflow-x:auto}
.wide{overflow-x:auto}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ddd;padding:.3em .5em;vertical-align:top;text-align:left}
td.finding{background:#fbfdfb}td.finding p{margin:.3em 0}
.limit{color:#a00;font-weight:bold}.none{color:#a60}.ok{color:#070}.muted{color:#666}
"""


def _plain(text: object) -> str:
    """``text`` for HTML where no markup may go (the page's title)."""
    return html.escape(escape(text), quote=True)


def _e(text: object) -> str:
    """``text`` for the page's body: escaped, its hyphenated words kept whole."""
    return _words(_plain(text))


def _words(escaped: str) -> str:
    """Already escaped text with each word that holds a hyphen kept whole (``.w``)."""
    return re.sub(r"[^\s<>]*-[^\s<>]*", lambda m: f"<span class=w>{m.group(0)}</span>", escaped)


def _code(text: object) -> str:
    """``<code>`` of ``text``: wrapped at its spaces only."""
    return f"<code>{_e(text)}</code>"


def _prose(text: object) -> str:
    """``text`` (a finding's words) for HTML, with each `quoted` span as ``<code>``: the
    backticks mark code, they are not shown."""
    pieces = escape(text).split("`")
    if len(pieces) % 2 == 0:  # an unpaired backtick: the last one is shown as it is
        pieces[-2:] = [pieces[-2] + "`" + pieces[-1]]
    return "".join(
        f"<code>{_words(html.escape(piece, quote=True))}</code>" if index % 2 else _words(html.escape(piece, quote=True))
        for index, piece in enumerate(pieces)
    )


def _finding_html(match: Match) -> str:
    """A finding under the guard it explains: what, why, the fix, and its other places."""
    f = match.finding
    parts = [
        f"<p><b class=ok>{_e(f.code)}</b> {_e(f.name)} at {_code(_where(f.path, f.line))} "
        f"<span class=muted>({_e(match.how)})</span>: {_prose(f.title or f.message)}</p>"
    ]
    if f.title and f.explanation:
        parts.append(f"<p>{_prose(f.explanation)}</p>")
    if f.title and f.fix:
        parts.append(f"<p><b>Fix:</b> {_prose(f.fix)}</p>")
    if f.evidence:
        parts.append("<ul>" + "".join(f"<li>{_e(e.role)} {_code(_where(e.path, e.line))} {_prose(e.note)}</li>" for e in f.evidence) + "</ul>")
    return "".join(parts)


def render_html(result: Explanation) -> str:
    """One self-contained page: inline style, no script, no external resource."""
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">',
        f"<title>recompile-lint explain: {_plain(result.input)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>Recompiles in {_code(result.input)}</h1>",
        f"<p>{_e(result.kind)} ({_e(', '.join(result.channels) or 'none')}): <b>{result.recompiles}</b> recompile(s) in "
        f"<b>{len(result.functions)}</b> function(s); {len(result.unexplained())} guard source(s) no finding explains.</p>",
    ]
    if result.inferred:
        out.append("<p class=muted>Only the guards channel was logged: the failing guards are deduced from how each "
                   "function's guard sets differ.</p>")
    if result.linted:
        out.append(f"<p class=muted>Static model: {result.findings} finding(s) in "
                   f"{_e(', '.join(result.linted))}.</p>")
    else:
        out.append("<p class=muted>Static model: not run (no local source files).</p>")
    for func in result.functions:
        out.append(f"<h2>{_code(func.function)} <span class=muted>{_e(_where(func.file, func.first_line))}</span></h2>")
        summary = _e(_function_summary(func))
        out.append(f"<p class={'limit' if func.limit else 'muted'}>{summary}</p>")
        out.append("<div class=wide><table><tr><th>guarded value</th><th>failed in</th><th>guards</th><th>source line</th><th>explained by</th></tr>")
        for group in func.groups:
            explained = "<br>".join(
                f"<b class=ok>{_e(m.finding.code)}</b> {_e(m.finding.name)}" for m in group.matches
            ) or "<span class=none>no finding</span>"
            guards = "<br>".join(f"{_code(g)}" for g in group.guards)
            if group.distinct > len(group.guards):
                guards += f"<br><span class=muted>... {group.distinct - len(group.guards)} more</span>"
            code = f"<pre>{_e(group.code)}</pre>" if group.code else ""
            out.append(
                f"<tr><td>{_code(group.source or '(no guard text)')}<br><span class=muted>{_e(group.family.value)}</span></td>"
                f"<td>{group.failures}</td><td>{guards}</td>"
                f"<td>{_code(_where(group.file, group.line, group.function))}{code}</td><td>{explained}</td></tr>"
            )
            # The findings take the table's whole width below their guard: prose in a narrow
            # column would wrap every few words.
            for match in group.matches:
                out.append(f"<tr><td class=finding colspan=5>{_finding_html(match)}</td></tr>")
        out.append("</table></div>")
    unexplained = result.unexplained()
    if unexplained:
        out.append(f"<h2>Guard failures no finding explains ({len(unexplained)})</h2><ul>")
        out.extend(
            f"<li>{_code(_where(g.file, g.line, g.function))} {_e(g.code)} "
            f"<span class=muted>({_e(g.source or (g.guards[0] if g.guards else '?'))} in {_e(func.function)}, "
            f"{g.failures} recompile attempt(s))</span></li>"
            for func, g in unexplained
        )
        out.append("</ul>")
    for hit in result.other_limit_hits:
        out.append(f"<p class=limit>{_code(hit.function)} ({_e(_where(hit.file, hit.first_line))}) reached "
                   f"{_e(hit.limit_type)} ({hit.limit_value}); last reason: {_code(hit.last_reason)}</p>")
    if result.warnings or result.lint_errors:
        out.append("<h2>Warnings</h2><ul>")
        out.extend(f"<li>{_e(w)}</li>" for w in [*result.lint_errors, *result.warnings])
        out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


RENDERERS = {"text": render_text, "json": render_json, "html": render_html}
