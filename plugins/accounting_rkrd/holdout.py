"""The split-sample witness test: choose a witness on the training part, count on the rest.

For a claimed symmetric trade-off function f (``claims``) and a set S, a = Q(S) and
b = P(Sᶜ) satisfy b ≥ f(a) and a ≥ f(b) under the claim. Procedure:

1. On the training part only, every candidate witness (``witnesses``) gets
   out-of-sample scores. For each, thresholds τ are tried and the held-out outcome is
   predicted by plugging the training rates into the held-out sizes; the candidate
   with the strongest prediction is chosen, with its thresholds τ_1..τ_T.
2. On the held-out part, count k_Q(τ) = #{s(y) > τ} among m_Q and
   k_P(τ) = #{s(x) ≤ τ} among m_P and take one-sided Clopper–Pearson upper bounds
   a_U, b_U at level β/(2T) each (Bonferroni over the 2T intervals, the one
   multiple-testing correction).
3. Reject at τ when b_U < f(a_U) or a_U < f(b_U): since f is non-increasing,
   a ≤ a_U and b ≤ b_U give b_U ≥ b ≥ f(a) ≥ f(a_U) under the claim.

Witness, thresholds and T depend on the training part only, so given it the held-out
counts are binomial and P(reject) ≤ β under the claim, whichever witness was chosen
(the recipe of Jagielski et al. 2020, arXiv:2006.07709, §3, with chosen witnesses).

Thresholds. For an (ε, δ) claim, T (default 2) thresholds with the best predicted
bound, spread by at least a factor 2 in predicted rates; the report gives
ε_LB = max_τ max{log((1 − δ − b_U)/a_U), log((1 − δ − a_U)/b_U)} (0 if none is
positive), and ε_LB > ε is the same event as a rejection. For a curve claim, the
thresholds at the training quantiles of a geometric grid of rates 2^{−k} down to the
resolution 1/m of the held-out counts, on each side (small FPR and small FNR), so the
claim is tested at every FPR the counts can resolve.

The detectable ε is the bound a perfect witness would reach (no error counted on
either side): log((1 − δ − b_U⁰)/a_U⁰) with a_U⁰, b_U⁰ the Clopper–Pearson bounds of 0
errors. No witness at these sizes and level can certify more, so a claim with ε at or
above it cannot be rejected by this audit whatever the mechanism does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from .claims import EpsDeltaClaim
from .lower_bound import clopper_pearson_upper, ratio_bounds
from .witnesses import Candidate

#: pseudo-count of the predicted rates (1 kept the paper setting's power and gave the
#: largest mean bound on the one-dimensional half-noise bug among 0, 1, 3)
_PSEUDO = 1.0

__all__ = ["ThresholdResult", "WitnessTest", "witness_test", "detectable_epsilon",
           "curve_grid_size"]


@attrs.frozen
class ThresholdResult:
    """The held-out outcome at one threshold: counts, upper bounds, the claimed β."""

    threshold: float
    false_positives: int
    false_negatives: int
    fpr_upper: float
    fnr_upper: float
    claimed_fnr: float
    beaten: bool
    epsilon_bound: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class WitnessTest:
    """Outcome of the split-sample witness test (see the module docstring).

    ``rejected`` iff some threshold beats the claim; under the claim this has
    probability at most ``level``. ``epsilon_lower_bound`` (for (ε, δ) claims) holds
    with probability >= 1 − ``level`` for every (ε, δ)-DP mechanism.
    """

    family: str
    detail: str
    n_candidates: int
    level: float
    m_p: int
    m_q: int
    rows: tuple[ThresholdResult, ...]
    epsilon_lower_bound: float | None
    detectable_epsilon: float | None
    detectable: bool
    min_fpr: float

    @property
    def rejected(self) -> bool:
        return any(r.beaten for r in self.rows)

    @property
    def beaten_fprs(self) -> list[float]:
        """Upper bounds on the FPR of every threshold where the samples beat the claim."""
        return [r.fpr_upper for r in self.rows if r.beaten]

    @property
    def best(self) -> ThresholdResult:
        """The row with the largest ε bound ((ε, δ) claims) or the first beaten row."""
        if self.epsilon_lower_bound is not None:
            # an (ε, δ) claim: every row has its ε bound
            return max(self.rows, key=lambda r: -math.inf if r.epsilon_bound is None
                       else r.epsilon_bound)
        beaten = [r for r in self.rows if r.beaten]
        return beaten[0] if beaten else self.rows[0]

    def to_dict(self) -> dict[str, Any]:
        return {"family": self.family, "detail": self.detail,
                "n_candidates": self.n_candidates, "level": self.level,
                "m_p": self.m_p, "m_q": self.m_q, "rejects": self.rejected,
                "epsilon_lower_bound": self.epsilon_lower_bound,
                "detectable_epsilon": self.detectable_epsilon,
                "detectable": self.detectable, "min_fpr": self.min_fpr,
                "beaten_fprs": self.beaten_fprs,
                "thresholds": [r.to_dict() for r in self.rows]}


def detectable_epsilon(m_p: int, m_q: int, delta: float, level_each: float) -> float:
    """The ε bound of a perfect witness: no false positive among m_Q, no false negative
    among m_P, Clopper–Pearson at ``level_each`` per interval."""
    a0 = float(clopper_pearson_upper(0, m_q, level_each))
    b0 = float(clopper_pearson_upper(0, m_p, level_each))
    value = float(ratio_bounds(np.array([a0]), np.array([b0]), delta)[0])
    return max(value, 0.0)


def curve_grid_size(m: int) -> int:
    """Rates 2^{−1}, …, 2^{−K} with 2^{−K} >= 1/m: K = floor(log2 m), at least 1."""
    return max(int(math.floor(math.log2(max(m, 2)))), 1)


def _plan_probs(n: int) -> np.ndarray:
    tail = np.geomspace(0.5 / n, 0.5, 40)
    return np.unique(np.concatenate([tail, np.linspace(0.01, 0.99, 99), 1.0 - tail]))


def _rates(sx: np.ndarray, sy: np.ndarray, taus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(#{s(y) > τ}, #{s(x) <= τ}) from sorted scores."""
    return (sy.size - np.searchsorted(sy, taus, side="right"),
            np.searchsorted(sx, taus, side="right"))


def _predicted(k: np.ndarray, n: int) -> np.ndarray:
    """A rate predicted from k errors among n training scores, shrunk away from 0 by
    a pseudo-count: a threshold with no training error is not assumed error-free."""
    return (k + _PSEUDO) / (n + 2.0 * _PSEUDO)


def _spread(order: np.ndarray, fpr: np.ndarray, fnr: np.ndarray, t: int) -> list[int]:
    """Up to ``t`` indices from ``order`` whose predicted rates differ pairwise by a
    factor >= 2 in FPR or in FNR (neighbouring thresholds would duplicate each other)."""
    lf, ln = np.log(fpr + 1e-12), np.log(fnr + 1e-12)
    chosen: list[int] = []
    for i in order:
        if all(max(abs(lf[i] - lf[j]), abs(ln[i] - ln[j])) >= math.log(2.0) for j in chosen):
            chosen.append(int(i))
        if len(chosen) == t:
            break
    return chosen


def _plan_eps(cand: Candidate, claim: EpsDeltaClaim, m_p: int, m_q: int, level_each: float,
              t: int) -> tuple[float, np.ndarray]:
    sx, sy = np.sort(cand.oos_x), np.sort(cand.oos_y)
    taus = np.unique(np.quantile(np.concatenate([sx, sy]), _plan_probs(sx.size + sy.size)))
    k_q, k_p = _rates(sx, sy, taus)
    fpr, fnr = _predicted(k_q, sy.size), _predicted(k_p, sx.size)
    # predicted held-out bounds: the training rates at the held-out sizes
    pred = ratio_bounds(clopper_pearson_upper(fpr * m_q, m_q, level_each),
                        clopper_pearson_upper(fnr * m_p, m_p, level_each), claim.delta)
    pred = np.where(np.isfinite(pred), pred, -1e300)
    order = np.argsort(-pred, kind="stable")
    idx = _spread(order, fpr, fnr, t)
    return float(pred[idx[0]]), np.sort(taus[idx])


def _grid_taus(cand: Candidate, m_p: int, m_q: int) -> np.ndarray:
    sx, sy = np.sort(cand.oos_x), np.sort(cand.oos_y)
    fprs = 2.0 ** -np.arange(1, curve_grid_size(m_q) + 1)
    fnrs = 2.0 ** -np.arange(1, curve_grid_size(m_p) + 1)
    return np.unique(np.concatenate([np.quantile(sy, 1.0 - fprs), np.quantile(sx, fnrs)]))


def _curve_strength(claim: Any, a_u: np.ndarray, b_u: np.ndarray) -> np.ndarray:
    """log of the margin by which (a_U, b_U) beats the claim (> 0: beaten), both ways."""
    with np.errstate(divide="ignore"):
        one = np.log(claim.beta(a_u)) - np.log(b_u)
        two = np.log(claim.beta(b_u)) - np.log(a_u)
    strength: np.ndarray = np.maximum(one, two)
    return strength


def _plan_curve(cand: Candidate, claim: Any, m_p: int, m_q: int,
                level_each: float) -> tuple[float, np.ndarray]:
    taus = _grid_taus(cand, m_p, m_q)
    sx, sy = np.sort(cand.oos_x), np.sort(cand.oos_y)
    k_q, k_p = _rates(sx, sy, taus)
    a_u = clopper_pearson_upper(_predicted(k_q, sy.size) * m_q, m_q, level_each)
    b_u = clopper_pearson_upper(_predicted(k_p, sx.size) * m_p, m_p, level_each)
    strength = _curve_strength(claim, a_u, b_u)
    return float(np.max(strength)), taus


def witness_test(cands: list[Candidate], xb: np.ndarray, yb: np.ndarray, *, claim: Any,
                 level: float, n_thresholds: int = 2,
                 progress: Callable[[str], None] | None = None) -> WitnessTest:
    """Choose among ``cands`` (learned on the training part) and test ``claim`` on the
    held-out part (xb, yb) at ``level``."""
    m_p, m_q = xb.shape[0], yb.shape[0]
    eps_claim = isinstance(claim, EpsDeltaClaim)
    if eps_claim:
        t = n_thresholds
    else:
        t = curve_grid_size(m_p) + curve_grid_size(m_q)
    level_each = level / (2.0 * t)
    best, best_val, best_taus = None, -math.inf, None
    for cand in cands:
        if eps_claim:
            val, taus = _plan_eps(cand, claim, m_p, m_q, level_each, t)
        else:
            val, taus = _plan_curve(cand, claim, m_p, m_q, level_each)
        if best is None or val > best_val:
            best, best_val, best_taus = cand, val, taus
    assert best is not None and best_taus is not None
    if progress is not None:
        progress(f"chose {best.family}: {best.detail}; scoring the held-out part")
    score = best.final()
    sx, sy = np.sort(score(xb)), np.sort(score(yb))
    k_q, k_p = _rates(sx, sy, best_taus)
    a_u = clopper_pearson_upper(k_q, m_q, level_each)
    b_u = clopper_pearson_upper(k_p, m_p, level_each)
    a0 = float(clopper_pearson_upper(0, m_q, level_each))
    b0 = float(clopper_pearson_upper(0, m_p, level_each))
    if eps_claim:
        bounds = ratio_bounds(a_u, b_u, claim.delta)
        beaten = bounds > claim.epsilon
        eps: list[float | None] = [float(e) for e in bounds]
        top = float(np.max(bounds))
        lb: float | None = top if math.isfinite(top) and top > 0.0 else 0.0
        det = detectable_epsilon(m_p, m_q, claim.delta, level_each)
        detectable = det > claim.epsilon
    else:
        beaten = _curve_strength(claim, a_u, b_u) > 0.0
        eps = [None] * len(best_taus)
        lb, det = None, None
        detectable = bool(_curve_strength(claim, np.array([a0]), np.array([b0]))[0] > 0.0)
    claimed = claim.beta(a_u)
    rows = tuple(ThresholdResult(float(tau), int(kq), int(kp), float(au), float(bu),
                                 float(cb), bool(bt), None if e is None else float(e))
                 for tau, kq, kp, au, bu, cb, bt, e in zip(best_taus, k_q, k_p, a_u, b_u,
                                                           claimed, beaten, eps))
    return WitnessTest(best.family, best.detail, len(cands), level, m_p, m_q, rows, lb, det,
                       bool(detectable), a0)
