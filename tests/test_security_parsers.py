"""Hostile Python files against every parse path: no input of at most 1 MB takes more than 10 s
or 1 GB, or crashes a front end (CLI, flake8 plugin, language server).

``attack_corpus`` builds the inputs: nesting (brackets, f-strings, lambdas, unary operators,
indentation), long left-recursive chains with and without a syntax error after them, 1 MB
files cut off mid-token, and files just inside the limits ``newsyntax`` sets (the worst
case it still hands to libcst). Each is linted by the real command in a process of its own,
timed and measured with ``os.wait4``; a crash is a signal, not a dead test run.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from recompile_lint.analysis import newsyntax, parsing
from recompile_lint.analysis.shape import Shape, measure, refusal

from helpers import SEED_SOURCE
from measuring import run_measured

ROOT = Path(__file__).resolve().parent.parent
MiB = 1024 * 1024
# The requirement, per file of at most 1 MB (a CLI run holds a second, small file as well).
# Time is the processor time of the process and its workers: on a shared machine under load
# the wall time of the same work is several times longer, and only a hang is bounded by it.
MOST_SECONDS = 10.0
MOST_WALL_SECONDS = 120.0
MOST_BYTES = 1024 * MiB

_ORDINARY = "def f{i}(x, y):\n    z = x + y * 2\n    return g(z, [1, 2, 3], {{'a': z}}, name=f'{{x}}')\n\n\n"


def _ordinary(size: int) -> str:
    out, i = [], 0
    total = 0
    while total < size:
        chunk = _ORDINARY.format(i=i)
        out.append(chunk)
        total += len(chunk)
        i += 1
    return "".join(out)


def _nested_fstrings(levels: int) -> str:
    text = "1"
    for _ in range(levels):
        text = 'f"{' + text + '}"'
    return text


def _fill(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit))


def _within(repeat, work: str, most: int) -> str:
    """``repeat(n)`` for the largest ``n`` whose measure stays within ``most`` of ``work`` and
    the size the fallback parses (each copy is a statement of its own: the sums add up)."""
    one = repeat(1)
    n = min(most // max(1, getattr(measure(one), work)), (newsyntax.MAX_BYTES - 2048) // len(one))
    return repeat(n)


def _all_limits() -> str:
    """Every kind of work at nine tenths of its limit in one file, filled up with ordinary
    code to the size the fallback parses, with a syntax error at its end."""
    parts = [
        _within(lambda n: ("x = a" + ".b()" * (newsyntax.MAX_CHAIN // 2 - 1) + "\n") * n, "chain_work", newsyntax.MAX_CHAIN_WORK * 9 // 10),
        _within(lambda n: ("x = " + "(" * 199 + "1" + ")" * 199 + "\n") * n, "depth_work", newsyntax.MAX_DEPTH_WORK * 6 // 10),
        _within(lambda n: ("y = " + _nested_fstrings(newsyntax.MAX_FSTRINGS) + "\n") * n, "fstring_work", newsyntax.MAX_FSTRING_WORK * 9 // 10),
    ]
    head = "".join(parts)
    return head + _ordinary(newsyntax.MAX_BYTES)[: newsyntax.MAX_BYTES - 2048 - len(head)].rsplit("\n\n\n", 1)[0] + "\nx = = 1\n"


def attack_corpus() -> dict[str, str]:
    """Hostile files by name: each at most 1 MB."""
    limit = newsyntax.MAX_BYTES - 2048
    ordinary = _ordinary(MiB)
    return {
        "nested_brackets": "x = " + "(" * 50_000 + ")" * 50_000 + "\n",
        "nested_fstrings": "y = " + _nested_fstrings(200) + "\n",
        "call_chain_error": "x = a" + ".b()" * 4_000 + "\nx = = 1\n",
        "call_chain": "x = a" + ".b()" * 4_000 + "\n",
        "plus_chain_error": "x = a" + " + a" * 4_000 + "\nx = = 1\n",
        "subscript_chain_error": "x = a" + "[0]" * 4_000 + "\nx = = 1\n",
        "nested_lambdas_error": "x = " + "lambda: " * 10_000 + "0\nx = = 1\n",
        "unary_error": "x = " + "-" * 100_000 + "0\nx = = 1\n",
        "nested_ifs": "".join(" " * depth + "if x:\n" for depth in range(1_000)) + " " * 1_000 + "pass\n",
        "concatenated_strings_error": "x = (" + " 'a'" * 100_000 + ")\nx = = 1\n",
        "truncated_mid_token": ordinary[: MiB - 3] + "nam",
        "truncated_mid_string": ordinary[: MiB - 100] + "s = '''never closed\n" + "x" * 60,
        "truncated_open_bracket": "x = [\n" + _fill("    g(y, [1, 2, 3], {'a': y}),\n", MiB - 8),
        # Just inside every limit the fallback sets, filling the size it still parses.
        "limit_chains_error": _within(lambda n: ("x = a" + ".b()" * (newsyntax.MAX_CHAIN // 2 - 1) + "\n") * n, "chain_work", newsyntax.MAX_CHAIN_WORK) + "x = = 1\n",
        "limit_depth_error": _within(lambda n: ("x = " + "lambda: " * (newsyntax.MAX_DEPTH - 10) + "0\n") * n, "depth_work", newsyntax.MAX_DEPTH_WORK) + "x = = 1\n",
        "limit_brackets_error": _within(lambda n: ("x = " + "(" * 199 + "1" + ")" * 199 + "\n") * n, "depth_work", newsyntax.MAX_DEPTH_WORK) + "x = = 1\n",
        "limit_fstrings": _within(lambda n: ("y = " + _nested_fstrings(newsyntax.MAX_FSTRINGS) + "\n") * n, "fstring_work", newsyntax.MAX_FSTRING_WORK),
        "limit_all_error": _all_limits(),
        "limit_new_syntax": 'k = f"{"a"}"\n' + _ordinary(limit),
        "limit_new_syntax_truncated": 'k = f"{"a"}"\n' + _ordinary(limit)[:-20],
    }


HEAVY = {"limit_all_error", "truncated_mid_token", "truncated_mid_string", "truncated_open_bracket", "limit_chains_error", "limit_depth_error", "limit_brackets_error", "limit_fstrings", "limit_new_syntax", "limit_new_syntax_truncated", "concatenated_strings_error", "nested_ifs"}


def test_every_input_of_the_corpus_is_at_most_1_mb():
    for name, text in attack_corpus().items():
        assert len(text.encode("utf-8")) <= MiB, name


# ---- the measure ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "depth", "chain", "fstrings"),
    [
        ("x = 1\n", 0, 0, 0),
        ("x = " + "(" * 300 + ")" * 300 + "\n", 300, 0, 0),
        ("x = a" + ".b()" * 100 + "\n", 1, 200, 0),
        ("x = a" + " + a" * 100 + "\n", 0, 100, 0),
        ("x = " + "lambda: " * 50 + "0\n", 50, 0, 0),
        ("x = " + "-" * 50 + "0\n", 50, 0, 0),
        ("x = (" + " 'a'" * 50 + ")\n", 50, 0, 0),
        ("y = " + _nested_fstrings(30) + "\n", 60, 0, 30),
        ("".join(" " * depth + "if x:\n" for depth in range(40)) + " " * 40 + "pass\n", 40, 0, 0),
        # Separators end a run: a long argument list or a comparison is no chain.
        ("f(" + ", ".join(f"a.b + {i}" for i in range(500)) + ")\n", 1, 2, 0),
        ("x = a.b + c < d.e\nx = a.b.c.d\n", 0, 3, 0),
        # Brackets, quotes and braces inside strings and comments are text.
        ("x = '(((' + \"[[[\"  # (((\ny = '''\n(((\n'''\n", 0, 1, 0),
        ('x = f"{{{a:>{w}}}}" + f"{x["k"]!r}"\n', 4, 1, 1),
    ],
)
def test_the_measure_counts_depth_chains_and_fstrings(text, depth, chain, fstrings):
    shape = measure(text)
    assert (shape.depth, shape.chain, shape.fstrings) == (depth, chain, fstrings)


def test_the_measure_never_fails_on_broken_text():
    for text in ["x = '''open", "x = 'open\ny = 1\n", ")))]]]}}}", "f'{", "f'{x:{'", "\\", "x = (\n" * 1000, "\t\t if\n  x\n"]:
        assert isinstance(measure(text), Shape)


def test_the_projects_own_code_is_far_inside_the_limits():
    """No false refusals: real code (this project's, with its deep test data) measures well
    inside the limits the fallback and the rules set."""
    for path in sorted((ROOT / "recompile_lint").rglob("*.py")):
        shape = measure(path.read_text(encoding="utf-8"))
        assert refusal(shape, 100, 100, 4) is None, (path, shape)


def test_the_measure_is_linear_and_cheap():
    text = _ordinary(MiB)
    started = time.process_time()
    measure(text)
    assert time.process_time() - started < 5.0


def test_the_fallback_refuses_what_it_cannot_parse_safely_with_a_reason():
    corpus = attack_corpus()
    expected = {
        "nested_brackets": "a file over 64 KiB",
        "nested_fstrings": "f-strings nest 200 deep",
        "call_chain_error": "chains 8,000 terms",
        "plus_chain_error": "chains 4,000 terms",
        "nested_lambdas_error": "a file over 64 KiB",
        "truncated_mid_token": "a file over 64 KiB",
    }
    for name, reason in expected.items():
        with pytest.raises(newsyntax.Refused, match=reason):
            newsyntax.parse_module(corpus[name])
    for text, reason in [("x = " + "(" * 20_000 + ")" * 20_000 + "\n", "nests 20,000 levels"), ("x = " + "lambda: " * 5_000 + "0\nx = = 1\n", "nests 5,000 levels")]:
        with pytest.raises(newsyntax.Refused, match=reason):
            newsyntax.parse_module(text)
    for name in ("limit_chains_error", "limit_depth_error", "limit_brackets_error", "limit_fstrings", "limit_all_error", "limit_new_syntax"):
        assert newsyntax.refusal(corpus[name]) is None, name
    # Past the limits on the sums, by a little.
    for text, reason in [
        (corpus["limit_chains_error"] * 2, "chained expressions are too long"),
        (corpus["limit_brackets_error"] + ("x = " + "(" * 199 + "1" + ")" * 199 + "\n") * 5, "nests too deeply for its size"),
        (corpus["limit_fstrings"] * 2, "f-strings nest too deeply for their number"),
    ]:
        assert reason in (newsyntax.refusal(text) or ""), reason


@pytest.mark.skipif(not newsyntax.NEEDED, reason="the fallback to libcst exists before Python 3.12 only")
def test_a_refused_file_keeps_the_interpreters_syntax_error_and_says_why():
    with pytest.raises(SyntaxError, match=r"not read as Python 3\.12 syntax: .*chains 8,000 terms"):
        parsing.parse_source(attack_corpus()["call_chain_error"], "bad.py")


def test_a_snippet_ast_rejects_is_measured_before_libcst_sees_it():
    """``parse_cst`` on text ``ast`` cannot measure (here broken): refused from its text."""
    for snippet, reason in [("x = " + "(" * 50_000 + "\n$\n", "nests"), ("x = a" + ".b()" * 4_000 + "\nx = = 1\n", "chains")]:
        with pytest.raises(parsing.CstRefused, match=reason):
            parsing.check_cst_shape(snippet)


# ---- the front ends, in processes of their own -----------------------------------------------


def measured(command: list[str], cwd: Path, stdin: bytes | None = None, limit: float = MOST_WALL_SECONDS) -> tuple[int, float, float, int, str]:
    """(exit status, a negative signal number when killed; processor seconds and peak RSS in
    bytes of the process and the children it waited for; wall seconds; its output) of
    ``command``, killed after ``limit`` seconds."""
    out = cwd.parent / f"{cwd.name}.out"
    env = {**os.environ, "RECOMPILE_LINT_NO_SERVER": "1", "XDG_CACHE_HOME": str(cwd.parent / "xdg")}
    with open(out, "wb") as sink:
        result = run_measured(command, cwd=cwd, stdout=sink, env=env, stdin=stdin, limit=limit)
    return result.code, result.processor, result.seconds, result.peak_bytes, out.read_text(encoding="utf-8", errors="replace")


def attack_project(tmp_path: Path, name: str, text: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    (project / "good.py").write_text(SEED_SOURCE, encoding="utf-8")
    (project / f"{name}.py").write_text(text, encoding="utf-8")
    return project


def _corpus_params() -> list:
    return [pytest.param(name, marks=[pytest.mark.slow] if name in HEAVY else []) for name in attack_corpus()]


@pytest.mark.parametrize("name", _corpus_params())
def test_the_cli_lints_each_attack_in_bounded_time_and_memory(tmp_path, name):
    text = attack_corpus()[name]
    project = attack_project(tmp_path, name, text)
    code, seconds, wall, peak, output = measured([sys.executable, "-m", "recompile_lint", "--no-cache", "."], project)
    assert code >= 0, f"killed by signal {-code}: {output[-2000:]}"
    assert "Traceback" not in output, output[-3000:]
    # The rest of the run goes on: the good file's finding is reported.
    assert "good.py:8:16: RCL101" in output, output[-3000:]
    assert seconds < MOST_SECONDS, f"{name}: {seconds:.1f} s"
    assert peak < MOST_BYTES, f"{name}: {peak / MiB:.0f} MiB"
    print(f"{name}: {seconds:.2f} s, {peak / MiB:.0f} MiB, exit {code} (wall {wall:.2f} s)")


@pytest.mark.parametrize("name", ["nested_brackets", "call_chain_error", "nested_fstrings"])
def test_flake8_survives_each_attack(tmp_path, name):
    project = attack_project(tmp_path, name, attack_corpus()[name])
    code, seconds, _, peak, output = measured([sys.executable, "-m", "flake8", "--select=RCL", "-j", "1", "good.py", f"{name}.py"], project)
    assert code >= 0, f"killed by signal {-code}: {output[-2000:]}"
    assert "Traceback" not in output, output[-3000:]
    assert "good.py:8:16: RCL101" in output, output[-3000:]
    assert seconds < MOST_SECONDS and peak < MOST_BYTES, (seconds, peak)


@pytest.mark.parametrize("name", ["nested_brackets", "call_chain_error"])
def test_the_language_server_survives_an_open_attack_and_goes_on(tmp_path, name):
    from test_lsp import Client, open_params

    project = attack_project(tmp_path, name, "")
    client = Client(project)
    try:
        client.request("initialize", {"processId": os.getpid(), "rootUri": project.as_uri(), "capabilities": {}})
        client.notify("initialized")
        bad = project / f"{name}.py"
        client.notify("textDocument/didOpen", open_params(bad, attack_corpus()[name]))
        assert all(d.get("code") != "RCL101" for d in client.diagnostics(bad.as_uri()))
        good = project / "good.py"
        client.notify("textDocument/didOpen", open_params(good, SEED_SOURCE))
        assert any(d.get("code") == "RCL101" for d in client.diagnostics(good.as_uri()))
        assert client.process.poll() is None
    finally:
        client.close()
