"""Stream a log file's bytes and yield only the lines that can hold a step record.

All-rank logs of large jobs are gigabytes, mostly NCCL INFO lines. The file is read in blocks;
each block is searched with bytes.find for the few marker strings of perfgate.logs.formats (C
speed, no per-line Python work), and only the lines around a hit are decoded, with invalid
UTF-8 replaced. Both \\n and \\r end a line, so tqdm redraws become separate lines.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from typing import BinaryIO

from perfgate import inputs
from perfgate.errors import LogParseError
from perfgate.logs.formats import MARKERS

BLOCK_BYTES = 4 << 20  # measured: 4 MiB beats 1, 16 and 64 MiB (the block stays in cache)
# A block where one line in DENSE_SHARE or more holds a marker is decoded whole (a dense log
# of step lines); sparser ones (NCCL floods) only around each marker.
DENSE_SHARE = 4
DENSE_SAMPLE = 64 << 10
# A line longer than this (no \n or \r at all) is cut rather than buffered without bound.
MAX_LINE_BYTES = 64 << 20


def open_log(path: str) -> BinaryIO:
    """Open a log for binary reading; gzip-compressed logs (by magic bytes) are decompressed.

    Regular files only: a FIFO or a device is a one-line LogParseError, never a hang.
    """
    f = inputs.open_regular(path, LogParseError)
    gz = f.read(2) == b"\x1f\x8b"
    f.seek(0)
    return _GzipLog(f) if gz else f  # type: ignore[return-value]


class _GzipLog(gzip.GzipFile):
    """A gzip stream that closes the file it reads (GzipFile leaves a given file open)."""

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self.raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.raw.close()


class LineScanner:
    """Iterate, in file order, the decoded lines of a binary stream that hold a marker string.

    markers may be narrowed while iterating (see narrow); it takes effect from the next block.
    """

    def __init__(
        self, stream: BinaryIO, block_bytes: int = BLOCK_BYTES, origin: str | None = None
    ) -> None:
        self.stream = stream
        self.block_bytes = block_bytes
        self.origin = origin  # set: close the stream at the end; read errors name this file
        self.markers: tuple[bytes, ...] = MARKERS
        # A file still being written ends in a line that may be cut mid-number: skip it.
        self.skip_unterminated = False
        # Set when the last line yielded had no line break: the file was cut while being
        # written, so that line's last record may end mid-number (perfgate.logs.collect).
        self.cut_last = False

    def narrow(self, markers: tuple[bytes, ...]) -> None:
        """Search only these markers from now on (the log's format is known)."""
        self.markers = markers

    def __iter__(self) -> Iterator[str]:
        for batch in self.batches():
            yield from batch

    def batches(self) -> Iterator[list[str]]:
        """The candidate lines, in file order, a list per stretch of the file (a dense log's
        step lines come in thousands at a time: perfgate.logs.collect reads them in bulk)."""
        if self.origin is None:
            yield from self._scan()
            return
        with self.stream:
            try:
                yield from self._scan()
            except (OSError, EOFError) as e:  # a truncated or corrupt .gz, an I/O error
                raise LogParseError(f"{self.origin}: cannot read the log ({e})") from None

    def _scan(self) -> Iterator[list[str]]:
        carry = b""  # the unfinished last line of the previous block
        while True:
            block = self.stream.read(self.block_bytes)
            if not block:
                break
            lo = 0
            if carry:
                # Finish the carried line with the head of this block; copy only that much.
                nl = _first_break(block)
                if nl < 0:
                    carry += block
                    if len(carry) >= MAX_LINE_BYTES:
                        yield _lines_with_markers(carry, 0, len(carry), self.markers)
                        carry = b""
                    continue
                head = carry + block[: nl + 1]
                yield _lines_with_markers(head, 0, len(head), self.markers)
                lo = nl + 1
            cut = max(block.rfind(b"\n", lo), block.rfind(b"\r", lo))
            if cut < 0:
                carry = block[lo:]
                continue
            yield _lines_with_markers(block, lo, cut + 1, self.markers)
            carry = block[cut + 1 :]
        if carry and not self.skip_unterminated:
            last = _lines_with_markers(carry, 0, len(carry), self.markers)
            self.cut_last = bool(last)
            yield last


def _first_break(block: bytes) -> int:
    """Index of the first \\n or \\r in block, or -1."""
    nl = block.find(b"\n")
    cr = block.find(b"\r", 0, nl if nl >= 0 else len(block))
    return cr if cr >= 0 else nl


def candidate_lines(stream: BinaryIO, block_bytes: int = BLOCK_BYTES) -> Iterator[str]:
    """Yield, in file order, the decoded lines of stream that contain any marker string."""
    return iter(LineScanner(stream, block_bytes))


def _lines_with_markers(buf: bytes, lo: int, end: int, markers: tuple[bytes, ...]) -> list[str]:
    """The lines of buf[lo:end] holding any marker, decoded, in order."""
    # Only which path reads the block depends on this (both give the same lines), so a
    # sample of its head decides: counting the whole block cost the sparse path half its speed.
    top = min(end, lo + DENSE_SAMPLE)
    lines = buf.count(b"\n", lo, top)
    hits = sum(buf.count(m, lo, top) for m in markers)
    if hits and hits * DENSE_SHARE >= lines:
        return _dense_lines(buf, lo, end, markers)
    return list(_sparse_lines(buf, lo, end, markers))


def _dense_lines(buf: bytes, lo: int, end: int, markers: tuple[bytes, ...]) -> list[str]:
    """A block where most lines are step lines: decode it whole, split, filter (C speed).

    Line breaks are ASCII, so no UTF-8 sequence spans one: decoding the block and then
    splitting gives the same text as decoding each line.
    """
    text = buf[lo:end].decode("utf-8", "replace")
    if "\r" in text:
        text = text.replace("\r", "\n")
    lines = text.split("\n")
    words = [m.decode() for m in markers]
    if len(words) == 1:
        (a,) = words
        return [x for x in lines if a in x]
    if len(words) == 2:
        a, b = words
        return [x for x in lines if a in x or b in x]
    return [x for x in lines if any(w in x for w in words)]


def _sparse_lines(buf: bytes, lo: int, end: int, markers: tuple[bytes, ...]) -> Iterator[str]:
    """A block of mostly other lines (NCCL floods): find the markers, decode their lines."""
    spans: dict[int, int] = {}
    for marker in markers:
        i = buf.find(marker, lo, end)
        while i >= 0:
            # Bound every search by the enclosing line so a file without \r stays linear.
            nl = max(buf.rfind(b"\n", lo, i), lo - 1)
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
