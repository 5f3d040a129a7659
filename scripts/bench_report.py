#!/usr/bin/env python3
"""Benchmark the sign-off report: writing it, and opening it in headless Chromium, at 1x-100x.

Rows: a results.json of N judged rows (tests/report/matrix.py: rows of tests/rowfactory,
each judged by perfgate.verdicts on synthetic step times: about 72% PASS, 14% INCONCLUSIVE,
3% IMPROVEMENT, 3% NO_BASELINE, 4% REGRESSION, 4% INFRA) is rendered by `perfgate report
results.json --html` in a fresh process (best of --repeat), then opened --repeat times, each
in a fresh headless Chromium: the seconds from navigation until the page has drawn a frame
after its load event (pytest-html's table drawn, the rows to look at opened, the first
detail blocks filled in), and the renderer's peak resident memory (VmHWM). Then, on the
open page, the seconds a click on a row takes (pytest-html draws the table again) and a
sort by another column (on a paged table, a reload of page 1).

Trends: 150 rows, each with a history of NIGHTS nights (a +3% step in a third of them),
judged with it: the seconds the verdict's change-point search takes per row (the session's
one search; perfgate.stats.changepoint), then `perfgate report` of the 150 rows and the page
opened. --distinct K judges K rows of each kind for real and gives the rest their records
(the search is per row and its cost does not change what the report does).

    python scripts/bench_report.py [--rows 50,147,1000,5000] [--nights 30,365] [--repeat 3]

Needs Chromium (Debian: /usr/bin/chromium) for the opening figures; without it they are "-".
The figures of docs/report-scale.md were measured with it on the 2-core development machine.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # tests/report/matrix.py and chromium.py, rowfactory

from report.chromium import Browser, find_chromium  # noqa: E402
from report.matrix import judged_record, kind_of, matrix, write_results  # noqa: E402

GIB = 1 << 30


def render(results: Path, html: Path, repeat: int) -> float:
    """Best wall seconds of `perfgate report results.json --html html` in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "perfgate", "report", str(results), "--html", str(html)],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        best = min(best, time.perf_counter() - t)
    return best


def _click_redraw(b: Browser, selector: str) -> float:
    """Seconds from a click on the first element matching selector to the next frame drawn
    (the click's handlers run synchronously: pytest-html draws the table again)."""
    expr = (
        "new Promise(r => { const t = performance.now();"
        f" document.querySelector({selector!r}).click();"
        " requestAnimationFrame(() => setTimeout(() => r(performance.now() - t))); })"
    )
    out = b.call("Runtime.evaluate", session=True, expression=expr, awaitPromise=True)
    return out["result"]["value"] / 1000


def open_page(binary: str, html: Path, timeout: float) -> dict[str, float]:
    """Open html in a fresh browser: seconds to the first frame after load, peak renderer
    memory, rows shown; then the cost of a row click and of a sort."""
    b = Browser(binary)
    try:
        t = time.perf_counter()
        b.load(html, timeout=timeout)
        b.settled()
        opened = time.perf_counter() - t
        out = {
            "open_s": opened,
            "peak_gib": b.renderer_peak_bytes() / GIB,
            "rows": b.js("document.querySelectorAll('#results-table tbody').length"),
            "open_rows": b.js(
                "document.querySelectorAll('#results-table tr.extras-row:not(.hidden)').length"
            ),
        }
        out["click_s"] = _click_redraw(b, "#results-table tbody tr.collapsible td.col-testId")
        paged = b.js("!!document.querySelector('.pg-pager')")
        b.events.clear()
        t = time.perf_counter()
        b.js("document.querySelector('th[data-column-type=\"delta\"]').click()")
        if paged:  # the page is cut again from all rows: a reload
            b.wait_for_load(str(html), timeout)
        b.settled()
        out["sort_s"] = time.perf_counter() - t
        return out
    finally:
        b.close()


def measure_page(binary: str | None, html: Path, repeat: int) -> dict[str, float]:
    """Median (and worst) of repeat openings in fresh browsers."""
    if binary is None:
        return {}
    runs = [open_page(binary, html, timeout=600) for _ in range(repeat)]
    out = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    out["open_s_max"] = max(r["open_s"] for r in runs)
    out["peak_gib_max"] = max(r["peak_gib"] for r in runs)
    return out


def _fmt(page: dict[str, float], key: str, fmt: str) -> str:
    return format(page[key], fmt) if key in page else "-"


def bench_rows(sizes: list[int], repeat: int, work: Path, binary: str | None) -> None:
    print("rows   write_s   html_MB   open_s (max)     renderer_GiB (max)  click_s  sort_s  shown")
    for n in sizes:
        results = write_results(work / f"rows{n}" / "results.json", matrix(n))
        html = work / f"rows{n}.html"
        write_s = render(results, html, repeat)
        page = measure_page(binary, html, repeat)
        shown = f"{page['rows']:.0f} ({page['open_rows']:.0f} open)" if page else "-"
        print(
            f"{n:>5}  {write_s:7.2f}  {html.stat().st_size / 1e6:8.1f}  "
            f"{_fmt(page, 'open_s', '6.2f')} ({_fmt(page, 'open_s_max', '.2f')})  "
            f"{_fmt(page, 'peak_gib', '10.2f')} ({_fmt(page, 'peak_gib_max', '.2f')})    "
            f"{_fmt(page, 'click_s', '6.2f')}  {_fmt(page, 'sort_s', '6.2f')}  {shown}",
            flush=True,
        )


def search_s(nights: int, samples: int = 3) -> float:
    """Median seconds the verdict takes to judge one row with a history of nights (its one
    change-point search dominates)."""
    stepped = [i for i in range(0, 600, 3) if kind_of(i) == "pass"][:samples]  # +3% steps
    times = []
    for i in stepped:
        t = time.perf_counter()
        judged_record(i, nights, random.Random(i))
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bench_trends(nights_list: list[int], rows: int, distinct: int, repeat: int, work: Path,
                 binary: str | None) -> None:  # fmt: skip
    print(f"\n{rows} rows with trends")
    print("nights  verdict_s/row  write_s  html_MB  open_s (max)  renderer_GiB")
    for nights in nights_list:
        per_row = search_s(nights)
        results = write_results(
            work / f"trend{nights}" / "results.json", matrix(rows, nights, distinct=distinct)
        )
        html = work / f"trend{nights}.html"
        write_s = render(results, html, repeat)
        page = measure_page(binary, html, repeat)
        print(
            f"{nights:>6}  {per_row:13.2f}  {write_s:7.2f}  {html.stat().st_size / 1e6:7.1f}  "
            f"{_fmt(page, 'open_s', '6.2f')} ({_fmt(page, 'open_s_max', '.2f')})  "
            f"{_fmt(page, 'peak_gib', '11.2f')}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="50,147,1000,5000", help="row counts ('' to skip)")
    ap.add_argument("--nights", default="30,365", help="nights of history ('' to skip)")
    ap.add_argument("--trend-rows", type=int, default=150)
    ap.add_argument("--distinct", type=int, default=3, help="rows judged per kind (trends)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    binary = find_chromium()
    if binary is None:
        print("no Chromium on PATH: the opening figures are left out", file=sys.stderr)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        work = Path(tmp)
        if args.rows:
            bench_rows([int(x) for x in args.rows.split(",")], args.repeat, work, binary)
        if args.nights:
            nights = [int(x) for x in args.nights.split(",")]
            bench_trends(nights, args.trend_rows, args.distinct, args.repeat, work, binary)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
