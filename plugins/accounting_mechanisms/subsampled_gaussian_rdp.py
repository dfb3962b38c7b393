"""Exact Rényi divergences of the Poisson-subsampled Gaussian mechanism.

Source: I. Mironov, K. Talwar, L. Zhang, "Rényi Differential Privacy of the
Sampled Gaussian Mechanism", arXiv:1908.10530 (2019), §3.3.

With sensitivity 1 and noise multiplier ``sigma``::

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

import math
import numbers
import warnings
from typing import Any

import numpy as np
from scipy.special import logsumexp

__all__ = ["log_a", "rdp_remove", "rdp_add"]

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
# the closed form would cancel; 18 terms reach double precision there.
_E1_COEF = np.array([1.0 / math.factorial(k + 2) for k in range(18)])
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
        raise ValueError(f"sigma (noise multiplier) must be finite and > 0, got {x}")
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
    return arr


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
    big_l = (2.0 * x - 1.0) / (2.0 * sigma * sigma)
    near = np.abs(big_l) <= 1.0
    out = np.empty_like(big_l)
    # Near L = 0, ell is small and must keep full relative accuracy (F ~ ell^2).
    out[near] = np.log1p(q * np.expm1(big_l[near]))
    # Elsewhere log-space avoids overflow of e^L and, for q close to 1, the
    # loss of the tiny 1 - q when forming 1 + q (e^L - 1).
    out[~near] = np.logaddexp(math.log1p(-q), math.log(q) + big_l[~near])
    return out


def _log_f(ell: np.ndarray, lam: float) -> np.ndarray:
    """log F_lam(ell), F_lam(ell) = e^(lam ell) - 1 - lam (e^ell - 1) >= 0."""
    if lam > 1.0:
        g = lam - 1.0
        return ell + np.logaddexp(math.log(g) + _log_e1(-ell), _log_e1(g * ell))
    if lam < 0.0:
        return np.logaddexp(_log_e1(lam * ell), math.log(-lam) + _log_e1(ell))
    raise ValueError(f"order must be > 1 or < 0 for the quadrature, got {lam}")


def _log_integrand_parts(x: np.ndarray, q: float, sigma: float,
                         lam: float) -> tuple[np.ndarray, np.ndarray]:
    """(log phi_sigma(x), log F_lam(ell(x))); their sum is the log-integrand of A_lam - 1."""
    log_phi = -0.5 * (x / sigma) ** 2 - math.log(sigma) - _LOG_SQRT_2PI
    return log_phi, _log_f(_log_ratio(x, q, sigma), lam)


def _log_integrand(x: np.ndarray, q: float, sigma: float, lam: float) -> np.ndarray:
    """log(phi_sigma(x) F_lam(ell(x))): the log-integrand of A_lam - 1."""
    log_phi, log_f = _log_integrand_parts(x, q, sigma, lam)
    return log_phi + log_f


# --------------------------------------------------------------------------
# log A by the integer closed form and by quadrature
# --------------------------------------------------------------------------

def _log_a_integer(q: float, sigma: float, alpha: int) -> float:
    """log A_alpha for integer alpha >= 2 and q < 1 (Mironov et al. 2019, §3.3).

    Uses A - 1 = sum_{i=2}^{alpha} C(alpha, i) q^i (1-q)^(alpha-i)
    expm1((i^2 - i)/(2 sigma^2)), obtained by subtracting the binomial
    identity sum_i C(alpha, i) q^i (1-q)^(alpha-i) = 1; the i = 0, 1 terms
    vanish and every remaining term is positive, so tiny D stays accurate.
    """
    i = np.arange(2, alpha + 1, dtype=float)
    e = (i * i - i) / (2.0 * sigma * sigma)
    # log(e^e - 1) without overflow: factor out e^e once it is not small.
    log_expm1 = np.where(e > 1.0, e + np.log1p(-np.exp(-e)),
                         np.log(np.expm1(np.minimum(e, 1.0))))
    # log C(alpha, i) as a running sum of log((alpha - k + 1)/k): exact for the
    # small i that dominate when q is small, where gammaln differences of
    # ~alpha log(alpha) lose ~1e-12 for alpha ~ 1e4.  Symmetry keeps the sums short.
    k = np.arange(1, alpha // 2 + 1, dtype=float)
    half = np.concatenate(([0.0], np.cumsum(np.log((alpha - k + 1.0) / k))))
    idx = np.arange(2, alpha + 1)
    log_binom = half[np.minimum(idx, alpha - idx)]
    terms = log_binom + i * math.log(q) + (alpha - i) * math.log1p(-q) + log_expm1
    return float(np.logaddexp(0.0, logsumexp(terms)))


def _gl_sum(a: np.ndarray, b: np.ndarray, q: float, sigma: float, lam: float,
            shift: float) -> np.ndarray:
    """Per-panel Gauss-Legendre sums of exp(log-integrand - shift) on [a, b]."""
    half = 0.5 * (b - a)
    x = (0.5 * (a + b))[:, None] + half[:, None] * _GL_NODES[None, :]
    psi = _log_integrand(x.ravel(), q, sigma, lam).reshape(x.shape)
    return half * (np.exp(psi - shift) @ _GL_WEIGHTS)


def _log_a_quadrature(q: float, sigma: float, lam: float) -> float:
    """log A_lam for real lam > 1 or lam < 0 and q < 1, by adaptive quadrature.

    Integrates phi_sigma(x) F_lam(ell(x)) = phi_sigma(x) [e^(lam ell) - 1 - lam (e^ell - 1)]
    over x.  The three pieces are phi(x) (centred at 0), phi(x) e^ell =
    (1-q) phi(x) + q phi(x-1) (centred at 0 and 1) and phi(x) e^(lam ell).
    The log-derivative of the last is (-x + lam p(x))/sigma^2 with
    0 < p(x) < 1, so at distance d outside [min(0, lam), max(0, lam)] its
    magnitude is at least d/sigma^2: it falls off at least like a Gaussian of
    width sigma.  Hence all mass lies in [min(0, lam), max(1, lam)] +- 40 sigma.

    That range is screened on a grid of spacing sigma/2 (no peak of the
    integrand is narrower than ~sigma: log phi has curvature -1/sigma^2 and
    only the zero of F at x = 1/2 is sharper, which is a dip, not a peak).
    Panels of width 2 sigma around everything within exp(-90) of the maximum
    are integrated with 16-point Gauss-Legendre and bisected until each
    panel's sum agrees with the sum over its two halves; since the integrand
    is non-negative, per-panel relative tolerances add up to a global one.
    """
    lo = min(0.0, lam) - _TAIL_SIGMAS * sigma
    hi = max(1.0, lam) + _TAIL_SIGMAS * sigma
    n_panels = int(math.ceil((hi - lo) / (0.5 * sigma)))
    edges = np.linspace(lo, hi, n_panels + 1)
    with np.errstate(divide="ignore", over="ignore", under="ignore"):
        psi_edges = _log_integrand(edges, q, sigma, lam)
        peak = float(psi_edges.max())
        keep = np.maximum(psi_edges[:-1], psi_edges[1:]) >= peak - _NEGLIGIBLE_LOG
        # Two neighbours on each side guard against a peak between grid points.
        keep = np.convolve(keep.astype(float), np.ones(5), mode="same") > 0.5
        # Integrate on panels of several screening cells: 16-point Gauss-Legendre
        # resolves ~2 sigma easily, and fewer panels means fewer evaluations.
        n_groups = -(-n_panels // _PANEL_CELLS)
        keep = np.pad(keep, (0, n_groups * _PANEL_CELLS - n_panels))
        keep = keep.reshape(n_groups, _PANEL_CELLS).any(axis=1)
        group_edges = edges[np.minimum(np.arange(n_groups + 1) * _PANEL_CELLS, n_panels)]
        a, b = group_edges[:-1][keep], group_edges[1:][keep]
        span = float(np.sum(b - a))

        # First pass fixes the common shift so that exp() neither over- nor underflows.
        half = 0.5 * (b - a)
        x = (0.5 * (a + b))[:, None] + half[:, None] * _GL_NODES[None, :]
        log_phi, log_f = _log_integrand_parts(x.ravel(), q, sigma, lam)
        psi = log_phi + log_f
        shift = max(peak, float(psi.max()))
        whole = half * (np.exp(psi.reshape(x.shape) - shift) @ _GL_WEIGHTS)

        # With large orders the two parts of the log-integrand are huge and
        # cancel (e.g. ~1e9 for alpha = 1e4, sigma = 0.3), so the integrand is
        # known only to ~eps * |part| relatively.  That is still ~eps relative to
        # log A, but the error test must not ask for more than the noise floor.
        significant = psi >= shift - 40.0
        scale = float(np.max(np.abs(log_phi[significant]) + np.abs(log_f[significant])))
        rtol = max(_RTOL, 64.0 * np.finfo(float).eps * scale)

        done = 0.0
        for _ in range(_MAX_DEPTH):
            mid = 0.5 * (a + b)
            left = _gl_sum(a, mid, q, sigma, lam, shift)
            right = _gl_sum(mid, b, q, sigma, lam, shift)
            fine = left + right
            total = done + float(fine.sum())
            err = np.abs(whole - fine)
            ok = err <= rtol * fine + rtol * total * (b - a) / span
            done += float(fine[ok].sum())
            if ok.all():
                break
            bad = ~ok
            a = np.concatenate([a[bad], mid[bad]])
            b = np.concatenate([mid[bad], b[bad]])
            whole = np.concatenate([left[bad], right[bad]])
        else:
            done += float(fine[~ok].sum())
            warnings.warn(
                f"subsampled Gaussian RDP quadrature did not reach rtol={rtol:g} "
                f"(q={q}, sigma={sigma}, order={lam})", RuntimeWarning, stacklevel=3)

    # log A = log1p(A - 1) keeps full relative accuracy when A - 1 is tiny.
    return float(np.logaddexp(0.0, shift + math.log(done)))


def _log_a_order(q: float, sigma: float, lam: float) -> float:
    """log A_lam for one validated order lam > 1 or lam < 0."""
    if q == 1.0:
        # Plain Gaussian: A_lam = exp(lam (lam - 1) / (2 sigma^2)) for every real lam.
        return lam * (lam - 1.0) / (2.0 * sigma * sigma)
    if lam > 1.0 and float(lam).is_integer():
        return _log_a_integer(q, sigma, int(lam))
    return _log_a_quadrature(q, sigma, lam)


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------

def log_a(q: float, sigma: float, alphas: Any) -> np.ndarray:
    """log A_alpha of the Poisson-subsampled Gaussian, exactly, for each order.

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
    out = np.array([_log_a_order(qf, sf, float(a)) for a in arr.ravel()], dtype=float)
    return out.reshape(arr.shape)


def rdp_remove(q: float, sigma: float, alphas: Any) -> np.ndarray:
    """D_alpha(mu || mu0) = log A_alpha / (alpha - 1), exactly.

    mu = (1 - q) N(0, sigma^2) + q N(1, sigma^2), mu0 = N(0, sigma^2); Mironov,
    Talwar, Zhang 2019 (arXiv:1908.10530), §3.3.  See :func:`log_a` for the
    arguments, method and exceptions.
    """
    arr = _check_alphas(alphas)
    return log_a(q, sigma, arr) / (arr - 1.0)


def rdp_add(q: float, sigma: float, alphas: Any) -> np.ndarray:
    """D_alpha(mu0 || mu) = log A_{1 - alpha} / (alpha - 1), exactly.

    Since E_mu[(mu0/mu)^alpha] = E_{mu0}[(mu/mu0)^(1 - alpha)] = A_{1 - alpha},
    the add direction is the same integral at the negative order 1 - alpha
    (Mironov, Talwar, Zhang 2019, arXiv:1908.10530, §3.3).  It is computed by
    adaptive quadrature of A_{1-alpha} - 1 for every order (no closed form
    terminates at negative orders) and is not assumed to be bounded by
    :func:`rdp_remove`.  For q = 1 both directions equal alpha / (2 sigma^2).

    Args and exceptions as for :func:`log_a`.
    """
    qf, sf, arr = _check_q(q), _check_sigma(sigma), _check_alphas(alphas)
    vals = np.array([_log_a_order(qf, sf, 1.0 - float(a)) for a in arr.ravel()], dtype=float)
    return vals.reshape(arr.shape) / (arr - 1.0)
