"""Benchmark the static linter against the ``ast.parse`` floor and TorchFix.

Usage (from the repository root, in the virtualenv that has recompile-lint and torch)::

    python bench/bench_static.py                       # everything, 3 runs each
    python bench/bench_static.py --corpus nn-optim --corpus synth-1000 --repeat 5
    python bench/bench_static.py --sizes 100,1000      # smaller synthetic projects
    python bench/bench_static.py --json results.json   # also write every run as JSON

Corpora (copied or generated into a temporary directory, each with a ``pyproject.toml`` so it
is its own project root; nothing under the installed packages is written to):

- ``torch``: every ``.py``/``.pyi`` of the installed torch package (located without importing
  it); ``nn-optim``: ``torch/nn`` and ``torch/optim`` (plus ``torch/__init__.py``);
- ``synth-N``: the synthetic project of ``bench/make_synthetic.py`` (N modules, compiled
  regions reaching across modules), for N in ``--sizes``;
- ``single``: one large file (``torch/nn/modules/module.py``) alone in a project.

Per corpus, each tool runs in its own subprocess, the tools taking turns (round 1 runs each
tool once, then round 2...: load that changes during the benchmark weighs on all of them
alike); wall time, CPU time (user + system) and peak resident memory come from ``os.wait4``
(CPU and memory include worker processes). Tools:

- ``ast-floor``: ``ast.parse`` of the same files in one process (the cost of reading Python);
- ``rl``: ``recompile-lint --no-cache -j 1``; ``rl-j2``: ``-j 2``;
- ``rl-cold`` / ``rl-warm``: ``-j 1`` with an empty cache, then with the cache it filled (an
  unchanged tree: the run cache answers);
- ``torchfix``: TorchFix ``-j 1`` from the venv given by ``--torchfix`` (or found on PATH or at
  ``/tmp/torchfix-venv``; ``--install-torchfix`` creates that venv with pip). ``n/a`` when none.

Then the "one changed file" case: the whole ``recompile-lint <file>`` process, start-up
included, for two modules of ``synth-1000`` whose code is edited before each run (a module
constant changes; the rest of the project in a warm cache, and without a cache): one that
compiles functions, one whose helpers other modules' regions reach. And a fixture of this
repository, unchanged (a warm run is answered from the run cache). The same cases again as
``rl-server``: through a resident server of the benchmark's own (``recompile-lint server
start``) that has answered a run over the whole project, and the two edits as
``rl-started``: through the server a first ``--start-server`` run of the same command left
(the pre-commit snippet's flow); and the editor's flow, ``synth-1000 buffer``: the edited
module on standard input (``--stdin-filename``), the file on disk unchanged, without and
through that server. ``python -c pass`` is the
interpreter's own start-up, the floor of any command (an editable install of recompile-lint
adds ~30 ms to it: its import finder; measure a regular ``pip install .`` for the figures
users get).

Tools run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed from their
environment, the package byte-compiled first), as an installed copy runs.

Medians over ``--repeat`` runs are printed; the machine's load average is printed with them,
because wall time on a shared machine says little: compare CPU times there.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from make_synthetic import generate  # noqa: E402

FLOOR_SCRIPT = """
import ast, sys
with open(sys.argv[1], encoding="utf-8") as handle:
    paths = handle.read().splitlines()
for path in paths:
    with open(path, "rb") as source:
        data = source.read()
    try:
        ast.parse(data, filename=path)
    except (SyntaxError, ValueError):
        pass
"""
TORCHFIX_VENV = Path(tempfile.gettempdir()) / "torchfix-venv"


@dataclass
class Run:
    """One subprocess: wall and CPU seconds, peak RSS in MiB, exit status."""

    wall: float
    cpu: float
    peak_mib: float
    rc: int
    problem: str = ""


@dataclass
class Measurement:
    corpus: str
    tool: str
    files: int
    megabytes: float
    runs: list[Run] = field(default_factory=list)

    def median(self, attr: str) -> float:
        values = [getattr(r, attr) for r in self.runs if not r.problem]
        return statistics.median(values) if values else float("nan")

    @property
    def problem(self) -> str:
        return next((r.problem for r in self.runs if r.problem), "")


def run_process(cmd: Sequence[str], cwd: Path, ok_codes: Sequence[int] = (0, 1, 2), env: dict[str, str] | None = None, stdin: bytes | None = None) -> Run:
    """Run ``cmd`` (with ``stdin`` on its standard input); resource usage of it and its
    (waited-for) children via wait4 (a resident server's work is not among them: its rows
    are compared by wall time)."""
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as given:
        given.write(stdin or b"")
        given.seek(0)
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=cwd, stdin=given, stdout=subprocess.DEVNULL, stderr=err, env=env or tool_environment())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    problem = ""
    if proc.returncode not in ok_codes or "internal error" in stderr or "Traceback" in stderr:
        problem = f"exit {proc.returncode}: {stderr.strip().splitlines()[-1] if stderr.strip() else ''}"
    # ru_maxrss is in KiB on Linux.
    return Run(wall=wall, cpu=usage.ru_utime + usage.ru_stime, peak_mib=usage.ru_maxrss / 1024, rc=proc.returncode, problem=problem)


def tool_environment() -> dict[str, str]:
    """The environment tools run in: bytecode caching on, as in any installed copy (a shell
    with ``PYTHONDONTWRITEBYTECODE`` set would make every run compile every module again), and
    no resident server (only the ``rl-server`` rows use one, their own)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["RECOMPILE_LINT_NO_SERVER"] = "1"
    return env


def server_environment(work: Path) -> dict[str, str]:
    """``tool_environment`` with a resident server of its own, in ``work``."""
    env = tool_environment()
    del env["RECOMPILE_LINT_NO_SERVER"]
    env["RECOMPILE_LINT_SERVER_DIR"] = str(work / "srv")
    return env


def compile_package() -> None:
    """Byte-compile recompile-lint once, so that no measured run pays for it."""
    spec = importlib.util.find_spec("recompile_lint")
    if spec is not None and spec.origin:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(spec.origin).parent)], check=False, env=tool_environment())


def lint_command() -> list[str]:
    script = Path(sys.executable).with_name("recompile-lint")
    return [str(script)] if script.exists() else [sys.executable, "-m", "recompile_lint"]


def parallel_command() -> list[str]:
    """``recompile-lint`` for ``-j 2`` (the engine parses batches in worker processes)."""
    return lint_command()


def find_torchfix(explicit: str | None, install: bool) -> str | None:
    if explicit:
        return explicit if Path(explicit).exists() or shutil.which(explicit) else None
    for candidate in (shutil.which("torchfix"), str(TORCHFIX_VENV / "bin" / "torchfix")):
        if candidate and Path(candidate).exists():
            return candidate
    if install:
        try:
            subprocess.run([sys.executable, "-m", "venv", str(TORCHFIX_VENV)], check=True, capture_output=True)
            subprocess.run([str(TORCHFIX_VENV / "bin" / "pip"), "install", "-q", "torchfix"], check=True, capture_output=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"# TorchFix could not be installed: {exc}", file=sys.stderr)
            return None
        found = TORCHFIX_VENV / "bin" / "torchfix"
        return str(found) if found.exists() else None
    return None


def torch_source() -> Path:
    spec = importlib.util.find_spec("torch")  # locates the package; does not import it
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("bench: torch is not installed in this environment")
    return Path(list(spec.submodule_search_locations)[0])


def copy_python(src: Path, dst: Path, only: Sequence[str] = ()) -> None:
    """Copy the .py/.pyi files of ``src`` (or of its subdirectories ``only``) into ``dst``."""
    roots = [src / o for o in only] if only else [src]
    for root in roots:
        if root.is_file():
            target = dst / root.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root, target)
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in filenames:
                if name.endswith((".py", ".pyi")):
                    source = Path(dirpath) / name
                    target = dst / source.relative_to(src)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(source, target)


def mark_root(directory: Path) -> None:
    (directory / "pyproject.toml").write_text('[project]\nname = "bench-corpus"\nversion = "0"\n', encoding="utf-8")


def corpus_files(directory: Path) -> list[str]:
    from recompile_lint.config import Config
    from recompile_lint.discovery import discover

    return [os.path.abspath(p) for p in discover([str(directory)], Config().exclude).files]


def prepare(name: str, work: Path) -> tuple[Path, str]:
    """(project directory, lint target inside it) of corpus ``name``."""
    directory = work / name
    if directory.exists():
        return directory, _target(name)
    directory.mkdir(parents=True)
    mark_root(directory)
    if name == "torch":
        copy_python(torch_source(), directory / "torch")
    elif name == "nn-optim":
        copy_python(torch_source(), directory / "torch", only=("__init__.py", "nn", "optim"))
    elif name == "single":
        shutil.copy2(torch_source() / "nn" / "modules" / "module.py", directory / "module.py")
    elif name.startswith("synth-"):
        generate(directory, int(name.split("-", 1)[1]))
    else:
        raise SystemExit(f"bench: unknown corpus {name!r}")
    return directory, _target(name)


def _target(name: str) -> str:
    return {"torch": "torch", "nn-optim": "torch", "single": "module.py"}.get(name, ".")


def measure_corpus(name: str, work: Path, repeat: int, torchfix: str | None, out: list[Measurement], torchfix_max_mb: float = float("inf")) -> None:
    directory, target = prepare(name, work)
    files = corpus_files(directory)
    megabytes = sum(os.path.getsize(f) for f in files) / 1e6
    listing = work / f"{name}.files"
    listing.write_text("\n".join(files), encoding="utf-8")
    lint = lint_command()
    cache = work / f"{name}.cache"
    tools: list[tuple[str, list[str], bool]] = [
        ("ast-floor", [sys.executable, "-c", FLOOR_SCRIPT, str(listing)], False),
        ("rl", [*lint, "--no-cache", "-j", "1", target], False),
        ("rl-j2", [*parallel_command(), "--no-cache", "-j", "2", target], False),
        ("rl-cold", [*lint, "--cache-dir", str(cache), "-j", "1", target], True),
        ("rl-warm", [*lint, "--cache-dir", str(cache), "-j", "1", target], False),
    ]
    if torchfix and megabytes <= torchfix_max_mb:
        tools.append(("torchfix", [torchfix, "-j", "1", target], False))
    elif torchfix:
        print(f"#   {name:<11} torchfix   skipped: {megabytes:.1f} MB is over --torchfix-max-mb {torchfix_max_mb}", flush=True)
    # Interleaved: each round runs every tool once, so load that drifts during the benchmark
    # weighs on all of them alike and the ratios stay fair. rl-cold empties the cache and
    # fills it; rl-warm, next, runs on what it filled.
    measured = [Measurement(corpus=name, tool=tool, files=len(files), megabytes=megabytes) for tool, _, _ in tools]
    for round_ in range(repeat):
        for (tool, cmd, clear_cache), m in zip(tools, measured):
            if clear_cache:
                shutil.rmtree(cache, ignore_errors=True)
            m.runs.append(run_process(cmd, directory, ok_codes=(0, 1, 2) if tool != "torchfix" else tuple(range(256))))
        print(f"#   {name:<11} round {round_ + 1}/{repeat}: " + "  ".join(f"{m.tool} {m.runs[-1].wall:.2f}s" for m in measured), flush=True)
    for m in measured:
        out.append(m)
        print(f"#   {name:<11} {m.tool:<10} wall {m.median('wall'):8.2f}s  cpu {m.median('cpu'):8.2f}s  peak {m.median('peak_mib'):7.0f} MiB {m.problem}", flush=True)


def edited(text: str, i: int) -> str:
    """``text`` with a code change (a module constant takes a new value), not just a comment."""
    lines = text.split("\n")
    for n, line in enumerate(lines):
        if line.startswith("SCALE = "):
            lines[n] = f"SCALE = {10 + i}"
            return "\n".join(lines)
    return text + f"\nEDITED_{i} = {i}\n"


def measure_changed_file(work: Path, repeat: int, out: list[Measurement]) -> None:
    """The pre-commit case: ``recompile-lint <one file>`` as a whole process, after an edit."""
    lint = lint_command()
    directory, _ = prepare("synth-1000", work)
    # One module that compiles (its regions' code gets libcst and every rule) and one whose
    # helpers other modules' regions reach (it holds no compile site).
    compiling = Path("synth") / "pkg_005" / "mod_00500.py"
    helper = Path("synth") / "pkg_005" / "mod_00503.py"
    cache = work / "changed.cache"
    shutil.rmtree(cache, ignore_errors=True)
    run_process([*lint, "--cache-dir", str(cache), "."], directory)  # the rest of the project is cached
    originals = {p: (directory / p).read_text(encoding="utf-8") for p in (compiling, helper)}
    fixture = "fixtures/rcl1xx/global_int_counter.py"
    cases = [
        ("synth-1000 edit, compiles", "rl-warm", [*lint, "--cache-dir", str(cache), str(compiling)], directory, compiling),
        ("synth-1000 edit, compiles", "rl", [*lint, "--no-cache", str(compiling)], directory, compiling),
        ("synth-1000 edit, helper", "rl-warm", [*lint, "--cache-dir", str(cache), str(helper)], directory, helper),
        ("synth-1000 edit, helper", "rl", [*lint, "--no-cache", str(helper)], directory, helper),
        ("repo fixture, unchanged", "rl-warm", [*lint, "--cache-dir", str(work / "repo.cache"), fixture], REPO, None),
        ("repo fixture, unchanged", "rl", [*lint, "--no-cache", fixture], REPO, None),
        ("start-up", "rl --version", [*lint, "--version"], REPO, None),
        ("start-up", "python -c pass", [sys.executable, "-c", "pass"], REPO, None),
    ]
    # The same through a resident server (``recompile-lint server start``) that has answered
    # a run over the whole project: its imports are done and the project's facts in memory.
    served = server_environment(work)
    server_cases = [
        ("synth-1000 edit, compiles", [*lint, "--cache-dir", str(cache), str(compiling)], directory, compiling),
        ("synth-1000 edit, helper", [*lint, "--cache-dir", str(cache), str(helper)], directory, helper),
        ("repo fixture, unchanged", [*lint, "--cache-dir", str(work / "repo.cache"), fixture], REPO, None),
        ("start-up", [*lint, "--version"], REPO, None),
    ]
    try:
        for corpus, tool, cmd, cwd, target in cases:
            m = Measurement(corpus=corpus, tool=tool, files=1, megabytes=0.0)
            if tool == "rl-warm" and target is None:
                run_process(cmd, cwd)
            for i in range(repeat):
                if target is not None:
                    (directory / target).write_text(edited(originals[target], i), encoding="utf-8")
                m.runs.append(run_process(cmd, cwd))
            out.append(m)
            print(f"#   {corpus:<26} {tool:<12} wall {m.median('wall'):6.3f}s  cpu {m.median('cpu'):6.3f}s {m.problem}", flush=True)
        if start_server(lint, directory, cache, served):
            for corpus, cmd, cwd, target in server_cases:
                m = Measurement(corpus=corpus, tool="rl-server", files=1, megabytes=0.0)
                run_process(cmd, cwd, env=served)  # the server reads what this run used
                wait_for_server(lint, served)
                for i in range(repeat):
                    if target is not None:
                        (directory / target).write_text(edited(originals[target], repeat + i), encoding="utf-8")
                    m.runs.append(run_process(cmd, cwd, env=served))
                out.append(m)
                print(f"#   {corpus:<26} {'rl-server':<12} wall {m.median('wall'):6.3f}s {m.problem}", flush=True)
        # The pre-commit snippet's flow: no server until a run with --start-server (the first
        # commit, an rl-warm row's cost) leaves one, with only what that run used.
        for corpus, cmd, cwd, target in server_cases[:2]:
            subprocess.run([*lint, "server", "stop"], env=served, capture_output=True, check=False)
            started = [*cmd[:-1], "--start-server", cmd[-1]]
            m = Measurement(corpus=corpus, tool="rl-started", files=1, megabytes=0.0)
            (directory / target).write_text(edited(originals[target], 2 * repeat), encoding="utf-8")
            run_process(started, cwd, env=served)
            wait_for_server(lint, served)
            for i in range(repeat):
                (directory / target).write_text(edited(originals[target], 2 * repeat + 1 + i), encoding="utf-8")
                m.runs.append(run_process(started, cwd, env=served))
            out.append(m)
            print(f"#   {corpus:<26} {'rl-started':<12} wall {m.median('wall'):6.3f}s {m.problem}", flush=True)
        # The editor's flow: the unsaved buffer on standard input (the file on disk unchanged),
        # without a server and through the one the runs above left.
        (directory / compiling).write_text(originals[compiling], encoding="utf-8")
        buffer_cmd = [*lint, "--cache-dir", str(cache), "--format", "json", "--stdin-filename", str(compiling)]
        for tool, env in (("rl-warm", None), ("rl-started", served)):
            m = Measurement(corpus="synth-1000 buffer, compiles", tool=tool, files=1, megabytes=0.0)
            run_process(buffer_cmd, directory, env=env, stdin=edited(originals[compiling], 3 * repeat).encode())
            for i in range(repeat):
                m.runs.append(run_process(buffer_cmd, directory, env=env, stdin=edited(originals[compiling], 3 * repeat + 1 + i).encode()))
            out.append(m)
            print(f"#   {m.corpus:<26} {tool:<12} wall {m.median('wall'):6.3f}s {m.problem}", flush=True)
    finally:
        subprocess.run([*lint, "server", "stop"], env=served, capture_output=True, check=False)
        for path, text in originals.items():
            (directory / path).write_text(text, encoding="utf-8")


def start_server(lint: list[str], directory: Path, cache: Path, env: dict[str, str]) -> bool:
    started = subprocess.run([*lint, "server", "start"], env=env, capture_output=True, text=True, check=False)
    if started.returncode != 0:
        print(f"# the resident server did not start: {started.stderr.strip()}", flush=True)
        return False
    run_process([*lint, "--cache-dir", str(cache), "."], directory, env=env)
    return True


def wait_for_server(lint: list[str], env: dict[str, str], limit: float = 120.0) -> None:
    """Until the server holds every cache entry the runs so far used (its count stops growing)."""
    deadline = time.monotonic() + limit
    last = None
    while time.monotonic() < deadline:
        said = subprocess.run([*lint, "server", "status"], env=env, capture_output=True, text=True, check=False).stdout
        match = re.search(r"(\d+) cache entries", said)
        count = int(match.group(1)) if match else None
        if count and count == last:
            return
        last = count
        time.sleep(0.5)


def ratio(a: float, b: float) -> str:
    if b != b or a != a or b == 0:
        return "n/a"
    return f"{a / b:.1f}x"


def print_table(results: list[Measurement], torchfix: str | None) -> None:
    by = {(m.corpus, m.tool): m for m in results}
    corpora = list(dict.fromkeys(m.corpus for m in results if m.tool == "ast-floor"))
    print()
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}   cores: {os.cpu_count()}   python {sys.version.split()[0]}")
    print("medians; wall | cpu seconds; peak RSS MiB; x floor = rl / ast-floor; tf/rl = TorchFix / rl (single process each)")
    header = f"{'corpus':<11} {'files':>5} {'MB':>6} | {'ast-floor':>15} | {'rl -j1':>15} {'peak':>5} | {'rl -j2':>15} | {'cold cache':>15} | {'warm cache':>15} | {'torchfix -j1':>17} {'peak':>5} | {'x floor':>11} | {'j1/j2':>5} | {'cold/warm':>9} | {'tf/rl':>11}"
    print(header)
    print("-" * len(header))

    def cell(m: Measurement | None, width: int = 15) -> str:
        if m is None:
            return f"{'n/a':>{width}}"
        if m.problem:
            return f"{'failed':>{width}}"
        return f"{m.median('wall'):7.2f}|{m.median('cpu'):7.2f}".rjust(width)

    for corpus in corpora:
        floor, rl, j2 = by.get((corpus, "ast-floor")), by.get((corpus, "rl")), by.get((corpus, "rl-j2"))
        cold, warm, tf = by.get((corpus, "rl-cold")), by.get((corpus, "rl-warm")), by.get((corpus, "torchfix"))
        assert floor is not None
        x_floor = f"{ratio(rl.median('wall'), floor.median('wall'))}|{ratio(rl.median('cpu'), floor.median('cpu'))}" if rl else "n/a"
        tf_rl = f"{ratio(tf.median('wall'), rl.median('wall'))}|{ratio(tf.median('cpu'), rl.median('cpu'))}" if tf and rl else "n/a"
        print(
            f"{corpus:<11} {floor.files:>5} {floor.megabytes:>6.1f} | {cell(floor)} | {cell(rl)} {rl.median('peak_mib') if rl else float('nan'):>5.0f} | {cell(j2)} | {cell(cold)} | {cell(warm)} | {cell(tf, 17)} {tf.median('peak_mib') if tf else float('nan'):>5.0f} | "
            f"{x_floor:>11} | {ratio(rl.median('wall'), j2.median('wall')) if rl and j2 else 'n/a':>5} | {ratio(cold.median('wall'), warm.median('wall')) if cold and warm else 'n/a':>9} | {tf_rl:>11}"
        )
    if not torchfix:
        print("torchfix: n/a (not installed; pass --torchfix PATH or --install-torchfix)")
    single = [m for m in results if m.corpus.startswith(("synth-1000 edit", "synth-1000 buffer", "repo fixture", "start-up"))]
    if single:
        print()
        print("one changed file: whole process wall | cpu seconds (median); rl-server: answered by a resident server (cpu: the client's only),")
        print("  warmed by a run over the project; rl-started: by the server a first --start-server run of the same command left")
        for m in single:
            print(f"  {m.corpus:<24} {m.tool:<13} {m.median('wall'):6.3f} | {m.median('cpu'):6.3f}  peak {m.median('peak_mib'):5.0f} MiB {m.problem}")
    synth = [(int(c.split('-')[1]), by[(c, 'rl')]) for c in corpora if c.startswith("synth-") and (c, "rl") in by]
    if len(synth) > 1:
        print()
        print("growth with project size (rl -j1): cpu ms per module")
        for n, m in sorted(synth):
            print(f"  {n:>6} modules: {1000 * m.median('cpu') / n:7.2f} ms/module  (wall {m.median('wall'):.2f}s, cpu {m.median('cpu'):.2f}s)")


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark recompile-lint's static path.")
    parser.add_argument("--corpus", action="append", help="torch, nn-optim, single, synth-N (repeatable; default: all)")
    parser.add_argument("--sizes", default="100,1000,10000", help="synthetic project sizes (default: 100,1000,10000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per tool and corpus (median reported)")
    parser.add_argument("--torchfix", help="TorchFix executable")
    parser.add_argument("--install-torchfix", action="store_true", help=f"pip install torchfix into {TORCHFIX_VENV}")
    parser.add_argument("--no-torchfix", action="store_true")
    parser.add_argument("--torchfix-max-mb", type=float, default=float("inf"), help="skip TorchFix on larger corpora (it is slow)")
    parser.add_argument("--no-changed-file", action="store_true", help="skip the one-changed-file case")
    parser.add_argument("--workdir", help="where corpora are written (default: a temporary directory, removed after)")
    parser.add_argument("--json", help="write every run to this file")
    args = parser.parse_args()

    corpora = args.corpus or ["nn-optim", "torch", "single", *(f"synth-{n}" for n in args.sizes.split(",") if n)]
    torchfix = None if args.no_torchfix else find_torchfix(args.torchfix, args.install_torchfix)
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="rl-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    results: list[Measurement] = []
    print(f"# corpora in {work}; torchfix: {torchfix or 'n/a'}; {args.repeat} runs each", flush=True)
    compile_package()
    try:
        for name in corpora:
            measure_corpus(name, work, args.repeat, torchfix, results, args.torchfix_max_mb)
        if not args.no_changed_file:
            measure_changed_file(work, args.repeat, results)
    finally:
        print_table(results, torchfix)
        if args.json:
            Path(args.json).write_text(json.dumps([asdict(m) for m in results], indent=1), encoding="utf-8")
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
