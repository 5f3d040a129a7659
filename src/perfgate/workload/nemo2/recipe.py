"""Build the NeMo 2.x recipe of a row exactly as NVIDIA's performance scripts would.

Imports NeMo: call only where it is installed (in the container, in .venv-nemo). The steps
follow scripts/performance/helpers.py (set_primary_perf_configs, set_exp_logging_configs)
and the per-model scripts, then apply the row's and the user's overrides by dotted path
(perfgate.workload.nemo2.paths).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import fiddle as fdl
import nemo_run as run
from fiddle.experimental.dataclasses import convert_dataclasses_to_configs
from nemo.collections.common.tokenizers.huggingface.auto_tokenizer import AutoTokenizer
from nemo.collections.common.tokenizers.tokenizer_utils import get_nmt_tokenizer
from nemo.collections.llm.gpt.data.mock import MockDataModule
from nemo.collections.llm.recipes.precision import mixed_precision
from nemo.collections.llm.recipes.tp_overlap_configs import userbuffers
from nemo.lightning.pytorch.callbacks.flops_callback import FLOPsMeasurementCallback

from perfgate.catalog.rows import Row
from perfgate.errors import ConfigError
from perfgate.workload.nemo2.models import (
    deepseek_dispatcher,
    deepseek_pp_layout,
    nemo2_model,
    tp_overlap_config,
)
from perfgate.workload.nemo2.paths import (
    apply_overrides,
    find_callback,
    set_field,
    set_path,
    try_set,
)
from perfgate.workload.overrides import merged_overrides, normalize_path

FP8_PLUGINS = {
    "delayed": "bf16_with_fp8_mixed",
    "current_scaling": "bf16_with_fp8_current_scaling_mixed",
    "subchannel_scaling": "bf16_with_fp8_subchannel_scaling_mixed",
}


@dataclass(frozen=True)
class RecipeInputs:
    """What besides the row shapes the recipe: steps, overrides, data, where NeMo logs."""

    steps: int = 50
    overrides: Mapping[str, Any] | None = None  # the user's, applied after the row's
    log_dir: str | None = None
    mock_data: bool = False  # fine-tuning on mock data (no checkpoint, no dataset)
    finetune_data: str | None = None  # llmb checkpoint_and_dataset / NEMO_HOME layout


def recipe_function(row: Row, inputs: RecipeInputs) -> run.Partial:
    """NeMo's own recipe of the row (performance mode), before perfgate's settings."""
    model = nemo2_model(row.model)
    module = importlib.import_module(f"nemo.collections.llm.recipes.{model.recipe}")
    task = row.task
    if task == "pretrain":
        fn = module.pretrain_recipe
        kwargs: dict[str, Any] = {"performance_mode": True}
    else:
        fn = getattr(module, "finetune_recipe", None)
        if fn is None:
            raise ConfigError(f"model {row.model!r}: NeMo has no finetune_recipe for it")
        kwargs = {
            "peft_scheme": "lora" if task == "lora" else "none",
            "performance_mode": True,
            "packed_sequence": not inputs.mock_data,
            "seq_length": row.seq_len,
        }
    accepted = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in kwargs.items() if k in accepted})


def _null_tokenizer(vocab_size: int) -> run.Config:
    return run.Config(
        get_nmt_tokenizer, library="null", model_name="NullTokenizer", vocab_size=vocab_size
    )


def _hf_tokenizer(hf_id: str) -> run.Config:
    return run.Config(AutoTokenizer, pretrained_model_name=hf_id, use_fast=True)


def _comm_overlap(recipe: run.Partial) -> fdl.Buildable | None:
    return find_callback(recipe, "MegatronCommOverlapCallback")


def _set_layout(recipe: run.Partial, row: Row, steps: int) -> None:
    """set_primary_perf_configs: trainer, batch, parallel sizes, no validation."""
    vp = row.vp
    trainer, strategy = recipe.trainer, recipe.trainer.strategy
    trainer.num_nodes = row.nodes
    trainer.devices = row.tasks_per_node
    trainer.max_steps = steps
    trainer.val_check_interval = steps
    trainer.limit_val_batches = 0
    recipe.data.micro_batch_size = row.mbs
    recipe.data.global_batch_size = row.gbs
    recipe.data.seq_length = row.seq_len
    set_field(recipe.model.config, "seq_length", row.seq_len, "row field 'seq_len'")
    if fdl.get_callable(recipe.data) is MockDataModule:
        recipe.data.num_train_samples = steps * row.gbs  # one epoch for the run
    strategy.tensor_model_parallel_size = row.tp
    strategy.pipeline_model_parallel_size = row.pp
    strategy.context_parallel_size = row.cp
    strategy.virtual_pipeline_model_parallel_size = None if vp in (None, 1) else vp
    strategy.expert_model_parallel_size = row.ep
    strategy.expert_tensor_parallel_size = row.etp
    strategy.sequence_parallel = row.tp > 1
    overlap = _comm_overlap(recipe)
    if overlap is not None:
        interleaved = row.dp > 1 and row.pp > 1 and bool(vp and vp > 1)
        overlap.overlap_param_gather_with_optimizer_step = interleaved
    config = recipe.model.config
    try_set(config, "use_te_activation_func", False)
    try_set(config, "activation_func_fp8_input_store", False)
    config.cross_entropy_fusion_impl = "te"


def _set_precision(recipe: run.Partial, row: Row) -> None:
    """set_precision_configs: the MegatronMixedPrecision plugin of the row's precision."""
    precision, fp8_recipe = row.precision, row.fp8_recipe
    if precision == "bf16":
        recipe.optim.config.use_precision_aware_optimizer = True
        plugins = recipe.trainer.plugins
        # Some recipes (Nemotron-H in NeMo 2.7) default to an FP8 plugin, or a list of one:
        # the row's precision is the truth, so a BF16 row gets the plain BF16 plugin.
        if isinstance(plugins, list) or getattr(plugins, "fp8", None):
            recipe.trainer.plugins = mixed_precision.bf16_mixed()
    elif precision == "fp8":
        name = FP8_PLUGINS.get(fp8_recipe or "delayed")
        if name is None or not hasattr(mixed_precision, name):
            raise ConfigError(
                f"field 'fp8_recipe' is {fp8_recipe!r}: this NeMo offers "
                f"{', '.join(k for k, v in FP8_PLUGINS.items() if hasattr(mixed_precision, v))}"
            )
        recipe.trainer.plugins = getattr(mixed_precision, name)()
        if fp8_recipe == "current_scaling":
            recipe.trainer.plugins.first_last_layers_bf16 = False  # as NVIDIA benchmarks it
    elif precision == "mxfp8":
        recipe.trainer.plugins = mixed_precision.bf16_with_mxfp8_mixed()
        overlap = _comm_overlap(recipe)
        if overlap is not None:  # not supported with reuse_grad_buf_for_mxfp8_param_ag
            overlap.overlap_param_gather = False
    else:
        offered = [n for n in dir(mixed_precision) if n.startswith("bf16_with_")]
        raise ConfigError(
            f"field 'precision' is {precision!r}: this NeMo's recipes offer no such precision "
            f"plugin ({', '.join(offered)})"
        )
    recipe.trainer.plugins.grad_reduce_in_fp32 = False


def _set_perf(recipe: run.Partial, row: Row, overrides: Mapping[str, Any]) -> None:
    """set_perf_optimization_configs: CUDA graphs, Megatron FSDP, DDP checks off."""
    strategy, ddp = recipe.trainer.strategy, recipe.trainer.strategy.ddp
    cuda_graphs = bool(overrides.get("model.config.enable_cuda_graph", False))
    if row.fsdp and cuda_graphs:
        raise ConfigError("row asks for FSDP and CUDA graphs: NeMo does not support both")
    recipe.model.config.enable_cuda_graph = cuda_graphs
    strategy.use_te_rng_tracker = cuda_graphs
    packed = getattr(recipe.data, "packed_sequence_specs", None)
    if row.task == "lora" and isinstance(packed, fdl.Buildable):
        packed.pad_cu_seqlens = cuda_graphs
    if row.fsdp:
        if not isinstance(ddp, fdl.Buildable):
            raise ConfigError(f"row asks for FSDP but the recipe's DDP is {ddp!r}, not a config")
        recipe.model.config.init_model_with_meta_device = True
        strategy.fsdp = "megatron"
        ddp.data_parallel_sharding_strategy = "optim_grads_params"
        recipe.model.config.gradient_accumulation_fusion = False
        overlap = _comm_overlap(recipe)
        if overlap is not None and getattr(overlap, "defer_embedding_wgrad_compute", False):
            overlap.defer_embedding_wgrad_compute = False
    _set_precision(recipe, row)
    if row.fsdp and recipe.trainer.plugins.grad_reduce_in_fp32:
        ddp.average_in_collective = False
    strategy.use_sharp = False
    if isinstance(ddp, fdl.Buildable):  # fine-tuning recipes may name the DDP by a string
        ddp.check_for_nan_in_grad = False
        ddp.check_for_large_grads = False
        ddp.nccl_ub = False
        ddp.fsdp_double_buffer = False
        try_set(ddp, "keep_fp8_transpose_cache", False)


def _set_logging(recipe: run.Partial, row: Row, log_dir: str | None) -> None:
    """set_exp_logging_configs: FLOPs callback (pretrain), no TensorBoard, no checkpoints."""
    model = nemo2_model(row.model)
    if row.task == "pretrain":
        recipe.trainer.callbacks.append(
            run.Config(
                FLOPsMeasurementCallback,
                model_config=recipe.model.config,
                data_config=recipe.data,
                model_name=model.flops_name,
            )
        )
    recipe.log.tensorboard = None
    recipe.trainer.logger = False
    recipe.log.ckpt = None
    recipe.log.log_dir = log_dir
    recipe.trainer.enable_checkpointing = False
    recipe.trainer.log_every_n_steps = 1
    # The phases of each step: Megatron's level-1 timers without a global barrier per timer
    # (README "Where the time went": what it costs); printed by perfgate's step callback
    # (perfgate.workload.nemo2.timers), one block per step after NeMo's progress line.
    recipe.trainer.strategy.megatron_log_level = 1
    recipe.trainer.strategy.progress_interval = 1
    try_set(recipe.model.config, "barrier_with_L1_time", False)


def _set_model_specifics(recipe: run.Partial, row: Row) -> None:
    """What each scripts/performance/llm/<model>.py adds after the common helpers."""
    model = nemo2_model(row.model)
    for path, value in model.settings.items():
        set_path(recipe, path, value, origin=f"nemo2 model setting of {row.model}")
    if row.model == "deepseek_v3":
        for path, value in deepseek_dispatcher(row.gpu).items():
            set_path(recipe, path, value, origin="nemo2 model setting of deepseek_v3")
        layout = deepseek_pp_layout(row.pp, row.vp)
        recipe.trainer.strategy.pipeline_model_parallel_layout = layout
        find_callback(recipe, "MegatronEnableExperimentalCallback", add=True)
    ub_name = tp_overlap_config(row)
    overlap = _comm_overlap(recipe)
    if ub_name and overlap is not None:
        cfg = getattr(userbuffers, ub_name)
        overlap.tp_comm_overlap_cfg = fdl.cast(run.Config, convert_dataclasses_to_configs(cfg))


def _set_data(recipe: run.Partial, row: Row, inputs: RecipeInputs) -> None:
    """Mock data with a NullTokenizer (pretrain, mock fine-tuning), else SQuAD + HF tokenizer."""
    model = nemo2_model(row.model)
    if row.task != "pretrain" and inputs.mock_data:
        recipe.data = run.Config(
            MockDataModule,
            seq_length=row.seq_len,
            micro_batch_size=row.mbs,
            global_batch_size=row.gbs,
            num_train_samples=inputs.steps * row.gbs,
        )
        recipe.resume = None  # random weights: the step time does not depend on their values
    if row.task == "pretrain" or inputs.mock_data:
        recipe.data.tokenizer = _null_tokenizer(model.vocab_size)
        recipe.model.tokenizer = recipe.data.tokenizer
        return
    if model.hf_id is None:
        raise ConfigError(f"model {row.model!r}: no Hugging Face checkpoint id to fine-tune")
    recipe.data.tokenizer = _hf_tokenizer(model.hf_id)
    if inputs.finetune_data:
        recipe.data.dataset_root = f"{inputs.finetune_data.rstrip('/')}/datasets/squad"
    recipe.optim.config.use_distributed_optimizer = True
    recipe.model.config.disable_parameter_transpose_cache = True


def build_recipe(row: Row, inputs: RecipeInputs | None = None) -> run.Partial:
    """The recipe NVIDIA's scripts would run for this row, plus the row's and user's overrides."""
    inputs = inputs or RecipeInputs()
    overrides = merged_overrides(row.overrides, inputs.overrides or {}, normalize_path)
    recipe = recipe_function(row, inputs)
    _set_data(recipe, row, inputs)
    _set_layout(recipe, row, inputs.steps)
    _set_perf(recipe, row, overrides)
    _set_logging(recipe, row, inputs.log_dir)
    _set_model_specifics(recipe, row)
    apply_overrides(recipe, overrides)
    return recipe
