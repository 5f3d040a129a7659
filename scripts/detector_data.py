"""The real data behind scripts/evaluate_detector.py, and the A/A noise it measures.

Everything here reads the repository's reference data (tests/data/reference, sources in its
README; tests/refdata.py says where it is): Megatron-LM CI A/A pairs (ckpt-resume run 1 vs
run 2, same job), per-step CI series, the 512-GPU B200 day-to-day reruns, the GB200 rack
runs and Megatron-Bridge CI deltas. The split into calibration and evaluation halves is by
test directory, so no test lands in both and every CI day is in each.
"""

from __future__ import annotations

import csv
import gzip
import itertools
import math
import sys
import zlib
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from perfgate.stats import summarize_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/refdata.py
from refdata import REFERENCE  # the one module that knows where the data is

RUN_STEPS = 50  # a perfgate / llmb run: steps 0..49


# --- the real data ------------------------------------------------------------------------


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _series_csv(path: Path) -> np.ndarray:
    values = [float(r["iteration_time_s"] or "nan") for r in _csv_rows(path)]
    return np.array([v for v in values if math.isfinite(v)])


def load_resume_pairs(ref: Path, split: str | None = None) -> dict[str, list[float]]:
    """A/A log ratios (run 2 / run 1, same job) grouped by CI batch: commit and platform.

    split "calibration" / "evaluation" keeps the tests of one half (by test directory).
    """
    batches: dict[str, list[float]] = defaultdict(list)
    for r in _csv_rows(ref / "megatron_golden" / "resume_pairs_run1_vs_run2.csv"):
        if "reshard" in r["path_run1"]:
            continue
        test, platform = r["path_run1"].rsplit("/golden_values_", 1)
        if split is not None and _half(test) != _HALVES[split]:
            continue
        batches[f"{r['commit']}:{platform.removesuffix('.json')}"].append(
            math.log(float(r["ratio"]))
        )
    return dict(batches)


def load_day_to_day(ref: Path) -> tuple[list[float], list[float]]:
    """512-GPU B200 reruns 6 days apart: log step-time ratios (same nodes? no: other days).

    Returns (software-unchanged reruns, of which those without a known infra cause).
    """
    path = ref / "third_party_logs" / "together_b200_512gpu_dayToDay_tflops.csv"
    every, clean = [], []
    for r in _csv_rows(path):
        if r["gpus_0420"] != r["gpus_0426"]:
            continue  # scale changed: not the same config
        if r["model"].startswith("Qwen3") and r["dtype"] == "BF16":
            continue  # +10%: a software stack change, per the source
        lr = math.log(float(r["tflops_0420"]) / float(r["tflops_0426"]))  # step-time ratio
        every.append(lr)
        if not (r["model"] == "Llama 3.1 405B" and r["dtype"] == "NVFP4"):
            clean.append(lr)  # 405B NVFP4: 20 weak fabric nodes that day (infra)
    return every, clean


def load_ci_templates(ref: Path, min_len: int = 45) -> dict[str, np.ndarray]:
    """Per-step (interval 1) Megatron-LM CI series of full runs (from step 1 or 2)."""
    points: dict[str, list[tuple[int, float]]] = defaultdict(list)
    path = ref / "megatron_golden" / "all_golden_iteration_time_long.csv.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            points[row["path"]].append((int(row["step"]), float(row["iteration_time_s"])))
    out = {}
    for name, pts in sorted(points.items()):
        pts.sort()
        steps = [s for s, _ in pts]
        if pts[0][0] > 2 or len(pts) < min_len or "_2nd" in name:
            continue
        if any(b - a != 1 for a, b in itertools.pairwise(steps)):
            continue
        out[name] = np.array([t for _, t in pts[:RUN_STEPS]])
    return out


def load_production_templates(ref: Path) -> dict[str, np.ndarray]:
    """The 50-step B200 NeMo 26.02 / 25.11 series (Megatron-Bridge, 8 GPUs)."""
    names = [
        "together_b200_llama3.1_8b_bf16_gbs128_nemo2602.csv",
        "together_b200_qwen3_moe_bf16_8gpu_nemo2511.csv",
        "together_b200_qwen3_moe_bf16_8gpu_nemo2602.csv",
    ]
    return {n: _series_csv(ref / "third_party_logs" / n) for n in names}


_HALVES = {"evaluation": 0, "calibration": 1}


def _half(test: str) -> int:
    """Which half a test (e.g. gpt/gpt3_mcore_te_tp2_pp2) belongs to, stable across runs."""
    return zlib.crc32(test.encode()) % 2


def split_templates(templates: dict[str, np.ndarray], split: str) -> dict[str, np.ndarray]:
    """Split templates by test directory so one test never lands in both halves."""
    return {k: v for k, v in templates.items() if _half(k.rsplit("/", 1)[0]) == _HALVES[split]}


# --- what the A/A data say ----------------------------------------------------------------


def _mad_sigma(x: Sequence[float]) -> float:
    a = np.asarray(x, dtype=float)
    return float(1.4826 * np.median(np.abs(a - np.median(a))))


def fit_scaled_t(x: Sequence[float]) -> tuple[float, float]:
    """Maximum-likelihood (df, scale) of a zero-centred scaled Student t fitted to x.

    Under perfgate's moderated-variance model this is the prior: a launch-noise variance
    drawn from a scaled inverse chi-square (df, scale^2) makes A/A differences scale * t_df.
    """
    a = np.concatenate([np.asarray(x, float), -np.asarray(x, float)])  # symmetric: no order
    best = (-math.inf, 0.0, 0.0)
    for nu in np.exp(np.linspace(math.log(0.5), math.log(200.0), 400)):
        s2 = float(np.mean(a**2))
        for _ in range(200):  # EM for the scale at fixed df
            w = (nu + 1) / (nu + a**2 / s2)
            new = float(np.mean(w * a**2))
            if abs(new - s2) <= 1e-12 * s2:
                break
            s2 = new
        ll = len(a) * (
            math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2) - 0.5 * math.log(nu * math.pi * s2)
        )
        ll -= (nu + 1) / 2 * float(np.sum(np.log1p(a**2 / (nu * s2))))
        if ll > best[0]:
            best = (ll, float(nu), math.sqrt(s2))
    return best[1], best[2]


def measure_noise(ref: Path = REFERENCE, split: str | None = None) -> dict:
    """Run-to-run noise measured on every real A/A source (split None: all data)."""
    pairs = np.concatenate([np.array(v) for v in load_resume_pairs(ref, split).values()])
    nu, scale = fit_scaled_t(pairs)
    every, clean = load_day_to_day(ref)
    racks = []
    for name in ("rack08_run1", "rack10_run1", "rack10_run2", "rack10_run3"):
        x = _series_csv(
            ref / "third_party_logs" / f"together_gb200_qwen2.5_72b_bf16_64gpu_nemo2602_{name}.csv"
        )
        racks.append(math.log(summarize_run(list(x)).median_s))
    bridge = [
        math.log1p(float(r["delta_pct"]) / 100)
        for r in _csv_rows(ref / "issue_logs" / "megatron-bridge_pr4623_ci_step_time_deltas.csv")
    ]
    return {
        "resume_pairs": {
            "n": len(pairs),
            "median_abs_diff": float(np.median(np.abs(pairs))),
            "frac_over_3pct": float(np.mean(np.abs(pairs) > math.log(1.03))),
            "pair_sigma_mad": _mad_sigma(pairs),
            "pair_sigma_sd": float(np.std(pairs, ddof=1)),
            "run_sigma_mad": _mad_sigma(pairs) / math.sqrt(2),
            "order_effect_median": float(np.median(pairs)),
            "t_fit_df": nu,
            "t_fit_pair_scale": scale,
            "t_fit_run_scale": scale / math.sqrt(2),
        },
        "b200_512gpu_day_to_day": {
            "n": len(every),
            "pair_sigma_sd": float(np.std(every, ddof=1)),
            "pair_sigma_sd_without_infra": float(np.std(clean, ddof=1)),
        },
        "gb200_rack_runs": {"n": len(racks), "run_sigma_sd": float(np.std(racks, ddof=1))},
        "megatron_bridge_ci_vs_stored": {
            "n": len(bridge),
            "pair_sigma_rms": float(np.sqrt(np.mean(np.square(bridge)))),
        },
    }
