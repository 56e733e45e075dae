"""Resolve every compile site of checked-out repositories and count how they resolve.

    python bench/corpus.py /work/corpus/torchtitan /work/corpus/nanoGPT ...
    python bench/corpus.py --unresolved DIR...      # list the sites that did not resolve
    python bench/corpus.py --sample 50 --seed 1 DIR...   # a random sample of resolutions to check by hand
    python bench/corpus.py --json out.json DIR...
    python bench/corpus.py --unlisted DIR...        # the independent count's sites not listed, and the reverse

Per repository: Python files, compile sites, sites resolved to project code, to a modelled
torch library entry, unresolved by reason (``regions.UNRESOLVED_REASONS``), and wall time of
the whole resolution (discovery, text tests, parses, value flow; no cache). ``.compile()``
calls on something that is not an nn.Module (``not-torch``: ``re``, another library's
``compile``) are counted apart, not as sites. Against them, an independent count of the
repository's sites (``site_count.py``, a plain ``ast`` pass sharing no code with the linter):
how many of those the linter listed, how many it resolved. The linter never imports or runs
the repositories' code. See bench/README.md for the corpus and the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from site_count import count_sites  # noqa: E402

from recompile_lint.analysis.index import FactsStore, ProjectIndex
from recompile_lint.analysis.loader import find_sites
from recompile_lint.analysis.regions import UNRESOLVED_REASONS, SiteResolution
from recompile_lint.config import Config
from recompile_lint.discovery import discover


def resolve_repository(directory: str) -> tuple[list[SiteResolution], int, float, ProjectIndex]:
    """(site resolutions, Python files, seconds, index) for one repository directory."""
    start = time.perf_counter()
    config = Config()
    files = discover([directory], config.exclude + config.extend_exclude, directory).files
    index = ProjectIndex(files, FactsStore())
    sites = find_sites(index, namesakes=True)
    return sites, len(files), time.perf_counter() - start, index


def against_count(sites: list[SiteResolution], index: ProjectIndex) -> dict[str, set]:
    """The linter's sites against the independent count (``site_count.count_sites``) over the
    same files, each a set of (file, line): ``counted``; ``listed`` (counted and listed);
    ``resolved`` (listed and resolved); ``not_sites`` (counted, and listed as ``not-torch``
    only: a call the value flow shows runs a project method, not torch's compile; check them
    by hand); ``extra`` (listed sites the count does not hold)."""
    counted = count_sites(list(index.paths))
    at: dict[tuple[str, int], list[SiteResolution]] = {}
    for s in sites:
        at.setdefault((s.site_path, s.site.span.line), []).append(s)
    listed = counted & set(at)
    resolved = {key for key in listed if any(s.resolved for s in at[key])}
    not_sites = {key for key in listed if all(s.reason == "not-torch" for s in at[key])}
    extra = {key for key, found in at.items() if key not in counted and not all(s.reason == "not-torch" for s in found)}
    return {"counted": counted, "listed": listed, "resolved": resolved, "not_sites": not_sites, "extra": extra}


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
    parser.add_argument("--unlisted", action="store_true", help="list the independent count's sites not listed, and the listed sites it did not count")
    parser.add_argument("--sample", type=int, default=0, metavar="N", help="print N random resolved sites (all repositories together)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE", help="write the per-repository figures as JSON")
    args = parser.parse_args(argv)

    rows = []
    resolved_pool: list[tuple[SiteResolution, str, ProjectIndex]] = []
    totals = Counter()
    reasons_total: Counter = Counter()
    header = (
        f"{'repository':<22} {'files':>6} {'sites':>6} {'project':>8} {'library':>8} {'resolved':>9} {'not-torch':>9} {'time s':>7}"
        f" {'counted':>8} {'not-site':>8} {'listed':>7} {'resolved':>9} {'unlisted':>8} {'extra':>6}  unresolved by reason"
    )
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
        count = against_count(sites, index)
        real, listed, resolved, extra, not_sites = count["counted"], count["listed"], count["resolved"], count["extra"], count["not_sites"]
        print(
            f"{name:<22} {files:>6} {len(counted):>6} {project:>8} {library:>8} {share:>8.1%} {len(sites) - len(counted):>9} {seconds:>7.2f}"
            f" {len(real):>8} {len(not_sites):>8} {_share(listed, real):>7} {_share(resolved, real - not_sites):>9} {len(real - listed):>8} {len(extra):>6}  "
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
                "counted": len(real),
                "counted_not_sites": len(not_sites),
                "counted_listed": len(listed),
                "counted_resolved": len(resolved),
                "not_listed": len(real - listed),
                "listed_not_counted": len(extra),
            }
        )
        totals.update(
            {
                "files": files, "sites": len(counted), "project": project, "library": library, "not_torch": len(sites) - len(counted),
                "counted": len(real), "counted_not_sites": len(not_sites), "counted_listed": len(listed), "counted_resolved": len(resolved), "not_listed": len(real - listed),
                "listed_not_counted": len(extra),
            }
        )
        reasons_total.update(reasons)
        resolved_pool.extend((s, directory, index) for s in counted if s.resolved)
        if args.unlisted:
            for path, line in sorted(real - listed):
                print(f"  not listed: {_line(index, directory, path, line)}")
            for path, line in sorted(extra):
                print(f"  listed, not counted: {_line(index, directory, path, line)}")
            for path, line in sorted(not_sites):
                print(f"  counted, not a site: {_line(index, directory, path, line)}")
        if args.unresolved:
            for s in counted:
                if not s.resolved:
                    print("  " + describe(s, directory, index).replace("\n", "\n  "))
    share = (totals["project"] + totals["library"]) / totals["sites"] if totals["sites"] else 1.0
    print(
        f"{'total':<22} {totals['files']:>6} {totals['sites']:>6} {totals['project']:>8} {totals['library']:>8} {share:>8.1%} {totals['not_torch']:>9} {'':>7}"
        f" {totals['counted']:>8} {totals['counted_not_sites']:>8} {_ratio(totals['counted_listed'], totals['counted']):>7}"
        f" {_ratio(totals['counted_resolved'], totals['counted'] - totals['counted_not_sites']):>9}"
        f" {totals['not_listed']:>8} {totals['listed_not_counted']:>6}  "
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


def _ratio(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "-"


def _share(part: set, whole: set) -> str:
    return _ratio(len(part), len(whole))


def _line(index: ProjectIndex, directory: str, path: str, line: int) -> str:
    lines = (index.text(path) or "").split("\n")
    source = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    return f"{os.path.relpath(path, directory)}:{line}: {source[:100]}"


if __name__ == "__main__":
    sys.exit(main())
