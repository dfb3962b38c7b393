"""The f-DP analysis of the one-run audit (Mahloujifar, Melis, Chaudhuri, arXiv:2410.22235).

Claim: the training run is f-DP with respect to each canary's inclusion, in both
directions, for a symmetric trade-off function f (Dong, Roth, Su, arXiv:1905.02383,
§ 2). The game is that of arXiv:2305.08846 (``guesses``): m canaries included with
probability 1/2 each, exactly r guesses, C of them correct. The test asks whether
P[C ≥ c] ≥ ``level`` is possible under the claim; if not, the observation C = c
rejects the claim at that level (arXiv:2410.22235, § 4–5, the recursion of its
guessing-game theorem). The argument, written out because this module relies on it:

1. One canary (arXiv:2410.22235, § 4). A guess T ∈ {in, out, abstain} of a canary
   included w.p. 1/2, made from an output that is f-DP in both directions, is right
   with probability a and wrong with probability b where a ≤ 1 − f(b): with
   α₁ = P[T = in | out], α₀ = P[T = out | in], a ≤ 1 − (f(α₁) + f(α₀))/2 ≤ 1 − f(b),
   b = (α₀ + α₁)/2, by convexity of f. Equivalently b ≥ F(a) := f⁻¹(1 − a) (= f(1 − a),
   f being symmetric); F is convex and increasing.
2. Levels. Let p_l = P[C = l], R_i = Σ_{l≥i} l p_l / m and H_i = Σ_{l≥i} (r − l) p_l / m
   (correct and wrong guesses on the event C ≥ i, per canary). For canary j and the
   guess "T_j if the other canaries have at least i − 1 right, else abstain" (a
   post-processing of the output once the other inclusions are fixed), right means
   C ≥ i and T_j right; wrong means C ≥ i − 1 and T_j wrong. Step 1 for every j and
   every value of the other inclusions, then Jensen (F convex): H_{i−1} ≥ F(R_i).
3. The smallest mass. Under the claim, with P[C ≥ c] ≥ level, moving the mass above c
   down to c keeps the constraints i ≤ c and R_0 + H_0, so R_c = level·c/m,
   H_c = level·(r − c)/m may be assumed (more mass only raises both). Going down from
   i = c − 1, the least mass p_i with H_i ≥ F(R_{i+1}) raises H by (r − i)p_i/m and R
   by i·p_i/m. This greedy sequence stays below every feasible one in both R and H
   (induction, with D_i = ΔR − i/(r − i)·ΔH ≥ 0 and i/(r − i) decreasing in i).
   Since Σ_l p_l = 1 means R_0 + H_0 = r/m exactly, a greedy R_0 + H_0 > r/m is a
   contradiction: the claim is rejected. (For the (ε, δ) curve, piecewise linear, the
   greedy value equals the optimum of the linear programme: tests/plugins/test_onerun.py.)

Families (the ε reported is always labelled with its family):

* ``gdp``: G_μ, F(a) = Φ(Φ⁻¹(a) − μ) (arXiv:1905.02383, Def. 2.7). The audit finds the
  largest μ rejected and reports ε_μ(δ), the ε at δ of μ-GDP (Balle–Wang profile,
  arXiv:1805.06530, Thm 8): "not μ-GDP", i.e. no Gaussian mechanism with ε(δ) at most
  that value behaves like this run. It is *not* a statement about (ε, δ)-DP.
* ``eps-delta``: f_{ε,δ}(x) = max(0, 1 − δ − e^ε x, e^{−ε}(1 − δ − x))
  (arXiv:1905.02383, Prop. 2.5), F(a) = max(0, 1 − δ − e^ε(1 − a), e^{−ε}(a − δ)):
  rejecting it says the run is not (ε, δ)-DP.
* a whole claimed curve (``curve_blow_up``: a registered mechanism or any curve of the
  library, read on its sound side in both directions): f is replaced by a convex
  minorant h, the lower convex hull of the points (α_i, f(α_{i+1})) on a fine grid
  (geometric near 0), which lies below f everywhere since f decreases; step 1 holds
  for h in both directions and F(a) = h⁻¹(1 − a) with h⁻¹(y) = inf{x : h(x) ≤ y}.
  Rejecting it says the run does not satisfy that curve.

The search evaluates the recursion for a whole vector of parameters at once (numpy),
on a coarse grid and then on a fine one inside the bracket; the parameter reported
is a rejected grid point (from below), never the unrejected end.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

from accounting_mechanisms.gaussian import gaussian_delta

__all__ = ["FAMILIES", "rejects", "least_mass", "largest_rejected", "gdp_epsilon",
           "blow_up", "curve_blow_up", "MU_MAX", "EPS_MAX"]

FAMILIES = ("gdp", "eps-delta")
#: the largest μ (GDP) and ε (eps-delta) searched
MU_MAX = 60.0
EPS_MAX = 36.0

Blowup = Callable[[np.ndarray], np.ndarray]


def blow_up(family: str, params: np.ndarray, delta: float) -> Blowup:
    """F(a) = f⁻¹(1 − a) of the family's curve at each parameter (vectorised over both)."""
    params = np.asarray(params, dtype=float)
    if family == "gdp":
        def gdp(a: np.ndarray) -> np.ndarray:
            with np.errstate(divide="ignore"):
                return np.asarray(ndtr(ndtri(np.clip(a, 0.0, 1.0)) - params))
        return gdp
    if family == "eps-delta":
        e_up = np.exp(np.minimum(params, 700.0))
        e_down = np.exp(-params)

        def eps_delta(a: np.ndarray) -> np.ndarray:
            a = np.clip(a, 0.0, 1.0)
            first = 1.0 - delta - e_up * (1.0 - a)
            return np.asarray(np.maximum(0.0, np.maximum(first, e_down * (a - delta))))
        return eps_delta
    raise ValueError(f"family must be one of {', '.join(FAMILIES)}, got {family!r}")


def curve_blow_up(beta: Callable[[np.ndarray], np.ndarray], points: int = 3000) -> Blowup:
    """F(a) = h⁻¹(1 − a) for the convex minorant h of a claimed trade-off curve β (module
    doc), β(α) vectorised on [0, 1], decreasing, with β(0) <= 1."""
    alpha = np.concatenate(([0.0], np.geomspace(1e-15, 1.0, points)))
    b = np.clip(np.asarray(beta(alpha), dtype=float), 0.0, 1.0)
    if not np.all(np.isfinite(b)):
        raise ValueError("claim: the curve's β is not finite on [0, 1]")
    # each cell's value at its right end: a step function below β (β decreases)
    xs, ys = alpha[:-1], np.minimum.accumulate(b)[1:]
    xs, ys = np.append(xs, 1.0), np.append(ys, ys[-1])
    hull: list[int] = []
    for k in range(xs.size):                         # lower hull, monotone chain
        while len(hull) >= 2:
            i, j = hull[-2], hull[-1]
            if (ys[j] - ys[i]) * (xs[k] - xs[i]) >= (ys[k] - ys[i]) * (xs[j] - xs[i]):
                hull.pop()
            else:
                break
        hull.append(k)
    hx, hy = xs[hull], ys[hull]
    # h decreases along the hull: its inverse reads the points backwards
    inv_y, inv_x = hy[::-1], hx[::-1]

    def curve(a: np.ndarray) -> np.ndarray:
        y = 1.0 - np.clip(a, 0.0, 1.0)
        x = np.interp(y, inv_y, inv_x)
        # above h(0) every x qualifies (inf = 0); below min h none does (F = 1, the most)
        return np.asarray(np.where(y >= hy[0], 0.0, np.where(y < hy[-1], 1.0, x)))
    return curve


def rejects(F: Blowup, m: int, r: int, c: int, level: float, size: int) -> np.ndarray:
    """For each of ``size`` claims (F vectorised over them): does C = c correct of r
    guesses among m canaries reject it at ``level``? (steps 2–3 of the module doc)."""
    return np.asarray(least_mass(F, m, r, c, level, size) > 1.0 + 1e-12)


def least_mass(F: Blowup, m: int, r: int, c: int, level: float, size: int) -> np.ndarray:
    """The least total probability Σ_l P[C = l] = (R_0 + H_0)·m/r the claim needs for
    P[C ≥ c] ≥ ``level`` (step 3 of the module doc); above 1 the claim is rejected.
    The recursion stops early once every claim needs more than 1."""
    if not 0 <= c <= r <= m:
        raise ValueError(f"need 0 <= correct <= guesses <= m, got {c}, {r}, {m}")
    R = np.full(size, level * c / m)
    H = np.full(size, level * (r - c) / m)
    cap = r / m
    for i in range(c - 1, -1, -1):
        need = np.maximum(H, F(R))
        grow = need - H
        if not grow.any():
            break          # no mass at this level: nothing changes below it either
        R = R + (i / (r - i)) * grow
        H = need
        if np.all(R + H > cap * (1.0 + 1e-12)):
            break
    return np.asarray((R + H) / cap)


def largest_rejected(family: str, m: int, r: int, c: int, level: float, delta: float,
                     rounds: int = 3, points: int = 48) -> float:
    """The largest family parameter (μ or ε) rejected: a rejected grid point, 0 when none
    is. Each round refines the bracket by a factor points − 1, so three rounds of 48
    points resolve the range [0, top] to top/47³ (6e-4 for μ, 4e-4 for ε)."""
    top = MU_MAX if family == "gdp" else EPS_MAX
    lo, hi = 0.0, top
    best = 0.0
    for _ in range(rounds):
        grid = np.linspace(lo, hi, points)
        rej = rejects(blow_up(family, grid, delta), m, r, c, level, points)
        if not rej.any():
            return best
        # rejection is monotone in the parameter: the rejected ones are a prefix
        j = int(np.flatnonzero(rej)[-1])
        best = float(grid[j])
        if j == points - 1:
            return best
        lo, hi = grid[j], grid[j + 1]
    return best


def gdp_epsilon(mu: float, delta: float) -> float:
    """ε_μ(δ): the ε at which μ-GDP's privacy profile equals δ (0 if it is below δ at
    ε = 0); increasing in μ. The root is returned from below (never above ε_μ(δ) by
    more than the solver's 1e-12): the audit's bound must not be over-reported."""
    if mu <= 0.0 or float(gaussian_delta(mu, np.asarray(0.0))) <= delta:
        return 0.0
    hi = max(1.0, mu * mu)
    while float(gaussian_delta(mu, np.asarray(hi))) > delta:
        hi *= 2.0
    root = float(brentq(lambda e: float(gaussian_delta(mu, np.asarray(e))) - delta, 0.0, hi,
                        xtol=1e-12))
    return max(0.0, root - 2e-12)
