"""How faithfully the execution stage's interpreter follows the generated programs.

Usage (from the repository root, in the virtualenv that has recompile-lint)::

    python bench/execution_fidelity.py --seed 0 --count 900
    python bench/execution_fidelity.py --seed 0 --count 900 --show 20 --json out.json

For each program with a stored proof (``--store``, the committed proofs by default), the guards
torch failed on are evaluated by their source at every call of the compiled object while the
execution stage's entries run (``recompile_lint.lab.fidelity`` says how). Printed per column:
``reached`` (called twice or more), ``concrete`` (every guarded value known at every call),
``faithful`` (the values differ definitely between calls where torch recompiled), over the
programs torch recompiled; ``twins`` (negative twins: no difference where the value stays, a
difference where it really changes); ``clean`` (negatives: no false evidence from the stage),
for all programs and per value of every grid dimension. Exit status: 0, or 2 on bad options.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from recompile_lint.lab import fidelity, store  # noqa: E402
from recompile_lint.lab.generator import generate  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--store", type=Path, default=store.DEFAULT_PATH, help="the proof store (default bench/lab/proofs.json)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--json", dest="json_path", type=Path, help="write the figures to this file")
    parser.add_argument("--show", type=int, default=0, metavar="N", help="list N programs the interpreter did not follow")
    args = parser.parse_args(argv)
    if args.count < 0 or args.jobs < 1:
        parser.error("--count must be >= 0 and --jobs >= 1")
    if not args.store.exists():
        print(f"error: no proof store at {args.store}", file=sys.stderr)
        return 2
    try:
        proofs = store.load(args.store)
    except store.StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    programs = generate(args.seed, args.count)
    results = fidelity.measure_fidelity(programs, proofs, jobs=args.jobs)
    summary = fidelity.summarise(results)
    print(fidelity.format_table(summary))
    if args.show:
        missed = [r for r in results if (r.tier != "negative" and r.sources and not r.faithful) or r.faithful is False or r.clean is False]
        print(f"\n{len(missed)} program(s) not followed; the first {min(args.show, len(missed))}:")
        for result in missed[: args.show]:
            print("  " + fidelity.why(result))
    if args.json_path is not None:
        args.json_path.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
