"""scripts/evaluate_detector.py: its data handling, its noise measurement, a quick replay."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest
from testutil import REPO, require

from perfgate import stats

try:
    import numpy as np
except ImportError:  # the evaluator needs numpy (test extra); CI must have it
    np = None  # type: ignore[assignment]


@pytest.fixture(scope="module")
def ed() -> ModuleType:
    require(np is not None, "numpy (pip install -e '.[test]')")
    scripts = str(REPO / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)  # the script imports its sibling detector_data
    path = REPO / "scripts" / "evaluate_detector.py"
    spec = importlib.util.spec_from_file_location("evaluate_detector", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["evaluate_detector"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def dd(ed: ModuleType) -> ModuleType:
    """scripts/detector_data.py, imported by the evaluator."""
    return sys.modules["detector_data"]


@pytest.fixture(scope="module")
def measured(ed: ModuleType, reference: Path) -> dict:
    return ed.measure_noise(reference)


def test_priors_agree_with_the_real_aa_pairs(measured: dict) -> None:
    aa = measured["resume_pairs"]
    # The briefing's reading of the data: median |difference| 1.2-1.6%, one pair in five > 3%.
    assert 0.012 < aa["median_abs_diff"] < 0.016
    assert 0.15 < aa["frac_over_3pct"] < 0.28
    # perfgate's priors are the scaled-t fit of these A/A pairs (df is also the tail weight).
    assert aa["t_fit_pair_scale"] == pytest.approx(stats.DEFAULT_PAIR_CV, rel=0.1)
    assert aa["t_fit_run_scale"] == pytest.approx(stats.DEFAULT_RUN_TO_RUN_CV, rel=0.1)
    assert aa["t_fit_df"] == pytest.approx(stats.PRIOR_DF, abs=0.5)


def test_priors_were_fitted_on_the_calibration_half(ed: ModuleType, reference: Path) -> None:
    cal = ed.measure_noise(reference, "calibration")["resume_pairs"]
    assert cal["t_fit_pair_scale"] == pytest.approx(stats.DEFAULT_PAIR_CV, rel=0.03)
    assert cal["t_fit_df"] == pytest.approx(stats.PRIOR_DF, abs=0.3)
    ev = ed.load_resume_pairs(reference, "evaluation")
    cal_pairs = ed.load_resume_pairs(reference, "calibration")
    assert sum(map(len, ev.values())) + sum(map(len, cal_pairs.values())) == 168
    # Every day/platform batch of A/A pairs appears in both halves' union; no test in both.
    templates = ed.load_ci_templates(reference)
    a = {k.rsplit("/", 1)[0] for k in ed.split_templates(templates, "evaluation")}
    b = {k.rsplit("/", 1)[0] for k in ed.split_templates(templates, "calibration")}
    assert a and b and not a & b


def test_other_aa_sources(measured: dict) -> None:
    d2d = measured["b200_512gpu_day_to_day"]
    assert d2d["n"] == 12  # 15 workloads minus 2 rescaled and the Qwen3 software change
    assert 0.005 < d2d["pair_sigma_sd_without_infra"] < 0.01  # ~0.7% at 512 GPUs
    assert d2d["pair_sigma_sd"] > 0.02  # the weak-fabric-node day (-7.2%) dominates
    assert measured["megatron_bridge_ci_vs_stored"]["n"] == 5


def test_fit_scaled_t_recovers_known_parameters(dd: ModuleType) -> None:
    rng = np.random.default_rng(3)
    x = 0.02 * rng.standard_t(3.0, size=6000)
    nu, scale = dd.fit_scaled_t(x)
    assert nu == pytest.approx(3.0, rel=0.25)
    assert scale == pytest.approx(0.02, rel=0.08)


def test_synthetic_runs_keep_the_real_warmup(
    ed: ModuleType, dd: ModuleType, reference: Path
) -> None:
    x = dd._series_csv(
        reference / "third_party_logs" / "together_b200_llama3.1_8b_bf16_gbs128_nemo2602.csv"
    )
    assert ed.warmup_end(x) == 5  # 43.8 s first step, CUDA-graph capture at index 3
    t = ed.Template("llama", x, ed.warmup_end(x))
    y = ed.synth_run(t, np.random.default_rng(0))
    assert len(y) == len(x) == 50
    assert np.array_equal(y[:5], x[:5])
    assert set(np.round(y[5:], 6)) <= set(np.round(x[5:], 6))
    assert not np.array_equal(y[5:], x[5:])


def test_quick_replay_is_deterministic_and_sane(ed: ModuleType, reference: Path, capsys) -> None:
    assert ed.main(["--quick", "--json", "--reference", str(reference)]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["split"] == "evaluation" and res["draws"] == 100

    def rate(mode: str, tol: float, s: float, v: str = "REGRESSION") -> float:
        return res["rates"].get(f"{mode}|{tol}|{s}", {}).get(v, 0.0)

    for mode in ("stored-1", "stored-3", "runs-3v3", "ab-3", "ab-5", "ab-8", "ab-3..5"):
        assert rate(mode, 0.03, 0.0) <= 0.03, mode  # false alarms stay rare
        assert sum(res["rates"][f"{mode}|0.03|0.1"].values()) == pytest.approx(1.0)
    assert rate("llmb", 0.05, 0.0) > 0.04  # the llmb rule cries wolf on real noise
    assert rate("ab-8", 0.03, 0.1) > 0.8
    assert rate("ab-8", 0.03, 0.1) >= rate("ab-3", 0.03, 0.1)
    small = ed.run(reference, "ci", "evaluation", 6, 1, 0.0, (0.03,), (0.0, 0.05))
    again = ed.run(reference, "ci", "evaluation", 6, 1, 0.0, (0.03,), (0.0, 0.05))
    assert small["rates"] == again["rates"]
    assert not math.isnan(res["seconds"])


def test_pairs_follow_the_gates_launch_order(ed: ModuleType) -> None:
    """Pair effects are log(candidate / baseline) for AB BA AB ..: run 2 / run 1, sign flipped
    in the BA pairs, so a measured order effect (run 2 slower) alternates and cancels."""
    batch = np.full(4, 0.004)  # every A/A pair: run 2 0.4% slower
    rng = np.random.default_rng(0)
    alt = ed.Noise([batch], [batch], 0.0, "alternating").pair_effects(batch, 6, rng)
    assert alt.tolist() == [0.004, -0.004] * 3
    abab = ed.Noise([batch], [batch], 0.0, "abab").pair_effects(batch, 6, rng)
    assert abab.tolist() == [0.004] * 6  # candidate always second: a bias of +0.4%
    # the evaluator's adaptive mode is the gate's own default and rule
    from perfgate.launch.types import LaunchOptions

    first, top = ed.FIRST_PAIRS, ed.MAX_PAIRS
    assert first == LaunchOptions.pairs == 3 and top == LaunchOptions.max_pairs == 8
    assert ed.README_MODES[0][0] == "ab-3..8" and ("ab-3..8", 8, True) in ed.ADAPTIVE


# --- the nightly matrix scenario (scripts/detector_matrix.py, detector_generator.py) ---------


@pytest.fixture(scope="module")
def gen(ed: ModuleType) -> ModuleType:
    """scripts/detector_generator.py, imported by the evaluator."""
    return sys.modules["detector_generator"]


@pytest.fixture(scope="module")
def dm(ed: ModuleType) -> ModuleType:
    """scripts/detector_matrix.py, imported by the evaluator."""
    return sys.modules["detector_matrix"]


def test_the_evaluators_modules_import_in_one_direction() -> None:
    """No circle: evaluate_detector imports the scenario modules, none imports it back."""
    import ast

    for path in (REPO / "scripts").glob("detector_*.py"):
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert "evaluate_detector" not in names, path.name


def test_the_matrix_generator_has_warmup_noise_spikes_and_its_cv(gen: ModuleType) -> None:
    rng = np.random.default_rng(4)
    rows = [gen.draw_row(i, rng) for i in range(200)]
    assert all(0.005 <= r.cv <= 0.03 and 3 <= r.warmup <= 10 for r in rows)
    assert {r.nodes for r in rows} == {1, 2, 4, 8, 16, 32}
    m = gen.RowModel(0, 2.0, 400, 1, 0.02, 0.0, 0.0, 5, 0.005)
    x = np.array(gen.run_steps(m, rng, 1.0))
    assert x[0] > 3 * 2.0 and abs(float(np.median(x[5:])) - 2.0) < 0.02
    assert 0.015 < float(np.std(np.log(x[5:]))) < 0.025  # the row's per-step CV (+ drift)
    spiky = gen.RowModel(0, 2.0, 4000, 1, 0.005, 0.0, 0.02, 3, 0.005)
    y = np.array(gen.run_steps(spiky, rng, 1.0))[3:]
    assert 0.01 < float(np.mean(y > 1.4 * 2.0)) < 0.03


def test_the_held_out_shape_has_heavy_tailed_launches_and_bursts(gen: ModuleType) -> None:
    rng = np.random.default_rng(6)
    normal = gen.RowModel(0, 2.0, 50, 1, 0.01, 0.0, 0.0, 3, 0.01)
    heavy = gen.RowModel(0, 2.0, 4000, 1, 0.005, 0.0, 0.0, 3, 0.01, shape="heavy")
    a = np.log([gen.launch_effect(normal, rng) for _ in range(40000)])
    b = np.log([gen.launch_effect(heavy, rng) for _ in range(40000)])
    assert float(np.std(a)) == pytest.approx(0.01, rel=0.05)
    assert float(np.std(b)) == pytest.approx(0.01, rel=0.15)  # the same SD ...
    assert float(np.mean(np.abs(b) > 0.03)) > 3 * float(np.mean(np.abs(a) > 0.03))  # ... fat tails
    y = np.array(gen.run_steps(heavy, rng, 1.0))[3:]
    assert float(np.mean(y > 2.0 * 1.025)) > 0.02  # bursts of +3..8% (no spikes in this row)
    assert gen.SHAPES["heavy"].cluster_nodes == 200 and gen.SHAPES["heavy"].slow_nodes == 10


@pytest.mark.parametrize("model", ["memoryless", "cluster"])
def test_one_launch_in_twenty_lands_on_a_slow_node(gen: ModuleType, model: str) -> None:
    rng = np.random.default_rng(8)
    cluster = gen.Cluster(model, rng)
    row = gen.RowModel(0, 2.0, 50, 4, 0.01, 0.0, 0.0, 3, 0.005)
    launches = [cluster.launch(row) for _ in range(20000)]
    slow = [f for f, _ in launches if f > 1]
    assert len(slow) / len(launches) == pytest.approx(0.05, abs=0.006)
    assert all(1.02 <= f <= 1.06 for f in slow)
    assert all(len(nodes) == 4 == len(set(nodes)) for _, nodes in launches)
    if model == "cluster":  # kept off its slow nodes, a launch is never slow
        off = set(cluster.slow)
        assert all(f == 1.0 for f, _ in (cluster.launch(row, off) for _ in range(2000)))


def test_a_short_matrix_season_confirms_and_counts(dm: ModuleType) -> None:
    rng = np.random.default_rng(2)
    policies = ("confirm 1", "every 3")
    c = dm.season(rng, "memoryless", 20, 3, "confirm 2", None, probes=2, policies=policies)
    assert c["nights"] == 3 and c["row_nights"] == 60
    for p in ("confirm 2", *policies):
        assert c[f"false:{p}"] <= c["first_false"]  # reruns only ever remove REGRESSIONs
        assert c[f"probe:{0.08}"] == 6 and c[f"caught:0.08:{p}"] >= 4
    # the same launches: a second rerun only ever adds GPU-hours to one rerun's
    assert c["gpu_h_reruns:confirm 2"] >= c["gpu_h_reruns:confirm 1"] > 0
    steps = dm.season(rng, "none", 10, 12, "confirm 1", None, step=True, probes=1)
    assert steps["series"] == 10 and 0 <= steps["found:confirm 1"] <= 10


def test_the_matrix_report_names_every_policy(ed: ModuleType, capsys) -> None:
    args = ["--matrix", "--quick", "--jobs", "1", "--slow-nodes", "cluster", "--probes", "1"]
    assert ed.main([*args, "--policies", "confirm 1"]) == 0
    out = capsys.readouterr().out
    assert "| confirm 1" in out and "one rerun must reproduce |" in out
    assert "UNCONFIRMED naming nodes" in out and "SHIFT per night at no change" in out
    assert ed.main([*args, "--policies", "nope"]) == 2


# --- what a 1-run baseline costs by per-step CV (scripts/detector_baselines.py) --------------


def test_the_baseline_runs_table_counts_every_verdict(ed: ModuleType, capsys) -> None:
    db = sys.modules["detector_baselines"]
    res = db.simulate(draws=24, seed=3)
    assert len(res["rates"]) == len(db.BINS) * len(db.MODES) * len(db.SLOWDOWNS)
    for rates in res["rates"].values():
        assert sum(rates.values()) == pytest.approx(1.0)
    for lo, hi in db.BINS:  # an 8% slowdown at 5% tolerance is caught nearly always
        for mode in db.MODES:
            assert db._rate(res, db.cv_label(lo, hi), mode, 0.08, "REGRESSION") >= 0.8
    assert ed.main(["--baseline-runs", "--draws", "8", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "## 1-run baseline by per-step CV" in out and "| 2-3% | 1-run, no rel_se |" in out


def test_a_one_run_baselines_within_run_error_widens_the_comparison(ed: ModuleType) -> None:
    """The baseline's stored rel_se (a 3%-CV row: ~0.4%) enters the comparison's SE."""
    db = sys.modules["detector_baselines"]
    from perfgate import verdicts

    dm = sys.modules["detector_generator"]
    rng = np.random.default_rng(1)
    m = db.replace(dm.draw_row(0, rng), cv=0.03, phi=0.0, spikes=0.0, steps=50)
    s = stats.summarize_run(dm.run_steps(m, rng, 1.0))
    run = db.BaselineRun(s.median_s, s.rel_se)
    result = dm.result(m, dm.run_steps(m, rng, 1.0), ("n1",), "j")
    se = {}
    for name, base in (("with", [run]), ("without", [db.replace(run, rel_se=None)])):
        row = db.replace(m.row, baseline=db._baseline(base))
        se[name] = verdicts.evaluate(row, result, source="live", noise=stats.Noise()).comparison.se
    assert s.rel_se > 0.003
    assert se["with"] ** 2 == pytest.approx(se["without"] ** 2 + s.rel_se**2, rel=0.05)


def test_the_flaky_shape_has_contaminated_launches_and_nodes_slow_half_the_time(
    gen: ModuleType,
) -> None:
    rng = np.random.default_rng(9)
    flaky = gen.RowModel(0, 2.0, 50, 4, 0.01, 0.0, 0.0, 3, 0.01, shape="flaky")
    a = np.log([gen.launch_effect(flaky, rng) for _ in range(40000)])
    assert float(np.std(a)) == pytest.approx(0.01, rel=0.05)  # the row's SD ...
    # ... with a tenth of launches at 3x the others' SD: 1.8% beyond 3 SD (a normal: 0.27%)
    assert float(np.mean(np.abs(a) > 0.03)) == pytest.approx(0.018, abs=0.003)
    cluster = gen.Cluster("cluster", rng, gen.SHAPES["flaky"])
    assert len(cluster.slow) == 16 and len(cluster.nodes) == 400
    launches = [cluster.launch(flaky) for _ in range(20000)]
    held = [f for f, nodes in launches if set(nodes) & set(cluster.slow)]
    slow = [f for f, _ in launches if f > 1]
    assert len(held) / len(launches) == pytest.approx(0.10, abs=0.01)
    assert len(slow) / len(launches) == pytest.approx(0.05, abs=0.006)
    assert all(1.02 <= f <= 1.10 for f in slow)
