"""Every knob in the index of NeMo's Performance Tuning Guide (seed 002) is expressible."""

from __future__ import annotations

import re
from pathlib import Path

from perfgate.workload.env import merge_env
from perfgate.workload.nemo2.knobs import KNOBS, knob_key
from perfgate.workload.nemo2.snapshot import load, valid_paths
from perfgate.workload.overrides import check_against_snapshot, normalize_path

SEED = "seed002_tuning_knobs_index.txt"  # the guide's index, from its heading on


def index_knobs(seeds: Path) -> list[str]:
    """The lines of the guide's 'Index - List of Tuning Knobs', as keys."""
    text = (seeds / SEED).read_text()
    index = text.split("Index - List of Tuning Knobs", 1)[1]
    return sorted({knob_key(line) for line in index.splitlines() if line.strip()})


def test_the_index_is_read_whole(seeds) -> None:
    knobs = index_knobs(seeds)
    assert len(knobs) == 58  # 60 index lines, two knobs listed twice
    assert knobs[0] == "CUDA_DEVICE_MAX_CONNECTIONS"
    assert "recipe.model.config.recompute_granuality" in knobs  # the guide's own typo


def test_every_index_knob_has_a_perfgate_expression(seeds) -> None:
    missing = [k for k in index_knobs(seeds) if k not in KNOBS]
    assert missing == []


def test_every_path_knob_is_a_real_recipe_path(seeds) -> None:
    snap = load()
    pretrain = valid_paths("llama3_70b", "pretrain", snap)  # has TP-overlap userbuffers
    finetune = valid_paths("llama3_70b", "lora", snap)
    for key in index_knobs(seeds):
        knob = KNOBS[key]
        if knob.kind != "path":
            continue
        path = normalize_path(knob.expression)
        paths = finetune if path.startswith("data.packed_sequence_specs") else pretrain
        check_against_snapshot({path: 1}, paths, origin=f"knob {key}")


def test_every_env_knob_is_a_variable_name_that_reaches_the_rank(seeds) -> None:
    for key in index_knobs(seeds):
        knob = KNOBS[key]
        if knob.kind != "env":
            continue
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", knob.expression), key
        assert merge_env({}, None, None, {knob.expression: "7"})[knob.expression] == "7"


def test_misspelled_guide_names_map_to_the_real_ones() -> None:
    assert KNOBS["NVTE_FUSED_ATT"].expression == "NVTE_FUSED_ATTN"
    assert KNOBS["recipe.model.config.recompute_granuality"].expression == (
        "model.config.recompute_granularity"
    )
    assert KNOBS["recipe.trainer.use_distributed_optimizer"].expression == (
        "optim.config.use_distributed_optimizer"
    )
