"""The stored proofs: one compact JSON file, one row per program key.

``{"format": 1, "torch": ["2.13.0+cpu"], "proofs": {KEY: Proof.to_list(), ...}}`` with sorted
keys and no indentation, so that the file stays small and a new proving run changes only the
rows it adds. Programs are regenerated from their seed at test time; only what torch did is
stored. Plain data, no torch (``prove_missing`` starts the prover's children).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from recompile_lint.lab.program import Program
from recompile_lint.lab.proof import Proof

FORMAT = 1
DEFAULT_PATH = Path(__file__).resolve().parent.parent.parent / "bench" / "lab" / "proofs.json"


class StoreError(Exception):
    """The stored proofs cannot be read (not JSON, another format, a malformed row)."""


def load(path: str | os.PathLike[str] = DEFAULT_PATH) -> dict[str, Proof]:
    """The proofs stored at ``path`` by program key; empty when the file does not exist."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"{path}: cannot read the stored proofs: {exc}") from None
    return loads(text, str(path))


def loads(text: str, name: str = "<proofs>") -> dict[str, Proof]:
    """Proofs from the text of a store."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise StoreError(f"{name}: not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("proofs"), dict):
        raise StoreError(f"{name}: not a store of proofs (format {FORMAT} expected)")
    proofs = {}
    for key, row in data["proofs"].items():
        try:
            proof = Proof.from_list(row)
        except (TypeError, ValueError, IndexError, KeyError) as exc:
            raise StoreError(f"{name}: the proof of {key} is malformed: {exc!r}") from None
        if proof.key != key:
            raise StoreError(f"{name}: the proof stored under {key} is of {proof.key}")
        proofs[key] = proof
    return proofs


def dumps(proofs: Mapping[str, Proof]) -> str:
    """The text of a store: compact, keys sorted, one trailing newline."""
    data: dict[str, Any] = {
        "format": FORMAT,
        "torch": sorted({p.torch for p in proofs.values() if p.torch}),
        "proofs": {key: proofs[key].to_list() for key in sorted(proofs)},
    }
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def save(path: str | os.PathLike[str], proofs: Mapping[str, Proof]) -> None:
    """Write the store atomically (a crash leaves the old file, never half a new one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(dumps(proofs))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def merge(old: Mapping[str, Proof], new: Mapping[str, Proof]) -> dict[str, Proof]:
    """``old`` with ``new`` added; a key in both keeps the new proof."""
    merged = dict(old)
    merged.update(new)
    return merged


def missing(programs: Iterable[Program], proofs: Mapping[str, Proof], torch: str | None = None) -> list[Program]:
    """The programs without a stored proof (on ``torch``, when given), each once."""
    out: dict[str, Program] = {}
    for program in programs:
        stored = proofs.get(program.key)
        if stored is None or (torch is not None and stored.torch != torch):
            out.setdefault(program.key, program)
    return list(out.values())


def prove_missing(
    programs: Iterable[Program],
    proofs: Mapping[str, Proof],
    prove: Callable[..., dict[str, Proof]] | None = None,
    **options: Any,
) -> dict[str, Proof]:
    """Prove only the programs ``proofs`` lacks; ``proofs`` with the new ones merged in.

    ``prove`` is ``recompile_lint.lab.prover.prove`` unless given; ``options`` go to it
    (``jobs``, ``timeout``, ``progress``).
    """
    todo = missing(programs, proofs)
    if not todo:
        return dict(proofs)
    if prove is None:
        from recompile_lint.lab.prover import prove
    return merge(proofs, prove(todo, **options))
