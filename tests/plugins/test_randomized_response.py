"""Randomized response: Mironov's Table II and the two-point distributions."""

from __future__ import annotations

import math

import numpy as np
import pytest

import accounting
from accounting import PLD, RDP, ZCDP, PrivacyProfile, TradeOff

from closed_forms import discrete_beta, discrete_delta, rr_distributions, rr_rdp

STEP = 1e-3
ALPHAS = [1.001, 1.01, 1.5, 2.0, 2.5, 3.0, 7.3, 10.0, 32.0, 100.0, 1000.0]
PS = [0.51, 0.6, 0.75, 0.9, 0.99, 0.3]


@pytest.mark.parametrize("p", PS)
def test_rdp_is_mironov_table_ii(p):
    rdp = accounting.mechanism("randomized_response", p=p).curve(RDP)
    got = rdp.rdp(np.array(ALPHAS))
    want = np.array([rr_rdp(a, p) for a in ALPHAS])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(rdp.rdp(np.array(ALPHAS), bound="lower"), want, rtol=1e-9,
                               atol=1e-15)


def test_rdp_limits():
    p = 0.8
    rdp = accounting.mechanism("randomized_response", p=p).curve(RDP)
    assert rdp.rdp(1 + 1e-8) == pytest.approx((2 * p - 1) * math.log(p / (1 - p)), rel=1e-6)
    assert rdp.rdp(1e7) == pytest.approx(math.log(p / (1 - p)), rel=1e-5)


@pytest.mark.parametrize("p", PS)
def test_profile_equals_the_two_point_distributions(p):
    P, Q = rr_distributions(p)
    prof = accounting.mechanism("randomized_response", p=p).curve(PrivacyProfile)
    eps = np.linspace(-3, 3, 121)
    for d, (a, b) in (("forward", (P, Q)), ("backward", (Q, P))):
        np.testing.assert_allclose(prof.delta(eps, d), discrete_delta(a, b, eps), atol=1e-15)
    # ε(δ) in closed form: δ = p − e^ε(1 − p) on the affine piece (p > 1/2)
    if p > 0.5:
        for delta in (0.01, 0.1):
            want = max(0.0, math.log((p - delta) / (1 - p)))
            assert float(prof.epsilon(delta)) == pytest.approx(want, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("p", [0.55, 0.75, 0.9])
def test_tradeoff_is_neyman_pearson(p):
    P, Q = rr_distributions(p)
    to = accounting.mechanism("randomized_response", p=p).curve(TradeOff, step=STEP, lower=False)
    a = np.linspace(0, 1, 201)
    exact = discrete_beta(P, Q, a)
    up = to.beta(a)
    assert np.all(up <= exact + 1e-12)
    np.testing.assert_allclose(up, exact, atol=5e-3)


@pytest.mark.parametrize("p", [0.6, 0.75])
def test_pld_upper_side_brackets_the_profile(p):
    P, Q = rr_distributions(p)
    pld = accounting.mechanism("randomized_response", p=p).curve(PLD, step=STEP, lower=False)
    eps = np.linspace(-2, 2, 801) + 0.37 * STEP
    exact = discrete_delta(P, Q, eps)
    up = pld.delta(eps)
    assert np.all(up >= exact - 1e-15)
    assert np.max(up - exact) < STEP              # one grid cell around the atoms ±log(p/(1−p))


def test_pld_lower_side_brackets_the_profile():
    p = 0.75
    P, Q = rr_distributions(p)
    pld = accounting.mechanism("randomized_response", p=p).curve(PLD, step=STEP)
    eps = np.linspace(-2, 2, 801) + 0.37 * STEP
    exact = discrete_delta(P, Q, eps)
    lo, up = pld.delta_interval(eps)
    assert np.all(lo <= exact + 1e-15) and np.all(up >= exact - 1e-15)
    assert np.max(up - lo) < STEP


def test_rho_is_the_envelope_of_table_ii():
    p = 0.75
    z = accounting.mechanism("randomized_response", p=p).curve(ZCDP)
    ts = np.geomspace(1e-4, 1e3, 400)
    brute = max(t * rr_rdp(1 + t, p) / (t * (t + 1)) for t in ts)
    assert z.rho() >= brute * (1 - 1e-9)
    assert z.rho() == pytest.approx(brute, rel=1e-4)


def test_p_half_is_perfectly_private():
    rr = accounting.mechanism("randomized_response", p=0.5)
    assert rr.curve(RDP).rdp(5.0) == pytest.approx(0.0, abs=1e-15)
    assert rr.curve(PrivacyProfile).delta(0.0) == pytest.approx(0.0, abs=1e-15)


def test_parameter_errors():
    for p in (0.0, 1.0, -0.2, 1.5, math.nan):
        with pytest.raises(ValueError, match="p must"):
            accounting.mechanism("randomized_response", p=p)
    with pytest.raises(ValueError, match="sensitivity must be 1"):
        accounting.mechanism("randomized_response", p=0.7, sensitivity=2.0)
    assert accounting.mechanism("randomized_response", p=0.7).neighbouring.value == "replace_one"
