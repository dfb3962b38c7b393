"""Rényi differential privacy: D_α(P‖Q) and D_α(Q‖P) as functions of the order α.

D_α(P‖Q) = K(α − 1)/(α − 1) with the cumulant generating function of the privacy
loss K(t) = log E_P[e^{tL}] (Mironov 2017, "Rényi differential privacy", Def. 3 and
Prop. 1). Composition adds K (ibid. Prop. 1). Curves are callables of real α > 1, so
conversions can optimise over continuous α rather than a fixed grid of orders.
"""

from __future__ import annotations

from typing import Callable, Optional

import attrs
import numpy as np

from accounting.curves.curve import Curve, Provenance, directional_max
from accounting.vocabulary import Bound, Direction
from accounting.validation import check_array, check_count, check_real

__all__ = ["RDP", "CGF"]

CGFFn = Callable[[np.ndarray, Direction], np.ndarray]


@attrs.frozen(eq=False)
class CGF:
    """K(t, direction) = Σ_i c_i·K_i(t, direction): a weighted sum of component CGFs."""

    terms: tuple[tuple[float, CGFFn], ...] = attrs.field(converter=tuple)

    def __attrs_post_init__(self) -> None:
        for i, term in enumerate(self.terms):
            if not (isinstance(term, tuple) and len(term) == 2):
                raise TypeError(f"CGF.terms[{i}] must be a (weight, function) pair, "
                                f"got {term!r:.80}")
            c, fn = term
            check_real(f"CGF.terms[{i}] weight", c, lo=0.0)
            if not callable(fn):
                raise TypeError(f"CGF.terms[{i}] function must be callable K(t, direction), "
                                f"got {type(fn).__name__}")

    @classmethod
    def of(cls, fn: CGFFn) -> "CGF":
        return cls(((1.0, fn),))

    def __call__(self, t: np.ndarray, direction: Direction) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        total = np.zeros(t.shape)
        for c, fn in self.terms:
            total = total + c * np.asarray(fn(t, direction), dtype=float)
        return total

    @classmethod
    def _checked(cls, terms: tuple) -> "CGF":
        """A CGF of terms that were checked when their CGFs were built: a composition of
        n terms re-checked at every pairwise sum would cost O(n²)."""
        cgf = object.__new__(cls)
        object.__setattr__(cgf, "terms", terms)
        return cgf

    def __add__(self, other: "CGF") -> "CGF":
        if not isinstance(other, CGF):
            return NotImplemented
        return CGF._checked(self.terms + other.terms)

    def scale(self, count: float) -> "CGF":
        count = check_real("count", count, lo=0.0)
        return CGF._checked(tuple((c * count, fn) for c, fn in self.terms))


@attrs.frozen(eq=False, repr=False)
class RDP(Curve):
    """Rényi divergences of both directions at any real order α > 1.

    Answers D_α (``renyi``, alias ``rdp``) and the CGF (``cgf``) by its own formula;
    δ and ε by the improved conversion (``rdp→profile``), β through that profile, ρ by
    the zCDP envelope (``Curve``).
    """

    upper: CGF
    lower: Optional[CGF] = None
    provenance: Provenance = attrs.field(factory=Provenance, kw_only=True)

    def cgf(self, t: "np.ndarray | float", direction: "Direction | str" = "max",
            bound: "Bound | str" = "upper") -> np.ndarray:
        """K(t) = (α − 1)·D_α at α = 1 + t, for t > 0."""
        t = check_array("t", t, lo=0.0, lo_open=True)
        side = self._side(bound)
        return directional_max(lambda d: side(t, d), direction)

    NATIVE = frozenset({"renyi"})

    def _renyi(self, side: CGF, a: np.ndarray, d: Direction) -> np.ndarray:
        """D_α = K(α − 1)/(α − 1) of one direction."""
        return side(a - 1.0, d) / (a - 1.0)

    def _summary(self) -> str:
        d2, d32 = np.asarray(self.renyi(np.array([2.0, 32.0])), dtype=float)
        return f"{len(self.upper.terms)} term(s); D_2 = {d2:.4g}, D_32 = {d32:.4g}"

    def compose(self, other: "RDP") -> "RDP":
        if not isinstance(other, RDP):
            raise TypeError(f"can only compose an RDP with an RDP, got {type(other).__name__}")
        lower = self.lower + other.lower if self.lower is not None and other.lower is not None else None
        return RDP(self.upper + other.upper, lower, provenance=self.provenance.join(other.provenance))

    def self_compose(self, count: int) -> "RDP":
        count = check_count("count", count)
        lower = self.lower.scale(count) if self.lower is not None else None
        return RDP(self.upper.scale(count), lower, provenance=self.provenance)

    __add__ = compose

    def __mul__(self, count: int) -> "RDP":
        return self.self_compose(count)

    __rmul__ = __mul__
