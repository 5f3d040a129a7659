"""A new baseline's runs against the noise rule (#29): refused only when even heavy-tailed
noise of the row's prior sigma would not spread them so; F's upper tail is exact."""

from __future__ import annotations

import pytest

from perfgate.stats.dist import f_sf
from perfgate.stats.noise import runs_disagree
from perfgate.stats.priors import MEGATRON_CI, PRODUCTION


@pytest.mark.parametrize(
    ("x", "d1", "d2", "p"),
    [(1.0, 2, 2, 0.5), (3.0, 2, 2, 0.25), (3.98, 2, 11, 0.05), (4.61, 2, float("inf"), 0.01)],
)
def test_f_upper_tail(x, d1, d2, p):
    assert f_sf(x, d1, d2) == pytest.approx(p, rel=0.01)


@pytest.mark.parametrize(
    ("times", "refused"),
    [
        ((2.0, 2.0, 4.0), True),
        ((2.0, 2.1, 1.9), True),
        ((2.6, 2.64, 2.7), False),
        ((2.0, 2.06, 1.94), False),
        ((2.0,), False),
        ((2.0, 2.0), False),
    ],
)
def test_runs_that_disagree_beyond_the_noise_rule(times, refused):
    found = runs_disagree(list(times), PRODUCTION, 0.01)
    assert (found is not None) == refused
    if refused and times == (2.0, 2.0, 4.0):
        spread, p = found
        assert spread == pytest.approx(0.40, abs=0.001) and p < 2e-4


def test_a_wider_prior_allows_more():
    assert runs_disagree([2.0, 2.1, 1.9], MEGATRON_CI, 0.01) is None
