"""NeMo 2's Megatron timers, printed after each progress line by every rank together.

The recipe sets `trainer.strategy.megatron_log_level = 1`: Megatron-Core's level-1 timers
(forward-backward, all-grads-sync, params-all-gather, the optimizer's) then run. NeMo 2.x's
own printer cannot print them on a multi-GPU job: its ProgressPrinter is disabled on every rank
but global rank 0 (nemo/lightning/pytorch/strategies/utils.py fix_progress_bar), yet reading
the timers (Timers.get_all_timers_string) is an all-gather every rank must join (read in NeMo
2.7.3 / Megatron-Core 0.16.1 here; at level 0 no timer is registered and nothing is gathered).
So perfgate's step callback takes the Timers object from the strategy once training starts
(the model keeps its reference in model.config.timers, so the timers still run), lends it to
the optimizer's config before the optimizer is built (NeMo gives it only to the model's), and
after every step has all ranks gather it; rank 0 prints the block right after its progress
line, where perfgate.logs.phases reads it. Pure Python: no NeMo or torch import here.
"""

from __future__ import annotations

import sys
from typing import Any


class TimerPrinter:
    """The strategy's Megatron timers, gathered by every rank and printed by rank 0."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.timers: Any = None
        self.failed: str | None = None

    def lend_to_optimizer(self, strategy: Any, module: Any) -> None:
        """Give the optimizer's Megatron config the strategy's timers (before it is built)."""
        timers = getattr(strategy, "timers", None)
        config = getattr(getattr(module, "optim", None), "config", None)
        if timers is not None and getattr(config, "timers", False) is None:
            config.timers = timers

    def adopt(self, strategy: Any) -> None:
        """Take the timers from the strategy when any is timed (level >= 1): NeMo's rank-0-only
        printer must not start a gather the other ranks never join."""
        timers = getattr(strategy, "timers", None)
        if timers is None or getattr(timers, "_log_level", 0) < 1:
            return
        self.timers = timers
        strategy.timers = None

    def after_step(self) -> None:
        """Every rank gathers this step's times (a collective); rank 0 prints the block."""
        if self.timers is None:
            return
        text = self.timers.get_all_timers_string(names=None, normalizer=1.0, reset=True)
        if text and self.rank == 0:
            print(text, flush=True)
            sys.stdout.flush()
