"""What the execution stage's tests share: a project held in memory, and an observer that
records each compiled call."""

from __future__ import annotations

import ast
import textwrap

from recompile_lint.analysis.execution.interpreter import Observer


class Sources:
    """A project in memory: file -> source."""

    def __init__(self, files: dict[str, str]):
        self.files = {path: textwrap.dedent(text) for path, text in files.items()}

    def tree(self, path):
        return ast.parse(self.files[path]) if path in self.files else None

    def module_path(self, name, from_path):
        path = name.replace(".", "/") + ".py"
        return path if path in self.files else None

    def module_name(self, path):
        return path[:-3].replace("/", "."), False


class Calls(Observer):
    """An observer that records each compiled call: (compiled, qualname, bound arguments, line)."""

    def __init__(self):
        self.seen = []

    def on_compiled_call(self, interpreter, compiled, function, bound, where):
        self.seen.append((compiled, function.code.qualname, dict(bound), where.line))


class StubRegion:
    """A region compiled with no options, for the count's unit tests (``graphs_of``)."""

    dynamic = None

    class site:
        @staticmethod
        def option(name):
            return None
