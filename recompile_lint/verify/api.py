"""The verifier's two entry points: probe findings, or run the user's program (no torch here).

``verify_findings`` groups findings by the module that defines their compiled region and runs
one child process per module (importing torch is the main cost); ``verify_run`` runs the user's
program once under the recorder and matches what it recorded to the findings.
"""

from __future__ import annotations

import os
import shlex
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from recompile_lint.models import Finding
from recompile_lint.verify.matcher import match_run
from recompile_lint.verify.recorder import Recording
from recompile_lint.verify.results import (
    LimitHit,
    RecompileEvent,
    RunReport,
    Verification,
    VerifiedFinding,
    unverifiable,
)
from recompile_lint.verify.runner import ChildOutcome, Runner, run_child
from recompile_lint.verify.targets import ImportTarget, import_target, module_of_path

Progress = Callable[[str], None]


class VerifyUsageError(Exception):
    """A problem with how the verifier was asked to run (exit code 2)."""


@dataclass(frozen=True)
class VerifyOptions:
    """How probes run. Defaults match ``[tool.recompile-lint.verify]``."""

    backend: str = "eager"
    device: str = "cpu"
    calls: int = 12
    timeout: float = 120.0
    examples: tuple[tuple[str, str], ...] = ()
    jobs: int = 1  # lanes at once (each imports torch once: mind the memory)
    # CPU lanes fork a child per module from a process that imported torch; False: a fresh
    # interpreter per module (as CUDA always gets; the benchmark compares the two).
    fork: bool = True


def _finding_payload(index: int, finding: Finding) -> dict[str, object]:
    data = finding.to_dict()
    data["index"] = index
    data["path"] = str(Path(finding.path).resolve())
    return data


def _job(target: ImportTarget, indexed: list[tuple[int, Finding]], options: VerifyOptions) -> dict[str, object]:
    return {
        "mode": "probe",
        "root": target.root,
        "module": target.module,
        "module_file": target.file,
        "findings": [_finding_payload(i, f) for i, f in indexed],
        "backend": options.backend,
        "device": options.device,
        "calls": options.calls,
        "examples": dict(options.examples),
    }


def _failure_detail(outcome: ChildOutcome, options: VerifyOptions, index: int, module: str) -> str:
    data = outcome.data
    status = str(data.get("status", ""))
    if status in {"import-failed", "torch-failed"}:
        return str(data.get("detail", status))
    current = data.get("current")
    if outcome.supervisor_lost:
        # The code under test can signal its own supervisor; what it started was killed then.
        where = "while probing this finding" if current == index else f"while {module} was probed"
        return f"the verifier's supervisor process was killed {where}; everything it ran was stopped"
    if outcome.timed_out:
        if current == index:
            return f"timed out after {options.timeout:g}s while probing this finding"
        if status in {"", "starting", "importing torch", "importing"}:
            what = "importing torch" if status in {"", "starting", "importing torch"} else f"importing {module}"
            return f"timed out after {options.timeout:g}s while {what}"
        return f"not probed: the child for {module} timed out after {options.timeout:g}s on another finding"
    if status == "crashed":
        return str(data.get("detail", "the verifier child failed"))
    code = outcome.returncode
    last = outcome.last_output_line()
    why = f"exited with status {code}" if code is not None and code >= 0 else f"was killed by signal {-(code or 0)}"
    stage = {
        "": "before starting",
        "starting": "before starting",
        "importing torch": "while importing torch",
        "importing": f"while importing {module}",
    }.get(status, "while probing this finding" if current == index else "before probing this finding")
    suffix = f" (last output: {last[:200]})" if last else ""
    return f"the child process {why} {stage}{suffix}"


def check_device(options: VerifyOptions) -> None:
    """Refuse ``--device cuda`` without a usable GPU before any probe runs."""
    if not options.device.startswith("cuda"):
        if options.device != "cpu":
            raise VerifyUsageError(f"--device must be cpu or cuda, not {options.device!r}")
        return
    # A fresh interpreter: CUDA initialised in a forked child of a process that imported
    # torch is exactly what this check must not depend on.
    outcome = run_child({"mode": "device-check", "device": options.device}, timeout=max(options.timeout, 60.0),
                        fork=False)
    if outcome.data.get("status") == "no-cuda" or outcome.data.get("status") != "device-ok":
        raise VerifyUsageError(
            "--device cuda: torch here cannot use a CUDA GPU (torch.cuda.is_available() is False)"
        )


@dataclass(frozen=True)
class ModuleTiming:
    """Where one module's child spent its time (seconds; 0 when it never got there)."""

    module: str
    findings: int
    wall: float
    torch_import: float  # in the module's own child (0 when it was forked with torch loaded)
    module_import: float
    timed_out: bool = False
    lane_torch_import: float = 0.0  # the lane's one torch import, shared by its modules


def verify_findings(
    findings: Sequence[Finding],
    options: VerifyOptions,
    progress: Progress | None = None,
    timings: list[ModuleTiming] | None = None,
) -> list[VerifiedFinding]:
    """A verdict for every finding, in the order given (``timings`` collects per-module costs)."""
    verdicts: dict[int, Verification] = {}
    groups: dict[ImportTarget, list[tuple[int, Finding]]] = {}
    for index, finding in enumerate(findings):
        # Without a region (a compile site in a loop), the finding's own module can still be run.
        target = import_target(finding) if finding.region else module_of_path(finding.path)
        if target is None:
            what = f"the module that defines {finding.region}" if finding.region else f"a module for {finding.path}"
            verdicts[index] = unverifiable(f"cannot find {what}")
            continue
        groups.setdefault(target, []).append((index, finding))
    ordered = sorted(groups.items())
    total = len(ordered)

    def probe_module(number: int, target: ImportTarget, indexed: list[tuple[int, Finding]]) -> ChildOutcome:
        if progress is not None:
            progress(f"[{number}/{total}] {target.module}: probing {len(indexed)} finding(s)")
        return runner.run(_job(target, indexed, options), timeout=options.timeout)

    def collect(number: int, target: ImportTarget, indexed: list[tuple[int, Finding]], outcome: ChildOutcome) -> None:
        if outcome.data.get("status") == "no-cuda":
            raise VerifyUsageError(str(outcome.data.get("detail", "--device cuda: no usable GPU")))
        if timings is not None:
            timings.append(ModuleTiming(
                target.module, len(indexed), outcome.elapsed,
                float(outcome.data.get("torch_import_s", 0.0)), float(outcome.data.get("module_import_s", 0.0)),
                outcome.timed_out, outcome.lane_torch_import,
            ))
        reported = outcome.data.get("verifications", {})
        for index, _ in indexed:
            raw = reported.get(str(index)) if isinstance(reported, dict) else None
            if isinstance(raw, dict):
                verdicts[index] = Verification.from_dict(raw)
            else:
                verdicts[index] = unverifiable(_failure_detail(outcome, options, index, target.module))
        if progress is not None:
            counts = Counter(verdicts[index].verdict.value for index, _ in indexed)
            summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
            progress(f"[{number}/{total}] {target.module}: {summary} ({outcome.elapsed:.1f}s)")

    jobs = max(1, options.jobs)
    # On CPU each lane imports torch once and forks a child per module; CUDA needs a fresh
    # interpreter per module (it does not survive a fork).
    with Runner(fork=options.fork and not options.device.startswith("cuda")) as runner:
        if jobs == 1 or total <= 1:
            for number, (target, indexed) in enumerate(ordered, start=1):
                collect(number, target, indexed, probe_module(number, target, indexed))
        else:
            with ThreadPoolExecutor(max_workers=min(jobs, total)) as pool:
                futures = {
                    pool.submit(probe_module, number, target, indexed): (number, target, indexed)
                    for number, (target, indexed) in enumerate(ordered, start=1)
                }
                for future in as_completed(futures):
                    number, target, indexed = futures[future]
                    collect(number, target, indexed, future.result())
    return [VerifiedFinding(f, verdicts[i]) for i, f in enumerate(findings)]


def parse_run_command(command: str | Sequence[str]) -> tuple[list[str], str]:
    """``python train.py --steps 20`` -> (argv for the script, module for ``-m`` or "")."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if not argv:
        raise VerifyUsageError("--run needs a command, e.g. --run 'python train.py --steps 20'")
    if Path(argv[0]).name.startswith("python"):
        argv = argv[1:]
        while argv and argv[0].startswith("-") and argv[0] not in {"-m", "-c"}:
            argv = argv[1:]  # interpreter flags (-u, -O, -W...) do not change recompiles
        if not argv:
            raise VerifyUsageError("--run: no script given after the interpreter")
        if argv[0] == "-c":
            raise VerifyUsageError("--run: 'python -c' is not supported; put the code in a script")
        if argv[0] == "-m":
            if len(argv) < 2:
                raise VerifyUsageError("--run: no module given after -m")
            return [argv[1], *argv[2:]], argv[1]
    script = Path(argv[0])
    if not script.is_file():
        raise VerifyUsageError(f"--run: {argv[0]}: no such script")
    return argv, ""


def verify_run(
    command: str | Sequence[str],
    findings: Sequence[Finding],
    options: VerifyOptions,
    cwd: str | None = None,
    progress: Progress | None = None,
) -> RunReport:
    """Run the user's program under the recorder and match its recompiles to ``findings``."""
    argv, run_module = parse_run_command(command)
    workdir = cwd or os.getcwd()
    job = {
        "mode": "run",
        "root": workdir if run_module else "",
        "argv": argv,
        "run_module": run_module,
        "backend": options.backend,
        "device": options.device,
    }
    if progress is not None:
        progress(f"running {shlex.join(argv)} under the recorder")
    with Runner(fork=not options.device.startswith("cuda")) as runner:
        outcome = runner.run(job, timeout=options.timeout, cwd=workdir)
    data = outcome.data
    if data.get("status") == "no-cuda":
        raise VerifyUsageError(str(data.get("detail", "--device cuda: no usable GPU")))
    recording = Recording(
        events=tuple(RecompileEvent.from_dict(e) for e in data.get("events", ())),
        limit_hits=tuple(LimitHit.from_dict(h) for h in data.get("limit_hits", ())),
        graphs=tuple(((str(f), int(line), str(name)), int(n)) for f, line, name, n in data.get("graphs", ())),
    )
    detail = str(data.get("detail", ""))
    exit_code = data.get("exit_code") if data.get("status") == "done" else None
    if outcome.timed_out:
        detail = f"the program ran past the {options.timeout:g}s timeout and was stopped"
    elif data.get("status") != "done":
        detail = detail or _failure_detail(outcome, options, -1, argv[0])
    verified, unpredicted = match_run(findings, recording)
    graphs = tuple((f"{f}:{line} {name}", n) for (f, line, name), n in recording.graphs)
    return RunReport(
        command=tuple(argv),
        exit_code=exit_code if isinstance(exit_code, int) else None,
        findings=tuple(verified),
        unpredicted=tuple(unpredicted),
        limit_hits=recording.limit_hits,
        detail=detail,
        graphs=graphs,
        events=recording.events,
        timed_out=outcome.timed_out,
    )
