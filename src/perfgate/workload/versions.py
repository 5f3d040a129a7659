"""The software and hardware a workload ran on, measured inside the job."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from importlib import metadata

# distribution name -> key in the record
PACKAGES = {
    "nemo_toolkit": "nemo",
    "megatron-core": "megatron_core",
    "megatron-bridge": "megatron_bridge",
    "nemo_automodel": "nemo_automodel",
    "transformer_engine": "transformer_engine",
    "transformer-engine": "transformer_engine",
    "torch": "torch",
    "lightning": "lightning",
    "nemo_run": "nemo_run",
}


def package_versions() -> dict[str, str]:
    """Installed versions of the NeMo stack, read from package metadata (imports nothing)."""
    out = {"python": sys.version.split()[0]}
    for dist, key in PACKAGES.items():
        try:
            out[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


def torch_versions() -> dict[str, str]:
    """CUDA, cuDNN, NCCL and GPU facts from torch (call after CUDA is initialised)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {}
    out = {"cuda": str(torch.version.cuda)} if torch.version.cuda else {}
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    if cudnn:
        out["cudnn"] = str(cudnn)
    if torch.cuda.is_available():
        nccl = torch.cuda.nccl.version()
        out["nccl"] = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)
        out["gpu_name"] = torch.cuda.get_device_name()
        out["gpus_visible"] = str(torch.cuda.device_count())
    return out


def driver_version(timeout_s: float = 10.0) -> str | None:
    """The NVIDIA driver version from nvidia-smi, or None where there is none."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run(
            [smi, "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        ).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out[0] if out else None


def job_versions(world_size: int) -> dict[str, str]:
    """Everything above in one flat record, plus the GPU count of the job."""
    out = package_versions()
    out.update(torch_versions())
    driver = driver_version()
    if driver:
        out["driver"] = driver
    out["gpu_count"] = str(world_size)
    return out


def main(argv: list[str] | None = None) -> int:
    """`python -m perfgate.workload.versions [WORLD_SIZE]`: print job_versions() as JSON.

    For backends that train in a child process: the versions are measured by the same
    interpreter the child uses, with torch imported, without holding a GPU afterwards.
    """
    # torch_versions reads torch from sys.modules; without torch the rest is still reported.
    with contextlib.suppress(ImportError):
        import torch  # noqa: F401

    args = sys.argv[1:] if argv is None else argv
    print(json.dumps(job_versions(int(args[0]) if args else 1), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
