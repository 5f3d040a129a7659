"""The configs the backend builds are accepted by Megatron-Core 0.19, and the calls it makes
only on a GPU (DDP, the optimizer, the schedules) match the installed signatures."""

from __future__ import annotations

import dataclasses
import inspect
import json
from importlib import metadata
from pathlib import Path

import pytest
from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
from megatron.core.models.gpt import GPTModel
from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer
from megatron.core.pipeline_parallel import get_forward_backward_func
from megatron.core.transformer.transformer_config import TransformerConfig

from perfgate import catalog
from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.errors import ConfigError
from perfgate.workload.megatron_core.configs import (
    FIELDS,
    config_fields,
    ddp_kwargs,
    installed_fields,
    optimizer_kwargs,
    transformer_kwargs,
)
from perfgate.workload.megatron_core.face import check_overrides
from perfgate.workload.megatron_core.plan import settings_for
from perfgate.workload.megatron_core.trainer import (
    gpt_kwargs,
    init_distributed,
    resolve,
    schedule_kwargs,
)
from perfgate.workload.runtime import RankInfo

REPO = Path(__file__).resolve().parents[3]
ROW = "pretrain-llama32_1b-h100-bf16-1gpu-tp1-megatron_core"
B = {
    "model.recompute_granularity": "full",
    "model.recompute_method": "block",
    "model.recompute_num_layers": 5,
}


def row(**changes):
    base = catalog.load_catalog(SHIPPED_DIR).get(ROW)
    return dataclasses.replace(base, **changes)


@pytest.mark.parametrize(
    ("changes", "overrides"),
    [({}, {}), ({}, B), ({"tp": 2, "num_gpus": 2}, {}), ({"pp": 2, "num_gpus": 2}, {})],
)
def test_every_config_is_accepted_by_megatron_core(changes, overrides):
    s = settings_for(row(**changes), overrides)
    config = TransformerConfig(**resolve(transformer_kwargs(s)))
    assert (config.num_layers, config.hidden_size, config.kv_channels) == (16, 2048, 64)
    assert config.sequence_parallel == (s.tp > 1)
    assert config.recompute_num_layers == overrides.get("model.recompute_num_layers")
    opt = OptimizerConfig(**resolve(optimizer_kwargs(s)))
    ddp = DistributedDataParallelConfig(**ddp_kwargs(s))
    assert opt.bf16 and ddp.grad_reduce_in_fp32
    assert opt.use_distributed_optimizer == ddp.use_distributed_optimizer


def test_the_field_snapshot_is_the_installed_megatron_cores():
    version = metadata.version("megatron-core")
    assert json.loads(FIELDS.read_text())["megatron_core"] == version, (
        "refresh src/perfgate/workload/megatron_core/fields.json: python -c 'from "
        "perfgate.workload.megatron_core.configs import write_fields; write_fields()'"
    )
    assert config_fields(version) == installed_fields()
    assert config_fields("0.0.0") == installed_fields()  # another version: read from the classes


def test_a_misspelt_field_is_named_with_the_closest_one():
    with pytest.raises(ConfigError, match=r"has no field 'recompute_granularty' \(did you mean"):
        check_overrides(row(), {"model.recompute_granularty": "full"}, use_framework=True)
    assert "Megatron-Core 0.19.2" in check_overrides(row(), B, use_framework=True)


def test_the_gpu_only_calls_match_the_installed_signatures(one_rank):
    s = settings_for(row(), {"device": "cpu"})
    init_distributed(s, RankInfo(0, 1, 0, "single"))
    config = TransformerConfig(**resolve(transformer_kwargs(s)))
    inspect.signature(GPTModel).bind(**gpt_kwargs(s, config))
    ddp_config = DistributedDataParallelConfig(**ddp_kwargs(s))
    inspect.signature(DistributedDataParallel).bind(
        config=config, ddp_config=ddp_config, module=object()
    )
    inspect.signature(get_megatron_optimizer).bind(OptimizerConfig(), [object()])
    for pp in (1, 2):  # the no-pipelining and the 1F1B schedule
        inspect.signature(get_forward_backward_func(pp_size=pp)).bind(
            forward_step_func=print,
            data_iterator=iter(()),
            model=[object()],
            forward_only=False,
            **schedule_kwargs(s),
        )
    # What the trainer wires into the model config for the schedules.
    wired = ("grad_scale_func", "finalize_model_grads_func", "no_sync_func", "grad_sync_func")
    assert set(wired) | {"param_sync_func"} <= {f.name for f in dataclasses.fields(config)}
