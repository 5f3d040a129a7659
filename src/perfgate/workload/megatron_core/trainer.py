"""The megatron_core training step: a Megatron-Core GPTModel, its optimizer, mock tokens.

Imports torch and Megatron-Core at its top: only the job (and gpu-check's measurements)
import it. On CUDA a step is Megatron-LM's train_step: the model chunk wrapped in
Float16Module and Megatron-Core's DistributedDataParallel, get_forward_backward_func over the
micro-batches, then get_megatron_optimizer's step (fp32 main params, gradient clipping).

On CPU (override device=cpu, for checks without a GPU) the same model, forward step and loss
run under gloo, but Megatron-Core's schedules, DDP buffers and optimizer allocate on "cuda"
by name, so the micro-batch loop, the DP gradient average and AdamW are plain torch here;
install_cpu_shims points the two places the model itself hard-codes CUDA (RoPE's inv_freq,
the recompute RNG state) at the CPU.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from megatron.core import parallel_state, tensor_parallel
from megatron.core.distributed import (
    DistributedDataParallel,
    DistributedDataParallelConfig,
    finalize_model_grads,
)
from megatron.core.models.gpt import GPTModel
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer
from megatron.core.pipeline_parallel import get_forward_backward_func
from megatron.core.transformer.module import Float16Module
from megatron.core.transformer.transformer_config import TransformerConfig

from perfgate.workload.megatron_core.attention import SDPAttention
from perfgate.workload.megatron_core.configs import (
    ddp_kwargs,
    optimizer_kwargs,
    transformer_kwargs,
)
from perfgate.workload.megatron_core.plan import FAMILIES, CoreSettings, cpu_threads
from perfgate.workload.runtime import RankInfo

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
ACTIVATIONS = {"silu": torch.nn.functional.silu, "gelu": torch.nn.functional.gelu}


def resolve(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Config keyword arguments with dtype and activation names turned into torch objects."""
    out = dict(kwargs)
    for name, value in kwargs.items():
        if name.endswith("dtype") and isinstance(value, str):
            out[name] = DTYPES[value]
        elif name == "activation_func" and isinstance(value, str):
            out[name] = ACTIVATIONS[value]
    return out


def install_cpu_shims() -> None:
    """Device cpu only: the model's two hard-coded CUDA uses, pointed at the CPU."""
    from megatron.core.tensor_parallel import random as mcore_random

    # RoPE moves inv_freq to torch.cuda.current_device() on its first forward.
    torch.cuda.current_device = lambda: torch.device("cpu")  # type: ignore[assignment]
    # Activation recompute saves and restores the CUDA RNG state around the re-forward.
    mcore_random._get_cuda_rng_state = lambda *a, **k: torch.get_rng_state()
    mcore_random._set_cuda_rng_state = lambda state, *a, **k: torch.set_rng_state(state)


def init_distributed(s: CoreSettings, rank: RankInfo) -> None:
    """torch.distributed (NCCL, or gloo on CPU), Megatron-Core's TP/PP groups and seeds."""
    if s.device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("device cuda: torch sees no GPU (override device=cpu to run on CPU)")
        torch.cuda.set_device(rank.local_rank)
    else:
        install_cpu_shims()
        torch.set_num_threads(cpu_threads(rank.world_size))
    if not dist.is_initialized():
        backend = "nccl" if s.device == "cuda" else "gloo"
        dist.init_process_group(backend, rank=rank.rank, world_size=rank.world_size)
    parallel_state.initialize_model_parallel(
        tensor_model_parallel_size=s.tp, pipeline_model_parallel_size=s.pp
    )
    torch.manual_seed(s.seed)
    if s.device == "cuda":
        tensor_parallel.model_parallel_cuda_manual_seed(s.seed)


def shutdown() -> None:
    """Leave the process groups (NCCL warns at exit otherwise)."""
    if parallel_state.model_parallel_is_initialized():
        parallel_state.destroy_model_parallel()
    if dist.is_initialized():
        dist.destroy_process_group()


def mock_batches(s: CoreSettings, device: torch.device) -> Iterator[dict[str, torch.Tensor]]:
    """Endless micro-batches of random tokens: the step's micro-batches, the same every step.

    TP and PP ranks of one DP rank draw the same tokens; DP ranks draw different ones.
    """
    generator = torch.Generator().manual_seed(
        s.seed + 1000 * parallel_state.get_data_parallel_rank()
    )
    shape = (s.mbs, s.seq_len + 1)
    pool = []
    for _ in range(s.num_microbatches):
        tokens = torch.randint(0, s.arch.vocab_size, shape, generator=generator).to(device)
        pool.append(
            {
                "tokens": tokens[:, :-1].contiguous(),
                "labels": tokens[:, 1:].contiguous(),
                "loss_mask": torch.ones(s.mbs, s.seq_len, device=device),
                "position_ids": torch.arange(s.seq_len, device=device).expand(s.mbs, -1),
            }
        )
    while True:
        yield from pool


def layer_spec(s: CoreSettings) -> Any:
    """Megatron-Core's local GPT layer spec (RMSNorm), core attention per the settings."""
    spec = get_gpt_layer_local_spec(normalization="RMSNorm")
    if s.core_attention == "sdpa":
        spec.submodules.self_attention.submodules.core_attention = SDPAttention
    return spec


def gpt_kwargs(s: CoreSettings, config: TransformerConfig) -> dict[str, Any]:
    """GPTModel's keyword arguments for this rank's pipeline stage."""
    return {
        "config": config,
        "transformer_layer_spec": layer_spec(s),
        "vocab_size": s.padded_vocab,
        "max_sequence_length": s.seq_len,
        "pre_process": parallel_state.is_pipeline_first_stage(),
        "post_process": parallel_state.is_pipeline_last_stage(),
        "parallel_output": True,
        "share_embeddings_and_output_weights": False,
        "position_embedding_type": "rope",
        "rotary_base": int(FAMILIES[s.arch.family][0]),
    }


def schedule_kwargs(s: CoreSettings) -> dict[str, Any]:
    """The shapes get_forward_backward_func's schedules take (the pipeline's p2p buffers)."""
    return {
        "num_microbatches": s.num_microbatches,
        "seq_length": s.seq_len,
        "micro_batch_size": s.mbs,
        "decoder_seq_length": s.seq_len,
    }


@dataclass(frozen=True)
class StepResult:
    """What one training step reports: its loss (None off the last stage) and grad norm."""

    loss: float | None
    grad_norm: float | None


class Trainer:
    """One rank's model, optimizer and data; step() is one optimizer step of gbs samples."""

    def __init__(self, s: CoreSettings) -> None:
        self.settings = s
        self.cuda = s.device == "cuda"
        self.device = torch.device("cuda", torch.cuda.current_device()) if self.cuda else None
        self.config = TransformerConfig(**resolve(transformer_kwargs(s)))
        self.lr = float(optimizer_kwargs(s)["lr"])
        model = GPTModel(**gpt_kwargs(s, self.config))
        if self.cuda:
            model.cuda(torch.cuda.current_device())
        model = Float16Module(self.config, model)
        self.data = mock_batches(s, self.device or torch.device("cpu"))
        if self.cuda:
            self._build_cuda(model)
        else:
            self.model = model
            self.params = [p for p in model.parameters() if p.requires_grad]
            opt = optimizer_kwargs(s)
            self.cpu_optimizer = torch.optim.AdamW(
                self.params,
                lr=self.lr,
                betas=(opt["adam_beta1"], opt["adam_beta2"]),
                eps=opt["adam_eps"],
                weight_decay=opt["weight_decay"],
            )

    def _build_cuda(self, model: torch.nn.Module) -> None:
        s, config = self.settings, self.config
        ddp_config = DistributedDataParallelConfig(**ddp_kwargs(s))
        self.model = DistributedDataParallel(config=config, ddp_config=ddp_config, module=model)
        if s.dp > 1 and not ddp_config.use_distributed_optimizer:
            self.model.broadcast_params()
        self.optimizer = get_megatron_optimizer(
            OptimizerConfig(**resolve(optimizer_kwargs(s))), [self.model]
        )
        # What Megatron-LM's training setup wires into the model config for the schedules.
        config.grad_scale_func = self.optimizer.scale_loss
        config.finalize_model_grads_func = finalize_model_grads
        if ddp_config.overlap_grad_reduce:
            config.no_sync_func = self.model.no_sync
            config.grad_sync_func = self.model.start_grad_sync
        if ddp_config.overlap_param_gather:
            config.param_sync_func = self.model.start_param_sync
        self.forward_backward_func = get_forward_backward_func()

    def _forward_step(self, data_iterator: Iterator[dict], model: torch.nn.Module) -> tuple:
        batch = next(data_iterator)
        output = model(batch["tokens"], batch["position_ids"], None, labels=batch["labels"])
        return output, functools.partial(self._loss, batch["loss_mask"])

    @staticmethod
    def _loss(loss_mask: torch.Tensor, output: torch.Tensor) -> tuple:
        mask = loss_mask.view(-1).float()
        loss = torch.sum(output.float().view(-1) * mask) / mask.sum()
        # A copy: the schedules divide the returned loss by the micro-batch count in place.
        return loss, {"lm loss": loss.detach().clone()}

    def forward_backward(self, forward_only: bool = False) -> float | None:
        """The step's micro-batches, forward (and backward): gradients, no update. Mean loss."""
        s = self.settings
        if self.cuda:
            self.model.zero_grad_buffer()
            self.optimizer.zero_grad()
            losses = self.forward_backward_func(
                forward_step_func=self._forward_step,
                data_iterator=self.data,
                model=[self.model],
                forward_only=forward_only,
                **schedule_kwargs(s),
            )
        else:
            losses = self._cpu_forward_backward(forward_only)
        return self._mean_loss(losses)

    def _cpu_forward_backward(self, forward_only: bool) -> list[dict]:
        for p in self.params:
            p.grad = None
        losses = []
        with torch.no_grad() if forward_only else torch.enable_grad():
            for _ in range(self.settings.num_microbatches):
                output, loss_func = self._forward_step(self.data, self.model)
                loss, reduced = loss_func(output)
                if not forward_only:
                    (loss / self.settings.num_microbatches).backward()
                losses.append(reduced)
        if not forward_only and self.settings.dp > 1:
            group = parallel_state.get_data_parallel_group()
            for p in self.params:
                dist.all_reduce(p.grad, group=group)
                p.grad /= self.settings.dp
        return losses

    def _mean_loss(self, losses: list[dict]) -> float | None:
        if not losses:  # not the last pipeline stage
            return None
        loss = torch.stack([d["lm loss"].float() for d in losses]).mean()
        if self.settings.dp > 1:
            group = parallel_state.get_data_parallel_group()
            dist.all_reduce(loss, group=group)
            loss /= self.settings.dp
        return float(loss)

    def step(self) -> StepResult:
        """One optimizer step: forward and backward over gbs samples, then the update."""
        loss = self.forward_backward()
        if self.cuda:
            _, grad_norm, _ = self.optimizer.step()
        else:
            grad_norm = self._cpu_clip()
            self.cpu_optimizer.step()
        return StepResult(loss, float(grad_norm) if grad_norm is not None else None)

    def _cpu_clip(self) -> float:
        # Each TP shard once (replicated norms counted on one rank), as Megatron's clip_grad.
        local = sum(
            float(p.grad.float().pow(2).sum())
            for p in self.params
            if tensor_parallel.param_is_not_tensor_parallel_duplicate(p)
        )
        total = torch.tensor([local])
        dist.all_reduce(total, group=parallel_state.get_model_parallel_group())
        norm = float(total.sqrt())
        clip = float(optimizer_kwargs(self.settings)["clip_grad"])
        if clip > 0 and norm > clip:
            for p in self.params:
                p.grad.mul_(clip / (norm + 1e-6))
        return norm


def settings_record(s: CoreSettings) -> dict[str, Any]:
    """The settings as plain data, for the sidecar."""
    out = dataclasses.asdict(s)
    out.update(num_microbatches=s.num_microbatches, padded_vocab=s.padded_vocab)
    return out
