"""scripts/gpu-check: perfgate's measurement chain checked on one GPU (or, --cpu, on CPU).

Run from the repository root (scripts/gpu-check sets PYTHONPATH and runs this module):
  1. installs each stage's wheels (gpucheck.wheels: common, megatron_core, nemo2) from
     .gpu-wheels/ into a site folder of its own;
  2. runs the suite for this GPU's 1-GPU megatron_core row: `pytest --executor local -k ROW
     --results-dir .. --html ..`, the product path;
  3. measures beside it (gpucheck.measure): the bf16 GEMM peak, FlopCounterMode on one step of
     the same model, B's cost (activation recompute), and two clock loops (perfgate's synced
     clock; device marks without a host sync, and the timers control) in one process;
  4. --nemo2: the NeMo 2 row at the same shape through the product path (gpucheck.nemo2);
  5. runs A/A and A/B pairs through the A/B gate's rule (gpucheck.pairs);
  6. checks the chain (gpucheck.checks), runs the negative controls (gpucheck.controls),
     decides the verdict (gpucheck.verdict) and writes gpu-check.json, gpu-check.txt,
     report.html and gpu-check.log into --out.
--cpu does the same with the row shrunk to a 2-layer model on torch CPU and gloo, plus a
2-rank TP=2 run whose first loss must equal the TP=1 run's; after the product run its other
runs share one process per rank (gpucheck.cpustages, gpucheck.runner); --nemo2 --cpu runs
NeMo 2 as far as a CPU lets it (--nemo-python: an interpreter with NeMo).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from gpucheck import report, verdict
from gpucheck.budget import Budget, Log
from gpucheck.cpustages import CpuStages
from gpucheck.prepare import check_python, check_torch, probe
from gpucheck.stages import Stages
from gpucheck.wheels import Refused, check_wheels, install, mib, set_pins

REPO = Path(__file__).resolve().parents[2]
HELP_EPILOG = """\
A GPU run, from the repository root:
  1. where a package index is reachable (a GPU machine without one gets them with the
     checkout), fetch the wheels into .gpu-wheels/ (megatron_core 20 wheels, 4.6 MiB; with
     NeMo 2's another 52, 44.6 MiB):
       bash scripts/gpu-wheels
  2. on the GPU machine (Python 3.12 with torch), with .gpu-wheels/ beside the checkout:
       bash scripts/gpu-check --nemo2 --out OUT
     --python PATH picks the interpreter (else $PYTHON, else python3). The run writes
     gpu-check.json, gpu-check.txt, gpu-check.log and the pytest-html reports into OUT.
  3. where the checkout is kept, the run's figures into README.md's "Measured on a GPU":
       bash scripts/gpu-check --fill-readme OUT/gpu-check.json
The CPU check CI runs:
  bash scripts/gpu-check --cpu --python .venv-bridge/bin/python --nemo2 \\
      --nemo-python .venv-nemo/bin/python --out gpu-check-out

overall is PASS only when every check of the chain ran and passed, every negative control
made its check fail, A/A is not REGRESSION and A/B is the verdict B's measured cost
predicts; a check that could not run is a FAIL with its reason. docs/gpu-check.md has the
checks, the controls, the clocks and the budget plan (8 minutes on one H200: the product
run, the measurements, NeMo 2's row, and 2 A/A and 2 A/B pairs; pairs 3 and 4 of each kind
only where time is left, and the GEMM sweep last).
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
    p.add_argument(
        "--python",
        metavar="PATH",
        help="the interpreter (read by scripts/gpu-check: $PYTHON, else python3)",
    )
    p.add_argument("--cpu", action="store_true", help="the CPU check (tiny model, gloo)")
    p.add_argument("--nemo2", action="store_true", help="also the NeMo 2 row (gpucheck.nemo2)")
    p.add_argument(
        "--nemo-python",
        metavar="PATH",
        help="the NeMo 2 stage's interpreter (default: --python; --cpu: one with NeMo)",
    )
    p.add_argument("--budget-min", type=float, default=8.0, help="minutes (default 8)")
    p.add_argument("--pairs", type=int, default=None, help="A/A and A/B pairs each (4; cpu 1)")
    p.add_argument("--steps", type=int, default=None, help="steps of the product run (30; cpu 24)")
    p.add_argument("--wheels", type=Path, default=REPO / ".gpu-wheels", help="wheel folder")
    p.add_argument("--work", type=Path, default=None, help="work folder (default: a temp one)")
    p.add_argument("--fill-readme", type=Path, metavar="JSON", help="write JSON into README.md")
    p.add_argument("--readme", type=Path, default=REPO / "README.md", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def install_sites(args: argparse.Namespace, work: Path, log: Log) -> dict[str, list[Path]]:
    """Each stage's wheel sets installed into sites of their own; the stages' site paths.

    The megatron_core sets must be there (else Refused, before anything runs); NeMo 2's, when
    asked on a GPU, only for its stage: without them that stage says why and the rest runs.
    """
    wanted = ["common", "megatron_core"]
    check_wheels([p for name in wanted for p in set_pins(name)], args.wheels)  # all, one line
    files = {name: check_wheels(set_pins(name), args.wheels) for name in wanted}
    args.nemo2_missing = None
    if args.nemo2 and not args.cpu:
        try:
            files["nemo2"] = check_wheels(set_pins("nemo2"), args.wheels)
        except Refused as e:
            args.nemo2_missing = str(e)
    check_python(str(args.wheels))
    sites = {}
    for name, paths in files.items():
        seconds = install(paths, work / f"site-{name}")
        log(f"installed {name}: {len(paths)} wheels, {mib(paths):.1f} MiB in {seconds:.1f} s")
        sites[name] = work / f"site-{name}"
    nemo = [sites["nemo2"], sites["common"]] if "nemo2" in sites else []
    if args.nemo2 and args.cpu and args.nemo_python:
        # NeMo's own venv (another Python than the wheels'): its pytest plugin's dependencies,
        # the pure-Python wheels of the common set, installed by that Python's pip
        pure = [p for p in files["common"] if p.name.endswith("-py3-none-any.whl")]
        nemo = [work / "site-common-nemo"]
        seconds = install(pure, nemo[0], args.nemo_python)
        log(f"installed common (pure Python) for {args.nemo_python} in {seconds:.1f} s")
    return {"megatron_core": [sites["megatron_core"], sites["common"]], "nemo2": nemo}


def run_check(args: argparse.Namespace, log: Log) -> dict[str, Any]:
    """Everything the module docstring lists; returns the result dict."""
    budget = Budget(args.budget_min)
    # --cpu: in memory where there is a tmpfs. Each step's steps.json is written with two
    # fsyncs (perfgate.atomic), which on a shared disk add 10-30 ms of jitter to a 30 ms CPU
    # step: enough to deny the product run its steady state. A GPU run keeps the real disk.
    shm = Path("/dev/shm")
    where = str(shm) if args.cpu and shm.is_dir() and os.access(shm, os.W_OK) else None
    work = args.work or Path(tempfile.mkdtemp(prefix="gpu-check-", dir=where))
    work.mkdir(parents=True, exist_ok=True)
    try:
        sites = install_sites(args, work, log)
    except Refused:
        if where and not args.work:
            shutil.rmtree(work, ignore_errors=True)
        raise
    facts = probe(sys.executable, cpu=args.cpu)
    gpu = check_torch(facts, args.cpu) or "h100"
    log(f"torch {facts['torch']} on {facts.get('gpu_name') or 'CPU'}; work folder {work}")
    stages = CpuStages if args.cpu else Stages
    try:
        return stages(args, log, budget, work, gpu, facts, sites).run()
    finally:
        if where and not args.work:  # memory, not disk: what is kept is in --out
            shutil.rmtree(work, ignore_errors=True)


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
        args.steps = args.steps or 24
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
    return 0 if verdict.overall(result)[0] else 1


if __name__ == "__main__":
    sys.exit(main())
