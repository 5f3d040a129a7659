"""The --cpu check's stages: the product run, then one runner launch, then the checks.

On a GPU each run is a process of its own (stages.Stages). On CPU a process's torch and
Megatron-Core imports cost more CPU time than the 2-layer model's whole run, so after the
product run (the suite's own launch, unchanged) the TP=2 run, the measurements and the pair
runs go through gpucheck.runner: two ranks started once, as a launch starts its ranks, the
single-rank items then on rank 0. Each run's folder (steps.json, sidecar, rank 0's log) is read
back and checked exactly as a launch's. What the pairs prove on CPU is their code path (labels,
B's overrides, the gate's rule on real series), not their noise.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpucheck import pairs
from gpucheck.follow import LogFollower
from gpucheck.runs import RunData, measure_files, read_measure, read_run, start_ranks
from gpucheck.stages import Stages
from perfgate.workload.spec import WorkloadSpec

RANKS = 2  # the TP=2 run's; rank 0 goes on alone


def item(name: str, entry: str, args: list[Any], log: Path, ranks: int = 1) -> dict[str, Any]:
    """One runner item: its entry module, arguments and log ({rank} in it: the rank's)."""
    return {
        "name": name,
        "entry": entry,
        "args": [str(a) for a in args],
        "log": str(log),
        "ranks": ranks,
    }


def workload_item(name: str, spec: WorkloadSpec, ranks: int = 1) -> dict[str, Any]:
    """A `python -m perfgate.workload SPEC` item, its log where a launch puts rank logs."""
    folder = Path(spec.output_dir)
    path = spec.write(folder / "spec.json")
    return item(name, "perfgate.workload", [path], folder / "rank-{rank}.log", ranks)


class CpuStages(Stages):
    """--cpu: product run, the runner (TP=2 run, measurements, pairs), checks."""

    def stages(self) -> list[Callable[[], None]]:
        """The stages in order."""
        return [self.product_stage, self.runner_stage, self.nemo2_stage, self.check_stage]

    def planned_pairs(self) -> list[tuple[str, int]]:
        """The pairs the budget leaves room for (the first of each kind always)."""
        kept, extra = [], 0.0
        for kind, i in pairs.plan(self.args.pairs):
            if i:
                extra += 2.2 * self.launch_s
                if not self.budget.fits(extra):
                    self.left_out.append(f"{kind.upper()} pair {i + 1}")
                    continue
            kept.append((kind, i))
        return kept

    def runner_stage(self) -> None:
        """The TP=2 run on both ranks, then the measurements and the pair runs on rank 0."""
        spec, out, log = measure_files(self.row, self.work)
        tp2 = self.tp2_spec()
        items = [
            workload_item("tp2", tp2, RANKS),
            item("measure", "gpucheck.measure", [spec, out, *self.measure_args()], log),
        ]
        planned = self.planned_pairs()
        for kind, i in planned:
            items += [
                workload_item(f"{kind}{i + 1}-{label}", self.pair_spec(kind, i, label))
                for label in pairs.launch_order(i)
            ]
        followers = follow_items(items)
        done, wall = self.start_runner(items)
        arrivals = {name: f.stop() for name, f in followers.items()}
        self.log(f"runner: {len(items)} runs in one process per rank ({wall:.0f} s)")
        self.record_tp2(self.read("tp2", tp2.label, Path(tp2.output_dir), done, arrivals))
        code, seconds = done.get("measure", (1, 0.0))
        self.record_measure(*read_measure(out, log, code), seconds)
        for kind, i in planned:
            runs = {}
            for label in pairs.launch_order(i):
                name = f"{kind}{i + 1}-{label}"
                runs[label] = self.read(name, label, self.work / "pairs" / name, done, arrivals)
            self.record_pair(kind, i, runs)

    def start_runner(self, items: list[dict[str, Any]]) -> tuple[dict[str, tuple], float]:
        """Run the items on RANKS ranks; ({name: (exit code, seconds)} from both, seconds)."""
        folder = self.work / "runner"
        folder.mkdir(parents=True, exist_ok=True)
        plan = folder / "plan.json"
        report = folder / "done"
        plan.write_text(json.dumps({"items": items, "report": str(report)}, indent=1))
        argv = [sys.executable, "-m", "gpucheck.runner", str(plan)]
        logs = [folder / f"rank-{r}.log" for r in range(RANKS)]
        start = self.budget.used()
        code = start_ranks(argv, RANKS, self.env, self.timeout(), logs)
        done: dict[str, tuple] = {}
        for r in range(RANKS):
            path = Path(f"{report}.rank{r}.json")
            for d in json.loads(path.read_text()) if path.exists() else []:
                before = done.get(d["name"], (0, 0.0))
                done[d["name"]] = (before[0] or d["exit_code"], max(before[1], d["wall_s"]))
        if code:  # killed (124) or failed outside an item: the items it never finished
            for it in items:
                done.setdefault(it["name"], (code, 0.0))
        return done, self.budget.used() - start

    @staticmethod
    def read(
        name: str, label: str, run_dir: Path, done: dict[str, tuple], arrivals: dict[str, list]
    ) -> RunData:
        """A runner item's run folder read back as a launch's, with the parent's clock."""
        code, seconds = done.get(name, (1, 0.0))
        run = read_run(label, run_dir, seconds, code)
        run.arrivals = arrivals.get(name, [])
        return run


def follow_items(items: list[dict[str, Any]]) -> dict[str, LogFollower]:
    """A started follower of rank 0's log for each workload item (gpucheck.follow)."""
    out = {}
    for it in items:
        if it["entry"] == "perfgate.workload":
            out[it["name"]] = LogFollower(it["log"].format(rank=0))
            out[it["name"]].start()
    return out
