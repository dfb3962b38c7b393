"""Approximate zCDP (ξ, ρ): D_α ≤ ξ + ρα (Bun and Steinke, arXiv:1605.02065, Def. 1.2),
its conversions and composition; and the Rényi bound of Poisson-subsampling an
abstract zCDP guarantee (Zhu and Wang, arXiv:1808.00087, Thm 6), checked against the
exact subsampled Gaussian Rényi curve of the plugin."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import accounting
from accounting import RDP, ZCDP
from accounting.curves.zcdp import poisson_subsampled_rdp

ORDERS = np.array([1.25, 1.5, 2.0, 3.0, 4.5, 8.0, 16.0, 32.0, 64.0, 128.0, 250.0, 400.0])


def test_rdp_is_xi_plus_rho_alpha():
    z = ZCDP.approximate(0.2, 0.05)
    np.testing.assert_allclose(z.renyi(ORDERS), 0.2 + 0.05 * ORDERS, rtol=1e-14)
    assert z.rho() == pytest.approx(0.25)        # the plain-zCDP ρ it implies
    assert z.xi_rho() == (0.2, 0.05)
    assert not z.is_exact


def test_epsilon_delta_is_the_improved_conversion_of_the_curve():
    """ε(δ) of (ξ, ρ) equals the improved conversion minimised by hand over α, and
    lies below Bun–Steinke's ξ + ρ + 2√(ρ log 1/δ) (arXiv:1605.02065, Prop. 1.3)."""
    xi, rho, delta = 0.1, 0.5, 1e-6
    z = ZCDP.approximate(xi, rho)
    a = np.linspace(1.001, 200, 400001)
    by_hand = np.min(xi + rho * a + np.log1p(-1 / a) - (np.log(delta) + np.log(a)) / (a - 1))
    assert z.epsilon(delta) == pytest.approx(by_hand, rel=1e-6)
    assert z.epsilon(delta) <= xi + rho + 2 * math.sqrt(rho * math.log(1 / delta))


def test_xi_shifts_epsilon_by_at_most_xi():
    base, shifted = ZCDP.symmetric(0.3), ZCDP.approximate(0.15, 0.3)
    for delta in (1e-3, 1e-6, 1e-9):
        diff = shifted.epsilon(delta) - base.epsilon(delta)
        assert 0 < diff <= 0.15 + 1e-12


@settings(max_examples=30, deadline=None)
@given(st.floats(0, 2), st.floats(0, 2), st.floats(1e-4, 3), st.floats(1e-4, 3),
       st.integers(1, 50))
def test_composition_adds_xi_and_rho(x1, x2, r1, r2, k):
    a, b = ZCDP.approximate(x1, r1), ZCDP.approximate(x2, r2)
    xi, rho = (a + b).xi_rho()
    assert xi == pytest.approx(x1 + x2) and rho == pytest.approx(r1 + r2)
    xi, rho = (a * k).xi_rho()
    assert xi == pytest.approx(k * x1) and rho == pytest.approx(k * r1)
    np.testing.assert_allclose((a + b).renyi(ORDERS), a.renyi(ORDERS) + b.renyi(ORDERS),
                               rtol=1e-12)


def test_bad_xi_refused():
    with pytest.raises(ValueError, match="xi"):
        ZCDP.approximate(-0.1, 0.5)
    with pytest.raises(ValueError, match="xi"):
        ZCDP((0.1, 0.1), xi=math.nan)


def test_plain_zcdp_unchanged():
    z = ZCDP.symmetric(0.125)
    assert z.xi == (0.0, 0.0) and z.rho() == 0.125
    np.testing.assert_allclose(z.renyi(ORDERS), 0.125 * ORDERS, rtol=1e-15)


# ------------------------------------------------------- subsampled abstract zCDP
@pytest.mark.parametrize("sigma,q", [(1.0, 0.01), (2.0, 0.01), (0.8, 0.1), (4.0, 0.3)])
def test_subsampled_zcdp_bounds_the_exact_subsampled_gaussian(sigma, q):
    """The Gaussian is ρ = 1/(2σ²)-zCDP; the bound from that ρ alone must lie above
    the plugin's exact subsampled-Gaussian Rényi curve (Mironov–Talwar–Zhang,
    arXiv:1908.10530), in both directions, and below the unsubsampled ρα."""
    rho = 1.0 / (2 * sigma ** 2)
    bound = poisson_subsampled_rdp(ZCDP.symmetric(rho), q)
    exact = accounting.mechanism("subsampled_gaussian", q=q, sigma=sigma).curve(RDP)
    b = bound.renyi(ORDERS)
    for d in ("forward", "backward"):
        assert np.all(b >= exact.renyi(ORDERS, d) * (1 - 1e-9))
    assert np.all(b <= rho * ORDERS * (1 + 1e-12))
    # at α = 2 Zhu–Wang's bound is exact for the remove direction
    assert b[ORDERS == 2.0][0] == pytest.approx(float(exact.renyi(2.0, "forward")), rel=1e-9)


def test_subsampling_amplifies_small_orders_not_rho():
    rho, q = 0.125, 0.01
    bound = poisson_subsampled_rdp(ZCDP.symmetric(rho), q)
    # D_2 ≤ log(1 + q²(e^{2ρ} − 1)) exactly (the l ≤ 2 terms of the bound)
    assert float(bound.renyi(2.0)) == pytest.approx(math.log1p(q * q * math.expm1(2 * rho)),
                                                    rel=1e-12)
    assert float(bound.renyi(1.0)) == pytest.approx(q * rho)   # KL is jointly convex
    assert bound.epsilon(1e-5) < 0.25 * ZCDP.symmetric(rho).epsilon(1e-5)
    assert "Zhu–Wang" in str(bound.explain("renyi"))


def test_subsampled_bad_input():
    z = ZCDP.symmetric(0.1)
    for q in (0.0, 1.5, math.nan):
        with pytest.raises(ValueError, match=r"\bq\b"):
            poisson_subsampled_rdp(z, q)
    with pytest.raises(TypeError, match="ZCDP"):
        poisson_subsampled_rdp(0.1, 0.5)


@settings(max_examples=20, deadline=None)
@given(st.floats(1e-3, 2.0), st.floats(1e-4, 0.5), st.floats(1e-4, 0.5), st.floats(0.0, 0.5))
def test_subsampled_bound_grows_with_q_and_stays_below_the_base(rho, q1, q2, xi):
    lo, hi = sorted((q1, q2))
    z = ZCDP.approximate(xi, rho)
    a, b = poisson_subsampled_rdp(z, lo), poisson_subsampled_rdp(z, hi)
    ra, rb = a.renyi(ORDERS), b.renyi(ORDERS)
    assert np.all(ra <= rb * (1 + 1e-12) + 1e-15)
    assert np.all(rb <= (xi + rho * ORDERS) * (1 + 1e-12))
