"""The log formats perfgate reads: record kinds, the marker strings that find them, Record."""

from __future__ import annotations

from perfgate.logs.formats.base import (
    AM_ITER,
    AM_MFU,
    AM_SUMMARY,
    AM_TIME,
    AUTOMODEL,
    MARKERS,
    MAX_STEP,
    MEGATRON,
    MEMORY,
    NEMO2,
    NEMO_DELTA,
    NUM,
    NUM_RE,
    STEP_TIME,
    TITAN,
    TQDM,
    Record,
    markers_for,
    number,
)

__all__ = [
    "AM_ITER",
    "AM_MFU",
    "AM_SUMMARY",
    "AM_TIME",
    "AUTOMODEL",
    "MARKERS",
    "MAX_STEP",
    "MEGATRON",
    "MEMORY",
    "NEMO2",
    "NEMO_DELTA",
    "NUM",
    "NUM_RE",
    "STEP_TIME",
    "TITAN",
    "TQDM",
    "Record",
    "markers_for",
    "number",
]
