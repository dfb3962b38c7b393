"""The fast paths of the PLD engine give the answers of the slow ones, and stay sound.

* the summed CGF of grid laws by blocks (one matrix product for all θ) brackets the
  exact K(θ), evaluated in mpmath;
* the vectorised search for the largest loss ends at the floats a scalar bisection
  finds;
* the lower convex hull with local passes is Andrew's monotone chain over all points;
* the Fourier composition of distinct laws (one transform per law and tilt, raised to
  its count) brackets the sequential convolution of the same laws, and heterogeneous
  Gaussians bracket the exact GDP composition μ = √(Σ c_i μ_i²);
* an exact pair's lower PLD side reuses the upper side's grid values and still sits
  below the exact profile.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import accounting
from accounting import PLD, ComposedPair, LossPMF
from accounting.numerics import discretise as D
from accounting.numerics import fourier as L
from accounting.numerics import summed_cgf
from accounting.pairs.derive import _profile
from accounting.vocabulary import Direction

from closed_forms import gaussian_delta


def _gaussian_law(mu: float, step: float, pessimistic: bool = True) -> LossPMF:
    pld = accounting.mechanism("gaussian", sigma=1.0 / mu).pair().curve(PLD, step=step)
    return pld.upper[0] if pessimistic else pld.lower[0]


# ------------------------------------------------------------ summed CGF by blocks
@pytest.mark.parametrize("sigma, count", [(0.8, 1000), (2.0, 3), (1.1, 14062)])
def test_blocked_cgf_brackets_the_exact_cgf(sigma, count):
    """k(θ) ≥ Σ c·K(θ) ≥ k_low(θ) at every grid θ, K in mpmath (30 digits) from the
    same masses; and the two sides agree to a relative 1e-9 (plus rounding of c·K)."""
    q = 0.01 if count == 1000 else (256 / 60000 if count == 14062 else 0.3)
    law = accounting.mechanism("subsampled_gaussian", q=q, sigma=sigma).pair().curve(
        PLD, step=1e-3).upper[0]
    cgf = summed_cgf.SummedCGF([(law, count)])
    assert cgf._laws[0][-1] is not None          # the blocked path was taken
    keep = law.masses > 0
    with mp.workdps(30):
        logp = [mp.log(mp.mpf(float(m))) for m in law.masses[keep]]
        losses = [mp.mpf(float(x)) for x in law.losses[keep]]
        logm = mp.log(mp.fsum(mp.mpf(float(m)) for m in law.masses[keep]))
    for i in range(0, cgf.thetas.size, 5):
        with mp.workdps(30):
            th = mp.mpf(float(cgf.thetas[i]))
            terms = [lp + th * x for lp, x in zip(logp, losses)]
            top = max(terms)
            exact = count * (top + mp.log(mp.fsum(mp.exp(t - top) for t in terms)) - logm)
            ex = float(exact)
        slack = 1e-9 * abs(ex) + count * 1e-13
        assert cgf.k[i] >= ex - 1e-300, (cgf.thetas[i], cgf.k[i], ex)
        assert cgf.k_low[i] <= ex + 1e-300, (cgf.thetas[i], cgf.k_low[i], ex)
        assert cgf.k[i] - cgf.k_low[i] <= slack or i == cgf.zero


# --------------------------------------------------------------- largest loss search
def _bisection_sup(delta, indices, step, d):
    """The scalar bisection the vectorised search replaced (reference)."""
    pos = np.flatnonzero(d > 0)
    a, b = float(indices[pos[-1]] * step), float(indices[pos[-1] + 1] * step)
    while True:
        mid = 0.5 * (a + b)
        if mid <= a or mid >= b:
            return b
        if float(delta(np.array([mid]))[0]) > 0:
            a = mid
        else:
            b = mid


@pytest.mark.parametrize("q, sigma", [(0.01, 0.5), (0.01, 3.0), (0.3, 1.1), (1e-4, 0.7)])
def test_profile_sup_matches_bisection(q, sigma):
    pair = accounting.mechanism("subsampled_gaussian", q=q, sigma=sigma).pair()

    def f(e):
        return pair._profile(e, Direction.BACKWARD)

    step = 1e-3
    idx = np.arange(-50, int(2 * -math.log1p(-q) / step) + 50)
    d = f(idx * step)
    sup = D.profile_sup(f, idx, step, d)
    first_zero = _bisection_sup(f, idx, step, d)
    last_positive = f(np.array([np.nextafter(first_zero, -np.inf)]))[0]
    assert f(np.array([first_zero]))[0] == 0.0 and last_positive > 0.0
    if last_positive >= D.SUP_FLOOR:
        # it is where the profile first vanishes, to the float
        assert sup == first_zero
    else:
        # the computed zero follows values near underflow: no certified largest loss
        assert sup is None
    # a certified largest loss is never below the true one, −log(1 − q)
    assert sup is None or sup >= -math.log1p(-q) * (1 - 1e-15)


def test_pure_dp_query_of_an_underflowing_profile_is_not_under_reported():
    # σ = 3: the backward profile underflows to 0 at 0.0100503048, before the true
    # largest loss −log(1 − q) = 0.0100503359 (reported as ε(0) before)
    q = 0.01
    pld = accounting.mechanism("subsampled_gaussian", q=q, sigma=3.0).curve(PLD, step=1e-3)
    assert float(pld.epsilon(0.0, "backward")) >= -math.log1p(-q)


def test_profile_sup_none_without_vanishing():
    pair = accounting.mechanism("gaussian", sigma=1.0).pair()
    idx = np.arange(-10, 10)
    d = pair._profile(idx * 0.1, Direction.FORWARD)
    assert D.profile_sup(lambda e: pair._profile(e, Direction.FORWARD), idx, 0.1, d) is None


# -------------------------------------------------------------------- convex hull
@pytest.mark.parametrize("seed", range(6))
def test_hull_with_local_passes_is_the_monotone_chain(seed):
    rng = np.random.default_rng(seed)
    n = 2000
    xs = np.unique(np.sort(rng.random(n)) * 10)
    n = xs.size
    y = (xs - 5) ** 2 * rng.random() + rng.normal(0, 10 ** rng.uniform(-6, -1), n) * (
        rng.random(n) < 0.3)
    if seed % 2:                      # a steep end: a chord sweeping in, point by point
        y[-1] = -10 ** rng.uniform(2, 6)
    lf = np.zeros(n, dtype=bool)
    hull = D._hull_vertices(xs, y, y, lf)
    chain = D._chain(np.arange(n), xs, y, y, lf)
    np.testing.assert_array_equal(hull, chain)
    # every point lies on or above the hull's polyline
    assert np.all(y >= np.interp(xs, xs[hull], y[hull]) - 1e-9 * (1 + np.abs(y)))


# ---------------------------------------------------------- Fourier composition
def test_fourier_composition_brackets_sequential_convolution():
    """Two distinct laws, counts 3 and 2: one transform each, powers, one inverse.
    The sequential linear convolution of the same grid laws (exact up to
    non-negative rounding) lies between the optimistic and the pessimistic result."""
    step = 0.02
    a = _gaussian_law(0.7, step)
    b = _gaussian_law(0.4, step)
    seq = np.convolve(np.convolve(np.convolve(np.convolve(a.masses, a.masses), a.masses),
                                  b.masses), b.masses)
    off = 3 * a.offset + 2 * b.offset
    # the inputs' masses at +∞ (their cut tails) combine as 1 − Π(1 − m)^c
    inf = -math.expm1(3 * math.log1p(-a.inf_mass) + 2 * math.log1p(-b.inf_mass))
    exact = LossPMF.on_grid(step, off, seq, inf_mass=inf)
    up = L.compose_pmfs([(a, 3), (b, 2)], pessimistic=True)
    lo = L.compose_pmfs([(a, 3), (b, 2)], pessimistic=False)
    eps = np.linspace(-2, 8, 201)
    de, du, dl = exact.delta(eps), up.delta(eps), lo.delta(eps)
    assert np.all(du >= de * (1 - 1e-12) - 1e-300)
    assert np.all(dl <= de * (1 + 1e-12) + 1e-300)
    big = de > 1e-12
    assert np.max((du - dl)[big] / de[big]) < 1e-8


def test_fourier_composition_of_distinct_gaussians_is_gdp():
    """G_μ1^{c1} ⊗ G_μ2^{c2} ⊗ G_μ3^{c3} = G_√(Σ c μ²) (Dong, Roth, Su 2019, Cor. 3.3):
    10 × μ = 0.3, 40 × μ = 0.1, 5 × μ = 0.2 → μ = √(0.9 + 0.4 + 0.2) = √1.5."""
    parts = [(accounting.mechanism("gaussian", sigma=1 / mu).pair(), c)
             for mu, c in ((0.3, 10), (0.1, 40), (0.2, 5))]
    # each component's power is its closed form; the three distinct laws then go
    # through one Fourier-domain composition
    pld = ComposedPair(tuple(parts)).curve(PLD, step=1e-3)
    mu = math.sqrt(1.5)
    eps = np.linspace(0.0, 6.0, 61) + 0.3e-3
    exact = gaussian_delta(mu, eps)
    up, lo = pld.delta(eps), pld.delta(eps, bound="lower")
    assert np.all(up >= exact * (1 - 1e-12))
    assert np.all(lo <= exact * (1 + 1e-12))
    big = exact > 1e-10
    assert np.max((up - lo)[big] / exact[big]) < 2e-3


def test_distinct_subsampled_gaussians_bracket_every_delta():
    """Five distinct subsampled Gaussians × 200: the interval holds the RDP bound's
    side (upper ≤ RDP ε) and is narrow; ε(δ) is monotone."""
    acct = accounting.Accountant(step=1e-3)
    for s in np.linspace(0.8, 2.0, 5):
        acct.compose(accounting.mechanism("subsampled_gaussian", q=0.01, sigma=float(s)), 200)
    deltas = np.array([1e-5, 1e-8, 1e-10])
    lo, hi = acct.epsilon_interval(deltas)
    rdp = acct.under("rdp").epsilon(deltas)
    assert np.all(lo <= hi) and np.all(hi <= rdp)
    assert np.all((hi - lo) / hi < 5e-3)
    assert np.all(np.diff(hi) > 0) and np.all(np.diff(lo) > 0)


# ---------------------------------------------------- one side for exact pairs
def test_exact_pair_lower_side_reuses_the_profile():
    pair = accounting.mechanism("subsampled_gaussian", q=0.05, sigma=0.9).pair()
    prof = _profile(pair)
    assert prof.lower is prof.upper
    pld = pair.curve(PLD, step=1e-3)
    eps = np.linspace(-0.5, 4.0, 91) + 0.37e-3
    for d in (Direction.FORWARD, Direction.BACKWARD):
        exact = pair._profile(eps, d)
        assert np.all(pld.law(d, "lower").delta(eps) <= exact * (1 + 1e-12) + 1e-300)
        assert np.all(pld.law(d, "upper").delta(eps) >= exact * (1 - 1e-12) - 1e-300)
