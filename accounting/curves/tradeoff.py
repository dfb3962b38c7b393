"""Trade-off functions (f-DP): T(P, Q) and T(Q, P).

T(P, Q)(α) = inf{β_φ : α_φ ≤ α}, α_φ = E_P[φ], β_φ = 1 − E_Q[φ] (Dong, Roth, Su 2019,
"Gaussian differential privacy", arXiv:1905.02383, Def. 2.1). With the profile of the
same direction (ibid. Prop. 2.12, stated for one ordered pair):

    T(P, Q)(α) = sup_{ε∈ℝ} max{0, e^{−ε}(1 − α − δ_{P‖Q}(ε))},
    δ_{P‖Q}(ε) = sup_α (1 − α − e^ε T(P, Q)(α)).

A ``MAX`` query returns the pointwise min of the two directions (a pessimistic
summary; its convex hull is the symmetrised trade-off function).

From loss laws (``VertexSide``), each direction's curve is read off *both* laws of a
bracket side. The law of that direction (loss L under P) gives T(P, Q) accurately where
the Neyman–Pearson test rejects outcomes of loss L ≥ 0: there β = Q(L > l) sums Q-masses
p·e^{−l} ≤ p, so no P-mass error is amplified. Small α is the other end, where the test
rejects very negative losses and a P-mass error (FFT roundoff of 1e-16 on a composed
law) becomes a Q-mass error e^{|l|} times larger. There the law of the reverse
direction (loss −L under Q) is the accurate one: it holds those Q-masses themselves, and
T(P, Q) is the inverse of T(Q, P) (ibid. Prop. 2.2 and the remark after it, for one
pair). Both laws of a sound side belong to pairs dominating (P, Q) in the respective
direction, and domination of (Q, P) by (Q', P') is domination of (P, Q) by (P', Q'), so
each curve is a sound lower bound on β. Each is used where it is accurate, and extended
to the rest of [0, 1] by a curve that is still sound and convex, so the side is their
pointwise max (an optimistic side: their min, with extensions that stay above β).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import attrs
import numpy as np

from accounting.curves.curve import Curve, Provenance, headline
from accounting.curves.profile import compose_via_pld, repeat_via_pld
from accounting.numerics.loss import UNIT_ROUNDOFF, LossPMF, hockey_stick
from accounting.validation import check_array, check_count
from accounting.vocabulary import ArrayLike, Direction

#: the roundoff a probability built from sums of masses may exceed 1 by (as LossPMF)
_ONE = 1.0 + 1e-6


def _check_columns(where: str, columns: dict[str, tuple[ArrayLike, float, float]],
                   order: int) -> int:
    """The common length of the 1-d arrays ``columns`` ({name: (array, lo, hi)}), each
    free of NaN, within its range and monotone (``order`` = 1 non-decreasing, −1
    non-increasing: they are sums of masses from the top, which rounding never turns
    back), as fresh construction makes them and a saved side is read back."""
    sizes = set()
    for name, (value, lo, hi) in columns.items():
        arr = check_array(f"{where}.{name}", value, lo=lo, hi=hi)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"{where}.{name} must be a non-empty 1-d array")
        if np.any(order * np.diff(arr) < 0):
            raise ValueError(f"{where}.{name} must be "
                             f"{'non-decreasing' if order > 0 else 'non-increasing'}")
        sizes.add(arr.size)
    if len(sizes) != 1:
        raise ValueError(f"{where}: {', '.join(columns)} must have one length, got "
                         f"{sorted(sizes)}")
    return sizes.pop()

__all__ = ["TradeOff", "TradeOffSide", "VertexSide", "BetaSide"]

#: δ(ε) of a loss law's trade-off beyond this ε is summed from the law itself
#: (``VertexSide._far_delta``): e^ε overflows float64 at 709.78
FAR_EPS = 700.0


class TradeOffSide(Protocol):
    def beta(self, alpha: np.ndarray, direction: Direction) -> np.ndarray: ...

    def delta(self, eps: np.ndarray, direction: Direction) -> np.ndarray: ...


@attrs.frozen(eq=False)
class _OwnLaw:
    """T(P, Q) from the law of its own direction (loss L under P, atoms l_j, P-masses p_j).

    The Neyman–Pearson tests reject the smallest losses first (Q's atom at −∞ at no cost
    in α): before atom j is rejected, 1 − α_j = P(L ≥ l_j) (the atom at +∞ included) and
    β_j = Q(L ≥ l_j) = Σ_{i≥j} p_i e^{−l_i}. Both are sums from the top, so 1 − α never
    cancels O(1) numbers in the upper tail; on the segment of atom j the slope is
    −e^{−l_j}, exact (differences of cumulative sums are noise where masses are tiny).

    Trusted for α ≥ α* = P(L < 0), where every slope is at most 1 in magnitude, so an
    absolute error in α or in a P-mass moves β by no more. Below α*:

    * pessimistic (``extend_below``): the law whose negative losses are raised to 0 —
      raising losses makes the pair dominate (split each Q-atom into the part the
      new loss implies and a Q-only rest; merging them back is post-processing) —
      i.e. the line of slope −1 through (α*, β(α*));
    * optimistic (``chord_below``): the chord from (0, 1) to (α*, β(α*)), above the
      true T on [0, α*] since T is convex with T(0) ≤ 1.
    """

    alpha_c: np.ndarray   # 1 − α_j, decreasing
    beta: np.ndarray      # β_j, decreasing
    ratio: np.ndarray     # segment slopes −dβ/dα = e^{−l_j} (0 for the atom at +∞)
    start: int            # first vertex of the trusted part (first atom with l ≥ 0)
    #: the law itself: δ(ε) at ε beyond ``FAR_EPS``, where e^ε and e^{−l} leave float64
    #: (None in a curve saved before it was kept: see ``VertexSide.delta``)
    law: LossPMF | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        n = _check_columns("OwnLaw", {"alpha_c": (self.alpha_c, 0.0, _ONE),
                                      "beta": (self.beta, 0.0, _ONE)}, -1)
        ratio = check_array("OwnLaw.ratio", self.ratio, lo=0.0, allow_inf=True)
        if ratio.shape != (n - 1,):
            raise ValueError(f"OwnLaw.ratio must hold {n - 1} slopes, one per segment")
        check_count("OwnLaw.start", self.start, minimum=0, maximum=n - 1)

    @classmethod
    def of(cls, law: LossPMF) -> _OwnLaw:
        l, p = law.losses, law.masses
        with np.errstate(over="ignore"):
            q = p * np.exp(-l)
            ratio = np.concatenate([np.exp(-l), [0.0]])
        s = np.cumsum(p[::-1])[::-1]
        u = np.cumsum(q[::-1])[::-1]
        alpha_c = np.concatenate([s + law.inf_mass, [law.inf_mass, 0.0]])
        beta = np.minimum(np.concatenate([u, [0.0, 0.0]]), 1.0)
        return cls(alpha_c, beta, ratio, int(np.searchsorted(l, 0.0, side="left")), law=law)

    @property
    def alpha_star(self) -> float:
        return max(1.0 - float(self.alpha_c[self.start]), 0.0)

    def trusted(self, alpha: np.ndarray) -> np.ndarray:
        """β on α ≥ α*, interpolated in 1 − α (exact for α ≥ ½; slopes ≤ 1 below)."""
        a_c, b = self.alpha_c[self.start:], self.beta[self.start:]
        out: np.ndarray = np.interp(1.0 - alpha, a_c[::-1], b[::-1])
        return out

    def extend_below(self, alpha: np.ndarray) -> np.ndarray:
        a_star = self.alpha_star
        return np.where(alpha < a_star, self.beta[self.start] + (a_star - alpha),
                        self.trusted(alpha))

    def chord_below(self, alpha: np.ndarray) -> np.ndarray:
        a_star = np.float64(self.alpha_star)    # numpy: α* = 0 (P = Q) divides quietly
        b_star = float(self.beta[self.start])
        with np.errstate(invalid="ignore", divide="ignore"):
            chord = 1.0 - alpha * ((1.0 - b_star) / a_star)
        return np.where(alpha < a_star, chord, self.trusted(alpha))


@attrs.frozen(eq=False)
class _ReverseLaw:
    """T(P, Q) from the law of the reverse direction (loss M = −L under Q, atoms m_k,
    Q-masses r_k, Q-mass at M = +∞ r_∞ where P has none), as the inverse of T(Q, P).

    Rejecting the outcomes of largest M first: α = P(M ≥ m) = Σ r_k e^{−m_k} and the power
    1 − β = r_∞ + Q(M ≥ m) = r_∞ + Σ r_k, both summed from the top, where the Q-masses are
    the large ones. Trusted for α ≤ α* = P(M > 0) (the same test region as ``_OwnLaw``
    leaves out). Above α*:

    * pessimistic: the law whose losses M ≤ 0 are raised to 0 (as in ``_OwnLaw``), i.e.
      β falls with slope −1 from (α*, β(α*)) to the Q-mass left, never below 0;
    * optimistic: the chord from (α*, β(α*)) to (1, 0) (T(1) = 0, T convex); where
      this α* falls short of the own law's, the chord to that law's first trusted
      point instead (``VertexSide.beta``).
    """

    alpha: np.ndarray     # α after rejecting the atoms of M > 0 from the top, increasing
    power: np.ndarray     # 1 − β there, increasing
    rest: float           # Q-mass of the atoms with M ≤ 0

    def __attrs_post_init__(self) -> None:
        _check_columns("ReverseLaw", {"alpha": (self.alpha, 0.0, _ONE),
                                      "power": (self.power, 0.0, _ONE)}, 1)
        check_array("ReverseLaw.rest", self.rest, lo=0.0, hi=_ONE)

    @classmethod
    def of(cls, law: LossPMF) -> _ReverseLaw:
        j0 = int(np.searchsorted(law.losses, 0.0, side="right"))
        m, r = law.losses[j0:][::-1], law.masses[j0:][::-1]
        alpha = np.concatenate([[0.0], np.cumsum(r * np.exp(-m))])
        power = law.inf_mass + np.concatenate([[0.0], np.cumsum(r)])
        return cls(alpha, np.minimum(power, 1.0), math.fsum(law.masses[:j0]))

    @property
    def alpha_star(self) -> float:
        return float(self.alpha[-1])

    def trusted(self, alpha: np.ndarray) -> np.ndarray:
        out: np.ndarray = 1.0 - np.interp(alpha, self.alpha, self.power)
        return out

    def extend_above(self, alpha: np.ndarray) -> np.ndarray:
        a_star, b_star = np.float64(self.alpha[-1]), 1.0 - float(self.power[-1])
        line = np.maximum(b_star - (alpha - a_star), max(b_star - self.rest, 0.0))
        return np.where(alpha > a_star, np.maximum(line, 0.0), self.trusted(alpha))

    def chord_above(self, alpha: np.ndarray) -> np.ndarray:
        a_star, b_star = np.float64(self.alpha[-1]), 1.0 - float(self.power[-1])
        with np.errstate(invalid="ignore", divide="ignore"):
            chord = b_star * (1.0 - alpha) / (1.0 - a_star)
        return np.where(alpha > a_star, chord, self.trusted(alpha))


def _add_up(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """a + b rounded up: the float sum, one ulp higher where it fell below the exact sum
    (the error term of Knuth's TwoSum, exact, says which)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    out: np.ndarray = np.where(err > 0, np.nextafter(s, np.inf), s)
    return out


@attrs.frozen(eq=False)
class VertexSide:
    """One bracket side of the trade-off functions of loss laws (piecewise linear).

    ``laws`` = (forward, backward) loss laws; ``pessimistic`` says which side they are.
    β of a direction combines the curve of its own law and the inverse curve of the
    reverse law (module docstring): their max on a sound side (convex: both are), min
    on an optimistic one, which may keep a concave kink where the two laws' curves
    meet, as large as the gap between them (2e-8 for 50 subsampled Gaussians,
    q = 0.01, σ = 0.8, grid 1e-3), its values still above the true β. δ is the
    conjugate of the own law's vertices (that law's profile).
    """

    own: tuple[_OwnLaw, _OwnLaw]
    reverse: tuple[_ReverseLaw, _ReverseLaw]
    pessimistic: bool = True

    def __attrs_post_init__(self) -> None:
        for name, kind in (("own", _OwnLaw), ("reverse", _ReverseLaw)):
            value = getattr(self, name)
            if not (isinstance(value, tuple) and len(value) == 2
                    and all(isinstance(v, kind) for v in value)):
                raise TypeError(f"VertexSide.{name} must be a (forward, backward) pair of "
                                f"{kind.__name__.lstrip('_')}s")
        if not isinstance(self.pessimistic, bool):
            raise TypeError(f"VertexSide.pessimistic must be true or false, got "
                            f"{self.pessimistic!r}")

    @classmethod
    def from_laws(cls, laws: tuple[LossPMF, LossPMF], *,
                  pessimistic: bool = True) -> VertexSide:
        """The trade-off functions of two directional laws; a pessimistic side first
        puts the mass that roundoff lost back on the top loss (``LossPMF.topped_up``):
        a lost 1e-13 (a grid of 10⁴ differences of profile values, compounded by
        composition) is nothing to δ, but it is mass that no test pays for."""
        fwd, bwd = laws
        if pessimistic:
            fwd, bwd = fwd.topped_up(), bwd.topped_up()
        return cls((_OwnLaw.of(fwd), _OwnLaw.of(bwd)),
                   (_ReverseLaw.of(bwd), _ReverseLaw.of(fwd)), pessimistic)

    @staticmethod
    def _index(direction: Direction) -> int:
        return 0 if direction is Direction.FORWARD else 1

    def beta(self, alpha: np.ndarray, direction: Direction) -> np.ndarray:
        i = self._index(direction)
        alpha = np.asarray(alpha, dtype=float)
        own, rev = self.own[i], self.reverse[i]
        if self.pessimistic:
            # both extensions have slope −1, so the max of the two convex curves is
            # convex, and sound where each is
            out = np.maximum(own.extend_below(alpha), rev.extend_above(alpha))
        else:
            out = np.minimum(own.chord_below(alpha), rev.chord_above(alpha))
            lo, hi = rev.alpha_star, own.alpha_star
            if lo < hi:
                # between the two trusted parts, the chord of their end points: above
                # the convex T there too, and no concave kink where the two chords cross
                b_lo = float(rev.trusted(np.array([lo]))[0])
                b_hi = float(own.trusted(np.array([hi]))[0])
                gap = (alpha > lo) & (alpha < hi)
                out = np.where(gap, b_lo + (alpha - lo) * ((b_hi - b_lo) / (hi - lo)), out)
        clipped: np.ndarray = np.clip(out, 0.0, 1.0)
        return clipped

    def power(self, alpha: np.ndarray, direction: Direction) -> np.ndarray:
        """1 − β of a pessimistic side (an upper bound on the power of every test of
        size α), computed as the power itself and rounded up: 1 − β from β loses all
        below half an ulp of 1 (1.1e-16) and 1e-4 relative at α = 1e-12 (an identical
        pair gave 1.0000889e-12 there). The min of the two laws' powers (β is their
        max): the reverse law's sums its Q-masses from the top (``_ReverseLaw``), its
        extension above α* and the own law's below α* are lines of slope 1 through the
        end points; the own law's trusted part, where β ≤ 1 − α* is not near 1 unless α
        is small, keeps 1 − β plus that half ulp. Exact where the arithmetic is: P = Q
        gives α."""
        if not self.pessimistic:
            raise ValueError("power() is the pessimistic side's (an upper bound on TPR)")
        i = self._index(direction)
        alpha = np.asarray(alpha, dtype=float)
        own, rev = self.own[i], self.reverse[i]
        # own law: below α* = 1 − α_c[s] the line β = β_s + (α* − α), whose power is
        # α_c[s] − β_s + α; above, 1 − β plus the half ulp β was rounded by
        b_s, c_s = float(own.beta[own.start]), float(own.alpha_c[own.start])
        below = _add_up(_add_up(c_s, -b_s), alpha)
        above = 1.0 - own.trusted(alpha) + np.finfo(float).epsneg
        own_power = np.where(alpha < own.alpha_star, below, above)
        # reverse law: the power it sums, interpolated (relative error ≤ 4u: every term
        # is non-negative), and above α* its extension min(p* + (α − α*), p* + rest)
        a_star, p_star = float(rev.alpha[-1]), float(rev.power[-1])
        inside = np.interp(alpha, rev.alpha, rev.power)
        inside = np.where(inside > 0,
                          np.nextafter(inside * (1.0 + 8.0 * UNIT_ROUNDOFF), np.inf), 0.0)
        line = np.minimum(_add_up(p_star, _add_up(alpha, -a_star)), _add_up(p_star, rev.rest))
        rev_power = np.where(alpha > a_star, line, inside)
        return np.clip(np.minimum(own_power, rev_power), 0.0, 1.0)

    def delta(self, eps: np.ndarray, direction: Direction) -> np.ndarray:
        """sup_j (1 − α_j) − e^ε β_j over the own law's vertices: the maximising vertex
        is where the segment slope e^{−l_j} crosses e^{−ε}, by binary search (the
        slopes are non-increasing)."""
        own = self.own[self._index(direction)]
        alpha_c, beta = own.alpha_c, own.beta
        eps = np.asarray(eps, dtype=float)
        with np.errstate(over="ignore"):
            xinv = np.exp(-eps)
        # move to the next vertex while its gain per unit α beats the cost: db·x < da
        j = np.searchsorted(-own.ratio, -xinv, side="left")
        with np.errstate(over="ignore", invalid="ignore"):
            val = alpha_c[j] - np.exp(eps) * beta[j]
        val = np.where(eps == -np.inf, 1.0, val)
        far = eps > FAR_EPS
        if far.any():
            val = np.where(far, self._far_delta(own, eps, j), val)
        return np.clip(val, 0.0, 1.0)

    def _far_delta(self, own: _OwnLaw, eps: np.ndarray, j: np.ndarray) -> np.ndarray:
        """δ(ε) for ε > ``FAR_EPS`` (+∞ included). There e^ε overflows (ε > 709.8: the
        vertex formula gave ∞·0 = NaN, or −∞) and the slopes e^{−l} and β underflow
        (l > 745), so the vertices no longer locate the maximiser (δ(+∞) was read at the
        first β that underflowed, not at the mass at +∞). The same supremum, Σ_{l_i > ε}
        p_i (1 − e^{ε−l_i}) + m_∞, is the law's hockey-stick sum in log space
        (``loss.hockey_stick``, as ``LossPMF.delta``). A curve saved without its laws
        answers P(L ≥ l_j) on a pessimistic side (at least δ(ε): the vertex j found is
        never past the maximiser) and the mass at +∞ on an optimistic one (at most δ)."""
        law = own.law
        if law is None:
            return own.alpha_c[j] if self.pessimistic else np.full(eps.shape, own.alpha_c[-2])
        return hockey_stick(law.losses, law.masses, eps) + law.inf_mass


@attrs.frozen(eq=False)
class BetaSide:
    """A side given by closed forms: β(α, direction) and δ(ε, direction)."""

    beta_fn: Callable[[np.ndarray, Direction], np.ndarray]
    delta_fn: Callable[[np.ndarray, Direction], np.ndarray]

    def beta(self, alpha: np.ndarray, direction: Direction) -> np.ndarray:
        return np.asarray(self.beta_fn(alpha, direction), dtype=float)

    def delta(self, eps: np.ndarray, direction: Direction) -> np.ndarray:
        return np.asarray(self.delta_fn(np.asarray(eps, dtype=float), direction), dtype=float)


@attrs.frozen(eq=False, repr=False)
class TradeOff(Curve):
    """T(P, Q) and T(Q, P), with a sound ``upper`` side (β never too large).

    Answers β(α) and δ(ε) by its sides; ε, D_α and ρ by conversion (``Curve``).
    """

    upper: TradeOffSide
    lower: TradeOffSide | None = None
    provenance: Provenance = attrs.field(factory=Provenance, kw_only=True)

    @classmethod
    def from_laws(cls, upper: tuple[LossPMF, LossPMF],
                  lower: tuple[LossPMF, LossPMF] | None = None, *,
                  provenance: Provenance | None = None) -> TradeOff:
        """The trade-off functions of a bracket of (forward, backward) loss laws: exact
        for exact laws (a pair of finite support), a certified bracket otherwise."""
        return cls(VertexSide.from_laws(upper),
                   VertexSide.from_laws(lower, pessimistic=False) if lower is not None else None,
                   provenance=provenance if provenance is not None else Provenance())

    NATIVE = frozenset({"beta", "delta"})

    def _validate(self) -> None:
        """A side of loss-law vertices says which way it errs: the upper side must be
        the pessimistic one (its β never too large), the lower the optimistic one."""
        for bound, side, want in (("upper", self.upper, True), ("lower", self.lower, False)):
            if isinstance(side, VertexSide) and side.pessimistic is not want:
                kind = "a pessimistic" if want else "an optimistic"
                raise ValueError(f"TradeOff.{bound} must be {kind} side (pessimistic={want}), "
                                 f"got pessimistic={side.pessimistic}")

    def _beta(self, side: TradeOffSide, alpha: np.ndarray, d: Direction) -> np.ndarray:
        """β = T(α) of one direction: ``forward`` T(P, Q), ``backward`` T(Q, P)."""
        return side.beta(alpha, d)

    def _delta(self, side: TradeOffSide, eps: np.ndarray, d: Direction) -> np.ndarray:
        """δ(ε) = sup_α (1 − α − e^ε T(α)) of one direction (module docstring)."""
        return side.delta(eps, d)

    def compose(self, other: Curve) -> TradeOff:
        """The trade-off functions of the independent composition, through the PLDs
        (only for exact curves; see ``profile.compose_via_pld``)."""
        return compose_via_pld(self, other)

    def self_compose(self, count: int) -> TradeOff:
        """``count`` independent copies, through the PLD (exact curves only,
        ``profile.repeat_via_pld``)."""
        return repeat_via_pld(self, count)

    def _summary(self) -> str:
        return f"β(α=0.1) = {headline(lambda: self.beta(0.1))}"
