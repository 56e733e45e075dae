"""Lint checked-out public repositories and score the findings against a judged file.

    python bench/public.py --root /work/corpus2                  # every repository the file judges
    python bench/public.py --root /work/corpus2 lingua torchtune # some of them
    python bench/public.py --root DIR --json out.json            # also write the figures
    python bench/public.py --root DIR --unjudged                 # list the findings the file does not judge

``bench/public/judged.json`` holds, per repository, the commit that was judged, every error and
warning the linter gave on it with a verdict (true: the code, used as the repository uses it,
makes the compiled function recompile on the finding's guard) and one sentence of reason, and
the real risks found by reading the compiled regions and their drivers (a value Dynamo guards
that the driver changes between calls), each with the lines that make it (read, write, call).
The repositories' code is not in this project: check them out at the judged commits under
``--root/NAME`` (bench/README.md says how).

Per repository: errors true/total, warnings true/total (a finding the file does not judge is
counted as unjudged, never as true), and judged risks found/total (a risk is found when an error
or warning of the run sits at one of its lines or names one as evidence, in its file). The linter
runs as the command line does (``python -m recompile_lint --format json --no-cache DIR``), one
repository at a time. Exit status: 0 scored, 2 bad input (no judged file, no repository found).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_JUDGED = os.path.join(HERE, "public", "judged.json")
SEVERITIES = ("error", "warning")


@dataclass
class Score:
    """One repository's figures."""

    repository: str
    counts: dict[str, dict[str, int]] = field(
        default_factory=lambda: {s: {"true": 0, "false": 0, "unjudged": 0} for s in SEVERITIES}
    )
    risks_found: int = 0
    risks_total: int = 0
    unjudged: list[dict] = field(default_factory=list)
    missed: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "repository": self.repository,
            "counts": self.counts,
            "risks_found": self.risks_found,
            "risks_total": self.risks_total,
            "unjudged": self.unjudged,
            "missed_risks": self.missed,
        }


def load_judged(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as error:
        raise SystemExit(f"public.py: cannot read the judged file {path}: {error}") from None
    if not isinstance(data, dict) or not all(k in data for k in ("repositories", "findings", "risks")):
        raise SystemExit(f"public.py: {path} has no repositories, findings and risks")
    return data


def lint(directory: str) -> list[dict]:
    """The CLI's JSON findings for one repository, with paths relative to it."""
    run = subprocess.run(
        [sys.executable, "-m", "recompile_lint", "--format", "json", "--no-cache", directory],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        findings = json.loads(run.stdout or "[]")
    except ValueError:
        raise SystemExit(f"public.py: the linter gave no JSON for {directory} (exit {run.returncode}): {run.stderr[-400:]}") from None
    for finding in findings:
        finding["rel"] = relative(finding["path"], directory)
        for evidence in finding.get("evidence", ()):
            evidence["rel"] = relative(evidence["path"], directory)
    return findings


def relative(path: str, directory: str) -> str:
    return os.path.relpath(os.path.abspath(path), os.path.abspath(directory)).replace(os.sep, "/")


def score(repository: str, findings: list[dict], judged: dict) -> Score:
    out = Score(repository)
    verdicts = {
        (j["path"], j["line"], j["code"]): j["verdict"]
        for j in judged["findings"]
        if j["repository"] == repository
    }
    reported = [f for f in findings if f["severity"] in SEVERITIES]
    for finding in reported:
        verdict = verdicts.get((finding["rel"], finding["line"], finding["code"]))
        key = "unjudged" if verdict is None else ("true" if verdict else "false")
        out.counts[finding["severity"]][key] += 1
        if verdict is None:
            out.unjudged.append({k: finding[k] for k in ("rel", "line", "code", "severity", "title")})
    for risk in judged["risks"]:
        if risk["repository"] != repository:
            continue
        out.risks_total += 1
        lines = set(risk["lines"])
        if any(touches(f, risk["path"], lines) for f in reported):
            out.risks_found += 1
        else:
            out.missed.append({k: risk[k] for k in ("path", "lines", "guard")})
    return out


def touches(finding: dict, path: str, lines: set[int]) -> bool:
    if finding["rel"] == path and finding["line"] in lines:
        return True
    return any(e["rel"] == path and e["line"] in lines for e in finding.get("evidence", ()))


def ratio(counts: dict[str, int]) -> str:
    total = counts["true"] + counts["false"] + counts["unjudged"]
    text = f"{counts['true']}/{total}"
    return text + (f" ({counts['unjudged']} unjudged)" if counts["unjudged"] else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="repositories to score (default: every one the file judges)")
    parser.add_argument("--root", required=True, help="directory holding one checkout per repository, named as in the file")
    parser.add_argument("--judged", default=DEFAULT_JUDGED, help="the judged file (default: bench/public/judged.json)")
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--unjudged", action="store_true", help="list the findings the file does not judge, and the risks missed")
    args = parser.parse_args(argv)
    judged = load_judged(args.judged)
    names = args.names or list(judged["repositories"])
    unknown = [n for n in names if n not in judged["repositories"]]
    if unknown:
        print(f"public.py: not in {args.judged}: {', '.join(unknown)}", file=sys.stderr)
        return 2
    scores: list[Score] = []
    for name in names:
        directory = os.path.join(args.root, name)
        if not os.path.isdir(directory):
            print(f"public.py: {directory} is not checked out (commit {judged['repositories'][name]['commit']}): skipped", file=sys.stderr)
            continue
        scores.append(score(name, lint(directory), judged))
    if not scores:
        print("public.py: no repository found under --root", file=sys.stderr)
        return 2
    total = Score("all")
    print(f"{'repository':24} {'errors true':>16} {'warnings true':>16} {'risks found':>12}")
    for s in scores:
        print(f"{s.repository:24} {ratio(s.counts['error']):>16} {ratio(s.counts['warning']):>16} {s.risks_found:>6}/{s.risks_total}")
        for severity in SEVERITIES:
            for key, value in s.counts[severity].items():
                total.counts[severity][key] += value
        total.risks_found += s.risks_found
        total.risks_total += s.risks_total
        if args.unjudged:
            for f in s.unjudged:
                print(f"    unjudged {f['rel']}:{f['line']} {f['code']} {f['severity']}: {f['title']}")
            for r in s.missed:
                print(f"    missed   {r['path']}:{','.join(map(str, r['lines']))} {r['guard']}")
    print(f"{'all':24} {ratio(total.counts['error']):>16} {ratio(total.counts['warning']):>16} {total.risks_found:>6}/{total.risks_total}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"repositories": [s.as_dict() for s in scores], "all": total.as_dict()}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
