"""The pure-Python t and beta functions against published table values."""

from __future__ import annotations

import math

import pytest

from perfgate.stats.dist import betainc, normal_quantile, t_cdf, t_quantile

# Student t critical values from standard tables (e.g. NIST/SEMATECH e-Handbook, 1.3.6.7.2).
T_TABLE = [
    (0.975, 1, 12.706),
    (0.99, 2, 6.965),
    (0.99, 3, 4.541),
    (0.99, 4, 3.747),
    (0.99, 5, 3.365),
    (0.95, 10, 1.812),
    (0.90, 3, 1.638),
    (0.995, 30, 2.750),
    (0.999, 20, 3.552),
    (0.975, 100, 1.984),
]


@pytest.mark.parametrize(("p", "df", "expected"), T_TABLE)
def test_t_quantile_matches_tables(p: float, df: int, expected: float) -> None:
    assert t_quantile(p, df) == pytest.approx(expected, abs=6e-4)


def test_t_quantile_is_symmetric_and_inverts_the_cdf() -> None:
    for df in (0.7, 2.5, 6.0, 41.3):
        for p in (0.6, 0.9, 0.99, 0.9999):
            q = t_quantile(p, df)
            assert t_quantile(1 - p, df) == pytest.approx(-q, rel=1e-9)
            assert t_cdf(q, df) == pytest.approx(p, abs=1e-10)
    assert t_quantile(0.5, 3) == 0.0


def test_fractional_df_lies_between_its_integer_neighbours() -> None:
    assert t_quantile(0.99, 5) < t_quantile(0.99, 4.5) < t_quantile(0.99, 4)


def test_infinite_df_is_the_normal_quantile() -> None:
    assert t_quantile(0.99, math.inf) == pytest.approx(2.326348, abs=1e-6)
    assert normal_quantile(0.95) == pytest.approx(1.644854, abs=1e-6)
    assert t_quantile(0.99, 1e5) == pytest.approx(2.326348, abs=1e-3)


def test_betainc_closed_forms() -> None:
    assert betainc(1, 1, 0.3) == pytest.approx(0.3)
    assert betainc(2.5, 1, 0.4) == pytest.approx(0.4**2.5)
    assert betainc(3, 3, 0.5) == pytest.approx(0.5)
    # I_x(1, b) = 1 - (1 - x)^b
    assert betainc(1, 4, 0.2) == pytest.approx(1 - 0.8**4)


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError):
        t_quantile(0.9, 0)
    with pytest.raises(ValueError):
        betainc(0, 1, 0.5)
