"""What several verbs share: printing a result, and reaching the history store."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from perfgate.charset import for_terminal
from perfgate.errors import ConfigError
from perfgate.history.store import DEFAULT_NAME, HistoryStore
from perfgate.history.stores import is_url, open_store
from perfgate.report import format as fmt


def emit(data: dict[str, Any], as_json: bool) -> None:
    """Print a result as JSON, or as aligned key: value lines for people."""
    if as_json:
        print(json.dumps(data, indent=2, allow_nan=False, default=str))
        return
    width = max((len(k) for k in data), default=0)
    for k, v in data.items():
        print(f"{k:<{width}}  {fmt.plain(k, v)}")


def history_options(p: argparse.ArgumentParser) -> None:
    """--history and --baselines-dir: where a verb finds the history store."""
    p.add_argument(
        "--history",
        metavar="PATH|URL",
        help="a sqlite file or postgresql://user@host/db (default: <baselines-dir>/"
        "history.sqlite; the password from PGPASSWORD or ~/.pgpass)",
    )
    p.add_argument("--baselines-dir", metavar="DIR", default="baselines")


def open_history(args: argparse.Namespace, must_exist: bool = True) -> HistoryStore:
    """The store --history names (default: <baselines-dir>/history.sqlite)."""
    where = args.history or str(Path(args.baselines_dir) / DEFAULT_NAME)
    if must_exist and not is_url(where) and not Path(where).exists():
        raise ConfigError(f"{where}: no history yet (sessions write it; see --history)")
    return open_store(where)


def say_left_out(store: HistoryStore) -> None:
    """One stderr line per item the store's reader left out."""
    for note in store.notes:
        print(for_terminal(f"history: {note}", line=True), file=sys.stderr)
