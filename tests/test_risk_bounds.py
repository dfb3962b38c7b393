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


@pytest.mark.parametrize("route", ["mechanism", "tradeoff", "pld", "composed"])
def test_tpr_of_an_identical_pair_is_the_fpr_exactly(route):
    """P = Q: no test beats chance, TPR(α) = α to the last bit (main: 1.0000889e-12 at
    α = 1e-12 and 1.1e-16 at 1e-300, through 1 − β with β = 1 − α rounded)."""
    from accounting.pairs.pair import identical_pair
    fpr = np.array([1e-300, 1e-12, 0.3])
    free = ac.mechanism("laplace", b=1.0, sensitivity=0.0)
    curve = {"mechanism": free, "tradeoff": identical_pair().curve(ac.TradeOff),
             "pld": free.curve(ac.PLD),
             "composed": ac.Accountant().compose(free, 10).compose(
                 ac.mechanism("permute_and_flip", epsilon=0.0), 3)}[route]
    np.testing.assert_array_equal(tpr_at_fpr(curve, fpr), fpr)
    for d in ("forward", "backward"):
        np.testing.assert_array_equal(tpr_at_fpr(curve, fpr, direction=d), fpr)
    if route in ("mechanism", "composed"):
        # the binary Rényi bound: K = 0 is D_α = 0, P = Q (main: 1e-12 + 8.7e-19, and
        # 8.7e-19 at 1e-300, the bisection's absolute floor)
        for accountant in ("rdp", "zcdp"):
            np.testing.assert_array_equal(tpr_at_fpr(curve, fpr, accountant=accountant), fpr)


def test_renyi_tpr_keeps_relative_precision_at_tiny_fpr():
    """Gaussian μ = 1/3 through its Rényi curve: never below the exact TPR
    Φ̄(Φ̄⁻¹(α) − μ) and within 10% of it (3% at α = 1e-300; main: 8.7e-19, the absolute floor
    of bisecting [α, 1])."""
    fpr = np.array([1e-300, 1e-100, 1e-12])
    got = tpr_at_fpr(ac.mechanism("gaussian", sigma=3.0), fpr, accountant="rdp")
    exact = gaussian_tpr(fpr, 1 / 3)
    assert np.all(got >= exact) and np.all(got <= 1.1 * exact)


def test_tpr_at_tiny_fpr_keeps_relative_precision():
    """Randomized response (p = 3/4) from its exact laws: TPR = 3α for α ≤ ¼, to a few
    ulps at α = 1e-300 (main: 1.1e-16), never below; Laplace (Δ/b = 1) through its
    discretised PLD: e·α for α ≤ e^{−1}/2, above it by the grid's rounding only."""
    fpr = np.array([1e-300, 1e-100, 1e-12, 0.1])
    rr = tpr_at_fpr(ac.mechanism("randomized_response", p=0.75).curve(ac.TradeOff), fpr)
    assert np.all(rr >= 3 * fpr) and np.all(rr <= 3 * fpr * (1 + 1e-14))
    lap = tpr_at_fpr(ac.mechanism("laplace", b=1.0), fpr[:3])
    assert np.all(lap >= np.e * fpr[:3]) and np.all(lap <= np.e * fpr[:3] * (1 + 1e-3))


def _np_power(p, q, alpha):
    """max E_Q[φ] over tests with E_P[φ] ≤ α of a finite pair, by Neyman–Pearson: take
    outcomes by decreasing q/p (p = 0 first), the last one fractionally."""
    ratio = np.where(p > 0, q / np.where(p > 0, p, 1.0), np.inf)
    order = np.argsort(-ratio, kind="stable")
    cp = np.concatenate([[0.0], np.cumsum(p[order])])
    cq = np.concatenate([[0.0], np.cumsum(q[order])])
    return np.interp(alpha, cp, cq)


def test_tpr_of_finite_pairs_is_never_below_neyman_pearson():
    """Random pairs on 2 to 6 outcomes (some masses 0): the TPR from their exact laws
    is at least the Neyman–Pearson power, in both directions, to the laws' own
    rounding (their Q-masses are p·e^{−l} with l = log p − log q, a few ulps off q),
    relative 1e-14 down to α = 1e-300, and within 1e-12 of it."""
    from accounting.pairs.pair import discrete_pair
    rng = np.random.default_rng(22)
    fpr = np.concatenate([[0.0, 1e-300, 1e-30, 1e-12], np.linspace(0.01, 1.0, 12)])
    for _ in range(60):
        n = int(rng.integers(2, 7))
        p, q = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n))
        if rng.random() < 0.5:
            p[rng.integers(n)] = 0.0
            p /= p.sum()
        trade = discrete_pair(p, q).curve(ac.TradeOff)
        for d, (a, b) in (("forward", (p, q)), ("backward", (q, p))):
            got = tpr_at_fpr(trade, fpr, direction=d)
            want = _np_power(a, b, fpr)
            assert np.all(got >= want * (1 - 1e-14)), (p, q, d, got - want)
            assert np.all(got <= np.maximum(want, fpr) + 1e-12)


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
