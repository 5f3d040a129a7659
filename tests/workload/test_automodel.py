"""The automodel backend: the config of every catalog row, overrides, YAML, and a real run
of the backend against a stand-in benchmark recipe that prints Automodel's log lines."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from rowfactory import as_row

from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.errors import ConfigError
from perfgate.logs import stepfile
from perfgate.workload import dispatch
from perfgate.workload.automodel.bases import BASES
from perfgate.workload.automodel.config import (
    AutomodelInputs,
    build_config,
    pipeline_split_for,
    set_dotted,
    to_yaml,
    virtual_stages_per_rank,
)
from perfgate.workload.runtime import STEPS_FILE, RankInfo, torch_dist_env
from perfgate.workload.spec import WorkloadSpec
from perfgate.workload.validate import check_overrides

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FAKE = HERE / "fake_automodel"


def automodel_rows() -> list[dict]:
    rows = []
    for path in sorted((SHIPPED_DIR).glob("*.json")):
        data = json.loads(path.read_text())
        items = data if isinstance(data, list) else data.get("rows", [])
        rows += [r for r in items if r.get("backend") == "automodel"]
    return rows


ROWS = automodel_rows()
GOOD = ROWS


def test_the_catalog_has_automodel_rows_and_every_config_is_known() -> None:
    assert len(ROWS) == 13
    assert {r["overrides"]["config"] for r in ROWS} <= set(BASES)


@pytest.mark.parametrize("row", GOOD, ids=[r["id"] for r in GOOD])
def test_config_carries_the_row(row) -> None:
    cfg, source = build_config(as_row(row), AutomodelInputs(steps=37, output_dir="/out"))
    assert source == f"perfgate's copy of {row['overrides']['config']}"
    d, s = cfg["distributed"], cfg["step_scheduler"]
    assert d["strategy"] == "fsdp2"
    assert (d["tp_size"], d["pp_size"], d["cp_size"]) == (
        row.get("tp", 1),
        row.get("pp", 1),
        row.get("cp", 1),
    )
    assert d.get("ep_size", 1) == row.get("ep", 1)
    assert s["global_batch_size"] == row["gbs"] and s["max_steps"] == 37
    lbs = row["overrides"].get("step_scheduler.local_batch_size", row["mbs"])
    assert s["local_batch_size"] == lbs
    assert s["ckpt_every_steps"] > 37 and s["val_every_steps"] > 37
    assert cfg["dataset"]["seq_len"] == row["seq_len"]
    assert cfg["dataset"]["num_samples"] >= 37 * row["gbs"]
    assert cfg["checkpoint"]["enabled"] is False
    assert cfg["benchmark"]["peak_tflops"] == 989.0  # H100 BF16
    assert cfg["benchmark"]["num_nodes"] == max(1, row["num_gpus"] // 8)
    assert cfg["benchmark"]["json_output_path"] == "/out/automodel_summary.json"
    if row.get("pp", 1) > 1:
        from perfgate.models import get

        pipe = d["pipeline"]
        assert pipe["pp_microbatch_size"] == row["mbs"]
        vp = virtual_stages_per_rank(
            get(row["model"]).num_layers,
            pipe["layers_per_stage"],
            row["pp"],
            pipe["round_virtual_stages_to_pp_multiple"],
        )
        assert vp == row["vp"]
    if d.get("dp_size") not in (None, "none"):
        assert d["dp_size"] * row.get("tp", 1) * row["pp"] == row["num_gpus"]


@pytest.mark.parametrize(
    ("row_id", "lps", "rounding"),
    [
        ("pretrain-deepseek_v3-h100-bf16-256gpu-tp1pp4vp8ep64fsdp-automodel", 2, "up"),
        ("pretrain-deepseek_v3-h100-bf16-1024gpu-tp1pp4vp8ep64fsdp-automodel", 2, "up"),
        ("pretrain-kimi_k2-h100-bf16-256gpu-tp1pp8vp4ep32fsdp-automodel", 2, "up"),
    ],
)
def test_published_vp_is_reproduced_under_todays_automodel(row_id, lps, rounding) -> None:
    """Seed 003's VP 8 / 4 came from Automodel's Oct-2025 formula (ceil(61 / 2) + 1 = 32
    stages, rounded down); 0.7's ceil(61 / 2) = 31 needs rounding up to give the same 32."""
    row = next(r for r in ROWS if r["id"] == row_id)
    pipe = build_config(as_row(row), AutomodelInputs())[0]["distributed"]["pipeline"]
    assert (pipe["layers_per_stage"], pipe["round_virtual_stages_to_pp_multiple"]) == (
        lps,
        rounding,
    )
    assert virtual_stages_per_rank(61, lps, row["pp"], rounding) == row["vp"]


def test_an_impossible_vp_fails_before_submission() -> None:
    # 61 layers on PP 4 give at most 16 stages per rank (one layer each, rounded up).
    row = {**next(r for r in ROWS if r["model"] == "deepseek_v3"), "vp": 20, "id": "x"}
    with pytest.raises(ConfigError) as e:
        check_overrides(as_row(row))
    assert "field 'vp' is 20: Automodel cannot split 61 layers into 20 virtual stages" in str(
        e.value
    )


def test_layers_per_stage_keeps_the_yaml_value_when_it_gives_the_row_vp() -> None:
    # Llama 3 70B: 80 layers, PP 4, layers_per_stage 2 -> 40 stages -> 10 per rank.
    assert pipeline_split_for(80, 4, 10, "up", 2) == (2, "up")
    assert virtual_stages_per_rank(80, 2, 4, "up") == 10
    # A row asking VP 5 gets 4 layers per stage (20 stages), the only fit.
    assert pipeline_split_for(80, 4, 5, "up", 2) == (4, "up")
    # DeepSeek V3 1024-GPU YAML: 61 layers / 4 -> 16 stages -> 4 per rank, as its note says.
    assert virtual_stages_per_rank(61, 4, 4, "down") == 4


def test_overrides_need_an_existing_path_or_a_plus() -> None:
    row = GOOD[0]
    with pytest.raises(ConfigError) as e:
        build_config(as_row(row), AutomodelInputs(overrides={"step_scheduler.local_batch_sise": 2}))
    assert "step_scheduler has no key 'local_batch_sise' (did you mean 'local_batch_size'?)" in str(
        e.value
    )
    assert str(e.value).startswith(f"row {row['id']!r}: override ")
    cfg, _ = build_config(
        as_row(row),
        AutomodelInputs(
            overrides={"+distributed.moe.wrap_outer_model": "false", "optimizer.lr": "3e-4"}
        ),
    )
    assert cfg["distributed"]["moe"] == {"wrap_outer_model": False}
    assert cfg["optimizer"]["lr"] == 3e-4


def test_a_user_override_beats_the_row() -> None:
    row = next(r for r in GOOD if "step_scheduler.local_batch_size" in r["overrides"])
    cfg, _ = build_config(
        as_row(row), AutomodelInputs(overrides={"step_scheduler.local_batch_size": 1})
    )
    assert cfg["step_scheduler"]["local_batch_size"] == 1


def test_unknown_base_and_missing_config_are_clear() -> None:
    row = {**GOOD[0], "overrides": {"config": "examples/nope.yaml"}}
    with pytest.raises(ConfigError, match=r"override 'config' is 'examples/nope\.yaml': not found"):
        build_config(as_row(row))
    with pytest.raises(ConfigError, match=r"names its base YAML in overrides\['config'\]"):
        build_config(as_row({**GOOD[0], "overrides": {}}))


def test_non_bf16_and_non_fsdp_rows_are_refused() -> None:
    with pytest.raises(ConfigError, match="field 'precision' is 'fp8'"):
        build_config(as_row({**GOOD[0], "precision": "fp8"}))
    with pytest.raises(ConfigError, match="field 'fsdp' is false"):
        build_config(as_row({**GOOD[0], "fsdp": False}))


def test_mock_lora_trains_random_weights_from_the_config() -> None:
    row = next(r for r in GOOD if r["model"] == "llama3_8b")
    cfg, _ = build_config(as_row(row), AutomodelInputs(mock_data=True))
    assert cfg["model"] == {
        "_target_": "nemo_automodel.NeMoAutoModelForCausalLM.from_config",
        "config": {
            "_target_": "transformers.AutoConfig.from_pretrained",
            "pretrained_model_name_or_path": "meta-llama/Llama-3.1-8B",
        },
    }


def test_to_yaml_writes_floats_yaml_reads_as_floats() -> None:
    text = to_yaml({"a": {"eps": 1e-08, "lr": 0.0001, "x": None, "l": [0.9, 0.999], "e": []}})
    assert text == (
        '"a":\n  "eps": 1.0e-08\n  "lr": 0.0001\n  "x": null\n  "l":\n    - 0.9\n    - 0.999\n'
        '  "e": []\n'
    )


def test_set_dotted_refuses_to_descend_into_a_scalar() -> None:
    with pytest.raises(ConfigError, match=r"seed is 3, not a mapping"):
        set_dotted({"seed": 3}, "seed.x", 1)


def test_torch_dist_env_is_what_torchrun_would_set() -> None:
    rank = RankInfo(3, 16, 3, "slurm")
    env = torch_dist_env(rank, {"SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_JOB_ID": "123456"})
    assert env == {
        "RANK": "3",
        "WORLD_SIZE": "16",
        "LOCAL_RANK": "3",
        "MASTER_ADDR": "gpu07",
        "MASTER_PORT": "29956",
    }
    inherited = {"MASTER_ADDR": "head", "MASTER_PORT": "1234"}
    assert "MASTER_ADDR" not in torch_dist_env(rank, inherited)


# --- the backend, run against the stand-in recipe ------------------------------------------


@pytest.fixture
def automodel_spec(tmp_path, monkeypatch, series_csv):
    monkeypatch.setenv("FAKE_SERIES", str(series_csv))
    monkeypatch.setenv("FAKE_SEEN", str(tmp_path / "seen.json"))
    monkeypatch.setenv("PERFGATE_REFRESH_S", "0.05")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[07-08]")
    monkeypatch.setenv("PERFGATE_AUTOMODEL_ROOT", str(tmp_path / "no-checkout"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE), *sys.path]))
    for name in ("MASTER_ADDR", "MASTER_PORT", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)

    def make(row_id: str, steps: int = 20, **extra) -> WorkloadSpec:
        row = next(r for r in ROWS if r["id"] == row_id)
        return WorkloadSpec(row=as_row(row), steps=steps, output_dir=str(tmp_path / "out"), **extra)

    return make


NANO = "pretrain-nemotron_nano_v3_30b-h100-bf16-8gpu-tp1ep8fsdp-automodel"


def test_backend_runs_the_recipe_and_records_its_steps(automodel_spec, series_csv, tmp_path):
    spec = automodel_spec(NANO, steps=20)
    assert dispatch.run_spec(spec, RankInfo(0, 8, 0, "slurm")) == 0
    rec = stepfile.read(Path(spec.output_dir) / STEPS_FILE)
    assert rec.status == "completed" and rec.backend == "automodel"
    assert rec.log_format == "automodel_benchmark"
    assert [s["step"] for s in rec.steps] == list(range(20))
    raw = [x.split(",")[1] for x in series_csv.read_text().splitlines() if x[:1].isdigit()]
    expected = [float(f"{float(t):.6f}") for t in raw[:20]]  # as the recipe prints them
    assert [s["step_time_s"] for s in rec.steps] == pytest.approx(expected, abs=1e-6)
    assert rec.steps[3]["mem_peak_gib"] == 61.23 and rec.steps[3]["mfu"] == pytest.approx(0.475)
    assert rec.flops_convention == "automodel" and rec.mock_data is True
    assert rec.versions["gpu_count"] == "8" and rec.versions["python"]
    assert rec.env["MASTER_ADDR"] == "gpu07" and rec.env["RANK"] == "0"
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["argv"][0] == "--config" and seen["env"]["WORLD_SIZE"] == "8"
    written = Path(spec.output_dir, "automodel.yaml").read_text()
    assert seen["text"] == written and written.startswith(f"# perfgate: row {NANO}, base ")
    assert '"max_steps": 20' in written and '"ep_size": 8' in written


def test_a_failing_recipe_keeps_its_steps(automodel_spec, monkeypatch):
    monkeypatch.setenv("FAKE_EXIT", "3")
    spec = automodel_spec(NANO, steps=5)
    assert dispatch.run_spec(spec, RankInfo(0, 8, 0, "slurm")) == 3
    rec = stepfile.read(Path(spec.output_dir) / STEPS_FILE)
    assert rec.status == "failed" and len(rec.steps) == 5
    assert "exited with status 3" in rec.error


def test_lora_without_a_checkpoint_source_fails_before_running(automodel_spec, tmp_path):
    spec = automodel_spec("lora-llama3_8b-h100-bf16-1gpu-tp1fsdp-automodel")
    assert dispatch.run_spec(spec, RankInfo(0, 1, 0, "single")) == dispatch.EXIT_CONFIG
    rec = stepfile.read(Path(spec.output_dir) / STEPS_FILE)
    assert rec.error.startswith(
        "row 'lora-llama3_8b-h100-bf16-1gpu-tp1fsdp-automodel' fine-tunes meta-llama/Llama-3.1-8B"
    )
    assert not (tmp_path / "seen.json").exists()
    hub = tmp_path / "data" / "hub" / "models--meta-llama--Llama-3.1-8B"
    hub.mkdir(parents=True)
    spec = automodel_spec(
        "lora-llama3_8b-h100-bf16-1gpu-tp1fsdp-automodel", finetune_data=str(tmp_path / "data")
    )
    assert dispatch.run_spec(spec, RankInfo(0, 1, 0, "single")) == 0
    env = json.loads((tmp_path / "seen.json").read_text())["env"]
    assert env["HF_HOME"] == str(tmp_path / "data" / "hub") and env["HF_HUB_OFFLINE"] == "1"


def test_dry_run_shows_the_yaml_the_job_would_run() -> None:
    from perfgate.workload.describe import describe

    row = next(r for r in GOOD if r["model"] == "llama3_70b" and r["num_gpus"] == 16)
    text = describe(as_row(row), {"optimizer.lr": 2e-5}, steps=12)
    assert text.startswith(f"workload {row['id']} (backend automodel)\n")
    assert f"(base: perfgate's copy of {row['overrides']['config']}):\n" in text
    assert '  "max_steps": 12\n' in text and '  "lr": 2.0e-05\n' in text
    assert '  "dp_size": 2\n' in text and '    "layers_per_stage": 2\n' in text
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in text  # NeMo's variables are not Automodel's
