"""The megatron_bridge backend's share of NVIDIA's benchmark scripts, without Megatron-Bridge:
performance-recipe choice, the library-recipe additions, derived knobs, the MLA stage layout,
the LoRA base checkpoint, the performance-recipe finder, and the environment re-exec."""

from __future__ import annotations

import os
import sys

import pytest
from rowfactory import as_row

from perfgate.errors import ConfigError
from perfgate.workload.bridge import job as bridge_job
from perfgate.workload.bridge.config import find_perf_recipe, perf_recipe_names
from perfgate.workload.bridge.face import describe as describe_bridge
from perfgate.workload.bridge.perf import (
    derived_settings,
    fallback_settings,
    pick_perf_recipe,
    stage_layout,
)
from perfgate.workload.bridge.plan import peft_checkpoint, planned_settings
from perfgate.workload.runtime import RankInfo
from perfgate.workload.spec import WorkloadSpec
from perfgate.workload.validate import check_overrides

ROW = {
    "task": "pretrain",
    "model": "llama3_8b",
    "gpu": "b200",
    "precision": "bf16",
    "num_gpus": 8,
    "backend": "megatron_bridge",
}
NAMES = {
    "llama3_8b_pretrain_8gpu_b200_bf16_config",
    "llama3_8b_pretrain_64gpu_b200_bf16_config",
    "llama3_8b_pretrain_64gpu_b200_bf16_large_scale_config",  # a variant never stands for a row
    "llama3_70b_pretrain_32gpu_gb200_fp8cs_config",
    "llama3_70b_pretrain_64gpu_gb200_fp8cs_config",
    "llama3_70b_peft_8gpu_b200_fp8mx_config",
}


def test_the_exact_recipe_else_nvidias_default_count_else_the_largest() -> None:
    exact = ("llama3_8b_pretrain_8gpu_b200_bf16_config", True)
    assert pick_perf_recipe(as_row(ROW), NAMES) == exact
    assert pick_perf_recipe(as_row({**ROW, "num_gpus": 64}), NAMES) == (
        "llama3_8b_pretrain_64gpu_b200_bf16_config",
        True,
    )
    # 16 GPUs: scripts/performance's default count for Llama3 8B BF16 on B200 is 8, not 64.
    assert pick_perf_recipe(as_row({**ROW, "num_gpus": 16}), NAMES) == (
        "llama3_8b_pretrain_8gpu_b200_bf16_config",
        False,
    )
    fp8_70b = {**ROW, "model": "llama3_70b", "gpu": "gb200", "precision": "fp8", "num_gpus": 128}
    assert pick_perf_recipe(as_row(fp8_70b), NAMES) == (
        "llama3_70b_pretrain_64gpu_gb200_fp8cs_config",  # no default listed: the largest
        False,
    )
    lora = {**ROW, "model": "llama3_70b", "task": "lora", "precision": "mxfp8"}
    assert pick_perf_recipe(as_row(lora), NAMES) == ("llama3_70b_peft_8gpu_b200_fp8mx_config", True)
    assert pick_perf_recipe(as_row({**ROW, "gpu": "h200"}), NAMES) is None
    assert pick_perf_recipe(as_row({**ROW, "precision": "nvfp4"}), NAMES) is None


def test_the_library_recipe_gets_scripts_performance_settings() -> None:
    dense = fallback_settings(as_row({**ROW, "tp": 2, "pp": 4, "vp": 5, "num_gpus": 64}))
    assert dense["optimizer.use_precision_aware_optimizer"] is True  # BF16
    assert dense["model.should_pad_vocab"] is True
    assert dense["tokenizer.use_tokenizer_vocab_size"] is False
    assert (dense["train.manual_gc"], dense["train.manual_gc_interval"]) == (True, 100)
    assert dense["optimizer.overlap_param_gather_with_optimizer_step"] is True  # DP 2, PP, VP
    assert not any("moe" in k for k in dense)
    moe = fallback_settings(
        as_row({**ROW, "model": "qwen3_30b_a3b", "precision": "mxfp8", "pp": 2, "vp": 2})
    )
    assert moe["model.moe_router_fusion"] is moe["model.moe_permute_fusion"] is True
    assert moe["model.moe_router_force_load_balancing"] is True
    assert "optimizer.use_precision_aware_optimizer" not in moe  # not BF16
    # MXFP8: NVIDIA leaves the optimizer-step overlap off (NaN grad norm).
    assert "optimizer.overlap_param_gather_with_optimizer_step" not in moe
    single_dp = fallback_settings(as_row({**ROW, "num_gpus": 8, "pp": 8, "vp": 2}))
    assert "optimizer.overlap_param_gather_with_optimizer_step" not in single_dp


def test_knobs_bring_what_nvidias_options_set_with_them() -> None:
    graphs = derived_settings({"model.cuda_graph_impl": "transformer_engine"})
    assert graphs == {"rng.te_rng_tracker": True, "model.use_te_rng_tracker": True}
    off = derived_settings({"model.cuda_graph_impl": "none"})
    assert off["model.use_te_rng_tracker"] is False and off["model.cuda_graph_scope"] == []
    assert derived_settings({"model.recompute_num_layers": 4}) == {
        "model.recompute_granularity": "full",
        "model.recompute_method": "block",
    }
    assert derived_settings({"model.recompute_modules": ["mla_up_proj"]}) == {
        "model.recompute_granularity": "selective"
    }
    # What the row or user set explicitly stays theirs.
    assert derived_settings({"model.cuda_graph_impl": "local", "rng.te_rng_tracker": False}) == {
        "model.use_te_rng_tracker": True
    }


def test_stage_layout_is_bridges_rule() -> None:
    mtp = ["mtp", "loss"]
    # Megatron-Bridge 0.6.2 recipes/deepseek/h100/deepseek_v3.py layout table, (PP, VP) pairs:
    assert [s.count("decoder") for s in stage_layout(61, 4, mtp)] == [16, 16, 16, 13]  # (4, 1)
    assert [s.count("decoder") for s in stage_layout(61, 8, mtp)] == [8] * 7 + [5]  # (8, 1), (4, 2)
    sixteen = stage_layout(61, 16, mtp)  # (16, 1), (8, 2), (4, 4)
    assert sixteen[0] == ["embedding"] + ["decoder"] * 4 and sixteen[-1] == ["decoder", *mtp]
    assert [s.count("decoder") for s in sixteen] == [4] * 15 + [1]
    # (4, 8), which the table lacks: 2 a stage, the 31st holds the last layer.
    thirty_two = stage_layout(61, 32, ["loss"])
    assert [s.count("decoder") for s in thirty_two] == [2] * 30 + [1, 0]
    assert thirty_two[-1] == ["loss"]


def test_expert_tp_is_the_rows_where_it_says_else_the_recipes() -> None:
    moe = {**ROW, "model": "qwen3_235b_a22b", "tp": 2, "ep": 8}
    assert "model.expert_tensor_parallel_size" not in planned_settings(as_row(moe), 5)
    assert planned_settings(as_row({**moe, "etp": 1}), 5)["model.expert_tensor_parallel_size"] == 1


def test_a_lora_row_names_its_base_checkpoint() -> None:
    bare = as_row({**ROW, "task": "lora"})
    with pytest.raises(
        ConfigError, match=r"give its checkpoint folder with --override checkpoint\."
    ):
        peft_checkpoint(bare, {})
    # The login-node check lets it through (a session may only dry-run it); the dry run says it.
    assert check_overrides(bare).startswith("checked the recipe mapping")
    assert "(LoRA: the job stops unless --override checkpoint." in describe_bridge(bare, 5, {})
    lora = as_row({**ROW, "task": "lora", "overrides": {"checkpoint.pretrained_checkpoint": "/c"}})
    assert peft_checkpoint(lora, {}) == "/c"
    assert "(LoRA:" not in describe_bridge(lora, 5, {})
    assert peft_checkpoint(lora, {"checkpoint.pretrained_checkpoint": "/mine"}) == "/mine"
    assert peft_checkpoint(as_row(ROW), {}) is None
    assert peft_checkpoint(as_row({**ROW, "task": "sft"}), {}) is None  # random weights


RECIPE = """
def llama3_8b_pretrain_8gpu_b200_bf16_config():
    return "{family} recipe"
"""


def test_perf_recipes_are_found_in_their_family_packages(tmp_path, monkeypatch) -> None:
    root = tmp_path / "megatron" / "bridge" / "perf_recipes"
    gpu = root / "llama" / "b200"
    gpu.mkdir(parents=True)
    for folder in (root, root / "llama"):
        (folder / "__init__.py").write_text("")
    (gpu / "__init__.py").write_text("")
    (gpu / "llama3.py").write_text(RECIPE.format(family="llama"))
    (root / "llama" / "__init__.py").write_text(
        "from megatron.bridge.perf_recipes.llama.b200.llama3 import *  # noqa\n"
    )
    (root / "_common.py").write_text("def helper_config():\n    pass\n")
    broken = root / "wan"  # a family whose imports this container lacks
    broken.mkdir()
    (broken / "__init__.py").write_text("import not_installed_video_lib\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ours = [m for m in sys.modules if m == "megatron" or m.startswith("megatron.")]
    for name in ours:
        monkeypatch.delitem(sys.modules, name)
    try:
        assert perf_recipe_names() == {
            "llama3_8b_pretrain_8gpu_b200_bf16_config",
            "helper_config",
        }
        assert find_perf_recipe("llama3_8b_pretrain_8gpu_b200_bf16_config")() == "llama recipe"
        assert find_perf_recipe("llama3_70b_pretrain_64gpu_b200_bf16_config") is None
    finally:  # the fake package must not outlive the test (later tests import no megatron)
        for name in [m for m in sys.modules if m == "megatron" or m.startswith("megatron.")]:
            if name not in ours:
                del sys.modules[name]


def test_the_environment_is_set_before_bridge_is_imported_again(tmp_path, monkeypatch) -> None:
    spec = WorkloadSpec(
        row=as_row({**ROW, "env": {"NCCL_NVLS_ENABLE": "0"}}),
        steps=5,
        output_dir=str(tmp_path),
        env={"NVTE_FUSED_ATTN": "1"},
    )
    rank = RankInfo(0, 8, 0, "slurm")
    recipe_env = {"TORCH_NCCL_HIGH_PRIORITY": 1, "NCCL_NVLS_ENABLE": 1}
    calls = []

    class Reexec(Exception):
        pass

    def execve(path, argv, env):
        calls.append((path, argv, env))
        raise Reexec

    monkeypatch.setattr(os, "execve", execve)
    monkeypatch.delenv(bridge_job.REEXEC_MARK, raising=False)
    monkeypatch.delenv("TORCH_NCCL_HIGH_PRIORITY", raising=False)
    with pytest.raises(Reexec):
        bridge_job.prepare_env(spec, rank, recipe_env)
    path, argv, env = calls[0]
    assert path == sys.executable and argv == sys.orig_argv  # the same command, once more
    assert env["TORCH_NCCL_HIGH_PRIORITY"] == "1"  # the recipe's
    assert env["NCCL_NVLS_ENABLE"] == "0" and env["NVTE_FUSED_ATTN"] == "1"  # row's, user's
    assert env[bridge_job.REEXEC_MARK] == "1"
    # The re-executed process finds its environment set: no second exec, and it reports what
    # perfgate set.
    monkeypatch.setattr(os, "environ", dict(env))
    applied = bridge_job.prepare_env(spec, rank, recipe_env)
    assert len(calls) == 1
    assert applied["TORCH_NCCL_HIGH_PRIORITY"] == "1" and applied["NVTE_FUSED_ATTN"] == "1"
    assert bridge_job.needs_reexec({"A": "1"}, {"A": "1"}) is False
    assert bridge_job.needs_reexec({"A": "1"}, {"A": "2"}) is True


class _MockGPTDatasetConfig:
    """Megatron-Bridge 0.6's signature: seq_length is the one named parameter (the contract
    suites prove it against the real class)."""

    def __init__(self, seq_length: int, **kwargs):
        self.seq_length, self.kwargs = seq_length, kwargs


def test_the_mock_dataset_gets_seq_length_and_keeps_the_recipes_loader(monkeypatch) -> None:
    from types import ModuleType, SimpleNamespace

    from perfgate.workload.bridge.config import mock_dataset

    fake = ModuleType("megatron.bridge.training.config")
    fake.MockGPTDatasetConfig = _MockGPTDatasetConfig
    for name in ("megatron", "megatron.bridge", "megatron.bridge.training"):
        monkeypatch.setitem(sys.modules, name, ModuleType(name))
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    old = SimpleNamespace(num_workers=2, pin_memory=True, persistent_workers=True)
    ds = mock_dataset(8192, old)
    assert ds.seq_length == 8192 and "sequence_length" not in ds.kwargs
    assert (ds.kwargs["num_workers"], ds.kwargs["pin_memory"]) == (2, True)
    assert ds.kwargs["split"] == "99990,8,2" and ds.kwargs["dataloader_type"] == "single"


def test_finish_fixes_what_depends_on_the_config_objects() -> None:
    from types import SimpleNamespace

    from perfgate.workload.bridge.config import finish

    def cfg():
        return SimpleNamespace(
            comm_overlap=SimpleNamespace(defer_embedding_wgrad_compute=True),
            model=SimpleNamespace(moe_flex_dispatcher_backend="hybridep", moe_hybridep_num_sms=20),
            dist=SimpleNamespace(use_tp_pp_dp_mapping=False),
        )

    fsdp = cfg()
    finish(fsdp, as_row({**ROW, "fsdp": True}), {})
    assert fsdp.comm_overlap.defer_embedding_wgrad_compute is False  # not with Megatron FSDP
    assert fsdp.model.moe_hybridep_num_sms == 32  # scripts/performance's HybridEP SMs
    lora = cfg()
    finish(lora, as_row({**ROW, "task": "lora", "pp": 2}), {})
    assert lora.dist.use_tp_pp_dp_mapping is True  # PEFT with PP, as utils/overrides.py
    assert lora.comm_overlap.defer_embedding_wgrad_compute is True
    plain = cfg()
    finish(plain, as_row({**ROW, "task": "lora"}), {})
    assert plain.dist.use_tp_pp_dp_mapping is False


def test_finish_turns_ep_overlap_off_for_a_pipeline_without_vp() -> None:
    from types import SimpleNamespace

    from perfgate.workload.bridge.config import finish

    def cfg(vp):
        return SimpleNamespace(
            comm_overlap=SimpleNamespace(
                overlap_moe_expert_parallel_comm=True, delay_wgrad_compute=True
            ),
            model=SimpleNamespace(virtual_pipeline_model_parallel_size=vp),
            dist=SimpleNamespace(use_tp_pp_dp_mapping=False),
        )

    # Bridge: "If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be
    # specified when pipeline_model_parallel_size > 1" (Qwen3 235B B200 MXFP8, PP8 no VP)
    novp = cfg(None)
    finish(novp, as_row({**ROW, "pp": 8}), {})
    assert novp.comm_overlap.overlap_moe_expert_parallel_comm is False
    assert novp.comm_overlap.delay_wgrad_compute is False
    interleaved = cfg(3)
    finish(interleaved, as_row({**ROW, "pp": 8, "vp": 3}), {})
    assert interleaved.comm_overlap.overlap_moe_expert_parallel_comm is True
    single = cfg(None)
    finish(single, as_row(ROW), {})  # PP 1: overlap allowed
    assert single.comm_overlap.delay_wgrad_compute is True
    asked = cfg(None)
    finish(asked, as_row({**ROW, "pp": 8}), {"comm_overlap.overlap_moe_expert_parallel_comm": True})
    assert asked.comm_overlap.overlap_moe_expert_parallel_comm is True  # the user's, as given
