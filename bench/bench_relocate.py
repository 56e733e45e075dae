"""What reporting findings where the change is costs a pre-commit run of one changed file.

    python bench/bench_relocate.py                 # synth-1000, 7 rounds
    python bench/bench_relocate.py --modules 300 --rounds 5

A synthetic project (``make_synthetic.py``) is linted once whole to fill the facts cache.
Then, for a module that compiles functions and for one that only holds helpers and bumps other
modules' counters, each round edits the module (a constant takes a new value, so the run
cache cannot answer) and lints it alone in this process twice, the two ways taking turns:
``relocate=False`` (findings only where they are analysed: the verifier's view, and what the
CLI did before) and ``relocate=True`` (what the CLI, flake8 and the language server do now:
the rules also run on functions elsewhere whose findings can have a location in the file).
Printed: median wall and CPU seconds of each, their ratio, and the findings each reported.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def timed(function):
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--workdir", help="keep the project here (default: a temporary directory)")
    args = parser.parse_args()

    from recompile_lint.config import Config
    from recompile_lint.engine import lint_paths

    with tempfile.TemporaryDirectory(prefix="rl-relocate-") as temporary:
        root = Path(args.workdir or temporary)
        subprocess.run([sys.executable, str(HERE / "make_synthetic.py"), str(root), "--modules", str(args.modules)], check=True, stdout=subprocess.DEVNULL)
        os.chdir(root)
        config = Config(cache=True, cache_dir=str(root / ".cache"))
        _, whole, _ = timed(lambda: lint_paths(["."], config))
        modules = sorted(root.rglob("mod_*.py"))
        compiling = next(p for p in modules if p.name == "mod_00010.py")
        # A module that compiles nothing but writes another module's counter.
        helper = next(p for p in modules if "torch.compile" not in p.read_text() and re.search(r"^\s+\w+\.STEP \+?= ", p.read_text(), re.M))
        print(f"synth-{args.modules}: whole project {whole:.2f} s (fills the cache); load {os.getloadavg()[0]:.1f}")
        print(f"{'module':<28} {'way':<15} {'wall s':>8} {'cpu s':>8} {'findings':>9}")
        for path in (compiling, helper):
            original = path.read_text()
            rows: dict[bool, list[tuple[float, float, int]]] = {False: [], True: []}
            for number in range(args.rounds):
                for relocate in ((False, True) if number % 2 == 0 else (True, False)):
                    path.write_text(re.sub(r"^SCALE = \d+", f"SCALE = {10 + number * 2 + relocate}", original, count=1, flags=re.M))
                    result, wall, cpu = timed(lambda: lint_paths([str(path.relative_to(root))], config, relocate=relocate))
                    rows[relocate].append((wall, cpu, len(result.findings)))
            path.write_text(original)
            medians = {}
            for relocate, runs in rows.items():
                wall = statistics.median(r[0] for r in runs)
                cpu = statistics.median(r[1] for r in runs)
                medians[relocate] = (wall, cpu)
                way = "relocate=True" if relocate else "relocate=False"
                print(f"{path.name:<28} {way:<15} {wall:>8.3f} {cpu:>8.3f} {runs[-1][2]:>9}")
            print(f"{path.name:<28} {'ratio True/False':<15} {medians[True][0] / medians[False][0]:>8.2f} {medians[True][1] / medians[False][1]:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
