"""The wheels the check carries to a GPU machine without a package index, set by set.

Standard library only: it runs before anything is installed, and scripts/gpu-wheels runs
`python -m gpucheck.wheels fetch` where an index is reachable. A set is one list file of
tools/gpucheck/wheels/ (`name==version`, `# sdist` where PyPI has no wheel and pip builds one
here); each stage installs its sets into a site folder of its own:

    common          every stage: perfgate's pytest plugin and its dependencies
    megatron_core   + Megatron-Core 0.19.2 (the megatron_core backend's pin)
    nemo2           + NeMo 2.7.3 on Megatron-Core 0.16.1 and what it imports (--nemo2)

Every refusal is a Refused whose message is one line saying what is missing and what to do.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

LISTS = Path(__file__).resolve().parent / "wheels"
SETS = ("common", "megatron_core", "nemo2")
STAGE_SETS = {"megatron_core": ("megatron_core", "common"), "nemo2": ("nemo2", "common")}
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_26_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)
PYTHON_TAG = "3.12"
TREE_LIMIT_MIB = 64.0  # what travels with the checkout to the GPU machine, wheels included


class Refused(Exception):
    """A check that cannot run here; the message is the one line to print."""


@dataclass(frozen=True)
class Pin:
    """One line of a wheel list: a distribution at an exact version."""

    name: str
    version: str
    sdist: bool = False  # no wheel on PyPI: pip builds one from the sdist

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
    """The pinned wheels of a list file (`name==version`, `# sdist` marks a built one)."""
    pins = []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line, _, comment = raw.partition("#")
        line = line.strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or not name.strip() or not version.strip():
            raise Refused(f"gpu-check: {path}:{number}: expected name==version, got {line!r}")
        pins.append(Pin(name.strip(), version.strip(), comment.strip() == "sdist"))
    return pins


def set_pins(name: str, lists: Path = LISTS) -> list[Pin]:
    """The pins of one set (its list file)."""
    return read_pins(lists / f"{name}.txt")


def all_pins(lists: Path = LISTS) -> list[Pin]:
    """Every set's pins, each distribution at each version once."""
    seen: dict[tuple[str, str], Pin] = {}
    for name in SETS:
        for pin in set_pins(name, lists):
            seen.setdefault((pin.key, pin.version), pin)
    return list(seen.values())


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


def fetch_command(python: str, pin: Pin, dest: Path) -> list[str]:
    """pip's command for one pin: a cp312 manylinux wheel, or one built from its sdist."""
    if pin.sdist:
        return [python, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest), str(pin)]
    cmd = [python, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps"]
    cmd += ["--only-binary=:all:", "--python-version", PYTHON_TAG, "--implementation", "cp"]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    return [*cmd, "-d", str(dest), str(pin)]


def fetch(dest: Path, python: str = sys.executable, lists: Path = LISTS) -> list[Path]:
    """Fetch every pin whose wheel dest lacks, prune the rest; the wheels. Idempotent."""
    dest.mkdir(parents=True, exist_ok=True)
    pins = all_pins(lists)
    _, missing = wheel_files(pins, dest)
    for pin in missing:
        proc = subprocess.run(
            fetch_command(python, pin, dest), capture_output=True, text=True, check=False
        )
        if proc.returncode:
            last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise Refused(f"gpu-wheels: pip could not fetch {pin}: {last}")
    for path in prune(pins, dest):
        print(f"gpu-wheels: removed {path.name} (not pinned)")
    return check_wheels(pins, dest)


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


def mib(paths: list[Path]) -> float:
    """Their size in MiB."""
    return sum(p.stat().st_size for p in paths) / 2**20


def main(argv: list[str] | None = None) -> int:
    """`python -m gpucheck.wheels fetch FOLDER`: fetch and prune every set; print the sizes."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "fetch":
        print("usage: python -m gpucheck.wheels fetch FOLDER", file=sys.stderr)
        return 2
    folder = Path(args[1])
    try:
        files = fetch(folder)
    except Refused as e:
        print(e, file=sys.stderr)
        return 1
    for name in SETS:
        got, _ = wheel_files(set_pins(name), folder)
        print(f"gpu-wheels: {name}: {len(got)} wheels, {mib(got):.1f} MiB")
    print(f"gpu-wheels: {len(files)} wheels, {mib(files):.1f} MiB in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
