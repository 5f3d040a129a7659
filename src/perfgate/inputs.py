"""Reading files a user named: regular files only, so a FIFO or a device never hangs a read;
JSON strictly, so what a reviewer reads is what perfgate reads.

A plain open() of a FIFO with no writer blocks forever, and /dev/zero never ends. The file is
opened without blocking, checked with fstat on the descriptor itself (no window between a
check and the open), and only a regular file is handed back, in blocking mode.

Python's json module accepts NaN and Infinity (not JSON), turns 1e400 into inf, keeps the
last of two equal keys (a diff shows the first), and raises a bare ValueError for integers
of more than 4300 digits; strict_json refuses each with one line.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from perfgate import limits
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
    file (a FIFO)"). OSError (missing, unreadable, a directory: IsADirectoryError as open()
    raises it) passes through for the caller to word."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except ValueError:  # "embedded null byte": no file can have that name
        raise error(f"{os.fspath(path)!r}: not a file name (a NUL character)") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise error(f"{path}: not a regular file ({kind(mode)})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_text(
    path: str | os.PathLike[str],
    error: type[PerfgateError] = PerfgateError,
    errors: str = "strict",
    max_bytes: int | None = None,
    what: str = "file",
) -> str:
    """The UTF-8 text of a regular file (see open_regular); above max_bytes, `error` names
    the cap ("x: 500 MiB, above the 16 MiB a baselines file may have") before reading."""
    with open_regular(path, error) as f:
        if max_bytes is None:
            return f.read().decode("utf-8", errors)
        data = f.read(max_bytes + 1)  # the size may grow between fstat and read: read to cap
        if len(data) > max_bytes:
            found = max(os.fstat(f.fileno()).st_size, len(data))
            raise error(
                f"{path}: {limits.size(found)}, above the {limits.size(max_bytes)} a {what} "
                "may have"
            )
        return data.decode("utf-8", errors)


def read_json(
    path: str | os.PathLike[str],
    error: type[PerfgateError],
    *,
    max_bytes: int,
    what: str,
    missing: str,
    unreadable: str,
) -> Any:
    """The JSON of a regular file of at most max_bytes (read_text); a missing file is
    error(missing), an unreadable or non-JSON one error("<unreadable> (<why>)")."""
    try:
        return json.loads(read_text(path, error, max_bytes=max_bytes, what=what))
    except FileNotFoundError:
        raise error(missing) from None
    except (OSError, ValueError) as e:
        raise error(f"{unreadable} ({e})") from None


MAX_INT_DIGITS = 30  # no count, size or id perfgate reads comes near


def strict_json(text: str, origin: str, error: type[PerfgateError] = PerfgateError) -> Any:
    """json.loads, refusing NaN/Infinity, out-of-range numbers and duplicate keys."""

    def constant(name: str) -> Any:
        raise error(f"{origin}: not valid JSON: {name} is not a JSON number")

    def number(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise error(f"{origin}: not valid JSON: number {literal[:40]} is out of range")
        return value

    def integer(literal: str) -> int:
        if len(literal.lstrip("-")) > MAX_INT_DIGITS:
            raise error(f"{origin}: not valid JSON: integer of {len(literal)} digits")
        return int(literal)

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise error(f"{origin}: not valid JSON: duplicate key {key[:40]!r} in one object")
            out[key] = value
        return out

    try:
        return json.loads(
            text,
            parse_constant=constant,
            parse_float=number,
            parse_int=integer,
            object_pairs_hook=unique,
        )
    except json.JSONDecodeError as e:
        raise error(
            f"{origin}: not valid JSON: line {e.lineno} column {e.colno}: {e.msg}"
        ) from None
    except RecursionError:
        raise error(f"{origin}: not valid JSON: nested too deeply") from None


def require_regular(
    path: str | os.PathLike[str], error: type[PerfgateError] = PerfgateError
) -> None:
    """`error` unless path is an existing regular file (a symlink to one included); no open."""
    try:
        mode = Path(path).stat().st_mode
    except (OSError, ValueError):  # ValueError: a NUL character in the name
        raise error(f"{path}: no such file") from None
    if not stat.S_ISREG(mode):
        raise error(f"{path}: not a regular file ({kind(mode)})")
