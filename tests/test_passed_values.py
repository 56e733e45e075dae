"""A write of the writing function's own parameter stores what its callers pass.

``Variation.values_written`` on ``self.kind = kind`` (``kind`` a parameter the function does not
bind again): literals the callers pass (or the literal default where a call leaves it out) are
its values, a loop's variable makes it unbounded, and a value no caller makes known
(``x.device.type``) adds nothing: an unknown value is no evidence of change.
"""

from __future__ import annotations

import textwrap

from recompile_lint.analysis.index import FactsStore, ProjectIndex
from recompile_lint.analysis.variation import UNBOUNDED, Variation

HOLDER = '''
class Ops:
    def __init__(self):
        self.kind = None

    def pick(self, kind, scale=2):
        if kind is not self.kind:
            self.kind = kind
        self.scale = scale
        return self.kind

    def rebind(self, kind):
        kind = kind.lower()
        self.other = kind
'''


def written(tmp_path, driver: str) -> dict[str, object]:
    (tmp_path / "ops.py").write_text(textwrap.dedent(HOLDER).lstrip("\n"))
    (tmp_path / "run.py").write_text(textwrap.dedent(driver).lstrip("\n"))
    paths = [str(tmp_path / "ops.py"), str(tmp_path / "run.py")]
    index = ProjectIndex(paths, FactsStore())
    variation = Variation(index, [])
    facts = index.facts(paths[0])
    return {m.name: variation.values_written(m) for m in facts.mutations if m.kind == "instance-attribute" and m.function != "Ops.__init__"}


def test_a_value_no_caller_makes_known_is_no_evidence(tmp_path):
    values = written(
        tmp_path,
        """
        from ops import Ops
        OPS = Ops()
        def step(x):
            OPS.pick(x.device.type)
            OPS.rebind(x.device.type)
        """,
    )
    assert values["kind"] == set()
    assert values["scale"] == {"2"}  # the default, which every call leaves in place
    assert values["other"] is UNBOUNDED  # rebound in the body: not what the call passed


def test_literals_the_callers_pass_are_the_values(tmp_path):
    values = written(
        tmp_path,
        """
        from ops import Ops
        OPS = Ops()
        def step(x, train):
            OPS.pick("cpu", scale=3)
            OPS.pick("cuda")
        """,
    )
    assert values["kind"] == {"'cpu'", "'cuda'"}
    assert values["scale"] == {"3", "2"}


def test_a_loop_variable_passed_makes_the_write_unbounded(tmp_path):
    values = written(
        tmp_path,
        """
        from ops import Ops
        OPS = Ops()
        def main():
            for i in range(100):
                OPS.pick(i)
        """,
    )
    assert values["kind"] is UNBOUNDED


def test_a_call_that_spreads_its_arguments_says_nothing_of_the_default(tmp_path):
    values = written(
        tmp_path,
        """
        from ops import Ops
        OPS = Ops()
        def step(x, options):
            OPS.pick("cpu", **options)
        """,
    )
    assert values["scale"] == set()


def test_a_value_made_from_one_parameter_has_the_callers_values_and_the_receiver_is_no_parameter(tmp_path):
    (tmp_path / "ops.py").write_text(textwrap.dedent('''
        class Ops:
            def __init__(self):
                self.step = 0
            def advance(self):
                self.step = self.step + 1
            def scaled(self, scale):
                self.factor = scale * 2
            def lowered(self, kind):
                self.kind = kind.lower()
    ''').lstrip("\\n"))
    (tmp_path / "run.py").write_text(textwrap.dedent('''
        from ops import Ops
        OPS = Ops()
        def main(x):
            OPS.scaled(2)
            OPS.scaled(3)
            OPS.lowered(x.device.type)
            for i in range(100):
                OPS.advance()
    ''').lstrip("\\n"))
    paths = [str(tmp_path / "ops.py"), str(tmp_path / "run.py")]
    index = ProjectIndex(paths, FactsStore())
    variation = Variation(index, [])
    values = {m.name: variation.values_written(m) for m in index.facts(paths[0]).mutations if m.function != "Ops.__init__"}
    assert values["step"] is UNBOUNDED
    assert len(values["factor"]) == 2
    assert values["kind"] == set()
