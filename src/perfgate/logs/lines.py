"""One physical log line -> the step records it holds, for every log format perfgate reads.

Strips ANSI codes and the srun/torchrun rank label, finds each format's anchors (records may be
glued without a newline), and hands each anchor's span to its builder (the shapes of
perfgate.logs.formats.GATES).
Pure stdlib (the workload imports it inside the container).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from perfgate.logs.formats import GATES, MAX_STEP, Record, Shape, Span

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# srun -l label (`0: `, ` 0: `), torchrun --tee labels (`[default3]:`, `[rank3]:`), possibly
# behind an external timestamp (`[2025-10-17T11:32:59+08:00] `).
_TS_PREFIX = re.compile(r"\[\d{4}-\d\d-\d\d[T ][^\]]{0,40}\]\s*")
_RANK_PREFIX = re.compile(r"\s*(\d{1,6}): |\[(?:default|rank)(\d{1,6})\]:")


def rank_label(line: str) -> re.Match[str] | None:
    """The srun/torchrun rank label at the start of a line without ANSI codes, if any."""
    m = _RANK_PREFIX.match(line)
    if m is None:
        ts = _TS_PREFIX.match(line)
        if ts is not None:
            m = _RANK_PREFIX.match(line, ts.end())
    return m


def split_prefix(line: str) -> tuple[int | None, str]:
    """Strip ANSI codes; return the srun/torchrun rank label (None if unlabeled) and the line."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    m = rank_label(line)
    if m is None:
        return None, line
    return int(m.group(1) or m.group(2)), line


Anchor = tuple[int, int, Shape, "re.Match[str]"]  # (start, end, shape, match) on one line


def anchors(line: str) -> tuple[int | None, str, list[Anchor]]:
    """(rank label, the line without ANSI codes, the record anchors on it in line order)."""
    rank, line = split_prefix(line)
    found: list[Anchor] = []
    for gate, shapes in GATES:
        if gate in line:
            for shape in shapes:
                for m in shape.regex.finditer(line):
                    found.append((m.start(), m.end(), shape, m))
    if len(found) > 1:
        found.sort(key=lambda a: (a[0], -a[1]))
        found = _drop_nested(found)
    return rank, line, found


def extract(line: str, keep: Callable[[str, int | None], bool] | None = None) -> list[Record]:
    """Every step record on one physical line (records may be glued without a newline).

    keep(kind, rank), if given, is asked before a record is built: False skips it cheaply.
    """
    rank, line, found = anchors(line)
    records = []
    for i, (start, end, shape, m) in enumerate(found):
        if keep is not None and not keep(shape.kind, rank):
            continue
        stop = found[i + 1][0] if i + 1 < len(found) else len(line)
        prev_end = found[i - 1][1] if i else 0
        rec = shape.build(Span(m, line, start, end, stop, prev_end))
        if rec is not None and (rec.step is None or abs(rec.step) <= MAX_STEP):
            if rec.rank is None:
                rec.rank = rank
            records.append(rec)
    return records


def _drop_nested(found: list[Anchor]) -> list[Anchor]:
    """Drop anchors inside an earlier one (`iteration 45/99 |` inside a NeMo 2 prefix)."""
    kept: list[Anchor] = []
    for a in found:
        if not kept or a[0] >= kept[-1][1]:
            kept.append(a)
    return kept
