"""The Poisson-subsampled Gaussian: profiles against quadrature, its PLD, its Rényi curve.

(The exact RDP quadrature itself is tested in test_subsampled_gaussian_rdp.py.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import accounting
from accounting import PLD, RDP, ZCDP, PrivacyProfile

from closed_forms import gaussian_delta, hockey_stick_quad, sg_densities, sg_rdp_integer

STEP = 1e-3
Q, SIGMA = 0.1, 1.0
EPS = np.array([-1.0, -0.5, -0.05, 0.0, 0.05, 0.1, 0.3, 0.5, 1.0, 1.5, 2.0, 3.0])


@pytest.fixture(scope="module")
def quad_profiles():
    """δ_{P‖Q}(ε) and δ_{Q‖P}(ε) by scipy quad of (p − e^ε q)₊ over the line."""
    p, q = sg_densities(Q, SIGMA)
    fwd = np.array([hockey_stick_quad(p, q, e, SIGMA) for e in EPS])
    bwd = np.array([hockey_stick_quad(q, p, e, SIGMA) for e in EPS])
    return fwd, bwd


def test_profiles_match_quadrature(subsampled, quad_profiles):
    prof = subsampled.curve(PrivacyProfile)
    fwd, bwd = quad_profiles
    np.testing.assert_allclose(prof.delta(EPS, "forward"), fwd, rtol=1e-8, atol=1e-15)
    np.testing.assert_allclose(prof.delta(EPS, "backward"), bwd, rtol=1e-8, atol=1e-15)
    assert not np.allclose(fwd, bwd)


def test_directions_agree_at_zero_on_total_variation(subsampled, quad_profiles):
    prof = subsampled.curve(PrivacyProfile)
    fwd, bwd = quad_profiles
    i = int(np.flatnonzero(EPS == 0.0)[0])
    tv = Q * math.erf(1 / (2 * math.sqrt(2) * SIGMA))   # q·TV(N(1,σ²), N(0,σ²)) = q(2Φ(1/2σ) − 1)
    assert prof.delta(0.0, "forward") == pytest.approx(prof.delta(0.0, "backward"), rel=1e-12)
    assert prof.delta(0.0, "forward") == pytest.approx(tv, rel=1e-10)
    assert fwd[i] == pytest.approx(bwd[i], rel=1e-9)


def test_pld_brackets_quadrature(subsampled_pld, quad_profiles):
    fwd, bwd = quad_profiles
    for d, exact in (("forward", fwd), ("backward", bwd)):
        lo, up = subsampled_pld.delta(EPS, d, "lower"), subsampled_pld.delta(EPS, d)
        # the quadrature is good to ~1e-12 relative; the bracket is checked to that accuracy
        assert np.all(up >= exact * (1 - 1e-10) - 1e-16)
        assert np.all(lo <= exact * (1 + 1e-10) + 1e-16)
        # the stated discretisation error: small in absolute terms everywhere, and relative
        # to δ in the forward direction (the backward δ vanishes at ε = −log(1 − q) ≈ 0.105,
        # where a relative criterion is meaningless)
        assert np.max(up - lo) < 1e-5
        if d == "forward":
            big = exact > 1e-8
            assert np.max((up - lo)[big] / exact[big]) < 1e-3


def test_pld_brackets_the_closed_form_densely(subsampled, subsampled_pld):
    eps = np.linspace(-2, 6, 4001) + 0.37 * STEP
    for d in ("forward", "backward"):
        exact = subsampled.pair().profile(eps, d)
        lo, up = subsampled_pld.delta(eps, d, "lower"), subsampled_pld.delta(eps, d)
        assert np.all(up >= exact * (1 - 1e-12) - 1e-300)
        assert np.all(lo <= exact * (1 + 1e-12) + 1e-300)


def quadrature_rdp(alpha: float, direction: str) -> float:
    """D_α by the plugin's adaptive quadrature (~1e-13 relative; the certified default
    curve is an upper bound, looser than this in the add direction)."""
    from accounting_mechanisms import subsampled_gaussian_rdp as sgm
    fn = sgm.rdp_remove if direction == "forward" else sgm.rdp_add
    return float(fn(Q, SIGMA, alpha))


@pytest.mark.parametrize("alpha", [2.0, 5.0, 10.0])
def test_lower_pld_rdp_is_below_the_exact_rdp(subsampled, subsampled_pld, alpha):
    from_pld = subsampled_pld.to(RDP)
    for d in ("forward", "backward"):
        exact = quadrature_rdp(alpha, d)
        assert from_pld.rdp(alpha, d, bound="lower") <= exact * (1 + 1e-12)
        assert from_pld.rdp(alpha, d) >= exact * (1 - 1e-12)   # upper: ≥ (maybe ∞)


@pytest.mark.parametrize("alpha,direction", [(2.0, "forward"), (5.0, "forward"),
                                             (2.0, "backward"), (5.0, "backward"),
                                             (10.0, "backward")])
def test_lower_pld_rdp_is_close_to_the_exact_rdp(subsampled, subsampled_pld, alpha, direction):
    exact = quadrature_rdp(alpha, direction)
    got = float(subsampled_pld.to(RDP).rdp(alpha, direction, bound="lower"))
    assert got == pytest.approx(exact, rel=1e-2)


@pytest.mark.xfail(reason=(
    "LIMITATION (kept, issue 11): profile_to_pld cuts the loss law where δ falls to the "
    "tail 1e-20 and the optimistic law drops the P-mass beyond (sound: a lower bound). At "
    "α = 10 the weight e^{9L} peaks near L ≈ 7.2, past the cut at 6.96, so the lower-side "
    "D_10 is 2.3613 against 2.4428 (−3.34 %). Measured at step 1e-3 (q = 0.1, σ = 1): tail "
    "1e-24 gives −0.90 % (grid 8036 points, +14 %), 1e-28 −0.17 % (8925, +26 %), 1e-32 "
    "−0.021 % (9747), 1e-40 −0.0002 % (11239, +59 %). Not cheap: a smaller default tail "
    "grows every PLD and changes every printed number; a tail for the lower side alone "
    "would give the two sides different grids, which profile_to_pld now shares (one "
    "evaluation of the profile for both). Pass tail=1e-40 where high-order lower RDP "
    "matters (test_a_smaller_tail_fixes_the_high_order_rdp)"), strict=True)
def test_lower_pld_rdp_is_close_at_alpha_10_forward(subsampled, subsampled_pld):
    exact = float(subsampled.curve(RDP).rdp(10.0, "forward"))
    got = float(subsampled_pld.to(RDP).rdp(10.0, "forward", bound="lower"))
    assert got == pytest.approx(exact, rel=1e-2)


def test_a_smaller_tail_fixes_the_high_order_rdp(subsampled):
    pld = subsampled.curve(PLD, step=STEP, tail=1e-40)
    exact = float(subsampled.curve(RDP).rdp(10.0, "forward"))
    got = float(pld.to(RDP).rdp(10.0, "forward", bound="lower"))
    assert got <= exact * (1 + 1e-12)
    assert got == pytest.approx(exact, rel=1e-3)


@pytest.mark.parametrize("q,sigma", [(0.1, 1.0), (0.01, 0.8), (0.5, 2.0)])
def test_integer_order_rdp_is_the_binomial_sum(q, sigma):
    rdp = accounting.mechanism("subsampled_gaussian", q=q, sigma=sigma).curve(RDP)
    for a in (2, 3, 8, 20):
        assert rdp.rdp(float(a), "forward") == pytest.approx(sg_rdp_integer(q, sigma, a), rel=1e-9)


def test_forward_rho_and_q_one_is_the_gaussian():
    z = accounting.mechanism("subsampled_gaussian", q=0.05, sigma=2.0).curve(ZCDP)
    assert z.rho("forward") == pytest.approx(1 / (2 * 2.0 ** 2), rel=1e-14)
    full = accounting.mechanism("subsampled_gaussian", q=1.0, sigma=2.0)
    eps = np.linspace(-2, 3, 51)
    np.testing.assert_allclose(full.curve(PrivacyProfile).delta(eps, "forward"),
                               gaussian_delta(0.5, eps), rtol=1e-9, atol=1e-300)


def test_sensitivity_scales_like_the_noise():
    a = accounting.mechanism("subsampled_gaussian", q=0.2, sigma=3.0, sensitivity=2.0)
    b = accounting.mechanism("subsampled_gaussian", q=0.2, sigma=1.5)
    eps = np.linspace(-1, 3, 21)
    for d in ("forward", "backward"):
        np.testing.assert_allclose(a.curve(PrivacyProfile).delta(eps, d),
                                   b.curve(PrivacyProfile).delta(eps, d), rtol=1e-13)


@pytest.mark.parametrize("q", [1e-320, -0.1, 1.0001, 2.0, math.nan])   # (0: no cost, answered)
def test_bad_rate(q):
    with pytest.raises(ValueError, match="q must"):
        accounting.mechanism("subsampled_gaussian", q=q, sigma=1.0)
