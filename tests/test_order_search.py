"""The RDP → (ε, δ) order search (``order_search.minimise_over_orders``): a 41-point grid of
t = α − 1 and batched zoom rounds, against dense minimisation of closed forms.

Every order searched gives a valid bound, so the result is never below the true
infimum over t in the searched range; it must also come within 1e-9 of it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from accounting.curves.converters import (improved_epsilon, improved_log_delta, rdp_delta,
                                              rdp_epsilon)
from accounting.numerics import order_search
from accounting.numerics.order_search import ORDER_GRID


def gaussian_cgf(rho: float):
    return lambda t: rho * np.asarray(t) * (np.asarray(t) + 1.0)


def dense_min(fn) -> float:
    """min over log t in the searched range: a 20001-point log grid, then a bounded
    Brent step around its best point (to ~1e-12)."""
    lo, hi = math.log(ORDER_GRID[0]), math.log(ORDER_GRID[-1])
    u = np.linspace(lo, hi, 20001)
    v = fn(np.exp(u))
    j = int(np.argmin(v))
    res = minimize_scalar(lambda x: float(fn(np.exp(np.array([x])))[0]),
                          bounds=(u[max(j - 1, 0)], u[min(j + 1, u.size - 1)]),
                          method="bounded", options={"xatol": 1e-12})
    return min(float(v[j]), float(res.fun))


def test_order_grid_keeps_its_range():
    # calibration and the gap module use the range; the zoom relies on the spacing
    assert ORDER_GRID[0] == pytest.approx(1e-4) and ORDER_GRID[-1] == pytest.approx(2e4)
    assert np.allclose(np.diff(np.log(ORDER_GRID)), math.log(2e8) / (ORDER_GRID.size - 1))


@settings(max_examples=40, deadline=None)
@given(rho=st.floats(1e-6, 50.0), log_delta=st.floats(-200.0, -1.0))
def test_epsilon_matches_dense_minimisation(rho, log_delta):
    cgf = gaussian_cgf(rho)
    got = float(rdp_epsilon(cgf, np.exp(log_delta)))
    truth = max(dense_min(lambda t: improved_epsilon(cgf(t), t, log_delta)), 0.0)
    assert got >= truth - 1e-12 * max(1.0, abs(truth))     # sound: never below the inf
    assert got <= truth + 1e-9 * max(1.0, abs(truth))      # and as tight as the inf


@settings(max_examples=40, deadline=None)
@given(rho=st.floats(1e-5, 5.0), eps=st.floats(0.05, 30.0))
def test_delta_matches_dense_minimisation(rho, eps):
    cgf = gaussian_cgf(rho)
    got = float(rdp_delta(cgf, eps))
    log_truth = dense_min(lambda t: improved_log_delta(cgf(t), t, eps))
    truth = min(math.exp(log_truth), 1.0)
    assert got >= truth * (1 - 1e-12)
    # as tight as the inf in log δ (the searched quantity), relative to its size
    assert got <= math.exp(min(log_truth, 0.0) + 1e-9 * max(1.0, abs(log_truth)))


def test_search_is_batched_one_cgf_call_per_round():
    calls = []

    def cgf(t):
        calls.append(np.shape(t))
        return 0.01 * np.asarray(t) * (np.asarray(t) + 1.0)
    deltas = np.array([1e-3, 1e-5, 1e-9])
    rdp_epsilon(cgf, deltas)
    assert len(calls) == 1 + order_search.ZOOM_ROUNDS
    assert calls[0] == ORDER_GRID.shape
    assert all(c == (deltas.size * order_search.ZOOM_POINTS,) for c in calls[1:])


def test_several_targets_at_once_equal_one_at_a_time():
    cgf = gaussian_cgf(0.3)
    deltas = np.array([[1e-2, 1e-5], [1e-9, 1e-15]])
    many = rdp_epsilon(cgf, deltas)
    assert many.shape == deltas.shape
    np.testing.assert_allclose(many.ravel(), [float(rdp_epsilon(cgf, d)) for d in deltas.ravel()],
                               rtol=1e-15)


def test_nan_orders_are_skipped_not_returned():
    # a CGF undefined (NaN) above t = 3: the search keeps to the orders where it is
    def cgf(t):
        t = np.asarray(t, dtype=float)
        return np.where(t > 3.0, np.nan, 0.5 * t * (t + 1.0))
    eps = float(rdp_epsilon(cgf, 1e-5))
    truth = dense_min(lambda t: np.where(t > 3.0, np.inf,
                                         improved_epsilon(cgf(t), t, math.log(1e-5))))
    # the minimum sits at the edge t = 3 of the defined orders, a kink the zoom reaches
    # to its resolution (~3e-5 in log t), not to 1e-9
    assert np.isfinite(eps) and truth <= eps <= truth * (1 + 1e-4)


# ------------------------------------------------- the other callers' strategies
@settings(max_examples=25, deadline=None)
@given(rho=st.floats(1e-4, 20.0), log_delta=st.floats(-100.0, -2.0), start=st.floats(-9.0, 9.0))
def test_minimise_near_is_sound_and_tight_from_any_start(rho, log_delta, start):
    # calibration's warm-started search: wherever it starts, it never goes below the
    # infimum over the searched range and comes within 1e-9 of it
    cgf = gaussian_cgf(rho)
    got, t = order_search.minimise_near(cgf, lambda k, t: improved_epsilon(k, t, log_delta),
                                        start)
    truth = dense_min(lambda t: improved_epsilon(cgf(t), t, log_delta))
    assert got >= truth - 1e-12 * max(1.0, abs(truth))
    assert got <= truth + 1e-9 * max(1.0, abs(truth))
    assert ORDER_GRID[0] * (1 - 1e-12) <= t <= ORDER_GRID[-1] * (1 + 1e-12)
    # the returned order is the one that gives the value
    assert float(improved_epsilon(cgf(np.array([t])), np.array([t]), log_delta)[0]) == \
        pytest.approx(got, rel=1e-12, abs=1e-12)


def test_shared_orders_bound_every_target_and_count_the_orders():
    cgf = gaussian_cgf(0.5)
    log_deltas = np.log(np.geomspace(1e-12, 1e-2, 50))

    def score(k, t):
        return improved_epsilon(k[None, :], t[None, :], log_deltas[:, None])
    got, used = order_search.minimise_on_shared_orders(cgf, score, 400)
    assert used == ORDER_GRID.size + 400 and got.shape == log_deltas.shape
    for g, ld in zip(got, log_deltas):
        truth = dense_min(lambda t: improved_epsilon(cgf(t), t, ld))
        # sound (an order's value), and close: 400 orders over a few grid cells
        assert truth - 1e-12 <= g <= truth * (1 + 1e-5)
    # never looser than the per-target engine's coarse grid alone
    coarse = score(cgf(ORDER_GRID), ORDER_GRID).min(axis=1)
    assert np.all(got <= coarse)


@pytest.mark.parametrize("rho", [1e-3, 0.5, 7.0])
def test_envelope_of_a_gaussian_curve_is_its_rho(rho):
    # K(t) = ρ t(t + 1): the ratio is ρ at every order. Roundoff can make the first
    # orders look like a t → 0 maximum, answered by the sound K(t')/t' = ρ(1 + t') at
    # t' = 1e-6: never below ρ, at most 1e-6 relative above it
    got, _ = order_search.envelope_sup(gaussian_cgf(rho))
    assert rho * (1 - 1e-14) <= got <= rho * (1 + 1.01e-6)


def test_envelope_interior_maximum_against_closed_form():
    # K(t) = t(t + 1)·r(t) with r(t) = 1 − (log t − 1)²/10: the ratio is r, whose sup
    # 1 is reached at t* = e
    def cgf(t):
        t = np.asarray(t, dtype=float)
        return t * (t + 1.0) * (1.0 - (np.log(t) - 1.0) ** 2 / 10.0)
    rho, t_star = order_search.envelope_sup(cgf)
    assert rho == pytest.approx(1.0, abs=1e-10) and rho <= 1.0 + 1e-15
    assert t_star == pytest.approx(math.e, rel=1e-4)


def test_envelope_rising_to_infinity_is_not_certified():
    # r(t) = 1 − 1/(1 + t): its sup 1 is the t → ∞ limit, which finite orders cannot reach
    rho, t_star = order_search.envelope_sup(lambda t: np.asarray(t) ** 2)
    assert rho == np.inf and t_star == np.inf


def test_envelope_of_a_lower_curve_rising_to_infinity_is_its_last_value():
    """A lower side's sup still rising at t = 1e5 is bounded from below by the last
    ratio, 1 − 1/(1 + 1e5), not +∞ (found by tests/test_fuzz_invariants.py: the zCDP
    curve of a subsampled Gaussian with μ = 100 then refused itself, lower ρ = ∞ above
    the upper one)."""
    rho, t_star = order_search.envelope_sup(lambda t: np.asarray(t) ** 2, lower=True)
    assert rho == pytest.approx(1.0 - 1.0 / (1.0 + 1e5), rel=1e-14) and rho < 1.0
    assert t_star == np.inf
    # a t → 0 sup: the first ratio itself, K(t₀)/(t₀(t₀ + 1)) = 1/(1 + t₀), not raised
    rho, t_star = order_search.envelope_sup(lambda t: np.asarray(t), lower=True)
    assert rho == pytest.approx(1.0 / (1.0 + 1e-6), rel=1e-14) and rho < 1.0


def test_zcdp_of_a_near_non_private_subsampled_gaussian_is_a_bracket():
    """q = 0.5, σ = 0.01 (μ = 100): D_α/α rises to μ²/2 = 5000 as α → ∞ in the remove
    direction (D_α ≤ αμ²/2, the base's, by joint convexity). The converted zCDP curve
    now brackets it: lower ρ just below 5000, upper above; it raised ValueError
    "ZCDP lower rho must not exceed upper rho; forward: lower inf > upper 8878.27"."""
    import warnings
    import accounting
    from accounting import RDP, ZCDP
    rdp = accounting.mechanism("subsampled_gaussian", q=0.5, sigma=0.01).curve(RDP)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        z = rdp.to(ZCDP)
    lo, up = z.rho_interval("forward")
    assert 5000.0 * (1 - 1e-8) <= lo <= 5000.0 <= up
    lo, up = z.rho_interval("backward")
    assert lo <= up


def test_zcdp_of_an_identical_pair_through_subsampling_is_never_negative():
    """(0, 0)-DP is the identical pair: ρ* = 0. Poisson-subsampled at q = 1e-300 its CGF
    bound is roundoff of either sign (1e-314), and the zCDP conversion raised "rho must
    be in [0, inf), got -2.37063e-319" (found by tests/test_fuzz_invariants.py)."""
    import warnings
    import accounting
    from accounting import RDP, ZCDP
    m = accounting.mechanism("poisson_subsampled", q=1e-300,
                             base=accounting.mechanism("approx_dp", epsilon=0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        z = m.curve(RDP).to(ZCDP)
        for d in ("forward", "backward"):
            lo, up = z.rho_interval(d)
            assert 0.0 <= lo <= 1e-300 and lo <= up


def test_zcdp_lower_side_never_above_the_upper():
    """The two sides' envelopes are searched apart; they raised "ZCDP lower rho must not
    exceed upper rho; forward: lower 2.1901e-12 > upper 1.97418e-12" (found by
    tests/test_fuzz_invariants.py). The ε-DP pair is ε²/2-zCDP (Bun and Steinke 2016,
    arXiv:1605.02065, Prop. 1.4): the upper side exceeds that by no more than the
    roundoff of K (1e-19 at small t, over t)."""
    import warnings
    import accounting
    from accounting import RDP, ZCDP
    eps = 1.4239795040441281e-06
    rdp = accounting.mechanism("permute_and_flip", epsilon=eps, neighbouring="replace_one").curve(RDP)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        z = rdp.to(ZCDP)
    for d in ("forward", "backward"):
        lo, up = z.rho_interval(d)
        assert 0.0 <= lo <= up
    assert z.rho() <= eps ** 2 / 2 + 1e-11
