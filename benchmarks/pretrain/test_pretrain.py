"""Pretraining rows of baselines/*.json: one test per row, the row id is the test id.

The perfgate plugin parametrizes `perfgate_row`, runs the row (or plans it with --dry-run, or
replays its logs with --replay) in the `perfgate_evaluation` fixture, and the verdict against
the stored baseline is asserted here. See README.md for the options.
"""

from perfgate.suite.outcome import assert_verdict

ROW_TASKS = ("pretrain",)


def test_pretrain(perfgate_row, perfgate_evaluation, perfgate_strict):
    assert_verdict(perfgate_evaluation, strict=perfgate_strict)
