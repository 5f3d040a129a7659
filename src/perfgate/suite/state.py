"""The session state behind the plugin: settings, catalog, the three modes, the records.

    live      submit every selected row at the start of the test loop, wait per test
              (A/B gate with --candidate-image: each row's job runs both images in pairs)
    dry-run   show what would run (sbatch script, srun line, spec, GPU-hours); submit nothing
    replay    judge each row from logs already on disk (perfgate.suite.replay); submit nothing

It keeps each row's results.json record (made by perfgate.suite.records), has them stored as
new baselines for --update-baselines (perfgate.suite.updates), and writes the terminal
summary. Only perfgate.suite.plugin holds pytest hooks; this module uses pytest for
skip/fail/usage errors only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from perfgate import catalog, launch, verdicts
from perfgate.catalog import Row
from perfgate.charset import for_terminal
from perfgate.errors import PerfgateError
from perfgate.history.trend import change_points, logs_of
from perfgate.launch.avoid import Avoid
from perfgate.launch.types import LaunchOptions
from perfgate.report import dryrun, sessionfiles, signoff, table
from perfgate.report.environment import environment
from perfgate.rowrecord import RowRecord
from perfgate.runs import RunResult
from perfgate.suite import avoiding, matrix, preflight, records, replay, updates
from perfgate.suite.confirming import Confirmer, settle
from perfgate.suite.live import LiveRunner, say, terminal_display
from perfgate.suite.recording import HistoryRecorder
from perfgate.suite.settings import Settings
from perfgate.verdicts import Evaluation
from perfgate.verdicts.nightly import trend_record
from perfgate.verdicts.paired import evaluate_ab
from perfgate.verdicts.pairs_rule import PairsRule
from perfgate.workload import validate
from perfgate.workload.describe import describe

ITEM = pytest.StashKey[dict]()  # per test: evaluation, plan, recipe text, skip reason
DRY_RUN = "DRY_RUN"


class PerfgateState:
    """Per-session state: settings, the catalog (lazy), the mode's engine, the records."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.is_worker = hasattr(config, "workerinput")
        self._catalog: catalog.Catalog | None = None
        self.runner: LiveRunner | None = None
        self.confirmer: Confirmer | None = None  # live one-run sessions with --confirm
        self.session_rows: list[Row] = []  # every selected row (--fdr judges them together)
        self.test_ids: dict[str, str] = {}
        self._judged: dict[str, Evaluation | str] | None = None  # --fdr: the night's verdicts
        self.index: replay.ReplayIndex | None = None
        self.records: dict[str, RowRecord] = {}
        self.results: sessionfiles.ResultsFile | None = None
        self.update: updates.Update | None = None  # what --update-baselines did
        self.recorder = HistoryRecorder(
            settings,
            Path(config.rootpath),
            self.is_worker,
            config.invocation_params.args,
            announce=lambda line: say(config, line),
        )
        self.deselected: list[str] = []  # row ids -m, -k and --gpus left out
        self._first: tuple[LaunchOptions, Avoid | None] | None = None  # first runs' options
        self.night_runs: list[Evaluation] = []  # each row's evaluation (tonight's node test)

    # --- catalog --------------------------------------------------------------------------

    @property
    def catalog(self) -> catalog.Catalog:
        """baselines/*.json, loaded on first use (a bad file raises its one-line ConfigError)."""
        if self._catalog is None:
            self._catalog = catalog.load_catalog(self.settings.baselines_dir)
        return self._catalog

    def session_info(self) -> dict[str, Any]:
        """What results.json and the report say about the session."""
        return records.session_info(self.settings, self.deselected, self.first_runs()[1])

    def report_session(self) -> dict[str, Any]:
        """The session as results.json has it (with start, end and login metadata)."""
        return self.results.data["session"] if self.results else self.session_info()

    def record_list(self) -> list[RowRecord]:
        """Records of the rows finished so far."""
        return list(self.records.values())

    def first_runs(self) -> tuple[LaunchOptions, Avoid | None]:
        """The options first jobs run with: kept off the history's slow nodes within the cap
        (perfgate.suite.avoiding), and what was kept off (None: nothing)."""
        if self._first is None:
            s = self.settings
            if s.mode == "replay":
                self._first = (s.launch, None)
            else:
                rows = self.session_rows or []
                self._first = avoiding.first_runs(s.launch, self.recorder.slow_nodes(), rows)
        return self._first

    # --- the three modes --------------------------------------------------------------------

    def effective(self, row: Row) -> Row:
        """The row as it runs: --steps, when given, replaces the row's own step count."""
        steps = self.settings.steps
        return row if steps is None or row.steps == steps else replace(row, steps=steps)

    def check_overrides(self, row: Row, overrides: Any = None) -> str:
        """Check the row's and --override's recipe paths before anything runs; say how."""
        launch = self.settings.launch
        overrides = launch.overrides if overrides is None else overrides
        return validate.check_overrides(row, overrides, mock_data=launch.mock_finetune_data)

    def preflight_overrides(self, rows: list[Row]) -> None:
        """Live and dry-run: every selected row against --override, as one usage error."""
        if self.settings.mode == "replay" or not rows:
            return
        try:
            preflight.check_session_overrides(
                rows,
                self.settings.launch.overrides,
                self.check_overrides,
                markexpr=self.config.option.markexpr or "",
            )
        except PerfgateError as e:
            raise pytest.UsageError(str(e)) from None

    def preflight_submit(self, rows: list[Row]) -> None:
        """Live, before the first job: plan every row, show the cost, get consent or stop."""
        s = self.settings
        try:
            plans = (launch.plan(self.effective(r), s.launch) for r in rows)
            cost = preflight.Cost.of(plans, s.confirm)
            say(self.config, cost.line())
            avoided = avoiding.plan_line(self.first_runs()[1])
            if avoided:
                say(self.config, avoided)
            warning = preflight.container_warning(
                s.launch.executor, s.launch.container_runtime, s.launch.container_image
            )
            if warning:
                say(self.config, warning)
            why = preflight.consent(
                cost,
                selected=preflight.has_selection(self.config),
                all_rows=s.all_rows,
                yes=s.yes,
                max_gpu_hours=s.max_gpu_hours,
                ask=preflight.ask_terminal,
            )
        except PerfgateError as e:
            raise pytest.UsageError(str(e)) from None
        say(self.config, f"perfgate: submitting ({why})")

    def start(self, rows: list[Row], test_ids: dict[str, str] | None = None) -> None:
        """At the start of the test loop: build the replay index or submit every row.

        Live: every row is planned and the session's cost agreed (preflight_submit) before
        the first job is submitted; a refusal stops the session as a usage error.
        """
        s = self.settings
        rows = [self.effective(r) for r in rows]
        self.session_rows, self.test_ids = rows, dict(test_ids or {})
        if not self.is_worker and rows and s.mode != "dry-run":  # a plan reads no history
            self.open_history()
        if s.mode == "replay":
            self.index = replay.ReplayIndex(s.replay, rows)  # type: ignore[arg-type]
            wanted = None if self.is_worker else self.config.getoption("repeat")
            why = [
                w
                for r in rows
                if (w := replay.repeat_mismatch(r, self.index.match(r), wanted, s.replay))
            ]
            if why:  # before any row is judged: one line, as other option errors (xdist
                # workers fail their rows instead: a worker's usage error would crash it)
                more = f" (and {len(why) - 1} more rows)" if len(why) > 1 else ""
                raise pytest.UsageError(why[0] + more)
        elif s.mode == "live" and rows:
            self._first = None  # the session's rows are known now: their largest sets the cap
            if not self.is_worker:
                self.preflight_submit(rows)
            self.runner = LiveRunner(
                self.first_runs()[0],
                s.results_dir,
                resume=s.resume,
                announce=lambda m: say(self.config, m),
                display=terminal_display(self.config),
                poll_s=s.launch.poll_interval_s,
                more_pairs_for=self.pairs_rule if s.ab else None,
                on_done=self._on_done if s.confirm.most and not s.ab else None,
            )
            if s.confirm.most and not s.ab:
                self.confirmer = Confirmer(
                    self.runner,
                    self.judge,
                    s.confirm,
                    s.confirm_inconclusive,
                    flagged=self.recorder.slow_nodes(),
                )
            if not self.is_worker:
                try:
                    self.runner.install_signal_handlers()
                    self.runner.submit(rows, test_ids)
                except PerfgateError as e:
                    raise pytest.UsageError(str(e)) from None

    def open_history(self) -> None:
        """Reach the history store before the first row: one line when it cannot be reached
        (rows are then judged without it), or a usage error with --require-history."""
        line = self.recorder.connect()
        if line is None:
            return
        if self.settings.require_history:
            raise pytest.UsageError(f"{line} (--require-history: not starting)")
        say(self.config, f"perfgate: {line}")

    def _on_done(self, row: Row, result: RunResult) -> None:
        if self.confirmer is not None:
            self.confirmer.on_done(row, result)

    def judge(self, row: Row, result: RunResult) -> Evaluation:
        """One run's verdict on a row, in this session's terms (tolerance, noise, history)."""
        s = self.settings
        return verdicts.evaluate(
            self.effective(row),
            result,
            source=s.mode,
            window=s.window,
            tolerance=s.tolerance,
            noise=s.noise,
            history=self.recorder.points(row.id),
        )

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
        if s.fdr is not None and not self.is_worker:
            judged = self._night(row)[row.id]
        else:
            judged = self._judge_row(row, item.nodeid)
        if isinstance(judged, str):
            info["skip_reason"] = judged
            pytest.skip(judged)
        self.night_runs.append(judged)
        return judged

    def _judge_row(self, row: Row, test_id: str | None = None) -> Evaluation | str:
        """One row judged in a live or replay session; a str: why it is skipped."""
        s = self.settings
        if s.mode == "replay":
            if self.index is None:  # single test run without the loop hook (e.g. pytester)
                self.index = replay.ReplayIndex(s.replay, [row])  # type: ignore[arg-type]
            m = self.index.match(row)
            if m.skip_reason:
                return m.skip_reason
            why = replay.repeat_mismatch(row, m, self.config.getoption("repeat"), s.replay)
            if why:  # an xdist worker's row (the controller's check is in start())
                pytest.fail(why, pytrace=False)
            result = replay.load_launches(row, m.launches)
            if m.confirmations and self.settings.confirm.most:
                return self._confirm_replayed(row, self.judge(row, result), m.confirmations)
        else:
            if self.runner is None:
                self.start([row])
            if self.is_worker:  # xdist: this worker submits its own rows, checked here
                self.check_overrides(row)
            result = self.runner.wait(row, test_id)  # type: ignore[union-attr]
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
        first = self.judge(row, result)
        if self.confirmer is not None and s.mode == "live":
            return self.confirmer.evaluate(row, first)
        return first

    def _confirm_replayed(
        self, row: Row, first: Evaluation, reruns: Sequence[Sequence[Path]]
    ) -> Evaluation:
        """A replayed row with its confirm-<n> folders, settled as a live session settles its
        reruns (perfgate.suite.confirming.settle): read in order of n, up to --confirm."""

        def rerun(n: int) -> Evaluation | str:
            if n > len(reruns):
                return f"the replay folder has no confirm-{n}/"
            return self.judge(row, replay.load(row, reruns[n - 1]))

        s = self.settings
        flagged = self.recorder.slow_nodes()
        return settle(row, first, rerun, self.judge, s.confirm, s.confirm_inconclusive, flagged)

    def _night(self, row: Row) -> dict[str, Evaluation | str]:
        """--fdr: every row of the session judged (once, at the first test), then the
        Benjamini-Hochberg bar applied across them (perfgate.suite.matrix)."""
        if self._judged is None:
            rows = self.session_rows or [row]
            judged = {r.id: self._judge_row(r, self.test_ids.get(r.id)) for r in rows}
            self._judged = matrix.apply_fdr(judged, self.settings.fdr)  # type: ignore[arg-type]
        if row.id not in self._judged:  # a row outside the session's list (pytester)
            self._judged[row.id] = self._judge_row(row)
        return self._judged

    def _dry_run(self, row: Row, info: dict[str, Any]) -> Evaluation:
        s = self.settings
        checked = self.check_overrides(row)
        plan = launch.plan(row, self.first_runs()[0])
        info["plan"] = plan
        # the steps the job runs: the row's own (or --steps, applied by effective()), else 50
        text = describe(row, s.launch.overrides, steps=row.steps or s.launch.steps)
        info["description"] = f"{text}overrides: {checked}\n"
        mode = "paired" if plan.max_pairs else "stored"
        msg = dryrun.row_message(row, plan)
        return Evaluation(row=row, verdict=DRY_RUN, message=msg, source="dry-run", mode=mode)

    # --- records and results.json -------------------------------------------------------------

    def record(self, item: pytest.Item, row: Row, report: pytest.TestReport) -> RowRecord:
        """The results.json record of a row's test from its final report (setup or call)."""
        return records.row_record(item.stash.get(ITEM, {}), item.nodeid, row, report, self.settings)

    def add_record(self, rec: RowRecord) -> None:
        """On the controller: keep the record (with the row's history trend, tonight included,
        when the history has one) and rewrite results.json with it."""
        self.records[rec["row_id"]] = rec
        if self.results is None:
            self.results = self.results_file()
            self.recorder.folder = self.results.path.parent
        self.recorder.add(rec)
        if rec.get("verdict") not in ("SKIPPED", DRY_RUN) and rec.get("trend") is None:
            rec["trend"] = self.trend_of(rec["row_id"])
        self.results.add(rec)
        if self.settings.mode == "live":
            say(self.config, f"perfgate: {rec['row_id']} done: {rec['verdict']}")

    def trend_of(self, row_id: str) -> dict[str, Any] | None:
        """The trend of a row whose verdict searched no history (INFRA, NO_BASELINE, A/B):
        its stored points, tonight's among them once stored, searched here, once a session.
        A verdict that searched one hands its own on (Evaluation.trend)."""
        points = self.recorder.points(row_id)
        if len(points) < 2:
            return None
        return trend_record(points, (), change_points(logs_of(points)))

    def results_file(self) -> sessionfiles.ResultsFile:
        """This session's own results.json (the results-dir's results.json follows live and
        replay sessions only: a dry run never hides real results)."""
        s = self.settings
        folder = sessionfiles.new_session_dir(s.results_dir, s.mode)
        points = s.mode in sessionfiles.POINTING_MODES
        pointer = s.results_dir / sessionfiles.POINTER if points else None
        return sessionfiles.ResultsFile(
            folder / "results.json", self.session_info(), pointer, durable=points
        )

    def interrupted(self) -> None:
        """Ctrl-C: cancel what the signal handler has not, and say what was cancelled."""
        if self.runner is None:
            return
        self.runner.cancel_all()
        gone = self.runner.cancelled()
        if gone:
            say(self.config, "perfgate: interrupted; cancelled " + ", ".join(gone))

    def finish(self, metadata: dict[str, Any] | None = None) -> None:
        """End of session: cancel jobs nobody waited for, update baselines, stamp results.json
        (with the login node's metadata the report's environment table shows)."""
        if self.runner is not None:
            left = self.runner.finish()
            if left:
                say(
                    self.config,
                    "perfgate: cancelled the jobs no test waited for: " + ", ".join(left),
                )
        if self.is_worker:
            return
        self.recorder.finish()
        try:
            if self.settings.update_baselines:
                self.update_baselines()
        finally:  # whatever the update did, results.json ends finished
            if self.results is not None:
                found = avoiding.tonight(self.night_runs)
                self.results.data["session"]["slow_nodes_tonight"] = [n.to_dict() for n in found]
                info = self.session_info()
                self.results.finish(environment(self.record_list(), info), metadata)
                if self.settings.mode == "dry-run":
                    sessionfiles.prune_dry_runs(self.settings.results_dir)

    def write_summary(self, tr: Any, verbosity: int) -> None:
        """The perfgate section of the terminal summary (tr: pytest's terminal reporter)."""
        recs = table.worst_first(self.record_list())
        tr.write_sep("=", f"perfgate ({self.settings.mode})")
        if self.settings.mode == "dry-run":
            reruns = preflight.reruns_counted(self.settings.confirm)
            dryrun.write_summary(tr, recs, verbosity, reruns, self.settings.max_gpu_hours)
            avoided = avoiding.plan_line(self.first_runs()[1])
            if avoided:
                tr.write_line(for_terminal(avoided, line=True))
        else:
            for line in signoff.terminal_lines(recs, self.report_session()):
                tr.write_line(for_terminal(line))
        if self.results is not None:
            pointer = self.results.pointer
            latest = f" (latest: {pointer})" if pointer is not None else ""
            tr.write_line(f"results: {self.results.path}{latest}")
        rec = self.recorder
        if rec.error:
            tr.write_line(for_terminal(f"history: {rec.error}", line=True), yellow=True)
        elif rec.session_id is not None:
            tr.write_line(
                for_terminal(f"history: session {rec.session_id} in {rec.location}", line=True)
            )
        notes = rec.store.notes if rec.store is not None else []
        if notes:
            more = f" (and {len(notes) - 1} more)" if len(notes) > 1 else ""
            tr.write_line(for_terminal(f"history: {notes[0]}{more}", line=True), yellow=True)
        if self.settings.update_baselines:
            updates.write_summary(tr, self.update or updates.Update(), self.settings.baselines_dir)

    # --- baselines update --------------------------------------------------------------------

    def update_baselines(self) -> None:
        """Store the measured values of cleanly run rows (perfgate.suite.updates)."""
        try:
            cat = self.catalog
        except PerfgateError as e:  # at session end a traceback would hide the one line
            self.update = updates.Update(error=str(e))
            return
        self.update = updates.update_baselines(self.record_list(), self.settings, cat)
