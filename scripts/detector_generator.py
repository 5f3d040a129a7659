"""The parametric row generator of scripts/evaluate_detector.py --matrix and --baseline-runs:
rows, their launches' per-step times, and the cluster their launches land on.

Two noise shapes (--shape), so the rule tuned on one is measured on the other:

  default  per-step AR(1) noise with CV 0.5..3% and phi 0..0.5, rare spikes (0..2% of steps,
           1.5..3x), a within-run drift of up to +-0.5%; launch-to-launch noise normal with
           SD 0.3..1.2% per row; a slow launch costs 2..6% (uniform); the cluster model has
           6 slow nodes among 512; a random walk of 0.05% a night per row.
  heavy    (held out: never used to choose a rule or a constant) the same per-step AR(1)
           noise plus congestion bursts (a burst starts at 0.5% of steps and lasts 5..15
           steps at +3..8%); launch-to-launch noise Student t with 3 df at the same SD (heavy
           tails: a 3-SD launch is ~4x as common as under the normal); a slow launch costs
           1.5..8% (log-uniform); the cluster model has 10 slow nodes among 200 (the issue's
           cluster); the same random walk plus a night effect shared by every row of the night
           (SD 0.2%: a cluster-wide slow night makes rows slow together).
  flaky    (held out from the version that counts a step in nights and leaves disagreeing
           reruns INCONCLUSIVE: never run before those rules were fixed) the same AR(1) noise
           and bursts; launch noise a contaminated normal at the row's SD (one launch in 10
           at three times the SD of the others); a slow launch costs 2..10% (log-uniform);
           the cluster model has 16 flaky nodes among 400, each slow in half the launches it
           takes part in (throttling that comes and goes), and one launch in 10 holds one, so
           one in 20 is slow; a random walk of 0.1% a night and a night effect of SD 0.3%.

Slow nodes (--slow-nodes): one launch in 20 lands on a slow node. "memoryless": any launch,
reruns included, is slow with probability 1/20 (slowness not tied to nodes: the worst case
for confirmation). "cluster": the cluster has a few persistently slow nodes; a slow launch
holds one of them; a launch kept off some slow nodes (sbatch --exclude) is slow less often.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from perfgate import flops, hardware
from perfgate.catalog import Row
from perfgate.logs import Step, StepSeries
from perfgate.runs import RunRecord, RunResult

TOLERANCE = 0.05
SLOW_P = 0.05  # one launch in 20 lands on a slow node
ROW_MFU = 0.45  # of the H100's BF16 peak, under nemo2's count (the largest)
SIZES = ((1, 0.4), (2, 0.2), (4, 0.15), (8, 0.12), (16, 0.08), (32, 0.05))


@dataclass(frozen=True)
class Shape:
    """A noise shape of the generator (see the module doc)."""

    name: str
    launch_tails: float | None  # Student t df of launch noise; None: normal
    bursts: bool  # per-step congestion bursts
    slow_cost: tuple[float, float]
    slow_cost_log: bool  # log-uniform slow cost (else uniform)
    cluster_nodes: int
    slow_nodes: int
    night_drift: float  # per-row random walk, per night
    night_common: float  # one effect per night shared by every row
    launch_mix: float = 0.0  # share of launches whose noise has three times the others' SD
    slow_hit: float = 1.0  # chance that a launch holding a slow node is slow (flaky nodes)


SHAPES = {
    "default": Shape("default", None, False, (0.02, 0.06), False, 512, 6, 0.0005, 0.0),
    "heavy": Shape("heavy", 3.0, True, (0.015, 0.08), True, 200, 10, 0.0005, 0.002),
    "flaky": Shape("flaky", None, True, (0.02, 0.10), True, 400, 16, 0.001, 0.003, 0.1, 0.5),
}


@dataclass(frozen=True)
class RowModel:
    """One row's true behaviour (see the module doc)."""

    index: int
    step_s: float
    steps: int
    nodes: int
    cv: float
    phi: float
    spikes: float
    warmup: int
    launch_cv: float
    shape: str = "default"

    @property
    def row(self) -> Row:
        """A catalog row for it: Llama 3 8B with the batch that runs its step time at about
        45% MFU (a faster row would be INFRA IMPOSSIBLE); the batch shapes only the report."""
        n = 8 * self.nodes
        per_step = ROW_MFU * hardware.peak_tflops("h100", "bf16") * 1e12 * n * self.step_s
        return Row(
            id=f"pretrain-llama3_8b-h100-bf16-{n}gpu-tp1-r{self.index}",
            task="pretrain",
            model="llama3_8b",
            gpu="h100",
            precision="bf16",
            num_gpus=n,
            gpus_per_node=8,
            gbs=max(1, round(per_step / flops.flops_per_sample("llama3_8b", 8192))),
            mbs=1,
            seq_len=8192,
            variant=f"r{self.index}",
        )

    def gpu_hours(self) -> float:
        """The GPU-hours of one launch."""
        return 8 * self.nodes * self.steps * self.step_s / 3600


def draw_row(index: int, rng: np.random.Generator, shape: str = "default") -> RowModel:
    """One row of the matrix, drawn."""
    sizes, weights = zip(*SIZES, strict=True)
    return RowModel(
        index=index,
        step_s=math.exp(rng.uniform(math.log(0.5), math.log(10))),
        steps=int(rng.choice([50, 100])),
        nodes=int(rng.choice(sizes, p=weights)),
        cv=rng.uniform(0.005, 0.03),
        phi=rng.uniform(0.0, 0.5),
        spikes=rng.uniform(0.0, 0.02),
        warmup=int(rng.integers(3, 11)),
        launch_cv=rng.uniform(0.003, 0.012),
        shape=shape,
    )


def launch_effect(m: RowModel, rng: np.random.Generator) -> float:
    """One launch's multiplicative launch-to-launch effect (SD launch_cv in log)."""
    sh = SHAPES[m.shape]
    tails = sh.launch_tails
    if sh.launch_mix > 0:  # 1 - mix at s, mix at 3 s: the mixture's SD is launch_cv
        s = m.launch_cv / math.sqrt(1 - sh.launch_mix + 9 * sh.launch_mix)
        return math.exp(rng.normal(0.0, 3 * s if rng.random() < sh.launch_mix else s))
    if tails is None:
        return math.exp(rng.normal(0.0, m.launch_cv))
    scale = m.launch_cv * math.sqrt((tails - 2) / tails)  # the t's SD is the row's launch_cv
    return math.exp(scale * float(rng.standard_t(tails)))


def run_steps(m: RowModel, rng: np.random.Generator, factor: float) -> list[float]:
    """One launch's per-step times: warm-up, AR(1) noise, spikes, drift, times factor."""
    n = m.steps
    innov = rng.normal(0.0, m.cv * math.sqrt(1 - m.phi**2), n)
    e = np.empty(n)
    x = 0.0
    for i in range(n):
        x = m.phi * x + innov[i]
        e[i] = x
    t = m.step_s * factor * np.exp(e)
    t[: m.warmup] *= np.geomspace(rng.uniform(3, 20), 1.15, m.warmup)
    hit = rng.random(n) < m.spikes
    t[hit] *= rng.uniform(1.5, 3.0, int(hit.sum()))
    t *= 1 + rng.uniform(-0.005, 0.005) * np.linspace(0.0, 1.0, n)
    if SHAPES[m.shape].bursts:
        for start in np.nonzero(rng.random(n) < 0.005)[0]:
            t[start : start + int(rng.integers(5, 16))] *= 1 + rng.uniform(0.03, 0.08)
    return [float(v) for v in t]


def result(m: RowModel, steps: list[float], nodes: tuple[str, ...], job: str) -> RunResult:
    """The RunResult of one launch, as a job returns it."""
    series = StepSeries("megatron", tuple(Step(i, t) for i, t in enumerate(steps)))
    run = RunRecord(image="nemo:sim", label="baseline", series=series)
    return RunResult(m.row.id, job, "COMPLETED", runs=(run,), nodes=nodes)


@dataclass
class Cluster:
    """Where launches land and how slow their nodes are (model: memoryless, cluster, none)."""

    model: str
    rng: np.random.Generator
    shape: Shape = SHAPES["default"]
    slow: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.model == "cluster":
            names = self.rng.choice(self.shape.cluster_nodes, self.shape.slow_nodes, replace=False)
            self.slow = {f"n{i}": self.cost() for i in names}

    def cost(self) -> float:
        """One slow node's (or slow launch's) cost, as a fraction."""
        lo, hi = self.shape.slow_cost
        if self.shape.slow_cost_log:
            return math.exp(self.rng.uniform(math.log(lo), math.log(hi)))
        return float(self.rng.uniform(lo, hi))

    @property
    def nodes(self) -> list[str]:
        """Every node of the cluster model's one partition (empty for the other models)."""
        return [f"n{i}" for i in range(self.shape.cluster_nodes)] if self.model == "cluster" else []

    def launch(
        self, m: RowModel, exclude: set[str] | frozenset[str] = frozenset()
    ) -> tuple[float, tuple[str, ...]]:
        """(slowdown factor, nodes) of one launch of the row, kept off the excluded nodes."""
        rng = self.rng
        if self.model == "memoryless":
            nodes = tuple(f"m{i}" for i in rng.integers(0, 10**9, m.nodes))
            slow = self.cost() if rng.random() < SLOW_P else 0.0
            return 1 + slow, nodes
        if self.model == "none":
            return 1.0, tuple(f"m{i}" for i in rng.integers(0, 10**9, m.nodes))
        total = self.shape.cluster_nodes
        good = [n for n in self.slow if n not in exclude]
        nodes: list[str] = []
        while len(nodes) < m.nodes:
            others = [f"n{i}" for i in rng.integers(0, total, m.nodes + 8)]
            nodes += [n for n in others if n not in self.slow and n not in exclude]
            nodes = list(dict.fromkeys(nodes))
        nodes = nodes[: m.nodes]
        factor = 1.0
        # One launch in 20 is slow; a kept-off slow node cannot be drawn. Flaky nodes
        # (slow_hit < 1) are held by one launch in 20 / slow_hit, slow in slow_hit of them.
        hit = self.shape.slow_hit
        if good and rng.random() < SLOW_P / hit * len(good) / len(self.slow):
            bad = good[int(rng.integers(len(good)))]
            nodes[0] = bad
            if hit >= 1 or rng.random() < hit:
                factor = 1 + self.slow[bad]
        return factor, tuple(nodes)
