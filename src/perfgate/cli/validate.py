"""`perfgate validate`: the baselines files checked as data, nothing run.

Each row is loaded and validated (fields, values, layout, ids), and its own recipe
overrides are checked by its backend exactly as a dry run checks them
(perfgate.workload.validate), so a file that validates is one the suite can plan;
`--provenance` also holds the folder against the rows perfgate ships
(perfgate.catalog.provenance).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from perfgate.catalog import Row, load_catalog, load_file, provenance
from perfgate.cli.common import emit
from perfgate.errors import ConfigError
from perfgate.workload import validate


def add(sub: argparse._SubParsersAction) -> None:
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
    p.add_argument(
        "--provenance",
        action="store_true",
        help="also hold each folder against the rows perfgate ships: every shipped row "
        "present with its configuration unchanged, its baseline the shipped one or one "
        "perfgate measured here (a site that drops shipped rows drops this check)",
    )
    p.add_argument(
        "--exact",
        action="store_true",
        help="with --provenance: the folder must be the shipped rows themselves (no own "
        "rows, no re-measured baselines): perfgate's own CI",
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


def _provenance(path: str, exact: bool) -> dict:
    report = provenance.check_folder(path, exact=exact)
    if not report.ok:
        more = len(report.problems) - 1
        tail = f" (and {more} more: every problem with --json)" if more else ""
        raise ConfigError(report.problems[0] + tail)
    return {
        "shipped rows": report.shipped,
        "unchanged": report.unchanged,
        "re-measured here": len(report.remeasured),
        "own rows": len(report.own),
    }


def run(args: argparse.Namespace) -> int:
    """Validate each path; print the rows per path and their total."""
    if args.exact and not args.provenance:
        raise ConfigError("--exact is a mode of --provenance: give both")
    counts = {}
    checked = {}
    for path in args.paths:
        if path.endswith(".json"):
            rows = load_file(path)
            file_of = {r.id: path for r in rows}
        else:
            rows = list(load_catalog(path).rows)
            file_of = {r.id: str(Path(path) / f"{r.gpu}.json") for r in rows}
        check_rows(rows, file_of)
        counts[path] = len(rows)
        if args.provenance:
            if path.endswith(".json"):
                raise ConfigError(f"{path}: --provenance checks a folder, not one file")
            checked[path] = _provenance(path, args.exact)
    data = {"rows": counts, "total": sum(counts.values())}
    if args.provenance:
        data["provenance"] = checked
    emit(data, args.json)
    return 0
