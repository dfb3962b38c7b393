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

Fixed-size batches drawn without replacement (``SampledWithoutReplacement``) are
accounted here too, under either relation: replace-one by ``WithoutReplacementPair``,
add/remove by the Poisson-subsampled pair of the base's replace-one pair at rate
γ = b/n (the proof is in ``SampledWithoutReplacement``'s docstring).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

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
           "SampledWithoutReplacement", "SubsampledLaplace", "WorstDirectionPair",
           "worst_direction", "check_rate", "poisson_pair", "PoissonMechanism"]


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
class WorstDirectionPair(Pair):
    """The larger of a base pair's two directions, reported in both:
    δ(ε) = max(δ_{P₀‖Q₀}(ε), δ_{Q₀‖P₀}(ε)).

    What a replace-one base guarantees for *every* ordered pair of neighbouring batches
    when its pair (P₀, Q₀) is not symmetric: replacing x by y and y by x are both
    neighbours, one bounded by each direction. It is a valid symmetric profile: the
    max of two functions convex in e^ε is convex, and the complement identity
    δ(ε) = 1 − e^ε + e^ε·δ(−ε), which maps each direction to the other, maps their max
    to itself. Exact when the base is (a max of exact profiles); the largest loss D_∞
    is the larger of the base's two. No Rényi curve (the max of two profiles has no
    CGF in terms of theirs), so RDP comes from the PLD.
    """

    base: Pair = attrs.field(validator=_base_validator)

    symmetric = True

    @property
    def exact(self) -> bool:  # type: ignore[override]
        return self.base.exact

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        out: FloatArray = np.maximum(self.base._profile(eps, Direction.FORWARD),
                                     self.base._profile(eps, Direction.BACKWARD))
        return out

    def _profile_lower(self, eps: FloatArray, direction: Direction) -> FloatArray:
        out: FloatArray = np.maximum(self.base._profile_lower(eps, Direction.FORWARD),
                                     self.base._profile_lower(eps, Direction.BACKWARD))
        return out

    def _renyi_limit(self, order: float, direction: Direction,
                     side: Bound = Bound.UPPER) -> float | None:
        """D_∞ of the max: the larger of the base's (on the upper side both must be known)."""
        if order != np.inf:
            return None
        side = Bound.UPPER if side is None else side
        known = [self.base._renyi_limit(np.inf, d, side)
                 for d in (Direction.FORWARD, Direction.BACKWARD)]
        values = [float(v) for v in known if v is not None]
        if not values or (side is Bound.UPPER and len(values) < 2):
            return None
        return max(values)

    def describe(self) -> str:
        return f"max-direction({self.base.describe()})"


def worst_direction(base: Pair) -> Pair:
    """``base`` itself when it is symmetric, else its ``WorstDirectionPair``."""
    return base if base.symmetric else WorstDirectionPair(base)


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
        """The Poisson-subsampled pair of the base's worst direction at rate γ: its
        forward profile is the one above for ε ≥ 0."""
        return poisson_pair(worst_direction(self.base), self.gamma)

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return symmetric_profile(eps, lambda e: self._poisson._profile(e, Direction.FORWARD))

    def _profile_lower(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return symmetric_profile(
            eps, lambda e: self._poisson._profile_lower(e, Direction.FORWARD))

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


def _wor_base(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """attrs validator of ``SampledWithoutReplacement.base``: a Mechanism declared under
    replace-one, whatever the wrapper's own relation (the batch has a fixed size, so the
    base always sees one record in place of another)."""
    if not isinstance(value, Mechanism):
        raise TypeError(f"base must be a Mechanism, got {type(value).__name__}")
    if value.neighbouring is not Neighbouring.REPLACE_ONE:
        raise ValueError(
            f"the base of sampling without replacement must be declared under replace_one "
            f"neighbouring, with its replace-one sensitivity (twice the clipping norm for a "
            f"clipped sum), but {type(value).__name__} declares {value.neighbouring.value}: a "
            f"batch of fixed size sees one record in place of another under either relation "
            f"(set the wrapper's own neighbouring='add_remove' for datasets that differ by "
            f"one record added or removed, or use poisson_subsampled for Poisson sampling)")


@attrs.frozen
class SampledWithoutReplacement(Mechanism):
    """A batch of ``batch_size`` records drawn uniformly without replacement from a
    dataset of ``dataset_size``, then ``base`` (replace-one neighbouring).

    The base sees a batch of b = ``batch_size`` records, and it must be declared with
    ``neighbouring="replace_one"`` and its replace-one sensitivity (for a clipped sum
    that is twice the clipping norm, or the norm of the largest difference of two
    records' contributions): under *either* relation between the datasets, two
    neighbouring batches of fixed size differ by one record put in place of another.
    γ = b/n with n = ``dataset_size``. The wrapper's own ``neighbouring`` says which
    datasets are neighbours:

    * ``"replace_one"`` (the default): datasets of n records that differ in one.
      ``WithoutReplacementPair``: the symmetric profile of Balle, Barthe, Gaboardi
      2018 (arXiv:1807.01647, Thm 9) for ε ≥ 0, mirrored below 0.
    * ``"add_remove"``: datasets that differ by one record added or removed, the
      larger with n records (the smaller, n − 1, must still hold a batch: b ≤ n − 1).
      A dataset of n records and its neighbour with n + 1 are covered too, with room
      (their γ is b/(n + 1) ≤ b/n, and each profile below increases with γ: it is
      convex in γ with its least value at γ = 0). Lebeda, Regehr, Kamath, Steinke
      (arXiv:2405.20769) treat this relation and show it can cost much more than
      Poisson sampling at the same rate; the dominating pair used here is derived
      below.

    Add/remove: the pair is ((1 − γ)Q₀ + γP₀, Q₀), the Poisson-subsampled pair at rate
    γ of the base's replace-one pair (P₀, Q₀) (its worst direction,
    ``WorstDirectionPair``, if the base is not symmetric) — forward *remove*, backward
    *add*, at every ε ∈ ℝ. Proof. Let D = D′ ∪ {x}, |D| = n, and write H_s(A‖B) =
    sup_S A(S) − s·B(S). A batch of D misses x with probability 1 − γ, and is then a
    uniform b-subset of D′; otherwise it is {x} ∪ S with S a uniform (b − 1)-subset of
    D′. So M(D) = (1 − γ)M(D′) + γR with R = E_S M(S ∪ {x}); and a uniform b-subset of
    D′ is S ∪ {y}, y uniform in D′ ∖ S, so M(D′) = E_{S,y} M(S ∪ {y}). Then
    (advanced joint convexity, the step of arXiv:1807.01647's Thm 8, here an identity):
    H_{e^ε}(M(D)‖M(D′)) = γ·H_{e^{ε′}}(R‖M(D′)), e^{ε′} = 1 + (e^ε − 1)/γ, for
    ε > log(1 − γ), and 1 − e^ε below; H_{e^ε}(M(D′)‖M(D)) = c·H_{e^{ε″}}(M(D′)‖R),
    c = 1 − (1 − γ)e^ε, e^{ε″} = γe^ε/c, for ε < −log(1 − γ), and 0 above. The hockey
    stick is jointly convex, so coupling (S, y) gives H(R‖M(D′)) ≤ E_{S,y}
    H(M(S ∪ {x})‖M(S ∪ {y})) ≤ δ₀(ε′) and likewise in the other order, because
    S ∪ {x} and S ∪ {y} are batches of size b that differ by a replacement. These are
    the two profiles of ``PoissonSubsampledPair`` on (P₀, Q₀), both increasing in δ₀,
    so an upper (lower) base profile gives an upper (lower) one. Tight: for a sum of
    records in {0, 1} with additive noise, D′ all zeros and x = 1 attain it. Its Rényi
    curve and closed forms are the Poisson pair's (exact for the Gaussian).

    Composed over steps (one fresh batch per step), the product of the dominating pairs
    dominates the composition (Zhu, Dong, Wang 2022, arXiv:2106.08567, Thm 10); the
    accountant composes them like any other pair.

    b = 0 (an empty batch, as dp_accounting's zero-size sample) costs nothing; b = n
    under replace-one is the base on the whole dataset, its own pair.
    """

    name = "sampled_without_replacement"
    #: the relation the base is declared under (the batch's, whatever the datasets')
    base_neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE
    base: Mechanism = attrs.field(validator=_wor_base)
    batch_size: int = attrs.field(converter=_batch_size, metadata={"range": BATCH})
    dataset_size: int = attrs.field(converter=_dataset_size, metadata={"range": SIZE})
    neighbouring: Neighbouring = attrs.field(default=Neighbouring.REPLACE_ONE, kw_only=True,
                                             converter=as_neighbouring)

    def __attrs_post_init__(self) -> None:
        if self.batch_size > self.dataset_size:
            raise ValueError(f"batch_size must be at most dataset_size ({self.dataset_size}), "
                             f"got {self.batch_size}")
        if (self.neighbouring is Neighbouring.ADD_REMOVE
                and 0 < self.batch_size == self.dataset_size):
            raise ValueError(
                f"batch_size must be at most dataset_size − 1 ({self.dataset_size - 1}) under "
                f"add_remove neighbouring, got {self.batch_size}: the neighbour with one record "
                f"removed has dataset_size − 1 records and must still hold a batch")

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
        batch with probability γ (``mixture_sample`` of the base mechanism). Under
        add/remove these are the laws of the dominating pair (D′ all zeros, x = 1)."""
        if not self.base.provides("sample"):
            raise not_provided(self, "sample")
        return mixture_sample(self.base, self.gamma, rng, shape)

    def pair(self) -> Pair:
        return self.pair_in(None)

    def pair_in(self, registry: Registry | None = None) -> Pair:
        """The pair, its base's (and a Poisson specialisation) looked up in ``registry``."""
        if self.batch_size == 0:
            return identical_pair(f"{self.name} (batch_size 0: no privacy loss)")
        base = self.base.pair_in(registry)
        if self.neighbouring is Neighbouring.ADD_REMOVE:
            return poisson_pair(worst_direction(base), self.gamma, registry)
        if self.batch_size == self.dataset_size:     # every record, every time: the base
            return worst_direction(base)
        return WithoutReplacementPair(base, self.gamma)


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
