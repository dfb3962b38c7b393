"""The Gaussian mechanism, with every curve in closed form.

M(D) = f(D) + N(0, σ²), sensitivity Δ (ℓ2, of the add/remove or replace-one relation
in use). Its dominating pair is (N(Δ, σ²), N(0, σ²)); with μ = Δ/σ the privacy loss
is N(μ²/2, μ²) under P and the pair is symmetric, so both directions coincide.

* profile (Balle and Wang 2018, "Improving the Gaussian mechanism", Thm 8):
  δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ);
* trade-off (Dong, Roth, Su 2019, Def. 2.7): G_μ(α) = Φ(Φ⁻¹(1 − α) − μ);
* RDP (Mironov 2017, Table II): D_α = αμ²/2, K(t) = t(t + 1)μ²/2; ρ* = μ²/2;
* composition: k uses are one Gaussian with μ√k (Dong et al. 2019, Cor. 3.3).
"""

from __future__ import annotations

import attrs
import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri

from accounting.pairs.additive import AdditiveNoise
from accounting.pairs.mechanism import NOISE_SCALE, parameter
from accounting.pairs.pair import NoiseDensity, Pair, corner_pair
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.validation import check_positive
from accounting.vocabulary import AnyArray, Bound, Direction, FloatArray

__all__ = ["Gaussian", "GaussianPair", "gaussian_delta"]


def gaussian_delta(mu: float, eps: FloatArray) -> FloatArray:
    """δ(ε) of μ-GDP, computed as Φ(a)·(1 − e^{ε + log Φ(b) − log Φ(a)}) to keep
    relative accuracy deep in the tail; δ(−∞) = 1, δ(+∞) = 0."""
    eps = np.asarray(eps, dtype=float)
    finite = np.isfinite(eps)
    # the usual case, an array without ±∞: nothing to patch in afterwards
    every = eps.ndim > 0 and bool(finite.all())
    e = eps if every else np.where(finite, eps, 0.0)
    scaled = e / mu
    la = log_ndtr(mu / 2.0 - scaled)
    lb = log_ndtr(-mu / 2.0 - scaled)
    with np.errstate(over="ignore"):
        val: FloatArray = np.exp(la) * -np.expm1(np.minimum(e + lb - la, 0.0))
    if every:
        return val
    val = np.where(eps == np.inf, 0.0, val)
    return np.where(eps == -np.inf, 1.0, val)


@attrs.frozen
class GaussianPair(Pair):
    """(N(μ, 1), N(0, 1)): the canonical μ-GDP pair."""

    symmetric = True

    mu: float = attrs.field(validator=lambda i, a, v: check_positive("mu", v))

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return gaussian_delta(self.mu, eps)

    def _beta(self, alpha: FloatArray, direction: Direction) -> FloatArray:
        alpha = np.asarray(alpha, dtype=float)
        result: FloatArray = ndtr(-ndtri(alpha) - self.mu)
        return result

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        t = np.asarray(t, dtype=float)
        return t * (t + 1.0) * self.mu ** 2 / 2.0

    def cgf_analytic(self, z: AnyArray, direction: Direction) -> AnyArray:
        """K(z) = μ²z(z + 1)/2, entire: φ(t) = exp(itμ²/2 − t²μ²/2), the
        characteristic function of L ~ N(μ²/2, μ²)."""
        z = np.asarray(z, dtype=complex)
        return z * (z + 1.0) * self.mu ** 2 / 2.0

    def characteristic_decay(self, direction: Direction) -> float | None:
        """|φ(s)| = e^{−μ²s²/2}."""
        return self.mu ** 2 / 2.0

    def _rho(self, direction: Direction) -> float | None:
        return self.mu ** 2 / 2.0

    def _renyi_limit(self, order: float, direction: Direction,
                     side: Bound = Bound.UPPER) -> float | None:
        """KL = μ²/2 and D_∞ = +∞ (the loss μx − μ²/2 is unbounded), both exact."""
        return self.mu ** 2 / 2.0 if order == 1.0 else np.inf

    def _self_compose(self, count: int) -> Pair | None:
        return GaussianPair(self.mu * np.sqrt(count))

    def gdp_mu(self) -> float:
        """μ: (N(μ, 1), N(0, 1)) is the μ-GDP pair itself (arXiv:1905.02383, Def. 2.6)."""
        return float(self.mu)

    def gdp_pair(self, mu: float) -> GaussianPair:
        return GaussianPair(mu)

    def noise_density(self) -> NoiseDensity:
        """(N(μ, 1), N(0, 1)) as additive noise: (log-density, Δ, width, span)."""
        return NoiseDensity(lambda x: -0.5 * np.square(x), self.mu, 1.0, (-40.0, 40.0 + self.mu))

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...] | int
               ) -> tuple[AnyArray, AnyArray]:
        return self.mu + rng.standard_normal(shape), rng.standard_normal(shape)

    def describe(self) -> str:
        return f"Gaussian(μ={self.mu:g})"


@attrs.frozen
class Gaussian(AdditiveNoise):
    """Gaussian noise N(0, σ²); ``sigma`` is the standard deviation (same units as Δ).

    Δ is the ℓ2 sensitivity of the query under the relation in use: add/remove (the
    default) or replace-one (``neighbouring`` records which; the pair (N(Δ, σ²),
    N(0, σ²)) is the same, and symmetric). For DP-SGD under add/remove, σ = noise
    multiplier × clipping norm and Δ = clipping norm; under replace-one Δ = 2 × clipping
    norm.
    """

    name = "gaussian"
    #: (raising σ adds independent Gaussian noise: a garbling, see ``parameter``)
    sigma: float = parameter(NOISE_SCALE, garbling=True)

    def log_density(self, x: FloatArray) -> FloatArray:
        return -0.5 * (np.asarray(x, dtype=float) / self.sigma) ** 2

    def noise_width(self) -> float:
        return self.sigma

    def sample_noise(self, rng: np.random.Generator, shape: tuple[int, ...] | int
                     ) -> AnyArray:
        return rng.normal(0.0, self.sigma, size=shape)

    def pair(self) -> Pair:
        corner = corner_pair(self.sensitivity, self.sigma, self.name)
        if corner is not None:
            return corner
        return GaussianPair(self.sensitivity / self.sigma)


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(Gaussian)
