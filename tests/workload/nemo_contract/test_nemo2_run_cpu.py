"""The nemo2 run path on CPU, as far as NeMo 2.7.3 and Megatron-Core 0.16 can go without CUDA.

A genuinely tiny Llama (2 layers, hidden 64) goes through `python -m perfgate.workload
SPEC.json` with CPU overrides: the recipe is built, the environment prepared, fiddle builds
the trainer and model, Lightning starts a 1-process gloo group, and NeMo configures the model
on the CPU; NeMo then stops at its first CUDA-only call (MegatronParallel.init_model_parallel
wraps DDP setup in torch.cuda.stream; past that, Megatron-Core's grad buffers are allocated
on torch.cuda.current_device()). The test pins that boundary so a change either way is seen.
The recording callback itself runs for real on a Lightning Trainer with NeMo's timing
callback, and rank 0's peak-memory gather runs through a real gloo process group.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch
from contract_rows import as_row
from nemo.utils.exp_manager import TimingCallback

from perfgate.logs import stepfile
from perfgate.logs.stepfile import StepRecord
from perfgate.workload.nemo2.callback import PerfgateStepCallback
from perfgate.workload.runtime import Recorder
from perfgate.workload.spec import WorkloadSpec

REPO = Path(__file__).resolve().parents[3]
TINY_CPU = {
    "model.config.num_layers": 2,
    "model.config.hidden_size": 64,
    "model.config.ffn_hidden_size": 128,
    "model.config.num_attention_heads": 4,
    "model.config.num_query_groups": 2,
    "model.config.use_cpu_initialization": True,
    "model.config.apply_rope_fusion": False,
    "model.config.gradient_accumulation_fusion": False,
    "model.config.masked_softmax_fusion": False,
    "model.config.bias_activation_fusion": False,
    "model.config.bias_dropout_fusion": False,
    "model.config.cross_entropy_loss_fusion": False,
    "model.config.persist_layer_norm": False,
    "optim.config.use_precision_aware_optimizer": False,  # its check needs TE's version
    "trainer.accelerator": "cpu",
    "trainer.callbacks.MegatronCommOverlapCallback": None,  # reads the CUDA capability
}
ROW = {
    "id": "pretrain-llama3_8b-h100-bf16-1gpu-tiny-cpu",
    "task": "pretrain",
    "model": "llama3_8b",
    "gpu": "h100",
    "precision": "bf16",
    "num_gpus": 1,
    "gpus_per_node": 1,
    "gbs": 2,
    "mbs": 1,
    "seq_len": 64,
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_tiny_llama_run_on_cpu_reaches_nemo_model_setup_and_stops_at_cuda(tmp_path) -> None:
    spec = WorkloadSpec(
        row=as_row(ROW), steps=3, output_dir=str(tmp_path / "out"), overrides=TINY_CPU
    )
    path = spec.write(tmp_path / "spec.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "RANK", "WORLD"))}
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [sys.executable, "-m", "perfgate.workload", str(path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 1, log[-3000:]
    rec = stepfile.read(tmp_path / "out" / "steps.json")
    assert rec.status == "failed" and rec.steps == []
    # Everything before the boundary ran: the environment, Lightning's process group, and
    # NeMo's configure_model on the CPU (it logs the parameter count of the tiny model).
    assert rec.env["TORCH_NCCL_AVOID_RECORD_STREAMS"] == "1" and rec.env["RANK"] == "0"
    assert "All distributed processes registered. Starting with 1 processes" in log
    assert "number of parameters on (tensor, pipeline) model parallel rank (0 ,0)" in log
    # The boundary, named first in the one-line error (Lightning's teardown fails after it).
    assert rec.error.startswith("RuntimeError: torch.cuda.Stream requires CUDA support")
    assert "megatron_parallel.py" in log and "init_model_parallel" in log


class _Tiny(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(32, 32)

    def training_step(self, batch, idx):
        x = batch[0]
        for _ in range(30):  # enough work for a measurable step time
            x = torch.tanh(self.layer(x))
        return x.pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def train_dataloader(self):
        data = torch.utils.data.TensorDataset(torch.randn(16, 8, 32))
        return torch.utils.data.DataLoader(data, batch_size=None)


def test_step_callback_records_nemo_timing_on_a_real_trainer(tmp_path) -> None:
    store = torch.distributed.TCPStore("127.0.0.1", _free_port(), 1, True)
    torch.distributed.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        recorder = Recorder(tmp_path / "steps.json", StepRecord(row_id="tiny", backend="nemo2"))
        timing = TimingCallback()
        ours = PerfgateStepCallback(recorder, gbs=8, seq_len=32, world_size=1)
        trainer = pl.Trainer(
            accelerator="cpu",
            devices=1,
            max_steps=3,
            callbacks=[timing, ours],  # NeMo's recipes put TimingCallback first too
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        trainer.fit(_Tiny())
    finally:
        torch.distributed.destroy_process_group()
    rec = stepfile.read(tmp_path / "steps.json")
    assert [s["step"] for s in rec.steps] == [0, 1, 2]
    times = [s["step_time_s"] for s in rec.steps]
    assert all(t > 0 for t in times)
    assert times[-1] == pytest.approx(float(timing.timer["train_step_timing"]))  # NeMo's clock
    assert rec.steps[1]["tokens_per_s_per_gpu"] == pytest.approx(8 * 32 / times[1])
    assert rec.status == "running" and rec.flops_convention is None  # no FLOPs callback here
    assert rec.versions["nemo"] == "2.7.3" and rec.versions["gpu_count"] == "1"
    assert rec.peak_memory_gib_per_rank == [0.0]  # gathered through gloo; no CUDA here
