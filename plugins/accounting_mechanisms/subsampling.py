"""Poisson subsampling of any mechanism, on the profile (and so PLD) path.

Each record enters the batch independently with probability q, then the base
mechanism runs. Under add/remove neighbouring, with (P₀, Q₀) the base pair, the
dominating pair is P = (1 − q)Q₀ + qP₀, Q = Q₀ (Zhu, Dong, Wang 2022,
Prop. 30): the forward direction P‖Q is *remove*, the backward Q‖P is *add*. Both
profiles follow exactly from the base's (Balle, Barthe, Gaboardi 2018, Thm 8,
written out per direction by taking sup_S of the mixture):

  δ_{P‖Q}(ε) = q·δ_{P₀‖Q₀}(log(1 + (e^ε − 1)/q))                  for ε > log(1 − q),
             = 1 − e^ε                                              below;
  δ_{Q‖P}(ε) = (1 − (1 − q)e^ε)·δ_{Q₀‖P₀}(log(q e^ε/(1 − (1 − q)e^ε)))  for ε < −log(1 − q),
             = 0                                                    above.

Every curve then derives from the profile (PLD by connect-the-dots, trade-off and
RDP of the PLD). The largest losses D_∞ follow from the base's (``_renyi_limit``):
the backward one is at most −log(1 − q), where the backward profile vanishes. The
Rényi curve comes from the base's own primitives (``_cgf``: quadrature, exact sums
or a labelled upper bound); a base with an exact Rényi curve for the mixture (the
Gaussian) overrides ``_cgf`` in a subclass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from accounting.curves.profile import symmetric_profile
from accounting.pairs.additive import log_integral
from accounting.pairs.mechanism import (
    RATE,
    Mechanism,
    Neighbouring,
    Range,
    as_neighbouring,
    parameter,
)
from accounting.pairs.pair import (
    LawPair,
    Pair,
    disjoint_pair,
    identical_pair,
    not_provided,
    overrides_method,
)
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.registry.registry import Registry, default_registry
from accounting.validation import check_count, check_probability
from accounting.vocabulary import AnyArray, Bound, Direction, Exactness, FloatArray

from . import subsampled_rdp as _rdp
from .laplace import LaplacePair
from .shuffling import Shuffled
from .subsampled_gaussian_rdp import log_mixture_ratio, log_power_excess

#: a directional profile (ε, direction) ↦ δ(ε), as a pair's ``_profile``
Profile = Callable[[FloatArray, Direction], FloatArray]

__all__ = ["PoissonSubsampledPair", "PoissonSubsampled", "WithoutReplacementPair",
           "SampledWithoutReplacement", "SubsampledLaplace", "check_rate", "poisson_pair",
           "PoissonMechanism"]


#: relative amount by which the quadrature's K is raised, so that the numerical value
#: errs high: against 40-digit references (Laplace b/Δ ∈ {2, 10, 50}, q ∈ [1e-4, 0.01],
#: α ≤ 32, both directions) it is within 5e-15 of K; not a proof (``Exactness.NUMERICAL``)
QUADRATURE_RAISE = 1e-12


def check_rate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """attrs validator: a sampling rate in (0, 1]."""
    check_probability(attribute.name, value, hi_open=False)


def _base_validator(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, Pair):
        raise TypeError(f"base must be a Pair, got {type(value).__name__}")


@attrs.frozen
class PoissonSubsampledPair(Pair):
    """((1 − q)Q₀ + qP₀, Q₀) for a base pair (P₀, Q₀) and rate q ∈ (0, 1]."""

    base: Pair = attrs.field(validator=_base_validator)
    q: float = attrs.field(validator=check_rate)

    @property
    def exact(self) -> bool:  # type: ignore[override]
        return self.base.exact

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return self._mixed(eps, direction, self.base._profile)

    def _profile_lower(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return self._mixed(eps, direction, self.base._profile_lower)

    def _mixed(self, eps: FloatArray, direction: Direction, base_profile: Profile) -> FloatArray:
        eps = np.asarray(eps, dtype=float)
        q = float(self.q)
        if q == 1.0:
            return base_profile(eps, direction)
        log1mq = np.log1p(-q)
        if eps.ndim == 0:      # a scalar: the masked form returns it as a 0-d array
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                return self._mixed_masked(eps, direction, base_profile, q, log1mq)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            # the module docstring's formulas, the base evaluated where they use it
            # (the grids: everywhere); ±∞ follow from them (e^{±∞} in float64)
            if direction is Direction.FORWARD:
                inside = eps > log1mq                       # +∞ included, NaN not
                if inside.all():
                    return q * base_profile(np.log1p(np.expm1(eps) / q), direction)
                if np.isnan(eps).any():
                    return self._mixed_masked(eps, direction, base_profile, q, log1mq)
                out = -np.expm1(np.minimum(eps, 0.0))       # 1 − e^ε; 1 at −∞
                if inside.any():
                    out[inside] = q * base_profile(np.log1p(np.expm1(eps[inside]) / q), direction)
                return out
            inside = eps < -log1mq                          # −∞ included, NaN not
            if inside.all() and not np.isneginf(eps).any():
                factor = -np.expm1(eps + log1mq)            # 1 − (1 − q)e^ε > 0 inside
                arg = np.log(q) + eps - np.log(factor)
                result: FloatArray = np.maximum(factor * base_profile(arg, direction), 0.0)
                return result
            if np.isnan(eps).any():
                return self._mixed_masked(eps, direction, base_profile, q, log1mq)
            out = np.zeros(eps.shape)
            if inside.any():
                e = eps[inside]
                factor = -np.expm1(e + log1mq)
                arg = np.log(q) + e - np.log(factor)
                out[inside] = np.maximum(factor * base_profile(arg, direction), 0.0)
            out[eps == -np.inf] = 1.0
            return out

    def _mixed_masked(self, eps: FloatArray, direction: Direction, base_profile: Profile,
                      q: float, log1mq: float) -> FloatArray:
        """``_mixed`` with masks over the whole array (a NaN among ``eps`` is read as
        ε = 0, as it always was here)."""
        finite = np.isfinite(eps)
        e = np.where(finite, eps, 0.0)
        if direction is Direction.FORWARD:
            inside = e > log1mq
            arg = np.log1p(np.expm1(np.where(inside, e, 0.0)) / q)
            arg = np.where(eps == np.inf, np.inf, arg)
            val = q * base_profile(arg, direction)
            val = np.where(inside | (eps == np.inf), val, -np.expm1(np.minimum(e, 0.0)))
            return np.where(eps == -np.inf, 1.0, val)
        inside = (e < -log1mq) & (eps != np.inf)
        ei = np.where(inside, e, 0.0)
        factor = -np.expm1(ei + log1mq)              # 1 − (1 − q)e^ε > 0 inside
        arg = np.log(q) + ei - np.log(factor)
        arg = np.where(eps == -np.inf, -np.inf, arg)
        val = factor * base_profile(arg, direction)
        val = np.where(eps == -np.inf, 1.0, val)
        return np.where(inside | (eps == -np.inf), np.maximum(val, 0.0), 0.0)

    def _renyi_limit(self, order: float, direction: Direction,
                     side: Bound = Bound.UPPER) -> float | None:
        """D_∞ from the base's D_∞ (None for D_1, which has no closed form here).

        The mixture's forward loss is log(1 − q + q e^{L₀}) and its backward loss
        −log(1 − q + q e^{L₀}), L₀ = log dP₀/dQ₀, increasing and decreasing in L₀; so
        D_∞,fwd = log(1 + q(e^{D₀} − 1)) with D₀ the base's forward D_∞, and
        D_∞,bwd = −log(1 + q(e^{−D₀} − 1)) with D₀ its backward one, at most
        −log(1 − q) (the ``add`` loss never exceeds it: Zhu, Dong, Wang 2022,
        arXiv:2106.08567, Prop. 30's pair). Both increase with D₀, so the base's
        bound on a side gives one on the same side (on the upper side an unknown
        backward D₀ counts as +∞); rounded outwards by the roundoff of the formula.
        """
        side = Bound.UPPER if side is None else side
        if order != np.inf:
            return None
        base = self.base._renyi_limit(np.inf, direction, side)
        if base is None:
            if side is not Bound.UPPER or direction is Direction.FORWARD:
                return None
            base = np.inf
        base = float(base)
        q = float(self.q)
        if q == 1.0:         # no subsampling: the base itself
            return base
        up = side is Bound.UPPER
        if direction is Direction.FORWARD:
            if base == np.inf:
                return np.inf
            y = q * np.expm1(base)
            return _outward(float(np.log1p(y)), y, up)
        if base == np.inf:   # −log(1 − q): one libm call on an exact argument
            return _outward(float(-np.log1p(-q)), 0.0, up)
        y = q * np.expm1(-base)
        return _outward(float(-np.log1p(y)), y, up)

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        """K(t) of the mixture pair, by the best route the base allows:

        * additive noise (``noise_density``): log-space quadrature of
          ∫ m^{1+t} q^{−t} (forward) or ∫ m^{−t} q^{1+t} (backward), m = (1 − q)·Q₀ + q·P₀
          — numerical (~1e-10 relative, panels around the integrand's peak; labelled
          ``Exactness.NUMERICAL``);
        * a loss law (``LawPair``): exact finite sums (``subsampled_rdp.law_cgf``);
        * a base CGF: the binomial bound (forward) and the Taylor / joint-convexity
          bound (backward) of ``subsampled_rdp`` — upper bounds, see ``cgf_exactness``;
        * otherwise none (RDP then comes from the PLD, +∞ on its upper side).
        """
        route = self._cgf_route()
        if route is None:
            raise not_provided(self, "cgf")
        if route == "law":
            assert isinstance(self.base, LawPair)   # the law route is a LawPair's
            return _rdp.law_cgf(self.base.law(Direction.FORWARD, "upper"), self.q, t, direction)
        if route == "bound":
            fwd = lambda s: self.base._cgf(s, Direction.FORWARD)  # noqa: E731
            exact_base = self.base.exact and self.base.cgf_exactness() is Exactness.EXACT
            if direction is Direction.FORWARD:
                return _rdp.remove_cgf_bound(fwd, self.q, t, exact_base=exact_base)
            bwd = lambda s: self.base._cgf(s, Direction.BACKWARD)  # noqa: E731
            return _rdp.add_cgf_bound(fwd, bwd, self.q, t, exact_base=exact_base)
        return self._quadrature_cgf(t, direction)

    def _cgf_route(self) -> str | None:
        if self.base.provides("noise_density"):
            return "quadrature"
        if isinstance(self.base, LawPair):
            return "law"
        if self.base.provides("cgf"):
            return "bound"
        return None

    def provides(self, primitive: str) -> bool:
        """As the base allows: a Rényi curve by the route ``_cgf`` takes, a lower one
        for the law and quadrature routes, samples where the base has them (a
        subclass's own closed forms count as provided)."""
        method = {"cgf": "_cgf", "cgf_lower": "cgf_lower"}.get(primitive)
        if method is not None and overrides_method(type(self), method, PoissonSubsampledPair):
            return True
        if primitive == "cgf":
            return self._cgf_route() is not None
        if primitive == "cgf_lower":
            return self._cgf_route() in ("law", "quadrature")
        if primitive == "sample":
            return self.base.provides("sample")
        return super().provides(primitive)

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...] | int
               ) -> tuple[AnyArray, AnyArray]:
        """x from the mixture (1 − q)Q₀ + qP₀ (a record in the batch with probability
        q), y from Q₀: three draws of the base pair per output."""
        return mixture_sample(self.base, self.q, rng, shape)
    def cgf_exactness(self) -> Exactness:
        route = self._cgf_route()
        if route == "quadrature":   # a numerical value with a stated error, not a bound
            return Exactness.NUMERICAL
        if route == "bound":        # a bound on the base's CGF: as good as that CGF
            return Exactness.UPPER.then(self.base.cgf_exactness()) or Exactness.NUMERICAL
        # the law route sums over the base's upper law: exact only if that law is
        if route == "law" and not self.base.exact:
            return Exactness.UPPER
        return Exactness.EXACT

    def rho_bound(self, direction: Direction) -> float | None:
        """ρ* of the base in the same direction: joint convexity gives
        K(t) ≤ log(1 − q + q e^{K₀(t)}) ≤ K₀(t) ≤ ρ₀ t(t + 1). Equal to ρ* when the
        base's sup is its t → ∞ limit (Gaussian, discrete Gaussian)."""
        return self.base._rho(direction)

    def _quadrature_cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        """log A by quadrature, A = ∫ Q₀ Y^λ with Y = 1 − q + q P₀/Q₀, λ = 1 + t (forward)
        or −t (backward). For t > 0 it integrates A − 1 = ∫ Q₀ F_λ(Y), F_λ(y) = y^λ − 1 −
        λ(y − 1) ≥ 0 (``log_power_excess``; the Gaussian's form, arXiv:1908.10530 §3.3),
        and returns log1p(A − 1): the integral of A ≈ 1 itself loses a tiny K's relative
        accuracy (5e-6 low for Laplace b/Δ = 50 at q = 1e-4)."""
        logf, shift, width, (lo, hi) = self.base.noise_density()
        log_z = log_integral(logf, lo, hi, width, shift)
        lq1 = np.log1p(-self.q) if self.q < 1 else -np.inf
        lq = np.log(self.q)
        t = np.asarray(t, dtype=float)
        out = np.empty(t.size)
        forward = direction is Direction.FORWARD
        for i, tt in enumerate(np.ravel(t)):
            a, b = (1.0 + tt, -tt) if forward else (-tt, 1.0 + tt)
            reach = (abs(a) + abs(b)) * (abs(shift) + (hi - lo))
            if tt == 0:
                out[i] = 0.0
                continue
            if tt > 0 and self.q < 1:
                lam = a if forward else -tt

                def g(x: FloatArray, lam: float = lam) -> FloatArray:
                    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                        q0 = logf(x) - log_z
                        p0 = logf(x - shift) - log_z
                        v = q0 + log_power_excess(log_mixture_ratio(p0 - q0, self.q), lam)
                    # Q₀ = 0 < P₀: Y = ∞, an infinite forward moment (no backward one)
                    lone = np.isneginf(q0) & np.isfinite(p0)
                    v = np.where(lone, np.inf if forward else -np.inf, v)
                    return np.where(np.isnan(v), -np.inf, v)
                excess = log_integral(g, lo - reach, hi + reach, width, shift)
                out[i] = np.logaddexp(0.0, excess) * (1.0 + QUADRATURE_RAISE)
                continue

            def h(x: FloatArray, a: float = a, b: float = b) -> FloatArray:
                with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                    q0 = logf(x) - log_z
                    mix = np.logaddexp(lq1 + q0, lq + logf(x - shift) - log_z)
                    v = a * mix + b * q0
                return np.where(np.isnan(v), -np.inf, v)
            out[i] = log_integral(h, lo - reach, hi + reach, width, shift)
        return out.reshape(t.shape)

    def cgf_lower(self, t: FloatArray, direction: Direction) -> FloatArray:
        """A lower Rényi curve where the route gives one: the quadrature's value, or the
        exact sums over the base's lower law; none for the bound route."""
        route = self._cgf_route()
        if route == "law":
            assert isinstance(self.base, LawPair)   # the law route is a LawPair's
            return _rdp.law_cgf(self.base.law(Direction.FORWARD, "lower"), self.q, t, direction)
        if route == "quadrature":
            return self._quadrature_cgf(t, direction)
        raise not_provided(self, "cgf_lower")

    def describe(self) -> str:
        return f"Poisson(q={self.q:g})∘{self.base.describe()}"


def _outward(value: float, y: float, up: bool) -> float:
    """``value`` = ±log1p(``y``) (y computed with a few ulps of relative error) moved
    outwards past its roundoff: 4 ulps of the result, plus the propagated error of y,
    |Δy|/(1 + y) ≤ 4·2⁻⁵²·|y|/(1 + y)."""
    err = 4.0 * np.finfo(float).eps * (abs(value) + abs(y) / (1.0 + y)) + 1e-300
    return float(value + err) if up else float(value - err)


def poisson_pair(base: Pair, q: float, registry: Registry | None = None
                 ) -> PoissonSubsampledPair:
    """The Poisson-subsampled pair of ``base``, specialised where a plugin registered a
    closed form for its class (hook ``accounting_register_specialisations``, resolved by
    ``registry``, default the process-wide one): the same answer whatever modules are
    imported, in whatever order."""
    reg = default_registry() if registry is None else registry
    return reg.specialisation(PoissonSubsampledPair, base)(base, q)


@attrs.frozen
class WithoutReplacementPair(Pair):
    """Replace-one neighbouring, a batch of fixed size m drawn without replacement from
    n records (γ = m/n), then a base whose pair (P₀, Q₀) dominates it under replace-one.

    For ε ≥ 0 the subsampled mechanism is (ε, γδ₀(log(1 + (e^ε − 1)/γ)))-DP, with δ₀
    the max of the base's two directions (Balle, Barthe, Gaboardi 2018, Thm 9): the
    forward profile of (γP₀ + (1 − γ)Q₀, Q₀). That pair does *not* dominate for ε < 0
    (with m = 2 of n = 5 records and discrete Laplace noise it is 5 % low at ε = −0.3),
    because the records left out of the batch are not distributed as Q₀. The relation
    is symmetric, so every ordered pair (D, D′) has δ_{D‖D′}(ε) = 1 − e^ε +
    e^ε δ_{D′‖D}(−ε) ≤ 1 − e^ε + e^ε δ_fwd(−ε) for ε < 0. The dominating profile is
    therefore symmetric:

      δ(ε) = δ_fwd(ε)                      for ε ≥ 0,
      δ(ε) = 1 − e^ε + e^ε δ_fwd(−ε)        for ε < 0,

    reported in both directions (it satisfies the complement identity with itself;
    where it is not convex in e^ε the PLD's hull lies between it and the truth).

    Rényi curve (symmetric bases only): with f(x) = x^α the f-divergence is
    ∫ f''(γ)(H_γ − (1 − γ)₊)dγ, and the symmetric profile takes the γ ≥ 1 half of the
    forward pair and the γ < 1 half of its reverse, so
    e^{K(t)} ≤ e^{K_rem(t)} + e^{K_add(t)} − 1 with K_rem, K_add the Poisson-subsampled
    pair's two CGFs at rate γ — an upper bound (labelled so), within log 2 of the
    larger and close to it at the orders where one direction dominates.
    """

    base: Pair = attrs.field(validator=_base_validator)
    gamma: float = attrs.field(validator=check_rate)

    symmetric = True

    @property
    def exact(self) -> bool:  # type: ignore[override]
        return self.base.exact

    @property
    def _poisson(self) -> PoissonSubsampledPair:
        return poisson_pair(self.base, self.gamma)

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return self._symmetric(eps, self._base_max(self.base._profile))

    def _profile_lower(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return self._symmetric(eps, self._base_max(self.base._profile_lower))

    def _symmetric(self, eps: FloatArray, base_profile: Profile) -> FloatArray:
        return symmetric_profile(
            eps, lambda e: self._poisson._mixed(e, Direction.FORWARD, base_profile))

    def _base_max(self, fn: Profile) -> Profile:
        if self.base.symmetric:
            return fn
        return lambda e, _: np.maximum(fn(e, Direction.FORWARD), fn(e, Direction.BACKWARD))

    def provides(self, primitive: str) -> bool:
        """A Rényi curve for symmetric bases whose Poisson pair has one."""
        if primitive == "cgf":
            return self.base.symmetric and self._poisson.provides("cgf")
        return super().provides(primitive)

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        if not self.provides("cgf"):
            raise not_provided(self, "cgf")
        k_rem = np.asarray(self._poisson._cgf(t, Direction.FORWARD), dtype=float)
        k_add = np.asarray(self._poisson._cgf(t, Direction.BACKWARD), dtype=float)
        top = np.maximum(k_rem, k_add)
        with np.errstate(over="ignore", invalid="ignore"):
            small = np.log1p(np.expm1(np.minimum(k_rem, 50.0)) + np.expm1(np.minimum(k_add, 50.0)))
            s = np.logaddexp(k_rem, k_add)
            large = s + np.log1p(-np.exp(-s))
        return np.where(top < 50.0, small, np.where(np.isinf(top), np.inf, large))

    def cgf_exactness(self) -> Exactness:
        # a bound built on the Poisson pair's CGF: numerical if that CGF is
        return Exactness.UPPER.then(self._poisson.cgf_exactness()) or Exactness.NUMERICAL

    def rho_bound(self, direction: Direction) -> float | None:
        """The base's ρ: the mechanism is a mixture, over batches, of base pairs, so by
        joint convexity D_α ≤ ρ₀α for the truth (the max over the base's directions)."""
        rhos = [self.base._rho(d) for d in (Direction.FORWARD, Direction.BACKWARD)]
        known = [r for r in rhos if r is not None]
        return None if len(known) < len(rhos) else max(known)

    def describe(self) -> str:
        return f"WOR(γ={self.gamma:g})∘{self.base.describe()}"


#: batch and dataset sizes: integers up to 2^53, exact in float64
SIZE = Range(1, 2 ** 53, integer=True, log=True)
#: a batch may be empty (no privacy cost)
BATCH = Range(1, 2 ** 53, integer=True, log=True, zero=True)


def mixture_sample(base: Pair | Mechanism, rate: float, rng: np.random.Generator,
                   shape: tuple[int, ...] | int) -> tuple[AnyArray, AnyArray]:
    """Outputs on D (the record in the batch with probability ``rate``: a draw of the
    base on D, else one on D′) and on D′, from three draws of ``base.sample`` — the
    outputs of the wrapper on the datasets whose laws are its dominating pair."""
    p0, q0 = base.sample(rng, shape)
    _, y = base.sample(rng, shape)
    return np.where(rng.random(shape) < rate, p0, q0), y


def _require(relation: Neighbouring, what: str, value: Mechanism) -> None:
    if value.neighbouring is not relation:
        other = "sampled_without_replacement" if relation is Neighbouring.ADD_REMOVE \
            else "poisson_subsampled"
        raise ValueError(f"{what} is accounted under {relation.value} neighbouring, but "
                         f"{type(value).__name__} declares {value.neighbouring.value} "
                         f"(use {other} for that relation)")


def _base_under(relation: Neighbouring, what: str
                ) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """attrs validator of a wrapper's ``base``: a Mechanism declared under ``relation``."""
    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, Mechanism):
            raise TypeError(f"base must be a Mechanism, got {type(value).__name__}")
        _require(relation, what, value)
    return check


@attrs.frozen
class PoissonMechanism(Mechanism):
    """Base of the Poisson-subsampled mechanisms: accounted under add/remove only."""

    def __attrs_post_init__(self) -> None:
        _require(Neighbouring.ADD_REMOVE, "Poisson subsampling", self)


@attrs.frozen
class PoissonSubsampled(PoissonMechanism):
    """Poisson subsampling at rate ``q`` of any ``base`` mechanism.

    Neighbouring: add/remove only (the base must declare it too; its sensitivity is
    that of adding or removing one record). The base's sensitivity is its own; this
    wrapper's ``sensitivity`` is unused. For replace-one use
    ``SampledWithoutReplacement``.
    """

    name = "poisson_subsampled"
    base: Mechanism = attrs.field(validator=_base_under(Neighbouring.ADD_REMOVE,
                                                        "Poisson subsampling"))
    q: float = parameter(RATE)

    def provides(self, primitive: str) -> bool:
        if primitive == "sample":
            return self.base.provides("sample")
        return super().provides(primitive)

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...] | int
               ) -> tuple[AnyArray, AnyArray]:
        """Outputs on D and D′ (``mixture_sample`` of the base mechanism's samples)."""
        if not self.base.provides("sample"):
            raise not_provided(self, "sample")
        return mixture_sample(self.base, float(self.q), rng, shape)

    def pair(self) -> Pair:
        return self.pair_in(None)

    def pair_in(self, registry: Registry | None = None) -> Pair:
        """The pair, its base's and the specialisation looked up in ``registry``."""
        if self.q == 0:
            return identical_pair(f"{self.name} (q = 0: no privacy loss)")
        return poisson_pair(self.base.pair_in(registry), float(self.q), registry)


def _batch_size(value: Any) -> int:
    return check_count("batch_size", value, minimum=0)


def _dataset_size(value: Any) -> int:
    return check_count("dataset_size", value)


@attrs.frozen
class SampledWithoutReplacement(Mechanism):
    """A batch of ``batch_size`` records drawn uniformly without replacement from a
    dataset of ``dataset_size``, then ``base`` (replace-one neighbouring).

    Neighbouring: replace-one only — datasets of a fixed size n that differ in one
    record. The base must declare ``neighbouring="replace_one"`` with its replace-one
    sensitivity (for a clipped sum that is twice the clipping norm, or the norm of
    the largest difference of two records' contributions). γ = batch_size /
    dataset_size; see ``WithoutReplacementPair``.
    """

    name = "sampled_without_replacement"
    base: Mechanism = attrs.field(validator=_base_under(Neighbouring.REPLACE_ONE,
                                                        "sampling without replacement"))
    batch_size: int = attrs.field(converter=_batch_size, metadata={"range": BATCH})
    dataset_size: int = attrs.field(converter=_dataset_size, metadata={"range": SIZE})
    neighbouring: Neighbouring = attrs.field(default=Neighbouring.REPLACE_ONE, kw_only=True,
                                             converter=as_neighbouring)

    def __attrs_post_init__(self) -> None:
        _require(Neighbouring.REPLACE_ONE, "sampling without replacement", self)
        if self.batch_size > self.dataset_size:
            raise ValueError(f"batch_size must be at most dataset_size ({self.dataset_size}), "
                             f"got {self.batch_size}")

    @property
    def gamma(self) -> float:
        return self.batch_size / self.dataset_size

    def provides(self, primitive: str) -> bool:
        if primitive == "sample":
            return self.base.provides("sample")
        return super().provides(primitive)

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...] | int
               ) -> tuple[AnyArray, AnyArray]:
        """Outputs on D and D′ when only the differing record contributes: it is in the
        batch with probability γ (``mixture_sample`` of the base mechanism)."""
        if not self.base.provides("sample"):
            raise not_provided(self, "sample")
        return mixture_sample(self.base, self.gamma, rng, shape)

    def pair(self) -> Pair:
        return self.pair_in(None)

    def pair_in(self, registry: Registry | None = None) -> Pair:
        """The pair, its base's looked up in ``registry``."""
        if self.batch_size == 0:
            return identical_pair(f"{self.name} (batch_size 0: no privacy loss)")
        return WithoutReplacementPair(self.base.pair_in(registry), self.gamma)


@attrs.frozen
class SubsampledLaplace(PoissonMechanism):
    """Poisson sampling at rate ``q``, then Laplace noise of scale ``b`` (Δ: ℓ1).

    Neighbouring: add/remove only (Δ bounds one record's contribution)."""

    name = "subsampled_laplace"
    q: float = parameter(RATE)
    #: b/Δ below 1e-2 is refused like the subsampled Gaussian's σ/Δ
    b: float = parameter(Range(1e-2, 1e8, per="sensitivity", log=True, zero=True))

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...] | int
               ) -> tuple[AnyArray, AnyArray]:
        """Δ·B + Z on D (B ~ Bernoulli(q), Z ~ Lap(0, b)) and Z′ on D′."""
        inside = rng.random(shape) < self.q
        return (self.sensitivity * inside + rng.laplace(0.0, self.b, size=shape),
                rng.laplace(0.0, self.b, size=shape))

    def pair(self) -> Pair:
        if self.q == 0 or self.sensitivity == 0:
            return identical_pair(f"{self.name} (q = 0 or sensitivity 0: no privacy loss)")
        base = (disjoint_pair("Laplace (no noise: non-private)") if self.b == 0
                else LaplacePair(self.sensitivity / self.b))
        return PoissonSubsampledPair(base, float(self.q))


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(PoissonSubsampled)
    register(SampledWithoutReplacement)
    register(SubsampledLaplace)
    # the shuffling sampler lives in its own module; registered with the other samplers
    register(Shuffled)
