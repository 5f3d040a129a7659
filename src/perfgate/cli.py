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
    p = sub.add_parser(
        "parse",
        help="read the step times of a training log (every NeMo-stack format)",
        description="Parse training logs of one run (several files: consecutive segments, "
        "chained in the given order) into per-step records and a summary.",
    )
    p.add_argument("logs", nargs="+", metavar="LOG", help="log files of one run, in order")
    p.add_argument("--json", action="store_true", help="print JSON: format, steps, summary")
    p.add_argument(
        "--tokens-per-step",
        type=float,
        metavar="N",
        help="global tokens per step (gbs * seq_len): derives step times for Automodel and "
        "TorchTitan logs, which log throughput only",
    )
    p.add_argument("--num-gpus", type=int, metavar="N", help="GPUs of the run (TorchTitan)")

    def run(args: argparse.Namespace) -> int:
        from perfgate import logs

        series = logs.parse_files(
            args.logs, tokens_per_step=args.tokens_per_step, num_gpus=args.num_gpus
        )
        data = logs.to_dict(series)
        # Steady-state statistics (warm-up removal, standard error, CV) come from perfgate.stats
        # and go into data["summary"]["steady_state"] once that module is merged; the parser
        # reports only what it read.
        if args.json:
            _emit(data, as_json=True)
            return 0
        _emit({k: v for k, v in data["summary"].items() if k not in ("notes", "reported")}, False)
        for key, value in data["summary"]["reported"].items():
            print(f"reported {key}  {value}")
        for note in data["summary"]["notes"]:
            print(f"note: {note}")
        cols = ("step", "step_time_s", "tflops_per_gpu", "mem_peak_gib", "loss", "grad_norm")
        print("  ".join(f"{c:>14}" for c in cols))
        for step in data["steps"]:
            print("  ".join(f"{_cell(step[c]):>14}" for c in cols))
        return 0

    def _cell(value: object) -> str:
        if value is None:
            return "-"
        return f"{value:.6g}" if isinstance(value, float) else str(value)

    p.set_defaults(func=run)


# --- compare (perfgate.stats) ---------------------------------------------------------------


def _add_compare_command(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate compare`."""


# --- report (perfgate.report) ---------------------------------------------------------------


def _add_report_command(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate report`."""


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
