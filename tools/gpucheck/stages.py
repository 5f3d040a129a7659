"""The check's stages after the wheels are installed: product run, measure, NeMo 2, pairs, checks.

Each stage asks the Budget whether it still fits; what does not is named in left_out. A stage
that raises (an import that fails, a child that cannot start) is recorded with its reason,
every check it owns is "not run" for that reason, and the stages after it still run.

The GPU plan within the default 8 minutes (measured on one H200: product run 36 s,
measurements 28 s, each pair 50-60 s, about 17 s of each being process start-up): wheels
~20 s, the megatron_core product run ~40 s, the measurements ~45 s (with the two 12-step clock
loops), the NeMo 2 product run ~100 s (NeMo's imports in pytest and in the rank, the model
with local attention, 20 steps), then 2 A/A and 2 A/B pairs ~220 s: about 7.1 minutes with
the 20 s reserve. Pairs 3 and 4 of each kind run only where the budget still has room.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpucheck import checks, controls, pairs, report, verdict
from gpucheck.budget import Budget, Log
from gpucheck.follow import POLL_S
from gpucheck.nemo2 import Nemo2Stage, nemo_env
from gpucheck.runs import (
    RunData,
    check_row,
    child_env,
    cpu_row,
    launch,
    measure_child,
    product_run,
    pytest_command,
    tp2_row,
    write_catalog,
)
from perfgate.catalog.schema import row_to_dict
from perfgate.stats import DEFAULT_TOLERANCE
from perfgate.workload.megatron_core.plan import settings_for
from perfgate.workload.spec import WorkloadSpec

REPO = Path(__file__).resolve().parents[2]
PAIR_STEPS = 20  # >= 15: perfgate's steady window needs 5 skipped + 10 steady steps
INTERLEAVE = {"cuda": 4, "cpu": 3}  # steps per A/B block of the in-process cost
CLOCK_STEPS = {"cuda": 12, "cpu": 8}  # steps of each of the measure process's clock loops
MIN_PAIRS = {"cuda": 2, "cpu": 1}  # pairs of each kind that always run (A/B's verdict needs 2)
TP2_LOSS_TOL = 1e-3  # first loss of the TP=2 run vs TP=1: same weights and tokens, bf16
# The checks (and controls) each stage owns: "not run" with the stage's reason if it raised.
OWNS = {
    "product": ["product", "results", "control log"],
    "measure": ["flops", "mfu", "timers.independent", "control timers", "control flops"],
    "runner": ["flops", "mfu", "timers.independent", "control timers", "control flops", "tp2"],
    "nemo2": [*verdict.NEMO2_GPU, *verdict.NEMO2_CPU, "control nemo2.log"],
    "pairs": ["aa", "ab"],
}


class Stages:
    """One check: the rows, the runs made so far, and the result being assembled."""

    def __init__(
        self,
        args: Any,
        log: Log,
        budget: Budget,
        work: Path,
        gpu: str,
        facts: dict,
        sites: dict[str, list[Path]],
    ):
        self.args, self.log, self.budget, self.work, self.facts = args, log, budget, work, facts
        self.repo, self.sites = REPO, sites
        self.env = child_env(sites["megatron_core"], REPO)
        if args.cpu:  # one thread per rank (trainer.cpu_threads): a tiny model on a shared host
            self.env["OMP_NUM_THREADS"] = "1"
        row = check_row(REPO / "baselines", gpu)
        self.gpu_row = row
        self.baselines = None
        if args.cpu:
            row = cpu_row(row)
            self.baselines = write_catalog([row], work / "baselines")
        self.row = row
        self.settings = settings_for(row)
        self.b = pairs.b_overrides(self.settings.arch.num_layers)
        self.device = self.settings.device
        self.runs: list[RunData] = []  # every launch (failed_runs)
        self.core_runs: list[RunData] = []  # the megatron_core launches the core checks read
        self.launch_s = 60.0  # one launch's seconds: the product run's, then the slowest pair run
        self.pair_walls: list[float] = []
        self.left_out: list[str] = []
        self.product: Any = None
        self.measured: dict | None = None
        self.series: dict[str, list[list[list[float]]]] = {"aa": [[], []], "ab": [[], []]}
        self.result: dict[str, Any] = {
            "schema": "perfgate.gpu-check/1",
            "cpu": bool(args.cpu),
            "budget_s": budget.total,
            "row_id": row.id,
            "row": row_to_dict(row),
            "nemo2_requested": bool(args.nemo2),
            "checks": {},
            "controls": {},
            "not_run": {},
            "stage_errors": {},
        }

    def timeout(self) -> float:
        """A child's limit: what is left of the budget, at least a minute."""
        return max(60.0, self.budget.left())

    def stages(self) -> list[Callable[[], None]]:
        """The stages in order: product run, measurements, NeMo 2, pairs, checks."""
        return [
            self.product_stage,
            self.measure_stage,
            self.nemo2_stage,
            self.pairs_stage,
            self.check_stage,
        ]

    def guarded(self, stage: Callable[[], None]) -> None:
        """Run a stage; if it raises, its checks are "not run" with the reason, and on."""
        name = stage.__name__.removesuffix("_stage")
        try:
            stage()
        except Exception as e:
            why = f"stage {name} raised {type(e).__name__}: {str(e)[:300]}"
            self.log(why)
            self.result["stage_errors"][name] = why
            for owned in OWNS.get(name, []):
                self.result["not_run"].setdefault(owned, why)

    def run(self) -> dict[str, Any]:
        """All stages, then the checks; the result dict."""
        cpu = {"before": self.budget.cpu()}  # the wheels' install and the torch probe
        for stage in self.stages():
            start = self.budget.cpu()
            self.guarded(stage)
            cpu[stage.__name__.removesuffix("_stage")] = self.budget.cpu() - start
        cpu["total"] = self.budget.cpu()
        self.log("CPU seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items()))
        self.result.update(left_out=self.left_out, wall_s=self.budget.used(), cpu_s=cpu)
        return self.result

    def product_stage(self) -> None:
        """The suite runs the row: pytest --executor local, as a user would."""
        a, row = self.args, self.row
        results = self.work / "results"
        cmd = pytest_command(
            sys.executable, row.id, results, a.out / "report.html", a.steps, self.baselines
        )
        self.log(f"product path: pytest --executor=local -k {row.id} ({a.steps} steps)")
        p = product_run(cmd, row.id, results, self.env, self.timeout(), REPO)
        self.product = p
        rec = p.record or {}
        verdict, message = rec.get("verdict"), rec.get("message") or ""
        unsteady = verdict == "INFRA" and "no steady state" in message
        ok = p.run is not None and p.run.problem is None
        ok = ok and (p.exit_code == 0 or (self.args.cpu and unsteady))
        if p.run:
            self.runs.append(p.run)
            self.core_runs.append(p.run)
            self.launch_s = launch_wall(p.run.run_dir) or p.wall_s
        measured = rec.get("measured") or {}
        step = f", step time {measured['step_time_s']:.4f} s" if measured else ""
        line = f"pytest exit {p.exit_code}, verdict {verdict}{step}"
        if not ok:
            line += f": {message or p.output_tail[-600:]}"
        elif unsteady:
            line += " (CPU too noisy for a steady state: the checks use every step)"
        self.result["product"] = {
            "ok": ok,
            "exit_code": p.exit_code,
            "wall_s": p.wall_s,
            "verdict": verdict,
            "message": message,
            "measured": measured or None,
            "command": " ".join(cmd[1:]),
            "line": line,
        }
        self.log(f"product run: {line} ({p.wall_s:.0f} s)")

    def measure_args(self) -> list[str]:
        """gpucheck.measure's arguments after SPEC OUT: as much as the budget leaves room for."""
        # B's in-process cost always runs: A/B's expected verdict is derived from it.
        interleave, sweep = INTERLEAVE[self.device], True
        minimum = 4 * MIN_PAIRS[self.device] * self.launch_s  # the pairs that always run
        if not self.budget.fits(self.launch_s + minimum + 15.0):
            sweep = False
            self.left_out.append("GEMM sweep")
        self.log(f"measure: GEMM peak{' sweep' if sweep else ''}, FlopCounterMode A and B")
        args = ["--b-overrides", json.dumps(self.b), "--interleave", str(interleave)]
        args += ["--clock-steps", str(CLOCK_STEPS[self.device])]
        return args + (["--sweep"] if sweep else [])

    def measure_stage(self) -> None:
        """GEMM peak, FLOP counts, B's cost, in a process of their own."""
        args = self.measure_args()
        measured, error, wall = measure_child(self.row, self.env, self.work, args, self.timeout())
        self.record_measure(measured, error, wall)

    def record_measure(self, measured: dict | None, error: str | None, wall: float) -> None:
        """Keep the measurements (or why there are none)."""
        self.measured = measured
        self.result["measure"] = measured or {"error": error}
        self.log(f"measure: {'done' if measured else error} ({wall:.0f} s)")

    def tp2_spec(self) -> WorkloadSpec:
        """CPU only: the row on 2 ranks with TP=2."""
        out = self.work / "tp2"
        return WorkloadSpec(row=tp2_row(self.row), steps=8, output_dir=str(out), mock_data=True)

    def nemo2_stage(self) -> None:
        """--nemo2: NeMo 2's row on the GPU (product path), or on CPU as far as NeMo goes."""
        if not self.args.nemo2:
            return
        if getattr(self.args, "nemo2_missing", None):
            raise RuntimeError(self.args.nemo2_missing)
        python = self.args.nemo_python or sys.executable
        env = nemo_env(child_env(self.sites["nemo2"], REPO))
        if self.args.cpu:
            env["OMP_NUM_THREADS"] = "1"
        stage = Nemo2Stage(self, env, python)
        if self.args.cpu:
            stage.cpu_stage()
            return
        prod = self.product.run if self.product else None
        stage.gpu_stage(checks.steady_median(prod.host_s if prod else None))

    def record_tp2(self, run: RunData) -> None:
        """CPU only: the TP=2 run's first loss must be TP=1's (same weights and tokens)."""
        self.runs.append(run)
        self.core_runs.append(run)
        first = (self.product.run.losses or [None])[0] if self.product.run else None
        mine = (run.losses or [None])[0]
        ok = (
            run.problem is None
            and None not in (first, mine)
            and checks.rel(mine, first) <= TP2_LOSS_TOL
        )
        self.result["checks"]["tp2"] = {
            "status": checks.status(ok),
            "first_loss_tp1": first,
            "first_loss_tp2": mine,
            "tolerance": TP2_LOSS_TOL,
            "problem": run.problem,
        }
        self.log(f"tp2 run: first loss {mine} vs tp1 {first} ({run.wall_s:.0f} s)")

    def pairs_stage(self) -> None:
        """A/A and A/B pairs, alternating, while the budget allows (the first of each always)."""
        for kind, i in pairs.plan(self.args.pairs):
            if i >= MIN_PAIRS[self.device] and not self.budget.fits(2.2 * self.launch_s):
                self.left_out.append(f"{kind.upper()} pair {i + 1}")
                continue
            runs = {}
            for label in pairs.launch_order(i):
                spec = self.pair_spec(kind, i, label)
                run = launch(sys.executable, spec, 1, self.env, self.timeout())
                self.pair_walls.append(run.wall_s)
                self.launch_s = max(self.pair_walls)
                runs[label] = run
            self.record_pair(kind, i, runs)

    def pair_spec(self, kind: str, i: int, label: str) -> WorkloadSpec:
        """The spec of one run of pair i of a kind: B's overrides on an A/B pair's candidate."""
        overrides = self.b if kind == "ab" and label == "candidate" else {}
        return WorkloadSpec(
            row=self.row,
            steps=self.args.steps if self.args.cpu else PAIR_STEPS,
            output_dir=str(self.work / "pairs" / f"{kind}{i + 1}-{label}"),
            overrides=overrides,
            label=label,
            mock_data=True,
        )

    def record_pair(self, kind: str, i: int, runs: dict[str, RunData]) -> None:
        """Keep a pair's runs, and its series where both runs completed."""
        self.runs += runs.values()
        self.core_runs += runs.values()
        self.log(
            f"{kind.upper()} pair {i + 1}: "
            + ", ".join(
                f"{k} {r.wall_s:.0f} s{' ' + r.problem if r.problem else ''}"
                for k, r in runs.items()
            )
        )
        if all(r.problem is None for r in runs.values()):
            self.series[kind][0].append(runs["baseline"].host_s)
            self.series[kind][1].append(runs["candidate"].host_s)

    def check_stage(self) -> None:
        """Every check on what ran, the negative controls, the pairs judged, the environment."""
        c, ctl = self.result["checks"], self.result["controls"]
        runs = self.core_runs
        c["timers"] = worst(
            [checks.timer_check(r.host_s, r.second_s, r.second_clock) for r in runs],
            "median_rel_diff",
        )
        c["timers"]["what"] = "the device clock at the same boundaries: proves the host's sync"
        c["timers.wall"] = worst(
            [checks.wall_check(r.host_s, r.arrivals, POLL_S) for r in runs], "rel_diff"
        )
        c["log"] = worst(
            [checks.log_check(r.steps, r.host_s, r.log_steps, r.log_s, r.log_format) for r in runs],
            "max_diff_in_half_units",
        )
        prod = self.product.run if self.product else None
        if self.product:
            c["results"] = checks.results_check(
                self.product.record, prod.host_s if prod else [], self.row
            )
        if prod:
            text = (prod.run_dir / "rank-0.log").read_text(errors="replace")
            ctl["log"] = controls.log_control(text, prod.log_format, prod.steps, prod.host_s)
        self.measure_checks(prod)
        self.result["pairs"] = self.judge_pairs()
        self.result["runs"] = [r.to_dict() for r in self.runs]
        self.result["failed_runs"] = [str(r.run_dir.name) for r in self.runs if r.problem]
        for name, why in verdict.plumbing(self.result).items():
            if name in c:
                c[name]["plumbing"] = why
        m = self.measured or {}
        versions = prod.versions if prod else {}
        self.result["environment"] = {
            "device": m.get("gpu_name") or self.facts.get("gpu_name") or "cpu",
            "driver": m.get("driver") or versions.get("driver"),
            # the measuring process's torch.__version__ (--cpu's probe reads only the metadata)
            "torch": m.get("torch") or self.facts.get("torch"),
            "megatron_core": versions.get("megatron_core"),
            "python": self.facts.get("python"),
            "gpu_row": self.row.gpu,
        }

    def measure_checks(self, prod: RunData | None) -> None:
        """FLOPs, MFU, the unsynchronised clock loop, and their controls (measure's data)."""
        c, ctl, s, m = self.result["checks"], self.result["controls"], self.settings, self.measured
        if not m:
            return
        layers = self.b["model.recompute_num_layers"]
        c["flops"] = checks.flops_check(s.arch, s.seq_len, s.gbs, s.padded_vocab, m, layers)
        ctl["flops"] = controls.flops_control(s.arch, s.seq_len, s.gbs, s.padded_vocab, m, layers)
        self.result["b"] = {
            "what": f"activation recompute of {layers} of {s.arch.num_layers} layers (block)",
            "fields": self.b,
            "extra_flops": c["flops"]["b_extra_flops_fraction"],
            "cost": (m.get("b_cost") or {}).get("cost"),
        }
        clocks = m.get("clocks")
        if clocks:
            c["timers.independent"] = checks.medians_check(
                clocks["perfgate_s"],
                clocks["device_s"],
                f"perfgate's synced clock vs {clocks['device_clock']} marks of a loop without "
                "host syncs, read after it",
            )
            ctl["timers"] = controls.timers_control(
                clocks["control_s"], clocks["device_s"], clocks["device_clock"]
            )
        step = checks.steady_median(prod.host_s if prod else None)
        if step:
            step_flops = checks.per_step_flops(s.arch, s.seq_len, s.gbs, s.tp)
            c["mfu"] = checks.mfu_check(
                step, step_flops, self.row.num_gpus, self.row.gpu, m["gemm"]["peak_tflops"]
            )

    def judge_pairs(self) -> dict[str, Any]:
        """Both kinds judged by the gate's rule, and their noise beside the assumptions."""
        aa, ab = self.series["aa"], self.series["ab"]
        cost = (self.result.get("b") or {}).get("cost")
        return {
            "aa": pairs.judged(*aa),
            "ab": pairs.judged(*ab),
            "expected_ab": report.expected_ab(cost, DEFAULT_TOLERANCE),
            "noise": pairs.measured_noise(pairs.log_ratios(*aa), pairs.log_ratios(*ab)),
            "assumed": pairs.evaluator_assumptions(),
            "steps_per_run": PAIR_STEPS if not self.args.cpu else self.args.steps,
        }


def worst(results: list[dict], key: str) -> dict:
    """One check over several runs: failed if any failed, else the run with the largest key."""
    if not results:
        return {"status": "not run", "why": "no launch completed"}
    failed = [r for r in results if r.get("status") != "pass"]
    pick = failed[0] if failed else max(results, key=lambda r: r.get(key) or 0.0)
    return {**pick, "runs": len(results), "failed_runs": len(failed)}


def launch_wall(run_dir: Path) -> float | None:
    """Seconds the suite's job spent in this launch (its runs.json), if it says."""
    try:
        entries = json.loads((run_dir.parent / "runs.json").read_text())["runs"]
        return float(next(e["wall_s"] for e in entries if Path(e["run_dir"]) == run_dir))
    except (OSError, ValueError, KeyError, StopIteration, TypeError):
        return None
