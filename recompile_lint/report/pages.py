"""Rule documentation: the Markdown page under ``rules/`` at the repository root, or, when the
package is installed without the repository, a page rendered from the rule class itself."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

from recompile_lint.rules import rule_by_code

PAGES_DIR = Path(__file__).resolve().parent.parent.parent / "rules"

# Fixed headings of every page, in order (a test holds the pages to them).
HEADINGS = (
    "What it does",
    "Why it recompiles",
    "Example",
    "Use instead",
    "Bounded or unbounded",
    "How the verifier confirms it",
)


def page_path(code: str) -> Path:
    return PAGES_DIR / f"{code.upper()}.md"


def rule_page(code: str) -> str | None:
    """The documentation page of ``code``, or None for an unknown code."""
    rule = rule_by_code(code)
    if rule is None:
        return None
    path = page_path(rule.code)
    if path.is_file():
        return path.read_text(encoding="utf-8")
    doc = inspect.cleandoc(rule.__doc__ or "")
    example = textwrap.dedent(rule.INVALID[0]).strip() if rule.INVALID else ""
    fixed = textwrap.dedent(rule.VALID[0]).strip() if rule.VALID else ""
    return (
        f"# {rule.code}: {rule.name}\n\n{rule.summary}.\n\nSeverity: {rule.severity.value}; "
        f"{rule.bounded.value}.\n\n{doc}\n\n## Example\n\n```python\n{example}\n```\n\n"
        f"## Use instead\n\n```python\n{fixed}\n```\n"
    )
