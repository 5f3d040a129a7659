"""The pytest plugin: options, rows as parametrized tests, selection, and the three modes.

Loaded by the root conftest.py (`pytest_plugins = ["perfgate.suite.plugin"]`). It stays inert for
tests that do not take the `perfgate_row` argument (the suite's own tests under tests/).

    live      submit every selected row at the start of the test loop, wait per test
    dry-run   show what would run (sbatch script, srun line, spec, GPU-hours); submit nothing
    replay    judge each row from logs already on disk (perfgate.suite.replay); submit nothing

Waiting happens in the `perfgate_evaluation` fixture, so a failed job is a test ERROR with its
cause, job id and log tail; the verdict is asserted in the test body (verdicts.assert_verdict).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from perfgate import verdicts
from perfgate.catalog import Row
from perfgate.errors import PerfgateError
from perfgate.report import bench, extras, results, table
from perfgate.report.environment import environment
from perfgate.report.html import HtmlHooks
from perfgate.secrets import redact
from perfgate.suite import options, selection
from perfgate.suite.live import say
from perfgate.suite.settings import repro_command, settings_from_config
from perfgate.suite.state import ITEM, PerfgateState, ab_plan_lines
from perfgate.verdicts import Evaluation
from perfgate.verdicts.paired import candidate_steady_steps

ROW_ARG = selection.ROW_ARG
STATE = pytest.StashKey[PerfgateState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """The "perfgate" option group."""
    options.addoption(parser)


# --- hooks -------------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    """Validate the options (one-line usage errors) and set up the session state."""
    try:
        settings = settings_from_config(config)
    except PerfgateError as e:
        raise pytest.UsageError(str(e)) from None
    state = PerfgateState(config, settings)
    config.stash[STATE] = state
    config.pluginmanager.register(SessionHooks(state), "perfgate-session")
    if config.pluginmanager.hasplugin("html"):
        config.pluginmanager.register(
            HtmlHooks(state.record_list, state.session_info), "perfgate-html"
        )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize tests taking `perfgate_row` with the rows of their module's ROW_TASKS."""
    if ROW_ARG not in metafunc.fixturenames:
        return
    tasks = getattr(metafunc.module, "ROW_TASKS", None)
    if not tasks:
        pytest.fail(f"{metafunc.module.__file__}: define ROW_TASKS, e.g. ('pretrain',)", False)
    state = metafunc.config.stash[STATE]
    try:
        rows, error = selection.rows_for(state.catalog, tasks), None
    except PerfgateError as e:
        rows, error = [], str(e)
    if error:  # a collection error showing only the message: file, row, field and value
        pytest.fail(error, pytrace=False)
    metafunc.parametrize(ROW_ARG, selection.params(rows))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--gpus: deselect (not skip) rows with other GPU counts."""
    state = config.stash[STATE]
    try:
        keep = selection.gpu_predicate(state.settings.gpus)
    except PerfgateError as e:
        raise pytest.UsageError(str(e)) from None
    if keep is None:
        return
    kept, dropped = selection.split_by_gpus(items, keep)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    """Before the first test: index the replay folder or submit every selected row."""
    if not session.config.option.collectonly:
        pairs = [(r, item.nodeid) for item in session.items if (r := selection.row_of(item))]
        if pairs:
            session.config.stash[STATE].start([r for r, _ in pairs], {r.id: n for r, n in pairs})
    return (yield)


@pytest.fixture
def perfgate_evaluation(request: pytest.FixtureRequest, perfgate_row: Row) -> Evaluation:
    """Wait for (or replay, or plan) this row and judge it; INFRA raises here: a test ERROR."""
    state = request.config.stash[STATE]
    try:
        ev, error = state.evaluate(request.node, perfgate_row), None
    except PerfgateError as e:  # e.g. an unknown override path: one line, no traceback
        ev, error = None, f"{perfgate_row.id}: {e}"
    if error:
        pytest.fail(error, pytrace=False)
    info = request.node.stash.setdefault(ITEM, {})
    info["evaluation"] = ev
    _junit_properties(request.node, ev)
    if ev.measured is not None and ev.series is not None:
        _feed_benchmark(request, ev)
    if ev.verdict == verdicts.INFRA:
        pytest.fail(infra_text(ev), pytrace=False)
    return ev


@pytest.fixture
def perfgate_strict(request: pytest.FixtureRequest) -> bool:
    """True under --strict (INCONCLUSIVE and NO_BASELINE fail)."""
    return request.config.stash[STATE].settings.strict


def infra_text(ev: Evaluation) -> str:
    """The error of a failed job: the one-line cause, then the redacted log tail."""
    lines = [ev.message]
    res = ev.result
    if res is not None and res.diagnosis is not None:
        d = res.diagnosis
        if d.evidence:
            lines.append(f"evidence: {redact(d.evidence)}")
        if res.log_paths:
            lines.append(f"logs: {', '.join(res.log_paths[-3:])}")
        if d.log_tail:
            lines += ["--- log tail ---", redact(d.log_tail)]
    return "\n".join(lines)


def _junit_properties(item: pytest.Item, ev: Evaluation) -> None:
    props: list[tuple[str, Any]] = [("perfgate.verdict", ev.verdict), ("perfgate.mode", ev.mode)]
    m = ev.measured
    if m is not None:
        conv = ev.convention
        props += [
            ("perfgate.step_time_s", round(m.step_time_s, 6)),
            ("perfgate.step_time_se_s", round(m.se_s, 6)),
            ("perfgate.tokens_per_s_per_gpu", round(m.tokens_per_s_per_gpu, 1)),
            ("perfgate.tflops_per_gpu", round(m.tflops_per_gpu[conv], 1)),
            ("perfgate.mfu", round(m.mfu[conv], 4)),
            ("perfgate.flops_convention", conv),
        ]
    if ev.comparison is not None:
        props += [
            ("perfgate.baseline_step_time_s", ev.comparison.baseline_step_time_s),
            ("perfgate.delta", round(ev.comparison.delta, 5)),
            ("perfgate.tolerance", ev.comparison.tolerance),
        ]
    if ev.ab is not None:
        sides = ev.ab["sides"]
        props += [
            ("perfgate.baseline_image", sides["baseline"]["image"]),
            ("perfgate.candidate_image", sides["candidate"]["image"]),
            ("perfgate.pairs", ev.ab.get("pairs_run", 0)),
        ]
        if ev.comparison is not None:
            props.append(("perfgate.resolution", round(ev.comparison.resolution, 5)))
    if ev.result is not None and ev.result.job_id:
        props.append(("perfgate.job_id", ev.result.job_id))
    if ev.cause:
        props.append(("perfgate.cause", ev.cause))
    item.user_properties.extend(props)


def _feed_benchmark(request: pytest.FixtureRequest, ev: Evaluation) -> None:
    config = request.config
    if not config.pluginmanager.hasplugin("benchmark") or config.getoption("benchmark_skip", False):
        return
    m, series = ev.measured, ev.series
    assert m is not None and series is not None
    steady = [s.step_time_s for s in series.steps if m.window[0] <= s.step <= m.window[1]]
    if ev.mode == "paired":  # the candidate's steady steps, each run in its own window
        steady = candidate_steady_steps(ev)
    clock = bench.StepClock()
    request.node.add_marker(pytest.mark.benchmark(timer=clock, group=ev.row.gpu))
    info = {
        "row_id": ev.row.id,
        "verdict": ev.verdict,
        "source": ev.source,
        "window": list(m.window),
        "window_method": m.window_method,
        "baseline_step_time_s": ev.row.baseline.step_time_s if ev.row.baseline else None,
        "tokens_per_s_per_gpu": m.tokens_per_s_per_gpu,
    }
    bench.feed(request.getfixturevalue("benchmark"), clock, steady, info)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """Attach the row's results.json record and the pytest-html extras to its final report."""
    report = yield
    row = selection.row_of(item)
    if row is None or report.when == "teardown":
        return report
    if report.when == "setup" and report.passed:
        return report
    state = item.config.stash[STATE]
    info = item.stash.get(ITEM, {})
    ev = info.get("evaluation")
    rec = results.record(
        ev,
        row,
        nodeid=item.nodeid,
        outcome="error" if report.when == "setup" and report.failed else report.outcome,
        repro=repro_command(item.nodeid, state.settings),
        source=state.settings.mode,
        plan=info.get("plan"),
        description=info.get("description"),
        skip_reason=info.get("skip_reason") or (_skip_text(report) if report.skipped else None),
    )
    if ev is None and report.failed:
        lines = report.longreprtext.splitlines() if report.longreprtext else ["error"]
        rec["verdict"] = verdicts.INFRA
        rec["message"] = _with_id(row.id, lines[-1])
    report.perfgate = rec
    report.extras = [*getattr(report, "extras", []), *extras.extras_for(rec)]
    return report


def _with_id(row_id: str, message: str) -> str:
    """The message, prefixed with the row id unless it already names the row."""
    return message if row_id in message else f"{row_id}: {message}"


def _skip_text(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


class SessionHooks:
    """Hooks that need the session state (registered per config by pytest_configure)."""

    def __init__(self, state: PerfgateState) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """On the controller: keep the record and rewrite results.json as each row finishes."""
        rec = getattr(report, "perfgate", None)
        state = self.state
        if rec is None or state.is_worker:
            return
        state.records[rec["row_id"]] = rec
        if state.results is None:
            state.results = results.ResultsFile(
                state.settings.results_dir / "results.json", state.session_info()
            )
        state.results.add(rec)
        if state.settings.mode == "live":
            say(state.config, f"perfgate: {rec['row_id']} done: {rec['verdict']}")

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Cancel jobs nobody waited for, update baselines if asked, stamp results.json."""
        state = self.state
        if state.runner is not None:
            left = state.runner.finish()
            if left:
                say(state.config, f"perfgate: cancelled job(s) of rows that never ran: {left}")
        if state.is_worker:
            return
        if state.settings.update_baselines:
            state.update_baselines()
        if state.results is not None:
            state.results.finish(environment(state.record_list(), state.session_info()))

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo) -> None:
        """Ctrl-C: cancel every job this session submitted."""
        if self.state.runner is not None:
            self.state.runner.cancel_all()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The perfgate section: verdict counts, non-PASS rows worst first, dry-run plans, diff."""
    state = config.stash.get(STATE, None)
    if state is None or not state.records:
        return
    tr = terminalreporter
    recs = table.worst_first(state.record_list())
    tr.write_sep("=", f"perfgate ({state.settings.mode})")
    if state.settings.mode == "dry-run":
        _dry_run_summary(tr, recs, config.get_verbosity())
    else:
        for line in table.terminal_lines(recs):
            tr.write_line(line)
    if state.results is not None:
        tr.write_line(f"results: {state.results.path}")
    if state.settings.update_baselines:
        if state.update_error:
            tr.write_line(f"baselines NOT updated: {state.update_error}", red=True)
        elif state.update_diff:
            tr.write_sep("-", f"baselines updated in {state.settings.baselines_dir}")
            tr.write_line(state.update_diff.rstrip("\n"))
        else:
            tr.write_line("baselines: nothing to update (no row ran cleanly)")


def _dry_run_summary(tr: Any, recs: list[dict[str, Any]], verbosity: int) -> None:
    total_h = 0.0
    nodes = 0
    for rec in sorted(recs, key=lambda r: r["row_id"]):
        plan = rec.get("plan")
        if not plan:
            tr.write_line(_with_id(rec["row_id"], rec.get("message", "")), red=True)
            continue
        total_h += plan["gpu_hours"]
        nodes += plan["nodes"]
        tr.write_line(
            f"{rec['row_id']}: {plan['nodes']} node(s) x {plan['tasks_per_node']} GPUs, "
            f"{plan['time_limit_min']} min, {plan['gpu_hours']:.1f} GPU-h"
        )
        if plan.get("max_pairs"):
            tr.write_line(f"  A/B: {ab_plan_lines(plan)}")
        if verbosity > 0:
            tr.write_line(f"  srun: {plan['srun_command']}")
            tr.write_line("  sbatch script:")
            for line in plan["sbatch_script"].splitlines():
                tr.write_line(f"    {line}")
            if rec.get("description"):
                tr.write_line("  workload:")
                for line in rec["description"].splitlines():
                    tr.write_line(f"    {line}")
    planned = sum(1 for r in recs if r.get("plan"))
    tr.write_line(
        f"dry run: {planned} row(s), {nodes} node allocation(s), "
        f"{total_h:,.1f} GPU-hours at most (time-limit bound); -v shows scripts and recipes"
    )
