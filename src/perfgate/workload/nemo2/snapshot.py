"""The checked-in snapshot of every settable recipe path, for login nodes without NeMo.

`python -m perfgate.workload.nemo2.snapshot [--write]` (in a NeMo venv) walks the recipe
each catalog model gets from the nemo2 backend, pretraining and fine-tuning, and lists every
field of every config object with the type of its value. The contract test regenerates it
and fails when the checked-in file differs, so the snapshot always matches the pinned NeMo.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import Any

from perfgate.catalog.rows import Row
from perfgate.workload.nemo2.models import NEMO2_MODELS
from perfgate.workload.overrides import ADDABLE_CALLBACKS, split_common

SNAPSHOT = Path(__file__).with_name("paths.json")

# A representative row per task: the fields only shape values, not which paths exist,
# except that H100 BF16 selects a TP-overlap userbuffer config where the model has one.
_BASE = Row(
    id="pretrain-llama3_8b",
    task="pretrain",
    model="llama3_8b",
    gpu="h100",
    precision="bf16",
    num_gpus=8,
    gpus_per_node=8,
    gbs=8,
    mbs=1,
    seq_len=4096,
)


def _walk(cfg: Any, prefix: str, out: dict[str, str], seen: set[int] | None = None) -> None:
    # NeMo loads only when a snapshot is made (in a NeMo venv); login nodes just read the file.
    import fiddle as fdl

    from perfgate.workload.nemo2.paths import class_name, megatron_ddp_config, params_of

    seen = set() if seen is None else seen
    seen.add(id(cfg))
    for name in sorted(params_of(cfg)):
        try:
            value = getattr(cfg, name)
        except (AttributeError, TypeError, ValueError):  # required, or a default_factory
            value = None
        path = f"{prefix}.{name}" if prefix else name
        if prefix == "trainer" and name == "callbacks" and isinstance(value, list):
            for cb in value:
                _walk(cb, f"trainer.callbacks.{class_name(cb)}", out, seen)
            continue
        if path == "trainer.strategy.ddp" and value == "megatron":
            value = megatron_ddp_config()  # what an override under it materializes
        if isinstance(value, fdl.Buildable):
            out[path] = "Config"
            if id(value) not in seen:  # e.g. the FLOPs callback's model_config is model.config
                _walk(value, path, out, seen)
        else:
            out[path] = type(value).__name__


def recipe_paths(row: Row) -> dict[str, str]:
    """Every settable path of the row's recipe (plus addable callbacks) -> type name."""
    import nemo_run as run  # NeMo: see _walk

    from perfgate.workload.nemo2.paths import import_dotted
    from perfgate.workload.nemo2.recipe import RecipeInputs, build_recipe

    recipe = build_recipe(row, RecipeInputs(steps=50, mock_data=False))
    out: dict[str, str] = {}
    _walk(recipe, "", out)
    for name, dotted in ADDABLE_CALLBACKS.items():
        if not any(p.startswith(f"trainer.callbacks.{name}.") for p in out):
            _walk(run.Config(import_dotted(dotted)), f"trainer.callbacks.{name}", out)
    return out


def generate() -> dict[str, Any]:
    """The snapshot: versions, paths common to all models, and each model's own paths."""
    per_model: dict[str, dict[str, str]] = {}
    for model in sorted(NEMO2_MODELS):
        for task in ("pretrain", "lora") if NEMO2_MODELS[model].hf_id else ("pretrain",):
            row = replace(_BASE, id=f"{task}-{model}", task=task, model=model)
            per_model[f"{task}:{model}"] = recipe_paths(row)
    common, own = split_common(per_model)
    return {
        "versions": {d: metadata.version(d) for d in ("nemo_toolkit", "megatron-core")},
        "common": common,
        "recipes": own,
    }


def load() -> dict[str, Any]:
    """The checked-in snapshot."""
    return json.loads(SNAPSHOT.read_text())


def valid_paths(model: str, task: str, snapshot: dict[str, Any] | None = None) -> dict[str, str]:
    """Settable paths of that model's recipe for the task (sft and lora share a recipe)."""
    snap = snapshot or load()
    key = f"{'pretrain' if task == 'pretrain' else 'lora'}:{model}"
    return {**snap["common"], **snap["recipes"].get(key, {})}


def main(argv: list[str] | None = None) -> int:
    """Print the snapshot as JSON, or --write it over the checked-in file."""
    parser = argparse.ArgumentParser(prog="python -m perfgate.workload.nemo2.snapshot")
    parser.add_argument("--write", action="store_true", help=f"overwrite {SNAPSHOT.name}")
    args = parser.parse_args(argv)
    text = json.dumps(generate(), indent=0, sort_keys=True) + "\n"
    if args.write:
        SNAPSHOT.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
