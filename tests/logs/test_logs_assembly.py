"""How records become one series: tqdm redraws, ranks, requeues, restarts, floods, bad bytes."""

from __future__ import annotations

import gzip
import io
import json

import pytest
from logdata import (
    LOGS,
    MEGATRON_2021,
    NEMO2_DGXC,
    NEMO_LOGGER_GLUE,
    TITAN_X8,
    TQDM_70B,
    TQDM_ANSI_RANK,
    TQDM_CUSTOMIZER,
    TQDM_GCP,
    TQDM_SCI_VALIDATION,
    fixture_text,
)

from perfgate import logs
from perfgate.errors import LogParseError
from perfgate.logs.scan import candidate_lines

# Real NCCL INFO lines of the 64xGB200 rank-0 pod log (tests/data/logs/README.md).
NCCL = [
    "qwen72b-r10-w-0-0:117:117 [0] NCCL INFO Channel 05/0 : 0[0] -> 1[1] via P2P/MNNVL",
    "qwen72b-r10-w-0-0:118:118 [1] NCCL INFO Channel 03/0 : 1[1] -> 2[2] via P2P/MNNVL",
    "qwen72b-r10-w-0-0:120:120 [3] NCCL INFO Channel 01/0 : 3[3] -> 4[0] via P2P/MNNVL",
    "qwen72b-r10-w-0-0:117:117 [0] NCCL INFO NET/Plugin: Loaded collnet plugin SHARP (v10)",
]

# --- NeMo 1 tqdm bars -----------------------------------------------------------------------


def test_tqdm_verbatim_bar_states():
    for line, step, t, loss in [
        (TQDM_70B, 99, 11.20, 6.370),
        (TQDM_GCP, 5, 49.50, 11.50),
        (TQDM_ANSI_RANK, 6023, 2.590, 0.0252),  # \x1b[A\r, glued `[rank: 1] Monitored ...`
        (TQDM_SCI_VALIDATION, 2000, 1.900, 2.600),  # global_step=2e+3, `]dation DataLoader`
        (TQDM_CUSTOMIZER, 1, 3.370, 0.674),  # `1it [00:04,  4.36s/it, v_num=d3c7, ...`
        (TQDM_70B + NEMO_LOGGER_GLUE, 99, 11.20, 6.370),  # NeMo logger glued after `]`
    ]:
        s = logs.parse_text(line)
        assert s.format == "nemo1_tqdm"
        (st,) = s.steps
        assert (st.step, st.step_time_s, st.loss) == (step, t, loss), line


def test_tqdm_without_global_step_uses_the_bar_counter():
    (st,) = logs.parse_text(TQDM_GCP.replace(" global_step=5.000,", "")).steps
    assert (st.step, st.step_time_s) == (6, 49.50)  # bar `7/15` -> the 7th step, 0-based 6


def test_tqdm_redraws_on_one_physical_line_keep_the_latest_state_per_step():
    # A captured .out holds every redraw of the bar on one line, separated by \r. The first
    # state of step 5 shows an older timing (number edited); the later, verbatim one must win.
    older = TQDM_GCP.replace("7/15 [06:19<07:13", "6/15 [05:30<08:02").replace("49.50", "52.10")
    step4 = older.replace("global_step=5.000", "global_step=4.000").replace("52.10", "50.20")
    physical = "\r".join([step4, older, "\x1b[A", TQDM_GCP, TQDM_GCP]) + "\n"
    s = logs.parse_text(physical)
    assert [(st.step, st.step_time_s) for st in s.steps] == [(4, 50.20), (5, 49.50)]
    assert not any("repeated" in n for n in s.notes)  # redraws are not duplicates


def test_tqdm_states_glued_without_their_closing_bracket_keep_their_own_step():
    # A bar state cut before its `]` (the write ended mid-postfix) runs straight into the
    # next state. The first state's step and time are its own; the next state's fields
    # (global_step=6.000 ...) must not leak into it. Second state: the verbatim line with the
    # step numbers moved on by one (bar, global_step, samples, time edited).
    cut = TQDM_GCP[:-1]
    nxt = (
        TQDM_GCP.replace("47%|████▋     | 7/15 [06:19<07:13", "53%|█████▎    | 8/15 [07:08<06:15")
        .replace("global_step=5.000", "global_step=6.000")
        .replace("12288.0", "14336.0")
        .replace("49.50", "49.20")
    )
    s = logs.parse_text(cut + nxt + "\n")
    # Glued as `...train_step_timing in s=49.50Epoch 0: :  53%|...`: the value ends at `E`.
    assert [(st.step, st.step_time_s) for st in s.steps] == [(5, 49.50), (6, 49.20)]


# --- ranks ----------------------------------------------------------------------------------


def test_all_rank_duplicates_keep_the_lowest_rank_whatever_the_order():
    # torchrun --tee labels; rank 3's copy (memory edited) comes first and must lose to rank 0.
    rank3 = "[rank3]:" + TITAN_X8.replace("66.91GiB", "70.02GiB")
    later = TITAN_X8.replace("step:  4", "step:  5").replace("19:46:17,508", "19:46:19,908")
    text = "\n".join(
        [rank3, "[rank0]:" + TITAN_X8, "[rank3]:" + later, "[rank0]:" + later, "[rank1]:" + later]
    )
    s = logs.parse_text(text)
    assert [st.step for st in s.steps] == [4]  # step 3 had no earlier stamp to measure from
    (st,) = s.steps
    assert (st.rank, st.mem_reserved_gib) == (0, 66.91)
    assert st.step_time_s == pytest.approx(2.4)
    assert any("lowest rank" in n for n in s.notes)


def test_unlabeled_duplicates_from_every_rank_give_one_record_and_a_note():
    text = "\n".join([TITAN_X8] * 8)
    s = logs.parse_text(text, tokens_per_step=8 * 4096, num_gpus=8)
    (st,) = s.steps
    assert (st.step, st.step_time_s) == (3, pytest.approx(4096 / 10050))
    assert any("7 step records repeated without rank labels" in n for n in s.notes)


def test_srun_labeled_all_rank_log_with_nccl_flood():
    lines = []
    for k, line in enumerate(fixture_text("nemo2_srun_esm2.log").splitlines()[1:]):
        lines += [f"{r}: {NCCL[(k + r) % 4]}" for r in range(8)]
        # Ranks 1-7 print the same step with another loss; rank 0 must win.
        lines += [f"{r}: " + line.lstrip(" 0:").replace("reduced_train_loss", "x") for r in (5, 1)]
        lines.append(line)
    s = logs.parse_text("\n".join(lines))
    assert s.step_times == [0.189, 0.1903, 0.1915, 0.1894, 0.1921, 0.1893, 0.1902]
    assert {st.rank for st in s.steps} == {0} and s.steps[0].loss == 2.778


# --- requeues and restarts ------------------------------------------------------------------


def _nemo2_line(step: int, seconds: float) -> str:
    """The verbatim dgxc NeMo 2 line with another iteration number and step time."""
    return (
        NEMO2_DGXC.replace("iteration 49/49", f"iteration {step}/49")
        .replace("global_step: 49", f"global_step: {step}")
        .replace("train_step_timing in s: 2.693", f"train_step_timing in s: {seconds}")
    )


def test_a_requeue_within_one_file_keeps_the_last_attempt():
    first = [_nemo2_line(k, 3.0 + k) for k in range(6)]  # attempt 1: steps 0-5, died
    second = [_nemo2_line(k, 2.0 + k / 100) for k in range(3, 8)]  # resumed at step 3
    s = logs.parse_text("\n".join([*first, "[NeMo I 2025-10-02 13:23:36 utils:662] ...", *second]))
    assert [st.step for st in s.steps] == list(range(8))
    assert s.step_times[:3] == [3.0, 4.0, 5.0]  # attempt 1, before the resume point
    assert s.step_times[3:] == [2.03, 2.04, 2.05, 2.06, 2.07]  # attempt 2 replaces 3-5
    assert s.restarts == 1 and s.segment_starts == (3,)
    assert any("steps 3..5 were logged again" in n for n in s.notes)


def test_a_full_rerun_within_one_file_replaces_the_first_attempt():
    # Both attempts unlabeled (one stream): the second starts at step 28, below the first's 49.
    rerun = [line[3:] for line in fixture_text("nemo2_srun_esm2.log").splitlines()]
    s = logs.parse_text(fixture_text("nemo2_b200_llama3_8b.log") + "\n".join(rerun))
    assert [st.step for st in s.steps] == list(range(28, 35))
    assert s.steps[0].step_time_s == 0.189 and s.restarts == 1
    assert s.segment_starts == ()  # nothing of the first attempt is left


def test_files_restarting_their_numbering_are_chained_not_zipped(tmp_path):
    a, b = tmp_path / "log-attempt0.out", tmp_path / "log-attempt1.out"
    a.write_text(fixture_text("bridge_llama31_8b_b200.log"))
    b.write_text(fixture_text("bridge_llama31_8b_b200.log"))
    one = logs.parse_files([a])
    s = logs.parse_files([a, b])
    assert len(s.steps) == 2 * len(one.steps)
    assert [st.step for st in s.steps[22:25]] == [50, 51, 52]  # after step 49, not on top of 0
    assert s.step_times == one.step_times * 2
    assert s.restarts == 1 and s.segment_starts == (50,)
    assert s.source_files == (str(a), str(b))
    assert any("restarts at 0" in n for n in s.notes)


def test_files_continuing_their_numbering_keep_it(tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(fixture_text("megatron_mixtral_h100.log"))
    b.write_text(fixture_text("megatron_no_timestamp.log"))
    s = logs.parse_files([a, b])
    assert [st.step for st in s.steps] == [42, 43, 44, 70, 181, 182, 183, 184]
    assert s.restarts == 1 and s.segment_starts == (181,)


def test_files_of_different_formats_are_refused(tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(fixture_text("megatron_mixtral_h100.log"))
    b.write_text(fixture_text("nemo2_b200_llama3_8b.log"))
    with pytest.raises(LogParseError, match=r"a\.log is megatron, .*b\.log is nemo2"):
        logs.parse_files([a, b])


def test_a_segment_without_steps_is_noted_and_skipped(tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text("srun: error: node17: task 3: Exited with exit code 1\n")
    b.write_text(fixture_text("nemo2_b200_llama3_8b.log"))
    s = logs.parse_files([a, b])
    assert len(s.steps) == 5 and s.restarts == 0
    assert any(n.startswith(f"{a}: no step records") for n in s.notes)


def test_repeated_identical_lines_are_one_step_and_noted():
    s = logs.parse_text("\n".join([NEMO2_DGXC, NEMO2_DGXC]))
    assert len(s.steps) == 1 and s.valid
    assert any("1 step records repeated without rank labels" in n for n in s.notes)


_MEGATRON = (
    " [2024-04-06 02:59:36] iteration {i:8d}/     100 | elapsed time per iteration (ms): "
    "{ms} | lm loss: 1.8E+00 | number of nan iterations:   0 |"
)


@pytest.mark.parametrize("fmt", ["nemo2", "megatron", "delta"])
def test_a_step_repeated_with_another_step_time_makes_the_run_invalid(fmt):
    # The last copy used to win silently: a second copy at 99 s turned a clean log into a
    # REGRESSION. Which copy is right cannot be known.
    def line(i: int, t: float) -> str:
        if fmt == "nemo2":
            return NEMO2_DGXC.replace("global_step: 49", f"global_step: {i}").replace(
                "train_step_timing in s: 2.693", f"train_step_timing in s: {t}"
            )
        if fmt == "megatron":
            return _MEGATRON.format(i=i + 1, ms=t * 1000)
        return f"Step {i}: train_step_timing in s={t}"

    clean = [line(i, 6.0) for i in range(60)]
    s = logs.parse_text("\n".join([*clean[:31], line(30, 99.0), *clean[31:]]))
    assert s.format != "unknown" and not s.valid, fmt
    assert s.invalid_cause == "BAD_LOG" and s.cause == "BAD_LOG"
    assert s.invalid_reason == "step 30 logged twice with different step times (6.0 s, then 99.0 s)"
    # The same copy twice is a note, not a fault.
    same = logs.parse_text("\n".join([*clean[:31], line(30, 6.0), *clean[31:]]))
    assert same.valid and any("repeated" in n for n in same.notes)
    # A restart (steps going back) is not a repeat: the last attempt is kept.
    restarted = logs.parse_text("\n".join([*clean[:40], line(30, 7.0), *clean[31:]]))
    assert restarted.valid and restarted.restarts == 1


# --- bytes ----------------------------------------------------------------------------------


def _flooded(text: str, per_line: int = 40) -> bytes:
    """text with NCCL INFO lines (>90% of the bytes) and invalid UTF-8 between its lines."""
    out = io.BytesIO()
    for k, line in enumerate(text.splitlines(keepends=True)):
        for j in range(per_line):
            out.write(f"{NCCL[(k + j) % 4]}\n".encode())
        out.write(b"\xff\xfe banner \x80\x81 \xc3\x28 \xe2\x82\n")
        out.write(line.encode())
    return out.getvalue()


def test_nccl_floods_and_invalid_utf8_do_not_change_the_series():
    clean = fixture_text("bridge_llama31_8b_b200.log")
    data = _flooded(clean)
    assert len(data) > 10 * len(clean)
    assert logs.parse_text(data).steps == logs.parse_text(clean).steps


def test_invalid_bytes_inside_a_step_line_are_replaced_not_fatal():
    line = MEGATRON_2021.replace("| loss scale", "| \udcff\udcfe loss scale").encode(
        "utf-8", "surrogateescape"
    )
    assert b"\xff\xfe" in line
    (st,) = logs.parse_text(line).steps
    assert (st.step, st.step_time_s, st.grad_norm) == (199, 1.0826, 3.089)


@pytest.mark.parametrize("block", [1, 7, 64, 1000, 1 << 20])
def test_streaming_in_blocks_finds_the_same_lines(block):
    data = _flooded(fixture_text("bridge_llama31_8b_b200.log"), per_line=3)
    data = data.replace(b"\n", b"\r\n", 50)  # some Windows line ends too
    whole = list(candidate_lines(io.BytesIO(data), block_bytes=len(data)))
    assert list(candidate_lines(io.BytesIO(data), block_bytes=block)) == whole
    assert sum("iteration  " in line for line in whole) == 22


def test_gzip_compressed_logs_are_read(tmp_path):
    gz = tmp_path / "log.out.gz"
    gz.write_bytes(gzip.compress((LOGS / "nemo2_b200_llama3_8b.log").read_bytes()))
    assert logs.parse_files([gz]).step_times == [6.08, 6.061, 6.082, 6.071, 6.06]


# --- invalid runs ---------------------------------------------------------------------------


def test_nan_grad_norm_names_the_step():
    lines = [
        MEGATRON_2021.replace("200/", f"{n:3d}/").replace("grad norm: 3.089", f"grad norm: {g}")
        for n, g in [(1, "3.089"), (2, "nan"), (3, "3.011")]
    ]
    s = logs.parse_text("\n".join(lines))
    assert len(s.steps) == 3 and not s.valid
    assert s.invalid_reason == "NaN grad norm at step 1"


def test_nan_loss_names_the_step():
    s = logs.parse_text(NEMO2_DGXC.replace("reduced_train_loss: 12.81", "reduced_train_loss: nan"))
    assert s.invalid_reason == "NaN loss at step 49"


def test_megatron_nan_iterations_counter_makes_the_run_invalid():
    # Megatron drops a NaN `lm loss` from the line and counts the iteration instead.
    line = MEGATRON_2021.replace("number of nan iterations:   0", "number of nan iterations:   1")
    s = logs.parse_text(line)
    assert s.invalid_reason == "1 NaN iteration(s) reported by Megatron at step 199"


def test_nan_values_survive_json_as_strings():
    s = logs.parse_text(MEGATRON_2021.replace("grad norm: 3.089", "grad norm: nan"))
    text = json.dumps(logs.to_dict(s), allow_nan=False)
    data = json.loads(text)
    assert data["steps"][0]["grad_norm"] == "nan"
    assert data["summary"]["invalid_reason"] == "NaN grad norm at step 199"


def test_automodel_benchmark_rerun_in_the_same_file_keeps_the_last_attempt():
    p = "2025-11-03 10:00:00 | INFO | nemo_automodel.recipes.llm.benchmark | "
    first = [p + f"Rank 0 | Iteration {i}" for i in range(2)]
    lines = [*first[:1], p + "Max iter time: 9.000000 seconds", *first[1:]]
    lines += [p + "Max iter time: 4.700000 seconds"]
    for i, t in enumerate([9.5, 4.4, 4.3]):  # rerun from iteration 0
        lines += [p + f"Rank 0 | Iteration {i}", p + f"Max iter time: {t:.6f} seconds"]
    s = logs.parse_text("\n".join(lines))
    assert [(st.step, st.step_time_s) for st in s.steps] == [(0, 9.5), (1, 4.4), (2, 4.3)]
    assert s.restarts == 1


def test_the_marker_search_narrows_to_the_format_found():
    from perfgate.logs import collect
    from perfgate.logs.scan import LineScanner

    data = (LOGS / "nemo2_b200_llama3_8b.log").read_bytes()
    scanner = LineScanner(io.BytesIO(data))
    collect.collect(scanner)
    assert scanner.markers == (b"teration",)
    scanner = LineScanner(io.BytesIO((LOGS / "bridge_llama31_8b_b200.log").read_bytes()))
    collect.collect(scanner)
    assert scanner.markers == (b"teration", b"Step Time")


def test_an_all_rank_log_reads_only_the_lowest_ranks():
    lines = []
    for step in (4, 5, 6):
        stamp = f"19:46:{10 + step * 2:02d},508"
        for r in reversed(range(40)):  # the highest ranks print first
            line = TITAN_X8.replace("step:  4", f"step:  {step}").replace("19:46:17,508", stamp)
            lines.append(f"[rank{r}]:" + line.replace("66.91GiB", f"{60 + r}.00GiB"))
    s = logs.parse_text("\n".join(lines))
    assert [st.step for st in s.steps] == [4, 5]  # step: 4 (index 3) has no earlier stamp
    assert {st.rank for st in s.steps} == {0} and s.steps[0].mem_reserved_gib == 60.0
    assert s.steps[0].step_time_s == pytest.approx(2.0)
    assert any("32 more ranks logged step lines" in n for n in s.notes)


def test_records_glued_on_a_cut_last_line_keep_all_but_the_last(tmp_path):
    text = fixture_text("nemo2_b200_llama3_8b.log")
    log = tmp_path / "glued.log"
    log.write_text(text.replace("\n", " "))  # no line break at all: one cut line
    assert logs.parse_files([log]).step_times == [6.08, 6.061, 6.082, 6.071]
    assert logs.parse_text(text.replace("\n", " ")).step_times[-1] == 6.06  # text is whole


def test_a_growing_log_leaves_out_its_unfinished_last_line(tmp_path):
    log = tmp_path / "live.log"
    text = fixture_text("nemo2_b200_llama3_8b.log")
    cut = text.rindex("train_step_timing in s: 6.06") + len("train_step_timing in s: 6")
    log.write_text(text[:cut])  # the writer is mid-way through `6.06 | TFLOPS_per_GPU ...`
    assert logs.parse_files([log], growing=True).step_times == [6.08, 6.061, 6.082, 6.071]
    # Not growing: a last line without a line break was still cut (a killed job): its record
    # is left out with a note, never read as 6.0 (`in s: 2.` read as 2.0 before).
    cut_file = logs.parse_files([log])
    assert cut_file.step_times == [6.08, 6.061, 6.082, 6.071]
    assert any("the last line has no line break" in n and "step 49" in n for n in cut_file.notes)
    log.write_text(text)
    assert logs.parse_files([log], growing=True).step_times[-1] == 6.06
