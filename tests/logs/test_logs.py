"""Every log format, read from real lines: values must match the reference series exactly."""

from __future__ import annotations

import pytest
from logdata import (
    AUTOMODEL_H200,
    BRIDGE_OLD_VARIANT,
    BRIDGE_RANK_STEP_TIME,
    GIB,
    LOGS,
    MEGATRON_2021,
    MEGATRON_DEFAULT7,
    MEGATRON_LOSS_KEY,
    NEMO2_DGXC,
    NEMO2_TIMESTAMPED,
    fixture_text,
    reference_csv,
)

from perfgate import logs
from perfgate.errors import LogParseError

# --- Megatron-Bridge ------------------------------------------------------------------------


def test_bridge_iteration_and_step_time_lines_match_the_reference_series(reference):
    ref = reference_csv(
        reference / "third_party_logs" / "together_b200_llama3.1_8b_bf16_gbs128_nemo2602.csv"
    )
    s = logs.parse_files([LOGS / "bridge_llama31_8b_b200.log"])
    assert s.format == "megatron_bridge"
    # Iteration N is step N-1; the excerpt keeps iterations 1-16, 36-38 and 48-50.
    expected = [*range(0, 16), 35, 36, 37, 47, 48, 49]
    assert [st.step for st in s.steps] == expected
    # The ms value of the iteration line wins over Step Time's 10 ms resolution.
    for st in s.steps:
        assert st.step_time_s == pytest.approx(
            float(ref[st.step + 1]["iteration_time_s"]), abs=1e-9
        )
    assert s.log_interval == 1 and s.restarts == 0 and s.valid


def test_bridge_pairs_step_time_with_its_iteration_in_any_order_and_glued():
    steps = {st.step: st for st in logs.parse_files([LOGS / "bridge_llama31_8b_b200.log"]).steps}
    assert steps[0].tflops_per_gpu == 153.9  # Step Time line before its iteration line
    assert steps[2].tflops_per_gpu == 1190.8  # glued: `...MODEL_TFLOP/s/GPU [date] iteration 3/`
    assert steps[3].tflops_per_gpu == 910.0  # CUDA-graph capture step
    # Buffered: iteration 5, Step Time(5), Step Time(6), iteration 6.
    assert (steps[4].tflops_per_gpu, steps[5].tflops_per_gpu) == (1191.3, 1193.3)
    assert steps[36].tflops_per_gpu == 1180.5 and steps[37].tflops_per_gpu == 1179.9
    assert steps[49].step_time_s == pytest.approx(5.6986)  # `... |Deleting CUDA graphs` glued
    assert (steps[0].loss, steps[0].grad_norm) == (pytest.approx(12.58172), 10.276)
    # The memory report after iteration 1 (GB = 1e9 bytes) belongs to step 0.
    assert steps[0].mem_allocated_gib == pytest.approx(50.804e9 / GIB)
    assert steps[0].mem_peak_gib == pytest.approx(116.45e9 / GIB)
    assert steps[0].mem_reserved_gib == pytest.approx(127.05e9 / GIB)
    assert steps[1].mem_peak_gib is None


def test_bridge_step_time_lines_alone_are_numbered_in_order(reference):
    ref = reference_csv(
        reference
        / "third_party_logs"
        / "together_gb200_qwen2.5_72b_bf16_64gpu_nemo2602_rack10_run1.csv"
    )
    s = logs.parse_files([LOGS / "bridge_steptime_only_gb200.log"])
    assert s.format == "megatron_bridge"
    assert [st.step for st in s.steps] == list(range(35))
    assert s.step_times == [float(ref[k + 1]["iteration_time_s"]) for k in range(35)]
    assert s.steps[0].tflops_per_gpu == 374.3 and s.steps[34].tflops_per_gpu == 673.4
    assert any("no iteration numbers" in n for n in s.notes)
    # Four ranks' memory reports glued onto lines of other text; the maximum over ranks is kept.
    assert s.steps[0].mem_peak_gib == pytest.approx(51.979e9 / GIB)
    assert s.steps[0].mem_allocated_gib == pytest.approx(28.496e9 / GIB)


def test_bridge_rank_tagged_step_time_with_memory():
    s = logs.parse_text(BRIDGE_RANK_STEP_TIME)
    (st,) = s.steps
    assert (st.step, st.step_time_s, st.rank) == (0, 257.68, 64)
    assert st.mem_allocated_gib == pytest.approx(154.02e9 / GIB)


def test_bridge_rank_tagged_step_time_glued_after_an_iteration_line():
    iteration = fixture_text("bridge_llama31_8b_b200.log").splitlines()[4]
    assert "iteration        1/" in iteration
    s = logs.parse_text(iteration + BRIDGE_RANK_STEP_TIME)
    (st,) = s.steps
    assert st.step_time_s == pytest.approx(43.8246)  # the iteration line's ms value
    assert st.mem_allocated_gib == pytest.approx(154.02e9 / GIB)
    assert any("differ" in n for n in s.notes)  # 257.68 s is not 43.8 s: the pairing is flagged


def test_bridge_reversed_order_and_text_glued_after_the_iteration_line():
    lines = fixture_text("bridge_llama31_8b_b200.log").splitlines()
    step_time, iteration = lines[3], lines[4]
    assert step_time.startswith("Step Time : 43.83s") and "iteration        1/" in iteration
    # The iteration line first (as in qwen3_job_nemo2602.log), with the next message glued on.
    glued = "Number of parameters in transformer layers in billions:  232.83"
    s = logs.parse_text(f"{iteration}{glued}\n{step_time}\n")
    (st,) = s.steps
    assert (st.step, st.step_time_s, st.tflops_per_gpu) == (0, 43.8246, 153.9)
    assert st.grad_norm == 10.276 and not s.notes


def test_bridge_older_tflops_variant():
    (st,) = logs.parse_text(BRIDGE_OLD_VARIANT).steps
    assert (st.step_time_s, st.tflops_per_gpu) == (11.65, 1158.1)


def test_bridge_step_time_without_its_iteration_line_continues_the_numbering():
    text = fixture_text("bridge_llama31_8b_b200.log")
    text = text.replace("[after training is done]", BRIDGE_OLD_VARIANT + "\n[after")
    s = logs.parse_text(text)
    assert s.steps[-1].step == 50 and s.steps[-1].step_time_s == 11.65
    assert any("without its iteration line" in n for n in s.notes)


# --- Megatron-LM ----------------------------------------------------------------------------


def test_megatron_timestamped_lines_with_throughput(reference):
    ref = reference_csv(reference / "issue_logs" / "megatron-lm_issue756_mixtral8x7b_16xH100.csv")
    s = logs.parse_files([LOGS / "megatron_mixtral_h100.log"])
    assert s.format == "megatron"
    assert [st.step for st in s.steps] == [42, 43, 44, 70]
    assert s.steps[-1].step_time_s == pytest.approx(float(ref[71]["iteration_time_s"]))
    assert s.steps[-1].tflops_per_gpu == float(ref[71]["tflops_per_gpu"])
    assert [st.step_time_s for st in s.steps[:3]] == pytest.approx([5.4449, 5.5338, 5.7186])
    assert [st.loss for st in s.steps[:2]] == pytest.approx([1.825991, 1.875063])
    assert s.steps[2].grad_norm == 1.611


def test_megatron_lines_without_timestamp(reference):
    ref = reference_csv(reference / "issue_logs" / "epfllm_megatron-llm_issue11.csv")
    s = logs.parse_files([LOGS / "megatron_no_timestamp.log"])
    assert [st.step for st in s.steps] == [181, 182, 183, 184]
    assert s.step_times == pytest.approx(
        [float(ref[k]["iteration_time_s"]) for k in range(182, 186)]
    )


def test_megatron_2021_line_and_microsecond_timestamp_with_torchrun_prefix():
    (old,) = logs.parse_text(MEGATRON_2021).steps
    assert (old.step, old.step_time_s, old.loss, old.grad_norm) == (199, 1.0826, 8.440352, 3.089)
    s = logs.parse_text(MEGATRON_DEFAULT7)
    (new,) = s.steps
    assert (new.step, new.step_time_s, new.tflops_per_gpu, new.rank) == (560, 1.5104, 54.1, 7)


def test_megatron_log_interval_is_detected_from_the_iteration_numbers():
    lines = [
        MEGATRON_2021.replace("iteration      200/", f"iteration {n:8d}/") for n in (10, 20, 30)
    ]
    s = logs.parse_text("\n".join(lines))
    assert [st.step for st in s.steps] == [9, 19, 29]
    assert s.log_interval == 10  # each value is an average over 10 iterations


def test_megatron_memory_report_in_megabytes():
    # Megatron-LM's older report_memory: "[Rank r] (after N iterations) memory (MB) | ...".
    mem = (
        "[Rank 0] (after 1 iterations) memory (MB) | allocated: 20480.5 | max allocated: 40960.0"
        " | reserved: 51200.0 | max reserved: 51200.0"
    )
    (st,) = logs.parse_text(MEGATRON_2021.replace("200/", "  1/") + "\n" + mem).steps
    assert st.step == 0
    assert st.mem_allocated_gib == pytest.approx(20480.5 / 1024)
    assert st.mem_peak_gib == pytest.approx(40.0)
    assert st.mem_reserved_gib == pytest.approx(50.0)


def test_megatron_2020_lines_without_colons_give_the_loss_and_the_memory_report():
    # `learning rate 1.210E-04 | lm loss 1.112287E-01 |` (no colons), and report_memory's
    # `after 100 iterations memory (MB) | ... | max cached: 7890.0` (no brackets, "cached").
    s = logs.parse_files([LOGS / "megatron_2020_gpt2.log"])
    assert s.format == "megatron" and s.log_interval == 100
    assert [(st.step, st.step_time_s, st.loss) for st in s.steps] == [
        (99, 0.8109, 5.023855),
        (199, 0.8442, 0.1112287),
        (299, 0.8247, 0.008868908),
    ]
    assert s.steps[0].mem_peak_gib == pytest.approx(6237.830078125 / 1024)
    assert s.steps[0].mem_reserved_gib == pytest.approx(7890.0 / 1024)


def test_megatron_loss_dict_named_loss_is_read():
    (st,) = logs.parse_text(MEGATRON_LOSS_KEY).steps
    assert (st.step, st.step_time_s, st.loss, st.grad_norm) == (3099, 3.7721, 0.2947306, 0.601)


# --- NeMo 2 ---------------------------------------------------------------------------------


def test_nemo2_progress_lines_match_the_reference_series(reference):
    ref = reference_csv(reference / "issue_logs" / "nemo2_b200_llama3_8b_bf16_excerpt.csv")
    s = logs.parse_files([LOGS / "nemo2_b200_llama3_8b.log"])
    assert s.format == "nemo2"
    assert [st.step for st in s.steps] == [45, 46, 47, 48, 49]  # 0-based, as logged
    assert s.step_times == [float(ref[k]["iteration_time_s"]) for k in range(45, 50)]
    # 4 significant digits in scientific notation: 1.249e+03, ..., 1.25e+03.
    assert [st.tflops_per_gpu for st in s.steps] == [
        float(ref[k]["tflops_per_gpu"]) for k in range(45, 50)
    ]
    st = s.steps[0]
    assert st.mem_peak_gib == pytest.approx(115792977920 / GIB)  # bytes -> GiB
    assert st.mem_reserved_gib == pytest.approx(127785762816 / GIB)
    assert st.loss == 11.96
    assert logs.summarize(s)["median_step_time_s"] == 6.071


def test_nemo2_srun_prefixes_and_nemo_logger_lines(reference):
    ref = reference_csv(reference / "issue_logs" / "bionemo_pr740_nemo2_format_excerpt.csv")
    assert ref  # the same ProgressPrinter format, another run (steps 120-125)
    s = logs.parse_files([LOGS / "nemo2_srun_esm2.log"])
    assert [st.step for st in s.steps] == list(range(28, 35))
    assert s.step_times == [0.189, 0.1903, 0.1915, 0.1894, 0.1921, 0.1893, 0.1902]
    assert {st.rank for st in s.steps} == {0}  # `0: ` and ` 0: ` both read as rank 0
    assert s.steps[0].loss == 2.778


def test_nemo2_external_timestamp_prefix_and_tokens_per_second():
    (st,) = logs.parse_text(NEMO2_TIMESTAMPED).steps
    assert (st.step, st.step_time_s, st.tokens_per_s_per_gpu) == (527, 2.389, 6859.0)


def test_nemo2_srun_label_behind_an_external_timestamp():
    line = NEMO2_TIMESTAMPED.replace("] Training", "] 3: Training")
    (st,) = logs.parse_text(line).steps
    assert (st.step, st.rank) == (527, 3)


def test_nemo2_dgxc_memory_fields():
    (st,) = logs.parse_text(NEMO2_DGXC).steps
    assert (st.step, st.step_time_s, st.loss) == (49, 2.693, 12.81)
    assert st.mem_peak_gib == pytest.approx(72972500992 / GIB)
    assert st.mem_allocated_gib == pytest.approx(34466545664 / GIB)


def test_nemo2_global_step_is_used_across_epochs():
    line = NEMO2_DGXC.replace("epoch 0, iteration 49/49", "epoch 1, iteration 0/49").replace(
        "global_step: 49", "global_step: 50"
    )
    (st,) = logs.parse_text(line).steps
    assert st.step == 50


def test_nemo_delta_timing_callback_lines():
    # nemo/utils/exp_manager.py DeltaTimingCallback: f'Step {n}: {name} in s={dt}' via logging.
    text = (
        "[NeMo I 2025-10-02 13:24:01 exp_manager:452] Step 11: train_step_timing in s=2.7104\n"
        "[NeMo I 2025-10-02 13:24:04 exp_manager:452] Step 12: train_step_timing in s=2.6931\n"
        "[NeMo I 2025-10-02 13:24:05 exp_manager:452] Step 0: validation_step_timing in s=0.51\n"
    )
    assert logs.detect_format(text) == "nemo_delta_timing"
    s = logs.parse_text(text)
    assert [(st.step, st.step_time_s) for st in s.steps] == [(11, 2.7104), (12, 2.6931)]


# --- Automodel ------------------------------------------------------------------------------


def test_automodel_step_time_is_derived_from_tokens_per_step():
    s = logs.parse_files([LOGS / "automodel_train_ft.log"], tokens_per_step=524288)
    assert s.format == "automodel"
    assert [st.step for st in s.steps] == [1, 2, 3]
    assert s.step_times == pytest.approx(
        [524288 / 132005.57, 524288 / 146246.38, 524288 / 145236.76]
    )
    # The log's own timestamps (1 s resolution) agree: 07:13:33 -> 07:13:37 -> 07:13:41.
    assert s.step_times[1] == pytest.approx(4.0, abs=1.0)
    st = s.steps[0]
    assert (st.loss, st.grad_norm, st.mem_peak_gib) == (10.9521, 12.9375, 38.39)
    assert st.tokens_per_s_per_gpu == 66002.79  # as logged: Automodel divides by dp*cp
    two = logs.parse_files([LOGS / "automodel_train_ft.log"], tokens_per_step=524288, num_gpus=2)
    assert two.steps[0].tokens_per_s_per_gpu == pytest.approx(132005.57 / 2)


def test_automodel_without_a_usable_rate_or_timestamps_says_what_it_needs():
    with pytest.raises(LogParseError, match=r"<text>: .*no two timestamped lines"):
        logs.parse_text(AUTOMODEL_H200)
    (st,) = logs.parse_text(AUTOMODEL_H200, tokens_per_step=524288).steps
    assert (st.step, st.step_time_s) == (4, pytest.approx(524288 / 15014.28))


def test_automodel_sft_step_times_come_from_the_timestamps_not_gbs_times_seq_len():
    # Fine-tuning: tps counts each step's own non-padding tokens, which vary (num_label_tokens
    # 21230...37370), so gbs * seq_len / tps would make every step several times too long;
    # without --tokens-per-step the log's own timestamps give the run's time: 15:48:59 ->
    # 15:49:22, 23 s over six steps, as one window mean (tests/logs/test_automodel_logs.py).
    s = logs.parse_files([LOGS / "automodel_sft_pr3473.log"])
    assert [st.step for st in s.steps] == [14, 15, 16, 17, 18, 19]
    assert s.step_times == [pytest.approx(23 / 6)] * 6
    # The derived times agree with the logged rate: over the window, tps x time covers at
    # least the labels (a window mean says nothing about one step's own time).
    tps = [10144.41, 10021.50, 7053.11, 9875.75, 10336.78, 11082.01]
    labels = [25518, 37370, 27459, 21230, 31577, 30305]
    assert sum(r * t for r, t in zip(tps, s.step_times, strict=True)) >= sum(labels)
    assert s.steps[1].loss == 0.7045 and s.steps[1].tokens_per_s_per_gpu == 1252.69


def test_automodel_validation_line_glued_after_the_progress_bar_is_not_a_training_step():
    # Automodel draws a tqdm bar on rank 0 with a loss/lr/tps postfix (recipes/base_recipe.py
    # _update_progress_bar) and logs validation with train_ft.py's f-string
    # '[val] name "{}" | step {} | epoch {} | loss {:.4f} | lr {:.2e} | num_label_tokens {}';
    # the logging line lands right after the bar's last redraw, on the same line. The bar
    # state and the validation numbers are formatted from those sources (not from a log).
    lines = (LOGS / "automodel_sft_pr3473.log").read_text().splitlines()
    bar = (
        "Training:  75%|███████▌  | 15/20 [00:55<00:18,  3.70s/step, loss=0.7505, lr=1.00e-05, "
        "tps=10144]"
    )
    val = (
        '2026-08-10 15:49:04 | INFO | root | [val] name "default" | step 14 | epoch 0 | '
        "loss 0.7311 | lr 1.00e-05 | num_label_tokens 4821"
    )
    lines.insert(2, "\r" + bar + val)  # after step 14's training line
    s = logs.parse_text("\n".join(lines))
    st = {x.step: x for x in s.steps}
    assert st[14].loss == 0.7505  # the training record
    # timed from the training lines' stamps, not the validation's (one bar times nothing)
    assert [x.step_time_s for x in s.steps] == [pytest.approx(23 / 6)] * 6
    assert not any("repeated" in n for n in s.notes)


def test_automodel_benchmark_recipe_lines():
    # Line shapes of nemo_automodel/recipes/llm/benchmark.py (f-strings), behind Automodel's
    # "%(asctime)s | %(levelname)s | %(name)s | %(message)s" log format.
    p = "2025-11-03 10:00:0{} | INFO | nemo_automodel.recipes.llm.benchmark | "
    times = [9.812345, 4.51, 4.402, 4.398, 4.406]
    lines = [p.format(0) + "Running 5 iterations with 2 warmup steps"]
    for i, t in enumerate(times):
        lines += [
            p.format(i) + f"Rank 0 | Iteration {i}",
            p.format(i) + f"Rank 0 | Iteration {i} | num_label_tokens=524288 | "
            f"Max Memory Allocated: 61.2{i} GB | loss=11.98{i}",
            p.format(i) + f"Max iter time: {t:.6f} seconds",
            p.format(i) + f"MFU: {47.5 + i:.6f}%",
        ]
    lines += [
        p.format(9) + "Average iteration time: 4.402 seconds (excluding first 2 warmup iterations)",
        p.format(9) + "Average MFU: 47.581234% (excluding first 2 warmup iterations)",
    ]
    s = logs.parse_text("\n".join(lines))
    assert s.format == "automodel_benchmark"
    assert [st.step for st in s.steps] == [0, 1, 2, 3, 4]
    assert s.step_times == times
    assert s.steps[3].mfu == pytest.approx(0.505) and s.steps[3].mem_peak_gib == 61.23
    assert s.steps[3].loss == 11.983
    assert s.reported == {
        "average_step_time_s": 4.402,
        "warmup_steps": 2.0,
        "average_mfu": 0.47581234,
    }


# --- TorchTitan -----------------------------------------------------------------------------


def test_torchtitan_step_times_from_log_timestamps():
    s = logs.parse_files([LOGS / "torchtitan_gc_profiler.log"])
    assert s.format == "torchtitan"
    # step: 200 is step 199; it has no earlier timestamp to measure from and is dropped.
    assert [st.step for st in s.steps] == [209, 219, 229, 239, 249]
    assert s.log_interval == 10  # tps is an average over log_freq = 10 steps
    assert s.steps[0].step_time_s == pytest.approx((64.970 - 50.322) / 10)  # 22:31:04.970 - :50.322
    assert s.steps[0].tokens_per_s_per_gpu == 5593.0  # `tps: 5,593`
    assert (s.steps[0].tflops_per_gpu, s.steps[0].mfu) == (323.92, 0.3275)
    assert s.steps[0].mem_reserved_gib == 49.66
    # `loss:` is the first field after `step:`; the memory TorchTitan logs is its reserved peak.
    assert [st.loss for st in s.steps] == [6.0388, 6.0348, 5.9670, 5.8311, 5.8383]
    assert s.steps[0].peak_memory_gib == 49.66
    assert any("timestamps" in n for n in s.notes)


def test_torchtitan_step_times_from_tokens_per_step():
    s = logs.parse_files(
        [LOGS / "torchtitan_gc_profiler.log"], tokens_per_step=8 * 8192, num_gpus=8
    )
    assert s.steps[0].step == 199
    assert s.steps[0].step_time_s == pytest.approx(8192 / 5856)


# --- errors ---------------------------------------------------------------------------------


def test_a_log_without_step_times_names_the_file_and_the_formats_tried(tmp_path):
    log = tmp_path / "slurm-123.out"
    log.write_text("NCCL INFO Bootstrap\n[NeMo I 2025-10-02 13:23:36 utils:662] Setting up\n")
    with pytest.raises(LogParseError) as e:
        logs.parse_files([log])
    msg = str(e.value)
    assert str(log) in msg and "no step-time lines found" in msg
    assert "nemo2" in msg and "megatron_bridge" in msg and "\n" not in msg


def test_step_lines_without_a_step_time_are_called_that():
    line = NEMO2_DGXC.replace("train_step_timing in s: 2.693 | ", "")
    with pytest.raises(LogParseError, match="1 nemo2 step lines found but none carries a step"):
        logs.parse_text(line, origin="run.log")


def test_a_missing_file_and_a_directory_are_named(tmp_path):
    with pytest.raises(LogParseError, match=r"nope\.log: no such log file"):
        logs.parse_files([tmp_path / "nope.log"])
    with pytest.raises(LogParseError, match="is a directory"):
        logs.parse_files([tmp_path])
    with pytest.raises(LogParseError, match="no log files given"):
        logs.parse_files([])


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("bridge_llama31_8b_b200.log", "megatron_bridge"),
        ("bridge_steptime_only_gb200.log", "megatron_bridge"),
        ("megatron_mixtral_h100.log", "megatron"),
        ("nemo2_srun_esm2.log", "nemo2"),
        ("automodel_train_ft.log", "automodel"),
        ("torchtitan_gc_profiler.log", "torchtitan"),
    ],
)
def test_detect_format(name, fmt):
    assert logs.detect_format(fixture_text(name)) == fmt
    assert logs.detect_format((LOGS / name).read_bytes()) == fmt


def test_detect_format_of_text_without_steps():
    assert logs.detect_format("hello\nNCCL INFO ring 0\n") == "unknown"
