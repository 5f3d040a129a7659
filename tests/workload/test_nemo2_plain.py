"""The nemo2 backend's parts that need no NeMo: NVIDIA's environment, fine-tuning inputs,
the rank's environment before torch starts, and --dry-run text on a login node."""

from __future__ import annotations

import os

import pytest
from rowfactory import as_row

from perfgate.errors import ConfigError
from perfgate.workload.describe import describe
from perfgate.workload.env import nvidia_defaults
from perfgate.workload.nemo2.finetune_data import finetune_env
from perfgate.workload.nemo2.job import prepare_env
from perfgate.workload.runtime import RankInfo
from perfgate.workload.spec import WorkloadSpec

B200_TP2 = {"gpu": "b200", "tp": 2, "pp": 4, "cp": 1}


@pytest.fixture(autouse=True)
def _restore_environ():
    """prepare_env writes os.environ for real: put it back exactly after each test."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def test_nvidia_defaults_follow_gpu_and_layout() -> None:
    env = nvidia_defaults(as_row(B200_TP2), {})
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"] == "32"  # Blackwell with TP > 1
    assert env["NCCL_P2P_NET_CHUNKSIZE"] == "2097152"  # PP > 1
    assert "PYTORCH_CUDA_ALLOC_CONF" not in env  # NVIDIA leaves it off on B200
    assert env["NVTE_FWD_LAYERNORM_SM_MARGIN"] == env["NVTE_BWD_LAYERNORM_SM_MARGIN"] == "16"
    assert env["NCCL_NVLS_ENABLE"] == "0" and "NCCL_NET_GDR_LEVEL" not in env
    h100 = nvidia_defaults(as_row({"gpu": "h100", "cp": 2}), {})
    assert h100["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"  # Hopper: program order for CP overlap
    assert h100["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert "NCCL_P2P_NET_CHUNKSIZE" not in h100
    plain = nvidia_defaults(as_row({"gpu": "h100"}), {})
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in plain
    gb = nvidia_defaults(as_row({"gpu": "gb200"}), {})
    assert (gb["NCCL_NET_GDR_LEVEL"], gb["NCCL_NET_GDR_C2C"]) == ("PHB", "1")


def test_nvidia_defaults_follow_the_overrides_that_need_them() -> None:
    ub = nvidia_defaults(as_row({"gpu": "h100"}), {"trainer.strategy.ddp.nccl_ub": True})
    assert (ub["NCCL_NVLS_ENABLE"], ub["NCCL_CTA_POLICY"]) == ("1", "1")
    assert "PYTORCH_CUDA_ALLOC_CONF" not in ub
    graphs = nvidia_defaults(as_row({"gpu": "h100"}), {"model.config.enable_cuda_graph": True})
    assert "PYTORCH_CUDA_ALLOC_CONF" not in graphs


HF_ID = "meta-llama/Meta-Llama-3-8B"


def _layout(root, tokenizer: bool = True) -> None:
    for sub in ("context", "weights"):
        (root / "models" / HF_ID / sub).mkdir(parents=True)
    (root / "datasets" / "squad").mkdir(parents=True)
    (root / "datasets" / "squad" / "training.jsonl").write_text("{}\n")
    if tokenizer:
        (root / "hub" / "models--meta-llama--Meta-Llama-3-8B").mkdir(parents=True)


def test_finetune_data_in_the_llmb_layout(tmp_path) -> None:
    _layout(tmp_path)
    assert finetune_env(str(tmp_path), HF_ID, False, "r") == {
        "NEMO_HOME": str(tmp_path),
        "HF_HOME": str(tmp_path / "hub"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def test_finetune_data_without_a_tokenizer_needs_a_token(tmp_path) -> None:
    _layout(tmp_path, tokenizer=False)
    env = finetune_env(str(tmp_path), HF_ID, True, "r")
    assert env == {"NEMO_HOME": str(tmp_path), "TRANSFORMERS_OFFLINE": "0"}
    with pytest.raises(ConfigError, match=r"no tokenizer for meta-llama/Meta-Llama-3-8B in .*hub"):
        finetune_env(str(tmp_path), HF_ID, False, "r")


def test_finetune_data_missing_parts_are_named(tmp_path) -> None:
    (tmp_path / "models" / HF_ID / "context").mkdir(parents=True)
    with pytest.raises(ConfigError) as e:
        finetune_env(str(tmp_path), HF_ID, True, "r")
    assert str(e.value) == (
        f"--finetune-data {tmp_path}: missing {tmp_path}/models/{HF_ID}/weights, "
        f"{tmp_path}/datasets/squad/training.jsonl"
    )
    with pytest.raises(ConfigError, match=r"row 'r' fine-tunes meta-llama/Meta-Llama-3-8B: give"):
        finetune_env(None, HF_ID, True, "r")


ROW = {
    "id": "pretrain-llama3_70b-b200-bf16-64gpu-tp2pp4",
    "task": "pretrain",
    "model": "llama3_70b",
    "gpu": "b200",
    "precision": "bf16",
    "num_gpus": 64,
    "gbs": 128,
    "mbs": 1,
    "seq_len": 8192,
    "tp": 2,
    "pp": 4,
    "env": {"NCCL_DEBUG": "WARN"},
}


def test_prepare_env_sets_the_layered_environment_before_torch(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")  # the site's choice beats NVIDIA's default
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    monkeypatch.delenv("CUDA_DEVICE_MAX_CONNECTIONS", raising=False)
    spec = WorkloadSpec(
        row=as_row(ROW), steps=5, output_dir=str(tmp_path), env={"NCCL_DEBUG": "INFO"}
    )
    applied = prepare_env(spec, RankInfo(9, 64, 1, "slurm"))
    assert os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] == "32"
    assert os.environ["NCCL_NVLS_ENABLE"] == "1" and os.environ["NCCL_DEBUG"] == "INFO"
    assert (os.environ["RANK"], os.environ["WORLD_SIZE"], os.environ["LOCAL_RANK"]) == (
        "9",
        "64",
        "1",
    )
    assert applied["NCCL_DEBUG"] == "INFO" and applied["RANK"] == "9"
    assert "NCCL_NVLS_ENABLE" not in applied and "HF_TOKEN" not in applied


def test_prepare_env_fails_a_finetune_without_data_before_anything_starts(tmp_path) -> None:
    row = {**ROW, "task": "lora", "id": "lora-x"}
    spec = WorkloadSpec(row=as_row(row), steps=5, output_dir=str(tmp_path))
    with pytest.raises(ConfigError, match=r"row 'lora-x' fine-tunes meta-llama/Meta-Llama-3-70B"):
        prepare_env(spec, RankInfo(0, 64, 0, "slurm"))
    mock = WorkloadSpec(row=as_row(row), steps=5, output_dir=str(tmp_path), mock_data=True)
    assert "NEMO_HOME" not in prepare_env(mock, RankInfo(0, 64, 0, "slurm"))


def test_describe_without_nemo_lists_what_perfgate_sets() -> None:
    text = describe(
        as_row(ROW), {"model.config.enable_cuda_graph": "true"}, steps=30, use_nemo=False
    )
    assert text.startswith(f"workload {ROW['id']} (backend nemo2)\nenvironment set in the job:\n")
    assert "  CUDA_DEVICE_MAX_CONNECTIONS=32\n" in text and "  NCCL_DEBUG=WARN\n" in text
    assert "NeMo is not importable here" in text
    assert (
        "  recipe = 'nemo.collections.llm.recipes.llama3_70b.pretrain_recipe"
        "(performance_mode=True)'\n" in text
    )
    assert "  trainer.num_nodes = 8\n" in text and "  trainer.max_steps = 30\n" in text
    assert "  trainer.strategy.virtual_pipeline_model_parallel_size = None\n" in text
    assert (
        "  trainer.callbacks.MegatronCommOverlapCallback.tp_comm_overlap_cfg = "
        "'userbuffers_bf16_b200_h8192_tp2_mbs1_seqlen8192'\n" in text
    )
    assert "  model.config.enable_cuda_graph = True\n" in text
