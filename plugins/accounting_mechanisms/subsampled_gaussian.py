"""The Poisson-subsampled Gaussian mechanism (DP-SGD), in closed form.

Each record is included independently with probability q, then Gaussian noise of
standard deviation σ is added to a sum of sensitivity Δ (DP-SGD: σ = noise multiplier
× clipping norm, Δ = clipping norm). Under add/remove neighbouring the dominating
pair is P = (1 − q)N(0, σ²) + qN(Δ, σ²), Q = N(0, σ²) (Mironov, Talwar, Zhang 2019, arXiv:1908.10530, §3): its forward
direction P‖Q is *remove*, its backward direction Q‖P is *add*.

* profiles: with δ_G the profile of μ-GDP, μ = Δ/σ (Balle, Barthe, Gaboardi 2018,
  Thm 8, written out for the two directions):
  δ_{P‖Q}(ε) = q·δ_G(log(1 + (e^ε − 1)/q)) for ε > log(1 − q), and 1 − e^ε below;
  δ_{Q‖P}(ε) = (1 − e^ε(1 − q))·δ_G(−log(1 + (e^{−ε} − 1)/q)) for ε < −log(1 − q),
  and 0 above;
* RDP: certified bounds at every real order, in both directions
  (``subsampled_gaussian_rdp``; Mironov, Talwar, Zhang 2019, §3.3): exact sums at
  integer forward orders and chords of them (convexity) between; the add direction by
  sound bounds from the Gaussian's CGF; labelled ``Exactness.UPPER``;
* ρ*: forward Δ²/(2σ²) for every q > 0 (the sup of K(t)/(t(t+1)) is the t → ∞
  limit; unifying-accounting paper §6); backward by the numerical envelope.
"""

from __future__ import annotations

import attrs
import numpy as np

from accounting.pairs.mechanism import RATE, Range, parameter
from accounting.pairs.pair import Pair, disjoint_pair, identical_pair
from accounting.registry.hookspecs import RegisterMechanism, RegisterSpecialisation, hookimpl
from accounting.validation import check_positive
from accounting.vocabulary import AnyArray, Direction, Exactness, FloatArray

from . import subsampled_gaussian_rdp as _rdp
from .gaussian import GaussianPair
from .subsampling import PoissonMechanism, PoissonSubsampledPair

__all__ = ["SubsampledGaussian", "SubsampledGaussianPair"]


@attrs.frozen
class SubsampledGaussianPair(PoissonSubsampledPair):
    """((1 − q)N(0, σ²) + qN(Δ, σ²), N(0, σ²)) with noise multiplier z = σ/Δ: the
    generic subsampled profile of the Gaussian pair, plus the exact Rényi curve."""

    def __attrs_post_init__(self) -> None:
        self._gaussian_base()

    def _gaussian_base(self) -> GaussianPair:
        """``base``, refused unless a Gaussian pair (the exact Rényi curve's law)."""
        if not isinstance(self.base, GaussianPair):
            raise TypeError(f"base must be a GaussianPair, got {type(self.base).__name__}")
        return self.base

    @classmethod
    def of(cls, q: float, z: float) -> SubsampledGaussianPair:
        """The pair for sampling rate q and noise multiplier z = σ/Δ."""
        return cls(GaussianPair(1.0 / check_positive("z", z)), q)

    @property
    def z(self) -> float:
        return 1.0 / self._gaussian_base().mu

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        fn = _rdp.remove_cgf_upper if direction is Direction.FORWARD else _rdp.add_cgf_upper
        return fn(self.q, self.z, np.maximum(np.asarray(t, dtype=float), 0.0))

    def cgf_lower(self, t: FloatArray, direction: Direction) -> FloatArray:
        fn = _rdp.remove_cgf_lower if direction is Direction.FORWARD else _rdp.add_cgf_lower
        return fn(self.q, self.z, np.maximum(np.asarray(t, dtype=float), 0.0))

    def cgf_exactness(self) -> Exactness:
        """An upper bound: certified sides from ``subsampled_gaussian_rdp`` — remove:
        exact binomial sums at integer orders, their chords between (convexity of K)
        above, tangent extrapolations and a data-processing bound below; add: the
        joint-convexity/Taylor bounds with the Gaussian's exact CGF above and the
        data-processing bound below. (The quadrature ``rdp_remove``/``rdp_add`` there
        stays available as a numerical estimate.)"""
        return Exactness.UPPER

    def _rho(self, direction: Direction) -> float | None:
        return 0.5 / self.z ** 2 if direction is Direction.FORWARD else None

    def describe(self) -> str:
        return f"PoissonGaussian(q={self.q:g}, z={self.z:g})"


@attrs.frozen
class SubsampledGaussian(PoissonMechanism):
    """Poisson sampling at rate ``q`` ∈ (0, 1], then Gaussian noise of std ``sigma``.

    Neighbouring is add/remove of one record; Δ bounds each record's contribution.
    """

    name = "subsampled_gaussian"
    q: float = parameter(RATE)
    #: σ/Δ below 1e-2 is refused: at 1e-8 the subsampled curves do not finish in 20 s
    #: (raising σ adds independent Gaussian noise after the sampled sum: a garbling)
    sigma: float = parameter(Range(1e-2, 1e8, per="sensitivity", log=True, zero=True),
                             garbling=True)

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...] | int
               ) -> tuple[AnyArray, AnyArray]:
        """Δ·B + Z on D (B ~ Bernoulli(q), Z ~ N(0, σ²)) and Z′ on D′."""
        inside = rng.random(shape) < self.q
        return (self.sensitivity * inside + rng.normal(0.0, self.sigma, size=shape),
                rng.normal(0.0, self.sigma, size=shape))

    def pair(self) -> Pair:
        if self.q == 0 or self.sensitivity == 0:
            return identical_pair(f"{self.name} (q = 0 or sensitivity 0: no privacy loss)")
        if self.sigma == 0:   # the mixture of a non-private base: exact, δ = q
            return PoissonSubsampledPair(disjoint_pair("Gaussian (no noise: non-private)"),
                                         float(self.q))
        return SubsampledGaussianPair.of(float(self.q), self.sigma / self.sensitivity)


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(SubsampledGaussian)


@hookimpl
def accounting_register_specialisations(register: RegisterSpecialisation) -> None:
    # Poisson subsampling of the Gaussian pair: the certified Rényi curve above
    register(PoissonSubsampledPair, GaussianPair, SubsampledGaussianPair)
