"""Measure the linter on generated programs, with torch 2.13 as the oracle.

Usage (from the repository root, in the virtualenv that has recompile-lint)::

    python bench/generated.py --seed 7 --count 600                 # stored proofs only
    python bench/generated.py --seed 7 --count 600 --prove         # prove the missing ones (torch)
    python bench/generated.py --seed 7 --count 600 --json out.json # also write the figures
    python bench/generated.py --seed 0 --count 600 --floors bench/lab/floors.json   # against CI's floors

It generates ``--count`` programs from ``--seed`` with ``recompile_lint.lab.generator`` (the
same seed gives the same programs), finds each program's proof in the store (``--store``, the
committed proofs by default) by the program's content key, and with ``--prove`` runs the
programs that have none on the installed torch (backend eager, in child processes) and adds
their proofs to the store. Programs without a proof are counted as unproven and left out;
programs whose proof says they failed on their own are left out too. The rest are linted
(every rule, no cache, ``--jobs`` worker processes) and judged against what torch did
(``recompile_lint.lab.measure`` says how): printed per tier and per value of every dimension.

``--floors FILE`` prints the figures below the CI floors and those that could be raised;
``--write-floors`` raises the floors in FILE to what was measured (they never go down).
``--show N`` lists N disagreeing programs with what went wrong (a tier first, then a guard named by
no finding), ``--dump DIR`` writes them out.
Exit status: 0, or 1 when a figure is below its floor, 2 on bad options.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from recompile_lint.lab import measure, store  # noqa: E402
from recompile_lint.lab.generator import generate  # noqa: E402

DEFAULT_STORE = store.DEFAULT_PATH


class UsageError(Exception):
    """A bad option or input: the message says what to do."""


def load_proofs(path: Path, prove: bool) -> dict[str, Any]:
    if not path.exists():
        if not prove:
            raise UsageError(f"no proof store at {path} (name one with --store, or make it with --prove)")
        if not path.parent.is_dir():
            raise UsageError(f"no directory {path.parent} for the proof store {path}")
    try:
        return store.load(path)
    except store.StoreError as exc:
        raise UsageError(str(exc)) from None


def prove_missing(programs, proofs: dict[str, Any], path: Path, jobs: int, timeout: float) -> int:
    """Prove the programs the store lacks, add them to it; how many were proven."""
    if importlib.util.find_spec("torch") is None:
        raise UsageError("--prove needs torch: pip install -c constraints.txt -e '.[verify]'")
    from recompile_lint.lab import prover

    todo = store.missing(programs, proofs)
    if not todo:
        return 0
    print(f"proving {len(todo)} program(s) on torch, {jobs} at a time ...", file=sys.stderr)

    def progress(done: int, total: int) -> None:
        if done % 50 == 0 or done == total:
            print(f"  {done}/{total} proven", file=sys.stderr)

    try:
        proved = prover.prove(todo, jobs=jobs, timeout=timeout, progress=progress)
    except prover.ProverError as exc:
        raise UsageError(f"the prover cannot run: {exc}") from None
    proofs.update(proved)
    store.save(path, proofs)
    return len(proved)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--prove", action="store_true", help="prove the programs without a stored proof (needs torch)")
    parser.add_argument("--json", dest="json_path", help="write the figures to this file")
    parser.add_argument("--store", default=str(DEFAULT_STORE), help=f"the proof store (default {DEFAULT_STORE.relative_to(ROOT)})")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes for linting and proving (default 2)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per program when proving (default 60)")
    parser.add_argument("--floors", help="a floors file to compare the figures with")
    parser.add_argument("--write-floors", action="store_true", help="raise the floors in --floors to what was measured")
    parser.add_argument("--show", type=int, default=0, metavar="N", help="list N disagreeing programs")
    parser.add_argument("--dump", metavar="DIR", help="write the disagreeing programs listed by --show under DIR")
    args = parser.parse_args(argv)
    try:
        return run(args)
    except UsageError as exc:
        print(f"generated.py: {exc}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    if args.count < 1 or args.jobs < 1:
        raise UsageError("--count and --jobs must be at least 1")
    if args.write_floors and not args.floors:
        raise UsageError("--write-floors needs --floors FILE")
    path = Path(args.store)
    proofs = load_proofs(path, args.prove)
    programs = generate(args.seed, args.count)
    proved = prove_missing(programs, proofs, path, args.jobs, args.timeout) if args.prove else 0
    result = measure.measure(programs, proofs, jobs=args.jobs)
    summary = measure.summarise(result)
    summary = {"seed": args.seed, "count": args.count, "newly_proven": proved, **summary}
    torches = sorted({proofs[k].torch for k in (v.key for v in result.verdicts)})
    summary["torch"] = torches
    print(measure.format_table(summary))
    status = 0
    if args.floors:
        status = compare_floors(Path(args.floors), summary, args.write_floors)
    if args.show:
        show(programs, result, args.show, Path(args.dump) if args.dump else None)
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return status


def compare_floors(path: Path, summary: dict[str, Any], write: bool) -> int:
    floors: dict[str, Any] = {}
    if path.exists():
        try:
            floors = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise UsageError(f"{path} is not JSON: {exc}") from None
    elif not write:
        raise UsageError(f"no floors file {path}")
    below = measure.below_floors(summary, floors)
    for line in below:
        print(f"below floor: {line}")
    if write:
        raised = measure.raise_floors(floors, summary)
        raised = {"seed": summary["seed"], "count": summary["count"], **raised}
        path.write_text(json.dumps(raised, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"floors written to {path}")
    else:
        for line in measure.raisable_floors(summary, floors):
            print(f"can be raised: {line}")
    return 1 if below and not write else 0


def show(programs, result: measure.Measurement, count: int, dump: Path | None) -> None:
    by_key = {p.key: p for p in programs}
    wrong = [v for v in result.verdicts if not v.agrees]
    # Then the programs whose tier agrees but a guard they failed on is named by no finding.
    wrong = (wrong + [v for v in result.verdicts if v.agrees and v.guard_exact is False])[:count]
    print(f"\n{len(wrong)} disagreeing program(s) (a tier, then guard text):")
    for verdict in wrong:
        program = by_key[verdict.key]
        dims = " ".join(f"{n}={v}" for n, v in program.dims)
        print(f"  {verdict.key} #{program.index} {verdict.tier}: {verdict.why}\n      {dims}")
        if dump:
            measure.write_project(program, dump / f"{program.index:05d}-{verdict.key}")


if __name__ == "__main__":
    sys.exit(main())
