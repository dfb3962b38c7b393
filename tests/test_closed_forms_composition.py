"""All-Gaussian compositions are answered exactly as μ-GDP (issue 24, deliverable 1).

k₁ × N(0, σ₁²) with sensitivity Δ₁, …, composed, is exactly μ-GDP with
μ = √(Σ kᵢ Δᵢ²/σᵢ²) (Dong, Roth, Su, arXiv:1905.02383, Cor. 3.3), whose privacy
profile is δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle, Wang, arXiv:1805.06530,
Thm. 8). The accountant answers from it without a grid; checked here against mpmath
at 50 digits and against the engine's certified PLD bracket.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import accounting as ac
from accounting import PLD, Exactness

mp.mp.dps = 50


def mp_delta(mu: float, eps: float) -> mp.mpf:
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(-eps / mu + mu / 2) - mp.e ** eps * mp.ncdf(-eps / mu - mu / 2)


def job(*parts: tuple[float, float, int]) -> ac.Accountant:
    acct = ac.Accountant()
    for sigma, sens, count in parts:
        acct.compose(ac.mechanism("gaussian", sigma=sigma, sensitivity=sens), count)
    return acct


MIXED_GAUSS = ((1.0, 1.0, 100), (2.0, 0.5, 30), (0.7, 1.0, 1))
MU = math.sqrt(100 * 1.0 + 30 * 0.0625 + 1 / 0.49)


def test_the_composed_mu_is_the_root_sum_of_squares():
    acct = job(*MIXED_GAUSS)
    assert acct.pair().gdp_mu() == pytest.approx(MU, rel=1e-15)
    profile = acct.closed_profile()
    assert profile is not None and profile.provenance.exactness is Exactness.EXACT


@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-10, 1e-15, 1e-30])
def test_epsilon_is_the_exact_root_rounded_up(delta):
    """δ(ε̂) ≤ δ (sound) and δ(ε̂·(1 − 1e-9)) > δ (tight), in 50-digit arithmetic."""
    eps = float(job(*MIXED_GAUSS).epsilon(delta))
    assert mp_delta(MU, eps) <= delta
    assert mp_delta(MU, eps * (1 - 1e-9)) > delta
    lo, hi = job(*MIXED_GAUSS).epsilon_interval(delta)
    assert lo <= eps <= hi and (hi - lo) <= 1e-9 * hi


@pytest.mark.parametrize("eps", [0.0, 1.0, 50.0, 120.0])
def test_delta_matches_mpmath(eps):
    got = float(job(*MIXED_GAUSS).delta(eps))
    exact = mp_delta(MU, eps)
    assert got == pytest.approx(float(exact), rel=1e-9)
    lo, hi = job(*MIXED_GAUSS).delta_interval(eps)
    assert lo <= float(exact) * (1 + 1e-9) and hi >= float(exact) * (1 - 1e-9)


def test_the_exact_answer_lies_in_the_engines_certified_bracket():
    acct = job((1.0, 1.0, 5), (2.0, 0.5, 3))
    deltas = np.array([1e-5, 1e-9])
    exact = acct.epsilon(deltas)
    lo, hi = acct.curve(PLD).epsilon_interval(deltas)
    assert np.all(lo <= exact * (1 + 1e-12)) and np.all(exact <= hi * (1 + 1e-12))
    assert np.all(hi - exact >= -1e-12)     # the grid's upper side is never below it


def test_both_directions_and_the_lower_side_agree():
    """A μ-GDP pair is symmetric: every direction, and the optimistic side, is exact."""
    acct = job(*MIXED_GAUSS)
    up = acct.epsilon(1e-6)
    for d in ("forward", "backward", "max"):
        assert acct.epsilon(1e-6, d) == up
        assert acct.epsilon(1e-6, d, "lower") == pytest.approx(up, rel=1e-9)


def test_a_job_with_any_other_mechanism_keeps_the_engine():
    acct = job((1.0, 1.0, 3)).compose(ac.mechanism("laplace", b=1.0), 2)
    assert acct.closed_profile() is None and acct.pair().gdp_mu() is None
    lo, hi = acct.epsilon_interval(1e-5)
    assert lo < hi                            # the grid's bracket, not a point
    sub = ac.Accountant().compose(ac.mechanism("subsampled_gaussian", q=0.01, sigma=1.0), 10)
    assert sub.closed_profile() is None


def test_rtol_is_still_checked_on_the_exact_path():
    acct = job(*MIXED_GAUSS)
    lo, hi = acct.epsilon_interval(1e-5, rtol=1e-6)
    assert hi - lo <= 1e-6 * hi
    with pytest.raises(ValueError, match="rtol"):
        acct.epsilon_interval(1e-5, rtol=0.0)


@settings(max_examples=25, deadline=None)
@given(sigma=st.floats(0.3, 20.0), k=st.integers(1, 500))
def test_more_uses_never_lower_epsilon(sigma, k):
    a, b = job((sigma, 1.0, k)), job((sigma, 1.0, k + 1))
    assert float(b.epsilon(1e-6)) >= float(a.epsilon(1e-6))
    assert float(a.epsilon(1e-6)) == pytest.approx(float(job((sigma / math.sqrt(k), 1.0, 1))
                                                        .epsilon(1e-6)), rel=1e-9)
