"""Reading a file to fix and writing it back, in a checkout that is untrusted.

A file is read without following a link (a linted ``model.py -> ~/.bashrc`` is never
rewritten, nor a file a link elsewhere points to), only as a regular file of at most
``max-file-size``, and decoded as the interpreter decodes it while its encoding, byte order
mark and line endings are kept for the write. It is written whole or not at all: to a
temporary file in the same folder, renamed over it, with the file's mode. A file that changed
on disk since it was read (an editor saved it meanwhile) is not written.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass

from recompile_lint.source import DEFAULT_MAX_FILE_BYTES, SourceError, link_on_the_way, read_regular


class FileFixError(Exception):
    """A file that is not read or written for fixing; the message says why."""


@dataclass(frozen=True)
class SourceFile:
    """A file's text as the linter read it, and what its write must keep."""

    path: str
    text: str  # newlines as "\n"
    encoding: str
    newline: str
    digest: str
    mode: int


def read_source(path: str, limit: int = DEFAULT_MAX_FILE_BYTES) -> SourceFile:
    """``path`` read for fixing; raises ``FileFixError``."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise FileFixError(f"cannot read it: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        raise FileFixError("it is a symbolic link, which is not followed: not fixed")
    folder = link_on_the_way(path)
    if folder is not None:
        raise FileFixError(f"{folder} is a symbolic link, which is not followed: not fixed")
    try:
        data = read_regular(path, limit)
    except SourceError as exc:
        raise FileFixError(f"cannot read it: {exc}") from None
    if b"\x00" in data:
        raise FileFixError("not a text file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        raw = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        raise FileFixError(f"cannot decode it: {exc}") from None
    if raw.startswith("\ufeff"):
        raw = raw[1:]
        encoding = "utf-8-sig"
    crlf = raw.count("\r\n")
    lone_cr = raw.count("\r") - crlf
    lone_lf = raw.count("\n") - crlf
    if lone_cr or (crlf and lone_lf):
        raise FileFixError("its line endings are mixed (or lone CR): not fixed, so that no line ending changes")
    newline = "\r\n" if crlf else "\n"
    text = raw.replace("\r\n", "\n") if crlf else raw
    return SourceFile(path, text, encoding, newline, hashlib.sha256(data).hexdigest(), stat.S_IMODE(info.st_mode))


def encoded(source: SourceFile, text: str) -> bytes:
    """``text`` in ``source``'s encoding and line endings; raises ``FileFixError``."""
    try:
        return (text.replace("\n", source.newline) if source.newline != "\n" else text).encode(source.encoding)
    except (UnicodeEncodeError, LookupError) as exc:
        raise FileFixError(f"the fixed text cannot be written as {source.encoding}: {exc}") from None


def write_source(source: SourceFile, text: str) -> None:
    """Replace ``source.path`` by ``text``, unless the file changed since ``source`` was read;
    raises ``FileFixError`` (the file is then as it was)."""
    data = encoded(source, text)
    directory = os.path.dirname(source.path) or os.curdir
    try:
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(source.path)}.", suffix=".fix.tmp")
    except OSError as exc:
        raise FileFixError(f"cannot write it: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            os.fchmod(handle.fileno(), source.mode)
        _check_unchanged(source)
        os.replace(temporary, source.path)
    except BaseException as exc:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise FileFixError(f"cannot write it: {exc.strerror or exc}") from None
        raise


def _check_unchanged(source: SourceFile) -> None:
    try:
        info = os.lstat(source.path)
        if stat.S_ISLNK(info.st_mode):
            raise FileFixError("it became a symbolic link since it was read: not written")
        data = read_regular(source.path, max(info.st_size, 1) + 1)
    except (OSError, SourceError) as exc:
        raise FileFixError(f"it cannot be read again before writing ({exc}): not written") from None
    if hashlib.sha256(data).hexdigest() != source.digest:
        raise FileFixError("it changed on disk since it was read: not written (run again)")
