"""The privacy-loss distribution (PLD) curve: a certified bracket of discretised laws.

``PLD.upper`` holds pessimistic (forward, backward) loss PMFs on a common grid, whose
pairs dominate the true pair; ``PLD.lower`` optimistic ones, dominated by it
(construction in ``accounting.numerics.discretise``). Composition convolves the laws
(losses add; Dwork, Rothblum, Vadhan 2010 / Koskela, Jälkö, Honkela 2020), and
dominance is preserved by composition, so every query on a composed PLD still
brackets the truth: δ_lower(ε) ≤ δ(ε) ≤ δ_upper(ε), ε_lower(δ) ≤ ε(δ) ≤ ε_upper(δ).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
import numpy as np

from accounting.curves.curve import Curve, Provenance, check_no_rtol, headline
from accounting.numerics.fourier import RefiningLaw, compose_laws, compose_pmfs
from accounting.numerics.loss import MAX_GRID_POINTS, LossPMF, check_law
from accounting.numerics.summed_cgf import FAR_TAIL
from accounting.validation import check_array, check_count, check_positive
from accounting.vocabulary import Bound, Direction, as_bound, as_direction

__all__ = ["PLD", "DEFAULT_STEP", "DEFAULT_TAIL", "DEEP_TAIL", "DEEP_BELOW", "MIN_STEP",
           "check_step", "compose_plds", "RefiningPLD"]

#: Default grid step of the privacy loss: ε errors of order step² per composition.
DEFAULT_STEP = 2e-4
#: Default tail mass cut per direction when discretising a pair (sent to +∞).
DEFAULT_TAIL = 1e-20
#: The deep tier of a composition, for δ below ``DEEP_BELOW``: the discretisation
#: tails of all uses together, and the mass above the composed window, are each at
#: most this (both sent to +∞ by the pessimistic side). At the default tier they are
#: ``DEFAULT_TAIL`` and ``summed_cgf.FAR_TAIL``, so that an upper ε(δ) is ∞ for δ
#: below 1e-20 and loose near it; at 1e-40 the +∞ mass is at most 3e-40 (with the
#: composition's own truncation, ``fourier._TRUNCATION``), 3e-10 of δ = 1e-30.
DEEP_TAIL = 1e-40
#: δ below this (1e5 × ``DEFAULT_TAIL``, where the default tier's +∞ mass starts to
#: cost ε more than a relative 1e-8) is answered by the deep tier.
DEEP_BELOW = 1e5 * DEFAULT_TAIL

#: the finest grid step accepted anywhere: finer grids need more points than
#: ``loss.MAX_GRID_POINTS`` for any mechanism worth accounting (one Gaussian at step
#: 2e-5 already takes ~1e6 points), and the support search would crawl towards them
MIN_STEP = 1e-5


def check_step(step: object) -> float:
    """``step`` as a float in [``MIN_STEP``, ∞), or a ValueError saying why."""
    x = check_positive("step", step)
    if x < MIN_STEP:
        raise ValueError(f"step must be at least {MIN_STEP:g}, got {x:g}: a finer grid needs "
                         f"more grid points than allowed (max {MAX_GRID_POINTS} per law; one "
                         f"Gaussian at step 2e-5 already takes ~1e6 points); use a larger step")
    return x


def _pmfs(value: Iterable[LossPMF]) -> tuple[LossPMF, LossPMF]:
    fwd, bwd = value
    return (fwd, bwd)


@attrs.frozen(eq=False, repr=False)
class PLD(Curve):
    """Pessimistic (``upper``) and optimistic (``lower``) loss laws, both directions."""

    upper: tuple[LossPMF, LossPMF] = attrs.field(converter=_pmfs)
    lower: tuple[LossPMF, LossPMF] | None = attrs.field(default=None)
    provenance: Provenance = attrs.field(factory=Provenance, kw_only=True)

    # ---------------------------------------------------------------- access
    def law(self, direction: Direction | str = "forward", bound: Bound | str = "upper") -> LossPMF:
        d = as_direction(direction)
        if d is Direction.MAX:
            raise ValueError("law() needs direction 'forward' or 'backward'")
        side: tuple[LossPMF, LossPMF] = self._side(bound)
        return side[0] if d is Direction.FORWARD else side[1]

    @property
    def step(self) -> float | None:
        return self.upper[0].step

    # --------------------------------------------------------------- queries
    # (the public delta/epsilon/… and their intervals are ``Curve``'s; these are the
    # formulas of one concrete direction on one side)
    NATIVE = frozenset({"delta", "epsilon"})
    PURE_DP = True

    @staticmethod
    def _of(side: tuple[LossPMF, LossPMF], d: Direction) -> LossPMF:
        return side[0] if d is Direction.FORWARD else side[1]

    def _delta(self, side: tuple[LossPMF, LossPMF], eps: np.ndarray, d: Direction) -> np.ndarray:
        """δ(ε) of one direction's law."""
        return self._of(side, d).delta(eps)

    def _epsilon(self, side: tuple[LossPMF, LossPMF], dl: np.ndarray, d: Direction
                 ) -> np.ndarray:
        """Smallest ε ≥ 0 with δ(ε) ≤ delta of one direction's law.

        δ = 0 (pure DP) is answered where the composed loss is bounded: ε(0) is its
        largest loss, exactly when the laws carry it (``LossPMF.sup_loss``, recorded
        from the exact profile), on both sides. An unbounded loss raises ValueError.
        """
        out = self._of(side, d).epsilon(dl)
        if np.any(dl == 0):
            exact = self.law(d, "upper")
            if exact.inf_mass > 0 and not exact.capped:
                raise ValueError(
                    f"delta = 0 (pure DP) has no finite ε here: the {d.value} privacy loss "
                    f"is unbounded (mass {exact.inf_mass:.3g} at +∞, or a tail beyond "
                    "every grid point); ask for a delta > 0")
            if exact.sup_loss is not None:   # exact largest loss: both sides agree
                out = np.where(dl == 0, max(exact.sup_loss, 0.0), out)
        return out

    def _validate(self) -> None:
        """The laws of a PLD share one grid step (composition convolves them on it);
        each holds its side (``check_law``: P-mass 1 up to roundoff on the upper side,
        never none, no slack there); and a ``sup_loss``, a bound on the largest loss of
        the exact law, is not below an atom of the optimistic law of its direction,
        whose atoms never lie above the exact law's (a smaller one would cap ε below
        the truth)."""
        for bound, side in (("upper", self.upper), ("lower", self.lower)):
            for label, law in zip(("forward", "backward"), side or ()):
                check_law(law, f"PLD.{bound} {label}", pessimistic=bound == "upper")
        for k, label in enumerate(("forward", "backward")):
            if self.lower is None:
                break
            low = self.lower[k]
            top = low.losses[low.masses > 0]
            if low.inf_mass > 0 or top.size == 0:
                continue
            for bound, side in (("upper", self.upper), ("lower", self.lower)):
                sup = side[k].sup_loss
                # roundoff: an optimistic atom within roundoff below a grid point sits on it;
                # and the optimistic builder may put its top atom on the grid point just
                # above sup (a sup below one step; losses past ε ≈ 700, where e^ε leaves
                # float64; both found by tests/test_fuzz_invariants.py): allow one step
                slack = 1e-9 * (1.0 + abs(sup)) if sup is not None else 0.0
                if sup is not None and low.step is not None:
                    slack += low.step
                if sup is not None and top[-1] > sup + slack:
                    raise ValueError(f"PLD.{bound} {label}: sup_loss {sup:g} is below the "
                                     f"largest loss {top[-1]:g} of the lower law; it must "
                                     f"bound the largest loss")
        steps = {law.step for side in (self.upper, self.lower) if side is not None
                 for law in side if law.step is not None}
        if len(steps) > 1:
            raise ValueError(f"PLD laws must share one grid step, got steps "
                             f"{', '.join(f'{s:g}' for s in sorted(steps))}")

    def _summary(self) -> str:
        points = max(law.masses.size for law in self.upper)
        step = f"step {self.step:g}, " if self.step else ""
        return f"{step}{points} points; ε(1e-6) = {headline(lambda: self.epsilon(1e-6))}"

    # ----------------------------------------------------------- composition
    def compose(self, other: Curve) -> PLD:
        """The PLD of the product pair (independent composition)."""
        if not isinstance(other, PLD):
            raise TypeError(f"can only compose a PLD with a PLD, got {type(other).__name__}")
        upper = (compose_laws(self.upper[0], other.upper[0], pessimistic=True),
                 compose_laws(self.upper[1], other.upper[1], pessimistic=True))
        lower: tuple[LossPMF, LossPMF] | None = None
        if self.lower is not None and other.lower is not None:
            lower = (compose_laws(self.lower[0], other.lower[0], pessimistic=False),
                     compose_laws(self.lower[1], other.lower[1], pessimistic=False))
        return PLD(upper, lower, provenance=self.provenance.join(other.provenance))

    def self_compose(self, count: int) -> PLD:
        """The PLD of ``count`` independent copies (one FFT power per law)."""
        return compose_plds([(self, check_count("count", count))])


def _checked_items(items: Iterable[tuple[PLD, int]]) -> list[tuple[PLD, int]]:
    if not items:
        raise ValueError("compose_plds needs at least one PLD")
    for pld, _ in items:
        if not isinstance(pld, PLD):
            raise TypeError(f"expected PLDs, got {type(pld).__name__}")
    return [(pld, check_count("count", c)) for pld, c in items]


def _joined(items: list[tuple[PLD, int]]) -> Provenance:
    """The provenance of a composition: its parts' provenances joined, in order."""
    prov = items[0][0].provenance
    for pld, _ in items[1:]:
        prov = prov.join(pld.provenance)
    return prov


def compose_plds(items: list[tuple[PLD, int]]) -> PLD:
    """Internal (the users' route is ``accounting.compose((pld, count), …)``): the PLD of
    a heterogeneous composition, each PLD repeated its count times.

    All laws go through one Fourier-domain composition on one common grid
    (``fourier.compose_pmfs``): one forward FFT per distinct PLD (per tilt), raised to
    its count, all multiplied, and one inverse FFT, with the rigorous aliasing and
    roundoff bounds described there.
    """
    items = _checked_items(items)
    if len(items) == 1 and items[0][1] == 1:
        return items[0][0]

    def side(laws: list[LossPMF], pessimistic: bool) -> LossPMF:
        return compose_pmfs([(law, c) for law, (_, c) in zip(laws, items)],
                            pessimistic=pessimistic)

    upper = (side([pld.upper[0] for pld, _ in items], True),
             side([pld.upper[1] for pld, _ in items], True))
    lower = None
    lowers = [pld.lower for pld, _ in items]
    known = [low for low in lowers if low is not None]
    if len(known) == len(lowers):
        lower = (side([low[0] for low in known], False), side([low[1] for low in known], False))
    return PLD(upper, lower, provenance=_joined(items))


class RefiningPLD:
    """The PLD of a heterogeneous composition (``compose_plds``) that answers δ(ε) and
    ε(δ) after composing only the tilts each answer needs (``fourier.RefiningLaw``):
    one or two passes over the laws per query region instead of the three to eight
    that resolve the whole window. The answers are as sound as the full PLD's (each
    comes from a sound law) and agree with it within its roundoff allowance (usually
    tighter); ``pld()`` is the full PLD, composed from the same passes. Queries take the arguments of
    ``Curve.delta``/``Curve.epsilon`` and their intervals. ``far_tail``: the mass
    allowed above each composed window (``fourier.RefiningLaw``; the accountant's
    deep tier, for δ below ``DEEP_BELOW``, asks for ``DEEP_TAIL``)."""

    def __init__(self, items: list[tuple[PLD, int]], lower: bool = True,
                 far_tail: float = FAR_TAIL) -> None:
        items = _checked_items(items)
        self._single = items[0][0] if len(items) == 1 and items[0][1] == 1 else None
        self.provenance = _joined(items)
        self._pld: PLD | None = self._single
        if self._single is not None:
            return
        self._sides: dict[Bound, tuple[RefiningLaw, ...]] = {Bound.UPPER: tuple(
            RefiningLaw([(pld.upper[d], c) for pld, c in items], pessimistic=True,
                        far_tail=far_tail)
            for d in (0, 1))}
        lowers = [(pld.lower, c) for pld, c in items]
        known = [(low, c) for low, c in lowers if low is not None]
        if lower and len(known) == len(lowers):
            self._sides[Bound.LOWER] = tuple(
                RefiningLaw([(low[d], c) for low, c in known], pessimistic=False,
                            far_tail=far_tail)
                for d in (0, 1))

    def pld(self) -> PLD:
        """The full PLD (the canonical tilts, as ``compose_plds`` composes them)."""
        if self._pld is None:
            lower = self._sides.get(Bound.LOWER)
            upper = self._sides[Bound.UPPER]
            self._pld = PLD((upper[0].full(), upper[1].full()),
                            (lower[0].full(), lower[1].full()) if lower else None,
                            provenance=self.provenance)
        return self._pld

    def _answer(self, query: str, x: np.ndarray, direction: Direction | str,
                bound: Bound | str) -> np.ndarray:
        b = as_bound(bound)
        if self._single is not None or (query == "epsilon" and np.any(x == 0)):
            # (δ = 0, pure DP: the exact largest loss, which the full laws carry)
            full: np.ndarray = getattr(self.pld(), query)(x, direction, b)
            return full
        side = self._sides.get(b)
        if side is None:
            raise ValueError(f"this composition has no {b.value} side (composed with "
                             "lower=False)")
        vals: list[np.ndarray] = [getattr(side[0 if c is Direction.FORWARD else 1], query)(x)
                                  for c in as_direction(direction).components]
        out: np.ndarray = vals[0] if len(vals) == 1 else np.max(vals, axis=0)
        return out

    def delta(self, epsilon: np.ndarray | float, direction: Direction | str = "max",
              bound: Bound | str = "upper") -> np.ndarray:
        """δ(ε), as ``Curve.delta``."""
        return self._answer("delta", check_array("epsilon", epsilon, allow_inf=True),
                            direction, bound)

    def epsilon(self, delta: np.ndarray | float, direction: Direction | str = "max",
                bound: Bound | str = "upper") -> np.ndarray:
        """ε(δ), as ``Curve.epsilon`` (δ = 0 allowed where the loss is bounded)."""
        dl = check_array("delta", delta, lo=0.0, hi=1.0, hi_open=True)
        return self._answer("epsilon", dl, direction, bound)

    def delta_interval(self, epsilon: np.ndarray | float, direction: Direction | str = "max",
                       *, rtol: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bracket of δ(ε), as ``Curve.delta_interval`` (``rtol=None``
        only: the grid is fixed)."""
        check_no_rtol(self, rtol)
        return (self.delta(epsilon, direction, Bound.LOWER),
                self.delta(epsilon, direction, Bound.UPPER))

    def epsilon_interval(self, delta: np.ndarray | float, direction: Direction | str = "max",
                         *, rtol: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bracket of ε(δ), as ``Curve.epsilon_interval``."""
        check_no_rtol(self, rtol)
        return (self.epsilon(delta, direction, Bound.LOWER),
                self.epsilon(delta, direction, Bound.UPPER))
