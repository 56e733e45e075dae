"""The recorder with real torch, in this process and under a user's TORCH_LOGS."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from recompile_lint.verify.recorder import RECOMPILES_LOGGER, Recorder  # noqa: E402
from recompile_lint.verify.results import Family  # noqa: E402

step = 0


def _poly(x):  # noqa: ANN001, ANN202 - compiled below with a fresh code object per test
    return x * step + 1  # noqa: RCL101 - these tests make it recompile on purpose


def test_recorder_captures_each_recompile_the_limit_and_graphs() -> None:
    global step
    torch._dynamo.reset()
    poly = torch.compile(_poly, backend="eager")
    x = torch.ones(3)
    with Recorder() as recorder:
        for value in range(11):
            step = value
            poly(x)
    recording = recorder.recording()
    # 7 recompiles reach 8 graphs; the 8th guard failure is logged, then the limit stops it.
    assert len(recording.events) == 8
    first = recording.events[0]
    assert (first.function, first.file) == ("_poly", __file__)
    reason = first.reasons[0]
    assert reason.guard == "G['step'] == 0" and reason.family is Family.CONSTANT
    assert (reason.file, reason.line) == (__file__, _poly.__code__.co_firstlineno + 1)
    assert [hit.limit_type for hit in recording.limit_hits] == ["recompile_limit"]
    assert recording.limit_hits[0].function == "_poly"
    assert recording.graphs_for(__file__, _poly.__code__.co_firstlineno) == 8
    torch._dynamo.reset()


def test_recorder_restores_the_logging_it_changed() -> None:
    logger = logging.getLogger(RECOMPILES_LOGGER)
    from torch._logging import _internal

    before = (logger.level, logger.propagate, list(logger.handlers), set(_internal.log_state.artifact_names))
    with Recorder():
        assert _internal.log_state.is_artifact_enabled("recompiles")
    after = (logger.level, logger.propagate, list(logger.handlers), set(_internal.log_state.artifact_names))
    assert after == before


def test_recorder_sees_nothing_outside_its_block() -> None:
    global step
    torch._dynamo.reset()
    poly = torch.compile(_poly, backend="eager")
    x = torch.ones(2)
    with Recorder() as recorder:
        step = 0
        poly(x)
    step = 1
    poly(x)  # recompiles after the block: not recorded
    assert recorder.recording().events == ()
    torch._dynamo.reset()


@pytest.mark.parametrize("torch_logs", ["recompiles", "+dynamo"])
def test_recorder_works_when_the_user_set_torch_logs(torch_logs: str) -> None:
    code = textwrap.dedent(
        """
        import json, logging, torch
        from recompile_lint.verify.recorder import Recorder, RECOMPILES_LOGGER
        step = 0
        @torch.compile(backend="eager")
        def f(x):
            return x * step
        logger = logging.getLogger(RECOMPILES_LOGGER)
        before = (logger.level, logger.propagate)
        with Recorder() as rec:
            for step in range(3):
                f(torch.ones(2))
        print(json.dumps({"events": len(rec.events), "restored": before == (logger.level, logger.propagate),
                          "guard": rec.events[0].reasons[0].guard}))
        """
    )
    env = {**os.environ, "TORCH_LOGS": torch_logs}
    out = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data == {"events": 2, "restored": True, "guard": "G['step'] == 0"}


def test_recorder_degrades_when_private_torch_apis_move(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without torch's logging state or metrics the recorder still counts cache entries."""
    global step
    from recompile_lint.verify import recorder as recorder_module

    monkeypatch.setattr(recorder_module, "_log_state", lambda: None)
    monkeypatch.setattr(recorder_module, "_metrics", lambda: [])
    torch._dynamo.reset()
    poly = torch.compile(_poly, backend="eager")
    with Recorder() as recorder:
        for value in range(3):
            step = value
            poly(torch.ones(2))
    recording = recorder.recording()
    assert recording.graphs_for(__file__, _poly.__code__.co_firstlineno) == 3
    torch._dynamo.reset()
