"""Repeat-and-select private selection: a Rényi guarantee for a whole curve, not a pair.

The mechanism A runs a base mechanism Q a random number K of times, independently of
the data, and returns the best of the K outputs by any score (Papernot and Steinke,
"Hyperparameter tuning with Rényi differential privacy", arXiv:2110.03620, Alg. 1).
Nothing is known about A's output laws beyond the base's: its guarantee is a bound on
A's Rényi curve from the base's, at every order λ > 1, for two families of K.

* Truncated negative binomial K ~ D_{η,γ} (η > −1, γ ∈ (0, 1]; η = 1 geometric, η = 0
  logarithmic; ibid. §3), with E[K] = η(1 − γ)/(γ(1 − γ^η)) (the η → 0 limit
  (1 − γ)/(γ log(1/γ))). If Q is (λ, ε)- and (λ̂, ε̂)-RDP (λ > 1, λ̂ ≥ 1), then A is
  (λ, ε′)-RDP with (ibid. Thm 2)

    ε′ = ε + (1 + η)(1 − 1/λ̂)ε̂ + (1 + η)log(1/γ)/λ̂ + log E[K]/(λ − 1).

  λ̂ is free: the two middle terms do not depend on λ, so they are minimised once over
  λ̂ (a log grid of orders, refined around its best by a bounded scalar search, with
  the ends λ̂ = 1 and λ̂ = ∞ where the base's D_1 and D_∞ are finite). Every λ̂ gives a
  valid bound, so a coarser search is only looser, never unsound.
* Poisson K ~ Poisson(μ): if Q is (λ, ε)-RDP and (ε̂, δ̂)-DP with e^{ε̂} ≤ 1 + 1/(λ − 1),
  A is (λ, ε + μδ̂ + log μ/(λ − 1))-RDP (ibid. Thm 6). δ̂ is read from the base's own
  privacy profile at ε̂ = log(1 + 1/(λ − 1)) (the largest ε̂ allowed; δ̂ falls in ε̂).
  dp_accounting's RDP accountant reads δ̂ from the base's Rényi curve instead, which is
  never smaller. μ < 1 is refused: the bound would then be negative for a base that
  leaks nothing, so it cannot hold there.

Both bounds use the base's Rényi curve at its worst direction (the theorems assume Q is
RDP for every ordered pair of neighbours), so A's guarantee is the same in both
directions. D_λ is non-decreasing in λ, so any bound at an order λ′ ≥ λ also bounds
D_λ: the curve reported is the smallest bound over a log grid of orders above λ (and λ
itself), made non-decreasing — which also removes the log E[K]/(λ − 1) blow-up at
λ → 1. The limits are declared too: D_1 ≤ min over orders, and D_∞ ≤ D_∞(Q) +
(1 + η)·inf_λ̂[…] (TNB; Cor. 3 there: an ε-DP base gives (2 + η)ε) or D_∞(Q) +
μ·δ_Q(0) (Poisson).

This is dp_accounting's ``RepeatAndSelectDpEvent`` (``shape`` = η, ∞ for Poisson;
``mean`` = E[K]). Every other curve comes from the Rényi bound by the library's sound
conversions: the privacy profile by the improved conversion (Canonne, Kamath, Steinke,
arXiv:2004.00010, Prop. 12), the PLD by connect-the-dots of that profile, the
trade-off from the PLD — all labelled upper bounds, never exact. The optimistic side
is what the base alone gives: one member of the family (the score that always picks
the first run, with no run at all when K = 0) releases exactly one run of Q, so A's
worst case is at least that (mean = 1 for the truncated negative binomial is K ≡ 1,
which *is* the base: its pair is returned as it is).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from accounting.curves.converters import rdp_delta
from accounting.curves.curve import Provenance
from accounting.curves.rdp import RDP
from accounting.pairs.mechanism import Mechanism, Neighbouring, Range, as_neighbouring, parameter
from accounting.pairs.pair import CurveT, Pair, identical_pair
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.validation import check_real
from accounting.vocabulary import ArrayLike, Bound, Direction, Exactness, FloatArray

from .approx_dp import one_sensitivity

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["RepeatAndSelect", "RepeatAndSelectPair", "truncated_negative_binomial_mean",
           "truncated_negative_binomial_gamma", "MEAN", "SHAPE"]

#: E[K]: at least 1 (a truncated negative binomial is ≥ 1; a Poisson mean below 1 has no
#: valid bound, module docstring); 1e12 runs is far beyond any tuning budget
MEAN = Range(1.0, 1e12, log=True)
#: η of the truncated negative binomial, η > −1 (ibid. §3); +∞ (not in the range, which
#: is what the property suite draws from) selects the Poisson distribution
SHAPE = Range(-1.0, 1e3, lo_open=True)

#: orders t = λ − 1 of the grid the curve is made non-decreasing on, and of the λ̂ search
_GRID_T = np.geomspace(1e-5, 1e5, 241)


def _log_h(x: ArrayLike) -> FloatArray:
    """log(expm1(x)/x), 0 at x = 0."""
    x = np.asarray(x, dtype=float)
    safe = np.where(x == 0, 1.0, x)
    with np.errstate(over="ignore"):
        val = np.where(x > 0, x + np.log(-np.expm1(-safe) / safe), np.log(np.expm1(safe) / safe))
    result: FloatArray = np.where(x == 0, 0.0, val)
    return result


def _log_tnb_mean(shape: float, log_gamma: float) -> float:
    """log E[K] for K ~ D_{η,γ}: E[K] = e^{−u}·h(u)/h(ηu) with u = log γ and
    h(x) = (e^x − 1)/x, which is η(1 − γ)/(γ(1 − γ^η)) and its η → 0 limit."""
    u = float(log_gamma)
    return float(-u + _log_h(u) - _log_h(shape * u))


def truncated_negative_binomial_mean(shape: float, gamma: float) -> float:
    """E[K] of the truncated negative binomial D_{η,γ} (arXiv:2110.03620, §3), η = shape
    > −1, γ ∈ (0, 1] (γ = 1: K ≡ 1)."""
    shape = check_real("shape", shape, lo=-1.0, lo_open=True)
    gamma = check_real("gamma", gamma, lo=0.0, hi=1.0, lo_open=True)
    return math.exp(_log_tnb_mean(shape, math.log(gamma)))


def truncated_negative_binomial_gamma(shape: float, mean: float) -> float:
    """γ of D_{η,γ} with E[K] = ``mean`` (≥ 1), rounded down: a smaller γ only raises
    the log(1/γ) term of the bound, so the answer stays sound."""
    shape = check_real("shape", shape, lo=-1.0, lo_open=True)
    mean = check_real("mean", mean, lo=1.0)
    if mean == 1.0:
        return 1.0
    target = math.log(mean)
    lo = -1.0
    while _log_tnb_mean(shape, lo) < target:      # E[K] rises as γ falls (u = log γ → −∞)
        lo *= 2.0
    from scipy.optimize import brentq  # ~0.3 s: loaded when a selection is accounted
    u = brentq(lambda v: _log_tnb_mean(shape, v) - target, lo, 0.0, xtol=1e-15, rtol=1e-14)
    # round down by far more than the root's tolerance
    return math.exp(u) * (1.0 - 1e-9)


@attrs.frozen(eq=False)
class RepeatAndSelectPair(Pair):
    """The Rényi bound of repeat-and-select over ``base`` (module docstring) as a pair:
    ``_cgf`` is the bound, ``_profile`` its improved conversion, ``_profile_lower`` the
    base's own (what one run reveals)."""

    base: Pair
    mean: float
    shape: float
    #: the data the bound needs, computed once when the pair is built (each from the
    #: fields above it)
    _rdp: RDP = attrs.field(init=False, repr=False,
                            default=attrs.Factory(lambda self: self.base.curve(RDP),
                                                  takes_self=True))
    _gamma: float = attrs.field(init=False, repr=False, default=attrs.Factory(
        lambda self: 1.0 if math.isinf(self.shape)
        else truncated_negative_binomial_gamma(self.shape, self.mean), takes_self=True))
    _const: float = attrs.field(init=False, repr=False, default=attrs.Factory(
        lambda self: 0.0 if math.isinf(self.shape) else self._selection_constant(),
        takes_self=True))
    _grid: FloatArray = attrs.field(init=False, repr=False, default=attrs.Factory(
        lambda self: self._order_grid(), takes_self=True))
    _floor: FloatArray = attrs.field(init=False, repr=False, default=attrs.Factory(
        lambda self: np.minimum.accumulate(self._bound(self._grid)[::-1])[::-1],
        takes_self=True))

    exact = False
    symmetric = True

    def _order_grid(self) -> FloatArray:
        """The orders of the bound: a grid with its best order refined and λ = ∞; the
        minimum over orders above each grid point (``_floor``) makes the curve
        non-decreasing on it."""
        from scipy.optimize import minimize_scalar  # ~0.3 s: not when the plugin loads
        lam = 1.0 + _GRID_T
        b = self._bound(lam)
        j = int(np.argmin(b))
        lo, hi = np.log(_GRID_T[max(j - 1, 0)]), np.log(_GRID_T[min(j + 1, _GRID_T.size - 1)])
        res = minimize_scalar(lambda u: float(self._bound(np.array([1.0 + math.exp(u)]))[0]),
                              bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
        # λ = ∞ closes the grid: its bound (the declared D_∞) then caps the curve at
        # every order, as D_λ ≤ D_∞ requires of a bound that is finite only there
        return np.sort(np.append(lam, [1.0 + math.exp(res.x), np.inf]))

    # ------------------------------------------------------------ the bound
    def _base_renyi(self, lam: FloatArray) -> FloatArray:
        """D_λ of the base at its worst direction (an upper bound), λ > 1 or λ = 1, ∞."""
        return np.asarray(self._rdp.renyi(lam, "max"), dtype=float)

    def _selection_constant(self) -> float:
        """(1 + η)·min over λ̂ ∈ [1, ∞] of (1 − 1/λ̂)ε̂(λ̂) + log(1/γ)/λ̂ (Thm 2's middle
        terms): a log grid refined around its best point, and the two ends."""
        from scipy.optimize import minimize_scalar
        eta, log_inv_gamma = float(self.shape), -math.log(self._gamma)

        def score(lam_hat: FloatArray) -> FloatArray:
            with np.errstate(invalid="ignore"):
                v = (1.0 - 1.0 / lam_hat) * self._base_renyi(lam_hat) + log_inv_gamma / lam_hat
            return np.where(np.isnan(v), np.inf, v)
        lam_hat = 1.0 + _GRID_T
        vals = score(lam_hat)
        j = int(np.argmin(vals))
        best = float(vals[j])
        if np.isfinite(best):
            lo = np.log(_GRID_T[max(j - 1, 0)])
            hi = np.log(_GRID_T[min(j + 1, _GRID_T.size - 1)])
            res = minimize_scalar(lambda u: float(score(np.array([1.0 + math.exp(u)]))[0]),
                                  bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
            best = min(best, float(res.fun))
        ends = self._base_renyi(np.array([1.0, np.inf]))
        if np.isfinite(ends[0]):          # λ̂ = 1: the ε̂ term vanishes when D_1 is finite
            best = min(best, log_inv_gamma)
        if np.isfinite(ends[1]):          # λ̂ → ∞: the term tends to D_∞
            best = min(best, float(ends[1]))
        return (1.0 + eta) * best

    def _bound(self, lam: FloatArray) -> FloatArray:
        """The theorem's bound at orders λ > 1, before the minimum over higher orders."""
        lam = np.asarray(lam, dtype=float)
        t = lam - 1.0
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            eps = self._base_renyi(lam)
            out = eps + self._const + math.log(self.mean) / t
            if math.isinf(self.shape):
                eps_hat = np.log1p(1.0 / t)
                out = out + self.mean * np.asarray(self.base.profile(eps_hat, "max"), dtype=float)
        return np.where(np.isnan(out), np.inf, out)

    def renyi_bound(self, lam: FloatArray) -> FloatArray:
        """D_λ ≤ this, at orders λ > 1: the bound at λ and at the grid orders above it,
        clamped between the grid's running minima so that it is non-decreasing."""
        lam = np.asarray(lam, dtype=float)
        grid, floor = self._grid, self._floor
        here = self._bound(lam)
        i = np.searchsorted(grid, lam, side="right")        # grid[i − 1] ≤ λ < grid[i]
        above = np.where(i < grid.size, floor[np.minimum(i, grid.size - 1)], np.inf)
        below = np.where(i > 0, floor[np.maximum(i - 1, 0)], -np.inf)
        return np.maximum(below, np.minimum(here, above))

    # ------------------------------------------------------------ primitives
    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        t = np.asarray(t, dtype=float)
        pos = t > 0
        with np.errstate(invalid="ignore"):
            out = np.where(pos, t * self.renyi_bound(np.where(pos, 1.0 + t, 2.0)), 0.0)
        return out

    def cgf_exactness(self) -> Exactness:
        # a bound built on the base's curve: numerical if that curve is
        return Exactness.UPPER.then(self._rdp.provenance.exactness) or Exactness.NUMERICAL

    def _renyi_limit(self, order: float, direction: Direction,
                     side: Bound = Bound.UPPER) -> float | None:
        """D_1 ≤ the smallest bound over orders; D_∞ ≤ the bound's λ → ∞ limit."""
        if side is not Bound.UPPER:
            return None
        if order == 1.0:
            return float(self._floor[0])
        d_inf = float(self._base_renyi(np.array([np.inf]))[0])
        if math.isinf(self.shape):
            return d_inf + self.mean * float(np.asarray(self.base.profile(0.0, "max")))
        return d_inf + self._const

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        # the improved RDP conversion of the bound (Canonne, Kamath, Steinke 2020,
        # arXiv:2004.00010, Prop. 12), valid at every real ε for any RDP guarantee, with
        # the order λ = ∞ where the bound's D_∞ is finite (a pure-DP base: Cor. 3)
        return rdp_delta(lambda t: self._cgf(t, direction), eps,
                         self._renyi_limit(np.inf, direction))

    def _profile_lower(self, eps: FloatArray, direction: Direction) -> FloatArray:
        """One run of the base (K = 0, when Poisson, releases nothing): the base's lower
        profile, smaller direction, scaled by P[K ≥ 1] with the no-run atom's share."""
        eps = np.asarray(eps, dtype=float)
        low: FloatArray = np.minimum(self.base._profile_lower(eps, Direction.FORWARD),
                                     self.base._profile_lower(eps, Direction.BACKWARD))
        if not math.isinf(self.shape):
            return low
        p = -math.expm1(-self.mean)
        with np.errstate(over="ignore"):
            atom = np.maximum(-np.expm1(np.minimum(eps, 0.0)), 0.0)
        mixed: FloatArray = p * low + (1.0 - p) * atom
        return mixed

    def curve(self, kind: type[CurveT], *, registry: Registry | None = None,
              **options: Any) -> CurveT:
        """The curve of ``kind`` as ``Pair.curve`` builds it, labelled an upper bound
        where the route would call it exact: every curve here comes from a Rényi bound
        (its lower side, where present, is the base's, a certified lower bound)."""
        out = super().curve(kind, registry=registry, **options)
        if out.provenance.exactness is Exactness.EXACT:
            # mypy's attrs plugin reads evolve's keywords off CurveT's bound, Curve, whose
            # subclasses (every curve kind) declare the provenance field, not Curve itself
            out = attrs.evolve(out,  # type: ignore[call-arg]
                               provenance=Provenance(Exactness.UPPER, out.provenance.path))
        return out

    def describe(self) -> str:
        dist = "Poisson" if math.isinf(self.shape) else f"TNB(η={self.shape:g})"
        return f"RepeatSelect({dist}, E[K]={self.mean:g})∘{self.base.describe()}"


def _shape(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """η in ``SHAPE``, or +∞ for the Poisson distribution."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == math.inf:
        return
    SHAPE.check(attribute.name, value)


def _base(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, Mechanism):
        raise TypeError(f"base must be a Mechanism, got {type(value).__name__}")


@attrs.frozen
class RepeatAndSelect(Mechanism):
    """Runs ``base`` K times (K random, independent of the data) and releases the best
    output (Papernot and Steinke, arXiv:2110.03620); an upper bound on the Rényi curve,
    see the module docstring.

    ``mean`` = E[K] ≥ 1; ``shape`` = η of the truncated negative binomial (η > −1: 1
    geometric, the default, 0 logarithmic) or ``inf`` for Poisson — dp_accounting's
    ``RepeatAndSelectDpEvent(event, mean, shape)``. ``neighbouring`` must be the
    relation ``base`` declares; ``sensitivity`` is not used (1): the base has its own.
    """

    name = "repeat_and_select"
    sensitivity: float = attrs.field(default=1.0, kw_only=True, validator=one_sensitivity,
                                     metadata={"range": Range(1.0, 1.0)})
    base: Mechanism = attrs.field(validator=_base)
    mean: float = parameter(MEAN)
    shape: float = attrs.field(default=1.0, validator=_shape, metadata={"range": SHAPE})
    neighbouring: Neighbouring = attrs.field(default=Neighbouring.ADD_REMOVE, kw_only=True,
                                             converter=as_neighbouring)

    def __attrs_post_init__(self) -> None:
        if self.base.neighbouring is not self.neighbouring:
            raise ValueError(f"base ({type(self.base).__name__}) declares "
                             f"{self.base.neighbouring.value} neighbouring but repeat_and_select "
                             f"is accounted under {self.neighbouring.value}; pass "
                             f"neighbouring={self.base.neighbouring.value!r}")

    def pair(self) -> Pair:
        return self.pair_in(None)

    def pair_in(self, registry: Registry | None = None) -> Pair:
        """The pair of the base looked up in ``registry``, repeated and selected."""
        base = self.base.pair_in(registry)
        if self.mean == 1 and not math.isinf(self.shape):
            return base                      # K ≡ 1: one run of the base, exactly
        if float(base.curve(RDP, registry=registry).renyi(np.inf, "max")) == 0.0:
            # D_∞ = 0: every run ignores the record (sensitivity 0, rate 0), so the
            # best of them does too — no privacy cost, exactly
            return identical_pair(f"{self.name} of a base with no privacy loss")
        return RepeatAndSelectPair(base, float(self.mean), float(self.shape))


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(RepeatAndSelect)
