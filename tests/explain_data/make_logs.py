"""Write the torch 2.13 logs under ``logs/`` by running ``proj/train.py`` with real torch.

Usage (from the repository root, in the virtualenv with torch)::

    python tests/explain_data/make_logs.py

The project is copied to ``/tmp/rcl-explain/proj`` first, so the logs name files that are not
in this repository: the tests map them back to ``proj/`` by their trailing path components, as
``explain`` does with a log from another machine. One run per channel: ``recompiles``,
``recompiles_verbose`` and ``guards`` (the last one alone, so that explain has to deduce the
failing guards from the guard sets). The logs are the run's standard error, unchanged.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COPY = Path("/tmp/rcl-explain/proj")
CHANNELS = ("recompiles", "recompiles_verbose", "guards")


def main() -> None:
    shutil.rmtree(COPY, ignore_errors=True)
    shutil.copytree(HERE / "proj", COPY, ignore=shutil.ignore_patterns("__pycache__"))
    out = HERE / "logs"
    out.mkdir(exist_ok=True)
    for channel in CHANNELS:
        env = {**os.environ, "TORCH_LOGS": channel, "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("TORCH_TRACE", None)
        run = subprocess.run([sys.executable, "train.py"], cwd=COPY, env=env, capture_output=True, text=True,
                             check=True)
        (out / f"{channel}.log").write_text(run.stderr, encoding="utf-8")
        print(f"logs/{channel}.log: {len(run.stderr.splitlines())} lines")


if __name__ == "__main__":
    main()
