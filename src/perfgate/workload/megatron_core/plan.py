"""Backend "megatron_core", the part without torch: what a row and its overrides build.

Pure Python, so a login node plans, checks and describes these rows without Megatron-Core.
A row trains a Megatron-Core GPTModel of the row's architecture (perfgate.models) with the
local (non-Transformer-Engine) layer spec, bf16, on mock data, at the row's TP/PP.

Overrides, by dotted path (`--override PATH=VALUE` or the row's `overrides`):
    model.<ModelArch field>   the architecture itself (num_layers, hidden_size, vocab_size, ..);
                              perfgate's FLOPs of the run follow it (effective_arch)
    model.<other field>       a TransformerConfig field (recompute_granularity, ..)
    optim.<field>             an OptimizerConfig field (lr, clip_grad, ..)
    ddp.<field>               a DistributedDataParallelConfig field (overlap_grad_reduce, ..)
    device                    cuda (default) or cpu: gloo and torch CPU, for checks without a GPU
    core_attention            sdpa (default: torch scaled_dot_product_attention, flash kernels on
                              Hopper) or local (Megatron-Core's DotProductAttention, which
                              materialises the s x s scores: 3 GiB per layer at seq 4096)
    seed                      the seed of the weights and of the mock tokens (default 1234)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfgate.catalog import arch as catalog_arch
from perfgate.catalog.arch import ARCH_FIELDS
from perfgate.catalog.rows import Row
from perfgate.errors import ConfigError
from perfgate.models import ModelArch
from perfgate.workload.overrides import merged_overrides, suggest

# Model families this backend builds: (RoPE base, QKV bias). Both dense SwiGLU GQA models.
FAMILIES: dict[str, tuple[float, bool]] = {"llama": (500000.0, False), "qwen2": (1000000.0, True)}
# Set from the row (tp, pp, precision): an override would contradict the row id.
FROM_ROW = {
    "model": (
        "tensor_model_parallel_size",
        "pipeline_model_parallel_size",
        "context_parallel_size",
        "expert_model_parallel_size",
        "bf16",
        "fp16",
        "fp8",
        "params_dtype",
        "pipeline_dtype",
    ),
    "optim": ("bf16", "fp16", "params_dtype"),
    "ddp": (),
}
SECTIONS = ("model", "optim", "ddp")
DEVICES = ("cuda", "cpu")
CORE_ATTENTION = ("sdpa", "local")
DEFAULT_SEED = 1234
PERFGATE_KEYS = ("device", "core_attention", "seed")


@dataclass(frozen=True)
class CoreSettings:
    """Everything the job builds for one megatron_core row, before torch is imported."""

    row_id: str
    arch: ModelArch  # the row's model with the model.<arch field> overrides applied
    seq_len: int
    mbs: int
    gbs: int
    tp: int
    pp: int
    dp: int
    device: str = "cuda"
    core_attention: str = "sdpa"
    seed: int = DEFAULT_SEED
    transformer: dict[str, Any] = field(default_factory=dict)  # TransformerConfig overrides
    optimizer: dict[str, Any] = field(default_factory=dict)
    ddp: dict[str, Any] = field(default_factory=dict)

    @property
    def num_microbatches(self) -> int:
        """Micro-batches per DP rank per step (gradient accumulation)."""
        return self.gbs // (self.dp * self.mbs)

    @property
    def padded_vocab(self) -> int:
        """The output layer's width: vocab padded to make_vocab_size_divisible_by x TP."""
        multiple = self.arch.make_vocab_size_divisible_by * self.tp
        return -(-self.arch.vocab_size // multiple) * multiple

    @property
    def tokens_per_step(self) -> int:
        """Tokens of one optimizer step over all DP ranks (gbs x seq_len)."""
        return self.gbs * self.seq_len


def path_rule(path: str) -> str:
    """A megatron_core override path as written, less an optional `recipe.` (split checks it)."""
    return str(path).strip().removeprefix("recipe.")


def merged(row: Row, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The row's overrides, then the user's (later wins): the workload's one merge rule."""
    return merged_overrides(row.overrides, overrides or {}, path_rule)


def split(overrides: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Overrides by section: arch, model, optim, ddp, perfgate; one-line error for a bad path."""
    out: dict[str, dict[str, Any]] = {s: {} for s in ("arch", *SECTIONS, "perfgate")}
    for path, value in overrides.items():
        head, _, rest = path.partition(".")
        if not rest:
            if head not in PERFGATE_KEYS:
                known = (*PERFGATE_KEYS, *(f"{s}.<field>" for s in SECTIONS))
                raise ConfigError(
                    f"override {path!r}: not a megatron_core setting{suggest(head, PERFGATE_KEYS)}"
                    f"; known: {', '.join(known)}"
                )
            out["perfgate"][head] = value
            continue
        if head not in SECTIONS or "." in rest:
            raise ConfigError(
                f"override {path!r}: megatron_core paths are model.<field>, optim.<field> or "
                f"ddp.<field> (one level){suggest(head, SECTIONS)}"
            )
        if rest in FROM_ROW[head]:
            raise ConfigError(
                f"override {path!r}: set from the row (tp, pp, precision); change the row instead"
            )
        section = "arch" if head == "model" and rest in ARCH_FIELDS else head
        out[section][rest] = value
    return out


def effective_arch(row: Row, overrides: Mapping[str, Any] | None = None) -> ModelArch:
    """The architecture the job builds: catalog.arch.effective_arch, the one every FLOPs
    figure of the row counts (the row's model with model.<arch field> overrides)."""
    split(merged(row, overrides))  # a bad path is refused first, as settings_for refuses it
    return catalog_arch.effective_arch(row, overrides)


def _check_row(row: Row, arch: ModelArch) -> None:
    origin = f"row {row.id!r}"
    if arch.family not in FAMILIES or arch.is_moe or arch.is_mla or arch.is_hybrid:
        raise ConfigError(
            f"{origin}: backend megatron_core builds dense GPT models of the families "
            f"{', '.join(FAMILIES)}; {row.model} is {arch.family}"
        )
    if row.task != "pretrain":
        raise ConfigError(f"{origin}: backend megatron_core runs pretraining on mock data only")
    if row.precision != "bf16":
        raise ConfigError(
            f"{origin}: backend megatron_core runs bf16 only (fp8 needs Transformer Engine)"
        )
    unsupported = {"cp": row.cp > 1, "vp": row.vp is not None, "fsdp": row.fsdp, "ep": row.ep > 1}
    bad = [name for name, on in unsupported.items() if on]
    if bad:
        raise ConfigError(f"{origin}: backend megatron_core does not run {', '.join(bad)}")
    for name in ("num_attention_heads", "num_query_groups"):
        if getattr(arch, name) % row.tp:
            raise ConfigError(f"{origin}: tp {row.tp} does not divide {name} {getattr(arch, name)}")
    if arch.num_layers % row.pp:
        raise ConfigError(f"{origin}: pp {row.pp} does not divide {arch.num_layers} layers")


def settings_for(
    row: Row, overrides: Mapping[str, Any] | None = None, world_size: int | None = None
) -> CoreSettings:
    """The settings of a row with its and the user's overrides; world_size defaults to the row's."""
    sections = split(merged(row, overrides))
    model = effective_arch(row, overrides)
    _check_row(row, model)
    world = row.num_gpus if world_size is None else world_size
    if world % (row.tp * row.pp):
        raise ConfigError(f"row {row.id!r}: {world} ranks are not a multiple of tp*pp")
    dp = world // (row.tp * row.pp)
    if row.gbs % (dp * row.mbs):
        raise ConfigError(f"row {row.id!r}: gbs {row.gbs} is not a multiple of dp*mbs")
    extra = sections["perfgate"]
    device = extra.get("device", "cuda")
    attention = extra.get("core_attention", "sdpa")
    seed = extra.get("seed", DEFAULT_SEED)
    if device not in DEVICES:
        raise ConfigError(f"override 'device': {device!r}; known: {', '.join(DEVICES)}")
    if attention not in CORE_ATTENTION:
        raise ConfigError(
            f"override 'core_attention': {attention!r}; known: {', '.join(CORE_ATTENTION)}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"override 'seed': {seed!r} is not an integer")
    if device == "cpu" and row.pp > 1:
        # Megatron-Core's pipeline schedules allocate on "cuda" by name.
        raise ConfigError(f"row {row.id!r}: device cpu runs pp 1 only")
    if device == "cpu" and attention == "local":
        raise ConfigError("override 'core_attention': local builds its causal mask on CUDA")
    return CoreSettings(
        row_id=row.id,
        arch=model,
        seq_len=row.seq_len,
        mbs=row.mbs,
        gbs=row.gbs,
        tp=row.tp,
        pp=row.pp,
        dp=dp,
        device=device,
        core_attention=attention,
        seed=seed,
        transformer=sections["model"],
        optimizer=sections["optim"],
        ddp=sections["ddp"],
    )


def cpu_threads(world_size: int) -> int:
    """Threads per rank on CPU: OMP_NUM_THREADS where set, else this host's cores shared out."""
    # gpu-check --cpu sets 1: on a loaded host a tiny model's ops are too short to share, and
    # OpenMP threads spinning at every op's barrier cost ~15x the step's CPU time.
    given = os.environ.get("OMP_NUM_THREADS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    return max(1, cores // world_size)
