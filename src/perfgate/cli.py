"""The `perfgate` command: FLOPs and MFU, parse a log, compare runs, render a report.

Every subcommand prints JSON with --json. Bad input is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from perfgate.errors import PerfgateError


def _emit(data: dict[str, Any], as_json: bool) -> None:
    """Print a result as JSON, or as aligned key: value lines for people."""
    if as_json:
        print(json.dumps(data, indent=2, allow_nan=False, default=str))
        return
    width = max((len(k) for k in data), default=0)
    for k, v in data.items():
        print(f"{k:<{width}}  {v}")


# --- flops / mfu (perfgate.flops, perfgate.hardware) ---------------------------------------


def _add_flops_commands(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate flops` and `perfgate mfu`."""


# --- parse (perfgate.logs) ------------------------------------------------------------------


def _add_parse_command(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate parse`."""


# --- compare (perfgate.stats) ---------------------------------------------------------------


def _add_compare_command(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate compare`."""


# --- report (perfgate.report) ---------------------------------------------------------------


def _add_report_command(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate report`."""
    p = sub.add_parser(
        "report",
        help="re-render the sign-off report from a results.json",
        description="Render the HTML report of a session from its results.json alone.",
    )
    p.add_argument("results", help="results.json written by a perfgate session")
    p.add_argument("--html", metavar="OUT", help="write the HTML report to OUT")
    p.add_argument("--json", action="store_true", help="print the verdict counts as JSON")
    p.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from perfgate.report import render, results, table

    data = results.read(args.results)
    records = table.worst_first(list(data["rows"].values()))
    if args.html:
        render.render_file(args.results, args.html)
    summary: dict[str, Any] = {"rows": len(records), "verdicts": dict(table.counts(records))}
    if args.html:
        summary["html"] = args.html
    if args.json:
        _emit(summary, True)
    else:
        for line in table.terminal_lines(records):
            print(line)
        if args.html:
            print(f"wrote {args.html}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `perfgate` command."""
    parser = argparse.ArgumentParser(
        prog="perfgate", description="NeMo LLM training performance: numbers and verdicts."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_flops_commands(sub)
    _add_parse_command(sub)
    _add_compare_command(sub)
    _add_report_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PerfgateError as e:
        print(f"perfgate {args.command}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
