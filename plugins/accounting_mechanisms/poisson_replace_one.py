"""Poisson subsampling of the Gaussian mechanism under replace-one neighbouring.

Each record enters the batch with probability q; neighbours differ in one record
x ↔ x′. With probability 1 − q neither is sampled (the outputs agree); otherwise the
clipped sums differ by f(x) − f(x′), each of norm ≤ Δ (Δ = ``sensitivity``, the
add/remove bound, e.g. the clipping norm). The dominating pair is

  P = (1 − q)N(0, σ²) + q N(Δ, σ²),   Q = (1 − q)N(0, σ²) + q N(−Δ, σ²)

(the pair dp_accounting uses for its REPLACE adjacency with sampling: in one
dimension the worst records put f(x) = Δ and f(x′) = −Δ; replace-one neighbouring
under Poisson sampling is analysed in Zhu, Dong, Wang 2022, arXiv:2106.08567). x ↦ −x swaps P and Q,
so the pair is symmetric. Its loss

  L(x) = log((1 − q) + q e^{(2xΔ − Δ²)/(2σ²)}) − log((1 − q) + q e^{(−2xΔ − Δ²)/(2σ²)})

is odd and increasing, so {L > ε} = {x > x_ε} with x_ε found by safeguarded Newton
steps (to 4e-16 relative) in the bracket [0, σ²(ε − log q)/Δ + Δ/2 + σ] (ε ≥ 0; x_{−ε} = −x_ε), and

  δ(ε) = (1 − q)Φ̄(x_ε/σ) + qΦ̄((x_ε − Δ)/σ) − e^ε[(1 − q)Φ̄(x_ε/σ) + qΦ̄((x_ε + Δ)/σ)],

which, like the mixture of Gaussians, is exact to roundoff (δ is stationary in the
threshold at x_ε). The Rényi curve is the quadrature log ∫ P^{1+t}Q^{−t} (labelled
numerical); ρ* ≤ 2Δ²/σ² (joint convexity over the two branches). At q = 1 the pair is
the Gaussian with sensitivity 2Δ; q = 0 gives P = Q (no privacy cost; so does Δ = 0
for the pair, while the mechanism's sensitivity is > 0 like the Gaussian's).
"""

from __future__ import annotations

import math

import attrs
import numpy as np
from scipy.special import expit, log_ndtr

from accounting.curves.curve import Exactness
from accounting.pairs.additive import log_integral
from accounting.pairs.mechanism import Mechanism, Neighbouring, Range, as_neighbouring, parameter
from accounting.pairs.pair import Pair
from accounting.registry.hookspecs import hookimpl

from .mixture_of_gaussians import _lse

__all__ = ["PoissonReplaceOneGaussian", "ReplaceOneGaussianPair"]

#: σ/Δ as for the subsampled Gaussian; q in [0, 1] (0: nothing sampled, no cost)
SIGMA = Range(1e-2, 1e8, per="sensitivity", log=True)
RATE = Range(0.0, 1.0)


@attrs.frozen
class ReplaceOneGaussianPair(Pair):
    """((1 − q)N(0, σ²) + qN(Δ, σ²), (1 − q)N(0, σ²) + qN(−Δ, σ²)); symmetric."""

    sigma: float
    delta: float
    q: float
    _memo: dict = attrs.field(factory=dict, init=False, repr=False, eq=False)

    symmetric = True

    @property
    def _free(self) -> bool:
        return self.q == 0.0 or self.delta == 0.0

    def _log_components(self, x: np.ndarray, sign: float) -> np.ndarray:
        """log density ratio to N(0, σ²) of (1 − q)N(0) + qN(sign·Δ), at x (vectorised)."""
        s2 = self.sigma ** 2
        a = (2.0 * sign * x * self.delta - self.delta ** 2) / (2.0 * s2)
        lq1 = math.log1p(-self.q) if self.q < 1.0 else -np.inf
        with np.errstate(divide="ignore"):
            return np.logaddexp(lq1, math.log(self.q) + a)

    def loss(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return self._log_components(x, 1.0) - self._log_components(x, -1.0)

    def _slope(self, x: np.ndarray) -> np.ndarray:
        """L′(x) = (Δ/σ²)[s(x) + s(−x)], s(x) = expit(a(x) + log q − log(1 − q)) (> 0)."""
        s2 = self.sigma ** 2
        shift = math.log(self.q) - (math.log1p(-self.q) if self.q < 1.0 else -np.inf)
        a = lambda y: (2.0 * y * self.delta - self.delta ** 2) / (2.0 * s2) + shift  # noqa: E731
        return self.delta / s2 * (expit(a(x)) + expit(a(-x)))

    def _root(self, eps: np.ndarray) -> np.ndarray:
        """inf{x : L(x) > ε} for ε ≥ 0 (L odd and increasing): Newton steps kept inside
        a bisection bracket [lo, hi] (a step that leaves it is replaced by the midpoint),
        to 4e-16·max(x, σ). δ is stationary in the threshold at the root, so that
        error moves δ by ~1e-31 relative."""
        lo = np.zeros(eps.shape)
        hi = np.maximum(self.sigma ** 2 * (eps - math.log(self.q)) / self.delta
                        + self.delta / 2.0, 0.0) + self.sigma
        x = 0.5 * (lo + hi)
        act = np.arange(x.size)
        for _ in range(200):
            xa, la, ha = x[act], lo[act], hi[act]
            f = self.loss(xa) - eps[act]
            la = np.where(f <= 0, xa, la)
            ha = np.where(f > 0, xa, ha)
            with np.errstate(divide="ignore", invalid="ignore"):
                nx = xa - f / self._slope(xa)
            inside = (nx > la) & (nx < ha) & np.isfinite(nx)
            nx = np.where(inside, nx, 0.5 * (la + ha))
            tol = 4e-16 * np.maximum(np.abs(xa), self.sigma)
            done = (np.abs(nx - xa) <= tol) | ((ha - la) <= tol)
            x[act], lo[act], hi[act] = nx, la, ha
            act = act[~done]
            if act.size == 0:
                break
        return x

    def _profile(self, eps, direction):
        eps = np.asarray(eps, dtype=float)
        flat = np.ravel(eps)
        e = np.where(np.isfinite(flat), flat, 0.0)
        if self._free:
            out = -np.expm1(np.minimum(e, 0.0))
        else:
            s, d, q = self.sigma, self.delta, self.q
            x = self._root(np.abs(e))
            x = np.where(e >= 0, x, -x)
            lq1 = math.log1p(-q) if q < 1.0 else -np.inf
            lq = math.log(q)
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                log_a = np.logaddexp(lq1 + log_ndtr(-x / s), lq + log_ndtr((d - x) / s))
                log_b = np.logaddexp(lq1 + log_ndtr(-x / s), lq + log_ndtr((-d - x) / s))
                out = np.exp(log_a) * -np.expm1(np.minimum(e + log_b - log_a, 0.0))
            out = np.where(np.isfinite(log_a), out, 0.0)
        out = np.where(flat == np.inf, 0.0, np.where(flat == -np.inf, 1.0, out))
        return np.clip(out, 0.0, 1.0).reshape(eps.shape)

    def _cgf(self, t, direction):
        t = np.asarray(t, dtype=float)
        if self._free:
            return np.zeros(t.shape)
        out = np.empty(t.size)
        for i, tt in enumerate(np.ravel(t)):
            key = float(tt)               # symmetric: one curve for both directions
            if key not in self._memo:
                self._memo[key] = self._log_moment(key)
            out[i] = self._memo[key]
        return out.reshape(t.shape)

    def _log_moment(self, t: float) -> float:
        """log ∫ φ_σ(x) e^{(1+t)log(P/φ) − t log(Q/φ)} dx (quadrature)."""
        if t == 0.0:
            return 0.0
        s, d = self.sigma, self.delta

        def h(x):
            return (-0.5 * (x / s) ** 2 - 0.5 * math.log(2 * math.pi) - math.log(s)
                    + (1.0 + t) * self._log_components(x, 1.0) - t * self._log_components(x, -1.0))
        reach = (abs(t) * 2.0 + 1.0) * (d + 40.0 * s)
        k = log_integral(h, -reach, reach, s, d)
        # K(t) ≥ 0 for t > 0 and ≤ 0 for −1 < t < 0 (D_α ≥ 0): quadrature roundoff at
        # near-zero divergences (σ ≫ Δ) must not cross that sign
        return max(k, 0.0) if t > 0 else min(k, 0.0)

    def cgf_lower(self, t, direction):
        return self._cgf(t, direction)

    def cgf_exactness(self) -> Exactness:
        return Exactness.EXACT if self._free else Exactness.NUMERICAL

    def rho_bound(self, direction):
        """2Δ²/σ²: pairing the branches, e^{tK} ≤ (1 − q) + q e^{t(t+1)(2Δ)²/(2σ²)}."""
        return 2.0 * self.delta ** 2 / self.sigma ** 2

    def describe(self) -> str:
        return f"PoissonReplaceOne(q={self.q:g})∘Gaussian(σ={self.sigma:g}, Δ={self.delta:g})"


@attrs.frozen
class PoissonReplaceOneGaussian(Mechanism):
    """Poisson sampling at rate ``q``, then Gaussian noise ``sigma`` on a sum whose
    records have norm ≤ ``sensitivity``, accounted under replace-one neighbouring
    (one record changed). See the module docstring.
    """

    name = "poisson_replace_one_gaussian"
    q: float = parameter(RATE)
    sigma: float = parameter(SIGMA)
    neighbouring: Neighbouring = attrs.field(default=Neighbouring.REPLACE_ONE, kw_only=True,
                                             converter=as_neighbouring)

    def __attrs_post_init__(self):
        if self.neighbouring is not Neighbouring.REPLACE_ONE:
            raise ValueError("poisson_replace_one_gaussian is accounted under replace_one "
                             "neighbouring; for add/remove use subsampled_gaussian")

    def pair(self) -> ReplaceOneGaussianPair:
        return ReplaceOneGaussianPair(float(self.sigma), float(self.sensitivity), float(self.q))


@hookimpl
def accounting_register_mechanisms(register):
    register(PoissonReplaceOneGaussian)
