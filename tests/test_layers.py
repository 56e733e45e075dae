"""The package's imports point one way, from the front ends down to the static model, with no
circles: a stage never imports a stage above it (``analysis`` never imports ``frontends`` or
``verify``), so each stage can be read, tested and replaced on its own."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "recompile_lint"

# Lower layers first. A module may import its own layer and the layers below it.
LAYERS = {
    "base": 0,  # models, codes, config, source, discovery, gitignore, suppress: inputs and value types
    "analysis": 1,  # the static model
    "rules": 2,  # views on the model
    "cache": 2,
    "report": 3,
    "fixes": 3,  # codemods for findings; the rule pages say which rules have one
    "engine": 4,  # the pipeline every front end calls
    "verify": 5,
    "explain": 6,
    "lab": 6,  # the generated lab: generator, prover (torch in children), measure
    "frontends": 7,
    "__main__": 8,
}
BASE = {"models", "codes", "config", "source", "discovery", "gitignore", "suppress", "__init__"}


def module_names() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(("recompile_lint",) + parts)] = path
    return found


def layer_of(module: str) -> int:
    parts = module.split(".")[1:]
    if not parts or parts[0] in BASE:
        return LAYERS["base"]
    return LAYERS[parts[0]]


def imports_of(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``path`` imports when it runs (imports under ``if
    TYPE_CHECKING:`` are annotations only and do not count)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("recompile_lint"):
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in modules else node.module)
    return found


def test_the_layer_table_knows_every_top_level_module():
    tops = {name.split(".")[1] for name in module_names() if name.count(".") >= 1}
    assert tops <= set(LAYERS) | BASE


def test_no_module_imports_a_layer_above_its_own():
    modules = module_names()
    upward = []
    for name, path in sorted(modules.items()):
        for target in imports_of(path, modules):
            if layer_of(target) > layer_of(name):
                upward.append(f"{name} imports {target}")
    assert upward == []


def import_edges(name: str, path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """The package's modules that ``name`` (at ``path``) names in any import statement: at
    module level, inside a function, under ``if TYPE_CHECKING:`` alike (a lazy import or an
    annotation's import is still a dependency), each with the line of its first import.
    ``from X import Y`` names X, and X.Y too when that is a module; relative imports count."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        if target in modules and target != name:
            edges.setdefault(target, line)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            add(base, node.lineno)
            for alias in node.names:
                add(f"{base}.{alias.name}", node.lineno)
    return edges


def import_cycles(modules: dict[str, Path]) -> list[str]:
    """Each circle of imports among ``modules``, spelled as one way round it, each module with
    the line of its import of the next (``a:3 -> b:7 -> a``: a's line 3 imports b, whose line 7
    imports a), then every module of the circle; empty when the imports point one way."""
    graph = {name: import_edges(name, path, modules) for name, path in modules.items()}
    # Tarjan's strongly connected components: a component of two or more modules is a circle.
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in order:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], order[target])
        if low[node] == order[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    cycles = []
    for component in sorted(components):
        # The shortest way from the component's first module round to itself.
        start, members = component[0], set(component)
        came_from: dict[str, str] = {}
        frontier = [start]
        while start not in came_from and frontier:
            reached = []
            for node in frontier:
                for target in sorted(graph[node]):
                    if target in members and target not in came_from:
                        came_from[target] = node
                        reached.append(target)
            frontier = reached
        path = [start]
        while len(path) == 1 or path[-1] != start:
            path.append(came_from[path[-1]])
        path.reverse()
        spelled = " -> ".join(f"{source}:{graph[source][target]}" for source, target in zip(path, path[1:]))
        cycles.append(f"{spelled} -> {start} (the circle: {', '.join(component)})")
    return cycles


def test_the_package_has_no_import_cycles():
    assert import_cycles(module_names()) == []


def test_the_checker_sees_an_upward_import_and_a_cycle(tmp_path):
    """The checks above can fail: an analysis module importing a front end is found."""
    module = tmp_path / "m.py"
    module.write_text("from recompile_lint.frontends import cli\nif TYPE_CHECKING:\n    from recompile_lint import engine\n")
    modules = {"recompile_lint.frontends.cli": module, "recompile_lint.engine": module}
    assert imports_of(module, modules) == {"recompile_lint.frontends.cli"}
    assert layer_of("recompile_lint.frontends.cli") > layer_of("recompile_lint.analysis.index")


def test_the_cycle_check_counts_every_import_and_names_the_circle(tmp_path):
    """A circle closed by an import inside a function, one under ``TYPE_CHECKING`` and one by a
    relative ``from . import`` of the package are each found and spelled with their lines; the
    same modules importing one way only are not a circle."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    files = {
        "pkg": package / "__init__.py",
        "pkg.low": package / "low.py",
        "pkg.high": package / "high.py",
        "pkg.typed": package / "typed.py",
        "pkg.sub": package / "sub" / "__init__.py",
        "pkg.sub.part": package / "sub" / "part.py",
    }
    files["pkg"].write_text("")
    files["pkg.high"].write_text("from pkg.low import f\n")
    files["pkg.low"].write_text("def f():\n    return 1\n")
    files["pkg.typed"].write_text("from typing import TYPE_CHECKING\n")
    files["pkg.sub"].write_text("from pkg.sub.part import g\n")
    files["pkg.sub.part"].write_text("def g():\n    return 2\n")
    assert import_cycles(files) == []

    files["pkg.low"].write_text("def f():\n    from pkg import high\n    return high\n")
    files["pkg.typed"].write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.typed import T\n    from pkg.high import f\n")
    files["pkg.high"].write_text("from pkg.low import f\nimport pkg.typed\n")
    files["pkg.sub.part"].write_text("from . import g\n")
    assert import_cycles(files) == [
        "pkg.high:1 -> pkg.low:2 -> pkg.high (the circle: pkg.high, pkg.low, pkg.typed)",
        "pkg.sub:1 -> pkg.sub.part:1 -> pkg.sub (the circle: pkg.sub, pkg.sub.part)",
    ]
