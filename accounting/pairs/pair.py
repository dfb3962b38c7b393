"""Ordered pairs (P, Q) of output distributions: the object every curve derives from.

A pair answers both directions (``Direction.FORWARD`` = P‖Q, ``BACKWARD`` = Q‖P). In
the spirit of ``scipy.stats.rv_continuous``, a subclass supplies the primitives it
knows and inherits the rest:

* ``_profile(eps, direction)`` (required): the directional privacy profile δ(ε),
  vectorised, with ε = ±∞ allowed (δ(−∞) = 1, δ(+∞) = mass at +∞). Either exact, or
  (``exact = False``) an upper bound that is itself the profile of a pair dominating
  (P, Q); then ``_profile_lower`` gives the profile of a pair (P, Q) dominates.
* ``_cgf(t, direction)`` (optional): K(t) = log E[e^{tL}] in closed form or by
  quadrature; without it RDP comes from the PLD.
* ``_beta(alpha, direction)`` (optional): the trade-off function in closed form.
  ``cgf_exactness()`` says whether it is exact or an upper bound; an optional
  ``cgf_lower(t, direction)`` gives a lower curve (``None`` if there is none).
* ``_rho(direction)`` (optional): the exact zCDP parameter ρ* = sup_t K(t)/(t(t+1)).
* ``_self_compose(count)`` (optional): a closed-form pair for the count-fold product
  (for example Gaussians: μ ↦ μ√count).

Every curve then follows from ``accounting.pairs.derive`` (``pair.curve(Kind)``).
"""

from __future__ import annotations

import abc
from typing import Optional

import attrs
import numpy as np

from accounting.curves.curve import Exactness
from accounting.vocabulary import Bound, Direction, as_bound, as_direction
from accounting.numerics.loss import LossPMF
from accounting.validation import check_array

__all__ = ["Pair", "LawPair", "discrete_pair"]


class Pair(abc.ABC):
    """One ordered pair (P, Q). Subclasses implement ``_profile`` at least."""

    #: whether ``_profile`` is exact (else it is an upper bound, ``_profile_lower`` a lower)
    exact: bool = True
    #: whether Q‖P is P‖Q up to a relabelling of outcomes (both directions coincide)
    symmetric: bool = False

    # ------------------------------------------------------------ primitives
    @abc.abstractmethod
    def _profile(self, eps: np.ndarray, direction: Direction) -> np.ndarray:
        """δ_direction(ε) for an array of ε (±∞ allowed)."""

    def _profile_lower(self, eps: np.ndarray, direction: Direction) -> np.ndarray:
        return self._profile(eps, direction)

    def _cgf(self, t: np.ndarray, direction: Direction) -> Optional[np.ndarray]:
        return None

    def _beta(self, alpha: np.ndarray, direction: Direction) -> Optional[np.ndarray]:
        return None

    def _rho(self, direction: Direction) -> Optional[float]:
        return None

    def _self_compose(self, count: int) -> Optional["Pair"]:
        return None

    def _renyi_limit(self, order: float, direction: Direction,
                     side: Bound = Bound.UPPER) -> Optional[float]:
        """D_1 (order 1, KL) or D_∞ (order ∞) of one direction on one side of the
        bracket, where the pair knows it in closed form; None otherwise."""
        return None

    def rho_bound(self, direction: Direction) -> Optional[float]:
        """An upper bound on ρ* used when the numerical envelope cannot certify it."""
        return None

    def cgf_exactness(self) -> Exactness:
        """What ``_cgf`` is: exact (the default) or an upper bound (``Exactness.UPPER``)."""
        return Exactness.EXACT

    # ----------------------------------------------------------- public API
    def profile(self, eps: "np.ndarray | float", direction: "Direction | str" = "max",
                bound: "Bound | str" = "upper") -> np.ndarray:
        """δ(ε) in one direction or the max of both; ``bound='lower'`` (or
        ``Bound.LOWER``) for the optimistic side of a non-exact pair."""
        eps = check_array("eps", eps, allow_inf=True)
        comps = as_direction(direction).components
        fn = self._profile if as_bound(bound) is Bound.UPPER else self._profile_lower
        return np.max([fn(eps, d) for d in comps], axis=0)

    def curve(self, kind: type, **options):
        """This pair's curve of the given kind (``PLD``, ``PrivacyProfile``, …)."""
        from accounting.pairs.derive import curve_of_pair  # derive imports the curve modules
        return curve_of_pair(self, kind, **options)

    def self_compose(self, count: int) -> "Pair":
        """The count-fold product pair, in closed form where the pair has one."""
        from accounting.composition import ComposedPair
        closed = self._self_compose(count)
        return closed if closed is not None else ComposedPair(((self, count),))

    def describe(self) -> str:
        return type(self).__name__


def _law(losses: np.ndarray, masses: np.ndarray, inf_mass: float) -> LossPMF:
    return LossPMF.from_atoms(losses, masses, inf_mass)


@attrs.frozen(eq=False)
class LawPair(Pair):
    """A pair given by its directional loss laws: exact if upper and lower coincide.

    ``upper`` and ``lower`` are (forward, backward) ``LossPMF``s; the upper laws must
    belong to pairs dominating (P, Q) in each direction, the lower to dominated ones.
    """

    upper: tuple[LossPMF, LossPMF]
    lower: tuple[LossPMF, LossPMF]
    label: str = "LawPair"
    symmetric: bool = attrs.field(default=False, kw_only=True)

    @property
    def exact(self) -> bool:  # type: ignore[override]
        return all(u is l for u, l in zip(self.upper, self.lower))

    def _law(self, direction: "Direction | str", side: "Bound | str") -> LossPMF:
        """The loss law of one concrete direction on one side of the bracket."""
        d = as_direction(direction)
        if d is Direction.MAX:
            raise ValueError("a loss law needs direction 'forward' or 'backward', got 'max'")
        laws = self.upper if as_bound(side, "side") is Bound.UPPER else self.lower
        return laws[0] if d is Direction.FORWARD else laws[1]

    def _profile(self, eps, direction):
        return self._law(direction, "upper").delta(eps)

    def _profile_lower(self, eps, direction):
        return self._law(direction, "lower").delta(eps)

    def _cgf(self, t, direction):
        return self._law(direction, "upper").cgf(t)

    def cgf_lower(self, t, direction):
        return self._law(direction, "lower").cgf(t)

    def _renyi_limit(self, order, direction, side=Bound.UPPER):
        """E[L] or the largest loss of the law (``conversion.converters.law_limit``)."""
        from accounting.conversion.converters import law_limit
        return law_limit(self._law(direction, side), order)

    def describe(self) -> str:
        return self.label


def discrete_pair(p: "np.ndarray", q: "np.ndarray", label: str = "discrete") -> LawPair:
    """The exact pair of two distributions on a finite set (probability vectors).

    Forward law: atoms log(p_i/q_i) with P-mass p_i, mass at +∞ = Σ_{q_i=0} p_i;
    backward: atoms log(q_i/p_i) with Q-mass q_i, mass at +∞ = Σ_{p_i=0} q_i.
    """
    p = check_array("p", p, lo=0.0, hi=1.0)
    q = check_array("q", q, lo=0.0, hi=1.0)
    if p.shape != q.shape or p.ndim != 1:
        raise ValueError("p and q must be 1-d probability vectors of the same length")
    for name, v in (("p", p), ("q", q)):
        if abs(v.sum() - 1.0) > 1e-9:
            raise ValueError(f"{name} must sum to 1, got {v.sum()!r}")
    both = (p > 0) & (q > 0)
    with np.errstate(divide="ignore"):
        loss = np.log(p[both]) - np.log(q[both])
    fwd = _law(loss, p[both], float(p[(q == 0) & (p > 0)].sum()))
    bwd = _law(-loss, q[both], float(q[(p == 0) & (q > 0)].sum()))
    return LawPair((fwd, bwd), (fwd, bwd), label)
