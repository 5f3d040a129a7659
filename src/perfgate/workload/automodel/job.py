"""Backend "automodel": run NeMo Automodel's benchmark recipe with the row's generated YAML.

Every rank writes the row's config (see automodel.config) and runs
`python -m nemo_automodel.recipes.llm.benchmark --config X.yaml`, as Automodel's docs run
it under torchrun; srun starts the ranks here, so perfgate supplies torchrun's variables.
Rank 0 tees the log and records steps from its `Max iter time` lines through perfgate.logs,
live, as the command backend does (workload/child.py); Automodel's own JSON summary lands beside it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from perfgate.catalog.rows import Row
from perfgate.errors import ConfigError
from perfgate.secrets import is_secret
from perfgate.workload.automodel.config import AutomodelInputs, build_config, to_yaml
from perfgate.workload.child import run_argv
from perfgate.workload.env import merge_env
from perfgate.workload.runtime import RankInfo, Recorder, torch_dist_env
from perfgate.workload.spec import WorkloadSpec

ROOT_ENV = "PERFGATE_AUTOMODEL_ROOT"  # the container's Automodel checkout (its example YAMLs)
DEFAULT_ROOT = "/opt/Automodel"  # where NVIDIA's Automodel containers keep it
CONFIG_FILE = "automodel.yaml"  # rank 0's copy of the config it ran, in spec.output_dir
RECIPE = "nemo_automodel.recipes.llm.benchmark"


def checkpoint_env(
    row: Row, model_cfg: dict[str, Any], finetune_data: str | None, has_token: bool
) -> dict[str, str]:
    """Where a fine-tuning rank finds its Hugging Face checkpoint; a clear error when nowhere."""
    hf_id = model_cfg.get("pretrained_model_name_or_path")
    if not hf_id:  # from_config: random weights, nothing to load
        return {}
    if finetune_data:
        hub = Path(finetune_data) / "hub"
        cached = hub / f"models--{str(hf_id).replace('/', '--')}"
        if not cached.is_dir():
            raise ConfigError(f"--finetune-data {finetune_data}: missing {cached}")
        return {"HF_HOME": str(hub), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if has_token:
        return {}
    raise ConfigError(
        f"row {row.id!r} fine-tunes {hf_id}: give --finetune-data DIR (with DIR/hub/ a "
        "Hugging Face cache holding it), HF_TOKEN in the job's environment, or "
        "--mock-finetune-data (random weights)"
    )


def measured_versions(world_size: int, timeout_s: float = 120.0) -> dict[str, str]:
    """job_versions() measured by this interpreter in a short child (torch imported there)."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "perfgate.workload.versions", str(world_size)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        return json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return {}


def run(spec: WorkloadSpec, rank: RankInfo, recorder: Recorder | None) -> None:
    """Run the row's Automodel benchmark on this rank; rank 0 records its steps."""
    row = spec.row
    root = os.environ.get(ROOT_ENV, DEFAULT_ROOT)
    inputs = AutomodelInputs(
        steps=spec.steps,
        overrides=spec.overrides,
        output_dir=spec.output_dir,
        mock_data=spec.mock_data,
        automodel_root=root,
    )
    cfg, source = build_config(row, inputs)
    fixed = torch_dist_env(rank)
    if row.task != "pretrain":
        has_token = any(is_secret(k) and k.startswith("HF_") for k in os.environ)
        fixed.update(checkpoint_env(row, cfg.get("model", {}), spec.finetune_data, has_token))
    before = dict(os.environ)
    env = merge_env(before, None, row.env, spec.env, fixed)
    # A node-local file per rank: ranks never race on one shared file.
    path = Path(tempfile.mkdtemp(prefix="perfgate-automodel-")) / CONFIG_FILE
    path.write_text(f"# perfgate: row {row.id}, base {source}\n" + to_yaml(cfg))
    if recorder:
        out = Path(spec.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out / CONFIG_FILE)
        recorder.update(
            env={k: v for k, v in env.items() if before.get(k) != v and not is_secret(k)},
            mock_data=True,  # every Automodel benchmark config reads MockIterableDataset
            flops_convention="automodel",
            versions=measured_versions(rank.world_size),
        )
    try:
        run_argv(spec, [sys.executable, "-m", RECIPE, "--config", str(path)], env, recorder)
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)
