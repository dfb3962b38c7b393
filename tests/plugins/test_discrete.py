"""Discrete Gaussian and discrete Laplace: closed forms against exact sums over the support.

References are computed here by brute force over the integers, independently of the
plugin's formulas: the hockey-stick divergence Σ_x (p_x − e^ε q_x)₊, the Rényi sum
Σ_x p_x^α q_x^{1−α} and the tail probabilities of the CKS closed form (Canonne, Kamath,
Steinke 2020; REFERENCE §4) in mpmath at 40 digits; the discrete-Laplace hockey-stick
sums in float64 log space as sums of positive terms (no cancellation). The plugin is
registered at run time into a fresh registry (its entry point is not in pyproject yet).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy.special import logsumexp

import accounting
from accounting import PLD, RDP, ZCDP, PluginError, PrivacyProfile, TradeOff
from accounting.pairs.additive import integer_noise_pair
from accounting_mechanisms import discrete as discrete_module
from accounting_mechanisms.discrete import (DiscreteGaussian, DiscreteGaussianPair,
                                            DiscreteLaplace, DiscreteLaplacePair)
from accounting_mechanisms.gaussian import gaussian_delta

mp.mp.dps = 40
STEP = 1e-3


# ------------------------------------------------------------------ mpmath references
class _DGRef:
    """N_ℤ(0, σ²) and the pair (Δ + Y, Y) by brute force over |x| ≤ 40σ + 40αΔ (masses
    beyond are below e^{−800}, irrelevant for δ > 1e−200)."""

    def __init__(self, sigma: float, delta: int, reach: int = 0):
        self.s, self.d = mp.mpf(sigma), delta
        self.r = math.ceil(40 * sigma) + 8 + reach
        two_s2 = 2 * self.s ** 2
        self.w = {x: mp.exp(-mp.mpf(x) ** 2 / two_s2)
                  for x in range(-self.r - delta - 1, self.r + delta + 2)}
        self.z = mp.fsum(self.w[x] for x in range(-self.r, self.r + 1))

    def p(self, x):
        return self.w[x - self.d] / self.z

    def q(self, x):
        return self.w[x] / self.z

    def brute_delta(self, eps, direction: str, raw: bool = False):
        c = mp.exp(mp.mpf(eps))
        xs = range(-self.r, self.r + self.d + 1)
        if direction == "forward":
            val = mp.fsum(max(self.p(x) - c * self.q(x), 0) for x in xs)
        else:
            val = mp.fsum(max(self.q(x) - c * self.p(x), 0) for x in xs)
        return val if raw else float(val)

    def sf(self, k: int):
        return mp.fsum(self.w[y] for y in range(max(k, -self.r), self.r + 1)) / self.z

    def cks_delta(self, eps: float) -> float:
        """REFERENCE §4 / CKS Thm 7: P[Y ≥ ⌊εσ²/Δ − Δ/2⌋+1] − e^ε P[Y ≥ ⌊εσ²/Δ + Δ/2⌋+1]."""
        e = mp.mpf(eps)
        a = int(mp.floor(e * self.s ** 2 / self.d - mp.mpf(self.d) / 2)) + 1
        b = int(mp.floor(e * self.s ** 2 / self.d + mp.mpf(self.d) / 2)) + 1
        return float(self.sf(a) - mp.exp(e) * self.sf(b))


def dg_rdp_brute(sigma: float, delta: int, alpha: float) -> float:
    """D_α(P‖Q) = log Σ_x p_x^α q_x^{1−α}/(α − 1) over the support, at 40 digits."""
    s, al = mp.mpf(sigma), mp.mpf(alpha)
    r = math.ceil(40 * sigma + 2 * alpha * delta) + 8

    def lw(x):
        return -mp.mpf(x) ** 2 / (2 * s * s)
    z = mp.fsum(mp.exp(lw(x)) for x in range(-r, r + 1))
    tot = mp.fsum(mp.exp(al * lw(x - delta) + (1 - al) * lw(x)) for x in range(-r, r + delta + 1))
    return float(mp.log(tot / z) / (al - 1))


def dl_pmf(a: float):
    a_ = mp.mpf(a)
    c = mp.tanh(a_ / 2)
    return lambda x: c * mp.exp(-a_ * abs(x))


def dl_brute_delta(a: float, delta: int, eps: np.ndarray, direction: str) -> np.ndarray:
    """Σ_x (p_x − e^ε q_x)₊ over |x| ≤ 800/a + Δ, in float64 log space as a sum of
    positive terms p_x(1 − e^{ε − l_x}) (l_x = log p_x − log q_x), so no cancellation."""
    x = np.arange(-int(800 / a) - 2, int(800 / a) + delta + 3, dtype=float)
    logc = math.log(math.tanh(a / 2))
    lp, lq = logc - a * np.abs(x - delta), logc - a * np.abs(x)
    loss = a * (np.abs(x) - np.abs(x - delta))        # exact integer difference, one rounding
    if direction == "backward":
        lp, loss = lq, -loss
    out = []
    for e in np.ravel(eps):
        keep = loss > e
        terms = lp[keep] + np.log(-np.expm1(e - loss[keep]))
        out.append(float(np.exp(logsumexp(terms))) if terms.size else 0.0)
    return np.array(out)


def dl_rdp_brute(a: float, delta: int, alpha: float) -> float:
    """Σ_x p_x^α q_x^{1−α} at 40 digits, over |x| ≤ (60 + αΔa)/a (the rest < e^{−60})."""
    f = dl_pmf(a)
    al = mp.mpf(alpha)
    r = int((60 + alpha * delta * a) / a) + delta + 2
    tot = mp.fsum(f(x - delta) ** al * f(x) ** (1 - al) for x in range(-r, r + delta + 1))
    return float(mp.log(tot) / (al - 1))


def dl1_rdp_reference(a: float, alpha: float) -> float:
    """REFERENCE §4 (Δ = 1): log[(e^{αa} + e^{(1−α)a})/(1 + e^a)]/(α − 1)."""
    a_, al = mp.mpf(a), mp.mpf(alpha)
    return float(mp.log((mp.exp(al * a_) + mp.exp((1 - al) * a_)) / (1 + mp.exp(a_))) / (al - 1))


def _rel(got, want):
    got, want = np.asarray(got, float), np.asarray(want, float)
    return np.abs(got - want) / np.abs(want)


# =============================================================== discrete Gaussian: RDP
ALPHAS = np.array([1.0001, 1.01, 1.1, 1.25, 4 / 3, 1.5, 1.7, 2.0, 2.5, 2.75, 3.0, 3.3, 4.0,
                   5.5, 7.0, 10.25, 16.0, 33.5, 64.0])


@pytest.mark.parametrize("sigma,delta", [(0.3, 1), (0.5, 1), (0.5, 2), (0.8, 3), (1.0, 1)])
def test_dgauss_rdp_is_below_the_gaussian_with_equality_at_integer_shifts(sigma, delta):
    rdp = DiscreteGaussian(sigma=sigma, sensitivity=delta).curve(RDP)
    got = rdp.rdp(ALPHAS)
    bound = ALPHAS * delta ** 2 / (2 * sigma ** 2)
    assert np.all(got <= bound * (1 + 1e-14))
    shift = (ALPHAS - 1) * delta
    integer = np.abs(shift - np.round(shift)) < 1e-9
    assert integer.sum() >= 4 and (~integer).sum() >= 4
    np.testing.assert_allclose(got[integer], bound[integer], rtol=1e-12, atol=0)
    # strictly below elsewhere: the gap is −log R((1−α)Δ)/(α−1) with R ≈ 1 − 4e^{−2π²σ²}sin²(πc)
    gap = bound - got
    q = math.exp(-2 * math.pi ** 2 * sigma ** 2)
    frac = shift - np.round(shift)
    approx = 4 * q * np.sin(np.pi * frac) ** 2 / (ALPHAS - 1)
    assert np.all(gap[~integer] > 1e-12)
    if sigma >= 0.8:                       # leading Poisson-summation term dominates
        np.testing.assert_allclose(gap[~integer], approx[~integer], rtol=1e-5)
    for d in ("forward", "backward"):      # symmetric pair
        np.testing.assert_array_equal(rdp.rdp(ALPHAS, d), got)
    for al in (1.01, 1.5, 2.0, 2.5, 10.25):
        assert float(rdp.rdp(al)) == pytest.approx(dg_rdp_brute(sigma, delta, al), rel=1e-12)


def test_dgauss_rdp_gap_at_small_sigma():
    """σ = 0.5, Δ = 1, α = 1.5: the bound 0.75·4 = 3 exceeds D_α by 0.0575 (brute force)."""
    rdp = DiscreteGaussian(sigma=0.5).curve(RDP)
    got = float(rdp.rdp(1.5))
    want = dg_rdp_brute(0.5, 1, 1.5)
    assert got == pytest.approx(want, rel=1e-13)
    assert 3.0 - got == pytest.approx(0.057539, abs=1e-6)
    assert float(rdp.rdp(2.0)) == pytest.approx(4.0, rel=1e-15)


def test_dgauss_rho_is_delta_squared_over_two_sigma_squared():
    for sigma, delta in ((0.5, 1), (2.0, 3), (50.0, 1)):
        z = DiscreteGaussian(sigma=sigma, sensitivity=delta).curve(ZCDP)
        assert z.rho() == pytest.approx(delta ** 2 / (2 * sigma ** 2), rel=1e-15)
        assert z.is_exact
        # it is the sup of D_α/α, attained at α = 1 + 1/Δ (shift (α−1)Δ = 1)
        rdp = DiscreteGaussian(sigma=sigma, sensitivity=delta).curve(RDP)
        a = 1 + 1 / delta
        assert float(rdp.rdp(a)) / a == pytest.approx(z.rho(), rel=1e-13)


# =========================================================== discrete Gaussian: profile
@pytest.mark.parametrize("sigma,delta", [(0.5, 1), (0.5, 3), (1.7, 2), (3.0, 1), (3.0, 5),
                                         (20.0, 1)])
def test_dgauss_profile_is_the_cks_formula_and_the_sum_over_the_support(sigma, delta):
    ref = _DGRef(sigma, delta)
    top = 30 * delta / sigma + delta ** 2 / (2 * sigma ** 2)   # δ ≈ e^{−450} out there
    eps = np.concatenate([np.linspace(-top, top, 23) + 0.013, [0.0, -1.0, 0.5 * top]])
    prof = DiscreteGaussian(sigma=sigma, sensitivity=delta).curve(PrivacyProfile)
    checked = 0
    for d in ("forward", "backward"):
        got = prof.delta(eps, d)
        brute = np.array([ref.brute_delta(e, d) for e in eps])
        ok = brute > 1e-200
        checked += ok.sum()
        assert np.all(_rel(got[ok], brute[ok]) < 1e-12)
        assert np.all(got[~ok] < 1e-199)
        if d == "forward":
            cks = np.array([ref.cks_delta(e) for e in eps])
            # the REFERENCE formula itself, at 40 digits, against the brute-force sum
            assert np.all(np.abs(cks - brute) <= 1e-30 + 1e-25 * brute)
    assert checked >= 30
    assert prof.delta(np.array([-np.inf, np.inf])).tolist() == [1.0, 0.0]


def test_dgauss_profile_matches_the_core_finite_pair():
    """The generic exact finite pair of the core (``integer_noise_pair`` of the log-pmf)."""
    mech = DiscreteGaussian(sigma=2.0, sensitivity=3)
    generic = integer_noise_pair(mech.log_density, 3)
    eps = np.linspace(-4, 6, 201)
    for d in ("forward", "backward"):
        got = mech.pair().profile(eps, d)
        want = generic.profile(eps, d)
        assert np.max(np.abs(got - want)) < 1e-13
    assert generic.profile(np.inf) < 1e-300          # (a denormal mass at +∞, see below)


def test_core_generic_integer_noise_rdp_is_finite():
    mech = DiscreteGaussian(sigma=2.0, sensitivity=3)
    generic = integer_noise_pair(mech.log_density, 3)
    for al in (1.5, 3.0, 7.5):
        assert float(generic.curve(RDP).rdp(al)) == pytest.approx(
            float(mech.curve(RDP).rdp(al)), rel=1e-9)


def test_dgauss_pld_brackets_the_profile():
    mech = DiscreteGaussian(sigma=1.0)
    pld = mech.curve(PLD, step=2e-3)
    eps = np.linspace(-3, 6, 3001) + 0.37 * 2e-3
    exact = mech.curve(PrivacyProfile).delta(eps, "forward")
    lo, up = pld.delta(eps, "forward", "lower"), pld.delta(eps, "forward")
    assert np.all(up >= exact * (1 - 1e-12)) and np.all(lo <= exact * (1 + 1e-12) + 1e-300)
    assert np.max(up - lo) < 2e-3
    e_lo, e_up = pld.epsilon_interval(1e-6)
    ref = _DGRef(1.0, 1)
    # on the piece L_4 = 3.5 ≤ ε < L_5 = 4.5 (L_x = x − ½): δ = P[X ≥ 5] − e^ε Q[X ≥ 5]
    g = mp.fsum(ref.p(x) for x in range(5, ref.r + 2))
    h = mp.fsum(ref.q(x) for x in range(5, ref.r + 1))
    e = float(mp.log((g - mp.mpf("1e-6")) / h))
    assert 3.5 <= e < 4.5
    assert ref.brute_delta(e, "forward") == pytest.approx(1e-6, rel=1e-14)
    assert e == pytest.approx(4.499590982194307, abs=1e-13)   # ε(1e−6), brute force
    assert e_lo <= e <= e_up and e_up - e_lo < 1e-6
    # the profile's own ε(δ) (bisection) errs on the sound side, within its rtol 1e−12
    assert e <= float(mech.curve(PrivacyProfile).epsilon(1e-6)) <= e * (1 + 1e-12)


def test_dgauss_approaches_the_continuous_gaussian():
    """At σ = 20 the Rényi curves agree to float precision (the gap, ≈ e^{−2π²σ²}, underflows),
    but the profiles differ by up to 4.15e−6, not 1e−6: the discreteness error of δ decays
    like Δ/σ³ (factor 8 per doubling of σ); it is below 1e−6 from σ ≈ 32 on."""
    alphas = np.array([1.01, 1.5, 2.0, 3.7, 20.0])
    for sigma in (20.0, 40.0):
        rdp = DiscreteGaussian(sigma=sigma).curve(RDP)
        np.testing.assert_allclose(rdp.rdp(alphas), alphas / (2 * sigma ** 2), rtol=1e-12)
    gaps = {}
    for sigma in (10.0, 20.0, 40.0):
        eps = np.linspace(-3, 3, 6001) / sigma
        d = DiscreteGaussian(sigma=sigma).curve(PrivacyProfile).delta(eps)
        gaps[sigma] = float(np.max(np.abs(d - gaussian_delta(1 / sigma, eps))))
    assert gaps[20.0] < 5e-6 and gaps[40.0] < 1e-6
    assert 6.0 < gaps[10.0] / gaps[20.0] < 10.0 and 6.0 < gaps[20.0] / gaps[40.0] < 10.0
    # the σ = 20 gap is real: at ε = 0.00375, brute force gives 0.0181559952 vs 0.0181601462
    ref = _DGRef(20.0, 1)
    e = 0.00375
    disc = ref.brute_delta(e, "forward")
    mu, x = mp.mpf(1) / 20, mp.mpf(e)
    cont = float(mp.ncdf(mu / 2 - x / mu) - mp.exp(x) * mp.ncdf(-mu / 2 - x / mu))
    assert cont - disc == pytest.approx(4.151e-6, rel=1e-3)
    assert float(DiscreteGaussian(sigma=20.0).pair().profile(e)) == pytest.approx(disc, rel=1e-13)


def test_dgauss_large_scales_use_accurate_tails():
    """Beyond the exact tables (σ ≳ 1.3e4, or huge Δ) the CKS formula runs on
    Euler–Maclaurin / direct tail sums; checked against the tables where both apply."""
    from accounting_mechanisms.discrete import dgauss_delta, dgauss_log_sf
    for sigma, delta in ((25.0, 1), (60.0, 1), (300.0, 2)):
        eps = np.linspace(-1, 1, 801) * 30 * delta / sigma
        table = dgauss_delta(sigma, delta, eps, method="table")
        tails = dgauss_delta(sigma, delta, eps, method="tails")
        ok = table > 1e-200
        assert np.max(_rel(tails[ok], table[ok])) < 2e-9      # the subtraction's cost
    # tail probabilities themselves, against brute force
    ref = _DGRef(60.0, 1)
    for k in (1, 30, 60, 200, 900, 2200):
        assert float(dgauss_log_sf(60.0, np.array(float(k)))) == pytest.approx(
            float(mp.log(ref.sf(k))), abs=1e-13)
    # σ = 3e4 (tails by default) is the continuous Gaussian to float precision
    eps = np.linspace(-3, 3, 1001) * 4 / 3e4
    got = DiscreteGaussian(sigma=3e4).curve(PrivacyProfile).delta(eps)
    assert np.max(np.abs(got - gaussian_delta(1 / 3e4, eps))) < 1e-13
    # Δ = 5e6 with σ = 1: the two laws are disjoint in float; δ(ε) = 1 for moderate ε
    huge = DiscreteGaussian(sigma=1.0, sensitivity=5_000_000).curve(PrivacyProfile)
    assert huge.delta(np.array([0.0, 1e7, 1e12])).tolist() == [1.0, 1.0, 1.0]
    assert float(huge.delta(2e13)) == 0.0


# ==================================================================== discrete Laplace
def _two_atom_delta(a, eps):
    """Δ = 1: atoms ±a with P-masses p = e^a/(1+e^a), 1 − p (REFERENCE §4), so
    δ(ε) = Σ_{±} P(±a)(1 − e^{ε ∓ a})₊, at 40 digits (a taken exactly as given)."""
    a_ = mp.mpf(a)
    p = mp.exp(a_) / (1 + mp.exp(a_))
    out = []
    for e in np.ravel(eps):
        x = mp.mpf(e)
        out.append(float(p * max(1 - mp.exp(x - a_), 0) + (1 - p) * max(1 - mp.exp(x + a_), 0)))
    return np.asarray(out).reshape(np.shape(eps))


def _dl(a, **params):
    """DiscreteLaplace at decay rate exactly ``a`` (the deprecated ``a=``, kept exactly)."""
    with pytest.warns(DeprecationWarning, match="give scale = 1/a"):
        mech = DiscreteLaplace(a=a, **params)
    assert mech.a == a and mech.scale == 1.0 / a
    return mech


@pytest.mark.parametrize("a", [0.1, 0.5, math.log(3.0), 4.0])
def test_dlaplace_unit_sensitivity_is_the_two_atom_pld(a):
    mech = _dl(a)
    prof = mech.curve(PrivacyProfile)
    eps = np.concatenate([np.linspace(-1.5 * a, 1.5 * a, 61), [a * (1 - 1e-6), -a, 0.0]])
    want = _two_atom_delta(a, eps)
    for d in ("forward", "backward"):
        got = prof.delta(eps, d)
        pos = want > 1e-30
        assert np.all(_rel(got[pos], want[pos]) < 1e-12)
        assert np.all(got[~pos] == 0.0)
    rdp = mech.curve(RDP)
    for al in (1.0001, 1.01, 1.5, 2.0, 3.3, 10.0, 100.0, 1e4):
        assert float(rdp.rdp(al)) == pytest.approx(dl1_rdp_reference(a, al), rel=1e-12)
    assert float(rdp.rdp(1e7)) == pytest.approx(a, rel=1e-5)     # pure a-DP as α → ∞


@pytest.mark.parametrize("a", [0.5, math.log(3.0)])
def test_dlaplace_pld_brackets_the_exact_profile(a):
    mech = _dl(a)
    pld = mech.curve(PLD, step=STEP)
    eps = np.linspace(-1.3 * a, 1.3 * a, 2601) + 0.37 * STEP
    exact = _two_atom_delta(a, eps)
    for d in ("forward", "backward"):
        lo, up = pld.delta(eps, d, "lower"), pld.delta(eps, d)
        assert np.all(up >= exact * (1 - 1e-12))
        assert np.all(lo <= exact * (1 + 1e-12) + 1e-300)
        assert np.max(up - exact) < STEP and np.max(exact - lo) < STEP
    assert float(pld.epsilon(1e-9)) <= a + STEP       # pure a-DP, up to one grid cell


@pytest.mark.parametrize("a", [0.5, math.log(3.0)])
def test_dlaplace_tradeoff_is_the_two_atom_tradeoff(a):
    """By hand: reject on the atom −a first (P-mass 1 − p, Q-mass p), then on +a:
    β(α) = 1 − pα/(1 − p) for α ≤ 1 − p, (1 − α)(1 − p)/p above."""
    p = math.exp(a) / (1 + math.exp(a))
    al = np.linspace(0, 1, 4001)
    hand = np.where(al <= 1 - p, 1 - p * al / (1 - p), (1 - al) * (1 - p) / p)
    mech = _dl(a)
    exact = mech.curve(TradeOff)                      # the plugin's closed form
    for d in ("forward", "backward"):
        np.testing.assert_allclose(exact.beta(al, d), hand, atol=2e-16)
    to = mech.curve(PLD, step=STEP).to(TradeOff)
    up = to.beta(al)
    assert np.all(up <= hand + 1e-12)                 # sound: never more private
    assert np.max(hand - up) < 2 * STEP
    lo = to.beta(al, bound="lower")
    # the optimistic PLD's implied Q-mass is short of 1 by ~1e−10 (core, see the report)
    assert np.all(lo >= hand - 1e-9)
    assert np.max(lo - hand) < 2 * STEP


@pytest.mark.parametrize("a", [0.2, 1.0, 3.0])
def test_dlaplace_rho_is_the_envelope_of_the_exact_cgf(a):
    z = _dl(a).curve(ZCDP)
    ts = np.geomspace(1e-7, 1e4, 20001)
    p = math.exp(a) / (1 + math.exp(a))
    k = np.logaddexp(np.log(p) + ts * a, np.log1p(-p) - ts * a)   # K(t), two atoms
    sup = float(np.max(k / (ts * (ts + 1))))
    kl = a * math.tanh(a / 2)                                      # E_P[L] = (2p − 1)a
    assert sup == pytest.approx(kl, rel=1e-6)                     # the sup sits at t → 0
    assert z.rho() >= kl * (1 - 1e-12)
    assert z.rho() == pytest.approx(kl, rel=1e-5)


@pytest.mark.parametrize("a,delta", [(0.3, 3), (1.2, 3), (0.05, 4), (2.0, 6)])
def test_dlaplace_general_sensitivity_is_the_sum_over_the_support(a, delta):
    mech = _dl(a, sensitivity=delta)
    prof = mech.curve(PrivacyProfile)
    top = a * delta
    # the atoms themselves, but the top one: there δ ≈ P_Δ·(aΔ − ε) is at the rounding level
    eps = np.concatenate([np.linspace(-1.2 * top, 1.2 * top, 29) + 0.0071,
                          a * (2 * np.arange(delta) - delta)])
    for d in ("forward", "backward"):
        got = prof.delta(eps, d)
        want = dl_brute_delta(a, delta, eps, d)
        pos = want > 1e-30
        assert np.all(_rel(got[pos], want[pos]) < 1e-12)
        assert np.all(got[~pos] < 1e-15)
    assert prof.delta(top * (1 + 1e-15)) == 0.0 and prof.delta(top * (1 - 1e-9)) > 0.0
    rdp = mech.curve(RDP)
    for al in (1.001, 1.5, 2.0, 4.5, 30.0):
        assert float(rdp.rdp(al)) == pytest.approx(dl_rdp_brute(a, delta, al), rel=1e-12)
    # the reference pmf tanh(a/2)e^{−a|x|} is normalised
    r = int(80 / a)
    assert abs(float(mp.fsum(dl_pmf(a)(x) for x in range(-r, r + 1))) - 1) < 1e-15


def test_dlaplace_large_sensitivity_closed_form_cgf():
    """Δ > 4096: geometric closed form of the Rényi sum, against the atom sum."""
    from accounting_mechanisms.discrete import _atom_cgf, dlaplace_atoms
    for a in (0.3, 0.01):
        pair = DiscreteLaplacePair(a, 5000)
        t = np.array([0.01, 0.1, 1.0, 3.0, 30.0])
        losses, logp, _ = dlaplace_atoms(a, 5000)
        np.testing.assert_allclose(pair._cgf(t, None), _atom_cgf(losses, logp, t), rtol=1e-12)
        assert not pair.provides("beta")
        # profile: closed form vs the atom sum Σ_{l>ε} P(1 − e^{ε−l})
        eps = np.linspace(-a * 5000, a * 5000, 41)[1:-1] + 1e-3
        p = np.exp(logp)
        want = np.array([np.sum(p[losses > e] * -np.expm1(e - losses[losses > e])) for e in eps])
        np.testing.assert_allclose(pair._profile(eps, None), want, rtol=1e-11)


# ====================================================================== parameters
@pytest.mark.parametrize("cls,field", [(DiscreteGaussian, "sigma"), (DiscreteLaplace, "scale")])
def test_bad_noise_parameters(cls, field):
    # (0 is the no-noise corner, answered: tests/plugins/test_corners.py)
    for bad in (1e-300, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match=f"{field} must"):
            cls(**{field: bad})
    for bad in ("1.0", True, 1j):
        with pytest.raises(TypeError, match=f"{field} must be a real number"):
            cls(**{field: bad})


def test_bad_deprecated_rate():
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="a must"), pytest.warns(DeprecationWarning):
            DiscreteLaplace(a=bad)


@pytest.mark.parametrize("cls,field", [(DiscreteGaussian, "sigma"), (DiscreteLaplace, "scale")])
def test_bad_sensitivity(cls, field):
    for bad in (1.5, 2.0000001, 0.5):
        with pytest.raises(ValueError, match="sensitivity must be 0 or a positive integer"):
            cls(**{field: 1.0}, sensitivity=bad)
    for bad in (-2.0, math.nan):
        with pytest.raises(ValueError, match="sensitivity must"):
            cls(**{field: 1.0}, sensitivity=bad)
    with pytest.raises(TypeError, match="sensitivity must be a real number"):
        cls(**{field: 1.0}, sensitivity="2")
    mech = cls(**{field: 1.0}, sensitivity=3.0, neighbouring="replace_one")
    assert mech.pair().sensitivity == 3 and mech.neighbouring.value == "replace_one"


def test_bad_pair_parameters():
    with pytest.raises(ValueError, match="sensitivity must"):
        DiscreteGaussianPair(1.0, 0)
    with pytest.raises(TypeError, match="sensitivity must be an integer"):
        DiscreteLaplacePair(1.0, 1.5)
    with pytest.raises(ValueError, match="sigma must"):
        DiscreteGaussianPair(-1.0, 1)


# ======================================================================= registration
def test_plugin_registers_both_mechanisms_at_run_time():
    reg = accounting.make_registry(entry_points=False)   # robust once the entry point exists
    reg.register_plugin(discrete_module, "discrete")
    assert reg.mechanism("discrete_gaussian") is DiscreteGaussian
    assert reg.mechanism("discrete_laplace") is DiscreteLaplace
    assert reg.mechanism_sources["discrete_gaussian"] == "discrete"
    assert reg.mechanism_sources["discrete_laplace"] == "discrete"
    mech = reg.mechanism("discrete_gaussian")(sigma=2.0, sensitivity=1)
    assert mech.curve(ZCDP).rho() == pytest.approx(1 / 8, rel=1e-15)
    with pytest.warns(RuntimeWarning), pytest.raises(PluginError, match="discrete"):
        reg.register_plugin(discrete_module, "discrete")
    # into a registry that already has the entry-point plugins: no name collision
    full = accounting.make_registry()
    if "discrete_gaussian" not in full.mechanisms:
        full.register_plugin(discrete_module, "discrete")
    assert {"discrete_gaussian", "discrete_laplace", "gaussian", "laplace"} <= set(full.mechanisms)
