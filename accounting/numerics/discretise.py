"""From a directional privacy profile on a grid to a certified pair of loss PMFs.

Both constructions work in x = e^ε, where every profile δ(x) = sup_S P(S) − x Q(S) is
convex and decreasing, with δ(0) = 1 and δ(∞) = P(L = +∞). A PMF with atoms on the
grid ε_i = i·d has a profile that is piecewise affine in x with kinks at the grid, and
its atom masses are the slope changes: m_i = x_i·(slope right of x_i − slope left).

* Pessimistic, connect-the-dots (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022,
  "Connect the dots: tighter discrete approximations of privacy loss distributions",
  PETS, Thm 3.1): the chords through (x_i, δ(x_i)) lie above the convex
  δ, so the PMF dominates the pair; the mass δ(x_n) goes to +∞.
* Optimistic, the convex minorant built here: on each interval, the secants of the
  two neighbouring intervals, extended, lie below δ (convexity). Lowering each grid
  value by the largest chord-above-support gap G of its two intervals puts every new
  chord below δ; the left end stays under the chord from (0, 1) with slope −1
  (δ(x) ≥ 1 − x) and the right end under δ(∞). Whatever small non-convexity the
  lowering leaves is removed by lowering points onto their neighbours' chords. The
  result is a convex function ≤ δ with kinks on the grid, hence a PMF dominated by
  the pair: an optimistic bound whose error is O(d²), like the pessimistic one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeAlias

import numpy as np

from accounting.numerics.loss import LossPMF, check_built_mass, check_grid_points

__all__ = ["connect_the_dots", "convex_minorant", "repay_from_below", "profile_support", "profile_sup",
           "declared_sup",
           "grid_indices", "grid_profile", "grid_profiles", "atoms_to_grid", "cut_tails"]

ProfileFn: TypeAlias = Callable[[np.ndarray], np.ndarray]
#: a direction's grid values in both representations, (δ, δ̃) (``grid_profile``)
GridValues: TypeAlias = tuple[np.ndarray, np.ndarray]
#: one representation's values at the grid points ∓ η, and η (``_gaps``' ``near``)
NearValues: TypeAlias = tuple[np.ndarray, np.ndarray, float]



def _unique_ints(a: np.ndarray) -> np.ndarray:
    """``np.unique`` of an integer array (sorted, each value once), by a sort: numpy's
    hash-based unique of integers costs ~10× more on the few hundred indices here."""
    a = np.sort(a)
    return a[np.concatenate(([True], a[1:] != a[:-1]))] if a.size else a


def grid_indices(lo: float, hi: float, step: float) -> np.ndarray:
    """Integer grid indices covering [lo, hi] with one spare point each side."""
    i_lo = int(np.floor(lo / step)) - 1
    i_hi = int(np.ceil(hi / step)) + 1
    check_grid_points(i_hi - i_lo + 1, step, f"discretising [{lo:.4g}, {hi:.4g}]")
    return np.arange(i_lo, i_hi + 1)


#: ``profile_support``'s scan, ±2^k for k = −12 … 17 and 0, then +∞ (the floor)
_SCAN = np.concatenate([-(2.0 ** np.arange(-12, 18))[::-1], [0.0], 2.0 ** np.arange(-12, 18),
                        [np.inf]])
_SCAN.setflags(write=False)


def profile_support(delta: ProfileFn, tail: float, resolution: float = 1e-6) -> float:
    """Smallest ε (to ``resolution``) with δ(ε) − δ(∞) ≤ tail: where the law is cut.

    δ is non-increasing, so a vectorised scan over ±2^k brackets the crossing and
    a few vectorised refinements narrow it (a handful of profile calls in all; δ(∞)
    comes with the scan, in the same call).
    """
    scan = _SCAN[:-1]
    values = delta(_SCAN.copy())
    floor = float(values[-1])
    above = values[:-1] - floor > tail
    if above[-1]:
        raise ValueError("the privacy profile does not decay: cannot place a grid; "
                         "the loss law looks unbounded beyond ε = 1e5")
    if not above.any():
        return float(scan[0])
    j = int(np.flatnonzero(above)[-1])       # last point above: the crossing is after it
    lo, hi = scan[j], scan[j + 1]
    while hi - lo > resolution:
        pts = np.linspace(lo, hi, 65)
        above = delta(pts) - floor > tail
        k = int(np.flatnonzero(above)[-1]) if above.any() else 0
        lo, hi = pts[k], pts[min(k + 1, 64)]
    return float(hi)


def grid_profile(indices: np.ndarray, step: float, delta: ProfileFn,
                 reverse: ProfileFn, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Values of δ on the grid in two exact representations, each accurate on its side.

    The complement identity δ_{P‖Q}(ε) = 1 − e^ε + e^ε·δ_{Q‖P}(−ε) (take complements
    of the set S in sup_S P(S) − e^ε Q(S)) lets the far-left values, which are 1 − e^ε
    plus something tiny, be carried as δ̃(ε) = e^ε·δ_{Q‖P}(−ε) without cancellation.
    Returns (δ, δ̃) with δ = 1 − e^ε + δ̃; use δ̃ for ε < 0 and δ for ε ≥ 0. With
    ``shift`` the values are taken at the grid points + shift, in the representation
    of the grid point itself.
    """
    values = grid_profiles((indices, None), step, (delta, reverse), (shift,))[0][0]
    if values is None:   # pragma: no cover - the forward grid was given
        raise AssertionError("grid values not evaluated")
    return values


def grid_profiles(indices: tuple[np.ndarray | None, np.ndarray | None], step: float,
                  profiles: tuple[ProfileFn, ProfileFn], shifts: tuple[float, ...] = (0.0,)
                  ) -> list[tuple[GridValues | None, GridValues | None]]:
    """``grid_profile`` of both directions' grids at every shift, from one call of each
    direction's profile.

    ``indices`` = (forward grid, backward grid), either None to skip it; ``profiles``
    = (δ_{P‖Q}, δ_{Q‖P}). Direction k's grid needs δ_k at i·d + s for its grid points
    i ≥ 0 and, by the complement identity, δ_{1−k} at −(i·d + s) = j·d − s (j = −i) for
    i < 0: on the usual grids [−e_{1−k}, e_k] both grids need δ_F at j·d ± s over the
    same j, and δ_B too, so each value is computed once, not twice. The points are the
    very floats ``grid_profile`` evaluates (negation is exact), so the values are the
    same as from separate calls of an elementwise profile. Returns, per shift,
    ((δ, δ̃) forward, (δ, δ̃) backward), None where the grid was.
    """
    # what each direction's profile is needed at: ranges of j at an offset, j·d + offset
    # (``left`` is a prefix of a grid, which increases)
    wanted: list[dict[float, list[tuple[int, int]]]] = [{}, {}]
    grids: list[tuple[int, np.ndarray, int, list[np.ndarray]]] = []
    for k, idx in enumerate(indices):
        if idx is None:
            continue
        nl = int(np.searchsorted(idx, 0))             # i·d < 0 for i < 0 (d ≥ MIN_STEP)
        at = idx * step
        epss = [at if s == 0.0 else at + s for s in shifts]   # x + 0.0 is x here (no −0.0)
        for s, eps in zip(shifts, epss):
            if eps[-1] > 700 or eps[0] < -700:
                raise ValueError("privacy losses beyond ±700 cannot be discretised in float64")
            if nl < idx.size:
                wanted[k].setdefault(s, []).append((int(idx[nl]), int(idx[-1])))
            if nl > 0:
                wanted[1 - k].setdefault(-s, []).append((int(-idx[nl - 1]), int(-idx[0])))
        grids.append((k, idx, nl, epss))
    # per direction: (spans (shift, first j, last j, start in the values), values)
    values: list[tuple[list[tuple[float, int, int, int]], np.ndarray] | None] = [None, None]
    for k in (0, 1):
        if not wanted[k]:
            continue
        pieces: list[np.ndarray] = []
        spans: list[tuple[float, int, int, int]] = []
        start = 0
        for s, ranges in wanted[k].items():
            merged: list[list[int]] = []
            for lo, hi in sorted(ranges):
                if merged and lo <= merged[-1][1] + 1:
                    merged[-1][1] = max(merged[-1][1], hi)
                else:
                    merged.append([lo, hi])
            for lo, hi in merged:
                pieces.append(np.arange(lo, hi + 1) * step + s)
                spans.append((s, lo, hi, start))
                start += hi - lo + 1
        vals = profiles[k](np.concatenate(pieces))
        values[k] = spans, vals

    def lookup(k: int, s: float, lo: int, hi: int) -> np.ndarray:
        evaluated = values[k]
        if evaluated is None:   # pragma: no cover - every lookup was wanted above
            raise AssertionError("grid values not evaluated")
        spans, vals = evaluated
        for off, a, b, at in spans:
            if off == s and a <= lo and hi <= b:
                return vals[at + lo - a:at + hi - a + 1]
        raise AssertionError("grid values not evaluated")   # pragma: no cover

    out: list[list[GridValues | None]] = [[None, None] for _ in shifts]
    for k, idx, nl, epss in grids:
        for n, (s, eps) in enumerate(zip(shifts, epss)):
            x = np.exp(eps)
            d = np.empty_like(eps)
            dt = np.empty_like(eps)
            # δ̃ = (δ − 1) + x right of 0, δ = (1 − x) + δ̃ left of it, in place
            if nl < idx.size:
                d[nl:] = lookup(k, s, int(idx[nl]), int(idx[-1]))
                np.subtract(d[nl:], 1.0, out=dt[nl:])
                dt[nl:] += x[nl:]
            if nl > 0:
                np.multiply(x[:nl], lookup(1 - k, -s, int(-idx[nl - 1]), int(-idx[0]))[::-1],
                            out=dt[:nl])
                np.subtract(1.0, x[:nl], out=d[:nl])
                d[:nl] += dt[:nl]
            out[n][k] = (d, dt)
    return [(o[0], o[1]) for o in out]


def _masses(v: np.ndarray, step: float, anchor: float) -> np.ndarray:
    """Slope changes (times x_i) of the piecewise-affine-in-x function with values v on
    the grid, through (x=0, anchor) on the left and flat right of the last point.

    Linear in v; affine functions of x have zero interior mass, so the same stencil
    applies to δ (anchor 1) and to δ̃ = δ − 1 + x (anchor 0).
    """
    em1 = np.expm1(step)
    m = np.empty_like(v)
    if v.size == 1:
        m[0] = anchor - v[0]
        return m
    dv = np.diff(v)
    m[0] = (anchor - v[0]) + dv[0] / em1
    m[1:-1] = (dv[1:] - np.exp(step) * dv[:-1]) / em1
    m[-1] = -np.exp(step) * dv[-1] / em1
    return m


def _profile_masses(indices: np.ndarray, step: float, d: np.ndarray,
                    dt: np.ndarray) -> np.ndarray:
    """The masses from δ̃ left of ε = 0 and from δ right of it: ``_masses`` of each
    over its own part of the grid plus the neighbour its stencil reads (the stencil
    is local, so these are the values of the whole-grid stencils)."""
    n = int(np.searchsorted(indices, 0))     # i·d < 0: the prefix i < 0 (d ≥ MIN_STEP)
    if n == 0:
        return _masses(d, step, 1.0)
    if n == d.size:
        return _masses(dt, step, 0.0)
    return np.concatenate([_masses(dt[:n + 1], step, 0.0)[:n], _masses(d[n - 1:], step, 1.0)[1:]])


#: δ values below this (near float64's underflow, 2.2e-308) do not certify that the
#: profile's computed zero past them is the end of the support (``profile_sup``)
SUP_FLOOR = 1e-290


def profile_sup(delta: ProfileFn, indices: np.ndarray, step: float, d: np.ndarray,
                guess: Callable[[], float | None] | None = None) -> float | None:
    """The largest loss of a bounded law, from its exact profile on a grid.

    When δ is exactly 0 at the top grid point (no mass at +∞, nothing above), the
    support ends where δ first vanishes: δ(ε) = E_P[(1 − e^{ε−L})₊] > 0 for every
    ε < sup L and = 0 from there on. Bisection between the last grid point with δ > 0
    and the first with δ = 0, down to adjacent floats, gives it exactly (to one ulp,
    rounded up). ``None`` when the profile does not vanish on the grid, or when it
    is below ``SUP_FLOOR`` just before it vanishes: a computed zero after a value that
    close to underflow may be an underflow, not the end of the support.

    The search is 1024-ary and vectorised (one profile call of 1023 points a round,
    about five rounds to reach adjacent floats, where a scalar bisection took ~55
    calls): it ends at the same pair of adjacent floats (a, b) with δ(a) > 0 = δ(b).
    ``guess`` (called only here, when the law is bounded) may name where the support
    ends, e.g. the pair's D_∞; one profile call around it (``_sup_near``) then
    usually settles the answer the search would give, and the search runs otherwise.
    """
    if d[-1] != 0.0:
        return None
    pos = np.flatnonzero(d > 0)
    if pos.size == 0:
        return float(indices[0] * step)
    a, b = float(indices[pos[-1]] * step), float(indices[pos[-1] + 1] * step)
    if guess is not None:
        settled, sup = _sup_near(delta, a, b, guess())
        if settled:
            return sup
    for _ in range(64):
        pts = np.unique(np.linspace(a, b, 1025)[1:-1])
        pts = pts[(pts > a) & (pts < b)]
        if pts.size == 0:
            # no float strictly between: check the floats next to a (linspace may
            # skip them when b − a is a few ulps)
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
    if float(delta(np.array([a]))[0]) < SUP_FLOOR:
        # a computed zero proves nothing where δ is already near underflow (the loss
        # may run on to its supremum with ever smaller mass, as the subsampled
        # Gaussian's does): no certified largest loss
        return None
    return b


#: floats either side of a guessed end of support that ``_sup_near`` looks at (a D_∞
#: rounded outwards by a few ulps still has the computed end among them)
_NEAR_ULPS = 16
#: points closing in on the guess from the grid point below, each 2^(−1/2) of the way
#: closer: a geometric scale in the distance to the end, on which a profile falling
#: towards 0 there (the subsampled Gaussian's, like e^{−c·log² distance}) is seen
#: passing below ``SUP_FLOOR`` (if it misses that stretch, the search runs instead;
#: it never did for q ∈ {0.003, 0.01, 0.1}, σ ∈ [0.5, 3], 900 laws)
_APPROACH = 2.0 ** (-np.arange(0, 64 * 2) / 2)


def _sup_near(delta: ProfileFn, a: float, b: float, guess: float | None
              ) -> tuple[bool, float | None]:
    """(True, what ``profile_sup``'s search returns) when one profile call at points
    near ``guess`` in (a, b) settles it, else (False, None).

    The search's premise is that δ, non-increasing, is computed so: positive up to the
    last float before its first zero, and falling. Under it, (i) a sampled value in
    (0, ``SUP_FLOOR``) at x means the search's last positive float a′ ≥ x has
    δ(a′) ≤ δ(x) < ``SUP_FLOOR``: the search answers None; (ii) a positive value at a
    sampled float followed by a zero at the very next float is the search's final
    pair, and (with (i) not met) it answers that zero's position. Samples whose signs
    are not positive-then-zero break the premise: not settled.
    """
    if guess is None or not np.isfinite(guess) or not (a < guess <= b) or guess <= 0.0:
        return False, None
    bits = np.array([guess]).view(np.int64) + np.arange(-_NEAR_ULPS, _NEAR_ULPS + 1)
    # the approach stops where its steps are below an ulp of the guess
    k = int(2 * np.log2(max((guess - a) / np.spacing(guess), 1.0))) + 2
    pts = np.concatenate([bits.view(np.float64), guess - (guess - a) * _APPROACH[:k]])
    pts = np.unique(pts)
    pts = pts[(pts > a) & (pts < b)]
    if pts.size == 0:
        return False, None
    v = delta(pts)
    positive = v > 0
    n = int(np.count_nonzero(positive))
    if n == 0 or not positive[:n].all():
        return False, None
    if (v[:n] < SUP_FLOOR).any():
        return True, None
    last = float(pts[n - 1])
    first_zero = float(pts[n]) if n < pts.size else b
    if float(np.nextafter(last, b)) == first_zero:
        return True, first_zero
    return False, None


def connect_the_dots(indices: np.ndarray, step: float, d: np.ndarray,
                     dt: np.ndarray, profile: ProfileFn | None = None,
                     sup_guess: Callable[[], float | None] | None = None) -> LossPMF:
    """Pessimistic PMF whose profile interpolates the grid values in e^ε.

    ``d``, ``dt`` from ``grid_profile``: values of the true profile (or of an upper
    bound on it that is itself a profile). With ``profile`` (the exact profile) and a
    bounded law, the PMF records the exact largest loss (``profile_sup``, which
    ``sup_guess`` may speed up) as its ``sup_loss``, which makes δ = 0 (pure DP)
    answerable exactly. A grid cut before the largest loss (δ below the tail there
    but not 0) sends δ at its top to +∞; when ``sup_guess`` — the pair's declared D_∞,
    which it certifies — is finite and the profile is 0 there and at +∞, that mass
    lies at finite losses ≤ D_∞, and the PMF records D_∞ with ``bounded``
    (``declared_sup``).
    """
    sup = profile_sup(profile, indices, step, d, sup_guess) if profile is not None else None
    bounded = False
    if sup is None and profile is not None and d[-1] > 0:
        sup = declared_sup(profile, float(indices[-1] * step), sup_guess)
        bounded = sup is not None
    m = _profile_masses(indices, step, d, dt)
    bad = m < -1e-12 * np.abs(m).max()
    if bad.any():
        # Values of a bound that is not itself convex (an RDP conversion, say): their
        # lower convex hull is still ≥ the convex true profile at every grid point,
        # hence its chords are too, and it is convex.
        left = indices * step < 0
        d, dt = _convex_hull(indices, step, left, d, dt)
        m = _profile_masses(indices, step, d, dt)
    # What is left negative is roundoff; raising it to zero raises δ below that atom,
    # so the PMF stays pessimistic, and paying it back from the masses below keeps it
    # so while keeping the total mass (``repay_from_below``).
    m = repay_from_below(m, 1.0 - float(max(d[-1], 0.0)))
    check_built_mass(m, float(max(d[-1], 0.0)), "a connect-the-dots law")
    return LossPMF.on_grid(step, int(indices[0]), m, inf_mass=float(max(d[-1], 0.0)),
                           sup_loss=sup, bounded=bounded)


def declared_sup(delta: ProfileFn, top: float,
                 guess: Callable[[], float | None] | None) -> float | None:
    """The largest loss a pair declares (``guess``: its D_∞, an upper bound it
    certifies) when it lies beyond the grid's ``top`` and the profile confirms it:
    δ(D_∞) = δ(+∞) = 0, i.e. no P-mass above D_∞ nor at +∞ (δ(ε) = E_P[(1 − e^{ε−L})₊]
    + P(L = +∞)). None otherwise (no declaration, or one the profile contradicts)."""
    value = guess() if guess is not None else None
    if value is None or not np.isfinite(value) or value <= top:
        return None
    if np.any(np.asarray(delta(np.array([value, np.inf])), dtype=float) != 0.0):
        return None
    return float(value)


def repay_from_below(m: np.ndarray, total: float = 1.0, rounds: int = 64) -> np.ndarray:
    """Masses ``m`` with each negative (roundoff of differences of profile values) set
    to 0 and paid back from the nearest positive masses at lower losses, as far as the
    sum of the masses exceeds ``total`` (the P-mass of the finite losses).

    Raising a negative −n at l_j to 0 raises δ(ε) by n(1 − e^{ε−l_j})₊ and the total
    mass by n: clipped alone, the negatives of a wide grid added up to 1e-10 of P-mass
    above 1 (δ(ε) > 1 at small ε once losses reach ±50, since then δ ≈ 1 over
    thousands of cells). Taking n off a mass at l_k ≤ l_j lowers δ by
    n(1 − e^{ε−l_k})₊ ≤ n(1 − e^{ε−l_j})₊, so δ stays at or above the interpolation of
    the grid values (the law stays pessimistic) and the total is the one the grid
    values telescope to. A few vectorised rounds, each moving what a mass cannot pay
    on to the next positive mass below; what finds none is left raised (sound).
    """
    neg = np.flatnonzero(m < 0)
    if neg.size == 0:
        return m
    owed = -m[neg]
    m = np.maximum(m, 0.0)
    # only what takes the total above ``total`` is paid back, a share of every debt:
    # the unclipped masses sum to the total only up to their own roundoff, which the
    # rest of the raise covers (δ below the support is then ≥ 1 − e^ε·Q)
    excess = math.fsum(m) - total
    if excess <= 0:
        return m
    owed = owed * min(1.0, excess / math.fsum(owed))
    return pay_debts(m, neg, owed, below=True)[0]


def pay_debts(m: np.ndarray, at: np.ndarray, owed: np.ndarray, *, below: bool,
              rounds: int = 64) -> tuple[np.ndarray, float]:
    """Masses ``m`` (≥ 0) after paying each debt ``owed[i]`` from the nearest positive
    mass below (``below``) or above index ``at[i]``; what a mass cannot pay moves on to
    the next positive mass beyond it, for up to ``rounds`` vectorised rounds. Returns
    (masses, what was left unpaid: debts that found no mass, or outlasted the rounds).
    Which side keeps a law sound is the caller's argument (``repay_from_below``,
    ``convex_minorant``)."""
    slack = 0.0
    for _ in range(rounds):
        positive = np.flatnonzero(m > 0)
        if below:
            k = np.searchsorted(positive, at, side="left") - 1
            ok = k >= 0
        else:
            k = np.searchsorted(positive, at, side="right")
            ok = k < positive.size
        slack += float(owed[~ok].sum())
        need = np.bincount(positive[k[ok]], weights=owed[ok], minlength=m.size)
        paid = np.minimum(m, need)
        m = m - paid
        left = need - paid
        at = np.flatnonzero(left > 0)
        if at.size == 0:
            return m, slack
        owed = left[at]
    return m, slack + float(owed.sum())


#: the pairs (i < j) of ``_gaps``' four lines, in order, whose crossings it tries
_PAIRS = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))


def _gaps(v: np.ndarray, step: float, x: np.ndarray, floor: float, tilde: bool,
          near: NearValues | None = None, split: int | None = None
          ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
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
    With ``split`` (and ``near``) the intervals before it are in δ̃ and the rest in δ,
    ``tilde`` aside: every quantity is per interval, so one call serves both
    representations' grids laid end to end (``convex_minorant``).
    """
    e = np.exp(step)
    em1 = np.expm1(step)
    n = v.size - 1
    chord = np.diff(v) / em1
    xi = x[:-1]
    # each line as (v_i − value at u=1, slope), so chord − line = b + (chord − a)(u − 1):
    # row k of b and a is line k
    b = np.empty((4, n))
    a = np.empty((4, n))
    if near is not None:
        v_minus, v_plus, eta = near
        a1 = (v[:-1] - v_minus[:-1]) / -np.expm1(-eta)
        a2 = (v_plus[1:] - v[1:]) / (e * np.expm1(eta))
    else:
        a1 = np.concatenate([[np.nan], chord[:-1] * e])
        a2 = np.concatenate([chord[1:] / e, [np.nan]])
    b[0] = 0.0
    a[0] = a1
    np.add(v[:-1] - v[1:], a2 * em1, out=b[1])
    a[1] = a2
    t = (n if tilde else 0) if split is None else split
    # δ̃ ≥ 0 and δ̃ ≥ x − 1 + floor (intervals before t), δ ≥ floor and δ ≥ 1 − x (after)
    b[2, :t] = v[:t]
    np.subtract(v[t:-1], floor, out=b[2, t:])
    a[2] = 0.0
    np.subtract(v[:t], xi[:t] - 1.0 + floor, out=b[3, :t])
    np.subtract(v[t:-1], 1.0 - xi[t:], out=b[3, t:])
    a[3, :t] = xi[:t]
    np.negative(xi[t:], out=a[3, t:])
    invalid = ~(np.isfinite(a) & np.isfinite(b))
    if invalid.any():
        b[invalid] = np.inf                      # a missing line never binds
        a = np.where(invalid, chord, a)
    # the candidate u − 1: both ends, then each crossing (lines i < j, in order),
    # clipped to the interval (row by row: arrays of a few rows of a long grid cost
    # more to allocate than to fill)
    us = [np.zeros(n), np.full(n, e - 1.0)]
    with np.errstate(divide="ignore", invalid="ignore"):
        for i, j in _PAIRS:
            u = 1.0 + (b[i] - b[j]) / (a[i] - a[j])
            u = np.where(np.isfinite(u), np.clip(u, 1.0, e), 1.0)
            u -= 1.0
            us.append(u)
    slope = chord - a
    best = np.zeros(n)
    work = np.empty((4, n))
    above = np.empty(n)
    for u in us:
        np.multiply(slope, u, out=work)
        work += b                                # = b + slope·u (IEEE addition commutes)
        np.min(work, axis=0, out=above)          # chord − envelope at u
        np.maximum(best, above, out=best)
    # slopes (u-units) of supports through each interval's ends, for ``_clamp``
    end_slopes = (np.where(np.isfinite(a1), a1, chord), np.where(np.isfinite(a2), a2, chord))
    return best, end_slopes


def convex_minorant(indices: np.ndarray, step: float, d: np.ndarray, dt: np.ndarray,
                    inf_floor: float = 0.0,
                    near: tuple[GridValues, GridValues, float] | None = None,
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
        m = np.maximum(_masses(d - lam, step, 1.0), 0.0)
        return LossPMF.on_grid(step, int(indices[0]), m, inf_mass=float(d[-1] - lam[-1]))
    near_t: NearValues | None = None
    near_d: NearValues | None = None
    if near is not None:
        (dm, dtm), (dp, dtp), eta = near
        near_d, near_t = (dm, dp, eta), (dtm, dtp, eta)
    x = np.exp(indices * step)
    if near is not None:
        # each interval's gap from its own representation only (δ̃ left of ε = 0, δ
        # right): with near-tangent supports an interval's lines use its two ends only,
        # so each representation is worked out on its own intervals
        k = int(np.count_nonzero(left[:-1]))      # left is a prefix: intervals [0, k)
        # both representations' grids end to end, δ̃ on [0, k] then δ on [k, n − 1],
        # in one ``_gaps`` call; the interval between the two copies of point k is
        # no interval of the grid and is dropped
        if 0 < k < n - 1:
            def joined(tilde_v: np.ndarray, v: np.ndarray) -> np.ndarray:
                return np.concatenate([tilde_v[:k + 1], v[k:]])
            g, (e1, e2) = _gaps(joined(dt, d), step, joined(x, x), inf_floor, False,
                                (joined(dtm, dm), joined(dtp, dp), eta), split=k)
            gaps = np.delete(g, k)
            ends = (np.delete(e1, k), np.delete(e2, k))
        else:
            v, nv = (dt, near_t) if k else (d, near_d)
            gaps, ends = _gaps(v, step, x, inf_floor, k > 0, nv)
    else:
        gaps_t, (a1_t, a2_t) = _gaps(dt, step, x, inf_floor, True, near_t)
        gaps_d, (a1_d, a2_d) = _gaps(d, step, x, inf_floor, False, near_d)
        gaps = np.where(left[:-1], gaps_t, gaps_d)
        ends = (np.where(left[:-1], a1_t, a1_d), np.where(left[:-1], a2_t, a2_d))
    lam = np.empty(n)
    lam[1:-1] = np.maximum(gaps[:-1], gaps[1:])
    lam[0] = max(gaps[0], dt[0])            # g_0 ≤ 1 − x_0, i.e. δ̃_0 − λ_0 ≤ 0
    lam[-1] = max(gaps[-1], d[-1] - inf_floor)
    base = _profile_masses(indices, step, d, dt)
    em1 = np.expm1(step)
    e = np.exp(step)
    gain = np.full(n, (1.0 + e) / em1)      # ∂m_i/∂λ_i
    gain[0] = 1.0 + 1.0 / em1
    gain[-1] = e / em1

    def lowered_masses(lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lowered = _masses(lam, step, 0.0)
        m = base - lowered
        # below this size a negative mass is roundoff of the subtraction: booked as slack
        tol = 1e-12 * (np.abs(base) + np.abs(lowered)) + 1e-300
        return m, m < -tol

    lowered = _masses(lam, step, 0.0)
    m = base - lowered
    tol = 1e-12 * (np.abs(base) + np.abs(lowered)) + 1e-300
    lam = _local_passes(lam, base, gain, m, m < -tol, step, max_passes)
    # Keep it a profile, then convex: what the local passes leave is a wave running
    # into a tail (the end constraints make kinks there), which the hull removes; the
    # hull only lowers points, and a hull of non-negative points stays non-negative.
    lam = _clamp(lam, np.where(left, dt, d), left, step, ends)
    m, bad_mask = lowered_masses(lam)
    if bad_mask.any():
        g, gt = _convex_hull(indices, step, left, d - lam, dt - lam)
        lam = np.where(left, dt - gt, d - g)
    m = base - _masses(lam, step, 0.0)
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
        m, slack = pay_debts(m, negative, owed, below=False)
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
    return LossPMF.on_grid(step, int(indices[0]), m, inf_mass=inf_mass, slack=slack)


def _local_passes(lam: np.ndarray, base: np.ndarray, gain: np.ndarray, m: np.ndarray,
                  bad: np.ndarray, step: float, passes: int) -> np.ndarray:
    """``convex_minorant``'s local passes: λ after up to ``passes`` rounds that each
    lower every point whose mass m = base − masses(λ) is negative beyond roundoff
    (``bad``) by −m/gain, onto its neighbours' chord.

    A pass changes λ only at bad points, and a mass depends on λ at its own point and
    its two neighbours, so after k passes λ has changed only within k − 1 points of
    the first bad ones and the masses within k: the passes run on the window of
    points within ``passes`` + 1 of them (the stencil of every mass recomputed has
    both neighbours inside), as Python floats (the same IEEE double arithmetic, term
    for term, as ``_masses``), recomputing only the masses next to a change — the
    values a full recomputation gives. On the usual grids the bad points are a few at
    each end, where numpy's per-call cost was most of each pass.
    """
    at = np.flatnonzero(bad)
    if at.size == 0 or passes <= 0:
        return lam
    n = lam.size
    reach = passes + 1
    # the window: points within ``reach`` of a bad one (merged ranges, in order)
    lo = np.maximum(at - reach, 0)
    hi = np.minimum(at + reach, n - 1)
    starts = np.flatnonzero(np.concatenate(([True], lo[1:] > hi[:-1] + 1)))
    ends = np.append(starts[1:] - 1, at.size - 1)
    idx = np.concatenate([np.arange(a, b + 1) for a, b in zip(lo[starts].tolist(),
                                                               hi[ends].tolist())])
    w = idx.size
    lw, bw, gw, mw = lam[idx].tolist(), base[idx].tolist(), gain[idx].tolist(), m[idx].tolist()
    first = 0 if idx[0] == 0 else -1             # local position of grid point 0, if in
    last = w - 1 if idx[-1] == n - 1 else -1     # and of the last grid point
    e = float(np.exp(step))
    em1 = float(np.expm1(step))
    bad_now = set(np.searchsorted(idx, at).tolist())
    for _ in range(passes):
        if not bad_now:
            break
        at_w = sorted(bad_now)
        for j in at_w:
            lw[j] = lw[j] + (-mw[j] / gw[j])
        near = {j + k for j in at_w for k in (-1, 0, 1)}
        for j in near:
            if j < 0 or j >= w:
                continue
            if j == first:
                low = (0.0 - lw[j]) + (lw[j + 1] - lw[j]) / em1
            elif j == last:
                low = -e * (lw[j] - lw[j - 1]) / em1
            else:
                low = ((lw[j + 1] - lw[j]) - e * (lw[j] - lw[j - 1])) / em1
            mj = bw[j] - low
            mw[j] = mj
            if mj < -(1e-12 * (abs(bw[j]) + abs(low)) + 1e-300):
                bad_now.add(j)
            else:
                bad_now.discard(j)
    lam = lam.copy()
    lam[idx] = lw
    return lam


def _convex_hull(indices: np.ndarray, step: float, left: np.ndarray, g: np.ndarray,
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
    h = _hull_vertices(xs, yd, yt, lf)
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


#: a hull pass with at most this many points to test runs on linked neighbours in
#: Python (``_linked_passes``): numpy's per-call cost is most of a pass that small
_HULL_SMALL = 64


def _drop_and_retest(cand: np.ndarray, drop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``cand`` without the sorted positions ``drop``, and the positions to test next:
    only the points whose neighbours changed (next to a drop) — no other test can come
    out differently, so the drops are exactly those of full passes."""
    cand = np.delete(cand, drop)
    after = drop - np.arange(drop.size)         # new position of the point after each
    test = _unique_ints(np.concatenate([after - 1, after]))
    return cand, test[(test >= 1) & (test <= cand.size - 2)]


def _hull_vertices(xs: np.ndarray, yd: np.ndarray, yt: np.ndarray,
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
    wider each time it has to be repeated. Passes with few points to test (all but
    the first, on a profile convex but near its ends) run in ``_linked_passes``: the
    same tests on the same floats, the same drops.
    """
    cand = np.arange(xs.size)
    margin = 32
    if cand.size < 3:
        return cand
    # the first pass tests every point but the ends against its grid neighbours (the
    # gathers of the later passes are slices here)
    left = lf[2:]
    ya = np.where(left, yt[:-2], yd[:-2])
    yb = np.where(left, yt[1:-1], yd[1:-1])
    yc = np.where(left, yt[2:], yd[2:])
    with np.errstate(invalid="ignore"):
        above = (yb - ya) * (xs[2:] - xs[:-2]) >= (yc - ya) * (xs[1:-1] - xs[:-2])
    if not above.any():
        return cand
    drop = np.flatnonzero(above) + 1
    gone = drop
    cand, test = _drop_and_retest(cand, drop)
    if test.size == 0:
        return cand
    passes = 7
    while True:
        while passes > 0:
            if cand.size < 3:
                return cand
            if test.size <= _HULL_SMALL:
                cand, test, gone, passes, done = _linked_passes(cand, test, passes,
                                                                xs, yd, yt, lf)
                if done:
                    return cand
                continue
            passes -= 1
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
            cand, test = _drop_and_retest(cand, drop)
            if test.size == 0:
                return cand
        i0 = max(int(np.searchsorted(cand, gone.min())) - margin, 0)
        i1 = min(int(np.searchsorted(cand, gone.max())) + margin, cand.size)
        chained = _chain(cand[i0:i1], xs, yd, yt, lf)
        cand = np.concatenate([cand[:i0], chained, cand[i1:]])
        ends = np.array([i0 - 1, i0, i0 + chained.size - 1, i0 + chained.size])
        test = _unique_ints(ends[(ends >= 1) & (ends <= cand.size - 2)])
        margin *= 4
        passes = 8


def _linked_passes(cand: np.ndarray, test: np.ndarray, passes: int, xs: np.ndarray,
                   yd: np.ndarray, yt: np.ndarray, lf: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, bool]:
    """Up to ``passes`` of ``_hull_vertices``' passes over the kept points ``cand``,
    testing the positions ``test``, on links between kept neighbours instead of a
    compacted array.

    Each pass makes the very test of the vectorised pass (the same expression on the
    same floats: Python floats are IEEE doubles, and inf − inf gives NaN, which
    tests false, as there), drops what tests on or above its chord all at once, and
    tests next the kept neighbours of the drops except the two ends. It stops when a
    pass drops nothing, nothing is left to test, fewer than three points are kept,
    the passes run out, or more than ``_HULL_SMALL`` points are to be tested.
    Returns (kept points, positions in them to test, the last pass's drops, passes
    left, whether the hull is done).
    """
    last = cand.size - 1
    prv: dict[int, int] = {}
    nxt: dict[int, int] = {}
    dead: set[int] = set()
    size = cand.size
    todo: list[int] = test.tolist()
    gone: list[int] = []
    done = False
    at, x, y_d, y_t, lft = cand.item, xs.item, yd.item, yt.item, lf.item
    while passes > 0:
        if size < 3:
            done = True
            break
        passes -= 1
        drops = []
        for p in todo:
            ia, ib, ic = at(prv.get(p, p - 1)), at(p), at(nxt.get(p, p + 1))
            y = y_t if lft(ic) else y_d
            ya, xa = y(ia), x(ia)
            if (y(ib) - ya) * (x(ic) - xa) >= (y(ic) - ya) * (x(ib) - xa):
                drops.append(p)
        if not drops:
            done = True
            break
        dead.update(drops)
        touched = set()
        for d in drops:
            lo = prv.get(d, d - 1)
            while lo in dead:
                lo = prv.get(lo, lo - 1)
            hi = nxt.get(d, d + 1)
            while hi in dead:
                hi = nxt.get(hi, hi + 1)
            nxt[lo] = hi
            prv[hi] = lo
            touched.add(lo)
            touched.add(hi)
        size -= len(drops)
        gone = drops
        touched.discard(0)
        touched.discard(last)
        todo = sorted(touched)
        if not todo:
            done = True
            break
        if len(todo) > _HULL_SMALL:
            break
    removed = np.array(sorted(dead), dtype=np.intp)
    kept = np.delete(cand, removed) if removed.size else cand
    todo_at = np.array(todo, dtype=np.intp)
    return (kept, todo_at - np.searchsorted(removed, todo_at), cand[np.array(gone, dtype=np.intp)],
            passes, done)


def _chain(idx: np.ndarray, xs: np.ndarray, yd: np.ndarray, yt: np.ndarray,
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


def _clamp(lam: np.ndarray, v: np.ndarray, left: np.ndarray, step: float,
           ends: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Keep the minorant a profile: g = v − λ ≥ 0 (δ ≥ 0 on the right, δ ≥ 1 − x on
    the left), without letting a chord rise above δ.

    Where g would be negative it is raised to 0. A chord ending at such a point is
    below the support through the interval's other end if that support is ≥ 0 there
    and ≥ the neighbour's value at its own end: so the neighbour is lowered to
    v_k − v_i ∓ a·(e^d − 1), a the slope (u-units) of the support through point i. The
    loop stops when nothing is negative (it moves inward only while δ is ≈ 0).
    """
    a1, a2 = ends
    em1 = np.expm1(step)
    n = v.size
    lam = lam.copy()
    for _ in range(n):
        neg = np.flatnonzero(v - lam < 0)
        if neg.size == 0:
            break
        lam[neg] = v[neg]
        k = neg[neg >= 1] - 1            # interval (k, k+1): lower point k
        lam[k] = np.maximum(lam[k], v[k] - v[k + 1] + a2[k] * em1)
        k = neg[neg <= n - 2]            # interval (k, k+1): lower point k+1
        lam[k + 1] = np.maximum(lam[k + 1], v[k + 1] - v[k] - a1[k] * em1)
    return lam


def cut_tails(law: LossPMF, tail: float, pessimistic: bool
              ) -> tuple[np.ndarray, np.ndarray, float]:
    """(losses, masses, mass at +∞) of a law of finitely many atoms (at least one)
    with its tails of P-mass ``tail`` moved: pessimistic, the atoms above the top tail
    go to +∞ and the P-mass below the bottom tail onto the lowest kept atom (both only
    raise δ); optimistic, the top tail goes down onto the highest kept atom and the
    bottom tail is dropped (both only lower δ)."""
    l, m = law.losses, law.masses
    cum = np.cumsum(m)
    top = np.append(np.cumsum(m[::-1])[::-1][1:], 0.0)     # P-mass strictly above atom j
    j_hi = int(np.searchsorted(-top, -tail, side="left"))    # first atom with ≤ tail above
    j_lo = int(np.searchsorted(cum, tail, side="right"))     # atoms below carry ≤ tail
    j_lo = min(j_lo, j_hi)
    w = m[j_lo:j_hi + 1].copy()
    inf_mass = law.inf_mass
    if pessimistic:
        w[0] += float(cum[j_lo - 1]) if j_lo > 0 else 0.0
        inf_mass = min(1.0, inf_mass + float(top[j_hi]))
    else:
        w[-1] += float(top[j_hi])
    return l[j_lo:j_hi + 1], w, inf_mass


def atoms_to_grid(law: LossPMF, step: float, tail: float, pessimistic: bool) -> LossPMF:
    """A law of finitely many atoms moved onto the grid i·``step``, exactly.

    Pessimistic: each atom goes up to the nearest grid point at or above it, and the
    atoms above the top ``tail`` of P-mass go to +∞; optimistic: each goes down, and
    the top ``tail`` is moved down onto the cut. δ(ε) = E_P[(1 − e^{ε−L})₊] + P(L = ∞)
    has a non-decreasing integrand in L, so raising losses (keeping P-masses; the
    Q-mass p·e^{−l} given up goes to Q's atom at −∞) raises δ at every ε and the
    result dominates the law; lowering them gives a dominated one. The P-mass below
    the bottom ``tail`` is moved up onto the cut (pessimistic) or dropped (optimistic:
    less P-mass, smaller δ). Unlike the profile route there are no differences of
    profile values, hence no roundoff-sized negative masses to book as slack (which
    cost the optimistic side of 1e5 randomized responses 2e-9 of δ).
    """
    if law.losses.size == 0:
        return LossPMF.on_grid(step, 0, np.zeros(1), law.inf_mass, sup_loss=law.sup_loss)
    l, w, inf_mass = cut_tails(law, tail, pessimistic)
    if pessimistic:
        idx = np.ceil(l / step)
        idx = np.where(idx * step < l, idx + 1, idx)
    else:
        idx = np.floor(l / step)
        idx = np.where(idx * step > l, idx - 1, idx)
    idx = idx.astype(np.int64)
    check_grid_points(int(idx[-1] - idx[0]) + 1, step, "the loss law on the grid")
    masses = np.bincount(idx - idx[0], weights=w)
    check_built_mass(masses, inf_mass, "a loss law moved onto the grid")
    sup = law.max_loss if law.inf_mass == 0 and np.isfinite(law.max_loss) else None
    return LossPMF.on_grid(step, int(idx[0]), masses, inf_mass, sup_loss=sup)
