"""Fine-tuning inputs in the llmb layout (seed 004): checkpoint, SQuAD, tokenizer cache.

    DIR/models/<hf id>/{context,weights}     the NeMo 2 checkpoint (nemo://<hf id>)
    DIR/datasets/squad/training.jsonl        SQuAD (packed/ is built from it and cached)
    DIR/hub/                                 Hugging Face cache holding the tokenizer
DIR becomes NEMO_HOME (where NeMo resolves nemo:// checkpoints and its dataset cache).
"""

from __future__ import annotations

from pathlib import Path

from perfgate.errors import ConfigError


def finetune_env(
    data_dir: str | None, hf_id: str, has_hf_token: bool, row_id: str
) -> dict[str, str]:
    """Check DIR has what fine-tuning needs; the variables that point NeMo at it."""
    if not data_dir:
        raise ConfigError(
            f"row {row_id!r} fine-tunes {hf_id}: give --finetune-data DIR (llmb "
            "checkpoint_and_dataset layout: models/<hf id>/{context,weights}, "
            "datasets/squad/) or --mock-finetune-data"
        )
    root = Path(data_dir)
    needed = [
        root / "models" / hf_id / "context",
        root / "models" / hf_id / "weights",
        root / "datasets" / "squad" / "training.jsonl",
    ]
    missing = [str(p) for p in needed if not p.exists()]
    if missing:
        raise ConfigError(f"--finetune-data {data_dir}: missing {', '.join(missing)}")
    env = {"NEMO_HOME": str(root)}
    hub = root / "hub"
    cached = (hub / f"models--{hf_id.replace('/', '--')}").is_dir()
    if cached:
        env.update(HF_HOME=str(hub), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    elif has_hf_token:
        env["TRANSFORMERS_OFFLINE"] = "0"  # the tokenizer is fetched with HF_TOKEN
    else:
        raise ConfigError(
            f"--finetune-data {data_dir}: no tokenizer for {hf_id} in {hub} and no HF_TOKEN "
            "in the job's environment"
        )
    return env
