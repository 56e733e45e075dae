import inspect
import sys
from pathlib import Path

import click.testing
import pytest

# ``helpers`` is a plain module beside the tests.
sys.path.insert(0, str(Path(__file__).parent))

# The tests read ``result.stderr`` apart from ``result.output``, as click >= 8.2's runner keeps
# them; the project supports click 8.1 too, whose runner mixes stderr into the output unless
# told not to (8.2 dropped the option).
if "mix_stderr" in inspect.signature(click.testing.CliRunner.__init__).parameters:
    _runner_init = click.testing.CliRunner.__init__

    def _separate_stderr(self, *args, **kwargs):
        kwargs.setdefault("mix_stderr", False)
        _runner_init(self, *args, **kwargs)

    click.testing.CliRunner.__init__ = _separate_stderr

# Tests marked ``slow``: the verifier's (torch in child processes), the resident server's
# (servers started and stopped, commands forwarded) and the differential ones (every front end
# over the whole fixture tree). ``python -m pytest`` runs everything, as CI does;
# ``python -m pytest -m "not slow"`` leaves these out while working on the rest.
SLOW_MODULES = frozenset({
    "test_verify_probes.py",
    "test_verify_recorder.py",
    "test_verify_run.py",
    "test_server.py",
    "test_consistency.py",
})
SLOW_TESTS = frozenset({
    "test_flake8_plugin.py::test_flake8_matches_the_cli_on_the_fixtures",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.path.name
        if module in SLOW_MODULES or f"{module}::{item.originalname}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
