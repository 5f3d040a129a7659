"""`perfgate validate`: check baselines files as the suite does before it runs a row.

Each row is loaded and validated (fields, values, layout, ids), and its own recipe overrides
are checked by its backend exactly as a dry run checks them (perfgate.workload.validate), so
a file that validates is one the suite can plan.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from perfgate.catalog import Row, load_catalog, load_file
from perfgate.errors import ConfigError
from perfgate.report import format as fmt
from perfgate.workload import validate


def add_command(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate validate`."""
    p = sub.add_parser(
        "validate",
        help="check baselines files (every field, every row) without running anything",
        description="Load and validate baselines folders or <gpu>.json files, as the suite "
        "does before it runs a row (the rows' own override paths included): the first "
        "problem is one line and exit status 2.",
    )
    p.add_argument(
        "paths",
        nargs="*",
        default=["baselines"],
        metavar="PATH",
        help="folder of <gpu>.json files, or one such file (default: baselines)",
    )
    p.add_argument("--json", action="store_true", help="print the row counts as JSON")
    p.set_defaults(func=run)


def check_rows(rows: list[Row], file_of: dict[str, str]) -> None:
    """Each row's own overrides, checked by its backend as the suite's dry run does."""
    for row in rows:
        if not row.overrides:
            continue
        try:
            # mock data: a file's paths are checked, not where a site keeps its datasets
            validate.check_overrides(row, {}, mock_data=True)
        except ConfigError as e:
            raise ConfigError(f"{file_of[row.id]}: {e}") from None


def run(args: argparse.Namespace) -> int:
    """Validate each path; print the rows per path and their total."""
    counts = {}
    for path in args.paths:
        if path.endswith(".json"):
            rows = load_file(path)
            file_of = {r.id: path for r in rows}
        else:
            rows = list(load_catalog(path).rows)
            file_of = {r.id: str(Path(path) / f"{r.gpu}.json") for r in rows}
        check_rows(rows, file_of)
        counts[path] = len(rows)
    data = {"rows": counts, "total": sum(counts.values())}
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        width = max(len(k) for k in data)
        for k, v in data.items():
            print(f"{k:<{width}}  {fmt.plain(k, v)}")
    return 0
