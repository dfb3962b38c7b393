"""The directional privacy profile: δ_{P‖Q}(ε) and δ_{Q‖P}(ε).

δ_{P‖Q}(ε) = sup_S P(S) − e^ε Q(S) (the hockey-stick divergence; Balle, Barthe,
Gaboardi 2018, "Privacy amplification by subsampling", Thm 1), for every real ε.
The two directions together carry the same information as the PLD and the pair of
trade-off functions (unifying-accounting paper, Thm 1); their max alone does not.
"""

from __future__ import annotations

from typing import Callable, Optional, Protocol

import attrs
import numpy as np

from accounting.curves.curve import Curve, Provenance, directional_max
from accounting.vocabulary import Bound, Direction
from accounting.numerics.loss import LossPMF
from accounting.validation import check_array

__all__ = ["PrivacyProfile", "ProfileSide", "LawSide", "FunctionSide", "invert_decreasing"]


class ProfileSide(Protocol):
    def delta(self, eps: np.ndarray, direction: Direction) -> np.ndarray: ...

    def epsilon(self, delta: np.ndarray, direction: Direction) -> np.ndarray: ...


@attrs.frozen(eq=False)
class LawSide:
    """A side given by (forward, backward) loss laws: exact queries."""

    laws: tuple[LossPMF, LossPMF]

    def _law(self, direction: Direction) -> LossPMF:
        return self.laws[0] if direction is Direction.FORWARD else self.laws[1]

    def delta(self, eps, direction):
        return self._law(direction).delta(eps)

    def epsilon(self, delta, direction):
        return self._law(direction).epsilon(delta)


@attrs.frozen(eq=False)
class FunctionSide:
    """A side given by a function δ(ε, direction); ε(δ) by its own function if given,
    else by bisection (which keeps the sound end of the bracket)."""

    delta_fn: Callable[[np.ndarray, Direction], np.ndarray]
    epsilon_fn: Optional[Callable[[np.ndarray, Direction], np.ndarray]] = None

    def delta(self, eps, direction):
        return np.asarray(self.delta_fn(np.asarray(eps, dtype=float), direction), dtype=float)

    def epsilon(self, delta, direction):
        if self.epsilon_fn is not None:
            return np.asarray(self.epsilon_fn(delta, direction), dtype=float)
        return invert_decreasing(lambda e: self.delta(e, direction), delta)


def invert_decreasing(fn: Callable[[np.ndarray], np.ndarray], target: np.ndarray,
                      rtol: float = 1e-12) -> np.ndarray:
    """Smallest ε ≥ 0 with fn(ε) ≤ target for a non-increasing fn, vectorised.

    Returns the right end of the final bisection bracket, where fn ≤ target holds,
    so the answer never under-reports ε; +∞ where fn(∞) > target.
    """
    target = np.asarray(target, dtype=float)
    flat = np.ravel(target)
    out = np.full(flat.shape, np.inf)
    floor = fn(np.full(flat.shape, np.inf))
    ok = floor <= flat
    zero = ok & (fn(np.zeros(flat.shape)) <= flat)
    out[zero] = 0.0
    todo = ok & ~zero
    if todo.any():
        t = flat[todo]
        lo = np.zeros(t.shape)
        hi = np.ones(t.shape)
        for _ in range(80):  # expand until the bracket holds
            above = fn(hi) > t
            if not above.any():
                break
            lo = np.where(above, hi, lo)
            hi = np.where(above, hi * 2.0, hi)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            above = fn(mid) > t
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
            if np.all(hi - lo <= rtol * np.maximum(hi, 1e-12)):
                break
        out[todo] = hi
    return out.reshape(target.shape)


@attrs.frozen(eq=False)
class PrivacyProfile(Curve):
    """Both directional profiles, with a sound ``upper`` side and an optional ``lower``."""

    upper: ProfileSide
    lower: Optional[ProfileSide] = None
    provenance: Provenance = attrs.field(factory=Provenance, kw_only=True)

    def delta(self, epsilon: "np.ndarray | float", direction: "Direction | str" = "max",
              bound: "Bound | str" = "upper") -> np.ndarray:
        """δ(ε) for an array of ε (any real ε; ±∞ allowed)."""
        eps = check_array("epsilon", epsilon, allow_inf=True)
        side = self._side(bound)
        return directional_max(lambda d: side.delta(eps, d), direction)

    def epsilon(self, delta: "np.ndarray | float", direction: "Direction | str" = "max",
                bound: "Bound | str" = "upper") -> np.ndarray:
        """Smallest ε ≥ 0 with δ(ε) ≤ delta, for delta in (0, 1)."""
        dl = check_array("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        side = self._side(bound)
        return directional_max(lambda d: side.epsilon(dl, d), direction)

    def epsilon_interval(self, delta, direction="max"):
        return self.epsilon(delta, direction, Bound.LOWER), self.epsilon(delta, direction, Bound.UPPER)

    def delta_interval(self, epsilon, direction="max"):
        return self.delta(epsilon, direction, Bound.LOWER), self.delta(epsilon, direction, Bound.UPPER)
