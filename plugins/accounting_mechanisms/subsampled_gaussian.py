"""The Poisson-subsampled Gaussian mechanism (DP-SGD), in closed form.

Each record is included independently with probability q, then Gaussian noise of
standard deviation σ is added to a sum of sensitivity Δ (DP-SGD: σ = noise multiplier
× clipping norm, Δ = clipping norm). Under add/remove neighbouring the dominating
pair is P = (1 − q)N(0, σ²) + qN(Δ, σ²), Q = N(0, σ²) (REFERENCE §2): its forward
direction P‖Q is *remove*, its backward direction Q‖P is *add*.

* profiles: with δ_G the profile of μ-GDP, μ = Δ/σ (Balle, Barthe, Gaboardi 2018,
  Thm 8, written out for the two directions):
  δ_{P‖Q}(ε) = q·δ_G(log(1 + (e^ε − 1)/q)) for ε > log(1 − q), and 1 − e^ε below;
  δ_{Q‖P}(ε) = (1 − e^ε(1 − q))·δ_G(−log(1 + (e^{−ε} − 1)/q)) for ε < −log(1 − q),
  and 0 above;
* RDP: at integer and fractional orders, in both directions
  (``subsampled_gaussian_rdp``; Mironov, Talwar, Zhang 2019, §3.3): exact sums at
  integer forward orders, adaptive quadrature (~1e-13 relative, estimated) elsewhere,
  so the curve is labelled ``Exactness.NUMERICAL``;
* ρ*: forward Δ²/(2σ²) for every q > 0 (the sup of K(t)/(t(t+1)) is the t → ∞
  limit; unifying-accounting paper §6); backward by the numerical envelope.
"""

from __future__ import annotations

import attrs
import numpy as np

from accounting.curve import Exactness
from accounting.direction import Direction
from accounting.hookspecs import hookimpl
from accounting.mechanism import RATE, Range, parameter
from accounting.validation import check_positive

from . import subsampled_gaussian_rdp as _rdp
from .gaussian import GaussianPair
from .subsampling import SPECIALISATIONS, PoissonMechanism, PoissonSubsampledPair

__all__ = ["SubsampledGaussian", "SubsampledGaussianPair"]


@attrs.frozen
class SubsampledGaussianPair(PoissonSubsampledPair):
    """((1 − q)N(0, σ²) + qN(Δ, σ²), N(0, σ²)) with noise multiplier z = σ/Δ: the
    generic subsampled profile of the Gaussian pair, plus the exact Rényi curve."""

    def __attrs_post_init__(self):
        if not isinstance(self.base, GaussianPair):
            raise TypeError(f"base must be a GaussianPair, got {type(self.base).__name__}")

    @classmethod
    def of(cls, q: float, z: float) -> "SubsampledGaussianPair":
        """The pair for sampling rate q and noise multiplier z = σ/Δ."""
        return cls(GaussianPair(1.0 / check_positive("z", z)), q)

    @property
    def z(self) -> float:
        return 1.0 / self.base.mu

    def _cgf(self, t, direction):
        t = np.asarray(t, dtype=float)
        flat = np.ravel(t)
        fn = _rdp.rdp_remove if direction is Direction.FORWARD else _rdp.rdp_add
        out = np.empty(flat.shape)
        pos = flat > 0
        out[~pos] = 0.0
        if pos.any():
            out[pos] = flat[pos] * fn(self.q, self.z, 1.0 + flat[pos])
        return out.reshape(t.shape)

    def cgf_exactness(self) -> Exactness:
        """Numerical: integer orders of the forward direction are the exact binomial sum,
        but fractional orders and the whole backward direction come from adaptive
        Gauss–Legendre quadrature (``subsampled_gaussian_rdp``, ~1e-13 relative by an
        a-posteriori estimate, not a rigorous bound)."""
        return Exactness.NUMERICAL

    def _rho(self, direction):
        return 0.5 / self.z ** 2 if direction is Direction.FORWARD else None

    def describe(self) -> str:
        return f"PoissonGaussian(q={self.q:g}, z={self.z:g})"


SPECIALISATIONS[GaussianPair] = SubsampledGaussianPair


@attrs.frozen
class SubsampledGaussian(PoissonMechanism):
    """Poisson sampling at rate ``q`` ∈ (0, 1], then Gaussian noise of std ``sigma``.

    Neighbouring is add/remove of one record; Δ bounds each record's contribution.
    """

    name = "subsampled_gaussian"
    q: float = parameter(RATE)
    #: σ/Δ below 1e-2 is refused: at 1e-8 the subsampled curves do not finish in 20 s
    sigma: float = parameter(Range(1e-2, 1e8, per="sensitivity", log=True))

    def pair(self) -> SubsampledGaussianPair:
        return SubsampledGaussianPair.of(float(self.q), self.sigma / self.sensitivity)


@hookimpl
def accounting_register_mechanisms(register):
    register(SubsampledGaussian)
