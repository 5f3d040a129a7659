"""--nemo2: a 1-GPU NeMo 2 row through the product path, checked against clocks NeMo does not take.

On a GPU: the row `pretrain-llama32_1b-<gpu>-bf16-1gpu-tp1` (backend nemo2: NeMo 2.7.3's
llama32_1b recipe at the megatron_core row's shape, seq 4096, gbs 4, mbs 1, mock data) runs
as a user runs it, `pytest --executor local -k ROW`, in the nemo2 wheel site (NeMo on
Megatron-Core 0.16.1; no Transformer Engine or Apex, so NeMo builds Megatron-Core's local
layer spec and LOCAL_OVERRIDES turn off what needs either). Checked: NeMo's TimingCallback
step times (steps.json) against the device clock perfgate's callback queues at each batch
start (read after the run) and against this process's wall clock of the progress lines
(gpucheck.follow); NeMo's progress lines parsed back; NeMo's FLOPs callback against
perfgate's nemo2 convention; Megatron-Core's timer phases parsed and within the step; the
megatron_core row's step time beside it; the log control on NeMo's own text.

On CPU (--nemo-python: an interpreter with NeMo, .venv-nemo in CI) NeMo cannot take a step,
so the stage runs everything that can: (1) a tiny llama row through the same product path,
whose run must stop at NeMo's first CUDA call, exactly BOUNDARY (a change either way is
reported), and be the suite's INFRA; (2) NeMo's
own callbacks (TimingCallback, the FLOPsMeasurementCallback the recipe builds for the GPU
row, ProgressPrinter) and perfgate's step callback on a real Lightning trainer with a
stand-in model (gpucheck.nemo2_cpu), whose printed lines and steps.json feed the same log,
FLOPs and timer checks and the log control.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
from typing import Any

from gpucheck import checks, controls
from gpucheck.follow import LogFollower
from gpucheck.runs import (
    RunData,
    product_run,
    pytest_command,
    read_run,
    write_catalog,
)
from perfgate.catalog.arch import effective_arch
from perfgate.catalog.rows import Row, canonical_id
from perfgate.logs import stepfile
from perfgate.logs.phases import phases_of_run
from perfgate.workload.spec import WorkloadSpec

STEPS = 20  # >= 15: perfgate's steady window (5 skipped + 10 steady)
# What needs Transformer Engine or Apex, off (the GPU machine has neither); NeMo then builds
# Megatron-Core's local layer spec itself (nemo.collections.llm.gpt.model.base.local_layer_spec)
# and its mock data carries an attention mask (MockDataModule, without TE).
LOCAL_OVERRIDES: dict[str, Any] = {
    "model.config.gradient_accumulation_fusion": False,
    "model.config.masked_softmax_fusion": False,
    "model.config.bias_activation_fusion": False,
    "model.config.bias_dropout_fusion": False,
    "model.config.apply_rope_fusion": False,
    "model.config.cross_entropy_loss_fusion": False,
    "model.config.persist_layer_norm": False,
    "optim.config.use_precision_aware_optimizer": False,  # its check reads TE's version
    # NeMo 2.7.3's async checkpoint IO imports a Megatron-Core 0.16 module that no longer
    # exists (dist_checkpointing.strategies.tensorstore): creating it fails, even at teardown
    "trainer.strategy.ckpt_async_save": False,
}
# The CPU run of the workload: a genuinely tiny llama, on the CPU, up to the boundary.
TINY_CPU: dict[str, Any] = {
    **LOCAL_OVERRIDES,
    "model.config.num_layers": 2,
    "model.config.hidden_size": 64,
    "model.config.ffn_hidden_size": 128,
    "model.config.num_attention_heads": 4,
    "model.config.num_query_groups": 2,
    "model.config.use_cpu_initialization": True,
    "trainer.accelerator": "cpu",
}
# NeMo 2.7.3 / Megatron-Core 0.16.1 on CPU: the model is configured, then DDP is set up on a
# side stream (nemo/lightning/megatron_parallel.py, MegatronParallel.init_model_parallel:
# `with torch.cuda.stream(torch.cuda.Stream())`); past it Megatron-Core's gradient buffers
# are allocated on torch.cuda.current_device(). Pinned: a move either way is reported.
BOUNDARY = ("RuntimeError: torch.cuda.Stream requires CUDA support", "init_model_parallel")
BEFORE_BOUNDARY = (
    "All distributed processes registered. Starting with 1 processes",
    "number of parameters on (tensor, pipeline) model parallel rank (0 ,0)",
)


def nemo2_row(core: Row, overrides: dict[str, Any] | None = None) -> Row:
    """The NeMo 2 row at the megatron_core row's shape (its catalog-style id)."""
    row = dataclasses.replace(
        core,
        id="",
        backend="nemo2",
        overrides=dict(LOCAL_OVERRIDES if overrides is None else overrides),
        notes=("gpu-check --nemo2: NeMo 2's llama32_1b recipe, local layer spec, mock data",),
        source="scripts/gpu-check --nemo2",
        baseline=None,
    )
    return dataclasses.replace(row, id=canonical_id(row))


def run_checks(run: RunData, row: Row, cpu: bool) -> tuple[dict[str, dict], dict[str, dict]]:
    """(checks, controls) of a NeMo 2 run: timers, wall, log, FLOPs (phases: see gpu_stage)."""
    out = {
        "nemo2.timers": checks.timer_check(run.host_s, run.second_s, run.second_clock),
        "nemo2.wall": checks.wall_check(run.host_s, run.arrivals, 0.002),
        "nemo2.log": checks.log_check(run.steps, run.host_s, run.log_steps, run.log_s, "nemo2"),
        "nemo2.flops": checks.nemo_flops_check(
            run.tflops, run.host_s, row, effective_arch(row), run.versions.get("nemo")
        ),
    }
    out["nemo2.timers"]["what"] = "NeMo's TimingCallback vs device marks at each batch start"
    log = run.run_dir / "rank-0.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    control = controls.log_control(text, run.log_format, run.steps, run.host_s)
    return out, {"nemo2.log": control}


class Nemo2Stage:
    """The NeMo 2 stage of one check: its row, its runs, its checks into the result."""

    def __init__(self, stages: Any, env: dict[str, str], python: str) -> None:
        self.s, self.env, self.python = stages, env, python
        self.work = stages.work / "nemo2"
        self.row = nemo2_row(stages.gpu_row)
        self.result: dict[str, Any] = {"row_id": self.row.id, "python": python}

    def record(self, checks_: dict[str, dict], controls_: dict[str, dict]) -> None:
        """Into the check's result."""
        self.s.result["checks"].update(checks_)
        self.s.result["controls"].update(controls_)
        self.s.result["nemo2"] = self.result

    # --- GPU ------------------------------------------------------------------------------

    def gpu_stage(self, core_step_s: float | None) -> None:
        """The product path for the NeMo 2 row, then its checks."""
        results = self.work / "results"
        baselines = write_catalog([self.row], self.work / "baselines")
        html = self.s.args.out / "report-nemo2.html"
        cmd = pytest_command(self.python, self.row.id, results, html, STEPS, baselines)
        self.s.log(f"nemo2: pytest --executor=local -k {self.row.id} ({STEPS} steps)")
        p = product_run(cmd, self.row.id, results, self.env, self.s.timeout(), self.s.repo)
        rec = p.record or {}
        ok = p.exit_code == 0 and p.run is not None and p.run.problem is None
        line = f"pytest exit {p.exit_code}, verdict {rec.get('verdict')}"
        if not ok:
            line += f": {rec.get('message') or p.output_tail[-600:]}"
        self.result["product"] = {"ok": ok, "line": line, "wall_s": p.wall_s, "verdict": rec}
        self.s.log(f"nemo2: {line} ({p.wall_s:.0f} s)")
        found = {"nemo2.product": {"status": "pass" if ok else "fail", "why": line}}
        if p.run is None:
            self.record(found, {})
            return
        self.s.runs.append(p.run)
        more, ctl = run_checks(p.run, self.row, cpu=False)
        found.update(more)
        step = checks.steady_median(p.run.host_s)
        phases = phases_of_run([p.run.run_dir / "rank-0.log"])
        if phases is not None and p.run.host_s and step:
            first, last, _ = checks.steady_window(p.run.host_s)
            medians = phases.medians(p.run.steps[first], p.run.steps[last])
            found["nemo2.phases"] = checks.phases_check(medians, step)
        else:
            found["nemo2.phases"] = checks.phases_check(None, step or 0.0)
        found["nemo2.beside"] = beside(step, core_step_s)
        self.record(found, ctl)

    # --- CPU ------------------------------------------------------------------------------

    def cpu_stage(self) -> None:
        """The workload up to NeMo's CUDA boundary, then NeMo's callbacks on a stand-in."""
        found = {"nemo2.boundary": self.boundary_run()}
        more, ctl = self.callbacks_run()
        found.update(more)
        self.record(found, ctl)

    def boundary_run(self) -> dict[str, Any]:
        """The tiny llama through the product path (pytest --executor local): NeMo's run must
        stop at BOUNDARY, and the suite must record it as the row's INFRA with that cause."""
        tiny = dataclasses.replace(self.row, overrides=TINY_CPU, seq_len=64, gbs=2, mbs=1)
        results = self.work / "boundary"
        baselines = write_catalog([tiny], self.work / "boundary-baselines")
        html = self.s.args.out / "report-nemo2.html"
        cmd = pytest_command(self.python, tiny.id, results, html, 3, baselines)
        env = {**self.env, "PYTHONWARNINGS": "ignore"}
        self.s.log(f"nemo2: pytest --executor=local -k {tiny.id} (a 2-layer llama on the CPU)")
        p = product_run(cmd, tiny.id, results, env, self.s.timeout(), self.s.repo)
        rec = p.record or {}
        log = p.run.run_dir / "rank-0.log" if p.run else None
        text = log.read_text(errors="replace") if log and log.exists() else p.output_tail
        try:
            error = stepfile.read(p.run.run_dir / "steps.json").error or "" if p.run else ""
        except Exception as e:
            error = f"no steps.json: {e}"
        ran = [m for m in BEFORE_BOUNDARY if m in text]
        at = error.startswith(BOUNDARY[0]) and BOUNDARY[1] in text
        ok = rec.get("verdict") == "INFRA" and at and len(ran) == len(BEFORE_BOUNDARY)
        self.s.log(f"nemo2: CPU run stopped at: {error[:100]} ({p.wall_s:.0f} s)")
        return {
            "status": "pass" if ok else "fail",
            "why": None if ok else f"verdict {rec.get('verdict')}, stopped at {error[:300]!r}",
            "pinned": list(BOUNDARY),
            "verdict": rec.get("verdict"),
            "message": (rec.get("message") or "")[:600],
            "error": error[:600],
            "before_boundary": ran,
            "log_tail": None if ok else text[-1500:],
        }

    def callbacks_run(self) -> tuple[dict[str, dict], dict[str, dict]]:
        """gpucheck.nemo2_cpu in NeMo's Python; its run folder read back and checked."""
        out = self.work / "callbacks"
        out.mkdir(parents=True, exist_ok=True)
        spec = WorkloadSpec(row=self.row, steps=STEPS, output_dir=str(out))
        path = spec.write(out / "spec.json")
        log = out / "rank-0.log"
        follower = LogFollower(log)
        follower.start()
        start = time.monotonic()
        with open(log, "wb") as f:
            proc = subprocess.run(
                [self.python, "-m", "gpucheck.nemo2_cpu", str(path)],
                env={**self.env, "PYTHONWARNINGS": "ignore"},
                stdout=f,
                stderr=subprocess.STDOUT,
                timeout=self.s.timeout(),
                check=False,
            )
        run = read_run("nemo2-callbacks", out, time.monotonic() - start, proc.returncode)
        run.arrivals = follower.stop()
        self.s.log(f"nemo2: NeMo's callbacks on a stand-in model: {run.problem or 'ok'}")
        self.s.runs.append(run)
        found, ctl = run_checks(run, self.row, cpu=True)
        info = out / "nemo2_cpu.json"
        self.result["callbacks"] = json.loads(info.read_text()) if info.exists() else None
        return found, ctl


def beside(nemo_step_s: float | None, core_step_s: float | None) -> dict[str, Any]:
    """The megatron_core row's step time at the same shape, beside NeMo 2's (both must exist)."""
    if not nemo_step_s or not core_step_s:
        why = f"step times: nemo2 {nemo_step_s}, megatron_core {core_step_s}"
        return {"status": "fail", "why": why}
    return {
        "status": "pass",
        "nemo2_step_s": nemo_step_s,
        "megatron_core_step_s": core_step_s,
        "nemo2_over_megatron_core": nemo_step_s / core_step_s,
        "note": "NeMo 2 builds Megatron-Core's local attention (s x s scores); megatron_core uses "
        "torch SDPA: the ratio is what a user of each pays, not a like-for-like kernel race",
    }


def nemo_env(base: dict[str, str]) -> dict[str, str]:
    """The nemo2 stage's environment: one thread per process on CPU is left to the caller."""
    return {k: v for k, v in base.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")} | {
        "PYTHONUNBUFFERED": "1",
        "HYDRA_FULL_ERROR": os.environ.get("HYDRA_FULL_ERROR", "1"),
    }
