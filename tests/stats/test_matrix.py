"""A night of many rows: Benjamini-Hochberg, the one-sided p-value, the expected false alarms."""

from __future__ import annotations

import math
import random

import pytest

from perfgate import stats
from perfgate.catalog import Baseline, Provenance
from perfgate.errors import ConfigError
from perfgate.stats.dist import t_cdf, t_sf
from perfgate.stats.matrix import benjamini_hochberg, bh_threshold, expected_false_alarms


def test_bh_rejects_the_step_up_set_of_the_textbook_example() -> None:
    # Benjamini & Hochberg (1995), m = 15, q = 0.05: the four smallest are rejected
    # (p(4) = 0.0095 <= 4 x 0.05 / 15 = 0.0133; p(5) = 0.0201 > 0.0167).
    p = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240,
         0.4262, 0.5719, 0.6528, 0.7590, 1.0]  # fmt: skip
    shuffled = list(range(15))
    random.Random(3).shuffle(shuffled)
    got = benjamini_hochberg([p[i] for i in shuffled], 0.05)  # order must not matter
    assert sorted(shuffled[i] for i, r in enumerate(got) if r) == [0, 1, 2, 3]
    assert bh_threshold(p, 0.05) == 0.0095


def test_bh_is_step_up_a_larger_p_can_carry_a_smaller_one() -> None:
    # p(2) = 0.02 > 1 x 0.05/2 alone, but p(2) <= 2 x 0.05/2: both rejected
    assert benjamini_hochberg([0.02, 0.03], 0.05) == [True, True]
    assert benjamini_hochberg([0.03, 0.5], 0.05) == [False, False]
    assert bh_threshold([0.03, 0.5], 0.05) == 0.025  # the bar a lone row must reach


def test_bh_never_rejects_nan_and_refuses_a_bad_q() -> None:
    assert benjamini_hochberg([math.nan, 1e-9], 0.05) == [False, True]
    with pytest.raises(ConfigError, match=r"--fdr 1\.5"):
        benjamini_hochberg([0.1], 1.5)


def test_under_the_null_bh_keeps_any_false_rejection_below_q() -> None:
    rng = random.Random(11)
    nights = 4000
    any_false = sum(
        any(benjamini_hochberg([rng.random() for _ in range(145)], 0.05)) for _ in range(nights)
    )
    assert any_false / nights == pytest.approx(0.05, abs=0.012)


def test_t_sf_keeps_precision_in_the_far_tail() -> None:
    assert t_sf(3.0, 10) == pytest.approx(1 - t_cdf(3.0, 10), rel=1e-12)
    assert t_sf(-3.0, 10) == pytest.approx(t_cdf(3.0, 10), rel=1e-12)
    tiny = t_sf(40.0, 5)  # 1 - cdf would lose all but a few digits here
    assert 9.0e-8 < tiny < 9.4e-8


def test_p_slower_is_below_alpha_exactly_when_the_lower_bound_is_above_zero() -> None:
    base = Baseline(2.0, Provenance("perfgate run"), n_runs=1)
    for slow in (1.0, 1.004, 1.01, 1.03):
        steps = [6.0] * 3 + [2.0 * slow * (1 + 0.01 * math.sin(i)) for i in range(60)]
        c = stats.compare_to_baseline([steps], base, 0.05, prior_sigma=0.005, prior_df=11)
        assert (c.p_slower < c.alpha) == (c.ci_low > 0)


def test_the_expected_false_alarms_of_a_night() -> None:
    mean, none = expected_false_alarms(145, 0.01)
    assert mean == pytest.approx(1.45)
    assert none == pytest.approx(0.23286, abs=1e-5)
