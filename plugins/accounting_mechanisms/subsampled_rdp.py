"""Rényi curves of a subsampled pair from the base pair's own primitives.

The subsampled pair is (P, Q) = ((1 − q)Q₀ + qP₀, Q₀) (Mironov, Talwar, Zhang 2019, arXiv:1908.10530, §3). With the
likelihood ratio X = dP₀/dQ₀ and Y = 1 − q + qX = dP/dQ, both directions are
expectations under Q₀ of a power of Y:

  forward (remove)  K(t) = log E_Q₀[Y^{1+t}],
  backward (add)    K(t) = log E_Q₀[Y^{−t}].

Three routes, from the most to the least informative base:

* ``law_cgf`` — the base is a finite (or truncated-exactly) loss law: both
  expectations are finite sums, exact at every real t.
* ``remove_cgf_bound`` — only the base's forward CGF K₀ is known: at an integer
  order α = 1 + t the binomial expansion of Y^α has non-negative terms, so
  E_Q₀[Y^α] = Σ_ℓ C(α, ℓ)(1 − q)^{α−ℓ} q^ℓ E_Q₀[X^ℓ] with E_Q₀[X^ℓ] = e^{K₀(ℓ−1)}
  (ℓ ≥ 2) and E_Q₀[X] ≤ 1 is an upper bound that is exact when P₀ ≪ Q₀ (Zhu and
  Wang 2019, "Poisson subsampled Rényi DP", Thm 6, tight form; Mironov, Talwar,
  Zhang 2019 for the Gaussian). Between integers K is convex, so the chord through
  the neighbouring integer orders bounds it (K(0) = 0 closes the first chord).
  Joint convexity, E[Y^α] ≤ (1 − q) + q E_Q₀[X^α], bounds every real order too;
  the smaller of the two is taken.
* ``add_cgf_bound`` — the add direction has no finite expansion. Two bounds, the
  smaller taken: joint convexity of y ↦ y^{−t}, E[Y^{−t}] ≤ (1 − q) + q e^{K₀ᵇ(t)}
  with K₀ᵇ the base's backward CGF; and a third-order Taylor bound derived here.
  Since Y ≥ 1 − q and f(y) = y^{−t} has f''' < 0, the Lagrange remainder of order 3
  is ≤ 0 for y ≥ 1 and ≤ t(t+1)(t+2)(1−q)^{−t−3} q (y−1)²/6 for 1 − q ≤ y < 1, so
  E[Y^{−t}] ≤ 1 + t q m + q² χ² · t(t+1)/2 · [1 + (t+2) q (1−q)^{−t−3}/3],
  where χ² = E_Q₀[(X − 1)²] = e^{K₀(1)} − 1 + 2m and m = P₀(Q₀ = 0) (zero whenever
  K₀(1) is finite). Its leading term t(t+1)q²χ²/2 is the exact small-q behaviour.
  With an exact base CGF the same argument at orders 5, 7 and 9 uses the signed
  central moments of X (``_taylor_add_bound``), tighter at moderate t.

The bounds are sound for any base whose CGF is exact or an upper bound; they are
labelled ``Exactness.UPPER``. Orders above ``MAX_BINOMIAL_ORDER`` use joint
convexity alone (the binomial sums would cost O(α²)).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.special import gammaln, logsumexp

from accounting.vocabulary import Direction
from accounting.numerics.loss import LossPMF

__all__ = ["law_cgf", "remove_cgf_bound", "add_cgf_bound", "MAX_BINOMIAL_ORDER"]

#: largest integer order α at which the binomial expansion is summed
MAX_BINOMIAL_ORDER = 512

BaseCGF = Callable[[np.ndarray], np.ndarray]


def _log_y(log_x: np.ndarray, q: float) -> np.ndarray:
    """log(1 − q + qX) from log X (X = 0 allowed as −∞; q = 1 allowed)."""
    lq1 = np.log1p(-q) if q < 1 else -np.inf
    return np.logaddexp(lq1, np.log(q) + log_x)


def law_cgf(law: LossPMF, q: float, t: np.ndarray, direction: Direction) -> np.ndarray:
    """Exact K(t) of the subsampled pair from the base's forward loss law.

    The law gives P₀-masses p_l at losses l = log X and P₀(X = ∞) = m; the Q₀-masses
    are e^{−l}p_l and Q₀(X = 0) = 1 − Σ e^{−l}p_l. Forward is +∞ for t > 0 when m > 0.
    """
    t = np.asarray(t, dtype=float)
    with np.errstate(divide="ignore"):
        log_qmass = np.log(law.masses) - law.losses
    q_zero = max(-np.expm1(logsumexp(log_qmass)), 0.0) if log_qmass.size else 1.0
    if q_zero > 0:
        log_qmass = np.append(log_qmass, np.log(q_zero))
        log_x = np.append(law.losses, -np.inf)
    else:
        log_x = law.losses
    ly = _log_y(log_x, q)
    power = (1.0 + t) if direction is Direction.FORWARD else -t
    power = np.ravel(power)[:, None]
    with np.errstate(invalid="ignore"):
        # Y^0 = 1 even where Y = 0 (q = 1, X = 0), so a zero power keeps the mass alone
        terms = np.where(power == 0, log_qmass[None, :], log_qmass[None, :] + power * ly[None, :])
    out = logsumexp(terms, axis=1).reshape(t.shape)
    if direction is Direction.FORWARD and law.inf_mass > 0:
        out = np.where(t > 0, np.inf, out)
    return np.where(t == 0, 0.0, out)


def _joint_convexity(base_cgf: BaseCGF, q: float, t: np.ndarray) -> np.ndarray:
    """log((1 − q) + q e^{K₀(t)}): E[Y^p] ≤ (1 − q)·1 + q·E[X^p] for a convex power p."""
    with np.errstate(over="ignore"):
        k0 = np.asarray(base_cgf(t), dtype=float)
    lq1 = np.log1p(-q) if q < 1 else -np.inf
    return np.logaddexp(lq1, np.log(q) + k0)


def _binomial_log_moment(order: int, q: float, base_k: np.ndarray) -> float:
    """log Σ_ℓ C(α,ℓ)(1−q)^{α−ℓ} q^ℓ M_ℓ with M₀ = M₁ = 1, M_ℓ = e^{K₀(ℓ−1)}."""
    ell = np.arange(order + 1)
    log_m = np.concatenate([[0.0, 0.0], base_k[1:order]])
    lq1 = np.log1p(-q) if q < 1 else -np.inf
    with np.errstate(invalid="ignore"):
        coef = gammaln(order + 1) - gammaln(ell + 1) - gammaln(order - ell + 1)
        terms = coef + np.where(order - ell > 0, (order - ell) * lq1, 0.0) + ell * np.log(q) + log_m
    return float(logsumexp(np.where(np.isnan(terms), -np.inf, terms)))


def remove_cgf_bound(base_forward: BaseCGF, q: float, t: np.ndarray) -> np.ndarray:
    """Upper bound on the forward (remove) K(t) from the base's forward CGF K₀."""
    t = np.asarray(t, dtype=float)
    flat = np.ravel(t)
    jensen = _joint_convexity(base_forward, q, flat)
    lq1 = np.log1p(-q) if q < 1 else -np.inf
    top = int(min(np.ceil(flat.max(initial=0.0)), MAX_BINOMIAL_ORDER - 1))
    out = jensen.copy()
    if top >= 1:
        ints = np.arange(1, top + 1, dtype=float)
        with np.errstate(over="ignore"):
            k_ints = np.asarray(base_forward(ints), dtype=float)   # K₀(1..top)
        base_k = np.concatenate([[0.0], k_ints])                   # index j → K₀(j)
        table = np.array([0.0] + [_binomial_log_moment(n + 1, q, base_k) for n in range(1, top + 1)])
        inside = flat <= top
        lo = np.floor(np.where(inside, flat, 0.0)).astype(int)
        hi = np.minimum(lo + 1, top)
        frac = np.where(inside, flat, 0.0) - lo
        with np.errstate(invalid="ignore"):
            chord = np.where(frac == 0, table[lo], (1 - frac) * table[lo] + frac * table[hi])
        out = np.where(inside, np.minimum(chord, jensen), jensen)
    return np.where(flat == 0, 0.0, out).reshape(t.shape)


def _taylor_add_bound(log_moments: np.ndarray, q: float, t: np.ndarray, order: int) -> np.ndarray:
    """log of the order-(2k+1) Taylor bound on E[Y^{−t}], k = ``order``.

    With m_j = E(Y − 1)^j = q^j Σ_i C(j,i)(−1)^{j−i} E_Q₀[X^i] (m₁ = 0) and the rising
    factorial (t)_j, f(y) = y^{−t} has f^{(j)}(1)/j! = (−1)^j (t)_j/j! and an odd
    remainder that is ≤ 0 for y ≥ 1 and ≤ (t)_{2k+1}/(2k+1)!·(1−q)^{−t−2k−1}·q·(y−1)^{2k}
    for 1 − q ≤ y < 1, so E[Y^{−t}] ≤ Σ_{j≤2k} (−1)^j (t)_j/j!·m_j + that term.
    ``log_moments[i]`` = log E_Q₀[X^i] for i = 0..2k (exact, so the signed sums are).
    """
    top = 2 * order
    # E(X − 1)^j through E X^i − 1 = expm1(log E X^i), which keeps small shifts accurate
    em1 = np.expm1(log_moments[:top + 1])
    central = np.zeros(top + 1)
    for j in range(2, top + 1):
        i = np.arange(j + 1)
        sign = np.where((j - i) % 2 == 0, 1.0, -1.0)
        binom = np.exp(gammaln(j + 1) - gammaln(i + 1) - gammaln(j - i + 1))
        central[j] = max(float(np.sum(sign * binom * em1[i])), 0.0) if j % 2 == 0 else \
            float(np.sum(sign * binom * em1[i]))
    t = t[:, None]
    j = np.arange(top + 2)[None, :]
    log_rising = gammaln(t + j) - gammaln(t) - gammaln(j + 1)       # log (t)_j/j!
    lq1 = np.log1p(-q)
    with np.errstate(over="ignore", invalid="ignore"):
        coef = np.exp(log_rising[:, :top + 1]) * np.where(j[:, :top + 1] % 2 == 0, 1.0, -1.0)
        parts = coef[:, 2:] * (q ** np.arange(2, top + 1) * central[2:])[None, :]
        rem = np.exp(log_rising[:, top + 1] - (t[:, 0] + top + 1) * lq1) * q * q ** top * central[top]
        # E[Y^{-t}] − 1 summed apart from the 1 and taken through log1p (a tiny K keeps its
        # relative accuracy), raised by its roundoff so the bound stays an upper bound
        excess = np.sum(parts, axis=1) + rem
        excess = excess + 8.0 * (top + 2) * np.finfo(float).eps * (np.sum(np.abs(parts), axis=1) + rem)
    ok = np.isfinite(excess) & (excess > -1.0)
    return np.where(ok, np.log1p(np.where(ok, excess, 0.0)), np.inf)


def add_cgf_bound(base_forward: BaseCGF, base_backward: BaseCGF, q: float,
                  t: np.ndarray, *, exact_base: bool = False) -> np.ndarray:
    """Upper bound on the backward (add) K(t): the smallest of joint convexity with the
    base's backward CGF, (1 − q)^{−t}, and Taylor bounds of orders 3, 5, 7, 9 (the
    higher ones need signed moments, so only with an exact base CGF)."""
    t = np.asarray(t, dtype=float)
    flat = np.ravel(t)
    jensen = _joint_convexity(base_backward, q, flat)
    lq1 = np.log1p(-q) if q < 1 else -np.inf
    trivial = -flat * lq1 if q < 1 else np.full(flat.shape, np.inf)
    out = np.minimum(jensen, trivial)
    orders = (1, 2, 3, 4) if exact_base else (1,)
    pos = flat > 0
    if q < 1 and pos.any():
        with np.errstate(over="ignore"):
            k_ints = np.asarray(base_forward(np.arange(1.0, 2 * orders[-1])), dtype=float)
        log_moments = np.concatenate([[0.0, 0.0], k_ints])   # log E X^i, i = 0..2k; E X = 1
        for k in orders:
            if not np.all(np.isfinite(log_moments[:2 * k + 1])):
                break
            out[pos] = np.minimum(out[pos], _taylor_add_bound(log_moments, q, flat[pos], k))
    return np.where(flat == 0, 0.0, out).reshape(t.shape)
