"""GPU specs: peak dense TFLOP/s per precision class and GPUs per node.

Peaks are the dense (no sparsity) figures NVIDIA's llmb (DGX Cloud benchmarking) README uses
for MFU, so our MFU is comparable with theirs.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.errors import ConfigError

# Precision of a row -> which tensor-core peak MFU is measured against. Every FP8 flavour
# (per-tensor delayed/current scaling, MXFP8 blocks) runs on the FP8 tensor cores.
PRECISION_CLASS: dict[str, str] = {"bf16": "bf16", "fp8": "fp8", "mxfp8": "fp8", "nvfp4": "fp4"}


@dataclass(frozen=True)
class GpuSpec:
    """One GPU type: dense peaks in TFLOP/s per precision class, node size, memory."""

    name: str
    peak_tflops: dict[str, float]
    gpus_per_node: int
    memory_gib: float
    blackwell: bool

    def peak(self, precision: str) -> float:
        """Dense peak TFLOP/s/GPU for a row precision (bf16, fp8, mxfp8, nvfp4)."""
        if precision not in PRECISION_CLASS:
            known = ", ".join(sorted(PRECISION_CLASS))
            raise ConfigError(f"unknown precision {precision!r}; known: {known}")
        if precision == "mxfp8" and not self.blackwell:
            raise ConfigError(f"precision 'mxfp8' needs a Blackwell GPU, not {self.name!r}")
        cls = PRECISION_CLASS[precision]
        if cls not in self.peak_tflops:
            raise ConfigError(
                f"gpu {self.name!r} has no {cls} tensor-core peak (precision {precision!r})"
            )
        return self.peak_tflops[cls]


# Memory is the usable HBM per GPU as nvidia-smi reports it, rounded (for the report only).
GPUS: dict[str, GpuSpec] = {
    "h100": GpuSpec("h100", {"bf16": 989.0, "fp8": 1979.0}, 8, 80.0, False),
    "h200": GpuSpec("h200", {"bf16": 989.0, "fp8": 1979.0}, 8, 141.0, False),
    "b200": GpuSpec("b200", {"bf16": 2250.0, "fp8": 4500.0, "fp4": 9000.0}, 8, 180.0, True),
    "b300": GpuSpec("b300", {"bf16": 2250.0, "fp8": 4500.0, "fp4": 13500.0}, 8, 270.0, True),
    "gb200": GpuSpec("gb200", {"bf16": 2450.0, "fp8": 4900.0, "fp4": 9800.0}, 4, 186.0, True),
    "gb300": GpuSpec("gb300", {"bf16": 2450.0, "fp8": 4900.0, "fp4": 14700.0}, 4, 279.0, True),
}


def gpu(name: str) -> GpuSpec:
    """The spec of a GPU type by its lower-case name; a clear error lists the known ones."""
    try:
        return GPUS[name.lower()]
    except KeyError:
        raise ConfigError(f"unknown gpu {name!r}; known: {', '.join(GPUS)}") from None


def peak_tflops(gpu_name: str, precision: str) -> float:
    """Dense peak TFLOP/s per GPU for this GPU type and row precision."""
    return gpu(gpu_name).peak(precision)
