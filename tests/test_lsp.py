"""``recompile-lint lsp`` driven by a real client over stdio: initialize, didOpen,
publishDiagnostics, didChange, shutdown and exit, as an editor sends them.

The client here is a minimal JSON-RPC one (Content-Length framing), written against the
protocol rather than the server's library, so the test sees what an editor sees.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import pytest

from recompile_lint.frontends.lsp import column_units

OPS = """\
import torch

STEP = 0


@torch.compile
def scale(x):
    return x * STEP
"""

TRAIN = """\
import torch

import ops


def train(batches):
    for i, x in enumerate(batches):
        ops.STEP = i
        ops.scale(x)
"""

TIMEOUT = 120.0


class Client:
    """Speaks LSP to a server process: requests wait for their response, notifications from
    the server are queued for the test to wait on."""

    def __init__(self, cwd: Path) -> None:
        env = dict(os.environ, RECOMPILE_LINT_NO_SERVER="1")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "recompile_lint", "lsp"],
            cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                header = stream.readline()
                if not header:
                    return
                if header in (b"\r\n", b"\n"):
                    break
                name, _, value = header.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value.strip())
            if length is None:
                return
            self.messages.put(json.loads(stream.read(length)))

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self._send({"method": method, "params": params or {}})

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self.next_id += 1
        number = self.next_id
        self._send({"id": number, "method": method, "params": params or {}})
        message = self.wait(lambda m: m.get("id") == number and "method" not in m)
        assert "error" not in message, message
        return message.get("result")

    def wait(self, accept: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The next message ``accept`` takes (others are dropped: log messages and the like)."""
        while True:
            try:
                message = self.messages.get(timeout=TIMEOUT)
            except queue.Empty:
                stderr = self.process.stderr.read1(10_000).decode(errors="replace") if self.process.poll() is not None and self.process.stderr else ""
                raise AssertionError(f"no expected message from the server within {TIMEOUT} s {stderr}") from None
            if accept(message):
                return message

    def diagnostics(self, uri: str, version: int | None = None) -> list[dict[str, Any]]:
        """The next diagnostics published for ``uri`` (for ``version``, when given)."""
        message = self.wait(
            lambda m: m.get("method") == "textDocument/publishDiagnostics"
            and m["params"]["uri"] == uri
            and (version is None or m["params"].get("version") == version)
        )
        return message["params"]["diagnostics"]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "ops.py").write_text(OPS, encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    return tmp_path


def open_params(path: Path, text: str) -> dict[str, Any]:
    return {"textDocument": {"uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}}


def test_a_session_publishes_diagnostics_where_the_change_is_and_follows_edits(project: Path) -> None:
    client = Client(project)
    try:
        result = client.request("initialize", {"processId": os.getpid(), "rootUri": project.as_uri(), "capabilities": {}})
        assert result["serverInfo"]["name"] == "recompile-lint"
        assert result["capabilities"]["textDocumentSync"]["openClose"] is True
        client.notify("initialized")

        train, ops = project / "train.py", project / "ops.py"
        client.notify("textDocument/didOpen", open_params(train, TRAIN))
        [diagnostic] = client.diagnostics(train.as_uri())
        # Reported at the write in train.py (line 8, 0-based 7), worded from there.
        assert diagnostic["range"]["start"] == {"line": 7, "character": 8}
        assert diagnostic["range"]["end"] == {"line": 7, "character": 16}  # `ops.STEP`
        assert diagnostic["code"] == "RCL101" and diagnostic["severity"] == 1 and diagnostic["source"] == "recompile-lint"
        assert diagnostic["message"].startswith("this assignment changes `STEP` in the loop that calls `ops.scale`; compiled `ops.scale` reads it at ops.py:8")
        assert "help: Keep it in a 0-d tensor" in diagnostic["message"]
        assert diagnostic["codeDescription"]["href"].endswith("/rules/RCL101.md")
        related = {(r["location"]["uri"], r["location"]["range"]["start"]["line"], r["message"].split(":")[0]) for r in diagnostic["relatedInformation"]}
        assert (ops.as_uri(), 7, "finding") in related and (ops.as_uri(), 5, "compiled") in related

        # Opening ops.py shows the finding at its own place, the write in train.py related.
        client.notify("textDocument/didOpen", open_params(ops, OPS))
        [primary] = client.diagnostics(ops.as_uri())
        assert primary["range"]["start"] == {"line": 7, "character": 15} and primary["code"] == "RCL101"
        assert any(r["location"]["uri"] == train.as_uri() and r["message"].startswith("changed:") for r in primary["relatedInformation"])

        # An unsaved edit that drops the write: both documents clear, though the file on
        # disk still writes STEP (the buffer is what is linted).
        edited = TRAIN.replace("        ops.STEP = i\n", "")
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": train.as_uri(), "version": 2},
            "contentChanges": [{"text": edited}],
        })
        assert client.diagnostics(train.as_uri(), version=2) == []
        assert client.diagnostics(ops.as_uri()) == []

        # The write back, suppressed on its line: train.py stays clean, ops.py shows it again.
        suppressed = TRAIN.replace("ops.STEP = i", "ops.STEP = i  # noqa: RCL101")
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": train.as_uri(), "version": 3},
            "contentChanges": [{"text": suppressed}],
        })
        assert client.diagnostics(train.as_uri(), version=3) == []
        [again] = client.diagnostics(ops.as_uri())
        assert again["code"] == "RCL101"

        assert client.request("shutdown") is None
        client.notify("exit")
        assert client.process.wait(timeout=30) == 0
    finally:
        client.close()


def test_columns_count_in_the_clients_units() -> None:
    # An astral character is one code point, two UTF-16 code units and four UTF-8 bytes.
    line = 'x = "\U0001F600" + step'
    column = line.index("step") + 1
    assert column_units(line, column, "utf-32") == column - 1
    assert column_units(line, column, "utf-16") == column
    assert column_units(line, column, "utf-8") == column + 2
