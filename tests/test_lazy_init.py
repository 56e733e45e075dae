"""A write that creates a value on first use and never again is no evidence of change.

``Variation.lazy_init``: the write sits in the block of ``if x is None:`` (or ``if not x:``), or
deeper, under further tests, inside an outer ``if`` whose subject is the written attribute or a
local read from it (``cache = self._cached; if cache is None: ... if self.cached: self._cached =
...``). A write in the other branch, or under a test of something else, still counts.
"""

from __future__ import annotations

import textwrap

from recompile_lint.analysis.index import FactsStore, ProjectIndex
from recompile_lint.analysis.variation import Variation

SOURCE = '''
import torch


class Conv(torch.nn.Module):
    def forward(self, x):
        cache = self._cached
        if cache is None:
            y = x * 2
            if self.cached:
                self._cached = y  # lazy: under the outer test of the local read from it
        else:
            y = cache
        if self._direct is None:
            self._direct = x  # lazy: the enclosing test
        if self.flag:
            if self.k > 1:
                self._other = x  # not lazy: no test of it
        other = self._elsewhere
        if other is None:
            y = x
        else:
            if self.cached:
                self._elsewhere = y  # not lazy: the other branch
        seen = self._unrelated
        if seen is None:
            if self.cached:
                self._not_read = y  # not lazy: the outer subject reads another attribute
        return y
'''


def test_lazy_writes_behind_outer_tests_of_the_written_value(tmp_path):
    path = tmp_path / "conv.py"
    path.write_text(textwrap.dedent(SOURCE).lstrip("\n"))
    index = ProjectIndex([str(path)], FactsStore())
    facts = index.facts(str(path))
    variation = Variation(index, [])
    writes = {m.name: variation.lazy_init(m) for m in facts.mutations if m.kind == "instance-attribute" and m.op == "assign"}
    assert writes == {"_cached": True, "_direct": True, "_other": False, "_elsewhere": False, "_not_read": False}
