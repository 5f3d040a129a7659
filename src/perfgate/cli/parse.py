"""`perfgate parse`: the step times of a training log, every NeMo-stack format (perfgate.logs)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, replace

from perfgate import logs, stats
from perfgate.charset import printable
from perfgate.cli.common import emit
from perfgate.errors import PerfgateError
from perfgate.report import format as fmt


def add(sub: argparse._SubParsersAction) -> None:
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
        help="global tokens per step (gbs * seq_len): derives step times for TorchTitan logs, "
        "and N / tps for every step of an Automodel log (without it: its tqdm bar's s/step, "
        "else its timestamps as one window mean)",
    )
    p.add_argument("--num-gpus", type=int, metavar="N", help="GPUs of the run (TorchTitan)")
    p.add_argument(
        "--window",
        default="auto",
        metavar="auto|FIRST:LAST",
        help="steady window for the summary: auto (MSER-5) or fixed steps, e.g. 35:44 (llmb)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """`perfgate parse`: the run's summary and steady state, then one line per step."""
    window = stats.parse_window(args.window)
    series = logs.parse_files(
        args.logs, tokens_per_step=args.tokens_per_step, num_gpus=args.num_gpus
    )
    summary = {k: logs.jsonable(v) for k, v in logs.summarize(series).items()}
    try:
        steady = stats.summarize_run(
            series.step_times,
            window,
            step_numbers=series.steps.numbers,  # type: ignore[attr-defined]  # StepTable
            min_rel_se=series.min_rel_se,
        )
    except PerfgateError as e:  # e.g. a negative step time: name the log it came from
        raise PerfgateError(f"{', '.join(args.logs)}: {e}") from None
    if not series.valid:
        steady = replace(steady, steady=False, reason=f"invalid run: {series.invalid_reason}")
    summary["steady_state"] = stats.json_ready(asdict(steady))
    if args.json:
        logs.write_json(series, summary, sys.stdout)
        return 0
    hidden = ("notes", "reported", "steady_state")
    emit({k: v for k, v in summary.items() if k not in hidden}, False)
    for key, value in summary["steady_state"].items():
        print(f"steady {key}  {fmt.plain(key, value)}")
    for key, value in summary["reported"].items():
        print(f"reported {key}  {fmt.plain(key, value)}")
    for note in summary["notes"]:
        print(f"note: {printable(note)}")
    cols = ("step", "step_time_s", "tflops_per_gpu", "peak_memory_gib", "loss", "grad_norm")
    print("  ".join(f"{c:>14}" for c in cols))
    peaks = logs.peak_memory_per_step(series)
    out = sys.stdout
    for step, peak in zip(logs.step_dicts(series), peaks, strict=True):
        row = {**step, "peak_memory_gib": peak}
        out.write("  ".join(f"{fmt.plain(c, row[c]):>14}" for c in cols) + "\n")
    return 0
