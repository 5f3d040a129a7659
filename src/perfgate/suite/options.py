"""The suite's pytest command-line options: the "perfgate: ..." groups of `pytest --help`.

Declared here, turned into Settings and LaunchOptions (and checked) by perfgate.suite.settings.
"""

from __future__ import annotations

import os

import pytest

from perfgate.catalog import RUNTIMES
from perfgate.launch.executors import EXECUTORS
from perfgate.launch.types import LaunchOptions
from perfgate.stats.priors import CHOICES
from perfgate.suite.preflight import DEFAULT_MAX_GPU_HOURS


def addoption(parser: pytest.Parser) -> None:
    """Register every option, one group per concern (pytest --help shows them in this order)."""
    parser.addini(
        "perfgate_history",
        "the history: a sqlite file (default beside baselines) or a postgresql:// URL",
    )
    _selection(parser.getgroup("perfgate: which rows run, and what each runs"))
    _slurm(parser.getgroup("perfgate: where jobs run (executor, Slurm, consent)"))
    _containers(parser.getgroup("perfgate: containers"))
    _ab(parser.getgroup("perfgate: the A/B gate (container upgrade)"))
    _statistics(parser.getgroup("perfgate: statistics of the verdict"))
    _results(parser.getgroup("perfgate: results, baselines and history"))


def _selection(g: pytest.OptionGroup) -> None:
    """Which rows run and what each runs: selection, the three modes, the workload's inputs."""
    g.addoption(
        "--gpus",
        metavar="SPEC",
        default=None,
        help="keep rows with these GPU counts: 64, 8,16 or 8-64 (others are deselected)",
    )
    g.addoption(
        "--all-rows",
        action="store_true",
        default=False,
        help="run every row of the catalog: a live session without -m, -k, --gpus or test ids "
        "refuses to start without it",
    )
    g.addoption(
        "--dry-run",
        action="store_true",
        default=False,
        help="submit nothing: show per row the sbatch script, srun line, workload spec "
        "and GPU-hours; works without Slurm or GPU",
    )
    g.addoption(
        "--replay",
        metavar="DIR",
        default=None,
        help="submit nothing: judge each row from logs already in DIR (perfgate, NeMo, "
        "nemo_run, llmb or Megatron-Bridge folders)",
    )
    g.addoption(
        "--baselines-dir",
        metavar="DIR",
        default=None,
        help="folder of the <gpu>.json row files (default: <rootdir>/baselines)",
    )
    g.addoption(
        "--steps",
        type=int,
        default=None,
        help="training steps per run, for every selected row (default: the row's, else 50)",
    )
    g.addoption(
        "--repeat",
        metavar="K",
        type=int,
        default=None,
        help="launch each row K times in one allocation (an A/A gate); the verdict pools the "
        "K runs and --update-baselines stores each run's summary; with --replay: read K "
        "launch folders of each row (launch-1/ ..), refused when a row has another number",
    )
    g.addoption(
        "--override",
        metavar="PATH=VALUE",
        action="append",
        default=[],
        help="recipe override by dotted path, e.g. model.config.recompute_granularity="
        "selective (repeatable; a tuning knob A/B on the selected rows)",
    )
    g.addoption(
        "--env-file",
        metavar="JSON",
        default=None,
        help="JSON object of environment variables for every job (e.g. seed 000's "
        "env_vars.json); secrets are refused here: export them instead",
    )
    g.addoption(
        "--env",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="environment variable for every job (repeatable; wins over --env-file)",
    )
    g.addoption(
        "--finetune-data",
        metavar="DIR",
        default=None,
        help="fine-tuning data and checkpoint folder (llmb layout) for sft/lora rows",
    )
    g.addoption(
        "--mock-finetune-data",
        action="store_true",
        default=False,
        help="fine-tune on mock data where NeMo allows it (results flagged mock_data)",
    )


def _slurm(g: pytest.OptionGroup) -> None:
    """Where and how jobs run: executor, Slurm parameters, waiting, consent."""
    env = os.environ
    g.addoption(
        "--executor",
        choices=EXECUTORS,
        default="slurm",
        help="slurm (default) or local: run on this node with torchrun-style ranks",
    )
    g.addoption(
        "--partition",
        default=env.get("SBATCH_PARTITION"),
        help="Slurm partition (default: $SBATCH_PARTITION)",
    )
    g.addoption(
        "--account",
        default=env.get("SBATCH_ACCOUNT"),
        help="Slurm account (default: $SBATCH_ACCOUNT)",
    )
    g.addoption(
        "--qos",
        default=env.get("SBATCH_QOS"),
        help="Slurm QOS (default: $SBATCH_QOS)",
    )
    g.addoption(
        "--time-limit",
        metavar="MIN",
        type=int,
        default=None,
        help="time limit in minutes of one run, every row (default: the row's, else 30); "
        "an A/B job gets 2 x --max-pairs times this",
    )
    g.addoption(
        "--slurm-param",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="extra sbatch parameter, e.g. reservation=r1 or constraint=gpu; a flag alone "
        "(no-requeue) has no value (repeatable)",
    )
    g.addoption(
        "--max-concurrent-jobs",
        metavar="N",
        type=int,
        default=None,
        help="at most N jobs queued or running at once (default: all)",
    )
    g.addoption(
        "--poll-interval",
        metavar="S",
        type=float,
        default=5.0,
        help="seconds between job-state polls while tests wait (default 5)",
    )
    g.addoption(
        "--resume",
        action="store_true",
        default=False,
        help="re-attach to the jobs of an interrupted session in --results-dir",
    )
    g.addoption(
        "--max-gpu-hours",
        metavar="H",
        type=float,
        default=DEFAULT_MAX_GPU_HOURS,
        help="above this many GPU-hours (time-limit bound) a live session asks on the terminal "
        f"before submitting, or refuses without --yes (default {DEFAULT_MAX_GPU_HOURS:g})",
    )
    g.addoption(
        "--yes",
        action="store_true",
        default=False,
        help="submit above --max-gpu-hours without asking (CI, scripts)",
    )


def _containers(g: pytest.OptionGroup) -> None:
    """The container each launch runs in."""
    g.addoption(
        "--container-image",
        metavar="IMG",
        default=None,
        help="NeMo container: a .sqsh file or a registry URI (pyxis); none = bare metal",
    )
    g.addoption(
        "--container-runtime",
        choices=RUNTIMES,
        default=None,
        help="pyxis (default): srun --container-image; podman: podman run per task (an "
        "image from its storage or a registry); command: --container-command's template; "
        "none: no container, image names only label the runs and reach the workload as "
        "$PERFGATE_IMAGE (bare-metal A/B of two software environments)",
    )
    g.addoption(
        "--container-command",
        metavar="TEMPLATE",
        default=None,
        help="run each task through this command (runtime 'command'), e.g. 'apptainer exec "
        "--nv --bind {mounts} --pwd {workdir} {image} {argv}'; placeholders: {image} "
        "{argv} {mounts} {workdir} {job_dir} {src}",
    )
    g.addoption(
        "--container-mounts",
        metavar="SRC:DST[,..]",
        action="append",
        default=[],
        help="extra pyxis container mounts (repeatable, comma-separated)",
    )


def _ab(g: pytest.OptionGroup) -> None:
    """The A/B gate: the candidate image and the pairs."""
    g.addoption(
        "--candidate-image",
        metavar="IMG",
        default=None,
        help="A/B gate: the new container, run alternately with --container-image (the "
        "baseline) in one allocation per row, AB BA AB ..; the row's verdict is the paired "
        "comparison",
    )
    g.addoption(
        "--pairs",
        metavar="N",
        type=int,
        default=None,
        help=f"A/B: baseline/candidate pairs per row to start with (default {LaunchOptions.pairs})",
    )
    g.addoption(
        "--max-pairs",
        metavar="M",
        type=int,
        default=None,
        help="A/B: while the verdict is INCONCLUSIVE the job adds a pair, up to M (default "
        f"{LaunchOptions.max_pairs}: catches a 3%% slowdown at --tolerance 0.02 98%% of the "
        "time on production-scale noise); the time limit covers 2M runs",
    )


def _statistics(g: pytest.OptionGroup) -> None:
    """How a run is summarized and judged: window, tolerance, false alarms, noise prior."""
    g.addoption(
        "--window",
        default="auto",
        help="steady window: auto (data-driven warm-up removal) or FIRST:LAST inclusive "
        "0-based steps, e.g. 35:44 as llmb",
    )
    g.addoption(
        "--tolerance",
        type=float,
        default=None,
        help="allowed slowdown as a fraction, e.g. 0.03 (overrides the rows' tolerance)",
    )
    g.addoption(
        "--alpha",
        type=float,
        default=None,
        help="false-alarm rate of a REGRESSION verdict at no change (default 0.01)",
    )
    g.addoption(
        "--noise-prior",
        choices=CHOICES,
        default="auto",
        help="run-to-run noise prior: auto (default: the site's calibrated prior "
        "baselines/noise-prior.json if present, else production, for baselines perfgate "
        "measured; megatron-ci for published numbers), production (512-GPU B200 reruns: "
        "0.45%% per run, 11 df), megatron-ci (small-model CI: 1.1%%, 2 df), site "
        "(perfgate calibrate's file)",
    )
    g.addoption(
        "--noise-cv",
        type=float,
        default=None,
        metavar="CV",
        help="run-to-run noise of one launch on this cluster, as a fraction (default 0.011, "
        "fitted to Megatron-LM CI A/A pairs: pessimistic for large jobs); measure yours with "
        "perfgate compare on A/A runs",
    )
    g.addoption(
        "--noise-df",
        type=float,
        default=None,
        metavar="DF",
        help="weight of --noise-cv in degrees of freedom (default 2: heavy tails; more when "
        "it comes from many A/A runs)",
    )
    g.addoption(
        "--confirm",
        metavar="auto|N",
        default=None,
        help="rerun a one-run REGRESSION on other nodes (Slurm --exclude of the row's nodes "
        "tonight and of the nodes `perfgate nodes` flags). auto (the default for one run per "
        "row): a rerun shown within tolerance at alpha/10 contradicts it; one that reproduces "
        "it gets a second that may contradict it; any other rerun gets a second, both judged "
        "together; an INCONCLUSIVE run with p(slower) <= 2 alpha is rerun too; the session's "
        "reruns within one per row (the plan's 'up to'). N: up to N reruns per row, the first "
        "must reproduce, each later may contradict (counted N times 'up to'); 0: off. A "
        "REGRESSION not reproduced passes as UNCONFIRMED",
    )
    g.addoption(
        "--confirm-inconclusive",
        action="store_true",
        default=False,
        help="also rerun a row whose one run is INCONCLUSIVE and slower, and judge both runs",
    )
    g.addoption(
        "--fdr",
        metavar="Q",
        type=float,
        default=None,
        help="control the whole night's false REGRESSIONs: Benjamini-Hochberg over the rows' "
        "one-sided p-values at false discovery rate Q (e.g. 0.05); each row's test then waits "
        "for every row of the session",
    )


def _results(g: pytest.OptionGroup) -> None:
    """What the session writes: results, baselines, history."""
    g.addoption(
        "--results-dir",
        metavar="DIR",
        default="perfgate-results",
        help="where jobs write and results.json goes (default perfgate-results)",
    )
    g.addoption(
        "--update-baselines",
        action="store_true",
        default=False,
        help="after the run, write the measured values of cleanly run rows into "
        "baselines/*.json (atomic, locked) and print a few lines per row; REGRESSION and "
        "INFRA rows and replayed example logs are refused without --accept-regressions",
    )
    g.addoption(
        "--accept-regressions",
        action="store_true",
        default=False,
        help="--update-baselines also stores REGRESSION rows and replayed logs (never INFRA)",
    )
    g.addoption(
        "--history",
        metavar="PATH|URL",
        default=None,
        help="the history of every session: a sqlite file (default: ini perfgate_history, "
        "else <baselines-dir>/history.sqlite; 'off': none) or a PostgreSQL database a team "
        "shares, postgresql://user@host/db (password from PGPASSWORD or ~/.pgpass, never in "
        "the URL); trends, noise and change points come from it",
    )
    g.addoption(
        "--require-history",
        action="store_true",
        default=False,
        help="refuse to start when the history cannot be reached (default: say so in one "
        "line, judge without it, and keep the session's rows in its folder for "
        "`perfgate history sync`)",
    )
    g.addoption(
        "--store-replay",
        action="store_true",
        default=False,
        help="also store replayed sessions in the history (never examples/replay)",
    )
