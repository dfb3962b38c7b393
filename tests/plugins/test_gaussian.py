"""The Gaussian mechanism: every curve against the closed forms (REFERENCE §1, §4)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import accounting
from accounting import PLD, RDP, ZCDP, Exactness, PrivacyProfile, TradeOff
from accounting.numerics.loss import LossPMF

from closed_forms import gaussian_beta, gaussian_delta, gaussian_epsilon

STEP = 1e-3
SIGMAS = (0.5, 1.0, 2.0, 5.0)
COUNTS = (1, 10, 100)
DELTAS = (1e-3, 1e-5, 1e-8, 1e-10)


@pytest.fixture(scope="module")
def plds():
    """PLDs of the Gaussian with Δ = 1 at step 1e-3, built once."""
    return {s: accounting.mechanism("gaussian", sigma=s).curve(PLD, step=STEP) for s in SIGMAS}


@pytest.fixture(scope="module")
def dense():
    """For each σ: a dense ε grid off the PLD grid (out to δ ~ 1e-40) and the exact δ there."""
    out = {}
    for s in SIGMAS:
        mu = 1.0 / s
        eps = np.linspace(-3.0, mu / 2 + 13.5 * mu + 0.5, 2001) + 0.37 * STEP
        out[s] = (eps, gaussian_delta(mu, eps))
    return out


# ------------------------------------------------------------------------- PLD
@pytest.mark.parametrize("sigma", SIGMAS)
def test_pld_upper_side_dominates_balle_wang(plds, dense, sigma):
    eps, exact = dense[sigma]
    up = plds[sigma].delta(eps)
    assert np.all(up >= exact * (1 - 1e-12) - 1e-300)
    for d in ("forward", "backward"):
        assert np.all(plds[sigma].delta(eps, d) >= exact * (1 - 1e-12) - 1e-300)


@pytest.mark.parametrize("sigma", SIGMAS)
def test_pld_lower_side_is_below_balle_wang(plds, dense, sigma):
    eps, exact = dense[sigma]
    for d in ("forward", "backward"):
        lo = plds[sigma].delta(eps, d, bound="lower")
        assert np.all(lo <= exact * (1 + 1e-12) + 1e-300)


@pytest.mark.parametrize("sigma", SIGMAS)
def test_pld_discretisation_gap_is_small(plds, dense, sigma):
    eps, exact = dense[sigma]
    lo, up = plds[sigma].delta_interval(eps)
    big = exact > 1e-8
    assert np.max((up - lo)[big] / exact[big]) < 1e-3


def test_pld_is_symmetric(plds):
    eps = np.linspace(-2, 6, 81)
    pld = plds[1.0]
    np.testing.assert_allclose(pld.delta(eps, "forward"), pld.delta(eps, "backward"), atol=1e-15)


# ------------------------------------------------------------------ other curves
@given(st.floats(0.1, 20.0), st.floats(0.1, 5.0))
def test_rdp_and_rho_closed_forms(sigma, sens):
    mech = accounting.mechanism("gaussian", sigma=sigma, sensitivity=sens)
    alphas = np.array([1.0001, 1.5, 2.0, 3.3, 10.0, 100.0, 1e4])
    want = alphas * sens ** 2 / (2 * sigma ** 2)
    rdp = mech.curve(RDP)
    for d in ("forward", "backward", "max"):
        np.testing.assert_allclose(rdp.rdp(alphas, d), want, rtol=1e-12)
        np.testing.assert_allclose(rdp.rdp(alphas, d, bound="lower"), want, rtol=1e-12)
    assert mech.curve(ZCDP).rho() == pytest.approx(sens ** 2 / (2 * sigma ** 2), rel=1e-12)


@pytest.mark.parametrize("sigma,sens", [(1.0, 1.0), (0.5, 1.0), (4.0, 2.0)])
def test_tradeoff_is_g_mu(sigma, sens):
    mech = accounting.mechanism("gaussian", sigma=sigma, sensitivity=sens)
    a = np.linspace(0, 1, 1001)
    to = mech.curve(TradeOff)
    np.testing.assert_allclose(to.beta(a), gaussian_beta(sens / sigma, a), rtol=1e-12, atol=1e-300)
    assert to.provenance.path == (f"Gaussian(μ={sens / sigma:g}) trade-off",)


def test_profile_closed_form_and_sensitivity_scaling():
    a = accounting.mechanism("gaussian", sigma=2.0, sensitivity=2.0).curve(PrivacyProfile)
    b = accounting.mechanism("gaussian", sigma=1.0).curve(PrivacyProfile)
    eps = np.linspace(-3, 9, 61)
    np.testing.assert_allclose(a.delta(eps), b.delta(eps), rtol=1e-14)
    np.testing.assert_allclose(a.delta(eps), gaussian_delta(1.0, eps), rtol=1e-9, atol=1e-300)


# ------------------------------------------------------------------ composition
@pytest.mark.parametrize("sigma,k", [(1.0, 10), (2.0, 100), (5.0, 25)])
def test_k_gaussians_are_one_gaussian_on_every_curve(plds, sigma, k):
    one = accounting.mechanism("gaussian", sigma=sigma)
    merged = accounting.mechanism("gaussian", sigma=sigma / np.sqrt(k))
    mu_k = np.sqrt(k) / sigma
    # PLD: the k-fold FFT power against the PLD of σ/√k; both bracket the exact δ
    composed = plds[sigma].self_compose(k)
    direct = merged.curve(PLD, step=STEP)
    eps = np.linspace(-2, mu_k ** 2 / 2 + 6 * mu_k, 401) + 0.37 * STEP
    exact = gaussian_delta(mu_k, eps)
    for pld in (composed, direct):
        lo, up = pld.delta_interval(eps)
        assert np.all(up >= exact * (1 - 1e-12) - 1e-300)
        assert np.all(lo <= exact * (1 + 1e-12) + 1e-300)
    big = exact > 1e-8
    np.testing.assert_allclose(composed.delta(eps)[big], direct.delta(eps)[big], rtol=2e-3)
    # profiles: the pair's closed-form self-composition is the Gaussian with μ√k
    pair_k = accounting.compose((one.pair(), k))
    np.testing.assert_allclose(pair_k.curve(PrivacyProfile).delta(eps),
                               merged.curve(PrivacyProfile).delta(eps), rtol=1e-12, atol=1e-300)
    # trade-off: the composed PLD's against G_{μ√k} (α < 1e-6: see the xfails below)
    a = np.linspace(1e-6, 1, 401)
    to = composed.to(TradeOff)
    g = gaussian_beta(mu_k, a)
    assert np.all(to.beta(a) <= g + 1e-12) and np.all(to.beta(a, bound="lower") >= g - 1e-12)
    np.testing.assert_allclose(to.beta(a), g, atol=5e-4)
    # RDP and zCDP compose by addition
    alphas = np.array([1.5, 2.0, 8.0, 64.0])
    np.testing.assert_allclose(one.curve(RDP).self_compose(k).rdp(alphas),
                               merged.curve(RDP).rdp(alphas), rtol=1e-12)
    assert one.curve(ZCDP).self_compose(k).rho() == pytest.approx(merged.curve(ZCDP).rho(),
                                                                    rel=1e-12)


def test_composed_upper_tradeoff_at_tiny_alpha_is_within_fft_roundoff(plds):
    to = plds[2.0].self_compose(100).to(TradeOff)
    a = np.geomspace(1e-12, 1e-6, 200)
    assert np.max(to.beta(a) - gaussian_beta(5.0, a)) < 5e-6     # measured 3.0e-6


def test_topped_up_puts_lost_mass_on_the_top_loss():
    law = LossPMF.from_atoms(np.array([-1.0, 0.5, 2.0]), np.array([0.2, 0.3, 0.5 - 1e-13]))
    up = law.topped_up()
    assert up.masses[-1] == pytest.approx(0.5, abs=1e-16) and up.inf_mass == 0.0
    assert np.all(up.delta(np.linspace(-2, 3, 11)) >= law.delta(np.linspace(-2, 3, 11)))
    full = LossPMF.from_atoms(np.array([0.0]), np.array([1.0]))
    assert full.topped_up() is full


def test_composed_upper_tradeoff_is_sound_at_tiny_alpha(plds):
    to = plds[2.0].self_compose(100).to(TradeOff)
    a = np.geomspace(1e-12, 1e-6, 200)
    assert np.all(to.beta(a) <= gaussian_beta(5.0, a) + 1e-12)


def test_composed_lower_tradeoff_at_alpha_zero(plds):
    for sigma, k in ((2.0, 100), (0.5, 100)):
        to = plds[sigma].self_compose(k).to(TradeOff)
        assert to.beta(0.0, bound="lower") >= 1.0 - 1e-12


@pytest.mark.parametrize("sigma", SIGMAS)
def test_pld_epsilon_brackets_the_exact_epsilon(plds, sigma):
    """ε from the composed PLD, over σ × k × δ: upper never below, lower never above."""
    for k in COUNTS:
        pld = plds[sigma] if k == 1 else plds[sigma].self_compose(k)
        mu = np.sqrt(k) / sigma
        lo, up = pld.epsilon_interval(np.array(DELTAS))
        for i, delta in enumerate(DELTAS):
            exact = gaussian_epsilon(mu, delta)
            assert up[i] >= exact, (sigma, k, delta)
            assert lo[i] <= exact, (sigma, k, delta)
            if delta >= 1e-8:
                assert up[i] - exact < 1e-3 * max(1.0, exact)


def test_accountant_agrees_with_the_composed_pld(plds):
    acc = accounting.Accountant(step=STEP).compose(accounting.mechanism("gaussian", sigma=2.0),
                                                   count=10)
    lo, up = plds[2.0].self_compose(10).epsilon_interval(1e-5)
    got = float(acc.epsilon(1e-5))
    assert got == pytest.approx(float(up), abs=1e-5)
    assert lo <= got
    assert got >= gaussian_epsilon(np.sqrt(10) / 2, 1e-5)


def test_provenance_of_the_closed_forms(gaussian1):
    for kind in (PLD, PrivacyProfile, TradeOff, RDP, ZCDP):
        curve = gaussian1.curve(kind, step=STEP) if kind is PLD else gaussian1.curve(kind)
        assert curve.provenance.exactness is Exactness.EXACT
        assert curve.provenance.path[0].startswith("Gaussian(μ=1)")


@pytest.mark.slow
def test_lower_epsilon_does_not_degrade_on_a_finer_grid():
    """σ = 0.1 (μ = 10): the minorant's roundoff-sized negative masses are paid from
    the masses above them (no longer booked as slack, 9.9e-10 at step 2e-4, which
    put ε_lower(1e-8) 0.0155 below the exact ε); measured gaps 2.5e-7, 4.9e-8, 1.0e-8
    at steps 1e-3, 5e-4, 2e-4."""
    mech = accounting.mechanism("gaussian", sigma=0.1)
    exact = gaussian_epsilon(10.0, 1e-8)
    for step in (1e-3, 5e-4, 2e-4):
        lower, upper = mech.curve(PLD, step=step).epsilon_interval(1e-8)
        assert lower <= exact <= upper
        assert exact - lower < 1e-5
