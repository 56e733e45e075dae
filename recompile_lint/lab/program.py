"""A generated program: a small project whose ``run.py`` drives compiled code, with the
dimensions of the grid it was generated from. Plain data, no torch."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping


@dataclass(frozen=True)
class Program:
    """One generated program.

    ``files`` are ``(relative path, text)`` pairs; ``run.py`` is the entry the prover runs with
    ``python run.py`` from the program's directory. ``dims`` names the value of every grid
    dimension the program was built from (``("location", "module-attribute")``,
    ``("type", "int")``, ...). ``cause`` is the line the generator wrote the value's read on in
    compiled code (``(file, line)``), or None where nothing is read; ``change`` the line that
    changes it between calls, or None. What the program really does is decided by its proof,
    never by these marks: ``intent`` (``"unbounded"``, ``"bounded"``, ``"negative"``) is what the
    generator aimed at, kept for diagnostics only. ``twin_of`` is the key of the positive program
    a negative twin was derived from. ``name`` is the identifier the value is known by in the
    program (the global, attribute, parameter or key, or the container whose shape varies).
    """

    seed: int
    index: int
    files: tuple[tuple[str, str], ...]
    dims: tuple[tuple[str, str], ...]
    cause: tuple[str, int] | None = None
    change: tuple[str, int] | None = None
    intent: str = ""
    twin_of: str | None = None
    name: str = ""
    key: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(self, "key", program_key(self.files))

    def dim(self, name: str) -> str:
        return dict(self.dims).get(name, "")

    def text(self, path: str) -> str:
        return dict(self.files)[path]

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "seed": self.seed,
            "index": self.index,
            "files": [list(item) for item in self.files],
            "dims": [list(item) for item in self.dims],
            "cause": list(self.cause) if self.cause else None,
            "change": list(self.change) if self.change else None,
            "intent": self.intent,
            "twin_of": self.twin_of,
            "name": self.name,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Program":
        return cls(
            seed=int(data["seed"]),
            index=int(data["index"]),
            files=tuple((str(p), str(t)) for p, t in data["files"]),
            dims=tuple((str(k), str(v)) for k, v in data["dims"]),
            cause=(str(data["cause"][0]), int(data["cause"][1])) if data.get("cause") else None,
            change=(str(data["change"][0]), int(data["change"][1])) if data.get("change") else None,
            intent=str(data.get("intent", "")),
            twin_of=data.get("twin_of"),
            name=str(data.get("name", "")),
        )


def program_key(files: tuple[tuple[str, str], ...]) -> str:
    """Content digest of a program's files: the same text is the same program, whatever seed made it."""
    digest = hashlib.sha256()
    for path, text in sorted(files):
        digest.update(path.encode("utf-8") + b"\0" + text.encode("utf-8") + b"\0")
    return digest.hexdigest()[:20]


def write_program(program: Program, directory: Path) -> Path:
    """Write a program's files under ``directory`` (made if missing) and return it resolved;
    a file path that would leave it is refused (``ValueError``), nothing written outside."""
    directory.mkdir(parents=True, exist_ok=True)
    base = directory.resolve()
    for rel, text in program.files:
        target = (base / rel).resolve()
        if base not in target.parents:
            raise ValueError(f"program {program.key}: file path {rel!r} leaves the program's directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return base
