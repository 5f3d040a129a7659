"""Stands in for the repository's remote-code configuration_deepseek.py (not copied here).

Kimi-K2's config.json names model_type "kimi_k2" and loads its config class through auto_map,
so Bridge's recipe calls AutoBridge.from_hf_pretrained(..., trust_remote_code=True). The
architecture is DeepSeek-V3's: transformers' own DeepseekV3Config reads every field.
"""

from transformers.models.deepseek_v3.configuration_deepseek_v3 import (
    DeepseekV3Config as _DeepseekV3Config,
)


class DeepseekV3Config(_DeepseekV3Config):
    model_type = "kimi_k2"
