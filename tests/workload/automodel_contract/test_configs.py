"""The generated config of every automodel row, read back by Automodel's own code."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from nemo_automodel.components.config.loader import load_yaml_config, translate_value
from nemo_automodel.components.distributed.pipelining.functional import calculate_virtual_stages
from nemo_automodel.recipes._dist_utils import parse_distributed_section

from perfgate.models import get
from perfgate.workload.automodel.config import AutomodelInputs, build_config, load_base, to_yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/workload: test_automodel
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: rowfactory
from rowfactory import as_row
from test_automodel import GOOD  # the catalog rows, shared with the unit tests


def same_but_resolved(loaded, written, where: str = "") -> None:
    """Equal data, except that each _target_ is the real object its dotted name names."""
    if isinstance(written, dict):
        assert isinstance(loaded, dict) and set(loaded) == set(written), where
        for key, value in written.items():
            if key == "_target_":
                assert callable(loaded[key]), f"{where}._target_ {value} did not resolve"
                assert value.rsplit(".", 1)[-1] == loaded[key].__name__, f"{where}: {value}"
            else:
                same_but_resolved(loaded[key], value, f"{where}.{key}")
    elif isinstance(written, str):
        assert loaded == translate_value(written), where  # Automodel reads "none" as None
    else:
        assert loaded == written, where


@pytest.mark.parametrize("row", GOOD, ids=[r["id"] for r in GOOD])
def test_automodel_loads_the_generated_yaml_of_the_row(row, tmp_path) -> None:
    cfg, _ = build_config(as_row(row), AutomodelInputs(steps=37, output_dir=str(tmp_path)))
    path = tmp_path / "automodel.yaml"
    path.write_text(to_yaml(cfg))
    loaded = load_yaml_config(str(path))
    same_but_resolved(loaded.to_dict(), yaml.safe_load(path.read_text()))
    s = loaded.step_scheduler
    lbs = row["overrides"].get("step_scheduler.local_batch_size", row["mbs"])
    assert (s.global_batch_size, s.local_batch_size, s.max_steps) == (row["gbs"], lbs, 37)
    assert loaded.dataset.seq_len == row["seq_len"] and loaded.optimizer.eps == 1e-8
    assert loaded.benchmark.peak_tflops == 989.0 and loaded.checkpoint.enabled is False
    # Automodel's own parser of the distributed section: sizes and the FSDP2 strategy.
    parsed = parse_distributed_section(loaded.distributed.to_dict())
    assert type(parsed["strategy_config"]).__name__ == "FSDP2Config"
    assert (parsed["tp_size"], parsed["pp_size"], parsed["cp_size"]) == (
        row.get("tp", 1),
        row.get("pp", 1),
        row.get("cp", 1),
    )
    assert parsed["ep_size"] == row.get("ep", 1)
    dp = row["num_gpus"] // (row.get("tp", 1) * row.get("pp", 1) * row.get("cp", 1))
    assert parsed["dp_size"] in (None, "none", dp)
    assert s.global_batch_size % (lbs * dp) == 0  # GA steps come out whole, as the recipe asserts
    if row.get("pp", 1) > 1:
        pipe = parsed["pipeline_config"]
        stages, per_rank = calculate_virtual_stages(
            get(row["model"]).num_layers,
            pipe.layers_per_stage,
            row["pp"],
            is_single_stage_schedule=False,
            round_to_pp_multiple=pipe.round_virtual_stages_to_pp_multiple,
        )
        assert per_rank == row["vp"] and stages == row["pp"] * row["vp"]


def test_a_checkout_yaml_is_the_base_and_overrides_are_checked_against_it(tmp_path) -> None:
    row = GOOD[0]
    config = row["overrides"]["config"]
    upstream = load_base(config, None)[0]
    upstream["benchmark"]["site_knob"] = 7  # only in this checkout's copy
    (tmp_path / config).parent.mkdir(parents=True)
    (tmp_path / config).write_text(yaml.safe_dump(upstream))
    inputs = AutomodelInputs(overrides={"benchmark.site_knob": 8}, automodel_root=str(tmp_path))
    cfg, source = build_config(as_row(row), inputs)
    assert source == str(tmp_path / config) and cfg["benchmark"]["site_knob"] == 8
