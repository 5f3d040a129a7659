"""Core attention through torch's scaled_dot_product_attention, for the local layer spec.

Megatron-Core's local DotProductAttention materialises the s x s scores and, without Apex's
fused softmax, an fp32 copy of them: about 3 GiB per layer of a 32-head model at seq 4096, so
a 16-layer Llama-3.2-1B shape does not fit an 80 GB H100. This module takes its place in the
local spec (same constructor and forward signature) and calls torch SDPA, causal: on CUDA the
flash, memory-efficient or cuDNN kernels only (never the math fallback, which would also
materialise the scores); on CPU the math kernel, whose matmuls torch's FlopCounterMode counts
(it has no formula for the CPU flash kernel). Query groups are expanded to the query heads
first, as DotProductAttention does, so every kernel accepts them.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from megatron.core import parallel_state
from megatron.core.transformer.module import MegatronModule
from torch.nn.attention import SDPBackend, sdpa_kernel

CUDA_KERNELS = [
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.CUDNN_ATTENTION,
]
CPU_KERNELS = [SDPBackend.MATH]


class SDPAttention(MegatronModule):
    """Causal self-attention over [s, b, heads, head_dim] tensors with torch SDPA."""

    def __init__(
        self,
        config: Any,
        layer_number: int,
        attn_mask_type: Any,
        attention_type: str,
        attention_dropout: float | None = None,
        softmax_scale: float | None = None,
        cp_comm_type: str | None = None,
        pg_collection: Any = None,
    ) -> None:
        super().__init__(config=config)
        if config.context_parallel_size != 1:
            raise ValueError("SDPAttention runs without context parallelism")
        tp = (
            pg_collection.tp.size()
            if pg_collection is not None
            else parallel_state.get_tensor_model_parallel_world_size()
        )
        self.heads = config.num_attention_heads // tp
        self.groups = config.num_query_groups // tp
        self.scale = softmax_scale or 1.0 / math.sqrt(config.kv_channels)
        self.dropout = config.attention_dropout if attention_dropout is None else attention_dropout

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        attn_mask_type: Any = None,
        attention_bias: Any = None,
        packed_seq_params: Any = None,
    ) -> torch.Tensor:
        """[sq, b, np, hn] query and [sk, b, ng, hn] key/value -> [sq, b, np * hn]."""
        if attention_mask is not None or attention_bias is not None or packed_seq_params:
            raise ValueError("SDPAttention is causal only: no mask, bias or packed sequences")
        if self.heads != self.groups:
            key = key.repeat_interleave(self.heads // self.groups, dim=2)
            value = value.repeat_interleave(self.heads // self.groups, dim=2)
        q, k, v = (t.permute(1, 2, 0, 3) for t in (query, key, value))  # [b, np, s, hn]
        with sdpa_kernel(CUDA_KERNELS if q.is_cuda else CPU_KERNELS):
            out = torch.nn.functional.scaled_dot_product_attention(
                q,
                k,
                v,
                is_causal=True,
                dropout_p=self.dropout if self.training else 0.0,
                scale=self.scale,
            )
        sq, b = query.shape[0], query.shape[1]
        return out.permute(2, 0, 1, 3).reshape(sq, b, -1)
