"""Build the nemo2 recipe of every row with the real NeMo and check it says what the row says."""

from __future__ import annotations

from dataclasses import replace

import fiddle as fdl
import pytest
from contract_rows import contract_rows
from nemo_run.core.serialization.zlib_json import ZlibJSONSerializer

from perfgate.errors import ConfigError
from perfgate.workload.nemo2.models import NEMO2_MODELS
from perfgate.workload.nemo2.recipe import RecipeInputs, build_recipe

ROWS = contract_rows()
# Catalog rows the pinned NeMo cannot build as written (id -> why): strict xfail, so a fix
# is noticed. Empty while every row builds.
KNOWN_ROW_PROBLEMS: dict[str, str] = {}
FP8_RECIPE = {"delayed": "delayed", "current_scaling": "tensorwise", None: "delayed"}


def names(callbacks) -> list[str]:
    return [c.__fn_or_cls__.__name__ for c in callbacks]


@pytest.mark.parametrize(
    "row",
    [
        pytest.param(
            r,
            marks=pytest.mark.xfail(
                reason=KNOWN_ROW_PROBLEMS[r.id], strict=True, raises=ConfigError
            ),
        )
        if r.id in KNOWN_ROW_PROBLEMS
        else r
        for r in ROWS
    ],
    ids=[r.id for r in ROWS],
)
def test_recipe_matches_the_row(row) -> None:
    recipe = build_recipe(row, RecipeInputs(steps=37))
    s, t, d = recipe.trainer.strategy, recipe.trainer, recipe.data
    nodes = max(1, row.num_gpus // row.gpus_per_node)
    assert (t.num_nodes, t.devices) == (nodes, min(row.num_gpus, row.gpus_per_node))
    assert t.num_nodes * t.devices == row.num_gpus
    assert s.tensor_model_parallel_size == row.tp
    assert s.pipeline_model_parallel_size == row.pp
    assert s.context_parallel_size == row.cp
    assert s.virtual_pipeline_model_parallel_size == (None if row.vp in (None, 1) else row.vp)
    assert s.expert_model_parallel_size == row.ep
    assert s.expert_tensor_parallel_size == row.etp
    assert s.sequence_parallel is (row.tp > 1)
    assert (d.global_batch_size, d.micro_batch_size) == (row.gbs, row.mbs)
    assert d.seq_length == row.seq_len and recipe.model.config.seq_length == row.seq_len
    assert (t.max_steps, t.val_check_interval, t.limit_val_batches) == (37, 37, 0)
    assert t.log_every_n_steps == 1 and t.enable_checkpointing is False
    assert recipe.log.ckpt is None and recipe.log.tensorboard is None and t.logger is False
    plugin = t.plugins
    assert plugin.__fn_or_cls__.__name__ == "MegatronMixedPrecision"
    assert plugin.grad_reduce_in_fp32 is False
    if row.precision == "bf16":
        assert plugin.fp8 is None and recipe.optim.config.use_precision_aware_optimizer is True
    elif row.precision == "fp8":
        assert plugin.fp8 == "hybrid"
        assert plugin.fp8_recipe == FP8_RECIPE[row.fp8_recipe]
    else:
        assert plugin.fp8_recipe == "mxfp8"
    cbs = names(t.callbacks)
    assert cbs[0] == "TimingCallback"
    if row.task == "pretrain":
        assert "FLOPsMeasurementCallback" in cbs
        flops = t.callbacks[cbs.index("FLOPsMeasurementCallback")]
        assert flops.model_name == NEMO2_MODELS[row.model].flops_name
        assert d.__fn_or_cls__.__name__ == "MockDataModule"
        assert d.num_train_samples == 37 * row.gbs
        assert d.tokenizer.vocab_size == NEMO2_MODELS[row.model].vocab_size
        assert d.tokenizer.library == "null"
    else:
        assert "FLOPsMeasurementCallback" not in cbs  # NeMo's FLOPs callback refuses PEFT
        assert d.__fn_or_cls__.__name__ == "SquadDataModule"
        assert d.packed_sequence_specs.packed_sequence_size == row.seq_len
        assert (recipe.peft is not None) is (row.task == "lora")
    if row.fsdp:
        assert s.fsdp == "megatron"
        assert s.ddp.data_parallel_sharding_strategy == "optim_grads_params"
    ser = ZlibJSONSerializer()
    assert ser.deserialize(ser.serialize(recipe)) == recipe  # what NeMo-Run ships to a job


def test_every_catalog_model_has_a_recipe_module() -> None:
    import importlib

    for model in NEMO2_MODELS.values():
        module = importlib.import_module(f"nemo.collections.llm.recipes.{model.recipe}")
        assert callable(module.pretrain_recipe)


def test_cuda_graph_row_override_sets_what_nvidia_sets() -> None:
    row = replace(ROWS[0], overrides={"model.config.enable_cuda_graph": True})
    recipe = build_recipe(row)
    assert recipe.model.config.enable_cuda_graph is True
    assert recipe.trainer.strategy.use_te_rng_tracker is True


def test_user_override_wins_over_row_override() -> None:
    row = replace(ROWS[0], overrides={"callbacks.GarbageCollectionCallback.gc_interval_train": 7})
    recipe = build_recipe(
        row,
        RecipeInputs(
            overrides={"trainer.callbacks.GarbageCollectionCallback.gc_interval_train": "9"}
        ),
    )
    gc = next(
        c
        for c in recipe.trainer.callbacks
        if c.__fn_or_cls__.__name__ == "GarbageCollectionCallback"
    )
    assert gc.gc_interval_train == 9


def test_an_override_adds_nsys_callback() -> None:
    overrides = {"callbacks.NsysCallback.start_step": 5, "callbacks.NsysCallback.end_step": 6}
    recipe = build_recipe(ROWS[0], RecipeInputs(overrides=overrides))
    nsys = recipe.trainer.callbacks[-1]
    assert nsys.__fn_or_cls__.__name__ == "NsysCallback" and (nsys.start_step, nsys.end_step) == (
        5,
        6,
    )
    fdl.build(nsys)  # a real callback NeMo can construct


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (
            "model.config.enable_cuda_grap",
            "has no field 'enable_cuda_grap' (did you mean 'enable_cuda_graph'?)",
        ),
        (
            "trainer.strategy.overlap_grad_reduce",
            "MegatronStrategy has no field 'overlap_grad_reduce'",
        ),
        ("trainer.callbacks.FooCallback.x", "callback 'FooCallback' is not in the recipe"),
        ("trainer.max_steps.x", "trainer.max_steps is 50, not a config object"),
    ],
)
def test_unknown_paths_fail_with_nemo_too(path, message) -> None:
    with pytest.raises(ConfigError) as e:
        build_recipe(ROWS[0], RecipeInputs(overrides={path: 1}))
    assert message in str(e.value)


def _row(row_id: str) -> dict:
    return next(r for r in ROWS if r.id == row_id)


def test_mxfp8_lora_ddp_override_is_what_the_strategy_would_do_anyway() -> None:
    """Seed 000's ddp.fp8_param_gather=True lands on the explicit form of ddp="megatron".

    NeMo copies the MXFP8 plugin's fp8_param_gather/reuse_grad_buf_for_mxfp8_param_ag into
    the strategy's DDP config at setup; the override must leave exactly that DDP config.
    """
    from megatron.core.distributed import DistributedDataParallelConfig
    from nemo.lightning.pytorch.plugins.mixed_precision import update_config_with_dtype_overrides

    row = _row("lora-llama3_70b-b200-mxfp8-8gpu-tp1pp4vp20")
    assert row.overrides == {"recipe.trainer.strategy.ddp.fp8_param_gather": True}
    recipe = build_recipe(row)
    ddp = recipe.trainer.strategy.ddp
    assert ddp.__fn_or_cls__ is DistributedDataParallelConfig
    # NVIDIA's helpers skip the DDP knobs for a string ddp: the NaN check stays as "megatron"
    assert ddp.check_for_nan_in_grad is True and ddp.fp8_param_gather is True
    plugin = fdl.build(recipe.trainer.plugins)
    assert plugin.dtype_config.fp8_param_gather is True
    ours = update_config_with_dtype_overrides(plugin.dtype_config, fdl.build(ddp))
    default = update_config_with_dtype_overrides(
        plugin.dtype_config, DistributedDataParallelConfig(check_for_nan_in_grad=True)
    )
    assert ours == default
    assert ours.reuse_grad_buf_for_mxfp8_param_ag is True

    plain = build_recipe(replace(row, overrides={}))
    assert plain.trainer.strategy.ddp == "megatron"  # untouched without an override under it


def test_pytorch_ddp_string_is_not_materialized() -> None:
    row = _row("lora-llama3_70b-b200-mxfp8-8gpu-tp1pp4vp20")
    with pytest.raises(ConfigError, match=r"trainer\.strategy\.ddp is 'pytorch', not a config"):
        build_recipe(
            replace(row, overrides={}),
            RecipeInputs(
                overrides={"trainer.strategy.ddp": "pytorch", "trainer.strategy.ddp.x": 1}
            ),
        )


def test_a_callback_can_be_removed_by_setting_it_to_null() -> None:
    remove = {"trainer.callbacks.MegatronCommOverlapCallback": None}
    recipe = build_recipe(ROWS[0], RecipeInputs(overrides=remove))
    assert "MegatronCommOverlapCallback" not in names(recipe.trainer.callbacks)
    with pytest.raises(ConfigError, match="a callback can only be removed"):
        build_recipe(
            ROWS[0], RecipeInputs(overrides={"trainer.callbacks.MegatronCommOverlapCallback": 1})
        )
    with pytest.raises(ConfigError, match="the recipe has no NsysCallback to remove"):
        build_recipe(ROWS[0], RecipeInputs(overrides={"trainer.callbacks.NsysCallback": None}))
