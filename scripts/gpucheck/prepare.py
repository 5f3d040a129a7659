"""Before anything runs: the carried wheels, the interpreter, torch and the GPU, each a line.

Standard library only (it runs before the wheels are installed, and scripts/gpu-wheels calls
`python -m gpucheck.prepare prune` to keep one version of each pinned wheel). Every refusal
is a Refused whose message is one line saying what is missing and what to do.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

TORCH_MIN = (2, 6)  # Megatron-Core 0.19.2 requires torch>=2.6.0 (its wheel metadata)
PYTHON = (3, 12)  # the wheels are cp312 builds (megatron-core, markupsafe)
GPU_ROWS = {"H100": "h100", "H200": "h200"}  # device-name token -> the catalog's GPU


class Refused(Exception):
    """A check that cannot run here; the message is the one line to print."""


@dataclass(frozen=True)
class Pin:
    """One line of scripts/gpu-wheels.txt: a distribution at an exact version."""

    name: str
    version: str

    @property
    def key(self) -> str:
        """The name as wheel file names spell it (PEP 427: lower case, runs of -_. as _)."""
        return normalize(self.name)

    def __str__(self) -> str:
        return f"{self.name}=={self.version}"


def normalize(name: str) -> str:
    """A distribution name in wheel-file form."""
    return re.sub(r"[-_.]+", "_", name).lower()


def read_pins(path: Path) -> list[Pin]:
    """The pinned wheels of a list file (`name==version`, # comments)."""
    pins = []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or not name.strip() or not version.strip():
            raise Refused(f"gpu-check: {path}:{number}: expected name==version, got {line!r}")
        pins.append(Pin(name.strip(), version.strip()))
    return pins


def wheel_of(path: Path) -> tuple[str, str]:
    """(normalized name, version) of a wheel file name."""
    parts = path.name.split("-")
    return normalize(parts[0]), parts[1] if len(parts) > 1 else ""


def wheel_files(pins: list[Pin], folder: Path) -> tuple[list[Path], list[Pin]]:
    """(the wheel of each pin found in folder, the pins without one)."""
    found: dict[tuple[str, str], Path] = {}
    for path in sorted(folder.glob("*.whl")) if folder.is_dir() else []:
        found[wheel_of(path)] = path
    files, missing = [], []
    for pin in pins:
        path = found.get((pin.key, pin.version))
        if path:
            files.append(path)
        else:
            missing.append(pin)
    return files, missing


def check_wheels(pins: list[Pin], folder: Path) -> list[Path]:
    """The wheels to install; Refused naming every missing one."""
    files, missing = wheel_files(pins, folder)
    if missing:
        names = ", ".join(str(p) for p in missing)
        raise Refused(
            f"gpu-check: missing wheels in {folder}: {names} (run scripts/gpu-wheels where a "
            "package index is reachable, then carry that folder)"
        )
    return files


def prune(pins: list[Pin], folder: Path) -> list[Path]:
    """Delete wheels in folder that no pin names (other versions): one version of each."""
    wanted = {(p.key, p.version) for p in pins}
    removed = [p for p in sorted(folder.glob("*.whl")) if wheel_of(p) not in wanted]
    for path in removed:
        path.unlink()
    return removed


def check_python(version: tuple[int, int] | None = None) -> None:
    """Refused unless this is the Python the wheels were built for."""
    have = version or sys.version_info[:2]
    if tuple(have) != PYTHON:
        raise Refused(
            f"gpu-check: Python {have[0]}.{have[1]} runs this, the carried wheels are for "
            f"{PYTHON[0]}.{PYTHON[1]} (run it with the GPU machine's python3, or --python)"
        )


def install(files: list[Path], target: Path, python: str = sys.executable) -> float:
    """pip install the wheels, without an index or dependencies, into target; returns seconds."""
    start = time.monotonic()
    cmd = [python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target"]
    # Byte-compiled where PYTHONDONTWRITEBYTECODE is set: every launch would compile what it
    # imports again. Elsewhere the first process to import a module writes its .pyc, and only
    # the part of Megatron-Core a run imports is compiled (3 of 4 CPU-seconds saved).
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        cmd.insert(-1, "--no-compile")
    proc = subprocess.run(
        [*cmd, str(target), *map(str, files)], capture_output=True, text=True, check=False
    )
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise Refused(f"gpu-check: pip could not install the wheels into {target}: {last}")
    return time.monotonic() - start


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


def main(argv: list[str] | None = None) -> int:
    """`python -m gpucheck.prepare prune FOLDER LIST`: keep only the pinned wheels; print size."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3 or args[0] != "prune":
        print("usage: python -m gpucheck.prepare prune FOLDER LIST", file=sys.stderr)
        return 2
    folder, pins = Path(args[1]), read_pins(Path(args[2]))
    try:
        for path in prune(pins, folder):
            print(f"gpu-wheels: removed {path.name} (not pinned)")
        files = check_wheels(pins, folder)
    except Refused as e:
        print(e, file=sys.stderr)
        return 1
    size = sum(p.stat().st_size for p in files)
    print(f"gpu-wheels: {len(files)} wheels, {size / 2**20:.1f} MiB in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
