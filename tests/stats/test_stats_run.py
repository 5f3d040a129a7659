"""summarize_run on real series from tests/data/reference and on series with known answers."""

from __future__ import annotations

import math
import random
import statistics
import time
from pathlib import Path

import pytest

from perfgate.errors import PerfgateError
from perfgate.stats import summarize_run
from perfgate.stats.run import batch_means_se, mser5_cut


def read_series(path: Path) -> list[float]:
    """iteration_time_s column of a reference CSV (comment lines start with #)."""
    out = []
    for line in path.read_text().splitlines():
        if line.startswith("#") or line.startswith("step"):
            continue
        value = line.split(",")[1]
        out.append(float(value) if value not in ("", "nan") else math.nan)
    return out


@pytest.fixture(scope="module")
def llama8b(reference: Path) -> list[float]:
    """50 steps of Llama3.1 8B on 8 B200 (NeMo 26.02): 43.8 s first step, CUDA graph at 4."""
    return read_series(
        reference / "third_party_logs" / "together_b200_llama3.1_8b_bf16_gbs128_nemo2602.csv"
    )


def test_auto_window_drops_warmup_and_cuda_graph_capture(llama8b: list[float]) -> None:
    s = summarize_run(llama8b)
    assert s.steady and s.reason is None
    assert s.window_method == "mser5"
    # Step 0 is 43.8 s and step 3 (CUDA-graph capture) 7.41 s: both must be outside.
    assert s.window_start >= 5
    assert s.window_end == 49 and s.n_steps == 50
    assert s.n_steady == 50 - s.window_start
    assert s.window_start <= 25  # never more than half the run
    steady = llama8b[s.window_start :]
    assert s.median_s == pytest.approx(statistics.median(steady))
    assert 5.68 < s.median_s < 5.72
    assert s.mean_s < 5.73  # the 43.8 s step would have pulled the mean to 6.5 s
    assert s.spike_fraction == 0.0
    assert 0.0005 < s.cv < 0.005  # ~0.2% robust CV in this run
    assert 0 < s.rel_se < 0.002


def test_fixed_llmb_window_uses_steps_35_to_44(llama8b: list[float]) -> None:
    s = summarize_run(llama8b, (35, 44))
    assert s.steady and s.window_method == "fixed"
    assert (s.window_start, s.window_end, s.n_steady) == (35, 44, 10)
    # 0-based step 35 is Megatron-Bridge "iteration 36": values 36..45 of the log.
    assert s.mean_s == pytest.approx(statistics.fmean(llama8b[35:45]))
    assert s.mean_s == pytest.approx(5.70986, abs=1e-5)


def test_fixed_window_beyond_the_run_is_not_steady(reference: Path) -> None:
    rack = read_series(
        reference
        / "third_party_logs"
        / "together_gb200_qwen2.5_72b_bf16_64gpu_nemo2602_rack10_run3.csv"
    )
    s = summarize_run(rack, (35, 44))
    assert not s.steady
    assert "fixed window 35:44 needs step 44" in s.reason
    assert math.isnan(s.median_s)


def test_missing_value_is_counted_not_used(reference: Path) -> None:
    rack = read_series(
        reference
        / "third_party_logs"
        / "together_gb200_qwen2.5_72b_bf16_64gpu_nemo2602_rack10_run2.csv"
    )
    assert math.isnan(rack[0])
    s = summarize_run(rack)
    assert s.steady and s.n_missing == 1
    assert 20.1 < s.median_s < 20.25  # the run settles at ~20.2 s with +5% every 5th step


def test_gc_spikes_are_counted_and_do_not_move_the_median(reference: Path) -> None:
    bert = read_series(
        reference
        / "megatron_golden"
        / "bert__bert_mcore_tp2_pp2_resume_torch_dist__dev_dgx_h100.csv"
    )
    s = summarize_run(bert)
    assert s.steady
    assert 0.10 < s.spike_fraction < 0.25  # 1.1-2x steps from checkpointing and GC
    assert s.median_s == pytest.approx(0.937, abs=0.002)
    assert s.mean_s > s.median_s * 1.03


def test_bimodal_run_is_not_steady(reference: Path) -> None:
    moe = read_series(
        reference
        / "megatron_golden"
        / "moe__gpt3_moe_mcore_te_ep8_resume_torch_dist_dist_optimizer_1node__dev_dgx_gb200.csv"
    )
    s = summarize_run(moe)
    assert not s.steady
    assert "too noisy" in s.reason and "CV" in s.reason


def test_too_short_run_is_not_steady() -> None:
    s = summarize_run([30.0, 6.0, 5.0, 5.1, 5.0, 5.05, 5.0, 5.02])
    assert not s.steady
    assert s.reason.startswith("only 8 step times")


def test_a_run_that_keeps_slowing_down_never_settles() -> None:
    ramp = [40.0] + [5.0 * (1 + 0.004 * i) for i in range(59)]  # +24% over the run
    s = summarize_run(ramp)
    assert not s.steady
    assert "drifts" in s.reason and "never settled" in s.reason


def test_long_warmup_is_removed_by_mser() -> None:
    rng = random.Random(3)
    warm = [5.0 * (1 + 0.5 * math.exp(-i / 6)) for i in range(30)]
    steady = [5.0 * (1 + rng.gauss(0, 0.005)) for _ in range(70)]
    s = summarize_run(warm + steady)
    assert s.steady
    assert 15 <= s.window_start <= 35
    assert s.median_s == pytest.approx(5.0, rel=0.003)


def test_summary_scales_with_the_series() -> None:
    # The detector evaluation scales summaries instead of re-summarizing scaled runs.
    rng = random.Random(5)
    x = [20.0] + [3.0 * (1 + rng.gauss(0, 0.01)) for _ in range(49)]
    a, b = summarize_run(x), summarize_run([v * 1.37 for v in x])
    assert (a.window_start, a.n_steady) == (b.window_start, b.n_steady)
    assert b.median_s == pytest.approx(a.median_s * 1.37)
    assert b.se_s == pytest.approx(a.se_s * 1.37)
    assert b.cv == pytest.approx(a.cv)


def test_batch_means_se_sees_autocorrelation() -> None:
    rng = random.Random(11)
    iid = [rng.gauss(0, 1) for _ in range(400)]
    ar, prev = [], 0.0
    for _ in range(400):
        prev = 0.7 * prev + rng.gauss(0, 1)
        ar.append(prev)
    naive = statistics.stdev(ar) / math.sqrt(len(ar))
    # AR(1) with rho 0.7: the true SE is sqrt((1 + rho) / (1 - rho)) = 2.4x the naive one.
    assert 1.6 < batch_means_se(ar) / naive < 3.5
    assert batch_means_se(iid) == pytest.approx(1 / math.sqrt(400), rel=0.35)


def test_mser5_cuts_a_clear_warmup() -> None:
    values = [10.0] * 10 + [5.0] * 40
    assert mser5_cut(values, 25) == 10


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ([5.0, -1.0], "step_times[1] = -1.0"),
        ([5.0, 0.0], "step_times[1] = 0.0"),
        ([math.inf], "step_times[0] = inf"),
        (["fast"], "step_times[0] = 'fast' is not a number"),
    ],
)
def test_bad_values_are_one_line_errors(bad: list, fragment: str) -> None:
    with pytest.raises(PerfgateError) as e:
        summarize_run(bad)
    assert fragment in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("window", ["last10", (44, 35), (-1, 5), (1,)])
def test_bad_window_is_an_error(window: object) -> None:
    with pytest.raises(PerfgateError, match="window"):
        summarize_run([5.0] * 50, window)  # type: ignore[arg-type]


@pytest.mark.parametrize("huge", [1e300, 1.7e308])
def test_huge_step_times_are_summarized_not_an_overflow(huge: float) -> None:
    # A corrupt 1e300 s step raised OverflowError in mser5_cut (a traceback shown as INFRA).
    rng = random.Random(5)
    clean = [6.0 + rng.gauss(0, 0.01) for _ in range(60)]
    spiked = summarize_run([*clean[:40], huge, *clean[40:]])
    assert spiked.steady and spiked.median_s == pytest.approx(6.0, rel=0.01)
    every = summarize_run([huge * (1 + rng.gauss(0, 0.001)) for _ in range(60)])
    assert every.steady and every.median_s == pytest.approx(huge, rel=0.01)
    assert math.isfinite(every.se_s) and every.se_s > 0


def test_step_times_too_far_apart_for_one_float_scale_are_not_steady() -> None:
    s = summarize_run([1e300] * 20 + [1e-320] * 40)
    assert not s.steady and "orders of magnitude" in (s.reason or "")


def test_a_million_step_run_summarizes_in_linear_time() -> None:
    # MSER-5 recomputed every tail: O(n^2), a 1M-step run never finished.
    rng = random.Random(3)
    values = [6.0 + rng.gauss(0, 0.02) for _ in range(1_000_000)]
    start = time.process_time()
    s = summarize_run(values)
    assert s.steady and s.n_steady > 500_000
    # CPU time, which a loaded machine does not stretch: about 5 s; the O(n^2) rule ran for hours
    assert time.process_time() - start < 60


def test_mser5_cut_matches_the_direct_definition() -> None:
    rng = random.Random(8)
    for _ in range(200):
        n = rng.randrange(10, 300)
        values = [
            rng.choice([1.0, 5.0, 6.0]) + rng.gauss(0, rng.choice([0, 0.01, 1])) for _ in range(n)
        ]
        max_cut = rng.randrange(0, n)
        k = n // 5
        means = [statistics.fmean(values[j * 5 : j * 5 + 5]) for j in range(k)]
        scores = []
        for d in range(min(max_cut // 5, k - 2) + 1):
            tail = means[d:]
            m = statistics.fmean(tail)
            scores.append(sum((y - m) ** 2 for y in tail) / len(tail) ** 2)
        best = min(scores) if scores else 0
        # The earliest cut whose score equals the minimum up to rounding.
        want = {5 * d for d, sc in enumerate(scores) if sc <= best * (1 + 1e-9) + 1e-300}
        assert mser5_cut(values, max_cut) in want | ({0} if not scores else set())
