"""The workload spec: the JSON file the launcher writes and every rank reads.

It never holds secret values: secrets reach the ranks through the job's environment only.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from perfgate.errors import ConfigError

SCHEMA = "perfgate.workload/1"


@dataclass(frozen=True)
class WorkloadSpec:
    """One workload launch: the row (as its JSON dict), steps, overrides and where to write."""

    row: dict[str, Any]
    steps: int
    output_dir: str
    overrides: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # non-secret env, for the record
    label: str = "baseline"
    image: str | None = None
    finetune_data: str | None = None
    mock_data: bool = False
    command: list[str] | None = None  # backend "command": argv run on every rank

    def to_json(self) -> str:
        """Serialize with a schema tag."""
        return json.dumps({"schema": SCHEMA, **asdict(self)}, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, origin: str = "<spec>") -> WorkloadSpec:
        """Parse; a one-line error names the origin and what is wrong."""
        try:
            data = json.loads(text)
        except ValueError as e:
            raise ConfigError(f"{origin}: not JSON ({e})") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ConfigError(f"{origin}: field 'schema' must be {SCHEMA!r}")
        data.pop("schema")
        try:
            return cls(**data)
        except TypeError as e:
            raise ConfigError(f"{origin}: {e}") from None

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write to path (creating folders) and return it."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json())
        return path

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> WorkloadSpec:
        """Read a spec file."""
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise ConfigError(f"{path}: cannot read workload spec ({e.strerror})") from None
        return cls.from_json(text, origin=str(path))
