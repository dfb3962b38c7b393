"""Zero-concentrated differential privacy: the smallest ρ with D_α ≤ ρα for all α > 1.

ρ-zCDP (Bun and Steinke 2016, "Concentrated differential privacy", Def. 1.1) is
equivalent to K(t) ≤ ρ t(t + 1) for all t > 0 (Bun and Steinke 2016, arXiv:1605.02065, Def. 1.1), so the best ρ of a pair
is ρ* = sup_{t>0} K(t)/(t(t + 1)) — the zCDP envelope of its RDP curve. Composition
adds ρ (ibid. Lemma 2.3). Each direction keeps its own ρ.
"""

from __future__ import annotations

from typing import Optional

import attrs

from accounting.curves.curve import Curve, Provenance
from accounting.vocabulary import Direction
from accounting.validation import check_count, check_real

__all__ = ["ZCDP"]


def _rhos(value) -> tuple[float, float]:
    fwd, bwd = value
    return (check_real("rho", fwd, lo=0.0, allow_inf=True),
            check_real("rho", bwd, lo=0.0, allow_inf=True))


def _opt_rhos(value):
    return None if value is None else _rhos(value)


@attrs.frozen(eq=False, repr=False)
class ZCDP(Curve):
    """(ρ_forward, ρ_backward) with a sound ``upper`` side.

    Answers ρ by its own values; D_α ≤ ρα through ``zcdp→rdp``, δ and ε by the
    improved conversion of that Rényi curve, β through its profile (``Curve``).
    """

    upper: tuple[float, float] = attrs.field(converter=_rhos)
    lower: Optional[tuple[float, float]] = attrs.field(default=None, converter=_opt_rhos)
    provenance: Provenance = attrs.field(factory=Provenance, kw_only=True)

    @classmethod
    def symmetric(cls, rho: float) -> "ZCDP":
        """ρ-zCDP in both directions (for example a Gaussian: ρ = Δ²/(2σ²))."""
        return cls((rho, rho), (rho, rho))

    NATIVE = frozenset({"rho"})

    def _rho(self, side: tuple[float, float], _: None, d: Direction) -> float:
        return side[0] if d is Direction.FORWARD else side[1]

    def _validate(self) -> None:
        """A bracket's lower ρ is at most its upper ρ, in each direction."""
        if self.lower is not None:
            for name, lo, up in zip(("forward", "backward"), self.lower, self.upper):
                if lo > up:
                    raise ValueError(f"ZCDP lower rho must not exceed upper rho; {name}: "
                                     f"lower {lo:g} > upper {up:g}")

    def _summary(self) -> str:
        return f"ρ = ({self.upper[0]:.4g}, {self.upper[1]:.4g})"

    def compose(self, other: "ZCDP") -> "ZCDP":
        if not isinstance(other, ZCDP):
            raise TypeError(f"can only compose a ZCDP with a ZCDP, got {type(other).__name__}")
        add = lambda a, b: (a[0] + b[0], a[1] + b[1])  # noqa: E731
        lower = add(self.lower, other.lower) if self.lower and other.lower else None
        return ZCDP(add(self.upper, other.upper), lower,
                    provenance=self.provenance.join(other.provenance))

    def self_compose(self, count: int) -> "ZCDP":
        count = check_count("count", count)
        lower = (self.lower[0] * count, self.lower[1] * count) if self.lower else None
        return ZCDP((self.upper[0] * count, self.upper[1] * count), lower,
                    provenance=self.provenance)

    __add__ = compose

    def __mul__(self, count: int) -> "ZCDP":
        return self.self_compose(count)

    __rmul__ = __mul__
