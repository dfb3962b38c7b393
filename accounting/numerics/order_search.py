"""Searches over Rényi orders α = 1 + t, t > 0: the one module every caller uses.

Two questions are asked of a cumulant generating function K(t) = (α − 1)·D_α:

* **a minimum over orders** of a conversion bound score(K(t), t): ε(δ) or log δ(ε)
  of the improved RDP conversion (Canonne, Kamath, Steinke 2020, arXiv:2004.00010,
  Prop. 12; Asoodeh et al. 2021, arXiv:2001.05990). The conversion holds at *every*
  order, so whatever order a search ends at, the value is a sound bound; a better
  search only makes it tighter. Three strategies, one per cost regime:

  - ``minimise_over_orders``: many targets at once, a shared coarse grid
    (``ORDER_GRID``) then batched zoom rounds per target (the converters);
  - ``minimise_near``: one target, warm-started from a previous best order, a
    window walk then a bounded Brent step (calibration: ε at many nearby parameter
    values, each costing a fresh CGF);
  - ``minimise_on_shared_orders``: very many targets from one set of orders (the
    coarse grid plus a fine grid over the cells holding the optima; the command
    line's sweeps of costly quadrature CGFs).

* **the zCDP envelope**, a maximum: ρ* = sup_{t>0} K(t)/(t(t + 1)) (Bun and Steinke
  2016, arXiv:1605.02065, Def. 1.1; Su, Yang, Su, Wang, arXiv:2610.02414, §3) and
  where it is reached (``envelope_sup``).

Every search treats a NaN score as +∞ (an order where the CGF is undefined is
skipped, never returned).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = ["ORDER_GRID", "ZOOM_ROUNDS", "ZOOM_POINTS", "ENVELOPE_T0", "ENVELOPE_TOP", "minimise_over_orders",
           "minimise_near", "minimise_on_shared_orders", "envelope_sup"]

CGFFn = Callable[[np.ndarray], np.ndarray]

#: orders searched before local refinement: t = α − 1 from 1e-4 to 2e4, 41 points
#: 0.48 apart in log t (the best order for any δ ≥ 1e-300 and ε ≥ 0.05 lies inside)
ORDER_GRID = np.geomspace(1e-4, 2e4, 41)
#: zoom rounds after the grid, and the new orders per round: each round puts
#: ``ZOOM_POINTS`` orders evenly inside the bracket [best − h, best + h] (log t) and
#: the next bracket is two of their spacings wide around the best, so h shrinks by
#: (ZOOM_POINTS + 1)/2 = 5 per round: 0.48·5⁻⁶ ≈ 3e-5 in log t after 6 rounds
ZOOM_ROUNDS, ZOOM_POINTS = 6, 9
#: the envelope search's orders: a log grid from ``ENVELOPE_T0`` (the t → 0 probe) to
#: the first of ``ENVELOPE_TOP``, extended to the second (the t → ∞ probes) when the
#: ratio still rises at the top
ENVELOPE_T0, ENVELOPE_TOP = 1e-6, (1e4, 1e5)
#: the window of ``minimise_near``: 9 orders, 0.5 apart in log t
_WINDOW = 0.5 * np.arange(-4, 5)
_LOG_T_MIN, _LOG_T_MAX = math.log(ORDER_GRID[0]), math.log(ORDER_GRID[-1])


def _finite_or_inf(v: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(v), np.inf, v)


def minimise_over_orders(cgf: CGFFn, score: Callable[[np.ndarray, np.ndarray, np.ndarray],
                                                      np.ndarray], n: int) -> np.ndarray:
    """min over t > 0 of score(K(t), t, i) for n targets i = 0 … n−1 at once.

    ``ORDER_GRID`` first (one CGF call shared by every target), then ``ZOOM_ROUNDS``
    batched zoom rounds around each target's best order so far (one CGF call per
    round for all targets and all their new orders). ``score`` gets K and t as
    arrays of shape (n, m) or (1, m) and the target rows ``i`` of shape (n, 1).
    """
    rows = np.arange(n)[:, None]
    kgrid = np.asarray(cgf(ORDER_GRID), dtype=float)
    vals = _finite_or_inf(score(kgrid[None, :], ORDER_GRID[None, :], rows))
    j = np.argmin(vals, axis=1)
    best: np.ndarray = vals[np.arange(n), j]
    centre = np.log(ORDER_GRID[j])
    lo_end, hi_end = np.log(ORDER_GRID[0]), np.log(ORDER_GRID[-1])
    half = np.log(ORDER_GRID[1] / ORDER_GRID[0])
    offsets = np.linspace(-1.0, 1.0, ZOOM_POINTS + 2)[1:-1]
    for _ in range(ZOOM_ROUNDS):
        logt = np.clip(centre[:, None] + half * offsets[None, :], lo_end, hi_end)
        t = np.exp(logt)
        k = np.asarray(cgf(t.ravel()), dtype=float).reshape(t.shape)
        v = _finite_or_inf(score(k, t, rows))
        i = np.argmin(v, axis=1)
        vi = v[np.arange(n), i]
        better = vi < best
        best = np.where(better, vi, best)
        centre = np.where(better, logt[np.arange(n), i], centre)
        half = half * 2.0 / (ZOOM_POINTS + 1)
    result: np.ndarray = best
    return result


def minimise_near(cgf: CGFFn, score: Callable[[np.ndarray, np.ndarray], np.ndarray],
                  log_t0: float) -> tuple[float, float]:
    """(min, argmin t) over t of score(K(t), t) for one target, searched around log t0.

    A window of 9 orders 0.5 apart in log t walks (within the range of
    ``ORDER_GRID``) until its best order is inside, then a bounded Brent step on the
    two cells around it refines to 1e-8 in log t.
    """
    from scipy.optimize import minimize_scalar

    def objective(u: np.ndarray) -> np.ndarray:
        t = np.exp(u)
        with np.errstate(over="ignore", invalid="ignore"):
            val = score(np.asarray(cgf(t), dtype=float), t)
        return _finite_or_inf(val)

    centre = min(max(log_t0, _LOG_T_MIN), _LOG_T_MAX)
    for _ in range(40):
        us = np.unique(np.clip(centre + _WINDOW, _LOG_T_MIN, _LOG_T_MAX))
        vals = objective(us)
        j = int(np.argmin(vals))
        at_edge = (j == 0 and us[0] > _LOG_T_MIN) or (j == us.size - 1 and us[-1] < _LOG_T_MAX)
        if not at_edge or not np.isfinite(vals[j]):
            break
        centre = us[j]
    best, best_u = float(vals[j]), float(us[j])
    if np.isfinite(best) and us.size > 1:
        lo, hi = us[max(j - 1, 0)], us[min(j + 1, us.size - 1)]
        res = minimize_scalar(lambda u: float(objective(np.array([u]))[0]), bounds=(lo, hi),
                              method="bounded", options={"xatol": 1e-8})
        if res.fun < best:
            best, best_u = float(res.fun), float(res.x)
    return best, math.exp(best_u)


def minimise_on_shared_orders(cgf: CGFFn, score: Callable[[np.ndarray, np.ndarray], np.ndarray],
                              fine_points: int) -> tuple[np.ndarray, int]:
    """min over one shared set of orders of score(K(t), t) for many targets at once.

    ``score`` maps K and t of shape (m,) to an array (targets, m). The CGF is
    evaluated on ``ORDER_GRID``, then on ``fine_points`` orders spread geometrically
    over the cells where that grid found the optima of all targets; each target takes
    its min over both sets. Returns the minima and the number of orders used.
    """
    coarse = np.asarray(cgf(ORDER_GRID), dtype=float)
    vals = _finite_or_inf(score(coarse, ORDER_GRID))
    j = np.argmin(vals, axis=1)
    lo = ORDER_GRID[max(int(j.min()) - 1, 0)]
    hi = ORDER_GRID[min(int(j.max()) + 1, ORDER_GRID.size - 1)]
    fine_t = np.geomspace(lo, hi, fine_points)
    fine = np.asarray(cgf(fine_t), dtype=float)
    best = np.minimum(vals.min(axis=1), _finite_or_inf(score(fine, fine_t)).min(axis=1))
    return best, ORDER_GRID.size + fine_t.size


def envelope_sup(cgf: CGFFn, *, lower: bool = False) -> tuple[float, float]:
    """(ρ*, t*): ρ* = sup_{t>0} K(t)/(t(t+1)) and where it is reached.

    A log grid over t ∈ [1e-6, 1e4] (extended to 1e5 when the ratio still rises at
    its top) covers both limits (t → 0, where the ratio tends to E[L] = KL, and large
    t); the best cell is refined by golden section. The sup of a smooth ratio is
    found to about 1e-10 relative; t* = 0 when it is the t → 0 limit. A sup reached
    only as t → ∞ is approached from below and cannot be certified: then (+∞, +∞),
    so pairs with such a sup (the subsampled Gaussian) supply ρ in closed form.

    ``lower``: ``cgf`` is a lower bound of a CGF, and so is the answer of ρ*: the
    largest ratio evaluated, never extrapolated (each K(t)/(t(t+1)) is at most the
    sup). A sup still rising at t = 1e5 then gives that last value, not +∞ — which,
    as a lower side, was above every upper one.
    """
    ts = np.geomspace(ENVELOPE_T0, ENVELOPE_TOP[0], 161)
    r = cgf(ts) / (ts * (ts + 1.0))
    r = np.where(np.isnan(r), -np.inf, r)
    if np.argmax(r) >= ts.size - 3:  # still rising at the top: follow it one decade out
        more = np.geomspace(ENVELOPE_TOP[0], ENVELOPE_TOP[1], 11)[1:]
        ts = np.concatenate([ts, more])
        r = np.concatenate([r, cgf(more) / (more * (more + 1.0))])
        r = np.where(np.isnan(r), -np.inf, r)
        if np.argmax(r) >= ts.size - 2:
            return (float(np.max(r)), np.inf) if lower else (np.inf, np.inf)
    j = int(np.argmax(r))
    if not np.isfinite(r[j]) or (lower and j == 0):
        return float(r[j]), float(ts[j])
    if j == 0 and r[0] > r[1]:
        # The sup is the t → 0 limit, K'(0) = E[L] (the KL divergence), approached from
        # below; K convex with K(0) = 0 makes K(t)/t ≥ K'(0) for every t > 0, so K(t₀)/t₀
        # at the smallest t₀ bounds it from above (by about t₀·Var[L]/2).
        t0 = ts[0]
        return float(max(r[0], cgf(np.array([t0]))[0] / t0)), 0.0
    if ts[j] <= 1e-4 and not lower and r.max() - r[np.isfinite(r)].min() > 1e-12 * abs(r[j]):
        # A maximum among the first orders of a ratio that is not constant (a Gaussian's
        # is, to roundoff), where a quadrature K(t) ~ t·E[L] carries roundoff of
        # ~1e-16/t relative, is that same t → 0 limit seen through noise.
        # K(t)/t is non-decreasing (convexity), so K(t')/t' at the next order t' bounds
        # the ratio on all of (0, t'] from above (by about t'·Var[L]/2).
        tn = ts[j + 1]
        return float(max(r[j], cgf(np.array([tn]))[0] / tn)), 0.0
    lo, hi = np.log(ts[max(j - 1, 0)]), np.log(ts[min(j + 1, ts.size - 1)])
    best, t_best = r[j], ts[j]
    g = (np.sqrt(5.0) - 1.0) / 2.0
    for _ in range(50):
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        ta, tb = np.exp(np.array([a, b]))
        fa, fb = cgf(np.array([ta, tb])) / (np.array([ta, tb]) * (np.array([ta, tb]) + 1.0))
        if max(fa, fb) > best:
            best, t_best = (fa, ta) if fa >= fb else (fb, tb)
        if fa > fb:
            hi = b
        else:
            lo = a
    return float(best), float(t_best)
