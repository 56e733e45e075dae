"""What a new user sees first: the README's first command, concise lines that fit a screen,
an empty directory, ``rule NAME``, the top-level help, and ``server stop``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from recompile_lint.frontends.cli import main
from recompile_lint.models import Boundedness, Finding, Severity
from recompile_lint.report.text import format_finding_line
from recompile_lint.report.wording import CONCISE_WIDTH, concise_headline, short_name

REPO = Path(__file__).resolve().parent.parent


def invoke(*args: str, env: dict[str, str] | None = None):
    result = CliRunner().invoke(main, list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


# --- concise lines ---------------------------------------------------------------------

def test_every_concise_line_of_the_bundled_fixtures_fits_in_160_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    concise = invoke("--no-cache", "--exit-zero", "--output-format", "concise", "fixtures/")
    lines = [line for line in concise.stdout.splitlines() if ": RCL" in line]
    assert len(lines) > 100
    assert max(len(line) for line in lines) <= CONCISE_WIDTH, max(lines, key=len)
    # The full names and the whole message stay in JSON (and the why and fix in `full`).
    findings = json.loads(invoke("--no-cache", "--exit-zero", "--format", "json", "fixtures/").stdout)
    assert len(findings) == len(lines)
    assert max(len(f["message"]) for f in findings) > 300
    assert any(len(f["region"]) > 30 and f"`{f['region']}`" in f["message"] for f in findings)


def _finding(title: str, region: str, path: str = "pkg/model.py") -> Finding:
    return Finding(
        code="RCL101", name="mutated-global", severity=Severity.ERROR, bounded=Boundedness.UNBOUNDED,
        path=path, line=8, column=16, end_line=8, end_column=20,
        message=f"{title}: every new value fails the guard. Fix: keep it in a tensor", title=title, region=region, function=region,
    )


def test_a_long_region_name_keeps_its_last_parts_in_the_concise_line() -> None:
    region = "tests.models.very_long_model_name.test_modeling_very_long_model_name.VeryLongModelNameIntegrationTest.test_compile.<locals>.fn"
    finding = _finding(f"global `step` (int) is read in compiled `{region}` and changed", region)
    line = format_finding_line(finding)
    assert line == "pkg/model.py:8:16: RCL101 [error] global `step` (int) is read in compiled `test_compile.fn` and changed (mutated-global)"
    assert short_name("pkg.model.Net.forward") == "Net.forward"
    assert short_name("seed.poly") == "seed.poly"


def test_a_headline_that_still_does_not_fit_is_cut_at_a_word_outside_quoted_code() -> None:
    title = "argument `memory` (list) of compiled `agent.Policy.forward` is unrolled, so Dynamo guards `len(memory)`, " * 3
    cut = concise_headline(title, 80, ["agent.Policy.forward"])
    assert len(cut) <= 80 and cut.endswith("...")
    assert cut.count("`") % 2 == 0
    assert "(list)" not in cut and "`Policy.forward`" in cut
    # A short headline is left as it is, full names and all.
    assert concise_headline("global `pkg.mod.step` is read", 80, ["pkg.mod.step"]) == "global `pkg.mod.step` is read"
    line = format_finding_line(_finding(title, "agent.Policy.forward", path="a/" * 30 + "model.py"))
    # A path that leaves no room still keeps the start of the headline.
    assert "RCL101 [error] argument `memory` of compiled `Policy.forward`" in line


def test_a_qualified_name_is_shortened_by_its_parts_never_cut_and_no_cut_ends_on_a_little_word() -> None:
    region = "global_loop_variable_module.cosine_weight_schedule"
    title = f"global `epoch` (int) is read in compiled `{region}` and changed at a place far away from here"
    cut = concise_headline(title, 70, [region])
    assert cut.startswith("global `epoch` is read in compiled `cosine_weight_schedule`")
    assert len(cut) <= 70 and cut.endswith("...")
    last = cut[: -len("...")].split()[-1]
    assert last.lower() not in {"a", "and", "at", "compiled", "from", "in", "is", "of", "the", "to", "which"}
    # A long expression that is not a name loses its start, not its end.
    expression = "self._modules['blocks']._modules['0']._modules['proj'].active"
    short = concise_headline(f"`{expression}` (str attribute of `LoRALinear`) is read in compiled `m.f` and changed", 70, ["m.f"])
    assert short.startswith("`...['0']._modules['proj'].active` is read") and len(short) <= 70


# --- an empty directory, rule NAME, --help ----------------------------------------------

@pytest.mark.parametrize("output_format", ["full", "concise", "json"])
def test_an_empty_directory_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output_format: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not python\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = invoke("--no-cache", "--output-format", output_format, "empty")
    assert result.exit_code == 2
    assert result.stdout == ""  # no "Found 0 findings" (nor an empty JSON array) before the error
    assert result.stderr.splitlines() == [
        "recompile-lint: error: no Python files found in empty (nothing to lint; a directory walk skips excluded and git-ignored files)"
    ]


@pytest.mark.parametrize("word", ["RCL101", "rcl101", "mutated-global", "mutated_global", "Mutated-Global"])
def test_rule_takes_a_code_or_a_name(word: str) -> None:
    result = invoke("rule", word)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# RCL101: mutated-global\n")


def test_every_rule_is_found_by_the_name_rules_lists() -> None:
    listed = invoke("rules").stdout.splitlines()
    assert len(listed) > 10
    for row in listed:
        code, name = row.split()[:2]
        assert invoke("rule", name).stdout.startswith(f"# {code}: {name}\n")


@pytest.mark.parametrize(("word", "closest"), [("mutated-globl", "mutated-global"), ("size_brnch", "size-branch"), ("RCL1010", "RCL101")])
def test_an_unknown_rule_suggests_the_closest(word: str, closest: str) -> None:
    result = invoke("rule", word)
    assert result.exit_code == 2
    assert f"unknown rule {word!r}; did you mean {closest}?" in result.stderr


def test_an_unknown_rule_far_from_any_says_where_the_list_is() -> None:
    result = invoke("rule", "xyzzy")
    assert result.exit_code == 2
    assert "did you mean" not in result.stderr and "`recompile-lint rules` lists them" in result.stderr


def test_the_top_level_help_lists_every_subcommand() -> None:
    import click

    text = invoke("--help").stdout
    listing = text.split("Options:")[0]
    named = {line.split()[1] for line in listing.splitlines() if line.strip().startswith("recompile-lint ") and not line.split()[1].startswith("[")}
    commands = set(main.list_commands(click.Context(main)))
    assert "regions" in commands and "check" in commands
    assert named == commands


# --- server stop ------------------------------------------------------------------------

class FakeServer:
    """A socket that answers control requests as a resident server does: ``stop`` makes it
    reply, remove its socket and end."""

    def __init__(self, path: str) -> None:
        import socket
        import threading

        self.path = path
        self.requests: list[dict] = []
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(4)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        import ast
        import os

        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                size = int.from_bytes(conn.recv(4), "big")
                request = ast.literal_eval(conn.recv(size).decode())
                self.requests.append(request)
                if request.get("control") == "stop":
                    conn.sendall(b"exit 0\n")
                    os.unlink(self.path)
                    self.listener.close()
                    return

    def close(self) -> None:
        import os

        self.listener.close()
        if os.path.exists(self.path):
            os.unlink(self.path)


@pytest.mark.skipif(not hasattr(__import__("socket"), "SO_PEERCRED"), reason="servers need SO_PEERCRED (Linux)")
def test_server_stop_stops_only_this_installations_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recompile_lint.frontends import client

    directory = tmp_path / "servers"
    directory.mkdir(mode=0o700)
    monkeypatch.setenv(client.DIR_VAR, str(directory))
    ours = FakeServer(client.socket_path(str(directory)))
    # Another installation of the same user (another virtual environment, another version).
    theirs = FakeServer(str(directory / "0123456789abcdef.sock"))
    try:
        result = invoke("server", "stop")
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith("recompile-lint: server stopped")
        assert "1 other socket(s) in" in result.stdout and "left alone" in result.stdout
        assert ours.requests == [{"control": "stop"}]
        assert theirs.requests == []
        assert (directory / "0123456789abcdef.sock").exists()
        # Nothing of this installation left: the other one still runs, and is not asked.
        again = invoke("server", "stop")
        assert again.exit_code == 0 and "no server of this installation was running" in again.stdout
        assert theirs.requests == []
    finally:
        ours.close()
        theirs.close()


# --- the README's first command ---------------------------------------------------------

def test_the_readmes_first_command_installs_and_prints_one_short_finding_with_its_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    import shlex

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first = readme.split("From a checkout", 1)[1].split("```sh\n", 1)[1].split("\n```", 1)[0].strip()
    setup, _, command = first.rpartition(" && ")
    # The set-up a new user copies: a virtual environment and the install from the checkout.
    assert setup == "python3 -m venv .venv && . .venv/bin/activate && pip install -e ."
    words = shlex.split(command)
    assert words[0] == "recompile-lint"
    monkeypatch.chdir(REPO)
    result = invoke("--no-cache", *words[1:])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) <= 20, len(lines)
    assert sum(": RCL" in line and "[error, unbounded]" in line for line in lines) == 1
    assert any(line.lstrip().startswith("= help: ") for line in lines)
    assert lines[-1].startswith("Found 1 finding (1 error)")
    # The tally the README offers next is short too.
    tally = invoke("--no-cache", "--exit-zero", "--statistics", "fixtures/")
    assert tally.exit_code == 0 and 10 <= len(tally.stdout.splitlines()) <= 30


def test_the_readmes_server_figures_say_what_they_measured() -> None:
    """A figure of the resident server says whether the content was new to it: a new edit
    still costs its analysis there; only content it has linted before is answered at once."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = " ".join(readme.split("### Resident server", 1)[1].split("\n## ", 1)[0].split())
    assert "takes about 0.33 s with the server" not in section
    assert "Measured on 2026-12-01" in section
    assert "an edit the server has not seen costs" in section and "of CPU in the server" in section
    assert "content it has seen (the same edit linted again) is answered in" in section
