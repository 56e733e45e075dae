"""Run fixture programs one after another in this process, as their ``__main__``, with every
``torch.compile`` that names no custom backend using ``eager`` (recompiles are decided by the
guards, not the backend; inductor would take minutes).

Usage: ``TORCH_LOGS=recompiles TORCH_TRACE=DIR python tests/explain_data/run_fixtures.py FILES``.
``torch._dynamo.reset()`` runs between programs (compile ids start again, as in a notebook that
resets). A program that raises is reported on stderr and the next one runs.
"""

from __future__ import annotations

import contextlib
import functools
import io
import runpy
import sys

import torch
import torch._dynamo


def _eager(original):  # noqa: ANN001, ANN202 - wraps torch.compile
    @functools.wraps(original)
    def compile_eager(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        backend = kwargs.get("backend")
        if backend is None or isinstance(backend, str):
            kwargs["backend"] = "eager"
            kwargs.pop("mode", None)
            kwargs.pop("options", None)
        return original(*args, **kwargs)

    return compile_eager


def main(files: list[str]) -> None:
    torch.compile = _eager(torch.compile)
    for file in files:
        torch._dynamo.reset()
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                runpy.run_path(file, run_name="__main__")
        except BaseException as exc:  # noqa: BLE001 - one failing program must not stop the rest
            print(f"FAILED {file}: {type(exc).__name__}: {exc}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
