"""The base class every rule derives from.

A rule reads compiled regions and project facts through a context and reports; it never walks
files, prints, or knows about output formats. Two hooks exist:

* ``check_function(ctx)`` runs once per function that a compiled region reaches (the entry
  point itself or a callee Dynamo inlines), with the function's libcst node in ``ctx.node``.
* ``check_project(ctx)`` runs once per lint run, for patterns decided at compile sites and call
  sites rather than inside a region (backends, loops around ``torch.compile``, ``train()``).
* ``check_risk(risk, ctx)`` is offered each risk of the guard model (``analysis.risks``: a
  guard Dynamo installs and the evidence that its value changes between calls); a rule that
  claims it reports it and returns True. Rules are asked in ``claim_order``, then code order,
  and the first claim wins, so each risk is one finding.

``VALID`` and ``INVALID`` are complete modules. Each line of an ``INVALID`` example that ends
with ``# <code>`` must be reported, and nothing else; a ``VALID`` example must stay silent.
They are the rule's first tests and appear on its documentation page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Iterable

from recompile_lint.models import Boundedness, Severity

if TYPE_CHECKING:
    from recompile_lint.analysis.context import FunctionContext, ProjectContext
    from recompile_lint.analysis.risks import Risk


class Rule:
    """A check for one mechanism that makes Dynamo compile another graph."""

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""  # kebab-case, stable once released
    severity: ClassVar[Severity] = Severity.ERROR
    bounded: ClassVar[Boundedness] = Boundedness.UNBOUNDED
    summary: ClassVar[str] = ""  # one line, shown by `recompile-lint rules`
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[str, ...]] = ()
    claim_order: ClassVar[int] = 100  # lower claims a risk first

    def check_function(self, ctx: "FunctionContext") -> Iterable[None]:
        """Report on one function reached by a compiled region (default: nothing)."""
        return ()

    def check_project(self, ctx: "ProjectContext") -> Iterable[None]:
        """Report on compile sites and call sites of the whole project (default: nothing)."""
        return ()

    def claims(self, risk: "Risk") -> bool:
        """Whether ``risk`` (a guard and its evidence) is this rule's to report (default: no)."""
        return False

    def check_risk(self, risk: "Risk", ctx: "ProjectContext") -> None:
        """Report a risk this rule claims."""
