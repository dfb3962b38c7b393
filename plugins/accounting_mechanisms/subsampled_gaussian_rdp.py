"""Rényi divergences of the Poisson-subsampled Gaussian mechanism: certified bounds
(the pair's default curve) and a numerical quadrature.

Source: I. Mironov, K. Talwar, L. Zhang, "Rényi Differential Privacy of the
Sampled Gaussian Mechanism", arXiv:1908.10530 (2019), §3.3.

With sensitivity 1 and noise standard deviation ``sigma`` (at sensitivity 1 it is also
the noise multiplier z = σ/Δ; callers with Δ ≠ 1 pass z)::

    mu0 = N(0, sigma^2),   mu1 = N(1, sigma^2),   mu = (1 - q) mu0 + q mu1,

and, for a real order ``lam``,

    A_lam = E_{mu0}[(mu/mu0)^lam]
          = ∫ phi_sigma(x) ((1 - q) + q exp((2x - 1) / (2 sigma^2)))^lam dx.

The two directions of the Rényi divergence of order ``alpha > 1`` are

    D_alpha(mu || mu0) = log A_alpha       / (alpha - 1)   ("remove", rdp_remove)
    D_alpha(mu0 || mu) = log A_{1 - alpha} / (alpha - 1)   ("add",    rdp_add)

the second because E_mu[(mu0/mu)^alpha] = E_{mu0}[(mu/mu0)^(1 - alpha)].

Method
------
* Integer ``alpha`` (remove direction): the binomial expansion of §3.3,
  A_alpha = sum_{i=0}^{alpha} C(alpha, i) q^i (1-q)^(alpha-i) exp((i^2 - i)/(2 sigma^2)),
  summed in log space.  It is exact and needs no quadrature.
* Every other order (fractional ``alpha`` and all of ``rdp_add``): adaptive
  Gauss-Legendre quadrature of A_lam - 1 in log space.  The published
  fractional-order series (and the Opacus / TF Privacy ``_compute_log_a_frac``
  that sums its terms in absolute value) is not used: its generalised binomial
  coefficients alternate in sign, and summing absolute values overestimates
  A_alpha or fails to converge.

Certified bounds (``remove_cgf_upper``/``_lower``, ``add_cgf_upper``/``_lower``) on
K(t) = log A at alpha = 1 + t, labelled ``Exactness.UPPER`` by the pair. g(lam) = log A_lam
is convex in lam (a cumulant generating function), so:
* remove, upper: exact binomial sums at integer orders; between them the smallest of
  the chord of the neighbouring integer values, the §3.3 fractional series with a
  proven remainder and roundoff bound (``_series_bracket``, alpha < 64, summed in log
  space so that A beyond the float range stays finite; above, the chord is within
  ~1e-4), and the Taylor majorant of ``subsampled_rdp`` with the Gaussian's exact
  moments (``_taylor_k``: tight where A - 1 is tiny);
* remove, lower: tangent extrapolations of the neighbouring chords, the series'
  lower end, and a data-processing (coarsened pair) bound;
* add, upper: min of the chord-in-r bound on a partition (``_chord_log_a_add``) and
  the Taylor / joint-convexity bounds of ``subsampled_rdp`` with the Gaussian's
  exact CGF; add, lower: the data-processing bound.
Every value is moved outward by a stated roundoff margin.

The quadrature below (``log_a``, ``rdp_remove``, ``rdp_add``) is a numerical estimate
(~1e-13 relative by an a-posteriori error estimate, not a proof).

Why A - 1 rather than A: for small q or large sigma, D_alpha is tiny and
log A = log1p(A - 1), so a relative error in A would be amplified by
1/(A - 1).  Writing ell = log(mu/mu0) and using E_{mu0}[e^ell - 1] = 0,

    A_lam - 1 = E_{mu0}[F_lam(ell)],   F_lam(ell) = e^(lam ell) - 1 - lam (e^ell - 1),

and F_lam >= 0 whenever lam > 1 or lam < 0 (convexity of t -> t^lam), so the
quadrature sums non-negative terms without cancellation.  With
E1(y) = e^y - 1 - y >= 0 the integrand is evaluated as a sum of non-negative
pieces, each with an accurate logarithm:

    lam = 1 + g > 1:  F = e^ell (g E1(-ell) + E1(g ell))
    lam < 0:          F = E1(lam ell) + |lam| E1(ell)
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings
from typing import Any

import numpy as np
from scipy.special import gammaln, gammasgn, log_ndtr, logsumexp

from accounting.curves.rdp import T_MAX
from accounting.vocabulary import ArrayLike, FloatArray

from . import subsampled_rdp as _bounds

__all__ = ["log_a", "rdp_remove", "rdp_add", "remove_cgf_upper", "remove_cgf_lower",
           "add_cgf_upper", "add_cgf_lower", "log_mixture_ratio", "log_power_excess"]

# Target relative accuracy of the quadrature sum A - 1.  The error estimate
# (one Gauss-Legendre rule against the same rule on the two halves) bounds the
# error of the coarser rule, so the returned, finer value is far more accurate.
_RTOL = 1e-13
_GL_ORDER = 16
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(_GL_ORDER)
_MAX_DEPTH = 40
# Screening cells (width sigma/2) merged into one initial quadrature panel.
_PANEL_CELLS = 4
# Gaussian tails beyond this many sigma weigh less than exp(-800); see
# _log_a_quadrature for why all mass lies in [min(0, lam), max(1, lam)] +- this.
_TAIL_SIGMAS = 40.0
# Panels whose end-point log-integrand is this far below the maximum contribute
# less than exp(-90) each; they are dropped after screening.
_NEGLIGIBLE_LOG = 90.0
# Taylor coefficients 1/(k+2)! of (e^y - 1 - y)/y^2, used where |y| < 1/2 and
# the closed form would cancel; 14 terms reach double precision there
# (the first term left out is below 2e-16 of the sum at |y| = 1/2).
_E1_COEF = np.array([1.0 / math.factorial(k + 2) for k in range(14)])
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


# --------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------

def _check_scalar(name: str, value: Any) -> float:
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} ({value!r})")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite real number, got {x}")
    return x


def _check_q(q: Any) -> float:
    x = _check_scalar("q", q)
    if not 0.0 < x <= 1.0:
        raise ValueError(f"q (sampling probability) must be in (0, 1], got {x}")
    return x


def _check_sigma(sigma: Any) -> float:
    x = _check_scalar("sigma", sigma)
    if not x > 0.0:
        raise ValueError(f"sigma (noise standard deviation at sensitivity 1) must be finite and > 0, got {x}")
    return x


def _check_alphas(alphas: Any) -> np.ndarray:
    raw = np.asarray(alphas)
    if raw.dtype.kind not in "iuf":
        raise TypeError(
            f"alphas must be a real number or an array of real numbers, got "
            f"{type(alphas).__name__} with dtype {raw.dtype}")
    arr = raw.astype(float)
    if np.isnan(arr).any():
        raise ValueError("alphas must be real orders in (1, inf), got NaN")
    if not (arr > 1.0).all() or not np.isfinite(arr).all():
        bad = arr[~((arr > 1.0) & np.isfinite(arr))]
        raise ValueError(f"alphas must be finite orders > 1, got {bad.ravel()[0]}")
    _check_order_cap(arr - 1.0, "alphas")
    return arr


def _check_order_cap(t: np.ndarray, name: str) -> None:
    """Refuse t = α − 1 above ``T_MAX``: the integer-order sums hold α terms (memory
    in proportion to α), and the order searches never ask beyond t = 1e5."""
    big = t > T_MAX
    if np.any(big):
        value = float(np.asarray(t)[big].ravel()[0])
        raise ValueError(f"{name}: the subsampled Gaussian's Rényi curve is answered at "
                         f"orders t = α − 1 up to {T_MAX:g} (α up to {1.0 + T_MAX:.10g}): "
                         f"its binomial sums need memory in proportion to α; got order "
                         f"α = {1.0 + value:.10g} (t = {value:.10g})")


# --------------------------------------------------------------------------
# Accurate elementary pieces
# --------------------------------------------------------------------------

def _log_e1(y: np.ndarray) -> np.ndarray:
    """log(e^y - 1 - y), accurate to a few ulp for every real y (−inf at y = 0)."""
    y = np.asarray(y, dtype=float)
    out = np.empty_like(y)
    small = np.abs(y) < 0.5
    pos = y >= 0.5
    neg = y <= -0.5
    ys = y[small]
    series = np.full_like(ys, _E1_COEF[-1])
    for c in _E1_COEF[-2::-1]:
        series = series * ys + c
    with np.errstate(divide="ignore"):
        out[small] = 2.0 * np.log(np.abs(ys)) + np.log(series)
    yp = y[pos]
    # Factor out e^y so that huge y (large order times large log-ratio) stays finite.
    out[pos] = yp + np.log1p(-(1.0 + yp) * np.exp(-yp))
    yn = y[neg]
    out[neg] = np.log(np.expm1(yn) - yn)
    return out


def _log_ratio(x: np.ndarray, q: float, sigma: float) -> np.ndarray:
    """ell(x) = log(mu(x)/mu0(x)) = log((1 - q) + q exp((2x - 1)/(2 sigma^2)))."""
    return log_mixture_ratio((2.0 * x - 1.0) / (2.0 * sigma * sigma), q)


def log_mixture_ratio(big_l: np.ndarray, q: float) -> np.ndarray:
    """log((1 - q) + q e^L) for an array of base losses L and 0 < q < 1: the loss of the
    Poisson-subsampled pair at an outcome where the base pair's loss is L."""
    big_l = np.asarray(big_l, dtype=float)
    near = np.abs(big_l) <= 1.0
    out = np.empty_like(big_l)
    # Near L = 0, ell is small and must keep full relative accuracy (F ~ ell^2).
    out[near] = np.log1p(q * np.expm1(big_l[near]))
    # Elsewhere log-space avoids overflow of e^L and, for q close to 1, the
    # loss of the tiny 1 - q when forming 1 + q (e^L - 1).
    out[~near] = np.logaddexp(math.log1p(-q), math.log(q) + big_l[~near])
    return out


def log_power_excess(ell: np.ndarray, lam: float | np.ndarray) -> np.ndarray:
    """log F_lam(ell) = log(e^(lam ell) - 1 - lam (e^ell - 1)) >= -inf, accurate for every
    ell (``_log_f``): the non-negative integrand of A_lam - 1 = E[r^lam - 1 - lam (r - 1)]
    at r = e^ell, for lam > 1 or lam < 0."""
    return _log_f(np.asarray(ell, dtype=float), lam)


def _log_f(ell: np.ndarray, lam: float | np.ndarray) -> np.ndarray:
    """log F_lam(ell), F_lam(ell) = e^(lam ell) - 1 - lam (e^ell - 1) >= 0.

    ``lam`` is one order or one per entry of ``ell``, all > 1 or all < 0."""
    lam_arr = np.asarray(lam, dtype=float)
    if np.all(lam_arr > 1.0):
        g = lam_arr - 1.0
        result: FloatArray = ell + np.logaddexp(np.log(g) + _log_e1(-ell), _log_e1(g * ell))
        return result
    if np.all(lam_arr < 0.0):
        result = np.logaddexp(_log_e1(lam_arr * ell), np.log(-lam_arr) + _log_e1(ell))
        return result
    raise ValueError(f"order must be > 1 or < 0 for the quadrature, got {lam}")


def _log_integrand_parts(x: np.ndarray, q: float, sigma: float,
                         lam: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log phi_sigma(x), log F_lam(ell(x))); their sum is the log-integrand of A_lam - 1."""
    log_phi = -0.5 * (x / sigma) ** 2 - math.log(sigma) - _LOG_SQRT_2PI
    return log_phi, _log_f(_log_ratio(x, q, sigma), lam)


def _log_integrand(x: np.ndarray, q: float, sigma: float,
                   lam: float | np.ndarray) -> np.ndarray:
    """log(phi_sigma(x) F_lam(ell(x))): the log-integrand of A_lam - 1."""
    log_phi, log_f = _log_integrand_parts(x, q, sigma, lam)
    result: FloatArray = log_phi + log_f
    return result


# --------------------------------------------------------------------------
# log A by the integer closed form and by quadrature
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=4096)
def _log_a_integer(q: float, sigma: float, alpha: int) -> float:
    """log A_alpha for integer alpha >= 2 and q < 1 (Mironov et al. 2019, §3.3).

    Uses A - 1 = sum_{i=2}^{alpha} C(alpha, i) q^i (1-q)^(alpha-i)
    expm1((i^2 - i)/(2 sigma^2)), obtained by subtracting the binomial
    identity sum_i C(alpha, i) q^i (1-q)^(alpha-i) = 1; the i = 0, 1 terms
    vanish and every remaining term is positive, so tiny D stays accurate.
    """
    i = np.arange(2, alpha + 1, dtype=float)
    e = (i * i - i) / (2.0 * sigma * sigma)
    # log(e^e - 1) = e + log(1 - e^-e): no overflow, full relative accuracy for small e
    log_expm1 = e + np.log(-np.expm1(-e))    # accurate for every e > 0, never overflows
    # log C(alpha, i) as a running sum of log((alpha - k + 1)/k): exact for the
    # small i that dominate when q is small, where gammaln differences of
    # ~alpha log(alpha) lose ~1e-12 for alpha ~ 1e4.  Symmetry keeps the sums short.
    k = np.arange(1, alpha // 2 + 1, dtype=float)
    half = np.concatenate(([0.0], np.cumsum(np.log((alpha - k + 1.0) / k))))
    idx = np.arange(2, alpha + 1)
    log_binom = half[np.minimum(idx, alpha - idx)]
    terms = log_binom + i * math.log(q) + (alpha - i) * math.log1p(-q) + log_expm1
    top = float(terms.max())   # log-sum-exp inline: scipy's costs ~0.4 ms a call here
    return float(np.logaddexp(0.0, top + math.log(float(np.exp(terms - top).sum()))))


def _ragged(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(owner, local index, start) of the concatenation of runs of the given lengths."""
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    owner = np.repeat(np.arange(counts.size), counts)
    local = np.arange(int(counts.sum())) - np.repeat(starts, counts)
    return owner, local, starts


def _gl_panels(a: np.ndarray, b: np.ndarray, q: float, sigma: float,
               lam: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """16-point Gauss-Legendre nodes on panels [a, b] of orders ``lam`` (one per panel):
    (log phi, log F) at the nodes, shape (panels, 16), and the half-widths."""
    half = 0.5 * (b - a)
    x = (0.5 * (a + b))[:, None] + half[:, None] * _GL_NODES[None, :]
    lam_nodes = np.broadcast_to(lam[:, None], x.shape).ravel()
    log_phi, log_f = _log_integrand_parts(x.ravel(), q, sigma, lam_nodes)
    return log_phi.reshape(x.shape), log_f.reshape(x.shape), half


#: cells per screening block, and the key base of (order, cell) pairs
_BLOCK = 16
_KEY = 1 << 40


def _cell_max(v0: np.ndarray, v1: np.ndarray, d_lo: np.ndarray, d_hi: np.ndarray,
              width: np.ndarray) -> np.ndarray:
    """Largest value on [x0, x0 + width] of a function with values v0, v1 at the ends
    and derivative within [d_lo, d_hi] there: the end value when it is monotone, else
    where the two lines v0 + d_hi (x − x0) and v1 − d_lo (x1 − x) meet."""
    rise, fall = np.maximum(d_hi, 0.0), np.maximum(-d_lo, 0.0)
    meet = (v0 * fall + v1 * rise + rise * fall * width) / np.maximum(rise + fall, 1e-300)
    return np.where(rise == 0.0, v0, np.where(fall == 0.0, v1, meet))


def _screen(q: float, sigma: float, lams: np.ndarray, k_lo: np.ndarray,
            k_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cells [k h, (k + 1) h] (h = sigma/2) where the log-integrand of each order
    comes within exp(-90) of its largest value on the cell edges: (order, k) pairs, and
    that largest value per order.

    An upper bound of the integrand's logarithm first rules out whole blocks of
    ``_BLOCK`` cells: with L = (2x − 1)/(2 sigma^2), p(x) = q e^L / (1 − q + q e^L)
    (increasing) and Phi = −x^2/(2 sigma^2), F_lam(ell) <= e^(lam ell) + lam for
    lam > 1 and <= e^(lam ell) + |lam| e^ell for lam < 0, each term being
    Phi + c ell + const with derivative (c p(x) − x)/sigma^2, which is bounded on a
    block by p at its ends (``_cell_max``). A block is kept where the bound reaches
    90 below a value the log-integrand takes; the log-integrand itself is then
    evaluated at the edges of the kept blocks' cells.
    """
    n = lams.size
    n_cells = k_hi - k_lo
    n_blocks = -(-n_cells // _BLOCK)
    b_owner, b_local, _ = _ragged(n_blocks)
    k0 = k_lo[b_owner] + b_local * _BLOCK
    k1 = np.minimum(k0 + _BLOCK, k_hi[b_owner])
    h = 0.5 * sigma
    x0, x1 = k0 * h, k1 * h
    lam = lams[b_owner]
    logq = math.log(q)

    def parts(x: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        big_l = (2.0 * x - 1.0) / (2.0 * sigma * sigma)
        ell = _log_ratio(x, q, sigma)
        return -0.5 * (x / sigma) ** 2, ell, np.exp(logq + big_l - ell)

    phi0, ell0, p0 = parts(x0)
    phi1, ell1, p1 = parts(x1)
    s2 = sigma * sigma
    width = x1 - x0
    terms = []
    for c, const in ((lam, 0.0), (np.where(lam < 0, 1.0, 0.0), np.log(np.abs(lam)))):
        d_lo = (np.minimum(c * p0, c * p1) - x1) / s2
        d_hi = (np.maximum(c * p0, c * p1) - x0) / s2
        terms.append(const + _cell_max(phi0 + c * ell0, phi1 + c * ell1, d_lo, d_hi, width))
    bound = np.logaddexp(terms[0], terms[1])
    # a value the log-integrand takes: at the cell edges of the blocks whose bound is
    # within 1 of the best (the integrand's peak is there or the bound is loose)
    best = _group_max(bound, b_owner, n)
    top = bound >= best[b_owner] - 1.0
    c_own, _, cell_psi = _block_cells(q, sigma, lams, b_owner[top], k0[top], k1[top])
    taken = _group_max(cell_psi, c_own, n)
    kept = bound >= (taken - _NEGLIGIBLE_LOG)[b_owner]
    # guard blocks next to a kept one (a peak at a block edge)
    kept = kept | np.concatenate([[False], kept[:-1]]) | np.concatenate([kept[1:], [False]])
    c_own, c_k, cell_psi = _block_cells(q, sigma, lams, b_owner[kept], k0[kept], k1[kept])
    peak = _group_max(cell_psi, c_own, n)
    keep = cell_psi >= (peak - _NEGLIGIBLE_LOG)[c_own]
    return c_own[keep], c_k[keep], peak


def _block_cells(q: float, sigma: float, lams: np.ndarray, owner: np.ndarray,
                 k0: np.ndarray, k1: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, k, max of the log-integrand at the two edges) of every cell [k h, (k+1) h]
    of the blocks [k0, k1) of the given orders (each edge evaluated once)."""
    e_owner, e_local, e_start = _ragged(k1 - k0 + 1)
    k = k0[e_owner] + e_local
    psi = _log_integrand(k * (0.5 * sigma), q, sigma, lams[owner][e_owner])
    last = np.zeros(k.size, dtype=bool)
    last[np.append(e_start[1:], k.size) - 1] = True       # right edge of each block
    cell = np.flatnonzero(~last)
    return owner[e_owner[cell]], k[cell], np.maximum(psi[cell], psi[cell + 1])


def _log_a_quadrature_batch(q: float, sigma: float, lams: np.ndarray) -> np.ndarray:
    """log A_lam for real orders lam, all > 1 or all < 0, and q < 1, by adaptive quadrature.

    Integrates phi_sigma(x) F_lam(ell(x)) = phi_sigma(x) [e^(lam ell) - 1 - lam (e^ell - 1)]
    over x.  The three pieces are phi(x) (centred at 0), phi(x) e^ell =
    (1-q) phi(x) + q phi(x-1) (centred at 0 and 1) and phi(x) e^(lam ell).
    The log-derivative of the last is (-x + lam p(x))/sigma^2 with
    0 < p(x) < 1, so at distance d outside [min(0, lam), max(0, lam)] its
    magnitude is at least d/sigma^2: it falls off at least like a Gaussian of
    width sigma.  Hence all mass lies in [min(0, lam), max(1, lam)] +- 40 sigma.

    That range is screened on a grid of spacing sigma/2 (no peak of the
    integrand is narrower than ~sigma: log phi has curvature -1/sigma^2 and
    only the zero of F at x = 1/2 is sharper, which is a dip, not a peak),
    after blocks of that grid too far below the peak for a rigorous upper bound
    to reach it are left out (``_screen``: a large order's range is long).
    Panels of width 2 sigma around everything within exp(-90) of the maximum
    are integrated with 16-point Gauss-Legendre and bisected until each
    panel's sum agrees with the sum over its two halves; since the integrand
    is non-negative, per-panel relative tolerances add up to a global one.

    All orders are processed together: every stage is one vectorised evaluation
    over the panels of every order still unfinished (panels carry their order).
    """
    lams = np.asarray(lams, dtype=float)
    n = lams.size
    if n == 0:
        return np.zeros(0)
    # Every order's range [min(0, lam), max(1, lam)] +- 40 sigma is cut into cells of
    # width h = sigma/2 on one grid x = k h; blocks of _BLOCK cells are screened first.
    h = 0.5 * sigma
    k_lo = np.floor((np.minimum(0.0, lams) - _TAIL_SIGMAS * sigma) / h).astype(np.int64)
    k_hi = np.ceil((np.maximum(1.0, lams) + _TAIL_SIGMAS * sigma) / h).astype(np.int64)
    lo, hi = k_lo * h, k_hi * h
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        cell_owner, cell_k, peak = _screen(q, sigma, lams, k_lo, k_hi)
        # cells (between consecutive edges of one order) within exp(-90) of the peak;
        # two neighbours on each side guard against a peak between grid points
        key = cell_owner * _KEY + (cell_k - k_lo[cell_owner])
        keys = np.unique(np.concatenate([key + d for d in range(-2, 3)]))
        owner_k, local_k = keys // _KEY, keys % _KEY
        inside = (local_k >= 0) & (local_k < (k_hi - k_lo)[owner_k])
        owner_k, local_k = owner_k[inside], local_k[inside]
        # Integrate on panels of several screening cells: 16-point Gauss-Legendre
        # resolves ~2 sigma easily, and fewer panels means fewer evaluations.
        groups = np.unique(owner_k * _KEY + local_k // _PANEL_CELLS)
        own = groups // _KEY
        a = lo[own] + (groups % _KEY) * _PANEL_CELLS * h
        b = np.minimum(a + _PANEL_CELLS * h, hi[own])
        span = np.bincount(own, weights=b - a, minlength=n)

        # First pass fixes the common shift so that exp() neither over- nor underflows.
        log_phi, log_f, half = _gl_panels(a, b, q, sigma, lams[own])
        psi = log_phi + log_f
        shift = np.maximum(peak, _group_max(psi.max(axis=1), own, n))
        shift = np.where(np.isfinite(shift), shift, 0.0)
        whole = half * (np.exp(psi - shift[own][:, None]) @ _GL_WEIGHTS)

        # With large orders the two parts of the log-integrand are huge and
        # cancel (e.g. ~1e9 for alpha = 1e4, sigma = 0.3), so the integrand is
        # known only to ~eps * |part| relatively.  That is still ~eps relative to
        # log A, but the error test must not ask for more than the noise floor.
        significant = psi >= shift[own][:, None] - 40.0
        size = np.where(significant, np.abs(log_phi) + np.abs(log_f), 0.0).max(axis=1)
        scale = _group_max(size, own, n)
        rtol = np.maximum(_RTOL, 64.0 * np.finfo(float).eps * scale)

        done = np.zeros(n)
        for _ in range(_MAX_DEPTH):
            mid = 0.5 * (a + b)
            m = a.size
            lp, lf, hw = _gl_panels(np.concatenate([a, mid]), np.concatenate([mid, b]),
                                    q, sigma, np.concatenate([lams[own], lams[own]]))
            sums = hw * (np.exp(lp + lf - np.concatenate([shift[own], shift[own]])[:, None])
                         @ _GL_WEIGHTS)
            left, right = sums[:m], sums[m:]
            fine = left + right
            total = done + np.bincount(own, weights=fine, minlength=n)
            err = np.abs(whole - fine)
            ok = err <= rtol[own] * fine + rtol[own] * total[own] * (b - a) / span[own]
            done += np.bincount(own[ok], weights=fine[ok], minlength=n)
            if ok.all():
                break
            bad = ~ok
            own = np.concatenate([own[bad], own[bad]])
            a, b = np.concatenate([a[bad], mid[bad]]), np.concatenate([mid[bad], b[bad]])
            whole = np.concatenate([left[bad], right[bad]])
        else:
            done += np.bincount(own[~ok], weights=fine[~ok], minlength=n)
            worst = lams[own[~ok]][0]
            warnings.warn(
                f"subsampled Gaussian RDP quadrature did not reach rtol={_RTOL:g} "
                f"(q={q}, sigma={sigma}, order={worst})", RuntimeWarning, stacklevel=3)

    # log A = log1p(A - 1) keeps full relative accuracy when A - 1 is tiny.
    result: FloatArray = np.logaddexp(0.0, shift + np.log(done))
    return result


def _group_max(values: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """Per-order max of ``values`` (−inf for an order without entries)."""
    out = np.full(n, -np.inf)
    np.maximum.at(out, owner, values)
    return out


def _log_a_quadrature(q: float, sigma: float, lam: float) -> float:
    """log A_lam for one real order lam > 1 or lam < 0 (``_log_a_quadrature_batch``)."""
    return float(_log_a_quadrature_batch(q, sigma, np.array([float(lam)]))[0])


def _log_a_orders(q: float, sigma: float, lams: np.ndarray) -> np.ndarray:
    """log A_lam for validated orders lam > 1 or lam < 0: the Gaussian's closed form at
    q = 1, the binomial sum at integer lam > 1, one batched quadrature for the rest."""
    lams = np.asarray(lams, dtype=float)
    if q == 1.0:
        # Plain Gaussian: A_lam = exp(lam (lam - 1) / (2 sigma^2)) for every real lam.
        return lams * (lams - 1.0) / (2.0 * sigma * sigma)
    out = np.empty(lams.shape)
    integer = (lams > 1.0) & (lams == np.round(lams))
    for i in np.flatnonzero(integer):
        out[i] = _log_a_integer(q, sigma, int(lams[i]))
    for sign in (lams > 1.0, lams < 0.0):
        rest = sign & ~integer
        if rest.any():
            out[rest] = _log_a_quadrature_batch(q, sigma, lams[rest])
    return out


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------

def log_a(q: float, sigma: float, alphas: Any) -> np.ndarray:
    """log A_alpha of the Poisson-subsampled Gaussian, for each order (exact sums at
    integer orders, a numerical quadrature elsewhere; see the certified bounds).

    A_alpha = E_{mu0}[(mu/mu0)^alpha]
            = ∫ phi_sigma(x) ((1 - q) + q exp((2x - 1)/(2 sigma^2)))^alpha dx,
    with mu0 = N(0, sigma^2), mu = (1 - q) N(0, sigma^2) + q N(1, sigma^2)
    (Mironov, Talwar, Zhang 2019, arXiv:1908.10530, §3.3).

    Integer orders use the exact binomial sum of §3.3; fractional orders use
    adaptive quadrature of A_alpha - 1 (relative accuracy ~1e-13), not the
    sign-alternating series.  Everything is in log space, so the result is
    finite for every sigma > 0 even when A_alpha overflows a float.

    Args:
        q: Poisson sampling probability, 0 < q <= 1 (q = 1: plain Gaussian).
        sigma: noise multiplier (standard deviation for sensitivity 1), > 0.
        alphas: real order(s) alpha > 1, scalar or array.

    Returns:
        Array of log A_alpha with the shape of ``alphas`` (0-d for a scalar).

    Raises:
        TypeError: a non-numeric argument.
        ValueError: q outside (0, 1], sigma <= 0 or non-finite, an order <= 1,
            NaN or infinite.
    """
    qf, sf, arr = _check_q(q), _check_sigma(sigma), _check_alphas(alphas)
    return _log_a_orders(qf, sf, arr.ravel()).reshape(arr.shape)


def rdp_remove(q: float, sigma: float, alphas: Any) -> np.ndarray:
    """D_alpha(mu || mu0) = log A_alpha / (alpha - 1) (numerical at fractional orders).

    mu = (1 - q) N(0, sigma^2) + q N(1, sigma^2), mu0 = N(0, sigma^2); Mironov,
    Talwar, Zhang 2019 (arXiv:1908.10530), §3.3.  See :func:`log_a` for the
    arguments, method and exceptions.
    """
    arr = _check_alphas(alphas)
    return log_a(q, sigma, arr) / (arr - 1.0)


def rdp_add(q: float, sigma: float, alphas: Any) -> np.ndarray:
    """D_alpha(mu0 || mu) = log A_{1 - alpha} / (alpha - 1) (numerical: a quadrature).

    Since E_mu[(mu0/mu)^alpha] = E_{mu0}[(mu/mu0)^(1 - alpha)] = A_{1 - alpha},
    the add direction is the same integral at the negative order 1 - alpha
    (Mironov, Talwar, Zhang 2019, arXiv:1908.10530, §3.3).  It is computed by
    adaptive quadrature of A_{1-alpha} - 1 for every order (no closed form
    terminates at negative orders) and is not assumed to be bounded by
    :func:`rdp_remove`.  For q = 1 both directions equal alpha / (2 sigma^2).

    Args and exceptions as for :func:`log_a`.
    """
    qf, sf, arr = _check_q(q), _check_sigma(sigma), _check_alphas(alphas)
    vals = _log_a_orders(qf, sf, 1.0 - arr.ravel())
    return vals.reshape(arr.shape) / (arr - 1.0)


# --------------------------------------------------------------------------
# Certified bounds on K(t) = log A (the default Rényi curve of the pair)
# --------------------------------------------------------------------------
# K(t) is the cumulant generating function of the privacy loss, so g(lam) = log A_lam
# is convex in the real order lam (Hölder), with g(0) = g(1) = 0; the remove
# direction is K(t) = g(1 + t), the add direction K(t) = g(-t).

def _margin(alpha: np.ndarray) -> np.ndarray:
    """Relative roundoff margin of a float K at order alpha: the binomial sum's running
    log-binomials and log-sum-exp carry a few ulp per term, at most ~1e-15 per order
    of the sum; upper values are raised and lower values lowered by this much."""
    return 1e-13 + 1e-15 * alpha


def _integer_k(q: float, sigma: float, n: np.ndarray) -> np.ndarray:
    """K(n) = log A_{n+1} of the remove direction at integers n >= -1 (exact sums;
    K(-1) = K(0) = 0), each distinct n summed once (and cached across calls)."""
    out = np.zeros(n.shape)
    uniq, inv = np.unique(n, return_inverse=True)
    vals = np.array([_log_a_integer(q, sigma, int(m) + 1) if m >= 1 else 0.0 for m in uniq])
    out[...] = vals[inv].reshape(n.shape)
    return out


def _check_t(t: Any) -> np.ndarray:
    arr = np.asarray(t, dtype=float)
    if np.isnan(arr).any() or (arr < 0).any() or np.isinf(arr).any():
        raise ValueError("t (order minus one) must be finite and >= 0")
    _check_order_cap(arr, "t")
    return arr


#: orders below which the fractional series brackets the remove direction (above it
#: the chords of neighbouring integer orders are within ~1e-4 relative of K), and
#: the number of series terms beyond the order
_SERIES_MAX_ALPHA, _SERIES_EXTRA_TERMS = 64.0, 160
#: the machine epsilon eps = 2^-52 of float64 (twice the unit roundoff)
_EPS = np.finfo(float).eps


def _series_bracket(q: float, sigma: float, alphas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) bounds on log A_alpha for fractional 1 < alpha, q < 1, from the series
    of Mironov, Talwar, Zhang 2019 (arXiv:1908.10530, §3.3) with a proven remainder.

    Split at z0 = sigma^2 log(1/q - 1) + 1/2, where q mu1 = (1 - q) mu0. Below z0,
    x = q mu1/((1 - q) mu0) < 1 and (1 - q + q rho)^alpha = (1 - q)^alpha (1 + x)^alpha =
    (1 - q)^alpha sum_k C(alpha, k) x^k; above it the same with y = 1/x. With
    int_{z<z0} mu0 rho^m = e^{(m^2 - m)/(2 sigma^2)} Phi((z0 - m)/sigma) and
    int_{z>z0} mu0 rho^m = e^{(m^2 - m)/(2 sigma^2)} Phi((m - z0)/sigma), rho = mu1/mu0,
    A = A1 + A2 with
      A1 = sum_k C(alpha, k) (1 - q)^(alpha-k) q^k e^{(k^2-k)/(2 sigma^2)} Phi((z0 - k)/sigma),
      A2 = sum_k C(alpha, k) (1 - q)^k q^(alpha-k) e^{(m^2-m)/(2 sigma^2)} Phi((m - z0)/sigma),
    m = alpha - k. Remainder after k = K >= alpha: for k > alpha the signs of (-1)^k C(alpha, k)
    agree and sum_k (-1)^k C(alpha, k) = 0 with partial sums (-1)^K C(alpha - 1, K), so
    sum_{k>K} |C(alpha, k)| = |C(alpha - 1, K)|; with x^k <= x^(K+1) (x < 1) the rest of A1
    is at most (1 - q)^alpha |C(alpha - 1, K)| int_{z<z0} mu0 x^(K+1), a closed form, and
    likewise A2's. Roundoff: each term's logarithm is a sum of components each exact to
    an ulp of its size, so a term is within 16 u (1 + sum of |components|) relative; the
    sum adds (n + 1) u sum |terms| (Higham, Accuracy and Stability, §4.2).

    The terms are summed relative to the largest of them (their logarithms shifted by
    its), so that A_alpha beyond the float range (log A > 709: small sigma, where the
    series is the tight bound) stays finite; the bounds come back as logarithms (-inf
    for a lower bound that is not positive, +inf for an upper one that is not finite).
    """
    a = np.asarray(alphas, dtype=float)[:, None]
    # K = floor(alpha) + _SERIES_EXTRA_TERMS terms per order (so a batch answers as
    # its orders one at a time); terms beyond an order's K are masked out
    big_k = np.floor(a[:, 0]) + _SERIES_EXTRA_TERMS
    k = np.arange(0.0, big_k.max() + 1.0)[None, :]
    inside = k <= big_k[:, None]
    s2 = 2.0 * sigma * sigma
    lq, lq1 = math.log(q), math.log1p(-q)
    z0 = sigma * sigma * (lq1 - lq) + 0.5
    g_a, g_k, g_ak = gammaln(a + 1.0), gammaln(k + 1.0), gammaln(a - k + 1.0)
    log_c = g_a - g_k - g_ak
    sign = gammasgn(a - k + 1.0)
    m = a - k
    parts1 = [(a - k) * lq1, k * lq, (k * k - k) / s2, log_ndtr((z0 - k) / sigma)]
    parts2 = [k * lq1, m * lq, (m * m - m) / s2, log_ndtr((m - z0) / sigma)]
    size = 1.0 + np.abs(g_a) + np.abs(g_k) + np.abs(g_ak)
    log_terms = [np.where(inside, log_c + sum(parts), -np.inf) for parts in (parts1, parts2)]
    # remainders beyond k = K
    aa = a[:, 0]
    log_tail_c = gammaln(aa) - gammaln(big_k + 1.0) - gammaln(aa - big_k)
    k1, m1 = big_k + 1.0, aa - big_k - 1.0
    tail1 = log_tail_c + aa * lq1 + k1 * (lq - lq1) + (k1 * k1 - k1) / s2 \
        + log_ndtr((z0 - k1) / sigma)
    tail2 = log_tail_c + k1 * lq1 + m1 * lq + (m1 * m1 - m1) / s2 + log_ndtr((m1 - z0) / sigma)
    shift = np.maximum(np.maximum(log_terms[0].max(axis=1), log_terms[1].max(axis=1)),
                       np.maximum(tail1, tail2))
    shift = np.where(np.isfinite(shift), shift, 0.0)
    blocks: list[FloatArray] = []
    errs: list[FloatArray] = []
    for parts, log_t in zip((parts1, parts2), log_terms):
        scaled = np.exp(log_t - shift[:, None])
        blocks.append(sign * scaled)
        errs.append(16.0 * _EPS * (size + sum(np.abs(p) for p in parts)) * scaled)
    terms = np.concatenate(blocks, axis=1)
    total = terms.sum(axis=1)
    absum = np.abs(terms).sum(axis=1)
    err = np.concatenate(errs, axis=1).sum(axis=1) + (2.0 * big_k + 3.0) * _EPS * absum
    rest = np.exp(tail1 - shift) + np.exp(tail2 - shift)
    # log_t − shift rounds by u |log_t − shift| ≤ u (|log_t| + |shift|): within the 16 u
    # (...) margin for the terms near the largest (|log_t| ≈ |shift|), and far below the
    # 4 u |total| slack for the others (e^{log_t − shift} small)
    err = (err + rest) * (1.0 + 8.0 * _EPS) + 4.0 * _EPS * np.abs(total)
    lo, hi = total - err, total + err
    log_lo = np.where(lo > 0, np.log(np.where(lo > 0, lo, 1.0)) + shift, -np.inf)
    log_hi = np.where(np.isfinite(hi) & (hi > 0), np.log(np.where(hi > 0, hi, 1.0)) + shift,
                      np.inf)
    return log_lo, log_hi


def _series_k(q: float, sigma: float, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) bounds on the remove direction's K(t) = log A_{1+t} by
    ``_series_bracket`` where 1 + t < ``_SERIES_MAX_ALPHA`` (else (-inf, +inf))."""
    lo, hi = np.full(t.shape, -np.inf), np.full(t.shape, np.inf)
    use = (t > 0) & (t + 1.0 < _SERIES_MAX_ALPHA)
    if use.any():
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            log_lo, log_hi = _series_bracket(q, sigma, 1.0 + t[use])
            # a lower bound on A at most 1 says nothing about K >= 0
            lo[use] = np.where(log_lo > 0, log_lo, -np.inf)
            hi[use] = log_hi
    return lo, hi


def remove_cgf_upper(q: float, sigma: float, t: Any) -> np.ndarray:
    """Certified upper bound on K(t) = (alpha - 1) D_alpha(mu || mu0), alpha = 1 + t.

    Exact (the binomial sum of Mironov, Talwar, Zhang 2019, arXiv:1908.10530, §3.3)
    at integer t; between integers n < t < n + 1 the smallest of the chord of K(n) and
    K(n + 1), which lies above K by convexity (K(0) = 0 below t = 1), the §3.3 series
    with its proven remainder (``_series_bracket``) and the Taylor majorant of
    ``subsampled_rdp`` with the Gaussian's exact moments (``_taylor_k``). Raised by the
    roundoff margin ``_margin``; q = 1 is the Gaussian's closed form t(t + 1)/(2 sigma^2).
    """
    qf, sf, t = _check_q(q), _check_sigma(sigma), _check_t(t)
    shape = t.shape
    if qf == 1.0:
        result: FloatArray = t * (t + 1.0) / (2.0 * sf * sf)
        return result
    lo = np.floor(t)
    w = t - lo
    k_lo = _integer_k(qf, sf, lo)
    k_hi = np.where(w > 0, _integer_k(qf, sf, np.where(w > 0, lo + 1.0, lo)), k_lo)
    chord = (1.0 - w) * k_lo + w * k_hi
    best = _with_series(qf, sf, t, chord * (1.0 + _margin(t + 1.0)), upper=True)
    best = np.minimum(best, _taylor_k(qf, sf, t))
    return np.where(t == 0, 0.0, best).reshape(shape)


def _taylor_k(q: float, sigma: float, t: np.ndarray) -> np.ndarray:
    """``subsampled_rdp.taylor_remove_bound`` with the Gaussian's exact moments
    log E[rho^i] = i(i - 1)/(2 sigma^2): an upper bound on the remove direction's K(t) at
    fractional orders below ``MAX_TAYLOR_ORDER`` (+inf elsewhere), tight where q rho is
    small and A - 1 tiny (large sigma, small q), where the series' absolute roundoff
    and remainder are too coarse."""
    flat = np.atleast_1d(np.asarray(t, dtype=float))
    out = np.full(flat.shape, np.inf)
    frac = (flat > 0) & (flat != np.floor(flat)) & (flat < _bounds.MAX_TAYLOR_ORDER)
    if frac.any():
        top = int(np.floor(1.0 + flat[frac].max())) + max(_bounds.TAYLOR_DEGREES)
        i = np.arange(top + 1.0)
        out[frac] = _bounds.taylor_remove_bound(i * (i - 1.0) / (2.0 * sigma * sigma), q,
                                                flat[frac])
    return out


def _with_series(q: float, sigma: float, t: np.ndarray, bound: np.ndarray,
                 upper: bool) -> np.ndarray:
    """``bound`` tightened at fractional orders by the certified §3.3 series bracket:
    the smaller of the two upper bounds (``upper``) or the larger of the lower ones."""
    t, best = np.atleast_1d(t), np.array(np.atleast_1d(bound), dtype=float)
    frac = t != np.floor(t)
    if frac.any():
        lo, hi = _series_k(q, sigma, t[frac])
        best[frac] = np.minimum(best[frac], hi) if upper else np.maximum(best[frac], lo)
    return best


def remove_cgf_lower(q: float, sigma: float, t: Any) -> np.ndarray:
    """Certified lower bound on the remove direction's K(t): the largest of the two
    tangent extrapolations of K's neighbouring chords (convexity: for n < t < n + 1,
    K(t) >= K(n) + (t - n)(K(n) - K(n - 1)) and K(t) >= K(n + 1) - (n + 1 - t)(K(n + 2)
    - K(n + 1))), the data-processing bound ``_coarse_log_a`` and 0; exact at integer t.
    Lowered by the roundoff margin."""
    qf, sf, t = _check_q(q), _check_sigma(sigma), _check_t(t)
    shape = t.shape
    if qf == 1.0:
        result: FloatArray = t * (t + 1.0) / (2.0 * sf * sf)
        return result
    n = np.floor(t)
    w = t - n
    k = [_integer_k(qf, sf, n + d) for d in (-1.0, 0.0, 1.0, 2.0)]
    left = k[1] + w * (k[1] - k[0])
    right = k[2] - (1.0 - w) * (k[3] - k[2])
    tangent = np.where(w > 0, np.maximum(left, right), k[1])
    flat = t.ravel()
    frac = flat[(flat > 0) & (flat != np.floor(flat))]
    coarse = np.full(flat.shape, -np.inf)
    if frac.size:
        coarse[(flat > 0) & (flat != np.floor(flat))] = _coarse_log_a(qf, sf, 1.0 + frac)
    best = np.maximum(np.maximum(tangent, coarse.reshape(t.shape)), 0.0)
    best = _with_series(qf, sf, t, best * (1.0 - _margin(t + 1.0)), upper=False)
    return np.where(t == 0, 0.0, best).reshape(shape)


def add_cgf_upper(q: float, sigma: float, t: Any) -> np.ndarray:
    """Certified upper bound on K(t) = (alpha - 1) D_alpha(mu0 || mu) (add direction).

    No closed form terminates at the negative orders 1 - alpha, so this is the
    smaller of two sound bounds: ``_chord_log_a_add`` (convexity of y ↦ y^(-t) on the
    cells of a partition, second-order tight) and those of
    ``subsampled_rdp.add_cgf_bound`` with the Gaussian's exact CGF t(t + 1)/(2 sigma^2)
    as base (joint convexity, the trivial -t log(1 - q), Taylor bounds of orders 3 to
    9 with exact signed moments; tight for small q). Raised by the roundoff margin.
    """
    qf, sf, t = _check_q(q), _check_sigma(sigma), _check_t(t)
    if qf == 1.0:
        result: FloatArray = t * (t + 1.0) / (2.0 * sf * sf)
        return result
    s2 = sf * sf

    def base(u: ArrayLike) -> FloatArray:
        v = np.asarray(u, dtype=float)
        return v * (v + 1.0) / (2.0 * s2)
    bound = np.asarray(_bounds.add_cgf_bound(base, base, qf, t, exact_base=True), dtype=float)
    flat = bound.ravel().copy()
    tf = t.ravel()
    pos = tf > 0
    # orders grouped by ceil(log16(1 + t)), each group on one partition whose window
    # reaches its largest order's bulk (so a batch answers as its orders one at a time)
    group = np.ceil(np.log2(1.0 + tf) / 4.0)
    for g in np.unique(group[pos]):
        sel = pos & (group == g)
        flat[sel] = np.minimum(flat[sel], _chord_log_a_add(qf, sf, tf[sel], 16.0 ** g - 1.0))
    return np.where(t == 0, 0.0, flat.reshape(t.shape) * (1.0 + _margin(t + 1.0)))


#: cells of the add direction's chord bound (shared by the orders of one call)
_CHORD_CELLS = 256


def _chord_log_a_add(q: float, sigma: float, ts: np.ndarray, reach: float) -> np.ndarray:
    """An upper bound on log A_{-t} (t > 0): A_{-t} - 1 = E_mu0[F(r)] with r = mu/mu0 =
    1 - q + q rho, rho = e^{(2x-1)/(2 sigma^2)} increasing in x, and F(r) = r^(-t) - 1
    + t (r - 1) >= 0 convex. On a cell [a, b], r lies in [r_a, r_b], so F(r) is below
    the chord of F there, whose mu0-mean over the cell is P0 ((1 - w) F(r_a) + w F(r_b))
    with w = (P1/P0 - rho_a)/(rho_b - rho_a) ∈ [0, 1] the cell's mean position of rho
    (P0, P1 the cell's masses under N(0, sigma^2), N(1, sigma^2), and
    E_mu0[rho; cell] = P1). The left tail (-inf, a] uses r ∈ [1 - q, r_a]; on the right
    tail r >= 1, where F(r) <= t (r - 1), whose mean is t q (P1 - P0). The chord's
    error is second order in the cell width. Roundoff (a few ulp per cell, ~1e-13 of
    a cell's w) is covered by raising A - 1 by 1e-9 relative. The cells span
    [-12 sigma - 2 sigma^2 log(1 + reach), 1 + 12 sigma], the bulk for orders up to
    ``reach`` (``_coarse_log_a``); any window gives a valid bound."""
    ts = np.asarray(ts, dtype=float)
    lo = -12.0 * sigma - 2.0 * sigma * sigma * math.log1p(reach)
    hi = 1.0 + 12.0 * sigma
    x = np.linspace(lo, hi, _CHORD_CELLS + 1)
    a, b = x[:-1], x[1:]
    s2 = 2.0 * sigma * sigma
    la, lb = (2.0 * a - 1.0) / s2, (2.0 * b - 1.0) / s2        # log rho at the ends
    lp0 = _log_mass(np.concatenate([[-np.inf], a, [hi]]) / sigma,
                    np.concatenate([[lo], b, [np.inf]]) / sigma)
    lp1 = _log_mass((np.concatenate([[-np.inf], a, [hi]]) - 1.0) / sigma,
                    (np.concatenate([[lo], b, [np.inf]]) - 1.0) / sigma)
    lp0_c, lp1_c = lp0[1:-1], lp1[1:-1]
    w = np.clip(np.expm1(lp1_c - lp0_c - la) / np.expm1(lb - la), 0.0, 1.0)
    w_left = min(max(math.exp(lp1[0] - lp0[0] - la[0]), 0.0), 1.0)
    ell = _log_ratio(x, q, sigma)                               # log r at the edges
    ell_left = math.log1p(-q)                                   # r → 1 - q at -inf
    lam = -ts[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_f = _log_f(np.broadcast_to(ell[None, :], (ts.size, x.size)).ravel(),
                       np.broadcast_to(lam, (ts.size, x.size)).ravel()).reshape(ts.size, x.size)
        log_f_left = _log_f(np.full(ts.size, ell_left), -ts)
        cells = lp0_c[None, :] + np.logaddexp(np.log1p(-w)[None, :] + log_f[:, :-1],
                                              np.log(w)[None, :] + log_f[:, 1:])
        # numpy's logs: w_left at 0 or 1 (a far tail) is a term of weight 0, not an error
        left = lp0[0] + np.logaddexp(np.log1p(-w_left) + log_f_left,
                                     np.log(w_left) + log_f[:, 0])
        right = np.log(ts) + math.log(q) + lp1[-1] + np.log1p(-np.exp(lp0[-1] - lp1[-1]))
        terms = np.concatenate([left[:, None], cells, right[:, None]], axis=1)
        terms = np.where(np.isnan(terms), np.inf, terms)        # NaN: no bound from here
        top = terms.max(axis=1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        log_am1 = (top[:, 0] + np.log(np.exp(terms - top).sum(axis=1))) + math.log1p(1e-9)
    result: FloatArray = np.logaddexp(0.0, log_am1)
    return result


def add_cgf_lower(q: float, sigma: float, t: Any) -> np.ndarray:
    """Certified lower bound on the add direction's K(t): the data-processing bound
    ``_coarse_log_a`` at the order -t, and 0. Lowered by the roundoff margin."""
    qf, sf, t = _check_q(q), _check_sigma(sigma), _check_t(t)
    if qf == 1.0:
        result: FloatArray = t * (t + 1.0) / (2.0 * sf * sf)
        return result
    flat = t.ravel()
    out = np.zeros(flat.shape)
    pos = flat > 0
    if pos.any():
        out[pos] = np.maximum(_coarse_log_a(qf, sf, -flat[pos]), 0.0)
    return (out * (1.0 - _margin(flat + 1.0))).reshape(t.shape)


#: cells of the data-processing lower bound (per order)
_COARSE_CELLS = 512


def _log_mass(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log(Phi(b) - Phi(a)) for a < b, from the tail on the side the cell lies on
    (no cancellation in either tail)."""
    right = (a + b) > 0
    lo = np.where(right, -b, a)
    hi = np.where(right, -a, b)
    lhi, llo = log_ndtr(hi), log_ndtr(lo)
    with np.errstate(divide="ignore"):
        result: FloatArray = lhi + np.log1p(-np.exp(llo - lhi))
        return result


def _coarse_log_a(q: float, sigma: float, lams: np.ndarray) -> np.ndarray:
    """A lower bound on log A_lam (lam > 1 or lam < 0): log A of the pair coarsened to a
    partition of the line into ``_COARSE_CELLS`` cells and two tails. Rényi
    divergences do not grow under post-processing (data processing), and the
    coarsened A_lam - 1 = sum_k P0_k F_lam(ell_k), ell_k = log(1 - q + q P1_k/P0_k),
    is a sum of non-negative terms with Gaussian cell masses P0, P1 (accurate to a
    few ulp), so it is a lower bound up to roundoff (lowered by 1e-9 relative).
    The window [-12 sigma, max(1, lam) + 12 sigma] (remove) or
    [-12 sigma - 2 sigma^2 log(1 + |lam|), 1 + 12 sigma] (add) holds the integrand's
    bulk (``_log_a_quadrature_batch``); any window gives a valid bound."""
    lams = np.asarray(lams, dtype=float)
    pos = lams > 1.0
    lo = np.where(pos, -12.0 * sigma, -12.0 * sigma - 2.0 * sigma * sigma * np.log1p(np.abs(lams)))
    hi = np.where(pos, np.maximum(1.0, lams) + 12.0 * sigma, 1.0 + 12.0 * sigma)
    u = np.linspace(0.0, 1.0, _COARSE_CELLS + 1)
    edges = lo[:, None] + (hi - lo)[:, None] * u[None, :]
    inf = np.full((lams.size, 1), np.inf)
    edges = np.concatenate([-inf, edges, inf], axis=1)
    a, b = edges[:, :-1], edges[:, 1:]
    lp0 = _log_mass(a / sigma, b / sigma)
    lp1 = _log_mass((a - 1.0) / sigma, (b - 1.0) / sigma)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        diff = lp1 - lp0
        ell = np.where(np.abs(diff) <= 1.0, np.log1p(q * np.expm1(np.clip(diff, -1.0, 1.0))),
                       np.logaddexp(math.log1p(-q), math.log(q) + diff))
        lam_cells = np.broadcast_to(lams[:, None], ell.shape)
        terms = lp0 + _log_f(ell.ravel(), lam_cells.ravel()).reshape(ell.shape)
        terms = np.where(np.isnan(terms), -np.inf, terms)
        log_am1 = logsumexp(terms, axis=1) + math.log1p(-1e-9)
    result: FloatArray = np.logaddexp(0.0, log_am1)
    return result
