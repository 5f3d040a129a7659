"""Backend "megatron_bridge": build the row's ConfigContainer and train it in this process.

Megatron-Bridge, torch and perfgate.workload.recording (torch) are imported only inside the
functions that need them: Bridge hard-imports transformer_engine, and a login node plans and
checks these rows without either. Every rank builds the same config (bridge.config), sets
the environment the recipe names (or NVIDIA's defaults) and re-executes itself once so that
CUDA, NCCL and Transformer Engine see it from the start, then calls Bridge's pretrain() with
a callback through which rank 0 records each step in steps.json (Bridge >= 0.3 has training
callbacks).
Bridge's own `Step Time :` log lines still go to stdout, so `perfgate parse` works on the log
alone.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

from perfgate.errors import ConfigError
from perfgate.secrets import is_secret
from perfgate.workload.bridge.config import build_config, find_perf_recipe
from perfgate.workload.bridge.face import env_defaults
from perfgate.workload.dispatch import WorkloadFailed
from perfgate.workload.env import merge_env
from perfgate.workload.runtime import RankInfo, Recorder, torch_dist_env
from perfgate.workload.spec import WorkloadSpec

FLOPS_CONVENTION = "megatron_bridge"  # Bridge's flop_utils: causal attention
REEXEC_MARK = "PERFGATE_BRIDGE_ENV_SET"  # set in the re-executed process
__all__ = ["StepRecorder", "build_config", "find_perf_recipe", "prepare_env", "run"]


class StepRecorder:
    """Bridge training callbacks: rank 0 appends each finished step to steps.json.

    The step time is the wall time from the end of one step to the end of the next (the
    first from its start), after a device synchronisation: what Megatron's `elapsed time
    per iteration` measures, at full resolution.
    """

    def __init__(self, recorder: Recorder | None, gbs: int, seq_len: int, world_size: int):
        self.recorder = recorder
        self.gbs = gbs
        self.tokens_per_step = gbs * seq_len
        self.world_size = world_size
        self.steps_seen = 0
        self._last: float | None = None
        self._flops_fn: Any = None

    @staticmethod
    def _now() -> float:
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return time.perf_counter()

    def on_train_start(self, context: Any) -> None:
        """Versions (CUDA is up now), status running, and Bridge's FLOPs formula if any."""
        from perfgate.workload.recording import start_record

        try:
            from megatron.bridge.training.utils.flop_utils import num_floating_point_operations

            self._flops_fn = num_floating_point_operations
        except ImportError:
            self._flops_fn = None
        convention = FLOPS_CONVENTION if self._flops_fn else None
        start_record(self.recorder, self.world_size, convention)

    def on_train_step_start(self, context: Any) -> None:
        """Start the clock of the first step."""
        if self._last is None:
            self._last = self._now()

    def on_train_step_end(self, context: Any) -> None:
        """Record the finished step (0-based) with tokens/s, TFLOP/s and loss."""
        from perfgate.workload.recording import make_step

        now = self._now()
        step_time = now - (self._last if self._last is not None else now)
        self._last = now
        index, self.steps_seen = self.steps_seen, self.steps_seen + 1
        if self.recorder is None or step_time <= 0:
            return
        tflops = None
        if self._flops_fn is not None:
            try:
                flops = self._flops_fn(context.state.cfg, self.gbs)
                tflops = float(flops) / step_time / self.world_size / 1e12
            except Exception:  # a formula gap for one model must not stop the run
                self._flops_fn = None
        loss = _loss(getattr(context, "loss_dict", None))
        step = make_step(index, step_time, self.tokens_per_step, self.world_size, tflops, loss)
        self.recorder.add_step(step)

    def on_train_end(self, context: Any) -> None:
        """Gather every rank's peak memory (collective)."""
        from perfgate.workload.recording import gather_peak_memory

        gather_peak_memory(self.recorder)


def _loss(loss_dict: Mapping[str, Any] | None) -> float | None:
    if not loss_dict:
        return None
    value = next(iter(loss_dict.values()))
    try:
        return float(value.item() if hasattr(value, "item") else value)
    except (TypeError, ValueError):
        return None


def callback_manager(rec: StepRecorder) -> Any:
    """Bridge's CallbackManager with the recorder's events registered."""
    from megatron.bridge.training.callbacks import CallbackManager

    manager = CallbackManager()
    for event in ("on_train_start", "on_train_step_start", "on_train_step_end", "on_train_end"):
        manager.register(event, getattr(rec, event))
    return manager


def bridge_env(
    spec: WorkloadSpec, rank: RankInfo, recipe_env: Mapping[str, Any] | None
) -> dict[str, str]:
    """The rank's environment: recipe's < inherited < row < user < rank."""
    recipe = {k: str(v) for k, v in (recipe_env or {}).items()}
    defaults = recipe or env_defaults(spec.row, spec.overrides)
    return merge_env(dict(os.environ), defaults, spec.row.env, spec.env, torch_dist_env(rank))


def needs_reexec(env: Mapping[str, str], current: Mapping[str, str]) -> bool:
    """Whether the process must start again for `env` to be seen at import time.

    CUDA, NCCL and Transformer Engine read many of these variables when they are imported or
    initialised, and building the config has imported them: as NVIDIA's scripts/performance,
    the workload re-executes itself once with the environment set (never twice).
    """
    if current.get(REEXEC_MARK) == "1":
        return False
    return any(current.get(k) != v for k, v in env.items())


def prepare_env(
    spec: WorkloadSpec, rank: RankInfo, recipe_env: Mapping[str, Any] | None
) -> dict[str, str]:
    """Set the environment (re-executing once where it changed); return what perfgate set.

    What was set is the difference to the environment the launcher gave the first process.
    """
    env = bridge_env(spec, rank, recipe_env)
    if needs_reexec(env, os.environ):
        launched = {k: os.environ.get(k) for k in env}
        sys.stdout.flush()
        sys.stderr.flush()
        changed = [k for k, v in env.items() if launched[k] != v]
        os.execve(
            sys.executable,
            sys.orig_argv,
            {**os.environ, **env, REEXEC_MARK: "1", f"{REEXEC_MARK}_KEYS": ",".join(changed)},
        )
    keys = os.environ.get(f"{REEXEC_MARK}_KEYS", "").split(",")
    return {k: env[k] for k in keys if k in env and not is_secret(k)}


def run(spec: WorkloadSpec, rank: RankInfo, recorder: Recorder | None) -> None:
    """Train the row's ConfigContainer for spec.steps steps; rank 0 records each step."""
    row = spec.row
    cfg, source = build_config(row, spec.steps, spec.overrides, spec.mock_data)
    applied = prepare_env(spec, rank, getattr(cfg, "env_vars", None))
    if recorder:
        recorder.update(env=applied, mock_data=True)
        print(f"perfgate.workload: Megatron-Bridge config from {source}", flush=True)
    from megatron.bridge.training.gpt_step import forward_step
    from megatron.bridge.training.pretrain import pretrain

    # Also for SFT/LoRA rows: Bridge's finetune() only asserts a checkpoint to load and then
    # calls pretrain(); LoRA's base weights load in pretrain's PEFT setup.
    if "callbacks" not in inspect.signature(pretrain).parameters:
        raise ConfigError(
            "this Megatron-Bridge's pretrain() takes no callbacks (added in 0.3): run the row "
            "with backend 'command' and Bridge's scripts/performance; perfgate parses its logs"
        )
    rec = StepRecorder(recorder, row.gbs, row.seq_len, rank.world_size)
    pretrain(config=cfg, forward_step_func=forward_step, callbacks=callback_manager(rec))
    if recorder and len(recorder.record.steps) < spec.steps:
        raise WorkloadFailed(
            f"training ended after {len(recorder.record.steps)} of {spec.steps} steps"
        )
