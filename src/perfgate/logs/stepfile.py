"""steps.json: what rank 0 of a workload writes as each step finishes, and launch reads back.

Pure stdlib: it is imported inside the container by the workload and outside by launch.
Writes are atomic (temp file + rename) so a reader never sees half a file, and a job killed
mid-run leaves the steps it finished.

Read back, it is outside input (a replayed folder can hold any file): every field is checked
against its declared type (perfgate.typedjson; a NaN step time stays, it is a finding), each
step's numbers too, and node names go through the one grammar (perfgate.nodenames): a name
outside it is dropped with one warning naming the file, never split or expanded.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from perfgate import atomic, inputs, nodenames, notices, typedjson
from perfgate.errors import PerfgateError
from perfgate.logs.series import Step, StepSeries, invalid
from perfgate.logs.table import as_table

SCHEMA = "perfgate.steps/1"
MAX_BYTES = 2 << 30  # a million steps with every field is about 300 MB
_NUMBER = (int, float)


@dataclass
class StepRecord:
    """The live record of one workload launch (mutable: rank 0 appends as it runs)."""

    row_id: str
    backend: str
    status: str = "starting"  # starting, running, completed, failed
    steps: list[dict[str, Any]] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    nodes: list[str] = field(default_factory=list)
    world_size: int | None = None
    image: str | None = None
    mock_data: bool = True
    flops_convention: str | None = None
    error: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    log_path: str | None = None  # the log the steps were parsed from (command backend)
    log_format: str | None = None  # its format as perfgate.logs detected it
    log_interval: int = 1  # >1: each step value is an average over that many steps
    env: dict[str, str] = field(default_factory=dict)  # variables the workload set (no secrets)
    peak_memory_gib_per_rank: list[float] = field(default_factory=list)  # index = global rank

    def to_series(self, source: str = "steps.json") -> StepSeries:
        """The recorded steps as a StepSeries (format 'perfgate')."""
        fields = set(Step.__dataclass_fields__)
        steps = as_table(Step(**{k: v for k, v in s.items() if k in fields}) for s in self.steps)
        # A NaN or inf step time, grad norm or loss anywhere, step 0 included, is a finding:
        # the statistics would drop a NaN at step 0 as warm-up and pass the run.
        bad = invalid(steps, {}, {})
        return StepSeries(
            format="perfgate",
            steps=steps,
            source_files=(source,),
            log_interval=self.log_interval,
            invalid_reason=bad[1] if bad else None,
            invalid_cause=bad[0] if bad else None,
        )


def write(path: str | os.PathLike[str], record: StepRecord) -> None:
    """Atomically replace path with the record."""
    atomic.write_json(path, {"schema": SCHEMA, **asdict(record)}, allow_nan=True)


def read(path: str | os.PathLike[str]) -> StepRecord:
    """Read a steps.json; a clear one-line error names the file (and field) when it is not
    one; node names outside the grammar are dropped with a warning."""
    path = Path(path)
    try:
        data = json.loads(inputs.read_text(path, PerfgateError, max_bytes=MAX_BYTES,
                                           what="steps.json"))  # fmt: skip
    except FileNotFoundError:
        raise PerfgateError(f"{path}: no steps file (the workload never started writing)") from None
    except (OSError, ValueError, RecursionError) as e:
        raise PerfgateError(f"{path}: not a readable steps.json ({e})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise PerfgateError(
            f"{path}: field 'schema' is {typedjson.shown(data.get('schema'))}, expected {SCHEMA!r}"
            if isinstance(data, dict)
            else f"{path}: not a JSON object"
        )
    data.pop("schema")
    nodes = data.pop("nodes", [])
    steps = data.get("steps", [])
    data["steps"] = []  # checked below, by the fast loop
    try:
        typedjson.check(data, StepRecord, finite=False)
    except typedjson.Mismatch as e:
        raise PerfgateError(f"{path}: {e}") from None
    if data.get("log_interval", 1) < 1:
        raise PerfgateError(f"{path}: field 'log_interval': expected at least 1")
    data["steps"] = _steps(steps, path)
    data["nodes"] = list(nodenames.names(nodes, f"{path}: field 'nodes'", notices.warn))
    known = set(StepRecord.__dataclass_fields__)
    return StepRecord(**{k: v for k, v in data.items() if k in known})


_OPTIONAL = frozenset(Step.__dataclass_fields__) - {"step", "step_time_s", "rank"}


def _steps(steps: object, path: Path) -> list[dict[str, Any]]:
    """The steps, each a dict with an integer step, a number step_time_s and numbers or null
    in its other known fields (a loop without allocation: a run may have a million)."""
    if not isinstance(steps, list):
        raise PerfgateError(f"{path}: field 'steps': expected a list, not {typedjson.shown(steps)}")
    for i, s in enumerate(steps):
        if type(s) is not dict:
            raise PerfgateError(f"{path}: field 'steps[{i}]': expected an object")
        if type(s.get("step")) is not int or type(s.get("step_time_s")) not in _NUMBER:
            raise PerfgateError(
                f"{path}: field 'steps[{i}]': expected an integer step and a number step_time_s"
            )
        rank = s.get("rank")
        if rank is not None and type(rank) is not int:
            raise PerfgateError(f"{path}: field 'steps[{i}].rank': expected an integer")
        if len(s) > 2:
            for k in _OPTIONAL.intersection(s):
                v = s[k]
                if v is not None and type(v) not in _NUMBER:
                    raise PerfgateError(
                        f"{path}: field 'steps[{i}].{k}': expected a number or null, not "
                        f"{typedjson.shown(v)}"
                    )
    return steps
