"""Verdicts on rows: one run against its stored baseline (single), A/B pairs (paired).

The statistical decision under every verdict (a slowdown, its interval, the tolerance ->
PASS / REGRESSION / IMPROVEMENT / INCONCLUSIVE) is one of perfgate.stats.rule.RULES: it sits
below this package because the row history (perfgate.history) and the A/B loop inside the
job decide with it too. This package turns that decision into a row's verdict.
"""

from perfgate.verdicts.single import (
    CONVENTIONS,
    DEFAULT_TOLERANCE,
    IMPROVEMENT,
    INCONCLUSIVE,
    INFRA,
    NO_BASELINE,
    PASS,
    REGRESSION,
    SHIFT,
    UNCONFIRMED,
    VERDICTS,
    WARN,
    Evaluation,
    Measured,
    convention_of,
    evaluate,
    infra,
    infra_text,
    measure,
    mode_label,
    throughput,
    tolerance_of,
    verdict_line,
)

__all__ = [
    "CONVENTIONS",
    "DEFAULT_TOLERANCE",
    "IMPROVEMENT",
    "INCONCLUSIVE",
    "INFRA",
    "NO_BASELINE",
    "PASS",
    "REGRESSION",
    "SHIFT",
    "UNCONFIRMED",
    "VERDICTS",
    "WARN",
    "Evaluation",
    "Measured",
    "convention_of",
    "evaluate",
    "infra",
    "infra_text",
    "measure",
    "mode_label",
    "throughput",
    "tolerance_of",
    "verdict_line",
]
