"""Launching rows: submitit jobs on Slurm (or locally), their lifecycle and failure diagnosis."""
