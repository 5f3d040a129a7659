"""`perfgate history`, `perfgate calibrate` and `perfgate nodes`: a row's trend, the site's
noise prior, the nodes whose runs are slow more often than chance; `perfgate history sync`,
`export` and `import`: a session's spooled rows written, a history moved between stores."""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import sys
from pathlib import Path
from typing import Any

from perfgate.catalog import Baseline, load_catalog
from perfgate.charset import for_terminal
from perfgate.errors import ConfigError
from perfgate.history import calibrate, nodes, spool, transfer
from perfgate.history.store import DEFAULT_NAME, HistoryStore
from perfgate.history.stores import is_url, open_store
from perfgate.report import dashboard, trend
from perfgate.stats import DEFAULT_TOLERANCE
from perfgate.stats.priors import SITE_FILE


def _json(data: dict[str, Any], _: bool = True) -> None:
    print(json.dumps(data, indent=2, allow_nan=False, default=str))


def _where(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--history",
        metavar="PATH|URL",
        help="a sqlite file or postgresql://user@host/db (default: <baselines-dir>/"
        "history.sqlite; the password from PGPASSWORD or ~/.pgpass)",
    )
    p.add_argument("--baselines-dir", metavar="DIR", default="baselines")


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate history` and `perfgate calibrate`."""
    p = sub.add_parser(
        "history",
        help="a row's trend across sessions, with change points",
        description="Print a row's runs across sessions (date, session, job, container, step "
        "time, delta vs its baseline, verdict) with change points marked; --plot writes the "
        "trend as SVG or HTML. --forget SESSION leaves a session out of trends and noise. "
        "`history sync SESSION_DIR` writes the rows a session kept in its folder while the "
        "history could not be reached; `history export TARGET` copies the history (--history) "
        "into TARGET and `history import SOURCE` copies SOURCE into it, a sqlite file or a "
        "PostgreSQL URL either way, each session checked field by field once written.",
    )
    p.add_argument(
        "row",
        nargs="?",
        help="row id (omit to list the rows with history), or sync, export or import",
    )
    p.add_argument(
        "where", nargs="?", metavar="DIR|STORE", help="sync: SESSION_DIR; export/import: STORE"
    )
    _where(p)
    p.add_argument("--plot", metavar="OUT", help="write the trend plot: OUT.svg or OUT.html")
    p.add_argument("--forget", metavar="SESSION", type=int, help="exclude this session")
    p.add_argument("--reason", default="forgotten by hand", help="why (with --forget)")
    p.add_argument("--json", action="store_true", help="print the runs as JSON")
    p.set_defaults(func=_history)
    p = sub.add_parser(
        "calibrate",
        help="fit the site's noise prior to its history",
        description="Fit the run-to-run noise prior (sigma, df) to every row's history "
        "(residuals within the segments between change points) and write it as JSON; the "
        "suite uses <baselines-dir>/noise-prior.json when present.",
    )
    _where(p)
    p.add_argument("--rows", default="*", metavar="GLOB", help="row ids to use (default all)")
    p.add_argument("--out", metavar="JSON", help="default: <baselines-dir>/noise-prior.json")
    p.add_argument("--json", action="store_true", help="print the prior as JSON")
    p.set_defaults(func=_calibrate)
    p = sub.add_parser(
        "nodes",
        help="nodes whose runs were slow more often than chance, as an --exclude= list",
        description="Rank every run among its row's runs in the history and test, per node, "
        "whether the runs it took part in were slower than chance (one-sided rank test, "
        "Benjamini-Hochberg over nodes at --fdr); print the flagged nodes as an sbatch "
        "--exclude= list to paste (--slurm-param exclude=...).",
    )
    _where(p)
    p.add_argument("--fdr", type=float, default=0.05, help="false discovery rate (default 0.05)")
    p.add_argument(
        "--min-runs", type=int, default=nodes.MIN_RUNS, help="runs a node needs to be tested"
    )
    p.add_argument("--cluster", help="only runs of this Slurm cluster")
    p.add_argument("--all", action="store_true", help="list every tested node, not the flagged")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.set_defaults(func=_nodes)
    p = sub.add_parser(
        "dashboard",
        help="the whole matrix's history as a static site (no server)",
        description="Write a static site from the history: index.html with every row "
        "(latest step time vs baseline, the verdicts of the last nights, change points, slow "
        "nodes; filters by GPU, model and backend) and one page per row (its trend with the "
        "baseline band, the versions that changed at each change point, its nodes).",
    )
    _where(p)
    p.add_argument("--out", metavar="DIR", required=True, help="where the site is written")
    p.add_argument("--nights", type=int, default=dashboard.NIGHTS, help="verdicts per strip")
    p.add_argument("--rows", default="*", metavar="GLOB", help="row ids to show (default all)")
    p.set_defaults(func=_dashboard)


def _store(args: argparse.Namespace, must_exist: bool = True) -> HistoryStore:
    where = args.history or str(Path(args.baselines_dir) / DEFAULT_NAME)
    if must_exist and not is_url(where) and not Path(where).exists():
        raise ConfigError(f"{where}: no history yet (sessions write it; see --history)")
    return open_store(where)


def _say_left_out(store: HistoryStore) -> None:
    for note in store.notes:
        print(for_terminal(f"history: {note}", line=True), file=sys.stderr)


def _baseline_of(args: argparse.Namespace, row_id: str) -> Baseline | None:
    try:
        return load_catalog(args.baselines_dir).get(row_id).baseline
    except ConfigError:
        return None


def _history(args: argparse.Namespace) -> int:
    action = {"sync": _sync, "export": _export, "import": _import}.get(args.row or "")
    if action is not None:
        if not args.where:
            raise ConfigError(f"perfgate history {args.row}: name the {_WHERE[args.row]}")
        return action(args)
    if args.where:
        raise ConfigError(f"perfgate history {args.row} {args.where}: one row id at a time")
    store = _store(args)
    try:
        return _show(args, store)
    finally:
        _say_left_out(store)


_WHERE = {"sync": "session folder", "export": "target store", "import": "source store"}


def _sync(args: argparse.Namespace) -> int:
    folder = Path(args.where)
    if not (folder / spool.NAME).is_file():
        raise ConfigError(f"{folder}: no {spool.NAME} here (nothing was kept for the history)")
    kept_for = spool.Spool(folder).kept_for()
    if args.history is None and kept_for:  # the store the session was writing to
        args.history = kept_for
    store = _store(args, must_exist=False)
    done = spool.replay(store, folder)
    print(
        f"{store.location}: wrote {done['runs']} run(s) from {folder / spool.NAME} "
        f"({done['runs_there']} already there), {done['ends']} session end(s)"
    )
    return 0


def _copy(source: HistoryStore, target: HistoryStore) -> int:
    done = transfer.copy(source, target)
    read, added = done.read, done.added
    tables = ", ".join(f"{added.get(t, 0)} of {n} {t}" for t, n in read.items()) or "nothing"
    print(f"{source.location} -> {target.location}: {tables} new, every row checked there")
    for note in done.left_out:
        print(for_terminal(f"not copied: {note}", line=True), file=sys.stderr)
    return 1 if done.left_out else 0


def _export(args: argparse.Namespace) -> int:
    return _copy(_store(args), open_store(args.where, "export"))


def _import(args: argparse.Namespace) -> int:
    source = open_store(args.where, "import")
    if not is_url(args.where) and not Path(args.where).exists():
        raise ConfigError(f"{args.where}: no such history")
    return _copy(source, _store(args, must_exist=False))


def _show(args: argparse.Namespace, store: HistoryStore) -> int:
    if args.forget is not None:
        store.forget(args.forget, args.reason)
        print(f"session {args.forget} is left out of trends and noise ({args.reason})")
        return 0
    if not args.row:
        for rid in store.row_ids():
            print(rid)
        return 0
    runs = store.runs(args.row)
    base = _baseline_of(args, args.row)
    ref = base.step_time_s if base else None
    if args.json:
        _json({"row_id": args.row, "baseline_step_time_s": ref, "runs": runs}, True)
    else:
        for line in trend.trend_lines(args.row, runs, ref):
            print(line)
    if args.plot:
        tol = base.tolerance if base and base.tolerance else DEFAULT_TOLERANCE
        if args.plot.endswith(".html"):
            text = trend.trend_html(args.row, runs, ref, tol)
        elif args.plot.endswith(".svg"):
            text = trend.trend_svg(args.row, runs, ref, tol)
        else:
            raise ConfigError(f"--plot {args.plot}: expected a .svg or .html file name")
        Path(args.plot).write_text(text, encoding="utf-8")
        if not args.json:
            print(f"wrote {args.plot}")
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    prior, rows = calibrate.calibrate(_store(args), args.rows)
    out = args.out or str(Path(args.baselines_dir) / SITE_FILE)
    calibrate.write_prior(prior, out)
    if args.json:
        _json({**prior.to_dict(), "out": out}, True)
        return 0
    lo, hi = prior.sigma_ci or (math.nan, math.nan)
    print(
        f"site prior: sigma {prior.sigma:.3%} per run (95% CI {lo:.3%}..{hi:.3%}), df "
        f"{prior.df:g} (maximum likelihood {prior.df_ml:g}, capped at the data's "
        f"{prior.data_df:g}), from {prior.n_groups} rows"
    )
    for r in rows:
        print(
            f"  {r.row_id}: {r.n_runs} runs, {r.change_points} change point(s), sigma "
            f"{r.sigma:.3%} on {r.df} df"
        )
    print(f"wrote {out}")
    return 0


def _nodes(args: argparse.Namespace) -> int:
    if not 0 < args.fdr < 1:
        raise ConfigError(f"--fdr {args.fdr}: expected a false discovery rate in (0, 1)")
    if args.min_runs < 2:
        raise ConfigError(f"--min-runs {args.min_runs}: a node needs at least 2 runs to test")
    store = _store(args)
    totals = store.node_totals(args.cluster)
    _say_left_out(store)  # runs and names the door left out (node names outside the grammar)
    found = nodes.findings(totals, q=args.fdr, min_runs=args.min_runs)
    exclude = nodes.exclude_list(found)
    if args.json:
        _json(
            {
                "nodes_seen": len(totals),
                "fdr": args.fdr,
                "nodes": [f.__dict__ for f in found],
                "exclude": exclude,
            }
        )
        return 0
    shown = found if args.all else [f for f in found if f.flagged]
    print(
        f"{len(totals)} nodes in the history's runs; {len(found)} nodes with >= "
        f"{args.min_runs} runs tested; {sum(f.flagged for f in found)} slower than chance "
        f"(FDR {args.fdr:g})"
    )
    for f in shown:
        mark = "SLOW" if f.flagged else "ok"
        print(
            f"  {f.node}: {mark}, {f.runs} runs, {f.slow_runs} in their row's slowest fifth, "
            f"mean rank {f.mean_percentile:.2f} (0.5 expected), p {f.p_value:.2g}"
        )
    if exclude:
        print(exclude)
    return 0


def _dashboard(args: argparse.Namespace) -> int:
    if args.nights < 1:
        raise ConfigError(f"--nights {args.nights}: expected at least 1")
    store = _store(args)
    try:
        catalog = load_catalog(args.baselines_dir)
    except ConfigError:  # the history alone is enough: ids and the runs' baselines
        catalog = None
    rows = [r for r in store.row_ids() if fnmatch.fnmatch(r, args.rows)]
    out = Path(args.out)
    views = dashboard.build(store, out, catalog, args.nights, rows)
    print(f"wrote {out / 'index.html'} and {len(views)} row page(s) from {store.location}")
    _say_left_out(store)
    return 0
