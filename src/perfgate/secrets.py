"""Secrets and every other non-knob variable travel by environment only: recognise them,
mask their values in what perfgate writes, redact them from log text.

Two tests on a variable's name:
- is_secret: a credential by name (HF_TOKEN, WANDB_API_KEY): refused in rows and on the
  command line (export it in the shell);
- is_knob: a performance knob (KNOB_PREFIXES, KNOB_NAMES: NCCL_*, NVTE_*, CUDA_*, ...), the
  variables a run is compared by. Only knobs' values are recorded: in results.json, the
  report, the history, spec.json and the job's pickled context. Any other variable given by
  --env or --env-file reaches the job through the environment of the submitting process, and
  a row's own (from baselines/<gpu>.json) through the job function; its value is shown as ***.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence

_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL)", re.IGNORECASE
)
# Names that hold credentials more often than not (NGC_KEY, DB_PASS, SMTP_PW): never a knob,
# and their values are redacted from log text like secrets'.
_SENSITIVE_NAME = re.compile(
    r"(?:^|_)(?:KEY|PASS|PASSPHRASE|PW|AUTH|COOKIE|CERT|SIGNATURE)(?:_|$)", re.IGNORECASE
)
# Value shapes worth masking even when the name is innocent (e.g. pasted into a log line).
_SECRET_VALUE = re.compile(
    r"\b(hf_[A-Za-z0-9]{20,}|nvapi-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,})\b"
)
MASK = "***"

# Performance knobs: what NVIDIA's performance scripts and the rows of baselines/*.json set
# (NCCL, Transformer Engine, CUDA and its libraries, PyTorch, userbuffers, the OpenMP/MKL
# thread pools, NeMo and Megatron switches, the network stacks under NCCL: UCX, libfabric).
KNOB_PREFIXES = (
    "NCCL_",
    "NVTE_",
    "CUDA_",
    "CUBLAS_",
    "CUBLASLT_",
    "CUDNN_",
    "TORCH_",
    "TORCHINDUCTOR_",
    "PYTORCH_",
    "TRITON_",
    "UB_",
    "NVIDIA_",
    "NVSHMEM_",
    "OMP_",
    "MKL_",
    "TE_",
    "MEGATRON_",
    "NEMO_",
    "UCX_",
    "FI_",
)
KNOB_NAMES = frozenset({"TOKENIZERS_PARALLELISM", "TRANSFORMERS_OFFLINE", "HF_HUB_OFFLINE"})


def is_secret(name: str) -> bool:
    """True for environment variable names that hold credentials."""
    return bool(_SECRET_NAME.search(name))


def is_sensitive(name: str) -> bool:
    """True for names of credentials and names that usually hold one (NGC_KEY, DB_PASS)."""
    return is_secret(name) or bool(_SENSITIVE_NAME.search(name))


def is_knob(name: str) -> bool:
    """True for performance knobs, the only variables whose values perfgate records."""
    return name in KNOB_NAMES or (name.startswith(KNOB_PREFIXES) and not is_sensitive(name))


def recorded(env: Mapping[str, str]) -> dict[str, str]:
    """env as perfgate writes it down: knobs' values, MASK for every other variable's."""
    return {k: (str(v) if is_knob(k) else MASK) for k, v in env.items()}


def mask_env_args(args: Sequence[str]) -> list[str]:
    """A command line with the value of every --env NAME=VALUE that is not a knob masked."""
    out = list(args)
    for i, arg in enumerate(out):
        if arg.startswith("--env="):
            out[i] = "--env=" + _masked_assignment(arg.removeprefix("--env="))
        elif arg == "--env" and i + 1 < len(out):
            out[i + 1] = _masked_assignment(out[i + 1])
    return out


def _masked_assignment(item: str) -> str:
    name, sep, _ = item.partition("=")
    return item if not sep or is_knob(name.strip()) else f"{name}={MASK}"


def split_env(env: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """Split env into (plain values, names of secrets) so values of secrets are never stored."""
    plain = {k: v for k, v in env.items() if not is_secret(k)}
    return plain, sorted(k for k in env if is_secret(k))


_HIDDEN: set[str] = set()  # names whose values redact() masks too (hide())


def hide(names: Iterable[str]) -> None:
    """Mask these variables' values (from the environment) in log text too (redact)."""
    _HIDDEN.update(names)


def redact(text: str, environ: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> str:
    """Mask every secret value found in the environment, known token shapes and extra values.

    Secret values: of credential-like names (is_sensitive) and of the variables hide() named.
    """
    environ = os.environ if environ is None else environ
    values = {v for k, v in environ.items() if (k in _HIDDEN or is_sensitive(k)) and len(v) >= 6}
    values.update(v for v in extra if v and len(v) >= 6)
    for v in sorted(values, key=len, reverse=True):
        text = text.replace(v, MASK)
    return _SECRET_VALUE.sub(MASK, text)
