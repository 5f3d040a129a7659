"""What the suite's pytest options become: LaunchOptions + Settings, and repro commands.

The options themselves are declared in perfgate.suite.options ("perfgate" in `pytest --help`).
Parsing is strict: a bad value is a one-line ConfigError naming the option and the value.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from perfgate import inputs, limits, stats
from perfgate.charset import ENV_NAME
from perfgate.errors import ConfigError
from perfgate.history.store import DEFAULT_NAME
from perfgate.history.stores import check_url, is_url
from perfgate.launch import checks, images
from perfgate.launch.types import LaunchOptions
from perfgate.secrets import MASK, is_knob, is_secret
from perfgate.stats import priors
from perfgate.suite.preflight import DEFAULT_MAX_GPU_HOURS
from perfgate.verdicts.confirm import AUTO, OFF, RerunPolicy
from perfgate.workload.overrides import parse_overrides


@dataclass(frozen=True)
class Settings:
    """What the plugin itself needs beyond LaunchOptions (modes, judging, files)."""

    launch: LaunchOptions
    baselines_dir: Path
    results_dir: Path
    gpus: str | None = None
    window: Any = "auto"  # "auto" or (first, last) inclusive step numbers
    tolerance: float | None = None
    noise: stats.Noise = field(default_factory=stats.Noise)  # --alpha, --noise-cv, --noise-df
    steps: int | None = None  # --steps given: it wins over the rows' own step counts
    strict: bool = False
    resume: bool = False
    update_baselines: bool = False
    accept_regressions: bool = False
    history: Path | str | None = None  # a sqlite file or a PostgreSQL URL; None: off
    require_history: bool = False  # refuse to start when the history cannot be reached
    store_replay: bool = False
    dry_run: bool = False
    replay: Path | None = None
    all_rows: bool = False  # consent to the whole catalog without a selection
    max_gpu_hours: float = DEFAULT_MAX_GPU_HOURS  # above it: ask, or --yes
    yes: bool = False
    # reruns of a one-run REGRESSION on other nodes (--confirm auto, or N; most=0: off)
    confirm: RerunPolicy = OFF
    confirm_inconclusive: bool = False  # also of an INCONCLUSIVE leaning slow
    fdr: float | None = None  # Benjamini-Hochberg over the session's rows (--fdr)
    env_file: str | None = None  # kept to rebuild the repro command
    cli_args: tuple[str, ...] = field(default_factory=tuple)  # the options that shape a run

    @property
    def ab(self) -> bool:
        """True in the A/B gate mode (--candidate-image): rows are judged by paired runs."""
        return self.launch.candidate_image is not None

    @property
    def mode(self) -> str:
        """live, dry-run or replay."""
        return "dry-run" if self.dry_run else "replay" if self.replay is not None else "live"


def _pairs(values: list[str], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{option} {item!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


def parse_slurm_params(values: list[str]) -> dict[str, str | bool]:
    """--slurm-param KEY=VALUE; KEY or KEY= alone is a flag without a value (no-requeue)."""
    out: dict[str, str | bool] = {}
    for item in values:
        key, _, value = item.partition("=")
        key = key.strip().removeprefix("--")
        if not key:  # what a key may hold is launch.checks' rule (a lowercase option name)
            raise ConfigError(f"--slurm-param {item!r}: expected KEY=VALUE, or KEY for a flag")
        out[key] = value if value else True  # submitit writes True as `#SBATCH --KEY`
    return out


def _refuse_secrets(env: dict[str, str], where: str) -> None:
    for key in env:
        if is_secret(key):
            raise ConfigError(
                f"{where}: {key} looks like a secret; export it in the shell instead "
                "(secrets reach jobs through the environment only and are never stored)"
            )


def read_env_file(path: str) -> dict[str, str]:
    """A JSON object of string values (numbers are accepted and turned into strings)."""
    data = inputs.read_json(
        path,
        ConfigError,
        max_bytes=limits.MAX_SMALL_FILE_BYTES,
        what="--env-file",
        missing=f"--env-file {path}: file not found",
        unreadable=f"--env-file {path}: not a JSON file",
    )
    if not isinstance(data, dict):
        raise ConfigError(f"--env-file {path}: expected a JSON object of NAME: value")
    out: dict[str, str] = {}
    for k, v in data.items():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise ConfigError(f"--env-file {path}: field {k!r} has value {v!r}; expected a string")
        out[str(k)] = str(v)
    _refuse_secrets(out, f"--env-file {path}")
    return out


def parse_window(text: str) -> Any:
    """auto, or FIRST:LAST inclusive 0-based steps."""
    window = stats.parse_window(text)
    if window != "auto" and not 0 <= window[0] <= window[1]:
        raise ConfigError(f"--window {text!r}: expected auto or FIRST:LAST, e.g. 35:44")
    return window


def _noise(
    alpha: float | None, cv: float | None, df: float | None, prior: str, baselines: Path
) -> stats.Noise:
    """--alpha, --noise-cv, --noise-df and --noise-prior as the comparisons' assumptions.

    The site's prior is baselines/noise-prior.json (perfgate calibrate), used by auto when
    present and required by --noise-prior site.
    """
    site_file = baselines / priors.SITE_FILE
    site = priors.read_prior(site_file) if site_file.exists() or prior == "site" else None
    named = None if prior == "auto" else priors.named_prior(prior, site_file)
    try:
        return stats.Noise(
            alpha=stats.ALPHA if alpha is None else alpha, run_cv=cv, df=df, prior=named, site=site
        )
    except ConfigError as e:
        raise ConfigError(
            str(e) if str(e).startswith("--") else f"--alpha/--noise-cv: {e}"
        ) from None


def history_path(config: pytest.Config, baselines: Path) -> Path | str | None:
    """--history, else the perfgate_history ini key, else <baselines>/history.sqlite; off: None.
    A postgresql:// URL names a PostgreSQL history (refused with a password in it)."""
    value = config.getoption("history") or config.getini("perfgate_history") or None
    if value is None:
        return baselines / DEFAULT_NAME
    if str(value).strip().lower() == "off":
        return None
    if is_url(str(value)):
        return check_url(str(value))
    path = Path(value)
    if not path.is_absolute():
        path = Path(config.rootpath) / path
    if path.is_dir():
        raise ConfigError(f"--history {value}: a folder; give the file, e.g. {path / DEFAULT_NAME}")
    return path


def strict_mode(config: pytest.Config) -> bool:
    """pytest's own --strict (pytest 9: the `strict` ini switch; pytest 8: the old flag).

    perfgate does not add a flag of its own: under --strict, INCONCLUSIVE and NO_BASELINE
    rows fail instead of passing with a warning, as CI wants.
    """
    try:
        return bool(config.getini("strict"))
    except ValueError:  # pytest 8 has no `strict` ini option
        return bool(config.getoption("strict", False))


def _pair_counts(config: pytest.Config) -> tuple[int, int]:
    """(--pairs, --max-pairs), checked; both only mean something with --candidate-image."""
    opt = config.getoption
    pairs, top = opt("pairs"), opt("max_pairs")
    candidate = opt("candidate_image")
    if not candidate:
        for flag, value in (("--pairs", pairs), ("--max-pairs", top)):
            if value is not None:
                raise ConfigError(
                    f"{flag} {value}: only A/B runs have pairs; give --candidate-image"
                )
        return LaunchOptions.pairs, LaunchOptions.max_pairs
    if not opt("container_image"):
        raise ConfigError(
            f"--candidate-image {candidate}: give the baseline image as --container-image"
        )
    if opt("replay"):
        raise ConfigError(
            "--candidate-image runs both images; --replay judges logs already on disk: pick one"
        )
    pairs = LaunchOptions.pairs if pairs is None else pairs
    if pairs < 1:
        raise ConfigError(f"--pairs {pairs}: must be at least 1")
    top = max(LaunchOptions.max_pairs, pairs) if top is None else top
    if top < pairs:
        raise ConfigError(f"--max-pairs {top}: must be at least --pairs ({pairs})")
    return pairs, top


MAX_CONFIRM = 3


def parse_confirm(value: str | None, several: bool) -> RerunPolicy:
    """--confirm auto or N as a rerun policy; unset: auto where a row's verdict rests on one
    run (not A/B pairs, not --repeat K), else off."""
    if value is None:
        return OFF if several else AUTO
    text = str(value).strip().lower()
    if text == "auto":
        return AUTO
    try:
        most = int(text)
    except ValueError:
        raise ConfigError(
            f"--confirm {value}: expected auto or a number of reruns 0..{MAX_CONFIRM}"
        ) from None
    if not 0 <= most <= MAX_CONFIRM:
        raise ConfigError(f"--confirm {value}: must be auto or 0..{MAX_CONFIRM} reruns")
    return RerunPolicy(most)


def _confirmations(config: pytest.Config) -> tuple[RerunPolicy, bool, float | None]:
    """(--confirm, --confirm-inconclusive, --fdr), checked. --confirm defaults to auto where
    a row's verdict rests on one run (not A/B pairs, not --repeat K), else off."""
    opt = config.getoption
    fdr = opt("fdr")
    several = bool(opt("candidate_image")) or (opt("repeat") or 1) > 1
    confirm = parse_confirm(opt("confirm"), several)
    if opt("confirm") is not None and confirm.most and several:
        what = "--candidate-image pairs" if opt("candidate_image") else "--repeat K runs"
        raise ConfigError(
            f"--confirm {opt('confirm')}: a verdict on {what} already rests on several runs of "
            "one allocation; confirmation reruns a one-run verdict"
        )
    if opt("confirm_inconclusive") and not confirm.most:
        raise ConfigError("--confirm-inconclusive needs --confirm auto or 1 or more")
    if fdr is not None and not 0 < fdr < 0.5:
        raise ConfigError(f"--fdr {fdr}: expected a false discovery rate in (0, 0.5), e.g. 0.05")
    return confirm, bool(opt("confirm_inconclusive")), fdr


# What a real cluster can mean (perfgate.limits): each option's largest value.
_BOUNDS = {
    "steps": limits.STEPS,
    "time_limit": limits.TIME_LIMIT_MIN,
    "max_concurrent_jobs": limits.JOBS,
    "repeat": limits.RUNS,
    "pairs": limits.RUNS,
    "max_pairs": limits.RUNS,
    "poll_interval": limits.POLL_S,
    "max_gpu_hours": limits.GPU_HOURS,
}


def _check_images(launch: LaunchOptions) -> None:
    """A local image file that does not exist is one usage error before any row is planned
    (dry runs included), not one ERROR per row; runtime none: images are only labels."""
    if launch.container_runtime == "none" or launch.executor == "local":
        return
    for flag, image in (
        ("--container-image", launch.container_image),
        ("--candidate-image", launch.candidate_image),
    ):
        if image:
            try:
                images.resolve_for(launch.container_runtime, image)
            except ConfigError as e:
                raise ConfigError(f"{flag} {str(e).removeprefix('container image ')}") from None


def settings_from_config(config: pytest.Config) -> Settings:
    """Build and validate Settings (and LaunchOptions) from the parsed pytest options."""
    opt = config.getoption
    if opt("dry_run") and opt("replay"):
        raise ConfigError("--dry-run and --replay exclude each other: pick one")
    steps = opt("steps")
    if steps is not None and steps < 1:
        raise ConfigError(f"--steps {steps}: must be at least 1")
    if not opt("poll_interval") > 0:
        raise ConfigError(f"--poll-interval {opt('poll_interval')}: must be positive seconds")
    tol = opt("tolerance")
    if tol is not None and not 0 < tol < 1:
        raise ConfigError(f"--tolerance {tol}: must be a fraction in (0, 1), e.g. 0.03")
    if not opt("max_gpu_hours") > 0:
        raise ConfigError(f"--max-gpu-hours {opt('max_gpu_hours')}: must be positive")
    for name in ("time_limit", "max_concurrent_jobs"):
        value = opt(name)
        if value is not None and value < 1:
            raise ConfigError(f"--{name.replace('_', '-')} {value}: must be at least 1")
    limits.check_options(config.option, _BOUNDS)
    env: dict[str, str] = {}
    if opt("env_file"):
        env.update(read_env_file(opt("env_file")))
    cli_env = _pairs(opt("env"), "--env")
    _refuse_secrets(cli_env, "--env")
    env.update(cli_env)
    pairs, max_pairs = _pair_counts(config)
    overrides = parse_overrides(opt("override"))
    mounts = tuple(m for arg in opt("container_mounts") for m in arg.split(",") if m)
    replay = opt("replay")
    if replay is not None and not Path(replay).is_dir():
        raise ConfigError(f"--replay {replay}: no such folder")
    rootdir = Path(config.rootpath)
    baselines = Path(opt("baselines_dir")) if opt("baselines_dir") else rootdir / "baselines"
    results_dir = Path(opt("results_dir"))
    repeat = opt("repeat")
    if repeat is not None and repeat < 1:
        raise ConfigError(f"--repeat {repeat}: must be at least 1")
    if repeat and repeat > 1 and opt("candidate_image"):
        raise ConfigError(
            f"--repeat {repeat} runs one image K times; --candidate-image runs A/B pairs: pick one"
        )
    if opt("accept_regressions") and not opt("update_baselines"):
        raise ConfigError("--accept-regressions only means something with --update-baselines")
    launch = LaunchOptions(
        executor=opt("executor"),
        partition=opt("partition"),
        account=opt("account"),
        qos=opt("qos"),
        time_limit_min=opt("time_limit"),
        container_image=opt("container_image"),
        candidate_image=opt("candidate_image"),
        pairs=pairs,
        max_pairs=max_pairs,
        container_runtime=opt("container_runtime")
        or ("command" if opt("container_command") else "pyxis"),
        container_command=opt("container_command"),
        container_mounts=mounts,
        env=env,
        slurm_params=parse_slurm_params(opt("slurm_param")),
        steps=steps or LaunchOptions.steps,
        overrides=overrides,
        results_dir=str(results_dir),
        max_concurrent_jobs=opt("max_concurrent_jobs"),
        finetune_data=opt("finetune_data"),
        mock_finetune_data=opt("mock_finetune_data"),
        poll_interval_s=opt("poll_interval"),
        repeat=repeat or 1,
    )
    checks.options(launch)  # before any row: one line naming the option, not one per row
    _check_images(launch)
    confirm, confirm_inconclusive, fdr = _confirmations(config)
    noise = _noise(opt("alpha"), opt("noise_cv"), opt("noise_df"), opt("noise_prior"), baselines)
    return Settings(
        launch=launch,
        baselines_dir=baselines,
        results_dir=results_dir,
        gpus=opt("gpus"),
        window=parse_window(opt("window")),
        tolerance=tol,
        # with confirmation on, a slow-node night is confirmed away: the history's noise clips it
        noise=replace(noise, confirming=confirm.most > 0),
        steps=steps,
        strict=strict_mode(config),
        resume=opt("resume"),
        update_baselines=opt("update_baselines"),
        accept_regressions=opt("accept_regressions"),
        history=history_path(config, baselines),
        require_history=bool(config.getoption("require_history")),
        store_replay=opt("store_replay"),
        dry_run=opt("dry_run"),
        replay=Path(replay) if replay is not None else None,
        all_rows=opt("all_rows"),
        max_gpu_hours=opt("max_gpu_hours"),
        yes=opt("yes"),
        confirm=confirm,
        confirm_inconclusive=confirm_inconclusive,
        fdr=fdr,
        env_file=opt("env_file"),
        cli_args=tuple(run_args(config)),
    )


def run_args(config: pytest.Config) -> list[str]:
    """The perfgate options of this invocation that shape a run (for repro commands)."""
    opt = config.getoption
    args: list[str] = []
    for name, flag in (
        ("executor", "--executor"),
        ("partition", "--partition"),
        ("account", "--account"),
        ("qos", "--qos"),
        ("time_limit", "--time-limit"),
        ("container_image", "--container-image"),
        ("candidate_image", "--candidate-image"),
        ("pairs", "--pairs"),
        ("max_pairs", "--max-pairs"),
        ("container_runtime", "--container-runtime"),
        ("container_command", "--container-command"),
        ("env_file", "--env-file"),
        ("steps", "--steps"),
        ("window", "--window"),
        ("tolerance", "--tolerance"),
        ("alpha", "--alpha"),
        ("noise_cv", "--noise-cv"),
        ("noise_df", "--noise-df"),
        ("repeat", "--repeat"),
        ("finetune_data", "--finetune-data"),
        ("baselines_dir", "--baselines-dir"),
        ("replay", "--replay"),
    ):
        value = opt(name)
        if value is None or (name, value) in (
            ("executor", "slurm"),
            ("container_runtime", "pyxis"),
            ("steps", 50),
            ("window", "auto"),
        ):
            continue
        args += [flag, str(value)]
    for name, flag in (
        ("container_mounts", "--container-mounts"),
        ("env", "--env"),
        ("slurm_param", "--slurm-param"),
        ("override", "--override"),
    ):
        for value in opt(name):
            args += [flag, value]
    for name, flag in (("confirm", "--confirm"), ("fdr", "--fdr")):
        if opt(name) is not None:
            args += [flag, str(opt(name))]
    if opt("confirm_inconclusive"):
        args.append("--confirm-inconclusive")
    if opt("noise_prior") != "auto":
        args += ["--noise-prior", opt("noise_prior")]
    if opt("mock_finetune_data"):
        args.append("--mock-finetune-data")
    if opt("dry_run"):
        args.append("--dry-run")
    return args


def repro_command(nodeid: str, settings: Settings) -> str:
    """The pytest command that reruns one row with the same run-shaping options.

    A --env variable that is not a performance knob is written `--env "NAME=$NAME"`: its
    value is never stored, the shell that reruns the command supplies it.
    """
    args, words = settings.cli_args, []
    for i, arg in enumerate(args):
        if i and args[i - 1] == "--env" and _hidden_assignment(arg):
            name = arg.partition("=")[0]
            words.append(f'"{name}=${name}"' if ENV_NAME.fullmatch(name) else f"{name}={MASK}")
        else:
            words.append(shlex.quote(arg))
    return " ".join([shlex.join(["pytest", nodeid]), *words])


def _hidden_assignment(item: str) -> bool:
    name, sep, _ = item.partition("=")
    return bool(sep) and not is_knob(name)
