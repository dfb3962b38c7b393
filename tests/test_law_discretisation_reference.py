"""The faster discretisation of one mechanism's PLD gives the very laws of the old one.

The PLD of a pair used to be built by evaluating each direction's profile separately
on each grid, a separate δ(∞) call before the support scan, a 1024-ary bisection
for the largest loss, and masks over every ε in the subsampled profile. The new
path (one profile call per direction for both grids, the search started at the
pair's D_∞, the subsampled profile evaluated where its formula applies) must give
bit-identical laws: masses, offset, mass at +∞, ``sup_loss`` and slack. The old
algorithm is kept here as the reference (``_reference_laws``, swapped in for
``converters.profile_laws``), and the changed primitives are checked against their
old forms on inputs with ±∞ and NaN. The optimistic side is pinned the same way:
the old ``convex_minorant`` and its hull are kept here verbatim (``_old_convex_minorant``)
and every lower law must come out bit for bit as they give it.
"""

from __future__ import annotations

import math
import os
import warnings

import mpmath as mp
import numpy as np
import pytest
from scipy.special import log_ndtr

import accounting
import accounting_mechanisms.gaussian as gaussian_plugin
from accounting import PLD
from accounting.conversion import converters
from accounting.curves.pld import DEFAULT_STEP
from accounting.numerics import discretise as D
from accounting.vocabulary import Bound, Direction

_FWD, _BWD = Direction.FORWARD, Direction.BACKWARD


# ------------------------------------------------------------- the old algorithm
def _old_support(delta, tail, resolution):
    """``profile_support`` before: δ(∞) in its own call, then the same scan."""
    floor = float(delta(np.array([np.inf]))[0])
    powers = 2.0 ** np.arange(-12, 18)
    scan = np.concatenate([-powers[::-1], [0.0], powers])
    above = delta(scan) - floor > tail
    if above[-1]:
        raise ValueError("the privacy profile does not decay")
    if not above.any():
        return float(scan[0])
    j = int(np.flatnonzero(above)[-1])
    lo, hi = scan[j], scan[j + 1]
    while hi - lo > resolution:
        pts = np.linspace(lo, hi, 65)
        above = delta(pts) - floor > tail
        k = int(np.flatnonzero(above)[-1]) if above.any() else 0
        lo, hi = pts[k], pts[min(k + 1, 64)]
    return float(hi)


def _old_grid(indices, step, delta, reverse, shift=0.0):
    """``grid_profile`` before: each direction's own evaluation, by masks."""
    left = indices * step < 0
    eps = indices * step + shift
    x = np.exp(eps)
    d = np.empty_like(eps)
    dt = np.empty_like(eps)
    if (~left).any():
        d[~left] = delta(eps[~left])
        dt[~left] = d[~left] - 1.0 + x[~left]
    if left.any():
        dt[left] = x[left] * reverse(-eps[left])
        d[left] = (1.0 - x[left]) + dt[left]
    return d, dt


def _old_sup(delta, indices, step, d):
    """``profile_sup`` before: the 1024-ary bisection, with no starting guess."""
    if d[-1] != 0.0:
        return None
    pos = np.flatnonzero(d > 0)
    if pos.size == 0:
        return float(indices[0] * step)
    a, b = float(indices[pos[-1]] * step), float(indices[pos[-1] + 1] * step)
    for _ in range(64):
        pts = np.unique(np.linspace(a, b, 1025)[1:-1])
        pts = pts[(pts > a) & (pts < b)]
        if pts.size == 0:
            mid = float(np.nextafter(a, b))
            if mid >= b:
                break
            pts = np.array([mid])
        zero = np.flatnonzero(delta(pts) <= 0)
        if zero.size == 0:
            a = float(pts[-1])
        else:
            k = int(zero[0])
            b = float(pts[k])
            if k > 0:
                a = float(pts[k - 1])
    if float(delta(np.array([a]))[0]) < D.SUP_FLOOR:
        return None
    return b


# ------------------------------------------------- the old optimistic side (minorant)
# ``convex_minorant`` and the hull as they were before the local passes ran on a
# compact window and the hull's local passes on linked neighbours: kept verbatim (only
# renamed), with the unchanged helpers taken from the library.

def _old_unique_ints(a: np.ndarray) -> np.ndarray:
    """``np.unique`` of an integer array (sorted, each value once), by a sort: numpy's
    hash-based unique of integers costs ~10× more on the few hundred indices here."""
    a = np.sort(a)
    return a[np.concatenate(([True], a[1:] != a[:-1]))] if a.size else a


def _old_masses_at(v: np.ndarray, at: np.ndarray, step: float) -> np.ndarray:
    """``_masses(v, step, 0.0)`` at the sorted indices ``at`` only, by the same
    arithmetic (the stencil is local)."""
    em1 = np.expm1(step)
    e = np.exp(step)
    n = v.size
    out = np.empty(at.size)
    mid = (at > 0) & (at < n - 1)
    i = at[mid]
    out[mid] = ((v[i + 1] - v[i]) - e * (v[i] - v[i - 1])) / em1
    if at.size and at[0] == 0:
        out[0] = (0.0 - v[0]) + (v[1] - v[0]) / em1
    if at.size and at[-1] == n - 1:
        out[-1] = -e * (v[n - 1] - v[n - 2]) / em1
    return out


def _old_gaps(v: np.ndarray, step: float, x: np.ndarray, floor: float, tilde: bool,
          near: "tuple | None" = None) -> np.ndarray:
    """For each interval, the largest height of the chord above a set of support lines.

    In the local coordinate u = x/x_i ∈ [1, e^d] of interval i, every line below the
    convex profile on the interval bounds how far the chord can rise above it:
    G_i = max_u [chord(u) − max_k line_k(u)] (a concave function of u, so the max is
    at an end or where two lines cross). The lines:

    * secants extended beyond their own interval (below a convex function there):
      with ``near`` = (v(ε − η), v(ε + η), η) those over [ε_i − η, ε_i] and
      [ε_{i+1}, ε_{i+1} + η], close to the tangents; else those of intervals i±1;
    * the global bounds δ ≥ δ(∞) = ``floor`` and δ ≥ 1 − x, in the representation of
      ``v`` (δ̃ = δ − 1 + x when ``tilde``).

    Also returns, per interval, the slopes of the supports through its two ends.
    """
    e = np.exp(step)
    em1 = np.expm1(step)
    n = v.size - 1
    chord = np.diff(v) / em1
    xi = x[:-1]
    # each line as (v_i − value at u=1, slope), so chord − line = b + (chord − a)(u − 1)
    lines = []
    if near is not None:
        v_minus, v_plus, eta = near
        a1 = (v[:-1] - v_minus[:-1]) / -np.expm1(-eta)
        a2 = (v_plus[1:] - v[1:]) / (e * np.expm1(eta))
        lines.append((np.zeros(n), a1))
        lines.append(((v[:-1] - v[1:]) + a2 * em1, a2))
    else:
        a1 = np.concatenate([[np.nan], chord[:-1] * e])
        a2 = np.concatenate([chord[1:] / e, [np.nan]])
        lines.append((np.zeros(n), a1))
        lines.append(((v[:-1] - v[1:]) + a2 * em1, a2))
    if tilde:   # δ̃ ≥ 0 and δ̃ ≥ x − 1 + floor
        lines.append((v[:-1].copy(), np.zeros(n)))
        lines.append((v[:-1] - (xi - 1.0 + floor), xi))
    else:       # δ ≥ floor and δ ≥ 1 − x
        lines.append((v[:-1] - floor, np.zeros(n)))
        lines.append((v[:-1] - (1.0 - xi), -xi))
    b = np.array([ln[0] for ln in lines])
    a = np.array([ln[1] for ln in lines])
    valid = np.isfinite(a) & np.isfinite(b)
    b = np.where(valid, b, np.inf)      # a missing line never binds
    a = np.where(valid, a, chord)
    cands = [np.ones(n), np.full(n, e)]
    k = len(lines)
    for i in range(k):
        for j in range(i + 1, k):
            with np.errstate(divide="ignore", invalid="ignore"):
                u = 1.0 + (b[i] - b[j]) / (a[i] - a[j])
            cands.append(np.where(np.isfinite(u), np.clip(u, 1.0, e), 1.0))
    best = np.zeros(n)
    for u in cands:
        above = np.min(b + (chord - a) * (u - 1.0), axis=0)   # chord − envelope at u
        best = np.maximum(best, above)
    # slopes (u-units) of supports through each interval's ends, for ``_clamp``
    end_slopes = (np.where(np.isfinite(a1), a1, chord), np.where(np.isfinite(a2), a2, chord))
    return best, end_slopes


def _old_convex_minorant(indices: np.ndarray, step: float, d: np.ndarray, dt: np.ndarray,
                    inf_floor: float = 0.0, near: "tuple | None" = None,
                    max_passes: int = 20) -> LossPMF:
    """Optimistic PMF: a convex, grid-kinked profile g = δ − λ below the convex δ.

    ``d``, ``dt`` from ``grid_profile`` must be values of a genuine profile (exact, or
    of a pair that the true pair dominates); ``inf_floor`` a lower bound on its mass
    at +∞. ``near`` = ((δ, δ̃) at ε − η, (δ, δ̃) at ε + η, η), from ``grid_profile``
    with ``shift``, gives near-tangent supports (much tighter where the loss law is
    concentrated on a few grid cells). The lowering λ is worked with directly, so no
    O(1) values are subtracted. Steps: λ from the gaps; local passes that lower a
    point onto its neighbours' chord where its mass is negative; ``_clamp`` (a
    profile is ≥ 0 and ≥ 1 − x); the lower convex hull if anything is still concave.
    Roundoff-sized negative masses left are zeroed and booked as slack.
    """
    n = d.size
    left = indices * step < 0
    if n < 3:
        lam = np.maximum(d - inf_floor, 0.0)
        m = np.maximum(D._masses(d - lam, step, 1.0), 0.0)
        return accounting.LossPMF.on_grid(step, int(indices[0]), m, inf_mass=float(d[-1] - lam[-1]))
    near_t = near_d = None
    if near is not None:
        (dm, dtm), (dp, dtp), eta = near
        near_d, near_t = (dm, dp, eta), (dtm, dtp, eta)
    x = np.exp(indices * step)
    if near is not None:
        # each interval's gap from its own representation only (δ̃ left of ε = 0, δ
        # right): with near-tangent supports an interval's lines use its two ends only,
        # so each representation is worked out on its own intervals
        k = int(np.count_nonzero(left[:-1]))      # left is a prefix: intervals [0, k)
        parts = []
        for v, nv, lo, hi, tilde in ((dt, near_t, 0, k, True), (d, near_d, k, n - 1, False)):
            if hi > lo:
                sl = slice(lo, hi + 1)
                parts.append(_old_gaps(v[sl], step, x[sl], inf_floor, tilde,
                                   (nv[0][sl], nv[1][sl], nv[2])))
        gaps = np.concatenate([p[0] for p in parts])
        ends = (np.concatenate([p[1][0] for p in parts]), np.concatenate([p[1][1] for p in parts]))
    else:
        gaps_t, (a1_t, a2_t) = _old_gaps(dt, step, x, inf_floor, True, near_t)
        gaps_d, (a1_d, a2_d) = _old_gaps(d, step, x, inf_floor, False, near_d)
        gaps = np.where(left[:-1], gaps_t, gaps_d)
        ends = (np.where(left[:-1], a1_t, a1_d), np.where(left[:-1], a2_t, a2_d))
    lam = np.empty(n)
    lam[1:-1] = np.maximum(gaps[:-1], gaps[1:])
    lam[0] = max(gaps[0], dt[0])            # g_0 ≤ 1 − x_0, i.e. δ̃_0 − λ_0 ≤ 0
    lam[-1] = max(gaps[-1], d[-1] - inf_floor)
    base = D._profile_masses(indices, step, d, dt)
    em1 = np.expm1(step)
    e = np.exp(step)
    gain = np.full(n, (1.0 + e) / em1)      # ∂m_i/∂λ_i
    gain[0] = 1.0 + 1.0 / em1
    gain[-1] = e / em1

    def negative(lam):
        lowered = D._masses(lam, step, 0.0)
        m = base - lowered
        # below this size a negative mass is roundoff of the subtraction: booked as slack
        tol = 1e-12 * (np.abs(base) + np.abs(lowered)) + 1e-300
        return m, m < -tol

    # local passes: a pass changes λ only where a mass is negative, and a mass depends
    # on λ at its own point and its two neighbours, so only those are recomputed (the
    # same values a full recomputation gives)
    lowered = D._masses(lam, step, 0.0)
    m = base - lowered
    tol = 1e-12 * (np.abs(base) + np.abs(lowered)) + 1e-300
    bad = m < -tol
    for _ in range(max_passes):
        at = np.flatnonzero(bad)
        if at.size == 0:
            break
        lam = lam.copy()
        lam[at] = lam[at] + (-m[at] / gain[at])
        near = _old_unique_ints(np.concatenate([at - 1, at, at + 1]))
        near = near[(near >= 0) & (near < n)]
        lowered[near] = _old_masses_at(lam, near, step)
        m[near] = base[near] - lowered[near]
        tol[near] = 1e-12 * (np.abs(base[near]) + np.abs(lowered[near])) + 1e-300
        bad[near] = m[near] < -tol[near]
    # Keep it a profile, then convex: what the local passes leave is a wave running
    # into a tail (the end constraints make kinks there), which the hull removes; the
    # hull only lowers points, and a hull of non-negative points stays non-negative.
    lam = D._clamp(lam, np.where(left, dt, d), left, step, ends)
    m, bad_mask = negative(lam)
    if bad_mask.any():
        g, gt = _old_convex_hull(indices, step, left, d - lam, dt - lam)
        lam = np.where(left, dt - gt, d - g)
    m = base - D._masses(lam, step, 0.0)
    # Roundoff-sized negative masses (differences of profile values divided by
    # e^d − 1: ~1e-13 each) are zeroed, which raises the tail sums Σ_{l>t} m for t
    # below them. Each is paid back from the nearest positive mass at or above it,
    # which lowers every tail sum it raised (and some it did not): the law stays
    # stochastically below the minorant's, so δ can only fall. What finds no mass
    # above it to pay from is booked as slack. (Booking everything as slack cost
    # 1e-11 of δ per use, 1e-6 after 1e5 compositions of randomized response;
    # taking it all from the top loss cut the far tail of Gaussian laws.)
    negative = np.flatnonzero(m < 0)
    owed = -m[negative]
    m = np.maximum(m, 0.0)
    slack = 0.0
    if negative.size:
        # what a mass cannot pay moves on to the next positive mass above, and so on
        # (each step lowers only tail sums the debt had raised); what is still owed
        # after the rounds, or finds nothing above, is slack. (Booking it at once cost
        # σ = 0.1 at step 2e-4 9e-11 of δ everywhere.)
        m, slack = D.pay_debts(m, negative, owed, below=False)
        top = np.flatnonzero(m > 0)
        if slack > 0 and top.size and m[top[-1]] >= 1e3 * slack:
            # a law with a heavy top atom (randomized response, Laplace): paying
            # the rest from it lowers every tail sum by that much, and costs it
            # only a relative 1e-3 at most
            m[top[-1]] -= slack
            slack = 0.0
    inf_mass = float(max(d[-1] - lam[-1], 0.0))
    excess = m.sum() + inf_mass - 1.0
    if excess > 0:
        taken = np.minimum(m, np.maximum(excess - (np.cumsum(m) - m), 0.0))
        m = m - taken
    return accounting.LossPMF.on_grid(step, int(indices[0]), m, inf_mass=inf_mass, slack=slack)


def _old_convex_hull(indices: np.ndarray, step: float, left: np.ndarray, g: np.ndarray,
                 gt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower convex hull of the whole profile in x = e^ε, through the anchor (0, 1),
    flat beyond the last point (Andrew's monotone chain).

    Convexity tests are affine-invariant, so each is made in the representation that
    is accurate where its points lie: δ̃ (anchor 0) when all three are left of ε = 0,
    δ otherwise; the hull is then interpolated in the same way. Returns the new values
    in both forms (δ̃ = δ − 1 + e^ε)."""
    x = np.exp(indices * step)
    xs = np.concatenate([[0.0], x, [x[-1] * 1e9]])
    yd = np.concatenate([[1.0], g, [g[-1]]])
    yt = np.concatenate([[0.0], gt, [np.inf]])
    lf = np.concatenate([[True], left, [False]])
    h = _old_hull_vertices(xs, yd, yt, lf)
    new_g = np.minimum(np.interp(xs, xs[h], yd[h]), yd)[1:-1]
    hl = h[lf[h]]
    new_gt = gt.copy()
    if hl.size:
        # left points: interpolate δ̃ between left vertices (and the first right one)
        nxt = h[~lf[h]][:1]
        hv = np.concatenate([hl, nxt])
        yv = np.concatenate([yt[hl], yd[nxt] - 1.0 + xs[nxt]])
        new_gt = np.where(left, np.minimum(np.interp(xs, xs[hv], yv), np.append(yt[:-1], 0))[1:-1],
                          new_g - 1.0 + x)
    new_g = np.where(left, new_gt + 1.0 - x, new_g)
    return new_g, new_gt


def _old_hull_vertices(xs: np.ndarray, yd: np.ndarray, yt: np.ndarray,
                   lf: np.ndarray) -> np.ndarray:
    """Indices of the lower convex hull's vertices (both ends always kept).

    Vectorised: every point on or above the chord of its two neighbours among the
    points still kept is not a hull vertex (it lies on or above a chord of the set),
    so all such points are dropped at once, pass after pass; when none is left the
    kept points form a convex polyline through both ends — the lower hull. Each test
    is made in the representation accurate for its points (δ̃ when all three lie
    left of ε = 0, i.e. when the right one does). A chord sweeping in from a steep
    end drops one point a pass: after a few passes, Andrew's monotone chain is run on
    the kept points around the last drops (its ends stay), over a span four times
    wider each time it has to be repeated.
    """
    cand = np.arange(xs.size)
    margin = 32
    # positions (in cand) to test: all at first; then only the points whose neighbours
    # changed (next to a drop, or at the ends of a chained span) — no other test can
    # come out differently, so the drops are exactly those of full passes
    test = np.arange(1, cand.size - 1)
    while True:
        for _ in range(8):
            if cand.size < 3:
                return cand
            b = cand[test]
            a, c = cand[test - 1], cand[test + 1]
            left = lf[c]
            ya = np.where(left, yt[a], yd[a])
            yb = np.where(left, yt[b], yd[b])
            yc = np.where(left, yt[c], yd[c])
            with np.errstate(invalid="ignore"):
                above = (yb - ya) * (xs[c] - xs[a]) >= (yc - ya) * (xs[b] - xs[a])
            if not above.any():
                return cand
            drop = test[above]
            gone = cand[drop]
            cand = np.delete(cand, drop)
            after = drop - np.arange(drop.size)     # new position of the point after each
            test = _old_unique_ints(np.concatenate([after - 1, after]))
            test = test[(test >= 1) & (test <= cand.size - 2)]
            if test.size == 0:
                return cand
        i0 = max(int(np.searchsorted(cand, gone.min())) - margin, 0)
        i1 = min(int(np.searchsorted(cand, gone.max())) + margin, cand.size)
        chained = _old_chain(cand[i0:i1], xs, yd, yt, lf)
        cand = np.concatenate([cand[:i0], chained, cand[i1:]])
        ends = np.array([i0 - 1, i0, i0 + chained.size - 1, i0 + chained.size])
        test = _old_unique_ints(ends[(ends >= 1) & (ends <= cand.size - 2)])
        margin *= 4


def _old_chain(idx: np.ndarray, xs: np.ndarray, yd: np.ndarray, yt: np.ndarray,
           lf: np.ndarray) -> np.ndarray:
    """Andrew's monotone chain (lower hull) over the points ``idx`` (increasing x).

    (A scalar loop: the coordinates are gathered into Python floats first, whose
    arithmetic is the same IEEE double arithmetic, at a fraction of the cost of
    indexing arrays element by element.)"""
    x, y_d, y_t, left = (xs[idx].tolist(), yd[idx].tolist(), yt[idx].tolist(),
                         lf[idx].tolist())
    hull: list[int] = []
    for i in range(len(x)):
        y = y_t if left[i] else y_d          # a, b lie left of i: all left iff i is
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            if (y[b] - y[a]) * (x[i] - x[a]) >= (y[i] - y[a]) * (x[b] - x[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    return idx[np.array(hull, dtype=np.intp)]


def _old_laws(delta, step, tail, lower, ranges=None, grids=None, largest=None):
    if ranges is None:
        ranges = {d: _old_support(lambda e, d=d: delta(e, d), tail, step / 4) for d in (_FWD, _BWD)}
    grids = {} if grids is None else grids
    laws = []
    for d in (_FWD, _BWD):
        rev = d.reverse()
        idx = D.grid_indices(-ranges[rev], ranges[d], step)
        if idx.size == 0:
            floor = float(delta(np.array([np.inf]), d)[0])
            laws.append(accounting.LossPMF.on_grid(step, 0, np.zeros(1), inf_mass=floor))
            continue
        fd, fr = (lambda e: delta(e, d)), (lambda e: delta(e, rev))
        if d not in grids:
            grids[d] = _old_grid(idx, step, fd, fr)
        vals, vals_t = grids[d]
        if lower:
            floor = float(delta(np.array([np.inf]), d)[0])
            eta = 1e-3 * step
            near = (_old_grid(idx, step, fd, fr, -eta), _old_grid(idx, step, fd, fr, eta), eta)
            laws.append(_old_convex_minorant(idx, step, vals, vals_t, inf_floor=floor, near=near))
        else:
            law = D.connect_the_dots(idx, step, vals, vals_t)     # no profile: no search
            sup, bounded = _old_sup(fd, idx, step, vals), False
            if sup is None and vals[-1] > 0 and largest is not None:
                # new: a grid cut before the pair's declared D_∞ keeps it (``bounded``)
                sup = D.declared_sup(fd, float(idx[-1] * step), lambda d=d: largest(d))
                bounded = sup is not None
            laws.append(accounting.LossPMF.on_grid(
                law.step, law.offset, law.masses, law.inf_mass, law.slack,
                sup_loss=sup, bounded=bounded))
    return tuple(laws), ranges, grids


def _reference_laws(profile, step, tail, lower):
    if step is None:
        laws = getattr(profile.upper, "laws", None)
        step = laws[0].step if laws is not None and laws[0].step else DEFAULT_STEP
    upper, ranges, grids = _old_laws(profile.upper.delta, step, tail, False,
                                     largest=getattr(profile.upper, "largest_loss", None))
    lower_laws = None
    if lower and profile.lower is not None:
        same = profile.lower is profile.upper
        lower_laws, _, _ = _old_laws(profile.lower.delta, step, tail, True, ranges,
                                     grids if same else None)
    return upper, lower_laws


# ------------------------------------------------------------------ comparison
def _fields(pld):
    out = []
    for side in (pld.upper, pld.lower):
        out.append(None if side is None else [
            (law.masses, law.offset, law.step, law.inf_mass, law.sup_loss, law.slack,
             law.bounded) for law in side])
    return out


def _assert_identical(new, ref, label):
    for side_new, side_ref, name in zip(_fields(new), _fields(ref), ("upper", "lower")):
        assert (side_new is None) == (side_ref is None), (label, name)
        if side_new is None:
            continue
        for d, a, b in zip(("forward", "backward"), side_new, side_ref):
            np.testing.assert_array_equal(a[0], b[0], err_msg=f"{label} {name} {d} masses")
            assert a[1:] == b[1:], (label, name, d, a[1:], b[1:])


def _both(mech, monkeypatch, **options):
    """(new PLD, reference PLD) of ``mech``: the reference with the old algorithm."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        new = mech.curve(PLD, **options)
        with monkeypatch.context() as m:
            m.setattr(converters, "profile_laws", _reference_laws)
            ref = mech.curve(PLD, **options)
    return new, ref


_SIGMAS = np.linspace(0.8, 2.0, 100)


@pytest.mark.parametrize("options", [dict(lower=False, tail=1e-25), dict(lower=False)],
                         ids=["tail1e-25", "default-tail"])
def test_issue_11_workload_laws_are_unchanged(options, monkeypatch):
    """The 100 subsampled Gaussians of issue 11 (q = 0.01, σ = 0.8 … 2.0, step 1e-3),
    every one: both directions, every field, bit for bit; the largest loss found
    both where it is certified (small σ) and where it is refused (large σ)."""
    sups = set()
    for sigma in _SIGMAS:
        mech = accounting.mechanism("subsampled_gaussian", q=0.01, sigma=float(sigma))
        new, ref = _both(mech, monkeypatch, step=1e-3, **options)
        _assert_identical(new, ref, f"σ = {sigma}")
        sups.add(new.upper[1].sup_loss is None)
    assert sups == {True, False}


def test_issue_11_workload_lower_side_is_unchanged(monkeypatch):
    """All 100 laws with their optimistic side, against the old grids and the old
    minorant (``_old_convex_minorant``): every field of both sides, bit for bit."""
    for sigma in _SIGMAS:
        mech = accounting.mechanism("subsampled_gaussian", q=0.01, sigma=float(sigma))
        new, ref = _both(mech, monkeypatch, step=1e-3, tail=1e-25)
        assert new.lower is not None
        _assert_identical(new, ref, f"σ = {sigma}")


def _law_fields(law):
    return law.masses, (law.offset, law.step, law.inf_mass, law.sup_loss, law.slack)


def _rough_profile(rng, n, lo, hi, noise):
    """Grid values (δ, δ̃) of the Gaussian profile (μ = 1) on [lo, hi], each raised by
    a relative ``noise`` at random: a profile that is not convex, so that the local
    passes, the clamp and the hull all have work everywhere on the grid."""
    step = (hi - lo) / n
    idx = np.arange(int(np.floor(lo / step)), int(np.ceil(hi / step)) + 1)
    eps = idx * step
    fwd = gaussian_plugin.gaussian_delta(1.0, eps)
    rev = gaussian_plugin.gaussian_delta(1.0, -eps)
    dt = np.where(eps < 0, np.exp(eps) * rev, fwd - 1.0 + np.exp(eps))
    bump = 1.0 + noise * rng.random(idx.size)
    dt = np.where(eps < 0, dt * bump, dt)
    d = np.where(eps < 0, (1.0 - np.exp(eps)) + dt, fwd * bump)
    dt = np.where(eps < 0, dt, d - 1.0 + np.exp(eps))
    return idx, step, d, dt


@pytest.mark.parametrize("noise", [0.0, 1e-9, 1e-4, 0.05])
@pytest.mark.parametrize("lo,hi", [(-3.0, 3.0), (-3.0, -0.5), (0.5, 3.0)],
                         ids=["both", "left", "right"])
def test_minorant_matches_the_old_one_on_rough_profiles(noise, lo, hi):
    """``convex_minorant`` against ``_old_convex_minorant`` directly, with and without
    near-tangent supports, for every number of local passes, on profiles smooth and
    rough (the rough ones drop many hull points at once, chain spans, and switch the
    hull's passes between their vectorised and linked forms): bit for bit."""
    rng = np.random.default_rng(int(noise * 1e6) + int(10 * (lo + 10)))
    idx, step, d, dt = _rough_profile(rng, 600, lo, hi, noise)
    eta = 1e-3 * step
    shifted = []
    for s in (-eta, eta):
        bump = 1.0 + noise * rng.random(idx.size)
        shifted.append((d * bump, dt * bump))
    for near in (None, (shifted[0], shifted[1], eta)):
        for passes in (0, 1, 3, 20, 200):
            for floor in (0.0, 1e-9):
                new = D.convex_minorant(idx, step, d, dt, inf_floor=floor, near=near,
                                        max_passes=passes)
                old = _old_convex_minorant(idx, step, d, dt, inf_floor=floor, near=near,
                                           max_passes=passes)
                (mn, rn), (mo, ro) = _law_fields(new), _law_fields(old)
                np.testing.assert_array_equal(mn, mo, err_msg=f"{noise} {lo} {passes}")
                assert rn == ro, (noise, lo, passes, near is None)


@pytest.mark.parametrize("small", [0, 1, 3, None, 10**9])
@pytest.mark.parametrize("seed", range(8))
def test_hull_vertices_match_the_old_ones(seed, small, monkeypatch):
    """``_hull_vertices`` against ``_old_hull_vertices`` on points of a convex curve
    raised at random (many drops in the first pass), with a steep end (a chord that
    sweeps in one point a pass, into the chained spans), and with both
    representations: the very same vertices, whatever the size at which passes move
    between their vectorised and linked forms (0: never linked; 10⁹: always after the
    first pass; None: the library's)."""
    if small is not None:
        monkeypatch.setattr(D, "_HULL_SMALL", small)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 3000))
    xs = np.concatenate([[0.0], np.sort(rng.uniform(0.1, 5.0, n)), [5.0 * 1e9]])
    y = np.exp(-xs[1:-1]) + rng.choice([0.0, 1e-3, 1e-12], n) * rng.random(n)
    if seed % 2:
        y[: n // 3] += np.linspace(1.0, 0.0, n // 3) ** 8      # a steep end
    yd = np.concatenate([[1.0], y, [y[-1]]])
    lf = np.concatenate([[True], xs[1:-1] < 1.0, [False]])
    yt = np.concatenate([[0.0], yd[1:-1] - 1.0 + xs[1:-1], [np.inf]])
    np.testing.assert_array_equal(D._hull_vertices(xs, yd, yt, lf),
                                  _old_hull_vertices(xs, yd, yt, lf))


def _contract_mechanisms(monkeypatch):
    """Every mechanism of the contract suite (``tests/plugins/test_contract.py``)."""
    monkeypatch.syspath_prepend(os.path.join(os.path.dirname(__file__), "plugins"))
    import test_contract
    from accounting.testing import MechanismContract
    return {name: cls.mechanism for name, cls in vars(test_contract).items()
            if isinstance(cls, type) and issubclass(cls, MechanismContract)
            and cls.mechanism is not None}


_EXTRA = {
    "subsampled_gaussian q=0.3": dict(name="subsampled_gaussian", q=0.3, sigma=1.1),
    "subsampled_gaussian q=1e-4": dict(name="subsampled_gaussian", q=1e-4, sigma=0.7),
    "subsampled_gaussian q=1": dict(name="subsampled_gaussian", q=1.0, sigma=1.0),
    "subsampled_laplace": dict(name="subsampled_laplace", q=0.2, b=0.7),
}


def test_every_contract_mechanism_has_unchanged_laws(monkeypatch):
    mechs = _contract_mechanisms(monkeypatch)
    assert len(mechs) >= 25
    for label, spec in _EXTRA.items():
        spec = dict(spec)
        mechs[label] = accounting.mechanism(spec.pop("name"), **spec)
    mechs["poisson(laplace)"] = accounting.mechanism(
        "poisson_subsampled", base=accounting.mechanism("laplace", b=0.5), q=0.05)
    for label, mech in mechs.items():
        for options in (dict(step=1e-3), dict(step=1e-2, tail=1e-25, lower=False)):
            new, ref = _both(mech, monkeypatch, **options)
            _assert_identical(new, ref, f"{label} {options}")


# ------------------------------------------------- the changed primitives, alone
def _old_gaussian_delta(mu, eps):
    eps = np.asarray(eps, dtype=float)
    finite = np.isfinite(eps)
    e = np.where(finite, eps, 0.0)
    la = log_ndtr(mu / 2.0 - e / mu)
    lb = log_ndtr(-mu / 2.0 - e / mu)
    with np.errstate(over="ignore"):
        val = np.exp(la) * -np.expm1(np.minimum(e + lb - la, 0.0))
    val = np.where(eps == np.inf, 0.0, val)
    return np.where(eps == -np.inf, 1.0, val)


def _inputs(rng, centre):
    """Arrays around ``centre`` (where a subsampled profile switches formula), all
    finite, with ±∞, with NaN, and scalars."""
    base = centre + np.concatenate([rng.normal(0, 0.05, 40), rng.normal(0, 3, 40),
                                    [0.0, 5e-18, -5e-18]])
    yield base
    yield np.abs(base) + centre                # all on one side
    yield -np.abs(base) + centre
    yield np.concatenate([base, [np.inf, -np.inf]])
    yield np.concatenate([base[:5], [np.nan, np.inf]])
    yield np.array(centre + 0.01)
    yield np.array(-np.inf)
    yield np.array([np.inf])


def test_gaussian_delta_matches_its_old_form():
    rng = np.random.default_rng(3)
    for mu in (0.05, 0.5, 1.0, 4.0):
        for eps in _inputs(rng, 0.0):
            new, old = gaussian_plugin.gaussian_delta(mu, eps), _old_gaussian_delta(mu, eps)
            assert type(new) is type(old) and new.shape == old.shape
            np.testing.assert_array_equal(new, old)


@pytest.mark.parametrize("base", ["gaussian", "laplace", "discrete_gaussian"])
@pytest.mark.parametrize("q", [1e-4, 0.01, 0.3, 0.999])
def test_subsampled_profile_matches_its_masked_form(base, q):
    """``_mixed`` (the base evaluated only where the formula uses it) equals the old
    evaluation over the whole array with masks (``_mixed_masked``), bit for bit, in
    both directions, on either side of the switch at ε = ±log(1 − q)."""
    params = {"gaussian": dict(sigma=0.9), "laplace": dict(b=0.7),
              "discrete_gaussian": dict(sigma=2.0)}[base]
    pair = accounting.mechanism("poisson_subsampled", base=accounting.mechanism(base, **params),
                                q=q).pair()
    rng = np.random.default_rng(7)
    log1mq = np.log1p(-q)
    for d, centre in ((_FWD, log1mq), (_BWD, -log1mq)):
        for fn in (pair.base._profile, pair.base._profile_lower):
            for eps in _inputs(rng, centre):
                with np.errstate(all="ignore"):
                    old = pair._mixed_masked(np.asarray(eps, float), d, fn, q, log1mq)
                new = pair._mixed(eps, d, fn)
                assert type(new) is type(old) and new.shape == old.shape
                np.testing.assert_array_equal(new, old)


# ----------------------------------------------------- D_∞ and the largest loss
def _exact_dinf(q, base_dinf, direction):
    with mp.workdps(50):
        q, b = mp.mpf(q), mp.mpf(base_dinf)
        if direction is _FWD:
            return mp.log(1 + q * (mp.exp(b) - 1))
        return -mp.log(1 + q * (mp.exp(-b) - 1))


@pytest.mark.parametrize("q", [1e-6, 0.01, 0.3, 0.999])
def test_subsampled_max_divergence_brackets_the_closed_form(q):
    """D_∞ of the subsampled pair: forward log(1 + q(e^{D₀} − 1)), backward
    −log(1 + q(e^{−D₀} − 1)) (−log(1 − q) for the Gaussian, D₀ = ∞); the upper side
    at or above the 50-digit value, the lower side at or below, both within 1e-14."""
    lap = accounting.mechanism("poisson_subsampled", base=accounting.mechanism("laplace", b=0.5),
                               q=q).pair()
    gau = accounting.mechanism("subsampled_gaussian", q=q, sigma=1.0).pair()
    assert gau._renyi_limit(math.inf, _FWD) == math.inf
    assert gau._renyi_limit(1.0, _FWD) is None and lap._renyi_limit(1.0, _BWD) is None
    cases = [(gau, _BWD, math.inf), (lap, _FWD, 2.0), (lap, _BWD, 2.0)]
    for pair, d, d0 in cases:
        exact = _exact_dinf(q, d0 if d0 != math.inf else 1e6, d)
        up = pair._renyi_limit(math.inf, d, Bound.UPPER)
        assert mp.mpf(up) >= exact
        assert up <= float(exact) * (1 + 1e-14)
        low = pair._renyi_limit(math.inf, d, Bound.LOWER)
        assert mp.mpf(low) <= exact and low >= float(exact) * (1 - 1e-14)


def test_a_wrong_guess_changes_nothing():
    """``profile_sup`` with a guess far off, a few ulps off, or exact ends where the
    search alone ends (the guess only saves profile calls)."""
    for q, sigma in ((0.01, 0.5), (0.01, 0.9), (0.01, 1.0), (0.01, 3.0), (0.3, 1.1), (1e-4, 0.7)):
        pair = accounting.mechanism("subsampled_gaussian", q=q, sigma=sigma).pair()

        def f(e):
            return pair._profile(e, _BWD)
        step = 1e-3
        idx = np.arange(-50, int(2 * -math.log1p(-q) / step) + 50)
        d = f(idx * step)
        truth = _old_sup(f, idx, step, d)
        cut = float(-np.log1p(-q))
        for guess in (None, cut, np.nextafter(cut, 1.0), cut * (1 + 8e-16), cut * (1 - 5e-16),
                      cut * 0.9, cut + 0.5 * step, 2.0, -1.0, math.inf, math.nan):
            g = None if guess is None else (lambda guess=guess: guess)
            assert D.profile_sup(f, idx, step, d, g) == truth, (q, sigma, guess)


def test_the_guess_settles_the_search_in_one_call():
    """With the pair's D_∞ as the guess the search is one profile call, for a largest
    loss certified (σ = 0.8) and for one refused near underflow (σ = 2)."""
    for sigma, expect_none in ((0.8, False), (2.0, True)):
        pair = accounting.mechanism("subsampled_gaussian", q=0.01, sigma=sigma).pair()
        calls = []

        def f(e):
            calls.append(np.size(e))
            return pair._profile(e, _BWD)
        idx = np.arange(-50, 60)
        d = pair._profile(idx * 1e-3, _BWD)
        sup = D.profile_sup(f, idx, 1e-3, d, lambda: pair._renyi_limit(math.inf, _BWD))
        assert len(calls) == 1
        assert (sup is None) == expect_none
        assert sup is None or sup >= -math.log1p(-0.01) * (1 - 1e-15)
