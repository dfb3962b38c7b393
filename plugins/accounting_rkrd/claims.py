"""The claim under audit, as a trade-off curve: one (ε, δ), or a whole curve.

A mechanism M satisfies a claim f (a symmetric trade-off function) on D, D′ when every
test between M(D) and M(D′) with type-I error a has type-II error at least f(a), in
both directions (Dong, Roth & Su 2019, arXiv:1905.02383, §2). For a set S and
a = Q(S) (false positives among outputs on D′), b = P(Sᶜ) (false negatives among
outputs on D) this gives b ≥ f(a) and a ≥ f(b). Two kinds of claim:

* ``EpsDeltaClaim``: (ε, δ)-DP, f(a) = max(0, 1 − δ − e^ε a, e^{−ε}(1 − δ − a))
  (arXiv:1905.02383, Prop. 2.5);
* ``CurveClaim``: any trade-off curve of ``accounting`` — a registered mechanism
  instance (its ``TradeOff``), a ``TradeOff``, or any curve the library converts to one
  (``accounting.curves.graph``, e.g. a ``PLD`` or ``PrivacyProfile``). The claim used is
  β(a) of the sound side (``bound="upper"``: β never too large, i.e. never a stronger
  claim than the curve's) over both directions (``direction="max"``: the smaller of
  T(P, Q) and T(Q, P), which is symmetric), so a rejection of it rejects the curve.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import attrs
import numpy as np

from accounting.validation import check_probability, check_real

__all__ = ["Claim", "EpsDeltaClaim", "CurveClaim", "as_claim"]


class Claim(Protocol):
    """A symmetric claimed trade-off function."""

    def beta(self, a: np.ndarray) -> np.ndarray:
        """Claimed least type-II error at type-I error ``a`` (vectorised, a ∈ [0, 1])."""

    def describe(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...


@attrs.frozen
class EpsDeltaClaim:
    """The (ε, δ)-DP claim."""

    epsilon: float
    delta: float

    def beta(self, a: np.ndarray) -> np.ndarray:
        a = np.asarray(a, dtype=float)
        one = 1.0 - self.delta
        # e^ε overflows beyond ε ≈ 709: then 1 − δ − e^ε a < 0 for every a > 0
        e = np.exp(np.float64(self.epsilon)) if self.epsilon < 700.0 else np.inf
        with np.errstate(over="ignore", invalid="ignore"):
            first = np.where(a > 0.0, one - e * np.where(a > 0.0, a, 1.0), one)
        return np.maximum(0.0, np.maximum(first, math.exp(-self.epsilon) * (one - a)))

    def describe(self) -> str:
        return f"(ε, δ) = ({self.epsilon:g}, {self.delta:g})"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "epsilon_delta", "epsilon": self.epsilon, "delta": self.delta}


@attrs.frozen
class CurveClaim:
    """A claimed trade-off curve (sound side, both directions)."""

    tradeoff: Any = attrs.field(repr=False, eq=False)
    label: str

    def beta(self, a: np.ndarray) -> np.ndarray:
        a = np.clip(np.asarray(a, dtype=float), 0.0, 1.0)
        b = np.asarray(self.tradeoff.beta(a, "max", "upper"), dtype=float)
        if not np.all(np.isfinite(b)):
            raise ValueError(f"claim: the trade-off curve of {self.label} returned a "
                             f"non-finite β")
        clipped: np.ndarray = np.clip(b, 0.0, 1.0)
        return clipped

    def describe(self) -> str:
        return f"the trade-off curve of {self.label}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "tradeoff_curve", "curve": self.label}


def as_claim(claim: Any = None, epsilon: float | None = None,
             delta: float | None = None) -> EpsDeltaClaim | CurveClaim:
    """The claim from ``epsilon`` and ``delta``, or from ``claim`` (a mechanism instance,
    a ``TradeOff`` or a curve convertible to one); exactly one of the two forms."""
    if claim is None:
        if epsilon is None or delta is None:
            raise TypeError("give the claim as epsilon= and delta=, or as claim= (a "
                            "registered mechanism instance or a privacy curve)")
        return EpsDeltaClaim(check_real("epsilon", epsilon, lo=0.0),
                             check_probability("delta", delta))
    if epsilon is not None or delta is not None:
        raise TypeError("give either epsilon= and delta= or claim=, not both")
    from accounting import Curve, Mechanism, TradeOff, convert

    if isinstance(claim, Mechanism):
        return CurveClaim(claim.curve(TradeOff), _mechanism_label(claim))
    if isinstance(claim, TradeOff):
        return CurveClaim(claim, f"a TradeOff curve ({claim.provenance})")
    if isinstance(claim, Curve):
        return CurveClaim(convert(claim, TradeOff),
                          f"a {type(claim).__name__} curve ({claim.provenance}) as a TradeOff")
    raise TypeError(f"claim must be a registered mechanism instance or a privacy curve "
                    f"(TradeOff, PLD, PrivacyProfile, …), got {type(claim).__name__}")


def _mechanism_label(m: Any) -> str:
    """``name(p=v, …)`` from the mechanism's declared parameters."""
    def fmt(v: Any) -> str:
        v = getattr(v, "value", v)
        return f"{v:.6g}" if isinstance(v, float) else str(v)
    params = ", ".join(f"{k}={fmt(getattr(m, k))}" for k in type(m).parameters())
    return f"the mechanism {getattr(type(m), 'name', '') or type(m).__name__}({params})"
