"""Trade-off functions at small FPR: exact for finite pairs, tight and sound when composed.

The figure of membership-inference risk is the power 1 − β (TPR) at a small FPR α.
References are computed here without the library: the Neyman–Pearson lemma on finite
laws (likelihood ratios sorted, piecewise-linear β) in mpmath at 40 digits, the binomial
law of composed randomized response, and Gaussian DP, β(α) = Φ(Φ⁻¹(1 − α) − μ).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import optimize
from scipy.special import ndtri
from scipy.stats import norm

import accounting
from accounting import PLD, TradeOff, discrete_pair

from closed_forms import discrete_beta
from strategies import finite_pairs

mp.mp.dps = 40

FPRS = np.array([1e-10, 1e-8, 1e-4])


def np_power(p, q, alpha: float) -> float:
    """1 − T(P, Q)(α) by the Neyman–Pearson lemma, in mpmath: reject the outcomes of
    smallest p/q first (those with p = 0 at no cost), interpolate linearly."""
    atoms = sorted(((mp.mpf(pi) / mp.mpf(qi) if qi > 0 else mp.inf, mp.mpf(pi), mp.mpf(qi))
                    for pi, qi in zip(p, q) if pi > 0 or qi > 0), key=lambda x: x[0])
    a, power = mp.mpf(0), mp.mpf(0)
    target = mp.mpf(alpha)
    for _, pi, qi in atoms:
        if a + pi >= target:
            return float(power + (target - a) * qi / pi) if pi > 0 else float(power + qi)
        a, power = a + pi, power + qi
    return float(power)


def rr_kfold(p: float, k: int):
    """P- and Q-masses of the k-fold randomized-response pair, indexed by the number j of
    truthful answers, by the binomial law in mpmath."""
    p = mp.mpf(p)
    P = [mp.binomial(k, j) * p ** j * (1 - p) ** (k - j) for j in range(k + 1)]
    Q = [mp.binomial(k, j) * (1 - p) ** j * p ** (k - j) for j in range(k + 1)]
    return P, Q


def gdp_power(mu: float, alpha: np.ndarray) -> np.ndarray:
    """1 − G_μ(α) = Φ̄(Φ̄⁻¹(α) − μ), without cancellation."""
    return norm.sf(norm.isf(alpha) - mu)


# ------------------------------------------------------------- finite pairs: exact
def test_binary_rr_power_at_small_fpr_is_exact():
    rr = accounting.mechanism("randomized_response", p=0.75)
    to = rr.curve(TradeOff)
    P, Q = [0.75, 0.25], [0.25, 0.75]
    want = np.array([np_power(P, Q, a) for a in FPRS])
    np.testing.assert_allclose(want, 3.0 * FPRS, rtol=1e-12)      # the first segment: slope 3
    for bound in ("upper", "lower"):
        got = 1.0 - to.beta(FPRS, bound=bound)
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.all(1.0 - to.beta(FPRS) >= want * (1 - 1e-6))
    assert to.is_exact


def test_binary_rr_power_through_the_accountant():
    """The accountant's trade-off comes from its discretised PLD (grid 2e-4): 1e-3."""
    to = accounting.Accountant().compose(
        accounting.mechanism("randomized_response", p=0.75)).tradeoff()
    got = 1.0 - to.beta(FPRS)
    np.testing.assert_allclose(got, 3.0 * FPRS, rtol=1e-3)
    assert np.all(got >= 3.0 * FPRS * (1 - 1e-12))                 # sound: never less power
    # the μ-GDP summary at α = 0.01 (μ with G_μ(α) = β) follows
    beta = float(to.beta(0.01))
    mu = ndtri(0.99) - ndtri(beta)
    assert mu == pytest.approx(ndtri(0.99) - ndtri(0.97), rel=1e-3)


@pytest.mark.parametrize("p,k", [(0.75, 10), (0.6, 50), (0.55, 400), (0.9, 3)])
def test_k_fold_rr_power_is_the_binomial_neyman_pearson(p, k):
    pair = accounting.compose((accounting.mechanism("randomized_response", p=p).pair(), k))
    to = pair.curve(TradeOff)
    assert to.is_exact
    P, Q = rr_kfold(p, k)
    alphas = np.concatenate([FPRS, [1e-2, 0.3, 0.9]])
    want = np.array([np_power(P, Q, a) for a in alphas])
    for d in ("forward", "backward", "max"):
        for bound in ("upper", "lower"):
            got = 1.0 - to.beta(alphas, d, bound)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-15)


def test_k_fold_rr_closed_form_law_and_rdp():
    one = accounting.mechanism("randomized_response", p=0.7).pair()
    k = 25
    comp = accounting.compose((one, k))
    eps0 = math.log(0.7 / 0.3)
    law = comp.upper[0]
    P, _ = rr_kfold(0.7, k)
    np.testing.assert_allclose(law.losses, (2 * np.arange(k + 1) - k) * eps0, rtol=1e-13)
    np.testing.assert_allclose(law.masses, [float(x) for x in P], rtol=1e-12)
    t = np.array([0.5, 1.0, 4.0])
    np.testing.assert_allclose(comp._cgf(t, accounting.Direction.FORWARD),
                               k * one._cgf(t, accounting.Direction.FORWARD), rtol=1e-13)
    # composing twice multiplies the counts
    assert accounting.compose((comp, 2)).count == 2 * k


def test_discrete_laplace_power_at_small_fpr():
    a = 0.8
    to = accounting.mechanism("discrete_laplace", a=a).curve(TradeOff)
    # Δ = 1: atoms ±a, P(−a) = 1/(1 + e^a); the first segment has slope e^a
    np.testing.assert_allclose(1.0 - to.beta(FPRS), math.exp(a) * FPRS, rtol=1e-6)


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-6), (0.1, 1e-9), (3.0, 0.0)])
def test_epsilon_delta_pair_is_f_eps_delta(eps, delta):
    """The canonical (ε, δ) pair has T = max(0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α))
    (Dong, Roth, Su 2019, Prop. 2.5); its power at small α is δ + e^ε α."""
    e = math.exp(eps)
    P = np.array([delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0.0])
    Q = P[::-1].copy()
    to = discrete_pair(P, Q).curve(TradeOff)
    np.testing.assert_allclose(1.0 - to.beta(FPRS), delta + e * FPRS, rtol=1e-6)
    a = np.linspace(0.0, 1.0, 101)
    f = np.maximum(0.0, np.maximum(1 - delta - e * a, (1 - delta - a) / e))
    np.testing.assert_allclose(to.beta(a), f, atol=1e-13)


@settings(max_examples=40, deadline=None)
@given(finite_pairs(), st.floats(-12, -1))
def test_finite_pair_power_is_neyman_pearson_at_small_fpr(pq, log_alpha):
    p, q = pq
    to = discrete_pair(p, q).curve(TradeOff)
    alpha = 10.0 ** log_alpha
    for d, (a, b) in (("forward", (p, q)), ("backward", (q, p))):
        want = np_power(a, b, alpha)
        assert 1.0 - float(to.beta(alpha, d)) == pytest.approx(want, rel=1e-6)


# --------------------------------------------------- composed PLDs: tight and sound
@pytest.fixture(scope="module")
def composed():
    out = {}
    for sigma, k in ((1.0, 10), (2.0, 100), (0.5, 4), (4.0, 1000)):
        pld = accounting.mechanism("gaussian", sigma=sigma).curve(PLD, step=1e-3)
        out[(sigma, k)] = (pld.self_compose(k).to(TradeOff), math.sqrt(k) / sigma)
    return out


@pytest.mark.parametrize("key", [(1.0, 10), (2.0, 100), (0.5, 4), (4.0, 1000)])
def test_composed_gaussian_power_at_small_fpr(composed, key):
    to, mu = composed[key]
    alphas = np.geomspace(1e-10, 0.5, 41)
    exact = gdp_power(mu, alphas)
    for d in ("forward", "backward"):
        up = 1.0 - to.beta(alphas, d)
        lo = 1.0 - to.beta(alphas, d, "lower")
        assert np.all(up >= exact * (1 - 1e-12))                   # sound: more power
        assert np.all(lo <= exact * (1 + 1e-12))                   # optimistic: less
        small = alphas >= 1e-8
        np.testing.assert_allclose(up[small], exact[small], rtol=1e-3)
        np.testing.assert_allclose(lo[small], exact[small], rtol=1e-3)


@pytest.mark.parametrize("key", [(1.0, 10), (2.0, 100), (0.5, 4)])
def test_composed_gaussian_beta_at_zero_is_one(composed, key):
    """The pair's supports coincide (G_μ(0) = 1): the optimistic side says so exactly,
    the sound side gives away at most the roundoff mass it certified."""
    to, _ = composed[key]
    assert float(to.beta(0.0, bound="lower")) >= 1.0 - 1e-15
    assert float(to.beta(0.0)) >= 1.0 - 1e-9


def test_composed_tradeoff_is_convex_and_decreasing(composed):
    to, _ = composed[(1.0, 10)]
    a = np.linspace(0.0, 1.0, 4001)
    for bound in ("upper",):
        b = to.beta(a, "forward", bound)
        assert np.all(np.diff(b) <= 1e-15)
        assert np.all(np.diff(b, 2) >= -1e-12)


def test_heterogeneous_gaussians_power_is_gdp():
    acc = accounting.Accountant(step=1e-3)
    for sigma, k in ((1.0, 3), (2.0, 20), (3.0, 7)):
        acc.compose(accounting.mechanism("gaussian", sigma=sigma), k)
    mu = math.sqrt(3 / 1.0 + 20 / 4.0 + 7 / 9.0)
    alphas = np.geomspace(1e-8, 0.5, 21)
    got = 1.0 - acc.tradeoff().beta(alphas)
    exact = gdp_power(mu, alphas)
    assert np.all(got >= exact * (1 - 1e-12))
    np.testing.assert_allclose(got, exact, rtol=1e-3)


def sg_power(q: float, sigma: float, alpha: float, direction: str) -> float:
    """Power of the Poisson-subsampled Gaussian, P = (1 − q)N(0, σ²) + qN(1, σ²) against
    Q = N(0, σ²): the loss is increasing in the output x, so forward tests reject x ≤ t
    (P(X ≤ t) = α, power Q(X ≤ t)) and backward ones x ≥ t (Q(X ≥ t) = α, power P(X ≥ t))."""
    if direction == "backward":
        t = sigma * norm.isf(alpha)
        return float((1 - q) * norm.sf(t / sigma) + q * norm.sf((t - 1) / sigma))
    f = lambda t: math.log((1 - q) * norm.cdf(t / sigma) + q * norm.cdf((t - 1) / sigma)) \
        - math.log(alpha)
    t = optimize.brentq(f, -30 * sigma, 30 * sigma, xtol=1e-14, rtol=1e-15)
    return float(norm.cdf(t / sigma))


def test_subsampled_gaussian_power_at_small_fpr(subsampled_pld):
    """An asymmetric pair (q = 0.1, σ = 1): each direction against its closed form."""
    to = subsampled_pld.to(TradeOff)
    alphas = np.geomspace(1e-8, 0.5, 17)
    for d in ("forward", "backward"):
        exact = np.array([sg_power(0.1, 1.0, a, d) for a in alphas])
        up = 1.0 - to.beta(alphas, d)
        lo = 1.0 - to.beta(alphas, d, "lower")
        assert np.all(up >= exact * (1 - 1e-9)) and np.all(lo <= exact * (1 + 1e-9))
        np.testing.assert_allclose(up, exact, rtol=1e-3)
        # the optimistic law (convex minorant at grid 1e-3) is the looser side here:
        # measured 2.1e-3 below at α = 1e-8 forward (3.5e-4 at the default grid 2e-4)
        np.testing.assert_allclose(lo, exact, rtol=5e-3)


@settings(max_examples=15, deadline=None)
@given(finite_pairs(), st.integers(2, 3))
def test_composed_finite_pair_bracket_is_sound_and_convex(pq, k):
    """k-fold product of a random finite pair, through its discretised PLD (grid 1e-2):
    the sound side never exceeds the exact Neyman–Pearson β of the product law, the
    optimistic side is never below it, and the sound side is convex and decreasing."""
    p, q = pq
    P, Q = p, q
    for _ in range(k - 1):
        P, Q = np.outer(P, p).ravel(), np.outer(Q, q).ravel()
    to = accounting.compose((discrete_pair(p, q).curve(PLD, step=1e-2), k)).to(TradeOff)
    alphas = np.concatenate([np.geomspace(1e-12, 1e-2, 21), np.linspace(0.0, 1.0, 201)])
    for d, (a, b) in (("forward", (P, Q)), ("backward", (Q, P))):
        exact = discrete_beta(a, b, alphas)      # float NP: 1e-16 absolute suffices here
        up, lo = to.beta(alphas, d), to.beta(alphas, d, "lower")
        assert np.all(up <= exact + 1e-12)
        assert np.all(lo >= exact - 1e-12)
        grid = to.beta(np.linspace(0.0, 1.0, 1001), d)
        assert np.all(np.diff(grid) <= 1e-15)
        assert np.all(np.diff(grid, 2) >= -1e-12)


# δ(ε) of a trade-off at large ε (found by tests/test_fuzz_invariants.py): e^ε overflows
# past ε ≈ 709.8, where the vertex formula gave ∞·0 = NaN; losses past 745 underflowed
# β, and δ(+∞) was read at the first underflowed β (1 instead of the mass at +∞).
LARGE_EPS = np.array([0.0, 700.0, 750.0, 899.0, 900.5, 990.0, 1200.0, 1e6, np.inf])


def _approx_dp_cubed_delta(eps: np.ndarray) -> np.ndarray:
    """Exact δ(ε) of three (300, 1e-3)-DP uses, in mpmath: the loss is 900 with
    P-mass (1 − δ₀)³·(e³⁰⁰/(1 + e³⁰⁰))³ and +∞ with 1 − (1 − δ₀)³; the rest sits at
    900 − 600k (k ≥ 1), contributing nothing above ε = 300."""
    d0, e0 = mp.mpf("1e-3"), mp.mpf(300)
    keep = (1 - d0) ** 3
    top = keep * (mp.exp(e0) / (1 + mp.exp(e0))) ** 3
    out = []
    for e in eps:
        if e == np.inf:
            out.append(float(1 - keep))
        else:
            out.append(float(top * max(1 - mp.exp(mp.mpf(float(e)) - 900), 0) + (1 - keep)))
    return np.array(out)


def test_tradeoff_delta_at_large_epsilon_is_the_laws_delta():
    acct = accounting.Accountant(step=1e-2).compose(
        accounting.mechanism("approx_dp", epsilon=300.0, delta=1e-3), 3)
    to = acct.curve(TradeOff)
    exact = _approx_dp_cubed_delta(LARGE_EPS)
    assert exact[-1] == pytest.approx(0.002997001, rel=1e-12)     # 1 − 0.999³
    assert exact[3] == pytest.approx(0.63322309, rel=1e-7)        # ε = 899
    for bound in ("upper", "lower"):
        got = to.delta(LARGE_EPS, bound=bound)
        assert not np.isnan(got).any()
        np.testing.assert_allclose(got, exact, rtol=1e-12, atol=1e-15)


def test_tradeoff_delta_past_overflow_is_the_mass_at_infinity():
    """One Gaussian μ = 1 through its PLD: δ(ε) for ε ≥ 710 (and +∞) is the discretised
    law's mass at +∞, on both sides, as the PLD's own δ says; it was NaN."""
    pld = accounting.mechanism("gaussian", sigma=1.0).curve(PLD, step=1e-2)
    to = pld.to(TradeOff)
    far = np.array([710.0, 1e3, 1e6, np.inf])
    for bound in ("upper", "lower"):
        got = to.delta(far, bound=bound)
        m_inf = pld.law("forward", bound).inf_mass
        np.testing.assert_array_equal(got, np.full(far.shape, m_inf))
    assert pld.law("forward", "upper").inf_mass > 0       # the pessimistic tail cut


def test_tradeoff_delta_at_large_epsilon_without_the_laws_stays_a_bracket():
    """A trade-off saved before the laws were kept (``law=None``) answers P(L ≥ l) on the
    pessimistic side and the mass at +∞ on the optimistic one: still a bracket."""
    import attrs
    acct = accounting.Accountant(step=1e-2).compose(
        accounting.mechanism("approx_dp", epsilon=300.0, delta=1e-3), 3)
    to = acct.curve(TradeOff)
    strip = lambda side: attrs.evolve(side, own=tuple(attrs.evolve(o, law=None) for o in side.own))
    old = attrs.evolve(to, upper=strip(to.upper), lower=strip(to.lower))
    far = np.array([750.0, 899.0, 990.0, np.inf])
    exact = _approx_dp_cubed_delta(far)
    up, lo = old.delta(far, bound="upper"), old.delta(far, bound="lower")
    assert np.all(up >= exact) and np.all(lo <= exact)
    np.testing.assert_allclose(lo, 1 - 0.999 ** 3, rtol=1e-12)
