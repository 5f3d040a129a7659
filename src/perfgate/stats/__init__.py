"""Statistics of step-time series: warm-up removal, run summaries, comparisons, the rule."""

from perfgate.stats.compare import compare_runs, compare_to_baseline, needs_more_pairs
from perfgate.stats.comparison import VERDICTS, Comparison, json_ready
from perfgate.stats.noise import (
    ALPHA,
    DEFAULT_NOISE,
    DEFAULT_PAIR_CV,
    DEFAULT_RUN_TO_RUN_CV,
    DEFAULT_TOLERANCE,
    PRIOR_DF,
    Noise,
)
from perfgate.stats.rule import sequential_alpha
from perfgate.stats.run import RunSummary, Window, parse_window, summarize_run

__all__ = [
    "ALPHA",
    "DEFAULT_NOISE",
    "DEFAULT_PAIR_CV",
    "DEFAULT_RUN_TO_RUN_CV",
    "DEFAULT_TOLERANCE",
    "PRIOR_DF",
    "VERDICTS",
    "Comparison",
    "Noise",
    "RunSummary",
    "Window",
    "compare_runs",
    "compare_to_baseline",
    "json_ready",
    "needs_more_pairs",
    "parse_window",
    "sequential_alpha",
    "summarize_run",
]
