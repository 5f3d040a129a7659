"""A log's lines -> its step records by kind, and the format they say the log is in.

All-rank logs: only the lowest MAX_RANK_STREAMS ranks' records of the kinds every rank prints
are kept. Turning the records into steps: perfgate.logs.assemble.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from perfgate.logs import formats as lf
from perfgate.logs.formats import rank_key
from perfgate.logs.lines import extract

# Kinds every rank may print (all-rank logs): only the lowest MAX_RANK_STREAMS ranks' records
# are kept, so a 1000-rank log costs no more memory or time than an 8-rank one. The lowest
# rank wins each step anyway; the others matter only if all of those lack the step.
MAX_RANK_STREAMS = 8
_CAPPED = lf.ALL_RANK_KINDS


@dataclass
class Collected:
    """The records of one log by kind, in file order, and the ranks whose records were skipped."""

    by_kind: dict[str, list[lf.Record]]
    skipped_ranks: dict[str, set[int | None]]


def collect(lines: Iterable[str]) -> Collected:
    """All records of the lines, by kind, in file order (all-rank kinds: lowest ranks only).

    When lines is a LineScanner, its marker search is narrowed to the kinds found so far: a
    log holds one format, and fewer byte searches make multi-GB all-rank logs faster.
    """
    by_kind: dict[str, list[lf.Record]] = defaultdict(list)
    streams: dict[str, dict[int | None, list[lf.Record]]] = defaultdict(dict)
    skipped: dict[str, set[int | None]] = defaultdict(set)

    def keep(kind: str, rank: int | None) -> bool:
        if kind not in _CAPPED:
            return True
        kept = streams[kind]
        if rank in kept:
            return True
        if len(kept) >= MAX_RANK_STREAMS:
            worst = max(kept, key=rank_key)
            if rank_key(rank) > rank_key(worst):
                skipped[kind].add(rank)
                return False
            del kept[worst]
            skipped[kind].add(worst)
        kept[rank] = []
        return True

    narrow = getattr(lines, "narrow", None)
    seen: set[str] = set()
    seq = 0
    for line in lines:
        for rec in extract(line, keep):
            rec.seq = seq
            seq += 1
            if rec.kind not in seen:
                seen.add(rec.kind)
                if narrow is not None:
                    narrow(lf.markers_for(seen))
            if rec.kind in _CAPPED:
                streams[rec.kind][rec.rank].append(rec)
            else:
                by_kind[rec.kind].append(rec)
    for kind, per_rank in streams.items():
        by_kind[kind] = sorted((r for recs in per_rank.values() for r in recs), key=_seq)
    return Collected(by_kind, skipped)


def _seq(rec: lf.Record) -> int:
    return rec.seq


def detect(lines: Iterable[str]) -> str | None:
    """The format name of the lines' step records, or None when there are none."""
    fmt = choose(collect(lines).by_kind)
    return fmt.name if fmt else None


def choose(by_kind: lf.ByKind) -> lf.LogFormat | None:
    """The format that scores highest (ties: registry order), or None when all score 0."""
    best, chosen = 0, None
    for fmt in lf.REGISTRY:
        score = fmt.score(by_kind)
        if score > best:
            best, chosen = score, fmt
    return chosen
