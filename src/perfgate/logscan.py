"""Stream a log file's bytes and yield only the lines that can hold a step record.

All-rank logs of large jobs are gigabytes, mostly NCCL INFO lines. The file is read in blocks;
each block is searched with bytes.find for the few marker strings of perfgate.logformats (C
speed, no per-line Python work), and only the lines around a hit are decoded, with invalid
UTF-8 replaced. Both \\n and \\r end a line, so tqdm redraws become separate lines.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from typing import BinaryIO

from perfgate.logformats import MARKERS

BLOCK_BYTES = 16 << 20
# A line longer than this (no \n or \r at all) is cut rather than buffered without bound.
MAX_LINE_BYTES = 64 << 20


def open_log(path: str) -> BinaryIO:
    """Open a log for binary reading; gzip-compressed logs (by magic bytes) are decompressed."""
    f = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    if f.read(2) == b"\x1f\x8b":
        f.close()
        return gzip.open(path, "rb")  # type: ignore[return-value]
    f.seek(0)
    return f


def candidate_lines(stream: BinaryIO, block_bytes: int = BLOCK_BYTES) -> Iterator[str]:
    """Yield, in file order, the decoded lines of stream that contain a marker string."""
    carry = b""
    while True:
        block = stream.read(block_bytes)
        if not block:
            break
        buf = carry + block if carry else block
        cut = max(buf.rfind(b"\n"), buf.rfind(b"\r"))
        if cut < 0 and len(buf) < MAX_LINE_BYTES:
            carry = buf
            continue
        end = cut + 1 if cut >= 0 else len(buf)
        yield from _lines_with_markers(buf, end)
        carry = buf[end:]
    if carry:
        yield from _lines_with_markers(carry, len(carry))


def _lines_with_markers(buf: bytes, end: int) -> Iterator[str]:
    """The lines of buf[:end] holding any marker, decoded, in order."""
    spans: dict[int, int] = {}
    for marker in MARKERS:
        i = buf.find(marker, 0, end)
        while i >= 0:
            # Bound every search by the enclosing line so a file without \r stays linear.
            nl = buf.rfind(b"\n", 0, i)
            start = max(nl, buf.rfind(b"\r", nl + 1, i)) + 1
            stop = buf.find(b"\n", i, end)
            if stop < 0:
                stop = end
            cr = buf.find(b"\r", i, stop)
            if cr >= 0:
                stop = cr
            spans[start] = stop
            i = buf.find(marker, stop, end)
    for start in sorted(spans):
        yield buf[start : spans[start]].decode("utf-8", "replace")
