"""Environment variables for the ranks: row env, --env-file, --env; secrets by name only.

Values of secrets (HF_TOKEN and the like, see perfgate.secrets) never enter a plan, a pickle
or a spec: the job carries their names, sbatch exports the submitting process's environment
to the job, and the job function hands the values to srun from its own environment.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping

from perfgate import inputs
from perfgate.errors import ConfigError
from perfgate.secrets import is_secret

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
    """(plain values, secret names) of what the ranks get: the row's env, then the user's."""
    merged = {**row_env, **user_env}
    plain = {k: str(v) for k, v in merged.items() if not is_secret(k)}
    return plain, tuple(sorted(k for k in merged if is_secret(k)))


def export_secrets(user_env: Mapping[str, str], environ: dict[str, str] | None = None) -> None:
    """Put secret values given on the command line into this process's environment.

    sbatch exports the submitter's environment to the job, so this is how a secret passed as
    --env HF_TOKEN=... reaches the ranks without being written into any file.
    """
    environ = os.environ if environ is None else environ  # type: ignore[assignment]
    for k, v in user_env.items():
        if is_secret(k):
            environ[k] = v
