"""Launching rows: submitit jobs on Slurm (or locally), their lifecycle and their results."""

from perfgate.launch.planning import plan
from perfgate.launch.session import LaunchSession
from perfgate.launch.types import JobPlan, LaunchOptions

__all__ = ["JobPlan", "LaunchOptions", "LaunchSession", "plan"]
