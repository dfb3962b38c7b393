"""From a profile on a grid to certified loss PMFs: connect-the-dots and the minorant."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from accounting.numerics.discretise import (connect_the_dots, convex_minorant, grid_indices, grid_profile,
                                   profile_support)
from accounting.numerics.loss import MAX_GRID_POINTS

from closed_forms import gaussian_delta, laplace_delta


def _gauss(e, mu=1.0):
    """Balle–Wang δ(ε) in float64 via scipy (fast enough to be called on whole grids)."""
    e = np.asarray(e, float)
    with np.errstate(over="ignore", invalid="ignore"):
        v = norm.cdf(mu / 2 - e / mu) - np.exp(e) * norm.cdf(-mu / 2 - e / mu)
    return np.where(e == np.inf, 0.0, np.where(e == -np.inf, 1.0, np.maximum(v, 0.0)))


def _gauss_roundoff(e, mu=1.0):
    """A bound on the float64 roundoff of ``_gauss``: its two terms cancel where δ ≈ 1,
    so the reference itself is only good to a few ulps of the terms' size."""
    e = np.asarray(e, float)
    with np.errstate(over="ignore", invalid="ignore"):
        terms = norm.cdf(mu / 2 - e / mu) + np.exp(e) * norm.cdf(-mu / 2 - e / mu)
    return 32 * np.finfo(float).eps * np.where(np.isfinite(terms), terms, 0.0) + 1e-300


def _rr(e, p=0.75):
    """δ of ((p, 1−p), (1−p, p)) from the two-point distributions: kinks at ±log(p/(1−p))."""
    e = np.asarray(e, float)
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.exp(e)
        v = np.maximum(p - x * (1 - p), 0) + np.maximum(1 - p - x * p, 0)
    return np.where(e == np.inf, 0.0, np.where(e == -np.inf, 1.0, v))


def _laplace(e, scale=1.0):
    e = np.asarray(e, float)
    return np.where(e == -np.inf, 1.0, laplace_delta(scale, np.where(np.isfinite(e), e, 1e3)))


def _grid(f, lo, hi, step):
    idx = grid_indices(lo, hi, step)
    d, dt = grid_profile(idx, step, f, f)   # all three test pairs are symmetric
    return idx, d, dt


# ---------------------------------------------------------------------- grid, support
def test_grid_indices_cover_the_range_with_a_spare_point():
    idx = grid_indices(-0.25, 1.0, 0.1)
    assert idx[0] * 0.1 < -0.25 - 0.05 and idx[-1] * 0.1 > 1.0 + 0.05
    np.testing.assert_array_equal(np.diff(idx), 1)


def test_grid_indices_refuse_huge_grids():
    with pytest.raises(ValueError, match="larger step"):
        grid_indices(-1.0, 1.0, 2.0 / MAX_GRID_POINTS)


def test_profile_support_finds_the_tail_cut():
    tail = 1e-12
    e = profile_support(_gauss, tail, 1e-8)
    assert _gauss(e) <= tail
    assert _gauss(e - 1e-6) > tail
    # independent: brentq-free check with the 40-digit closed form
    assert gaussian_delta(1.0, e - 1e-6) > tail >= gaussian_delta(1.0, e) * (1 - 1e-9)


def test_profile_support_rejects_a_profile_that_does_not_decay():
    flat = lambda e: np.where(np.asarray(e) == np.inf, 0.0, 0.5)  # noqa: E731
    with pytest.raises(ValueError, match="does not decay"):
        profile_support(flat, 1e-20)


def test_grid_profile_uses_the_complement_identity():
    step = 0.01
    idx = grid_indices(-3, 3, step)
    d, dt = grid_profile(idx, step, _gauss, _gauss)
    eps = idx * step
    np.testing.assert_allclose(d, 1 - np.exp(eps) + dt, atol=1e-14)
    left = eps < 0
    # δ(ε) = 1 − e^ε + e^ε δ_rev(−ε): carried exactly as δ̃ on the left
    np.testing.assert_allclose(dt[left], np.exp(eps[left]) * gaussian_delta(1.0, -eps[left]),
                               rtol=1e-12)
    np.testing.assert_allclose(d[~left], gaussian_delta(1.0, eps[~left]), rtol=1e-12, atol=1e-300)


def test_grid_profile_refuses_losses_beyond_700():
    with pytest.raises(ValueError, match="700"):
        grid_profile(np.arange(0, 800), 1.0, _gauss, _gauss)


# --------------------------------------------------------------------- connect the dots
def test_connect_the_dots_masses_follow_the_reference_formula():
    """REFERENCE §5 (Doroshenko et al. 2022): masses from the grid values of δ."""
    step = 0.01
    idx = np.arange(0, 121)                      # ε = 0 … 1.2, Laplace with Δ/b = 1
    eps = idx * step
    dl = laplace_delta(1.0, eps)
    d, dt = dl, dl - 1 + np.exp(eps)
    pmf = connect_the_dots(idx, step, d, dt)
    e_d = np.exp(step)
    want = np.empty_like(dl)
    want[0] = (1 - dl[0]) + (dl[1] - dl[0]) / (e_d - 1)
    want[1:-1] = ((dl[2:] - dl[1:-1]) - e_d * (dl[1:-1] - dl[:-2])) / (e_d - 1)
    want[-1] = (dl[-1] - dl[-2]) / (np.exp(-step) - 1)
    got = np.zeros_like(want)
    got[pmf.offset - idx[0]: pmf.offset - idx[0] + pmf.masses.size] = pmf.masses
    np.testing.assert_allclose(got, np.maximum(want, 0.0), atol=1e-13)
    assert pmf.inf_mass == pytest.approx(dl[-1])


@pytest.mark.parametrize("name,f,lo,hi", [
    ("gaussian", _gauss, -8.0, 8.0),
    ("laplace", _laplace, -1.0, 1.0),
    ("randomized response", _rr, -1.2, 1.2),
])
def test_connect_the_dots_interpolates_and_dominates(name, f, lo, hi):
    step = 0.01
    idx, d, dt = _grid(f, lo, hi, step)
    pmf = connect_the_dots(idx, step, d, dt)
    grid = idx * step
    on = grid[(grid > lo) & (grid < hi)]
    np.testing.assert_allclose(pmf.delta(on), f(on), rtol=1e-11, atol=1e-15)  # through the dots
    off = (idx[:-1] + 0.37) * step                                            # between them
    exact = f(off)
    assert np.all(pmf.delta(off) >= exact * (1 - 1e-12) - 1e-300)
    assert pmf.total_mass <= 1 + 1e-12


def test_connect_the_dots_is_exact_for_losses_on_the_grid():
    # randomized response with loss ±0.5 = ±50 grid steps: the chords are the profile
    p = np.exp(0.5) / (1 + np.exp(0.5))
    f = lambda e: _rr(e, p)  # noqa: E731
    step = 0.01
    idx, d, dt = _grid(f, -0.6, 0.6, step)
    pmf = connect_the_dots(idx, step, d, dt)
    e = np.linspace(-0.9, 0.9, 997)
    np.testing.assert_allclose(pmf.delta(e), f(e), atol=1e-14)
    np.testing.assert_allclose(pmf.losses[pmf.masses > 1e-12], [-0.5, 0.5], atol=1e-12)


# ------------------------------------------------------------------ convex minorant
def test_convex_minorant_is_below_a_smooth_profile():
    step = 0.01
    idx, d, dt = _grid(_gauss, -8.0, 8.0, step)
    pmf = convex_minorant(idx, step, d, dt, inf_floor=0.0)
    off = (idx[:-1] + 0.37) * step
    assert np.all(pmf.delta(off) <= _gauss(off) + _gauss_roundoff(off))


def test_convex_minorant_is_close_on_the_grid():
    step = 0.01
    idx, d, dt = _grid(_gauss, -8.0, 8.0, step)
    pmf = convex_minorant(idx, step, d, dt, inf_floor=0.0)
    grid = idx * step
    gap = _gauss(grid) - pmf.delta(grid)
    assert np.all(gap >= -_gauss_roundoff(grid))
    assert np.max(gap) < 10 * step ** 2          # O(d²) lowering
    assert pmf.total_mass <= 1 + 1e-9


def test_convex_minorant_handles_a_kink_inside_a_cell():
    step = 0.01
    idx, d, dt = _grid(_rr, -1.2, 1.2, step)
    pmf = convex_minorant(idx, step, d, dt, inf_floor=0.0)
    off = (idx[:-1] + 0.37) * step
    assert np.all(pmf.delta(off) <= _rr(off) + 16 * np.finfo(float).eps)
    assert pmf.total_mass <= 1 + 1e-9


# -------------------------------------------------------------- atoms onto the grid
def test_atoms_to_grid_brackets_the_binomial_law():
    """k uses of randomized response (exact binomial atoms, off the grid): the upper
    law's δ is ≥ the exact one and the lower's ≤ at every ε, within one grid step of
    loss per use; no slack is booked."""
    from accounting import LossPMF
    from accounting.numerics.discretise import atoms_to_grid
    from scipy.stats import binom
    eps0, k, step = 0.013, 400, 1e-3
    p = np.exp(eps0) / (1 + np.exp(eps0))
    j = np.arange(k + 1)
    law = LossPMF.from_atoms(eps0 * (2 * j - k), binom.pmf(j, k, p))
    up = atoms_to_grid(law, step, 1e-20, True)
    lo = atoms_to_grid(law, step, 1e-20, False)
    eps = np.linspace(-1.0, 5.0, 301)
    exact = law.delta(eps)
    assert np.all(up.delta(eps) >= exact - 1e-15)
    assert np.all(lo.delta(eps) <= exact + 1e-15)
    assert lo.slack == up.slack == 0.0
    assert np.all(law.delta(eps + step) <= lo.delta(eps) + 1e-15)   # moved ≤ one step
    assert up.sup_loss == law.max_loss


def test_vectorised_hull_matches_the_monotone_chain():
    """The passes-plus-local-chain lower hull gives exactly the vertices of Andrew's
    monotone chain, on noisy convex data and on steep ends that sweep one point a
    pass."""
    from accounting.numerics.discretise import _chain, _hull_vertices
    rng = np.random.default_rng(7)
    for t in range(120):
        n = int(rng.integers(3, 2000))
        e = np.sort(rng.uniform(-3, 3, n))
        xs = np.concatenate([[0.0], np.exp(e), [np.exp(e[-1]) * 1e9]])
        noise = rng.normal(0, 10 ** rng.uniform(-8, -2), n) if t % 2 else \
            rng.uniform(0, 1e-4) * (e > rng.uniform(-3, 3))
        yd = np.concatenate([[1.0], np.exp(-np.exp(e)) + noise, [0.0]])
        yd[-1] = yd[-2]
        yt = yd - 1 + xs
        yt[0], yt[-1] = 0.0, np.inf
        lf = np.concatenate([[True], e < 0, [False]])
        assert np.array_equal(_hull_vertices(xs, yd, yt, lf),
                              _chain(np.arange(xs.size), xs, yd, yt, lf))


def test_repaid_roundoff_negatives_keep_the_law_pessimistic_and_its_mass():
    """``repay_from_below``: negatives set to 0 and paid from the masses below, as far
    as the total exceeds 1: δ never below the unclipped (signed) law's, the total 1."""
    import math
    from accounting.numerics.discretise import repay_from_below
    rng = np.random.default_rng(11)
    l = np.arange(400) * 0.01 - 2.0
    m = rng.dirichlet(np.ones(400))
    noise = rng.normal(0.0, 1e-12, 400)
    m = m + noise - noise.mean()                # signed, total 1 up to roundoff
    m[5::37] = -np.abs(m[5::37]) * 1e-9         # a few roundoff-sized negatives
    m[10] += 1.0 - math.fsum(m)
    out = repay_from_below(m)
    assert np.all(out >= 0.0)
    assert math.fsum(out) == pytest.approx(1.0, abs=1e-15)
    eps = np.linspace(-2.5, 2.5, 301)

    def delta(masses):
        return np.array([math.fsum(masses[l > e] * -np.expm1(e - l[l > e])) for e in eps])
    assert np.all(delta(out) >= delta(m) - 1e-16)
    clipped = np.maximum(m, 0.0)
    assert math.fsum(clipped) > 1.0 + 1e-11     # what the plain clip left above 1
