"""Whether the analysis cost of one module grows linearly with what it holds.

Usage (from the repository root, in the virtualenv that has recompile-lint installed)::

    python bench/bench_scale.py                          # every shape at 1k, 5k, 20k, 3 runs each
    python bench/bench_scale.py --sizes 1000,2000 --shape functions --repeat 5
    python bench/bench_scale.py --write DIR --sizes 5000 # only write the modules, to profile them

Each case is one module in a project of its own (a ``pyproject.toml`` beside it), linted by
``recompile-lint --no-cache -j 1`` in a subprocess; CPU time (user + system) and peak RSS
come from ``os.wait4``, so start-up is included (it is the ``n = 0`` intercept: compare the
per-item column between sizes). Shapes, N each:

- ``functions``: N compiled one-liners ``return x * STEP`` reading one global that a loop
  bumps (``STEP += 1``) between calls of some of them;
- ``globals``: N compiled one-liners, each reading a global of its own that the loop bumps
  before calling it (N globals, N writes, N call sites);
- ``writers``: one compiled function reading ``STEP`` and N functions that each reassign it
  (``global STEP``), all called from the loop of a ``main()`` that calls the compiled one.

A module of 20,000 functions is about 1 MB. The output is deterministic; nothing is run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHAPES = ("functions", "globals", "writers")
HEADER = "import torch\n\nSTEP = 0\n\n\n"


def functions_module(n: int) -> str:
    parts = [HEADER]
    parts.extend(f"@torch.compile\ndef f_{i}(x):\n    return x * STEP\n\n\n" for i in range(n))
    calls = "".join(f"    f_{i}(x)\n" for i in range(0, n, max(n // 50, 1)))
    parts.append(f"x = torch.ones(3)\nfor _ in range(10):\n    STEP += 1\n{calls}")
    return "".join(parts)


def globals_module(n: int) -> str:
    parts = [HEADER]
    parts.extend(f"G_{i} = 0\n" for i in range(n))
    parts.append("\n\n")
    parts.extend(f"@torch.compile\ndef f_{i}(x):\n    return x * G_{i}\n\n\n" for i in range(n))
    body = "".join(f"    G_{i} += 1\n    f_{i}(x)\n" for i in range(n))
    parts.append(f"x = torch.ones(3)\nfor _ in range(10):\n{body}")
    return "".join(parts)


def writers_module(n: int) -> str:
    parts = [HEADER, "@torch.compile\ndef f(x):\n    return x * STEP\n\n\n"]
    parts.extend(f"def bump_{i}():\n    global STEP\n    STEP += {i + 1}\n\n\n" for i in range(n))
    body = "".join(f"        bump_{i}()\n" for i in range(n))
    parts.append(f"def main():\n    x = torch.ones(3)\n    for _ in range(10):\n{body}        f(x)\n\n\nmain()\n")
    return "".join(parts)


BUILDERS = {"functions": functions_module, "globals": globals_module, "writers": writers_module}


def write_case(directory: Path, shape: str, n: int) -> Path:
    """A project at ``directory`` holding the one module of ``shape`` and size ``n``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pyproject.toml").write_text(f'[project]\nname = "scale-{shape}-{n}"\n', encoding="utf-8")
    module = directory / "hostile.py"
    module.write_text(BUILDERS[shape](n), encoding="utf-8")
    return module


def lint_command() -> list[str]:
    script = Path(sys.executable).with_name("recompile-lint")
    return [str(script)] if script.exists() else [sys.executable, "-m", "recompile_lint"]


def run_once(directory: Path, timeout: float) -> tuple[float, float, float, str]:
    """(wall s, cpu s, peak MiB, problem) of one ``recompile-lint --no-cache -j 1`` run."""
    env = dict(os.environ)
    env["RECOMPILE_LINT_NO_SERVER"] = "1"
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([*lint_command(), "--no-cache", "-j", "1", "--exit-zero", "--output-format", "json", "hostile.py"], cwd=directory, stdout=subprocess.DEVNULL, stderr=err, env=env)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
                return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, f"over {timeout:.0f} s"
            time.sleep(0.05)
        wall = time.perf_counter() - start
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace").strip()
    code = os.waitstatus_to_exitcode(status)
    problem = "" if code == 0 and "Traceback" not in stderr else f"exit {code}: {stderr.splitlines()[-1] if stderr else ''}"
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, problem


def main() -> None:
    parser = argparse.ArgumentParser(description="Analysis cost of one module against its number of compiled functions, globals and writers.")
    parser.add_argument("--sizes", default="1000,5000,20000", help="N per case (default: 1000,5000,20000)")
    parser.add_argument("--shape", action="append", choices=SHAPES, help="repeatable; default: every shape")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (median reported)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a run is stopped (default 600)")
    parser.add_argument("--write", metavar="DIR", help="only write the cases under DIR (SHAPE-N/hostile.py)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    shapes = args.shape or list(SHAPES)

    if args.write:
        for shape in shapes:
            for n in sizes:
                print(write_case(Path(args.write) / f"{shape}-{n}", shape, n))
        return

    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}   cores: {os.cpu_count()}   python {sys.version.split()[0]}")
    print("recompile-lint --no-cache -j 1 on one module; medians; start-up included")
    print(f"{'shape':<10} {'N':>6} {'KB':>6} | {'wall s':>7} {'cpu s':>7} {'peak MiB':>8} | {'cpu ms per item':>15}")
    with tempfile.TemporaryDirectory(prefix="rl-scale-") as work:
        for shape in shapes:
            for n in sizes:
                directory = Path(work) / f"{shape}-{n}"
                module = write_case(directory, shape, n)
                runs = [run_once(directory, args.timeout) for _ in range(args.repeat)]
                problem = next((r[3] for r in runs if r[3]), "")
                wall, cpu, peak = (statistics.median(r[i] for r in runs) for i in range(3))
                print(f"{shape:<10} {n:>6} {module.stat().st_size / 1024:>6.0f} | {wall:>7.2f} {cpu:>7.2f} {peak:>8.0f} | {1000 * cpu / n:>15.3f} {problem}", flush=True)


if __name__ == "__main__":
    main()
