"""perfgate.workload.nemo2.timers with stand-ins for NeMo's strategy, module and Megatron's
Timers: who gathers, who prints, and that NeMo's rank-0-only printer never sees the timers."""

from __future__ import annotations

from types import SimpleNamespace

from perfgate.logs.phases import parse_phase_text
from perfgate.workload.nemo2.timers import TimerPrinter


class FakeTimers:
    """Megatron's Timers as far as the printer uses them: a level and a collective read."""

    def __init__(self, level: int) -> None:
        self._log_level = level
        self.gathers: list[dict] = []

    def get_all_timers_string(self, names=None, normalizer=1.0, reset=True, barrier=False):
        self.gathers.append({"names": names, "normalizer": normalizer, "reset": reset})
        return (
            "(min, max) time across ranks (ms):\n"
            "    forward-backward ...............................: (30.00, 31.50)"
        )


def test_every_rank_gathers_rank_zero_prints_after_its_progress_line(capsys):
    timers = FakeTimers(1)
    printers = [TimerPrinter(rank) for rank in range(2)]
    strategies = [SimpleNamespace(timers=timers) for _ in printers]
    for p, s in zip(printers, strategies, strict=True):
        p.adopt(s)
        assert s.timers is None  # NeMo's ProgressPrinter (rank 0 alone) finds none to gather
    print("Training epoch 0, iteration 7/19 | global_step: 7 | train_step_timing in s: 0.05")
    for p in printers:
        p.after_step()
    assert len(timers.gathers) == 2  # both ranks joined the all-gather
    assert timers.gathers[0] == {"names": None, "normalizer": 1.0, "reset": True}
    out = capsys.readouterr().out
    assert out.count("time across ranks") == 1  # printed once, by rank 0
    found = parse_phase_text(out)
    assert found is not None and found.steps == (7,)
    assert found.phases == {"forward-backward": (0.0315,)}


def test_at_level_zero_nothing_is_taken_or_gathered():
    timers = FakeTimers(0)
    strategy = SimpleNamespace(timers=timers)
    p = TimerPrinter(0)
    p.adopt(strategy)
    p.after_step()
    assert strategy.timers is timers and timers.gathers == []


def test_the_optimizer_config_borrows_the_timers_only_when_it_has_none():
    timers = FakeTimers(1)
    mine = object()
    empty = SimpleNamespace(optim=SimpleNamespace(config=SimpleNamespace(timers=None)))
    taken = SimpleNamespace(optim=SimpleNamespace(config=SimpleNamespace(timers=mine)))
    for module in (empty, taken, SimpleNamespace()):
        TimerPrinter(0).lend_to_optimizer(SimpleNamespace(timers=timers), module)
    assert empty.optim.config.timers is timers and taken.optim.config.timers is mine
