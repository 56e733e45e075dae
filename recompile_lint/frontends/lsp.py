"""``recompile-lint lsp``: a Language Server Protocol server over standard input and output.

It publishes diagnostics for the documents an editor has open: each open document is linted
as ``recompile-lint FILE`` lints it (``engine.lint_paths`` with every open document's unsaved
text standing in for its file, and the rest of the project read from disk), so a finding a
change causes elsewhere is shown where the change is, worded from there. Related locations
(the compile site, the write, the primary location) become ``relatedInformation``; severities
map to the editor's (error, warning, information). A document opened, changed or saved
updates every open document: a change in ``train.py`` can change what ``model.py`` shows.

Edits are incremental (``editing.EditSession``): texts, facts, text tests and function trees
of unchanged files stay in memory, and only the regions whose findings can be in an open
document are asked of the guard model again. Diagnostics are published again only where they
changed (and always for the edited document's new version).

Besides diagnostics: hover on a finding (the rule, why it recompiles, the fix, as markdown),
and code actions: the finding's fixes when ``recompile_lint.fixes`` is installed, a
``# noqa: CODE`` on the reported line (merged with a ``# noqa`` already there), and the rule's
page, opened as a local file (``window/showDocument``).

Runs on pygls (``pip install 'recompile-lint[lsp]'``), imported only by this command.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import partial
from typing import Mapping

import click

from recompile_lint import __version__
from recompile_lint.models import FileError, Finding, LintResult, Location
from recompile_lint.report.sanitize import escape

SOURCE = "recompile-lint"


@dataclass(frozen=True)
class Document:
    """An open document: its file path, unsaved text and version."""

    path: str
    text: str
    version: int | None = None


def lint_document(document: Document, open_documents: Mapping[str, Document]) -> LintResult:
    """The CLI's answer for ``document``, with every open document's text in place of its file."""
    from recompile_lint.config import load_config
    from recompile_lint.engine import lint_buffer_alone, lint_paths

    config = load_config([document.path])
    if not os.path.isfile(document.path):
        return lint_buffer_alone(document.path, document.text.encode("utf-8"), config)
    buffers = {os.path.abspath(path): doc.text.encode("utf-8") for path, doc in open_documents.items() if os.path.isfile(path)}
    return lint_paths([document.path], config, buffers=buffers, relocate=True)


def column_units(line: str, column: int, encoding: str) -> int:
    """A 1-based character column as the 0-based offset the client counts in (``encoding``:
    the negotiated position encoding, UTF-16 code units unless the client chose another)."""
    prefix = line[: max(column - 1, 0)]
    if encoding == "utf-8":
        return len(prefix.encode("utf-8"))
    if encoding == "utf-32":
        return len(prefix)
    return len(prefix.encode("utf-16-le")) // 2


def _range(lines: list[str], line: int, column: int, end_line: int, end_column: int, encoding: str):
    from lsprotocol import types

    def text(number: int) -> str:
        return lines[number - 1] if 0 < number <= len(lines) else ""

    start = types.Position(line=max(line - 1, 0), character=column_units(text(line), column, encoding))
    if (end_line, end_column) <= (line, column):
        # No extent (a write): cover the name it starts with, so the editor can underline it.
        rest = text(line)[max(column - 1, 0) :]
        width = len(rest) - len(rest.lstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_."))
        end_line, end_column = line, column + max(width, 1)
    end = types.Position(line=max(end_line - 1, 0), character=column_units(text(end_line), end_column, encoding))
    return types.Range(start=start, end=end)


SEVERITIES = {"error": 1, "warning": 2, "info": 3}  # DiagnosticSeverity: Error, Warning, Information


def _lines_of(path: str, open_documents: Mapping[str, Document]) -> list[str]:
    document = open_documents.get(os.path.abspath(path))
    if document is not None:
        return document.text.split("\n")
    from recompile_lint.source import SourceError, decode_source, read_bytes

    try:
        return decode_source(read_bytes(path), path).split("\n")
    except SourceError:
        return []


def related_information(location: Location, open_documents: Mapping[str, Document], encoding: str):
    """A finding's related location as the editor shows it (``label: note``)."""
    from lsprotocol import types
    from pygls.uris import from_fs_path

    from recompile_lint.report.text import ROLE_LABELS
    from recompile_lint.report.wording import note_of

    path = os.path.abspath(location.path)
    lines = _lines_of(path, open_documents)
    return types.DiagnosticRelatedInformation(
        location=types.Location(uri=from_fs_path(path) or path, range=_range(lines, location.line, location.column, location.end_line, location.end_column, encoding)),
        message=f"{ROLE_LABELS.get(location.role, location.role)}: {escape(note_of(location))}",
    )


def sentence(text: str) -> str:
    """``text`` ending as a sentence does, so that an editor that shows a message on one line
    (joining its lines with spaces) shows separate sentences."""
    text = text.rstrip()
    return text if not text or text[-1] in ".!?:" else text + "."


def rule_page_path(code: str) -> str | None:
    """The rule's page as a local file: the generated page beside the README in a checkout,
    else its source inside the installed package (no web address is involved)."""
    from recompile_lint.report.pages import PAGES_DIR, SOURCE_DIR

    for folder in (PAGES_DIR, SOURCE_DIR):
        candidate = folder / f"{code}.md"
        if code.isalnum() and candidate.is_file():
            return str(candidate)
    return None


def rule_page_uri(code: str) -> str | None:
    from pathlib import Path

    path = rule_page_path(code)
    return Path(path).as_uri() if path else None


def to_diagnostic(finding: Finding, lines: list[str], open_documents: Mapping[str, Document], encoding: str = "utf-16"):
    """A finding as an LSP diagnostic: headline, why and help in the message (each a
    sentence, on its own line), the rule's local page as its code's description, the related
    locations as ``relatedInformation``."""
    from lsprotocol import types

    # Repository text (names, quoted code) is escaped: an editor shows the message as it is.
    parts = [sentence(escape(finding.title or finding.message))]
    if finding.explanation:
        parts.append(sentence(escape(finding.explanation)))
    if finding.fix:
        parts.append(f"help: {sentence(escape(finding.fix))}")
    page = rule_page_uri(finding.code)
    return types.Diagnostic(
        range=_range(lines, finding.line, finding.column, finding.end_line, finding.end_column, encoding),
        message="\n".join(parts),
        severity=types.DiagnosticSeverity(SEVERITIES[finding.severity.value]),
        code=finding.code,
        code_description=types.CodeDescription(href=page) if page else None,
        source=SOURCE,
        related_information=[related_information(location, open_documents, encoding) for location in finding.evidence] or None,
        data={"name": finding.name, "bounded": finding.bounded.value},
    )


def error_diagnostic(error: FileError, lines: list[str], encoding: str = "utf-16"):
    """A file that could not be linted (a syntax error), at its place or at the top."""
    from lsprotocol import types

    line = max(error.line, 1)
    return types.Diagnostic(
        range=_range(lines, line, max(error.column, 1), line, max(error.column, 1) + 1, encoding),
        message=escape(error.message),
        severity=types.DiagnosticSeverity.Error,
        code="E999" if error.line else "E902",
        source=SOURCE,
    )


def diagnostics_of(document: Document, result: "LintResult | Exception", open_documents: Mapping[str, Document], encoding: str = "utf-16") -> list[tuple[object, Finding | None]]:
    """(diagnostic, finding) of each thing ``result`` says of ``document``; a configuration
    error is one diagnostic at the top (no finding)."""
    from recompile_lint.config import ConfigError

    lines = document.text.split("\n")
    if isinstance(result, ConfigError):
        return [(error_diagnostic(FileError(path=document.path, message=f"configuration: {result}"), lines, encoding), None)]
    if isinstance(result, Exception):
        raise result
    alone = not os.path.isfile(document.path)
    mine = [f for f in result.findings if alone or os.path.abspath(f.path) == os.path.abspath(document.path)]
    out: list[tuple[object, Finding | None]] = [(to_diagnostic(f, lines, open_documents, encoding), f) for f in mine]
    out.extend((error_diagnostic(e, lines, encoding), None) for e in result.errors if alone or os.path.abspath(e.path) == os.path.abspath(document.path))
    return out


def diagnostics(document: Document, open_documents: Mapping[str, Document], encoding: str = "utf-16") -> list:
    """Every diagnostic of ``document``, from a run of its own (``lint_document``)."""
    from recompile_lint.config import ConfigError

    try:
        result: LintResult | Exception = lint_document(document, open_documents)
    except ConfigError as exc:
        result = exc
    return [diagnostic for diagnostic, _ in diagnostics_of(document, result, open_documents, encoding)]


# ---- hover and code actions ------------------------------------------------------------------

_MARKDOWN_SPECIAL = str.maketrans({c: "\\" + c for c in "\\[]<>*_#|"})


def markdown_text(text: str) -> str:
    """Repository text for a markdown hover: escaped, and with no link, image, HTML or
    emphasis it could start (backticks stay: they quote code)."""
    return escape(text).translate(_MARKDOWN_SPECIAL)


def hover_markdown(finding: Finding) -> str:
    """What a hover on a finding says: the rule, the finding, why it recompiles, the fix."""
    from recompile_lint.rules import rule_by_code

    rule = rule_by_code(finding.code)
    summary = getattr(rule, "summary", "") if rule is not None else ""
    out = [f"**{finding.code} {finding.name}**" + (f": {markdown_text(summary)}" if summary else ""), "", markdown_text(sentence(finding.title or finding.message))]
    if finding.explanation:
        out += ["", f"**Why it recompiles:** {markdown_text(sentence(finding.explanation))}"]
    if finding.fix:
        out += ["", f"**Fix:** {markdown_text(sentence(finding.fix))}"]
    page = rule_page_uri(finding.code)
    if page:
        out += ["", f"[The rule's page]({page})"]
    return "\n".join(out)


def contains(range_, position) -> bool:
    start, end = range_.start, range_.end
    return (start.line, start.character) <= (position.line, position.character) <= (end.line, end.character)


def overlaps(a, b) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and (b.start.line, b.start.character) <= (a.end.line, a.end.character)


def noqa_line(line: str, code: str) -> str | None:
    """``line`` with ``code`` added to its ``# noqa`` (a new one at the end, or merged with
    the codes one names); None when a ``# noqa`` there already suppresses it."""
    from recompile_lint.suppress import NOQA, is_suppressed

    if is_suppressed(code, line):
        return None
    match = NOQA.search(line)
    if match is not None and match.group("codes"):
        end = match.end("codes")
        return f"{line[:end]}, {code}{line[end:]}"
    return f"{line.rstrip()}  # noqa: {code}"


def noqa_edit(text: str, line_number: int, code: str) -> tuple[int, str, str] | None:
    """(line number, old line, new line) of the ``# noqa: code`` comment for a finding reported
    at ``line_number`` of ``text``; None where it is suppressed already, or where a comment at
    the end of that line would change the program (the line ends inside a string or after a
    backslash) or the text does not parse."""
    import ast

    lines = text.split("\n")
    if not 0 < line_number <= len(lines):
        return None
    old = lines[line_number - 1]
    new = noqa_line(old, code)
    if new is None:
        return None
    changed = lines[: line_number - 1] + [new] + lines[line_number:]
    try:
        if ast.dump(ast.parse(text)) != ast.dump(ast.parse("\n".join(changed))):
            return None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return line_number, old, new


def fixes_module():
    """``recompile_lint.fixes`` where it is installed; None where it is not (no fix actions)."""
    import importlib

    try:
        module = importlib.import_module("recompile_lint.fixes")
    except ImportError:
        return None
    return module if callable(getattr(module, "fixes_for", None)) else None


OPEN_RULE_PAGE = "recompile-lint.openRulePage"


def code_actions(uri: str, document: Document, found: list[tuple[object, Finding | None]], wanted, open_documents: Mapping[str, Document], encoding: str = "utf-16") -> list:
    """The code actions for the findings of ``document`` whose diagnostics overlap ``wanted``
    (a range): each finding's fixes (``fixes.fixes_for``, where installed), a ``# noqa`` for
    its code, and its rule's page."""
    from lsprotocol import types
    from pygls.uris import from_fs_path

    lines = document.text.split("\n")
    fixes = fixes_module()
    out = []
    for diagnostic, finding in found:
        if finding is None or not overlaps(diagnostic.range, wanted):
            continue
        if fixes is not None:
            try:
                made = fixes.fixes_for(finding, document.text, partial(_text_of, open_documents))
            except Exception:  # noqa: BLE001 - a fixer's failure costs its action, not the server
                made = []
            for fix in made:
                changes: dict[str, list] = {}
                for edit in fix.edits:
                    path = os.path.abspath(edit.path)
                    text = _text_of(open_documents, path)
                    if text is None:
                        changes = {}
                        break
                    edit_lines = text.split("\n")
                    changes.setdefault(from_fs_path(path) or path, []).append(
                        types.TextEdit(range=_edit_range(edit_lines, edit.start_line, edit.start_column, edit.end_line, edit.end_column, encoding), new_text=edit.text)
                    )
                if changes:
                    out.append(types.CodeAction(
                        title=escape(fix.title) + ("" if fix.safe else " (unsafe fix)"),
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        is_preferred=bool(fix.safe),
                        edit=types.WorkspaceEdit(changes=changes),
                    ))
        noqa = noqa_edit(document.text, finding.line, finding.code)
        if noqa is not None:
            number, old, new = noqa
            end = types.Position(line=number - 1, character=column_units(old, len(old) + 1, encoding))
            out.append(types.CodeAction(
                title=f"Add `# noqa: {finding.code}` on line {number}",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(range=types.Range(start=types.Position(line=number - 1, character=0), end=end), new_text=new)]}),
            ))
        if rule_page_path(finding.code):
            out.append(types.CodeAction(
                title=f"Open the page of rule {finding.code} ({finding.name})",
                kind=types.CodeActionKind.Empty,
                diagnostics=[diagnostic],
                command=types.Command(title=f"Open the page of {finding.code}", command=OPEN_RULE_PAGE, arguments=[finding.code]),
            ))
    return out


def _edit_range(lines: list[str], line: int, column: int, end_line: int, end_column: int, encoding: str):
    """A fix's edit (1-based lines, 0-based code-point columns) in the client's units."""
    from lsprotocol import types

    def text(number: int) -> str:
        return lines[number - 1] if 0 < number <= len(lines) else ""

    return types.Range(
        start=types.Position(line=line - 1, character=column_units(text(line), column + 1, encoding)),
        end=types.Position(line=end_line - 1, character=column_units(text(end_line), end_column + 1, encoding)),
    )


def _text_of(open_documents: Mapping[str, Document], path: str) -> str | None:
    document = open_documents.get(os.path.abspath(path))
    if document is not None:
        return document.text
    lines = _lines_of(path, {})
    return "\n".join(lines) if lines else None


# ---- the server ------------------------------------------------------------------------------


def build_server():
    """The pygls server with its handlers: open, change, save and close of text documents,
    hover, code actions and the command that opens a rule's page."""
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer
    from pygls.uris import to_fs_path

    from recompile_lint.engine import lint_buffer_alone
    from recompile_lint.frontends.editing import EditSession

    server = LanguageServer("recompile-lint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
    session = EditSession()
    # uri -> (version, diagnostics with their findings) as last published.
    published: dict[str, tuple[int | None, list[tuple[object, Finding | None]]]] = {}

    def open_documents(ls: LanguageServer) -> dict[str, Document]:
        out = {}
        for uri, doc in ls.workspace.text_documents.items():
            path = to_fs_path(uri)
            if path and path.endswith((".py", ".pyi")):
                out[os.path.abspath(path)] = Document(os.path.abspath(path), doc.source, doc.version)
        return out

    def encoding_of(ls: LanguageServer) -> str:
        chosen = getattr(ls.workspace, "position_encoding", None)
        return str(getattr(chosen, "value", chosen) or "utf-16")

    def log(ls: LanguageServer, exc: BaseException) -> None:
        ls.window_log_message(types.LogMessageParams(type=types.MessageType.Error, message=escape(f"recompile-lint: {type(exc).__name__}: {exc}")))

    def publish_all(ls: LanguageServer, edited: str | None = None) -> None:
        from recompile_lint.config import ConfigError, load_config

        documents = open_documents(ls)
        encoding = encoding_of(ls)
        try:
            results: dict[str, LintResult | Exception] = dict(session.lint({path: d.text for path, d in documents.items() if os.path.isfile(path)}))
        except Exception as exc:  # noqa: BLE001 - the editor gets a message, the server keeps serving
            log(ls, exc)
            results = {}  # each document is linted by a run of its own below
        for uri, doc in list(ls.workspace.text_documents.items()):
            path = to_fs_path(uri)
            document = documents.get(os.path.abspath(path)) if path else None
            if document is None:
                continue
            result = results.get(document.path)
            try:
                if result is None and os.path.isfile(document.path):
                    try:
                        result = lint_document(document, documents)
                    except ConfigError as exc:
                        result = exc
                elif result is None:
                    # A buffer with no file behind it: linted alone, when it is the one edited.
                    if uri in published and uri != edited:
                        continue
                    result = lint_buffer_alone(document.path, document.text.encode("utf-8"), load_config([document.path]))
                found = diagnostics_of(document, result, documents, encoding)
            except Exception as exc:  # noqa: BLE001 - the editor gets a message, the server keeps serving
                log(ls, exc)
                continue
            before = published.get(uri)
            if uri != edited and before is not None and before[0] == doc.version and [d for d, _ in before[1]] == [d for d, _ in found]:
                continue  # nothing changed there
            published[uri] = (doc.version, found)
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[d for d, _ in found], version=doc.version))
        session.keep_snippets()  # for the next edit, once the diagnostics are out

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        publish_all(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        publish_all(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: LanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        publish_all(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        # A closed document's diagnostics are cleared; the others may change without it.
        path = to_fs_path(params.text_document.uri)
        if path:
            session.forget(path)
        published.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))
        publish_all(ls)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: LanguageServer, params: types.HoverParams):
        found = published.get(params.text_document.uri)
        if found is None:
            return None
        here = [(d, f) for d, f in found[1] if f is not None and contains(d.range, params.position)]
        if not here:
            return None
        text = "\n\n---\n\n".join(hover_markdown(f) for _, f in here)
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text), range=here[0][0].range)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    def code_action(ls: LanguageServer, params: types.CodeActionParams):
        uri = params.text_document.uri
        found = published.get(uri)
        documents = open_documents(ls)
        path = to_fs_path(uri)
        document = documents.get(os.path.abspath(path)) if path else None
        if found is None or document is None or found[0] != document.version:
            return []
        return code_actions(uri, document, found[1], params.range, documents, encoding_of(ls))

    @server.command(OPEN_RULE_PAGE)
    def open_rule_page(ls, *arguments):  # no annotations: pygls reads them to convert the arguments
        code = str(arguments[0]) if arguments else ""
        page = rule_page_uri(code)
        if page is None:
            ls.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=escape(f"recompile-lint: no page for rule {code!r}")))
            return None
        ls.window_show_document(types.ShowDocumentParams(uri=page, take_focus=True))
        return page

    return server


@click.command("lsp")
def lsp() -> None:
    """Run a Language Server Protocol server on stdin/stdout (editors; needs the `lsp` extra)."""
    try:
        server = build_server()
    except ImportError as exc:
        click.echo(f"recompile-lint: error: `recompile-lint lsp` needs pygls ({exc.name or exc}): pip install 'recompile-lint[lsp]'", err=True)
        sys.exit(2)
    server.start_io()
