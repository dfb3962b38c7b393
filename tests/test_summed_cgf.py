"""The summed CGF of a heterogeneous composition (``SummedCGF``): its grid values bracket
K(θ) = Σ c_i (log Σ_j p_ij e^{θ l_ij} − log Σ_j p_ij) evaluated in mpmath, and the
shared (stacked) evaluation of laws on one grid gives, bit for bit, what each law gives
alone — so the window, the tilts and the composed laws do not depend on how the laws
are grouped.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import accounting
from accounting import PLD, LossPMF
from accounting.numerics.loss import (UNIT_ROUNDOFF, _blocked_log_moments, grid_blocks,
                                      stacked_log_moments)
from accounting.numerics.summed_cgf import SummedCGF, _block_width


def _sg_law(sigma: float, q: float = 0.01, step: float = 2e-3) -> LossPMF:
    return accounting.mechanism("subsampled_gaussian", q=q, sigma=sigma).pair().curve(
        PLD, step=step).upper[0]


@pytest.fixture(scope="module")
def mixed_items():
    """Grid laws of different σ and counts, long (summed by blocks) and short (atom by
    atom), interleaved."""
    rng = np.random.default_rng(11)
    short = LossPMF.on_grid(2e-3, -3, rng.dirichlet(np.ones(40)))
    return [(_sg_law(0.9), 300), (short, 7), (_sg_law(1.3), 1000), (_sg_law(2.0), 50),
            (_sg_law(1.6), 20)]


def _mp_summed_cgf(items, theta: float) -> float:
    """Σ c (log Σ p e^{θl} − log Σ p) at 40 digits, from the same masses."""
    with mp.workdps(40):
        th = mp.mpf(theta)
        total = mp.mpf(0)
        for p, c in items:
            keep = p.masses > 0
            terms = [mp.log(mp.mpf(float(m))) + th * mp.mpf(float(x))
                     for m, x in zip(p.masses[keep], p.losses[keep])]
            top = max(terms)
            log_mgf = top + mp.log(mp.fsum(mp.exp(t - top) for t in terms))
            log_mass = mp.log(mp.fsum(mp.mpf(float(m)) for m in p.masses[keep]))
            total += c * (log_mgf - log_mass)
        return float(total)


def test_mixed_composition_brackets_mpmath(mixed_items):
    cgf = SummedCGF(mixed_items)
    routes = [law[-1] is not None for law in cgf._laws]
    assert routes == [True, False, True, False, True]     # by blocks or atom by atom
    for theta in (-20.0, -1.0, -0.01, 0.05, 1.0, 7.5, 40.0):
        i = int(np.flatnonzero(cgf.thetas == theta)[0]) if theta in cgf.thetas else None
        if i is None:                     # evaluate at θ off the grid the same way
            right, left = cgf._evaluate(np.array([theta]))
            hi, lo = (right[0], left[0]) if theta > 0 else (left[0], right[0])
        else:
            hi, lo = cgf.k[i], cgf.k_low[i]
        exact = _mp_summed_cgf(mixed_items, theta)
        assert lo <= exact <= hi, (theta, lo, exact, hi)
        # the two sides are rounding apart, not more (≈ 500 u per unit of count)
        count = sum(c for _, c in mixed_items)
        assert hi - lo <= 1e-9 * abs(exact) + 1e-13 * count, (theta, hi - lo, exact)


def test_grid_values_bracket_mpmath_and_zero_is_exact(mixed_items):
    cgf = SummedCGF(mixed_items)
    assert cgf.k[cgf.zero] == cgf.k_low[cgf.zero] == 0.0
    for i in range(0, cgf.thetas.size, 9):
        exact = _mp_summed_cgf(mixed_items, float(cgf.thetas[i]))
        assert cgf.k_low[i] <= exact <= cgf.k[i], (cgf.thetas[i], cgf.k_low[i], exact, cgf.k[i])


def _reference_blocked(logp, l0, step, t, b):
    """``_blocked_log_moments`` as it was before laws were stacked: one law, its blocks
    padded, one matrix product, ``np.sum`` down the columns."""
    a = -(-logp.size // b)
    lp = np.full(a * b, -np.inf)
    lp[:logp.size] = logp
    lp = lp.reshape(a, b)
    top = lp.max(axis=1)
    live = np.isfinite(top)
    lp, top = lp[live], top[live]
    first = l0 + np.flatnonzero(live) * b * step
    scaled = np.exp(lp - top[:, None])
    ramp = np.exp(np.arange(b)[:, None] * step * t[None, :])
    with np.errstate(divide="ignore"):
        blocks = np.log(scaled @ ramp) + top[:, None] + first[:, None] * t[None, :]
    peak = blocks.max(axis=0)
    return peak + np.log(np.sum(np.exp(blocks - peak[None, :]), axis=0))


def _reference_evaluate(items, thetas):
    """The evaluation before the laws were stacked: law by law, in the items' order,
    each grid law by blocks alone, with its rounding bound."""
    right, left = np.zeros(thetas.size), np.zeros(thetas.size)
    theta_max = float(np.max(np.abs(np.concatenate(
        [-np.geomspace(1e-2, 1e3, 21), np.geomspace(1e-2, 1e3, 21)]))))
    for p, c in items:
        keep = np.flatnonzero(p.masses > 0)
        logm = math.log(float(p.masses[keep].sum()))
        b = _block_width(p, theta_max)
        with np.errstate(divide="ignore", under="ignore"):
            if b is None:
                x = np.log(p.masses[keep])[None, :] + thetas[:, None] * p.losses[keep][None, :]
                top = x.max(axis=1)
                val = c * (top + np.log(np.exp(x - top[:, None]).sum(axis=1)) - logm)
                right += val
                left += val
                continue
            logp = np.log(p.masses)
            l_first = p.offset * p.step
            val = c * (_reference_blocked(logp, l_first, p.step, thetas, b) - logm)
        blocks = -(-logp.size // b)
        l_last = l_first + (blocks * b - 1) * p.step
        eta = 2.02 * UNIT_ROUNDOFF * c * (b + blocks + 8 + np.abs(thetas) * (
            abs(l_first) + abs(l_last) + b * p.step)) + 4.0 * UNIT_ROUNDOFF * np.abs(val)
        sign = np.where(thetas > 0, 1.0, -1.0)
        right += val + sign * eta
        left += val - sign * eta
    return right, left


@pytest.fixture(scope="module")
def issue11_items():
    """The 20 heterogeneous subsampled Gaussians of issue 11 (1000 steps each)."""
    return [(accounting.mechanism("subsampled_gaussian", q=0.01, sigma=float(s)).curve(
        PLD, step=1e-3, lower=False, tail=1e-25).law("forward", "upper"), 1000)
        for s in np.linspace(0.8, 2.0, 20)]


@pytest.mark.parametrize("which", ["mixed_items", "issue11_items"])
def test_stacked_evaluation_is_bitwise_the_law_by_law_one(which, request):
    items = request.getfixturevalue(which)
    cgf = SummedCGF(items)
    for thetas in (cgf.thetas, cgf.thetas[[3, 30]], np.array([2.5, -0.3, 1e-3])):
        got = cgf._evaluate(thetas)
        want = _reference_evaluate(items, thetas)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    # at a single θ BLAS takes a matrix-vector product, whose order of additions may
    # depend on where a law's rows sit in memory: equal to rounding (and each within
    # its own rigorous bound)
    for theta in (2.5, -0.3):
        got = cgf._evaluate(np.array([theta]))
        want = _reference_evaluate(items, np.array([theta]))
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("n_theta", [1, 2, 3, 43])
def test_stacked_log_moments_equal_each_law_alone(n_theta):
    """Several laws of different lengths (and blocks without mass inside) stacked give
    each law's blocked log-moments as computed alone: exactly for several θ (a sum in
    order down the columns), to rounding for one (a pairwise sum in NumPy, and a
    matrix-vector product in BLAS)."""
    rng = np.random.default_rng(n_theta)
    b, step = 8, 1e-3
    logps, l0s = [], []
    # masses over 30 orders of magnitude, and over one (many blocks of like size,
    # where the order of the sum over blocks shows in the last bits)
    for n, spread in ((130, 30), (3000, 1), (33, 30), (700, 1), (2000, 30)):
        logp = np.log(10.0 ** rng.uniform(-spread, 0, n))
        logp[rng.choice(n, n // 10, replace=False)] = -np.inf
        if n >= 700:
            logp[100:100 + 3 * b] = -np.inf              # whole blocks without mass
        logps.append(logp)
        l0s.append(int(rng.integers(-200, 0)) * step)
    t = np.linspace(-40, 60, n_theta) if n_theta > 1 else np.array([0.3])
    stacked = stacked_log_moments(*grid_blocks(logps, l0s, step, b), step, t)
    for k, (logp, l0) in enumerate(zip(logps, l0s)):
        alone = _reference_blocked(logp, l0, step, t, b)
        if n_theta > 1:
            np.testing.assert_array_equal(stacked[k], alone)
            np.testing.assert_array_equal(_blocked_log_moments(logp, l0, step, t, b), alone)
        else:       # a matrix-vector product: see the test above
            np.testing.assert_allclose(stacked[k], alone, rtol=1e-14)
        # and against the plain max-shifted log-sum-exp, to rounding
        x = logp[None, :] + t[:, None] * (l0 + np.arange(logp.size) * step)[None, :]
        top = x.max(axis=1)
        plain = top + np.log(np.exp(x - top[:, None]).sum(axis=1))
        np.testing.assert_allclose(stacked[k], plain, rtol=1e-13, atol=1e-13)


def test_a_law_without_mass_is_refused():
    with pytest.raises(ValueError, match="positive mass"):
        grid_blocks([np.zeros(40), np.full(40, -np.inf)], [0.0, 0.0], 0.1, 8)


def _reference_tail_index(cuts, upper):
    """``SummedCGF.tail_index`` as it was written before (``np.where``)."""
    g = np.linspace(cuts.min(), cuts.max(), 257)
    dg = (g[-1] - g[0]) / (g.size - 1) if g[-1] > g[0] else 1.0
    j = np.clip(np.floor((cuts - g[0]) / dg).astype(np.intp), 0, g.size - 1)
    if upper:
        return np.where(g[j] > cuts, np.maximum(j - 1, 0), j)
    j = np.where(g[j] < cuts, np.minimum(j + 1, g.size - 1), j)
    return np.where((j > 0) & (g[np.maximum(j - 1, 0)] >= cuts), j - 1, j)


@pytest.mark.parametrize("upper", [True, False])
def test_tail_index_is_on_the_safe_side(upper):
    rng = np.random.default_rng(5)
    for cuts in ((np.arange(-1290, 2394) + 3686 - 0.5) * 1e-2, rng.normal(0, 10, 5000),
                 np.array([0.7]), np.full(4, 2.0)):
        g, j = SummedCGF.tail_index(cuts, upper)
        np.testing.assert_array_equal(j, _reference_tail_index(cuts, upper))
        # the bound read at g[j] holds at the cut: below it (upper), above it (lower)
        assert np.all(g[j] <= cuts) if upper else np.all(g[j] >= cuts)
