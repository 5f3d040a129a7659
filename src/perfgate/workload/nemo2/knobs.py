"""Every tuning knob of NeMo's Performance Tuning Guide (seed 002) as perfgate expresses it.

Each entry of the guide's "Index - List of Tuning Knobs" maps to an override path on the
nemo2 recipe (`--override PATH=VALUE` or a row's `overrides`) or to an environment
variable (`--env NAME=VALUE` or a row's `env`). Where the guide's spelling is not the real
name (typos, a field that moved), the entry says so; tests prove each path against NeMo.
"""

from __future__ import annotations

from dataclasses import dataclass

OVERLAP = "trainer.callbacks.MegatronCommOverlapCallback"
TP_CFG = f"{OVERLAP}.tp_comm_overlap_cfg"


@dataclass(frozen=True)
class Knob:
    """How one knob of the guide is set with perfgate."""

    kind: str  # "path" (recipe override), "env" (environment variable)
    expression: str  # the override path or the variable name
    note: str = ""


KNOBS: dict[str, Knob] = {
    "callback.tp_comm_overlap": Knob("path", f"{OVERLAP}.tp_comm_overlap"),
    "callback.tp_comm_overlap_cfg": Knob("path", TP_CFG),
    "CUDA_DEVICE_MAX_CONNECTIONS": Knob("env", "CUDA_DEVICE_MAX_CONNECTIONS"),
    "garbageCollectionCallback.gc_interval_train": Knob(
        "path", "trainer.callbacks.GarbageCollectionCallback.gc_interval_train"
    ),
    "garbageCollectionCallback.gc_interval_val": Knob(
        "path", "trainer.callbacks.GarbageCollectionCallback.gc_interval_val"
    ),
    "megatronMixedPrecision.fp8_params": Knob("path", "trainer.plugins.fp8_params"),
    "MemoryProfilePlugin": Knob(
        "path",
        "trainer.callbacks.MemoryProfileCallback.dir",
        "the plugin adds MemoryProfileCallback(dir, ranks); perfgate adds it when set",
    ),
    "NCCL_NET_GDR_C2C": Knob("env", "NCCL_NET_GDR_C2C"),
    "NCCL_NET_GDR_LEVEL": Knob("env", "NCCL_NET_GDR_LEVEL"),
    "NCCL_NVLS_ENABLE": Knob("env", "NCCL_NVLS_ENABLE"),
    "NsysPlugin": Knob(
        "path",
        "trainer.callbacks.NsysCallback.start_step",
        "adds NsysCallback(start_step, end_step, ranks); the rank must run under "
        "`nsys profile --capture-range=cudaProfilerApi` for a trace",
    ),
    "NVTE_BWD_LAYERNORM_SM_MARGIN": Knob("env", "NVTE_BWD_LAYERNORM_SM_MARGIN"),
    "NVTE_FLASH_ATT": Knob("env", "NVTE_FLASH_ATTN", "the guide drops the final N"),
    "NVTE_FUSED_ATT": Knob("env", "NVTE_FUSED_ATTN", "the guide drops the final N"),
    "NVTE_FWD_LAYERNORM_SM_MARGIN": Knob("env", "NVTE_FWD_LAYERNORM_SM_MARGIN"),
    "PYTORCH_CUDA_ALLOC_CONF": Knob("env", "PYTORCH_CUDA_ALLOC_CONF"),
    "recipe.data.micro_batch_size": Knob("path", "data.micro_batch_size"),
    "recipe.data.packed_sequence_specs.packed_sequence_size": Knob(
        "path", "data.packed_sequence_specs.packed_sequence_size", "fine-tuning recipes only"
    ),
    "recipe.model.config.apply_rope_fusion": Knob("path", "model.config.apply_rope_fusion"),
    "recipe.model.config.bias_activation_fusion": Knob(
        "path", "model.config.bias_activation_fusion"
    ),
    "recipe.model.config.bias_dropout_fusion": Knob("path", "model.config.bias_dropout_fusion"),
    "recipe.model.config.cp_comm_type": Knob("path", "model.config.cp_comm_type"),
    "recipe.model.config.cpu_offloading": Knob("path", "model.config.cpu_offloading"),
    "recipe.model.config.cpu_offloading_num_layers": Knob(
        "path", "model.config.cpu_offloading_num_layers"
    ),
    "recipe.model.config.cpu_offloading_weights": Knob(
        "path", "model.config.cpu_offloading_weights"
    ),
    "recipe.model.config.cross_entropy_loss_fusion": Knob(
        "path", "model.config.cross_entropy_loss_fusion"
    ),
    "recipe.model.config.enable_cuda_graph": Knob("path", "model.config.enable_cuda_graph"),
    "recipe.model.config.fp8_param_gather": Knob(
        "path",
        "trainer.plugins.fp8_param_gather",
        "set on the precision plugin in NeMo 2.7 (it sets model.config.fp8_param and "
        "trainer.strategy.ddp.fp8_param_gather from it)",
    ),
    "recipe.model.config.gradient_accumulation_fusion": Knob(
        "path", "model.config.gradient_accumulation_fusion"
    ),
    "recipe.model.config.masked_softmax_fusion": Knob("path", "model.config.masked_softmax_fusion"),
    "recipe.model.config.recompute_granuality": Knob(
        "path", "model.config.recompute_granularity", "the guide misspells granularity"
    ),
    "recipe.model.config.recompute_method": Knob("path", "model.config.recompute_method"),
    "recipe.model.config.recompute_num_layers": Knob("path", "model.config.recompute_num_layers"),
    "recipe.model.config.use_precision_aware_optimizer": Knob(
        "path",
        "optim.config.use_precision_aware_optimizer",
        "an optimizer setting (OptimizerConfig), not a model one",
    ),
    "recipe.trainer.strategy.account_for_embedding_in_pipeline_split": Knob(
        "path", "trainer.strategy.account_for_embedding_in_pipeline_split"
    ),
    "recipe.trainer.strategy.account_for_loss_in_pipeline_split": Knob(
        "path", "trainer.strategy.account_for_loss_in_pipeline_split"
    ),
    "recipe.trainer.strategy.context_parallel_size": Knob(
        "path", "trainer.strategy.context_parallel_size", "normally the row's cp"
    ),
    "recipe.trainer.strategy.ddp.align_param_gather": Knob(
        "path", "trainer.strategy.ddp.align_param_gather"
    ),
    "recipe.trainer.strategy.ddp.bucket_size": Knob("path", "trainer.strategy.ddp.bucket_size"),
    "recipe.trainer.strategy.ddp.data_parallel_sharding_strategy": Knob(
        "path", "trainer.strategy.ddp.data_parallel_sharding_strategy"
    ),
    "recipe.trainer.strategy.ddp.grad_reduce_in_fp32": Knob(
        "path", "trainer.strategy.ddp.grad_reduce_in_fp32"
    ),
    "recipe.trainer.strategy.ddp.num_distributed_optimizer_instances": Knob(
        "path", "trainer.strategy.ddp.num_distributed_optimizer_instances"
    ),
    "recipe.trainer.strategy.ddp.overlap_grad_reduce": Knob(
        "path", "trainer.strategy.ddp.overlap_grad_reduce"
    ),
    "recipe.trainer.strategy.ddp.overlap_param_gather": Knob(
        "path", "trainer.strategy.ddp.overlap_param_gather"
    ),
    "recipe.trainer.strategy.encoder_pipeline_model_parallel_size": Knob(
        "path", "trainer.strategy.encoder_pipeline_model_parallel_size", "encoder-decoder only"
    ),
    "recipe.trainer.strategy.encoder_tensor_model_parallel_size": Knob(
        "path", "trainer.strategy.encoder_tensor_model_parallel_size", "encoder-decoder only"
    ),
    "recipe.trainer.strategy.expert_model_parallel_size": Knob(
        "path", "trainer.strategy.expert_model_parallel_size", "normally the row's ep"
    ),
    "recipe.trainer.strategy.expert_tensor_parallel_size": Knob(
        "path", "trainer.strategy.expert_tensor_parallel_size", "normally the row's etp"
    ),
    "recipe.trainer.strategy.fsdp": Knob(
        "path", "trainer.strategy.fsdp", "normally the row's fsdp (megatron FSDP)"
    ),
    "recipe.trainer.strategy.num_distributed_optimizer_instances": Knob(
        "path",
        "trainer.strategy.ddp.num_distributed_optimizer_instances",
        "a DistributedDataParallelConfig field, under ddp",
    ),
    "recipe.trainer.strategy.pipeline_model_parallel_size": Knob(
        "path", "trainer.strategy.pipeline_model_parallel_size", "normally the row's pp"
    ),
    "recipe.trainer.strategy.tensor_model_parallel_size": Knob(
        "path", "trainer.strategy.tensor_model_parallel_size", "normally the row's tp"
    ),
    "recipe.trainer.strategy.virtual_pipeline_model_parallel_size": Knob(
        "path", "trainer.strategy.virtual_pipeline_model_parallel_size", "normally the row's vp"
    ),
    "recipe.trainer.use_distributed_optimizer": Knob(
        "path",
        "optim.config.use_distributed_optimizer",
        "an OptimizerConfig field, not a trainer one",
    ),
    "TORCH_NCCL_AVOID_RECORD_STREAMS": Knob("env", "TORCH_NCCL_AVOID_RECORD_STREAMS"),
    "transformerLayerTPOverlapCfg.cga_size": Knob(
        "path", f"{TP_CFG}.proj_fprop.cga_size", "per GEMM: qkv_dgrad ... fc2_fprop"
    ),
    "transformerLayerTPOverlapCfg.fp8_buf": Knob(
        "path", f"{TP_CFG}.proj_fprop.fp8_buf", "per GEMM: qkv_fprop ... fc2_fprop"
    ),
    "transformerLayerTPOverlapCfg.num_sm": Knob(
        "path", f"{TP_CFG}.proj_fprop.num_sm", "per GEMM: qkv_dgrad ... fc2_fprop"
    ),
}


def knob_key(index_line: str) -> str:
    """An index line of the guide ('NVTE_FWD_LAYERNORM_SM_MARGIN=<#SM ...') as a KNOBS key."""
    return index_line.strip().split("=", 1)[0].strip()
