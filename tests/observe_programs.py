"""Run the programs of ``fixtures/programs/`` under the recorder and write ``observed.json``.

Usage (torch needed)::

    python tests/observe_programs.py                 # every program, writes observed.json
    python tests/observe_programs.py lora_serving    # only the named programs
    python tests/observe_programs.py --check         # compare with the committed files, write nothing

Each program runs as ``python run.py`` from its own directory, in a child process with its own
session and a timeout, the way ``recompile-lint verify --run "python run.py"`` runs it: the
verifier's ``Recorder`` around ``runpy.run_path``, and every ``torch.compile`` that names no
backend (or a string) forced to ``backend="eager"`` (recompiles are decided by Dynamo's guards,
not by the backend). The child also keeps what Dynamo's message hides: Dynamo prints local
sources without their scope (``self.step``), so the child wraps the function that strips it
(``torch._dynamo.guards.strip_local_scope``) and keeps the unstripped text (``L['self'].step``)
beside each message it returns unchanged.

``observed.json`` holds, per compiled code object (file relative to the program, first line,
qualified name, the region name the linter would give it): graphs (cache entries), recompile
events (``Recompiling function`` records, the refused attempt at the limit included), whether
``recompile_limit`` was hit, and each distinct guard failure: the guard as printed and
unstripped, its source in Dynamo's spelling, its kind, the ``file:line`` it points at, the
line of the program that causes it (from the inline expectations), and the first full reason.
The format is documented in ``fixtures/programs/README.md``.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recompile_lint.lab.observe import guard_kind_and_source, normalise, record, recompile_events, relative_file  # noqa: F401 - guard_kind_and_source: the tests read it here

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "fixtures" / "programs"
TIMEOUT_S = 120.0

# An inline expectation: ``# RCL104[error]`` or ``# RCL101[warning] RCL301[info]`` ending a line.
EXPECT = re.compile(r"#\s*(RCL\d{3}(?:\[\w+\])?(?:[ ,]+RCL\d{3}(?:\[\w+\])?)*)\s*$")
EXPECT_ITEM = re.compile(r"(RCL\d{3})(?:\[(\w+)\])?")
# Declarations in a program's ``run.py`` docstring.
EXPECTED_GRAPHS = re.compile(r"^\s*Expected graphs:\s*(\d+)\s*$", re.MULTILINE)
CAUSE = re.compile(r"^\s*Cause:\s*(?P<source>.+?)\s+at\s+(?P<file>[\w./-]+\.py):(?P<line>\d+)\s*$", re.MULTILINE)


# --------------------------------------------------------------------------------------------
# The child: runs one program under the recorder and dumps what it saw.
# --------------------------------------------------------------------------------------------


def child_main(out_path: str, backend: str = "eager") -> None:
    """Run ``run.py`` of the working directory under the recorder; write the raw record."""
    import runpy

    import torch

    from recompile_lint.verify.child import force_backend

    # The program sees what ``python run.py`` gives it: its own directory first, and neither
    # this script's directory nor the repository root (a program module named ``helpers`` or
    # ``bench`` must be the program's own).
    hidden = {"", ".", str(Path(__file__).resolve().parent), str(ROOT)}
    sys.path[:] = [os.getcwd()] + [p for p in sys.path if p not in hidden]
    sys.argv = ["run.py"]
    force_backend(torch, backend)
    data = record(lambda: runpy.run_path("run.py", run_name="__main__"))
    data["torch"] = torch.__version__
    data["python"] = "%d.%d" % sys.version_info[:2]
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # threads or atexit hooks of the program cannot keep the child alive


@dataclass(frozen=True)
class RawRun:
    """What the child reported, how long it took, and the tail of its output."""

    data: dict[str, Any]
    returncode: int | None
    timed_out: bool
    seconds: float
    output_tail: str


def run_program(program: Path, timeout: float = TIMEOUT_S, backend: str = "eager") -> RawRun:
    """Run one program in a child process (own session, killed whole on the timeout)."""
    with tempfile.TemporaryDirectory(prefix="observe-") as tmp:
        out = Path(tmp) / "raw.json"
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
        env.pop("TORCH_LOGS", None)  # the same messages whatever the caller's logging
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-B", str(Path(__file__).resolve()), "--child", str(out), backend],
            cwd=program,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        timed_out = False
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
        seconds = time.monotonic() - started
        try:
            data = json.loads(out.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
    tail = output.decode("utf-8", "replace")[-4000:]
    return RawRun(data, None if timed_out else proc.returncode, timed_out, seconds, tail)


# --------------------------------------------------------------------------------------------
# From the raw record to observed.json.
# --------------------------------------------------------------------------------------------

def expectations_of(program: Path) -> dict[tuple[str, int], list[tuple[str, str | None]]]:
    """(relative file, line) -> [(code, severity)] for every inline expectation in a program."""
    out: dict[tuple[str, int], list[tuple[str, str | None]]] = {}
    for path in sorted(program.rglob("*.py")):
        rel = path.relative_to(program).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            match = EXPECT.search(line)
            if match:
                out[(rel, number)] = [(c, s or None) for c, s in EXPECT_ITEM.findall(match.group(1))]
    return out


def declarations(program: Path) -> tuple[int | None, dict[str, tuple[str, int]]]:
    """``Expected graphs: N`` and ``Cause: SOURCE at FILE:LINE`` from run.py's docstring."""
    doc = ast.get_docstring(ast.parse((program / "run.py").read_text(encoding="utf-8"))) or ""
    graphs = EXPECTED_GRAPHS.search(doc)
    causes = {m.group("source"): (m.group("file"), int(m.group("line"))) for m in CAUSE.finditer(doc)}
    return (int(graphs.group(1)) if graphs else None), causes


def module_name(rel: str) -> str:
    """The dotted module of a program file (its directory is the import root)."""
    return rel[: -len(".py")].replace("/", ".").removesuffix(".__init__")


def functions_by_line(path: Path) -> dict[int, str]:
    """First line of each function (its first decorator, as ``co_firstlineno``) -> qualname."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: dict[int, str] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    out.setdefault(first, name)
                    walk(child, f"{name}.<locals>.")
                else:
                    walk(child, f"{name}.")
            elif isinstance(child, ast.Lambda):
                out.setdefault(child.lineno, f"{prefix}<lambda>")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def observation(program: Path, raw: RawRun) -> dict[str, Any]:
    """The committed record of one run (deterministic: no ids, times or absolute paths)."""
    data = raw.data
    expected = expectations_of(program)
    _, declared = declarations(program)

    def rel(file: str) -> str:
        return relative_file(file, program)

    functions: dict[tuple[str, int, str], dict[str, Any]] = {}
    for file, line, name, graphs, qualname in data.get("graphs", []):
        relfile = rel(file)
        entry = functions.setdefault((relfile, line, name), _function(program, relfile, line, name, qualname))
        entry["graphs"] = graphs
    for hit in data.get("limit_hits", []):
        key = (rel(hit["file"]), hit["first_line"], hit["function"].rsplit(".", 1)[-1])
        entry = functions.setdefault(key, _function(program, key[0], key[1], key[2], hit["function"]))
        entry["limit_hit"] = True
    for key, event_failures in recompile_events(data, program):
        entry = functions.setdefault(key, _function(program, key[0], key[1], key[2], key[2]))
        entry["recompile_events"] += 1
        for failure in event_failures:
            source, kind, detail, location = failure.source, failure.kind, failure.detail, failure.location
            cause = _cause(source, kind, location, expected, declared)
            failure_key = (source, kind, detail, location)
            failures = entry["guard_failures"]
            found = next((f for f in failures if (f["source"], f["kind"], f["detail"], f["location"]) == failure_key), None)
            if found is None:
                failures.append({
                    "source": source,
                    "kind": kind,
                    "detail": detail,
                    "guard": normalise(" ".join(failure.reason["guard"].split()), program),
                    "guard_unstripped": normalise(" ".join(failure.guard.split()), program),
                    "location": location,
                    "function": failure.reason.get("function", ""),
                    "cause": cause,
                    "events": 1,
                    "reason": normalise("\n".join(failure.block), program),
                })
            else:
                found["events"] += 1
    for entry in functions.values():
        if not entry["region"]:
            entry["region"] = _wrapped_region(program, entry)
    result = {
        "program": program.name,
        "command": "python run.py",
        "backend": "eager",
        "torch": data.get("torch", ""),
        "exit_code": data.get("exit_code") if raw.data else None,
        "functions": sorted(functions.values(), key=lambda f: (f["file"], f["first_line"], f["name"])),
    }
    if data.get("detail"):
        result["detail"] = data["detail"]
    return result


def _function(program: Path, relfile: str, line: int, name: str, qualname: str) -> dict[str, Any]:
    region = ""
    resume_of = ""
    path = program / relfile
    if path.is_file():
        by_line = functions_by_line(path)
        defined = by_line.get(line, "")
        if name.startswith("torch_dynamo_resume_in_"):
            # A resume function after a graph break: its own code object and cache, with the
            # first line of the function it resumes.
            resume_of = defined
            region = f"{module_name(relfile)}.{defined}" if defined else ""
        else:
            qualname = qualname if "." in qualname or not defined else defined
            region = f"{module_name(relfile)}.{qualname}"
    entry: dict[str, Any] = {
        "file": relfile,
        "first_line": line,
        "name": name,
        "qualname": qualname,
        "region": region,
        "graphs": 0,
        "recompile_events": 0,
        "limit_hit": False,
        "guard_failures": [],
    }
    if resume_of:
        entry["resume_of"] = resume_of
    return entry


def enclosing_function(path: Path, line: int) -> str:
    """Qualified name of the innermost function of ``path`` whose body holds ``line``."""
    best = ""

    def walk(node: ast.AST, prefix: str) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                if child.lineno <= line <= (child.end_lineno or child.lineno):
                    best = name
                walk(child, f"{name}.<locals>.")
            else:
                walk(child, prefix)

    walk(ast.parse(path.read_text(encoding="utf-8")), "")
    return best


def _wrapped_region(program: Path, entry: dict[str, Any]) -> str:
    """The program function a torch wrapper frame runs (``torch.compile(obj.method)`` compiles
    ``wrap_inline``'s ``inner``): the function its guards point into."""
    for failure in entry["guard_failures"]:
        where = failure["location"]
        if not where or where.startswith("<"):
            continue
        file, _, line = where.rpartition(":")
        qualname = enclosing_function(program / file, int(line))
        if qualname:
            return f"{module_name(file)}.{qualname}"
    return ""


def _cause(source: str, kind: str, location: str, expected: dict, declared: dict[str, tuple[str, int]]) -> str:
    """The program line that causes a guard failure: declared (by source, or by kind for the
    guards without one), the line Dynamo points at when it carries an expectation, or the
    program's only expectation line."""
    if (source or kind) in declared:
        file, line = declared[source or kind]
        return f"{file}:{line}"
    if location:
        file, _, line = location.rpartition(":")
        if (file, int(line)) in expected:
            return location
    if len(expected) == 1:
        (file, line), = expected
        return f"{file}:{line}"
    return ""


# --------------------------------------------------------------------------------------------
# Checks of a program's truth against its observation (used here and by the tests).
# --------------------------------------------------------------------------------------------


def truth_problems(program: Path, observed: dict[str, Any]) -> list[str]:
    """What the observation contradicts in the program's declared truth (empty: consistent)."""
    problems = []
    expected = expectations_of(program)
    declared_graphs, declared_causes = declarations(program)
    severities = {s for items in expected.values() for _, s in items}
    functions = observed["functions"]
    if observed.get("exit_code") != 0:
        problems.append(f"the program exited with {observed.get('exit_code')}: {observed.get('detail', '')}")
    if any(None in (s,) for s in severities):
        problems.append("every expectation names its severity: # RCL104[error]")
    most = max((f["graphs"] for f in functions), default=0)
    hit = any(f["limit_hit"] for f in functions)
    if "error" in severities and not hit:
        problems.append("an [error] expectation but no function reached recompile_limit")
    if "error" not in severities and hit:
        problems.append("a function reached recompile_limit but no expectation is an [error]")
    if "error" not in severities:
        allowed = declared_graphs if declared_graphs is not None else 1
        if most != allowed:
            problems.append(f"expected at most {allowed} graphs per function (and that many), observed {most}")
        if severities & {"warning", "info"} and declared_graphs is None:
            problems.append("a bounded program declares its graphs: 'Expected graphs: N' in run.py's docstring")
    for source, (file, line) in declared_causes.items():
        if (file, line) not in expected:
            problems.append(f"Cause of {source} at {file}:{line}: that line has no expectation comment")
    for function in functions:
        for failure in function["guard_failures"]:
            if not failure["cause"]:
                problems.append(
                    f"no cause line for {failure['source'] or failure['kind']} ({failure['location'] or 'no location'}):"
                    " declare it in run.py's docstring ('Cause: SOURCE at FILE:LINE')"
                )
    return problems


def observed_path(program: Path) -> Path:
    return program / "observed.json"


def program_dirs(names: list[str] | None = None) -> list[Path]:
    """The program directories (those with a ``run.py``), or the named ones."""
    found = sorted(p.parent for p in PROGRAMS.glob("*/run.py"))
    if names:
        wanted = set(names)
        unknown = wanted - {p.name for p in found}
        if unknown:
            raise SystemExit(f"observe_programs: no such program: {', '.join(sorted(unknown))}")
        found = [p for p in found if p.name in wanted]
    return found


def summary_line(program: Path, observed: dict[str, Any], raw: RawRun) -> str:
    parts = []
    for f in observed["functions"]:
        if f["graphs"] > 1 or f["limit_hit"] or f["guard_failures"]:
            sources = ", ".join(sorted({g["source"] or g["kind"] for g in f["guard_failures"]}))
            parts.append(f"{f['qualname']}: {f['graphs']} graphs{' LIMIT' if f['limit_hit'] else ''} [{sources}]")
    what = "; ".join(parts) or "one graph per function"
    # Wall time of the child (torch import included), then wall and CPU time of the program
    # itself (CPU time says more on a busy machine).
    own = f"{raw.data.get('seconds', 0.0):5.1f}s {raw.data.get('cpu_seconds', 0.0):5.1f}s cpu"
    return f"{program.name:32s} {raw.seconds:5.1f}s {own}  {what}"


def dump(observed: dict[str, Any]) -> str:
    return json.dumps(observed, indent=2, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="program directories under fixtures/programs/ (default: all)")
    parser.add_argument("--check", action="store_true", help="compare with the committed observed.json, write nothing")
    parser.add_argument("--jobs", "-j", type=int, default=1, help="programs run at once (default 1)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per program")
    parser.add_argument(
        "--backend", default="eager", help="backend forced on torch.compile (default eager; any other only prints, writes nothing)"
    )
    args = parser.parse_args(argv)
    if args.backend != "eager":
        args.check = False
    programs = program_dirs(args.names)
    status = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        runs = {p: pool.submit(run_program, p, args.timeout, args.backend) for p in programs}
        for program, future in runs.items():
            raw = future.result()
            if not raw.data:
                print(f"{program.name}: the child reported nothing ({'timed out' if raw.timed_out else raw.returncode})")
                print(raw.output_tail)
                status = 1
                continue
            observed = observation(program, raw)
            print(summary_line(program, observed, raw))
            for problem in truth_problems(program, observed):
                print(f"  ! {problem}")
                status = 1
            if observed.get("exit_code") != 0:
                print(raw.output_tail)
            path = observed_path(program)
            if args.backend != "eager":
                continue
            if args.check:
                committed = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
                if committed is None or essence(committed) != essence(observed):
                    print(f"  ! {path.relative_to(ROOT)} is not current")
                    status = 1
            else:
                path.write_text(dump(observed), encoding="utf-8")
    return status


def essence(observed: dict[str, Any]) -> list[tuple]:
    """What must not change between runs: per function, the counts and the guard sources."""
    out = []
    for f in observed["functions"]:
        sources = sorted({(g["kind"], g["source"], g["detail"], g["location"]) for g in f["guard_failures"]})
        out.append((f["file"], f["first_line"], f["name"], f["graphs"], f["recompile_events"], f["limit_hit"], tuple(sources)))
    return sorted(out)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child_main(sys.argv[2], sys.argv[3])
    sys.exit(main())
