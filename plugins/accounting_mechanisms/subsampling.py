"""Poisson subsampling of any mechanism, on the profile (and so PLD) path.

Each record enters the batch independently with probability q, then the base
mechanism runs. Under add/remove neighbouring, with (P₀, Q₀) the base pair, the
dominating pair is P = (1 − q)Q₀ + qP₀, Q = Q₀ (REFERENCE §2; Zhu, Dong, Wang 2022,
Prop. 30): the forward direction P‖Q is *remove*, the backward Q‖P is *add*. Both
profiles follow exactly from the base's (Balle, Barthe, Gaboardi 2018, Thm 8,
written out per direction by taking sup_S of the mixture):

  δ_{P‖Q}(ε) = q·δ_{P₀‖Q₀}(log(1 + (e^ε − 1)/q))                  for ε > log(1 − q),
             = 1 − e^ε                                              below;
  δ_{Q‖P}(ε) = (1 − (1 − q)e^ε)·δ_{Q₀‖P₀}(log(q e^ε/(1 − (1 − q)e^ε)))  for ε < −log(1 − q),
             = 0                                                    above.

Every curve then derives from the profile (PLD by connect-the-dots, trade-off and
RDP of the PLD). A base with an exact Rényi curve for the mixture (the Gaussian)
overrides ``_cgf`` in a subclass.
"""

from __future__ import annotations

import attrs
import numpy as np

from accounting.additive import log_integral
from accounting.direction import Direction
from accounting.hookspecs import hookimpl
from accounting.mechanism import Mechanism, positive
from accounting.pair import Pair
from accounting.validation import check_probability

from .laplace import LaplacePair

__all__ = ["PoissonSubsampledPair", "PoissonSubsampled", "SubsampledLaplace", "check_rate"]


def check_rate(instance, attribute, value) -> None:
    """attrs validator: a sampling rate in (0, 1]."""
    check_probability(attribute.name, value, hi_open=False)


def _base_validator(instance, attribute, value) -> None:
    if not isinstance(value, Pair):
        raise TypeError(f"base must be a Pair, got {type(value).__name__}")


@attrs.frozen
class PoissonSubsampledPair(Pair):
    """((1 − q)Q₀ + qP₀, Q₀) for a base pair (P₀, Q₀) and rate q ∈ (0, 1]."""

    base: Pair = attrs.field(validator=_base_validator)
    q: float = attrs.field(validator=check_rate)

    @property
    def exact(self) -> bool:  # type: ignore[override]
        return self.base.exact

    def _profile(self, eps, direction):
        return self._mixed(eps, direction, self.base._profile)

    def _profile_lower(self, eps, direction):
        return self._mixed(eps, direction, self.base._profile_lower)

    def _mixed(self, eps, direction, base_profile):
        eps = np.asarray(eps, dtype=float)
        q = float(self.q)
        if q == 1.0:
            return base_profile(eps, direction)
        log1mq = np.log1p(-q)
        finite = np.isfinite(eps)
        e = np.where(finite, eps, 0.0)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if direction is Direction.FORWARD:
                inside = e > log1mq
                arg = np.log1p(np.expm1(np.where(inside, e, 0.0)) / q)
                arg = np.where(eps == np.inf, np.inf, arg)
                val = q * base_profile(arg, direction)
                val = np.where(inside | (eps == np.inf), val, -np.expm1(np.minimum(e, 0.0)))
                return np.where(eps == -np.inf, 1.0, val)
            inside = (e < -log1mq) & (eps != np.inf)
            ei = np.where(inside, e, 0.0)
            factor = -np.expm1(ei + log1mq)              # 1 − (1 − q)e^ε > 0 inside
            arg = np.log(q) + ei - np.log(factor)
            arg = np.where(eps == -np.inf, -np.inf, arg)
            val = factor * base_profile(arg, direction)
            val = np.where(eps == -np.inf, 1.0, val)
            return np.where(inside | (eps == -np.inf), np.maximum(val, 0.0), 0.0)

    def _cgf(self, t, direction):
        """K(t) by log-space quadrature when the base is additive noise (Z + Δ, Z):
        forward log ∫ q·(m/q)^{1+t}, backward log ∫ q·(q/m)^{t}·… = log ∫ m^{−t} q^{1+t},
        m = (1 − q)·Q + q·P₀ the mixture. Numerical (panels around the integrand's
        peak, ~1e-10 relative), not a certified bound; other bases: none (RDP then
        comes from the PLD, +∞ on its upper side)."""
        view = getattr(self.base, "noise_density", None)
        if view is None:
            return None
        logf, delta, width, (lo, hi) = view()
        log_z = log_integral(logf, lo, hi, width, delta)
        lq1 = np.log1p(-self.q) if self.q < 1 else -np.inf
        lq = np.log(self.q)
        t = np.asarray(t, dtype=float)
        out = np.empty(t.size)
        for i, tt in enumerate(np.ravel(t)):
            a, b = (1.0 + tt, -tt) if direction is Direction.FORWARD else (-tt, 1.0 + tt)

            def h(x, a=a, b=b):
                with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                    q0 = logf(x) - log_z
                    mix = np.logaddexp(lq1 + q0, lq + logf(x - delta) - log_z)
                    v = a * mix + b * q0
                return np.where(np.isnan(v), -np.inf, v)
            reach = (abs(a) + abs(b)) * (abs(delta) + (hi - lo))
            out[i] = 0.0 if tt == 0 else log_integral(h, lo - reach, hi + reach, width, delta)
        return out.reshape(t.shape)

    def cgf_lower(self, t, direction):
        return self._cgf(t, direction)

    def describe(self) -> str:
        return f"Poisson(q={self.q:g})∘{self.base.describe()}"


@attrs.frozen
class PoissonSubsampled(Mechanism):
    """Poisson subsampling at rate ``q`` of any ``base`` mechanism (add/remove).

    The base's sensitivity is its own; this wrapper's ``sensitivity`` is unused.
    """

    name = "poisson_subsampled"
    base: Mechanism = attrs.field()
    q: float = attrs.field(validator=check_rate)

    @base.validator
    def _check_base(self, attribute, value):
        if not isinstance(value, Mechanism):
            raise TypeError(f"base must be a Mechanism, got {type(value).__name__}")

    def pair(self) -> PoissonSubsampledPair:
        return PoissonSubsampledPair(self.base.pair(), float(self.q))


@attrs.frozen
class SubsampledLaplace(Mechanism):
    """Poisson sampling at rate ``q``, then Laplace noise of scale ``b`` (Δ: ℓ1)."""

    name = "subsampled_laplace"
    q: float = attrs.field(validator=check_rate)
    b: float = attrs.field(validator=positive)

    def pair(self) -> PoissonSubsampledPair:
        return PoissonSubsampledPair(LaplacePair(self.sensitivity / self.b), float(self.q))


@hookimpl
def accounting_register_mechanisms(register):
    register(SubsampledLaplace)
