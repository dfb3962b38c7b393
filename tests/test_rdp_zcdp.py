"""Rényi DP and zCDP curves: closed forms, composition, the envelope, conversions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import accounting
from accounting import RDP, ZCDP, Exactness, compose, discrete_pair
from accounting.curves.converters import zcdp_envelope

from strategies import finite_pairs
from closed_forms import (discrete_rdp, gaussian_epsilon, improved_rdp_epsilon, laplace_rdp,
                          mironov_rdp_epsilon)

ALPHAS = np.array([1.01, 1.5, 2.0, 2.5, 3.0, 4.75, 8.0, 16.0, 32.5, 64.0, 100.0, 1000.0])




# ------------------------------------------------------------------------ RDP
@given(finite_pairs())
def test_finite_pair_rdp_is_the_renyi_sum(pq):
    p, q = pq
    rdp = discrete_pair(p, q).curve(RDP)
    for a in (1.1, 2.0, 3.7, 20.0):
        assert rdp.rdp(a, "forward") == pytest.approx(discrete_rdp(p, q, a), rel=1e-10, abs=1e-14)
        assert rdp.rdp(a, "backward") == pytest.approx(discrete_rdp(q, p, a), rel=1e-10, abs=1e-14)


@given(finite_pairs())
def test_rdp_is_nondecreasing_in_alpha_and_cgf_is_convex(pq):
    p, q = pq
    rdp = discrete_pair(p, q).curve(RDP)
    a = np.linspace(1.05, 30, 120)
    for d in ("forward", "backward"):
        assert np.all(np.diff(rdp.rdp(a, d)) >= -1e-12)
        t = a - 1
        k = rdp.cgf(t, d)
        np.testing.assert_allclose(k, t * rdp.rdp(a, d), rtol=1e-12, atol=1e-15)
        assert np.all(np.diff(k, 2) >= -1e-10)        # K is convex


def test_rdp_composition_adds(gaussian1):
    lap = accounting.mechanism("laplace", b=2.0)
    both = gaussian1.curve(RDP).compose(lap.curve(RDP))
    want = np.array([a / 2 + laplace_rdp(a, 0.5) for a in ALPHAS])
    np.testing.assert_allclose(both.rdp(ALPHAS), want, rtol=1e-10)
    with pytest.warns(DeprecationWarning):   # the old route, for one release
        np.testing.assert_allclose((gaussian1.curve(RDP) + lap.curve(RDP)).rdp(ALPHAS), want,
                                   rtol=1e-10)
    np.testing.assert_allclose(compose(gaussian1.curve(RDP), lap.curve(RDP)).rdp(ALPHAS), want,
                               rtol=1e-10)
    np.testing.assert_allclose(compose((lap.curve(RDP), 7)).rdp(ALPHAS),
                               [7 * laplace_rdp(a, 0.5) for a in ALPHAS], rtol=1e-10)
    with pytest.warns(DeprecationWarning):
        np.testing.assert_allclose((7 * lap.curve(RDP)).rdp(ALPHAS),
                                   [7 * laplace_rdp(a, 0.5) for a in ALPHAS], rtol=1e-10)


def test_rdp_argument_errors(gaussian1):
    rdp = gaussian1.curve(RDP)
    for bad in (0.999, 0.5, [2.0, 0.5]):   # α = 1 (KL) is answered now
        with pytest.raises(ValueError, match="alpha"):
            rdp.rdp(bad)
    with pytest.raises(ValueError, match="t must be"):
        rdp.cgf(0.0)
    with pytest.raises(ValueError, match="bound"):
        rdp.rdp(2.0, bound="middle")
    with pytest.raises(TypeError, match="RDP"):
        rdp.compose(ZCDP.symmetric(1.0))
    with pytest.raises(ValueError, match="count"):
        rdp.self_compose(0)


# ----------------------------------------------------------- RDP → (ε, δ)
@pytest.mark.parametrize("sigma,delta", [(1.0, 1e-5), (2.0, 1e-5), (5.0, 1e-8), (0.7, 1e-3)])
def test_rdp_epsilon_is_the_improved_conversion(sigma, delta):
    rdp = accounting.mechanism("gaussian", sigma=sigma).curve(RDP)
    got = float(rdp.epsilon(delta))
    rho = 1 / (2 * sigma ** 2)
    independent = improved_rdp_epsilon(lambda a: rho * a, delta)
    assert got == pytest.approx(independent, rel=1e-7)
    assert got >= independent * (1 - 1e-9)          # never below the optimum over α
    # sound: never below the exact ε, and better than Mironov's Prop 3 on a grid of orders
    assert got >= gaussian_epsilon(1 / sigma, delta)
    assert got <= mironov_rdp_epsilon(lambda a: rho * a, delta, np.linspace(1.01, 500, 5000))


def test_rdp_delta_is_consistent_with_epsilon(gaussian1):
    rdp = gaussian1.curve(RDP)
    eps = float(rdp.epsilon(1e-6))
    assert rdp.delta(eps) == pytest.approx(1e-6, rel=1e-5)
    assert rdp.delta(eps + 0.05) < 1e-6 < rdp.delta(eps - 0.05)


def test_laplace_rdp_epsilon_is_sound():
    lap = accounting.mechanism("laplace", b=1.0)
    for delta in (1e-2, 1e-5):
        exact = 1.0 + 2.0 * math.log1p(-delta)       # from δ(ε) = 1 − e^{(ε−1)/2}
        got = float(lap.curve(RDP).epsilon(delta))
        assert got >= exact - 1e-12
        # near the optimum over α (which for pure ε-DP lies at very large α)
        assert got <= improved_rdp_epsilon(lambda a: laplace_rdp(a, 1.0), delta, 1e5) + 1e-4


# ------------------------------------------------------------------------ zCDP
@pytest.mark.parametrize("sigma,sens", [(1.0, 1.0), (2.0, 1.0), (0.3, 2.0)])
def test_gaussian_rho(sigma, sens):
    mech = accounting.mechanism("gaussian", sigma=sigma, sensitivity=sens)
    want = sens ** 2 / (2 * sigma ** 2)
    assert mech.curve(ZCDP).rho() == pytest.approx(want, rel=1e-14)
    env = mech.curve(RDP).to(ZCDP)
    assert env.rho() == pytest.approx(want, rel=1e-10)
    assert env.provenance.exactness is Exactness.UPPER


def test_zcdp_envelope_of_known_cgfs():
    # a constant ratio (Gaussian): sound, and tight to the t → 0 bound's 1e-6
    env = zcdp_envelope(lambda t: 0.3 * t * (t + 1))
    assert 0.3 <= env <= 0.3 * (1 + 2e-6)
    # sup at an interior t: K(t) = t(t+1)(1 + t e^{−t}) has K/(t(t+1)) maximal at t = 1
    env = zcdp_envelope(lambda t: t * (t + 1) * (1 + t * np.exp(-t)))
    assert env >= (1 + np.exp(-1)) * (1 - 1e-12)
    assert env == pytest.approx(1 + np.exp(-1), rel=1e-9)
    # sup at t → 0 (the KL divergence E[L]): K(t) = t·m + t²v/2 + t³ (convex, ratio ↓)
    env = zcdp_envelope(lambda t: 0.7 * t + 0.1 * t ** 2 + t ** 3 * 0.0)
    assert env >= 0.7 * (1 - 1e-12)
    assert env == pytest.approx(0.7, rel=1e-5)


def test_zcdp_envelope_of_a_finite_pair_is_the_sup_ratio():
    p, q = np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.3, 0.5])
    rdp = discrete_pair(p, q).curve(RDP)
    rho = rdp.to(ZCDP).rho("forward")
    ts = np.geomspace(1e-3, 1e3, 3001)
    brute = max(ts[i] * discrete_rdp(p, q, 1 + ts[i]) / (ts[i] * (ts[i] + 1)) for i in range(0, ts.size, 10))
    assert rho >= brute * (1 - 1e-9)
    assert rho == pytest.approx(brute, rel=1e-3)


def test_laplace_rho_is_the_kl_divergence():
    for b in (0.5, 1.0, 4.0):
        e = 1.0 / b
        kl = e + math.exp(-e) - 1.0
        assert accounting.mechanism("laplace", b=b).curve(ZCDP).rho() == pytest.approx(kl, rel=1e-14)


def test_envelope_of_laplace_rdp_is_an_upper_bound():
    rdp = accounting.mechanism("laplace", b=1.0).curve(RDP)
    kl = 1.0 + math.exp(-1.0) - 1.0
    assert rdp.to(ZCDP).rho() >= kl * (1 - 1e-12)


def test_information_gap_is_nonnegative():
    """Γ(t) = ρ* t(t+1) − K(t) ≥ 0 (REFERENCE §6); Γ ≡ 0 for the Gaussian."""
    lap = accounting.mechanism("laplace", b=1.0)
    rho = lap.curve(ZCDP).rho()
    t = np.geomspace(1e-3, 1e3, 200)
    assert np.all(rho * t * (t + 1) - lap.curve(RDP).cgf(t) >= -1e-12)
    g = accounting.mechanism("gaussian", sigma=1.3)
    gap = g.curve(ZCDP).rho() * t * (t + 1) - g.curve(RDP).cgf(t)
    np.testing.assert_allclose(gap, 0.0, atol=1e-9 * np.max(t * (t + 1)))


def test_zcdp_rdp_and_composition():
    z = ZCDP.symmetric(0.25)
    np.testing.assert_allclose(z.rdp(ALPHAS), 0.25 * ALPHAS, rtol=1e-14)
    assert z.to(RDP).provenance.exactness is Exactness.UPPER
    w = ZCDP((0.1, 0.3), (0.1, 0.3))
    both = z.compose(w)
    assert both.rho("forward") == pytest.approx(0.35) and both.rho("backward") == pytest.approx(0.55)
    assert both.rho() == pytest.approx(0.55)
    assert compose(z, w).rho() == pytest.approx(0.55)
    assert compose((z, 4)).rho() == pytest.approx(1.0)
    assert z.self_compose(4).rho() == pytest.approx(1.0)
    with pytest.warns(DeprecationWarning):   # the old routes, for one release
        assert (z + w).rho() == pytest.approx(0.55) and (4 * z).rho() == pytest.approx(1.0)


def test_zcdp_argument_errors():
    with pytest.raises(ValueError, match="rho"):
        ZCDP.symmetric(-0.1)
    with pytest.raises(ValueError, match="rho"):
        ZCDP.symmetric(float("nan"))
    with pytest.raises(TypeError, match="rho"):
        ZCDP.symmetric("0.5")
    with pytest.raises(TypeError, match="ZCDP"):
        ZCDP.symmetric(0.5).compose(RDP)
    with pytest.raises(ValueError, match="count"):
        ZCDP.symmetric(0.5).self_compose(0)
    with pytest.raises(ValueError, match="direction"):
        ZCDP.symmetric(0.5).rho("sideways")


def test_zcdp_epsilon_is_at_least_the_exact_gaussian():
    for sigma in (0.8, 1.0, 3.0):
        z = accounting.mechanism("gaussian", sigma=sigma).curve(ZCDP)
        for delta in (1e-3, 1e-6, 1e-10):
            assert float(z.epsilon(delta)) >= gaussian_epsilon(1 / sigma, delta)
