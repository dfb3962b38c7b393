"""The Laplace mechanism, with closed-form profile and Rényi curve.

M(D) = f(D) + Lap(0, b), sensitivity Δ (ℓ1). With e = Δ/b the loss lies in [−e, e]
and the pair (Lap(Δ, b), Lap(0, b)) is symmetric.

* profile (from the loss law L = (|x − Δ| − |x|)/b): δ(ε) = 1 − exp((ε − e)/2) for |ε| ≤ e, 0 above, 1 − e^ε below;
* RDP (Mironov 2017, Table II), in the stable form
  D_α = e + log1p((α − 1)·expm1(e(1 − 2α))/(2α − 1))/(α − 1);
* ρ* = e + e^{−e} − 1, the KL divergence: the sup of K(t)/(t(t+1)) sits at t → 0
  (unifying-accounting paper, arXiv:2610.02414, §6);
* characteristic function φ(t) = M(it), M(z) = ((1 + z)e^{ze} + z e^{−e(1+z)})/(1 + 2z)
  (``cgf_analytic``, from the loss law below);
* loss atoms: L = |x| − |x − e| under P = Lap(e, 1) is e on x ≥ e (P-mass ½) and −e on
  x ≤ 0 (P-mass ½e^{−e}), continuous in between; the pair is symmetric, so the
  backward law (−L under Q) has the same atoms. Declared, they sit on the PLD grid
  exactly instead of being smeared over the cells below them.
"""

from __future__ import annotations

import attrs
import numpy as np

from accounting.pairs.additive import AdditiveNoise
from accounting.pairs.mechanism import NOISE_SCALE, parameter
from accounting.pairs.pair import NoiseDensity, Pair, corner_pair
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.validation import check_positive
from accounting.vocabulary import AnyArray, Bound, Direction, FloatArray

__all__ = ["Laplace", "LaplacePair"]


@attrs.frozen
class LaplacePair(Pair):
    """(Lap(e, 1), Lap(0, 1)) with e = Δ/b."""

    symmetric = True

    e: float = attrs.field(validator=lambda i, a, v: check_positive("e", v))

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        eps = np.asarray(eps, dtype=float)
        e = self.e
        with np.errstate(over="ignore"):
            mid = -np.expm1((np.clip(eps, -e, e) - e) / 2.0)
            below = -np.expm1(np.minimum(eps, 0.0))
        return np.where(eps >= e, 0.0, np.where(eps <= -e, below, mid))

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        t = np.asarray(t, dtype=float)
        a = 1.0 + t
        return t * self.e + np.log1p(t * np.expm1(self.e * (1.0 - 2.0 * a)) / (2.0 * a - 1.0))

    def cgf_analytic(self, z: AnyArray, direction: Direction) -> AnyArray:
        """K(z) = log M(z), M(z) = ((1 + z)e^{ze} + z e^{−e(1+z)})/(1 + 2z): the atoms e
        (mass ½) and −e (mass ½e^{−e}) plus ∫_0^e ½e^{x−e}e^{z(2x−e)}dx (the module
        docstring's law), in both directions; M(0) = M(−1) = 1. At z = −½ the
        singularity is removable: M(−½) = e^{−e/2}(1 + e/2)."""
        z = np.asarray(z, dtype=complex)
        e = self.e
        near = np.abs(1.0 + 2.0 * z) < 1e-6
        w = np.where(near, 0.0, z)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = ((1.0 + w) * np.exp(w * e) + w * np.exp(-e * (1.0 + w))) / (1.0 + 2.0 * w)
        m = np.where(near, np.exp(-e / 2.0) * (1.0 + e / 2.0), m)
        result: AnyArray = np.log(m)
        return result

    def _rho(self, direction: Direction) -> float | None:
        rho: float = self.e + np.expm1(-self.e)
        return rho

    def _renyi_limit(self, order: float, direction: Direction,
                     side: Bound = Bound.UPPER) -> float | None:
        """KL = e^{−e} + e − 1 and D_∞ = e (the loss lies in [−e, e]), both exact."""
        return self.e + np.expm1(-self.e) if order == 1.0 else self.e

    def loss_atoms(self, direction: Direction) -> tuple[FloatArray, FloatArray]:
        """Atoms −e (mass ½e^{−e}) and e (mass ½), in both directions (module docstring)."""
        return np.array([-self.e, self.e]), np.array([0.5 * np.exp(-self.e), 0.5])

    def noise_density(self) -> NoiseDensity:
        """(Lap(e, 1), Lap(0, 1)) as additive noise: (log-density, Δ, width, span)."""
        return NoiseDensity(lambda x: -np.abs(x), self.e, 1.0, (-800.0, 800.0 + self.e))

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...] | int
               ) -> tuple[AnyArray, AnyArray]:
        return self.e + rng.laplace(0.0, 1.0, size=shape), rng.laplace(0.0, 1.0, size=shape)

    def describe(self) -> str:
        return f"Laplace(Δ/b={self.e:g})"


@attrs.frozen
class Laplace(AdditiveNoise):
    """Laplace noise with scale ``b`` (density e^{−|x|/b}/(2b)).

    Δ is the ℓ1 sensitivity of the query under the relation in use: add/remove (the
    default) or replace-one (``neighbouring`` records which; the pair (Lap(Δ, b),
    Lap(0, b)) is the same, and symmetric, so both directions coincide).
    """

    name = "laplace"
    b: float = parameter(NOISE_SCALE)

    def log_density(self, x: FloatArray) -> FloatArray:
        result: FloatArray = -np.abs(np.asarray(x, dtype=float)) / self.b
        return result

    def noise_width(self) -> float:
        return self.b

    def sample_noise(self, rng: np.random.Generator, shape: tuple[int, ...] | int
                     ) -> AnyArray:
        return rng.laplace(0.0, self.b, size=shape)

    def pair(self) -> Pair:
        corner = corner_pair(self.sensitivity, self.b, self.name)
        if corner is not None:
            return corner
        return LaplacePair(self.sensitivity / self.b)


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(Laplace)
