"""`perfgate report results.json --html out.html`: the sign-off page from results.json alone.

The page is the one a pytest session with --html --self-contained-html writes (same
pytest-html template, same cells, details and summary from perfgate.report.page).
"""

from __future__ import annotations

from pathlib import Path

from perfgate.report import page, sessionfiles


def render_file(results_path: str | Path, html_path: str | Path) -> int:
    """Read results.json, write the HTML report; returns the number of rows rendered."""
    data = sessionfiles.read(results_path)
    out = Path(html_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page.render(data), encoding="utf-8")
    return len(data["rows"])
