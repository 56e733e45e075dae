"""The editor snippets of docs/integrations.md use only what the editor version they name has.

Snippets are the fenced blocks after a ``<!-- editor-snippet: NAME-VERSION -->`` marker. The
check is static: every ``vim.*`` function a snippet's Lua calls is looked up in ``SINCE`` (the
Neovim release that added it, from Neovim's ``:help news`` and API docs), and none may be newer
than the snippet's version. Where a Neovim is installed, the snippet for its version is also
run: Neovim starts the server on a Python buffer and shows its diagnostic.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "integrations.md"
SNIPPET = re.compile(r"<!-- editor-snippet: (?P<editor>[a-z]+)-(?P<version>[\d.]+) -->\n```(?P<lang>\w*)\n(?P<body>.*?)\n```", re.S)
CALL = re.compile(r"\bvim\.(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*")

# The Neovim release that added each function the snippets may use. ``vim.fn.*`` calls Vim
# script functions (``findfile``, ``fnamemodify``), which every Neovim has.
SINCE = {
    "vim.api.nvim_create_autocmd": (0, 7),
    "vim.api.nvim_buf_get_name": (0, 1),
    "vim.fn.findfile": (0, 1),
    "vim.fn.fnamemodify": (0, 1),
    "vim.lsp.start_client": (0, 5),
    "vim.lsp.buf_attach_client": (0, 5),
    "vim.lsp.start": (0, 8),
    "vim.fs.find": (0, 8),
    "vim.fs.dirname": (0, 8),
    "vim.fs.root": (0, 10),
    "vim.lsp.config": (0, 11),
    "vim.lsp.enable": (0, 11),
}

# What the distributions ship: Debian 12 (bookworm) has Neovim 0.7.2.
DEBIAN_12_NEOVIM = (0, 7)


def version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def snippets() -> dict[tuple[str, tuple[int, ...]], str]:
    found = {}
    for match in SNIPPET.finditer(DOC.read_text(encoding="utf-8")):
        assert match["lang"] == "lua"
        found[(match["editor"], version(match["version"]))] = match["body"]
    return found


def calls(body: str) -> set[str]:
    code = "\n".join(line.split("--", 1)[0] for line in body.splitlines())  # comments name functions too
    return set(CALL.findall(code))


def test_the_neovim_snippets_use_only_what_their_version_has() -> None:
    found = snippets()
    assert ("neovim", DEBIAN_12_NEOVIM) in found, "no snippet for the Neovim Debian 12 ships"
    for (editor, wanted), body in found.items():
        used = calls(body)
        assert used, body
        unknown = used - SINCE.keys()
        assert not unknown, f"add the release that added {sorted(unknown)} to SINCE"
        newer = {name: SINCE[name] for name in used if SINCE[name] > wanted}
        assert not newer, f"the {editor} {wanted} snippet calls {newer}"
        # The snippet's own comment names the version it needs.
        assert body.startswith(f"-- Neovim {'.'.join(map(str, wanted))} and later"), body


def test_the_check_rejects_a_snippet_newer_than_its_version() -> None:
    # The snippet this page used to show: it needs 0.10 (vim.fs.root), and 0.8 for vim.lsp.start.
    old = 'vim.lsp.start({ name = "recompile-lint", cmd = { "recompile-lint", "lsp" }, root_dir = vim.fs.root(0, { "pyproject.toml", ".git" }) })'
    assert calls(old) == {"vim.lsp.start", "vim.fs.root"}
    assert max(SINCE[name] for name in calls(old)) == (0, 10) > DEBIAN_12_NEOVIM
    assert calls("-- vim.lsp.start is 0.8\nlocal x = 1") == set()


def installed_neovim() -> tuple[str, tuple[int, ...]] | None:
    nvim = shutil.which("nvim")
    if nvim is None:
        return None
    out = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout
    match = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return (nvim, (int(match[1]), int(match[2]))) if match else None


PROBE = """
vim.cmd("edit " .. vim.fn.fnameescape(vim.env.TRAIN_FILE))
local ok = vim.wait(90000, function() return #vim.diagnostic.get(0) > 0 end, 200)
local out = io.open(vim.env.PROBE_OUT, "w")
for _, d in ipairs(vim.diagnostic.get(0)) do
  out:write(string.format("%d %s %s\\n", d.lnum, tostring(d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)), d.source or ""))
end
out:close()
vim.cmd("qa!")
"""


def test_the_snippet_for_the_installed_neovim_shows_a_diagnostic(tmp_path: Path) -> None:
    found = installed_neovim()
    if found is None:
        pytest.skip("no Neovim installed")
    nvim, have = found
    usable = [(wanted, body) for (editor, wanted), body in snippets().items() if editor == "neovim" and wanted <= have]
    if not usable:
        pytest.skip(f"Neovim {have} is older than every snippet")
    wanted, body = max(usable)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (project / "ops.py").write_text("import torch\n\nSTEP = 0\n\n\n@torch.compile\ndef scale(x):\n    return x * STEP\n", encoding="utf-8")
    train = project / "train.py"
    train.write_text("import ops\n\n\ndef train(batches):\n    for i, x in enumerate(batches):\n        ops.STEP = i\n        ops.scale(x)\n", encoding="utf-8")
    init = tmp_path / "init.lua"
    init.write_text(body + "\n", encoding="utf-8")
    probe = tmp_path / "probe.lua"
    probe.write_text(PROBE, encoding="utf-8")
    # ``recompile-lint`` on PATH is this interpreter's.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "recompile-lint"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -m recompile_lint \"$@\"\n", encoding="utf-8")
    script.chmod(0o755)
    out = tmp_path / "diagnostics.txt"
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", TRAIN_FILE=str(train), PROBE_OUT=str(out),
               RECOMPILE_LINT_NO_SERVER="1", XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"), XDG_STATE_HOME=str(tmp_path / "state"))
    subprocess.run([nvim, "--headless", "-u", str(init), "-i", "NONE", "-c", f"luafile {probe}"], cwd=project, env=env, timeout=180, capture_output=True)
    lines = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
    assert lines == ["5 RCL101 recompile-lint"], (have, wanted, lines)
