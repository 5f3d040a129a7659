"""What may reach the sbatch script, the srun line and the job's environment.

`#SBATCH` lines are not shell: sbatch reads each one with its own rules (Slurm's
_get_argument): '...' and "..." group, a backslash escapes the next character even inside
single quotes, an unquoted `#` ends the line, and a line ends at the newline whatever the
quotes. submitit shlex-quotes values, which sbatch reads back exactly (tested with the real
sbatch) as long as they hold no backslash and no line break; a line break would end the
directive and make the rest a shell line that bash runs. So values for `#SBATCH` lines are
refused when they hold a control character or a backslash, keys must be option names, and
paths used for sbatch's --output/--error must not hold '%' (sbatch's file-name patterns).
The srun line is an argv list (never a shell string); pyxis splits --container-mounts at ','
and each mount at ':', so the job folder and perfgate's source must hold neither.
Secrets travel by environment only: a bad secret value is refused without being shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from perfgate import charset, limits
from perfgate.errors import ConfigError
from perfgate.launch.types import LaunchOptions
from perfgate.secrets import is_secret

SBATCH_KEY = re.compile(r"[a-z][a-z0-9_-]*")  # a long option name, as submitit writes it
# sbatch options perfgate or submitit set, or that change what sbatch does with the script:
# --slurm-param may not replace or add them (submitit puts extra parameters last, so one
# would win over submitit's own line).
OWNED_SBATCH = {
    "output": "submitit writes the job's log there and reads it back",
    "error": "submitit writes the job's errors there and reads them back",
    "open-mode": "submitit appends to its logs across requeues",
    "job-name": "perfgate names each job after its row (--resume finds it so)",
    "time": "give --time-limit MIN",
    # their own options, so that results.json and the report's sign-off say where it ran
    "partition": "give --partition NAME",
    "account": "give --account NAME",
    "qos": "give --qos NAME",
    "nodes": "the row's GPUs and GPUs per node set it",
    "ntasks": "the row's GPUs set it",
    "ntasks-per-node": "the row's GPUs per node set it",
    "gpus-per-node": "the row's GPUs per node set it",
    "gpus": "the row's GPUs and GPUs per node set them",
    "signal": "perfgate handles the time limit's warning signal itself",
    "array": "perfgate submits one job per row",
    "wrap": "it would replace the batch script perfgate renders",
    "parsable": "submitit reads sbatch's usual answer for the job id",
    "test-only": "sbatch would submit nothing",
    "wait": "sbatch would block until the job ends",
    "hold": "the session would wait for a job nobody releases",
    "export": "perfgate passes the environment (--env, secrets) with sbatch's default; give --env",
    "help": "sbatch would print its help instead of submitting",
    "usage": "sbatch would print its usage instead of submitting",
    "version": "sbatch would print its version instead of submitting",
}
# A registry image as enroot and docker spell it: [USER@][REGISTRY[:PORT]#|/]PATH[:TAG][@DIGEST]
IMAGE_URI = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@#+-]*")


def _control(what: str, value: str, secret: bool = False) -> None:
    ch = charset.bad_char(value)
    if ch is not None:
        shown = "(a secret, not shown)" if secret else charset.shown(value)
        raise ConfigError(f"{what} {shown}: control character {ch!r} is not allowed")


def directive_value(what: str, value: object) -> None:
    """A value for a `#SBATCH --key=value` line: no control character, no backslash."""
    if isinstance(value, bool | int | float):
        return
    text = str(value)
    _control(what, text)
    if "\\" in text:
        raise ConfigError(
            f"{what} {charset.shown(text)}: a backslash is not allowed "
            "(sbatch reads it as an escape even inside quotes)"
        )


def sbatch_parameters(params: Mapping[str, Any]) -> None:
    """Every key and value submitit will write as an `#SBATCH` line (additional ones too)."""
    flat = dict(params)
    extra = flat.pop("additional_parameters", None) or {}
    flat.pop("setup", None)  # perfgate's own shell lines, checked in the rendered script
    for key, value in [*flat.items(), *extra.items()]:
        if not isinstance(key, str) or not SBATCH_KEY.fullmatch(key):
            raise ConfigError(
                f"sbatch option {charset.shown(key)}: an option name is lowercase letters, "
                "digits, '-' and '_' (e.g. --slurm-param mail-type=END)"
            )
        directive_value(f"sbatch option --{key.replace('_', '-')}", value)


def job_path(what: str, path: str, pyxis: bool) -> None:
    """A folder that reaches `#SBATCH --output` and, with pyxis, --container-mounts."""
    directive_value(what, path)
    if "%" in path:
        raise ConfigError(
            f"{what} {charset.shown(path)}: '%' is not allowed (sbatch reads it as a file-name "
            "pattern such as %j in --output)"
        )
    if pyxis and ("," in path or ":" in path):
        raise ConfigError(
            f"{what} {charset.shown(path)}: ',' and ':' are not allowed with pyxis "
            "(--container-mounts splits mounts at ',' and each mount at ':')"
        )


def image(what: str, value: str) -> None:
    """A container image: a squashfs path (any printable text) or a registry URI."""
    _control(what, value)
    if value.startswith(("/", "./", "../", "~")):
        return
    ref = value.split("://", 1)[1] if "://" in value else value
    if not IMAGE_URI.fullmatch(ref):
        raise ConfigError(
            f"{what} {charset.shown(value)}: not a squashfs path nor a registry image "
            "(letters, digits and . _ / : @ # + -)"
        )


def environment(env: Mapping[str, str], origin: str = "--env") -> None:
    """Names and values of what the ranks get; a secret's value is never shown."""
    for name, value in env.items():
        charset.check_length(origin, "name", name, limits.MAX_NAME_CHARS, "an environment name")
        charset.check_length(origin, name, str(value), limits.MAX_TEXT_CHARS, "a value")
        if not charset.ENV_NAME.fullmatch(name):
            raise ConfigError(f"{origin} {charset.shown(name)}: {charset.RULES[charset.ENV_NAME]}")
        _control(f"{origin} {name}=", str(value), secret=is_secret(name))


def mounts(values: Iterable[str]) -> None:
    """--container-mounts entries (already split at ',')."""
    for mount in values:
        _control("--container-mounts", mount)


def row(row_id: str, env: Mapping[str, str]) -> None:
    """A row built in code rather than read from a file gets the catalog's rules too."""
    charset.check_name("row", "id", row_id)
    environment(env, f"row {row_id} env")


def options(o: LaunchOptions) -> None:
    """Every user choice that reaches the script, the srun line or the environment."""
    for flag, value in (
        ("--partition", o.partition),
        ("--account", o.account),
        ("--qos", o.qos),
    ):
        if value is not None:
            directive_value(flag, value)
    for key, value in o.slurm_params.items():
        if not SBATCH_KEY.fullmatch(key):
            raise ConfigError(
                f"--slurm-param {charset.shown(key)}: an sbatch option name is lowercase "
                "letters, digits, '-' and '_' (e.g. mail-type=END)"
            )
        owned_slurm_param(key, value)
        directive_value(f"--slurm-param {key}=", value)
    if o.avoid_nodes:  # names from Slurm and the history: checked as any directive value
        directive_value("--exclude=", ",".join(o.avoid_nodes))
    charset.check_name("LaunchOptions", "job_name_prefix", o.job_name_prefix)
    charset.check_name("LaunchOptions", "mpi", o.mpi)
    for flag, img in (
        ("--container-image", o.container_image),
        ("--candidate-image", o.candidate_image),
    ):
        if img:
            image(flag, img)
    mounts(o.container_mounts)
    environment(o.env)
    for flag, value in (("--results-dir", o.results_dir), ("--finetune-data", o.finetune_data)):
        if value is not None:
            _control(flag, value)


def owned_slurm_param(key: str, value: object) -> None:
    """Refuse a --slurm-param perfgate or submitit owns (OWNED_SBATCH), also abbreviated:
    sbatch takes any unambiguous prefix of a long option (--out is --output)."""
    name = key.replace("_", "-")  # submitit writes mail_type as --mail-type
    owned = [o for o in OWNED_SBATCH if o.startswith(name)]
    if not owned:
        return
    given = f"--slurm-param {charset.shown(f'{key}={value}' if value is not True else key)}"
    exact = name if name in OWNED_SBATCH else None
    which = exact or owned[0]
    read_as = "" if exact else f" (--{name} abbreviates --{' or --'.join(owned)})"
    raise ConfigError(
        f"{given}: perfgate owns sbatch's --{which}{read_as}: {OWNED_SBATCH[which]}; leave it out"
    )


def script(text: str, shell_lines: Iterable[str]) -> None:
    """The rendered sbatch script runs exactly these shell lines and nothing else.

    The last line of defence: whatever a value held, a line the script would run that
    perfgate did not put there is refused before anything is submitted.
    """
    allowed = set(shell_lines)
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and line not in allowed:
            raise ConfigError(
                f"the sbatch script would run line {number} {charset.shown(line)}, which "
                "perfgate did not write: refusing to submit it"
            )
    if charset.bad_char(text.replace("\n", "")):
        raise ConfigError("the sbatch script holds a control character: refusing to submit it")
