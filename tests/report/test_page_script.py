"""The report page's own script (perfgate/report/page.js) in headless Chromium, with
pytest-html's: a table beyond a page is paged in pytest-html's order, sorted and filtered as
a whole, its sign-off links reach rows on other pages; the reader's own URL choices hold."""

from __future__ import annotations

import json
import re
import time
from html import escape, unescape
from pathlib import Path

import pytest

from perfgate.report import page, sessionfiles, table
from report.chromium import Browser
from report.matrix import matrix, write_results

ROWS = 120
PAGE = "?rows=50"  # pages of 50 rows: the paging of a large table, on a small one
IDS = "[...document.querySelectorAll('#results-table tbody.results-table-row')].map(t => t.id)"
OPEN = (
    "[...document.querySelectorAll('#results-table tbody.results-table-row')]"
    ".filter(t => !t.querySelector('.extras-row').classList.contains('hidden')).map(t => t.id)"
)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, list[dict]]:
    """A 120-row report and its rows, worst first."""
    folder = tmp_path_factory.mktemp("paged")
    recs = matrix(ROWS)
    data = sessionfiles.read(write_results(folder / "r" / "results.json", recs))
    out = folder / "report.html"
    out.write_text(page.render(data), encoding="utf-8")
    return out, table.worst_first(recs.values())


def _navigate(b: Browser, script: str, what: str) -> None:
    """Run script (it makes the page navigate) and wait for the new page."""
    b.events.clear()
    b.js(script)
    b.wait_for_load(what)
    b.settled()


def test_pages_follow_the_tables_order_and_reach_every_row(browser, report):
    out, worst_first = report
    ids = [r["row_id"] for r in worst_first]
    browser.load(out, query=PAGE)
    browser.settled()
    assert browser.js(IDS) == ids[:50]
    pager = browser.js("document.querySelector('.pg-pager').innerText")
    assert pager.startswith("Rows 1–50 of 120 (page 1 of 3")
    # the rows to look at are open on every page
    looked_at = {r["row_id"] for r in worst_first if r["verdict"] not in table.QUIET}
    assert set(browser.js(OPEN)) == looked_at & set(ids[:50])
    _navigate(browser, "document.querySelector('.pg-pager a[data-pg-page=\"2\"]').click()", "p2")
    assert browser.js(IDS) == ids[50:100]
    assert set(browser.js(OPEN)) == looked_at & set(ids[50:100])
    assert "page=2" in browser.js("location.search")
    # the sign-off's first link (the worst row, on page 1) opens page 1 at that row
    link = "document.querySelector('.perfgate-signoff a[href^=\"#\"]')"
    first = browser.js(f"{link}.getAttribute('href')")[1:]
    assert first == ids[0]
    _navigate(browser, f"{link}.click()", "link")
    assert browser.js(IDS) == ids[:50] and browser.js("location.hash") == f"#{first}"
    # a link to a row on page 3, from outside: that page opens
    browser.load(out, query=f"{PAGE}#{ids[110]}")
    browser.settled()
    assert browser.js(IDS) == ids[100:]
    # and every row on one page, when asked
    _navigate(browser, "document.querySelector('.pg-pager a[data-pg-all]').click()", "all")
    assert browser.js(IDS) == ids and browser.js("document.querySelector('.pg-pager')") is None


def test_sorting_and_filtering_a_paged_table_apply_to_all_its_rows(browser, report):
    out, worst_first = report
    browser.load(out, query=PAGE)
    browser.settled()
    # pytest-html sorts by the test id (its column "Test"), ascending; page 1 of ALL the rows
    _navigate(browser, "document.querySelector('th[data-column-type=\"testId\"]').click()", "s")
    assert browser.js(IDS) == sorted(r["row_id"] for r in worst_first)[:50]
    assert "sort=testId" in browser.js("location.search")
    assert "page=" not in browser.js("location.search")
    # hiding the failed rows hides them in every page: 120 - failed rows are left
    _navigate(browser, "document.querySelector('input[data-test-result=\"failed\"]').click()", "f")
    passed = sorted(r["row_id"] for r in worst_first if r["outcome"] == "passed")
    assert browser.js(IDS) == passed[:50]
    pager = browser.js("document.querySelector('.pg-pager').innerText")
    assert pager.startswith(f"Rows 1–50 of {len(passed)} ")


def test_the_readers_url_choices_hold(browser, report):
    """pytest-html's own URL parameters: ?collapsed= (which outcomes start collapsed) is the
    reader's choice over the rows perfgate opens; ?visible= filters the first drawing."""
    out, worst_first = report
    browser.load(out, query="?rows=all&collapsed=all")
    browser.settled()
    assert browser.js(OPEN) == []
    browser.load(out, query="?rows=all&visible=failed")
    browser.settled()
    failed = [r["row_id"] for r in worst_first if r["outcome"] == "failed"]
    assert browser.js(IDS) == failed
    assert browser.js("new URLSearchParams(location.search).get('visible')") == "failed"
    checked = "[...document.querySelectorAll('input.filter')].filter(b => b.checked)"
    boxes = browser.js(f"{checked}.map(b => b.dataset.testResult)")
    assert "failed" in boxes and "passed" not in boxes
    # the history entry of the load keeps the URL of pytest-html's first (empty) drawing:
    # going back to it and reloading shows the table, as the reader left it
    browser.load(out, query="?rows=all")
    browser.settled()
    marked = "location.search.includes('perfgate-first-drawing')"
    for _ in range(4):  # pytest-html pushes an entry at its start and on each filter and sort
        browser.js("history.back()")
        deadline = time.monotonic() + 2
        while not browser.js(marked) and time.monotonic() < deadline:
            time.sleep(0.05)
        if browser.js(marked):
            break
    assert browser.js(marked)
    browser.events.clear()
    browser.call("Page.reload", session=True)
    browser.wait_for_load("reload")
    browser.settled()
    assert len(browser.js(IDS)) == ROWS


def test_media_players_stay_when_a_test_has_media(browser, report, tmp_path):
    """The rows lose pytest-html's image and video players only when no test has media (another
    plugin's image extra, in a session): then each row shows its image as pytest-html does."""
    out, _ = report
    raw = out.read_text()
    blob = json.loads(unescape(re.search(r'data-jsonblob="([^"]*)"', raw).group(1)))
    first = next(iter(blob["tests"].values()))[0]
    first["extras"].append(
        {"name": "shot", "format_type": "image", "content": "shot.png", "mime_type": "image/png",
         "extension": "png"}
    )  # fmt: skip
    with_media = tmp_path / "media.html"
    with_media.write_text(
        raw.replace(re.search(r'data-jsonblob="([^"]*)"', raw).group(1), escape(json.dumps(blob))),
        encoding="utf-8",
    )
    browser.load(with_media, query="?rows=all")
    browser.settled()
    shown = f"document.getElementById({first['testId']!r}).querySelector('.media img')"
    assert browser.js(f"{shown}.getAttribute('src')") == "shot.png"
    browser.load(out, query="?rows=all")
    browser.settled()
    assert browser.js("document.querySelectorAll('#results-table video').length") == 0
