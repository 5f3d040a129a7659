"""Before anything runs: the interpreter, torch and the GPU, each refusal one line.

Standard library only (it runs before the wheels are installed; gpucheck.wheels has those).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

from gpucheck.wheels import Refused

TORCH_MIN = (2, 6)  # Megatron-Core 0.19.2 requires torch>=2.6.0 (its wheel metadata)
PYTHON = (3, 12)  # the wheels are cp312 builds (megatron-core, markupsafe)
GPU_ROWS = {"H100": "h100", "H200": "h200"}  # device-name token -> the catalog's GPU


def check_python(folder: str, version: tuple[int, int] | None = None) -> None:
    """Refused unless this is the Python the wheels found in folder are built for."""
    have = version or sys.version_info[:2]
    if tuple(have) != PYTHON:
        raise Refused(
            f"gpu-check: Python {have[0]}.{have[1]} runs this, the wheels in {folder} are "
            f"cp{PYTHON[0]}{PYTHON[1]} builds (give a Python {PYTHON[0]}.{PYTHON[1]} with torch: "
            "--python PATH)"
        )


PROBE = r"""
import json, sys
out = {"python": sys.version.split()[0]}
try:
    import torch
except Exception as e:
    out["error"] = f"{type(e).__name__}: {e}"
else:
    out["torch"] = torch.__version__
    out["cuda_build"] = torch.version.cuda
    out["cuda_available"] = torch.cuda.is_available()
    out["gpus"] = torch.cuda.device_count() if out["cuda_available"] else 0
    if out["gpus"]:
        out["gpu_name"] = torch.cuda.get_device_name(0)
print(json.dumps(out))
"""


# --cpu needs no CUDA facts: torch's version and whether it is installed, without importing
# it (2 CPU-seconds; each run imports it anyway, and says so if it cannot).
PROBE_CPU = r"""
import importlib.metadata, importlib.util, json, sys
out = {"python": sys.version.split()[0], "cuda_available": False, "gpus": 0}
if importlib.util.find_spec("torch") is None:
    out["error"] = "ModuleNotFoundError: No module named 'torch'"
else:
    out["torch"] = importlib.metadata.version("torch")
print(json.dumps(out))
"""


def probe(
    python: str = sys.executable, env: dict[str, str] | None = None, cpu: bool = False
) -> dict:
    """torch and GPU facts from a child interpreter (so this process holds no GPU context)."""
    script = PROBE_CPU if cpu else PROBE
    proc = subprocess.run(
        [python, "-c", script], capture_output=True, text=True, check=False, env=env, timeout=300
    )
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise Refused(f"gpu-check: {python} could not run the torch probe: {last}") from None


def torch_version(text: str) -> tuple[int, int]:
    """(major, minor) of a torch version string such as 2.11.0+cu130."""
    m = re.match(r"(\d+)\.(\d+)", text)
    if not m:
        raise Refused(f"gpu-check: cannot read the torch version {text!r}")
    return int(m[1]), int(m[2])


def check_torch(facts: dict, cpu: bool) -> str | None:
    """Refused for no torch, a torch outside 2.x >= 2.4, or no GPU (unless cpu); the GPU row."""
    if "torch" not in facts:
        raise Refused(
            f"gpu-check: torch is not importable by this Python ({facts.get('error', '?')}); "
            "the GPU machine's python3 has it, for --cpu use a venv with torch (.venv-bridge)"
        )
    major, minor = torch_version(facts["torch"])
    if major != TORCH_MIN[0] or minor < TORCH_MIN[1]:
        raise Refused(
            f"gpu-check: torch {facts['torch']} is not supported: Megatron-Core 0.19 needs "
            f"torch 2.x, {TORCH_MIN[0]}.{TORCH_MIN[1]} or newer"
        )
    if cpu:
        return None
    if not facts.get("gpus"):
        build = f"CUDA {facts['cuda_build']} build" if facts.get("cuda_build") else "a CPU build"
        raise Refused(
            f"gpu-check: no GPU visible to torch {facts['torch']} ({build}); "
            "--cpu runs the CPU check"
        )
    name = facts.get("gpu_name", "")
    for token, gpu in GPU_ROWS.items():
        if token in name.upper():
            return gpu
    raise Refused(
        f"gpu-check: no megatron_core row for {name!r}: rows exist for "
        f"{', '.join(GPU_ROWS.values())}"
    )
