"""dp_accounting's mixture of Gaussians: its published δ(ε), and the subsampled Gaussian."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import accounting
from accounting import PLD, RDP, PrivacyProfile
from accounting.testing import MechanismContract

NAN = float("nan")


def _mech(**params):
    return accounting.default_registry().mechanism("mixture_of_gaussians")(**params)


class TestMixtureOfGaussiansContract(MechanismContract):
    mechanism = _mech(sigma=1.0, sensitivities=(0.0, 1.0, 2.0), sampling_probs=(0.81, 0.18, 0.01))
    bad_parameters = [dict(sigma=-1.0), dict(sigma=NAN), dict(sensitivities=(0.0, -1.0, 2.0)),
                      dict(sampling_probs=(0.2, 0.2, 0.2)), dict(sampling_probs=(1.5, -0.25, -0.25)),
                      dict(sampling_probs=(0.5, 0.5)), dict(sensitivities="1")]


# dp_accounting's published δ at ε = 1, σ = 1 (its MixtureGaussianPrivacyLoss test):
# (sensitivities, probabilities, δ under REMOVE, δ under ADD)
FIGURES = [
    ((1.0,), (1.0,), 0.12693674, 0.12693674),
    ((3.0,), (1.0,), 0.78760074, 0.78760074),
    ((0.0, 1.0), (0.2, 0.8), 0.0816951786585355, 0.0231362104090899),
    ((0.0, 3.0), (0.3, 0.7), 0.5356298793262404, 0.1195051215523554),
    ((0.0, 1.0, 2.0), (0.2, 0.6, 0.2), 0.15768284088654105, 0.036691263832032806),
    ((1.0, 2.0), (0.2, 0.8), 0.433276675545065, 0.3894964356580768),
]


@pytest.mark.parametrize("c,p,remove,add", FIGURES)
def test_dp_accounting_published_delta(c, p, remove, add):
    pair = _mech(sigma=1.0, sensitivities=c, sampling_probs=p).pair()
    # the 8-digit figures are rounded; the 16-digit ones agree to ~1e-13
    tol = dict(abs=5e-9) if len(str(remove)) < 12 else dict(rel=1e-11)
    assert float(pair.profile(1.0, "forward")) == pytest.approx(remove, **tol)
    tol = dict(abs=5e-9) if len(str(add)) < 12 else dict(rel=1e-11)
    assert float(pair.profile(1.0, "backward")) == pytest.approx(add, **tol)


@pytest.mark.parametrize("q,sigma", [(0.1, 1.5), (0.01, 0.8), (0.5, 3.0)])
def test_two_points_is_the_subsampled_gaussian(q, sigma):
    mog = _mech(sigma=sigma, sensitivities=(0.0, 1.0), sampling_probs=(1 - q, q)).pair()
    sg = accounting.mechanism("subsampled_gaussian", sigma=sigma, q=q).pair()
    eps = np.linspace(-4, 6, 41)
    for d in ("forward", "backward"):
        a, b = mog.profile(eps, d), sg.profile(eps, d)
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-300)


def _mp_delta(c, p, s, eps, direction):
    """δ(ε) in 30 digits: the threshold x with L(x) = ±ε by mpmath's root finder, then
    P(X > x) − e^ε Q(X > x) (forward) or Q(X < x) − e^ε P(X < x) (backward)."""
    mp.mp.dps = 30
    c = [mp.mpf(v) for v in c]
    p = [mp.mpf(v) for v in p]
    s = mp.mpf(s)
    L = lambda x: mp.log(sum(pi * mp.e ** ((2 * ci * x - ci * ci) / (2 * s * s))   # noqa: E731
                             for ci, pi in zip(c, p)))
    level = eps if direction == "forward" else -eps
    p0 = sum(pi for ci, pi in zip(c, p) if ci == 0)
    if p0 > 0 and level <= mp.log(p0):        # L > level everywhere
        return float(-mp.expm1(min(eps, 0))) if direction == "forward" else 0.0
    x = mp.findroot(lambda x: L(x) - level, mp.mpf(0.5))
    up_p = sum(pi * (1 - mp.ncdf(x, ci, s)) for ci, pi in zip(c, p))
    up_q = 1 - mp.ncdf(x, 0, s)
    if direction == "forward":
        return float(up_p - mp.e ** eps * up_q)
    return float((1 - up_q) - mp.e ** eps * (1 - up_p))


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_profile_against_quadrature(direction):
    c, p, s = (0.0, 0.7, 2.5), (0.5, 0.3, 0.2), 1.3
    pair = _mech(sigma=s, sensitivities=c, sampling_probs=p).pair()
    for e in (-0.5, 0.0, 0.3, 1.0, 2.5):
        assert float(pair.profile(e, direction)) == pytest.approx(
            _mp_delta(c, p, s, e, direction), rel=1e-11, abs=1e-16)


def test_renyi_against_quadrature():
    c, p, s = (0.0, 1.0, 2.0), (0.81, 0.18, 0.01), 1.0
    rdp = _mech(sigma=s, sensitivities=c, sampling_probs=p).curve(RDP)
    mp.mp.dps = 30
    P = lambda x: sum(pi * mp.npdf(x, ci, s) for ci, pi in zip(c, p))   # noqa: E731
    Q = lambda x: mp.npdf(x, 0, s)                                      # noqa: E731
    for a in (2.0, 5.0):
        fwd = mp.log(mp.quad(lambda x: P(x) ** a * Q(x) ** (1 - a), [-mp.inf, -5, 0, 5, mp.inf])) / (a - 1)
        bwd = mp.log(mp.quad(lambda x: Q(x) ** a * P(x) ** (1 - a), [-mp.inf, -5, 0, 5, mp.inf])) / (a - 1)
        assert float(rdp.rdp(a, "forward")) == pytest.approx(float(fwd), rel=1e-8)
        assert float(rdp.rdp(a, "backward")) == pytest.approx(float(bwd), rel=1e-8)


def test_zero_sensitivities_cost_nothing():
    m = _mech(sigma=1.0, sensitivities=(0.0, 0.0), sampling_probs=(0.5, 0.5))
    assert float(m.curve(PrivacyProfile).delta(0.0)) == 0.0
    assert float(m.curve(PLD).epsilon(1e-9)) == 0.0
    assert float(m.curve(RDP).rdp(3.0)) == 0.0


def test_dp_accounting_privacy_loss_agrees():
    """dp_accounting's own δ(ε) of the mechanism (its privacy-loss class), both directions."""
    plm = pytest.importorskip("dp_accounting.pld.privacy_loss_mechanism")
    c, p, s = [0.0, 0.5, 2.0], [0.6, 0.3, 0.1], 1.2
    ours = _mech(sigma=s, sensitivities=tuple(c), sampling_probs=tuple(p)).pair()
    for adj, d in ((plm.AdjacencyType.REMOVE, "forward"), (plm.AdjacencyType.ADD, "backward")):
        theirs = plm.MixtureGaussianPrivacyLoss(s, c, p, adjacency_type=adj)
        eps = [0.1, 0.5, 1.0, 2.0]
        want = np.ravel(theirs.get_delta_for_epsilon(eps))
        np.testing.assert_allclose(ours.profile(np.array(eps), d), want, rtol=1e-7, atol=1e-12)


@pytest.mark.slow
def test_dp_accounting_pld_agrees():
    """dp_accounting's PLD (pessimistic, 1e-4 grid; ~140 s to build) composed 4 times."""
    pld_mod = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    c, p, s = [0.0, 1.0, 2.0], [0.81, 0.18, 0.01], 1.0
    theirs = pld_mod.from_mixture_gaussian_mechanism(s, c, p).self_compose(4)
    acct = accounting.Accountant(step=1e-3)
    acct.compose(_mech(sigma=s, sensitivities=tuple(c), sampling_probs=tuple(p)), 4)
    lo, hi = acct.epsilon_interval(1e-5)
    t = theirs.get_epsilon_for_delta(1e-5)
    assert lo <= t + 1e-3 and t <= hi + 1e-3 and hi - lo < 1e-2, (lo, hi, t)


@pytest.mark.parametrize("c, p", [((0.0, 1.0), (0.7, 0.3)), ((0.0, 1.0, 2.0), (0.81, 0.18, 0.01)),
                                  ((1.0, 2.0), (0.5, 0.5)), ((0.0, 0.0), (0.4, 0.6))])
def test_sigma_zero_is_the_exact_noiseless_pair(c, p):
    """σ = 0 (refused on main, which the docs say is answered): the output is the
    sensitivity itself, P = Σ p_i δ_{c_i} against Q = δ_0, so with p₀ = P(c = 0)
    δ_{P‖Q}(ε) = 1 − p₀ + (p₀ − e^ε)₊ and δ_{Q‖P}(ε) = (1 − e^ε p₀)₊ (by hand from the
    two outcomes 0 and > 0); ε(δ) = ∞ below 1 − p₀. At c = (0, 1) it is the subsampled
    Gaussian at σ = 0 (δ(ε) = q for ε ≥ 0)."""
    mech = _mech(sigma=0.0, sensitivities=c, sampling_probs=p)
    p0 = sum(pi for ci, pi in zip(c, p) if ci == 0)
    eps = np.array([-3.0, -1.0, math.log(p0) if p0 else -0.5, -0.1, 0.0, 0.5, 4.0])
    want_f = 1 - p0 + np.maximum(p0 - np.exp(eps), 0.0)
    want_b = np.maximum(1 - np.exp(eps) * p0, 0.0)
    prof = mech.curve(PrivacyProfile)
    np.testing.assert_allclose(prof.delta(eps, "forward"), want_f, rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(prof.delta(eps, "backward"), want_b, rtol=1e-14, atol=1e-16)
    if 0 < p0 < 1:
        assert float(prof.epsilon(0.999 * (1 - p0))) == math.inf
        assert float(prof.epsilon(1.001 * (1 - p0))) == 0.0
        # two uses: the record shows up unless both draws are 0, δ(ε ≥ 0) = 1 − p₀²
        acct = accounting.Accountant().compose(mech, 2)
        assert float(acct.delta(1.0)) == pytest.approx(1 - p0 ** 2, rel=1e-12)
    if c == (0.0, 1.0):
        sub = accounting.mechanism("subsampled_gaussian", q=p[1], sigma=0.0).pair()
        for d in ("forward", "backward"):
            np.testing.assert_allclose(mech.pair().profile(eps, d), sub.profile(eps, d),
                                       rtol=1e-14, atol=1e-16)
    if p0 == 0:
        assert float(prof.epsilon(0.5)) == math.inf
    if p0 == 1:
        assert float(prof.epsilon(1e-9)) == 0.0
