"""The information gap between a pair's exact Rényi curve and its zCDP envelope.

For one ordered pair with privacy-loss CGF K(t) = log E_P[e^{tL}] (t = α − 1),

  ρ* = sup_{t>0} K(t)/(t(t+1)),   Γ(t) = ρ*·t(t+1) − K(t) ≥ 0

(Su, Yang, Su, Wang, "Unifying privacy accounting: information equivalence and
information loss", arXiv:2610.02414v1, §3). Γ(t)/t = ρ*α − D_α is the
vertical distance between the zCDP line and the RDP curve at α = 1 + t; Γ itself is on
the scale of K, which adds under independent composition (ibid. §3.3, Thm 3.3).

**Local expansion** (ibid. §3.1, Thm 3.1, Lemma B.2). Write K(t) = Σ_j κ_j t^j/j! with
the cumulants κ_j of L under P. When Q ≪ P, K(−1) = log E_P[e^{−L}] = 0 gives
κ₂/2 = κ₁ + κ₃/6 − κ₄/24 + O(κ₅), and then

  Γ(t) = a·t(t+1) + b₃·t²(t+1) + b₄·t²(t²−1) + O(κ₅),
  a = ρ* − κ₁ = ρ* − E_P[L],  b₃ = −κ₃/6,  b₄ = −κ₄/24.

For a location family with shift s the three terms are of order s², s³ and s⁴ (ibid.
§3.1): a ≠ 0 only when the sup is not the t → 0 endpoint (Gaussian mixtures, whose sup
is the t → ∞ limit: Γ ∝ s²; Lemma C.1 gives a = 0 under endpoint localisation). For
noise symmetric about a point, K(t) = K(−1−t) is a function of u = t(t+1), κ₄ = 2κ₃
to leading order and Γ(t) ≈ a·u + b₄·u²: b₄ = χ s⁴ with χ₁ = 1/12 (Laplace) and χ₂ = 0
(Gaussian) for generalised Gaussian noise (ibid. Prop. 4.5), a maximum near ν ≈ 6.013
for Student-t noise (ibid. Prop. 4.4).

**Composition** (ibid. §3.3). Independent components add K; n copies of one pair
have ρ* and Γ scaled by n. For distinct components the zCDP accountant adds the ρ*_i
and its gap splits into two non-negative terms,

  Σ_i n_i Γ_i(t) = (Σ_i n_i ρ*_i − ρ*_prod)·t(t+1) + Γ_prod(t).

**Allocation** (ibid. §4.3). A fixed total zCDP budget ρ_total spread over n
mechanisms of one family, uniformly (ρ_total/n each) or concentrated on one, gives
different composed gaps: Laplace 0.037202015 → 0.193535993 and the Gaussian mixture
½N(−σ, σ²) + ½N(σ, σ²) 0.435179700 → 0.342190807 at n = 8, ρ_total = 1/2, t = 1.

Soundness: ρ* is the pair's closed form when it has one (``Pair._rho``), else the
numerical envelope (``order_search.envelope_sup``: an upper bound at the t → 0 end,
+∞ when the sup is the t → ∞ limit and no closed form certifies it). It is never
reported below K(t)/(t(t+1)) at any order evaluated, so Γ ≥ 0 at every reported t.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

# T_MAX, the largest order t accepted (the library's one cap): beyond it Γ(t)/t =
# ρ*(t+1) − K(t)/t has settled to its asymptote to the precision shown, while some
# Rényi curves (the subsampled Gaussian's integer sums) cost memory in proportion to α
from accounting.curves.rdp import RDP, T_MAX
from accounting.curves.zcdp import ZCDP
from accounting.ledger import Ledger
from accounting.numerics.order_search import ENVELOPE_T0, ENVELOPE_TOP, envelope_sup
from accounting.pairs.additive import AdditiveNoise, log_integral
from accounting.pairs.composed import ComposedPair
from accounting.pairs.mechanism import Mechanism
from accounting.pairs.pair import LawPair, NoiseDensity, Pair
from accounting.validation import check_array, check_count, check_positive
from accounting.vocabulary import Direction, FloatArray, as_direction

__all__ = ["LossCumulants", "LocalExpansion", "InformationGap", "CompositionGap",
           "AllocationGap", "information_gap", "loss_cumulants", "composition_gap",
           "allocation_gap", "calibrated_family", "DEFAULT_T", "T_MAX"]

#: orders t = α − 1 reported when none are given
DEFAULT_T = np.geomspace(1e-2, 1e2, 41)

PairLike = Pair | Mechanism

_T0 = ENVELOPE_T0        # the t → 0 probe of the envelope search (order_search.envelope_sup)
_T_BIG = ENVELOPE_TOP    # the t → ∞ probes (the envelope search's top decade)


def _as_pair(obj: Any, name: str = "pair_or_mechanism") -> Pair:
    if isinstance(obj, Mechanism):
        return obj.pair()
    if isinstance(obj, Pair):
        return obj
    raise TypeError(f"{name} must be a Pair or a Mechanism, got {type(obj).__name__}")


def _orders(t: Any) -> FloatArray:
    if t is None:
        return DEFAULT_T.copy()
    orders = check_array("t", t, lo=0.0, hi=T_MAX, lo_open=True)
    if orders.ndim > 1:
        raise ValueError(f"t must be a number or a 1-d array of orders t = α − 1 > 0, "
                         f"got an array of shape {orders.shape}")
    return orders


def _concrete(direction: Any) -> tuple[Direction, ...]:
    return as_direction(direction).components


# ------------------------------------------------------------------ cumulants
@attrs.frozen
class LossCumulants:
    """κ₁..κ₄ of the privacy loss L under P (for one direction), and how they were got."""

    k1: float
    k2: float
    k3: float
    k4: float
    method: str

    def scaled(self, count: int) -> LossCumulants:
        """The cumulants of a sum of ``count`` independent copies (cumulants add)."""
        return LossCumulants(count * self.k1, count * self.k2, count * self.k3,
                             count * self.k4, f"{count} × ({self.method})")

    def __add__(self, other: LossCumulants) -> LossCumulants:
        return LossCumulants(self.k1 + other.k1, self.k2 + other.k2, self.k3 + other.k3,
                             self.k4 + other.k4, "sum of independent components")


def _phi(x: FloatArray) -> FloatArray:
    """x + e^{−x} − 1 ≥ 0, without cancellation for small |x|."""
    small = np.abs(x) < 1e-2
    xs = np.where(small, x, 0.0)
    # Taylor to x⁷: relative error < 1e-17 for |x| < 1e-2
    series = xs * xs * (0.5 - xs * (1 / 6 - xs * (1 / 24 - xs * (1 / 120 - xs * (1 / 720 - xs / 5040)))))
    with np.errstate(over="ignore"):
        return np.where(small, series, x + np.expm1(-x))


def _quadrature_cumulants(view: Callable[[], NoiseDensity], direction: Direction
                          ) -> LossCumulants:
    """Cumulants of L by log-space quadrature of E_P[g(L)] on the additive-noise view
    (log f, Δ, width, span) of a pair (Z + Δ, Z).

    κ₁ = E_P[L + e^{−L} − 1] (valid as Q ≪ P; the integrand is ≥ 0, so there is no
    cancellation between positive and negative losses even when κ₁ = O(s²)); then the
    central moments m_k = E_P[(L − κ₁)^k], each split into its positive and negative
    parts and integrated in log space by ``additive.log_integral`` (16-point
    Gauss–Legendre panels with the density's kinks 0 and Δ as edges);
    κ₂ = m₂, κ₃ = m₃, κ₄ = m₄ − 3m₂².
    """
    logf, delta, width, (lo, hi) = view()
    log_z = log_integral(logf, lo, hi, width, delta)
    sign = 1.0 if direction is Direction.FORWARD else -1.0

    def parts(x: FloatArray) -> tuple[FloatArray, FloatArray]:
        with np.errstate(invalid="ignore", over="ignore"):
            lp, lq = logf(x - delta), logf(x)
            loss = sign * (lp - lq)
            logw = (lp if direction is Direction.FORWARD else lq) - log_z
        loss = np.where(np.isfinite(loss), loss, 0.0)  # no mass where both vanish
        return loss, logw

    def expect(g: Callable[[FloatArray], FloatArray]) -> float:
        total = 0.0
        for s in (1.0, -1.0):
            def h(x: FloatArray, s: float = s) -> FloatArray:
                loss, logw = parts(x)
                with np.errstate(divide="ignore", invalid="ignore"):
                    v = logw + np.log(np.maximum(s * g(loss), 0.0))
                return np.where(np.isnan(v), -np.inf, v)
            val = log_integral(h, lo, hi, width, delta)
            total += s * (math.exp(val) if np.isfinite(val) else 0.0)
        return total

    k1 = expect(_phi)
    m2 = expect(lambda x: (x - k1) ** 2)
    m3 = expect(lambda x: (x - k1) ** 3)
    m4 = expect(lambda x: (x - k1) ** 4)
    return LossCumulants(k1, m2, m3, m4 - 3.0 * m2 * m2,
                         "log-space quadrature of loss moments (additive noise)")


def _law_cumulants(pair: LawPair, direction: Direction) -> LossCumulants | None:
    """Cumulants from the atoms of an exact finite loss law (none with mass at ±∞)."""
    law = pair.law(direction, "upper")
    if law.inf_mass > 0 or law.masses.size == 0:
        return None
    w = law.masses / law.masses.sum()
    if abs(law.masses.sum() - 1.0) > 1e-9:
        return None  # mass at −∞ (P has mass where Q has none): K(−1) = 0 fails
    k1 = float(np.dot(w, law.losses))
    c = law.losses - k1
    m2, m3, m4 = (float(np.dot(w, c ** k)) for k in (2, 3, 4))
    return LossCumulants(k1, m2, m3, m4 - 3.0 * m2 * m2, "sums over the exact loss atoms")


def _noise_view(obj: Any, pair: Pair) -> Callable[[], NoiseDensity] | None:
    if pair.provides("noise_density"):
        return pair.noise_density
    if isinstance(obj, AdditiveNoise) and obj.domain == "real":
        # a closed-form pair may hide the density; the mechanism's generic pair has it
        generic = obj.generic_pair()
        if generic.provides("noise_density"):
            return generic.noise_density
    return None


def _cumulants(obj: Any, pair: Pair, direction: Direction) -> LossCumulants | None:
    if isinstance(pair, ComposedPair):
        total = None
        for p, n in pair.components:
            c = _cumulants(p, p, direction)
            if c is None:
                return None
            c = c.scaled(n) if n > 1 else c
            total = c if total is None else total + c
        return total
    view = _noise_view(obj, pair)
    if view is not None:
        return _quadrature_cumulants(view, direction)
    if isinstance(pair, LawPair) and pair.law(direction, "upper") is pair.law(direction, "lower"):
        return _law_cumulants(pair, direction)
    return None


def loss_cumulants(pair_or_mechanism: PairLike, direction: Direction | str = "forward"
                   ) -> LossCumulants:
    """κ₁..κ₄ of the privacy loss L = log dP/dQ under P (``"backward"``: of log dQ/dP
    under Q).

    Additive noise on ℝ (a pair with ``noise_density()``, or a mechanism with
    ``generic_pair()``): log-space quadrature of E_P[L + e^{−L} − 1] = κ₁ and of the
    central moments — measured against the Gaussian closed form (κ₁ = μ²/2, κ₂ = μ²,
    κ₃ = κ₄ = 0) to ~1e-13 relative on κ₁, κ₂ and |κ₃|, |κ₄| ≲ 1e-12·κ₂², and against
    the Student-t score moments to ~1e-9 relative on κ₄ at shift 1e-2. Exact finite
    pairs: sums over their atoms. Independent products: cumulants add. Other pairs
    (subsampled, PLD-only) have no density view here: ``ValueError``.
    """
    d = as_direction(direction)
    if d is Direction.MAX:
        raise ValueError("direction must be 'forward' or 'backward' for cumulants, got 'max'")
    pair = _as_pair(pair_or_mechanism)
    out = _cumulants(pair_or_mechanism, pair, d)
    if out is None:
        raise ValueError(f"no cumulants for {pair.describe()}: they need an additive-noise "
                         f"density view (noise_density()) or an exact finite loss law without "
                         f"mass at ±∞")
    return out


@attrs.frozen
class LocalExpansion:
    """Γ(t) ≈ a·t(t+1) + b₃·t²(t+1) + b₄·t²(t²−1) with a = ρ* − κ₁, b₃ = −κ₃/6,
    b₄ = −κ₄/24 (see the module docstring; paper §3.1). For symmetric noise
    Γ(t) ≈ a·u + b₄·u², u = t(t+1)."""

    cumulants: LossCumulants
    rho: float

    @property
    def a(self) -> float:
        return self.rho - self.cumulants.k1

    @property
    def b3(self) -> float:
        return -self.cumulants.k3 / 6.0

    @property
    def b4(self) -> float:
        return -self.cumulants.k4 / 24.0

    @property
    def identity_residual(self) -> float:
        """κ₂/2 − κ₁ − κ₃/6 + κ₄/24: the O(κ₅) terms the expansion drops (0 for a
        Gaussian; small against κ₄ when the expansion is good)."""
        c = self.cumulants
        return c.k2 / 2.0 - c.k1 - c.k3 / 6.0 + c.k4 / 24.0

    def gap(self, t: Any) -> FloatArray:
        """The local approximation of Γ(t) (not a bound)."""
        u = check_array("t", t, lo=0.0)
        return (self.a * u * (u + 1.0) + self.b3 * u * u * (u + 1.0)
                + self.b4 * u * u * (u * u - 1.0))


# ---------------------------------------------------------------- per direction
@attrs.frozen(eq=False)
class _Directional:
    """ρ*, t* and K(t) of one direction (and its parts when a product)."""

    cgf: FloatArray
    rho: float
    t_star: float
    method: str
    cumulants: LossCumulants | None
    parts: tuple[tuple[_Directional, int], ...] = ()   # ((_Directional, count), …) of a ComposedPair


#: the directional results computed so far, by (id of the pair, direction)
_Cache = dict[tuple[int, Direction], _Directional]


def _cgf_fn(pair: Pair, d: Direction) -> Callable[[FloatArray], FloatArray]:
    rdp = pair.curve(RDP)
    return lambda t: np.asarray(rdp.upper(np.asarray(t, dtype=float), d), dtype=float)


def _ratio(cgf: Callable[[FloatArray], FloatArray], t: FloatArray) -> FloatArray:
    t = np.asarray(t, dtype=float)
    return cgf(t) / (t * (t + 1.0))


def _locate(cgf: Callable[[FloatArray], FloatArray], rho: float) -> float:
    """Where a closed-form ρ* is attained: 0 if the ratio starts at ρ* and does not
    rise, +∞ if it still rises below ρ* at the top of the search, else the interior
    maximiser of the numerical envelope."""
    r0, r1 = _ratio(cgf, np.array([_T0, 1e-2]))
    if r0 >= rho * (1.0 - 1e-4) and r1 <= r0 * (1.0 + 1e-9):
        return 0.0
    rb = _ratio(cgf, np.array(_T_BIG))
    if rb[1] > rb[0] and rb[1] <= rho * (1.0 + 1e-9):
        return np.inf
    return envelope_sup(cgf)[1]


def _directional(obj: Any, pair: Pair, d: Direction, t: FloatArray, local: bool,
                 cache: _Cache | None = None) -> _Directional:
    cache = {} if cache is None else cache
    if d is Direction.BACKWARD and getattr(pair, "symmetric", False):
        d = Direction.FORWARD  # Q‖P is P‖Q relabelled: one computation serves both
    key = (id(pair), d)
    if key not in cache:
        cache[key] = (_composed_directional(pair, d, t, local, cache)
                      if isinstance(pair, ComposedPair)
                      else _single_directional(obj, pair, d, t, local))
    return cache[key]


def _single_directional(obj: Any, pair: Pair, d: Direction, t: FloatArray,
                        local: bool) -> _Directional:
    cgf = _cgf_fn(pair, d)
    k = cgf(t)
    closed = pair._rho(d)
    if closed is not None:
        rho, method = float(closed), "closed form"
        t_star = _locate(cgf, rho) if np.isfinite(rho) else np.inf
    else:
        rho, t_star = envelope_sup(cgf)
        method = ("numerical envelope (sup the t → ∞ limit, not certified: +∞)"
                  if t_star == np.inf else "numerical envelope")
    cum = _cumulants(obj, pair, d) if local else None
    return _Directional(k, _pessimistic(rho, k, t), t_star, method, cum)


def _pessimistic(rho: float, k: FloatArray, t: FloatArray) -> float:
    """ρ* never below the ratio at an evaluated order (so Γ ≥ 0 there)."""
    with np.errstate(invalid="ignore"):
        r = k / (t * (t + 1.0))
    r = r[~np.isnan(r)]
    return float(max(rho, r.max())) if r.size else rho


def _composed_directional(pair: ComposedPair, d: Direction, t: FloatArray, local: bool,
                          cache: _Cache | None = None) -> _Directional:
    parts = tuple((_directional(p, p, d, t, local, cache), n) for p, n in pair.components)
    k = sum(n * part.cgf for part, n in parts)
    rho_sum = sum(n * part.rho for part, n in parts)
    cum = None
    if local and all(part.cumulants is not None for part, _ in parts):
        for part, n in parts:
            one = part.cumulants
            assert one is not None         # every part's, checked just above
            c = one.scaled(n) if n > 1 else one
            cum = c if cum is None else cum + c
    if len(parts) == 1:
        # n copies: K ↦ nK, so ρ* ↦ nρ* at the same t* (paper Thm 3.3)
        part, n = parts[0]
        return _Directional(k, _pessimistic(rho_sum, k, t), part.t_star,
                            f"{n} × {part.method}", cum, parts)
    cgfs = [(_cgf_fn(p, d), n) for p, n in pair.components]
    rho, t_star = envelope_sup(lambda tt: sum(n * f(tt) for f, n in cgfs))
    if t_star == np.inf:
        # the product's sup is a t → ∞ limit, which finite orders cannot certify: the
        # sum of the components' ρ* bounds it (Bun & Steinke 2016, Lemma 2.3)
        rho, method = rho_sum, "sum of the components' ρ* (an upper bound)"
    else:
        rho, method = min(rho, rho_sum), "numerical envelope of the summed CGF"
    return _Directional(k, _pessimistic(rho, k, t), t_star, method, cum, parts)


# -------------------------------------------------------------------- results
@attrs.frozen(eq=False)
class InformationGap:
    """ρ*, where it is attained, and Γ(t) = ρ*·t(t+1) − K(t) of a pair at orders t.

    With ``direction="max"``, K(t) is max over both directions and ρ* the max of the
    two directions' ρ* (what the RDP and zCDP accountants report); ``rho_direction``
    is the direction attaining it and ``t_star``/``local`` are that direction's.
    ``t_star`` is 0 when the sup is the t → 0 limit (E_P[L]; also for a flat ratio,
    as the Gaussian's) and +∞ when it is the t → ∞ limit.
    """

    t: FloatArray
    cgf: FloatArray
    rho: float
    t_star: float
    direction: Direction
    rho_direction: Direction
    method: str
    local: LocalExpansion | None
    description: str = ""

    @property
    def alpha(self) -> FloatArray:
        return 1.0 + self.t

    @property
    def envelope(self) -> FloatArray:
        """ρ*·t(t+1): the zCDP bound on K(t)."""
        return self.rho * self.t * (self.t + 1.0)

    @property
    def gap(self) -> FloatArray:
        """Γ(t) = ρ*·t(t+1) − K(t) ≥ 0; +∞ where ρ* = ∞ (K is finite at every reported
        t: an infinite K is refused at construction by ``information_gap``)."""
        if np.isinf(self.rho):
            return np.full(np.shape(self.cgf), np.inf)
        with np.errstate(over="ignore"):
            # where ρ*·t(t+1) overflows so does Γ (Γ ≥ ρ*t(t+1)·(1 − K/(ρ*t(t+1))) is
            # the slack of a number beyond float64): +∞, never ∞ − ∞ = NaN
            env = self.envelope
            return np.where(np.isinf(env), np.inf, env - self.cgf)

    @property
    def gap_per_order(self) -> FloatArray:
        """Γ(t)/t = ρ*α − D_α: the vertical distance between the zCDP line and the RDP
        curve at α = 1 + t, computed as ρ*(1 + t) − K(t)/t (no overflow of t(t+1))."""
        if np.isinf(self.rho):
            return np.full(np.shape(self.cgf), np.inf)
        with np.errstate(over="ignore"):
            return self.rho * (1.0 + self.t) - self.cgf / self.t

    @property
    def relative_gap(self) -> FloatArray:
        """Γ(t)/(ρ*·t(t+1)) ∈ [0, 1]: the share of the zCDP bound that is slack (0 for
        a pair with ρ* = 0, whose bound has none; 1 where ρ* = ∞), computed as
        1 − (K(t)/(t(t+1)))/ρ*, which neither overflows nor gives ∞/∞."""
        if np.isinf(self.rho):
            return np.ones(np.shape(self.cgf))
        if self.rho <= 0:
            return np.zeros(np.shape(self.cgf))
        ratio = (self.cgf / self.t) / (1.0 + self.t)
        return np.clip(1.0 - ratio / self.rho, 0.0, 1.0)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (±∞ as the strings "inf"/"-inf")."""
        def num(x: float) -> float | str:
            x = float(x)
            return x if math.isfinite(x) else ("nan" if math.isnan(x) else
                                               ("inf" if x > 0 else "-inf"))
        out: dict[str, Any] = {"pair": self.description, "direction": self.direction.value,
                               "rho": num(self.rho), "rho_direction": self.rho_direction.value,
                               "rho_method": self.method, "t_star": num(self.t_star),
                               "t": [num(v) for v in np.ravel(self.t)],
                               "cgf": [num(v) for v in np.ravel(self.cgf)],
                               "gap": [num(v) for v in np.ravel(self.gap)],
                               "gap_per_order": [num(v) for v in np.ravel(self.gap_per_order)]}
        if self.local is not None:
            c = self.local.cumulants
            out["local"] = {"kappa": [num(c.k1), num(c.k2), num(c.k3), num(c.k4)],
                            "a": num(self.local.a), "b3": num(self.local.b3),
                            "b4": num(self.local.b4), "method": c.method}
        return out


def _combine(dirs: dict[Direction, _Directional], direction: Direction, t: FloatArray, description: str) -> InformationGap:
    best = max(dirs, key=lambda d: (dirs[d].rho, d is Direction.FORWARD))
    k = np.max([dirs[d].cgf for d in dirs], axis=0)
    infinite = [float(tt) for tt, kk in zip(np.ravel(t), np.ravel(k)) if kk == np.inf]
    if infinite:
        raise ValueError(f"the Rényi curve of {description} is +∞ at t = {infinite[0]:g}: "
                         f"no finite zCDP parameter and no gap there (a PLD's upper RDP "
                         f"curve is +∞; use the mechanism's own pair)")
    part = dirs[best]
    local = (LocalExpansion(part.cumulants, part.rho) if part.cumulants is not None
             and np.isfinite(part.rho) else None)
    rho = _pessimistic(part.rho, k, t)
    return InformationGap(t, k, rho, part.t_star, direction, best, part.method, local,
                          description)


def information_gap(pair_or_mechanism: PairLike, t: Any = None,
                    direction: Direction | str = "max", *, local: bool = True
                    ) -> InformationGap:
    """ρ*, t* and Γ(t) = ρ*·t(t+1) − K(t) at orders ``t`` (vectorised; default
    ``DEFAULT_T``) — arXiv:2610.02414, §3.

    ρ* is the pair's closed form if it has one (then t* is located by probing the
    ratio at t → 0 and t = 1e4, 1e5), else the numerical envelope; products
    (``ComposedPair``, ``pair.self_compose(n)``) use n·ρ* for n copies and the
    envelope of the summed CGF otherwise. ``local`` adds the cumulant expansion where
    cumulants are available (``loss_cumulants``).
    """
    pair = _as_pair(pair_or_mechanism)
    t = _orders(t)
    direction = as_direction(direction)
    if not isinstance(local, bool):
        raise TypeError(f"local must be a bool, got {type(local).__name__}")
    cache: _Cache = {}
    dirs = {d: _directional(pair_or_mechanism, pair, d, t, local, cache)
            for d in direction.components}
    return _combine(dirs, direction, t, pair.describe())


# ---------------------------------------------------------------- composition
@attrs.frozen(eq=False)
class CompositionGap:
    """The gap of an independent composition (paper §3.3).

    ``parts``: each component's single-copy ``InformationGap`` and its count;
    ``product``: the product pair's gap Γ_prod(t) with its ρ*_prod; ``rho_sum`` =
    Σ n_i ρ*_i (what the zCDP accountant reports; max over directions of the
    per-direction sums); ``slack = rho_sum − product.rho ≥ 0``; ``gap_sum(t)`` =
    rho_sum·t(t+1) − K_prod(t) = slack·t(t+1) + Γ_prod(t) (= Σ n_i Γ_i for one direction).
    """

    parts: tuple[tuple[InformationGap, int], ...]
    product: InformationGap
    rho_sum: float

    @property
    def slack(self) -> float:
        return self.rho_sum - self.product.rho

    @property
    def gap_sum(self) -> FloatArray:
        t = self.product.t
        return self.rho_sum * t * (t + 1.0) - self.product.cgf


def _components(components: Any) -> tuple[tuple[Pair, int], ...]:
    if isinstance(components, Ledger):
        if not components:
            raise ValueError("components must not be empty")
        return components.pairs()
    if isinstance(components, ComposedPair):
        return components.components
    if isinstance(components, (Pair, Mechanism)):
        raise TypeError("components must be a ComposedPair or a sequence of "
                        "(pair or mechanism, count); got a single "
                        f"{type(components).__name__} (use information_gap)")
    try:
        items = list(components)
    except TypeError:
        raise TypeError(f"components must be a ComposedPair or a sequence of (pair or "
                        f"mechanism, count), got {type(components).__name__}") from None
    out = []
    for item in items:
        if isinstance(item, (Pair, Mechanism)):
            obj, n = item, 1
        else:
            try:
                obj, n = item
            except (TypeError, ValueError):
                raise TypeError("each component must be a pair, a mechanism or a (pair or "
                                f"mechanism, count) tuple, got {item!r}") from None
        out.append((_as_pair(obj, "component"), check_count("count", n)))
    if not out:
        raise ValueError("components must not be empty")
    return tuple(out)


def composition_gap(components: Any, t: Any = None, direction: Direction | str = "max",
                    *, local: bool = False) -> CompositionGap:
    """The gap of the independent composition of ``components`` — a ``Ledger``, a
    ``ComposedPair`` or a sequence of (pair or mechanism, count) — at orders ``t``
    (paper §3.3). The parts follow the ledger's entries, in its order."""
    comps = _components(components)
    product = ComposedPair(comps)
    t = _orders(t)
    direction = as_direction(direction)
    cache: _Cache = {}
    dirs = {d: _composed_directional(product, d, t, local, cache) for d in direction.components}
    rho_sum = max(sum(n * part.rho for part, n in dirs[d].parts) for d in dirs)
    parts = []
    for i, (p, n) in enumerate(comps):
        sub = {d: dirs[d].parts[i][0] for d in dirs}
        parts.append((_combine(sub, direction, t, p.describe()), n))
    prod = _combine(dirs, direction, t, product.describe())
    return CompositionGap(tuple(parts), prod, max(rho_sum, prod.rho))


# ----------------------------------------------------------------- allocation
@attrs.frozen(eq=False)
class AllocationGap:
    """A total zCDP budget spread over n mechanisms of one family (paper §4.3).

    ``budgets``: ρ_i of each of the n mechanisms (Σ ρ_i = ``rho_total``; a zero budget
    is a mechanism that releases nothing and has no gap); ``composition``: the gap of
    the composition of those with ρ_i > 0. ``gap`` = Σ_i Γ_i(t) =
    ρ_total·t(t+1) − Σ_i K_i(t), the slack of the zCDP accountant at t.
    """

    budgets: FloatArray
    rho_total: float
    composition: CompositionGap

    @property
    def t(self) -> FloatArray:
        return self.composition.product.t

    @property
    def gap(self) -> FloatArray:
        t = self.t
        return self.rho_total * t * (t + 1.0) - self.composition.product.cgf


def allocation_gap(family: Callable[[float], PairLike], rho_total: float, n: int,
                   t: Any = 1.0, allocation: str | Sequence[float] = "uniform",
                   direction: Direction | str = "max", *, rtol: float = 1e-6
                   ) -> AllocationGap:
    """The composed gap of n mechanisms ``family(ρ_i)`` with Σ ρ_i = ``rho_total``.

    ``family(ρ)`` must return a pair or mechanism whose ρ* is ρ (checked to ``rtol``;
    see ``calibrated_family``). ``allocation``: ``"uniform"`` (ρ_total/n each),
    ``"concentrated"`` (all on one mechanism) or n non-negative budgets summing to
    ``rho_total``. Paper §4.3: uniform versus concentrated at fixed ρ_total.
    """
    rho_total = check_positive("rho_total", rho_total)
    n = check_count("n", n)
    if not callable(family):
        raise TypeError(f"family must be a callable ρ ↦ pair or mechanism, "
                        f"got {type(family).__name__}")
    if isinstance(allocation, str):
        if allocation == "uniform":
            budgets = np.full(n, rho_total / n)
        elif allocation == "concentrated":
            budgets = np.zeros(n)
            budgets[0] = rho_total
        else:
            raise ValueError(f"allocation must be 'uniform', 'concentrated' or a sequence of "
                             f"n budgets, got {allocation!r}")
    else:
        budgets = check_array("allocation", allocation, lo=0.0)
        if budgets.shape != (n,):
            raise ValueError(f"allocation must have n = {n} budgets, got shape {budgets.shape}")
        if not math.isclose(float(budgets.sum()), rho_total, rel_tol=1e-9):
            raise ValueError(f"allocation must sum to rho_total = {rho_total:g}, "
                             f"got {float(budgets.sum()):g}")
    distinct, counts = np.unique(budgets[budgets > 0], return_counts=True)
    comps = []
    for rho, count in zip(distinct, counts):
        pair = _as_pair(family(float(rho)), "family(rho)")
        comps.append((pair, int(count)))
    comp = composition_gap(comps, t, direction)
    for (part, _), rho in zip(comp.parts, distinct):
        if not math.isclose(part.rho, rho, rel_tol=rtol):
            raise ValueError(f"family({rho:g}) returned {part.description} with ρ* = "
                             f"{part.rho:.10g}, not {rho:g}: family must map ρ to a "
                             f"mechanism whose ρ* is ρ")
    return AllocationGap(budgets, rho_total, comp)


def calibrated_family(make: Callable[[float], PairLike], lo: float, hi: float,
                      direction: Direction | str = "max") -> Callable[[float], PairLike]:
    """ρ ↦ make(x) with x ∈ [lo, hi] solving ρ*(make(x)) = ρ (Brent's method on log x;
    ρ* must be monotone in x on the bracket). For families with ρ* in closed form
    (Laplace: ρ* = e + e^{−e} − 1 with e = Δ/b)."""
    from scipy.optimize import brentq
    lo = check_positive("lo", lo)
    hi = check_positive("hi", hi)
    if not lo < hi:
        raise ValueError(f"need lo < hi, got lo = {lo:g}, hi = {hi:g}")

    def rho_of(x: float) -> float:
        return _as_pair(make(x), "make(x)").curve(ZCDP).rho(direction)

    def at(rho: float) -> PairLike:
        rho = check_positive("rho", rho)
        def f(u: float) -> float:
            return math.log(rho_of(math.exp(u))) - math.log(rho)
        a, b = math.log(lo), math.log(hi)
        fa, fb = f(a), f(b)
        if fa * fb > 0:
            raise ValueError(f"rho = {rho:g} is outside [{math.exp(min(fa, fb)) * rho:g}, "
                             f"{math.exp(max(fa, fb)) * rho:g}], the range of ρ* on the "
                             f"bracket [{lo:g}, {hi:g}]")
        return make(math.exp(brentq(f, a, b, xtol=1e-14, rtol=1e-14)))
    return at

