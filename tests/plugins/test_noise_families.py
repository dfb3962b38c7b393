"""Noise families defined by a log-density: generalised Gaussian, Student-t, Gaussian mixture.

The generic numerics of ``accounting.pairs.additive`` (cell laws for the PLD/profile, Rényi
curve by log-space quadrature) are checked against closed forms where the family has
them (generalised Gaussian at β = 2 and β = 1 are the Gaussian and the Laplace
mechanism) and against independent quadratures (scipy / mpmath, in this file, never
calling the library) elsewhere. Measured accuracies are asserted with stated
tolerances; where the generic numerics fail, a strict xfail records the bug.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate
from scipy.special import gammaln

import accounting
from accounting import PLD, RDP, ZCDP, PluginError, PrivacyProfile, TradeOff
from accounting_mechanisms import gaussian_mixture, generalised_gaussian, student_t
from accounting_mechanisms.gaussian import GaussianPair
from accounting_mechanisms.laplace import LaplacePair

from closed_forms import (gaussian_beta, gaussian_delta, gaussian_epsilon, laplace_delta,
                          laplace_rdp)

GG = generalised_gaussian.GeneralisedGaussian
StudentT = student_t.StudentT
Mixture = gaussian_mixture.GaussianMixture

STEP = 1e-3
RDP_ALPHAS = np.array([1.5, 2.0, 5.0, 20.0])
DELTAS = np.array([1e-3, 1e-6, 1e-10])
SQRT2 = math.sqrt(2.0)
MIX_SYM = ((0.5, 0.5), (-1.0, 1.0), (1.0, 1.0))
MIX_ASYM = ((0.3, 0.7), (0.0, 2.0), (1.0, 0.5))


# ------------------------------------------------------------ independent references
def laplace_epsilon(e: float, delta):
    """Inverse of δ(ε) = 1 − exp((ε − e)/2) on [0, e]."""
    return np.maximum(e + 2.0 * np.log1p(-np.asarray(delta, dtype=float)), 0.0)


def laplace_beta(e: float, alpha):
    """Trade-off of (Lap(Δ, b), Lap(0, b)), e = Δ/b (Dong, Roth, Su 2019, Laplace example)."""
    a = np.asarray(alpha, dtype=float)
    return np.where(a < math.exp(-e) / 2, 1.0 - math.exp(e) * a,
                    np.where(a <= 0.5, math.exp(-e) / (4.0 * np.maximum(a, 1e-300)),
                             math.exp(-e) * (1.0 - a)))


def _log_quad(h, centre_pts, lo, hi):
    """log ∫ exp(h) over [lo, hi] by scipy quad, shifted by the peak found on a scan."""
    xs = np.linspace(lo, hi, 200001)
    hv = h(xs)
    top = float(np.max(hv))
    keep = np.flatnonzero(hv > top - 90.0)
    a, b = xs[max(keep[0] - 1, 0)], xs[min(keep[-1] + 1, xs.size - 1)]
    pts = sorted({a, b, float(xs[np.argmax(hv)]), *[p for p in centre_pts if a < p < b]})
    total = sum(integrate.quad(lambda x: math.exp(float(h(np.array([x]))[0]) - top), u, v,
                               epsabs=0.0, epsrel=1e-13, limit=400)[0]
                for u, v in zip(pts[:-1], pts[1:]))
    return math.log(total) + top


def mixture_logpdf(w, m, s):
    def logf(x):
        x = np.asarray(x, dtype=float)
        terms = [math.log(wk) - math.log(sk) - 0.5 * math.log(2 * math.pi) - 0.5 * ((x - mk) / sk) ** 2
                 for wk, mk, sk in zip(w, m, s)]
        return np.logaddexp.reduce(np.array(terms), axis=0)
    return logf


def mixture_rdp_quad(w, m, s, alpha, d=1.0, direction="forward"):
    """D_α of (d + Z, Z) (forward) or (Z, d + Z) (backward) by scipy quad of p^α q^{1−α}."""
    logf = mixture_logpdf(w, m, s)
    if direction == "forward":
        h = lambda x: alpha * logf(x - d) + (1 - alpha) * logf(x)  # noqa: E731
    else:
        h = lambda x: alpha * logf(x) + (1 - alpha) * logf(x - d)  # noqa: E731
    span = 30.0 * alpha * (max(s) + max(abs(v) for v in m) + d)
    pts = list(m) + [v + d for v in m]
    return _log_quad(h, pts, -span, span) / (alpha - 1)


def gg_rdp_quad(beta, alpha, d=1.0):
    """D_α of (d + Z, Z), Z ∝ exp(−|x|^β), by scipy quad split at the kinks 0 and d."""
    log_norm = math.log(beta / 2.0) - gammaln(1.0 / beta)
    h = lambda x: log_norm - alpha * np.abs(x - d) ** beta - (1 - alpha) * np.abs(x) ** beta  # noqa: E731
    return _log_quad(h, [0.0, d], -400.0, 400.0) / (alpha - 1)


def student_t_rdp_mp(nu, alpha, d=1.0):
    """D_α of (d + T, T), T ~ t_ν, by mpmath quadrature (30 digits)."""
    with mp.workdps(30):
        nu_, a = mp.mpf(nu), mp.mpf(alpha)
        lf = lambda x: -(nu_ + 1) / 2 * mp.log1p(x * x / nu_)  # noqa: E731
        z = mp.quad(lambda x: mp.exp(lf(x)), [-mp.inf, 0, mp.inf])
        i = mp.quad(lambda x: mp.exp(a * lf(x - d) + (1 - a) * lf(x)), [-mp.inf, -10, 0, d, 10, mp.inf])
        return float(mp.log(i / z) / (a - 1))


def student_t_delta(nu, eps, d=1.0):
    """δ(ε) of (d + T, T), T ~ t_ν, ε ≥ 0: {L > ε} is the interval between the roots of
    (1 − c)x² + 2cd·x + (1 − c)ν − cd² with c = e^{2ε/(ν+1)}; δ = ∫ (p − e^ε q) over it
    (mpmath, 30 digits)."""
    with mp.workdps(30):
        nu_, e, d_ = mp.mpf(nu), mp.mpf(eps), mp.mpf(d)
        k = mp.exp(mp.loggamma((nu_ + 1) / 2) - mp.loggamma(nu_ / 2)) / mp.sqrt(nu_ * mp.pi)
        pdf = lambda x: k * (1 + x * x / nu_) ** (-(nu_ + 1) / 2)  # noqa: E731
        f = lambda x: pdf(x - d_) - mp.exp(e) * pdf(x)  # noqa: E731
        if eps == 0:
            return float(mp.quad(f, [d_ / 2, d_, mp.inf]))
        c = mp.exp(2 * e / (nu_ + 1))
        a2, b1, c0 = 1 - c, 2 * c * d_, (1 - c) * nu_ - c * d_ * d_
        disc = b1 * b1 - 4 * a2 * c0
        if disc <= 0:
            return 0.0
        r1, r2 = sorted([(-b1 + mp.sqrt(disc)) / (2 * a2), (-b1 - mp.sqrt(disc)) / (2 * a2)])
        return float(mp.quad(f, [r1, (r1 + r2) / 2, r2]))


def gg_delta_quad(beta, eps, d=1.0):
    """δ(ε) for Z ∝ exp(−|x|^β), β < 1, ε close to the largest loss d^β: {L > ε} is an
    interval around the cusp at d (roots by brentq); δ = ∫ (p − e^ε q) over it."""
    from scipy.optimize import brentq
    loss = lambda x: abs(x) ** beta - abs(x - d) ** beta  # noqa: E731
    lo = brentq(lambda x: loss(x) - eps, 0.0, d, xtol=1e-15)
    hi = brentq(lambda x: loss(x) - eps, d, 10.0 * d + 10.0, xtol=1e-15)
    log_norm = math.log(beta / 2.0) - gammaln(1.0 / beta)
    f = lambda x: (math.exp(log_norm - abs(x - d) ** beta)  # noqa: E731
                   - math.exp(eps + log_norm - abs(x) ** beta))
    return integrate.quad(f, lo, hi, points=[d], epsabs=0.0, epsrel=1e-12, limit=400)[0]


# -------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def gauss_generic():
    """The generalised Gaussian at β = 2, σ = 1, by the generic numerics: pair and PLD."""
    pair = GG(beta=2.0, scale=SQRT2).generic_pair()
    return pair, pair.curve(PLD, step=STEP)


@pytest.fixture(scope="module")
def laplace_generic():
    """The generalised Gaussian at β = 1, b = 1, by the generic numerics: pair and PLD."""
    pair = GG(beta=1.0, scale=1.0).generic_pair()
    return pair, pair.curve(PLD, step=STEP)


FAMILIES = {
    "gg_1.5": lambda: GG(beta=1.5, scale=1.0),
    "student_t_10": lambda: StudentT(nu=10.0, scale=1.0),
    "mixture_sym": lambda: Mixture(*MIX_SYM),
    "mixture_asym": lambda: Mixture(*MIX_ASYM),
}


@pytest.fixture(scope="module")
def family_curves():
    """For each family: mechanism, its direct RDP and its PLD at step 1e-3 (built once)."""
    out = {}
    for name, make in FAMILIES.items():
        mech = make()
        out[name] = (mech, mech.curve(RDP), mech.curve(PLD, step=STEP))
    return out


# ------------------------------------------------- generalised Gaussian: closed forms
@pytest.mark.parametrize("sens", [1.0, 0.7])
def test_generalised_gaussian_uses_the_closed_forms_at_beta_1_and_2(sens):
    for sigma in (0.5, 2.0):
        pair = GG(beta=2.0, scale=sigma * SQRT2, sensitivity=sens).pair()
        assert isinstance(pair, GaussianPair)
        assert pair.mu == pytest.approx(sens / sigma, rel=1e-15)
        gauss = accounting.mechanism("gaussian", sigma=sigma, sensitivity=sens)
        _same_curves(GG(beta=2.0, scale=sigma * SQRT2, sensitivity=sens), gauss, 6.0 * sens / sigma)
    for b in (0.5, 3.0):
        pair = GG(beta=1.0, scale=b, sensitivity=sens).pair()
        assert isinstance(pair, LaplacePair)
        assert pair.e == pytest.approx(sens / b, rel=1e-15)
        lap = accounting.mechanism("laplace", b=b, sensitivity=sens)
        _same_curves(GG(beta=1.0, scale=b, sensitivity=sens), lap, 1.5 * sens / b)


def _same_curves(mech, ref, eps_max):
    eps = np.linspace(-eps_max, eps_max, 401)
    alphas = np.array([1.01, 1.5, 2.0, 5.0, 20.0, 300.0])
    a = np.array([1e-6, 1e-3, 0.05, 0.3, 0.5, 0.8])
    np.testing.assert_allclose(mech.curve(PrivacyProfile).delta(eps),
                               ref.curve(PrivacyProfile).delta(eps), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(mech.curve(RDP).rdp(alphas), ref.curve(RDP).rdp(alphas), rtol=1e-12)
    assert mech.curve(ZCDP).rho() == pytest.approx(ref.curve(ZCDP).rho(), rel=1e-12)
    np.testing.assert_allclose(mech.curve(TradeOff).beta(a), ref.curve(TradeOff).beta(a),
                               rtol=1e-12, atol=1e-15)


def test_generalised_gaussian_pld_at_beta_1_and_2_brackets_the_exact_epsilon():
    """The dispatched pair's PLD: upper ε never below the exact ε, lower never above."""
    pld = GG(beta=2.0, scale=SQRT2).curve(PLD, step=STEP)
    lo, up = pld.epsilon_interval(DELTAS)
    exact = np.array([gaussian_epsilon(1.0, d) for d in DELTAS])
    assert np.all(lo <= exact) and np.all(exact <= up)
    assert np.max(up - lo) < 1e-4
    pld = GG(beta=1.0, scale=1.0).curve(PLD, step=STEP)
    lo, up = pld.epsilon_interval(DELTAS)
    exact = laplace_epsilon(1.0, DELTAS)
    assert np.all(lo <= exact + 1e-12) and np.all(exact <= up + 1e-12)


# ------------------------------------- generalised Gaussian: generic numerics vs closed
def test_generic_beta_2_profile_brackets_balle_wang(gauss_generic):
    pair, _ = gauss_generic
    eps = np.linspace(-3.0, 7.0, 1501) + 0.37 * STEP
    exact = gaussian_delta(1.0, eps)
    for d in ("forward", "backward"):
        up, lo = pair.profile(eps, d), pair.profile(eps, d, bound="lower")
        assert np.all(up >= exact * (1 - 1e-12)), d
        assert np.all(lo <= exact * (1 + 1e-12)), d
        big = exact > 1e-10
        # measured 2.5e-4 (worst far in the tail, ε ≈ 6.5; 1.3e-4 each side of the exact)
        assert np.max((up - lo)[big] / exact[big]) < 4e-4


def test_generic_beta_2_pld_epsilon_brackets_the_exact_epsilon(gauss_generic):
    _, pld = gauss_generic
    lo, up = pld.epsilon_interval(DELTAS)
    exact = np.array([gaussian_epsilon(1.0, d) for d in DELTAS])
    assert np.all(lo <= exact) and np.all(exact <= up)
    assert np.max(up - lo) < 1e-4                     # measured 5.0e-5 at δ = 1e-10


def test_generic_beta_2_rdp_and_rho(gauss_generic):
    pair, _ = gauss_generic
    rdp = pair.curve(RDP)
    for d in ("forward", "backward"):
        # αΔ²/(2σ²); measured ≤ 6e-13 relative
        np.testing.assert_allclose(rdp.rdp(RDP_ALPHAS, d), RDP_ALPHAS / 2.0, rtol=1e-7)
    # ρ = Δ²/(2σ²) = 1/2. The envelope reads K(t)/t near t = 1e-6, where the quadrature's
    # ~1e-13 absolute error is amplified: measured +5.4e-7 relative.
    assert pair.curve(ZCDP).rho() == pytest.approx(0.5, rel=5e-6)


def test_generic_beta_2_tradeoff_brackets_g_mu(gauss_generic):
    _, pld = gauss_generic
    to = pld.to(TradeOff)
    a = np.array([1e-4, 1e-3, 0.01, 0.1, 0.3, 0.5, 0.9])
    exact = gaussian_beta(1.0, a)
    for d in ("forward", "backward"):
        up, lo = to.beta(a, d), to.beta(a, d, bound="lower")
        assert np.all(up <= exact + 1e-13) and np.all(exact <= lo + 1e-13), d
        assert np.max(lo - up) < 5e-7                 # measured 1.3e-7


def test_generic_beta_1_profile_brackets_laplace(laplace_generic):
    """The bracket holds to roundoff: the kinks at 0 and Δ are cell edges."""
    pair, _ = laplace_generic
    eps = np.linspace(-1.2, 1.2, 2001) + 0.37 * STEP
    exact = laplace_delta(1.0, eps)
    for d in ("forward", "backward"):
        up, lo = pair.profile(eps, d), pair.profile(eps, d, bound="lower")
        assert np.all(up >= exact * (1 - 1e-12) - 1e-15)
        assert np.all(lo <= exact * (1 + 1e-12) + 1e-15)
        # near ε = Δ/b, δ → 0 linearly while the cell at Δ keeps its width: measured
        # 1.1e-7 absolute, 3.9e-5 relative where δ > 1e-4 (2.2e-4 at δ = 1.5e-5)
        assert np.max(up - lo) < 3e-7
        big = exact > 1e-4
        assert np.max((up - lo)[big] / exact[big]) < 1e-4


@pytest.mark.parametrize("b", [0.5, 1.0])
def test_generic_beta_1_profile_bracket_is_certified(b):
    pair = GG(beta=1.0, scale=b).generic_pair()
    e = 1.0 / b
    eps = np.linspace(-1.2 * e, 1.2 * e, 20001)
    exact = laplace_delta(e, eps)
    assert np.all(pair.profile(eps) >= exact * (1 - 1e-12))
    assert np.all(pair.profile(eps, bound="lower") <= exact * (1 + 1e-12))


def test_generic_beta_1_pld_epsilon_and_tradeoff(laplace_generic):
    _, pld = laplace_generic
    lo, up = pld.epsilon_interval(DELTAS)
    exact = laplace_epsilon(1.0, DELTAS)
    assert np.all(lo <= exact + 1e-12) and np.all(exact <= up + 1e-12)
    assert np.max(up - lo) < 2 * STEP                 # pure 1-DP: the last grid cell
    to = pld.to(TradeOff)
    a = np.array([1e-4, 1e-3, 0.01, 0.1, 0.3, 0.5, 0.9])
    exact = laplace_beta(1.0, a)
    assert np.all(to.beta(a) <= exact + 1e-9) and np.all(exact <= to.beta(a, bound="lower") + 1e-9)


def test_generic_beta_1_rdp_accuracy(laplace_generic):
    """Mironov's Laplace formula; the quadrature straddles the kinks: ~1e-4, both signs."""
    pair, pld = laplace_generic
    want = np.array([laplace_rdp(a, 1.0) for a in RDP_ALPHAS])
    np.testing.assert_allclose(pair.curve(RDP).rdp(RDP_ALPHAS), want, rtol=1e-3)  # measured 2.4e-4
    # the PLD's Rényi bracket (cell laws, no quadrature) does contain the formula
    rdp = pld.to(RDP)
    assert np.all(rdp.rdp(RDP_ALPHAS, bound="lower") <= want * (1 + 1e-12))
    np.testing.assert_allclose(rdp.rdp(RDP_ALPHAS, bound="lower"), want, rtol=1e-3)


@pytest.mark.parametrize("b", [1.0, 3.0])
def test_generic_beta_1_rdp_is_mironov_to_1e_7(b):
    got = GG(beta=1.0, scale=b).generic_pair().curve(RDP).rdp(RDP_ALPHAS)
    want = np.array([laplace_rdp(a, 1.0 / b) for a in RDP_ALPHAS])
    np.testing.assert_allclose(got, want, rtol=1e-7)


def test_generic_beta_1_rho_is_the_kl_divergence(laplace_generic):
    pair, _ = laplace_generic
    assert pair.curve(ZCDP).rho() == pytest.approx(1.0 + math.expm1(-1.0), rel=1e-5)


# --------------------------------------------- generalised Gaussian: other shapes
@pytest.mark.parametrize("beta, tol", [(1.5, 2e-7), (3.0, 1e-9)])
def test_generic_rdp_at_other_shapes_matches_quadrature(beta, tol):
    """Independent quadrature split at the kinks. β = 1.5 has a singular second derivative
    at 0 and Δ: measured 5.1e-8 relative at α = 1.5; β = 3: 2e-14."""
    rdp = GG(beta=beta, scale=1.0).curve(RDP)
    for a in (1.5, 2.0, 5.0):
        assert float(rdp.rdp(a)) == pytest.approx(gg_rdp_quad(beta, a), rel=tol)


def test_generic_depends_on_sensitivity_over_scale_only():
    alphas = np.array([1.5, 4.0])
    a = GG(beta=1.5, scale=2.0, sensitivity=2.0).curve(RDP).rdp(alphas)
    b = GG(beta=1.5, scale=1.0).curve(RDP).rdp(alphas)
    np.testing.assert_allclose(a, b, rtol=1e-8)
    a = StudentT(nu=10.0, scale=3.0, sensitivity=3.0).pair().profile(np.array([0.2, 0.8]))
    b = StudentT(nu=10.0, scale=1.0).pair().profile(np.array([0.2, 0.8]))
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_generic_cusp_at_beta_below_1_is_covered():
    pair = GG(beta=0.5, scale=1.0).pair()
    exact = gg_delta_quad(0.5, 0.99)
    assert exact > 0
    assert float(pair.profile(0.99)) >= exact


def test_generic_rdp_conversion_for_light_tails():
    eps = GG(beta=4.0, scale=1.0).curve(RDP).epsilon(1e-3)
    assert np.isfinite(eps)


# ------------------------------------------------------------------------- Student-t
def test_student_t_approaches_the_gaussian():
    gap_rdp, gap_delta = [], []
    want_delta = float(gaussian_delta(1.0, 1.0))
    for nu in (10.0, 100.0, 1000.0):
        pair = StudentT(nu=nu, scale=1.0).pair()
        gap_rdp.append(abs(float(pair.curve(RDP).rdp(2.0)) - 1.0))        # Gaussian: α/2 = 1
        for bound in ("upper", "lower"):
            gap = abs(float(pair.profile(1.0, bound=bound)) - want_delta) / want_delta
            if bound == "upper":
                gap_delta.append(gap)
            else:
                assert gap == pytest.approx(gap_delta[-1], abs=1e-5)
    # measured: RDP 0.265, 0.0487, 0.00543; δ(1) 0.288, 0.0294, 0.00295
    assert gap_rdp[0] > gap_rdp[1] > gap_rdp[2] and gap_rdp[2] < 1e-2
    assert gap_delta[0] > gap_delta[1] > gap_delta[2] and gap_delta[2] < 1e-2


@pytest.mark.parametrize("nu", [1.0, 3.0, 10.0])
def test_student_t_profile_brackets_the_exact_hockey_stick(nu):
    """Heavy tails: the cell laws cope (the line is cut at 1e12·scale; beyond lies
    6e-13 of mass for ν = 1, 2e-36 for ν = 3)."""
    pair = StudentT(nu=nu, scale=1.0).pair()
    eps = np.array([0.0, 0.3, 0.6, 0.9])
    exact = np.array([student_t_delta(nu, e) for e in eps])
    up, lo = pair.profile(eps), pair.profile(eps, bound="lower")
    assert np.all(lo <= exact * (1 + 1e-9)) and np.all(exact <= up * (1 + 1e-9))
    assert np.max((up - lo) / exact) < 1e-4          # measured ≤ 3.4e-5 (ν = 1, ε = 0.9)


@pytest.mark.xfail(reason="LIMITATION: accounting/additive.py cuts the line at 1e12·scale when the "
                          "density has not fallen by e^-745 there and renormalises; for ν = 0.5 "
                          "6.4e-7 of mass lies beyond, and the optimistic δ exceeds the exact one "
                          "(ε = 0.3: by 2.2e-7 relative)", strict=True)
def test_student_t_profile_bracket_for_very_heavy_tails():
    pair = StudentT(nu=0.5, scale=1.0).pair()
    eps = np.array([0.0, 0.3])
    exact = np.array([student_t_delta(0.5, e) for e in eps])
    assert np.all(pair.profile(eps, bound="lower") <= exact * (1 + 1e-9))


def test_student_t_rdp_matches_mpmath_for_moderate_tails():
    rdp = StudentT(nu=10.0, scale=1.0).curve(RDP)
    for a in (1.5, 2.0, 10.0):
        assert float(rdp.rdp(a)) == pytest.approx(student_t_rdp_mp(10.0, a), rel=1e-9)  # 3e-13


@pytest.mark.parametrize("nu", [3.0, 6.0])
def test_student_t_rdp_for_heavy_tails(nu):
    got = float(StudentT(nu=nu, scale=1.0).curve(RDP).rdp(2.0))
    assert got == pytest.approx(student_t_rdp_mp(nu, 2.0), rel=1e-6)


def test_student_t_rdp_epsilon_is_an_upper_bound_for_heavy_tails():
    mech = StudentT(nu=3.0, scale=1.0)
    lo = float(mech.curve(PLD, step=STEP).epsilon(1e-3, bound="lower"))
    assert float(mech.curve(RDP).epsilon(1e-3)) >= lo


# --------------------------------------------------------------------- Gaussian mixture
def test_one_component_mixture_is_the_gaussian():
    for mean, s in ((0.0, 1.0), (3.0, 0.8)):
        mech = Mixture((1.0,), (mean,), (s,))
        assert isinstance(mech.pair(), GaussianPair) and mech.pair().mu == pytest.approx(1.0 / s)
        gauss = accounting.mechanism("gaussian", sigma=s)
        _same_curves(mech, gauss, 6.0 / s)
        # and the generic numerics on the same noise (off-centre: they centre it first)
        pair = mech.generic_pair()
        np.testing.assert_allclose(pair.curve(RDP).rdp(RDP_ALPHAS), RDP_ALPHAS / (2 * s * s),
                                   rtol=1e-9)
        eps = np.linspace(-2.0, 5.0, 701)
        exact = gaussian_delta(1.0 / s, eps)
        assert np.all(pair.profile(eps) >= exact * (1 - 1e-12))
        assert np.all(pair.profile(eps, bound="lower") <= exact * (1 + 1e-12))
        big = exact > 1e-10
        assert np.max(((pair.profile(eps) - pair.profile(eps, bound="lower")) / exact)[big]) < 4e-4


def test_two_component_mixture_rdp_matches_quadrature():
    rdp = Mixture(*MIX_SYM).curve(RDP)
    for a in (1.5, 3.0, 10.0):
        want = mixture_rdp_quad(*MIX_SYM, a)
        for d in ("forward", "backward"):
            assert float(rdp.rdp(a, d)) == pytest.approx(want, rel=1e-7)   # measured ≤ 1e-12


def test_asymmetric_mixture_has_two_directions():
    rdp = Mixture(*MIX_ASYM).curve(RDP)
    for d in ("forward", "backward"):
        for a in (1.5, 3.0):
            assert float(rdp.rdp(a, d)) == pytest.approx(mixture_rdp_quad(*MIX_ASYM, a, direction=d),
                                                         rel=1e-7)
    assert float(rdp.rdp(1.5, "forward")) > 2 * float(rdp.rdp(1.5, "backward"))  # 2.37 vs 0.90


def test_equal_scales_mixture_rho_is_the_limit_at_infinity():
    """ρ* = Δ²/(2s²) in closed form (the numerical envelope would return +∞ with a
    warning: its sup is the t → ∞ limit); the direct Rényi curve stays below ρα and
    approaches it (measured K(t)/(t(t+1)) = 0.4999999931 at t = 1e4)."""
    for sens, s in ((1.0, 1.0), (2.0, 0.7)):
        mech = Mixture((0.5, 0.5), (-1.0, 1.0), (s, s), sensitivity=sens)
        rho = sens ** 2 / (2 * s * s)
        z = mech.curve(ZCDP)
        assert z.rho("forward") == z.rho("backward") == pytest.approx(rho, rel=1e-15)
        t = np.geomspace(1e-3, 1e4, 30)
        ratio = mech.curve(RDP).cgf(t) / (t * (t + 1))
        assert np.all(ratio <= rho * (1 + 1e-9))
        assert ratio[-1] == pytest.approx(rho, rel=1e-6)


def test_unequal_scales_mixture_rho_is_the_envelope(family_curves):
    """Interior sup: ρ* per direction by the numerical envelope (1.6631 and 0.7381)."""
    mech, rdp, _ = family_curves["mixture_asym"]
    z = mech.curve(ZCDP)
    t = np.geomspace(1e-3, 1e3, 25)
    for d in ("forward", "backward"):
        assert np.isfinite(z.rho(d))
        assert np.all(rdp.cgf(t, d) / (t * (t + 1)) <= z.rho(d) * (1 + 1e-9))
    assert z.rho("forward") > 2 * z.rho("backward")


def test_mixture_curves_do_not_depend_on_its_location():
    near = Mixture((0.4, 0.6), (-1.0, 1.5), (0.6, 1.2))
    far = Mixture((0.4, 0.6), (99.0, 101.5), (0.6, 1.2))
    eps = np.array([0.0, 0.5, 1.5])
    np.testing.assert_allclose(far.pair().profile(eps, "forward"),
                               near.pair().profile(eps, "forward"), rtol=1e-9)
    np.testing.assert_allclose(far.curve(RDP).rdp(np.array([2.0, 6.0]), "backward"),
                               near.curve(RDP).rdp(np.array([2.0, 6.0]), "backward"), rtol=1e-9)


def test_mixture_scale_is_its_standard_deviation():
    mech = Mixture((0.25, 0.75), (-2.0, 1.0), (1.0, 0.5))
    # Var = Σ w (s² + m²) − (Σ w m)² = 0.25·5 + 0.75·1.25 − 0.25² = 2.125
    assert mech.noise_width() == pytest.approx(math.sqrt(2.125), rel=1e-15)
    xs = np.linspace(-5, 5, 11)
    want = np.logaddexp(math.log(0.25) - 0.5 * (xs + 2.0) ** 2,
                        math.log(0.75) - math.log(0.5) - 0.5 * ((xs - 1.0) / 0.5) ** 2)
    np.testing.assert_allclose(mech.log_density(xs), want, rtol=1e-14)


# --------------------------------------------------------- all families: consistency
@pytest.mark.parametrize("name", list(FAMILIES))
def test_direct_rdp_agrees_with_the_lower_side_of_its_pld(family_curves, name):
    """The PLD's optimistic law lowers each loss by less than one grid step, so its Rényi
    divergence lies in [D_α − step, D_α] (the tail it drops beyond δ = 1e-20 does not
    matter at these orders); measured: 0.3–2.6e-6 absolute."""
    _, rdp, pld = family_curves[name]
    alphas = np.array([1.5, 2.0, 3.0, 5.0])
    low = pld.to(RDP)
    for d in ("forward", "backward"):
        direct, lower = rdp.rdp(alphas, d), low.rdp(alphas, d, bound="lower")
        assert np.all(lower <= direct * (1 + 1e-9)), d
        assert np.all(direct - lower <= STEP), d
        assert np.all((direct - lower) / direct < 2e-5), d


@pytest.mark.parametrize("name", ["student_t_10", "mixture_asym"])
def test_pld_epsilon_is_below_the_rdp_conversion(family_curves, name):
    """Both are upper bounds on ε(δ); the RDP conversion is the looser one (measured:
    t_10 1.683 vs 1.690 at δ = 1e-3; asymmetric mixture 6.846 vs 7.205 at δ = 1e-6)."""
    _, rdp, pld = family_curves[name]
    deltas = np.array([1e-3, 1e-6])
    lo, up = pld.epsilon_interval(deltas)
    via_rdp = rdp.epsilon(deltas)
    assert np.all(lo <= via_rdp) and np.all(up <= via_rdp + STEP)


MONOTONE = dict(FAMILIES, gg_4=lambda: GG(beta=4.0, scale=1.0),
                student_t_100=lambda: StudentT(nu=100.0, scale=0.5))


@pytest.mark.parametrize("name", list(MONOTONE))
def test_rdp_is_non_decreasing_in_alpha(name):
    alphas = np.geomspace(1.01, 1e3, 40) + 0.123          # fractional orders up to 1e3
    vals = MONOTONE[name]().curve(RDP).rdp(alphas, "max")
    assert np.all(np.isfinite(vals)) and np.all(vals > 0)
    assert np.all(np.diff(vals) >= -1e-12 * vals[1:])


def test_rdp_is_non_decreasing_for_heavy_tails():
    alphas = np.geomspace(1.01, 1e3, 40) + 0.123
    vals = StudentT(nu=3.0, scale=1.0).curve(RDP).rdp(alphas)
    assert np.all(np.diff(vals) >= -1e-12 * vals[1:])


@pytest.mark.parametrize("beta, rel", [(0.5, 1e-4), (0.7, 1e-6)])
def test_generic_rdp_with_cusps_matches_quadrature(beta, rel):
    # β < 1: the density's derivative is unbounded at 0 and Δ; the panels have those
    # points as edges but are not graded toward them (measured 2e-5 at β = 0.5)
    rdp = GG(beta=beta, scale=1.0).curve(RDP)
    for a in (2.0, 20.0):
        assert float(rdp.rdp(a)) == pytest.approx(gg_rdp_quad(beta, a), rel=rel)


# ------------------------------------------------------------------------ bad inputs
W2, M2, S2 = (0.5, 0.5), (0.0, 1.0), (1.0, 1.0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(weights=(0.5, 0.4), means=M2, scales=S2), "weights must sum to 1"),
    (dict(weights=(0.5, 0.5 + 2e-9), means=M2, scales=S2), "weights must sum to 1"),
    (dict(weights=(1.5, -0.5), means=M2, scales=S2), r"weights\[1\] must be > 0"),
    (dict(weights=(1.0, 0.0), means=M2, scales=S2), r"weights\[1\] must be > 0"),
    (dict(weights=W2, means=M2, scales=(1.0, -1.0)), r"scales\[1\] must be > 0"),
    (dict(weights=W2, means=M2, scales=(0.0, 1.0)), r"scales\[0\] must be > 0"),
    (dict(weights=W2, means=(0.0, math.nan), scales=S2), r"means\[1\] must be a number, got NaN"),
    (dict(weights=W2, means=(math.inf, 0.0), scales=S2), r"means\[0\] must be finite"),
    (dict(weights=(math.nan, 0.5), means=M2, scales=S2), r"weights\[0\] must be a number"),
    (dict(weights=W2, means=M2, scales=(1.0, math.inf)), r"scales\[1\] must be finite"),
    (dict(weights=W2, means=(0.0,), scales=S2), "weights, means and scales must have the same length"),
    (dict(weights=(1.0,), means=M2, scales=S2), "same length"),
    (dict(weights=(), means=(), scales=()), "weights must have at least one entry"),
])
def test_mixture_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Mixture(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(weights="0.5,0.5", means=M2, scales=S2), "weights must be a sequence"),
    (dict(weights=1.0, means=(0.0,), scales=(1.0,)), "weights must be a sequence"),
    (dict(weights=None, means=M2, scales=S2), "weights must be a sequence"),
    (dict(weights=W2, means=(0.0, "1"), scales=S2), r"means\[1\] must be a real number"),
    (dict(weights=W2, means=M2, scales=(True, 1.0)), r"scales\[0\] must be a real number"),
    (dict(weights=W2, means=M2, scales=(1.0, 1j)), r"scales\[1\] must be a real number"),
])
def test_mixture_bad_types(kwargs, match):
    with pytest.raises(TypeError, match=match):
        Mixture(**kwargs)


def test_mixture_weights_are_normalised_exactly():
    mech = Mixture((0.5 + 4e-10, 0.5), M2, S2)
    assert math.fsum(mech.weights) == pytest.approx(1.0, abs=2e-16)
    assert mech.weights[0] > mech.weights[1]
    assert isinstance(mech.means, tuple) and all(type(v) is float for v in mech.means)
    assert Mixture([0.5, 0.5], np.array([0, 1]), [1, 1]).means == (0.0, 1.0)


@pytest.mark.parametrize("cls, kwargs, match", [
    (StudentT, dict(nu=0.0, scale=1.0), "nu must"),
    (StudentT, dict(nu=-2.0, scale=1.0), "nu must"),
    (StudentT, dict(nu=math.nan, scale=1.0), "nu must be a number, got NaN"),
    (StudentT, dict(nu=math.inf, scale=1.0), "nu must be finite"),
    (StudentT, dict(nu=3.0, scale=-1.0), "scale must"),
    (StudentT, dict(nu=3.0, scale=1e-300), "scale must"),
    (StudentT, dict(nu=3.0, scale=math.nan), "scale must be a number, got NaN"),
    (GG, dict(beta=0.0, scale=1.0), "beta must"),
    (GG, dict(beta=-1.0, scale=1.0), "beta must"),
    (GG, dict(beta=math.nan, scale=1.0), "beta must be a number, got NaN"),
    (GG, dict(beta=2.0, scale=-1.0), "scale must"),
    (GG, dict(beta=2.0, scale=math.inf), "scale must be finite"),
    (GG, dict(beta=2.0, scale=1.0, sensitivity=-1.0), "sensitivity must"),
])
def test_scalar_families_bad_values(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)


@pytest.mark.parametrize("cls, kwargs, match", [
    (StudentT, dict(nu="3", scale=1.0), "nu must be a real number"),
    (StudentT, dict(nu=True, scale=1.0), "nu must be a real number"),
    (StudentT, dict(nu=3.0, scale=None), "scale must be a real number"),
    (GG, dict(beta=[2.0], scale=1.0), "beta must be a real number"),
    (GG, dict(beta=2.0, scale="1"), "scale must be a real number"),
])
def test_scalar_families_bad_types(cls, kwargs, match):
    with pytest.raises(TypeError, match=match):
        cls(**kwargs)


# -------------------------------------------------------------------------- plugins
def test_modules_register_their_classes_in_a_fresh_registry():
    reg = accounting.make_registry(entry_points=False)
    for module, cls in ((gaussian_mixture, Mixture), (student_t, StudentT),
                        (generalised_gaussian, GG)):
        reg.register_plugin(module, f"test_{cls.name}")
        assert reg.mechanism(cls.name) is cls
        assert reg.mechanism_sources[cls.name] == f"test_{cls.name}"
    assert {"gaussian_mixture", "student_t", "generalised_gaussian"} <= set(reg.mechanisms)
    mech = reg.mechanism("student_t")(nu=5.0, scale=2.0, sensitivity=0.5)
    assert (mech.nu, mech.scale, mech.sensitivity) == (5.0, 2.0, 0.5)
    assert set(reg.mechanism("generalised_gaussian").parameters()) == {
        "sensitivity", "neighbouring", "beta", "scale"}
    assert set(reg.mechanism("gaussian_mixture").parameters()) == {
        "sensitivity", "neighbouring", "weights", "means", "scales"}
    # a second module registering the same name is refused, naming the plugin
    import types
    dup = types.ModuleType("dup")
    dup.accounting_register_mechanisms = student_t.accounting_register_mechanisms
    with pytest.raises(PluginError, match="dup_plugin"), \
            pytest.warns(RuntimeWarning, match="already registered"):
        reg.register_plugin(dup, "dup_plugin")


def test_mixture_of_peaks_narrower_than_the_cells_is_refused():
    """Two components of scale 1e-4·Δ, 8000·Δ apart: the 16384 quadrature cells around
    the middle miss their mass, and the shifted (P) cell masses summed to 1 − 4.0e-6 —
    every law built on them short of mass — or, with the fuzzer's draw below, to
    e^{4802}, when building the PLD raised "masses must be finite and non-negative"
    (found by tests/test_fuzz_invariants.py). Both are refused as not discretisable;
    scales 1e-2·Δ are resolved (the sum is 1 to 3.2e-10)."""
    for kw in (dict(weights=(0.5, 0.5), means=(0.0, -8000.0), scales=(1e-4, 1e-4)),
               dict(sensitivity=1.1096118038671173e-72,
                    weights=(0.413636923021715, 0.5863630769782849),
                    means=(-5.979396571670896e-261, -9.363599191816222e-69),
                    scales=(2.0107612558856255e-76, 1.3129109351412816e-76))):
        with pytest.raises(ValueError, match="cannot be discretised"):
            Mixture(**kw).curve(PLD, step=1e-2)
    resolved = Mixture(weights=(0.5, 0.5), means=(0.0, -8000.0), scales=(1e-2, 1e-2))
    # a Δ-shift of a component of scale 1e-2·Δ is 100 of its σ: δ(0) = TV = 2Φ(50) − 1,
    # 1 to roundoff
    assert float(resolved.curve(PrivacyProfile).delta(0.0)) == pytest.approx(1.0, abs=1e-9)
