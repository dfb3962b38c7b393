"""Privacy profiles: both directional hockey-stick curves, and their inverses."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from accounting import Exactness, PrivacyProfile, discrete_pair
from accounting.curves.profile import FunctionSide, invert_decreasing

from closed_forms import discrete_delta, gaussian_delta, gaussian_epsilon


@st.composite
def finite_pairs(draw, n_max=6):
    n = draw(st.integers(2, n_max))
    p = np.array(draw(st.lists(st.floats(0.01, 1.0), min_size=n, max_size=n)))
    q = np.array(draw(st.lists(st.floats(0.01, 1.0), min_size=n, max_size=n)))
    if draw(st.booleans()):            # sometimes a point only P charges: mass at +∞
        q[0] = 0.0
    return p / p.sum(), q / q.sum()


# ---------------------------------------------------------------- closed forms
def test_gaussian_profile_is_balle_wang(gaussian1):
    prof = gaussian1.curve(PrivacyProfile)
    eps = np.concatenate([np.linspace(-4, 10, 141), [-np.inf, np.inf]])
    exact = gaussian_delta(1.0, eps)
    np.testing.assert_allclose(prof.delta(eps), exact, rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(prof.delta(eps, bound="lower"), exact, rtol=1e-9, atol=1e-300)
    assert prof.provenance.exactness is Exactness.EXACT


@pytest.mark.parametrize("delta", [0.3, 1e-3, 1e-6, 1e-10, 1e-14])
def test_gaussian_epsilon_is_the_exact_inverse(gaussian1, delta):
    prof = gaussian1.curve(PrivacyProfile)
    exact = gaussian_epsilon(1.0, delta)
    got = float(prof.epsilon(delta))
    assert got >= exact * (1 - 1e-12)            # the bisection keeps the sound end
    assert got == pytest.approx(exact, rel=1e-9)


def test_pld_profile_is_the_laws_profile(subsampled_pld):
    prof = subsampled_pld.to(PrivacyProfile)
    assert prof.provenance.exactness is Exactness.EXACT
    assert prof.provenance.path[-1] == "pld→profile"
    eps = np.linspace(-1, 3, 57)
    for d in ("forward", "backward"):
        for b in ("upper", "lower"):
            np.testing.assert_array_equal(prof.delta(eps, d, b), subsampled_pld.delta(eps, d, b))
    deltas = np.array([1e-2, 1e-5, 1e-9])
    np.testing.assert_array_equal(prof.epsilon(deltas), subsampled_pld.epsilon(deltas))


def test_max_direction_is_the_pointwise_max(subsampled):
    prof = subsampled.curve(PrivacyProfile)
    eps = np.linspace(-1, 2, 31)
    f, b = prof.delta(eps, "forward"), prof.delta(eps, "backward")
    np.testing.assert_array_equal(prof.delta(eps), np.maximum(f, b))
    assert not np.allclose(f, b)                 # the subsampled pair is asymmetric


# ------------------------------------------------------------ structural properties
@given(finite_pairs())
def test_finite_pair_profile_matches_its_distributions(pq):
    p, q = pq
    prof = discrete_pair(p, q).curve(PrivacyProfile)
    eps = np.array([-2.0, -0.3, 0.0, 0.4, 1.7, np.inf])
    np.testing.assert_allclose(prof.delta(eps, "forward"), discrete_delta(p, q, eps), atol=1e-14)
    np.testing.assert_allclose(prof.delta(eps, "backward"), discrete_delta(q, p, eps), atol=1e-14)


@given(finite_pairs())
def test_profile_is_decreasing_convex_in_exp_eps_and_above_one_minus_x(pq):
    p, q = pq
    prof = discrete_pair(p, q).curve(PrivacyProfile)
    eps = np.linspace(-3, 3, 301)
    x = np.exp(eps)
    for d in ("forward", "backward"):
        v = prof.delta(eps, d)
        assert np.all(np.diff(v) <= 1e-15)
        slopes = np.diff(v) / np.diff(x)
        assert np.all(np.diff(slopes) >= -1e-9)          # convex in x = e^ε
        assert np.all(v >= 1 - x - 1e-15) and np.all(v <= 1 + 1e-15)


@given(finite_pairs())
def test_complement_identity_links_the_directions(pq):
    """δ_{P‖Q}(ε) = 1 − e^ε + e^ε δ_{Q‖P}(−ε) for any pair."""
    p, q = pq
    prof = discrete_pair(p, q).curve(PrivacyProfile)
    eps = np.linspace(-2, 2, 41)
    lhs = prof.delta(eps, "forward")
    rhs = 1 - np.exp(eps) + np.exp(eps) * prof.delta(-eps, "backward")
    np.testing.assert_allclose(lhs, rhs, atol=1e-13)


# ------------------------------------------------------------------ inversion
@given(st.floats(0.1, 10.0), st.floats(1e-12, 0.9))
def test_invert_decreasing_is_sound_and_tight(rate, target):
    fn = lambda e: np.exp(-rate * np.asarray(e, float))  # noqa: E731  (δ(0) = 1)
    got = float(invert_decreasing(fn, np.array(target)))
    exact = -np.log(target) / rate
    assert got >= exact * (1 - 1e-15)
    assert got == pytest.approx(exact, rel=1e-10)


def test_invert_decreasing_edge_cases():
    floor = lambda e: np.where(np.asarray(e) == np.inf, 0.2, 0.5)  # noqa: E731
    out = invert_decreasing(floor, np.array([0.1, 0.6]))
    assert np.isinf(out[0])                      # below δ(∞): no finite ε
    assert out[1] == 0.0                         # δ(0) already small enough


def test_function_side_uses_its_own_inverse_when_given():
    side = FunctionSide(lambda e, d: np.exp(-np.asarray(e)), lambda dl, d: np.full(np.shape(dl), 7.0))
    prof = PrivacyProfile(side)
    assert prof.epsilon(0.5) == 7.0
    assert PrivacyProfile(FunctionSide(side.delta_fn)).epsilon(0.5) == pytest.approx(np.log(2))


# ------------------------------------------------------------------ bad inputs
def test_profile_argument_errors(gaussian1):
    prof = gaussian1.curve(PrivacyProfile)
    with pytest.raises(ValueError, match="delta"):
        prof.epsilon(0.0)
    with pytest.raises(ValueError, match="delta"):
        prof.epsilon(1.0)
    with pytest.raises(ValueError, match="epsilon"):
        prof.delta(np.nan)
    with pytest.raises(ValueError, match="direction"):
        prof.delta(1.0, direction="sideways")
    with pytest.raises(ValueError, match="bound"):
        prof.delta(1.0, bound="middle")
    with pytest.raises(ValueError, match="no lower side"):
        PrivacyProfile(prof.upper).delta(1.0, bound="lower")
