"""Trade-off functions (f-DP): closed forms, vertices of a PLD, and the conjugacy with δ."""

from __future__ import annotations

import numpy as np
from strategies import finite_pairs
import pytest
from hypothesis import given, strategies as st

import accounting
from accounting import PLD, Exactness, PrivacyProfile, TradeOff, discrete_pair

from closed_forms import discrete_beta, discrete_delta, gaussian_beta, gaussian_delta

ALPHA = np.linspace(0.0, 1.0, 2001)


@pytest.fixture(scope="module")
def gaussian_tradeoff(gaussian1_pld):
    return gaussian1_pld.to(TradeOff)


@pytest.mark.parametrize("sigma,sens", [(1.0, 1.0), (2.0, 1.0), (0.5, 1.0), (3.0, 1.5)])
def test_gaussian_closed_form_is_g_mu(sigma, sens):
    to = accounting.mechanism("gaussian", sigma=sigma, sensitivity=sens).curve(TradeOff)
    mu = sens / sigma
    np.testing.assert_allclose(to.beta(ALPHA), gaussian_beta(mu, ALPHA), rtol=1e-12, atol=1e-300)
    assert to.provenance.exactness is Exactness.EXACT


def test_pld_tradeoff_brackets_g_mu(gaussian_tradeoff):
    """Upper side over-reports the privacy loss (β too small), the lower side under-reports."""
    exact = gaussian_beta(1.0, ALPHA)
    up = gaussian_tradeoff.beta(ALPHA)
    lo = gaussian_tradeoff.beta(ALPHA, bound="lower")
    assert np.all(up <= exact + 1e-12)
    assert np.all(lo >= exact - 1e-12)
    assert np.max(lo - up) < 1e-6
    assert gaussian_tradeoff.provenance.exactness is Exactness.EXACT
    assert gaussian_tradeoff.provenance.path[-1] == "pld→tradeoff"


def test_conjugate_of_g_mu_is_the_analytic_gaussian():
    """δ(ε) = sup_α 1 − α − e^ε G_μ(α), by brute force over a fine α grid (DRS Prop 2.12)."""
    a = np.linspace(0, 1, 400001)
    b = gaussian_beta(1.0, a)
    for eps in (-1.0, 0.0, 0.5, 1.0, 2.0, 3.0):
        sup = np.max(1 - a - np.exp(eps) * b)
        assert sup == pytest.approx(float(gaussian_delta(1.0, eps)), rel=1e-7, abs=1e-12)


def test_tradeoff_to_profile_is_the_conjugate(gaussian_tradeoff, gaussian1_pld):
    prof = gaussian_tradeoff.to(PrivacyProfile)
    eps = np.linspace(-2, 5, 71) + 3.7e-4
    for b in ("upper", "lower"):
        # the sound side first puts the P-mass its sums lost (3e-14 here) on the top
        # loss (LossPMF.topped_up), so its δ may only be that much higher
        mine, pld = prof.delta(eps, bound=b), gaussian1_pld.delta(eps, bound=b)
        np.testing.assert_allclose(mine, pld, rtol=1e-9, atol=1e-13 if b == "upper" else 1e-15)
        if b == "upper":
            assert np.all(mine >= pld * (1 - 1e-12))
    # and a profile computed by brute-force conjugation of the vertex trade-off
    a = np.linspace(0, 1, 200001)
    beta = gaussian_tradeoff.beta(a)
    for e in (0.0, 1.0, 2.5):
        assert np.max(1 - a - np.exp(e) * beta) == pytest.approx(float(prof.delta(e)), abs=2e-6)


def test_vertex_conjugate_matches_the_upper_law(five_point_pld):
    prof = five_point_pld.to(TradeOff).to(PrivacyProfile)
    eps = np.linspace(-1.5, 1.5, 121) + 3.7e-4
    for d in ("forward", "backward"):
        np.testing.assert_allclose(prof.delta(eps, d), five_point_pld.delta(eps, d), atol=1e-12)


def test_vertex_conjugate_matches_the_lower_law(five_point_pld):
    prof = five_point_pld.to(TradeOff).to(PrivacyProfile)
    eps = np.linspace(-1.5, 1.5, 121) + 3.7e-4
    for d in ("forward", "backward"):
        law = five_point_pld.law(d, "lower")
        np.testing.assert_allclose(prof.delta(eps, d, "lower"), law.delta(eps), atol=1e-9)


def test_asymmetric_directions_are_inverse_functions(subsampled_pld):
    """T(Q, P) = T(P, Q)^{-1} for one ordered pair (here the subsampled Gaussian)."""
    to = subsampled_pld.to(TradeOff)
    a = np.linspace(0.001, 0.999, 999)
    fwd = to.beta(a, "forward")
    np.testing.assert_allclose(to.beta(fwd, "backward"), a, atol=1e-9)
    assert not np.allclose(fwd, to.beta(a, "backward"), atol=1e-4)
    np.testing.assert_array_equal(to.beta(a), np.minimum(fwd, to.beta(a, "backward")))




@given(finite_pairs())
def test_finite_pair_tradeoff_is_neyman_pearson(pq):
    """An exact LawPair has exact trade-off vertices: compare with the NP lemma."""
    p, q = pq
    pair = discrete_pair(p, q)
    to = PLD(pair.upper, pair.lower).to(TradeOff)     # the exact laws, no discretisation
    a = np.linspace(0, 1, 101)
    np.testing.assert_allclose(to.beta(a, "forward"), discrete_beta(p, q, a), atol=1e-12)
    np.testing.assert_allclose(to.beta(a, "backward"), discrete_beta(q, p, a), atol=1e-12)
    # and back: the conjugate of the vertices is the hockey-stick divergence
    prof = to.to(PrivacyProfile)
    eps = np.array([-1.0, 0.0, 0.3, 1.2])
    np.testing.assert_allclose(prof.delta(eps, "forward"), discrete_delta(p, q, eps), atol=1e-12)


@given(finite_pairs())
def test_tradeoff_is_convex_decreasing_and_below_the_diagonal(pq):
    p, q = pq
    pair = discrete_pair(p, q)
    to = PLD(pair.upper, pair.lower).to(TradeOff)
    a = np.linspace(0, 1, 401)
    for d in ("forward", "backward"):
        b = to.beta(a, d)
        assert np.all(np.diff(b) <= 1e-15)
        assert np.all(np.diff(b, 2) >= -1e-12)
        assert np.all(b <= 1 - a + 1e-12)


def test_beta_argument_errors(gaussian_tradeoff):
    with pytest.raises(ValueError, match="alpha"):
        gaussian_tradeoff.beta(1.5)
    with pytest.raises(ValueError, match="alpha"):
        gaussian_tradeoff.beta(-0.1)
    with pytest.raises(ValueError, match="direction"):
        gaussian_tradeoff.beta(0.5, direction="sideways")
    with pytest.raises(ValueError, match="bound"):
        gaussian_tradeoff.beta(0.5, bound="middle")
