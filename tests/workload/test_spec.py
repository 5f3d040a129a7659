"""The workload spec carries the row in the catalog's JSON form and hands every rank a Row."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.catalog import load_catalog, row_to_dict
from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.errors import ConfigError
from perfgate.workload.spec import SCHEMA, WorkloadSpec

REPO = Path(__file__).resolve().parents[2]


def test_every_catalog_row_survives_the_spec_as_the_same_row(tmp_path: Path) -> None:
    rows = load_catalog(SHIPPED_DIR).rows
    assert len(rows) > 50
    for row in rows:
        spec = WorkloadSpec(row=row, steps=7, output_dir=str(tmp_path), overrides={"a.b": 1})
        back = WorkloadSpec.read(spec.write(tmp_path / "spec.json"))
        assert back.row == replace(row, baseline=None)  # the stored baseline stays home
        assert (back.steps, back.overrides) == (7, {"a.b": 1})
        assert back.row.gpus_per_node == row.gpus_per_node and back.row.nodes == row.nodes


def test_the_row_is_written_in_the_catalog_form_with_defaults_left_out(tmp_path: Path) -> None:
    row = load_catalog(SHIPPED_DIR).rows[0]
    data = json.loads(WorkloadSpec(row=row, steps=5, output_dir="/out").to_json())
    assert data["schema"] == SCHEMA == "perfgate.workload/2"
    assert data["row"] == {k: v for k, v in row_to_dict(row).items() if k != "baseline"}
    assert "baseline" not in data["row"]


def test_a_row_made_in_code_needs_only_the_form_of_a_row(tmp_path: Path) -> None:
    """Sites and tests run rows of their own (a stand-in model, any id): the job takes them."""
    text = json.dumps(
        {
            "schema": SCHEMA,
            "row": {
                "id": "pretrain-fake-h100-bf16-4gpu-tp1-command-ok",
                "task": "pretrain",
                "model": "fake",
                "gpu": "h100",
                "precision": "bf16",
                "num_gpus": 4,
                "gpus_per_node": 4,
                "gbs": 8,
                "mbs": 1,
                "seq_len": 128,
                "backend": "command",
            },
            "steps": 3,
            "output_dir": str(tmp_path),
        }
    )
    spec = WorkloadSpec.from_json(text, "job/spec.json")
    assert (spec.row.model, spec.row.nodes, spec.row.tasks_per_node, spec.row.tp) == (
        "fake",
        1,
        4,
        1,
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"row": {"id": "r", "task": "pretrain"}},
            "job/spec.json: row r: field 'model' is missing",
        ),
        (
            {
                "row": {
                    **{"id": "r", "task": "pretrain", "model": "m", "gpu": "h100"},
                    "precision": "bf16",
                    "num_gpus": 8,
                    "gbs": 8,
                    "mbs": 1,
                    "seq_len": "4k",
                }
            },
            "job/spec.json: row r: field 'seq_len': must be an integer, not '4k'",
        ),
        ({"schema": "perfgate.workload/1"}, "job/spec.json: field 'schema' must be "),
    ],
)
def test_a_bad_spec_is_one_line_naming_file_field_and_value(change, message) -> None:
    data = {"schema": SCHEMA, "steps": 3, "output_dir": "/out", **change}
    with pytest.raises(ConfigError) as e:
        WorkloadSpec.from_json(json.dumps(data), "job/spec.json")
    assert str(e.value).startswith(message) and "\n" not in str(e.value)
