"""The `perfgate` command: FLOPs and MFU, parse a log, compare runs, render a report, list rows,
a row's history and the site's noise prior, bisect a slowdown over images (cli_bisect).

Every subcommand prints JSON with --json. Bad input is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

from perfgate import cli_bisect, cli_history, cli_validate, flops, limits, logs, notices, stats
from perfgate.catalog import FLOPS_CONVENTIONS, TASKS, Baseline, Provenance
from perfgate.charset import for_terminal, printable
from perfgate.errors import ConfigError, PerfgateError
from perfgate.report import format as fmt
from perfgate.report import render, sessionfiles, signoff, table
from perfgate.stats import (
    ALPHA,
    DEFAULT_TOLERANCE,
    Noise,
    compare_runs,
    compare_to_baseline,
    parse_window,
    summarize_run,
)
from perfgate.stats.files import read_run
from perfgate.suite import listing


def _emit(data: dict[str, Any], as_json: bool) -> None:
    """Print a result as JSON, or as aligned key: value lines for people."""
    if as_json:
        print(json.dumps(data, indent=2, allow_nan=False, default=str))
        return
    width = max((len(k) for k in data), default=0)
    for k, v in data.items():
        print(f"{k:<{width}}  {fmt.plain(k, v)}")


# --- flops / mfu (perfgate.flops, perfgate.hardware) ---------------------------------------


def _add_flops_commands(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate flops` and `perfgate mfu`."""

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--model", required=True, help="catalog model name, e.g. llama3_8b")
        p.add_argument("--seq-len", type=int, required=True, help="tokens per sample")
        p.add_argument("--task", choices=TASKS, default="pretrain", help="default: pretrain")
        p.add_argument(
            "--convention",
            choices=FLOPS_CONVENTIONS,
            default=None,
            help="how FLOPs are counted: nemo2 (as NeMo 2.x logs them), megatron (causal, as "
            "Megatron-Bridge and NeMo >= 25.09 log them), llmb, automodel (as those publish). "
            "Default: llmb where NVIDIA's llmb recipes publish a formula for the model family "
            "(Nemotron4, Llama), else nemo2; the output names the one used",
        )
        p.add_argument(
            "--tp", type=int, default=1, help="TP size (megatron pads the vocab by it; default 1)"
        )
        p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("flops", help="model FLOPs per sample and per token")
    common(p)
    p.set_defaults(func=_cmd_flops)

    p = sub.add_parser("mfu", help="tokens/s, TFLOP/s per GPU and MFU of a step time")
    common(p)
    p.add_argument("--gpu", required=True, help="h100, h200, b200, b300, gb200 or gb300")
    p.add_argument("--precision", required=True, help="bf16, fp8, mxfp8 or nvfp4")
    p.add_argument("--num-gpus", type=int, required=True, help="GPUs of the job")
    p.add_argument("--gbs", type=int, required=True, help="global batch size (samples per step)")
    p.add_argument("--step-time", type=float, required=True, help="seconds per step")
    p.set_defaults(func=_cmd_mfu)


def _cmd_flops(args: argparse.Namespace) -> int:
    limits.check_options(args, limits.RUN_SHAPE)
    args.convention = args.convention or flops.default_convention(args.model)
    per_sample = flops.flops_per_sample(
        args.model, args.seq_len, args.task, args.convention, tp=args.tp
    )
    data = {
        "model": args.model,
        "task": args.task,
        "seq_len": args.seq_len,
        "convention": args.convention,
        "flops_per_sample": per_sample,
        "flops_per_token": per_sample / args.seq_len,
    }
    _emit(data, args.json)
    return 0


def _cmd_mfu(args: argparse.Namespace) -> int:
    limits.check_options(args, limits.RUN_SHAPE)
    args.convention = args.convention or flops.default_convention(args.model)
    out = flops.throughput(
        args.model,
        args.gpu,
        args.precision,
        args.num_gpus,
        args.gbs,
        args.seq_len,
        args.step_time,
        args.task,
        args.convention,
        tp=args.tp,
    )
    data = {
        "tokens_per_s": out.tokens_per_s,
        "tokens_per_s_per_gpu": out.tokens_per_s_per_gpu,
        "tflops_per_gpu": out.tflops_per_gpu,
        "mfu": out.mfu,
        "convention": out.convention,
        "peak_tflops": out.peak_tflops,
    }
    _emit(data, args.json)
    return 0


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

    def run(args: argparse.Namespace) -> int:
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
        _emit({k: v for k, v in summary.items() if k not in hidden}, False)
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

    p.set_defaults(func=run)


# --- compare (perfgate.stats) ---------------------------------------------------------------


def _add_compare_command(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate compare`."""
    p = sub.add_parser(
        "compare",
        help="verdict on candidate runs vs baseline runs (or a stored step time)",
        description=(
            "Compare the steady step time of candidate runs with baseline runs. Each FILE is "
            "one run: a training log, or a plain step-time file (one number per line, or CSV "
            "with a step_time_s column); files joined by ',' are one run's restarts, in order. "
            "Exit status: 0 PASS, IMPROVEMENT or INCONCLUSIVE; 1 REGRESSION; 2 bad input."
        ),
    )
    base = p.add_mutually_exclusive_group(required=True)
    base.add_argument("--baseline", nargs="+", metavar="FILE", help="baseline runs")
    base.add_argument(
        "--baseline-step-time", type=float, metavar="S", help="stored baseline step time (s)"
    )
    p.add_argument(
        "--baseline-spread",
        type=float,
        metavar="S",
        help="std of the stored step time across its runs (s)",
    )
    p.add_argument(
        "--baseline-runs",
        type=int,
        default=1,
        metavar="N",
        help="number of runs behind the stored step time (default 1)",
    )
    p.add_argument("--candidate", nargs="+", required=True, metavar="FILE", help="candidate runs")
    p.add_argument(
        "--tolerance",
        type=float,
        default=None,
        help="largest acceptable slowdown, a fraction (default 0.05)",
    )
    p.add_argument(
        "--paired",
        action="store_true",
        help="baseline run i and candidate run i ran back to back on the same nodes",
    )
    p.add_argument(
        "--window",
        default="auto",
        metavar="auto|FIRST:LAST",
        help="warm-up removal: auto (MSER-5) or fixed steps, e.g. 35:44 (llmb)",
    )
    p.add_argument("--alpha", type=float, default=None, help="false-alarm rate (default 0.01)")
    p.add_argument(
        "--noise-cv",
        type=float,
        default=None,
        metavar="CV",
        help="run-to-run noise of one launch (default 0.011, from Megatron-LM CI A/A pairs)",
    )
    p.add_argument(
        "--noise-df", type=float, default=None, metavar="DF", help="its weight (default 2)"
    )
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=_run_compare)


def _compare_summaries(files: Sequence[str], window: Any, side: str) -> list[Any]:
    """Read and summarize each run; an invalid run (e.g. NaN grad norm) is not steady."""
    out = []
    for arg in files:
        run = read_run([f for f in arg.split(",") if f])
        try:
            summary = summarize_run(run.step_times, window, step_numbers=run.step_numbers)
        except PerfgateError as e:
            raise PerfgateError(f"{side} {arg}: {e}") from None
        if run.invalid_reason:
            summary = replace(summary, steady=False, reason=f"invalid run: {run.invalid_reason}")
        out.append(summary)
    return out


def _run_compare(args: argparse.Namespace) -> int:
    """`perfgate compare`: 0 unless the verdict is REGRESSION (1); bad input raises (2)."""
    window = parse_window(args.window)
    noise = Noise(ALPHA if args.alpha is None else args.alpha, args.noise_cv, args.noise_df)
    tolerance = DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance
    cand = _compare_summaries(args.candidate, window, "candidate")
    if args.baseline is not None:
        if args.baseline_spread is not None or args.baseline_runs != 1:
            raise ConfigError("--baseline-spread/--baseline-runs go with --baseline-step-time")
        base = _compare_summaries(args.baseline, window, "baseline")
        prior = noise.paired() if args.paired else noise.stored()
        prior["alpha"] = noise.alpha
        result = compare_runs(base, cand, tolerance, args.paired, window, **prior)
        files = {"baseline_files": list(args.baseline)}
    else:
        if args.paired:
            raise ConfigError("--paired needs --baseline runs, not --baseline-step-time")
        if args.baseline_runs < 1:
            raise ConfigError(f"--baseline-runs {args.baseline_runs}: expected >= 1")
        stored = Baseline(
            step_time_s=args.baseline_step_time,
            provenance=Provenance(source="command line"),
            step_time_spread_s=args.baseline_spread,
            n_runs=args.baseline_runs,
        )
        result = compare_to_baseline(cand, stored, tolerance, window, **noise.stored())
        files = {}
    data = {**result.to_dict(), **files, "candidate_files": list(args.candidate)}
    if args.json:
        _emit(data, True)
    else:
        _print_comparison(result)
    return 1 if result.verdict == "REGRESSION" else 0


def _print_comparison(c: Any) -> None:
    """A short human report: verdict line, estimate, then one line per run."""

    def pct(x: float) -> str:
        return fmt.pct(x, signed=True) or "n/a"

    print(f"{c.verdict}  ({c.mode}, tolerance {fmt.pct(c.tolerance)})")
    print(f"  {c.reason}")
    if c.delta == c.delta:
        print(
            f"  delta {pct(c.delta)}  CI {pct(c.ci_low)}..{pct(c.ci_high)} ({c.ci_level:.0%})"
            f"  resolution {fmt.pct(c.resolution)}  step time "
            f"{fmt.seconds(c.baseline_step_time_s)} -> {fmt.seconds(c.candidate_step_time_s)}"
        )
    if c.pair_deltas:
        print("  pair deltas: " + " ".join(pct(d) for d in c.pair_deltas))
    for side, runs in (("baseline", c.baseline), ("candidate", c.candidate)):
        for i, r in enumerate(runs, 1):
            if not r.steady and r.n_steady == 0:
                print(f"  {side} {i}: NOT steady: {r.reason}")
                continue
            state = "steady" if r.steady else f"NOT steady: {r.reason}"
            print(
                f"  {side} {i}: median {fmt.seconds(r.median_s)}, steps {r.window_start}-"
                f"{r.window_end} ({r.window_method}), CV {fmt.pct(r.cv)}, spikes "
                f"{r.spike_fraction:.0%}, {state}"
            )


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
    data = sessionfiles.read(args.results)
    records = table.worst_first(list(data["rows"].values()))
    if args.html:
        render.render_file(args.results, args.html)
    summary: dict[str, Any] = {"rows": len(records), "verdicts": dict(table.counts(records))}
    if args.html:
        summary["html"] = args.html
    if args.json:
        _emit(summary, True)
    else:
        for line in signoff.terminal_lines(records, data.get("session") or {}):
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
    listing.add_command(sub)
    cli_validate.add_command(sub)
    cli_history.add_commands(sub)
    cli_bisect.add_command(sub)
    return parser


class _Escaped:
    """A terminal stream that shows what a terminal would act on (ESC, OSC, BEL, CR, ...) as
    escapes (charset.printable): the last guard, whatever a command prints from outside."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(printable(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad input)."""
    notices.reset()
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Escaped(out), _Escaped(err)
    try:
        with notices.routed(lambda line: print(line, file=sys.stderr, flush=True)):
            return _main(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PerfgateError as e:
        line = for_terminal(str(e), line=True)
        print(f"perfgate {args.command}: error: {line}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
