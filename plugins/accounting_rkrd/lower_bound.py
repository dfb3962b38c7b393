"""A certified lower bound on ε from a split-sample kernel witness and Clopper–Pearson bounds.

If the mechanism is (ε, δ)-DP, every set S satisfies P(S) <= e^ε Q(S) + δ and
Q(S) <= e^ε P(S) + δ (both datasets are neighbours of each other). For the score
test S_τ = {s > τ}, with FPR = Q(S_τ) and FNR = P(S_τ^c), this gives

    ε >= log((1 − δ − FNR)/FPR)   and   ε >= log((1 − δ − FPR)/FNR).

Procedure (after Domingo-Enrich and Mroueh 2022, arXiv:2205.13941): split each sample in two at random, a first part (a third
by default: more held-out counts buy more than a sharper witness at n = 600) and a
second part. On the first parts, learn the score: the kernel mean-difference witness
s(z) = mean_i k(z, x_i) − mean_j k(z, y_j) (RBF, median-heuristic bandwidth of the
first parts), evaluate it leave-one-out there and keep the T thresholds τ_1..τ_T
that give the largest bound there. On the second parts count false positives k_Q(τ) = #{s(y) > τ} among
m_Q and false negatives k_P(τ) = #{s(x) <= τ} among m_P, take one-sided
Clopper–Pearson upper bounds FPR_U, FNR_U at level β/(2T) each, and report

    ε_LB = max_τ max{log((1 − δ − FNR_U)/FPR_U), log((1 − δ − FPR_U)/FNR_U)}

(terms with a numerator <= 0 dropped; 0 if none is left). Score and thresholds depend
on the first parts only, so given them the second-part counts are binomial; the
union bound over the 2T intervals gives P(ε_LB > ε) <= β for every (ε, δ)-DP
mechanism (Clopper & Pearson 1934; the recipe of Jagielski et al. 2020, §3, with a
kernel witness in place of a poisoning attack).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
from scipy.special import betaincinv

from accounting.validation import check_count, check_probability, check_real

from .kernel import (
    check_bandwidth,
    check_samples,
    median_bandwidth,
    rbf,
    squared_distances,
    typical_distance,
)

__all__ = ["LowerBound", "epsilon_lower_bound", "lower_bound_from_split", "split_samples",
           "witness_bandwidth", "clopper_pearson_upper", "ratio_bounds"]

#: quantiles of the pooled first-half scores offered as candidate thresholds
_CANDIDATES = np.linspace(0.005, 0.995, 199)


def clopper_pearson_upper(k: Any, m: int, level: float) -> np.ndarray:
    """One-sided upper confidence bound for a binomial proportion: P(p > U) <= level.

    U = the (1 − level) quantile of Beta(k + 1, m − k), and 1 when k = m.
    """
    k = np.asarray(k, dtype=float)
    full = k >= m
    u = betaincinv(k + 1.0, np.where(full, 1.0, m - k), 1.0 - level)
    return np.where(full, 1.0, u)


def ratio_bounds(fpr_u: np.ndarray, fnr_u: np.ndarray, delta: float) -> np.ndarray:
    """max of the two log-ratio bounds at each threshold; −inf where both are dropped."""
    with np.errstate(divide="ignore", invalid="ignore"):
        num1, num2 = 1.0 - delta - fnr_u, 1.0 - delta - fpr_u
        e1 = np.where(num1 > 0.0, np.log(np.where(num1 > 0, num1, 1.0)) - np.log(fpr_u), -np.inf)
        e2 = np.where(num2 > 0.0, np.log(np.where(num2 > 0, num2, 1.0)) - np.log(fnr_u), -np.inf)
    return np.maximum(e1, e2)


@attrs.frozen
class LowerBound:
    """A certified lower bound on ε: P(``epsilon`` > true ε) <= ``level`` for an
    (ε, ``delta``)-DP mechanism. ``threshold`` and the rates are those of the best τ;
    ``bandwidth`` is the kernel witness's (None for other witnesses), ``witness`` names it."""

    epsilon: float
    level: float
    delta: float
    threshold: float
    fpr_upper: float
    fnr_upper: float
    false_positives: int
    false_negatives: int
    m_p: int
    m_q: int
    n_thresholds: int
    bandwidth: float | None
    witness: str = "kernel mean difference"

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def epsilon_lower_bound(x: Any, y: Any, *, delta: float, level: float = 0.05,
                        n_thresholds: int = 3, bandwidth: float | None = None,
                        split_seed: int = 0, train_fraction: float = 1.0 / 3.0) -> LowerBound:
    """Certified ε lower bound at confidence 1 − ``level`` from x ~ M(D), y ~ M(D′).

    ``split_seed`` fixes the random halving (it must not depend on the data);
    ``bandwidth`` is the witness's RBF bandwidth (default: median of the first
    parts' cross distances); ``n_thresholds`` is T; ``train_fraction`` the first part.
    """
    x, y = check_samples(x, y)
    xa, xb, ya, yb = split_samples(x, y, train_fraction=train_fraction, seed=split_seed)
    return lower_bound_from_split(xa, ya, xb, yb, delta=delta, level=level,
                                  n_thresholds=n_thresholds, bandwidth=bandwidth)


def split_samples(x: np.ndarray, y: np.ndarray, *, train_fraction: float = 1.0 / 3.0,
                  seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A random split (x_a, x_b, y_a, y_b) of checked samples: the first parts hold a
    fraction ``train_fraction`` (at least 2 points each, and at least 2 left over)."""
    frac = check_real("train_fraction", train_fraction, lo=0.0, hi=1.0, lo_open=True,
                      hi_open=True)
    for name, arr in (("x", x), ("y", y)):
        if arr.shape[0] < 4:
            raise ValueError(f"{name} must hold n >= 4 samples for the split-sample bound, "
                             f"got n = {arr.shape[0]}")
    rng = np.random.default_rng(check_count("split_seed", seed, minimum=0))
    px, py = rng.permutation(x.shape[0]), rng.permutation(y.shape[0])
    hx = min(max(int(round(frac * x.shape[0])), 2), x.shape[0] - 2)
    hy = min(max(int(round(frac * y.shape[0])), 2), y.shape[0] - 2)
    return x[px[:hx]], x[px[hx:]], y[py[:hy]], y[py[hy:]]


def witness_bandwidth(xa: np.ndarray, ya: np.ndarray) -> float:
    """The median heuristic on the first parts only (the second parts must not enter)."""
    centre = 0.5 * (xa.mean(axis=0) + ya.mean(axis=0))
    return median_bandwidth(squared_distances(xa - centre, ya - centre))


def lower_bound_from_split(xa: np.ndarray, ya: np.ndarray, xb: np.ndarray, yb: np.ndarray, *,
                           delta: float, level: float = 0.05, n_thresholds: int = 3,
                           bandwidth: float | None = None) -> LowerBound:
    """The bound with the score learned on (x_a, y_a) and counted on (x_b, y_b)."""
    delta = check_real("delta", delta, lo=0.0, hi=1.0, hi_open=True)
    level = check_probability("level", level)
    t = check_count("n_thresholds", n_thresholds)
    hx, hy = xa.shape[0], ya.shape[0]
    centre = 0.5 * (xa.mean(axis=0) + ya.mean(axis=0))
    if bandwidth is not None:
        check_bandwidth(bandwidth, typical_distance(xa - centre, ya - centre))
    h = witness_bandwidth(xa, ya) if bandwidth is None else float(bandwidth)
    xa, xb, ya, yb = xa - centre, xb - centre, ya - centre, yb - centre

    def score(z: np.ndarray) -> np.ndarray:
        s: np.ndarray = rbf(z, xa, h).mean(axis=1) - rbf(z, ya, h).mean(axis=1)
        return s

    # leave-one-out on the first parts: a point's own k(z, z) = 1 would inflate it
    kxa, kya, kxya = rbf(xa, xa, h), rbf(ya, ya, h), rbf(xa, ya, h)
    sx_a = (kxa.sum(axis=1) - 1.0) / (hx - 1) - kxya.mean(axis=1)
    sy_a = kxya.mean(axis=0) - (kya.sum(axis=1) - 1.0) / (hy - 1)
    candidates = np.unique(np.quantile(np.concatenate([sx_a, sy_a]), _CANDIDATES))
    a = level / (2.0 * t)
    fit = ratio_bounds(*_rates(np.sort(sx_a), np.sort(sy_a), candidates, a), delta)
    order = np.argsort(-np.where(np.isfinite(fit), fit, -1e300), kind="stable")
    taus = np.sort(candidates[order[:t]])

    sx_b, sy_b = np.sort(score(xb)), np.sort(score(yb))
    fpr_u, fnr_u = _rates(sx_b, sy_b, taus, a)
    eps = ratio_bounds(fpr_u, fnr_u, delta)
    best = int(np.argmax(eps))
    k_q = int(sy_b.size - np.searchsorted(sy_b, taus[best], side="right"))
    k_p = int(np.searchsorted(sx_b, taus[best], side="right"))
    value = float(eps[best]) if np.isfinite(eps[best]) and eps[best] > 0.0 else 0.0
    return LowerBound(value, level, delta, float(taus[best]), float(fpr_u[best]),
                      float(fnr_u[best]), k_q, k_p, sx_b.size, sy_b.size, t, h)


def _rates(sx: np.ndarray, sy: np.ndarray, taus: np.ndarray,
           a: float) -> tuple[np.ndarray, np.ndarray]:
    """Clopper–Pearson upper bounds on FPR = Q(s > τ) and FNR = P(s <= τ) from sorted scores."""
    k_q = sy.size - np.searchsorted(sy, taus, side="right")
    k_p = np.searchsorted(sx, taus, side="right")
    return clopper_pearson_upper(k_q, sy.size, a), clopper_pearson_upper(k_p, sx.size, a)
