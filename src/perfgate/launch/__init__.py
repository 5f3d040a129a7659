"""Launching rows: submitit jobs on Slurm (or locally), their lifecycle and failure diagnosis."""

from perfgate.launch.planning import plan
from perfgate.launch.session import LaunchSession
from perfgate.launch.types import (
    CAUSES,
    Diagnosis,
    JobPlan,
    JobStatus,
    LaunchOptions,
    RunRecord,
    RunResult,
)

__all__ = [
    "CAUSES",
    "Diagnosis",
    "JobPlan",
    "JobStatus",
    "LaunchOptions",
    "LaunchSession",
    "RunRecord",
    "RunResult",
    "plan",
]
