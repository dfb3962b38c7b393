"""The PLD curve: a certified bracket of discretised loss laws, and its composition.

Gaussian-specific checks (Balle–Wang bracket, ε grid over σ and k) live in
tests/plugins/test_gaussian.py; here the pairs are finite or Laplace, whose exact
profiles are elementary.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

import accounting
from accounting import PLD, Bound, Exactness, PrivacyProfile, discrete_pair

from closed_forms import discrete_delta, laplace_delta

STEP = 1e-3
A = 0.5                                        # loss ±A: on the grid of STEP
P_A = np.exp(A) / (1 + np.exp(A))


@pytest.fixture(scope="module")
def walk_pair():
    """Randomized response with loss ±0.5 (on the grid): k-fold law is binomial."""
    return discrete_pair(np.array([P_A, 1 - P_A]), np.array([1 - P_A, P_A]), "walk")


@pytest.fixture(scope="module")
def walk_pld(walk_pair):
    return walk_pair.curve(PLD, step=STEP)


@pytest.fixture(scope="module")
def laplace_pld():
    return accounting.mechanism("laplace", b=1.0).curve(PLD, step=STEP)


OFF_GRID = np.linspace(-2.5, 2.5, 1001) + 0.37 * STEP

def _bracket(pld, exact, eps, direction="max", rel=1e-12):
    up = pld.delta(eps, direction)
    lo = pld.delta(eps, direction, bound="lower")
    assert np.all(up >= exact * (1 - rel) - 1e-300), "upper side below the exact δ"
    assert np.all(lo <= exact * (1 + rel) + 1e-300), "lower side above the exact δ"
    return up, lo


# ------------------------------------------------------------------- single pairs
def test_laplace_pld_brackets_the_closed_form(laplace_pld):
    exact = laplace_delta(1.0, OFF_GRID)
    for d in ("forward", "backward"):
        _bracket(laplace_pld, exact, OFF_GRID, d)


def test_laplace_pld_epsilon_brackets_the_inverse(laplace_pld):
    # δ = 1 − exp((ε − 1)/2)  ⇒  ε = 1 + 2 log(1 − δ)
    deltas = np.array([1e-3, 0.05, 0.2, 0.35])
    exact = 1.0 + 2.0 * np.log1p(-deltas)
    lo, up = laplace_pld.epsilon_interval(deltas)
    assert np.all(lo <= exact + 1e-12) and np.all(exact <= up + 1e-12)
    assert np.max(up - exact) < 1e-4


def test_laplace_pld_bracket_is_tight(laplace_pld):
    for d in ("forward", "backward"):
        assert np.max(laplace_pld.delta(OFF_GRID, d) - laplace_pld.delta(OFF_GRID, d, "lower")) < 1e-6
    lo, up = laplace_pld.epsilon_interval(np.array([1e-3, 0.05, 0.2, 0.35]))
    assert np.max(up - lo) < 1e-4
    # beyond the largest loss there is no δ left: ε(tiny δ) is at most Δ/b (+ one cell)
    assert laplace_pld.epsilon(1e-12) <= 1.0 + STEP


def test_finite_pair_on_grid_is_reproduced(walk_pair, walk_pld):
    eps = np.linspace(-1, 1, 301) + 0.37 * STEP
    exact = discrete_delta([P_A, 1 - P_A], [1 - P_A, P_A], eps)
    up, lo = _bracket(walk_pld, exact, eps)
    assert np.max(up - lo) < 1e-9


def test_asymmetric_pair_directions_differ(five_point_pld):
    from conftest import P5, Q5
    eps = np.array([0.0, 0.2, 0.45])
    fwd = discrete_delta(P5, Q5, eps)
    bwd = discrete_delta(Q5, P5, eps)
    assert not np.allclose(fwd, bwd)
    np.testing.assert_allclose(five_point_pld.delta(eps, "forward"), fwd, atol=5e-4)
    np.testing.assert_allclose(five_point_pld.delta(eps, "backward"), bwd, atol=5e-4)
    np.testing.assert_allclose(five_point_pld.delta(eps), np.maximum(fwd, bwd), atol=5e-4)
    # at ε = 0 both directions are the total variation distance
    tv = 0.5 * np.abs(P5 - Q5).sum()
    assert five_point_pld.delta(0.0, "forward") == pytest.approx(tv, abs=1e-9)
    assert five_point_pld.delta(0.0, "backward") == pytest.approx(tv, abs=1e-9)


def test_asymmetric_pair_upper_side_dominates(five_point_pld):
    from conftest import P5, Q5
    for d, (p, q) in (("forward", (P5, Q5)), ("backward", (Q5, P5))):
        exact = discrete_delta(p, q, OFF_GRID[::5])
        assert np.all(five_point_pld.delta(OFF_GRID[::5], d) >= exact - 1e-15)


def test_asymmetric_pair_lower_side_is_a_lower_bound():
    from conftest import P5, Q5
    pld = discrete_pair(P5, Q5).curve(PLD, step=STEP)
    for d, (p, q) in (("forward", (P5, Q5)), ("backward", (Q5, P5))):
        eps = np.array([0.4054, 0.405465, 0.40547, 0.4055, -0.40547, 1.0986])
        assert np.all(pld.delta(eps, d, bound="lower") <= discrete_delta(p, q, eps) + 1e-15)


# ------------------------------------------------------------------- composition
@pytest.mark.parametrize("k", [2, 30])
def test_self_composition_of_the_walk_is_binomial(walk_pld, k):
    j = np.arange(k + 1)
    losses, masses = (2 * j - k) * A, binom.pmf(j, k, P_A)
    eps = np.linspace(-2, 8, 401) + 0.37 * STEP
    exact = np.array([np.sum(masses * np.maximum(0.0, 1.0 - np.exp(e - losses))) for e in eps])
    composed = walk_pld.self_compose(k)
    up, lo = _bracket(composed, exact, eps, rel=1e-9)
    assert np.max(up - lo) < 1e-8


def test_compose_equals_self_compose(laplace_pld):
    eps = OFF_GRID
    two = laplace_pld.compose(laplace_pld)
    twice = laplace_pld.self_compose(2)
    for b in ("upper", "lower"):
        np.testing.assert_allclose(two.delta(eps, bound=b), twice.delta(eps, bound=b), atol=1e-12)
    # the one route, and the operator forms it replaces (deprecated for one release)
    np.testing.assert_allclose(accounting.compose(laplace_pld, laplace_pld).delta(eps),
                               two.delta(eps))
    np.testing.assert_allclose(accounting.compose((laplace_pld, 2)).delta(eps), twice.delta(eps))
    with pytest.warns(DeprecationWarning, match="accounting.compose"):
        np.testing.assert_allclose((laplace_pld + laplace_pld).delta(eps), two.delta(eps))
        np.testing.assert_allclose((2 * laplace_pld).delta(eps), twice.delta(eps))
        np.testing.assert_allclose((laplace_pld * 2).delta(eps), twice.delta(eps))


def test_heterogeneous_composition_brackets_the_convolution(laplace_pld, walk_pld):
    """Laplace ⊗ walk: exact δ by mixing the Laplace profile over the walk's two atoms."""
    both = laplace_pld.compose(walk_pld)
    # δ_{L1+L2}(ε) = Σ_j p_j δ_1(ε − l_j) for independent L2 with atoms l_j (finite law)
    eps = np.linspace(-1, 2, 201) + 0.37 * STEP
    exact = P_A * laplace_delta(1.0, eps - A) + (1 - P_A) * laplace_delta(1.0, eps + A)
    _bracket(both, exact, eps, "forward", rel=1e-9)


def test_composition_keeps_the_infinite_mass_rule():
    pair = discrete_pair(np.array([0.5, 0.3, 0.2]), np.array([0.6, 0.4, 0.0]))
    pld = pair.curve(PLD, step=0.01)
    m = 0.2
    for k in (2, 5):
        got = pld.self_compose(k).law("forward").inf_mass
        assert got >= 1 - (1 - m) ** k - 1e-15
        assert got == pytest.approx(1 - (1 - m) ** k, abs=1e-9)
    got = pld.compose(pld).law("forward").inf_mass
    assert got == pytest.approx(1 - (1 - m) ** 2, abs=1e-9)


def test_compose_rejects_other_curves(laplace_pld):
    with pytest.raises(TypeError, match="PLD"):
        laplace_pld.compose(laplace_pld.to(PrivacyProfile))


@pytest.mark.parametrize("count,exc", [(0, ValueError), (1.5, TypeError), (-3, ValueError)])
def test_self_compose_rejects_bad_counts(laplace_pld, count, exc):
    with pytest.raises(exc, match="count"):
        laplace_pld.self_compose(count)


# ------------------------------------------------------------------- queries, API
def test_queries_are_vectorised(laplace_pld):
    eps = np.linspace(0, 1, 12).reshape(3, 4)
    assert laplace_pld.delta(eps).shape == (3, 4)
    assert laplace_pld.epsilon(np.array([1e-3, 1e-2])).shape == (2,)
    assert np.ndim(laplace_pld.delta(0.5)) == 0


def test_delta_interval_is_ordered(laplace_pld):
    lo, up = laplace_pld.delta_interval(OFF_GRID)
    assert np.all(lo <= up)
    np.testing.assert_array_equal(up, laplace_pld.delta(OFF_GRID, bound=Bound.UPPER))


def test_law_access(laplace_pld):
    assert laplace_pld.law("forward") is laplace_pld.upper[0]
    assert laplace_pld.law("backward", "lower") is laplace_pld.lower[1]
    assert laplace_pld.step == pytest.approx(STEP)
    with pytest.raises(ValueError, match="forward"):
        laplace_pld.law("max")


def test_bad_direction_and_bound(laplace_pld):
    with pytest.raises(ValueError, match="direction"):
        laplace_pld.delta(0.5, direction="sideways")
    with pytest.raises(ValueError, match="bound"):
        laplace_pld.delta(0.5, bound="middle")


@pytest.mark.parametrize("delta", [1.0, -0.1, 1.5, np.nan])
def test_epsilon_rejects_bad_delta(laplace_pld, delta):
    with pytest.raises(ValueError, match="delta"):
        laplace_pld.epsilon(delta)


def test_pure_dp_is_the_largest_loss_exactly(laplace_pld):
    """δ = 0 is a valid query for a bounded loss: ε(0) = the largest loss, exactly
    (Laplace(b) with sensitivity 1: 1/b), on both sides, and δ(ε) = 0 from there on."""
    b = 1.0 / laplace_pld.law("forward").sup_loss
    lo, hi = laplace_pld.epsilon_interval(0.0)
    assert float(lo) == float(hi) == pytest.approx(1.0 / b, rel=1e-15)
    assert np.all(laplace_pld.delta(np.array([hi, hi + 0.3])) == 0.0)
    assert laplace_pld.delta(hi - 1e-6) > 0.0
    ten = laplace_pld.self_compose(10)
    lo, hi = ten.epsilon_interval(np.array([0.0, 1e-14]))
    assert hi[0] == lo[0] == pytest.approx(10.0 / b, rel=1e-14)
    assert hi[0] >= 10.0 / b                         # rounded up, never down
    assert hi[1] <= hi[0] and lo[1] <= hi[1]


def test_pure_dp_of_an_unbounded_loss_says_so():
    g = accounting.mechanism("gaussian", sigma=1.0).curve(PLD, step=1e-2)
    with pytest.raises(ValueError, match="unbounded"):
        g.epsilon(0.0)


def test_one_sided_pld_says_so(laplace_pld):
    upper_only = PLD(laplace_pld.upper)
    with pytest.raises(ValueError, match="no lower side"):
        upper_only.delta(0.5, bound="lower")
    composed = upper_only.compose(laplace_pld)
    assert composed.lower is None


def test_provenance_is_kept_through_composition(laplace_pld):
    assert laplace_pld.provenance.exactness is Exactness.EXACT
    assert laplace_pld.self_compose(3).provenance == laplace_pld.provenance
    assert laplace_pld.compose(laplace_pld).provenance == laplace_pld.provenance
