"""Statistics of step-time series: warm-up removal, run summaries, comparisons, the rule."""

from perfgate.stats.compare import (
    ALPHA,
    DEFAULT_NOISE,
    DEFAULT_PAIR_CV,
    DEFAULT_RUN_TO_RUN_CV,
    DEFAULT_TOLERANCE,
    PRIOR_DF,
    VERDICTS,
    Comparison,
    Noise,
    compare_runs,
    compare_to_baseline,
    json_ready,
    needs_more_pairs,
    parse_window,
)
from perfgate.stats.rule import sequential_alpha
from perfgate.stats.run import RunSummary, Window, summarize_run

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
