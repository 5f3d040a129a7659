"""Per-phase times from Megatron timer blocks (perfgate.logs.phases) and the component versions
a log states (perfgate.logs.components): real excerpts first, then format-synthetic blocks."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import pytest
from logs.timerdata import all_block, iteration_line, max_block, minmax_block

from perfgate.logs.components import versions_of_files, versions_of_lines
from perfgate.logs.phases import PhaseSeries, parse_phase_file, parse_phase_text, phases_of_run

DATA = Path(__file__).resolve().parents[1] / "data" / "logs"


# --- real excerpts (tests/data/logs/README.md names each source) -----------------------------


def test_issue_663_level2_block_after_iteration_10_is_step_9_in_seconds_of_the_slowest_rank():
    found = parse_phase_file(DATA / "megatron_timers_issue663.log")
    assert found is not None
    assert found.steps == (9,)
    # max of (4687.59, 4725.48) ms; the setup blocks before the iteration line are not phases
    assert found.phases == {"forward-backward": (4.72548,), "forward-compute": (2.65214,)}
    assert found.option == "minmax"
    # the source is cut mid-number (`backward-compute ...: (204`): not read as 0.204 s


def test_alcf_megatron_deepspeed_block_with_iteration_equals_and_markdown_indent():
    found = parse_phase_file(DATA / "megatron_deepspeed_timers_alcf.log")
    assert found is not None and found.steps == (0,)
    assert found.phases == {"forward-backward": (106.62428,), "optimizer": (2.23498,)}


def test_core_016_info_prefixed_setup_block_is_not_a_phase():
    assert parse_phase_file(DATA / "megatron_core016_timers_setup.log") is None


def test_legacy_one_line_timers_of_2022_belong_to_the_iteration_before_them():
    found = parse_phase_file(DATA / "megatron_legacy_timers_nccl743.log")
    assert found is not None and found.option == "legacy"
    assert found.steps == (9,)
    assert found.phases["optimizer"] == (0.06301,)
    assert found.phases["backward-params-all-reduce"] == (0.0201,)
    assert "model-and-optimizer-setup" not in found.phases  # the setup line before training


# --- format-synthetic blocks (tests/logs/timerdata.py) ---------------------------------------


def _log(n: int, slow_optimizer_from: int = 10**9, prefix: str = "") -> str:
    out = "done with setup ...\n" + minmax_block({"model-and-optimizer-setup": (1020.9, 1022.97)})
    for i in range(1, n + 1):
        opt = 12.0 if i < slow_optimizer_from else 15.0
        out += iteration_line(i, n, 100.0)
        out += minmax_block(
            {
                "forward-backward": (80.0, 81.0 + i / 100),
                "all-grads-sync": (4.0, 5.0),
                "params-all-gather": (2.0, 2.5),
                "optimizer": (opt - 1, opt),
            },
            prefix=prefix,
        )
    return out


def test_every_block_is_filed_under_its_iteration_with_max_seconds():
    found = parse_phase_text(_log(5))
    assert found is not None
    assert found.steps == (0, 1, 2, 3, 4)
    assert found.names == ["forward-backward", "all-grads-sync", "params-all-gather", "optimizer"]
    assert found.phases["forward-backward"] == (0.08101, 0.08102, 0.08103, 0.08104, 0.08105)
    assert found.phases["optimizer"] == (0.012,) * 5
    assert found.notes == ()  # the setup block held no phase


def test_core_016_info_prefix_and_window_medians():
    found = parse_phase_text(_log(20, slow_optimizer_from=11, prefix="INFO:megatron.core.timers:"))
    assert found is not None and len(found.steps) == 20
    assert found.medians(0, 9)["optimizer"] == 0.012
    assert found.medians(10, 19)["optimizer"] == 0.015
    assert found.medians(5, 14)["optimizer"] == pytest.approx(0.0135)


def test_srun_labelled_all_rank_log_files_blocks_under_the_printing_ranks_iteration():
    # rank 1 (the last) prints its iteration line and block; rank 0's later iteration
    # line, interleaved, must not move the block to rank 0's step
    text = (
        " 1: "
        + iteration_line(3, 10, 50.0)
        + " 0: "
        + iteration_line(4, 10, 50.0)
        + "".join(f" 1: {line}\n" for line in minmax_block({"optimizer": (1.0, 2.0)}).splitlines())
    )
    found = parse_phase_text(text)
    assert found is not None and found.steps == (2,) and found.phases == {"optimizer": (0.002,)}


def test_max_and_all_options_keep_the_slowest_rank():
    text = iteration_line(1, 2, 10.0) + max_block({"optimizer": 3.5})
    text += iteration_line(2, 2, 10.0)
    text += all_block({"optimizer": [3.0, 4.25], "forward-backward": [7, 6]})
    found = parse_phase_text(text)
    assert found is not None
    assert found.option in ("max", "all")
    assert found.phases["optimizer"] == (0.0035, 0.00425)
    fb = found.phases["forward-backward"]  # not in the first block: NaN there
    assert math.isnan(fb[0]) and fb[1] == 0.007


def test_nemo2_progress_lines_use_global_step():
    text = (
        "Training epoch 0, iteration 3/19 | lr: 1e-05 | global_batch_size: 8 | global_step: 3 | "
        "train_step_timing in s: 0.05\n" + minmax_block({"forward-backward": (30.0, 31.0)})
    )
    found = parse_phase_text(text)
    assert found is not None and found.steps == (3,)


def test_a_log_without_timers_has_no_phases_and_a_missing_file_is_none(tmp_path):
    assert parse_phase_text(iteration_line(1, 1, 5.0)) is None
    assert parse_phase_file(tmp_path / "absent.log") is None


def test_phases_of_run_streams_gzip_and_takes_the_first_log_with_timers(tmp_path):
    plain = tmp_path / "rank-0.log"
    plain.write_text(iteration_line(1, 1, 5.0))
    packed = tmp_path / "rank-1.log"
    packed.write_bytes(gzip.compress(_log(3).encode()))
    found = phases_of_run([plain, packed])
    assert found is not None and found.source == str(packed) and found.steps == (0, 1, 2)


def test_json_round_trip_keeps_nan_as_null():
    series = PhaseSeries((0, 1), {"a": (0.5, math.nan)}, "minmax", 1, "x.log", ("n",))
    data = series.to_dict()
    assert data["phases"] == {"a": [0.5, None]}
    back = PhaseSeries.from_dict(data)
    assert back.steps == (0, 1) and back.phases["a"][0] == 0.5 and math.isnan(back.phases["a"][1])


# --- component versions (tests/data/reference/log_formats.md section 8) -----------------------


def test_versions_of_real_lines():
    assert versions_of_files([DATA / "component_versions.log"]) == {
        "nccl": "2.29.7",
        "driver_cuda": "12.8",
        "container_release": "25.06",
        "container_build": "177567386",
        "torch": "2.8.0a0+5228986",
        "cuda_compat": "12.9",
        "cuda_compat_driver": "575.51.03",
        "driver": "570.133.20",
        "transformer_engine": "2.14.0+71bbefbf",
        "cudnn": "9.20.0",
        "flash_attn": "2.7.4.post1+nv26.2.44259020",
    }


def test_bare_nccl_line_nvidia_smi_header_and_a_banner_without_release():
    lines = [
        "NCCL version 2.21.5+cuda12.4",
        "| NVIDIA-SMI 530.41.03              Driver Version: 530.41.03    CUDA Version: 12.1     |",
        "NVIDIA Release  (build 211400170)",
        "opt-1_3b.0 [stderr] DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1275, internal error, NCCL",
    ]
    assert versions_of_lines(lines) == {
        "nccl": "2.21.5",
        "driver": "530.41.03",
        "driver_cuda": "12.1",
        "container_build": "211400170",
    }


def test_versions_of_files_first_file_wins(tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text("NCCL version 2.27.3+cuda12.9\n")
    b.write_text("NCCL version 2.27.7+cuda13.0\nPyTorch Version 2.9.0a0\n")
    assert versions_of_files([a, b, tmp_path / "missing.log"]) == {
        "nccl": "2.27.3",
        "torch": "2.9.0a0",
    }
