"""Certified brackets of ε(δ) down to δ = 1e-30 (issue 24, deliverable 4).

The accountant answers δ below ``DEEP_BELOW`` from its deep tier (``accountant._Tiered``:
1e-40 of tail cut in all, and as much above each composed window), so the upper ε
stays finite and the bracket within 0.1 % where the default tier's +∞ mass (≈ 1e-20)
would give ∞. Checked against:

* the closed form of μ-GDP (Balle & Wang, arXiv:1805.06530, Thm 8; Dong, Roth, Su,
  arXiv:1905.02383, Cor. 2.13) for a composition of distinct Gaussians,
  μ = √(Σ kᵢ/σᵢ²), evaluated with mpmath at δ = 1e-30;
* an independent mpmath computation of δ(ε) for two Poisson-subsampled Gaussian
  steps: the loss of one step, L(y) = log(1 − q + q·e^{(2y − 1)/(2σ²)}), is increasing
  in y, so for each x the region L(x) + L(y) > ε is y > y*(x) in closed form and the
  inner integral is a difference of normal tails: δ₂(ε) = ∫ p(x)·P̄(y*) − e^ε·q(x)·Q̄(y*) dx,
  one quadrature in 30 digits;
* the widths of DP-SGD (q = 0.01, σ = 1, 1000 steps) and a mixed job (DP-SGD + 10
  Laplace + 5 Gaussian) from δ = 1e-5 to 1e-30.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import accounting as ac
from accounting.curves.pld import DEEP_BELOW

from closed_forms import gaussian_delta, gaussian_epsilon

DELTAS = [1e-5, 1e-10, 1e-15, 1e-20, 1e-25, 1e-30]


def _interval(acct: ac.Accountant, delta: float) -> tuple[float, float]:
    lo, hi = acct.epsilon_interval(delta)
    return float(lo), float(hi)


def test_distinct_gaussians_bracket_the_gdp_closed_form_at_1e_30():
    """Three distinct Gaussians (each an exact n-fold power, then composed by FFT):
    the bracket holds the exact μ-GDP ε, is finite, and is within 0.1 %."""
    acct = ac.Accountant()
    parts = [(3.0, 10), (5.0, 20), (4.0, 7)]
    for sigma, count in parts:
        acct.compose(ac.mechanism("gaussian", sigma=sigma), count)
    mu = math.sqrt(sum(k / s ** 2 for s, k in parts))
    exact = gaussian_epsilon(mu, 1e-30)
    lo, hi = _interval(acct, 1e-30)
    assert math.isfinite(hi)
    assert lo <= exact <= hi
    assert hi - lo <= 1e-3 * hi
    # and as δ(ε): the closed form at the bracket's ends straddles 1e-30
    assert gaussian_delta(mu, hi) <= 1e-30 <= gaussian_delta(mu, lo)


def _sg_two_step_delta(q: float, sigma: float, eps: float) -> tuple[mp.mpf, mp.mpf]:
    """δ(ε) of two Poisson-subsampled Gaussian steps, remove direction, P = (1 − q)N(0, σ²)
    + qN(1, σ²) against Q = N(0, σ²), per step (see the module docstring), and a bound
    on its quadrature error: the value on 40 pieces and its distance to that on 20."""
    with mp.workdps(15):
        q_, s, e = mp.mpf(q), mp.mpf(sigma), mp.mpf(eps)
        inf_l = mp.log(1 - q_)                      # the loss's infimum (y → −∞)

        def loss(x):
            return mp.log(1 - q_ + q_ * mp.exp((2 * x - 1) / (2 * s ** 2)))

        def q_tail(t):                               # Q̄(t) = P_Q(Y > t)
            return mp.ncdf(-t / s)

        def p_tail(t):
            return (1 - q_) * mp.ncdf(-t / s) + q_ * mp.ncdf(-(t - 1) / s)

        def p_pdf(x):
            return ((1 - q_) * mp.npdf(x, 0, s) + q_ * mp.npdf(x, 1, s))

        def integrand(x):
            c = e - loss(x)                          # need L(y) > c
            if c <= inf_l:                           # every y: the whole inner mass
                return p_pdf(x) - mp.exp(e) * mp.npdf(x, 0, s)
            # L(y) = c  ⇔  e^{(2y − 1)/(2σ²)} = (e^c − 1 + q)/q
            y = s ** 2 * mp.log((mp.exp(c) - 1 + q_) / q_) + mp.mpf(1) / 2
            return p_pdf(x) * p_tail(y) - mp.exp(e) * mp.npdf(x, 0, s) * q_tail(y)

        # x* where c = inf L: beyond it the integrand is p − e^ε q (integrated in closed
        # form), below it the inner tail, in pieces so that tanh-sinh resolves the
        # integrand's two bumps (six pieces left a relative 7e-5 at δ = 1e-12; measured
        # at δ = 1e-30: 20 pieces 1.2e-7 from 40, 40 pieces 7e-9 from 80 in 20 digits)
        x_star = s ** 2 * mp.log((mp.exp(e - inf_l) - 1 + q_) / q_) + mp.mpf(1) / 2
        above = p_tail(x_star) - mp.exp(e) * q_tail(x_star)
        fine, coarse = (mp.quad(integrand, [-mp.inf, *mp.linspace(-12, x_star, n)]) + above
                        for n in (40, 20))
        return fine, abs(fine - coarse)


def test_two_subsampled_gaussian_steps_bracket_the_mpmath_delta_at_1e_30():
    """q = 0.01, σ = 1, two steps: the exact δ (mpmath) at the bracket's ends straddles
    1e-30 (the add direction's loss is at most 2·log(1/(1 − q)) = 0.02, so it has δ = 0
    at these ε and the remove direction is the max)."""
    q, sigma = 0.01, 1.0
    acct = ac.Accountant().compose(ac.mechanism("subsampled_gaussian", q=q, sigma=sigma), 2)
    lo, hi = _interval(acct, 1e-30)
    assert math.isfinite(hi) and lo > 2 * math.log(1 / (1 - q))
    assert hi - lo <= 1e-3 * hi
    (d_hi, e_hi), (d_lo, e_lo) = (_sg_two_step_delta(q, sigma, hi),
                                  _sg_two_step_delta(q, sigma, lo))
    assert max(e_hi / d_hi, e_lo / d_lo) < 1e-6        # the quadrature is resolved
    assert d_hi + e_hi <= mp.mpf("1e-30") <= d_lo - e_lo
    # and the bracket is not loose around it (measured: 1.0013)
    assert d_lo / d_hi < 1.01


def test_the_two_step_quadrature_matches_the_accountant_at_a_large_delta():
    """The same quadrature, at δ = 1e-5 (default tier): the check itself is sound."""
    q, sigma = 0.01, 1.0
    acct = ac.Accountant().compose(ac.mechanism("subsampled_gaussian", q=q, sigma=sigma), 2)
    eps = 0.5
    lo, hi = (float(x) for x in acct._tiered(lower=True).delta_interval(eps))
    exact, err = (float(x) for x in _sg_two_step_delta(q, sigma, eps))
    assert lo <= exact - err and exact + err <= hi
    assert hi - lo <= 1e-3 * hi


@pytest.fixture(scope="module")
def dpsgd() -> ac.Accountant:
    return ac.Accountant().compose(ac.mechanism("subsampled_gaussian", q=0.01, sigma=1.0), 1000)


@pytest.fixture(scope="module")
def mixed() -> ac.Accountant:
    acct = ac.Accountant().compose(ac.mechanism("subsampled_gaussian", q=0.01, sigma=1.0), 1000)
    acct.compose(ac.mechanism("laplace", b=20.0), 10)
    acct.compose(ac.mechanism("gaussian", sigma=5.0), 5)
    return acct


@pytest.mark.parametrize("job", ["dpsgd", "mixed"])
def test_brackets_within_a_tenth_of_a_percent_to_1e_30(job, request):
    acct = request.getfixturevalue(job)
    lo, hi = (np.asarray(x, dtype=float) for x in acct.epsilon_interval(DELTAS))
    assert np.all(np.isfinite(hi))
    assert np.all((hi - lo) <= 1e-3 * hi), (lo, hi)
    # ε(δ) grows as δ falls, on both sides and across the tiers' boundary
    assert np.all(np.diff(lo) > 0) and np.all(np.diff(hi) > 0)
    # each element is answered alone: the array's answers are the scalar ones
    for d, a, b in zip(DELTAS, lo, hi):
        assert (a, b) == _interval(acct, d)


def test_the_default_tier_answers_above_the_boundary_unchanged(dpsgd):
    """δ ≥ DEEP_BELOW is answered by the default tier alone: the same number as its
    RefiningPLD, and no deep tier is built for it."""
    fresh = ac.Accountant().compose(ac.mechanism("subsampled_gaussian", q=0.01, sigma=1.0), 1000)
    eps = fresh.epsilon(DEEP_BELOW)
    assert eps == fresh._refining(lower=False).epsilon(DEEP_BELOW)
    assert not any("deep" in key for key in fresh._cache if isinstance(key, tuple))


def test_delta_of_a_large_epsilon_comes_from_the_deep_tier(dpsgd):
    """δ(ε) whose default answer is below DEEP_BELOW is re-answered by the deep tier:
    far below the default tier's +∞ mass, and consistent with ε(δ)."""
    eps_30 = float(dpsgd.epsilon(1e-30))
    d = float(dpsgd.delta(eps_30))
    assert 0 < d <= 1e-30 * (1 + 1e-6)
    assert float(dpsgd._refining(lower=False).delta(eps_30)) > 1e-22   # the default tier's


def test_a_deep_tier_too_large_for_the_grid_falls_back_to_the_default_tier(dpsgd):
    """Where the deep tier's grid would be refused for its size, the default tier
    answers (as sound, looser: ∞ below its +∞ mass) instead of an error."""
    from accounting.accountant import _Tiered
    from accounting.numerics.loss import GridSizeError

    def refused():
        raise GridSizeError("too large")
    default = dpsgd._refining(lower=True)
    tiered = _Tiered(default, refused)
    lo, hi = (float(x) for x in tiered.epsilon_interval(1e-30))
    assert hi == float(default.epsilon(1e-30)) == math.inf
    assert lo == float(default.epsilon(1e-30, bound="lower"))
