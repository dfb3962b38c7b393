"""Rényi differential privacy: D_α(P‖Q) and D_α(Q‖P) as functions of the order α.

D_α(P‖Q) = K(α − 1)/(α − 1) with the cumulant generating function of the privacy
loss K(t) = log E_P[e^{tL}] (Mironov 2017, "Rényi differential privacy", Def. 3 and
Prop. 1). Composition adds K (ibid. Prop. 1). Curves are callables of real α > 1, so
conversions can optimise over continuous α rather than a fixed grid of orders.

The two limits are answered too (van Erven and Harremoës 2014, "Rényi divergence and
Kullback–Leibler divergence", arXiv:1206.2459, Thms 3–6: D_α is non-decreasing and
continuous in α, D_1 = KL, D_∞ = log ess sup dP/dQ):

* α = 1: D_1 = K'(0) = E_P[L], the KL divergence;
* α = ∞: D_∞ = ess sup L, the pure-DP ε of the direction (+∞ where L is unbounded).

A CGF term may declare them (a ``LimitedCGF``: the exact laws of a pair, a PLD's
laws, a zCDP bound); composition adds them, as it adds K. Without a declaration the
sound side still answers: D_1 ≤ D_{1+τ} (τ = ``KL_ORDER_OFFSET``) by monotonicity,
and D_∞ ≤ +∞ — no finite order certifies a finite sup — while the optimistic side,
whose finite-order values are not lower bounds of the limit at α = 1, refuses α = 1
and answers α = ∞ by its largest finite order (D_α ≤ D_∞).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from accounting.curves.curve import Curve, Provenance, directional_max
from accounting.validation import check_array, check_count, check_real
from accounting.vocabulary import Bound, Direction

__all__ = ["RDP", "CGF", "LimitedCGF", "KL_ORDER_OFFSET", "LOWER_SUP_ORDER", "T_MAX"]

CGFFn = Callable[[np.ndarray, Direction], np.ndarray]
LimitFn = Callable[[float, Direction], float]

#: τ of the sound α = 1 answer D_1 ≤ D_{1+τ} of a CGF without a declared KL: small
#: enough that the excess (≈ τ·Var(L)/2) is far below any reported digit, large enough
#: that K(τ)/τ keeps ~10 correct digits in float64
KL_ORDER_OFFSET = 1e-6
#: the finite order whose D_α the optimistic side reports at α = ∞ (D_α ≤ D_∞)
LOWER_SUP_ORDER = 1e4
#: the largest order t = α − 1 of a Rényi curve whose cost grows with α (the
#: subsampled Gaussian's integer-order binomial sums: ~72 bytes per order, measured,
#: so 7 GB at α = 1e8 + 1) and of ``accounting gap --t``: the one cap, shared. The
#: accountants' own order searches stop at t = 1e5; closed forms answer any order.
T_MAX = 1e6
_LIMITS = (1.0, np.inf)


@attrs.frozen(eq=False)
class LimitedCGF:
    """A CGF function K(t, direction) that also knows its limits D_1 (KL) and D_∞.

    ``limit(order, direction)`` for order 1 or ∞ returns the value on the same side as
    K (an upper bound for a sound CGF, a lower one for an optimistic CGF)."""

    fn: CGFFn
    limit: LimitFn | None = None
    #: K at complex orders, where the CGF is an exact closed form with an analytic
    #: continuation (``curves.characteristic``: φ(t) = exp(K(it))); None otherwise
    analytic: CGFFn | None = attrs.field(default=None, kw_only=True)

    def __call__(self, t: np.ndarray, direction: Direction) -> np.ndarray:
        return self.fn(t, direction)

    def renyi_limit(self, order: float, direction: Direction) -> float | None:
        if order not in _LIMITS:
            raise ValueError(f"order must be 1 or inf, got {order!r}")
        return None if self.limit is None else float(self.limit(order, direction))


class _Checked:
    """Terms taken from CGFs, checked when those were built: ``_cgf_terms`` lets them
    through unchecked, as a composition of n terms re-checked at every pairwise sum
    would cost O(n²)."""

    __slots__ = ("terms",)

    def __init__(self, terms: tuple[tuple[float, CGFFn], ...]) -> None:
        self.terms = terms


def _cgf_terms(value: Any) -> tuple[tuple[float, CGFFn], ...]:
    """attrs converter of ``CGF.terms``: a tuple of (weight ≥ 0, callable) pairs."""
    if isinstance(value, _Checked):
        return value.terms
    terms = tuple(value)
    for i, term in enumerate(terms):
        if not (isinstance(term, tuple) and len(term) == 2):
            raise TypeError(f"CGF.terms[{i}] must be a (weight, function) pair, "
                            f"got {term!r:.80}")
        c, fn = term
        check_real(f"CGF.terms[{i}] weight", c, lo=0.0)
        if not callable(fn):
            raise TypeError(f"CGF.terms[{i}] function must be callable K(t, direction), "
                            f"got {type(fn).__name__}")
    return terms


@attrs.frozen(eq=False)
class CGF:
    """K(t, direction) = Σ_i c_i·K_i(t, direction): a weighted sum of component CGFs."""

    terms: tuple[tuple[float, CGFFn], ...] = attrs.field(converter=_cgf_terms)

    @classmethod
    def of(cls, fn: CGFFn, limit: LimitFn | None = None,
           analytic: CGFFn | None = None) -> CGF:
        """The CGF of one function; ``limit(order, direction)`` declares its D_1 and
        D_∞, ``analytic(z, direction)`` its values at complex orders (see
        ``LimitedCGF``)."""
        if limit is None and analytic is None:
            return cls(((1.0, fn),))
        return cls(((1.0, LimitedCGF(fn, limit, analytic=analytic)),))

    def limit(self, order: float, direction: Direction) -> float | None:
        """Σ_i c_i·D_order,i for order 1 (KL) or ∞ (D_∞): composition adds both limits
        as it adds K; None unless every weighted term declares its limit."""
        total = 0.0
        for c, fn in self.terms:
            if c == 0:
                continue
            get = getattr(fn, "renyi_limit", None)
            value = None if get is None else get(order, direction)
            if value is None:
                return None
            total += c * value
        return total

    def __call__(self, t: np.ndarray, direction: Direction) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        total = np.zeros(t.shape)
        for c, fn in self.terms:
            total = total + c * np.asarray(fn(t, direction), dtype=float)
        return total

    def __add__(self, other: CGF) -> CGF:
        if not isinstance(other, CGF):
            return NotImplemented
        return CGF(_Checked(self.terms + other.terms))

    def scale(self, count: float) -> CGF:
        count = check_real("count", count, lo=0.0)
        return CGF(_Checked(tuple((c * count, fn) for c, fn in self.terms)))


@attrs.frozen(eq=False, repr=False)
class RDP(Curve):
    """Rényi divergences of both directions at any real order α > 1.

    Answers D_α (``renyi``, alias ``rdp``) and the CGF (``cgf``) by its own formula;
    δ and ε by the improved conversion (``rdp→profile``), β through that profile, ρ by
    the zCDP envelope (``Curve``).
    """

    upper: CGF
    lower: CGF | None = None
    provenance: Provenance = attrs.field(factory=Provenance, kw_only=True)

    def cgf(self, t: np.ndarray | float, direction: Direction | str = "max",
            bound: Bound | str = "upper") -> np.ndarray:
        """K(t) = (α − 1)·D_α at α = 1 + t, for t > 0."""
        t = check_array("t", t, lo=0.0, lo_open=True)
        side = self._side(bound)
        return directional_max(lambda d: side(t, d), direction)

    NATIVE = frozenset({"renyi"})

    def _renyi(self, side: CGF, a: np.ndarray, d: Direction) -> np.ndarray:
        """D_α = K(α − 1)/(α − 1) of one direction; α = 1 and α = ∞ by the declared
        limits, else (module docstring) D_{1+τ} and +∞ on the sound side, refusal and
        D_{LOWER_SUP_ORDER} on the optimistic side."""
        a = np.asarray(a, dtype=float)
        finite = (a > 1.0) & np.isfinite(a)
        safe = np.where(finite, a, 2.0)
        out = np.where(finite, side(safe - 1.0, d) / (safe - 1.0), np.nan)
        upper = side is self.upper
        for order in _LIMITS:
            if not np.any(a == order):
                continue
            value = side.limit(order, d)
            if value is None:
                value = self._undeclared_limit(side, order, d, upper)
            out = np.where(a == order, value, out)
        return out

    def _undeclared_limit(self, side: CGF, order: float, d: Direction, upper: bool) -> float:
        if order == 1.0:
            if not upper:
                raise ValueError(
                    "renyi(alpha=1, bound='lower') has no answer for this RDP curve: its "
                    "CGF does not declare its KL divergence, and finite orders only bound "
                    "D_1 from above; ask for the upper side")
            tau = KL_ORDER_OFFSET
            return float(side(np.array([tau]), d)[0] / tau)   # D_1 ≤ D_{1+τ}
        if upper:
            return np.inf   # no finite order certifies a finite ess sup
        big = LOWER_SUP_ORDER - 1.0
        value = float(side(np.array([big]), d)[0] / big)
        if np.isnan(value):
            raise ValueError("renyi(alpha=inf, bound='lower'): the CGF gave NaN at order "
                             f"{LOWER_SUP_ORDER:g}")
        return value

    def _summary(self) -> str:
        d2, d32 = np.asarray(self.renyi(np.array([2.0, 32.0])), dtype=float)
        return f"{len(self.upper.terms)} term(s); D_2 = {d2:.4g}, D_32 = {d32:.4g}"

    def compose(self, other: Curve) -> RDP:
        if not isinstance(other, RDP):
            raise TypeError(f"can only compose an RDP with an RDP, got {type(other).__name__}")
        lower = self.lower + other.lower if self.lower is not None and other.lower is not None else None
        return RDP(self.upper + other.upper, lower, provenance=self.provenance.join(other.provenance))

    def self_compose(self, count: int) -> RDP:
        count = check_count("count", count)
        lower = self.lower.scale(count) if self.lower is not None else None
        return RDP(self.upper.scale(count), lower, provenance=self.provenance)
