"""Backend "nemo2": build the row's NeMo 2.x recipe and train it in this rank's process.

The job's srun starts one process per GPU; Lightning reads the Slurm environment, as with
NeMo-Run's Slurm executor (which also runs `fdl.build(recipe)()` in each task). NeMo's
normal log lines still go to stdout, so the log alone can be parsed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from perfgate.errors import ConfigError
from perfgate.secrets import is_secret
from perfgate.workload.dispatch import WorkloadFailed
from perfgate.workload.env import merge_env
from perfgate.workload.nemo2.face import env_defaults
from perfgate.workload.nemo2.finetune_data import finetune_env
from perfgate.workload.nemo2.models import nemo2_model
from perfgate.workload.runtime import RankInfo, Recorder
from perfgate.workload.spec import WorkloadSpec

NEMO_LOG_DIR = "nemo"  # under spec.output_dir: NeMo's own log files (nemo_log_globalrank-*)


def prepare_env(spec: WorkloadSpec, rank: RankInfo) -> dict[str, str]:
    """Set this process's environment before torch starts; return what changed (no secrets).

    Order (later wins): NVIDIA's defaults < inherited < row env < user env < fine-tuning
    paths and rank variables.
    """
    row = spec.row
    defaults = env_defaults(row, spec.overrides)
    fixed = dict(rank.env())
    if row.task != "pretrain" and not spec.mock_data:
        hf_id = nemo2_model(row.model).hf_id
        if hf_id is None:
            raise ConfigError(f"row {row.id!r}: no checkpoint id to fine-tune from")
        has_token = any(is_secret(k) and k.startswith("HF_") for k in os.environ)
        fixed.update(finetune_env(spec.finetune_data, hf_id, has_token, row.id))
    before = dict(os.environ)
    env = merge_env(before, defaults, row.env, spec.env, fixed)
    os.environ.update(env)
    return {k: v for k, v in env.items() if before.get(k) != v and not is_secret(k)}


def run(spec: WorkloadSpec, rank: RankInfo, recorder: Recorder | None) -> None:
    """Train the row's recipe for spec.steps steps; rank 0 records each step."""
    row = spec.row
    applied = prepare_env(spec, rank)  # a missing checkpoint/dataset fails here, before NeMo
    if recorder:
        recorder.update(env=applied, mock_data=spec.mock_data or row.task == "pretrain")

    # NeMo, Lightning and fiddle load only now, after the environment is set: CUDA and NCCL
    # read it when they start.
    import fiddle as fdl

    from perfgate.workload.nemo2.callback import PerfgateStepCallback
    from perfgate.workload.nemo2.recipe import RecipeInputs, build_recipe

    inputs = RecipeInputs(
        steps=spec.steps,
        overrides=spec.overrides,
        log_dir=str(Path(spec.output_dir) / NEMO_LOG_DIR),
        mock_data=spec.mock_data,
        finetune_data=spec.finetune_data,
    )
    recipe = build_recipe(row, inputs)
    task: Any = fdl.build(recipe)  # functools.partial(llm.pretrain / llm.finetune, ...)
    trainer = task.keywords["trainer"]
    trainer.callbacks.append(
        PerfgateStepCallback(recorder, row.gbs, row.seq_len, rank.world_size, rank.rank)
    )
    task()
    if recorder:
        done = len(recorder.record.steps)
        if done < spec.steps:
            raise WorkloadFailed(f"training ended after {done} of {spec.steps} steps")
