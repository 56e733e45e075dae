"""``recompile-lint lsp``: a Language Server Protocol server over standard input and output.

It publishes diagnostics for the documents an editor has open: each open document is linted
as ``recompile-lint FILE`` lints it (``engine.lint_paths`` with every open document's unsaved
text standing in for its file, and the rest of the project read from disk), so a finding a
change causes elsewhere is shown where the change is, worded from there. Related locations
(the compile site, the write, the primary location) become ``relatedInformation``; severities
map to the editor's (error, warning, information). A document opened, changed or saved
re-lints every open document: a change in ``train.py`` can change what ``model.py`` shows.

Runs on pygls (``pip install 'recompile-lint[lsp]'``), imported only by this command.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
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


def to_diagnostic(finding: Finding, lines: list[str], open_documents: Mapping[str, Document], encoding: str = "utf-16"):
    """A finding as an LSP diagnostic: headline, why and help in the message, the rule's page
    as its code's description, the related locations as ``relatedInformation``."""
    from lsprotocol import types

    from recompile_lint.report.sarif import rule_help_uri

    # Repository text (names, quoted code) is escaped: an editor shows the message as it is.
    parts = [escape(finding.title or finding.message)]
    if finding.explanation:
        parts.append(escape(finding.explanation))
    if finding.fix:
        parts.append(f"help: {escape(finding.fix)}")
    return types.Diagnostic(
        range=_range(lines, finding.line, finding.column, finding.end_line, finding.end_column, encoding),
        message="\n".join(parts),
        severity=types.DiagnosticSeverity(SEVERITIES[finding.severity.value]),
        code=finding.code,
        code_description=types.CodeDescription(href=rule_help_uri(finding.code)),
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


def diagnostics(document: Document, open_documents: Mapping[str, Document], encoding: str = "utf-16") -> list:
    """Every diagnostic of ``document``; a configuration error is one diagnostic at the top."""
    from recompile_lint.config import ConfigError

    lines = document.text.split("\n")
    try:
        result = lint_document(document, open_documents)
    except ConfigError as exc:
        return [error_diagnostic(FileError(path=document.path, message=f"configuration: {exc}"), lines, encoding)]
    mine = [f for f in result.findings if os.path.abspath(f.path) == os.path.abspath(document.path) or not os.path.isfile(document.path)]
    out = [to_diagnostic(f, lines, open_documents, encoding) for f in mine]
    out.extend(error_diagnostic(e, lines, encoding) for e in result.errors if e.path in (document.path, os.path.relpath(document.path)) or not os.path.isfile(document.path))
    return out


def build_server():
    """The pygls server with its handlers: open, change, save and close of text documents."""
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer
    from pygls.uris import to_fs_path

    server = LanguageServer("recompile-lint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)

    def open_documents(ls: LanguageServer) -> dict[str, Document]:
        out = {}
        for uri, doc in ls.workspace.text_documents.items():
            path = to_fs_path(uri)
            if path and path.endswith((".py", ".pyi")):
                out[os.path.abspath(path)] = Document(os.path.abspath(path), doc.source, doc.version)
        return out

    def publish_all(ls: LanguageServer) -> None:
        documents = open_documents(ls)
        chosen = getattr(ls.workspace, "position_encoding", None)
        encoding = str(getattr(chosen, "value", chosen) or "utf-16")
        for uri, doc in list(ls.workspace.text_documents.items()):
            path = to_fs_path(uri)
            document = documents.get(os.path.abspath(path)) if path else None
            if document is None:
                continue
            try:
                found = diagnostics(document, documents, encoding)
            except Exception as exc:  # noqa: BLE001 - the editor gets a message, the server keeps serving
                ls.window_log_message(types.LogMessageParams(type=types.MessageType.Error, message=escape(f"recompile-lint: {type(exc).__name__}: {exc}")))
                continue
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=found, version=doc.version))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        publish_all(ls)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        publish_all(ls)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: LanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        publish_all(ls)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        # A closed document's diagnostics are cleared; the others may change without it.
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))
        publish_all(ls)

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
