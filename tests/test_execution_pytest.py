"""pytest runs a parametrized test once per parameter set, every test in one process: a
compiled function the test calls keeps its cache from one set to the next
(``execution/overlays/pytest_marks.py``, ``Execution.parameter_sets``)."""

from __future__ import annotations

from test_execution import lint, write

ACT = """
    import pytest
    import torch


    @torch.compile
    def act(x, mode):
        if mode == "relu":
            return torch.relu(x)
        if mode == "gelu":
            return torch.nn.functional.gelu(x)
        return x * 2


    {marks}
    def test_act({params}):
        act(torch.randn(4), {mode})
"""

MODES = '["relu", "gelu", "tanh", "silu", "elu", "selu", "celu", "mish", "none", "id"]'


def findings(tmp_path, marks: str, params: str = "mode", mode: str = "mode", files: dict[str, str] | None = None) -> list[str]:
    root = write(tmp_path, {"tests/test_act.py": ACT.replace("{marks}", marks).replace("{params}", params).replace("{mode}", mode), **(files or {})})
    return sorted(f"{f.code} {f.line}" for f in lint(root) if f.severity in ("error", "warning"))


def test_each_parameter_set_runs_in_one_process(tmp_path):
    # Ten modes, ten graphs of ``act`` (measured on torch 2.13: the eighth recompile is the last).
    assert findings(tmp_path, f'@pytest.mark.parametrize("mode", {MODES})') == ["RCL108 8"]


def test_parameter_sets_multiply_and_take_pytest_param(tmp_path):
    marks = '@pytest.mark.parametrize("mode", [pytest.param("relu", id="r"), "gelu", "tanh"])\n    @pytest.mark.parametrize("scale", [1.0, 2.0, 3.0])\n    @pytest.mark.slow'
    assert findings(tmp_path, marks, params="mode, scale") == ["RCL108 8"]
    # Several names at once: ("mode", "k") pairs.
    marks = '@pytest.mark.parametrize("mode,k", [("relu", 1), ("gelu", 2), ("tanh", 3)])'
    assert findings(tmp_path, marks, params="mode, k") == ["RCL108 8"]


def test_one_value_is_one_graph(tmp_path):
    assert findings(tmp_path, '@pytest.mark.parametrize("mode", ["relu"])') == []
    # The parameter not passed on: nothing the compiled call reads changes.
    assert findings(tmp_path, f'@pytest.mark.parametrize("mode", {MODES})', mode='"relu"') == []


def test_a_fixture_that_resets_dynamo_between_tests_leaves_one_run(tmp_path):
    conftest = """
        import pytest
        import torch


        @pytest.fixture(autouse=True)
        def fresh():
            torch._dynamo.reset()
            yield
    """
    assert findings(tmp_path, f'@pytest.mark.parametrize("mode", {MODES})', files={"tests/conftest.py": conftest}) == []
    # A conftest beside another directory's tests does not reach these.
    assert findings(tmp_path, f'@pytest.mark.parametrize("mode", {MODES})', files={"tests/conftest.py": "", "other/conftest.py": conftest}) == ["RCL108 8"]


def test_indirect_parameters_go_to_fixtures(tmp_path):
    assert findings(tmp_path, f'@pytest.mark.parametrize("mode", {MODES}, indirect=True)') == []


COMPILED_ACT = """
    import torch


    @torch.compile
    def act(x, mode):
        if mode == "relu":
            return torch.relu(x)
        return x * 2
"""

CLASS_ACT = "\n    import pytest" + COMPILED_ACT + """

    class TestAct:
        {extra}
        @pytest.mark.parametrize("mode", {modes})
        def test_act(self, mode):
            act(torch.randn(4), mode)
"""


def test_a_test_class_s_parametrized_method_runs_once_per_set(tmp_path):
    root = write(tmp_path, {"tests/test_act.py": CLASS_ACT.replace("{extra}", "").replace("{modes}", MODES)})
    assert sorted(f"{f.code} {f.line}" for f in lint(root) if f.severity in ("error", "warning")) == ["RCL108 8"]


def test_a_test_class_s_setup_runs_before_each_set_and_a_fixture_of_its_own_leaves_one_run(tmp_path):
    # pytest calls ``setup_method`` before each parameter set, in the same process.
    setup = "def setup_method(self):\n            pass\n\n        "
    root = write(tmp_path, {"tests/test_act.py": CLASS_ACT.replace("{extra}", setup).replace("{modes}", MODES)})
    assert sorted(f"{f.code} {f.line}" for f in lint(root) if f.severity in ("error", "warning")) == ["RCL108 8"]
    fixture = "@pytest.fixture(autouse=True)\n        def fresh(self):\n            yield\n\n        "
    root = write(tmp_path, {"tests/test_act.py": CLASS_ACT.replace("{extra}", fixture).replace("{modes}", MODES)})
    assert [f for f in lint(root) if f.severity in ("error", "warning")] == []
