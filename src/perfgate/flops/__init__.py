"""Model FLOPs per sample and the throughput figures derived from a step time.

Every TFLOP/s and MFU figure names its convention, because the ones in the wild differ by up to
~20% for the same run:
- "nemo2": NeMo 2.x flops_formulas.py up to v2.5.0rc0 (containers <= 25.07), what a NeMo 2 log
  prints as TFLOPS_per_GPU (attention not halved for Llama/Nemotron/Mixtral); see flops.nemo2;
- "nemo2_2509": NeMo 2's flops_formulas.py from r2.5.0 on (containers 25.09+), what a NeMo 2
  log of those containers prints (attention halved; Llama 4 still by the llama3 formula, vocab
  128256); see flops.nemo2_2509;
- "megatron": Megatron-LM's num_floating_point_operations (causal attention, every layer full
  attention), what Megatron-Bridge before v0.5.0 (containers 25.09-26.04) logs; see
  flops.megatron;
- "megatron_bridge": Megatron-Bridge's flop_utils from v0.5.0 (containers 26.06+): "megatron"
  with sliding-window layers (GPT-OSS) counted at their window; see flops.megatron_bridge;
- "llmb", "automodel": the conventions of figures published by NVIDIA's llmb recipes and by
  NeMo Automodel, kept so stored baselines compare like with like; see flops.llmb and
  flops.automodel (formulas two conventions share are in flops.terms).
CONVENTIONS maps each name of catalog.FLOPS_CONVENTIONS to its module's count.
Gate on step time and tokens/s; TFLOP/s and MFU are for people.

Tasks: "sft" counts like pretraining; "lora" is 2/3 of it (no weight gradients for the frozen
weights, seed 004), except in the automodel convention, which adds the adapters' share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from perfgate import hardware, models
from perfgate.catalog import FLOPS_CONVENTIONS, TASKS, Row
from perfgate.catalog.arch import effective_arch
from perfgate.errors import ConfigError, PerfgateError
from perfgate.flops import automodel, llmb, megatron, megatron_bridge, nemo2, nemo2_2509
from perfgate.models import ModelArch

LORA_FACTOR = 2.0 / 3.0


def _two_thirds(m: ModelArch) -> float:
    return LORA_FACTOR


@dataclass(frozen=True)
class Convention:
    """One way of counting: FLOPs of a full training sample, and the share LoRA keeps of it."""

    per_sample: Callable[[ModelArch, int, int], float]  # (model, seq_len, tp)
    lora: Callable[[ModelArch], float] = _two_thirds


CONVENTIONS: dict[str, Convention] = {
    "nemo2": Convention(lambda m, s, tp: nemo2.flops_per_sample(m, s)),
    "nemo2_2509": Convention(lambda m, s, tp: nemo2_2509.flops_per_sample(m, s)),
    "megatron": Convention(megatron.flops_per_sample),  # tp pads the vocab
    "megatron_bridge": Convention(megatron_bridge.flops_per_sample),
    "llmb": Convention(lambda m, s, tp: llmb.flops_per_sample(m, s)),
    "automodel": Convention(
        lambda m, s, tp: automodel.flops_per_sample(m, s), automodel.lora_multiplier
    ),
}


@dataclass(frozen=True)
class Throughput:
    """What one step time means: tokens/s (total and per GPU), TFLOP/s per GPU and MFU.

    mfu is a fraction of peak_tflops (the GPU's dense peak for the row's precision);
    tflops_per_gpu and mfu are in the named convention.
    """

    tokens_per_s: float
    tokens_per_s_per_gpu: float
    tflops_per_gpu: float
    mfu: float
    convention: str
    peak_tflops: float


def default_convention(model: str | ModelArch) -> str:
    """The convention used when none is named: the seeds' published (llmb) formula where NVIDIA
    publishes one for the family (Nemotron4, Llama), else NeMo 2.x's own count."""
    arch = _arch(model)
    return "llmb" if arch.family in llmb.FAMILIES else "nemo2"


def _arch(model: str | ModelArch) -> ModelArch:
    return model if isinstance(model, ModelArch) else models.get(model)


def _check(task: str, convention: str, seq_len: int) -> None:
    if task not in TASKS:
        raise ConfigError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    if convention not in FLOPS_CONVENTIONS:
        known = ", ".join(FLOPS_CONVENTIONS)
        raise ConfigError(f"unknown FLOPs convention {convention!r}; known: {known}")
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len <= 0:
        raise ConfigError(f"seq_len must be a positive integer, not {seq_len!r}")


def flops_per_sample(
    model: str | ModelArch,
    seq_len: int,
    task: str = "pretrain",
    convention: str = "nemo2",
    *,
    tp: int = 1,
) -> float:
    """Training FLOPs (forward + backward) of one sample of seq_len tokens.

    tp matters only to "megatron" and "megatron_bridge", whose logits count the vocab padded
    to a multiple of make_vocab_size_divisible_by x TP.
    """
    _check(task, convention, seq_len)
    arch = _arch(model)
    how = CONVENTIONS[convention]
    full = how.per_sample(arch, seq_len, tp)
    return full * how.lora(arch) if task == "lora" else full


def flops_per_token(
    model: str | ModelArch,
    seq_len: int,
    task: str = "pretrain",
    convention: str = "nemo2",
    *,
    tp: int = 1,
) -> float:
    """Training FLOPs per token at this sequence length (flops_per_sample / seq_len)."""
    return flops_per_sample(model, seq_len, task, convention, tp=tp) / seq_len


def throughput(
    model: str | ModelArch,
    gpu: str,
    precision: str,
    num_gpus: int,
    gbs: int,
    seq_len: int,
    step_time_s: float,
    task: str = "pretrain",
    convention: str = "nemo2",
    *,
    tp: int = 1,
) -> Throughput:
    """Tokens/s, TFLOP/s per GPU and MFU of a step of gbs samples on num_gpus GPUs."""
    for name, value in (("num_gpus", num_gpus), ("gbs", gbs)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ConfigError(f"{name} must be a positive integer, not {value!r}")
    if isinstance(step_time_s, bool) or not isinstance(step_time_s, (int, float)):
        raise ConfigError(f"step_time_s must be a number, not {step_time_s!r}")
    if not step_time_s > 0 or step_time_s == float("inf"):
        raise ConfigError(f"step_time_s must be positive and finite, not {step_time_s!r}")
    peak = hardware.peak_tflops(gpu, precision)
    per_sample = flops_per_sample(model, seq_len, task, convention, tp=tp)
    tokens_per_s = gbs * seq_len / step_time_s
    tflops_per_gpu = per_sample * gbs / step_time_s / num_gpus / 1e12
    return Throughput(
        tokens_per_s=tokens_per_s,
        tokens_per_s_per_gpu=tokens_per_s / num_gpus,
        tflops_per_gpu=tflops_per_gpu,
        mfu=tflops_per_gpu / peak,
        convention=convention,
        peak_tflops=peak,
    )


def of_row(row: Row, step_time_s: float, convention: str) -> Throughput | None:
    """throughput() of a catalog row's step time, counting the architecture the row trains
    (catalog.arch.effective_arch: its model with the overrides that change its shape); None
    where the convention cannot count the row (a published formula covers only the model
    families it was published for)."""
    try:
        return throughput(
            effective_arch(row),
            row.gpu,
            row.precision,
            row.num_gpus,
            row.gbs,
            row.seq_len,
            step_time_s,
            row.task,
            convention,
            tp=row.tp,
        )
    except PerfgateError:
        return None
