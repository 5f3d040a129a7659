"""The environment of a workload rank: NVIDIA's defaults, the site's, the row's, the user's.

Order, later wins:
  1. the defaults NVIDIA's performance scripts set for this backend, GPU and layout;
  2. the environment the rank inherited (the site's sbatch/srun/container settings);
  3. the row's `env` (baselines/<gpu>.json);
  4. the user's `--env` / `--env-file` (spec.env);
  5. perfgate's own variables (RANK, WORLD_SIZE, LOCAL_RANK, PERFGATE_*).
Secrets are only ever inherited (2): the spec never holds them. Nor does it hold the value of
any variable that is not a performance knob: spec.json shows it as *** (perfgate.secrets),
and the rank inherits its value from the job, which set it (perfgate.launch.jobcontext).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfgate import hardware
from perfgate.catalog.rows import Row
from perfgate.errors import ConfigError
from perfgate.secrets import MASK, is_secret


def _checked(origin: str, env: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    if not isinstance(env, Mapping):
        raise ConfigError(f"{origin}: must be an object of NAME: value, not {type(env).__name__}")
    for name, value in env.items():
        if not isinstance(name, str) or not name or "=" in name:
            raise ConfigError(f"{origin}: invalid environment variable name {name!r}")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ConfigError(f"{origin}.{name}: value {value!r} must be a string or a number")
        if is_secret(name):
            raise ConfigError(
                f"{origin}.{name}: secrets travel by the job's environment only, not in specs"
            )
        if value != MASK:  # *** : the value is in the environment the rank inherited
            out[name] = str(value)
    return out


def merge_env(
    inherited: Mapping[str, str],
    defaults: Mapping[str, str] | None = None,
    row_env: Mapping[str, Any] | None = None,
    user_env: Mapping[str, Any] | None = None,
    fixed: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a rank, in the documented order (later wins)."""
    env = dict(defaults or {})
    env.update(inherited)
    env.update(_checked("row.env", row_env or {}))
    env.update(_checked("spec.env", user_env or {}))
    env.update(fixed or {})
    return env


def applied_env(
    inherited: Mapping[str, str],
    defaults: Mapping[str, str] | None = None,
    row_env: Mapping[str, Any] | None = None,
    user_env: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """The variables whose value differs from what the rank inherited (for the record)."""
    merged = merge_env(inherited, defaults, row_env, user_env)
    return {k: v for k, v in merged.items() if inherited.get(k) != v and not is_secret(k)}


def nvidia_defaults(row: Row, overrides: Mapping[str, Any]) -> dict[str, str]:
    """The variables NVIDIA's NeMo 2.x performance scripts set for this row's GPU and layout.

    From scripts/performance/executors.py (PERF_ENV_VARS) and NeMo's PerfEnvPlugin: they must
    be in the environment before CUDA and NCCL start, so the workload sets them before it
    imports torch.
    """
    gpu, tp, cp, pp = row.gpu, row.tp, row.cp, row.pp
    env = {
        "TORCH_NCCL_AVOID_RECORD_STREAMS": "1",
        "TOKENIZERS_PARALLELISM": "False",
        "NCCL_NVLS_ENABLE": "0",
        "NVTE_FLASH_ATTN": "1",
        "NVTE_FUSED_ATTN": "1",
        "NEMO_LOG_MEMORY_USAGE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        # PerfEnvPlugin: LayerNorm SM margin so DP communication overlaps, NCCL priority.
        "NVTE_FWD_LAYERNORM_SM_MARGIN": "16",
        "NVTE_BWD_LAYERNORM_SM_MARGIN": "16",
        "TORCH_NCCL_HIGH_PRIORITY": "1",
    }
    if gpu != "b200":  # NVIDIA disables it on B200 ("causes an unexpected error")
        env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    if gpu in ("gb200", "gb300"):
        env["NCCL_NET_GDR_LEVEL"] = "PHB"  # NCCL <= 2.25
        env["NCCL_NET_GDR_C2C"] = "1"  # NCCL >= 2.26
    if tp > 1 or cp > 1:  # program-order kernel launch for TP/CP overlap
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = "32" if hardware.gpu(gpu).blackwell else "1"
    if pp > 1:
        env["NCCL_P2P_NET_CHUNKSIZE"] = "2097152"
    if overrides.get("trainer.strategy.ddp.nccl_ub"):  # user-buffer registration
        env["NCCL_NVLS_ENABLE"] = "1"
        env["NCCL_CTA_POLICY"] = "1"
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if overrides.get("model.config.enable_cuda_graph"):
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    return env
