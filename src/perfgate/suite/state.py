"""The session state behind the plugin: settings, catalog, the three modes, the records.

    live      submit every selected row at the start of the test loop, wait per test
              (A/B gate with --candidate-image: each row's job runs both images in pairs)
    dry-run   show what would run (sbatch script, srun line, spec, GPU-hours); submit nothing
    replay    judge each row from logs already on disk (perfgate.suite.replay); submit nothing

A row's trip goes through one room for each thing done to it: plan (perfgate.suite.planning:
the row as it runs, its overrides, the cost agreed, a dry run's plan), run
(perfgate.suite.running: the replay folder or the live jobs), judge (perfgate.suite.judging:
one run, an A/B job, the night's bar), confirm (perfgate.suite.confirming: reruns on other
nodes). This class is the session object the plugin's hooks call: it holds what the rooms
share and turns their errors into pytest's. It keeps each row's results.json record (made by
perfgate.suite.records), has them stored as new baselines for --update-baselines
(perfgate.suite.updates), and writes the terminal summary. Only perfgate.suite.plugin holds
pytest hooks; this module uses pytest for skip/fail/usage errors only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perfgate import catalog
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
from perfgate.suite import avoiding, planning, preflight, records, replay, running, updates
from perfgate.suite.confirming import Confirmer, settle_replayed
from perfgate.suite.judging import Judge, Judged, Night
from perfgate.suite.live import LiveRunner, say, terminal_display
from perfgate.suite.planning import DRY_RUN
from perfgate.suite.recording import HistoryRecorder
from perfgate.suite.settings import Settings
from perfgate.verdicts import Evaluation
from perfgate.verdicts.nightly import trend_record
from perfgate.verdicts.pairs_rule import PairsRule

ITEM = pytest.StashKey[dict]()  # per test: evaluation, plan, recipe text, skip reason


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
        self.night = Night(settings.fdr) if settings.fdr is not None else None
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
        self.judging = Judge(settings, self.recorder.points)
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
        return planning.effective(row, self.settings.steps)

    def check_overrides(self, row: Row, overrides: Any = None) -> str:
        """Check the row's and --override's recipe paths before anything runs; say how."""
        return planning.check_overrides(row, self.settings.launch, overrides)

    def preflight_overrides(self, rows: list[Row]) -> None:
        """Live and dry-run: every selected row against --override, as one usage error."""
        if self.settings.mode == "replay" or not rows:
            return
        try:
            planning.check_session_overrides(rows, self.settings, self.config.option.markexpr or "")
        except PerfgateError as e:
            raise pytest.UsageError(str(e)) from None

    def preflight_submit(self, rows: list[Row]) -> None:
        """Live, before the first job: plan every row, show the cost, get consent or stop."""
        try:
            why = planning.agree_cost(
                rows,
                self.settings,
                lambda: self.first_runs()[1],
                selected=preflight.has_selection(self.config),
                say=lambda line: say(self.config, line),
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
            why = running.repeat_mismatches(self.index, rows, wanted, s.replay)
            if why:  # before any row is judged: one line, as other option errors (xdist
                # workers fail their rows instead: a worker's usage error would crash it)
                more = f" (and {len(why) - 1} more rows)" if len(why) > 1 else ""
                raise pytest.UsageError(why[0] + more)
        elif s.mode == "live" and rows:
            self._first = None  # the session's rows are known now: their largest sets the cap
            if not self.is_worker:
                self.preflight_submit(rows)
            self.runner = running.live_runner(
                self.first_runs()[0],
                s,
                announce=lambda m: say(self.config, m),
                display=terminal_display(self.config),
                more_pairs_for=self.pairs_rule if s.ab else None,
                on_done=self._on_done if s.confirm.most and not s.ab else None,
            )
            if s.confirm.most and not s.ab:
                self.confirmer = Confirmer(
                    self.runner,
                    self.judging.one_run,
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
        return self.judging.one_run(row, result)

    def pairs_rule(self, row: Row) -> PairsRule:
        """A/B: the job's rule for adding a pair (this row's tolerance, the session's window)."""
        return self.judging.pairs_rule(row)

    def evaluate(self, item: pytest.Item, row: Row) -> Evaluation:
        """The evaluation of one row in the session's mode (may skip the test)."""
        row = self.effective(row)
        info = item.stash.setdefault(ITEM, {})
        if self.settings.mode == "dry-run":
            return planning.dry_run(row, self.settings, lambda: self.first_runs()[0], info)
        if self.night is not None and not self.is_worker:
            judged = self.night.verdict(row, self.session_rows, self._judge_row, self.test_ids)
        else:
            judged = self._judge_row(row, item.nodeid)
        if isinstance(judged, str):
            info["skip_reason"] = judged
            pytest.skip(judged)
        self.night_runs.append(judged)
        return judged

    def _judge_row(self, row: Row, test_id: str | None = None) -> Judged:
        """One row judged in a live or replay session; a str: why it is skipped."""
        if self.settings.mode == "replay":
            return self._judge_replayed(row)
        s = self.settings
        if self.runner is None:
            self.start([row])
        if self.is_worker:  # xdist: this worker submits its own rows, checked here
            planning.check_overrides(row, s.launch)
        result = self.runner.wait(row, test_id)  # type: ignore[union-attr]
        if s.ab:
            return self.judging.ab(row, result)
        first = self.judging.one_run(row, result)
        return self.confirmer.evaluate(row, first) if self.confirmer is not None else first

    def _judge_replayed(self, row: Row) -> Judged:
        """A row read back from the replay folder, judged with its confirm-<n> runs."""
        s = self.settings
        if self.index is None:  # single test run without the loop hook (e.g. pytester)
            self.index = replay.ReplayIndex(s.replay, [row])  # type: ignore[arg-type]
        got = running.replayed(self.index, row, lambda: self.config.getoption("repeat"), s.replay)
        if got.skip:
            return got.skip
        if got.mismatch:  # an xdist worker's row (the controller's check is in start())
            pytest.fail(got.mismatch, pytrace=False)
        first = self.judging.one_run(row, got.result)  # type: ignore[arg-type]
        if not (got.confirmations and s.confirm.most):
            return first
        flagged = self.recorder.slow_nodes()
        return settle_replayed(
            row,
            first,
            got.confirmations,
            replay.load,
            self.judging.one_run,
            s.confirm,
            s.confirm_inconclusive,
            flagged,
        )

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
