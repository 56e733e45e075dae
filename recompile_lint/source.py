"""Reading Python source the way the interpreter does, with errors a user can act on."""

from __future__ import annotations

import errno
import io
import os
import stat
import tokenize

# Files larger than this are reported rather than parsed (``max-file-size``, in MiB): parsing
# and analysing source costs 20 to 300 times its size in memory, and a 50 MB module would take
# gigabytes. The largest hand-written modules are well under it; generated ones above it
# hold nothing to lint.
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
# An ignore file (``.gitignore``, ``info/exclude``) or git's own small files (a worktree's
# ``.git``, ``commondir``) larger than this is not read: real ones are a few KiB.
MAX_IGNORE_BYTES = 1024 * 1024

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


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


def is_inside(path: str, root: str) -> bool:
    """Whether ``path``, its links resolved, lies in the directory ``root`` (also resolved)."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    try:
        return os.path.commonpath([real, top]) == top
    except ValueError:  # another drive
        return False


def read_regular(path: str, limit: int, within: str | None = None, follow_links: bool = False) -> bytes:
    """The bytes of ``path``, a file the linter reads for itself (an ignore file, a git file,
    a configuration file), read so that a hostile repository can neither block nor flood it:

    - never through a symbolic link (``O_NOFOLLOW``), except, when ``within`` is given, a
      link whose target lies inside that directory (then the target is opened the same way),
      or any link with ``follow_links`` (a file the user named);
    - without blocking (``O_NONBLOCK``: a named pipe does not wait for a writer), and only a
      regular file (``fstat`` after the open: not a pipe, device or directory);
    - of at most ``limit`` bytes (a larger file is refused, not cut short).

    Every failure is a ``SourceError`` whose message says why (``FileNotFoundError`` as its
    cause when there is no such file)."""
    target = path
    if follow_links:
        target = os.path.realpath(path)
    elif within is not None and os.path.islink(path):
        if not is_inside(path, within):
            raise SourceError("a symbolic link to outside the project, not followed")
        target = os.path.realpath(path)
    try:
        fd = os.open(target, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except FileNotFoundError as exc:
        raise SourceError("no such file") from exc
    except OSError as exc:
        if _NOFOLLOW and exc.errno == errno.ELOOP:
            raise SourceError("a symbolic link, not followed") from exc
        raise SourceError(exc.strerror or str(exc)) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SourceError("not a regular file")
        if info.st_size > limit:
            raise SourceError(f"larger than {_amount(limit)}")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, limit + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # grew since the fstat
                raise SourceError(f"larger than {_amount(limit)}")
        return b"".join(chunks)
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc)) from exc
    finally:
        os.close(fd)


def link_on_the_way(path: str) -> str | None:
    """The first folder of relative ``path`` that is a link, if any (an absolute path is the
    caller's own choice of place; the checkout decides what a relative one passes through)."""
    if os.path.isabs(path):
        return None
    parts = os.path.normpath(os.path.dirname(path)).split(os.sep)
    current = ""
    for part in parts:
        if part in ("", os.curdir):
            continue
        current = os.path.join(current, part) if current else part
        if part == os.pardir:
            continue
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return current
        except OSError:
            return None  # a folder that is missing: the write says so
    return None
