"""The Automodel benchmark configs the catalog's automodel rows come from, as perfgate's data.

Keyed by the row's `config` (the YAML's path in the NVIDIA-NeMo/Automodel repository, seed
003 at bb0c0bfb0). In the job the container's own copy of that YAML is the base when it is
there (it matches the installed Automodel); these are the fallback and what a login node
validates overrides against. Each holds the sections that shape the run: model and backend,
distributed layout, PEFT, optimizer, data; row fields (batch, sizes, steps) are set later.
"""

from __future__ import annotations

import copy
from typing import Any

AM = "nemo_automodel"
MOCK_DATASET = f"{AM}.components.datasets.llm.mock_iterable_dataset.MockIterableDataset"
LOSS = f"{AM}.components.loss.masked_ce.MaskedCrossEntropy"
PEFT = f"{AM}.components._peft.lora.PeftConfig"
BACKEND = f"{AM}.components.models.common.BackendConfig"
RNG = f"{AM}.components.training.rng.StatefulRNG"


def _backend(attn: str | None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"_target_": BACKEND}
    if attn:
        out["attn"] = attn
    out.update(linear="te", rms_norm="te")
    if attn:
        out["rope_fusion"] = True
    out.update(experts="gmm", dispatcher="deepep", fake_balanced_gate=True)
    out.update(extra)
    return out


def _pipeline(pp_microbatch_size: int, layers_per_stage: int, rounding: str) -> dict[str, Any]:
    return {
        "pp_schedule": "interleaved1f1b",
        "pp_microbatch_size": pp_microbatch_size,
        "round_virtual_stages_to_pp_multiple": rounding,
        "scale_grads_in_schedule": False,
        "patch_inner_model": False,
        "patch_causal_lm_model": False,
        "layers_per_stage": layers_per_stage,
    }


def _moe_pretrain(
    hf_id: str,
    backend: dict[str, Any],
    distributed: dict[str, Any],
    trust_remote_code_in_config: bool = False,
) -> dict[str, Any]:
    """The shape of examples/benchmark/configs/*_te_deepep.yaml (MoE pre-training)."""
    config: dict[str, Any] = {
        "_target_": "transformers.AutoConfig.from_pretrained",
        "pretrained_model_name_or_path": hf_id,
    }
    model: dict[str, Any] = {"_target_": f"{AM}.NeMoAutoModelForCausalLM.from_config"}
    if trust_remote_code_in_config:
        config["trust_remote_code"] = True
        model.update(config=config, backend=backend)
    else:
        model.update(config=config, trust_remote_code=True, backend=backend)
    return {
        "seed": 1234,
        "benchmark": {"warmup_steps": 10, "nsys_start": -1, "nsys_end": -1, "nsys_ranks": []},
        "step_scheduler": {"ckpt_every_steps": 1000, "val_every_steps": 1000, "num_epochs": 1},
        "distributed": {"strategy": "fsdp2", "tp_size": 1, "cp_size": 1, **distributed},
        "dist_env": {"backend": "nccl", "timeout_minutes": 10},
        "model": model,
        "checkpoint": {"enabled": False},
        "loss_fn": {"_target_": LOSS, "fp32_upcast": False},
        "dataset": {"_target_": MOCK_DATASET, "seq_len": 4096, "num_samples": 100000},
        "dataloader": {
            "batch_size": None,
            "_target_": "torch.utils.data.DataLoader",
            "num_workers": 0,
        },
        "optimizer": {
            "_target_": "torch.optim.Adam",
            "betas": [0.9, 0.999],
            "eps": 1e-8,
            "lr": 0.0001,
            "weight_decay": 0,
        },
    }


def _lora(
    hf_id: str,
    seed: int,
    distributed: dict[str, Any],
    model_extra: dict[str, Any],
    peft_extra: dict[str, Any],
    adamw: bool,
    timeout_minutes: int = 1,
) -> dict[str, Any]:
    """The shape of examples/llm_finetune/*/*peft_benchmark*.yaml (LoRA on mock data)."""
    optimizer: dict[str, Any] = {
        "_target_": "torch.optim.AdamW" if adamw else "torch.optim.Adam",
        "betas": [0.9, 0.999],
        "eps": 1e-8,
        "lr": 1e-05,
        "weight_decay": 0.01 if adamw else 0,
    }
    out: dict[str, Any] = {
        "seed": 42,
        "benchmark": {"warmup_steps": 5, "nsys_start": -1, "nsys_end": -1, "nsys_ranks": []},
        "step_scheduler": {"ckpt_every_steps": 50, "val_every_steps": 1000},
        "dist_env": {"backend": "nccl", "timeout_minutes": timeout_minutes},
        "rng": {"_target_": RNG, "seed": seed, "ranked": True},
        "model": {
            "_target_": f"{AM}.NeMoAutoModelForCausalLM.from_pretrained",
            "pretrained_model_name_or_path": hf_id,
            **model_extra,
        },
        "peft": {
            "_target_": PEFT,
            "match_all_linear": True,
            "dim": 16,
            "alpha": 32,
            **peft_extra,
            "use_triton": True,
        },
        "checkpoint": {"enabled": False},
        "distributed": {"strategy": "fsdp2", **distributed},
        "loss_fn": {"_target_": LOSS},
        "dataset": {
            "_target_": MOCK_DATASET,
            "vocab_size": 100,
            "seq_len": 4096,
            "num_samples": 1000000,
        },
        "dataloader": {"_target_": "torch.utils.data.DataLoader", "batch_size": None},
        "optimizer": optimizer,
    }
    if not adamw:
        out["lr_scheduler"] = {"lr_decay_style": "cosine", "min_lr": 1e-06}
    return out


def _lora_pp(dp_size: int | str, tp_size: int) -> dict[str, Any]:
    pipeline = _pipeline(1, 2, "up")
    for key in ("patch_inner_model", "patch_causal_lm_model"):
        del pipeline[key]
    pipeline["dtype"] = "bf16"
    return {
        "dp_size": dp_size,
        "tp_size": tp_size,
        "cp_size": 1,
        "pp_size": 4,
        "sequence_parallel": False,
        "activation_checkpointing": True,
        "pipeline": pipeline,
    }


_SINGLE = {"dp_size": "none", "tp_size": 1, "cp_size": 1, "sequence_parallel": False}
_DSV3_MOE = {"reshard_after_forward": False, "wrap_outer_model": False}
_BENCH = "examples/benchmark/configs"
_FT = "examples/llm_finetune"

BASES: dict[str, dict[str, Any]] = {
    f"{_BENCH}/nemotron_nano_v3_te_deepep.yaml": _moe_pretrain(
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        _backend(None, enable_hf_state_dict_adapter=True, enable_fsdp_optimizations=True),
        {"pp_size": 1, "ep_size": 8, "activation_checkpointing": True},
        trust_remote_code_in_config=True,
    ),
    f"{_BENCH}/qwen3_moe_30b_te_deepep.yaml": _moe_pretrain(
        "Qwen/Qwen3-30B-A3B",
        _backend("te", enable_hf_state_dict_adapter=True, enable_fsdp_optimizations=True),
        {
            "pp_size": 1,
            "ep_size": 8,
            "sequence_parallel": False,
            "activation_checkpointing": True,
            "pipeline": _pipeline(2, 2, "down"),
        },
    ),
    f"{_BENCH}/deepseek_v3_te_deepep.yaml": _moe_pretrain(
        "deepseek-ai/DeepSeek-V3",
        _backend("te", enable_hf_state_dict_adapter=False, enable_fsdp_optimizations=True),
        {
            "pp_size": 4,
            "ep_size": 64,
            "sequence_parallel": False,
            "activation_checkpointing": True,
            "pipeline": _pipeline(1, 2, "down"),
            "moe": dict(_DSV3_MOE),
        },
    ),
    f"{_BENCH}/deepseek_v3_te_deepep_1024.yaml": _moe_pretrain(
        "deepseek-ai/DeepSeek-V3",
        _backend("te", enable_hf_state_dict_adapter=False, enable_fsdp_optimizations=True),
        {
            "pp_size": 4,
            "ep_size": 64,
            "sequence_parallel": False,
            "pipeline": _pipeline(1, 4, "down"),
            "moe": dict(_DSV3_MOE),
        },
    ),
    f"{_BENCH}/kimi_k2_te_deepep.yaml": _moe_pretrain(
        "moonshotai/Kimi-K2-Base",
        _backend("te", enable_hf_state_dict_adapter=False),
        {
            "pp_size": 8,
            "ep_size": 32,
            "sequence_parallel": False,
            "activation_checkpointing": True,
            "pipeline": _pipeline(1, 2, "down"),
        },
    ),
    f"{_BENCH}/gptoss_20b_te_deepep.yaml": _moe_pretrain(
        "openai/gpt-oss-20b",
        _backend("flex", enable_hf_state_dict_adapter=False),
        {
            "pp_size": 1,
            "ep_size": 8,
            "sequence_parallel": False,
            "pipeline": _pipeline(2, 2, "down"),
        },
    ),
    f"{_BENCH}/gptoss_120b_te_deepep.yaml": _moe_pretrain(
        "openai/gpt-oss-120b",
        _backend("flex", enable_hf_state_dict_adapter=False),
        {
            "pp_size": 1,
            "ep_size": 64,
            "sequence_parallel": False,
            "activation_checkpointing": True,
            "pipeline": _pipeline(2, 2, "down"),
            "moe": {"reshard_after_forward": True},
        },
    ),
    f"{_FT}/llama3_1/llama3_1_8b_peft_benchmark.yaml": _lora(
        "meta-llama/Llama-3.1-8B", 42, dict(_SINGLE), {"force_hf": True}, {"dropout": 0.1}, True
    ),
    f"{_FT}/qwen/qwen2_5_7b_peft_benchmark.yaml": _lora(
        "Qwen/Qwen2.5-7B",
        1111,
        dict(_SINGLE),
        {"torch_dtype": "bf16", "force_hf": True},
        {"dropout": 0.0},
        True,
    ),
    f"{_FT}/llama3_3/custom_llama3_3_70b_instruct_peft_benchmark.yaml": _lora(
        "meta-llama/Llama-3.3-70B-Instruct",
        1111,
        _lora_pp("none", 2),
        {"torch_dtype": "bf16"},
        {},
        False,
        timeout_minutes=10,
    ),
    f"{_FT}/llama3_3/custom_llama3_3_70b_instruct_peft_benchmark_2nodes.yaml": _lora(
        "meta-llama/Llama-3.3-70B-Instruct",
        1111,
        _lora_pp(2, 2),
        {"torch_dtype": "bf16"},
        {},
        False,
    ),
    f"{_FT}/qwen/qwen2_5_32b_peft_benchmark.yaml": _lora(
        "Qwen/Qwen2.5-32B-Instruct",
        1111,
        _lora_pp("none", 1),
        {"torch_dtype": "bf16", "force_hf": True},
        {},
        False,
    ),
    f"{_FT}/qwen/qwen2_5_32b_peft_benchmark_2nodes.yaml": _lora(
        "Qwen/Qwen2.5-32B-Instruct", 1111, _lora_pp(4, 1), {"torch_dtype": "bf16"}, {}, False
    ),
}


def builtin_base(config: str) -> dict[str, Any] | None:
    """A deep copy of perfgate's base for that Automodel YAML path, or None if it has none."""
    base = BASES.get(config)
    return copy.deepcopy(base) if base is not None else None
