"""The backend's model, attention, step, FLOP count and job on torch CPU (gloo, one rank)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import torch
from gpucheck.runs import CPU_OVERRIDES, CPU_SHAPE
from megatron.core.transformer.enums import AttnMaskType
from megatron.core.transformer.transformer_config import TransformerConfig
from torch.utils.flop_counter import FlopCounterMode

from perfgate import catalog
from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.logs import parse_text, stepfile
from perfgate.workload import dispatch
from perfgate.workload.megatron_core.attention import SDPAttention
from perfgate.workload.megatron_core.clock import SIDECAR, read_sidecar
from perfgate.workload.megatron_core.configs import transformer_kwargs
from perfgate.workload.megatron_core.plan import settings_for
from perfgate.workload.megatron_core.trainer import Trainer, init_distributed, resolve, shutdown
from perfgate.workload.runtime import RankInfo
from perfgate.workload.spec import WorkloadSpec

REPO = Path(__file__).resolve().parents[3]
RANK0 = RankInfo(0, 1, 0, "single")
RECOMPUTE_ONE = {
    "model.recompute_granularity": "full",
    "model.recompute_method": "block",
    "model.recompute_num_layers": 1,
}


def cpu_row():
    row = catalog.load_catalog(SHIPPED_DIR).get(
        "pretrain-llama32_1b-h100-bf16-1gpu-tp1-megatron_core"
    )
    return dataclasses.replace(row, **CPU_SHAPE, overrides=CPU_OVERRIDES)


def reference_attention(q, k, v, scale):
    """Causal softmax attention in float64 over [s, b, heads, dim], groups expanded."""
    q, k, v = (t.double().permute(1, 2, 0, 3) for t in (q, k, v))
    k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    scores = q @ k.transpose(-1, -2) * scale
    s = q.shape[2]
    scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), -math.inf)
    out = torch.softmax(scores, -1) @ v
    return out.permute(2, 0, 1, 3).reshape(s, q.shape[0], -1)


def test_sdpa_attention_is_causal_gqa_attention(one_rank):
    s = settings_for(cpu_row())
    init_distributed(s, RANK0)
    config = TransformerConfig(**resolve(transformer_kwargs(s)))
    attn = SDPAttention(config, 1, AttnMaskType.causal, "self")
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(32, 2, 4, 16, generator=gen).bfloat16()
    k, v = (torch.randn(32, 2, 2, 16, generator=gen).bfloat16() for _ in range(2))
    out = attn(q, k, v, None)
    ref = reference_attention(q, k, v, 1 / math.sqrt(16))
    assert out.shape == (32, 2, 64)
    assert float((out.double() - ref).norm() / ref.norm()) < 1e-2  # bf16 operands


def test_a_step_trains_and_the_recompute_switch_counts_the_refoward(one_rank):
    s = settings_for(cpu_row())
    init_distributed(s, RANK0)
    trainer = Trainer(s)
    losses = [trainer.step().loss for _ in range(4)]
    assert abs(losses[0] - math.log(1024)) < 0.05  # small init: uniform over the vocab
    assert losses[3] < losses[0]

    def counted(t):
        with FlopCounterMode(display=False) as fc:
            loss = t.forward_backward()
        return fc.get_total_flops(), loss

    plain, loss = counted(trainer)
    for name, value in RECOMPUTE_ONE.items():  # what gpucheck.measure does to the live config
        setattr(trainer.config, name.removeprefix("model."), value)
    toggled, loss_toggled = counted(trainer)
    assert toggled > plain and abs(loss_toggled - loss) < 1e-6  # same math, one more forward
    shutdown()
    init_distributed(s, RANK0)
    built = Trainer(settings_for(cpu_row(), RECOMPUTE_ONE))
    assert counted(built)[0] == toggled  # the switch is what the B override builds


def test_the_job_records_both_clocks_and_a_log_perfgate_parses(one_rank, tmp_path, capsys):
    spec = WorkloadSpec(row=cpu_row(), steps=6, output_dir=str(tmp_path), mock_data=True)
    assert dispatch.run_spec(spec, RANK0) == 0
    record = stepfile.read(tmp_path / "steps.json")
    assert record.status == "completed" and [s["step"] for s in record.steps] == list(range(6))
    sidecar = read_sidecar(tmp_path / SIDECAR)
    host = [s["step_time_s"] for s in record.steps]
    assert sidecar["host_step_time_s"] == host
    assert all(
        abs(a / b - 1) < 0.01 for a, b in zip(host, sidecar["second_step_time_s"], strict=True)
    )
    series = parse_text(capsys.readouterr().out, "rank0")
    assert [x.step for x in series.steps] == list(range(6))
    assert all(
        abs(x.step_time_s - h) <= 0.05e-3 + 1e-9 for x, h in zip(series.steps, host, strict=True)
    )
    assert abs(series.steps[0].loss - record.steps[0]["loss"]) < 1e-5  # printed as %.6E


def test_the_reported_loss_survives_the_schedules_in_place_scaling():
    loss, reported = Trainer._loss(torch.ones(2, 3), torch.full((2, 3), 2.0))
    loss /= 4  # forward_step_calc_loss: output_tensor /= num_microbatches, in place
    assert float(reported["lm loss"]) == 2.0 and float(loss) == 0.5
