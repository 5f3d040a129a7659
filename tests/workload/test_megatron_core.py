"""Backend megatron_core without torch: settings, override checks, --dry-run text, the log
line and the clocks' plumbing. (Its torch side: megatron_core_contract, in .venv-bridge.)"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os

import pytest

from perfgate import catalog, flops
from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.errors import ConfigError
from perfgate.logs import parse_text
from perfgate.workload import backends
from perfgate.workload.describe import describe
from perfgate.workload.megatron_core.clock import (
    StepClock,
    iteration_line,
    read_sidecar,
    write_sidecar,
)
from perfgate.workload.megatron_core.configs import check_fields, config_fields, transformer_kwargs
from perfgate.workload.megatron_core.face import check_overrides, env_defaults
from perfgate.workload.megatron_core.plan import effective_arch, settings_for
from perfgate.workload.runtime import RankInfo
from perfgate.workload.spec import WorkloadSpec

ROW = "pretrain-llama32_1b-h100-bf16-1gpu-tp1-megatron_core"


def row(**changes):
    base = catalog.load_catalog(SHIPPED_DIR).get(ROW)
    return dataclasses.replace(base, **changes)


def test_the_catalog_row_builds_llama_3_2_1b_on_one_gpu():
    s = settings_for(row())
    a = s.arch
    assert (a.num_layers, a.hidden_size, a.ffn_hidden_size, a.head_dim) == (16, 2048, 8192, 64)
    assert (s.tp, s.pp, s.dp, s.num_microbatches) == (1, 1, 1, 4)
    assert s.padded_vocab == 128256 and s.tokens_per_step == 4 * 4096
    assert (s.device, s.core_attention) == ("cuda", "sdpa")
    kwargs = transformer_kwargs(s)
    assert kwargs["num_query_groups"] == 8 and kwargs["sequence_parallel"] is False
    assert kwargs["use_cpu_initialization"] is False and kwargs["bias_activation_fusion"] is False


def test_layout_follows_the_row_and_the_ranks():
    s = settings_for(row(tp=2, num_gpus=2, gbs=8))
    assert (s.dp, s.num_microbatches, s.padded_vocab) == (1, 8, 128256)
    assert transformer_kwargs(s)["sequence_parallel"] is True
    assert settings_for(row(gbs=8), world_size=2).dp == 2
    assert env_defaults(row(tp=2, num_gpus=2))["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in env_defaults(row())
    cpu = settings_for(row(tp=2, num_gpus=2), {"device": "cpu"})
    assert transformer_kwargs(cpu)["sequence_parallel"] is False  # gloo: no reduce-scatter
    assert transformer_kwargs(cpu)["use_cpu_initialization"] is True


def test_architecture_overrides_change_the_model_and_its_flops():
    small = {"model.num_layers": 2, "model.vocab_size": 1000, "model.recompute_method": "block"}
    s = settings_for(row(tp=2, num_gpus=2), small)
    assert s.arch.num_layers == 2 and s.padded_vocab == 1024  # 128 x tp 2
    assert s.transformer == {"recompute_method": "block"}
    ours = flops.flops_per_sample(effective_arch(row(), small), 4096, convention="megatron")
    full = flops.flops_per_sample("llama32_1b", 4096, convention="megatron")
    assert ours < full / 4


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"trainer.max_steps": 3}, "megatron_core paths are model.<field>, optim.<field>"),
        ({"devcie": "cpu"}, "not a megatron_core setting (did you mean 'device'?)"),
        ({"model.tensor_model_parallel_size": 2}, "set from the row (tp, pp, precision)"),
        ({"model.num_layers": 0}, "'model.num_layers': 0 is not a positive integer"),
        ({"device": "tpu"}, "'device': 'tpu'; known: cuda, cpu"),
        ({"core_attention": "local", "device": "cpu"}, "local builds its causal mask on CUDA"),
        ({"model.a.b": 1}, "(one level)"),
    ],
)
def test_bad_overrides_are_one_line_errors_naming_the_row(overrides, message):
    with pytest.raises(ConfigError) as e:
        check_overrides(row(), overrides, use_framework=False)
    assert str(e.value).startswith(f"row {ROW!r}: ") and message in str(e.value)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"model": "mixtral_8x7b", "id": "x"}, "builds dense GPT models of the families llama"),
        ({"precision": "fp8", "fp8_recipe": "delayed"}, "bf16 only"),
        ({"cp": 2, "num_gpus": 2}, "does not run cp"),
        ({"task": "sft"}, "pretraining on mock data only"),
        ({"pp": 2, "num_gpus": 2, "overrides": {"device": "cpu"}}, "device cpu runs pp 1 only"),
    ],
)
def test_rows_the_backend_cannot_run_are_refused(changes, message):
    with pytest.raises(ConfigError, match=message):
        settings_for(row(**changes))


def test_login_node_check_and_dry_run_text():
    how = check_overrides(row(), {"model.recompute_granularity": "full"}, use_framework=False)
    assert how.startswith("checked the layout and override sections; config field names")
    text = describe(row(), {"optim.lr": 1e-4}, steps=30)
    assert text.startswith(f"workload {ROW} (backend megatron_core)\n")
    assert "layout: tp 1 pp 1 dp 1; mbs 1 x 4 micro-batches = gbs 4 of seq 4096 on cuda" in text
    assert "  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in text
    optimizer = next(line for line in text.splitlines() if line.startswith("OptimizerConfig: "))
    assert json.loads(optimizer.split(": ", 1)[1])["lr"] == 1e-4


def test_field_names_of_the_pinned_megatron_core_need_no_import():
    fields = config_fields("0.19.2")  # the snapshot's version: read from fields.json
    assert {"recompute_granularity", "num_layers"} <= fields["model"]
    assert "lr" in fields["optim"] and "overlap_grad_reduce" in fields["ddp"]
    s = settings_for(row(), {"model.recompute_granularty": "full"})
    with pytest.raises(ConfigError, match=r"has no field 'recompute_granularty' \(did you mean"):
        check_fields(s, fields)
    if importlib.util.find_spec("megatron") is None:  # another version imports the classes
        with pytest.raises(ModuleNotFoundError):
            config_fields("0.0.0")


def test_the_iteration_line_is_read_back_as_the_step_it_records():
    lines = [
        iteration_line(i + 1, 3, t, 4, 3e-4, loss, 0.5)
        for i, (t, loss) in enumerate([(1.23456, 11.9), (0.34567, 10.1), (0.30004, 9.5)])
    ]
    series = parse_text("\n".join(lines) + "\n", "rank0.log")
    assert [s.step for s in series.steps] == [0, 1, 2]  # Megatron's iteration 1 is step 0
    assert [round(s.step_time_s, 4) for s in series.steps] == [1.2346, 0.3457, 0.3]
    assert [s.loss for s in series.steps] == [11.9, 10.1, 9.5]


def test_the_second_clock_times_the_same_intervals(tmp_path):
    clock = StepClock(None)  # no torch: CLOCK_REALTIME read at the same boundaries
    with pytest.raises(RuntimeError):
        clock.lap()
    clock.start()
    total = 0.0
    for _ in range(3):
        math.fsum(range(20000))  # a step's worth of work
        total += clock.lap()
    assert clock.second_clock == "clock_realtime" and len(clock.second_s) == 3
    assert abs(math.fsum(clock.second_s) / total - 1) < 0.01
    path = write_sidecar(tmp_path, clock, {"row_id": ROW}, {"device_name": "cpu"})
    data = read_sidecar(path)
    assert data["host_step_time_s"] == clock.host_s and data["settings"]["row_id"] == ROW
    path.write_text(json.dumps({"schema": "other"}))
    with pytest.raises(ValueError, match=r"not a perfgate\.megatron_core/1 file"):
        read_sidecar(path)


def test_without_torch_the_job_says_what_is_missing(tmp_path, monkeypatch):
    if importlib.util.find_spec("torch"):
        pytest.skip("torch is importable here (the main venv has none)")
    monkeypatch.setattr(os, "environ", dict(os.environ))  # run() sets the job's variables
    spec = WorkloadSpec(row=row(), steps=2, output_dir=str(tmp_path))
    with pytest.raises(ConfigError, match="needs torch and Megatron-Core in the job's Python"):
        backends.get("megatron_core").run(spec, RankInfo(0, 1, 0, "single"), None)
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"  # set first
