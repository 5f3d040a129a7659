"""compare_runs / compare_to_baseline: the decision rule, its numbers, and real series."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from pathlib import Path

import pytest
from testutil import require

from perfgate import stats
from perfgate.catalog import Baseline, BaselineRun, Provenance
from perfgate.errors import ConfigError, PerfgateError
from perfgate.stats import (
    ALPHA,
    DEFAULT_PAIR_CV,
    DEFAULT_RUN_TO_RUN_CV,
    PRIOR_DF,
    RunSummary,
    compare_runs,
    compare_to_baseline,
    needs_more_pairs,
    sequential_alpha,
)
from perfgate.stats.dist import normal_quantile, t_quantile


def run(median: float, rel_se: float = 0.0, steady: bool = True) -> RunSummary:
    """A steady run summary with a given median and relative SE."""
    reason = None if steady else "only 8 step times; warm-up removal needs at least 15"
    return RunSummary(
        50, steady, "mser5", 10, 49, 40, median, median, median * rel_se, 0.01, 0.0, reason
    )


def series(path: Path) -> list[float]:
    rows = [ln for ln in path.read_text().splitlines() if not ln.startswith(("#", "step"))]
    return [float(r.split(",")[1] or "nan") for r in rows]


@pytest.fixture(scope="module")
def qwen3(reference: Path) -> tuple[list[float], list[float]]:
    """Same Qwen3 MoE job on the same 8 B200: NeMo 25.11 (3.046 s) and 26.02 (2.393 s)."""
    d = reference / "third_party_logs"
    return (
        series(d / "together_b200_qwen3_moe_bf16_8gpu_nemo2511.csv"),
        series(d / "together_b200_qwen3_moe_bf16_8gpu_nemo2602.csv"),
    )


def test_release_to_release_speedup_is_an_improvement(qwen3) -> None:
    old, new = qwen3
    c = compare_runs([old], [new], tolerance=0.05)
    assert c.verdict == "IMPROVEMENT" and c.mode == "runs"
    assert c.delta == pytest.approx(2.3929 / 3.0465 - 1, abs=1e-4)  # -21.5%
    assert c.ci_high < -0.05
    assert c.baseline_step_time_s == pytest.approx(3.0465, abs=1e-4)
    # The reverse direction, as an A/B pair, is a 27% regression even at the lower bound.
    r = compare_runs([new], [old], tolerance=0.05, paired=True)
    assert r.verdict == "REGRESSION" and r.ci_low > 0.05
    assert r.pair_deltas == pytest.approx((3.0465 / 2.3929 - 1,), abs=1e-4)
    assert "REGRESSION" not in r.reason and "> tolerance 5% even at the lower bound" in r.reason


def test_paired_numbers_follow_the_documented_formula() -> None:
    base = [run(10.0), run(10.0), run(10.0)]
    cand = [run(10.40), run(10.35), run(10.45)]
    c = compare_runs(base, cand, tolerance=0.03, paired=True)
    d = [math.log(x / 10.0) for x in (10.40, 10.35, 10.45)]
    mean = sum(d) / 3
    s2 = sum((x - mean) ** 2 for x in d) / 2
    sigma = math.sqrt((PRIOR_DF * DEFAULT_PAIR_CV**2 + 2 * s2) / (PRIOR_DF + 2))
    se = sigma / math.sqrt(3)
    q = t_quantile(1 - ALPHA, PRIOR_DF + 2)
    assert c.se == pytest.approx(se)
    assert c.df == pytest.approx(PRIOR_DF + 2)
    assert c.delta == pytest.approx(math.expm1(mean))
    assert c.resolution == pytest.approx(math.expm1(q * se))
    assert (c.ci_low, c.ci_high) == pytest.approx(
        (math.expm1(mean - q * se), math.expm1(mean + q * se))
    )
    assert c.n_pairs == 3 and len(c.pair_deltas) == 3
    # guarded acceptance: REGRESSION above max(q se, log1p(tol) - q se)
    threshold = max(q * se, math.log1p(0.03) - q * se)
    assert c.detectable == pytest.approx(math.expm1(threshold + normal_quantile(0.95) * se))
    # +4% measured with ~2.6% resolution: slower for sure, not shown within 3%.
    assert c.resolution < 0.03 < c.delta
    assert c.verdict == "REGRESSION"
    assert "delta +4.0%: slower (lower bound +1.4% > 0) and not shown within tolerance 3%" in (
        c.reason
    )


def test_delta_is_a_geometric_mean_of_pair_ratios() -> None:
    c = compare_runs([run(10.0)] * 2, [run(11.0), run(9.0)], tolerance=0.5, paired=True)
    assert c.delta == pytest.approx(math.sqrt(1.1 * 0.9) - 1)
    assert c.pair_deltas == pytest.approx((0.1, -0.1))


def test_noisy_comparison_is_inconclusive_and_says_what_would_resolve_it() -> None:
    c = compare_runs([run(10.0)], [run(10.2)], tolerance=0.02, paired=True)
    assert c.verdict == "INCONCLUSIVE"
    assert c.resolution > 0.02
    assert "resolution" in c.reason and "pairs (A/B runs on the same nodes)" in c.reason


def test_noisy_branch_passes_when_the_upper_bound_is_within_tolerance() -> None:
    # Prior 2.6% per pair, 3 identical -2% pairs: resolution ~4% > 3%, upper bound ~+1.9%.
    base, cand = [run(10.0)] * 3, [run(9.8)] * 3
    c = compare_runs(base, cand, tolerance=0.03, paired=True, prior_sigma=0.026, prior_df=2)
    assert c.resolution > 0.03
    assert c.delta == pytest.approx(-0.02)
    assert -0.03 < c.ci_high <= 0.03
    assert c.verdict == "PASS"
    assert "upper bound" in c.reason


def test_precise_branch_passes_below_tolerance() -> None:
    base = [run(10.0)] * 5
    cand = [run(x) for x in (10.15, 10.1, 10.2, 10.12, 10.18)]  # +1.5%
    c = compare_runs(base, cand, tolerance=0.03, paired=True)
    assert c.resolution <= 0.03 and c.verdict == "PASS"
    assert "within tolerance 3%" in c.reason


def test_unsteady_runs_are_left_out_and_never_a_regression() -> None:
    slow = run(15.0, steady=False)
    c = compare_runs([run(10.0)], [slow], tolerance=0.03)
    assert c.verdict == "INCONCLUSIVE" and c.n_unsteady == 1
    assert "no steady candidate run" in c.reason and "only 8 step times" in c.reason
    p = compare_runs([run(10.0)] * 3, [run(10.1), slow, run(10.05)], 0.03, paired=True)
    assert p.n_pairs == 2 and len(p.pair_deltas) == 2
    assert "left out: candidate run 2" in p.reason


def test_a_run_too_short_for_warmup_removal_is_not_judged() -> None:
    c = compare_runs([[30.0] + [5.0] * 30], [[30.0, 9.0, 9.0, 9.0]], tolerance=0.05)
    assert c.verdict == "INCONCLUSIVE"
    assert not c.candidate[0].steady


def test_stored_baseline_single_run_is_the_predictive_spread_of_one_new_run() -> None:
    b = Baseline(step_time_s=10.0, provenance=Provenance("test"), n_runs=1)
    c = compare_to_baseline([run(10.25)], b, tolerance=0.03)
    assert c.mode == "stored" and c.verdict == "INCONCLUSIVE"
    # One new run vs one stored run, nothing observed: sigma is the prior's, t on its df.
    se = math.sqrt(2) * DEFAULT_RUN_TO_RUN_CV
    assert c.se == pytest.approx(se)
    assert c.df == PRIOR_DF
    assert c.resolution == pytest.approx(math.expm1(t_quantile(1 - ALPHA, PRIOR_DF) * se))
    # One candidate run's own 1.1% keeps q se above 3% / 2 however long the baseline.
    assert "no number of runs of this row resolves 3%" in c.reason and "A/B pairs" in c.reason
    # At 8%: j more runs in the baseline (n = 1 + j, df = 2 + j) until 2 q se <= log(1.08).
    j = next(
        j
        for j in range(1, 100)
        if 2 * t_quantile(1 - ALPHA, 2 + j) * 0.011 * math.sqrt(1 + 1 / (1 + j)) <= math.log(1.08)
    )
    c = compare_to_baseline([run(10.25)], b, tolerance=0.08)
    assert f"{j} more runs of this row resolve 8% (a baseline of {j + 1} runs" in c.reason


def test_stored_baseline_with_runs_and_history_moderates_sigma_by_hand() -> None:
    """Smyth's moderated variance on a worked example: prior 1% on 4 df, a baseline of 3
    runs (2 df) and a history of 7 df with sum of squares 7 x 0.005^2."""
    runs = tuple(BaselineRun(x) for x in (10.0, 10.1, 9.9))
    gm = math.exp(sum(math.log(x) for x in (10.0, 10.1, 9.9)) / 3)
    b = Baseline(gm, Provenance("perfgate run"), n_runs=3, runs=runs)
    c = compare_to_baseline(
        [run(gm * 1.08)], b, 0.05, prior_sigma=0.01, prior_df=4, history=(7 * 0.005**2, 7)
    )
    logs = [math.log(x) for x in (10.0, 10.1, 9.9)]
    m = sum(logs) / 3
    ss_base = sum((x - m) ** 2 for x in logs)  # 2.0001e-4
    s2 = (4 * 0.01**2 + ss_base + 7 * 0.005**2) / (4 + 2 + 7)
    assert c.sigma == pytest.approx(math.sqrt(s2))
    assert c.sigma == pytest.approx(0.0077212, rel=1e-4)
    assert c.df == 13
    assert c.se == pytest.approx(math.sqrt(s2 * (1 + 1 / 3)))
    assert c.delta == pytest.approx(0.08)
    # +8% with q se = 2.65 x 0.83%: lower bound > 5% -> REGRESSION beyond tolerance
    assert c.verdict == "REGRESSION" and "even at the lower bound" in c.reason


def test_guarded_acceptance_fails_a_slowdown_not_shown_within_tolerance() -> None:
    b = Baseline(10.0, Provenance("perfgate run"), n_runs=1)
    kw = {"prior_sigma": 0.01, "prior_df": 1000}
    # q se = 2.33 x 1.41% = 3.3%: +4% is real (lower bound > 0) and its upper bound > 5%
    c = compare_to_baseline([run(10.4)], b, 0.05, **kw)
    assert c.verdict == "REGRESSION" and "not shown within tolerance 5%" in c.reason
    # +1%: its upper bound 4.4% is within 5%
    assert compare_to_baseline([run(10.1)], b, 0.05, **kw).verdict == "PASS"
    # +2%: neither shown within 5% nor told from noise
    c = compare_to_baseline([run(10.2)], b, 0.05, **kw)
    assert c.verdict == "INCONCLUSIVE"
    # the point rule (the rule before row histories) passes +4% at 5%
    from perfgate.stats import compare

    old, compare.RULE = compare.RULE, "point"
    try:
        assert compare_to_baseline([run(10.4)], b, 0.05, **kw).verdict == "PASS"
    finally:
        compare.RULE = old


def test_stored_baseline_spread_and_tolerance_default() -> None:
    b = Baseline(
        step_time_s=10.0,
        provenance=Provenance("test"),
        step_time_spread_s=0.05,
        n_runs=5,
        tolerance=0.07,
    )
    cand = [run(10.9), run(10.95), run(10.85)]
    c = compare_to_baseline(cand, b)
    assert c.tolerance == 0.07  # None -> baseline.tolerance
    assert c.n_baseline == 5 and c.n_candidate == 3
    assert c.sigma_observed is not None
    assert c.verdict == "REGRESSION"  # +9% against a 5-run baseline, 7% tolerance
    c2 = compare_to_baseline(cand, replace(b, tolerance=None))
    assert c2.tolerance == stats.DEFAULT_TOLERANCE


def test_per_call_prior_replaces_the_default() -> None:
    base, cand = [run(10.0)] * 3, [run(10.25), run(10.24), run(10.26)]
    wide = compare_runs(base, cand, 0.02, paired=True)
    tight = compare_runs(base, cand, 0.02, paired=True, prior_sigma=0.002, prior_df=30)
    assert tight.se < wide.se and tight.df == 32
    assert tight.verdict == "REGRESSION"


def test_needs_more_pairs_and_sequential_alpha() -> None:
    inconclusive = compare_runs(
        [run(10.0)] * 3, [run(10.2), run(9.9), run(10.3)], 0.02, paired=True
    )
    assert inconclusive.verdict == "INCONCLUSIVE"
    assert needs_more_pairs(inconclusive, max_pairs=5)
    assert not needs_more_pairs(inconclusive, max_pairs=3)
    unpaired = compare_runs([run(10.0)] * 3, [run(10.2), run(9.9), run(10.3)], 0.02)
    assert not needs_more_pairs(unpaired, max_pairs=5)
    assert sequential_alpha(0.01, 3, 3) == 0.01
    assert sequential_alpha(0.01, 3, 5) == pytest.approx(0.0049)
    assert sequential_alpha(0.05, 3, 5) == pytest.approx(0.05 / 3)  # Bonferroni elsewhere
    assert sequential_alpha(0.01, 3, 30) == pytest.approx(0.01 / 28)


def test_pocock_table_holds_its_false_alarm_rate() -> None:
    try:
        import numpy as np
    except ImportError:
        np = None
    require(np is not None, "numpy (pip install -e '.[test]')")
    rng = np.random.default_rng(0)
    for first, last in ((3, 5), (2, 6), (4, 8)):
        z = normal_quantile(1 - sequential_alpha(0.01, first, last))
        walks = np.cumsum(rng.standard_normal((200_000, last)), axis=1)
        stat = walks[:, first - 1 : last] / np.sqrt(np.arange(first, last + 1))
        crossed = float(np.mean(stat.max(axis=1) > z))
        assert 0.008 < crossed < 0.0105  # about 1%, never much above (rounded down)
        bonferroni = normal_quantile(1 - 0.01 / (last - first + 1))
        assert z < bonferroni


def test_false_alarms_stay_below_alpha_for_gaussian_pairs() -> None:
    # Pairs as noisy as the prior says: the rule must not cry REGRESSION more than alpha.
    rng = random.Random(1)
    alarms = 0
    draws = 3000
    for _ in range(draws):
        base = [run(10.0) for _ in range(3)]
        cand = [run(10.0 * math.exp(rng.gauss(0, DEFAULT_PAIR_CV))) for _ in range(3)]
        alarms += compare_runs(base, cand, 0.03, paired=True).verdict == "REGRESSION"
    assert alarms / draws <= ALPHA


@pytest.mark.parametrize("tol", [0, 1, -0.02, "3%"])
def test_bad_tolerance_is_a_config_error(tol: object) -> None:
    with pytest.raises(ConfigError, match="tolerance"):
        compare_runs([run(1.0)], [run(1.0)], tolerance=tol)  # type: ignore[arg-type]


def test_bad_inputs_are_one_line_errors() -> None:
    with pytest.raises(PerfgateError, match="as many baseline runs as candidate runs"):
        compare_runs([run(1.0)], [run(1.0), run(1.0)], paired=True)
    with pytest.raises(PerfgateError, match="baseline runs: expected a non-empty list"):
        compare_runs([], [run(1.0)])
    with pytest.raises(PerfgateError, match=r"candidate run 2: step_times\[1\] = -3.0"):
        compare_runs([[5.0] * 20], [[5.0] * 20, [5.0, -3.0]])
    bad = Baseline(step_time_s=0.0, provenance=Provenance("test"))
    with pytest.raises(ConfigError, match=r"baseline step_time_s = 0\.0"):
        compare_to_baseline([run(1.0)], bad)
    with pytest.raises(ConfigError, match="prior_sigma"):
        compare_runs([run(1.0)], [run(1.0)], prior_sigma=0.0)


def test_to_dict_is_json_ready() -> None:
    import json

    c = compare_runs([run(10.0)], [run(10.1, steady=False)], 0.03)
    data = c.to_dict()
    text = json.dumps(data, allow_nan=False)
    assert '"verdict": "INCONCLUSIVE"' in text
    assert data["candidate"][0]["steady"] is False and data["delta"] is None
