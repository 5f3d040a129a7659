"""The session state behind the plugin: settings, catalog, and the three modes.

    live      submit every selected row at the start of the test loop, wait per test
              (A/B gate with --candidate-image: each row's job runs both images in pairs)
    dry-run   show what would run (sbatch script, srun line, spec, GPU-hours); submit nothing
    replay    judge each row from logs already on disk (perfgate.suite.replay); submit nothing

It also turns the session's records into new baselines for --update-baselines. Only
perfgate.suite.plugin holds pytest hooks; this module uses pytest for skip/fail/usage errors only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from typing import Any

import pytest

from perfgate import catalog, launch, verdicts
from perfgate.catalog import Row
from perfgate.errors import PerfgateError
from perfgate.launch.planning import row_dict
from perfgate.report import results
from perfgate.runs import ab_images, launch_order
from perfgate.suite import replay
from perfgate.suite.live import LiveRunner, say
from perfgate.suite.settings import Settings
from perfgate.verdicts import Evaluation
from perfgate.verdicts.paired import evaluate_ab
from perfgate.verdicts.pairs_rule import PairsRule
from perfgate.workload.describe import describe
from perfgate.workload.validate import check_overrides

ITEM = pytest.StashKey[dict]()  # per test: evaluation, plan, recipe text, skip reason
CLEAN = ("PASS", "REGRESSION", "IMPROVEMENT", "INCONCLUSIVE", "NO_BASELINE")
DRY_RUN = "DRY_RUN"


class PerfgateState:
    """Per-session state: settings, the catalog (lazy), the mode's engine, the records."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.is_worker = hasattr(config, "workerinput")
        self._catalog: catalog.Catalog | None = None
        self.runner: LiveRunner | None = None
        self.index: replay.ReplayIndex | None = None
        self.records: dict[str, dict[str, Any]] = {}
        self.results: results.ResultsFile | None = None
        self.update_diff: str | None = None
        self.update_error: str | None = None

    # --- catalog --------------------------------------------------------------------------

    @property
    def catalog(self) -> catalog.Catalog:
        """baselines/*.json, loaded on first use (a bad file raises its one-line ConfigError)."""
        if self._catalog is None:
            self._catalog = catalog.load_catalog(self.settings.baselines_dir)
        return self._catalog

    def session_info(self) -> dict[str, Any]:
        """What results.json and the report say about the session."""
        launch = self.settings.launch
        return {
            "mode": self.settings.mode,
            "options": {
                "executor": launch.executor,
                "partition": launch.partition,
                "account": launch.account,
                "container_image": launch.container_image,
                "candidate_image": launch.candidate_image,
                "pairs": launch.pairs if self.settings.ab else None,
                "max_pairs": launch.max_pairs if self.settings.ab else None,
                "container_runtime": launch.container_runtime,
                "steps": launch.steps,
                "window": self.settings.window,
                "tolerance": self.settings.tolerance,
                "overrides": launch.overrides,
                "env": launch.env,
                "replay": str(self.settings.replay) if self.settings.replay else None,
            },
        }

    def record_list(self) -> list[dict[str, Any]]:
        """Records of the rows finished so far."""
        return list(self.records.values())

    # --- the three modes --------------------------------------------------------------------

    def effective(self, row: Row) -> Row:
        """The row as it runs: --steps, when given, replaces the row's own step count."""
        steps = self.settings.steps
        return row if steps is None or row.steps == steps else replace(row, steps=steps)

    def check_overrides(self, row: Row) -> str:
        """Check the row's and --override's recipe paths before anything runs; say how."""
        launch = self.settings.launch
        return check_overrides(row_dict(row), launch.overrides, mock_data=launch.mock_finetune_data)

    def start(self, rows: list[Row], test_ids: dict[str, str] | None = None) -> None:
        """At the start of the test loop: build the replay index or submit every row.

        Live: every row's overrides are checked and every row planned before the first job
        is submitted, so a typo costs nothing; it stops the session as a usage error.
        """
        s = self.settings
        rows = [self.effective(r) for r in rows]
        if s.mode == "replay":
            self.index = replay.ReplayIndex(s.replay, rows)  # type: ignore[arg-type]
        elif s.mode == "live" and rows:
            self.runner = LiveRunner(
                s.launch,
                s.results_dir,
                resume=s.resume,
                announce=lambda m: say(self.config, m),
                poll_s=s.launch.poll_interval_s,
                more_pairs_for=self.pairs_rule if s.ab else None,
            )
            if not self.is_worker:
                try:
                    for row in rows:
                        self.check_overrides(row)
                    self.runner.install_signal_handlers()
                    self.runner.submit(rows, test_ids)
                except PerfgateError as e:
                    raise pytest.UsageError(str(e)) from None

    def pairs_rule(self, row: Row) -> PairsRule:
        """A/B: the job's rule for adding a pair (this row's tolerance, the session's window)."""
        s = self.settings
        return PairsRule(
            tolerance=verdicts.tolerance_of(row, s.tolerance),
            window=s.window,
            first_pairs=s.launch.pairs,
            max_pairs=s.launch.max_pairs,
            noise=s.noise,
        )

    def evaluate(self, item: pytest.Item, row: Row) -> Evaluation:
        """The evaluation of one row in the session's mode (may skip the test)."""
        s = self.settings
        row = self.effective(row)
        info = item.stash.setdefault(ITEM, {})
        if s.mode == "dry-run":
            return self._dry_run(row, info)
        if s.mode == "replay":
            if self.index is None:  # single test run without the loop hook (e.g. pytester)
                self.index = replay.ReplayIndex(s.replay, [row])  # type: ignore[arg-type]
            m = self.index.match(row)
            if m.skip_reason:
                info["skip_reason"] = m.skip_reason
                pytest.skip(m.skip_reason)
            result = replay.load(row, m.files)
        else:
            if self.runner is None:
                self.start([row])
            if self.is_worker:  # xdist: this worker submits its own rows, checked here
                self.check_overrides(row)
            result = self.runner.wait(row, item.nodeid)  # type: ignore[union-attr]
            if s.ab:
                return evaluate_ab(
                    row,
                    result,
                    source=s.mode,
                    first_pairs=s.launch.pairs,
                    max_pairs=s.launch.max_pairs,
                    window=s.window,
                    tolerance=s.tolerance,
                    noise=s.noise,
                )
        return verdicts.evaluate(
            row, result, source=s.mode, window=s.window, tolerance=s.tolerance, noise=s.noise
        )

    def _dry_run(self, row: Row, info: dict[str, Any]) -> Evaluation:
        s = self.settings
        checked = self.check_overrides(row)
        plan = launch.plan(row, s.launch)
        info["plan"] = plan
        text = describe(row_dict(row), s.launch.overrides, steps=s.launch.steps)
        info["description"] = f"{text}overrides: {checked}\n"
        msg = (
            f"{row.id}: dry run: {plan.nodes} node(s) x {plan.tasks_per_node} GPUs, "
            f"time limit {plan.time_limit_min} min, {plan.gpu_hours:.1f} GPU-hours at most"
        )
        if plan.max_pairs:
            msg += "; A/B " + ab_plan_text(
                plan.launches, plan.max_pairs, plan.time_limit_min, plan.gpu_hours
            )
        mode = "paired" if plan.max_pairs else "stored"
        return Evaluation(row=row, verdict=DRY_RUN, message=msg, source="dry-run", mode=mode)

    # --- baselines update --------------------------------------------------------------------

    def update_baselines(self) -> None:
        """Write measured values of cleanly run rows into baselines/*.json; keep the diff."""
        updates: dict[str, catalog.Baseline] = {}
        for rec in self.records.values():
            if rec.get("verdict") in CLEAN and rec.get("measured"):
                updates[rec["row_id"]] = baseline_from_record(
                    rec, self.catalog.by_id[rec["row_id"]]
                )
        if not updates:
            self.update_diff = ""
            return
        try:
            self.update_diff = catalog.update_baselines(self.settings.baselines_dir, updates)
        except PerfgateError as e:
            self.update_error = str(e)


def ab_plan_text(
    launches: Sequence[tuple[str, str | None]], max_pairs: int, time_limit_min: int, gpu_h: float
) -> str:
    """The A/B part of a plan in words: images, pairs and their order, growth, time, GPU-hours."""
    pairs = sum(1 for label, _ in launches if label == "candidate")
    base, cand = ab_images(tuple(launches))
    per_run = time_limit_min / (2 * max_pairs)
    return (
        f"A = {base}, B = {cand}: {pairs} pairs in the order {launch_order(tuple(launches))}, "
        f"one more while INCONCLUSIVE up to {max_pairs} pairs; time limit {time_limit_min} min "
        f"= {2 * max_pairs} runs x {per_run:g} min; at most {gpu_h * pairs / max_pairs:.1f} "
        f"GPU-h for {pairs} pairs, {gpu_h:.1f} for {max_pairs}"
    )


def ab_plan_lines(plan: dict[str, Any]) -> str:
    """ab_plan_text of a results.json plan."""
    launches = [(x["label"], x["image"]) for x in plan["launches"]]
    return ab_plan_text(launches, plan["max_pairs"], plan["time_limit_min"], plan["gpu_hours"])


def baseline_from_record(rec: dict[str, Any], row: Row) -> catalog.Baseline:
    """The new Baseline of a row from its results.json record, with provenance.

    A/B records give the candidate's runs: pooled steady step time, spread across them, n_runs.
    """
    m = rec["measured"]
    conv = rec.get("convention") or "nemo2"
    job = rec.get("job") or {}
    logs = job.get("log_paths") or []
    ab = rec.get("ab")
    spread, n_runs, notes = None, 1, None
    if rec.get("mode") == "paired" and ab:
        side = ab["sides"]["candidate"]
        image, versions = side["image"], dict(side["versions"])
        step_time, spread, n_runs = side["step_time_s"], side["spread_s"], side["n_runs"]
        source = "perfgate A/B run"
        comp = rec.get("comparison") or {}
        notes = (
            f"candidate of an A/B gate vs {ab['sides']['baseline']['image']}: "
            f"{ab['pairs_used']} pairs, delta {comp.get('delta', math.nan):+.2%}"
        )
    else:
        run = rec["runs"][-1] if rec.get("runs") else {}
        image, versions, step_time = run.get("image"), run.get("versions") or {}, m["step_time_s"]
        source = "perfgate replay" if rec.get("source") == "replay" else "perfgate run"
        if source == "perfgate replay" and logs:
            notes = f"replayed from {logs[-1]}"
    versions = {k: str(v) for k, v in versions.items() if v is not None}
    return catalog.Baseline(
        step_time_s=round(step_time, 6),
        step_time_spread_s=round(spread, 6) if spread is not None else None,
        provenance=catalog.Provenance(
            source=source,
            container=image,
            framework_version=versions.get("nemo") or versions.get("megatron_bridge"),
            date=date.today().isoformat(),
            job_ids=(str(job["job_id"]),) if job.get("job_id") else (),
            versions=versions,
            notes=notes,
        ),
        n_runs=n_runs,
        tokens_per_s_per_gpu=round(m["tokens_per_s_per_gpu"], 1),
        tflops_per_gpu=round(m["tflops_per_gpu"][conv], 1),
        flops_convention=conv,
        mfu=round(m["mfu"][conv], 4),
        peak_memory_gib=round(m["peak_memory_gib"], 2) if m.get("peak_memory_gib") else None,
        tolerance=row.baseline.tolerance if row.baseline is not None else None,
    )
