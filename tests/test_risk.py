"""``accounting.analysis.risk``: the μ-GDP summary of a trade-off curve.

Reference: Gaussian DP's closed form G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) (Dong, Roth, Su,
arXiv:1905.02383, Def. 2.7), evaluated with scipy.stats.norm, and the exact trade-off
of the Gaussian mechanism: N(0, σ²) against N(Δ, σ²) is G_{Δ/σ}, and k uses compose
to G_{√k·Δ/σ} (ibid., Cor. 3.3).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

import accounting
from accounting import Accountant, TradeOff
from accounting.analysis.risk import GDP_ALPHA, gdp_mu, tradeoff_gdp_mu


def g_mu(mu: float, alpha: float) -> float:
    return float(norm.cdf(norm.ppf(1 - alpha) - mu))


@pytest.mark.parametrize("mu", [0.05, 0.5, 1.0, 2.5, 6.0])
@pytest.mark.parametrize("alpha", [1e-4, 0.01, 0.3, 0.9])
def test_inverts_the_gaussian_tradeoff(mu, alpha):
    beta = g_mu(mu, alpha)
    assert gdp_mu(alpha, beta) == pytest.approx(mu, rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-6, 1 - 1e-6), st.floats(0.0, 1.0))
def test_round_trip_and_monotone_in_beta(alpha, beta):
    mu = gdp_mu(alpha, beta)
    assert mu >= 0.0
    if 0.0 < beta < 1.0 - alpha:
        assert g_mu(mu, alpha) == pytest.approx(beta, rel=1e-7, abs=1e-300)
    # a smaller β (a better test) means a larger μ
    assert gdp_mu(alpha, beta / 2) >= mu


def test_ends_and_vectorised():
    assert gdp_mu(0.01, 0.0) == math.inf
    assert gdp_mu(0.01, 0.99) == 0.0 and gdp_mu(0.01, 1.0) == 0.0
    out = gdp_mu(np.array([0.01, 0.1, 0.1]), np.array([g_mu(1.0, 0.01), g_mu(2.0, 0.1), 0.0]))
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, [1.0, 2.0, np.inf], rtol=1e-9)
    assert isinstance(gdp_mu(0.01, 0.5), float)


def test_tradeoff_of_gaussian_mechanisms():
    """σ = 2: μ = 1/2; 16 uses: μ = 2 (up to the PLD grid)."""
    one = accounting.mechanism("gaussian", sigma=2.0).curve(TradeOff)
    assert tradeoff_gdp_mu(one) == pytest.approx(0.5, rel=1e-6)
    acct = Accountant(step=2e-3).compose(accounting.mechanism("gaussian", sigma=2.0), 16)
    assert tradeoff_gdp_mu(acct.tradeoff(), 0.1) == pytest.approx(2.0, rel=1e-5)
    assert GDP_ALPHA == 0.01


@pytest.mark.parametrize("alpha, beta, exc, match", [
    (0.0, 0.5, ValueError, "alpha must be in"),
    (1.0, 0.5, ValueError, "alpha must be in"),
    (0.1, 1.5, ValueError, "beta must be in"),
    (0.1, float("nan"), ValueError, "beta must not contain NaN"),
    ("0.1", 0.5, TypeError, "alpha"),
])
def test_bad_input(alpha, beta, exc, match):
    with pytest.raises(exc, match=match):
        gdp_mu(alpha, beta)


def test_tradeoff_argument_checked():
    with pytest.raises(TypeError, match="tradeoff must be a TradeOff"):
        tradeoff_gdp_mu("not a curve")
