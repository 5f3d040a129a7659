"""The megatron_bridge backend without Megatron-Bridge: recipe mapping, settings, overrides,
dry-run text, login-node checks, and a clean failure where Bridge cannot be imported."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from rowfactory import as_row

from perfgate.catalog import load_catalog
from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.errors import ConfigError
from perfgate.logs import stepfile
from perfgate.workload import dispatch
from perfgate.workload.bridge import snapshot
from perfgate.workload.bridge.face import describe as describe_bridge
from perfgate.workload.bridge.plan import (
    perf_recipe_name,
    planned_settings,
    precision_preset,
    recipe_call,
    section_path,
    set_attr_path,
)
from perfgate.workload.describe import describe
from perfgate.workload.overrides import merged_overrides
from perfgate.workload.runtime import STEPS_FILE, RankInfo
from perfgate.workload.spec import WorkloadSpec
from perfgate.workload.validate import check_overrides

REPO = Path(__file__).resolve().parents[2]

ROW = {
    "id": "pretrain-llama3_70b-b200-fp8-64gpu-tp2pp4vp5cp2-bridge",
    "task": "pretrain",
    "model": "llama3_70b",
    "gpu": "b200",
    "precision": "fp8",
    "fp8_recipe": "current_scaling",
    "num_gpus": 64,
    "gbs": 128,
    "mbs": 1,
    "seq_len": 8192,
    "tp": 2,
    "pp": 4,
    "cp": 2,
    "vp": 5,
    "backend": "megatron_bridge",
}


def test_the_row_maps_to_bridge_names() -> None:
    assert recipe_call(as_row(ROW)) == (
        "megatron.bridge.recipes.llama.llama3",
        "llama3_70b_pretrain_config",
        {},
    )
    lora = {**ROW, "task": "lora", "num_gpus": 8, "precision": "mxfp8", "fp8_recipe": None}
    assert recipe_call(as_row(lora)) == (
        "megatron.bridge.recipes.llama.llama3",
        "llama3_70b_peft_config",
        {"peft_scheme": "lora"},
    )
    # The names of NVIDIA's flat recipes in Bridge 0.6 (perf_recipes/llama/b200/llama3.py).
    assert perf_recipe_name(as_row(ROW)) == "llama3_70b_pretrain_64gpu_b200_fp8cs_config"
    assert perf_recipe_name(as_row(lora)) == "llama3_70b_peft_8gpu_b200_fp8mx_config"
    # Plain fp8 is current scaling, as Bridge's performance recipes benchmark it ("fp8cs").
    assert precision_preset(as_row({"precision": "fp8"})) == (
        "bf16_with_fp8_current_scaling_mixed",
        "fp8cs",
    )
    assert precision_preset(as_row({"precision": "fp8", "fp8_recipe": "delayed"}))[1] == "fp8ds"
    assert precision_preset(as_row({"precision": "nvfp4"}))[0] == "bf16_with_nvfp4_mixed"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model": "mixtral_8x7b"}, "field 'model' is 'mixtral_8x7b': the megatron_bridge backend"),
        ({"precision": "fp16"}, "fields 'precision'/'fp8_recipe' are 'fp16'/'current_scaling'"),
        ({"task": "lora", "model": "deepseek_v3"}, "Megatron-Bridge has no peft recipe"),
        ({"task": "dpo"}, "field 'task' is 'dpo': expected pretrain, sft or lora"),
    ],
)
def test_bad_rows_are_clear(change, message) -> None:
    with pytest.raises(ConfigError, match=message):
        check_overrides(as_row({**ROW, **change}))


def test_planned_settings_carry_the_row_and_the_benchmark_policy() -> None:
    s = planned_settings(as_row(ROW), steps=37)
    assert (s["train.train_iters"], s["scheduler.lr_decay_iters"], s["train.eval_iters"]) == (
        37,
        37,
        0,
    )
    assert s["model.tensor_model_parallel_size"] == 2 and s["model.sequence_parallel"] is True
    assert s["model.pipeline_model_parallel_size"] == 4
    assert s["model.virtual_pipeline_model_parallel_size"] == 5
    assert s["model.context_parallel_size"] == 2
    assert (s["train.global_batch_size"], s["train.micro_batch_size"]) == (128, 1)
    assert s["model.seq_length"] == 8192 and not any(k.startswith("dataset.") for k in s)
    assert s["tokenizer.tokenizer_type"] == "NullTokenizer" and s["tokenizer.vocab_size"] == 128256
    assert s["checkpoint.save"] is None and s["logger.log_interval"] == 1
    # the phases of each step: level-1 timers, the slowest rank's, no barrier per timer
    assert s["logger.timing_log_level"] == 1 and s["logger.timing_log_option"] == "minmax"
    assert s["model.barrier_with_L1_time"] is False
    # FSDP is set either way: a recipe that shards (Llama3 70B's FSDP configs) must not keep
    # sharding a row that says fsdp=false.
    assert s["ddp.use_megatron_fsdp"] is False and "checkpoint.ckpt_format" not in s
    fsdp = planned_settings(as_row({**ROW, "fsdp": True}), 5)
    assert fsdp["ddp.use_megatron_fsdp"] is True
    assert fsdp["checkpoint.ckpt_format"] == "fsdp_dtensor" and fsdp["checkpoint.load"] is None
    assert fsdp["ddp.data_parallel_sharding_strategy"] == "optim_grads_params"
    assert fsdp["ddp.average_in_collective"] is False


def test_overrides_are_checked_at_the_section_and_user_wins() -> None:
    out = merged_overrides(
        {"recipe.model.cuda_graph_impl": "local"}, {"model.cuda_graph_impl": "none"}, section_path
    )
    assert out == {"model.cuda_graph_impl": "none"}
    with pytest.raises(
        ConfigError, match=r"ConfigContainer has no section 'modle' \(did you mean 'model'\?\)"
    ):
        merged_overrides({}, {"modle.x": 1}, section_path)


@dataclass
class _Ddp:
    overlap_grad_reduce: bool = True


@dataclass
class _Dataset:
    sequence_length: int = 4096

    @property
    def seq_length(self) -> int:
        return self.sequence_length

    @seq_length.setter
    def seq_length(self, value: int) -> None:
        self.sequence_length = value


@dataclass
class _Container:
    ddp: _Ddp = field(default_factory=_Ddp)
    dataset: _Dataset = field(default_factory=_Dataset)
    comm_overlap: object = None
    env_vars: dict = field(default_factory=dict)


def test_set_attr_path_sets_fields_and_settable_properties_only() -> None:
    cfg = _Container()
    set_attr_path(cfg, "ddp.overlap_grad_reduce", False)
    set_attr_path(cfg, "dataset.seq_length", 8192)
    set_attr_path(cfg, "env_vars.NCCL_P2P_NET_CHUNKSIZE", "2097152")
    assert cfg.ddp.overlap_grad_reduce is False and cfg.dataset.sequence_length == 8192
    assert cfg.env_vars == {"NCCL_P2P_NET_CHUNKSIZE": "2097152"}
    with pytest.raises(ConfigError) as e:
        set_attr_path(cfg, "ddp.overlap_grad_reduse", False)
    assert str(e.value) == (
        "override 'ddp.overlap_grad_reduse': _Ddp (ddp) has no field 'overlap_grad_reduse' "
        "(did you mean 'overlap_grad_reduce'?)"
    )
    with pytest.raises(ConfigError, match=r"comm_overlap is None, not a config object"):
        set_attr_path(cfg, "comm_overlap.tp_comm_overlap", True)


def test_dry_run_and_login_check_need_no_bridge() -> None:
    text = describe(as_row(ROW), {"model.cuda_graph_impl": "local"}, steps=20)
    assert "megatron.bridge.perf_recipes...llama3_70b_pretrain_64gpu_b200_fp8cs_config()" in text
    assert "megatron.bridge.recipes.llama.llama3.llama3_70b_pretrain_config() with " in text
    assert "mixed_precision=bf16_with_fp8_current_scaling_mixed()" in text
    assert "(else its recipe for another GPU count" in text
    assert "model.should_pad_vocab=True" in text  # what scripts/performance adds
    assert "  train.train_iters = 20\n" in text and "  model.cuda_graph_impl = 'local'\n" in text
    assert "CUDA_DEVICE_MAX_CONNECTIONS=32" in text  # TP 2 on Blackwell
    assert describe_bridge(as_row(ROW), 20, {}) in text
    assert check_overrides(as_row(ROW), {"ddp.overlap_grad_reduce": False}) == (
        "checked the recipe mapping; override paths checked against the snapshot of "
        "Megatron-Bridge 0.6.2"
    )


def _bridge_rows() -> list:
    return [r for r in load_catalog(SHIPPED_DIR).rows if r.backend == "megatron_bridge"]


def test_every_bridge_row_checks_the_whole_path_without_bridge() -> None:
    """#21 item 2: `model.nonsense` passed for all 62 rows (only `model` was checked)."""
    rows = _bridge_rows()
    assert len(rows) == 62
    for row in rows:
        with pytest.raises(ConfigError) as e:
            check_overrides(row, {"model.nonsense": 1})
        assert (
            str(e.value)
            == f"row {row.id!r}: override 'model.nonsense': model has no field 'nonsense'"
        )
        with pytest.raises(ConfigError, match=r"ddp has no field 'overlap_grad_reduc' \(did you"):
            check_overrides(row, {"ddp.overlap_grad_reduc": True})
        ok = {
            "model.enable_cuda_graph": True,  # every field of the model provider
            "ddp.overlap_grad_reduce": False,
            "env_vars.NCCL_NVLS_ENABLE": "1",  # a dict: its keys may be added
            "comm_overlap.tp_comm_overlap_cfg.proj_fprop.num_sm": 24,  # None or various
        }
        check_overrides(row, ok)


def test_a_model_the_snapshot_lacks_is_checked_against_every_pair() -> None:
    row = replace(_bridge_rows()[0], model="llama3_8b_unknown_to_the_snapshot")
    assert "model.enable_cuda_graph" in snapshot.valid_paths(row)
    assert "model.nonsense" not in snapshot.valid_paths(row)


def test_without_bridge_the_job_fails_in_one_line(tmp_path) -> None:
    spec = WorkloadSpec(row=as_row(ROW), steps=5, output_dir=str(tmp_path / "out"))
    assert dispatch.run_spec(spec, RankInfo(0, 64, 0, "slurm")) == dispatch.EXIT_FAILED
    rec = stepfile.read(Path(spec.output_dir) / STEPS_FILE)
    assert rec.status == "failed" and rec.backend == "megatron_bridge"
    assert rec.error == (
        "Megatron-Bridge cannot be imported in this container "
        "(ModuleNotFoundError: No module named 'megatron')"
    )
