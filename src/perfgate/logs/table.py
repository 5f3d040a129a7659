"""Columns of steps and records: a million-step log costs tens of bytes per step, not objects.

A Step or Record object with its dict of values costs about 0.7 kB; a 4-million-step
pretraining log held that way needed 2.9 GB. Here each value is one slot of an array
(array('d') for values, array('q') for step numbers), with a bytearray marking which slots
hold a logged value where some do not. Step and Record objects are built only when a caller
indexes or iterates. Step itself is defined here (perfgate.logs.series re-exports it); the
records' columns are perfgate.logs.records. Pure stdlib (the workload imports it inside the
container).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

# Step's optional float fields, in the order Step declares them.
STEP_FIELDS = (
    "tflops_per_gpu",
    "tokens_per_s_per_gpu",
    "mem_allocated_gib",
    "mem_peak_gib",
    "loss",
    "grad_norm",
    "mem_reserved_gib",
    "mfu",
)
NO_RANK = -1  # the rank slot of an unlabeled line


@dataclass(frozen=True)
class Step:
    """One training step as logged. step is 0-based (NeMo 2 numbering) whatever the format."""

    step: int
    step_time_s: float
    tflops_per_gpu: float | None = None  # as logged, in the logger's own FLOPs convention
    tokens_per_s_per_gpu: float | None = None
    mem_allocated_gib: float | None = None
    mem_peak_gib: float | None = None  # peak allocated by tensors (torch max_memory_allocated)
    loss: float | None = None
    grad_norm: float | None = None
    mem_reserved_gib: float | None = None  # peak reserved by the caching allocator
    mfu: float | None = None  # as logged (fraction), in the logger's own FLOPs convention
    rank: int | None = None  # rank label of the line this record was read from, if any

    @property
    def peak_memory_gib(self) -> float | None:
        """Peak GPU memory as logged: the allocated peak, else the reserved one (TorchTitan)."""
        return self.mem_peak_gib if self.mem_peak_gib is not None else self.mem_reserved_gib


class Column:
    """Floats, one slot per row; mask (None: every slot holds a value) marks the logged ones."""

    __slots__ = ("mask", "values")

    def __init__(self, values: array | None = None, mask: bytearray | None = None) -> None:
        self.values = values if values is not None else array("d")
        self.mask = mask

    @classmethod
    def missing(cls, n: int) -> Column:
        """A column of n slots without a value (no mask while it has no slot)."""
        return cls(array("d", bytes(8 * n)), bytearray(n) if n else None)

    def append(self, value: float | None) -> None:
        """One more slot; None: nothing logged there."""
        if value is None:
            if self.mask is None:
                self.mask = bytearray(b"\x01") * len(self.values)
            self.mask.append(0)
            self.values.append(0.0)
            return
        self.values.append(value)
        if self.mask is not None:
            self.mask.append(1)

    def get(self, i: int) -> float | None:
        """The value of slot i, or None."""
        return self.values[i] if self.mask is None or self.mask[i] else None

    def take(self, index: Sequence[int]) -> Column:
        """The slots at these positions, in this order."""
        values = array("d", map(self.values.__getitem__, index))
        mask = None if self.mask is None else bytearray(map(self.mask.__getitem__, index))
        return Column(values, mask)

    def extend(self, other: Column, n_self: int) -> None:
        """Append other's slots (self holds n_self slots)."""
        if other.mask is not None and self.mask is None:
            self.mask = bytearray(b"\x01") * n_self
        self.values.extend(other.values)
        if self.mask is not None:
            self.mask.extend(other.mask if other.mask is not None else b"\x01" * len(other.values))

    def any(self) -> bool:
        """True when some slot holds a value."""
        return bool(self.values) and (self.mask is None or 1 in self.mask)

    def first_not_finite(self) -> int | None:
        """The first slot whose logged value is NaN or infinite, or None."""
        if self.mask is None and math.isfinite(sum(self.values)):  # sum: inf/NaN, never raises
            return None
        for i, x in enumerate(self.values):
            if x - x != 0 and (self.mask is None or self.mask[i]):  # NaN or +-inf
                return i
        return None


class StepTable(Sequence[Step]):
    """A run's steps as columns, indexable and iterable as Step objects (built on demand)."""

    __slots__ = ("fields", "numbers", "ranks", "times")

    def __init__(
        self,
        numbers: array | None = None,
        times: array | None = None,
        fields: Mapping[str, Column] | None = None,
        ranks: array | None = None,
    ) -> None:
        self.numbers = numbers if numbers is not None else array("q")
        self.times = times if times is not None else array("d")
        # Only the fields some step has; every column has len(numbers) slots.
        self.fields = {k: c for k, c in (fields or {}).items() if c.any()}
        self.ranks = ranks if ranks is not None else array("i", [NO_RANK]) * len(self.numbers)
        if not (len(self.numbers) == len(self.times) == len(self.ranks)):
            raise ValueError("StepTable columns differ in length")

    @classmethod
    def from_steps(cls, steps: Iterable[Step]) -> StepTable:
        """The table of Step objects, in the given order."""
        steps = list(steps)
        fields: dict[str, Column] = {}
        for name in STEP_FIELDS:
            if any(getattr(s, name) is not None for s in steps):
                col = fields[name] = Column()
                for s in steps:
                    col.append(getattr(s, name))
        return cls(
            array("q", [s.step for s in steps]),
            array("d", [s.step_time_s for s in steps]),
            fields,
            array("i", [NO_RANK if s.rank is None else s.rank for s in steps]),
        )

    def __len__(self) -> int:
        return len(self.numbers)

    @overload
    def __getitem__(self, i: int) -> Step: ...
    @overload
    def __getitem__(self, i: slice) -> StepTable: ...
    def __getitem__(self, i: int | slice) -> Step | StepTable:
        if isinstance(i, slice):
            return self.take(range(len(self))[i])
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("step index out of range")
        rank = self.ranks[i]
        kwargs = {name: col.get(i) for name, col in self.fields.items()}
        return Step(
            self.numbers[i], self.times[i], rank=None if rank == NO_RANK else rank, **kwargs
        )

    def __iter__(self) -> Iterator[Step]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"StepTable({len(self)} steps)"

    def take(self, index: Sequence[int]) -> StepTable:
        """The steps at these positions, in this order."""
        return StepTable(
            array("q", map(self.numbers.__getitem__, index)),
            array("d", map(self.times.__getitem__, index)),
            {k: c.take(index) for k, c in self.fields.items()},
            array("i", map(self.ranks.__getitem__, index)),
        )

    def renumbered(self, offset: int) -> StepTable:
        """The same steps with offset added to every step number."""
        if not offset:
            return self
        numbers = array("q", [s + offset for s in self.numbers])
        return StepTable(numbers, self.times, self.fields, self.ranks)

    def column(self, name: str) -> list[float | None]:
        """One optional field of every step (None where not logged)."""
        col = self.fields.get(name)
        if col is None:
            return [None] * len(self)
        if col.mask is None:
            return col.values.tolist()
        return [x if m else None for x, m in zip(col.values, col.mask, strict=True)]

    def max_of(self, name: str) -> float | None:
        """The largest logged value of a field, or None."""
        col = self.fields.get(name)
        if col is None:
            return None
        if col.mask is None:
            return max(col.values)
        return max((x for x, m in zip(col.values, col.mask, strict=True) if m), default=None)


def concat(tables: Sequence[StepTable]) -> StepTable:
    """The tables one after the other."""
    if len(tables) == 1:
        return tables[0]
    numbers, times, ranks = array("q"), array("d"), array("i")
    fields: dict[str, Column] = {}
    for t in tables:
        n = len(numbers)
        for name in {*fields, *t.fields}:
            if name not in fields:
                fields[name] = Column.missing(n)
            fields[name].extend(t.fields.get(name) or Column.missing(len(t)), n)
        numbers.extend(t.numbers)
        times.extend(t.times)
        ranks.extend(t.ranks)
    return StepTable(numbers, times, fields, ranks)


def as_table(steps: Any) -> StepTable:
    """steps as a StepTable (a table is kept as it is)."""
    return steps if isinstance(steps, StepTable) else StepTable.from_steps(steps)
