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
  the smaller of the two is taken. With an exact base CGF a third bound holds between
  integers (``taylor_remove_bound``): with n = ⌊α⌋, f = α − n ∈ (0, 1) and any odd d,
  the degree-d Taylor polynomial of the concave y^f at 1 lies above it on y > 0 (its
  Lagrange remainder f(f − 1)⋯(f − d) ξ^{f−d−1}(y − 1)^{d+1}/(d + 1)! has d negative
  factors and an even power), so y^α ≤ y^n Σ_{j≤d} C(f, j)(y − 1)^j, a polynomial whose
  mean is a combination of the exact central moments E_Q₀(X − 1)^k, k ≤ n + d. It
  carries the exact expansion of E[Y^α] − 1 in q through q^d, where the chord is off by
  a fixed fraction of its q² term (33 % for the discrete Gaussian at q = 0.01, α = 1.5).
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

import functools
import math
from collections.abc import Callable

import numpy as np
from scipy.special import gammaln, logsumexp

from accounting.numerics.loss import LossPMF
from accounting.vocabulary import Direction, FloatArray

__all__ = ["law_cgf", "remove_cgf_bound", "add_cgf_bound", "taylor_remove_bound",
           "central_moments", "MAX_BINOMIAL_ORDER", "MAX_TAYLOR_ORDER", "TAYLOR_DEGREES"]

#: largest integer order α at which the binomial expansion is summed
MAX_BINOMIAL_ORDER = 512
#: largest ⌊α⌋ at which ``taylor_remove_bound`` is tried (it needs the central moments
#: to order ⌊α⌋ + 7; beyond, the chord of neighbouring integer orders is within
#: ~f(1 − f)/α² of K), and the odd degrees d of its majorant of y^f
MAX_TAYLOR_ORDER = 64
TAYLOR_DEGREES = (3, 5, 7)
#: relative accuracy assumed of an exact base CGF's values (``central_moments``)
BASE_CGF_ULPS = 64
#: the machine epsilon eps = 2^-52 of float64 (twice the unit roundoff)
_EPS = np.finfo(float).eps

BaseCGF = Callable[[FloatArray], FloatArray]


def _log_y(log_x: FloatArray, q: float) -> FloatArray:
    """log(1 − q + qX) from log X (X = 0 allowed as −∞; q = 1 allowed)."""
    lq1 = np.log1p(-q) if q < 1 else -np.inf
    result: FloatArray = np.logaddexp(lq1, np.log(q) + log_x)
    return result


def law_cgf(law: LossPMF, q: float, t: FloatArray, direction: Direction) -> FloatArray:
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


def _joint_convexity(base_cgf: BaseCGF, q: float, t: FloatArray) -> FloatArray:
    """log((1 − q) + q e^{K₀(t)}): E[Y^p] ≤ (1 − q)·1 + q·E[X^p] for a convex power p."""
    with np.errstate(over="ignore"):
        k0 = np.asarray(base_cgf(t), dtype=float)
    lq1 = np.log1p(-q) if q < 1 else -np.inf
    result: FloatArray = np.logaddexp(lq1, np.log(q) + k0)
    return result


def _binomial_log_moment(order: int, q: float, base_k: FloatArray) -> float:
    """Upper bound on log E_Q₀[Y^α] = log Σ_ℓ C(α,ℓ)(1−q)^{α−ℓ} q^ℓ M_ℓ at an integer
    α = ``order`` ≥ 2, M₀ = M₁ = 1, M_ℓ = e^{K₀(ℓ−1)} (``base_k[j]`` = K₀(j)).

    Summed as A − 1 = Σ_{ℓ≥2} C(α,ℓ)(1−q)^{α−ℓ} q^ℓ (M_ℓ − 1) (the binomial weights sum
    to one), terms ≥ 0 with log(M_ℓ − 1) = K₀ + log(1 − e^{−K₀}), then K = log1p(A − 1):
    a sum ≈ 1 taken through its logarithm would lose the tiny K's relative accuracy
    (−7e-9 relative for the discrete Gaussian at σ = 50, q = 1e-4, α = 2). Each K₀ is
    raised by ``BASE_CGF_ULPS`` ulps; each term's logarithm is within 16 u of the sum of
    its components' sizes, the sum within (α + 2) u (Higham, Accuracy and Stability,
    §4.2); the result is raised by both, so it is ≥ the exact sum.
    """
    ell = np.arange(2, order + 1)
    k0 = np.asarray(base_k[1:order], dtype=float)
    k0 = np.maximum(k0 + BASE_CGF_ULPS * _EPS * np.abs(k0), 0.0)
    lq1 = np.log1p(-q) if q < 1 else -np.inf
    # exact integers, each rounded once to float and once by the log
    log_coef = np.log([float(math.comb(order, int(i))) for i in ell])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rest = np.where(order - ell > 0, (order - ell) * lq1, 0.0)
        log_em1 = k0 + np.log(-np.expm1(-k0))
        terms = log_coef + rest + ell * math.log(q) + log_em1
    if np.isnan(terms).any() or np.isposinf(terms).any():
        return np.inf
    shift = float(terms.max())
    if shift == -np.inf:
        return 0.0
    live = np.isfinite(terms)
    with np.errstate(invalid="ignore", over="ignore"):
        # |terms − shift| rounds by u(|terms| + |shift|): the shift is counted in the size
        size = np.where(live, 1.0 + np.abs(log_coef) + np.abs(rest) + ell * abs(math.log(q))
                        + 2.0 * np.abs(k0) + np.abs(log_em1) + abs(shift), 0.0)
        scaled = np.where(live, np.exp(terms - shift) * (1.0 + 16.0 * _EPS * size), 0.0)
    log_excess = shift + math.log(float(scaled.sum()) * (1.0 + (order + 2) * _EPS))
    return float(np.logaddexp(0.0, log_excess) * (1.0 + 8.0 * _EPS))


@functools.lru_cache(maxsize=8)
def _binomial_table(top: int) -> FloatArray:
    """C(k, i) for 0 ≤ i, k ≤ top as floats (exact integers, rounded once)."""
    table = np.zeros((top + 1, top + 1))
    for k in range(top + 1):
        table[k, :k + 1] = [float(math.comb(k, i)) for i in range(k + 1)]
    table.flags.writeable = False
    return table


def central_moments(log_moments: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(ν, err): ν_k = E_Q₀(X − 1)^k for k = 0..N from ``log_moments[i]`` = log E_Q₀[X^i]
    (i = 0..N, exact, E X = 1 so ν₁ = 0), and a bound on each ν_k's error.

    ν_k = Σ_i C(k, i)(−1)^{k−i}(E X^i − 1), the shifts E X^i − 1 taken by expm1 so that a
    small spread keeps its accuracy. The error bound assumes each log E X^i within
    ``BASE_CGF_ULPS`` ulps of itself and adds the sum's roundoff (N + 2)·u·Σ|terms|
    (Higham, Accuracy and Stability, §4.2); moments beyond the float range give ν = ±∞
    or NaN, which callers treat as no bound.
    """
    lm = np.asarray(log_moments, dtype=float)
    top = lm.size - 1
    binom = _binomial_table(top)
    sign = np.where((np.arange(top + 1)[:, None] - np.arange(top + 1)[None, :]) % 2 == 0,
                    1.0, -1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        em1 = np.expm1(lm)
        d_em1 = _EPS * np.abs(em1) + (1.0 + np.abs(em1)) * np.expm1(BASE_CGF_ULPS * _EPS * np.abs(lm))
        nu = (binom * sign) @ em1
        err = binom @ d_em1 + (top + 2) * _EPS * (binom @ np.abs(em1))
    nu[0], err[0] = 1.0, 0.0
    return nu, err


def taylor_remove_bound(log_moments: FloatArray, q: float, t: FloatArray,
                        degrees: tuple[int, ...] = TAYLOR_DEGREES) -> FloatArray:
    """Upper bound on the forward K(t) = log E_Q₀[Y^{1+t}], Y = 1 − q + qX, at fractional
    orders α = 1 + t, from the exact moments ``log_moments[i]`` = log E_Q₀[X^i], i = 0..N
    (module docstring: y^α ≤ y^n Σ_{j≤d} C(f, j)(y − 1)^j for y > 0, n = ⌊α⌋, f = α − n,
    d odd). With ν_k = E_Q₀(X − 1)^k (``central_moments``),

      E[Y^α] − 1 ≤ Σ_{k=2}^{n+d} c_k q^k ν_k,   c_k = Σ_{j ≤ d} C(f, j) C(n, k − j),

    the smallest over ``degrees`` with n + d ≤ N taken, raised by its roundoff and the
    moments' error bounds; +∞ where no degree fits, a moment overflows, or at integer t.
    """
    t = np.asarray(t, dtype=float)
    flat = np.ravel(t)
    out = np.full(flat.shape, np.inf)
    alpha = 1.0 + flat
    n = np.floor(alpha)
    f = alpha - n
    top = np.asarray(log_moments).size - 1
    use = (f > 0) & (n + min(degrees) <= top) & (flat > 0)
    if not use.any() or not 0.0 < q <= 1.0:
        return out.reshape(t.shape)
    nu, nu_err = central_moments(log_moments)
    binom = _binomial_table(top)
    k = np.arange(top + 1, dtype=float)
    lq = math.log(q)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        qk = np.exp(k * lq)
        qk_rel = (2.0 + k * (1.0 + abs(lq))) * _EPS          # exp of a rounded k·log q
    ni, fu = n[use].astype(int), f[use]
    best = np.full(ni.shape, np.inf)
    for d in degrees:
        fits = ni + d <= top
        if not fits.any():
            continue
        # C(f, j) for j = 0..d by the recursion C(f, j) = C(f, j − 1)(f − j + 1)/j
        cf = np.ones((ni.size, d + 1))
        for j in range(1, d + 1):
            cf[:, j] = cf[:, j - 1] * (fu - j + 1.0) / j
        # c_k = Σ_j C(f, j) C(n, k − j): row n of the binomial table shifted by j
        c = np.zeros((ni.size, top + 1))
        cabs = np.zeros((ni.size, top + 1))
        rows = binom[np.minimum(ni, top)]
        for j in range(d + 1):
            shifted = np.zeros_like(rows)
            shifted[:, j:] = rows[:, :top + 1 - j]
            c += cf[:, j:j + 1] * shifted
            cabs += np.abs(cf[:, j:j + 1]) * shifted
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            terms = c[:, 2:] * (qk[2:] * nu[2:])[None, :]
            size = cabs[:, 2:] * (qk[2:] * np.abs(nu[2:]))[None, :]
            excess = terms.sum(axis=1)
            err = (np.abs(c[:, 2:]) * (qk[2:] * nu_err[2:])[None, :]).sum(axis=1) \
                + (size * ((4.0 * d + 8.0) * _EPS + qk_rel[2:])[None, :]).sum(axis=1) \
                + (top + 2) * _EPS * np.abs(terms).sum(axis=1)
            upper = excess + err
            ok = fits & np.isfinite(upper) & (upper > -1.0)
            bound = np.where(ok, np.log1p(np.where(ok, upper, 0.0)) * (1.0 + 4.0 * _EPS), np.inf)
        best = np.minimum(best, bound)
    out[use] = best
    return out.reshape(t.shape)


def remove_cgf_bound(base_forward: BaseCGF, q: float, t: FloatArray, *,
                     exact_base: bool = False) -> FloatArray:
    """Upper bound on the forward (remove) K(t) from the base's forward CGF K₀: the
    binomial sums at integer orders, the smaller of their chord and joint convexity
    between, and with an exact K₀ (``exact_base``) also ``taylor_remove_bound``."""
    t = np.asarray(t, dtype=float)
    flat = np.ravel(t)
    jensen = _joint_convexity(base_forward, q, flat)
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
    frac = (flat > 0) & (flat != np.floor(flat)) & (flat < MAX_TAYLOR_ORDER)
    if exact_base and q < 1 and frac.any():
        top = int(np.floor(1.0 + flat[frac].max())) + max(TAYLOR_DEGREES)
        with np.errstate(over="ignore"):
            k_ints = np.asarray(base_forward(np.arange(1.0, top)), dtype=float)
        if np.all(np.isfinite(k_ints[:1])):
            log_moments = np.concatenate([[0.0, 0.0], k_ints])   # log E X^i, i = 0..top
            out[frac] = np.minimum(out[frac], taylor_remove_bound(log_moments, q, flat[frac]))
    return np.where(flat == 0, 0.0, out).reshape(t.shape)


def _taylor_add_bound(log_moments: FloatArray, q: float, t: FloatArray, order: int) -> FloatArray:
    """log of the order-(2k+1) Taylor bound on E[Y^{−t}], k = ``order``.

    With m_j = E(Y − 1)^j = q^j Σ_i C(j,i)(−1)^{j−i} E_Q₀[X^i] (m₁ = 0) and the rising
    factorial (t)_j, f(y) = y^{−t} has f^{(j)}(1)/j! = (−1)^j (t)_j/j! and an odd
    remainder that is ≤ 0 for y ≥ 1 and ≤ (t)_{2k+1}/(2k+1)!·(1−q)^{−t−2k−1}·q·(y−1)^{2k}
    for 1 − q ≤ y < 1, so E[Y^{−t}] ≤ Σ_{j≤2k} (−1)^j (t)_j/j!·m_j + that term.
    ``log_moments[i]`` = log E_Q₀[X^i] for i = 0..2k (exact, so the signed sums are; the
    error bounds of ``central_moments`` raise the sum).
    """
    top = 2 * order
    central, central_err = central_moments(log_moments[:top + 1])
    central[1] = 0.0
    central[top] = max(central[top], 0.0) + central_err[top]     # an even moment: ≥ 0
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
        moment_err = np.abs(coef[:, 2:]) * (q ** np.arange(2, top + 1) * central_err[2:])[None, :]
        excess = np.sum(parts, axis=1) + rem + np.sum(moment_err, axis=1)
        excess = excess + 8.0 * (top + 2) * np.finfo(float).eps * (np.sum(np.abs(parts), axis=1) + rem)
    ok = np.isfinite(excess) & (excess > -1.0)
    return np.where(ok, np.log1p(np.where(ok, excess, 0.0)), np.inf)


def add_cgf_bound(base_forward: BaseCGF, base_backward: BaseCGF, q: float,
                  t: FloatArray, *, exact_base: bool = False) -> FloatArray:
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
