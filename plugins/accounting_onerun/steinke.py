"""The (ε, δ) analysis of the one-run audit (Steinke, Nasr, Jagielski, arXiv:2305.08846).

Theorem 3.1 of arXiv:2305.08846 (§ 3): if the training run is (ε, δ)-DP with respect to
each canary's inclusion, the canaries are included independently with probability
1/2, and the auditor makes r guesses (a post-processing of the output), then the
number W of correct guesses satisfies, for every v,

    P[W ≥ v] ≤ β + 2mδ · α,   β = P[Bin(r, q) ≥ v],  q = e^ε / (1 + e^ε),
    α = max_{1 ≤ i ≤ v} P[v − i ≤ Bin(r, q) < v] / i.

The right-hand side is the p-value of the observation v under the (ε, δ) claim; it
increases with ε (the binomial tail with q, the δ term through the tail sums), so the
claims rejected at level ``level`` are those with ε below one root, found here by
bisection, and the lower bound reported is the bracket's rejected end (never above
the root). Everything is exact binomial arithmetic (scipy's ``binom`` tails, in
float64), not a normal approximation.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from scipy.stats import binom

__all__ = ["p_value", "epsilon_lower_bound", "EPS_MAX"]

#: the largest ε searched: beyond it the guess accuracy q = 1 − e^{−ε}/(1+e^ε) is 1 in float64
EPS_MAX = 36.0


def p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """P[W ≥ v] bounded under (ε, δ)-DP (Theorem 3.1 of arXiv:2305.08846), capped at 1."""
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got v = {v}, r = {r}, m = {m}")
    if v == 0:
        return 1.0
    q = float(expit(epsilon))
    beta = float(binom.sf(v - 1, r, q))
    if delta == 0.0:
        return min(beta, 1.0)
    i = np.arange(1, v + 1)
    # P[v − i ≤ Bin < v] = P[Bin ≥ v − i] − P[Bin ≥ v]: the tails, never a sum of pmfs
    between = binom.sf(v - i - 1, r, q) - beta
    alpha = float(np.max(between / i))
    return min(beta + 2.0 * m * delta * alpha, 1.0)


def epsilon_lower_bound(m: int, r: int, v: int, delta: float, level: float,
                        tol: float = 1e-6) -> float:
    """The largest ε (to ``tol``, from below) whose (ε, δ) claim the observation v of r
    guesses rejects at ``level``: 0 when even ε = 0 is not rejected."""
    if p_value(m, r, v, 0.0, delta) > level:
        return 0.0
    lo, hi = 0.0, 1.0
    while hi < EPS_MAX and p_value(m, r, v, hi, delta) <= level:
        lo, hi = hi, min(2.0 * hi, EPS_MAX)
    if p_value(m, r, v, hi, delta) <= level:
        return hi
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if p_value(m, r, v, mid, delta) <= level:
            lo = mid
        else:
            hi = mid
    return lo


