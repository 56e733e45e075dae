"""What the language server offers beyond diagnostics, driven over stdio as an editor drives
it: hover on a finding, code actions (``# noqa``, the rule's page, a fix where
``recompile_lint.fixes`` provides one), and messages an editor can show on one line."""

from __future__ import annotations

import os
import sys
import types as pytypes
from dataclasses import dataclass
from pathlib import Path

import pytest

from test_lsp import OPS, TRAIN, Client, open_params

pytest.importorskip("pygls")

from recompile_lint.frontends import lsp  # noqa: E402
from recompile_lint.models import Boundedness, Finding, Location, Severity  # noqa: E402


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "ops.py").write_text(OPS, encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    return tmp_path


def started(project: Path) -> Client:
    client = Client(project)
    capabilities = {"window": {"showDocument": {"support": True}}, "textDocument": {"hover": {"contentFormat": ["markdown", "plaintext"]}}}
    result = client.request("initialize", {"processId": os.getpid(), "rootUri": project.as_uri(), "capabilities": capabilities})
    assert result["capabilities"]["hoverProvider"]
    assert result["capabilities"]["codeActionProvider"]
    assert lsp.OPEN_RULE_PAGE in result["capabilities"]["executeCommandProvider"]["commands"]
    client.notify("initialized")
    return client


def test_hover_code_actions_and_the_rule_page(project: Path) -> None:
    client = started(project)
    try:
        train = project / "train.py"
        client.notify("textDocument/didOpen", open_params(train, TRAIN))
        [diagnostic] = client.diagnostics(train.as_uri())
        # Each part of the message is a sentence: shown on one line, they do not run together.
        assert all(line.rstrip()[-1] in ".!?:" for line in diagnostic["message"].split("\n"))
        assert "ops.py:8." in diagnostic["message"].split("\n")[0]
        assert diagnostic["codeDescription"]["href"].startswith("file://")
        assert diagnostic["relatedInformation"] and all(r["location"]["uri"].startswith("file://") for r in diagnostic["relatedInformation"])

        start = diagnostic["range"]["start"]
        hover = client.request("textDocument/hover", {"textDocument": {"uri": train.as_uri()}, "position": start})
        assert hover["contents"]["kind"] == "markdown"
        text = hover["contents"]["value"]
        assert text.startswith("**RCL101 mutated-global**")
        assert "**Why it recompiles:**" in text and "**Fix:** Keep it in a 0-d tensor" in text
        assert hover["range"] == diagnostic["range"]
        assert client.request("textDocument/hover", {"textDocument": {"uri": train.as_uri()}, "position": {"line": 0, "character": 0}}) is None

        actions = client.request("textDocument/codeAction", {
            "textDocument": {"uri": train.as_uri()},
            "range": diagnostic["range"],
            "context": {"diagnostics": [diagnostic]},
        })
        by_title = {action["title"]: action for action in actions}
        noqa = by_title["Add `# noqa: RCL101` on line 8"]
        [edit] = noqa["edit"]["changes"][train.as_uri()]
        assert edit["newText"] == "        ops.STEP = i  # noqa: RCL101"
        assert edit["range"] == {"start": {"line": 7, "character": 0}, "end": {"line": 7, "character": len("        ops.STEP = i")}}
        page = by_title["Open the page of rule RCL101 (mutated-global)"]
        assert page["command"]["command"] == lsp.OPEN_RULE_PAGE and page["command"]["arguments"] == ["RCL101"]
        if lsp.fixes_module() is None:
            assert len(actions) == 2  # no fixes package: no fix action, and nothing else

        # The command asks the editor to show the page, a local file.
        client.next_id += 1
        number = client.next_id
        client._send({"id": number, "method": "workspace/executeCommand", "params": {"command": lsp.OPEN_RULE_PAGE, "arguments": ["RCL101"]}})
        shown = client.wait(lambda m: m.get("method") == "window/showDocument")
        uri = shown["params"]["uri"]
        assert uri.startswith("file://") and uri.endswith("RCL101.md")
        assert Path(uri[len("file://"):]).is_file()
        client._send({"id": shown["id"], "result": {"success": True}})
        answer = client.wait(lambda m: m.get("id") == number and "method" not in m)
        assert answer["result"] == uri

        # The noqa applied: the finding is gone.
        lines = TRAIN.split("\n")
        lines[7] = edit["newText"]
        client.notify("textDocument/didChange", {"textDocument": {"uri": train.as_uri(), "version": 2}, "contentChanges": [{"text": "\n".join(lines)}]})
        assert client.diagnostics(train.as_uri(), version=2) == []
        assert client.request("textDocument/codeAction", {"textDocument": {"uri": train.as_uri()}, "range": diagnostic["range"], "context": {"diagnostics": []}}) == []

        assert client.request("shutdown") is None
        client.notify("exit")
        assert client.process.wait(timeout=30) == 0
    finally:
        client.close()


def test_noqa_merges_with_a_comment_already_there() -> None:
    assert lsp.noqa_line("x = 1", "RCL101") == "x = 1  # noqa: RCL101"
    assert lsp.noqa_line("x = 1  # noqa: E501", "RCL101") == "x = 1  # noqa: E501, RCL101"
    assert lsp.noqa_line("x = 1  # noqa:E501,W291  # why", "RCL101") == "x = 1  # noqa:E501,W291, RCL101  # why"
    assert lsp.noqa_line("x = 1  # noqa", "RCL101") is None  # a bare noqa suppresses it already
    assert lsp.noqa_line("x = 1  # noqa: RCL1", "RCL101") is None
    assert lsp.noqa_line("x = 1  # a note", "RCL101") == "x = 1  # a note  # noqa: RCL101"


def test_no_noqa_where_a_comment_would_change_the_program() -> None:
    text = 'x = """first\nsecond"""\ny = 1 + \\\n    2\nz = 3\n'
    assert lsp.noqa_edit(text, 1, "RCL101") is None  # the line ends inside a string
    assert lsp.noqa_edit(text, 3, "RCL101") is None  # after a backslash continuation
    assert lsp.noqa_edit(text, 5, "RCL101") == (5, "z = 3", "z = 3  # noqa: RCL101")
    assert lsp.noqa_edit("def f(:\n", 1, "RCL101") is None  # a file that does not parse
    assert lsp.noqa_edit(text, 99, "RCL101") is None


def finding(path: str) -> Finding:
    return Finding(code="RCL101", name="mutated-global", message="m", path=path, line=2, column=1, end_line=2, end_column=5,
                   severity=Severity.ERROR, bounded=Boundedness.UNBOUNDED, title="`STEP` changes here [x](http://evil) <b>",
                   explanation="why", fix="fix", evidence=(Location(path, 1, 1, "write", note="n"),))


@dataclass(frozen=True)
class FakeEdit:
    path: str
    start_line: int
    start_column: int
    end_line: int
    end_column: int
    text: str


@dataclass(frozen=True)
class FakeFix:
    title: str
    safe: bool
    edits: tuple


def test_fix_actions_come_from_the_fixes_package_where_it_is_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lsprotocol import types

    path = str(tmp_path / "m.py")
    text = "import torch\nSTEP = 0\n"
    document = lsp.Document(path, text, 1)
    found = finding(path)
    diagnostic = lsp.to_diagnostic(found, text.split("\n"), {path: document})
    whole = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=5, character=0))
    uri = Path(path).as_uri()

    monkeypatch.setitem(sys.modules, "recompile_lint.fixes", None)  # not installed: no fix action
    titles = [a.title for a in lsp.code_actions(uri, document, [(diagnostic, found)], whole, {path: document})]
    assert titles == ["Add `# noqa: RCL101` on line 2", "Open the page of rule RCL101 (mutated-global)"]

    asked = []

    def fixes_for(finding, text, read=None):
        asked.append((finding.code, text, read(path)))
        return [FakeFix("Keep `STEP` in a tensor", False, (FakeEdit(path, 2, 7, 2, 8, "torch.tensor(0)"),))]

    monkeypatch.setitem(sys.modules, "recompile_lint.fixes", pytypes.SimpleNamespace(fixes_for=fixes_for))
    actions = lsp.code_actions(uri, document, [(diagnostic, found)], whole, {path: document})
    fix = actions[0]
    assert fix.title == "Keep `STEP` in a tensor (unsafe fix)" and fix.is_preferred is False
    [edit] = fix.edit.changes[uri]
    assert (edit.range.start.line, edit.range.start.character, edit.range.end.character, edit.new_text) == (1, 7, 8, "torch.tensor(0)")
    assert asked == [("RCL101", text, text)]

    def failing(finding, text, read=None):
        raise RuntimeError("a fixer broke")

    monkeypatch.setitem(sys.modules, "recompile_lint.fixes", pytypes.SimpleNamespace(fixes_for=failing))
    assert len(lsp.code_actions(uri, document, [(diagnostic, found)], whole, {path: document})) == 2


def test_hover_text_cannot_make_links_or_markup() -> None:
    text = lsp.hover_markdown(finding("m.py"))
    assert "[x](http" not in text and "<b>" not in text
    assert "\\[x\\]" in text and "\\<b\\>" in text
    assert "`STEP`" in text  # code quotes stay


def test_a_failing_edit_session_is_logged_and_each_document_linted_on_its_own(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "from recompile_lint.frontends import editing\n\n\n"
        "def broken(self, documents):\n    raise RuntimeError('the session broke')\n\n\n"
        "editing.EditSession.lint = broken\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("PYTHONPATH", str(hook))
    client = started(project)
    try:
        train = project / "train.py"
        client.notify("textDocument/didOpen", open_params(train, TRAIN))
        logged = client.wait(lambda m: m.get("method") == "window/logMessage")
        assert "RuntimeError: the session broke" in logged["params"]["message"]
        [diagnostic] = client.diagnostics(train.as_uri())
        assert diagnostic["code"] == "RCL101"
    finally:
        client.close()


def test_the_fixes_package_gives_the_fix_actions_of_a_real_finding(project: Path) -> None:
    """With ``recompile_lint.fixes`` as shipped: each fix it makes for the project's finding is a
    quick fix whose edits are the fix's own, in the file the fix names."""
    from lsprotocol import types

    from recompile_lint import fixes
    from recompile_lint.config import Config
    from recompile_lint.engine import lint_paths

    result = lint_paths([str(project)], Config(select=("RCL",), cache=False))
    [found] = [f for f in result.findings if f.code == "RCL101"]
    path = os.path.abspath(found.path)
    text = Path(path).read_text(encoding="utf-8")
    made = fixes.fixes_for(found, text)
    assert made, "the shipped fixes package fixes a global int read in compiled code"
    document = lsp.Document(path, text, 1)
    others = {os.path.abspath(str(p)): lsp.Document(os.path.abspath(str(p)), p.read_text(encoding="utf-8"), 1) for p in project.glob("*.py")}
    diagnostic = lsp.to_diagnostic(found, text.split("\n"), others)
    whole = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=len(text.split("\n")), character=0))
    actions = lsp.code_actions(Path(path).as_uri(), document, [(diagnostic, found)], whole, others)
    quick = [a for a in actions if a.edit is not None and not a.title.startswith("Add `# noqa")]
    assert [a.title.replace(" (unsafe fix)", "") for a in quick] == [lsp.escape(fix.title) for fix in made]
    for action, fix in zip(quick, made):
        edits = [e for changes in action.edit.changes.values() for e in changes]
        assert [e.new_text for e in edits] == [e.text for e in fix.edits]
