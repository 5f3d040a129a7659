"""`perfgate bisect`: the first image whose step is slower, between a good and a bad image.

    perfgate bisect -k ROW nightly-01.sqsh ... nightly-08.sqsh --gate perfgate-results/results.json
    perfgate bisect -k ROW --images-file nightlies.txt --partition p --account a [--dry-run]

Options mirror the suite's (rows from baselines/*.json by -k/-m/--gpus; where and how the
jobs run; the A/B rule's pairs, tolerance and alpha). Bad input is one line and status 2,
with nothing submitted; the answer is status 0, no answer (a probe that could not decide,
ends that do not differ) 3, Ctrl-C 130 after cancelling the probe's jobs.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from perfgate import catalog, stats
from perfgate.bisect import inputs
from perfgate.bisect.probe import ProbeConfig
from perfgate.bisect.run import BisectConfig, bisect
from perfgate.catalog import RUNTIMES
from perfgate.errors import ConfigError
from perfgate.launch import checks
from perfgate.launch.executors import EXECUTORS
from perfgate.launch.types import LaunchOptions
from perfgate.secrets import is_secret
from perfgate.suite import listing, preflight
from perfgate.suite.settings import parse_slurm_params, parse_window, read_env_file
from perfgate.workload import validate
from perfgate.workload.overrides import parse_overrides


def add(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate bisect`."""
    p = sub.add_parser(
        "bisect",
        help="find the first image whose step is slower (A/B gate on midpoints)",
        description="Given images in build order whose ends the A/B gate judged (the first "
        "good, the last a REGRESSION), run the gate on midpoints against the first image, one "
        "allocation per row per probe, until the first slower image is named (log2 of the "
        "images in between). The plan and its GPU-hours come first; the state is kept in "
        "RESULTS_DIR/bisect.json (--resume goes on), the evidence in RESULTS_DIR/bisect.html.",
    )
    p.add_argument("images", nargs="*", metavar="IMAGE", help="images in build order")
    p.add_argument("--images-file", metavar="FILE", help="one image per line (# comments)")
    p.add_argument("-k", dest="keyword", default="", help="rows: row id expression, as pytest -k")
    p.add_argument("-m", dest="markexpr", default="", help="rows: marker expression, as -m")
    p.add_argument("--gpus", metavar="SPEC", help="rows: GPU counts, 64, 8,16 or 8-64")
    p.add_argument("--baselines-dir", metavar="DIR", default="baselines")
    p.add_argument(
        "--gate",
        metavar="RESULTS_JSON",
        help="the A/B gate's results.json on the ends (A = first image, B = last): checked to "
        "say REGRESSION for every row; without it the ends' own A/B probe runs first",
    )
    g = p.add_argument_group("where and how the jobs run (as the suite's options)")
    g.add_argument("--executor", choices=EXECUTORS, default="slurm")
    for flag in ("--partition", "--account", "--qos"):
        g.add_argument(flag)
    g.add_argument("--time-limit", type=int, metavar="MIN", help="minutes per launch")
    g.add_argument("--container-runtime", choices=RUNTIMES, default=None)
    g.add_argument("--container-command", metavar="TEMPLATE")
    g.add_argument("--container-mounts", action="append", default=[], metavar="SRC:DST")
    g.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    g.add_argument("--env-file", metavar="JSON")
    g.add_argument("--slurm-param", action="append", default=[], metavar="KEY=VALUE")
    g.add_argument("--override", action="append", default=[], metavar="PATH=VALUE")
    g.add_argument("--steps", type=int, default=None, help="steps per launch (default: the row's)")
    g.add_argument("--poll-interval", type=float, default=5.0, metavar="S")
    r = p.add_argument_group("the A/B rule of each probe")
    r.add_argument("--pairs", type=int, default=LaunchOptions.pairs)
    r.add_argument("--max-pairs", type=int, default=LaunchOptions.max_pairs, help="per job")
    r.add_argument(
        "--probe-max-pairs",
        type=int,
        default=2 * LaunchOptions.max_pairs,
        metavar="N",
        help="pairs an INCONCLUSIVE probe may grow to with extension jobs (default 16); "
        "still INCONCLUSIVE then, the bisection stops and says the interval",
    )
    r.add_argument("--tolerance", type=float, default=None)
    r.add_argument("--alpha", type=float, default=None)
    r.add_argument("--window", default="auto", metavar="auto|FIRST:LAST")
    o = p.add_argument_group("the session")
    o.add_argument("--results-dir", metavar="DIR", default="perfgate-results/bisect")
    o.add_argument("--resume", action="store_true", help="go on with RESULTS_DIR/bisect.json")
    o.add_argument("--dry-run", action="store_true", help="show the plan; submit nothing")
    o.add_argument("-v", "--verbose", action="store_true", help="dry run: scripts and srun")
    o.add_argument("--max-gpu-hours", type=float, default=preflight.DEFAULT_MAX_GPU_HOURS)
    o.add_argument("--yes", action="store_true", help="consent above --max-gpu-hours")
    o.add_argument("--json", action="store_true", help="print the answer as JSON at the end")
    p.set_defaults(func=run)


def _env(args: argparse.Namespace) -> dict[str, str]:
    env = read_env_file(args.env_file) if args.env_file else {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--env {item!r}: expected KEY=VALUE")
        if is_secret(key.strip()):
            raise ConfigError(f"--env: {key} looks like a secret; export it in the shell instead")
        env[key.strip()] = value
    return env


def _check_counts(args: argparse.Namespace) -> None:
    if not 1 <= args.pairs <= args.max_pairs <= args.probe_max_pairs:
        raise ConfigError(
            f"--pairs {args.pairs} / --max-pairs {args.max_pairs} / --probe-max-pairs "
            f"{args.probe_max_pairs}: need 1 <= pairs <= max-pairs <= probe-max-pairs"
        )
    if args.tolerance is not None and not 0 < args.tolerance < 1:
        raise ConfigError(f"--tolerance {args.tolerance}: must be a fraction in (0, 1)")
    if args.steps is not None and args.steps < 1:
        raise ConfigError(f"--steps {args.steps}: must be at least 1")
    if not args.max_gpu_hours > 0 or not args.poll_interval > 0:
        raise ConfigError("--max-gpu-hours and --poll-interval must be positive")


def config_of(args: argparse.Namespace) -> BisectConfig:
    """The bisection the arguments ask for: rows selected, images checked, options built."""
    _check_counts(args)
    folder = Path(args.baselines_dir)
    if not folder.is_dir():
        raise ConfigError(f"--baselines-dir {folder}: no such folder (run from the repository)")
    rows = listing.select(
        list(catalog.load_catalog(folder).rows), args.markexpr, args.keyword, args.gpus
    )
    if not rows:
        raise ConfigError("no row selected: choose the rows to bisect with -k, -m or --gpus")
    if args.steps is not None:
        rows = [replace(r, steps=args.steps) for r in rows]
    runtime = args.container_runtime or ("command" if args.container_command else "pyxis")
    images = inputs.check_images(inputs.read_list(args.images, args.images_file), runtime)
    options = LaunchOptions(
        executor=args.executor,
        partition=args.partition,
        account=args.account,
        qos=args.qos,
        time_limit_min=args.time_limit,
        container_runtime=runtime,
        container_command=args.container_command,
        container_mounts=tuple(m for a in args.container_mounts for m in a.split(",") if m),
        env=_env(args),
        slurm_params=parse_slurm_params(args.slurm_param),
        steps=args.steps or LaunchOptions.steps,
        overrides=parse_overrides(args.override),
        poll_interval_s=args.poll_interval,
        job_name_prefix="perfgate-bisect",
    )
    checks.options(options)
    preflight.check_session_overrides(
        rows, options.overrides, lambda row, o: validate.check_overrides(row, o)
    )
    noise = stats.Noise(alpha=stats.ALPHA if args.alpha is None else args.alpha)
    probe = ProbeConfig(
        rows=tuple(rows),
        options=options,
        pairs=args.pairs,
        max_pairs=args.max_pairs,
        cap=args.probe_max_pairs,
        tolerance=args.tolerance,
        window=parse_window(args.window),
        noise=noise,
    )
    return BisectConfig(
        images=tuple(images),
        probe=probe,
        results_dir=Path(args.results_dir).resolve(),
        gate=args.gate,
        resume=args.resume,
        dry_run=args.dry_run,
        verbose=args.verbose,
        max_gpu_hours=args.max_gpu_hours,
        yes=args.yes,
    )


def run(args: argparse.Namespace) -> int:
    """`perfgate bisect`: the exit status of the bisection (input errors raise: status 2)."""
    cfg = config_of(args)
    code = bisect(cfg, say=lambda line: print(line, flush=True))
    if args.json:
        path = cfg.results_dir / "bisect.json"
        if path.exists():
            print(json.dumps(json.loads(path.read_text()).get("result"), indent=2))
    return code
