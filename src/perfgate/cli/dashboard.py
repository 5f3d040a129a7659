"""`perfgate dashboard`: the whole matrix's history as a static site (no server)."""

from __future__ import annotations

import argparse
import fnmatch
from pathlib import Path

from perfgate.catalog import load_catalog
from perfgate.cli.common import history_options, open_history, say_left_out
from perfgate.errors import ConfigError
from perfgate.report import dashboard


def add(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate dashboard`."""
    p = sub.add_parser(
        "dashboard",
        help="the whole matrix's history as a static site (no server)",
        description="Write a static site from the history: index.html with every row "
        "(latest step time vs baseline, the verdicts of the last nights, change points, slow "
        "nodes; filters by GPU, model and backend) and one page per row (its trend with the "
        "baseline band, the versions that changed at each change point, its nodes).",
    )
    history_options(p)
    p.add_argument("--out", metavar="DIR", required=True, help="where the site is written")
    p.add_argument("--nights", type=int, default=dashboard.NIGHTS, help="verdicts per strip")
    p.add_argument("--rows", default="*", metavar="GLOB", help="row ids to show (default all)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """`perfgate dashboard`: write the site; say where and from which store."""
    if args.nights < 1:
        raise ConfigError(f"--nights {args.nights}: expected at least 1")
    store = open_history(args)
    try:
        catalog = load_catalog(args.baselines_dir)
    except ConfigError:  # the history alone is enough: ids and the runs' baselines
        catalog = None
    rows = [r for r in store.row_ids() if fnmatch.fnmatch(r, args.rows)]
    out = Path(args.out)
    views = dashboard.build(store, out, catalog, args.nights, rows)
    print(f"wrote {out / 'index.html'} and {len(views)} row page(s) from {store.location}")
    say_left_out(store)
    return 0
