"""Opening files a user named: regular files only, so a FIFO or a device never hangs a read.

A plain open() of a FIFO with no writer blocks forever, and /dev/zero never ends. The file is
opened without blocking, checked with fstat on the descriptor itself (no window between a
check and the open), and only a regular file is handed back, in blocking mode.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from perfgate.errors import PerfgateError

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind(mode: int) -> str:
    """What a non-regular file is, in words ("a FIFO", "a directory", ...)."""
    return next((name for test, name in _KINDS if test(mode)), "not a plain file")


def open_regular(
    path: str | os.PathLike[str], error: type[PerfgateError] = PerfgateError
) -> BinaryIO:
    """Open a regular file for binary reading; anything else is `error` ("x: not a regular
    file (a FIFO)"). OSError (missing, unreadable) passes through for the caller to word."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{path}: not a regular file ({kind(mode)})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_text(
    path: str | os.PathLike[str], error: type[PerfgateError] = PerfgateError, errors: str = "strict"
) -> str:
    """The UTF-8 text of a regular file (see open_regular)."""
    with open_regular(path, error) as f:
        return f.read().decode("utf-8", errors)


def is_regular(path: str | os.PathLike[str]) -> bool:
    """True for an existing regular file (a symlink to one included); never opens it."""
    try:
        return stat.S_ISREG(Path(path).stat().st_mode)
    except OSError:
        return False
