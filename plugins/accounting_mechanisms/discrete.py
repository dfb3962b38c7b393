"""Additive noise on the integers: the discrete Gaussian and the discrete Laplace.

Both mechanisms release M(D) = f(D) + Y for an integer-valued query f whose ℓ1
sensitivity under the neighbouring relation in use (add/remove, the default, or
replace-one) is the integer Δ = ``sensitivity``. The dominating pair is
(P, Q) = (Δ + Y, Y); the noise is symmetric about 0, so the map x ↦ Δ − x swaps P
and Q and the pair is symmetric: both directions (remove and add) coincide.
Every curve below is exact (closed form or exact finite sums, evaluated in log space).

Discrete Gaussian N_ℤ(0, σ²), pmf ∝ e^{−x²/(2σ²)} on ℤ (Canonne, Kamath, Steinke 2020,
"The discrete Gaussian for differential privacy", arXiv:2004.00010):

* loss L(x) = (2xΔ − Δ²)/(2σ²) at output x, so L > ε ⟺ x > εσ²/Δ + Δ/2 and
  δ(ε) = P[Y ≥ ⌊εσ²/Δ − Δ/2⌋ + 1] − e^ε P[Y ≥ ⌊εσ²/Δ + Δ/2⌋ + 1]   (CKS, arXiv:2004.00010),
  evaluated without that subtraction as D(b) + e^{L_b}Q[X ≥ b](1 − e^{ε − L_b}) from exact
  cumulative tables (``_dgauss_table``): ~1e−14 relative against 40-digit sums over the
  support wherever δ > 1e−200. Tables beyond 2²⁰ entries (σ ≳ 1.3e4 or huge Δ) fall
  back to the formula with Euler–Maclaurin tails, which loses about log₁₀(zσ/Δ) digits
  to the subtraction (≤ 2e−9 relative at σ ≤ 300, ~1e−8 at σ ~ 1e4), as the
  continuous Gaussian's closed form does;
* K(t) = t(t + 1)Δ²/(2σ²) + log R(tΔ), R(c) = Σ_x e^{−(x−c)²/(2σ²)} / Σ_x e^{−x²/(2σ²)},
  i.e. D_α = αΔ²/(2σ²) + log R((1 − α)Δ)/(α − 1) (CKS, arXiv:2004.00010); R(c) ≤ 1
  with equality iff c ∈ ℤ, so D_α ≤ αΔ²/(2σ²) with equality iff (α − 1)Δ ∈ ℤ, and
  ρ* = Δ²/(2σ²) (attained at t = 1/Δ). log R by Poisson summation (σ ≥ ½) or direct
  sums: ~1e−15 relative against 40-digit sums.

Discrete Laplace (two-sided geometric), pmf tanh(a/2)·e^{−a|x|} on ℤ, parameter a > 0
(scale 1/a; consecutive masses have ratio e^{−a}; Δ = 1 gives pure a-DP):

* loss L(x) = a(|x| − |x − Δ|): −aΔ for x ≤ 0, a(2k − Δ) at x = k ∈ {1, …, Δ−1}, aΔ for
  x ≥ Δ. Its law under P has the finitely many atoms a(2k − Δ), k = 0, …, Δ, with masses
  P₀ = e^{−aΔ}/(1 + e^{−a}), P_Δ = 1/(1 + e^{−a}), P_k = tanh(a/2)e^{−a(Δ−k)} (0 < k < Δ)
  (geometric sums; for Δ = 1 the two atoms ±a with masses e^a/(1+e^a) and 1/(1+e^a),
  arXiv:2004.00010); the profile and the CGF are these finite sums in closed form.
* Δ = 1: D_α = log[(e^{αa} + e^{(1−α)a})/(1 + e^a)]/(α − 1) (from the two-atom loss law).
* ρ* comes from the core's numerical envelope of the exact CGF. The sup of
  K(t)/(t(t+1)) sits at t → 0, where it equals the KL divergence E_P[L] (checked
  numerically for a ∈ [0.01, 20], Δ ≤ 50; not proved, so no closed-form ``_rho``).
* The trade-off function is the exact piecewise-linear T through the atoms.
"""

from __future__ import annotations

import functools
import math
import types
import warnings
from fractions import Fraction
from typing import Any

import attrs
import numpy as np
from scipy.special import log_ndtr, logsumexp

from accounting.pairs.additive import AdditiveNoise
from accounting.pairs.mechanism import NOISE_SCALE, Range, in_range, parameter
from accounting.pairs.pair import Pair, corner_pair, not_provided
from accounting.registry.hookspecs import RegisterMechanism, RegisterSpecialisation, hookimpl
from accounting.validation import check_count, check_positive, check_real
from accounting.vocabulary import AnyArray, Direction, FloatArray

from .subsampled_gaussian_rdp import log_mixture_ratio, log_power_excess
from .subsampling import PoissonSubsampledPair

__all__ = [
    "DiscreteGaussian",
    "DiscreteGaussianPair",
    "DiscreteLaplace",
    "DiscreteLaplacePair",
    "dgauss_delta",
    "dgauss_log_ratio",
    "dgauss_log_sf",
    "dlaplace_atoms",
    "dgauss_sample",
    "dlaplace_sample",
    "dgauss_subsampled_cgf",
    "SubsampledDiscreteGaussianPair",
]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
#: nats below the peak where pmf tables stop: beyond, masses underflow float64
_DROP = 750.0
#: largest exact table (entries) of the discrete-Gaussian profile; larger pairs use the
#: Euler–Maclaurin tails (see ``_profile_by_tails``)
_TABLE_MAX = 1 << 20


#: integer sensitivities accepted (the lattice sums were measured up to Δ = 1e9)
INTEGER_SENSITIVITY = Range(1, 10 ** 9, integer=True, log=True, zero=True)
#: the discrete Laplace decay rate a = 1/scale (deprecated parameter), as a·Δ in
#: [1e-8, 1e8] (a·Δ is the pure-DP ε)
DECAY_RATE = Range(1e-8, 1e8, per="sensitivity", per_power=-1, log=True)


def _check_integer_sensitivity(label: str, value: float) -> int:
    x = check_real("sensitivity", value)
    if x == 0:      # a degenerate corner: no privacy cost
        return 0
    if not x.is_integer() or not INTEGER_SENSITIVITY.lo <= x <= INTEGER_SENSITIVITY.hi:
        raise ValueError(f"{label}: sensitivity must be 0 or a positive integer (at most "
                         f"{INTEGER_SENSITIVITY.hi:g}) for noise on the integers, got {value!r}")
    return int(x)


def _integer_sensitivity_check(instance: AdditiveNoise, attribute: attrs.Attribute[Any],
                               value: float) -> None:
    """attrs validator of the ``sensitivity`` field of noise on the integers (each such
    class declares the field with ``attrs.field`` itself, so that mypy's attrs plugin
    reads it as keyword-only with a default)."""
    _check_integer_sensitivity(instance.name, value)


# ============================================================================ sampling
def dlaplace_sample(a: float, rng: np.random.Generator, shape: tuple[int, ...] | int
                    ) -> AnyArray:
    """Draws of the discrete Laplace law ∝ e^{−a|x|} on ℤ: the difference of two i.i.d.
    geometric variables of success probability 1 − e^{−a}."""
    p = -math.expm1(-a)
    return (rng.geometric(p, size=shape) - rng.geometric(p, size=shape)).astype(float)


def dgauss_sample(sigma: float, rng: np.random.Generator, shape: tuple[int, ...] | int
                  ) -> AnyArray:
    """Exact draws of N_ℤ(0, σ²) by rejection from a discrete Laplace of scale
    t = ⌊σ⌋ + 1, accepted with probability exp(−(|Y| − σ²/t)²/(2σ²)) (Canonne, Kamath,
    Steinke 2020, arXiv:2004.00010, Algorithm 3), vectorised over the pending draws."""
    t = math.floor(sigma) + 1.0
    out = np.empty(shape, dtype=float).ravel()
    todo = np.arange(out.size)
    while todo.size:
        y = dlaplace_sample(1.0 / t, rng, todo.size)
        keep = rng.random(todo.size) < np.exp(-(np.abs(y) - sigma * sigma / t) ** 2
                                                / (2.0 * sigma * sigma))
        out[todo[keep]] = y[keep]
        todo = todo[~keep]
    return out.reshape(shape)


# ==================================================================== discrete Gaussian
def _log_norm(sigma: float) -> float:
    """log Σ_x e^{−x²/(2σ²)}: a direct sum for σ < 1, else its Poisson-summation
    (Jacobi theta) dual σ√(2π)·(1 + 2Σ_{k≥1} e^{−2π²σ²k²}); both exact series."""
    if sigma < 1.0:
        j = math.ceil(sigma * math.sqrt(2.0 * 800.0)) + 1
        x = np.arange(-j, j + 1, dtype=float)
        return float(logsumexp(-x * x / (2.0 * sigma * sigma)))
    k = np.arange(1, 4, dtype=float)
    return math.log(sigma) + _LOG_SQRT_2PI + math.log1p(
        2.0 * float(np.sum(np.exp(-2.0 * math.pi ** 2 * sigma ** 2 * k * k))))


def dgauss_log_ratio(sigma: float, c: FloatArray) -> FloatArray:
    """log R(c) = log[Σ_x e^{−(x−c)²/(2σ²)} / Σ_x e^{−x²/(2σ²)}] ≤ 0, vectorised over c.

    R has period 1 and is even, so c is reduced to c − round(c) ∈ [−½, ½] (exact in
    floating point). σ < ½: direct sums (log R is then not small). σ ≥ ½: Poisson
    summation, R = 1 − 4Σ_k q^{k²} sin²(πkc)/(1 + 2Σ_k q^{k²}) with q = e^{−2π²σ²},
    evaluated by log1p so that the tiny gap keeps its relative accuracy; it is 0
    exactly when c is an integer.
    """
    c = np.asarray(c, dtype=float)
    frac = c - np.round(c)
    if sigma < 0.5:
        j = math.ceil(sigma * math.sqrt(2.0 * 800.0)) + 2
        x = np.arange(-j, j + 1, dtype=float)
        flat = np.ravel(frac)
        z = -(x[None, :] - flat[:, None]) ** 2 / (2.0 * sigma * sigma)
        out = logsumexp(z, axis=1) - _log_norm(sigma)
        out = np.minimum(np.where(flat == 0.0, 0.0, out), 0.0)
        return out.reshape(c.shape)
    k = np.arange(1, 5, dtype=float)
    logq = -2.0 * math.pi ** 2 * sigma ** 2 * k * k       # log q^{k²}
    den = 1.0 + 2.0 * float(np.sum(np.exp(logq)))
    s = np.sin(np.pi * k * frac[..., None]) ** 2
    num = 4.0 * np.sum(np.exp(logq) * s, axis=-1)
    result: FloatArray = np.log1p(-num / den)
    return result


@functools.lru_cache(maxsize=16)
def _dgauss_table(sigma: float, sensitivity: int) -> tuple[int, int, FloatArray, FloatArray]:
    """Exact tables of the pair (Δ + Y, Y) on x ∈ [lo, hi] (Q-coordinates).

    Returns (lo, hi, log H, log D) with H(x) = Q[X ≥ x] and
    D(b) = P[X ≥ b] − e^{L_b}Q[X ≥ b] = (1 − e^{−Δ/σ²})·Σ_{x>b} e^{L_x}H(x) (a sum of
    non-negative terms: the recursion D(b) = D(b+1) + (1 − e^{−Δ/σ²})e^{L_{b+1}}H(b+1)).
    Entries have length hi − lo + 2 (a sentinel at hi + 1 with H = D = 0).
    """
    s2 = sigma * sigma
    reach = math.ceil(sigma * math.sqrt(2.0 * _DROP)) + 1
    lo, hi = -reach, sensitivity + reach
    x = np.arange(lo, hi + 2, dtype=float)
    logq = -x * x / (2.0 * s2) - _log_norm(sigma)
    logq[-1] = -np.inf
    log_h = np.logaddexp.accumulate(logq[::-1])[::-1]
    loss = (2.0 * x * sensitivity - sensitivity * sensitivity) / (2.0 * s2)
    w = loss + log_h
    log_s = np.logaddexp.accumulate(w[::-1])[::-1]        # Σ_{x' ≥ x} e^{L_x'}H(x')
    log_d = np.append(log_s[1:], -np.inf) + math.log(-math.expm1(-sensitivity / s2))
    return lo, hi, log_h, log_d


def _profile_by_table(sigma: float, sensitivity: int, eps: FloatArray) -> FloatArray:
    """δ(ε) = D(b) + e^{L_b}H(b)·(1 − e^{ε − L_b}), b the first x with L_x > ε:
    two non-negative terms, so δ keeps its relative accuracy deep in the tail."""
    lo, hi, log_h, log_d = _dgauss_table(sigma, sensitivity)
    s2 = sigma * sigma
    fin = np.isfinite(eps)
    e = np.where(fin, eps, 0.0)
    b = np.floor(e * s2 / sensitivity + sensitivity / 2.0) + 1.0
    below = b < lo
    above = b > hi
    i = (np.clip(b, lo, hi + 1) - lo).astype(np.int64)
    lb = (2.0 * (i + lo) * sensitivity - sensitivity * sensitivity) / (2.0 * s2)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tail = np.exp(lb + log_h[i]) * np.maximum(-np.expm1(e - lb), 0.0)
    val = np.exp(log_d[i]) + np.where(np.isfinite(log_h[i]), tail, 0.0)
    val = np.where(below, -np.expm1(np.minimum(e, 0.0)), np.where(above, 0.0, val))
    val = np.where(eps == np.inf, 0.0, np.where(eps == -np.inf, 1.0, val))
    result: FloatArray = np.clip(val, 0.0, 1.0) + 0.0
    return result


def _log_upper_sum(sigma: float, k: FloatArray) -> FloatArray:
    """log Σ_{y ≥ k} e^{−y²/(2σ²)} for integers k ≥ 0 (float array), unnormalised.

    Where σ ≥ 20 and the slope h = k/σ² ≤ 0.05: Euler–Maclaurin to B₈,
    σ√(2π)Φ̄(k/σ) + e^{−k²/(2σ²)}[½ + Σ_j B_{2j}/(2j)!·He_{2j−1}(k/σ)/σ^{2j−1}]
    (He the probabilists' Hermite polynomials; the next term is below 1e−16 relative
    there). Elsewhere: the direct sum of the terms e^{−(2kj + j²)/(2σ²)}, j ≥ 0, up to
    where they drop below e^{−40} of the first.
    """
    k = np.asarray(k, dtype=float)
    flat = np.ravel(k)
    out = np.empty(flat.shape)
    s2 = sigma * sigma
    em = (flat / s2 <= 0.05) if sigma >= 20.0 else np.zeros(flat.shape, dtype=bool)
    if em.any():
        kk = flat[em]
        z = kk / sigma
        z2 = z * z
        he1, he3 = z, z * (z2 - 3.0)
        he5 = z * (z2 * (z2 - 10.0) + 15.0)
        he7 = z * (z2 * (z2 * (z2 - 21.0) + 105.0) - 105.0)
        corr = (0.5 + he1 / (12.0 * sigma) - he3 / (720.0 * sigma ** 3)
                + he5 / (30240.0 * sigma ** 5) - he7 / (1209600.0 * sigma ** 7))
        out[em] = np.logaddexp(math.log(sigma) + _LOG_SQRT_2PI + log_ndtr(-z),
                               -kk * kk / (2.0 * s2) + np.log(corr))
    rest = np.flatnonzero(~em)
    if rest.size:
        kr = flat[rest]
        h = np.maximum(kr / s2, 1e-300)
        jmax = int(np.ceil(float(np.max(np.minimum(40.0 / h, 9.0 * sigma))))) + 2
        j = np.arange(jmax + 1, dtype=float)
        rows = max(1, (1 << 22) // (jmax + 1))
        for s in range(0, kr.size, rows):
            kc = kr[s:s + rows, None]
            out[rest[s:s + rows]] = -kc[:, 0] ** 2 / (2.0 * s2) + logsumexp(
                -(2.0 * kc * j[None, :] + j[None, :] ** 2) / (2.0 * s2), axis=1)
    return out.reshape(k.shape)


def dgauss_log_sf(sigma: float, k: FloatArray) -> FloatArray:
    """log P[Y ≥ k] for Y ~ N_ℤ(0, σ²) and integers k (given as floats), vectorised.

    Upper tails (k ≥ 1) by ``_log_upper_sum``; k ≤ 0 by symmetry,
    P[Y ≥ k] = 1 − P[Y ≥ 1 − k], through log1p.
    """
    k = np.asarray(k, dtype=float)
    upper = k >= 1
    kk = np.where(upper, k, 1.0 - k)
    log_tail = _log_upper_sum(sigma, kk) - _log_norm(sigma)
    with np.errstate(divide="ignore"):
        return np.where(upper, log_tail, np.log1p(-np.exp(log_tail)))


def _profile_by_tails(sigma: float, sensitivity: int, eps: FloatArray) -> FloatArray:
    """δ(ε) = A·(1 − e^{ε + log B − log A}) with A = P[Y ≥ a], B = P[Y ≥ a + Δ],
    a = ⌊εσ²/Δ − Δ/2⌋ + 1 (CKS, arXiv:2004.00010). Used when the exact table would be too
    large; the subtraction costs about log₁₀(zσ/Δ) digits (z = a/σ), as for the
    continuous Gaussian's closed form."""
    s2 = sigma * sigma
    fin = np.isfinite(eps)
    e = np.where(fin, eps, 0.0)
    a = np.floor(e * s2 / sensitivity - sensitivity / 2.0) + 1.0
    la = dgauss_log_sf(sigma, a)
    lb = dgauss_log_sf(sigma, a + sensitivity)
    with np.errstate(over="ignore", invalid="ignore"):
        val = np.exp(la) * -np.expm1(np.minimum(e + lb - la, 0.0))
    val = np.where(np.isfinite(la), val, 0.0)
    val = np.where(eps == np.inf, 0.0, np.where(eps == -np.inf, 1.0, val))
    result: FloatArray = np.clip(val, 0.0, 1.0) + 0.0
    return result


def dgauss_delta(sigma: float, sensitivity: int, eps: FloatArray, *, method: str = "auto") -> FloatArray:
    """δ(ε) of (Δ + Y, Y), Y ~ N_ℤ(0, σ²), for an array of ε (±∞ allowed).

    ``method``: "table" (exact cumulative tables, cancellation-free, the default when
    they have at most 2²⁰ entries), "tails" (the CKS formula with accurate tail sums), or
    "auto".
    """
    eps = np.asarray(eps, dtype=float)
    if method == "auto":
        size = sensitivity + 2 * math.ceil(sigma * math.sqrt(2.0 * _DROP))
        method = "table" if size <= _TABLE_MAX else "tails"
    flat = np.ravel(eps)
    fn = _profile_by_table if method == "table" else _profile_by_tails
    return fn(float(sigma), int(sensitivity), flat).reshape(eps.shape)


@attrs.frozen
class DiscreteGaussianPair(Pair):
    """(Δ + Y, Y) with Y ~ N_ℤ(0, σ²) and integer Δ ≥ 1; symmetric."""

    symmetric = True

    sigma: float = attrs.field(validator=lambda i, a, v: check_positive("sigma", v))
    sensitivity: int = attrs.field(default=1,
                                   validator=lambda i, a, v: check_count("sensitivity", v))

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return dgauss_delta(self.sigma, self.sensitivity, eps)

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        t = np.asarray(t, dtype=float)
        rho = self.sensitivity ** 2 / (2.0 * self.sigma ** 2)
        return t * (t + 1.0) * rho + dgauss_log_ratio(self.sigma, t * self.sensitivity)

    def _rho(self, direction: Direction) -> float | None:
        return self.sensitivity ** 2 / (2.0 * self.sigma ** 2)

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...] | int
               ) -> tuple[AnyArray, AnyArray]:
        return (self.sensitivity + dgauss_sample(self.sigma, rng, shape),
                dgauss_sample(self.sigma, rng, shape))

    def describe(self) -> str:
        return f"DiscreteGaussian(σ={self.sigma:g}, Δ={self.sensitivity})"


@attrs.frozen
class DiscreteGaussian(AdditiveNoise):
    """Discrete Gaussian noise N_ℤ(0, σ²) on an integer-valued query.

    ``sigma`` > 0 is the scale parameter of the pmf ∝ e^{−x²/(2σ²)} on ℤ (its variance
    is slightly below σ²). ``sensitivity`` Δ must be a positive integer: the ℓ1
    sensitivity of the integer query under the neighbouring relation in use
    (add/remove by default, or replace-one). The pair is (Δ + Y, Y).
    Formulas (Canonne, Kamath, Steinke 2020, arXiv:2004.00010):
    δ(ε) = P[Y ≥ ⌊εσ²/Δ − Δ/2⌋+1] − e^ε P[Y ≥ ⌊εσ²/Δ + Δ/2⌋+1];
    D_α = αΔ²/(2σ²) + log[Σ_x e^{−(x−(1−α)Δ)²/(2σ²)} / Σ_x e^{−x²/(2σ²)}]/(α − 1)
    ≤ αΔ²/(2σ²), equality iff (α − 1)Δ ∈ ℤ; ρ* = Δ²/(2σ²).
    """

    name = "discrete_gaussian"
    domain = "integer"
    sensitivity: float = attrs.field(default=1.0, kw_only=True,
                                     metadata={"range": INTEGER_SENSITIVITY},
                                     validator=_integer_sensitivity_check)
    sigma: float = parameter(NOISE_SCALE)

    def log_density(self, x: FloatArray) -> FloatArray:
        return -0.5 * (np.asarray(x, dtype=float) / self.sigma) ** 2

    def noise_width(self) -> float:
        return self.sigma

    def sample_noise(self, rng: np.random.Generator, shape: tuple[int, ...] | int
                     ) -> AnyArray:
        return dgauss_sample(float(self.sigma), rng, shape)

    def pair(self) -> Pair:
        corner = corner_pair(self.sensitivity, self.sigma, self.name)
        if corner is not None:
            return corner
        return DiscreteGaussianPair(float(self.sigma), int(self.sensitivity))


# ================================================ Poisson-subsampled discrete Gaussian
#: lattice points summed per order by ``dgauss_subsampled_cgf``; an order whose window is
#: longer (σ ≳ 200, or a large order times Δ) is left to the generic bounds, which are
#: tight there (``subsampled_rdp.taylor_remove_bound``)
LATTICE_MAX_POINTS = 1 << 14
#: remove orders α at and above which the lattice sum is not tried: there the chord of
#: the neighbouring integer orders' exact sums is within ~f(1 − f)/α² of K (f = α − ⌊α⌋)
LATTICE_MAX_REMOVE_ORDER = 64.0
#: standard deviations of the window beyond the integrand's bulk (its terms outside are
#: below e^{−800} of the bulk's; they are bounded, not dropped)
_LATTICE_SIGMAS = 40.0
#: the machine epsilon eps = 2^-52 of float64 (twice the unit roundoff)
_EPS = np.finfo(float).eps


def _log_gauss_tail(s: FloatArray, s2: float) -> FloatArray:
    """log of an upper bound on Σ_{j ≥ 0} e^{−(s + j)²/(2σ²)} for real s > 0 (s2 = σ²):
    consecutive terms have ratio e^{−(2(s + j) + 1)/(2σ²)} ≤ e^{−(2s + 1)/(2σ²)}, so the
    sum is at most its first term over one minus that ratio."""
    return -s * s / (2.0 * s2) - np.log(-np.expm1(-(2.0 * s + 1.0) / (2.0 * s2)))


def dgauss_subsampled_cgf(sigma: float, sensitivity: int, q: float, t: FloatArray,
                          direction: Direction) -> FloatArray:
    """Upper bound on K(t) of the Poisson-subsampled discrete Gaussian pair
    ((1 − q)Q + qP, Q), Q = N_ℤ(0, σ²), P = Δ + Q, by the direct sum over ℤ with proven
    tails; +∞ where the window would exceed ``LATTICE_MAX_POINTS`` (or q is not in (0, 1)).

    With Y(x) = 1 − q + q e^{L(x)}, L(x) = (2xΔ − Δ²)/(2σ²), the order-λ moment is
    A_λ = Σ_x Q(x) Y(x)^λ, λ = 1 + t (forward, remove: Mironov, Talwar, Zhang 2019,
    arXiv:1908.10530, §3) or −t (backward, add), and K = log A_λ. Since Σ_x Q(x)(Y(x) − 1)
    = 0, A_λ − 1 = Σ_x Q(x) F_λ(Y(x)) with F_λ(y) = y^λ − 1 − λ(y − 1) ≥ 0, a sum of
    non-negative terms (``log_power_excess``) that keeps a tiny K's relative accuracy.
    It is summed over a window [a, b] holding the bulk, and bounded outside it by
    Taylor's theorem, F_λ(y) = λ(λ − 1)/2·ξ^{λ−2}(y − 1)² with ξ between 1 and y:
    left of a (L < 0, 1 − q < y < 1), F_λ ≤ |λ(λ − 1)|/2·q²·max(1, (1 − q)^{λ−2}) times
    Q(x ≤ a − 1); right of b (L > 0, y ≤ e^L, y − 1 ≤ q e^L), F_λ ≤ |λ(λ − 1)|/2·q²·e^{cL},
    c = max(λ, 2) forward and 2 backward, and Q(x)e^{cL(x)} is a Gaussian centred at cΔ
    times e^{c(c − 1)Δ²/(2σ²)}; both tails are Gaussian sums (``_log_gauss_tail``). The
    window: [−40σ, cΔ + 40σ] forward and [−40σ − 2σ²log(1 + t)/Δ − Δ, 2Δ + 40σ] backward
    (the add direction's bulk moves left as the weight (1 − q)^{−t} of Y → 1 − q grows).
    Roundoff: each term's logarithm is within 16 u of the sum of its components' sizes,
    the sum within (n + 2) u (Higham, Accuracy and Stability, §4.2); the result is raised
    by both.
    """
    t = np.asarray(t, dtype=float)
    flat = np.ravel(t)
    out = np.full(flat.shape, np.inf)
    if not 0.0 < q < 1.0:
        return out.reshape(t.shape)
    forward = direction is Direction.FORWARD
    s2 = float(sigma) * float(sigma)
    d = float(sensitivity)
    lam = 1.0 + flat if forward else -flat
    c = np.maximum(lam, 2.0)
    reach = math.ceil(_LATTICE_SIGMAS * sigma)
    with np.errstate(over="ignore", invalid="ignore"):
        if forward:
            a = np.full(flat.shape, -float(reach) - 1.0)
        else:
            a = -np.ceil(reach + 2.0 * s2 * np.log1p(flat) / d + d) - 1.0
        b = np.ceil(c * d) + reach + 1.0
        count = b - a + 1.0
    use = (flat > 0) & np.isfinite(count) & (count <= LATTICE_MAX_POINTS)
    if not use.any():
        return out.reshape(t.shape)
    lam_u, c_u, a_u, b_u = lam[use], c[use], a[use], b[use]
    counts = (b_u - a_u + 1.0).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    owner = np.repeat(np.arange(counts.size), counts)
    x = a_u[owner] + (np.arange(int(counts.sum())) - starts[owner])
    log_z = _log_norm(float(sigma))
    big_l = (2.0 * x * d - d * d) / (2.0 * s2)
    log_q0 = -x * x / (2.0 * s2) - log_z
    ell = log_mixture_ratio(big_l, q)
    lam_x = lam_u[owner]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        terms = log_q0 + log_power_excess(ell, lam_x)
        terms = np.where(np.isnan(terms), np.inf, terms)         # NaN: no bound from here
        size = 1.0 + x * x / (2.0 * s2) + abs(log_z) + np.abs(big_l) \
            + 4.0 * (1.0 + np.abs(lam_x)) * (1.0 + np.abs(ell))
        shift = np.maximum.reduceat(terms, starts)
        shift = np.where(np.isfinite(shift), shift, 0.0)
        scaled = np.exp(terms - shift[owner]) * (1.0 + 16.0 * _EPS * size)
        window = np.add.reduceat(scaled, starts) * (1.0 + (counts + 2.0) * _EPS)
        log_window = shift + np.log(window)
        lq, lq1 = math.log(q), math.log1p(-q)
        coef = np.log(np.abs(lam_u * (lam_u - 1.0)) / 2.0) + 2.0 * lq
        left = coef + np.maximum(0.0, (lam_u - 2.0) * lq1) + _log_gauss_tail(1.0 - a_u, s2) - log_z
        right = coef + (c_u * c_u - c_u) * d * d / (2.0 * s2) \
            + _log_gauss_tail(b_u + 1.0 - c_u * d, s2) - log_z
        log_excess = np.logaddexp(log_window, np.logaddexp(left, right))
        k = np.logaddexp(0.0, log_excess) * (1.0 + 8.0 * _EPS)
    out[use] = np.where(np.isnan(k), np.inf, k)
    return out.reshape(t.shape)


@attrs.frozen
class SubsampledDiscreteGaussianPair(PoissonSubsampledPair):
    """((1 − q)Q + qP, Q) for the discrete Gaussian pair (P, Q) = (Δ + Y, Y): the generic
    subsampled pair, whose Rényi curve is tightened by the direct lattice sum
    (``dgauss_subsampled_cgf``) at every order of the add direction and at the
    fractional remove orders below ``LATTICE_MAX_REMOVE_ORDER`` (the integer ones are
    exact binomial sums)."""

    def __attrs_post_init__(self) -> None:
        self._gaussian_base()

    def _gaussian_base(self) -> DiscreteGaussianPair:
        """``base``, refused unless a discrete Gaussian pair (the lattice sum's law)."""
        if not isinstance(self.base, DiscreteGaussianPair):
            raise TypeError(f"base must be a DiscreteGaussianPair, got {type(self.base).__name__}")
        return self.base

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        t = np.asarray(t, dtype=float)
        generic = np.asarray(super()._cgf(t, direction), dtype=float)
        where = t > 0
        if direction is Direction.FORWARD:
            where = where & (t != np.floor(t)) & (t + 1.0 < LATTICE_MAX_REMOVE_ORDER)
        if not np.any(where):
            return generic
        base = self._gaussian_base()
        lattice = dgauss_subsampled_cgf(base.sigma, base.sensitivity, float(self.q),
                                        np.where(where, t, 0.0), direction)
        return np.where(where, np.minimum(generic, lattice), generic)


# ===================================================================== discrete Laplace
def _log_sinh(x: FloatArray) -> FloatArray:
    """log sinh(x) for x ≥ 0 (−∞ at 0), without overflow."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):
        return x - math.log(2.0) + np.log(-np.expm1(-2.0 * x))


def _log_geom(s: FloatArray, n: int) -> FloatArray:
    """log Σ_{k=1}^{n} e^{ks} for real s (vectorised) and an integer n ≥ 0."""
    s = np.asarray(s, dtype=float)
    if n <= 0:
        return np.full(s.shape, -np.inf)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        pos = n * s + np.log(-np.expm1(-n * s)) - np.log(-np.expm1(-s))
        neg = s + np.log(-np.expm1(n * s)) - np.log(-np.expm1(s))
    return np.where(s > 0, pos, np.where(s < 0, neg, math.log(n)))


def dlaplace_atoms(a: float, sensitivity: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The exact law of L under P for (Δ + Y, Y), Y discrete Laplace(a): the losses
    a(2k − Δ), k = 0..Δ, their log P-masses and log Q-masses (Q_k = P_k e^{−l_k})."""
    k = np.arange(sensitivity + 1, dtype=float)
    losses = a * (2.0 * k - sensitivity)
    log_c = math.log(math.tanh(a / 2.0))
    logp = log_c - a * (sensitivity - k)
    logp[0] = -a * sensitivity - math.log1p(math.exp(-a))
    logp[-1] = -math.log1p(math.exp(-a))
    return losses, logp, logp - losses


#: largest Δ whose CGF is summed atom by atom (beyond, geometric closed forms)
_ATOM_MAX = 4096


def _atom_cgf(losses: FloatArray, logp: FloatArray, t: FloatArray) -> FloatArray:
    """K(t) = log Σ_i p_i e^{t l_i} for a finite law (Σ p_i = 1), vectorised over t.

    Where |t|·max|l| ≤ 1, K = log1p(Σ_i p_i expm1(t l_i)), which keeps relative accuracy
    as t → 0 (K ≈ t·KL); elsewhere the log-sum-exp of log p_i + t l_i.
    """
    t = np.asarray(t, dtype=float)
    flat = np.ravel(t)
    small = np.abs(flat) * float(np.max(np.abs(losses))) <= 1.0
    out = np.empty(flat.shape)
    if small.any():
        ts = flat[small][:, None]
        terms = np.exp(logp)[None, :] * np.expm1(ts * losses[None, :])
        out[small] = np.log1p(np.sum(terms, axis=1))
    if (~small).any():
        tl = flat[~small][:, None]
        out[~small] = logsumexp(logp[None, :] + tl * losses[None, :], axis=1)
    return out.reshape(t.shape)


@attrs.frozen
class DiscreteLaplacePair(Pair):
    """(Δ + Y, Y) with Y discrete Laplace, pmf tanh(a/2)e^{−a|x|}; symmetric."""

    symmetric = True

    a: float = attrs.field(validator=lambda i, a, v: check_positive("a", v))
    sensitivity: int = attrs.field(default=1,
                                   validator=lambda i, a, v: check_count("sensitivity", v))

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        """δ(ε) = Σ_{l_k > ε} P_k(1 − e^{ε − l_k}) over the atoms, in closed form.

        With k* the first atom above ε and m = Δ − k* interior atoms above it,
        δ = P_Δ(1 − e^{ε−aΔ}) + C[2Σ_{j<m} sinh(aj) + (1 − e^{ε − l_{k*}})Σ_{j<m} e^{−aj}],
        C = tanh(a/2)e^{−am}: every term non-negative (no cancellation).
        """
        eps = np.asarray(eps, dtype=float)
        a, d = self.a, self.sensitivity
        e = np.where(np.isfinite(eps), eps, 0.0)
        # ε − aΔ with aΔ = hi + lo split exactly, so that δ keeps its relative accuracy
        # as ε → aΔ (where δ ≈ P_Δ·(aΔ − ε))
        hi = a * d
        lo = float(Fraction(a) * d - Fraction(hi))
        gap = (e - hi) - lo
        top = -np.expm1(np.minimum(gap, 0.0)) / (1.0 + math.exp(-a))
        kstar = np.clip(np.floor((e / a + d) / 2.0) + 1.0, 1.0, float(d))
        m = d - kstar
        lk = a * (2.0 * kstar - d)
        log_c = math.log(math.tanh(a / 2.0))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_sinh_sum = (_log_sinh(a * (m - 1.0) / 2.0) + _log_sinh(a * m / 2.0)
                            - float(_log_sinh(np.array(a / 2.0))))
            sinh_part = np.where(m >= 2, np.exp(log_c - a * m + math.log(2.0) + log_sinh_sum), 0.0)
            geo = np.expm1(-a * m) / math.expm1(-a)
            edge = np.exp(log_c - a * m) * np.maximum(-np.expm1(e - lk), 0.0) * geo
        inner = np.where(m >= 1, sinh_part + edge, 0.0)
        val = top + inner
        val = np.where(e < -a * d, -np.expm1(np.minimum(e, 0.0)), val)
        val = np.where(gap >= 0.0, 0.0, val)
        val = np.where(eps == np.inf, 0.0, np.where(eps == -np.inf, 1.0, val))
        return np.clip(val, 0.0, 1.0)

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        """K(t) = log E_P[e^{tL}] over the Δ + 1 atoms (``_atom_cgf``); for Δ = 1 it is
        log[(e^{(1+t)a} + e^{−ta})/(1 + e^a)] (from the two-atom loss law). For Δ > 4096, the closed
        form log[P₀e^{−taΔ} + P_Δe^{taΔ} + tanh(a/2)e^{−aΔ(1+t)}Σ_{k=1}^{Δ−1}e^{ka(1+2t)}]
        with the geometric sum in closed form (less accurate as t → 0)."""
        t = np.asarray(t, dtype=float)
        a, d = self.a, self.sensitivity
        if d <= _ATOM_MAX:
            losses, logp, _ = dlaplace_atoms(a, d)
            return _atom_cgf(losses, logp, t)
        l1p = math.log1p(math.exp(-a))
        bottom = -a * d - l1p - t * a * d
        top = -l1p + t * a * d
        mid = (math.log(math.tanh(a / 2.0)) - a * d * (1.0 + t)
               + _log_geom(a * (1.0 + 2.0 * t), d - 1))
        result: FloatArray = logsumexp(np.stack([bottom, top, mid]), axis=0)
        return result

    def _beta(self, alpha: FloatArray, direction: Direction) -> FloatArray:
        """T(P, Q)(α), exact: the Neyman–Pearson tests reject the smallest losses first,
        so T is piecewise linear through (P(L ≤ l_j), Q(L > l_j)), with slope −e^{−l_j}
        on the segment of atom j. Symmetric pair: T(Q, P) = T(P, Q). (None for
        Δ > 4096, where the trade-off comes from the PLD.)"""
        if not self.provides("beta"):
            raise not_provided(self, "beta")
        alpha = np.asarray(alpha, dtype=float)
        losses, logp, logq = dlaplace_atoms(self.a, self.sensitivity)
        p, q = np.exp(logp), np.exp(logq)
        a_right = np.append(np.cumsum(p)[:-1], 1.0)          # α after rejecting atoms ≤ j
        b_right = np.append(np.cumsum(q[::-1])[::-1][1:], 0.0)  # β = Q(L > l_j)
        j = np.minimum(np.searchsorted(a_right, alpha, side="left"), losses.size - 1)
        beta = b_right[j] + (a_right[j] - alpha) * np.exp(-losses[j])
        return np.clip(beta, 0.0, 1.0)

    def provides(self, primitive: str) -> bool:
        """The trade-off function in closed form up to Δ = 4096 atoms."""
        if primitive == "beta":
            return self.sensitivity <= _ATOM_MAX
        return super().provides(primitive)

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...] | int
               ) -> tuple[AnyArray, AnyArray]:
        return (self.sensitivity + dlaplace_sample(self.a, rng, shape),
                dlaplace_sample(self.a, rng, shape))

    def describe(self) -> str:
        return f"DiscreteLaplace(a={self.a:g}, Δ={self.sensitivity})"


@attrs.frozen(init=False)
class DiscreteLaplace(AdditiveNoise):
    """Discrete Laplace (two-sided geometric) noise on an integer-valued query.

    ``scale`` > 0 is the scale of the pmf tanh(a/2)·e^{−|x|/scale} on ℤ, a = 1/scale
    its decay rate (the ratio of consecutive masses is e^{−a}); more noise is a larger
    scale, as for every noise parameter. ``sensitivity`` Δ must be a positive integer:
    the ℓ1 sensitivity of the integer query under the neighbouring relation in use
    (add/remove by default, or replace-one). The pair is (Δ + Y, Y); its loss
    a(|x| − |x − Δ|) takes the Δ + 1 values a(2k − Δ), so the mechanism is (aΔ)-DP.
    For Δ = 1 the PLD is two atoms, +a with mass e^a/(1+e^a) and −a with 1/(1+e^a), and
    D_α = log[(e^{αa} + e^{(1−α)a})/(1 + e^a)]/(α − 1) (from the two-atom loss law);
    general Δ by the exact geometric sums of ``DiscreteLaplacePair``.

    Deprecated: ``a=`` (the decay rate, an inverse scale) is still accepted for one
    release with a ``DeprecationWarning``; the rate is then used exactly as given
    (``scale`` reads 1/a).
    """

    name = "discrete_laplace"
    domain = "integer"
    sensitivity: float = attrs.field(default=1.0, kw_only=True,
                                     metadata={"range": INTEGER_SENSITIVITY},
                                     validator=_integer_sensitivity_check)
    # the None default is a placeholder: __init__ always passes a float scale (from
    # scale= or 1/a) or raises, so the attribute is a float on every built instance
    scale: float = attrs.field(default=None, kw_only=True,  # type: ignore[assignment]
                               validator=attrs.validators.optional(in_range(NOISE_SCALE)),
                               metadata={"range": NOISE_SCALE})
    #: the deprecated decay rate, as given (``a=``); None when ``scale`` is given
    _given_rate: float | None = attrs.field(default=None, kw_only=True, alias="a",
                                               repr=False, metadata={"deprecated": "scale"})

    def __init__(self, *args: Any, scale: float | None = None,
                 a: float | None = None, **kwargs: Any) -> None:
        # the deprecated a= sets scale = 1/a, so both are fixed before the record is
        # built (attrs' own __init__ then validates every field; nothing is set later)
        if a is not None:
            warnings.warn("discrete_laplace: the parameter a (decay rate) is deprecated; "
                          "give scale = 1/a instead", DeprecationWarning, stacklevel=2)
            if scale is not None:
                raise TypeError("discrete_laplace: give scale or the deprecated a, not both")
            # the sensitivity first, as attrs checks it first; the rate's range is per unit
            # of it (its field default when not given)
            sensitivity = kwargs.get("sensitivity", 1.0)
            _check_integer_sensitivity(self.name, sensitivity)
            a = float(DECAY_RATE.check("a", a, types.SimpleNamespace(sensitivity=sensitivity)))
            scale = 1.0 / a
        elif scale is None:
            raise TypeError("discrete_laplace: missing the parameter scale (the noise "
                            "scale, 1/decay rate)")
        self.__attrs_init__(*args, scale=scale, a=a, **kwargs)

    @property
    def a(self) -> float:
        """The decay rate 1/scale (exactly the deprecated ``a`` when that was given)."""
        return self._given_rate if self._given_rate is not None else 1.0 / float(self.scale)

    def log_density(self, x: FloatArray) -> FloatArray:
        result: FloatArray = -self.a * np.abs(np.asarray(x, dtype=float))
        return result

    def noise_width(self) -> float:
        return float(self.scale)

    def sample_noise(self, rng: np.random.Generator, shape: tuple[int, ...] | int
                     ) -> AnyArray:
        return dlaplace_sample(float(self.a), rng, shape)

    def pair(self) -> Pair:
        corner = corner_pair(self.sensitivity, self.scale, self.name)
        if corner is not None:
            return corner
        return DiscreteLaplacePair(float(self.a), int(self.sensitivity))


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(DiscreteGaussian)
    register(DiscreteLaplace)


@hookimpl
def accounting_register_specialisations(register: RegisterSpecialisation) -> None:
    # Poisson subsampling of the discrete Gaussian: the lattice sum above
    register(PoissonSubsampledPair, DiscreteGaussianPair, SubsampledDiscreteGaussianPair)
