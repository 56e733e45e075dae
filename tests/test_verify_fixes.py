"""``verify --fix``: a fix is kept only when the probe, run on a copy of the fixed code,
compiles one graph where it compiled more before."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import lint_snippet
from recompile_lint.verify.fixes import apply_proven, prove_fixes, render_proofs
from recompile_lint.verify.results import Verdict, Verification, VerifiedFinding
from test_fixes import GLOBAL_INT, GLOBAL_INT_FIXED, LOADER

CONFIRMED = Verification(Verdict.CONFIRMED, graphs=8, recompiles=7, limit_hit=True)


def verified(tmp_path: Path, source: str, before: Verification = CONFIRMED) -> list[VerifiedFinding]:
    result = lint_snippet(tmp_path, source, "train.py")
    return [VerifiedFinding(finding, before) for finding in result.findings]


def probe_answering(graphs: int, seen: list[str]):
    """A stand-in for the verifier: records the fixed file it was shown, answers ``graphs``."""

    def probe(findings):
        out = []
        for finding in findings:
            seen.append(Path(finding.path).read_text(encoding="utf-8"))
            verdict = Verdict.CONFIRMED if graphs > 1 else Verdict.NOT_REPRODUCED
            out.append(VerifiedFinding(finding, Verification(verdict, graphs=graphs)))
        return out

    return probe


def test_a_fix_under_which_the_probe_compiles_one_graph_is_proven_and_written(tmp_path):
    items = verified(tmp_path, GLOBAL_INT)
    seen: list[str] = []
    proofs, problems = prove_fixes(items, [str(tmp_path)], False, probe_answering(1, seen))
    assert problems == []
    assert [(p.finding.code, p.fix.fixer, p.proven) for p in proofs] == [("RCL101", "dynamic-sources", True)]
    # The probe ran on a copy holding the fixed text, not on the project.
    assert seen == [GLOBAL_INT_FIXED]
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == GLOBAL_INT
    written, unwritten = apply_proven(proofs, [str(tmp_path)], False)
    assert unwritten == [] and len(written) == 1
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == GLOBAL_INT_FIXED
    assert "proven: one graph under the fix (before: confirmed, 8 graphs, recompile_limit reached)" in "\n".join(render_proofs(proofs, written))


def test_a_fix_under_which_the_probe_still_recompiles_is_dropped(tmp_path):
    items = verified(tmp_path, GLOBAL_INT)
    proofs, _ = prove_fixes(items, [str(tmp_path)], False, probe_answering(8, []))
    assert [p.proven for p in proofs] == [False]
    assert proofs[0].detail.startswith("dropped: under the fix the probe saw confirmed, 8 graphs")
    assert apply_proven(proofs, [str(tmp_path)], False) == ([], [])
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == GLOBAL_INT


def test_a_fix_of_a_finding_the_probe_never_showed_is_not_proven(tmp_path):
    items = verified(tmp_path, GLOBAL_INT, Verification(Verdict.NOT_REPRODUCED, graphs=1))
    proofs, _ = prove_fixes(items, [str(tmp_path)], False, probe_answering(1, []))
    assert [p.proven for p in proofs] == [False]
    assert "no recompile before the fix" in proofs[0].detail


def test_unsafe_fixes_are_proven_only_when_asked(tmp_path):
    items = verified(tmp_path, LOADER)
    assert prove_fixes(items, [str(tmp_path)], False, probe_answering(1, []))[0] == []
    proofs, _ = prove_fixes(items, [str(tmp_path)], True, probe_answering(1, []))
    assert [(p.fix.fixer, p.fix.safe) for p in proofs] == [("drop-last", False)]


@pytest.mark.slow
def test_verify_fix_proves_a_fix_on_torch_and_drops_one_the_probe_does_not_show(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from recompile_lint.verify.command import verify

    (tmp_path / "train.py").write_text(GLOBAL_INT, encoding="utf-8")
    (tmp_path / "loader.py").write_text(LOADER, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(verify, ["-q", "--no-cache", "--fix", "--unsafe-fixes", "."])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stdout.splitlines()
    proven = [line for line in lines if "RCL101 dynamic-sources (safe): proven: one graph under the fix" in line]
    assert proven, result.stdout
    # The probe of RCL205 varies the batch size itself: drop_last cannot show there.
    assert any("RCL205 drop-last (unsafe): " in line and "proven:" not in line for line in lines), result.stdout
    assert "1 of 2 fixes proven; 1 file written" in result.stdout
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == GLOBAL_INT_FIXED
    assert (tmp_path / "loader.py").read_text(encoding="utf-8") == LOADER
