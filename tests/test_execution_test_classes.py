"""Test classes run as their runner runs them (``execution/entries.py``, ``class_run``): a
``unittest.TestCase`` (through the project's base classes) or a pytest ``class Test*`` with
bases of the project, each test on a fresh instance between its set-up and tear-down, with
caches of its own; a class something unknown runs around is left out."""

from __future__ import annotations

from test_execution import lint, write
from test_execution_pytest import COMPILED_ACT as ACT, MODES


def findings(tmp_path, files: dict[str, str]) -> list[str]:
    root = write(tmp_path, {"act.py": ACT, **files})
    return sorted(f"{f.path.rsplit('/', 1)[-1]} {f.code} {f.line}" for f in lint(root) if f.severity in ("error", "warning"))


UNITTEST = """
    import unittest

    import torch

    from act import act


    {decorator}
    class TestAct({base}):
        {extra}
        def setUp(self):
            self.x = torch.randn(4)
            self.modes = {modes}

        def test_modes(self):
            for mode in self.modes:
                act(self.x, mode)
"""


def unittest_case(base: str = "unittest.TestCase", decorator: str = "", extra: str = "", modes: str = MODES, imports: str = "") -> str:
    return UNITTEST.replace("import unittest\n", f"import unittest\n    {imports}\n").replace("{base}", base).replace("{decorator}", decorator).replace("{extra}", extra).replace("{modes}", modes)


def test_a_unittest_test_runs_after_its_set_up(tmp_path):
    # Ten modes in one test, the values its set-up stored: eight recompiles, then eager.
    assert findings(tmp_path, {"tests/test_act.py": unittest_case()}) == ["act.py RCL108 7"]
    # One mode: one graph.
    assert findings(tmp_path, {"tests/test_act.py": unittest_case(modes='["relu"]')}) == []


def test_a_test_case_reached_through_the_project_s_base_classes_runs(tmp_path):
    base = """
        import unittest

        import torch


        class BaseTester(unittest.TestCase):
            def setUp(self):
                self.x = torch.randn(4)


        class ModesMixin:
            modes = {modes}
    """.replace("{modes}", MODES)
    test = """
        from act import act
        from tests.base import BaseTester, ModesMixin


        class TestAct(ModesMixin, BaseTester):
            def test_modes(self):
                for mode in self.modes:
                    act(self.x, mode)
    """
    assert findings(tmp_path, {"tests/base.py": base, "tests/test_act.py": test}) == ["act.py RCL108 7"]
    # Torch's own test cases (whose set-up resets Dynamo) and absl's are test cases too.
    for base_import, base_name in (("from torch._dynamo.test_case import TestCase", "TestCase"), ("from absl.testing import absltest", "absltest.TestCase")):
        text = unittest_case(base=base_name).replace("import unittest", base_import)
        assert findings(tmp_path, {"tests/test_act.py": text}) == ["act.py RCL108 7"], base_name


def test_a_reset_between_tests_leaves_each_test_its_own_caches(tmp_path):
    # Ten tests, one mode each, Dynamo reset in the set-up before each: one graph per test.
    # Only the test that calls every mode itself recompiles.
    methods = "".join(f"\n            def test_{i}(self):\n                act(self.x, {mode})\n" for i, mode in enumerate(MODES.strip("[]").split(", ")))
    test = """
        import unittest

        import torch

        from act import act


        class TestAct(unittest.TestCase):
            def setUp(self):
                torch._dynamo.reset()
                self.x = torch.randn(4)
        {methods}
            def test_all(self):
                for mode in {modes}:
                    act(self.x, mode)
    """.replace("{methods}", methods).replace("{modes}", MODES)
    assert findings(tmp_path, {"tests/test_act.py": test}) == ["act.py RCL108 7"]
    # Without the test that calls them all, nothing recompiles.
    assert findings(tmp_path, {"tests/test_act.py": test.split("    def test_all")[0]}) == []
    # Without the reset, the tests run in one process carry the caches: the calls' values differ.
    assert findings(tmp_path, {"tests/test_act.py": test.split("    def test_all")[0].replace("torch._dynamo.reset()", "pass")}) == ["act.py RCL108 7"]
    # Nor where test functions of the same process call it with no reset before.
    functions = "".join(f"\n\n        def test_f{i}():\n            act(torch.randn(4), {mode})\n" for i, mode in enumerate(MODES.strip("[]").split(", ")))
    assert findings(tmp_path, {"tests/test_act.py": test.split("    def test_all")[0] + functions}) == ["act.py RCL108 7"]


def test_a_class_set_up_runs_once_before_the_tests(tmp_path):
    test = """
        import unittest

        import torch

        from act import act


        class TestAct(unittest.TestCase):
            @classmethod
            def setUpClass(cls):
                cls.modes = {modes}

            def test_modes(self):
                for mode in self.modes:
                    act(torch.randn(4), mode)

            def tearDown(self):
                self.modes = None
    """.replace("{modes}", MODES)
    assert findings(tmp_path, {"tests/test_act.py": test}) == ["act.py RCL108 7"]


def test_a_class_an_unknown_decorator_wraps_does_not_run(tmp_path):
    decorated = unittest_case(decorator="@require_gpu", imports="from tests.helpers import require_gpu")
    helpers = "def require_gpu(cls):\n    return cls\n"
    assert findings(tmp_path, {"tests/test_act.py": decorated, "tests/helpers.py": helpers}) == []
    assert findings(tmp_path, {"tests/test_act.py": unittest_case(decorator="@some_library.require_gpu")}) == []
    # pytest's marks and a conditional skip leave it as it is (as they leave a test function).
    for decorator in ("@unittest.skipIf(not torch.cuda.is_available(), 'gpu')", "@pytest.mark.slow"):
        assert findings(tmp_path, {"tests/test_act.py": unittest_case(imports="import pytest", decorator=decorator)}) == ["act.py RCL108 7"], decorator
    # An unconditional skip runs nothing.
    assert findings(tmp_path, {"tests/test_act.py": unittest_case(decorator="@unittest.skip('later')")}) == []


def test_classes_something_unknown_runs_around_stay_out(tmp_path):
    assert findings(tmp_path, {"tests/test_act.py": unittest_case()}) == ["act.py RCL108 7"]
    # A base the project does not show that is not a test case, an ``__init__``, a fixture,
    # a pytest set-up in a unittest class (which runner runs it decides).
    assert findings(tmp_path, {"tests/test_act.py": unittest_case(base="unittest.TestCase, library.Mixin")}) == []
    for extra in (
        "def __init__(self, *args):\n            super().__init__(*args)\n\n        ",
        "@pytest.fixture(autouse=True)\n        def fresh(self):\n            yield\n\n        ",
        "def setup_method(self, method):\n            pass\n\n        ",
    ):
        assert findings(tmp_path, {"tests/test_act.py": unittest_case(imports="import pytest", extra=extra)}) == [], extra
    # A test unittest would call with an argument it does not take fails at once.
    assert findings(tmp_path, {"tests/test_act.py": unittest_case().replace("def test_modes(self):", "def test_modes(self, device):")}) == []
    # A test case in a file no runner collects is a base for others, not a test.
    assert findings(tmp_path, {"tests/cases.py": unittest_case()}) == []
    assert findings(tmp_path, {"tests/cases.py": unittest_case() + "\n\n    if __name__ == '__main__':\n        unittest.main()\n"}) == ["act.py RCL108 7"]


PYTEST_CLASS = """
    import pytest
    import torch

    from act import act
    from tests.base import Base


    class TestAct(Base):
        def setup_method(self, method):
            {setup}
            self.x = torch.randn(4)

        @pytest.mark.parametrize("mode", {modes})
        def test_act(self, mode):
            act(self.x, mode)
"""


def test_a_pytest_class_with_a_project_base_and_a_set_up_runs_each_parameter_set(tmp_path):
    base = "class Base:\n    pass\n"
    test = PYTEST_CLASS.replace("{modes}", MODES)
    # Ten parameter sets in one process: the caches carry from one to the next.
    assert findings(tmp_path, {"tests/base.py": base, "tests/test_act.py": test.replace("{setup}", "pass")}) == ["act.py RCL108 7"]
    # A set-up that resets Dynamo before each set: one graph each.
    assert findings(tmp_path, {"tests/base.py": base, "tests/test_act.py": test.replace("{setup}", "torch._dynamo.reset()")}) == []
    # The same reset in the base's set-up, in another file.
    reset_base = "import torch\n\n\nclass Base:\n    def setup_method(self, method):\n        torch._dynamo.reset()\n"
    inherited = test.replace("        def setup_method(self, method):\n            {setup}\n            self.x = torch.randn(4)\n", "        x = torch.randn(4)\n")
    assert findings(tmp_path, {"tests/base.py": reset_base, "tests/test_act.py": inherited}) == []
    assert findings(tmp_path, {"tests/base.py": base, "tests/test_act.py": inherited}) == ["act.py RCL108 7"]
    # A base that is not the project's, or an ``__init__`` in the project's base: not collected as is.
    assert findings(tmp_path, {"tests/test_act.py": test.replace("{setup}", "pass").replace("from tests.base import Base", "from library import Base")}) == []
    assert findings(tmp_path, {"tests/base.py": "class Base:\n    def __init__(self):\n        pass\n", "tests/test_act.py": test.replace("{setup}", "pass")}) == []
