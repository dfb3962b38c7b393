"""Rényi curves of subsampled pairs from the base's primitives (``subsampled_rdp``), and
sampling without replacement under replace-one, checked against exact closed forms,
direct sums and a brute-force enumeration of the mechanism itself."""

import itertools
import math

import attrs
import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, strategies as st

import accounting
from accounting import PLD, RDP, Accountant, PrivacyProfile
from accounting.vocabulary import Direction, Exactness
from accounting.pairs.pair import Pair, discrete_pair
from accounting_mechanisms import subsampled_gaussian_rdp as exact_sgm
from accounting_mechanisms.discrete import (DiscreteGaussianPair, DiscreteLaplacePair,
                                            SubsampledDiscreteGaussianPair)
from accounting_mechanisms.gaussian import GaussianPair
from accounting_mechanisms.subsampled_gaussian import SubsampledGaussianPair
from accounting_mechanisms.subsampling import (PoissonSubsampled, PoissonSubsampledPair,
                                               SampledWithoutReplacement,
                                               WithoutReplacementPair)

F, B = Direction.FORWARD, Direction.BACKWARD


@attrs.frozen
class CGFOnly(Pair):
    """A base that shows only its profile and CGF (no law, no density)."""

    inner: Pair

    def _profile(self, eps, direction):
        return self.inner._profile(eps, direction)

    def _cgf(self, t, direction):
        return self.inner._cgf(t, direction)


# ------------------------------------------------------------ the bound route
@pytest.mark.parametrize("q, z", [(0.01, 1.0), (0.1, 0.8), (0.3, 1.5), (0.001, 0.5)])
def test_binomial_bound_is_exact_at_integer_orders_and_sound_between(q, z):
    pair = PoissonSubsampledPair(CGFOnly(GaussianPair(1.0 / z)), q)
    exact = SubsampledGaussianPair.of(q, z)
    ints = np.array([1.0, 2.0, 4.0, 9.0, 31.0, 100.0])
    np.testing.assert_allclose(pair._cgf(ints, F), exact._cgf(ints, F), rtol=1e-10)
    frac = np.array([0.3, 0.5, 1.7, 2.7, 12.5, 600.0, 900.0])   # 600, 900: past the table
    assert np.all(pair._cgf(frac, F) >= exact._cgf(frac, F) * (1 - 1e-12))


@pytest.mark.parametrize("q, z", [(0.01, 1.0), (0.1, 0.8), (0.3, 1.5), (0.001, 0.5),
                                  (0.01, 3.0)])
def test_add_direction_bound_is_sound(q, z):
    pair = PoissonSubsampledPair(CGFOnly(GaussianPair(1.0 / z)), q)
    t = np.array([0.2, 0.5, 1.0, 2.0, 2.7, 5.0, 9.0, 31.0, 100.0, 400.0])
    bound = pair._cgf(t, B)
    exact = SubsampledGaussianPair.of(q, z)._cgf(t, B)
    assert np.all(bound >= exact * (1 - 1e-12))


def test_add_direction_bound_is_tight_for_small_q():
    # the Taylor bounds carry the exact leading term t(t+1)q²χ²/2
    q, z = 0.01, 1.0
    t = np.array([1.0, 2.0, 5.0, 9.0])
    bound = PoissonSubsampledPair(CGFOnly(GaussianPair(1.0 / z)), q)._cgf(t, B)
    exact = SubsampledGaussianPair.of(q, z)._cgf(t, B)
    np.testing.assert_array_less(bound / exact, [1.01, 1.02, 1.06, 1.15])   # measured
    # … and below the (exact) remove direction there, so the max over directions is exact
    assert np.all(bound <= SubsampledGaussianPair.of(q, z)._cgf(t, F))


def test_bound_route_is_labelled_an_upper_bound_and_has_no_lower_side():
    pair = PoissonSubsampledPair(CGFOnly(GaussianPair(1.0)), 0.1)
    rdp = pair.curve(RDP)
    assert rdp.provenance.exactness is Exactness.UPPER
    assert rdp.lower is None
    with pytest.raises(ValueError):
        rdp.rdp(2.0, bound="lower")
    assert pair.curve(accounting.ZCDP).lower is None


def _dgauss_mixture_cgf(sigma, q, alpha, direction):
    """Direct sum over ℤ of the subsampled discrete Gaussian's Rényi moment (mpmath)."""
    mp.mp.dps = 40
    ks = range(-60 * int(sigma) - 20, 60 * int(sigma) + 22)
    w = [mp.exp(-mp.mpf(k) ** 2 / (2 * sigma ** 2)) for k in ks]
    w1 = [mp.exp(-mp.mpf(k - 1) ** 2 / (2 * sigma ** 2)) for k in ks]
    z = mp.fsum(w)
    qq = mp.mpf(q)
    total = mp.mpf(0)
    for a, b in zip(w, w1):
        q0, mix = a / z, (1 - qq) * a / z + qq * b / z
        total += q0 * (mix / q0) ** alpha if direction is F else q0 * (q0 / mix) ** (alpha - 1)
    return float(mp.log(total))


@pytest.mark.parametrize("alpha", [2.0, 5.0])
def test_subsampled_discrete_gaussian_rdp_is_finite_and_sound(alpha):
    sigma, q = 2.0, 0.05
    mech = PoissonSubsampled(accounting.mechanism("discrete_gaussian", sigma=sigma), q)
    rdp = mech.curve(RDP)
    t = alpha - 1.0
    fwd, bwd = rdp.cgf(t, "forward"), rdp.cgf(t, "backward")
    # forward: the binomial sum is exact at integer orders
    assert fwd == pytest.approx(_dgauss_mixture_cgf(sigma, q, alpha, F), rel=1e-9)
    exact_bwd = _dgauss_mixture_cgf(sigma, q, alpha, B)
    assert exact_bwd <= bwd <= 1.05 * exact_bwd
    assert np.isfinite(rdp.rdp(1000.0))
    # the PLD's ε is never below the RDP-free truth: its lower side brackets the RDP's
    acct = Accountant(step=1e-3).compose(mech, 50)
    assert acct.under("rdp").epsilon(1e-6) >= acct.epsilon(1e-6) * (1 - 1e-9)


# ------------------------------------------------------------- the law route
def test_law_route_is_exact_for_randomized_response():
    p, q = 0.8, 0.1
    base = accounting.mechanism("randomized_response", p=p, neighbouring="add_remove")
    rdp = PoissonSubsampled(base, q).curve(RDP)
    assert rdp.provenance.exactness is Exactness.EXACT
    P0, Q0 = np.array([p, 1 - p]), np.array([1 - p, p])
    P = (1 - q) * Q0 + q * P0
    for alpha in (1.5, 2.0, 7.3, 200.0):
        fwd = np.log(np.sum(Q0 * (P / Q0) ** alpha)) / (alpha - 1)
        bwd = np.log(np.sum(P * (Q0 / P) ** alpha)) / (alpha - 1)
        assert rdp.rdp(alpha, "forward") == pytest.approx(fwd, rel=1e-12)
        assert rdp.rdp(alpha, "backward") == pytest.approx(bwd, rel=1e-12)


def test_law_route_handles_outcomes_only_one_side_has():
    # P₀ has an outcome Q₀ lacks: forward D_α = ∞; Q₀ has one P₀ lacks: backward finite
    base = discrete_pair(np.array([0.5, 0.5, 0.0]), np.array([0.0, 0.5, 0.5]))
    pair = PoissonSubsampledPair(base, 0.2)
    assert pair._cgf(np.array([1.0]), F)[0] == np.inf
    P = np.array([0.1, 0.5, 0.4])          # 0.8·Q₀ + 0.2·P₀
    Q0 = np.array([0.0, 0.5, 0.5])
    m = Q0 > 0
    expected = np.log(np.sum(Q0[m] * (Q0[m] / P[m]) ** 1.0))
    assert pair._cgf(np.array([1.0]), B)[0] == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------- sampling without replacement
def _brute_force_delta(n, m, a, eps):
    """sup over datasets D ∈ {0,1}^n and replaced records of δ(ε) of: draw m of n
    records without replacement, release their sum + discrete Laplace(a) noise."""
    support = np.arange(-80, 80 + n + 1)
    log_pmf = lambda k: np.log(np.tanh(a / 2)) - a * np.abs(k)   # noqa: E731
    subsets = list(itertools.combinations(range(n), m))

    def law(x):
        return np.mean([np.exp(log_pmf(support - sum(x[j] for j in s))) for s in subsets],
                       axis=0)
    worst = np.zeros(len(eps))
    for x in itertools.product((0, 1), repeat=n):
        for i in range(n):
            y = list(x)
            y[i] = 1 - y[i]
            p, q = law(x), law(y)
            d = np.array([np.maximum(p - np.exp(e) * q, 0).sum() for e in eps])
            worst = np.maximum(worst, d)
    return worst


def test_without_replacement_matches_brute_force_enumeration():
    n, m, a = 5, 2, 0.7
    eps = np.array([-1.0, -0.6, -0.45, -0.3, -0.1, 0.0, 0.1, 0.2, 0.3, 0.5])
    truth = _brute_force_delta(n, m, a, eps)
    base = accounting.mechanism("discrete_laplace", a=a, neighbouring="replace_one")
    mech = SampledWithoutReplacement(base, m, n)
    # the worst dataset (all other records 0) attains the symmetric dominating profile
    # at every ε, negative ones included, in both directions
    for d in ("forward", "backward"):
        np.testing.assert_allclose(mech.pair().profile(eps, d), truth, rtol=1e-10, atol=1e-14)
    # whereas the forward direction of (γP₀ + (1 − γ)Q₀, Q₀) alone falls short below 0
    poisson = PoissonSubsampledPair(base.pair(), m / n)
    assert poisson._profile(np.array([-0.3]), F)[0] < 0.96 * truth[3]
    pld = mech.curve(PLD, step=1e-3)
    assert np.all(pld.delta(eps) >= truth * (1 - 1e-9))


def _symmetric_rdp_by_quadrature(gamma, mu, alpha):
    """D_α of the symmetric WOR profile from its hockey-stick integral (mpmath):
    E[X^α] − 1 = ∫₀^∞ α(α−1)(e^{(α−1)ε} + e^{−αε}) δ_fwd(ε) dε."""
    mp.mp.dps = 30
    g, a = mp.mpf(gamma), mp.mpf(alpha)

    def delta_gdp(e):
        return mp.ncdf(mu / 2 - e / mu) - mp.exp(e) * mp.ncdf(-mu / 2 - e / mu)

    def delta_fwd(e):
        return g * delta_gdp(mp.log(1 + (mp.exp(e) - 1) / g))
    f = lambda e: a * (a - 1) * (mp.exp((a - 1) * e) + mp.exp(-a * e)) * delta_fwd(e)  # noqa: E731
    return float(mp.log(1 + mp.quad(f, [0, 1, 5, 20, 60])) / (a - 1))


def test_without_replacement_of_a_symmetric_base():
    gamma, mu = 0.01, 2.0
    wor = WithoutReplacementPair(GaussianPair(mu), gamma)
    poisson = SubsampledGaussianPair.of(gamma, 1.0 / mu)
    pos, neg = np.linspace(0.0, 4.0, 9), np.linspace(-3.0, -0.25, 12)
    for d in (F, B):
        # the remove profile for ε ≥ 0, its reverse (the add profile) below
        np.testing.assert_allclose(wor._profile(pos, d), poisson._profile(pos, F), rtol=1e-12)
        np.testing.assert_allclose(wor._profile(neg, d), poisson._profile(neg, B), rtol=1e-9)
    rdp = wor.curve(RDP)
    # a bound (UPPER) on the Poisson pair's certified Rényi curve: an upper bound
    assert rdp.provenance.exactness is Exactness.UPPER
    for alpha in (2.0, 8.0):
        exact = _symmetric_rdp_by_quadrature(gamma, mu, alpha)
        ours = float(rdp.rdp(alpha))
        assert exact <= ours <= 1.6 * exact
        assert ours >= float(exact_sgm.rdp_remove(gamma, 1 / mu, alpha))
    assert wor.curve(accounting.ZCDP).rho() <= mu ** 2 / 2 + 1e-15


def test_without_replacement_of_an_asymmetric_base_takes_the_worse_direction():
    base = accounting.mechanism("gaussian_mixture", weights=[0.3, 0.7], means=[-1.0, 1.0],
                                scales=[1.0, 1.0], neighbouring="replace_one")
    pair = SampledWithoutReplacement(base, 10, 100).pair()
    inner = base.pair()
    eps = np.array([0.05, 0.2, 0.5])
    arg = np.log1p(np.expm1(eps) / 0.1)
    worst = np.maximum(inner._profile(arg, F), inner._profile(arg, B))
    assert worst[0] > min(inner._profile(arg, F)[0], inner._profile(arg, B)[0])
    np.testing.assert_allclose(pair._profile(eps, F), 0.1 * worst, rtol=1e-12)
    # the symmetrised base is its own reverse, so the pair's directions stay consistent:
    # δ_{Q‖P}(ε) = 1 − e^ε + e^ε δ_{P‖Q}(−ε)
    e = np.array([0.01, 0.03, 0.08])
    np.testing.assert_allclose(pair._profile(e, B),
                               1 - np.exp(e) + np.exp(e) * pair._profile(-e, F), rtol=1e-9,
                               atol=1e-14)
    assert not pair.provides("cgf")                  # no Rényi curve claimed


def test_neighbouring_relation_is_enforced():
    add_remove = accounting.mechanism("gaussian", sigma=1.0)
    replace_one = accounting.mechanism("gaussian", sigma=1.0, sensitivity=2.0,
                                       neighbouring="replace_one")
    with pytest.raises(ValueError, match="sampled_without_replacement"):
        PoissonSubsampled(replace_one, 0.1)
    with pytest.raises(ValueError, match="poisson_subsampled"):
        SampledWithoutReplacement(add_remove, 10, 100)
    with pytest.raises(ValueError, match="replace_one"):
        accounting.mechanism("subsampled_gaussian", q=0.1, sigma=1.0, neighbouring="replace_one")
    with pytest.raises(ValueError, match="batch_size"):
        SampledWithoutReplacement(replace_one, 200, 100)
    with pytest.raises(TypeError, match="batch_size"):
        SampledWithoutReplacement(replace_one, 2.5, 100)


def test_subsampled_rho_falls_back_to_the_base_rho_without_a_warning():
    import warnings
    sigma = 2.0
    mech = PoissonSubsampled(accounting.mechanism("discrete_gaussian", sigma=sigma), 0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        z = mech.curve(accounting.ZCDP)
    # the sup of K(t)/(t(t+1)) is its t → ∞ limit, the base's 1/(2σ²)
    assert z.rho() == pytest.approx(1 / (2 * sigma ** 2), rel=1e-12)
    assert z.provenance.exactness is Exactness.UPPER and z.lower is None
    ts = np.array([10.0, 100.0, 400.0])
    ratio = mech.curve(RDP).cgf(ts, "forward") / (ts * (ts + 1))
    assert np.all(ratio <= z.rho()) and ratio[-1] > 0.93 * z.rho()   # gap ~ −log q / t


# --------------------------- issue 22: fractional orders of subsampled bases, tight


def test_taylor_majorant_makes_the_bound_route_tight_between_integer_orders():
    # Poisson-subsampled discrete Gaussian, sigma = 2.5, q = 0.01, seen through its CGF
    # only: at alpha = 1.5 the chord of K(0) = 0 and K(1) gave 1.7351e-5 (50 uses:
    # 8.675e-4), the exact value is 1.30014e-5 (50 uses: 6.5007e-4)
    sigma, q = 2.5, 0.01
    pair = PoissonSubsampledPair(CGFOnly(DiscreteGaussianPair(sigma, 1)), q)
    for alpha in (1.25, 1.5, 2.5, 4.5, 10.5):
        exact = _dgauss_mixture_cgf(sigma, q, alpha, F)
        ours = float(pair._cgf(np.array([alpha - 1.0]), F)[0])
        assert exact <= ours <= exact * (1 + 1e-9), (alpha, ours / exact - 1)
    exact = _dgauss_mixture_cgf(sigma, q, 1.5, F) / 0.5
    assert 50 * exact == pytest.approx(6.5007e-4, rel=1e-4)
    # … and the same through the registered specialisation, composed 50 times
    mech = PoissonSubsampled(accounting.mechanism("discrete_gaussian", sigma=sigma), q)
    composed = float(accounting.compose((mech.curve(RDP), 50)).rdp(1.5, "forward"))
    assert 50 * exact <= composed <= 50 * exact * (1 + 1e-9)


@pytest.mark.parametrize("alpha", [1.25, 1.5, 2.5, 4.5, 10.5])
@pytest.mark.parametrize("q, sigma", [(0.01, 0.5), (0.1, 1.0), (0.5, 2.5), (0.01, 1.0),
                                      (0.5, 0.5)])
def test_subsampled_discrete_gaussian_lattice_sum_is_tight_in_both_directions(q, sigma, alpha):
    # where the base's moments grow too fast for the Taylor majorant (small sigma, large
    # q) the chord was up to 3x the truth (sigma = 0.5, q = 0.01, alpha = 2.5); the lattice
    # sum with its proven tails is within ~1e-12 in both directions
    pair = PoissonSubsampled(accounting.mechanism("discrete_gaussian", sigma=sigma), q).pair()
    assert isinstance(pair, SubsampledDiscreteGaussianPair)
    assert pair.cgf_exactness() is Exactness.UPPER
    for d in (F, B):
        exact = _dgauss_mixture_cgf(sigma, q, alpha, d)
        ours = float(pair._cgf(np.array([alpha - 1.0]), d)[0])
        assert exact <= ours <= exact * (1 + 1e-9), (d, ours / exact - 1)


def test_subsampled_discrete_gaussian_keeps_exact_integer_orders():
    # integer remove orders stay the binomial sums of the generic route, bit for bit
    sigma, q = 0.7, 0.2
    special = PoissonSubsampled(accounting.mechanism("discrete_gaussian", sigma=sigma), q).pair()
    generic = PoissonSubsampledPair(DiscreteGaussianPair(sigma, 1), q)
    ints = np.array([1.0, 2.0, 5.0, 30.0])
    np.testing.assert_array_equal(special._cgf(ints, F), generic._cgf(ints, F))
    assert special._cgf(ints, F)[1] == pytest.approx(_dgauss_mixture_cgf(sigma, q, 3.0, F),
                                                     rel=1e-12)


def test_add_direction_taylor_bound_counts_the_moments_roundoff():
    # sigma = 10, q = 1e-3, alpha = 30.5 (add): the Taylor bound summed the central
    # moments without their roundoff and came out 5e-15 relative below the exact value
    sigma, q, alpha = 10.0, 1e-3, 30.5
    pair = PoissonSubsampledPair(CGFOnly(DiscreteGaussianPair(sigma, 1)), q)
    exact = _dgauss_mixture_cgf(sigma, q, alpha, B)
    ours = float(pair._cgf(np.array([alpha - 1.0]), B)[0])
    assert exact <= ours <= exact * (1 + 1e-9)


@given(st.floats(-3.0, math.log10(0.9)), st.floats(math.log10(0.3), math.log10(20.0)))
def test_subsampled_discrete_gaussian_fractional_orders_are_monotone_and_convex(log_q, log_s):
    # D_alpha non-decreasing and K convex in alpha on fractional orders (the lattice sum
    # is within ~1e-12 of the truth, which has both properties)
    q, sigma = 10.0 ** log_q, 10.0 ** log_s
    pair = PoissonSubsampled(accounting.mechanism("discrete_gaussian", sigma=sigma), q).pair()
    t = np.arange(0.3, 12.0, 0.37)
    for d in (F, B):
        k = pair._cgf(t, d)
        assert np.all(np.isfinite(k)) and np.all(k > 0)
        dd = k / t
        assert np.all(dd[1:] >= dd[:-1] * (1 - 1e-9)), d
        second = k[:-2] - 2.0 * k[1:-1] + k[2:]
        assert np.all(second >= -1e-9 * k[1:-1]), d
