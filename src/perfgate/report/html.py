"""pytest-html 4 hooks: extra columns, the sign-off summary, title and environment table.

Registered by perfgate.suite.plugin only when pytest-html is active (its hook specs must exist).
pytest-html renders cells, summary and environment values with innerHTML: all is escaped.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

import pytest
from pytest_metadata.plugin import metadata_key

from perfgate.report import table
from perfgate.report.environment import environment

STYLE = (
    "<style>.perfgate-signoff table{border-collapse:collapse;margin:6px 0}"
    ".perfgate-signoff td,.perfgate-signoff th{border:1px solid #ccc;padding:2px 6px;"
    "text-align:left}.pg-badge{padding:1px 6px;margin-right:4px;border-radius:3px;"
    "background:#eee}.pg-REGRESSION,.pg-INFRA{background:#f8d0d0}.pg-PASS{background:#d4f0d4}"
    ".pg-INCONCLUSIVE,.pg-NO_BASELINE,.pg-SHIFT{background:#fbeecb}.pg-IMPROVEMENT{background:#d0e4f8}"
    "details.perfgate pre{white-space:pre-wrap;max-height:30em;overflow:auto}"
    ".perfgate-ab table{border-collapse:collapse;margin:4px 0}.perfgate-ab td,.perfgate-ab th"
    "{border:1px solid #ccc;padding:2px 6px;text-align:left}"
    ".pg-changed{background:#fff3c4;font-weight:bold}</style>"
)


class HtmlHooks:
    """pytest-html hook implementations fed by the plugin's records."""

    def __init__(
        self, records: Callable[[], list[dict[str, Any]]], session: Callable[[], dict[str, Any]]
    ) -> None:
        self._records = records
        self._session = session

    def pytest_html_report_title(self, report: Any) -> None:
        """Name the report after what it signs off."""
        report.title = f"perfgate report: {self._session().get('mode', '')}"

    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        """Add the perfgate columns after pytest-html's own."""
        cells.extend(table.header_cells())

    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        """Fill the perfgate columns from the record the plugin attached to the report."""
        cells.extend(table.row_cells(getattr(report, "perfgate", None)))

    def pytest_html_results_summary(
        self, prefix: list[str], summary: list[str], postfix: list[str], session: Any
    ) -> None:
        """The sign-off block at the top: counts per verdict, worst regressions first."""
        prefix.append(STYLE + table.signoff_html(self._records(), self._session()))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Fill the environment table (escaped) before pytest-html writes the report."""
        meta = session.config.stash[metadata_key]
        for key in [k for k in meta if k.startswith("perfgate")]:
            del meta[key]
        for key, value in environment(self._records(), self._session()).items():
            meta[f"perfgate: {key}"] = escape(value)  # keys go to textContent
