"""The checked-in snapshot of every settable ConfigContainer path, for login nodes without
Megatron-Bridge (its transformer_engine import needs CUDA).

The Bridge contract suite (tests/workload/bridge_contract, in .venv-bridge) builds the
ConfigContainer of every megatron_bridge row with perfgate's own build_config, walks each
(walk: every dataclass field and settable property, into the config objects Bridge defines),
and compares the result with paths.json; it fails when they differ, so the snapshot always
matches the pinned Bridge (PERFGATE_WRITE_SNAPSHOT=1 writes it instead). Paths are kept per
Bridge task and model ("pretrain:llama3_70b"), the union over the rows of that pair, with
what all pairs share under "common"; a model no row has is checked against every pair's.

On a login node an override path must be one of the row's paths; below a field whose value
is None in every built row (a section the recipe leaves unset), of different classes in
different rows ("various": the TP overlap configs) or a dict (env_vars, whose keys may be
added) it is left to the job, which sets it on the real objects.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from perfgate.catalog.rows import Row
from perfgate.workload.bridge.plan import bridge_task, field_names
from perfgate.workload.overrides import check_against_snapshot, split_common

SNAPSHOT = Path(__file__).with_name("paths.json")
VARIOUS = "various"  # a path whose value is of different classes in the rows of a pair
OPEN_TYPES = ("NoneType", "dict", VARIOUS)  # the job checks below; a dict's keys may be added
_NOT_WALKED = ("ModuleSpec",)  # layer specs: classes and submodules, not settings


def key(row: Row) -> str:
    """The snapshot's key of a row: Bridge task and model ("peft:llama3_70b")."""
    return f"{bridge_task(row)}:{row.model}"


def walk(cfg: Any, prefix: str = "", seen: set[int] | None = None) -> dict[str, str]:
    """Every settable path of a built config object -> the type name of its value."""
    seen = set() if seen is None else seen
    seen.add(id(cfg))
    out: dict[str, str] = {}
    for name in sorted(field_names(cfg)):
        if name.startswith("_"):  # Bridge's private bookkeeping, not a setting
            continue
        try:
            value = getattr(cfg, name)
        except Exception:  # a property that needs what a CPU build lacks: still settable
            value = None
        path = f"{prefix}.{name}" if prefix else name
        out[path] = type(value).__name__
        nested = dataclasses.is_dataclass(value) and not isinstance(value, type)
        ours = type(value).__module__.startswith("megatron.")
        if nested and ours and type(value).__name__ not in _NOT_WALKED and id(value) not in seen:
            out.update(walk(value, path, seen))
    return out


def _merge(into: dict[str, str], paths: Mapping[str, str]) -> None:
    for path, kind in paths.items():
        old = into.get(path)
        # A field None in one row and a config object in another: the object's fields count.
        # Objects of two classes (TP overlap configs differ by GPU): the job checks below.
        if old is None or old == "NoneType":
            into[path] = kind
        elif kind not in (old, "NoneType"):
            into[path] = VARIOUS


def generate(rows: Iterable[Row], build: Callable[[Row], Any | None]) -> dict[str, Any]:
    """The snapshot of the rows' configs; build(row) is the row's ConfigContainer, or None
    for a row this Bridge cannot build (its pair is kept if another row of it builds)."""
    per_key: dict[str, dict[str, str]] = {}
    for row in rows:
        cfg = build(row)
        if cfg is not None:
            _merge(per_key.setdefault(key(row), {}), walk(cfg))
    common, own = split_common(per_key)
    return {
        "versions": {d: metadata.version(d) for d in ("megatron-bridge", "megatron-core")},
        "common": common,
        "configs": own,
    }


@functools.lru_cache(maxsize=1)
def load() -> dict[str, Any]:
    """The checked-in snapshot (read once per process)."""
    return json.loads(SNAPSHOT.read_text())


def valid_paths(row: Row, snapshot: dict[str, Any] | None = None) -> dict[str, str]:
    """Settable paths of the row's ConfigContainer (every pair's, for a pair none has)."""
    snap = snapshot or load()
    own = snap["configs"].get(key(row))
    if own is not None:
        return {**snap["common"], **own}
    out = dict(snap["common"])
    for paths in snap["configs"].values():
        _merge(out, paths)
    return out


def check(merged: Mapping[str, Any], row: Row, origin: str) -> str:
    """Raise a one-line ConfigError for the first path the row's ConfigContainer lacks;
    return how the check was made."""
    snap = load()
    check_against_snapshot(merged, valid_paths(row, snap), origin, open_types=OPEN_TYPES)
    return f"checked against the snapshot of Megatron-Bridge {snap['versions']['megatron-bridge']}"


def write(snapshot: Mapping[str, Any], path: Path = SNAPSHOT) -> None:
    """Write a snapshot as the checked-in file (the contract suite, when asked)."""
    path.write_text(json.dumps(snapshot, indent=0, sort_keys=False) + "\n")
