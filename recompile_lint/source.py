"""Reading Python source the way the interpreter does, with errors a user can act on."""

from __future__ import annotations

import io
import os
import stat
import tokenize

# Files larger than this are reported rather than parsed (``max-file-size``, in MiB): parsing
# and analysing source costs 20 to 300 times its size in memory, and a 50 MB module would take
# gigabytes. The largest hand-written modules are well under it; generated ones above it
# hold nothing to lint.
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024


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


def too_large(size: int, limit: int) -> str:
    """The error of a file of ``size`` bytes over the ``limit``."""
    return f"too large to lint: {_amount(size)}, more than max-file-size ({_amount(limit)})"


def _amount(size: int) -> str:
    mib = 1024 * 1024
    if size % mib == 0:
        return f"{size // mib} MiB"
    return f"{size / mib:.1f} MiB" if size >= mib else f"{size:,} bytes"


def read_bytes(path: str, limit: int | None = None) -> bytes:
    """The raw bytes of ``path`` (of at most ``limit`` bytes); every failure is a SourceError
    with the reason."""
    try:
        with open(path, "rb") as handle:
            if limit is not None:
                info = os.fstat(handle.fileno())
                if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                    raise SourceError(too_large(info.st_size, limit))
                data = handle.read(limit + 1)
                if len(data) > limit:
                    raise SourceError(too_large(len(data), limit))
                return data
            return handle.read()
    except IsADirectoryError as exc:
        raise SourceError("is a directory, not a file") from exc
    except PermissionError as exc:
        raise SourceError("permission denied") from exc
    except FileNotFoundError as exc:
        raise SourceError("no such file") from exc
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc)) from exc
