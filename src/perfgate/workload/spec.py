"""The workload spec: the JSON file the launcher writes and every rank reads.

The row travels in the catalog's own JSON form (perfgate.catalog.schema) and every rank reads
it back into a Row. The spec never holds secret values: secrets reach the ranks through the
job's environment only.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from perfgate import inputs
from perfgate.catalog.rows import Row
from perfgate.catalog.schema import row_from_dict, row_to_dict
from perfgate.errors import ConfigError

SCHEMA = "perfgate.workload/2"  # 2: the row in catalog.schema's form (1: dataclasses.asdict)


@dataclass(frozen=True)
class WorkloadSpec:
    """One workload launch: the row, steps, overrides and where to write."""

    row: Row
    steps: int
    output_dir: str
    overrides: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # non-secret env, for the record
    label: str = "baseline"
    image: str | None = None
    finetune_data: str | None = None
    mock_data: bool = False
    command: list[str] | None = None  # backend "command": argv run on every rank

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain JSON data (the stored baseline is not the workload's)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["row"] = row_to_dict(replace(self.row, baseline=None))
        return data

    def to_json(self) -> str:
        """Serialize with a schema tag."""
        return json.dumps({"schema": SCHEMA, **self.to_dict()}, indent=1, sort_keys=True)

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
        if "row" not in data:
            raise ConfigError(f"{origin}: field 'row' is missing")
        # The launcher checked the row against the catalog's rules; here only its form.
        data["row"] = row_from_dict(data["row"], origin, rules=False)
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
            text = inputs.read_text(path, ConfigError)
        except OSError as e:
            raise ConfigError(f"{path}: cannot read workload spec ({e.strerror})") from None
        return cls.from_json(text, origin=str(path))
