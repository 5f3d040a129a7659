"""The records of a dense kind (NeMo 2, Megatron iteration lines) as columns, not objects.

The collector (perfgate.logs.collect) fills a RecordTable per dense kind, from the template
lane (perfgate.logs.template) and the record path alike; the resolver (perfgate.logs.resolve)
turns it into steps. Pure stdlib (the workload imports it inside the container).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, overload

from perfgate.logs.formats.base import Record
from perfgate.logs.table import NO_RANK, Column


def _appender(col: Column, flag: int) -> Callable[[float], Any]:
    """col's append of a value (flag 1) or of an empty slot (flag 0, the value ignored)."""
    values, mask = col.values.append, col.mask
    if mask is None:
        return values
    mark = mask.append

    def put(x: float) -> None:
        values(x)
        mark(flag)

    return put


class RecordTable(Sequence[Record]):
    """The records of one dense kind in file order, as columns (perfgate.logs.template).

    Indexing or iterating builds Record objects, fresh each time (formats that pair or
    derive records work on those); the assembler reads the columns.
    """

    __slots__ = ("_writers", "kind", "ranks", "steps", "values")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.steps = array("q")
        self.ranks = array("i")
        self.values: dict[str, Column] = {}
        self._writers: dict[tuple[str, ...], list[Callable[[float], Any]]] = {}

    def add(self, step: int, rank: int | None, values: Mapping[str, float]) -> None:
        """One more record (its step number must be set)."""
        n = len(self.steps)
        for name in values.keys() - self.values.keys():
            self.values[name] = Column.missing(n)
            self._writers.clear()
        for name, col in self.values.items():
            v = values.get(name)
            if v is None and col.mask is None:
                self._writers.clear()  # the column gets a mask: appenders change
            col.append(v)
        self.steps.append(step)
        self.ranks.append(NO_RANK if rank is None else rank)

    def write(self, names: tuple[str, ...], step: int, rank: int, values: Sequence[float]) -> None:
        """One more record holding exactly these values (rank: NO_RANK when unlabeled).

        The template lane's add(): appenders per column, prepared once per set of names.
        """
        put = self._writers.get(names)
        if put is None:
            put = self._writers[names] = self._prepare(names)
        for f, v in zip(put, values, strict=False):  # put: the names' appenders, then the rest
            f(v)
        for f in put[len(names) :]:
            f(0.0)
        self.steps.append(step)
        self.ranks.append(rank)

    def extend(
        self, names: tuple[str, ...], steps: list[int], ranks: list[int], values: list[list[float]]
    ) -> None:
        """Many records holding exactly these values (write() for whole columns at once)."""
        n, k = len(self.steps), len(steps)
        for name in names:
            if name not in self.values:
                self.values[name] = Column.missing(n)
                self._writers.clear()
        for name, col in zip(names, values, strict=True):
            column = self.values[name]
            column.values.extend(col)
            if column.mask is not None:
                column.mask.extend(b"\x01" * k)
        for name, column in self.values.items():
            if name not in names:
                if column.mask is None:
                    column.mask = bytearray(b"\x01") * n
                    self._writers.clear()
                column.values.frombytes(bytes(8 * k))  # 0.0, marked as no value
                column.mask.extend(bytes(k))
        self.steps.extend(steps)
        self.ranks.extend(ranks)

    def _prepare(self, names: tuple[str, ...]) -> list[Callable[[float], Any]]:
        n = len(self.steps)
        for name in names:
            if name not in self.values:
                self.values[name] = Column.missing(n)
        others = [c for k, c in self.values.items() if k not in names]
        for col in others:
            if col.mask is None:
                col.mask = bytearray(b"\x01") * n
        return [*(_appender(self.values[k], 1) for k in names), *(_appender(c, 0) for c in others)]

    def pop(self) -> Record:
        """Remove and return the last record."""
        rec = self[-1]
        self.steps.pop()
        self.ranks.pop()
        for col in self.values.values():
            col.values.pop()
            if col.mask is not None:
                col.mask.pop()
        return rec

    def __len__(self) -> int:
        return len(self.steps)

    @overload
    def __getitem__(self, i: int) -> Record: ...
    @overload
    def __getitem__(self, i: slice) -> list[Record]: ...
    def __getitem__(self, i: int | slice) -> Record | list[Record]:
        if isinstance(i, slice):
            return [self[j] for j in range(len(self))[i]]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("record index out of range")
        values = {}
        for name, col in self.values.items():
            v = col.get(i)
            if v is not None:
                values[name] = v
        rank = self.ranks[i]
        return Record(self.kind, self.steps[i], values, None if rank == NO_RANK else rank, seq=i)

    def __iter__(self) -> Iterator[Record]:
        return (self[i] for i in range(len(self)))

    def drop_ranks(self, ranks: set[int | None]) -> None:
        """Forget the records of these ranks (the collector's cap evicted them)."""
        codes = {NO_RANK if r is None else r for r in ranks}
        if not codes.intersection(self.ranks):
            return
        keep = [i for i, r in enumerate(self.ranks) if r not in codes]
        self.steps = array("q", map(self.steps.__getitem__, keep))
        self.ranks = array("i", map(self.ranks.__getitem__, keep))
        self.values = {k: c.take(keep) for k, c in self.values.items()}
