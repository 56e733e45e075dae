"""Resolve every compile site of checked-out repositories and count how they resolve.

    python bench/corpus.py /work/corpus/torchtitan /work/corpus/nanoGPT ...
    python bench/corpus.py --unresolved DIR...      # list the sites that did not resolve
    python bench/corpus.py --sample 50 --seed 1 DIR...   # a random sample of resolutions to check by hand
    python bench/corpus.py --json out.json DIR...

Per repository: Python files, compile sites, sites resolved to project code, to a modelled
torch library entry, unresolved by reason (``regions.UNRESOLVED_REASONS``), and wall time of
the whole resolution (discovery, text tests, parses, value flow; no cache). ``.compile()``
calls on something that is not an nn.Module (``not-torch``: ``re``, another library's
``compile``) are counted apart, not as sites. The linter never imports or runs the
repositories' code. See bench/README.md for the corpus and the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter

from recompile_lint.analysis.index import FactsStore, ProjectIndex
from recompile_lint.analysis.regions import UNRESOLVED_REASONS, SiteResolution, find_sites
from recompile_lint.config import Config
from recompile_lint.discovery import discover


def resolve_repository(directory: str) -> tuple[list[SiteResolution], int, float, ProjectIndex]:
    """(site resolutions, Python files, seconds) for one repository directory."""
    start = time.perf_counter()
    config = Config()
    files = discover([directory], config.exclude + config.extend_exclude, directory).files
    index = ProjectIndex(files, FactsStore())
    sites = find_sites(index)
    return sites, len(files), time.perf_counter() - start, index


def describe(resolution: SiteResolution, directory: str, index: ProjectIndex) -> str:
    """One line: where, what the site compiles as written, and what it resolved to."""
    site = resolution.site
    where = f"{os.path.relpath(resolution.site_path, directory)}:{site.span.line}"
    text = index.text(resolution.site_path) or ""
    lines = text.split("\n")
    source = lines[site.span.line - 1].strip() if 0 < site.span.line <= len(lines) else ""
    if resolution.resolved:
        parts = [f"{r.form} {r.name}" + (f" [{r.model_class}]" if r.model_class else "") + (f" from {r.container}" if r.container else "") for r in resolution.regions]
        parts += [f"library {r.entry.name} {r.ref}" + (f" [{r.model_class}]" if r.model_class and r.model_class != r.ref else "") for r in resolution.library]
        return f"{where}: {source[:100]}\n    -> " + "; ".join(parts)
    return f"{where}: {source[:100]}\n    -> unresolved: {resolution.reason}" + (f" ({resolution.detail})" if resolution.detail else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directories", nargs="+", metavar="DIR")
    parser.add_argument("--unresolved", action="store_true", help="list every unresolved site")
    parser.add_argument("--sample", type=int, default=0, metavar="N", help="print N random resolved sites (all repositories together)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE", help="write the per-repository figures as JSON")
    args = parser.parse_args(argv)

    rows = []
    resolved_pool: list[tuple[SiteResolution, str, ProjectIndex]] = []
    totals = Counter()
    reasons_total: Counter = Counter()
    header = f"{'repository':<24} {'files':>6} {'sites':>6} {'project':>8} {'library':>8} {'resolved':>9} {'not-torch':>9} {'time s':>7}  unresolved by reason"
    print(header)
    for directory in args.directories:
        directory = directory.rstrip("/")
        if not os.path.isdir(directory):
            print(f"corpus.py: error: not a directory: {directory}", file=sys.stderr)
            return 2
        sites, files, seconds, index = resolve_repository(directory)
        counted = [s for s in sites if s.reason != "not-torch"]
        project = sum(1 for s in counted if s.regions)
        library = sum(1 for s in counted if s.library and not s.regions)
        reasons = Counter(s.reason for s in counted if not s.resolved)
        name = os.path.basename(directory)
        share = (project + library) / len(counted) if counted else 1.0
        print(
            f"{name:<24} {files:>6} {len(counted):>6} {project:>8} {library:>8} {share:>8.1%} {len(sites) - len(counted):>9} {seconds:>7.2f}  "
            + ", ".join(f"{r} {n}" for r, n in sorted(reasons.items(), key=lambda x: (-x[1], x[0])))
        )
        rows.append(
            {
                "repository": name,
                "files": files,
                "sites": len(counted),
                "project": project,
                "library": library,
                "not_torch": len(sites) - len(counted),
                "unresolved": dict(reasons),
                "seconds": round(seconds, 3),
            }
        )
        totals.update({"files": files, "sites": len(counted), "project": project, "library": library, "not_torch": len(sites) - len(counted)})
        reasons_total.update(reasons)
        resolved_pool.extend((s, directory, index) for s in counted if s.resolved)
        if args.unresolved:
            for s in counted:
                if not s.resolved:
                    print("  " + describe(s, directory, index).replace("\n", "\n  "))
    share = (totals["project"] + totals["library"]) / totals["sites"] if totals["sites"] else 1.0
    print(
        f"{'total':<24} {totals['files']:>6} {totals['sites']:>6} {totals['project']:>8} {totals['library']:>8} {share:>8.1%} {totals['not_torch']:>9} {'':>7}  "
        + ", ".join(f"{r} {n}" for r, n in sorted(reasons_total.items(), key=lambda x: (-x[1], x[0])))
    )
    unknown = set(reasons_total) - set(UNRESOLVED_REASONS)
    if unknown:
        print(f"corpus.py: error: reasons outside the fixed list: {sorted(unknown)}", file=sys.stderr)
        return 1
    if args.sample:
        print()
        pool = sorted(resolved_pool, key=lambda item: (item[0].site_path, item[0].site.span.line, item[0].site.span.column))
        for number, (s, directory, index) in enumerate(random.Random(args.seed).sample(pool, min(args.sample, len(pool))), 1):
            print(f"{number:>2}. {os.path.basename(directory)}/" + describe(s, directory, index))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"repositories": rows, "total": dict(totals), "unresolved": dict(reasons_total)}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
