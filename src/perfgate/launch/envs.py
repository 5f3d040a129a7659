"""Environment variables for the ranks: row env, --env-file, --env; only knobs by value.

Only performance knobs' values (perfgate.secrets.is_knob: NCCL_*, NVTE_*, ...) enter a plan,
the job's pickled context or a spec. Every other variable of --env/--env-file (secrets like
HF_TOKEN, NGC_KEY, DB_PASS, anything else) travels by name: export_env puts it in the
submitting process's environment, sbatch (or the local executor) hands that to the job, and
the job function to srun. A row's own non-knob variables come from its row (baselines/*.json,
in the repository already) in the job function; spec.json shows them as ***.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping

from perfgate import inputs
from perfgate.errors import ConfigError
from perfgate.secrets import hide, is_knob

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_name(name: str, origin: str) -> str:
    """The name when it is a valid environment variable name; a one-line error otherwise."""
    if not _NAME.match(name):
        raise ConfigError(f"{origin}: {name!r} is not a valid environment variable name")
    return name


def load_env_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a JSON object of NAME: value (e.g. seed 000's env_vars.json); values as strings."""
    try:
        data = json.loads(inputs.read_text(path, ConfigError))
    except OSError as e:
        raise ConfigError(f"{path}: cannot read env file ({e.strerror})") from None
    except ValueError as e:
        raise ConfigError(f"{path}: env file is not JSON ({e})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: env file must be a JSON object of NAME: value")
    out: dict[str, str] = {}
    for k, v in data.items():
        check_name(k, str(path))
        if isinstance(v, bool):
            v = "1" if v else "0"
        if not isinstance(v, (str, int, float)):
            raise ConfigError(f"{path}: field {k!r} is {v!r}; values must be strings or numbers")
        out[k] = str(v)
    return out


def parse_assignments(items: Iterable[str], origin: str = "--env") -> dict[str, str]:
    """NAME=VALUE strings as a dict; a bare NAME takes its value from the environment."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        check_name(name, origin)
        if not sep:
            if name not in os.environ:
                raise ConfigError(f"{origin}: {name} has no value and is not in the environment")
            value = os.environ[name]
        out[name] = value
    return out


def job_env(
    row_env: Mapping[str, str], user_env: Mapping[str, str]
) -> tuple[dict[str, str], tuple[str, ...]]:
    """(knob values, names passed by environment) of what the ranks get: the row's env, then
    the user's. The names are the user's variables that are not knobs (export_env)."""
    merged = {**row_env, **user_env}
    plain = {k: str(v) for k, v in merged.items() if is_knob(k)}
    return plain, tuple(sorted(k for k in user_env if not is_knob(k)))


def export_env(user_env: Mapping[str, str], environ: dict[str, str] | None = None) -> None:
    """Put the values of the user's variables that are not knobs into this process's
    environment, and have their values redacted from log text.

    sbatch exports the submitter's environment to the job (submitit's local executor starts
    it with it), so this is how --env NGC_KEY=... reaches the ranks without being written
    into any file.
    """
    environ = os.environ if environ is None else environ  # type: ignore[assignment]
    hidden = [k for k in user_env if not is_knob(k)]
    for k in hidden:
        environ[k] = user_env[k]
    hide(hidden)
