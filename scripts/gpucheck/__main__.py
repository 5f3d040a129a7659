"""scripts/gpu-check: perfgate's measurement chain checked on one GPU (or, --cpu, on CPU).

Run from the repository root (scripts/gpu-check sets PYTHONPATH and runs this module):
  1. installs the wheels of scripts/gpu-wheels.txt from .gpu-wheels/ into a temporary target;
  2. runs the suite for this GPU's 1-GPU megatron_core row: `pytest --executor local -k ROW
     --results-dir .. --html ..`, the product path;
  3. measures beside it (gpucheck.measure): the bf16 GEMM peak, FlopCounterMode on one step of
     the same model, and B's cost (activation recompute) in one process;
  4. runs A/A and A/B pairs through the A/B gate's rule (gpucheck.pairs);
  5. checks the chain (gpucheck.checks) and writes gpu-check.json, gpu-check.txt, report.html
     and gpu-check.log into --out.
--cpu does the same with the row shrunk to a 2-layer model on torch CPU and gloo, plus a
2-rank TP=2 run whose first loss must equal the TP=1 run's; after the product run its other
runs share one process per rank (gpucheck.cpustages, gpucheck.runner).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from gpucheck import report
from gpucheck.cpustages import CpuStages
from gpucheck.prepare import (
    Refused,
    check_python,
    check_torch,
    check_wheels,
    install,
    probe,
    read_pins,
)
from gpucheck.stages import Budget, Log, Stages

REPO = Path(__file__).resolve().parents[2]
HELP_EPILOG = """\
A GPU run, in three steps, each from the repository root:
  1. where a package index is reachable (the GPU machine has none), fetch the wheels into
     .gpu-wheels/ (16 wheels, 4.6 MiB):
       bash scripts/gpu-wheels
  2. on the GPU machine (device tool: run with carry [".gpu-wheels"], timeout_s 600; the
     four files it writes into $OUT come back):
       bash scripts/gpu-check --out $OUT
  3. back here, the run's figures into README.md's "Measured on a GPU" section:
       bash scripts/gpu-check --fill-readme OUT/gpu-check.json
The interpreter is --python PATH, else $PYTHON, else python3 (on the GPU machine, the one
with torch). The CPU check CI runs: bash scripts/gpu-check --cpu --python .venv-bridge/bin/python

Budget: the default plan is the product run of 30 steps, the measurements, 4 A/A and 4 A/B
pairs of 20 steps. Measured on one H200 (2026-11-27): wheels 5 s, product run 36 s,
measurements 28 s, each pair 50-60 s (two fresh processes; most of it is start-up and the
model build), so the full plan needs about 9 minutes. Whatever the budget, the check
leaves out, as time runs short and in this order: the A/A and A/B pairs beyond the first of
each kind (the last first), then the GEMM sweep (the 8192^3 square stays), then B's
in-process cost, and names what it left out. The product run, the FLOP count and one A/A
and one A/B pair always run.
"""


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(
        prog="scripts/gpu-check",
        description=__doc__.split("\n\n")[0],
        epilog=HELP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", type=Path, default=Path("gpu-check-out"), help="output folder")
    p.add_argument("--cpu", action="store_true", help="the CPU check (tiny model, gloo)")
    p.add_argument("--budget-min", type=float, default=8.0, help="minutes (default 8)")
    p.add_argument("--pairs", type=int, default=None, help="A/A and A/B pairs each (4; cpu 1)")
    p.add_argument("--steps", type=int, default=None, help="steps of the product run (30; cpu 16)")
    p.add_argument("--wheels", type=Path, default=REPO / ".gpu-wheels", help="wheel folder")
    p.add_argument("--work", type=Path, default=None, help="work folder (default: a temp one)")
    p.add_argument("--fill-readme", type=Path, metavar="JSON", help="write JSON into README.md")
    p.add_argument("--readme", type=Path, default=REPO / "README.md", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def run_check(args: argparse.Namespace, log: Log) -> dict[str, Any]:
    """Everything the module docstring lists; returns the result dict."""
    budget = Budget(args.budget_min)
    check_python()
    files = check_wheels(read_pins(REPO / "scripts" / "gpu-wheels.txt"), args.wheels)
    facts = probe(sys.executable, cpu=args.cpu)
    gpu = check_torch(facts, args.cpu) or "h100"
    work = args.work or Path(tempfile.mkdtemp(prefix="gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    log(f"torch {facts['torch']} on {facts.get('gpu_name') or 'CPU'}; work folder {work}")
    log(f"installed {len(files)} wheels in {install(files, work / 'site'):.1f} s")
    stages = CpuStages if args.cpu else Stages
    return stages(args, log, budget, work, gpu, facts).run()


def main(argv: list[str] | None = None) -> int:
    """Entry point; 0 when every chain check passed, 1 when one failed, 2 when refused."""
    args = parse(argv)
    if args.fill_readme:
        result = json.loads(args.fill_readme.read_text())
        try:
            report.fill_readme(args.readme, result)
        except ValueError as e:
            print(f"gpu-check: {e}", file=sys.stderr)
            return 2
        print(f"gpu-check: {args.readme} filled from {args.fill_readme}")
        return 0
    if args.cpu:
        args.pairs = 1 if args.pairs is None else args.pairs
        args.steps = args.steps or 16
    args.pairs = 4 if args.pairs is None else args.pairs
    args.steps = args.steps or 30
    log = Log(args.out / "gpu-check.log")
    try:
        result = run_check(args, log)
    except Refused as e:
        print(e, file=sys.stderr)
        return 2
    result["date"] = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    json_path, text_path = report.write(args.out, result)
    sys.stdout.write(report.summary(result))
    log(f"wrote {json_path} and {text_path}")
    return 0 if report.overall(result)[0] else 1


if __name__ == "__main__":
    sys.exit(main())
