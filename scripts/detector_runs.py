"""The synthetic runs of scripts/evaluate_detector.py's replay scenarios (the modes table and
--nightly): a real series' warm-up kept, its steady part block-bootstrapped, and the launch
effects drawn from real A/A pairs (see evaluate_detector's modelling assumptions 1-3).

Shared by evaluate_detector.py and detector_nightly.py (neither imports the other).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from perfgate.stats import RunSummary
from perfgate.stats.priors import NAMED, NoisePrior

BLOCK = 5  # steps per bootstrap block: autocorrelation, spikes and GC steps stay as they were


def warmup_end(x: np.ndarray) -> int:
    """Independent warm-up boundary: after the last early step above 1.2x the tail median."""
    tail = np.median(x[len(x) // 2 :])
    slow = np.nonzero(x[: len(x) // 2] > 1.2 * tail)[0]
    return max(5, int(slow[-1]) + 1 if len(slow) else 0)


@dataclass(frozen=True)
class Template:
    name: str
    series: np.ndarray
    warmup: int


def synth_run(t: Template, rng: np.random.Generator) -> np.ndarray:
    """Real warm-up verbatim, then a circular block bootstrap of the real steady part."""
    steady = t.series[t.warmup :]
    n, need = len(steady), len(t.series) - t.warmup
    starts = rng.integers(0, n, size=math.ceil(need / BLOCK))
    idx = (starts[:, None] + np.arange(BLOCK)[None, :]).ravel()[:need] % n
    return np.concatenate([t.series[: t.warmup], steady[idx]])


@dataclass(frozen=True)
class Noise:
    """Launch-effect model: pair log ratios grouped by batch (one batch = one day)."""

    pair_batches: list[np.ndarray]  # for pairs in one allocation
    run_batches: list[np.ndarray]  # for runs in separate jobs
    alloc_cv: float
    order: str = "alternating"  # the gate's AB BA AB ..; "abab"; "random"
    prior: NoisePrior = NAMED["megatron-ci"]  # what the stored and history modes assume

    def gate_batch(self, rng: np.random.Generator) -> np.ndarray:
        sizes = np.array([len(b) for b in self.pair_batches], dtype=float)
        return self.pair_batches[rng.choice(len(sizes), p=sizes / sizes.sum())]

    def pair_effects(self, batch: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        """log(candidate / baseline) launch effects of pairs 1..n in the chosen launch order.

        A measured ratio is log(run 2 / run 1): it is +r when the candidate runs second
        (AB) and -r when it runs first (BA).
        """
        r = rng.choice(batch, size=n)
        if self.order == "abab":
            return r
        if self.order == "random":
            return r * rng.choice([-1.0, 1.0], size=n)
        return r * np.where(np.arange(n) % 2 == 0, 1.0, -1.0)

    def run_effects(self, n: int, rng: np.random.Generator) -> np.ndarray:
        pool = np.concatenate(self.run_batches)
        r = rng.choice(pool, size=n) * rng.choice([-1.0, 1.0], size=n) / math.sqrt(2)
        return r + (rng.normal(0, self.alloc_cv, size=n) if self.alloc_cv else 0.0)


def scaled(s: RunSummary, factor: float) -> RunSummary:
    """The summary of the same run with every step multiplied by factor (all are equivariant)."""
    return replace(s, median_s=s.median_s * factor, mean_s=s.mean_s * factor, se_s=s.se_s * factor)
