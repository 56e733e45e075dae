"""Prove generated programs on the installed torch: run each and record what Dynamo did.

``prove(programs)`` writes every program to a directory of its own and runs them in child
processes, many per child (importing torch costs seconds, a small program milliseconds). A
child runs each program as ``python run.py`` would (``run.py`` as ``__main__``, the program's
directory first on ``sys.path`` and as the working directory) under the verifier's recorder,
with every ``torch.compile`` forced to ``backend="eager"`` (recompiles are decided by guards,
not the backend). Between programs it forgets the program's modules, restores the state a
program can change (torch's grad mode, default dtype, Dynamo's config, the random seeds) and
calls ``torch._dynamo.reset()``, so that programs whose modules share names do not see each
other's code or caches.

Each child runs in its own session. A program that runs past its deadline gets its child
killed whole; the program is recorded as ``ran=False, error="timeout"`` and the rest of its
batch runs in a new child. Only the children import torch.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from recompile_lint.lab.program import Program, write_program
from recompile_lint.lab.proof import CodeRecord, GuardFailureRecord, Proof

TIMEOUT_S = 60.0  # per program; generated programs take well under a second
BATCH = 100  # programs per child at most: importing torch costs a child seconds, a program a fraction
STARTUP_S = 120.0  # importing torch on a busy machine
LIMIT_ERROR = "torch._dynamo.exc.FailOnRecompileLimitHit"  # what fullgraph=True raises at the limit on 2.13
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)


class ProverError(Exception):
    """The prover itself cannot run (no torch, a child that cannot start)."""


@dataclass(frozen=True)
class _Batch:
    programs: tuple[tuple[str, str], ...]  # (key, directory)


def prove(
    programs: Iterable[Program],
    jobs: int = 2,
    timeout: float = TIMEOUT_S,
    batch: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Proof]:
    """Run every program once on the installed torch; its proof per program key.

    ``jobs`` children run at once, each taking ``batch`` programs (default: the programs shared
    evenly among the jobs, at most ``BATCH`` per child); ``timeout`` is the deadline
    of one program in seconds. ``progress(done, total)`` is called after each proof. Raises
    ``ProverError`` when torch cannot be imported in a child.
    """
    unique: dict[str, Program] = {}
    for program in programs:
        unique.setdefault(program.key, program)
    total = len(unique)
    proofs: dict[str, Proof] = {}
    if not unique:
        return proofs
    lock = threading.Lock()
    failure: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rcl-lab-") as tmp:
        root = Path(tmp)
        dirs = []
        for key, program in unique.items():
            dirs.append((key, str(write_program(program, root / "programs" / key))))
        work: queue.Queue[_Batch] = queue.Queue()
        size = max(1, batch if batch is not None else min(BATCH, -(-len(dirs) // max(1, jobs))))
        for start in range(0, len(dirs), size):
            work.put(_Batch(tuple(dirs[start:start + size])))

        def record(proof: Proof) -> None:
            with lock:
                proofs[proof.key] = proof
                done = len(proofs)
            if progress is not None:
                progress(done, total)

        def worker(number: int) -> None:
            while not failure:
                try:
                    item = work.get_nowait()
                except queue.Empty:
                    return
                try:
                    _run_batch(item, root / f"child-{number}", timeout, record)
                except ProverError as exc:
                    failure.append(str(exc))
                    return
                except Exception as exc:  # noqa: BLE001 - a broken batch must not pass for a short one
                    failure.append(f"the prover failed on a batch: {type(exc).__name__}: {exc}")
                    return

        threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(max(1, jobs))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if failure:
        raise ProverError(failure[0])
    return proofs


def _run_batch(item: _Batch, workdir: Path, timeout: float, record: Callable[[Proof], None]) -> None:
    """Run a batch in children until every program has a proof (a killed child's rest runs
    in a new one)."""
    remaining = list(item.programs)
    torch_version = ""
    while remaining:
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
        job, out, log = workdir / "job.json", workdir / "out.jsonl", workdir / "child.log"
        job.write_text(json.dumps({"programs": remaining, "out": str(out)}), encoding="utf-8")
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
        env.pop("TORCH_LOGS", None)  # the same messages whatever the caller's logging
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
        with open(log, "wb") as log_handle:
            proc = subprocess.Popen(
                [sys.executable, "-B", "-c", "from recompile_lint.lab.prover import child_main; child_main()", str(job)],
                cwd=workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log_handle,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        done: set[str] = set()
        current: str | None = None
        started = time.monotonic()
        deadline = started + STARTUP_S + timeout
        offset = 0
        outcome = ""
        try:
            while True:
                exited = proc.poll() is not None
                offset, lines = _read_lines(out, offset)
                for line in lines:
                    if "torch" in line:
                        torch_version = line["torch"]
                    if "start" in line:
                        current = line["start"]
                        deadline = time.monotonic() + timeout
                    elif "proof" in line:
                        proof = Proof.from_list(line["proof"])
                        done.add(proof.key)
                        current = None
                        record(proof)
                    elif "fatal" in line:
                        raise ProverError(f"the prover's child cannot run: {line['fatal']}")
                if exited:
                    outcome = f"the child exited with {proc.returncode}"
                    break
                if time.monotonic() > deadline:
                    outcome = "timeout"
                    break
                time.sleep(0.05)
        finally:
            # The whole session, also after a normal exit: a program's own processes go with it.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        remaining = [(key, d) for key, d in remaining if key not in done]
        if not remaining:
            return
        if current is None:
            if not done and not torch_version:
                tail = log.read_bytes()[-2000:].decode("utf-8", "replace")
                raise ProverError(f"the prover's child did not start a program ({outcome}):\n{tail}")
            current = remaining[0][0]  # died between programs: charge the next one
        record(Proof(key=current, torch=torch_version, ran=False, error=outcome))
        remaining = [(key, d) for key, d in remaining if key != current]


def _read_lines(path: Path, offset: int) -> tuple[int, list[dict[str, Any]]]:
    """Complete JSON lines appended to ``path`` since ``offset``."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            chunk = handle.read()
    except FileNotFoundError:
        return offset, []
    end = chunk.rfind(b"\n")
    if end < 0:
        return offset, []
    lines = [json.loads(raw) for raw in chunk[: end + 1].splitlines() if raw.strip()]
    return offset + end + 1, lines


# --------------------------------------------------------------------------------------------
# The child: torch is imported here only.
# --------------------------------------------------------------------------------------------


def child_main() -> None:
    """Run the programs of the job file named by ``sys.argv[1]``; append one JSON line per
    program started and per proof to the job's output file."""
    job = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    out = open(job["out"], "a", encoding="utf-8")

    def emit(item: dict[str, Any]) -> None:
        out.write(json.dumps(item) + "\n")
        out.flush()

    try:
        import torch
        import torch._dynamo
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        emit({"fatal": f"import torch: {type(exc).__name__}: {exc}"})
        out.close()
        os._exit(3)
    from recompile_lint.lab import observe  # noqa: F401 - imported before sys.path is trimmed
    from recompile_lint.verify import recorder  # noqa: F401
    from recompile_lint.verify.child import force_backend

    # A program sees what ``python run.py`` gives it: neither the working directory of the
    # child nor this package's root (a program module named ``tests`` must be its own).
    hidden = {"", ".", os.getcwd(), _PACKAGE_ROOT}
    sys.path[:] = [p for p in sys.path if p not in hidden]
    force_backend(torch, "eager")
    emit({"torch": torch.__version__})
    for key, directory in job["programs"]:
        emit({"start": key})
        proof = run_one(torch, key, Path(directory))
        emit({"proof": proof.to_list()})
    out.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # threads or atexit hooks of a program cannot keep the child alive


def run_one(torch: Any, key: str, directory: Path) -> Proof:
    """Run one program in this process and forget it afterwards; its proof."""
    import random
    import runpy

    from recompile_lint.lab.observe import record

    saved_path, saved_argv, saved_cwd = list(sys.path), list(sys.argv), os.getcwd()
    configs = [(c, c.get_config_copy()) for c in (torch._dynamo.config, torch.compiler.config)]
    grad, dtype = torch.is_grad_enabled(), torch.get_default_dtype()
    torch._dynamo.reset()
    torch.manual_seed(0)
    random.seed(0)
    sys.path.insert(0, str(directory))
    sys.argv = ["run.py"]
    os.chdir(directory)
    try:
        data = record(lambda: runpy.run_path(str(directory / "run.py"), run_name="__main__"))
    finally:
        os.chdir(saved_cwd)
        sys.path[:] = saved_path
        sys.argv = saved_argv
        _forget_modules(directory)
        for config, saved in configs:
            _restore_config(config, saved)
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)
    try:
        proof = proof_of(key, str(torch.__version__), data, directory)
    finally:
        torch._dynamo.reset()
    return proof


def _restore_config(config: Any, saved: dict[str, Any]) -> None:
    """Put back the Dynamo settings a program changed (only those: setting a deprecated one warns)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated settings warn on every read and write
        for name, value in saved.items():
            try:
                if getattr(config, name) != value:
                    setattr(config, name, value)
            except Exception:  # noqa: BLE001 - a setting torch refuses stays as the program left it
                pass


def _forget_modules(directory: Path) -> None:
    """Drop every module loaded from the program's directory (packages included)."""
    inside = str(directory) + os.sep
    for name, module in list(sys.modules.items()):
        try:
            file = str(getattr(module, "__file__", None) or "")
            paths = [str(p) for p in module.__spec__.submodule_search_locations or ()] if module.__spec__ else []
        except Exception:  # noqa: BLE001 - torch's own pseudo-modules (torch.classes) are not files
            continue
        if file.startswith(inside) or any(p.startswith(inside) for p in paths):
            del sys.modules[name]


def proof_of(key: str, torch_version: str, data: dict[str, Any], directory: Path) -> Proof:
    """The proof of one program from its raw record (``recompile_lint.lab.observe.record``)."""
    from recompile_lint.lab.observe import normalise, recompile_events, relative_file

    codes: dict[tuple[str, int, str], dict[str, Any]] = {}

    def code(key3: tuple[str, int, str]) -> dict[str, Any]:
        return codes.setdefault(key3, {"graphs": 0, "recompiles": 0, "limit": False, "failures": {}})

    for file, line, name, graphs, _qualname in data.get("graphs", []):
        entry = code((relative_file(file, directory), int(line), str(name)))
        entry["graphs"] = max(entry["graphs"], int(graphs))
    for hit in data.get("limit_hits", []):
        code((relative_file(hit["file"], directory), int(hit["first_line"]), hit["function"].rsplit(".", 1)[-1]))["limit"] = True
    for key3, failures in recompile_events(data, directory):
        entry = code(key3)
        entry["recompiles"] += 1
        for failure in failures:
            file, _, line = failure.location.rpartition(":")
            distinct = (failure.source, failure.kind, failure.detail, failure.location)
            if distinct not in entry["failures"]:
                guard = normalise(" ".join(str(failure.reason.get("guard", "")).split()), directory)
                entry["failures"][distinct] = GuardFailureRecord(guard, failure.source, file, int(line) if line else 0)
    records = tuple(
        CodeRecord(file, line, name, e["graphs"], e["recompiles"], e["limit"], tuple(e["failures"].values()))
        for (file, line, name), e in sorted(codes.items())
    )
    exception = data.get("exception", "")
    limit_error = exception == LIMIT_ERROR
    exit_code = data.get("exit_code", 0)
    ran = exit_code == 0 or limit_error
    error = "" if exit_code == 0 else (data.get("detail") or f"SystemExit: {exit_code}")
    return Proof(key=key, torch=torch_version, ran=ran, codes=records, error=error, limit_error=limit_error)


def programs_from_directories(directories: Sequence[Path]) -> list[Program]:
    """Programs read from directories on disk (``fixtures/programs/*``): every ``.py`` file."""
    out = []
    for index, directory in enumerate(directories):
        files = tuple(sorted(
            (path.relative_to(directory).as_posix(), path.read_text(encoding="utf-8"))
            for path in directory.rglob("*.py")
        ))
        out.append(Program(seed=-1, index=index, files=files, dims=(("name", directory.name),)))
    return out
