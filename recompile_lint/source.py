"""Reading Python source the way the interpreter does, with errors a user can act on."""

from __future__ import annotations

import io
import tokenize


class SourceError(Exception):
    """A file that cannot be read or decoded as Python source."""


def decode_source(data: bytes, path: str) -> str:
    """Decode bytes per PEP 263 (BOM, coding cookie, else UTF-8); newlines become ``\\n``."""
    if b"\x00" in data:
        raise SourceError("not a text file (contains NUL bytes)")
    # Most files have neither a BOM nor a coding cookie (which only the first two lines may
    # hold): they are UTF-8, and whatever does not decode as such takes the full path below,
    # which words the error as the interpreter does.
    second_line_end = data.find(b"\n", data.find(b"\n") + 1)
    if not data.startswith(b"\xef\xbb\xbf") and b"coding" not in (data if second_line_end == -1 else data[:second_line_end]):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    return decode_declared(data)


def decode_declared(data: bytes) -> str:
    """``decode_source`` the long way: the encoding ``tokenize`` finds declared (or UTF-8)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"cannot decode: {exc.msg if hasattr(exc, 'msg') else exc}") from exc
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise SourceError(f"cannot decode as {encoding}: {exc}") from exc
    if text.startswith("\ufeff"):
        text = text[1:]
    # Universal newlines, as the interpreter reads source: CRLF and lone CR become LF.
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_bytes(path: str) -> bytes:
    """The raw bytes of ``path``; every failure is a SourceError with the reason."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except IsADirectoryError as exc:
        raise SourceError("is a directory, not a file") from exc
    except PermissionError as exc:
        raise SourceError("permission denied") from exc
    except FileNotFoundError as exc:
        raise SourceError("no such file") from exc
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc)) from exc
