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
* RDP: exact, at integer and fractional orders, in both directions
  (``subsampled_gaussian_rdp``; Mironov, Talwar, Zhang 2019, §3.3);
* ρ*: forward Δ²/(2σ²) for every q > 0 (the sup of K(t)/(t(t+1)) is the t → ∞
  limit; unifying-accounting paper §6); backward by the numerical envelope.
"""

from __future__ import annotations

import attrs
import numpy as np

from accounting.direction import Direction
from accounting.hookspecs import hookimpl
from accounting.mechanism import Mechanism, positive
from accounting.pair import Pair
from accounting.validation import check_positive, check_probability

from . import subsampled_gaussian_rdp as _rdp
from .gaussian import gaussian_delta

__all__ = ["SubsampledGaussian", "SubsampledGaussianPair"]


def _q_validator(instance, attribute, value):
    check_probability("q", value, hi_open=False)


@attrs.frozen
class SubsampledGaussianPair(Pair):
    """((1 − q)N(0, σ²) + qN(Δ, σ²), N(0, σ²)) with noise multiplier z = σ/Δ."""

    q: float = attrs.field(validator=_q_validator)
    z: float = attrs.field(validator=lambda i, a, v: check_positive("z", v))

    def _profile(self, eps, direction):
        eps = np.asarray(eps, dtype=float)
        q, mu = self.q, 1.0 / self.z
        if direction is Direction.FORWARD:
            cut = np.log1p(-q) if q < 1 else -np.inf
            e = np.maximum(eps, cut + 1e-300) if q < 1 else eps
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                arg = np.log1p(np.expm1(np.where(np.isfinite(e), e, 0.0)) / q)
                val = q * gaussian_delta(mu, np.where(np.isfinite(e), arg, e))
                below = -np.expm1(np.minimum(eps, 0.0))
            return np.where(eps <= cut, below, val)
        cut = -np.log1p(-q) if q < 1 else np.inf
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            e = np.where(np.isfinite(eps), eps, 0.0)
            arg = np.log1p(np.expm1(-e) / q)
            factor = -np.expm1(e + np.log1p(-q)) if q < 1 else np.ones_like(e)
            val = factor * gaussian_delta(mu, -arg)
        val = np.where(eps == -np.inf, 1.0, val)
        return np.where(eps >= cut, 0.0, np.maximum(val, 0.0))

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

    def _rho(self, direction):
        return 0.5 / self.z ** 2 if direction is Direction.FORWARD else None

    def describe(self) -> str:
        return f"PoissonGaussian(q={self.q:g}, z={self.z:g})"


@attrs.frozen
class SubsampledGaussian(Mechanism):
    """Poisson sampling at rate ``q`` ∈ (0, 1], then Gaussian noise of std ``sigma``.

    Neighbouring is add/remove of one record; Δ bounds each record's contribution.
    """

    name = "subsampled_gaussian"
    q: float = attrs.field(validator=_q_validator)
    sigma: float = attrs.field(validator=positive)

    def pair(self) -> SubsampledGaussianPair:
        return SubsampledGaussianPair(float(self.q), self.sigma / self.sensitivity)


@hookimpl
def accounting_register_mechanisms(register):
    register(SubsampledGaussian)
