"""How every number is printed for people: the report, the terminal summary and the CLI.

Step times and other measurements to 4 significant digits, percentages to 1 decimal, tokens/s
as integers, FLOPs in scientific notation. JSON output keeps full precision; only text for
people goes through here, so one float never prints as 5.675800000000001.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

# Keys (of CLI output and records) whose values are fractions shown as percentages.
PERCENT_KEYS = (
    "mfu",
    "cv",
    "drift",
    "delta",
    "ci_low",
    "ci_high",
    "resolution",
    "tolerance",
    "detectable",
    "alpha",
    "ci_level",
    "spike_fraction",
)


def sig(x: float, digits: int = 4) -> str:
    """x to `digits` significant digits, without an exponent and without trailing zeros."""
    if x is None or isinstance(x, bool):
        return str(x)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    if abs(x) >= 1e15 or abs(x) < 1e-4:
        return f"{x:.{digits - 1}e}"
    decimals = digits - 1 - math.floor(math.log10(abs(x)))
    if decimals <= 0:
        return f"{round(x, decimals):.0f}"
    text = f"{x:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def seconds(x: float | None, digits: int = 4) -> str:
    """A duration in seconds: '5.551 s' (empty for None)."""
    return "" if x is None else f"{sig(x, digits)} s"


def pct(x: float | None, signed: bool = False, decimals: int = 1) -> str:
    """A fraction as a percentage with 1 decimal: '+27.3%' (empty for None or NaN)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:+.{decimals}%}" if signed else f"{x:.{decimals}%}"


def integer(x: float | None) -> str:
    """A rate such as tokens/s: '6,136' (empty for None)."""
    return "" if x is None else f"{x:,.0f}"


def flops(x: float) -> str:
    """A FLOP count: '4.216e+14'."""
    return sig(x) if abs(x) < 1e4 else f"{x:.3e}"


def plain(key: str, value: Any) -> str:
    """One value of a CLI result for people, formatted by what its key names."""
    if value is None:
        return "-"
    if isinstance(value, (bool, str)):
        return str(value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {plain(str(k), v)}" for k, v in value.items()) or "-"
    if isinstance(value, Sequence):
        return ", ".join(plain(key, v) for v in value) or "-"
    if isinstance(value, int):
        return f"{value:,}" if "tokens" in key else str(value)
    if not isinstance(value, float):
        return str(value)
    if key in PERCENT_KEYS or key.endswith("_fraction"):
        return pct(value, signed=key in ("delta", "ci_low", "ci_high", "drift"))
    if "flops_per" in key:
        return flops(value)
    if "tokens" in key:
        return integer(value)
    return sig(value)
