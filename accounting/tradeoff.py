"""Trade-off functions (f-DP): T(P, Q) and T(Q, P).

T(P, Q)(α) = inf{β_φ : α_φ ≤ α}, α_φ = E_P[φ], β_φ = 1 − E_Q[φ] (Dong, Roth, Su 2019,
"Gaussian differential privacy", Def. 2.1). With the profile of the same direction
(ibid. Prop. 2.12, stated for one ordered pair):

    T(P, Q)(α) = sup_{ε∈ℝ} max{0, e^{−ε}(1 − α − δ_{P‖Q}(ε))},
    δ_{P‖Q}(ε) = sup_α (1 − α − e^ε T(P, Q)(α)).

A ``MAX`` query returns the pointwise min of the two directions (a pessimistic
summary; its convex hull is the symmetrised trade-off function).
"""

from __future__ import annotations

from typing import Callable, Optional, Protocol

import attrs
import numpy as np

from .curve import Curve, Provenance
from .direction import Bound, Direction, as_direction
from .loss import LossPMF
from .validation import check_array

__all__ = ["TradeOff", "TradeOffSide", "VertexSide", "BetaSide"]


class TradeOffSide(Protocol):
    def beta(self, alpha: np.ndarray, direction: Direction) -> np.ndarray: ...

    def delta(self, eps: np.ndarray, direction: Direction) -> np.ndarray: ...


@attrs.frozen(eq=False)
class VertexSide:
    """Piecewise-linear trade-off functions given by vertices (1 − α_j, β_j)."""

    forward: tuple[np.ndarray, np.ndarray]
    backward: tuple[np.ndarray, np.ndarray]
    #: exact segment slopes (−dβ/dα) per direction, when the vertices come from a law
    slopes: Optional[tuple[np.ndarray, np.ndarray]] = None
    #: the vertices' α_j themselves per direction, accurate near α = 0 (from a law)
    alphas: Optional[tuple[np.ndarray, np.ndarray]] = None

    @classmethod
    def from_laws(cls, laws: tuple[LossPMF, LossPMF], *,
                  pessimistic: bool = True) -> "VertexSide":
        """The trade-off functions of two directional laws; a pessimistic side first
        puts the P-mass that roundoff lost back on the top loss (``LossPMF.topped_up``)."""
        if pessimistic:
            laws = tuple(law.topped_up() for law in laws)
        return cls(laws[0].tradeoff_vertices(), laws[1].tradeoff_vertices(),
                   (laws[0].tradeoff_slopes(), laws[1].tradeoff_slopes()),
                   (laws[0].tradeoff_alphas(), laws[1].tradeoff_alphas()))

    def _vertices(self, direction: Direction):
        return self.forward if direction is Direction.FORWARD else self.backward

    def beta(self, alpha, direction):
        alpha_c, beta = self._vertices(direction)
        alpha = np.asarray(alpha, dtype=float)
        # np.interp needs increasing abscissae: α_j = 1 − alpha_c is increasing. Below
        # α = ½ interpolate in α itself: 1 − α would round a tiny α by 1e-16, which the
        # steep start of the curve turns into a visible error in β.
        out = np.interp(1.0 - alpha, alpha_c[::-1], beta[::-1])
        if self.alphas is not None:
            small = alpha < 0.5
            if small.any():
                a = self.alphas[0] if direction is Direction.FORWARD else self.alphas[1]
                out = np.where(small, np.interp(alpha, a, beta), out)
        return out

    def delta(self, eps, direction):
        """sup_j (1 − α_j) − e^ε β_j: the maximising vertex is where the segment
        slope −Δβ/Δα crosses e^{−ε}, found by binary search (slopes are monotone)."""
        alpha_c, beta = self._vertices(direction)
        eps = np.asarray(eps, dtype=float)
        if self.slopes is not None:
            ratio = self.slopes[0] if direction is Direction.FORWARD else self.slopes[1]
        else:
            da = alpha_c[:-1] - alpha_c[1:]
            db = beta[:-1] - beta[1:]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(da > 0, db / da, np.inf)  # = e^{−l} of the atom
            ratio = np.minimum.accumulate(ratio)
        with np.errstate(over="ignore"):
            xinv = np.exp(-eps)
        # move to the next vertex while its gain per unit α beats the cost: db·x < da
        j = np.searchsorted(-ratio, -xinv, side="left")
        with np.errstate(over="ignore", invalid="ignore"):
            val = alpha_c[j] - np.exp(eps) * beta[j]
        val = np.where(eps == np.inf, alpha_c[np.searchsorted(-beta, 0.0, side="left")], val)
        val = np.where(eps == -np.inf, 1.0, val)
        return np.clip(val, 0.0, 1.0)


@attrs.frozen(eq=False)
class BetaSide:
    """A side given by closed forms: β(α, direction) and δ(ε, direction)."""

    beta_fn: Callable[[np.ndarray, Direction], np.ndarray]
    delta_fn: Callable[[np.ndarray, Direction], np.ndarray]

    def beta(self, alpha, direction):
        return np.asarray(self.beta_fn(alpha, direction), dtype=float)

    def delta(self, eps, direction):
        return np.asarray(self.delta_fn(np.asarray(eps, dtype=float), direction), dtype=float)


@attrs.frozen(eq=False)
class TradeOff(Curve):
    """T(P, Q) and T(Q, P), with a sound ``upper`` side (β never too large)."""

    upper: TradeOffSide
    lower: Optional[TradeOffSide] = None
    provenance: Provenance = attrs.field(factory=Provenance, kw_only=True)

    def beta(self, alpha: "np.ndarray | float", direction: "Direction | str" = "max",
             bound: "Bound | str" = "upper") -> np.ndarray:
        """β = T(α) for α in [0, 1]; ``forward`` is T(P, Q), ``backward`` T(Q, P)."""
        a = check_array("alpha", alpha, lo=0.0, hi=1.0)
        side = self._side(bound)
        comps = as_direction(direction).components
        return np.min([side.beta(a, d) for d in comps], axis=0)
