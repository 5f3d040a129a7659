"""The pytest plugin: it only wires pytest's hooks to the session state and the report.

Loaded by the root conftest.py (`pytest_plugins = ["perfgate.suite.plugin"]`). It stays inert
for tests that do not take the `perfgate_row` argument (the suite's own tests under tests/).
The modes (live, dry-run, replay) are perfgate.suite.state's; what the report, JUnit and
pytest-benchmark receive is perfgate.report's.

Waiting happens in the `perfgate_evaluation` fixture, so a failed job is a test ERROR with its
cause, job id and log tail; the verdict is asserted in the test body
(perfgate.suite.outcome.assert_verdict).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from perfgate import notices, verdicts
from perfgate.catalog import Row
from perfgate.charset import for_terminal
from perfgate.errors import PerfgateError
from perfgate.report import bench, extras, junit
from perfgate.report.environment import login_metadata
from perfgate.report.html import HtmlHooks
from perfgate.suite import options, selection
from perfgate.suite.live import say
from perfgate.suite.settings import settings_from_config
from perfgate.suite.state import ITEM, PerfgateState
from perfgate.verdicts import Evaluation

ROW_ARG = selection.ROW_ARG
BAD_CATALOG = 2  # exit status of a malformed baselines file (docs/suite.md)
STATE = pytest.StashKey[PerfgateState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """The "perfgate" option group."""
    options.addoption(parser)


def pytest_configure(config: pytest.Config) -> None:
    """Validate the options (one-line usage errors) and set up the session state."""
    try:
        settings = settings_from_config(config)
    except PerfgateError as e:
        raise pytest.UsageError(str(e)) from None
    state = PerfgateState(config, settings)
    config.stash[STATE] = state
    # What the readers at the door leave out is said on the terminal, once per session.
    notices.reset()
    sink = lambda line: say(config, line)  # noqa: E731
    notices.route(sink)
    config.add_cleanup(lambda: notices.unroute(sink))
    try:  # the rows' markers
        rows = state.catalog.rows
    except PerfgateError as e:
        if not config.option.help:
            # One line, exit 2 (a malformed input, as `perfgate validate` says it), before
            # collection: else one error per test module, then -m's markers unknown (exit 4).
            pytest.exit(str(e), returncode=BAD_CATALOG)
        rows = ()
    for line in selection.marker_lines(rows):
        config.addinivalue_line("markers", line)
    try:
        rowless = selection.rowless_markers(config.option.markexpr, rows) if rows else None
    except PerfgateError:  # an expression perfgate cannot read: pytest judges it
        rowless = None
    if rowless:
        raise pytest.UsageError(rowless)
    config.pluginmanager.register(SessionHooks(state), "perfgate-session")
    if config.pluginmanager.hasplugin("html"):
        config.pluginmanager.register(
            HtmlHooks(config, state.record_list, state.report_session), "perfgate-html"
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


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected theirs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--gpus: deselect (not skip) rows with other GPU counts; then check --override against
    the selected rows (one usage error; under xdist the controller checks the workers' ids)."""
    state = config.stash[STATE]
    try:
        keep = selection.gpu_predicate(state.settings.gpus)
    except PerfgateError as e:
        raise pytest.UsageError(str(e)) from None
    if keep is not None:
        kept, dropped = selection.split_by_gpus(items, keep)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
        if dropped and not kept:  # pytest would end with exit 5 and no word on why
            rows = [r for item in dropped if (r := selection.row_of(item))]
            say(config, selection.gpu_counts_line(state.settings.gpus, rows))
    if not state.is_worker:
        state.preflight_overrides([r for item in items if (r := selection.row_of(item))])


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
        pytest.fail(for_terminal(error), pytrace=False)
    request.node.stash.setdefault(ITEM, {})["evaluation"] = ev
    request.node.user_properties.extend(junit.properties(ev))
    bench.feed_evaluation(request, ev)
    if ev.verdict == verdicts.INFRA:
        pytest.fail(verdicts.infra_text(ev), pytrace=False)
    return ev


@pytest.fixture
def perfgate_strict(request: pytest.FixtureRequest) -> bool:
    """True under --strict (INCONCLUSIVE and NO_BASELINE fail)."""
    return request.config.stash[STATE].settings.strict


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """Attach the row's results.json record to its final report (its pytest-html extras are
    added on the controller once the record is complete: see SessionHooks)."""
    report = yield
    row = selection.row_of(item)
    if row is None or report.when == "teardown":
        return report
    if report.when == "setup" and report.passed:  # waiting happens here: part of the duration
        item.stash.setdefault(ITEM, {})["setup_s"] = report.duration
        return report
    rec = item.config.stash[STATE].record(item, row, report)
    report.perfgate = rec
    return report


class SessionHooks:
    """Hooks that need the session state (registered per config by pytest_configure)."""

    def __init__(self, state: PerfgateState) -> None:
        self.state = state
        self.xdist_checked = False

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """On the controller: keep the record and rewrite results.json as each row finishes;
        then the row's pytest-html extras (pytest-html reads them at the test's teardown)."""
        rec = getattr(report, "perfgate", None)
        if rec is not None and not self.state.is_worker:
            self.state.add_record(rec)
            report.extras = [*getattr(report, "extras", []), *extras.extras_for(rec)]

    @pytest.hookimpl(tryfirst=True)  # before pytest's -m, whose error names no nearest marker
    def pytest_collection_modifyitems(self, config: pytest.Config) -> None:
        """-m naming a marker nothing registers: one usage error with the nearest row marker."""
        markexpr = config.option.markexpr
        if not markexpr:
            return
        registered = [line.split(":")[0].split("(")[0].strip() for line in config.getini("markers")]
        try:
            why = selection.unregistered_markers(markexpr, self.state.catalog.rows, registered)
        except PerfgateError:  # a catalog or expression error is reported where it belongs
            return
        if why:
            raise pytest.UsageError(why)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """pytest-xdist controller, before any test is scheduled: the checks a plain session
        makes on its items (overrides, the GPU-hours consent), on the first collection."""
        if self.xdist_checked:
            return
        self.xdist_checked = True
        rows = selection.rows_of_ids(self.state.catalog, ids, node.config.rootpath)
        self.state.preflight_overrides(rows)
        if self.state.settings.mode == "live" and rows:
            self.state.preflight_submit(rows)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Remember the rows -m, -k and --gpus left out (the report counts them)."""
        self.state.deselected += [r.id for item in items if (r := selection.row_of(item))]

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Cancel jobs nobody waited for, update baselines if asked, stamp results.json.

        A requested baseline update that was not stored fails the session (exit 1), so a CI
        job that refreshes baselines notices, even when every row passed."""
        self.state.finish(login_metadata(session.config))
        update = self.state.update
        if update is not None and update.incomplete and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo) -> None:
        """Ctrl-C: cancel every job this session submitted (each once) and say which."""
        self.state.interrupted()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The perfgate section: verdict counts, non-PASS rows worst first, dry-run plans, diff."""
    state = config.stash.get(STATE, None)
    if state is not None and state.records:
        state.write_summary(terminalreporter, config.get_verbosity())
