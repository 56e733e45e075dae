"""Benchmark the verifier: how long verifying every finding of ``fixtures/`` takes, and how much
of it is importing torch.

Usage (from the repository root, in the virtualenv that has recompile-lint and torch)::

    python bench/bench_verify.py                     # fixtures/, one lane, 3 runs
    python bench/bench_verify.py --repeat 5          # medians of 5 runs
    python bench/bench_verify.py --jobs 2            # two lanes (each imports torch once)
    python bench/bench_verify.py fixtures/rcl1xx     # a subset
    python bench/bench_verify.py --json out.json     # also write per-run and per-module figures
    python bench/bench_verify.py --compare fixtures/rcl1xx   # against a fresh interpreter per module

It lints with every rule selected (info included), then verifies every finding with the default
options (backend eager, CPU, 12 calls), ``--repeat`` times. Each lane's supervisor imports torch
once and forks a child per module. Printed, as medians over the runs: the wall time of the whole
verification, the lanes' torch imports, and the headline figure, seconds per finding after the
first import: (verify wall - the lanes' torch import) / findings, and the CPU time (user +
system) of every process verify started, per finding: on a busy machine wall time follows the
load, CPU time much less. A bare ``python -c "import
torch"`` is timed once as the floor of one import, and the load average before and after the
runs says what else the machine was doing. The figures of the last run are listed per module.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from recompile_lint.config import Config  # noqa: E402
from recompile_lint.engine import lint_paths  # noqa: E402
from recompile_lint.verify.api import ModuleTiming, VerifyOptions, verify_findings  # noqa: E402


def bare_torch_import() -> float:
    """Seconds for a fresh interpreter to ``import torch`` and exit."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-B", "-c", "import torch"], check=True, capture_output=True)
    return time.perf_counter() - started


def _children_cpu() -> float:
    """User + system seconds of this process's waited-for descendants."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(ROOT / "fixtures")])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", dest="json_path")
    parser.add_argument("--compare", action="store_true",
                        help="also verify with a fresh interpreter per module (no fork), taking turns")
    args = parser.parse_args()

    load_before = load()
    floor = bare_torch_import()
    started = time.perf_counter()
    result = lint_paths(args.paths, Config(select=("RCL",), cache=False))
    lint_s = time.perf_counter() - started
    runs = []
    timings: list[ModuleTiming] = []
    verified = []
    spawn_runs = []
    for number in range(1, max(1, args.repeat) + 1):
        if args.compare:
            # The way every module paid for torch before: a fresh interpreter each. Both modes
            # take turns, so that the load of the machine weighs on both alike.
            spawn_cpu = _children_cpu()
            started = time.perf_counter()
            verify_findings(result.findings, VerifyOptions(timeout=args.timeout, jobs=args.jobs, fork=False))
            spawn_wall = time.perf_counter() - started
            spawn_runs.append({"wall_s": spawn_wall, "cpu_s": _children_cpu() - spawn_cpu,
                               "per_finding_s": spawn_wall / max(len(result.findings), 1)})
            print(f"run {number}, a fresh interpreter per module: wall {spawn_wall:.1f}s", file=sys.stderr)
        timings = []
        cpu_before = _children_cpu()
        started = time.perf_counter()
        verified = verify_findings(
            result.findings, VerifyOptions(timeout=args.timeout, jobs=args.jobs),
            progress=lambda line: print(line, file=sys.stderr), timings=timings,
        )
        wall = time.perf_counter() - started
        cpu = _children_cpu() - cpu_before  # lanes are waited for when verify returns: all counted
        lanes = sorted({t.lane_torch_import for t in timings if t.lane_torch_import})
        imports = sum(lanes) + sum(t.torch_import for t in timings)
        per_finding = (wall - imports) / max(len(verified), 1)
        runs.append({"wall_s": wall, "torch_imports_s": imports, "lanes": len(lanes), "cpu_s": cpu,
                     "per_finding_after_import_s": per_finding, "per_finding_s": wall / max(len(verified), 1),
                     "cpu_per_finding_s": cpu / max(len(verified), 1)})
        print(f"run {number}: wall {wall:.1f}s, torch imports {imports:.1f}s, "
              f"{per_finding:.2f}s per finding after the first import, CPU {cpu:.1f}s", file=sys.stderr)
    load_after = load()

    def median(key: str) -> float:
        return statistics.median(run[key] for run in runs)

    verdicts = Counter(v.verification.verdict.value for v in verified)
    print(f"machine: {os.cpu_count()} cores; load average before {load_before}, after {load_after}")
    print(f"bare `import torch` in a fresh interpreter: {floor:.1f}s")
    print(f"lint: {len(result.findings)} findings in {result.files_checked} files, {lint_s:.1f}s")
    print(f"verify: {len(timings)} modules, jobs={args.jobs}, medians of {len(runs)} run(s):")
    print(f"  wall {median('wall_s'):.1f}s, of which the lanes' torch import {median('torch_imports_s'):.1f}s")
    print(f"  per finding: {median('per_finding_s'):.2f}s wall, "
          f"{median('per_finding_after_import_s'):.2f}s after the first import; "
          f"CPU (user + system, every process verify started) {median('cpu_per_finding_s'):.2f}s")
    if spawn_runs:
        spawn_wall = statistics.median(r["wall_s"] for r in spawn_runs)
        spawn_cpu = statistics.median(r["cpu_s"] for r in spawn_runs)
        print(f"  a fresh interpreter per module (before): wall {spawn_wall:.1f}s, "
              f"{spawn_wall / max(len(verified), 1):.2f}s per finding, CPU {spawn_cpu / max(len(verified), 1):.2f}s "
              f"per finding; ratio before/now: wall {spawn_wall / median('wall_s'):.2f}, "
              f"CPU {spawn_cpu / median('cpu_s'):.2f}")
    print("  verdicts: " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())))
    print(f"{'module':<34} {'findings':>8} {'wall':>7} {'import':>7}")
    for t in sorted(timings, key=lambda t: -t.wall):
        print(f"{t.module:<34} {t.findings:>8} {t.wall:>6.2f}s {t.module_import:>6.2f}s")
    for item in verified:
        if item.verification.verdict.value != "confirmed":
            f = item.finding
            print(f"not confirmed: {f.path}:{f.line} {f.code}: {item.verification.verdict.value}: "
                  f"{item.verification.detail}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps({
            "bare_torch_import_s": floor, "lint_s": lint_s, "jobs": args.jobs, "runs": runs,
            "load_before": load_before, "load_after": load_after, "spawn_runs": spawn_runs,
            "modules": [t.__dict__ for t in timings],
            "findings": [v.to_dict() for v in verified],
        }, indent=2))


if __name__ == "__main__":
    main()
