"""Zero-concentrated differential privacy: the smallest ρ with D_α ≤ ρα for all α > 1.

ρ-zCDP (Bun and Steinke 2016, "Concentrated differential privacy", Def. 1.1) is
equivalent to K(t) ≤ ρ t(t + 1) for all t > 0 (Bun and Steinke 2016, arXiv:1605.02065, Def. 1.1), so the best ρ of a pair
is ρ* = sup_{t>0} K(t)/(t(t + 1)) — the zCDP envelope of its RDP curve. Composition
adds ρ (ibid. Lemma 2.3). Each direction keeps its own ρ.

Approximate zCDP (ibid. Def. 1.2): (ξ, ρ)-zCDP is D_α ≤ ξ + ρα for all α > 1 (ξ = 0
is plain zCDP). It converts to that Rényi curve (and through it to δ and ε), composes
by adding ξ and ρ (ibid. Lemma 1.7 for ξ, Lemma 2.3 for ρ), and its ``rho()`` is the
plain-zCDP ρ it implies, ξ + ρ (D_α ≤ ξ + ρα ≤ (ξ + ρ)α for α ≥ 1).

``poisson_subsampled_rdp`` bounds the Rényi curve of Poisson subsampling an abstract
(ξ, ρ)-zCDP guarantee (both neighbouring directions) by Zhu and Wang's general
bound (arXiv:1808.00087, Thm 6) applied to the Rényi curve ε(α) = ξ + ρα.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
import numpy as np

from accounting.curves.curve import Curve, Provenance
from accounting.curves.rdp import CGF, RDP
from accounting.validation import check_count, check_real
from accounting.vocabulary import Direction, Exactness, as_direction

__all__ = ["ZCDP", "poisson_subsampled_rdp", "SUBSAMPLED_MAX_ORDER"]


def _rhos(value: Iterable[float]) -> tuple[float, float]:
    fwd, bwd = value
    return (check_real("rho", fwd, lo=0.0, allow_inf=True),
            check_real("rho", bwd, lo=0.0, allow_inf=True))


def _opt_rhos(value: Iterable[float] | None) -> tuple[float, float] | None:
    return None if value is None else _rhos(value)


def _xis(value: float | tuple[float, float]) -> tuple[float, float]:
    if isinstance(value, tuple) and len(value) == 2:
        fwd, bwd = value
    else:
        fwd = bwd = value
    return (check_real("xi", fwd, lo=0.0), check_real("xi", bwd, lo=0.0))


@attrs.frozen(eq=False, repr=False)
class ZCDP(Curve):
    """(ρ_forward, ρ_backward) with a sound ``upper`` side.

    Answers ρ by its own values; D_α ≤ ρα through ``zcdp→rdp``, δ and ε by the
    improved conversion of that Rényi curve, β through its profile (``Curve``).
    """

    upper: tuple[float, float] = attrs.field(converter=_rhos)
    lower: tuple[float, float] | None = attrs.field(default=None, converter=_opt_rhos)
    provenance: Provenance = attrs.field(factory=Provenance, kw_only=True)
    #: (ξ_forward, ξ_backward) of approximate zCDP, D_α ≤ ξ + ρα (0: plain zCDP); a
    #: single number is both directions' ξ
    xi: tuple[float, float] = attrs.field(default=(0.0, 0.0), converter=_xis, kw_only=True)

    @classmethod
    def symmetric(cls, rho: float) -> ZCDP:
        """ρ-zCDP in both directions (for example a Gaussian: ρ = Δ²/(2σ²))."""
        return cls((rho, rho), (rho, rho))

    @classmethod
    def approximate(cls, xi: float, rho: float) -> ZCDP:
        """(ξ, ρ)-approximate zCDP in both directions, D_α ≤ ξ + ρα for all α > 1
        (Bun and Steinke 2016, arXiv:1605.02065, Def. 1.2): a sound bound (upper
        side only — ξ and ρ are a guarantee, not the pair's exact curve)."""
        return cls((rho, rho), xi=(xi, xi),
                   provenance=Provenance(Exactness.UPPER, ("approximate zCDP",)))

    NATIVE = frozenset({"rho"})

    def _rho(self, side: tuple[float, float], _: None, d: Direction) -> float:
        """ρ of plain zCDP: ρ + ξ (D_α ≤ ξ + ρα ≤ (ξ + ρ)α for α ≥ 1)."""
        i = 0 if d is Direction.FORWARD else 1
        return side[i] + self.xi[i]

    def xi_rho(self, direction: Direction | str = "max") -> tuple[float, float]:
        """(ξ, ρ) of the sound side in one direction, or the larger of each over both
        (``max``): D_α ≤ ξ + ρα for every α > 1."""
        comps = as_direction(direction).components
        idx = [0 if c is Direction.FORWARD else 1 for c in comps]
        return max(self.xi[i] for i in idx), max(self.upper[i] for i in idx)

    def _validate(self) -> None:
        """A bracket's lower ρ is at most its upper ρ, in each direction."""
        if self.lower is not None:
            for name, lo, up in zip(("forward", "backward"), self.lower, self.upper):
                if lo > up:
                    raise ValueError(f"ZCDP lower rho must not exceed upper rho; {name}: "
                                     f"lower {lo:g} > upper {up:g}")

    def _summary(self) -> str:
        xi = f"ξ = ({self.xi[0]:.4g}, {self.xi[1]:.4g}), " if any(self.xi) else ""
        return f"{xi}ρ = ({self.upper[0]:.4g}, {self.upper[1]:.4g})"

    def compose(self, other: Curve) -> ZCDP:
        """ξ and ρ add (arXiv:1605.02065, Lemmas 1.7 and 2.3)."""
        if not isinstance(other, ZCDP):
            raise TypeError(f"can only compose a ZCDP with a ZCDP, got {type(other).__name__}")

        def add(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
            return (a[0] + b[0], a[1] + b[1])
        lower = add(self.lower, other.lower) if self.lower and other.lower else None
        return ZCDP(add(self.upper, other.upper), lower, xi=add(self.xi, other.xi),
                    provenance=self.provenance.join(other.provenance))

    def self_compose(self, count: int) -> ZCDP:
        count = check_count("count", count)
        lower = (self.lower[0] * count, self.lower[1] * count) if self.lower else None
        return ZCDP((self.upper[0] * count, self.upper[1] * count), lower,
                    xi=(self.xi[0] * count, self.xi[1] * count), provenance=self.provenance)


#: the largest integer order at which ``poisson_subsampled_rdp`` sums Zhu and Wang's
#: bound (O(α) terms per order); above it the base bound ξ + ρα is used
SUBSAMPLED_MAX_ORDER = 256


def _zhu_wang_log_moments(xi: float, rho: float, q: float, top: int) -> np.ndarray:
    """log A(α) for α = 2..top, with (arXiv:1808.00087, Thm 6) and ε(l) = ξ + ρl:

    A(α) = (1−q)^{α−1}(1 + (α−1)q) + C(α,2) q²(1−q)^{α−2} e^{ε(2)}
           + 3 Σ_{l=3}^{α} C(α,l) q^l (1−q)^{α−l} e^{(l−1)ε(l)},

    so that (α − 1)·D_α of the subsampled mechanism is at most log A(α)."""
    from scipy.special import gammaln, logsumexp  # late: `import accounting` stays light
    alphas = np.arange(2, top + 1, dtype=float)[:, None]
    ell = np.arange(0, top + 1, dtype=float)[None, :]
    lq, lq1 = np.log(q), (np.log1p(-q) if q < 1 else -np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        comb = gammaln(alphas + 1) - gammaln(ell + 1) - gammaln(alphas - ell + 1)
        rest = np.where(alphas - ell > 0, (alphas - ell) * lq1, 0.0)
        eps = xi + rho * ell
        terms = comb + ell * lq + rest + (ell - 1) * eps + np.log(3.0)
    terms = np.where((ell >= 3) & (ell <= alphas), terms, -np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        second = (gammaln(alphas + 1) - gammaln(3.0) - gammaln(alphas - 1) + 2 * lq
                  + np.where(alphas > 2, (alphas - 2) * lq1, 0.0) + xi + 2 * rho)
        first = (alphas - 1) * lq1 + np.log1p((alphas - 1) * q)
    parts = np.concatenate([first, second, terms], axis=1)
    out: np.ndarray = logsumexp(parts, axis=1)   # (scipy has no stubs here)
    return out


def poisson_subsampled_rdp(z: ZCDP, q: float, max_order: int = SUBSAMPLED_MAX_ORDER) -> RDP:
    """An upper bound on the Rényi curve of Poisson subsampling (rate ``q``) a
    mechanism of which only the (ξ, ρ)-zCDP guarantee ``z`` is known (add/remove
    neighbouring, both directions).

    At integer orders 2 ≤ α ≤ ``max_order``: Zhu and Wang's general bound
    (arXiv:1808.00087, Thm 6) with the base curve ε(l) = ξ + ρl, using the larger ξ
    and ρ of the two directions (the theorem needs a bound valid in both). Between
    integers: the chord of the convex K (K(0) = 0), which lies above K. Every order
    also keeps the base bound ξ + ρα (Rényi divergence is jointly quasi-convex: van
    Erven and Harremoës, arXiv:1206.2459, Thm 13), the only one above ``max_order``.
    Limits: D_1 ≤ q(ξ + ρ) (KL is jointly convex, ibid. Thm 11), D_∞ ≤ ξ where ρ = 0,
    else +∞.

    The result is an ``RDP`` labelled an upper bound. Its zCDP envelope is not smaller
    than ρ + ξ in general — zCDP itself is not amplified by subsampling (Bun, Dwork,
    Rothblum and Steinke, STOC 2018, "Composable and versatile privacy via truncated
    CDP", motivation of tCDP) — the gain is at the moderate orders that set ε(δ).
    """
    if not isinstance(z, ZCDP):
        raise TypeError(f"z must be a ZCDP, got {type(z).__name__}")
    q = check_real("q", q, lo=0.0, hi=1.0, lo_open=True)
    top = check_count("max_order", max_order)
    if top < 2:
        raise ValueError(f"max_order must be at least 2, got {top}")
    xi, rho = z.xi_rho("max")
    table = np.concatenate([[0.0], _zhu_wang_log_moments(xi, rho, q, top)])   # index t → bound on K(t)

    def cgf(t: np.ndarray, _d: Direction) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        base = t * (xi + rho * (t + 1.0))
        inside = t <= top - 1
        ti = np.where(inside, t, 0.0)
        lo = np.floor(ti).astype(int)
        hi = np.minimum(lo + 1, top - 1)
        frac = ti - lo
        chord = np.where(frac == 0, table[lo], (1 - frac) * table[lo] + frac * table[hi])
        out: np.ndarray = np.where(inside, np.minimum(chord, base), base)
        return out

    def limit(order: float, _d: Direction) -> float:
        return q * (xi + rho) if order == 1.0 else (xi if rho == 0 else np.inf)
    prov = z.provenance.then(f"poisson subsampling q={q:g} (Zhu–Wang Thm 6)", Exactness.UPPER)
    return RDP(CGF.of(cgf, limit=limit), provenance=prov)
