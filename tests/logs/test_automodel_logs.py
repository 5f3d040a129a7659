"""Automodel train_ft logs: whole-second timestamps, tqdm bars glued in front of records, two
records in one second, and --tokens-per-step (#21 item 1).

Real excerpts: tests/data/logs/automodel_sft_pr3473*.log (NVIDIA-NeMo/Automodel PR #3473).
No public log shows the tqdm bar glued in front of a record, nor two step records in one
second: those lines are SYNTHETIC, formatted here from Automodel's own code (train_ft.py's
`"step {} | epoch {} | loss {:.4f} | grad_norm {:.4f} | lr {:.2e} | mem {:.2f} GiB | tps
{:.2f}({:.2f}/gpu) | num_label_tokens {}"`, log_utils.py's `%(asctime)s | %(levelname)s |
%(name)s | %(message)s` with `%Y-%m-%d %H:%M:%S`, base_recipe.py's
`tqdm(desc="Training", unit="step")` with a loss/lr/tps postfix, which tqdm redraws after a
`\\r` on the same stream, so each record is appended to the bar drawn after the step before).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import pytest
from logdata import LOGS

from perfgate import logs, stats
from perfgate.errors import LogParseError

START = datetime(2026, 5, 17, 4, 39, 0)


def _record(t: float, step: int, tps: float, loss: float = 0.0767) -> str:
    """One train_ft record stamped at t seconds after START (floored, as asctime is)."""
    stamp = (START + timedelta(seconds=math.floor(t))).strftime("%Y-%m-%d %H:%M:%S")
    return (
        f"{stamp} | INFO | root | step {step} | epoch 0 | loss {loss:.4f} | grad_norm 0.5599 | "
        f"lr {6.81e-05:.2e} | mem {21.01:.2f} GiB | tps {tps:.2f}({tps / 2:.2f}/gpu) | "
        "num_label_tokens 324"
    )


def _bar(k: int, n: int, elapsed: float, rate_s: float) -> str:
    """tqdm's frame after k updates: `\\rTraining:  k%|bar| k/N [mm:ss<mm:ss, X.XXs/step, ...]`."""
    pct = 100 * k // n
    fill = "█" * (10 * k // n)
    left = (n - k) * rate_s
    rate = f"{rate_s:.2f}s/step" if rate_s >= 1 else f"{1 / rate_s:.2f}step/s"
    clock = f"{int(elapsed) // 60:02d}:{int(elapsed) % 60:02d}<"
    clock += f"{int(left) // 60:02d}:{int(left) % 60:02d}"
    postfix = "loss=0.0767, lr=6.81e-05, tps=6961"
    return f"\rTraining: {pct:3d}%|{fill:<10}| {k}/{n} [{clock}, {rate}, {postfix}]"


def _run(times: list[float], bars: bool, tokens: float = 14_000.0) -> str:
    """A synthetic run: step k takes times[k] s; its record is stamped when it ends."""
    n = len(times)
    out, t, ema = [], 0.0, None
    first = f"\rTraining:   0%|          | 0/{n} [00:00<?, ?step/s]" if bars else ""
    prefix = first
    for k, dt in enumerate(times):
        t += dt
        out.append(prefix + _record(t, k, tokens / dt))
        ema = dt if ema is None else 0.3 * dt + 0.7 * ema
        prefix = _bar(k + 1, n, t, ema) if bars else ""
    if bars:
        out.append(prefix)  # tqdm's last frame, on its own line at close
    return "\n".join(out) + "\n"


# --- real excerpts: whole-second timestamps ------------------------------------------------


def test_whole_second_stamps_give_one_window_mean_with_its_se_floor():
    s = logs.parse_files([LOGS / "automodel_sft_pr3473.log"])
    # 15:48:59 -> 15:49:22: 23 s over steps 14..19, never 3.0/5.0/4.0 per step
    assert [st.step for st in s.steps] == [14, 15, 16, 17, 18, 19]
    assert s.step_times == [pytest.approx(23 / 6, abs=1e-6)] * 6
    assert s.min_rel_se == pytest.approx(1 / math.sqrt(6) / 23)
    assert any("whole-second timestamps as one window mean" in n for n in s.notes)
    assert any("1 logged step had nothing to time it by" in n for n in s.notes)


def test_the_2_s_excerpt_is_two_seconds_a_step_to_the_stamps_resolution():
    s = logs.parse_files([LOGS / "automodel_sft_pr3473_2s.log"])
    assert len(s.steps) == 13 and s.steps[0].step == 9  # step 8 has no earlier stamp
    assert s.step_times == [pytest.approx(2.0)] * 13  # 78 s over steps 9..47
    summary = stats.summarize_run(s.step_times + [2.0] * 10, min_rel_se=s.min_rel_se)
    assert summary.se_s == pytest.approx(2.0 * s.min_rel_se)  # the stamps' own precision


def test_an_explicit_tokens_per_step_wins_for_every_step():
    """--tokens-per-step N: N / tps exactly, every step kept (the first one too)."""
    s = logs.parse_files([LOGS / "automodel_sft_pr3473.log"], tokens_per_step=131072)
    tps = [6574.51, 10144.41, 10021.50, 7053.11, 9875.75, 10336.78, 11082.01]
    assert [st.step for st in s.steps] == list(range(13, 20))
    assert s.step_times == pytest.approx([131072 / x for x in tps], rel=1e-12)
    assert s.min_rel_se == 0.0
    assert any(
        "--tokens-per-step / tps (131072 tokens in every step, as given)" in n for n in s.notes
    )


# --- synthetic: the grammar of Automodel's code --------------------------------------------


def test_a_tqdm_bar_glued_in_front_of_each_record_times_every_step():
    times = [14.0] + [2.1 + 0.02 * (k % 3) for k in range(1, 30)]
    text = _run(times, bars=True)
    assert "tps=6961]2026-05-17 04:39:" in text  # the glue, as tqdm and logging write it
    s = logs.parse_text(text)
    assert [st.step for st in s.steps] == list(range(30))  # the first and the last too
    expected, ema = [], None
    for dt in times:
        ema = dt if ema is None else 0.3 * dt + 0.7 * ema
        expected.append(float(f"{ema:.2f}") if ema >= 1 else 1 / float(f"{1 / ema:.2f}"))
    assert s.step_times == pytest.approx(expected)
    assert all(not float(x).is_integer() for x in s.step_times[5:])  # not whole seconds
    assert s.min_rel_se == 0.0
    assert any("tqdm bar" in n for n in s.notes)


def test_records_sharing_a_second_parse_as_a_window_mean_never_a_zero():
    """Sub-second steps: two records in one second made a 0.0 step time (exit 2) before."""
    times = [1.0, 6.0] + [0.45] * 60  # step 1: warm-up (a CUDA-graph capture, say)
    text = _run(times, bars=False)
    stamps = [line[:19] for line in text.splitlines()]
    assert len(set(stamps)) < len(stamps)  # records share seconds
    s = logs.parse_text(text)
    assert min(s.step_times) > 0 and len(s.steps) == 61 and s.steps[0].step == 1
    steady = s.step_times[1:]
    assert steady == [steady[0]] * len(steady)
    assert steady[0] == pytest.approx(0.45, rel=0.05)  # 27 s of steps, known to ~1.5%
    assert s.step_times[0] == pytest.approx(6.0, abs=1.0)  # warm-up keeps its own (slow)
    summary = stats.summarize_run(s.step_times, min_rel_se=s.min_rel_se)
    assert summary.steady and summary.median_s == steady[0]
    assert summary.se_s >= s.min_rel_se * summary.median_s > 0


def test_fast_steps_with_bars_read_tqdm_step_per_second():
    times = [3.0] + [0.45] * 40
    s = logs.parse_text(_run(times, bars=True))
    assert len(s.steps) == 41
    assert s.step_times[-1] == pytest.approx(1 / 2.22, rel=1e-9)  # `2.22step/s`


def test_a_checkpoint_spike_keeps_its_own_time_and_stays_out_of_the_mean():
    times = [30.0] + [2.0] * 20 + [40.0] + [2.0] * 20
    s = logs.parse_text(_run(times, bars=False))
    by_step = dict(zip([st.step for st in s.steps], s.step_times, strict=True))
    assert by_step[21] == pytest.approx(40.0, abs=1.0)  # the spike, for the stats to clip
    steady = [x for k, x in by_step.items() if k not in (1, 21)]
    assert steady == [pytest.approx(2.0, abs=0.05)] * len(steady)
    # two stretches of steady steps (before and after the spike): sqrt(2) stamp errors
    assert s.min_rel_se == pytest.approx(math.sqrt(2) / math.sqrt(6) / 80)


def test_a_stray_bar_in_a_grepped_log_does_not_replace_the_timestamps():
    lines = (LOGS / "automodel_sft_pr3473.log").read_text().splitlines()
    lines[3] = (
        "\rTraining:  75%|███████▌  | 16/20 [00:55<00:18,  3.70s/step, loss=0.7505]" + lines[3]
    )
    s = logs.parse_text("\n".join(lines))
    assert s.step_times == [pytest.approx(23 / 6, abs=1e-6)] * 6


def test_a_log_with_records_but_no_time_at_all_says_what_it_needs():
    text = _record(0, 4, 15014.28).replace("2026-05-17 04:39:00 | ", "")
    with pytest.raises(LogParseError, match=r"no tqdm bar with a rate.*--tokens-per-step N"):
        logs.parse_text(text)
