"""The Hugging Face configs the Bridge contract caches agree with perfgate.models.

Both are transcriptions of the same Hub files, made separately (the models table for the FLOPs
count, checked against the published parameter counts in tests/test_models.py): a field on
which they disagree is a typo in one of them, and the contract would build another model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfgate import models

HF_CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
MODEL_OF = {
    "meta-llama--Meta-Llama-3-8B": "llama3_8b",
    "meta-llama--Meta-Llama-3-70B": "llama3_70b",
    "meta-llama--Meta-Llama-3.1-405B": "llama31_405b",
    "deepseek-ai--DeepSeek-V3": "deepseek_v3",
    "moonshotai--Kimi-K2-Instruct": "kimi_k2",
    "Qwen--Qwen3-30B-A3B": "qwen3_30b_a3b",
    "Qwen--Qwen3-235B-A22B": "qwen3_235b_a22b",
    "openai--gpt-oss-20b": "gpt_oss_20b",
    "openai--gpt-oss-120b": "gpt_oss_120b",
    "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-BF16": "nemotron_3_super",
}
# HF name(s) -> ModelArch field; the first HF name present is compared.
FIELDS = (
    (("num_hidden_layers",), "num_layers"),
    (("hidden_size",), "hidden_size"),
    (("num_attention_heads",), "num_attention_heads"),
    (("num_key_value_heads",), "num_query_groups"),
    (("vocab_size",), "vocab_size"),
    (("n_routed_experts", "num_experts", "num_local_experts"), "num_experts"),
    (("num_experts_per_tok",), "moe_router_topk"),
    (("moe_intermediate_size",), "moe_ffn_hidden_size"),
    (("moe_latent_size",), "moe_latent_size"),
    (("q_lora_rank",), "q_lora_rank"),
    (("kv_lora_rank",), "kv_lora_rank"),
    (("qk_rope_head_dim",), "qk_pos_emb_head_dim"),
    (("v_head_dim",), "v_head_dim"),
    (("hybrid_override_pattern",), "hybrid_override_pattern"),
    (("mamba_num_heads",), "mamba_num_heads"),
    (("sliding_window",), "window_size"),
)


def test_every_cached_config_is_mapped() -> None:
    assert sorted(p.name for p in HF_CONFIGS.iterdir() if p.is_dir()) == sorted(MODEL_OF)


@pytest.mark.parametrize("folder", sorted(MODEL_OF))
def test_the_config_agrees_with_the_models_table(folder: str) -> None:
    hf = json.loads((HF_CONFIGS / folder / "config.json").read_text())
    arch = models.get(MODEL_OF[folder])
    compared = []
    for names, field in FIELDS:
        name = next((n for n in names if hf.get(n) is not None), None)
        want = getattr(arch, field)
        if name is None or want is None:
            continue
        assert hf[name] == want, f"{folder}: {name}={hf[name]!r}, {arch.name}.{field}={want!r}"
        compared.append(field)
    assert {"num_layers", "hidden_size", "num_attention_heads", "vocab_size"} <= set(compared)
