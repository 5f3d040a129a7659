"""The A/B gate's rule (perfgate.verdicts.pairs_rule) and a row's A/B verdict
(perfgate.verdicts.paired).

Runs are a real 50-step B200 Llama 3.1 8B series (Megatron-Bridge, llmb) with per-launch
factors applied, so warm-up, spikes and the steady noise are real; the factors set each
launch's effect and the slowdown under test.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from rowfactory import make_row

from perfgate import stats
from perfgate.catalog import Baseline, Provenance, Row
from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.logs import Step, StepSeries
from perfgate.runs import Diagnosis, RunRecord, RunResult
from perfgate.verdicts import pairs_rule
from perfgate.verdicts.paired import evaluate_ab

OLD, NEW = "/lustre/nemo-25.07.sqsh", "/lustre/nemo-25.09.sqsh"
V_OLD = {"nemo": "2.4.0", "megatron_core": "0.13.1", "torch": "2.7.0", "cuda": "12.9"}
V_NEW = {"nemo": "2.5.0", "megatron_core": "0.14.0", "torch": "2.7.0", "cuda": "12.9"}
# Launch effects of 4 counterbalanced pairs: +-0.4% order effect on top of small noise.
EFFECTS = [(1.000, 1.004), (1.005, 1.001), (0.999, 1.003), (1.006, 1.002)]


@pytest.fixture(scope="module")
def real(reference: Path) -> list[float]:
    path = reference / "third_party_logs" / "together_b200_llama3.1_8b_bf16_gbs128_nemo2602.csv"
    rows = [ln for ln in path.read_text().splitlines() if not ln.startswith(("#", "step"))]
    return [float(r.split(",")[1]) for r in rows]


def record(times: list[float], label: str, factor: float = 1.0, versions=None) -> RunRecord:
    steps = tuple(Step(i, t * factor) for i, t in enumerate(times))
    image = OLD if label == "baseline" else NEW
    return RunRecord(
        image=image,
        label=label,
        series=StepSeries("perfgate", steps),
        versions=versions or (V_OLD if label == "baseline" else V_NEW),
        exit_code=0,
        image_digest=f"sha256:{'a' if label == 'baseline' else 'b'}{'0' * 63}",
    )


def ab_runs(times: list[float], slowdown: float, pairs: int) -> list[RunRecord]:
    """Launches in the gate's order (AB BA AB ..) with EFFECTS and the candidate slowed."""
    out = []
    for i in range(pairs):
        a, b = EFFECTS[i % len(EFFECTS)]
        first = record(times, "baseline", a)
        second = record(times, "candidate", b * (1 + slowdown))
        out += [first, second] if i % 2 == 0 else [second, first]
    return out


@pytest.fixture
def row() -> Row:
    return make_row(
        model="llama3_8b",
        gpu="b200",
        num_gpus=8,
        gbs=128,
        mbs=2,
        seq_len=8192,
        tp=1,
        baseline=Baseline(step_time_s=5.30, provenance=Provenance("test"), tolerance=0.05),
    )


def result(runs: list[RunRecord], **kw) -> RunResult:
    return RunResult("r", "4242", "COMPLETED", runs=tuple(runs), nodes=("n1",), **kw)


# --- the rule -----------------------------------------------------------------------------


def test_alpha_per_look_is_the_sequential_one() -> None:
    assert pairs_rule.alpha_for(3, 8) == pytest.approx(0.01 * 0.31)
    assert pairs_rule.alpha_for(3, 3) == 0.01  # no adaptivity: the plain alpha


def test_rule_asks_for_a_pair_while_inconclusive_and_says_why(real) -> None:
    rule = pairs_rule.PairsRule(tolerance=0.03, window="auto", first_pairs=3, max_pairs=8)
    runs = ab_runs(real, 0.0, 3)
    base, cand = pairs_rule.split_pairs(runs)
    comp = pairs_rule.judge(
        [r.series.step_times for r in base],
        [r.series.step_times for r in cand],
        0.03,
        first_pairs=3,
        max_pairs=8,
    )
    # 3 pairs at alpha 0.31%: the prior alone puts the resolution above 3%
    assert comp.verdict == "INCONCLUSIVE" and comp.resolution > 0.03
    why = rule(runs)
    assert why == (
        f"3 pair(s) INCONCLUSIVE: delta {comp.delta:+.2%} [{comp.ci_low:+.1%}, "
        f"{comp.ci_high:+.1%}] not yet told from tolerance, resolution "
        f"{comp.resolution:.1%} > tolerance 3.0%"
    )
    assert rule(ab_runs(real, 0.0, 4)) is False  # 4 pairs resolve it (PASS)
    assert rule(ab_runs(real, 0.10, 3)) is False  # a 10% slowdown is decided at once
    # max_pairs reached, or a run without steps: no more pairs
    assert pairs_rule.PairsRule(0.03, "auto", 3, 3)(runs) is False
    broken = [*runs[:-1], replace(runs[-1], series=None)]
    assert rule(broken) is False


def test_split_pairs_pairs_the_ith_of_each_label() -> None:
    def r(label: str, k: int) -> RunRecord:
        return RunRecord(image=str(k), label=label, series=None)

    runs = [r("baseline", 1), r("candidate", 2), r("candidate", 3), r("baseline", 4)]
    base, cand = pairs_rule.split_pairs([*runs, r("baseline", 5)])  # a half pair is left out
    assert [x.image for x in base] == ["1", "4"] and [x.image for x in cand] == ["2", "3"]


# --- the verdict ----------------------------------------------------------------------------


def test_pass_after_an_added_pair_with_both_containers_side_by_side(real, row) -> None:
    runs = ab_runs(real, 0.0, 4)
    ev = evaluate_ab(row, result(runs), source="live", first_pairs=3, max_pairs=8, tolerance=0.03)
    assert ev.verdict == "PASS" and ev.mode == "paired"
    ab = ev.ab
    assert ab["order"] == "AB BA AB BA"
    assert ab["pairs_run"] == 4 and ab["pairs_used"] == 4 and ab["pairs_added"] == 1
    assert ab["alpha_per_look"] == pytest.approx(0.0031)
    # each pair: its order, its launches and its delta from the two medians
    base, cand = pairs_rule.split_pairs(runs)
    for i, p in enumerate(ab["pairs"]):
        b = stats.summarize_run(base[i].series.step_times).median_s
        c = stats.summarize_run(cand[i].series.step_times).median_s
        assert p["order"] == ("AB" if i % 2 == 0 else "BA")
        assert p["delta"] == pytest.approx(c / b - 1)
        assert p["baseline_step_time_s"] == pytest.approx(b)
    assert [(p["baseline_launch"], p["candidate_launch"]) for p in ab["pairs"]] == [
        (1, 2),
        (4, 3),
        (5, 6),
        (8, 7),
    ]
    assert ev.comparison.pair_deltas == pytest.approx([p["delta"] for p in ab["pairs"]])
    # the sides: images, digests, versions; what changed
    sb, sc = ab["sides"]["baseline"], ab["sides"]["candidate"]
    assert (sb["image"], sc["image"]) == (OLD, NEW)
    assert sb["digest"].startswith("sha256:a") and sc["digest"].startswith("sha256:b")
    assert sb["launches"] == [1, 4, 5, 8] and sc["launches"] == [2, 3, 6, 7]
    assert ab["changed"] == {
        "nemo": {"baseline": "2.4.0", "candidate": "2.5.0"},
        "megatron_core": {"baseline": "0.13.1", "candidate": "0.14.0"},
    }
    # pooled numbers: geometric mean of the steady medians, spread across runs
    meds = [stats.summarize_run(r.series.step_times).median_s for r in cand]
    gm = math.exp(sum(map(math.log, meds)) / 4)
    assert sc["step_time_s"] == pytest.approx(gm) and sc["n_runs"] == 4
    assert ev.measured.step_time_s == pytest.approx(gm)
    assert ev.measured.tokens_per_s_per_gpu == pytest.approx(128 * 8192 / gm / 8)
    assert 0 < sc["spread_s"] < 0.01 * gm
    # the stored baseline (5.30 s) is drift, informational
    d = ab["drift"]
    assert d["stored_step_time_s"] == 5.30
    assert d["candidate"]["delta"] == pytest.approx(gm / 5.30 - 1)
    assert ev.message.startswith(f"{row.id}: PASS: candidate {gm:.4g} s vs baseline image ")
    assert "(A/B pairs in one allocation: 4 pairs (1 added, at most 8), resolution" in ev.message
    assert f"candidate {gm / 5.30 - 1:+.1%} (drift, informational)" in ev.message


def test_regression_of_ten_percent_at_three_pairs(real, row) -> None:
    ev = evaluate_ab(
        row,
        result(ab_runs(real, 0.10, 3)),
        source="live",
        first_pairs=3,
        max_pairs=8,
        tolerance=0.03,
    )
    assert ev.verdict == "REGRESSION"
    assert ev.comparison.delta == pytest.approx(0.10, abs=0.01)
    assert ev.comparison.ci_low > 0.03
    assert ev.ab["pairs_added"] == 0
    assert "REGRESSION" in ev.message and "3 pairs, resolution" in ev.message


def test_inconclusive_at_max_pairs_says_so(real, row) -> None:
    ev = evaluate_ab(
        row,
        result(ab_runs(real, 0.0, 3)),
        source="live",
        first_pairs=3,
        max_pairs=3,
        tolerance=0.02,
    )
    assert ev.verdict == "INCONCLUSIVE"
    assert "3 pairs of at most 3" in ev.message
    # the job wanted a fourth pair but the allocation's time was up: the message says so
    note = "pair 4 was wanted (3 pair(s) INCONCLUSIVE) but 30 s are left and a pair takes 90 s"
    ev = evaluate_ab(
        row,
        result(ab_runs(real, 0.0, 3), notes=(note,)),
        source="live",
        first_pairs=3,
        max_pairs=8,
        tolerance=0.02,
    )
    assert ev.verdict == "INCONCLUSIVE" and ev.ab["no_time_for_more"] == note
    assert f"3 pairs of at most 8; {note}: raise --time-limit" in ev.message


def test_no_stored_baseline_no_drift(real, row) -> None:
    ev = evaluate_ab(
        replace(row, baseline=None),
        result(ab_runs(real, 0.0, 4)),
        source="live",
        first_pairs=3,
        max_pairs=8,
        tolerance=0.03,
    )
    assert ev.verdict == "PASS" and ev.ab["drift"] is None and "drift" not in ev.message


def test_failed_launch_is_infra_with_the_sides_kept(real, row) -> None:
    runs = ab_runs(real, 0.0, 2)[:3]
    diag = Diagnosis("OOM", "run 3 (candidate): CUDA out of memory on rank-1.log", "CUDA oom")
    ev = evaluate_ab(
        row,
        result(runs, diagnosis=diag),
        source="live",
        first_pairs=3,
        max_pairs=8,
    )
    assert ev.verdict == "INFRA" and ev.cause == "OOM" and ev.mode == "paired"
    assert ev.message == f"{row.id}: INFRA OOM (job 4242): {diag.message}"
    assert ev.ab["sides"]["candidate"]["image"] == NEW and ev.ab["order"] == "AB B"


def test_a_side_without_steady_runs_is_infra(real, row) -> None:
    runs = ab_runs(real, 0.0, 3)
    short = [
        replace(r, series=StepSeries("perfgate", r.series.steps[:8]))
        if r.label == "candidate"
        else r
        for r in runs
    ]
    ev = evaluate_ab(row, result(short), source="live", first_pairs=3, max_pairs=8)
    assert ev.verdict == "INFRA" and ev.cause == "TOO_FEW_STEPS"
    assert "no A/B pair has both runs steady" in ev.message
    assert all(
        not p["used"] and "candidate run not steady" in p["left_out"] for p in ev.ab["pairs"]
    )
    nan = list(runs)
    nan[1] = replace(nan[1], series=replace(nan[1].series, invalid_reason="NaN grad norm at 7"))
    ev = evaluate_ab(row, result(nan), source="live", first_pairs=3, max_pairs=8)
    assert ev.verdict == "INFRA" and ev.cause == "NAN"
    assert "run 2 (candidate): NaN grad norm at 7" in ev.message


def test_a_cluster_noise_prior_reaches_the_rule_and_the_job_callback(real) -> None:
    """stats.Noise travels with PairsRule (pickled into the job): a quiet cluster's prior
    (0.2% per launch, 50 df) resolves what the default (1.6% per pair, 2 df) cannot."""
    import pickle

    base = [[t * b for t in real] for b, _ in EFFECTS[:3]]
    cand = [[t * c * 1.025 for t in real] for _, c in EFFECTS[:3]]  # a 2.5% slowdown
    default = pairs_rule.judge(base, cand, 0.02, first_pairs=3, max_pairs=8)
    quiet = stats.Noise(run_cv=0.002, df=50)
    tuned = pairs_rule.judge(base, cand, 0.02, first_pairs=3, max_pairs=8, noise=quiet)
    assert default.verdict == "INCONCLUSIVE" and tuned.verdict == "REGRESSION"
    assert tuned.resolution < default.resolution
    assert quiet.paired()["prior_sigma"] == pytest.approx(0.002 * math.sqrt(2))
    rule = pickle.loads(pickle.dumps(pairs_rule.PairsRule(0.02, "auto", 3, 8, quiet)))
    assert rule.noise == quiet
    runs = [record(real, "baseline", b) for b, _ in EFFECTS[:3]]
    runs += [record(real, "candidate", c * 1.025) for _, c in EFFECTS[:3]]
    assert rule(runs) is False  # decided at 3 pairs: no more pairs asked for
    assert pairs_rule.PairsRule(0.02, "auto", 3, 8)(runs)  # the default prior asks for one more


def test_pairs_of_whole_second_stamps_keep_their_se_floor(tmp_path: Path) -> None:
    """Automodel's times are a window mean of whole-second stamps: identical pairs do not make
    the paired sigma the prior's alone; each run brings the stamps' precision (#21 leftover)."""
    from perfgate import catalog, logs

    base_dir = SHIPPED_DIR
    row = catalog.load_catalog(base_dir).by_id["lora-llama3_8b-h100-bf16-1gpu-tp1fsdp-automodel"]
    row = replace(row, gbs=8)  # 8 x 4096 tokens in 2 s: a step one H100 can run
    stamps = "\n".join(
        f"2026-05-17 04:{40 + (2 * k) // 60:02d}:{(2 * k) % 60:02d} | INFO | root | step {k} | "
        f"epoch 0 | loss 0.5 | grad_norm 0.5 | lr 1.00e-05 | mem 20.00 GiB | tps 7000.00"
        "(7000.00/gpu) | num_label_tokens 324"
        for k in range(40)
    )
    series = logs.parse_text(stamps)
    m = series.min_rel_se
    assert m == pytest.approx(1 / math.sqrt(6) / 78)
    runs = [RunRecord(image=OLD if i % 2 == 0 else NEW, label=("baseline", "candidate")[i % 2],
                      series=series, exit_code=0) for i in range(6)]  # fmt: skip
    noise = stats.Noise(0.01, 0.002, 2.0)  # a pair prior of 0.2% x sqrt(2), 2 df
    ev = evaluate_ab(row, result(runs), source="replay", first_pairs=3, max_pairs=3,
                     tolerance=0.05, noise=noise)  # fmt: skip
    prior = 0.002 * math.sqrt(2)
    # pooled: 2 df of (prior^2 + 2 m^2, each pair's two runs at the floor) and 2 df of 0 spread
    assert ev.comparison.sigma == pytest.approx(math.sqrt((prior**2 + 2 * m**2) / 2), rel=1e-6)
    assert ev.comparison.sigma > 2.5 * prior / math.sqrt(2)  # the floor dominates here
    assert ev.verdict == "PASS" and ev.comparison.delta == 0.0
