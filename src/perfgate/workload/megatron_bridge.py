"""Backend "megatron_bridge": build the row's ConfigContainer and train it in this process.

Megatron-Bridge, torch and perfgate.workload.recording (torch) are imported only inside the
functions that need them: Bridge hard-imports transformer_engine, and a login node plans and
checks these rows without either. Every rank builds the same config, sets the environment
the recipe names (or NVIDIA's defaults), and calls Bridge's pretrain/finetune with a callback
through which rank 0 records each step in steps.json (Bridge >= 0.3 has training callbacks).
Bridge's own `Step Time :` log lines still go to stdout, so `perfgate parse` works on the log
alone.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import time
from collections.abc import Mapping
from typing import Any

from perfgate.catalog.rows import Row
from perfgate.errors import ConfigError
from perfgate.secrets import is_secret
from perfgate.workload.bridge_plan import (
    bridge_env_defaults,
    normalize_overrides,
    perf_recipe_name,
    planned_settings,
    precision_preset,
    recipe_call,
    set_attr_path,
)
from perfgate.workload.dispatch import WorkloadFailed
from perfgate.workload.env import merge_env
from perfgate.workload.runtime import RankInfo, Recorder, one_line_error, torch_dist_env
from perfgate.workload.spec import WorkloadSpec

FLOPS_CONVENTION = "megatron_bridge"  # Bridge's flop_utils: causal attention


def find_perf_recipe(name: str) -> Any | None:
    """NVIDIA's flat performance recipe function of that name (Bridge >= 0.6), or None."""
    try:
        perf = importlib.import_module("megatron.bridge.perf_recipes")
    except ImportError:
        return None
    for info in pkgutil.walk_packages(perf.__path__, prefix=f"{perf.__name__}."):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        fn = getattr(importlib.import_module(info.name), name, None)
        if callable(fn):
            return fn
    return None


def build_config(
    row: Row, steps: int, overrides: Mapping[str, Any], mock_data: bool
) -> tuple[Any, str]:
    """The row's ConfigContainer and which recipe it started from."""
    task = row.task
    if task != "pretrain" and not mock_data:
        raise ConfigError(
            f"row {row.id!r}: the megatron_bridge backend fine-tunes on mock data and "
            "random weights only (--mock-finetune-data); for SQuAD and a checkpoint run "
            "Bridge's scripts/performance with backend 'command'"
        )
    recipe_call(row)  # an unmapped model or task is a ConfigError before any import
    try:
        importlib.import_module("megatron.bridge")
    except ImportError as e:
        raise WorkloadFailed(
            f"Megatron-Bridge cannot be imported in this container ({one_line_error(e)})"
        ) from None
    perf_name = perf_recipe_name(row)
    perf_fn = find_perf_recipe(perf_name)
    if perf_fn is not None:
        cfg, source = perf_fn(), f"megatron.bridge.perf_recipes {perf_name}"
    else:
        module, fn_name, kwargs = recipe_call(row)
        fn = getattr(importlib.import_module(module), fn_name, None)
        if fn is None:
            raise ConfigError(f"this Megatron-Bridge has no recipe {module}.{fn_name}")
        cfg, source = fn(**kwargs), f"{module}.{fn_name}"
        from megatron.bridge.training import mixed_precision

        preset = precision_preset(row)[0]
        if not hasattr(mixed_precision, preset):
            raise ConfigError(f"this Megatron-Bridge has no mixed-precision preset {preset}")
        cfg.mixed_precision = getattr(mixed_precision, preset)()
        if preset == "bf16_with_fp8_current_scaling_mixed":
            cfg.mixed_precision.first_last_layers_bf16 = False  # as utils/precision.py
    if not isinstance(cfg.mixed_precision, str):
        cfg.mixed_precision.grad_reduce_in_fp32 = False
    from megatron.bridge.training.config import MockGPTDatasetConfig

    cfg.dataset = MockGPTDatasetConfig(
        sequence_length=row.seq_len,
        random_seed=1234,
        reset_attention_mask=False,
        reset_position_ids=False,
        eod_mask_loss=False,
        num_dataset_builder_threads=1,
        split="99990,8,2",
        data_sharding=True,
        dataloader_type="single",
        num_workers=8,
    )
    if task != "pretrain":
        cfg.checkpoint.pretrained_checkpoint = None  # random weights: mock fine-tuning
    settings = {
        **planned_settings(row, steps),
        **normalize_overrides(row.overrides, overrides),
    }
    for path, value in settings.items():
        set_attr_path(cfg, path, value)
    return cfg, source


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


def prepare_env(
    spec: WorkloadSpec, rank: RankInfo, recipe_env: Mapping[str, Any] | None
) -> dict[str, str]:
    """Set the environment (recipe's < inherited < row < user < rank); return what changed."""
    defaults = {k: str(v) for k, v in (recipe_env or {}).items()} or bridge_env_defaults(spec.row)
    before = dict(os.environ)
    env = merge_env(before, defaults, spec.row.env, spec.env, torch_dist_env(rank))
    os.environ.update(env)
    return {k: v for k, v in env.items() if before.get(k) != v and not is_secret(k)}


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
    # calls pretrain(); perfgate's mock fine-tuning has none (random weights).
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
