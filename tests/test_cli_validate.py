"""`perfgate validate` checks what the suite checks before it plans a row: the rows' own
override paths too (#21 item 3: `"trainer.max_stepz": 10` validated, exit 0, while the dry
run refused it)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from perfgate import cli
from perfgate.catalog.provenance import SHIPPED_DIR

REPO = Path(__file__).resolve().parents[1]


def _rows(gpu: str) -> list[dict]:
    return copy.deepcopy(json.loads((SHIPPED_DIR / f"{gpu}.json").read_text()))


def _first(rows: list[dict], backend: str) -> dict:
    return next(r for r in rows if r.get("backend", "nemo2") == backend)


@pytest.mark.parametrize(
    ("gpu", "backend", "override", "message"),
    [
        (
            "h100",
            "nemo2",
            {"trainer.max_stepz": 10},
            "override 'trainer.max_stepz': trainer has no field 'max_stepz' (did you mean "
            "'max_steps'?)",
        ),
        ("b200", "megatron_bridge", {"model.nonsense": 1}, "model has no field 'nonsense'"),
        ("h100", "automodel", {"step_scheduler.global_batch_sizee": 1}, "global_batch_sizee"),
    ],
)
def test_a_rows_bad_override_path_fails_validation_as_the_dry_run(
    tmp_path, capsys, gpu, backend, override, message
):
    rows = _rows(gpu)
    row = _first(rows, backend)
    row["overrides"] = {**row.get("overrides", {}), **override}
    (tmp_path / f"{gpu}.json").write_text(json.dumps(rows))
    for target in (tmp_path, tmp_path / f"{gpu}.json"):
        assert cli.main(["validate", str(target)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1
        assert err.startswith(
            f"perfgate validate: error: {tmp_path / f'{gpu}.json'}: row {row['id']!r}: "
        )
        assert message in err


def test_the_stored_catalog_validates_with_its_override_paths(capsys):
    assert cli.main(["validate", str(SHIPPED_DIR), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 147
