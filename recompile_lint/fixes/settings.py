"""Fixes that add a compiler setting at the top of the module that compiles the region.

* ``dynamic-sources`` (RCL101, RCL102, RCL103, RCL104): a Python int that compiled code reads
  and other code changes becomes a symbolic input when its guard source is listed in
  ``torch.compiler.config.dynamic_sources``: one graph instead of one per value (measured on
  torch 2.13 for a global, a global dict's value, a global object's attribute, a counter the
  compiled code increments and an ``nn.Module`` attribute). Not offered where the value bounds
  a ``range()`` or goes through ``math.exp`` (``NEEDS_A_CONSTANT``): Dynamo specialises it
  there whatever the setting.
* ``capture-scalar-outputs`` (RCL404): ``torch._dynamo.config.capture_scalar_outputs = True``
  traces ``.item()``, ``int(t)`` and ``float(t)`` into the graph instead of breaking it.

Both are safe: the program computes what it did; only how Dynamo treats the value changes.
The setting goes where the linter and Dynamo both see it before the first compile: after the
imports of the file that holds the compile site (``import torch`` added when that file has
none), or into the setting the file already has.
"""

from __future__ import annotations

import ast
import re

import libcst as cst

from recompile_lint.fixes.base import Fixer, FixError, Reader, dotted, parse, same_file
from recompile_lint.models import Finding

DYNAMIC_SOURCES = "compiler.config.dynamic_sources"
CAPTURE_SCALARS = "_dynamo.config.capture_scalar_outputs"


def compile_site_path(finding: Finding) -> str | None:
    for location in finding.evidence:
        if location.role == "compile-site":
            return location.path
    return None


def torch_name(module: cst.Module) -> str | None:
    """The name a module-level ``import torch`` (or ``import torch as t``) binds, if any."""
    found = torch_import(module)
    return found[1] if found is not None else None


def torch_import(module: cst.Module) -> tuple[int, str] | None:
    """(index in ``module.body``, name bound) of the first module-level ``import torch``."""
    for position, statement in enumerate(module.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if dotted(alias.name) == "torch":
                        if alias.asname is None:
                            return position, "torch"
                        if isinstance(alias.asname.name, cst.Name):
                            return position, alias.asname.name.value
    return None


def insertion_index(module: cst.Module) -> int:
    """The index in ``module.body`` after its docstring and leading imports."""
    index = 0
    for position, statement in enumerate(module.body):
        if isinstance(statement, cst.SimpleStatementLine):
            smalls = statement.body
            if all(isinstance(small, (cst.Import, cst.ImportFrom)) for small in smalls):
                index = position + 1
                continue
            if position == 0 and len(smalls) == 1 and isinstance(smalls[0], cst.Expr) and isinstance(smalls[0].value, (cst.SimpleString, cst.ConcatenatedString)):
                index = 1
                continue
        break
    return index


def settings_of(module: cst.Module, suffix: str) -> list[tuple[int, cst.Assign]]:
    """Module-level assignments to ``<anything>.<suffix>``, with their statement's index."""
    out = []
    for position, statement in enumerate(module.body):
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and any(dotted(t.target).endswith("." + suffix) for t in small.targets):
                    out.append((position, small))
    return out


class _Assignments(cst.CSTVisitor):
    """Whether any assignment, anywhere, sets ``<anything>.<suffix>``."""

    def __init__(self, suffix: str) -> None:
        self.suffix = suffix
        self.count = 0

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(dotted(t.target).endswith("." + self.suffix) for t in node.targets):
            self.count += 1

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if dotted(node.target).endswith("." + self.suffix):
            self.count += 2  # never module-level assignments alone

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if dotted(node.target).endswith("." + self.suffix):
            self.count += 2


def with_setting(module: cst.Module, line: str) -> cst.Module:
    """``module`` with the statement ``line`` after its imports (and ``import torch`` first
    where the module has none)."""
    index = insertion_index(module)
    statements = [cst.parse_statement(line)]
    imported = torch_import(module)
    if imported is None:
        statements.insert(0, cst.parse_statement("import torch\n"))
    else:
        # After the import of torch, even where code runs before it (``sys.path.insert(...)``).
        index = max(index, imported[0] + 1)
    if index > 0:
        # A blank line between the imports (or the docstring) and the setting.
        statements[0] = statements[0].with_changes(leading_lines=[cst.EmptyLine()])
    body = list(module.body)
    if index < len(body):
        # A blank line between the setting and the code after it, as the imports have.
        following = body[index]
        if not following.leading_lines:
            body[index] = following.with_changes(leading_lines=[cst.EmptyLine()])
    return module.with_changes(body=body[:index] + statements + body[index:])


def string_literal(value: str) -> str:
    return f'"{value}"' if '"' not in value and "\\" not in value else repr(value)


class DynamicSources(Fixer):
    name = "dynamic-sources"
    codes = ("RCL101", "RCL102", "RCL103", "RCL104")
    safe = True
    summary = (
        "lists the guarded value in `torch.compiler.config.dynamic_sources` (an `int` only, and not where the function "
        "that reads it passes it to `range()` or `math.exp`), after the imports of the file that compiles the region"
    )
    why = "the program computes the same values; Dynamo takes the int as a symbolic input instead of a constant"

    def title(self, finding: Finding) -> str:
        source = finding.guard.source if finding.guard is not None else ""
        return f'Set torch.compiler.config.dynamic_sources = "{source}"'

    def rewrite(self, finding: Finding, text: str, read: Reader) -> dict[str, str] | None:
        guard, subject = finding.guard, finding.subject
        if guard is None or subject is None or guard.kind != "CONSTANT_MATCH" or not guard.source or subject.value_kind != "int":
            return None
        if _needs_a_constant(finding, text, read):
            return None
        site = compile_site_path(finding)
        if site is None:
            return None
        site_text = text if same_file(site, finding.path) else read(site)
        if site_text is None:
            return None
        module = parse(site_text)
        visitor = _Assignments(DYNAMIC_SOURCES.rsplit(".", 1)[-1])
        module.visit(visitor)
        existing = settings_of(module, DYNAMIC_SOURCES)
        if len(existing) != visitor.count or len(existing) > 1:
            raise FixError(f"{site} sets dynamic_sources in a way this fix does not edit (more than once, or not as a module-level string)")
        if existing:
            position, assign = existing[0]
            try:
                current = ast.literal_eval(module.code_for_node(assign.value))
            except (ValueError, SyntaxError):
                current = None
            if not isinstance(current, str):
                raise FixError(f"{site} sets dynamic_sources to something other than a string literal")
            sources = [part.strip() for part in current.split(",") if part.strip()]
            if guard.source in sources:
                return None
            new_value = cst.parse_expression(string_literal(",".join(sources + [guard.source])))
            statement = module.body[position]
            body = list(module.body)
            body[position] = statement.with_changes(body=[small.with_changes(value=new_value) if small is assign else small for small in statement.body])
            return {site: module.with_changes(body=body).code}
        name = torch_name(module) or "torch"
        line = f"{name}.{DYNAMIC_SOURCES} = {string_literal(guard.source)}\n"
        return {site: with_setting(module, line).code}


# Where an int stays a constant whatever ``dynamic_sources`` says: a ``range()`` bound (Dynamo
# unrolls the loop) and ``math.exp`` (``math.exp(-n / tau)``: the guard becomes an expression
# of the value, new on every step). Measured on torch 2.13 (docs/fixes.md); ``math.cos`` and
# ``math.sqrt`` of such an int were measured to stay one graph, so ``math`` as a whole is not here.
NEEDS_A_CONSTANT = ("range(", "math.exp(")


def _needs_a_constant(finding: Finding, text: str, read: Reader) -> bool:
    """Whether a line of the function that reads the value (where the finding is, or the read
    it names when reported at another of its locations), or the line Dynamo names, uses the
    value's name where a symbolic int is specialised again."""
    places = [(loc.path, loc.line) for loc in finding.evidence if loc.role in ("use", "read")]
    if finding.primary is None:
        places.append((finding.path, finding.line))
    name = finding.subject.name if finding.subject is not None else ""
    word = re.compile(rf"\b{re.escape(name)}\b") if name else None
    for path, number in places:
        source = text if same_file(path, finding.path) else read(path) or ""
        lines = source.splitlines()
        first, last = _function_span(source, number)
        for line in lines[first - 1 : last]:
            code = line.split("#", 1)[0]
            if (word is None or word.search(code)) and any(marker in code for marker in NEEDS_A_CONSTANT):
                return True
    return False


def _function_span(source: str, line: int) -> tuple[int, int]:
    """(first, last) line of the innermost function around ``line``; the line alone if none."""
    from recompile_lint.analysis.parsing import on_deep_stack

    try:
        tree = on_deep_stack(ast.parse, source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return line, line
    best = (line, line)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best == (line, line) or node.lineno >= best[0]:
                best = (node.lineno, node.end_lineno or node.lineno)
    return best


class CaptureScalarOutputs(Fixer):
    name = "capture-scalar-outputs"
    codes = ("RCL404",)
    safe = True
    summary = (
        "sets `torch._dynamo.config.capture_scalar_outputs = True` after the imports of the file that compiles the "
        "region (for `.item()`, `int(t)` and `float(t)`; not `.tolist()`, clocks or `random`)"
    )
    why = "the program computes the same values; Dynamo traces the scalar into the graph instead of breaking it"

    def title(self, finding: Finding) -> str:
        return "Set torch._dynamo.config.capture_scalar_outputs = True"

    def rewrite(self, finding: Finding, text: str, read: Reader) -> dict[str, str] | None:
        subject = finding.subject
        if subject is None or subject.kind != "graph-break" or subject.value_kind not in (".item()", "int()", "float()"):
            return None
        site = compile_site_path(finding)
        if site is None:
            return None
        site_text = text if same_file(site, finding.path) else read(site)
        if site_text is None:
            return None
        module = parse(site_text)
        for _, assign in settings_of(module, CAPTURE_SCALARS):
            if isinstance(assign.value, cst.Name) and assign.value.value == "True":
                return None
        visitor = _Assignments(CAPTURE_SCALARS.rsplit(".", 1)[-1])
        module.visit(visitor)
        if visitor.count:
            raise FixError(f"{site} already sets capture_scalar_outputs; this fix does not change it")
        name = torch_name(module) or "torch"
        return {site: with_setting(module, f"{name}.{CAPTURE_SCALARS} = True\n").code}
