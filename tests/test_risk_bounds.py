"""Operational risk (``accounting.analysis.risk``) against closed forms and exact laws.

Gaussian with sensitivity/σ = μ: T(α) = Φ(Φ⁻¹(1 − α) − μ), TV = 2Φ(μ/2) − 1 (Dong,
Roth, Su, arXiv:1905.02383, §2). Randomized response with truth probability p: the
exact trade-off of the two-point laws, TPR(α) = α·p/(1 − p) for α ≤ 1 − p, TV = 2p − 1.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import accounting as ac
from accounting.analysis.risk import advantage, bayes_risk, tpr_at_fpr


def gaussian_tpr(alpha, mu):
    return stats.norm.sf(stats.norm.isf(np.asarray(alpha)) - mu)


@pytest.fixture(scope="module")
def gauss():
    return ac.mechanism("gaussian", sigma=1.0).curve(ac.TradeOff)


def test_tpr_of_the_gaussian_is_its_closed_form(gauss):
    fpr = np.array([1e-12, 1e-8, 1e-4, 0.01, 0.3, 0.9])
    exact = gaussian_tpr(fpr, 1.0)
    tpr = tpr_at_fpr(gauss, fpr)
    assert np.all(tpr >= exact)                  # never under-reported, even at β ≈ 1
    np.testing.assert_allclose(tpr, exact, rtol=1e-6)


def test_tpr_of_randomized_response_is_exact_at_tiny_fpr():
    rr = ac.mechanism("randomized_response", p=0.75)
    fpr = np.array([1e-10, 1e-8, 0.1])
    np.testing.assert_allclose(tpr_at_fpr(rr.curve(ac.TradeOff), fpr), 3 * fpr, rtol=1e-3)
    assert advantage(rr.curve(ac.PrivacyProfile)) == pytest.approx(0.5, abs=1e-12)


def test_composed_gaussian_tpr_is_bracketed_and_tight_to_fpr_1e8():
    # 10 Gaussians of σ = 2 compose to μ = √10/2 (Gaussian DP composes exactly)
    acct = ac.Accountant().compose(ac.mechanism("gaussian", sigma=2.0), count=10)
    trade = acct.tradeoff()
    fpr = np.array([1e-8, 1e-6, 1e-4, 1e-2])
    exact = gaussian_tpr(fpr, np.sqrt(10) / 2)
    up = tpr_at_fpr(trade, fpr)
    lo = tpr_at_fpr(trade, fpr, bound="lower")
    assert np.all(lo <= exact * (1 + 1e-9)) and np.all(exact <= up * (1 + 1e-9))
    np.testing.assert_allclose(up, exact, rtol=1e-3)


def test_advantage_is_the_total_variation(gauss):
    assert advantage(gauss) == pytest.approx(2 * stats.norm.cdf(0.5) - 1, rel=1e-12)
    pld = ac.Accountant().compose(ac.mechanism("gaussian", sigma=2.0), count=4).curve(ac.PLD)
    tv = 2 * stats.norm.cdf(0.5) - 1                  # μ = √4/2 = 1
    assert advantage(pld, bound="lower") <= tv <= advantage(pld) <= tv + 1e-4


@pytest.mark.parametrize("prior", [0.01, 0.1, 0.5, 0.9])
def test_bayes_risk_is_the_minimum_over_tests(gauss, prior):
    alpha = np.union1d(np.linspace(0.0, 1.0, 200001), np.geomspace(1e-12, 1.0, 200001))
    grid_min = np.min((1 - prior) * alpha + prior * (1 - gaussian_tpr(alpha, 1.0)))
    risk = bayes_risk(gauss, prior)
    assert risk <= grid_min + 1e-15               # a lower bound on every test's error
    assert grid_min - risk < 1e-8                 # and the minimum itself


def test_bayes_risk_of_randomized_response_at_an_even_prior():
    rr = ac.mechanism("randomized_response", p=0.75).curve(ac.PrivacyProfile)
    assert bayes_risk(rr, 0.5) == pytest.approx(0.5 * (1 - 0.5), abs=1e-12)


@given(st.floats(1e-6, 1 - 1e-6), st.floats(1e-6, 1 - 1e-6))
def test_tpr_is_monotone_and_above_the_diagonal(a, b):
    curve = ac.mechanism("gaussian", sigma=1.5).curve(ac.TradeOff)
    lo, hi = sorted((a, b))
    t_lo, t_hi = tpr_at_fpr(curve, [lo, hi])
    assert t_lo <= t_hi + 1e-15 and t_lo >= lo - 1e-15


@given(st.floats(1e-4, 1 - 1e-4))
def test_bayes_risk_never_exceeds_the_trivial_guess(prior):
    curve = ac.mechanism("laplace", b=1.0).curve(ac.PrivacyProfile)
    assert 0.0 <= bayes_risk(curve, prior) <= min(prior, 1 - prior) + 1e-15


def test_bad_input_names_the_parameter(gauss):
    with pytest.raises(ValueError, match="fpr"):
        tpr_at_fpr(gauss, 1.5)
    with pytest.raises(ValueError, match="prior"):
        bayes_risk(gauss, 0.0)
    with pytest.raises(TypeError, match="curve"):
        advantage(0.3)
    with pytest.raises(ValueError, match="bound"):
        tpr_at_fpr(gauss, 0.1, bound="pessimistic")
