"""Component versions a training log states itself: the NGC container banner, NCCL's version
line, Transformer Engine's attention config, nvidia-smi's header, CUDA's forward-compat notice.

Neither Megatron-Bridge nor Automodel prints versions at start-up; these lines are what a
job's log holds (with NCCL_DEBUG=INFO or VERSION, NVTE_DEBUG=1, a job script that runs
nvidia-smi). Keys are those the workload measures itself (perfgate.workload.versions: torch,
nccl, cudnn, transformer_engine, driver), plus container_release/container_build (the banner),
flash_attn, driver_cuda (the newest CUDA the driver supports) and cuda_compat. The first line
of each kind wins. Verbatim lines and sources: tests/data/reference/log_formats.md section 8.
Pure stdlib.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from perfgate.errors import LogParseError
from perfgate.logs.scan import LineScanner, open_log

MARKERS = (
    b"NCCL version",
    b"PyTorch Version",
    b"NVIDIA Release",
    b"transformer_engine_version",
    b"Driver Version",
    b"driver version",
    b"cudaDriverVersion",
)
_VERSION = r"([0-9][0-9A-Za-z.+_-]{0,63})"
# (regex, keys of its groups in order); a group that did not match sets nothing.
_LINES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    # `NCCL version 2.27.7+cuda13.0`, bare (NCCL_DEBUG=VERSION, NCCL <= 2.21) or after
    # `host:pid:tid [dev] NCCL INFO `; the +cuda part is NCCL's build, not the job's CUDA.
    (re.compile(r"NCCL version (\d+\.\d+\.\d+)"), ("nccl",)),
    (re.compile(r"NCCL INFO cudaDriverVersion (\d{4,6})\b"), ("driver_cuda",)),
    (re.compile(r"^\s*PyTorch Version " + _VERSION), ("torch",)),
    (
        re.compile(r"NVIDIA Release (\d\d\.\d\d[0-9A-Za-z.-]*)? ?\(build (\d+)\)"),
        ("container_release", "container_build"),
    ),
    (re.compile(r"'transformer_engine_version': '([^']{1,64})'"), ("transformer_engine",)),
    (re.compile(r"'cudnn_version': '(\d[^']{0,63})'"), ("cudnn",)),
    (re.compile(r"'flash_attn_version': '(\d[^']{0,63})'"), ("flash_attn",)),
    (
        re.compile(r"Driver Version: (\d+(?:\.\d+)+)\s+CUDA Version: (\d+\.\d+)"),
        ("driver", "driver_cuda"),
    ),
    # `Using CUDA 12.9 driver version 575.51.03 with kernel driver version 570.133.20.`
    (
        re.compile(
            r"Using CUDA (\d+\.\d+) driver version ([\d.]+?) with kernel driver version "
            r"(\d+(?:\.\d+)+)"
        ),
        ("cuda_compat", "cuda_compat_driver", "driver"),
    ),
)


def _driver_cuda(value: str) -> str:
    """NCCL's cudaDriverVersion 12080 as CUDA 12.8."""
    v = int(value)
    return f"{v // 1000}.{(v % 1000) // 10}"


def versions_of_lines(lines: Iterable[str]) -> dict[str, str]:
    """The component versions the lines state (first of each kind)."""
    out: dict[str, str] = {}
    for line in lines:
        for regex, keys in _LINES:
            m = regex.search(line)
            if m is None:
                continue
            for key, value in zip(keys, m.groups(), strict=True):
                if not value or key in out:
                    continue
                # NCCL states the driver's CUDA as an integer (12080), nvidia-smi as 12.8
                integer = key == "driver_cuda" and value.isdigit()
                out[key] = _driver_cuda(value) if integer else value
    return out


def versions_of_files(paths: Sequence[str | Path]) -> dict[str, str]:
    """The component versions stated in these logs (the first file stating a kind wins)."""
    out: dict[str, str] = {}
    for path in paths:
        try:
            scanner = LineScanner(open_log(str(path)), origin=str(path))
            scanner.narrow(MARKERS)
            found = versions_of_lines(scanner)
        except (OSError, LogParseError):
            continue
        for key, value in found.items():
            out.setdefault(key, value)
    return out
