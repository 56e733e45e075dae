"""Verifier pieces that need no torch: reading Dynamo's messages, matching, targets, the command."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from recompile_lint.models import Subject
from recompile_lint.verify import command as verify_command
from recompile_lint.verify.api import VerifyUsageError, parse_run_command
from recompile_lint.verify.matcher import in_region, match_run
from recompile_lint.verify.reasons import blames, classify, parse_limit_args, parse_recompile_message
from recompile_lint.verify.recorder import Recording
from recompile_lint.verify.report import render_json, render_run_text, render_text
from recompile_lint.verify.results import (
    Family,
    GuardFailure,
    RecompileEvent,
    RunReport,
    Verdict,
    Verification,
    VerifiedFinding,
)
from recompile_lint.verify.synthesis import CALLABLE, INT, TENSOR, TENSOR_LIST, module_sizes, parameter_slots
from recompile_lint.verify.targets import import_target, module_of_path, region_location
from recompile_lint.verify.verdicts import explains, judge
from verify_helpers import make_finding

# Verbatim from torch 2.13 (the comment's path is shortened by Dynamo itself).
SEED_MESSAGE = """Recompiling function poly in /tmp/exp/seed2.py:3
    triggered by the following guard failure(s):
    - 0/1: G['step'] == 1                                                # return x * step + 1  # mp/exp/seed2.py:5 in poly
    - User stack trace:
    -   File "/tmp/exp/seed2.py", line 5, in poly
    -     return x * step + 1
    - 0/0: G['step'] == 0                                                # return x * step + 1  # mp/exp/seed2.py:5 in poly
    - User stack trace:
    -   File "/tmp/exp/seed2.py", line 5, in poly
    -     return x * step + 1"""

MODULE_MESSAGE = (
    "Recompiling function forward in /tmp/exp/mod.py:13\n"
    "    triggered by the following guard failure(s):\n"
    "    - 0/0: self.step == 0                                           "
    "# return self.lin(x) * self.step  # mp/exp/mod.py:14 in forward (HINT: torch.compile considers "
    "integer attributes of the nn.Module to be static. If you are observing recompilation, you might "
    "want to make this integer dynamic using torch._dynamo.config.allow_unspec_int_on_nn_module = True, "
    "or convert this integer into a tensor.)\n"
    "    - User stack trace:\n"
    '    -   File "/tmp/exp/mod.py", line 14, in forward\n'
    "    -     return self.lin(x) * self.step"
)


def test_recompile_message_is_parsed_with_full_paths_and_every_entry() -> None:
    event = parse_recompile_message(SEED_MESSAGE, "0/2")
    assert event is not None
    assert (event.function, event.file, event.first_line, event.compile_id) == ("poly", "/tmp/exp/seed2.py", 3, "0/2")
    assert [r.guard for r in event.reasons] == ["G['step'] == 1", "G['step'] == 0"]
    first = event.reasons[0]
    # The shortened "mp/exp/seed2.py" in the comment is replaced by the stack trace's full path.
    assert (first.file, first.line, first.function) == ("/tmp/exp/seed2.py", 5, "poly")
    assert first.source == "return x * step + 1"
    assert first.entry == "0/1" and first.family is Family.CONSTANT


def test_module_attribute_reason_keeps_the_guard_without_the_hint() -> None:
    event = parse_recompile_message(MODULE_MESSAGE)
    assert event is not None
    reason = event.reasons[0]
    assert reason.guard == "self.step == 0"
    assert (reason.line, reason.function) == (14, "forward")
    assert blames(Subject("instance-attribute", name="step", owner="Net"), reason)


def test_other_log_messages_are_not_events() -> None:
    assert parse_recompile_message("Compiling function poly") is None
    assert parse_recompile_message("") is None


def test_limit_warning_args_become_a_limit_hit() -> None:
    hit = parse_limit_args(("recompile_limit", 8, "'poly' (/tmp/exp/seed.py:3)", "0/7: G['step'] == 7", "url"))
    assert hit is not None
    assert (hit.limit_type, hit.limit_value, hit.function, hit.file, hit.first_line) == (
        "recompile_limit", 8, "poly", "/tmp/exp/seed.py", 3)
    assert parse_limit_args("not a tuple") is None


@pytest.mark.parametrize(
    ("guard", "family"),
    [
        ("G['step'] == 1", Family.CONSTANT),
        ("G['os'].environ._data[b'N'] == b'1'", Family.CONSTANT),
        ("tensor 'x' rank mismatch. expected 1, actual 2", Family.SHAPE),
        ("tensor 'x' size mismatch at index 0. expected 32, actual 7", Family.SHAPE),
        ("len(xs) == 1", Family.SHAPE),
        ("2 <= x.size()[0]", Family.SHAPE),
        ("GLOBAL_STATE changed: grad_mode", Family.GLOBAL_STATE),
        ("___check_obj_id(fn.__code__, 1403)", Family.IDENTITY),
        ("BACKEND_MATCH failure: torch.compile detected different backend callables", Family.IDENTITY),
        ("tensor 'x' dtype mismatch. expected Float, actual Double", Family.TYPE),
        ("___check_type_id(G['x'], 94)", Family.TYPE),
    ],
)
def test_reasons_fall_into_the_documented_families(guard: str, family: Family) -> None:
    assert classify(guard) is family


def _failure(guard: str) -> GuardFailure:
    return GuardFailure(guard=guard, family=classify(guard))


@pytest.mark.parametrize(
    ("subject", "guard", "expected"),
    [
        (Subject("global", name="step"), "G['step'] == 0", True),
        (Subject("global", name="step"), "G['steps'] == 0", False),
        (Subject("global", name="STEP"), "G['__import_pkg_dot_ops'].STEP == 1", True),
        (Subject("global", name="step"), "L['step'] == 1", False),
        (Subject("item", name="CFG", key="scale"), "G['CFG']['scale'] == 1", True),
        (Subject("item", name="CFG", key="scale"), "G['CFG']['shift'] == 1", False),
        (Subject("attribute", name="Cfg", key="SCALE"), "G['Cfg'].SCALE == 1", True),
        (Subject("environ", key="N"), "G['os'].environ._data[b'N'] == b'1'", True),
        (Subject("environ", key="N"), "G['os'].environ._data[b'M'] == b'1'", False),
        (Subject("parameter", name="end"), "end == 3", True),
        (Subject("parameter", name="end"), "G['end'] == 3", False),
        (Subject("state", name="training"), "self.training == True", True),
        (Subject("state", name="grad_mode"), "GLOBAL_STATE changed: grad_mode", True),
        (Subject("rank", name="x"), "tensor 'x' rank mismatch. expected 1, actual 2", True),
        (Subject("length", name="xs"), "len(xs) == 1", True),
        (Subject("callable", name="fn"), "___check_obj_id(fn.__code__, 1403)", True),
        (Subject("callable", name="fn"), "fn.keywords['k'] == 0", True),
        (None, "G['step'] == 0", False),
    ],
)
def test_a_reason_blames_exactly_the_subject_it_names(subject: Subject | None, guard: str, expected: bool) -> None:
    assert blames(subject, _failure(guard)) is expected


def test_graph_break_values_are_blamed_in_the_resume_function() -> None:
    resumed = GuardFailure("___stack0 == 28.2", Family.CONSTANT, function="torch_dynamo_resume_in_clip__at_12")
    subject = Subject("graph-break", name="clip_", value_kind=".item()")
    assert blames(subject, resumed)
    assert not blames(subject, GuardFailure("___stack0 == 28.2", Family.CONSTANT, function="torch_dynamo_resume_in_other_at_3"))


def test_judge_confirms_only_reasons_that_blame_the_subject(tmp_path: Path) -> None:
    reason = GuardFailure("G['step'] == 0", Family.CONSTANT, "0/0", "return x * step", str(tmp_path / "m.py"), 5, "poly")
    recording = Recording((RecompileEvent("poly", str(tmp_path / "m.py"), 3, "0/1", (reason,)),), (), ())
    confirmed = judge(recording, Subject("global", name="step"), path=str(tmp_path / "m.py"), line=5,
                      calls=3, description="set step", method="probe")
    assert confirmed.verdict is Verdict.CONFIRMED and confirmed.recompiles == 1
    other = judge(recording, Subject("global", name="lr"), path=str(tmp_path / "m.py"), line=9,
                  calls=3, description="set lr", method="probe")
    assert other.verdict is Verdict.NOT_REPRODUCED and "something else" in other.detail
    quiet = judge(Recording((), (), ()), Subject("global", name="lr"), path="m.py", line=9, calls=12,
                  description="set lr", method="probe")
    assert quiet.verdict is Verdict.NOT_REPRODUCED and "no recompile in 12 call(s)" in quiet.detail


def test_import_target_finds_plain_modules_and_packages(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "ops.py").write_text("STEP = 0\n")
    (tmp_path / "pkg" / "model.py").write_text("def f(x): return x\n")
    (tmp_path / "solo.py").write_text("def g(x): return x\n")
    helper = make_finding(tmp_path / "pkg" / "ops.py", 1, "RCL101", "pkg.model.f", None)
    target = import_target(helper)
    assert target is not None
    assert (target.root, target.module, Path(target.file).name) == (str(tmp_path.resolve()), "pkg.model", "model.py")
    method = import_target(make_finding(tmp_path / "solo.py", 1, "RCL104", "solo.Net.forward", None))
    assert method is not None and method.module == "solo"
    assert import_target(make_finding(tmp_path / "solo.py", 1, "RCL101", "missing.f", None)) is None
    own = module_of_path(str(tmp_path / "pkg" / "ops.py"))
    assert own is not None and (own.root, own.module) == (str(tmp_path.resolve()), "pkg.ops")


def test_run_matching_separates_predicted_from_unpredicted_recompiles(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    predicted = GuardFailure("G['step'] == 0", Family.CONSTANT, "0/0", "return x * step", str(script), 12, "poly")
    surprise = GuardFailure("tensor 'x' dtype mismatch. expected Float, actual Double", Family.TYPE, "1/0")
    recording = Recording(
        events=(RecompileEvent("poly", str(script), 10, "0/1", (predicted,)),
                RecompileEvent("normalize", str(script), 16, "1/1", (surprise,))),
        limit_hits=(),
        graphs=(((str(script), 10, "poly"), 2), ((str(script), 16, "normalize"), 2)),
    )
    step = make_finding(script, 12, "RCL101", "train.poly", Subject("global", name="step"))
    never = make_finding(script, 30, "RCL101", "train.unused", Subject("global", name="lr"))
    verified, unpredicted = match_run([step, never], recording)
    assert verified[0].verification.verdict is Verdict.CONFIRMED
    assert verified[0].verification.graphs == 2
    assert verified[1].verification.verdict is Verdict.NOT_EXERCISED
    assert [e.function for e in unpredicted] == ["normalize"]
    text = render_run_text(RunReport(("train.py",), 0, tuple(verified), tuple(unpredicted)))
    assert "dtype mismatch" in text and "Confirmed by the run (1)" in text


def test_run_command_parsing(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("")
    assert parse_run_command(f"python -u {script} --steps 20") == ([str(script), "--steps", "20"], "")
    assert parse_run_command(["python3", "-m", "pkg.train", "--fast"]) == (["pkg.train", "--fast"], "pkg.train")
    for bad in ("", "python", "python -c 'print(1)'", f"{tmp_path / 'missing.py'}"):
        with pytest.raises(VerifyUsageError):
            parse_run_command(bad)


def test_synthesis_reads_sizes_and_slots() -> None:
    source = "import torch\nlayer = torch.nn.Linear(16, 32)\nbuf = torch.zeros(32)\nx = 1\n"
    assert module_sizes(source)[:2] == [32, 16]

    def region(x, n: int, fns, fn, xs: "list[torch.Tensor]"):  # noqa: ANN001, F821 - unannotated on purpose
        return x

    slots = {name: slot for name, slot, _ in parameter_slots(region) or []}
    assert slots == {"x": TENSOR, "n": INT, "fns": TENSOR, "fn": CALLABLE, "xs": TENSOR_LIST}


def test_reports_show_the_verdict_and_json_carries_verification(tmp_path: Path) -> None:
    finding = make_finding(tmp_path / "m.py", 5, "RCL101", "m.poly", Subject("global", name="step"))
    item = VerifiedFinding(finding, Verification(Verdict.CONFIRMED, 8, 8, True, ("G['step'] == 0",), "set step", "probe"))
    text = render_text([item])
    assert "confirmed" in text and "recompile_limit reached" in text and "Verified 1 finding: 1 confirmed." in text
    data = json.loads(render_json([item]))
    assert data[0]["code"] == "RCL101"
    assert data[0]["verification"] == {
        "verdict": "confirmed", "graphs": 8, "recompiles": 8, "limit_hit": True,
        "reasons": ["G['step'] == 0"], "detail": "set step", "method": "probe",
    }


def test_importing_the_command_does_not_import_torch() -> None:
    code = "import sys, recompile_lint.frontends.cli, recompile_lint.verify.command; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_without_torch_verify_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(verify_command, "torch_available", lambda: False)
    (tmp_path / "m.py").write_text("x = 1\n")
    result = CliRunner().invoke(verify_command.verify, [str(tmp_path)])
    assert result.exit_code == 2
    assert "pip install 'recompile-lint[verify]'" in result.output


def test_torch_detection_sees_a_blocked_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    assert verify_command.torch_available() is False


def test_bad_options_exit_2_without_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    for args in (["--device", "tpu", str(tmp_path)], ["--select", "XYZ9", str(tmp_path)], ["--timeout", "0", str(tmp_path)]):
        result = CliRunner().invoke(verify_command.verify, args)
        assert result.exit_code == 2, args
        assert "Traceback" not in result.output


def test_the_cli_group_offers_verify() -> None:
    from recompile_lint.frontends.cli import main

    result = CliRunner().invoke(main, ["verify", "--help"])
    assert result.exit_code == 0 and "--run" in result.output and "--backend" in result.output


OLD_LAYOUT = (
    "Recompiling function forward in /data/test_skip_non_tensor.py:37\n"
    "    triggered by the following guard failure(s):\n"
    "    - L['self'].mode == 2                                         \n"
    "    - G['_variable'] == 0                                         \n"
    "    - L['self'].mode == 1                                         "
)


def test_reasons_without_entry_prefixes_are_one_per_bullet() -> None:
    """torch <= 2.4 printed no ``0/0:`` before a reason; each bullet is still its own reason."""
    event = parse_recompile_message(OLD_LAYOUT)
    assert event is not None
    assert [r.guard for r in event.reasons] == ["L['self'].mode == 2", "G['_variable'] == 0", "L['self'].mode == 1"]
    # Stack-trace bullets stay with their reason.
    event = parse_recompile_message(SEED_MESSAGE)
    assert event is not None and len(event.reasons) == 2


def test_judge_counts_only_the_regions_own_code_object(tmp_path: Path) -> None:
    mine, other = str(tmp_path / "a.py"), str(tmp_path / "b.py")
    elsewhere = GuardFailure("G['step'] == 0", Family.CONSTANT, "0/0", "return x * step", other, 5, "poly")
    recording = Recording((RecompileEvent("poly", other, 3, "0/1", (elsewhere,)),), (),
                          (((other, 3, "poly"), 2), ((mine, 3, "poly"), 1)))
    subject = Subject("global", name="step")
    # Without the region's code object a same-named function elsewhere would confirm it.
    loose = judge(recording, subject, path=mine, line=4, calls=0, description="ran main()", method="main()")
    assert loose.verdict is Verdict.CONFIRMED
    strict = judge(recording, subject, path=mine, line=4, calls=0, description="ran main()", method="main()",
                   region_code=(mine, 3), region_name="a.poly")
    assert strict.verdict is Verdict.NOT_REPRODUCED and strict.graphs == 1 and strict.recompiles == 0
    never = judge(recording, subject, path=mine, line=9, calls=0, description="ran main()", method="main()",
                  region_code=(mine, 8), region_name="a.unused")
    assert never.verdict is Verdict.NOT_EXERCISED and "a.unused never compiled" in never.detail


def test_a_guard_on_the_findings_line_confirms_only_a_subject_it_could_be(tmp_path: Path) -> None:
    path = str(tmp_path / "m.py")
    on_line = GuardFailure("G['step'] == 0", Family.CONSTANT, "0/0", "", path, 5, "poly")
    assert explains(None, on_line, path, 5)
    assert explains(Subject("graph-break", name="poly"), on_line, path, 5)
    assert not explains(Subject("global", name="scale"), on_line, path, 5)
    assert explains(Subject("global", name="step"), on_line, path, 99)


def test_run_mode_matches_regions_by_file_and_first_line(tmp_path: Path) -> None:
    model = tmp_path / "model.py"
    model.write_text("import torch\nstep = 0\n\n@torch.compile\ndef poly(x):\n    return x * step\n")
    other = tmp_path / "other.py"
    other.write_text("step = 0\n\ndef poly(x):\n    return x * step\n")
    finding = make_finding(model, 6, "RCL101", "model.poly", Subject("global", name="step"))
    assert region_location(finding) == (str(model), 4)  # the decorator's line: where co_firstlineno is
    same = RecompileEvent("poly", str(model), 4, "0/1", (GuardFailure("G['step'] == 0", Family.CONSTANT),))
    twin = RecompileEvent("poly", str(other), 3, "1/1", (GuardFailure("G['step'] == 0", Family.CONSTANT),))
    assert in_region(finding, same) and not in_region(finding, twin)
    verified, unpredicted = match_run([finding], Recording((same, twin), (), ()))
    assert verified[0].verification.recompiles == 1
    assert [e.file for e in unpredicted] == [str(other)]


def test_the_run_report_only_adds_fields() -> None:
    event = RecompileEvent("poly", "/x.py", 3, "0/1", (GuardFailure("G['step'] == 0", Family.CONSTANT),))
    data = RunReport(("train.py",), 0, (), (event,), events=(event,), timed_out=True).to_dict()
    assert list(data)[:7] == ["command", "exit_code", "detail", "findings", "unpredicted", "limit_hits", "graphs"]
    assert data["events"] == [event.to_dict()] and data["timed_out"] is True


def test_verify_keeps_the_lint_cache_out_of_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pyproject.toml").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    where = Path(verify_command.user_cache_dir([str(tmp_path / "proj")]))
    assert where.is_relative_to(tmp_path / "cache") and not where.is_relative_to(tmp_path / "proj")
    assert where == Path(verify_command.user_cache_dir([str(tmp_path / "proj" / "pyproject.toml")]))


def test_run_directories_left_by_killed_runs_are_removed_by_the_next(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl

    from recompile_lint.verify import runner

    monkeypatch.setattr(runner.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(runner, "STALE_S", 0.0)
    dead = runner.RunDir()  # its owners are killed: the lock is released, the directory stays
    os.close(dead.lock_fd)
    (Path(dead.path) / "job-x").mkdir()
    alive = runner.RunDir()  # a live run: its lock is held
    holder = os.open(os.path.join(alive.path, ".lock"), os.O_RDWR)
    # A second open of the live lock cannot take it: that is how the sweep tells them apart.
    with pytest.raises(BlockingIOError):
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    fresh = runner.RunDir()  # sweeps on creation
    try:
        assert not Path(dead.path).exists()
        assert Path(alive.path).exists() and Path(fresh.path).exists()
        assert stat.S_IMODE(os.stat(Path(fresh.path).parent).st_mode) == 0o700
    finally:
        os.close(holder)
        alive.close()
        fresh.close()
