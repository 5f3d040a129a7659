"""steps.json: what rank 0 of a workload writes as each step finishes, and launch reads back.

Pure stdlib: it is imported inside the container by the workload and outside by launch.
Writes are atomic (temp file + rename) so a reader never sees half a file, and a job killed
mid-run leaves the steps it finished.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from perfgate import atomic, inputs
from perfgate.errors import PerfgateError
from perfgate.logs.series import Step, StepSeries, invalid
from perfgate.logs.table import as_table

SCHEMA = "perfgate.steps/1"


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
    """Read a steps.json; a clear one-line error names the file when it is not one."""
    path = Path(path)
    try:
        data = json.loads(inputs.read_text(path))
    except FileNotFoundError:
        raise PerfgateError(f"{path}: no steps file (the workload never started writing)") from None
    except (OSError, ValueError) as e:
        raise PerfgateError(f"{path}: not a readable steps.json ({e})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise PerfgateError(
            f"{path}: field 'schema' is {data.get('schema')!r}, expected {SCHEMA!r}"
            if isinstance(data, dict)
            else f"{path}: not a JSON object"
        )
    data.pop("schema")
    known = set(StepRecord.__dataclass_fields__)
    try:
        return StepRecord(**{k: v for k, v in data.items() if k in known})
    except TypeError as e:
        raise PerfgateError(f"{path}: {e}") from None
