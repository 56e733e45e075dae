"""Rule documentation pages, from one source.

Each rule's page text lives in the package, ``report/rule_docs/RCLxxx.md``: a front matter
with the severities its findings can have (``severity: error (unbounded), warning
(bounded)``), then the sections under the fixed ``HEADINGS``. ``rule_page`` renders the page
(title, summary and severity from the rule class and that front matter, then the sections,
with a *Fix safety* section written from the rule's codemods in ``recompile_lint.fixes``):
it is what ``recompile-lint rule RCL101`` prints from an installed wheel, and ``rules/*.md``
at the repository root are the same pages written by

    python -m recompile_lint.report.pages --write rules

(``--check rules`` fails when they differ; a test runs it). The severities declared here are
the ones ``recompile-lint rules`` lists and the README's table shows, and a test holds every
finding of the fixtures to them.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from recompile_lint.models import Boundedness, Severity
from recompile_lint.rules import Rule, all_rules, rule_by_code

SOURCE_DIR = Path(__file__).resolve().parent / "rule_docs"
# The generated copies beside the README (absent from an installed wheel).
PAGES_DIR = Path(__file__).resolve().parent.parent.parent / "rules"

# Fixed headings of every page, in order (a test holds the pages to them).
HEADINGS = (
    "What it does",
    "Why it recompiles",
    "Example",
    "Use instead",
    "Fix safety",
    "Bounded or unbounded",
    "How the verifier confirms it",
)

GENERATED_NOTE = "<!-- Generated from recompile_lint/report/rule_docs/{code}.md by `python -m recompile_lint.report.pages --write rules`: edit that file. -->\n"


class PageError(Exception):
    """A page source that does not follow the format (front matter, severities)."""


@lru_cache(maxsize=None)
def page_source(code: str) -> tuple[tuple[tuple[Severity, Boundedness], ...], str]:
    """(declared severities, the sections' text) of a rule's page source."""
    path = SOURCE_DIR / f"{code}.md"
    text = path.read_text(encoding="utf-8")
    head, sep, body = text.partition("\n---\n")
    if not text.startswith("---\n") or not sep:
        raise PageError(f"{path}: the page must start with a front matter (---, severity: ..., ---)")
    meta = dict(line.split(":", 1) for line in head[4:].splitlines() if ":" in line)
    return parse_severities(meta.get("severity", ""), str(path)), body.lstrip("\n")


def parse_severities(text: str, where: str) -> tuple[tuple[Severity, Boundedness], ...]:
    """``error (unbounded), warning (bounded)`` -> ((ERROR, UNBOUNDED), (WARNING, BOUNDED))."""
    out = []
    for item in text.split(","):
        severity, _, bounded = item.strip().partition(" ")
        try:
            out.append((Severity(severity), Boundedness(bounded.strip().strip("()"))))
        except ValueError:
            raise PageError(f"{where}: severity {item.strip()!r} is not `<error|warning|info> (<unbounded|bounded|by-design>)`") from None
    if not out:
        raise PageError(f"{where}: no severity declared")
    return tuple(out)


def severities(rule: type[Rule]) -> tuple[tuple[Severity, Boundedness], ...]:
    """The severities (with boundedness) a rule's findings can have, most severe first."""
    declared = page_source(rule.code)[0]
    order = list(Severity)
    return tuple(sorted(declared, key=lambda pair: order.index(pair[0])))


def severity_text(rule: type[Rule]) -> str:
    """``error (unbounded) / warning (bounded)``: as the listing, the pages and the README say it."""
    return " / ".join(f"{severity.value} ({bounded.value})" for severity, bounded in severities(rule))


def fix_safety_section(code: str) -> str:
    """The page's ``Fix safety`` section, from the rule's codemods (``recompile_lint.fixes``):
    a page cannot claim a fix the code does not make."""
    from recompile_lint.fixes import fixers_for_code

    fixers = fixers_for_code(code)
    if not fixers:
        return (
            "## Fix safety\n\nNo automatic fix: the change depends on what the code means (see *Use instead*). "
            "`recompile-lint --add-noqa` writes `# noqa: " + code + "` on the lines of findings you accept.\n\n"
        )
    lines = ["## Fix safety", ""]
    for position, fixer in enumerate(fixers):
        kind = "safe" if fixer.safe else "unsafe"
        if position == 0:
            how = f"{kind}, applied by {'`--fix`' if fixer.safe else '`--unsafe-fixes`'}"
        else:
            how = f"{kind}, an alternative for editors (`fixes_for`): the command line applies the first fix that applies"
        lines.append(f"- **{fixer.name}** ({how}): {fixer.summary}; {fixer.why}.")
    lines += [
        "",
        "`recompile-lint --diff` shows a fix without applying it; `recompile-lint verify --fix` runs the probe on the "
        "fixed code and keeps the fix only when the region then compiles one graph "
        "([docs/fixes.md](../docs/fixes.md)).",
        "",
        "",
    ]
    return "\n".join(lines)


def rule_page(code: str) -> str | None:
    """The documentation page of ``code``, or None for an unknown code."""
    rule = rule_by_code(code)
    if rule is None:
        return None
    _, body = page_source(rule.code)
    body = body.replace("## Bounded or unbounded", fix_safety_section(rule.code) + "## Bounded or unbounded", 1)
    default = "off unless selected (`--extend-select " + rule.code + "`)" if rule.severity is Severity.INFO else "on by default"
    return f"# {rule.code}: {rule.name}\n\n{rule.summary}.\n\nSeverity: {severity_text(rule)}; {default}.\n\n{body}"


def rule_page_path(code: str) -> Path | None:
    """The file on this machine that holds the page of ``code`` (None for an unknown code):
    ``rules/<code>.md`` of a checkout when the package runs from one, else the page's source
    inside the installed package. No web address serves the pages; this file is where an
    editor can open one (SARIF embeds the page instead)."""
    rule = rule_by_code(code)
    if rule is None:
        return None
    generated = PAGES_DIR / f"{rule.code}.md"
    if (PAGES_DIR.parent / "pyproject.toml").is_file() and generated.is_file():
        return generated
    return SOURCE_DIR / f"{rule.code}.md"


def rule_page_uri(code: str) -> str | None:
    """``rule_page_path`` as a ``file:`` URI."""
    path = rule_page_path(code)
    return path.as_uri() if path is not None else None


def generated_page(code: str) -> str:
    """The text of ``rules/<code>.md``: the page and a note naming its source."""
    page = rule_page(code)
    if page is None:
        raise KeyError(code)
    return page.rstrip("\n") + "\n\n" + GENERATED_NOTE.format(code=code)


def stale_pages(directory: Path) -> list[str]:
    """Problems of the generated pages in ``directory``: missing, different, or without a rule."""
    problems = []
    codes = {rule.code for rule in all_rules()}
    for code in sorted(codes):
        path = directory / f"{code}.md"
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif path.read_text(encoding="utf-8") != generated_page(code):
            problems.append(f"{path}: differs from its source, recompile_lint/report/rule_docs/{code}.md")
    for path in sorted(directory.glob("RCL*.md")):
        if path.stem not in codes:
            problems.append(f"{path}: no rule has this code")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """``--write DIR`` writes every page there; ``--check DIR`` exits 1 when one is stale."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] not in ("--write", "--check"):
        print("usage: python -m recompile_lint.report.pages --write|--check DIRECTORY", file=sys.stderr)
        return 2
    directory = Path(args[1])
    if args[0] == "--write":
        directory.mkdir(parents=True, exist_ok=True)
        for rule in all_rules():
            (directory / f"{rule.code}.md").write_text(generated_page(rule.code), encoding="utf-8")
        return 0
    problems = stale_pages(directory)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
