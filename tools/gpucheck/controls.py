"""Negative controls: each check run on an input known to be wrong must fail (every run, CPU too).

A check that passes everything proves nothing. Each control feeds its check the same run's
data with one known fault, sized to be caught at the check's own tolerance on any machine:

timers  a real clock in the measure process that stops at the start of the step's last
        micro-batch, read without a device sync: on a GPU the host is still queueing work
        (an unsynchronised reading), on CPU it leaves out that micro-batch's work (a clock
        that omits part of the step). Against the device clock of the same steps it is short
        by at least 1/num_microbatches of the step: the timers check must fail.
flops   perfgate's count with one known term left out (the output layer's logits,
        6 s h V per sample, the term some formulas forget): the FLOPs check must fail.
log     rank 0's real log text with one steady step's time moved by one unit of its printed
        resolution, away from steps.json, then parsed again: the log check must fail.

A control's status is "pass" when its check failed ("caught"), "fail" when the check passed
the faulty input: then the check cannot fail and its own pass means nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from gpucheck import checks
from perfgate.logs import parse_text
from perfgate.models import ModelArch

# The step time as each log format prints it: (pattern of the number, how it is printed).
PRINTED = {
    "megatron": (re.compile(r"(elapsed time per iteration \(ms\): )([0-9.]+)"), 1000.0),
    "nemo2": (re.compile(r"(train_step_timing in s: )([0-9.eE+-]+)"), 1.0),
}


def caught(check: dict[str, Any], fault: str, **facts: Any) -> dict[str, Any]:
    """A control's record: its check's verdict on the faulty input, and whether it failed."""
    hit = check.get("status") == "fail"
    return {
        "status": "pass" if hit else "fail",
        "caught": hit,
        "fault": fault,
        "check_on_fault": check,
        **facts,
    }


def timers_control(control_s: Sequence[float], device_s: Sequence[float], clock: str) -> dict:
    """The timers check on a clock read at the last micro-batch's start, no device sync."""
    check = checks.timer_check(list(control_s), list(device_s), clock)
    short = [1 - c / d for c, d in zip(control_s, device_s, strict=False) if d > 0]
    return caught(
        check,
        "a clock stopped at the start of the step's last micro-batch, read without a device sync",
        median_short_by=sorted(short)[len(short) // 2] if short else None,
    )


def logits_term(arch: ModelArch, seq_len: int, gbs: int, padded_vocab: int) -> float:
    """The output layer's training FLOPs of one step (6 s h V per sample)."""
    return 6.0 * seq_len * arch.hidden_size * padded_vocab * gbs


def flops_control(
    arch: ModelArch, seq_len: int, gbs: int, padded_vocab: int, measured: dict, b_layers: int
) -> dict:
    """The FLOPs check on perfgate's count less the logits term."""
    term = logits_term(arch, seq_len, gbs, padded_vocab)
    ours = checks.per_step_flops(arch, seq_len, gbs, 1)
    faulty = {c: v - term for c, v in ours.items()}
    check = checks.flops_check(arch, seq_len, gbs, padded_vocab, measured, b_layers, faulty)
    return caught(
        check,
        "perfgate's count without the output layer's logits",
        term_step=term,
        term_share=term / ours["megatron"],
    )


def shift_line(text: str, fmt: str, index: int, host_s: float) -> tuple[str, float] | None:
    """The log with the index-th step line's time moved one printed unit away from host_s."""
    pattern, scale = PRINTED[fmt]
    lines = text.splitlines(keepends=True)
    seen = -1
    for number, line in enumerate(lines):
        m = pattern.search(line)
        if not m:
            continue
        seen += 1
        if seen != index:
            continue
        printed = float(m.group(2)) / scale
        unit = checks.print_unit(fmt, printed)
        shifted = printed + math.copysign(unit, printed - host_s or 1.0)
        value = f"{shifted * scale:.1f}" if fmt == "megatron" else f"{shifted:.4}"
        lines[number] = line[: m.start(2)] + value + line[m.end(2) :]
        return "".join(lines), shifted
    return None


def log_control(text: str, fmt: str | None, steps: Sequence[int], host: Sequence[float]) -> dict:
    """The log check on rank 0's text with one steady step shifted by one printed unit."""
    if fmt not in PRINTED or len(host) < 2:
        return {"status": "fail", "caught": False, "why": f"no step times to shift ({fmt})"}
    index = checks.steady_window(host)[0]
    shifted = shift_line(text, fmt, index, host[index])
    if shifted is None:
        return {"status": "fail", "caught": False, "why": f"no step line {index} in the log"}
    series = parse_text(shifted[0], "<shifted log>")
    log_steps = [s.step for s in series.steps]
    log_s = [s.step_time_s for s in series.steps]
    check = checks.log_check(steps, host, log_steps, log_s, series.format)
    return caught(
        check,
        f"step {steps[index]}'s printed time moved by one unit of its resolution",
        step=steps[index],
        printed_shifted_s=shifted[1],
    )
