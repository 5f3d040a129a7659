"""pytest-html 4 hooks: the report's columns, row details, sign-off summary, title, sorting
and environment table, all from perfgate.report.page (which `perfgate report` also renders).

Registered by perfgate.suite.plugin only when pytest-html is active (its hook specs must exist).
pytest-html renders cells, summary and environment values with innerHTML: all is escaped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pytest_metadata.plugin import metadata_key

from perfgate.report import page


class HtmlHooks:
    """pytest-html hook implementations fed by the plugin's records."""

    def __init__(
        self,
        config: pytest.Config,
        records: Callable[[], list[dict[str, Any]]],
        session: Callable[[], dict[str, Any]],
    ) -> None:
        self._config = config
        self._records = records
        self._session = session

    def pytest_html_report_title(self, report: Any) -> None:
        """Name the report after what it signs off; sort worst first unless the user chose."""
        report.title = page.title(self._session())
        if self._config.getini("initial_sort") == "result":  # pytest-html's default
            report.set_data("initialSort", page.INITIAL_SORT)

    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        """pytest-html's columns (without Links), then perfgate's."""
        cells[:] = page.header_cells(cells)

    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        """A row's cells from its record; none (left out of the table) for a skipped row."""
        cells[:] = page.row_cells(getattr(report, "perfgate", None), cells)

    def pytest_html_results_table_html(self, report: pytest.TestReport, data: list[str]) -> None:
        """A row's log area: only an unexpected error (the rest is in the row's block)."""
        rec = getattr(report, "perfgate", None)
        if rec is not None:
            data[:] = page.log_lines(rec)

    def pytest_html_results_summary(
        self, prefix: list[str], summary: list[str], postfix: list[str], session: Any
    ) -> None:
        """The sign-off block at the top."""
        prefix.append(page.summary_html(self._records(), self._session()))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Fill the environment table (escaped) before pytest-html writes the report."""
        meta = session.config.stash[metadata_key]
        for key in [k for k in meta if k.startswith("perfgate")]:
            del meta[key]
        meta.update(page.environment_entries(self._records(), self._session()))
