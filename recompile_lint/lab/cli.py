"""The lab's commands: ``python -m recompile_lint.lab prove|table``.

``prove --seed N --count K`` generates K programs from seed N and proves, on the installed torch,
those the stored proofs lack (``bench/lab/proofs.json``). ``table`` rebuilds the measured table
(``recompile_lint/analysis/measured.json``) from the programs of the runs it was made from (or
``--seed``/``--count``, or ``--runs 0:600,7:600``) and the stored proofs, and writes ``docs/lab.md`` from it;
``table --page-only`` rewrites the page from the committed table alone; ``--check`` writes
nothing and fails when a file is not current.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from recompile_lint.lab import store, table
from recompile_lint.lab.program import Program


class LabError(Exception):
    """A command cannot do what it was asked (said on stderr, exit code 2)."""


def _generate(runs: Sequence[tuple[int, int]]) -> list[Program]:
    try:
        from recompile_lint.lab.generator import generate
    except ImportError as exc:
        raise LabError(f"the lab's generator is not available: {exc}") from None
    programs: list[Program] = []
    for seed, count in runs:
        programs.extend(generate(seed, count))
    return programs


def _unwritable() -> list[dict[str, str]] | None:
    try:
        from recompile_lint.lab import grid
    except ImportError:
        return None
    return grid.unwritable_cells()


def _parse_runs(text: str) -> list[tuple[int, int]]:
    """``0:600,7:600`` -> [(0, 600), (7, 600)]."""
    runs = []
    for part in text.split(","):
        seed, sep, count = part.strip().partition(":")
        try:
            if not sep or int(count) < 0:
                raise ValueError
            runs.append((int(seed), int(count)))
        except ValueError:
            raise LabError(f"--runs: {part.strip()!r} is not SEED:COUNT") from None
    return runs


def _runs(args: argparse.Namespace, current: dict | None) -> list[tuple[int, int]]:
    if args.runs is not None:
        if args.seed is not None or args.count is not None:
            raise LabError("give --runs or --seed/--count, not both")
        return _parse_runs(args.runs)
    if args.seed is not None or args.count is not None:
        if args.seed is None or args.count is None or args.count < 0:
            raise LabError("--seed and --count go together (--count >= 0)")
        return [(args.seed, args.count)]
    made = [(int(s), int(c)) for s, c in (current or {}).get("made_from", [])]
    if not made:
        raise LabError("the table names no run to regenerate: give --seed N --count K")
    return made


def _write_or_check(path: Path, text: str, check: bool) -> bool:
    """Write ``text`` (or, with ``check``, say whether the file already holds it)."""
    if check:
        try:
            return path.read_text(encoding="utf-8") == text
        except OSError:
            return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def cmd_table(args: argparse.Namespace) -> int:
    table_path, page_path = Path(args.table), Path(args.page)
    try:
        current = table.load(table_path) if table_path.is_file() else None
    except ValueError as exc:
        raise LabError(f"{table_path}: not a measured table: {exc}") from None
    if args.page_only:
        if current is None:
            raise LabError(f"{table_path}: no measured table to write the page from")
        data = current
    else:
        runs = _runs(args, current)
        proofs = store.load(args.proofs)  # a bad store fails before the programs are generated
        data = table.build(_generate(runs), proofs, made_from=runs)
    fresh = True
    if not args.page_only:
        fresh &= _write_or_check(table_path, table.dumps(data), args.check)
    fresh &= _write_or_check(page_path, table.render(data, _unwritable()), args.check)
    counts = data.get("counts", {})
    print(f"{len(data['cells'])} cells from {counts.get('proven', 0)} proven programs"
          f" ({counts.get('unproven', 0)} without a proof, {counts.get('failed', 0)} failed to run)")
    if args.check and not fresh:
        print("the measured table or its page is not current: python -m recompile_lint.lab table", file=sys.stderr)
        return 1
    return 0


def cmd_prove(args: argparse.Namespace) -> int:
    from recompile_lint.lab.prover import ProverError

    if args.count < 0:
        raise LabError("--count must be >= 0")
    programs = _generate([(args.seed, args.count)])
    proofs = store.load(args.proofs)
    todo = store.missing(programs, proofs)
    print(f"{len(programs)} programs, {len(todo)} to prove", flush=True)

    def progress(done: int, total: int) -> None:
        if done % 50 == 0 or done == total:
            print(f"  {done}/{total}", flush=True)

    try:
        proofs = store.prove_missing(programs, proofs, jobs=args.jobs, timeout=args.timeout, progress=progress)
    except ProverError as exc:
        raise LabError(str(exc)) from None
    store.save(args.proofs, proofs)
    failed = [proofs[p.key] for p in programs if p.key in proofs and not proofs[p.key].ran]
    print(f"stored {len(proofs)} proofs in {args.proofs}; {len(failed)} of these programs did not run")
    for proof in failed[: args.show_failed]:
        print(f"  {proof.key}: {proof.error}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m recompile_lint.lab", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    tab = commands.add_parser("table", help="rebuild the measured table and docs/lab.md")
    tab.add_argument("--seed", type=int)
    tab.add_argument("--count", type=int)
    tab.add_argument("--runs", help="several generated runs: SEED:COUNT,SEED:COUNT (e.g. 0:600,7:600)")
    tab.add_argument("--proofs", default=str(store.DEFAULT_PATH), help="stored proofs (default: %(default)s)")
    tab.add_argument("--table", default=str(table.TABLE_PATH), help=argparse.SUPPRESS)
    tab.add_argument("--page", default=str(table.PAGE_PATH), help=argparse.SUPPRESS)
    tab.add_argument("--page-only", action="store_true", help="rewrite docs/lab.md from the committed table")
    tab.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is not current")
    tab.set_defaults(run=cmd_table)
    pro = commands.add_parser("prove", help="prove the generated programs the store lacks (torch needed)")
    pro.add_argument("--seed", type=int, required=True)
    pro.add_argument("--count", type=int, required=True)
    pro.add_argument("--proofs", default=str(store.DEFAULT_PATH), help="stored proofs (default: %(default)s)")
    pro.add_argument("--jobs", "-j", type=int, default=2)
    pro.add_argument("--timeout", type=float, default=60.0, help="seconds per program")
    pro.add_argument("--show-failed", type=int, default=20, help="programs that did not run to list")
    pro.set_defaults(run=cmd_prove)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (LabError, store.StoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
