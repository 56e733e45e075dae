"""Writing a report to the file ``--output-file`` names, inside a checkout that is untrusted.

A checkout may commit a link where the report goes (``results.sarif -> ~/.bashrc``, or a
folder ``reports -> ~/.ssh``): opening the name would overwrite the file the link points to,
outside the checkout. So a name that is a link, or a relative name whose folders pass through
one, is refused (the caller reports it and exits 2). The report is written to a temporary
file in the same folder and renamed over the name when complete: a failure (a full disk, a
folder that is not writable) leaves what was there, never half a report, and the rename
replaces a link planted after the check rather than writing through it.

A name that is something other than a file (``/dev/null``, a pipe) is written in place,
opened without following a link.
"""

from __future__ import annotations

import os
import stat
import tempfile

from recompile_lint.source import link_on_the_way


class OutputFileError(Exception):
    """The report cannot be written to this name; the message says why, naming it."""


def write_output_file(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` without following a link; raise ``OutputFileError``."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise OutputFileError(f"cannot write {path}: {exc.strerror or exc}") from exc
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise OutputFileError(f"cannot write {path}: it is a symbolic link, which is not followed; remove it or name another file")
    folder_link = link_on_the_way(path)
    if folder_link is not None:
        raise OutputFileError(f"cannot write {path}: {folder_link} is a symbolic link, which is not followed; name a path without one")
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise OutputFileError(f"cannot write {path}: it is a directory")
    data = text.encode("utf-8")
    if info is not None and not stat.S_ISREG(info.st_mode):
        _write_in_place(path, data)
        return
    directory = os.path.dirname(path) or os.curdir
    try:
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as exc:
        raise OutputFileError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            # The mode a plain ``open`` would give: the existing file's, else 0666 less the umask.
            if info is not None:
                mode = stat.S_IMODE(info.st_mode)
            else:
                umask = os.umask(0o022)
                os.umask(umask)
                mode = 0o666 & ~umask
            os.fchmod(handle.fileno(), mode)
        os.replace(temporary, path)
    except OSError as exc:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise OutputFileError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _write_in_place(path: str, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise OutputFileError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except OSError as exc:
        raise OutputFileError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
