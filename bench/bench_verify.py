"""Benchmark the verifier: how long verifying every finding of ``fixtures/`` takes, and how much
of it is ``import torch`` in the per-module child processes.

Usage (from the repository root, in the virtualenv that has recompile-lint and torch)::

    python bench/bench_verify.py                     # fixtures/, one child at a time
    python bench/bench_verify.py --jobs 2            # two modules at once
    python bench/bench_verify.py fixtures/rcl1xx     # a subset
    python bench/bench_verify.py --json out.json     # also write per-module figures

It lints with every rule selected (info included), probes each finding with the default
options (backend eager, CPU, 12 calls), and prints: the lint time, the wall time of the whole
verification, per module the child's wall time, its ``import torch`` time and its import of the
user's module, and the share of the children's time spent importing torch. A bare
``python -c "import torch"`` is timed first as the floor of one child.
"""

from __future__ import annotations

import argparse
import json
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(ROOT / "fixtures")])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--json", dest="json_path")
    args = parser.parse_args()

    floor = bare_torch_import()
    started = time.perf_counter()
    result = lint_paths(args.paths, Config(select=("RCL",), cache=False))
    lint_s = time.perf_counter() - started
    timings: list[ModuleTiming] = []
    started = time.perf_counter()
    verified = verify_findings(
        result.findings, VerifyOptions(timeout=args.timeout, jobs=args.jobs),
        progress=lambda line: print(line, file=sys.stderr), timings=timings,
    )
    verify_s = time.perf_counter() - started

    child_s = sum(t.wall for t in timings)
    torch_s = sum(t.torch_import for t in timings)
    verdicts = Counter(v.verification.verdict.value for v in verified)
    print(f"bare `import torch` in a fresh interpreter: {floor:.1f}s")
    print(f"lint: {len(result.findings)} findings in {result.files_checked} files, {lint_s:.1f}s")
    print(f"verify: {len(timings)} module children, jobs={args.jobs}, wall {verify_s:.1f}s")
    print(f"  children: {child_s:.1f}s in total, of which import torch {torch_s:.1f}s "
          f"({100 * torch_s / child_s if child_s else 0:.0f}%), user modules "
          f"{sum(t.module_import for t in timings):.1f}s")
    print(f"  per finding: {verify_s / max(len(verified), 1):.1f}s wall")
    print("  verdicts: " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())))
    print(f"{'module':<34} {'findings':>8} {'wall':>7} {'torch':>7} {'import':>7}")
    for t in sorted(timings, key=lambda t: -t.wall):
        print(f"{t.module:<34} {t.findings:>8} {t.wall:>6.1f}s {t.torch_import:>6.1f}s {t.module_import:>6.1f}s")
    for item in verified:
        if item.verification.verdict.value != "confirmed":
            f = item.finding
            print(f"not confirmed: {f.path}:{f.line} {f.code}: {item.verification.verdict.value}: "
                  f"{item.verification.detail}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps({
            "bare_torch_import_s": floor, "lint_s": lint_s, "verify_s": verify_s, "jobs": args.jobs,
            "modules": [t.__dict__ for t in timings],
            "findings": [v.to_dict() for v in verified],
        }, indent=2))


if __name__ == "__main__":
    main()
