"""A log's lines -> its step records by kind, and the format they say the log is in.

All-rank logs: only the lowest MAX_RANK_STREAMS ranks' records of the kinds every rank prints
are kept. Turning the records into steps: perfgate.logs.assemble.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from perfgate.logs import formats as lf
from perfgate.logs import template
from perfgate.logs.formats import rank_key
from perfgate.logs.lines import extract
from perfgate.logs.records import RecordTable
from perfgate.logs.table import NO_RANK
from perfgate.logs.template import Template

# Kinds every rank may print (all-rank logs): only the lowest MAX_RANK_STREAMS ranks' records
# are kept, so a 1000-rank log costs no more memory or time than an 8-rank one. The lowest
# rank wins each step anyway; the others matter only if all of those lack the step.
MAX_RANK_STREAMS = 8
_CAPPED = lf.ALL_RANK_KINDS
BULK_LINES = 16  # a batch this long is matched in bulk by the trusted template first
BULK_CHUNK = 4096
_DENSE = tuple(dict.fromkeys(s.kind for f in lf.FAMILIES for s in f.shapes if s.dense))


@dataclass
class Collected:
    """The records of one log by kind, in file order, and the ranks whose records were skipped.

    Dense kinds (NeMo 2, Megatron iteration lines) are RecordTables: columns, not objects.
    """

    by_kind: dict[str, Sequence[lf.Record]]
    skipped_ranks: dict[str, set[int | None]]
    # The log's last line had no line break: its last record was left out (its last number
    # may be cut, `in s: 2.` for 2.5). None when not.
    cut_record: str | None = None


def collect(lines: Iterable[str]) -> Collected:
    """All records of the lines, by kind, in file order (all-rank kinds: lowest ranks only).

    When lines is a LineScanner, its marker search is narrowed to the kinds found so far: a
    log holds one format, and fewer byte searches make multi-GB all-rank logs faster. Lines
    of a dense kind are read by the templates learned from earlier ones (perfgate.logs.template).
    """
    by_kind: dict[str, list[lf.Record]] = defaultdict(list)
    tables: dict[str, RecordTable] = {kind: RecordTable(kind) for kind in _DENSE}
    streams: dict[str, dict[int | None, list[lf.Record]]] = defaultdict(dict)
    skipped: dict[str, set[int | None]] = defaultdict(set)
    admitted: dict[str, dict[int | None, bool]] = defaultdict(dict)

    def keep(kind: str, rank: int | None) -> bool:
        if kind not in _CAPPED:
            return True
        kept = admitted[kind]
        if rank in kept:
            return True
        if len(kept) >= MAX_RANK_STREAMS:
            worst = max(kept, key=rank_key)
            if rank_key(rank) > rank_key(worst):
                skipped[kind].add(rank)
                return False
            del kept[worst]
            streams[kind].pop(worst, None)
            skipped[kind].add(worst)
        kept[rank] = True
        streams[kind].setdefault(rank, [])
        return True

    narrow = getattr(lines, "narrow", None)
    seen: set[str] = set()
    learner = _Learner()
    seq = 0
    last: list[Sequence[lf.Record]] = []  # where the last line's records went, in order

    def bulk(t: Template, found: list[re.Match[str]], lines: list[str]) -> None:
        """Lines a trusted template matched, into its table a column at a time."""
        got = t.columns(found)
        if got is None:  # a group without a number: each line the slow way
            for line in lines:
                one(line)
            return
        ranks, steps, values = got
        kind = t.kind
        # In order of first appearance, as the lines would be asked one by one.
        admit = {r: keep(kind, None if r == NO_RANK else r) for r in dict.fromkeys(ranks)}
        if not all(admit.values()):  # the cap turned away some ranks: keep the others' lines
            rows = [i for i, r in enumerate(ranks) if admit[r]]
            ranks, steps = [ranks[i] for i in rows], [steps[i] for i in rows]
            values = [[col[i] for i in rows] for col in values]
        if steps:
            tables[kind].extend(t.names, steps, ranks, values)
            last[:] = [tables[kind]]

    def one(line: str) -> None:
        nonlocal seq
        last.clear()
        got = learner.read(line)
        if got is not None:
            t, (rank, step, values) = got
            if keep(t.kind, None if rank == NO_RANK else rank):
                tables[t.kind].write(t.names, step, rank, values)
                last.append(tables[t.kind])
            return
        records = extract(line, keep)
        if len(records) == 1 and records[0].kind in tables:
            learner.learn(line, records[0])
        for rec in records:
            rec.seq = seq
            seq += 1
            if rec.kind not in seen:
                seen.add(rec.kind)
                if narrow is not None:
                    narrow(lf.markers_for(seen))
            if rec.kind in tables:
                tables[rec.kind].add(rec.step or 0, rec.rank, rec.values)
                last.append(tables[rec.kind])
            elif rec.kind in _CAPPED:
                streams[rec.kind][rec.rank].append(rec)
                last.append(streams[rec.kind][rec.rank])
            else:
                by_kind[rec.kind].append(rec)
                last.append(by_kind[rec.kind])

    for batch in _batches(lines):
        pos = 0
        while pos < len(batch) and (learner.trusted is None or len(batch) - pos < BULK_LINES):
            one(batch[pos])
            pos += 1
        if pos == len(batch):
            continue
        # A dense stretch: one C-level match of the trusted template over the rest of the
        # batch; the lines it does not match (other kinds, shapes) go one by one, in order.
        t, rest = learner.trusted, batch[pos:]
        found = list(map(t.rx.fullmatch, rest))  # type: ignore[union-attr]
        start = 0
        for miss in [i for i, m in enumerate(found) if m is None] + [len(rest)]:
            if miss > start:
                bulk(t, found[start:miss], rest[start:miss])  # type: ignore[arg-type]
            if miss < len(rest):
                one(rest[miss])
            start = miss + 1
    cut = None
    if getattr(lines, "cut_last", False) and last:
        dropped = last[-1].pop()  # type: ignore[attr-defined]
        cut = _cut_note(dropped)
    for kind, per_rank in streams.items():
        if kind not in tables:
            by_kind[kind] = sorted((r for recs in per_rank.values() for r in recs), key=_seq)
    out: dict[str, Sequence[lf.Record]] = defaultdict(list, by_kind)
    for kind, table in tables.items():
        table.drop_ranks(skipped[kind])
        if table:
            out[kind] = table
    return Collected(out, skipped, cut)


def _cut_note(rec: lf.Record) -> str:
    where = f"step {rec.step}'s record" if rec.step is not None else "its last record"
    return (
        f"the last line has no line break (the log was cut while being written): {where} "
        "was left out, its numbers may be cut short"
    )


class _Learner:
    """The templates of one log's dense lines, learned from the record path's results."""

    def __init__(self) -> None:
        self.templates: list[Template] = []
        self.failed = 0
        self.trusted: Template | None = None  # the last verified template that read a line

    def read(self, line: str) -> tuple[Template, tuple[int, int, list[float]]] | None:
        """(template, what it read) for a line a trusted template reads, else None."""
        for t in self.templates:
            got = t.read(line)
            if got is None:
                continue
            if t.checked < template.VERIFY:
                # Not trusted yet: the record path reads the line; compare.
                recs = extract(line)
                if len(recs) == 1 and template.same(t, got, recs[0]):
                    t.checked += 1
                    if t.checked == template.VERIFY:
                        self.trusted = t
                else:
                    self.templates.remove(t)
                    self.failed += 1
                return None
            self.trusted = t
            return t, got
        return None

    def learn(self, line: str, rec: lf.Record) -> None:
        """Learn the shape of a line the record path read one dense record from."""
        if len(self.templates) >= template.MAX_TEMPLATES or self.failed >= template.MAX_FAILED:
            return
        if any(t.read(line) is not None for t in self.templates):
            return  # a template in verification already has this shape
        t = template.learn(line, rec)
        if t is None:
            self.failed += 1
        else:
            self.templates.append(t)


def _batches(lines: Iterable[str]) -> Iterator[list[str]]:
    """The lines in lists: a LineScanner's own stretches, else chunks of BULK_CHUNK."""
    batches = getattr(lines, "batches", None)
    if batches is not None:
        yield from batches()
        return
    it = iter(lines)
    while chunk := list(itertools.islice(it, BULK_CHUNK)):
        yield chunk


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
