"""The RDP → (ε, δ) order search (``conversions._minimise_over_t``): a 41-point grid of
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

from accounting.conversion import converters as conversions
from accounting.conversion.converters import (ORDER_GRID, improved_epsilon, improved_log_delta,
                                    rdp_delta, rdp_epsilon)


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
    assert len(calls) == 1 + conversions._ZOOM_ROUNDS
    assert calls[0] == ORDER_GRID.shape
    assert all(c == (deltas.size * conversions._ZOOM_POINTS,) for c in calls[1:])


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
