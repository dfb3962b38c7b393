"""Queries that compose only the tilts they need (``fourier.RefiningLaw``,
``pld.RefiningPLD``, the accountant's δ(ε) and ε(δ)).

* against exact laws: sums of two-atom laws on the grid are binomial (and sums of
  two such sums a convolution of binomials), so δ(ε) and ε(δ) of the composition are
  known to full precision; the refining pessimistic answer is never below them and
  the optimistic one never above, down to δ = 1e-15, within 1e-6 relative;
* they agree with the full composition (all tilts) to ``LAZY_RTOL``-level precision;
* an answer depends neither on earlier queries nor on the other elements of an array;
* a law from a single far tilt is still sound everywhere (the Chernoff cap);
* the fast lower bound on a sum is one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import accounting as ac
from accounting import LossPMF
from accounting.numerics.fourier import (RefiningLaw, TiltedPasses, _sum_below,
                                         compose_pmfs)

STEP = 1e-3


def _two_atoms(lo: int, hi: int, p_hi: float) -> LossPMF:
    """A law on the grid with atoms lo·step (mass 1 − p_hi) and hi·step (mass p_hi)."""
    masses = np.zeros(hi - lo + 1)
    masses[0], masses[-1] = 1.0 - p_hi, p_hi
    return LossPMF.on_grid(STEP, lo, masses)


def _exact_sum(parts) -> tuple[np.ndarray, np.ndarray]:
    """(losses, masses) of Σ (count copies of a two-atom law), exactly: binomials,
    their atoms combined pairwise (sums of non-negative products: relative precision)."""
    losses, masses = np.zeros(1, dtype=np.int64), np.ones(1)
    for lo, hi, p_hi, count in parts:
        j = np.arange(count + 1)
        bl = lo * (count - j) + hi * j                       # grid index of each atom
        bm = stats.binom.pmf(j, count, p_hi)
        keep = bm > 0
        sums = (losses[:, None] + bl[None, keep]).ravel()
        prods = (masses[:, None] * bm[None, keep]).ravel()
        losses, inverse = np.unique(sums, return_inverse=True)
        masses = np.bincount(inverse.ravel(), weights=prods)
    return losses * STEP, masses


def _exact_delta(losses, masses, eps):
    eps = np.atleast_1d(eps)
    return np.array([float(np.sum(masses[losses > e] * -np.expm1(e - losses[losses > e])))
                     for e in eps])


# two-atom laws with loss log((1−p)/p)-like spreads; the second case is heterogeneous
CASES = [
    [(-20, 30, 0.4, 4000)],
    [(-20, 30, 0.4, 3000), (-7, 55, 0.12, 2000)],
]


@pytest.mark.parametrize("parts", CASES)
def test_refining_brackets_the_exact_binomial_law(parts):
    items = [(_two_atoms(lo, hi, p), c) for lo, hi, p, c in parts]
    losses, masses = _exact_sum(parts)
    eps = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    exact = _exact_delta(losses, masses, eps)
    upper = RefiningLaw(items, pessimistic=True)
    lower = RefiningLaw(items, pessimistic=False)
    hi, lo = upper.delta(eps), lower.delta(eps)
    assert np.all(hi >= exact) and np.all(lo <= exact)
    sel = exact > 1e-200
    assert np.all(hi[sel] <= exact[sel] * (1 + 1e-6) + 1e-300)
    assert np.all(lo[sel] >= exact[sel] * (1 - 1e-6))
    # ε(δ) at small δ: the exact ε where δ_exact(ε) = δ, by bisection on the exact law
    for delta in (1e-5, 1e-10, 1e-15):
        e_hi, e_lo = float(upper.epsilon(delta)), float(lower.epsilon(delta))
        assert _exact_delta(losses, masses, e_hi)[0] <= delta * (1 + 1e-9)
        assert _exact_delta(losses, masses, e_lo)[0] >= delta * (1 - 1e-9) or e_lo == 0.0
        assert e_lo <= e_hi <= e_lo + 1e-6 * max(e_hi, 1.0)


@pytest.mark.parametrize("parts", CASES)
def test_refining_agrees_with_the_full_composition(parts):
    items = [(_two_atoms(lo, hi, p), c) for lo, hi, p, c in parts]
    refining = RefiningLaw(items)
    full = compose_pmfs(items)
    deltas = np.array([1e-3, 1e-6, 1e-9, 1e-12])
    np.testing.assert_allclose(refining.epsilon(deltas), full.epsilon(deltas), rtol=1e-7)
    eps = np.linspace(0.0, 5.0, 11)
    np.testing.assert_allclose(refining.delta(eps), full.delta(eps), rtol=1e-6, atol=1e-300)
    # the full law of a refining law is compose_pmfs' law, array for array
    np.testing.assert_array_equal(refining.full().masses, full.masses)
    assert refining.full().offset == full.offset and refining.full().inf_mass == full.inf_mass


def test_answers_do_not_depend_on_history_or_neighbours():
    items = [(_two_atoms(-20, 30, 0.4), 3000), (_two_atoms(-7, 55, 0.12), 2000)]
    deltas = [1e-4, 1e-8, 1e-13]
    alone = [float(RefiningLaw(items).epsilon(d)) for d in deltas]
    law = RefiningLaw(items)
    law.epsilon(1e-11)
    law.delta(np.linspace(0, 4, 9))
    law.full()
    together = law.epsilon(np.array(deltas))
    assert together.tolist() == alone
    assert [float(law.epsilon(d)) for d in reversed(deltas)] == alone[::-1]


def test_a_single_far_tilt_gives_a_sound_finite_law():
    """The law of one tilt far above the bulk resolves little below it: the Chernoff
    cap keeps every mass finite there and the law still dominates the exact one."""
    parts = [(-20, 30, 0.4, 4000)]
    items = [(_two_atoms(lo, hi, p), c) for lo, hi, p, c in parts]
    losses, masses = _exact_sum(parts)
    passes = TiltedPasses(items, 1e-18)
    far = int(np.argmax(passes.cgf.thetas))   # the largest θ on the grid
    law, allowance = passes.law([far], pessimistic=True)
    assert np.all(np.isfinite(law.masses)) and np.all(np.isfinite(allowance))
    eps = np.linspace(-2.0, 6.0, 17)
    assert np.all(law.delta(eps) >= _exact_delta(losses, masses, eps))
    # the cap itself bounds every exact mass on the window
    cap = np.exp(passes.log_cap())
    on = np.rint(losses / STEP).astype(int) - passes.lo_idx
    inside = (on >= 0) & (on < cap.size)
    assert np.all(masses[inside] <= cap[on[inside]])


def test_accountant_queries_match_its_full_pld():
    acct = ac.Accountant(step=1e-3)
    for sigma in (0.9, 1.3, 1.8):
        acct.compose(ac.mechanism("subsampled_gaussian", q=0.02, sigma=sigma), 300)
    deltas = np.array([1e-5, 1e-9])
    eps = acct.epsilon(deltas)
    lo, hi = acct.epsilon_interval(deltas)
    full = acct.curve(ac.PLD)
    np.testing.assert_allclose(eps, full.epsilon(deltas), rtol=1e-7)
    np.testing.assert_array_equal(hi, eps)
    # the optimistic side from the tilt centred at the answer is at least as tight
    assert np.all(lo >= full.epsilon(deltas, bound="lower") * (1 - 1e-7))
    assert np.all(lo <= hi)
    # δ from the tilt centred at ε is at least as tight as the whole window's
    # (which resolves ε = 1 from θ = 0, with an absolute error), never looser
    d, d_full = acct.delta([1.0, 3.0]), full.delta([1.0, 3.0])
    assert np.all(d <= d_full * (1 + 1e-7)) and np.all(d >= d_full * (1 - 1e-5))
    # and the RDP bound is never below it
    assert np.all(eps <= acct.under("rdp").epsilon(deltas))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0.0, 1e3, allow_subnormal=False), min_size=1, max_size=5000))
def test_sum_below_is_a_lower_bound(values):
    a = np.array(values)
    assert _sum_below(a) <= math.fsum(values)
    assert _sum_below(a) >= math.fsum(values) * (1 - 1e-12)


@pytest.mark.parametrize("upper", [True, False])
def test_fold_bounds_are_the_chernoff_tails(upper):
    """The fold bounds the tilt choice reads are ``SummedCGF.tail`` at each cut."""
    from accounting.numerics.fourier import _fold_bounds
    items = [(_two_atoms(-20, 30, 0.4), 3000), (_two_atoms(-7, 55, 0.12), 2000)]
    cgf = TiltedPasses(items, 1e-18).cgf
    cuts = np.linspace(-60.0, 120.0, 41)
    expected = np.array([[cgf.tail(i, c, upper) for c in cuts] for i in range(cgf.thetas.size)])
    np.testing.assert_allclose(_fold_bounds(cgf, cuts, upper, limit=None), expected,
                               rtol=1e-12, atol=0)
    # over fewer θ' a bound still, never below the minimum over all of them
    few = _fold_bounds(cgf, cuts, upper, limit=5)
    assert np.all(few >= expected * (1 - 1e-12)) and np.all(few <= 1.0)


def test_direct_hockey_stick_is_the_cumulative_one():
    from accounting.numerics.fourier import _hockey
    from accounting.numerics.loss import hockey_stick
    rng = np.random.default_rng(3)
    losses = np.cumsum(rng.uniform(0.01, 0.1, 500)) - 10.0
    weights = rng.exponential(1e-3, 500) * np.exp(-np.abs(losses))
    eps = np.array([-12.0, -3.0, 0.0, 2.5, 30.0])
    np.testing.assert_allclose(_hockey(losses, weights, eps), hockey_stick(losses, weights, eps),
                               rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("theta", [0.0, 3.7, -25.0])
def test_tilt_rounding_bounds_the_tilted_weights(theta):
    """The relative error of each computed tilted weight with y_j ≥ −40 is within η,
    and the rest's ℓ1 error within the absolute bound (50-digit reference), for a law
    whose masses span 1e-300 … 1."""
    import mpmath as mp
    from accounting.numerics.fourier import UNIT_ROUNDOFF, _FAR_BELOW, _tilt_rounding
    rng = np.random.default_rng(11)
    size = 3000
    losses = (np.arange(size) - 1500) * 1e-3 * 7.0
    masses = np.exp(-rng.uniform(0, 690, size)) * rng.uniform(0.5, 1.0, size)
    masses[1500] = 0.3
    logp = np.log(masses)
    x = logp + theta * losses
    j_top = int(np.argmax(x))
    y = x - x[j_top]
    w = np.exp(y)
    w = w / w.sum()
    eta, small = _tilt_rounding(y, float(logp[j_top]), abs(theta) * np.abs(losses).max(),
                                math.log2(size + 1), UNIT_ROUNDOFF)
    with mp.workdps(50):
        ex = [mp.mpf(float(m)) * mp.exp(mp.mpf(theta) * mp.mpf(float(l)))
              for m, l in zip(masses, losses)]
        total = mp.fsum(ex)
        exact = np.array([float(e / total) for e in ex])
        rel_err = [abs(mp.mpf(float(a)) / (e / total) - 1) for a, e in zip(w, ex)]
    big = y >= -_FAR_BELOW
    assert max(float(r) for r, b in zip(rel_err, big) if b) <= eta
    assert float(np.sum(np.abs(w[~big] - exact[~big]))) <= small + 1e-300
