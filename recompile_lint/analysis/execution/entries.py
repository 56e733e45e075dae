"""What the execution stage runs: the files that drive compiled code.

An entry is a file run as ``__main__`` (its top level, its ``if __name__ == "__main__":``
block), and then, in that run's state, each of its functions that calls something in a loop
and has not run yet (parameters unknown), its ``test_*`` functions, and the ``test_*`` methods
of its plain pytest test classes (``class_tests``). Files are entries when
they compile something or, by their text, may import a module that does and drive it; a
script or a test (a ``__main__`` block, a ``test_`` function) that imports a module that
imports one is an entry too (``run.py`` imports the model, the model the layer whose
function is compiled: ``IMPORT_HOPS`` imports away at most, since every entry added runs the
modules it imports). Library code no entry calls gets no evidence.
"""

from __future__ import annotations

import ast
import re

from recompile_lint.analysis.facts import dotted_name
from recompile_lint.analysis.index import ProjectIndex
from recompile_lint.analysis.regions import CompiledRegion


# Text a driver has: a ``__main__`` block, a test, a loop.
_DRIVES = ("__main__", "def test_", "for ", "while ")
# Text a script or a test has: only those drive code more than one import away.
_SCRIPTS = ("__main__", "def test_")
_DOTTED = re.compile(r"[\w.]+")
IMPORT_HOPS = 2
class EntryFinder:
    """The entry files of each region: the files that compile it or hold its code, and the
    files whose imports name its module and that drive something. One pass over the project's text finds
    which files name which of the regions' modules, so asking costs what the answer holds."""

    def __init__(self, index: ProjectIndex, regions: list[CompiledRegion]):
        self.index = index
        wanted: dict[str, set[str]] = {}  # a module's last name -> the files that define it
        for region in regions:
            for path in (region.site_path, region.entry.path):
                module = index.module_names.get(path, "")
                if module:
                    wanted.setdefault(module.rsplit(".", 1)[-1], set()).add(path)
        self.naming: dict[str, list[str]] = {}  # a word of an import line -> the files naming it
        self.drivers: set[str] = set()  # files whose text drives something
        self.scripts: set[str] = set()  # files run as a script or a test (what drives code further away)
        self._files: dict[tuple[str, str], list[str]] = {}  # entry files, by site and entry file
        for path in index.paths:
            text = index.text(path) if wanted else None
            if not text or "import" not in text:
                continue
            if any(marker in text for marker in _DRIVES):
                self.drivers.add(path)
            if any(marker in text for marker in _SCRIPTS):
                self.scripts.add(path)
        if wanted:
            self.naming = index.import_naming()

    def files_for(self, region: CompiledRegion) -> list[str]:
        key = (region.site_path, region.entry.path)  # all the answer depends on
        found = self._files.get(key)
        if found is None:
            found = self._files[key] = self._files_for(region)
        return list(found)

    def _files_for(self, region: CompiledRegion) -> list[str]:
        own = [region.site_path] + ([region.entry.path] if region.entry.path != region.site_path else [])
        found = list(own)
        seen = set(own)
        frontier = list(own)
        for depth in range(IMPORT_HOPS):
            reached = []
            for path in frontier:
                module = self.index.module_names.get(path, "")
                for other in self.naming.get(module.rsplit(".", 1)[-1], []) if module else []:
                    # The import, resolved from that file, leads here (not to a namesake elsewhere).
                    if other not in seen and self.imports(other, module) and self.index.module_path(module, other) == path:
                        seen.add(other)
                        reached.append(other)
                        if other in self.drivers and (depth == 0 or other in self.scripts):
                            found.append(other)
            frontier = reached
        return found

    def imports(self, path: str, module: str) -> bool:
        """Whether an import line of the file names ``module`` whole: ``import a.b.c``,
        ``from a.b.c import x``, ``from a.b import c``, or relatively (``from .c import x``,
        ``from . import c``)."""
        parent, _, last = module.rpartition(".")
        lines = self.index.import_lines_of(path)
        for line in lines:
            words = _DOTTED.findall(line)
            if len(words) < 2:
                continue
            if words[0] == "import" and module in words[1:]:
                return True
            if words[0] != "from":
                continue
            head, names = words[1], words[3:]
            relative = head.lstrip(".")
            if head == module or (head.startswith(".") and (relative == last or relative.endswith("." + last))):
                return True
            if last in names and (head == parent or (head.startswith(".") and (not relative or parent.endswith(relative)))):
                return True
        return False


def driver_functions(tree: ast.Module) -> tuple[str, ...]:
    """Module-level functions that call something inside a loop, and ``test_*`` functions."""
    found = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.FunctionDef):
            continue
        if stmt.name.startswith("test_") or _calls_in_loop(stmt):
            found.append(stmt.name)
    return tuple(found)


def class_tests(tree: ast.Module) -> tuple[tuple[str, str], ...]:
    """``(class, method)`` for the ``test_*`` methods of the module's pytest test classes
    (``class Test*`` with no base, no ``__init__``, no setup or teardown and no fixture of its
    own: pytest makes a fresh instance for each test and nothing else runs around it)."""
    found = []
    for stmt in tree.body:
        if not (isinstance(stmt, ast.ClassDef) and stmt.name.startswith("Test") and not stmt.bases and not stmt.keywords and not stmt.decorator_list):
            continue
        methods = [item for item in stmt.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if any(m.name == "__init__" or m.name.startswith(("setup", "teardown", "setUp", "tearDown")) for m in methods):
            continue
        if any(dotted_name(d.func if isinstance(d, ast.Call) else d).rsplit(".", 1)[-1] == "fixture" for m in methods for d in m.decorator_list):
            continue
        found.extend((stmt.name, m.name) for m in methods if isinstance(m, ast.FunctionDef) and m.name.startswith("test_"))
    return tuple(found)


def _calls_in_loop(fn: ast.FunctionDef) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.While)) and any(isinstance(inner, ast.Call) for stmt in node.body for inner in ast.walk(stmt)):
            return True
    return False
