"""The checked-in path snapshot and the knob map are current for the installed NeMo."""

from __future__ import annotations

import json
from pathlib import Path

from contract_rows import contract_rows

from perfgate.workload.describe import describe
from perfgate.workload.nemo2.knobs import KNOBS
from perfgate.workload.nemo2.recipe import RecipeInputs, build_recipe
from perfgate.workload.nemo2.snapshot import SNAPSHOT, generate
from perfgate.workload.overrides import normalize_path
from perfgate.workload.validate import check_overrides


def test_checked_in_snapshot_matches_the_installed_nemo() -> None:
    fresh = json.loads(json.dumps(generate(), sort_keys=True))
    stored = json.loads(Path(SNAPSHOT).read_text())
    assert fresh == stored, (
        "nemo2/paths.json is stale: run `.venv-nemo/bin/python -m "
        "perfgate.workload.nemo2.snapshot --write` and commit it"
    )


def test_every_path_knob_applies_to_a_real_recipe() -> None:
    pretrain = next(r for r in contract_rows() if r.model == "llama3_70b" and r.task == "pretrain")
    lora = next(r for r in contract_rows() if r.task == "lora")
    for key, knob in KNOBS.items():
        if knob.kind != "path":
            continue
        path = normalize_path(knob.expression)
        row = lora if path.startswith("data.packed_sequence_specs") else pretrain
        recipe = build_recipe(row, RecipeInputs(overrides={path: 1}))
        node = recipe
        for seg in path.split(".")[:-1]:
            node = (
                next(c for c in node if c.__fn_or_cls__.__name__ == seg)
                if isinstance(node, list)
                else getattr(node, seg)
            )
        assert getattr(node, path.split(".")[-1]) == 1, key


def test_login_node_check_agrees_with_nemo() -> None:
    row = contract_rows()[1]
    assert check_overrides(row, {"model.config.enable_cuda_graph": True}, use_nemo=True) == (
        "checked by building the recipe with the installed NeMo"
    )


def test_describe_renders_nemo_yaml_and_the_diff() -> None:
    row = contract_rows()[0]
    text = describe(row, {"model.config.enable_cuda_graph": True}, steps=50)
    assert "_target_: nemo.collections.llm.api.pretrain" in text
    assert "+    enable_cuda_graph: true" in text
    assert "-  global_batch_size: 512" in text and "+  global_batch_size: 128" in text
