"""The log formats perfgate reads: one module per format family, and their registry.

A family module (nemo2, megatron, train_step_timing, automodel, automodel_benchmark,
torchtitan) declares its record kinds, the marker bytes that find its lines, its line shapes
(gate substring, anchor regex, builder) and its formats (score, step records, derivation):
perfgate.logs.formats.base. This module orders them: the line scanner (perfgate.logs.lines),
the collector (perfgate.logs.collect) and the assembler (perfgate.logs.assemble) iterate what
it builds here. Pure stdlib (the workload imports it inside the container). Verbatim examples
of every line shape: tests/data/reference/log_formats.md.
"""

from __future__ import annotations

from perfgate.logs.formats import (
    automodel,
    automodel_benchmark,
    megatron,
    nemo2,
    torchtitan,
    train_step_timing,
)
from perfgate.logs.formats.automodel import AUTOMODEL
from perfgate.logs.formats.automodel import BAR as AM_BAR
from perfgate.logs.formats.automodel_benchmark import AM_ITER, AM_MFU, AM_SUMMARY, AM_TIME
from perfgate.logs.formats.base import (
    MAX_STEP,
    NUM,
    NUM_RE,
    ByKind,
    Derive,
    Deriver,
    Family,
    LogFormat,
    PartReport,
    Record,
    Shape,
    Span,
    number,
    rank_key,
)
from perfgate.logs.formats.megatron import MEGATRON, MEMORY, STEP_TIME
from perfgate.logs.formats.nemo2 import NEMO2
from perfgate.logs.formats.torchtitan import TITAN
from perfgate.logs.formats.train_step_timing import NEMO_DELTA, TQDM

__all__ = [
    "ALL_RANK_KINDS",
    "AM_BAR",
    "AM_ITER",
    "AM_MFU",
    "AM_SUMMARY",
    "AM_TIME",
    "AUTOMODEL",
    "FAMILIES",
    "FORMATS",
    "GATES",
    "MARKERS",
    "MAX_STEP",
    "MEGATRON",
    "MEMORY",
    "NEMO2",
    "NEMO_DELTA",
    "NUM",
    "NUM_RE",
    "REGISTRY",
    "REPORTED_KINDS",
    "STEP_TIME",
    "STEP_VALUES",
    "TITAN",
    "TQDM",
    "ByKind",
    "Derive",
    "Deriver",
    "Family",
    "LogFormat",
    "PartReport",
    "Record",
    "Shape",
    "Span",
    "markers_for",
    "number",
    "rank_key",
]

# The order a line's anchors are searched in: gate by gate (each gate where a family first
# names it), and under one gate family by family; MARKERS take the same order. Records come out
# sorted by their place on the line, so this order only decides between anchors with the same
# span (no two shapes today can have one); it is kept as the hand-written search had it.
FAMILIES: tuple[Family, ...] = (
    nemo2.FAMILY,
    megatron.FAMILY,
    train_step_timing.FAMILY,
    automodel.FAMILY,
    automodel_benchmark.FAMILY,
    torchtitan.FAMILY,
)

# detect_format names, in the order that breaks a tie in record counts.
FORMATS = (
    "megatron_bridge",
    "megatron",
    "nemo2",
    "nemo_delta_timing",
    "nemo1_tqdm",
    "automodel",
    "automodel_benchmark",
    "torchtitan",
)


def _registry(families: tuple[Family, ...], names: tuple[str, ...]) -> tuple[LogFormat, ...]:
    """The families' formats in tie-break order; every format must be named exactly once."""
    declared = {f.name: f for family in families for f in family.formats}
    if sorted(declared) != sorted(names):
        raise AssertionError(f"FORMATS {names} and the families' formats {sorted(declared)} differ")
    return tuple(declared[name] for name in names)


REGISTRY: tuple[LogFormat, ...] = _registry(FAMILIES, FORMATS)


def _gates(families: tuple[Family, ...]) -> tuple[tuple[str, tuple[Shape, ...]], ...]:
    """Each gate substring with the shapes it admits, in anchor search order."""
    by_gate: dict[str, list[Shape]] = {}
    for family in families:
        for shape in family.shapes:
            by_gate.setdefault(shape.gate, []).append(shape)
    return tuple((gate, tuple(shapes)) for gate, shapes in by_gate.items())


# Precomputed for the per-line loop: one `in` test per gate, regexes only behind a hit.
GATES = _gates(FAMILIES)
# Kinds every rank may print: the collector keeps only the lowest ranks' records of these.
ALL_RANK_KINDS = frozenset(s.kind for family in FAMILIES for s in family.shapes if s.all_ranks)
# Kinds whose values are run-level figures, reported as logged whatever the format.
REPORTED_KINDS = tuple(kind for family in FAMILIES for kind in family.reported)
# Per-step values logged on lines of their own, filling in any format's steps.
STEP_VALUES = tuple(f.step_values for f in FAMILIES if f.step_values is not None)

# Byte strings of which every line holding a record contains at least one; lines without
# any are skipped before a regex runs (NCCL INFO floods are most of an all-rank log).
MARKERS: tuple[bytes, ...] = tuple(dict.fromkeys(m for f in FAMILIES for m in f.markers))
# The markers a log needs once it is known to hold records of a kind: the scan narrows to
# them after the first records (fewer byte searches over the rest of a multi-GB file).
_MARKERS_OF_KIND: dict[str, tuple[bytes, ...]] = {
    kind: family.markers for family in FAMILIES for kind in family.kinds
}


def markers_for(kinds: set[str]) -> tuple[bytes, ...]:
    """The marker strings needed to find every record of the given kinds."""
    wanted = {m for k in kinds for m in _MARKERS_OF_KIND.get(k, MARKERS)}
    return tuple(m for m in MARKERS if m in wanted)
