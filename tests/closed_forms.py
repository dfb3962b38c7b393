"""Independent reference values for the test suite: closed forms and quadratures.

Nothing here calls the library. Where a formula is delicate (Gaussian tails, Rényi
sums) it is evaluated in mpmath at 40 digits; quadratures use scipy.integrate.quad.
Sources are those of /work/shared/REFERENCE.md (section numbers given below).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
from scipy import integrate, optimize
from scipy.stats import norm

mp.mp.dps = 40


# ----------------------------------------------------------------- Gaussian (§4)
def gaussian_delta(mu: float, eps) -> np.ndarray:
    """Analytic Gaussian (Balle & Wang 2018): δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)."""
    mu_ = mp.mpf(mu)
    out = []
    for e in np.atleast_1d(np.asarray(eps, dtype=float)):
        if e == np.inf:
            out.append(0.0)
        elif e == -np.inf:
            out.append(1.0)
        else:
            x = mp.mpf(e)
            out.append(float(mp.ncdf(mu_ / 2 - x / mu_) - mp.exp(x) * mp.ncdf(-mu_ / 2 - x / mu_)))
    return np.asarray(out).reshape(np.shape(eps))


def gaussian_epsilon(mu: float, delta: float) -> float:
    """The exact ε(δ) of the μ-GDP pair, by brentq on the analytic δ(ε)."""
    mu_, d = mp.mpf(mu), mp.mpf(delta)

    def f(e):
        x = mp.mpf(e)
        return float((mp.ncdf(mu_ / 2 - x / mu_) - mp.exp(x) * mp.ncdf(-mu_ / 2 - x / mu_)) / d - 1)

    if f(0.0) <= 0:
        return 0.0
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
    return optimize.brentq(f, 0.0, hi, xtol=1e-13, rtol=1e-14)


def gaussian_beta(mu: float, alpha) -> np.ndarray:
    """The μ-GDP trade-off function G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) (Dong, Roth, Su 2019),
    with Φ⁻¹(1 − α) taken as the inverse survival function (no cancellation in 1 − α)."""
    return norm.cdf(norm.isf(np.asarray(alpha, dtype=float)) - mu)


# ------------------------------------------------------------------ Laplace (§1, §4)
def laplace_delta(e: float, eps) -> np.ndarray:
    """δ(ε) of (Lap(Δ, b), Lap(0, b)) with e = Δ/b: 1 − exp((ε − e)/2) on |ε| ≤ e."""
    eps = np.asarray(eps, dtype=float)
    return np.where(eps >= e, 0.0,
                    np.where(eps <= -e, 1.0 - np.exp(np.minimum(eps, 0.0)),
                             1.0 - np.exp((np.clip(eps, -e, e) - e) / 2.0)))


def laplace_rdp(alpha: float, e: float) -> float:
    """Mironov 2017, Table II, in its printed (unstabilised) form, at 40 digits."""
    a, e = mp.mpf(alpha), mp.mpf(e)
    return float(mp.log(a / (2 * a - 1) * mp.exp((a - 1) * e)
                        + (a - 1) / (2 * a - 1) * mp.exp(-a * e)) / (a - 1))


# ------------------------------------------------------- randomized response (§1)
def rr_distributions(p: float) -> tuple[np.ndarray, np.ndarray]:
    return np.array([p, 1.0 - p]), np.array([1.0 - p, p])


def rr_rdp(alpha: float, p: float) -> float:
    """Mironov 2017, Table II: log[p^α(1−p)^{1−α} + (1−p)^α p^{1−α}]/(α − 1)."""
    a, p = mp.mpf(alpha), mp.mpf(p)
    return float(mp.log(p ** a * (1 - p) ** (1 - a) + (1 - p) ** a * p ** (1 - a)) / (a - 1))


# ------------------------------------------------------------- finite distributions
def discrete_delta(p, q, eps) -> np.ndarray:
    """Hockey-stick divergence Σ_i (p_i − e^ε q_i)₊ of two probability vectors."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    eps = np.asarray(eps, dtype=float)
    flat = [float(sum(max(mp.mpf(a) - mp.exp(mp.mpf(e)) * mp.mpf(b), 0) for a, b in zip(p, q)))
            if np.isfinite(e) else (1.0 if e < 0 else float(p[q == 0].sum()))
            for e in np.ravel(eps)]
    return np.asarray(flat).reshape(eps.shape)


def discrete_rdp(p, q, alpha: float) -> float:
    """D_α(p‖q) = log Σ p^α q^{1−α}/(α − 1), at 40 digits."""
    a = mp.mpf(alpha)
    s = mp.fsum(mp.mpf(x) ** a * mp.mpf(y) ** (1 - a) for x, y in zip(p, q) if x > 0)
    return float(mp.log(s) / (a - 1))


def discrete_beta(p, q, alpha) -> np.ndarray:
    """T(P, Q)(α) by the Neyman–Pearson lemma: reject P on the smallest p/q first."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    order = np.argsort(p / q)
    a = np.concatenate([[0.0], np.cumsum(p[order])])
    b = np.concatenate([[0.0], np.cumsum(q[order])])
    return 1.0 - np.interp(np.asarray(alpha, float), a, b)


# ---------------------------------------------- Poisson-subsampled Gaussian (§2)
def sg_densities(q: float, sigma: float):
    """P = (1 − q)N(0, σ²) + qN(1, σ²), Q = N(0, σ²) (sensitivity 1), vectorised."""
    c = 1.0 / (sigma * math.sqrt(2.0 * math.pi))

    def p_pdf(x):
        x = np.asarray(x, dtype=float)
        return c * ((1 - q) * np.exp(-x * x / (2 * sigma ** 2))
                    + q * np.exp(-(x - 1.0) ** 2 / (2 * sigma ** 2)))

    def q_pdf(x):
        x = np.asarray(x, dtype=float)
        return c * np.exp(-x * x / (2 * sigma ** 2))
    return p_pdf, q_pdf


def hockey_stick_quad(f, g, eps: float, sigma: float) -> float:
    """∫ (f(x) − e^ε g(x))₊ dx by scipy quad, split where the integrand changes sign.

    The sign changes are located numerically (a vectorised scan, then brentq) so that no
    closed form of the crossing is assumed.
    """
    c = math.exp(eps)

    def h(x):
        return float(f(x) - c * g(x))
    lo, hi = -40.0 * sigma - 2, 40.0 * sigma + 3
    xs = np.linspace(lo, hi, 8001)
    hs = f(xs) - c * g(xs)
    pos = hs > 0
    cuts = []
    for i in np.flatnonzero(pos[:-1] != pos[1:]):     # the positive part starts or ends
        if hs[i] * hs[i + 1] < 0:
            cuts.append(optimize.brentq(h, xs[i], xs[i + 1], xtol=1e-15))
        else:                                          # a scan point is an exact zero
            cuts.append(xs[i] if hs[i] == 0 else xs[i + 1])
    edges = [lo] + cuts + [hi]
    total = 0.0
    for a, b in zip(edges[:-1], edges[1:]):
        if h(0.5 * (a + b)) <= 0:
            continue
        val, _ = integrate.quad(lambda x: max(h(x), 0.0), a, b, limit=400,
                                epsabs=1e-17, epsrel=1e-12)
        total += val
    return total


def sg_rdp_integer(q: float, sigma: float, alpha: int) -> float:
    """D_α(P‖Q) for integer α by the binomial sum of Mironov, Talwar, Zhang 2019 §3.3."""
    q_, s = mp.mpf(q), mp.mpf(sigma)
    a = mp.fsum(mp.binomial(alpha, i) * q_ ** i * (1 - q_) ** (alpha - i)
                * mp.exp((i * i - i) / (2 * s * s)) for i in range(alpha + 1))
    return float(mp.log(a) / (alpha - 1))


def sg_rdp_quad(q: float, sigma: float, alpha: float, direction: str = "forward") -> float:
    """D_α by mpmath quadrature: forward log E_Q[(P/Q)^α]/(α−1), backward with P, Q swapped."""
    q_, s, a = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)

    def ratio(x):  # P/Q
        return (1 - q_) + q_ * mp.exp((2 * x - 1) / (2 * s * s))

    def phi(x):
        return mp.npdf(x, 0, s)
    if direction == "forward":
        integrand = lambda x: phi(x) * ratio(x) ** a  # noqa: E731
    else:  # E_P[(Q/P)^α] = E_Q[(P/Q)^{1−α}]
        integrand = lambda x: phi(x) * ratio(x) ** (1 - a)  # noqa: E731
    peak = float(a) if direction == "forward" else 0.0
    val = mp.quad(integrand, [-mp.inf, -10 * s, 0, 0.5, 1, peak + 10 * s * max(1, float(a)), mp.inf])
    return float(mp.log(val) / (a - 1))


# --------------------------------------------------------------- conversions (§3)
def improved_rdp_epsilon(rdp_fn, delta: float, alpha_max: float = 1e4) -> float:
    """min over real α > 1 of D_α + log(1 − 1/α) − (log δ + log α)/(α − 1)."""
    def obj(log_t):
        a = 1.0 + math.exp(log_t)
        return rdp_fn(a) + math.log1p(-1.0 / a) - (math.log(delta) + math.log(a)) / (a - 1.0)
    grid = np.linspace(math.log(1e-4), math.log(alpha_max), 2000)
    vals = [obj(g) for g in grid]
    i = int(np.argmin(vals))
    res = optimize.minimize_scalar(obj, bounds=(grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]),
                                   method="bounded", options={"xatol": 1e-12})
    return min(vals[i], float(res.fun))


def mironov_rdp_epsilon(rdp_fn, delta: float, alphas) -> float:
    """Mironov 2017 Prop. 3 over a set of orders: min D_α + log(1/δ)/(α − 1)."""
    return min(rdp_fn(a) + math.log(1.0 / delta) / (a - 1.0) for a in alphas)


def cks_zcdp_epsilon(rho: float, delta: float) -> float:
    """Canonne–Kamath–Steinke 2020 Cor. 13: the smallest ε with
    inf_α e^{(α−1)(αρ−ε)}/(α−1)·(1−1/α)^α ≤ δ; computed by bisection on ε."""
    def log_delta(eps):
        def obj(a):
            return (a - 1) * (a * rho - eps) - math.log(a - 1) + a * math.log1p(-1 / a)
        res = optimize.minimize_scalar(obj, bounds=(1 + 1e-9, 1e4), method="bounded",
                                       options={"xatol": 1e-12})
        grid = np.geomspace(1 + 1e-6, 1e4, 4000)
        return min(float(res.fun), min(obj(a) for a in grid))
    return optimize.brentq(lambda e: log_delta(e) - math.log(delta), 0.0, 100.0, xtol=1e-12)


def bun_steinke_epsilon(rho: float, delta: float) -> float:
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
