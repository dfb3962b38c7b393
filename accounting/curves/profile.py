"""The directional privacy profile: δ_{P‖Q}(ε) and δ_{Q‖P}(ε).

δ_{P‖Q}(ε) = sup_S P(S) − e^ε Q(S) (the hockey-stick divergence; Balle, Barthe,
Gaboardi 2018, "Privacy amplification by subsampling", Thm 1), for every real ε.
The two directions together carry the same information as the PLD and the pair of
trade-off functions (unifying-accounting paper, Thm 1); their max alone does not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

import attrs
import numpy as np

from accounting.curves.curve import Curve, Provenance, headline
from accounting.curves.pld import PLD
from accounting.numerics.loss import LossPMF
from accounting.validation import check_count
from accounting.vocabulary import Direction, InvariantError

__all__ = ["PrivacyProfile", "ProfileSide", "LawSide", "FunctionSide", "invert_decreasing",
           "symmetric_profile", "compose_via_pld", "repeat_via_pld"]

_C = TypeVar("_C", bound=Curve)


class ProfileSide(Protocol):
    def delta(self, eps: np.ndarray, direction: Direction) -> np.ndarray: ...

    def epsilon(self, delta: np.ndarray, direction: Direction) -> np.ndarray: ...


@attrs.frozen(eq=False)
class LawSide:
    """A side given by (forward, backward) loss laws: exact queries."""

    laws: tuple[LossPMF, LossPMF]

    def _law(self, direction: Direction) -> LossPMF:
        return self.laws[0] if direction is Direction.FORWARD else self.laws[1]

    def delta(self, eps: np.ndarray, direction: Direction) -> np.ndarray:
        return self._law(direction).delta(eps)

    def epsilon(self, delta: np.ndarray, direction: Direction) -> np.ndarray:
        return self._law(direction).epsilon(delta)


@attrs.frozen(eq=False)
class FunctionSide:
    """A side given by a function δ(ε, direction); ε(δ) by its own function if given,
    else by bisection (which keeps the sound end of the bracket).

    ``largest_loss`` (optional) guesses each direction's largest finite loss (the
    pair's D_∞, say); the PLD's search for where δ vanishes starts there and checks
    it against ``delta_fn`` (``discretise.profile_sup``), so it is never trusted."""

    delta_fn: Callable[[np.ndarray, Direction], np.ndarray]
    epsilon_fn: Callable[[np.ndarray, Direction], np.ndarray] | None = None
    largest_loss: Callable[[Direction], float | None] | None = attrs.field(
        default=None, kw_only=True)

    def delta(self, eps: np.ndarray, direction: Direction) -> np.ndarray:
        return np.asarray(self.delta_fn(np.asarray(eps, dtype=float), direction), dtype=float)

    def epsilon(self, delta: np.ndarray, direction: Direction) -> np.ndarray:
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


@attrs.frozen(eq=False, repr=False)
class PrivacyProfile(Curve):
    """Both directional profiles, with a sound ``upper`` side and an optional ``lower``.

    Answers δ(ε) and ε(δ) by its sides; β, D_α and ρ by conversion (``Curve``).
    Composes through its PLD when it is exact (``compose``).
    """

    upper: ProfileSide
    lower: ProfileSide | None = None
    provenance: Provenance = attrs.field(factory=Provenance, kw_only=True)

    NATIVE = frozenset({"delta", "epsilon"})

    def _delta(self, side: ProfileSide, eps: np.ndarray, d: Direction) -> np.ndarray:
        return side.delta(eps, d)

    def _epsilon(self, side: ProfileSide, dl: np.ndarray, d: Direction) -> np.ndarray:
        return side.epsilon(dl, d)

    def compose(self, other: Curve) -> PrivacyProfile:
        """The profile of the independent composition, through the PLDs (profile → PLD
        → convolution → profile): only for exact profiles, whose connect-the-dots PLD
        brackets a pair (an upper bound on δ need not be the profile of any pair, and
        then its grid laws are no dominating pair to convolve)."""
        return compose_via_pld(self, other)

    def self_compose(self, count: int) -> PrivacyProfile:
        """``count`` independent copies, through the PLD (exact profiles only,
        ``repeat_via_pld``)."""
        return repeat_via_pld(self, count)

    def _summary(self) -> str:
        return f"δ(ε=1) = {headline(lambda: self.delta(1.0))}"


def compose_via_pld(a: _C, b: Curve) -> _C:
    """``a`` ⊗ ``b`` for two exact curves of one kind without a composition rule of
    their own (profile, trade-off): convert each to PLD, convolve, convert back. A
    TypeError names the kinds and labels where that would not be sound."""
    kind = type(a)
    if type(b) is not kind:
        raise TypeError(f"cannot compose a {kind.__name__} with a {type(b).__name__}; "
                        f"convert both to one of PLD, RDP, ZCDP first")
    for c in (a, b):
        _check_exact(c)
    pa = a.to(PLD)
    pb = pa if b is a else b.to(PLD)
    return _of_kind(pa.compose(pb).to(kind), kind)


def _of_kind(curve: Curve, kind: type[_C]) -> _C:
    """``curve``, a conversion's result, as the kind it was converted to (``convert``
    checks every edge's output kind: ``graph.check_curve``)."""
    if not isinstance(curve, kind):
        raise InvariantError(f"a conversion to {kind.__name__} returned a "
                             f"{type(curve).__name__}")
    return curve


def repeat_via_pld(curve: _C, count: int) -> _C:
    """``count`` independent copies of an exact curve without a composition rule of its
    own (profile, trade-off): its PLD raised to the ``count``-th power by one FFT
    power (``PLD.self_compose``), converted back; the same soundness condition as
    ``compose_via_pld``."""
    count = check_count("count", count)
    _check_exact(curve)
    return _of_kind(curve.to(PLD).self_compose(count).to(type(curve)), type(curve))


def _check_exact(c: Curve) -> None:
    """A TypeError unless ``c`` is exact: a profile or trade-off that is only a bound
    need not belong to any pair, so its grid laws are no dominating pair to convolve."""
    if not c.is_exact:
        kind = type(c).__name__
        raise TypeError(f"cannot compose {kind} curves labelled "
                        f"{c.provenance.exactness.value} ({c.provenance}): only an exact "
                        f"{kind} composes (through its PLD); compose its PLD, "
                        f"RDP or ZCDP instead")


def symmetric_profile(eps: np.ndarray | float, positive: Callable[[np.ndarray], np.ndarray]
                      ) -> np.ndarray:
    """The privacy profile of a symmetric pair (δ_{P‖Q} = δ_{Q‖P}) from its values at
    ε ≥ 0 (``positive``): for ε < 0, δ(ε) = 1 − e^ε + e^ε·δ(−ε), the complement identity
    with the reverse direction, which is the same profile (take complements of the set
    S in sup_S P(S) − e^ε Q(S)). δ(−∞) = 1.
    Monotone in δ(−ε), so an upper (lower) bound at ε ≥ 0 gives one at ε < 0."""
    eps = np.asarray(eps, dtype=float)
    neg = eps < 0
    out = np.array(positive(np.where(neg, 0.0, eps)), dtype=float)
    if neg.any():
        e = eps[neg]
        with np.errstate(over="ignore", invalid="ignore"):
            val = -np.expm1(e) + np.exp(e) * positive(-e)
        out[neg] = np.where(e == -np.inf, 1.0, val)
    return out
