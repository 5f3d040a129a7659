"""`perfgate history`: a row's trend across sessions, with change points; `history sync`,
`export` and `import`: a session's spooled rows written, a history moved between stores."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from perfgate.catalog import Baseline, load_catalog
from perfgate.charset import for_terminal
from perfgate.cli.common import emit, history_options, open_history, say_left_out
from perfgate.errors import ConfigError
from perfgate.history import spool, transfer
from perfgate.history.store import HistoryStore
from perfgate.history.stores import is_url, open_store
from perfgate.report import trend
from perfgate.stats import DEFAULT_TOLERANCE


def add(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate history`."""
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
    history_options(p)
    p.add_argument("--plot", metavar="OUT", help="write the trend plot: OUT.svg or OUT.html")
    p.add_argument("--forget", metavar="SESSION", type=int, help="exclude this session")
    p.add_argument("--reason", default="forgotten by hand", help="why (with --forget)")
    p.add_argument("--json", action="store_true", help="print the runs as JSON")
    p.set_defaults(func=run)


def _baseline_of(args: argparse.Namespace, row_id: str) -> Baseline | None:
    try:
        return load_catalog(args.baselines_dir).get(row_id).baseline
    except ConfigError:
        return None


def run(args: argparse.Namespace) -> int:
    """`perfgate history`: a row's trend, the rows with history, or sync/export/import."""
    action = {"sync": _sync, "export": _export, "import": _import}.get(args.row or "")
    if action is not None:
        if not args.where:
            raise ConfigError(f"perfgate history {args.row}: name the {_WHERE[args.row]}")
        return action(args)
    if args.where:
        raise ConfigError(f"perfgate history {args.row} {args.where}: one row id at a time")
    store = open_history(args)
    try:
        return _show(args, store)
    finally:
        say_left_out(store)


_WHERE = {"sync": "session folder", "export": "target store", "import": "source store"}


def _sync(args: argparse.Namespace) -> int:
    folder = Path(args.where)
    if not (folder / spool.NAME).is_file():
        raise ConfigError(f"{folder}: no {spool.NAME} here (nothing was kept for the history)")
    kept_for = spool.Spool(folder).kept_for()
    if args.history is None and kept_for:  # the store the session was writing to
        args.history = kept_for
    store = open_history(args, must_exist=False)
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
    return _copy(open_history(args), open_store(args.where, "export"))


def _import(args: argparse.Namespace) -> int:
    source = open_store(args.where, "import")
    if not is_url(args.where) and not Path(args.where).exists():
        raise ConfigError(f"{args.where}: no such history")
    return _copy(source, open_history(args, must_exist=False))


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
        emit({"row_id": args.row, "baseline_step_time_s": ref, "runs": runs}, True)
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
