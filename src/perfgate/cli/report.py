"""`perfgate report`: the sign-off report re-rendered from a results.json alone."""

from __future__ import annotations

import argparse
from typing import Any

from perfgate.cli.common import emit
from perfgate.report import render, sessionfiles, signoff, table


def add(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate report`."""
    p = sub.add_parser(
        "report",
        help="re-render the sign-off report from a results.json",
        description="Render the HTML report of a session from its results.json alone.",
    )
    p.add_argument("results", help="results.json written by a perfgate session")
    p.add_argument("--html", metavar="OUT", help="write the HTML report to OUT")
    p.add_argument("--json", action="store_true", help="print the verdict counts as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """`perfgate report`: the verdict counts (and the HTML with --html); status 0."""
    data = sessionfiles.read(args.results)
    records = table.worst_first(list(data["rows"].values()))
    if args.html:
        render.render_file(args.results, args.html)
    summary: dict[str, Any] = {"rows": len(records), "verdicts": dict(table.counts(records))}
    if args.html:
        summary["html"] = args.html
    if args.json:
        emit(summary, True)
    else:
        for line in signoff.terminal_lines(records, data.get("session") or {}):
            print(line)
        if args.html:
            print(f"wrote {args.html}")
    return 0
