"""The base class every rule derives from.

A rule reads compiled regions and project facts through a context and reports; it never walks
files, prints, or knows about output formats. Two hooks exist:

* ``check_function(ctx)`` runs once per function that a compiled region reaches (the entry
  point itself or a callee Dynamo inlines), with the function's libcst node in ``ctx.node``.
* ``check_project(ctx)`` runs once per lint run, for patterns decided at compile sites and call
  sites rather than inside a region (backends, loops around ``torch.compile``, ``train()``).

``VALID`` and ``INVALID`` are complete modules. Each line of an ``INVALID`` example that ends
with ``# <code>`` must be reported, and nothing else; a ``VALID`` example must stay silent.
They are the rule's first tests and appear on its documentation page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Iterable

from recompile_lint.models import Boundedness, Severity

if TYPE_CHECKING:
    from recompile_lint.analysis.context import FunctionContext, ProjectContext


class Rule:
    """A check for one mechanism that makes Dynamo compile another graph."""

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""  # kebab-case, stable once released
    severity: ClassVar[Severity] = Severity.ERROR
    bounded: ClassVar[Boundedness] = Boundedness.UNBOUNDED
    summary: ClassVar[str] = ""  # one line, shown by `recompile-lint rules`
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[str, ...]] = ()

    def check_function(self, ctx: "FunctionContext") -> Iterable[None]:
        """Report on one function reached by a compiled region (default: nothing)."""
        return ()

    def check_project(self, ctx: "ProjectContext") -> Iterable[None]:
        """Report on compile sites and call sites of the whole project (default: nothing)."""
        return ()
