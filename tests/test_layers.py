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


def test_the_package_has_no_import_cycles():
    modules = module_names()
    graph = {name: {t for t in imports_of(path, modules) if t != name} for name, path in modules.items()}
    # A package imports its own submodules through its ``__init__``; that is not a circle.
    cycles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycles.append(stack[stack.index(target) :] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert cycles == []


def test_the_checker_sees_an_upward_import_and_a_cycle(tmp_path):
    """The checks above can fail: an analysis module importing a front end is found."""
    module = tmp_path / "m.py"
    module.write_text("from recompile_lint.frontends import cli\nif TYPE_CHECKING:\n    from recompile_lint import engine\n")
    modules = {"recompile_lint.frontends.cli": module, "recompile_lint.engine": module}
    assert imports_of(module, modules) == {"recompile_lint.frontends.cli"}
    assert layer_of("recompile_lint.frontends.cli") > layer_of("recompile_lint.analysis.index")
