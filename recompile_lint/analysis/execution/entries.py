"""What the execution stage runs: the files that drive compiled code.

An entry is a file run as ``__main__`` (its top level, its ``if __name__ == "__main__":``
block), and then, in that run's state, each of its functions that calls something in a loop
and has not run yet (parameters unknown), those its ``__main__`` block hands to a launcher
(``fire.Fire(main)``), its ``test_*`` functions, and the tests of its test
classes as their runner runs them (``collected_classes``, ``class_run``): a
``unittest.TestCase`` (or another library's ``TestCase``), directly or through the project's
classes, in a file unittest or pytest collects, and a pytest ``class Test*`` whose bases are
the project's; each test on a fresh instance after the class's set-up (once) and its own, and
before its tear-down. A class something unknown runs around (an unknown decorator or base, an
``__init__``, a fixture of its own, the other runner's set-up) stays out. Files are entries when
they compile something or, by their text, may import a module that does and drive it; a
script or a test (a ``__main__`` block, a ``test_`` function) that imports a module that
imports one is an entry too (``run.py`` imports the model, the model the layer whose
function is compiled: ``IMPORT_HOPS`` imports away at most, since every entry added runs the
modules it imports). Library code no entry calls gets no evidence.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass

from recompile_lint.analysis.execution.values import ClassMethod, ClassValue, Function, ModuleValue, StaticMethod
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
    """Module-level functions that call something inside a loop, ``test_*`` functions, and
    those the ``__main__`` block hands to a call (``fire.Fire(main)``, ``mp.spawn(main, ...)``,
    ``app.run(main)``): a launcher calls them with what it gets from the command line."""
    launched = _launched(tree)
    found = []
    for stmt in tree.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if stmt.name.startswith("test_") or stmt.name in launched or _calls_in_loop(stmt):
            found.append(stmt.name)
    return tuple(found)


def _launched(tree: ast.Module) -> set[str]:
    """Names passed whole to a call in an ``if __name__ == "__main__":`` block, but to a
    compile call (the function compiled, not a driver)."""
    names: set[str] = set()
    for stmt in tree.body:
        if not (isinstance(stmt, ast.If) and _is_main_test(stmt.test)):
            continue
        for node in (n for part in stmt.body for n in ast.walk(part)):
            if isinstance(node, ast.Call) and not dotted_name(node.func).endswith(("compile", "optimize")):
                names.update(a.id for a in [*node.args, *(k.value for k in node.keywords)] if isinstance(a, ast.Name))
    return names


def _is_main_test(test: ast.expr) -> bool:
    return (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and {_text(test.left), _text(test.comparators[0])} == {"__name__", "__main__"})


def _text(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


# The methods each runner calls around a test, and those of the other runner (a class that
# defines one of those is left out: which runner runs it decides what runs).
_XUNIT = {
    "unittest": (("setUpClass",), ("setUp",), ("tearDown",)),
    "pytest": (("setup_class",), ("setup_method",), ("teardown_method",)),
}
_FOREIGN = {
    "unittest": ("setup_class", "setup_method", "teardown_method", "teardown_class", "setup", "teardown"),
    "pytest": ("setUpClass", "setUp", "tearDown", "tearDownClass", "setup", "teardown"),
}
# Runners that run a module's ``unittest.TestCase`` classes when it is run as a script.
_UNITTEST_MAINS = ("unittest.main(", "absltest.main(", "googletest.main(", "run_tests(")
# Test cases of torch's whose ``setUp`` resets Dynamo (and ``tearDown``), by their dotted name.
_RESETTING = ("torch._dynamo.test_case.TestCase", "torch._inductor.test_case.TestCase")
# Class-level test runs one entry file makes at most (each has the steps of a test).
CLASS_TEST_RUNS = 64


@dataclass(frozen=True)
class ClassRun:
    """How a runner runs a test class's tests: ``runner`` (``unittest`` or ``pytest``), the
    class set-up run once before the first test, the set-up and tear-down run around each test
    on its fresh instance, and the tests ``(name, function)`` in the runner's order."""

    cls: ClassValue
    runner: str
    class_setup: tuple[Function, ...]
    setup: tuple[Function, ...]
    teardown: tuple[Function, ...]
    tests: tuple[tuple[str, Function], ...]
    files: tuple[str, ...]  # the files of the project's classes it inherits from
    resets: bool = False  # a library ``setUp`` resets Dynamo before each test


def collected_classes(tree: ast.Module) -> tuple[str, ...]:
    """Module-level classes a test runner may collect, by their text: ``class Test*`` or a
    class with a base (a ``unittest.TestCase`` of any name), no metaclass, no decorator but
    pytest's marks (not ``usefixtures`` or ``skip``) and conditional skips; ``class_run``
    decides on the run's values."""
    found = []
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef) and (stmt.name.startswith("Test") or stmt.bases) and _plain_class(stmt):
            found.append(stmt.name)
    return tuple(found)


def class_run(interpreter, project, path: str, text: str | None, cls: object) -> ClassRun | None:
    """How the class's tests run, or None where something the runs do not model runs around
    them. The bases (followed through the project's classes, ``interpreter.mro``) decide the
    runner: ``unittest`` where the only library classes are ``TestCase`` classes
    (``unittest.TestCase``, ``absltest.TestCase``, torch's testing ``TestCase``s, whose own
    set-up at most resets Dynamo: each test runs with caches of its own), in a file unittest or
    pytest collects (``test*.py``, ``*_test.py``) or one that runs them as a script; ``pytest``
    for a ``class Test*`` whose bases are all the project's. Each of the project's classes in
    the chain must be plain by its text (``_plain_class``), define no ``__init__``, no fixture,
    no ``pytestmark`` using fixtures and no set-up of the other runner; a set-up it defines must
    be a function the run knows (not one an unknown decorator wraps). A unittest test takes no
    argument; a pytest one takes fixtures (unknown) or parameter sets."""
    if not isinstance(cls, ClassValue) or not cls.path:
        return None
    chain = interpreter.mro(cls)
    own = [c for c in chain if isinstance(c, ClassValue) and c.path]
    library = {c.name for c in chain if isinstance(c, ModuleValue) and not c.path} - {"builtins.object"}
    if len(own) + len(library) + sum(1 for c in chain if c == ModuleValue("builtins.object")) != len(chain):
        return None  # an unknown base, a library class the runs hold plain attributes of
    if not library:
        runner = "pytest"
        if not cls.qualname.startswith("Test"):
            return None
    elif all(name.rsplit(".", 1)[-1] == "TestCase" and project.module_path(name.rsplit(".", 1)[0], path) is None for name in library):
        # (A ``TestCase`` of a project module the run did not load is the project's, unknown.)
        runner = "unittest"
        base = os.path.basename(path)
        if not (base.startswith("test") or base.endswith("_test.py") or (text and any(main in text for main in _UNITTEST_MAINS))):
            return None
    else:
        return None
    for current in own:
        tree = project.tree(current.path)
        node = _class_node(tree, current.qualname) if tree is not None else None
        if node is None or not _plain_class(node):
            return None
        methods = {item.name: item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if "__init__" in methods or any(name in methods for name in _FOREIGN[runner]):
            return None
        if any(_is_fixture(d) for m in methods.values() for d in m.decorator_list):
            return None
        if any(_uses_fixtures(item) for item in node.body):
            return None
    class_setups, setups, teardowns = (_xunit(interpreter, own, names) for names in _XUNIT[runner])
    if None in (class_setups, setups, teardowns):
        return None
    names: list[str] = []
    for current in own:
        for name in interpreter.heap.slots(current.addr):
            if isinstance(name, str) and name.startswith("test") and name not in names:
                names.append(name)
    if runner == "unittest":
        names.sort()  # unittest's loader sorts a class's test names
    tests = []
    for name in names:
        function = interpreter.class_attribute(cls, name)
        if not isinstance(function, Function):
            continue  # a property, a test an unknown decorator wraps (``parameterized.expand``)
        node = interpreter.codes.get(function.code)
        if not isinstance(node, ast.FunctionDef):
            continue
        if runner == "unittest" and _required(node) > 1:
            continue  # unittest calls a test with no argument: this one fails at once
        tests.append((name, function))
    files = tuple(dict.fromkeys(c.path for c in own))
    # Each of the project's ``setUp``s must hand on to the library's first.
    chained = [interpreter.heap.read(c.addr, "setUp") for c in own if interpreter.heap.has(c.addr, "setUp")]
    resets = bool(library & set(_RESETTING)) and all(isinstance(f, Function) and _calls_super_first(interpreter, f, "setUp") for f in chained)
    return ClassRun(cls, runner, class_setups, setups, teardowns, tuple(tests), files, resets)  # type: ignore[arg-type]


def _xunit(interpreter, own: list[ClassValue], names: tuple[str, ...]) -> tuple[Function, ...] | None:
    """The functions of the named set-up methods the project's classes define, first
    definition in the chain first; None where one is not a function the run knows."""
    found = []
    for name in names:
        for current in own:
            if not interpreter.heap.has(current.addr, name):
                continue
            value = interpreter.heap.read(current.addr, name)
            if isinstance(value, (ClassMethod, StaticMethod)):
                value = value.function
            if not isinstance(value, Function):
                return None
            found.append(value)
            break
    return tuple(found)


def _calls_super_first(interpreter, function: Function, name: str) -> bool:
    """Whether the method's first statement (after a docstring) is ``super().<name>()``: the
    library's method runs before anything of the project's."""
    node = interpreter.codes.get(function.code)
    body = [s for s in getattr(node, "body", []) if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str))]
    if not body or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Call):
        return False
    func = body[0].value.func
    return isinstance(func, ast.Attribute) and func.attr == name and isinstance(func.value, ast.Call) and dotted_name(func.value.func) == "super"


def _plain_class(node: ast.ClassDef) -> bool:
    """No metaclass, no decorator but pytest's marks (not ``usefixtures``, which injects a
    fixture, or ``skip``, which runs nothing) and ``skipIf`` / ``skipUnless`` / ``skipif``."""
    if node.keywords:
        return False
    for decorator in node.decorator_list:
        name = dotted_name(decorator.func if isinstance(decorator, ast.Call) else decorator)
        last = name.rsplit(".", 1)[-1]
        if last in ("skipIf", "skipUnless", "skipif"):
            continue
        if (name.startswith("pytest.mark.") or name.startswith("mark.")) and last not in ("usefixtures", "skip"):
            continue
        return False
    return True


def _class_node(tree: ast.Module, qualname: str) -> ast.ClassDef | None:
    body: list[ast.stmt] = tree.body
    node = None
    for part in qualname.split("."):
        node = next((s for s in body if isinstance(s, ast.ClassDef) and s.name == part), None)
        if node is None:
            return None
        body = node.body
    return node


def _is_fixture(decorator: ast.expr) -> bool:
    return dotted_name(decorator.func if isinstance(decorator, ast.Call) else decorator).rsplit(".", 1)[-1] == "fixture"


def _uses_fixtures(stmt: ast.stmt) -> bool:
    """``pytestmark = pytest.mark.usefixtures(...)`` (or a list holding it) in a class body."""
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        return False
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    if not any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets) or stmt.value is None:
        return False
    return any(isinstance(n, ast.Attribute) and n.attr == "usefixtures" for n in ast.walk(stmt.value))


def _required(node: ast.FunctionDef) -> int:
    """How many arguments a call must pass (positional without default, keyword-only without one)."""
    positional = len(node.args.posonlyargs) + len(node.args.args) - len(node.args.defaults)
    return positional + sum(1 for d in node.args.kw_defaults if d is None)


def _calls_in_loop(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and any(isinstance(inner, ast.Call) for stmt in node.body for inner in ast.walk(stmt)):
            return True
    return False
