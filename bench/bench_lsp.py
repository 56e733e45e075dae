"""What an edit costs in the language server: first diagnostics, then each edit's new ones.

    python bench/bench_lsp.py                       # 300 modules, 15 edits
    python bench/bench_lsp.py --modules 1000 --edits 25 --open 3

A synthetic project (``make_synthetic.py``) gets its own ``pyproject.toml`` with the facts
cache off, so nothing on disk answers. ``recompile-lint lsp`` runs in a subprocess and is
driven over stdio as an editor drives it: ``initialize``, ``didOpen`` of ``--open`` modules
(the first compiles something, the others are helpers it calls), then ``--edits`` edits of
the first document (a line inserted: a comment, a blank line, a statement that writes a
global the compiled code reads, the line removed again), each timed from the ``didChange``
to the ``publishDiagnostics`` of its version. The server's CPU time per edit comes from
``/proc/PID/stat`` (Linux). The same edits are then linted the way the server did before it
kept anything between edits (``lint_paths`` of each open document, every open document's
text standing in for its file, the facts cache on and filled), in this process. Printed:
first diagnostics (wall, CPU), median and worst edit (wall, CPU) for both ways, and the ratio
of the medians. The last edit's diagnostics are compared with a fresh ``lint_paths``.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent


class Server:
    """``recompile-lint lsp`` in a subprocess, spoken to with Content-Length framing."""

    def __init__(self, cwd: Path) -> None:
        env = dict(os.environ, RECOMPILE_LINT_NO_SERVER="1")
        self.process = subprocess.Popen([sys.executable, "-m", "recompile_lint", "lsp"], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
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

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        number = self.next_id
        self.send({"id": number, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == number and "method" not in m).get("result")

    def wait(self, accept: Callable[[dict[str, Any]], bool], timeout: float = 600.0) -> dict[str, Any]:
        while True:
            message = self.messages.get(timeout=timeout)
            if accept(message):
                return message

    def diagnostics(self, uri: str, version: int) -> list[dict[str, Any]]:
        return self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri and m["params"].get("version") == version)["params"]["diagnostics"]

    def cpu(self) -> float:
        """User + system seconds of the server process so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        try:
            self.request("shutdown", {})
            self.send({"method": "exit", "params": {}})
            self.process.wait(timeout=30)
        except Exception:  # noqa: BLE001 - a benchmark ends its server whatever happened
            self.process.kill()
            self.process.wait()


def edited(text: str, number: int) -> str:
    """The ``number``-th edit of the document: a line inserted near the train loop."""
    lines = text.split("\n")
    at = next((i for i, line in enumerate(lines) if line.startswith("def train_step")), len(lines) // 2)
    inserted = ["# a comment", "", "STEP = 3", "SCALE = 2", "LR = 0.5"][number % 5]
    return "\n".join(lines[:at] + [inserted] + lines[at:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", type=int, default=300)
    parser.add_argument("--edits", type=int, default=15)
    parser.add_argument("--open", type=int, default=2, help="documents open in the editor (default 2)")
    parser.add_argument("--workdir", help="where the project is generated (default: a temporary directory)")
    args = parser.parse_args()

    sys.path.insert(0, str(HERE))
    from make_synthetic import generate

    from recompile_lint.config import load_config
    from recompile_lint.engine import lint_paths

    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-lsp-"))
    generate(work, args.modules)
    (work / "pyproject.toml").write_text("[project]\nname = 'synth'\n\n[tool.recompile-lint]\ncache = false\n", encoding="utf-8")
    modules = sorted(work.rglob("mod_*.py"))
    documents = [modules[0]] + modules[1 : args.open]
    texts = {path: path.read_text(encoding="utf-8") for path in documents}

    server = Server(work)
    try:
        server.request("initialize", {"processId": os.getpid(), "rootUri": work.as_uri(), "capabilities": {}})
        server.send({"method": "initialized", "params": {}})
        started, cpu = time.perf_counter(), server.cpu()
        for path in documents:
            server.send({"method": "textDocument/didOpen", "params": {"textDocument": {"uri": path.as_uri(), "languageId": "python", "version": 1, "text": texts[path]}}})
        first = server.diagnostics(documents[-1].as_uri(), 1)
        first_wall, first_cpu = time.perf_counter() - started, server.cpu() - cpu
        walls, cpus = [], []
        edit_texts = []
        for number in range(args.edits):
            text = edited(texts[documents[0]], number)
            edit_texts.append(text)
            version = number + 2
            started, cpu = time.perf_counter(), server.cpu()
            server.send({"method": "textDocument/didChange", "params": {"textDocument": {"uri": documents[0].as_uri(), "version": version}, "contentChanges": [{"text": text}]}})
            last = server.diagnostics(documents[0].as_uri(), version)
            walls.append(time.perf_counter() - started)
            cpus.append(server.cpu() - cpu)
    finally:
        server.close()

    # The same edits, each open document linted afresh (what the server did before), with the
    # facts cache on as it is by default, filled by a first run.
    config = replace(load_config([str(documents[0])]), cache=True, cache_dir=str(work / ".bench-facts-cache"))
    lint_paths([str(documents[0])], config, relocate=True)
    fresh_walls, fresh_cpus = [], []
    expected = None
    for text in edit_texts:
        buffers = {str(path): (text if path == documents[0] else texts[path]).encode("utf-8") for path in documents}
        started, cpu = time.perf_counter(), time.process_time()
        for path in documents:
            result = lint_paths([str(path)], config, buffers=buffers, relocate=True)
            if path == documents[0]:
                expected = result
        fresh_walls.append(time.perf_counter() - started)
        fresh_cpus.append(time.process_time() - cpu)

    def line(label: str, walls: list[float], cpus: list[float]) -> str:
        return f"{label:<28} median wall {statistics.median(walls):6.3f} s  cpu {statistics.median(cpus):6.3f} s   worst wall {max(walls):6.3f} s  cpu {max(cpus):6.3f} s"

    print(f"project: {args.modules} modules ({len(list(work.rglob('*.py')))} files), {len(documents)} open, {args.edits} edits; load average {os.getloadavg()[0]:.2f}")
    print(f"{'first diagnostics':<28} wall {first_wall:6.3f} s  cpu {first_cpu:6.3f} s  ({len(first)} diagnostics)")
    print(line("edit, incremental server", walls, cpus))
    print(line("edit, every document afresh", fresh_walls, fresh_cpus))
    print(f"ratio of medians (afresh / incremental): wall {statistics.median(fresh_walls) / statistics.median(walls):.1f}x, cpu {statistics.median(fresh_cpus) / max(statistics.median(cpus), 1e-9):.1f}x")
    same = expected is not None and sorted((f.line, f.code) for f in expected.findings) == sorted((d["range"]["start"]["line"] + 1, d["code"]) for d in last if d.get("source") == "recompile-lint")
    print(f"last edit's diagnostics equal a fresh lint_paths: {same}")


if __name__ == "__main__":
    main()
