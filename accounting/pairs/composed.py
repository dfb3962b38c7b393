"""Composition: of curves of one kind, and of pairs (heterogeneous and n-fold).

``compose`` is the users' one route (the verb *compose* of ``docs/five-verbs.md``).
Curves compose by their own rule (PLD: convolution; RDP: adding K; zCDP: adding ρ).
``ComposedPair`` is the product of several pairs, each repeated some number of
times; its curves are the compositions of its components' curves, with n-fold
self-composition done by one FFT power per distinct component. It is built by
``compose`` (and the ledger); constructing it directly is internal.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from accounting.curves.curve import Curve
from accounting.curves.pld import DEFAULT_STEP, DEFAULT_TAIL, PLD, RefiningPLD, compose_plds
from accounting.curves.profile import PrivacyProfile
from accounting.curves.rdp import RDP
from accounting.curves.tradeoff import TradeOff
from accounting.curves.zcdp import ZCDP
from accounting.numerics.discretise import atoms_to_grid, profile_support
from accounting.numerics.fourier import composed_grid_points
from accounting.numerics.loss import check_grid_points, check_held_points
from accounting.numerics.summed_cgf import FAR_TAIL
from accounting.pairs.finite import exact_laws_of, exact_product
from accounting.pairs.mechanism import Mechanism
from accounting.pairs.pair import CurveT, LawPair, Pair, of_kind
from accounting.progress import progress
from accounting.validation import check_count, check_positive
from accounting.vocabulary import Bound, Direction, as_direction

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["compose", "composition_parts", "ComposedPair", "estimate_grid_points",
           "check_grid_size"]


def compose(*parts: Any) -> Pair | Curve:
    """The verb *compose*, the one composition route: the independent composition of
    ``parts``, each a mechanism, a pair or a curve, or a ``(part, count)`` tuple for
    ``count`` independent uses (an integer in [1, 2^53]).

    * Mechanisms and pairs (mixed freely) give a pair: the product of their pairs
      (``ComposedPair``), equal parts merged into one count, in order of first
      appearance; a single part repeated ``count`` times gives its closed-form
      ``count``-fold product where the pair has one (Gaussian: μ ↦ μ√n), else a
      ``ComposedPair``.
    * Curves of one kind give a curve of that kind, by the kind's own rule, left to
      right: ``PLD`` convolution (Koskela, Jälkö, Honkela 2020, arXiv:1906.03049, §3;
      a count by one FFT power), ``RDP`` adding the CGFs (Mironov 2017,
      arXiv:1702.07476, Prop. 1), ``ZCDP`` adding ξ and ρ (Bun and Steinke 2016,
      arXiv:1605.02065, Lemma 2.3); an exact ``PrivacyProfile`` or ``TradeOff``
      through its PLD.

    Curves of different kinds, curves mixed with pairs, or a kind that cannot compose
    soundly (a profile or trade-off that is only a bound) raise a TypeError naming
    them. A running ``Accountant`` composes with ``Accountant.compose(part, count)``.
    """
    items = composition_parts(parts)
    curves = [c for c, _ in items if isinstance(c, Curve)]
    if curves and len(curves) < len(items):
        raise TypeError("compose() needs either curves or mechanisms and pairs, not both; "
                        "take the curves of the pairs first (pair.curve(Kind))")
    if curves:
        return _compose_curves(items)
    merged: dict[Any, tuple[Pair, int]] = {}
    for part, count in items:
        pair: Pair = part.pair() if isinstance(part, Mechanism) else part
        key = _merge_key(pair)
        total = merged.get(key, (pair, 0))[1] + count
        merged[key] = (pair, check_count("count", total))
    components = tuple(merged.values())
    if len(components) == 1:
        only, count = components[0]
        if count == 1:
            return only
        closed: Pair | None = only._self_compose(count)
        if closed is not None:
            return closed
    return ComposedPair(components)


def composition_parts(parts: Sequence[Any]) -> list[tuple[Any, int]]:
    """``[(part, count), …]`` of ``compose``'s arguments (a bare part counts once), each
    part a ``Mechanism``, ``Pair`` or ``Curve`` and each count checked; a TypeError or
    ValueError naming the argument otherwise."""
    if not parts:
        raise ValueError("compose() needs at least one part (a mechanism, pair or curve, "
                         "or a (part, count) tuple)")
    out = []
    for i, item in enumerate(parts):
        part, count = item if isinstance(item, tuple) and len(item) == 2 else (item, 1)
        if not isinstance(part, (Mechanism, Pair, Curve)):
            raise TypeError(f"compose() argument {i} must be a mechanism, pair or curve (PLD, "
                            f"RDP, ZCDP, PrivacyProfile, TradeOff), or a (part, count) tuple; "
                            f"got {type(part).__name__}")
        out.append((part, check_count("count", count)))
    return out


def _merge_key(pair: Pair) -> Any:
    """Equal pairs (value equality where the class defines it, else identity) merge."""
    try:
        hash(pair)
    except TypeError:
        return ("id", id(pair))
    return ("eq", pair)


def _compose_curves(items: list[tuple[Curve, int]]) -> Curve:
    """Curves of one kind, each repeated its count, composed left to right by the
    kind's rules (``compose``, ``self_compose``)."""
    kinds = list(dict.fromkeys(type(c).__name__ for c, _ in items))
    if len(kinds) > 1:
        raise TypeError(f"compose() needs curves of one kind, got {', '.join(kinds)}; "
                        f"convert them first with .to()")
    curves = [c if n == 1 else c.self_compose(n) for c, n in items]
    out = curves[0]
    for c in curves[1:]:
        out = out.compose(c)
    return out


def _components(value: Iterable[Any]) -> tuple[Any, ...]:
    out = []
    for pair, count in value:
        if not isinstance(pair, Pair):
            raise TypeError(f"components must be pairs, got {type(pair).__name__}")
        out.append((pair, check_count("count", count)))
    if not out:
        raise ValueError("a composed pair needs at least one component")
    return tuple(out)


def _support_points(pair: Pair, step: float) -> float:
    """Width in ε of one use's discretised loss support, [−e_backward, e_forward],
    where each directional profile falls to the discretisation tail
    (``profile_support``, a handful of profile calls)."""
    fwd = profile_support(lambda e: pair.profile(e, Direction.FORWARD), DEFAULT_TAIL, step / 4)
    bwd = profile_support(lambda e: pair.profile(e, Direction.BACKWARD), DEFAULT_TAIL, step / 4)
    return fwd + bwd


def estimate_grid_points(pair: Pair, count: int = 1, step: float = DEFAULT_STEP) -> int:
    """Grid points the PLD of ``count`` uses of ``pair`` occupies at ``step``, estimated
    before anything large is allocated: the largest of each component's discretised
    support (support/step) and the composed law's Chernoff window, the latter from a
    coarse discretisation (at most ~4000 points a component) scaled to ``step``.
    Memory needed is about ``loss.BYTES_PER_POINT`` times this; ``check_grid_size`` refuses
    beyond ``loss.MAX_GRID_POINTS``."""
    step = check_positive("step", step)
    count = check_count("count", count)
    comps = list(pair.components) if isinstance(pair, ComposedPair) else [(pair, 1)]
    comps = [(p, c * count) for p, c in comps]
    parts = []
    worst = 0.0
    coarse = step
    for p, c in comps:
        closed = p._self_compose(c) if c > 1 else None
        p, c = (closed, 1) if closed is not None else (p, c)
        width = _support_points(p, step)
        worst = max(worst, width / step)
        coarse = max(coarse, width / 4000.0)
        parts.append((p, c))
    if len(parts) == 1 and parts[0][1] == 1:
        return int(worst) + 3
    laws = [(p.curve(PLD, step=coarse, lower=False).law(d, "upper"), c)
            for d in ("forward", "backward") for p, c in parts]
    fwd = composed_grid_points(laws[:len(parts)])
    bwd = composed_grid_points(laws[len(parts):])
    return int(max(worst, max(fwd, bwd) * coarse / step)) + 3


def check_grid_size(pair: Pair, count: int = 1, step: float = DEFAULT_STEP,
                    option: str = "step") -> int:
    """``estimate_grid_points``, or a ValueError naming ``option`` (the setting that
    fixes it), the size and the memory, when the grid exceeds ``MAX_GRID_POINTS``."""
    return check_grid_points(estimate_grid_points(pair, count, step), step, option=option)


def _law_pld(pair: LawPair, step: Any=None, tail: float = DEFAULT_TAIL, lower: bool = True) -> PLD:
    """The PLD of a pair given by finite loss laws (a closed-form n-fold product such
    as randomized response's binomial law): its atoms moved onto the grid, up for the
    upper side and down for the lower (``discretise.atoms_to_grid``), exact on the
    grid, without the profile route's roundoff."""
    step = DEFAULT_STEP if step is None else step

    def side(bound: Any, pessimistic: Any) -> Any:
        return tuple(atoms_to_grid(pair.law(d, bound), step, tail, pessimistic)
                     for d in (Direction.FORWARD, Direction.BACKWARD))
    return PLD(side("upper", True), side("lower", False) if lower else None)


#: what a composition too large to hold can do instead
_HELD_ADVICE = ("group a noise schedule by dominance (Accountant.epsilon_interval(..., "
                "group=0.01)), use a larger step, or account under RDP "
                "(acct.curve(RDP))")


#: the largest |loss| the profile route discretises in float64 (``discretise``)
_PROFILE_LOSS_RANGE = 700.0


#: above this many atoms a combined finite law goes onto the grid by its atoms: the
#: profile route is tighter (a 2.7e-8 bracket of δ where the atoms' route gave 3.4e-6,
#: on ``benchmarks/closed_forms.py``'s mixed job) but its cost grows with the atoms
#: (211 191 atoms: 71 s, against 0.4 s by the atoms at a one-step-wide bracket)
_PROFILE_ROUTE_ATOMS = 2048


def _beyond_profile_range(pair: Pair) -> bool:
    """Whether an exact finite law has losses beyond what the profile route can grid
    (|loss| > 700) or more than ``_PROFILE_ROUTE_ATOMS`` atoms: its atoms then go
    onto the grid directly (``_law_pld``)."""
    laws = exact_laws_of(pair)
    return laws is not None and any(
        law.losses.size > _PROFILE_ROUTE_ATOMS
        or (law.losses.size and float(np.max(np.abs(law.losses))) > _PROFILE_LOSS_RANGE)
        for law in laws)


def _cut_tails(options: dict[str, Any], uses: int) -> dict[str, Any]:
    """``options`` with the discretisation tail of each use set to ``DEFAULT_TAIL``
    divided by the number of uses composed by FFT powers (unless the caller set
    ``tail``): each use sends its cut tail to +∞, so n uses at the default would put
    n·1e-20 there — 1.4e-16 for DP-SGD's 14 062 steps, a seventh of δ = 1e-15. The
    grid grows only by the extra tail width (a few per cent for Gaussian tails)."""
    if "tail" in options or uses <= 1:
        return options
    return dict(options, tail=DEFAULT_TAIL / uses)


@attrs.frozen(eq=False, slots=False)  # slots off: the PLD is cached on the instance
class ComposedPair(Pair):
    """The product of ``components`` = ((pair, count), …) in both directions.

    Internal construction: users build one with ``accounting.compose((pair, count), …)``."""

    components: tuple[Any, ...] = attrs.field(converter=_components)

    @property
    def exact(self) -> bool:  # type: ignore[override]
        return False  # its profile comes from a discretised PLD

    def gdp_mu(self) -> float | None:
        """μ = √(Σ kᵢ μᵢ²) when every component is exactly μᵢ-GDP, else None: the
        composition of k μᵢ-GDP mechanisms is exactly √(Σ kᵢμᵢ²)-GDP (Dong, Roth, Su,
        arXiv:1905.02383, Cor. 3.3; for Gaussians also Balle, Wang, arXiv:1805.06530)."""
        mus = [(p.gdp_mu(), c) for p, c in self.components]
        if not mus or any(mu is None for mu, _ in mus):
            return None
        return math.sqrt(math.fsum(c * mu * mu for mu, c in mus if mu is not None))

    def closed_form(self) -> Pair | None:
        """An exact pair equivalent to the whole composition, or None: when every
        component is μᵢ-GDP, the one μ-GDP pair of ``gdp_mu`` (its curves are closed
        forms, so the composition needs no grid); when every component is an exact
        finite law (randomized response, k-ary randomized response, (ε, δ) guarantees,
        ``discrete_pair``), their exact product law (``pairs.finite.exact_product``:
        the convolution of the laws, Kairouz, Oh, Viswanath, arXiv:1311.0776, §3), while
        its support stays within ``MAX_ATOMS``."""
        merged = self.merged_components()
        if len(merged) != 1 or merged[0][1] != 1:
            return None
        only: Pair = merged[0][0]
        if only.gdp_mu() is not None:
            return only
        return only if exact_laws_of(only) is not None else None

    def merged_components(self) -> tuple[tuple[Pair, int], ...]:
        """The components with the closed-form parts combined exactly: every μᵢ-GDP
        component into one √(Σkᵢμᵢ²)-GDP pair (Dong, Roth, Su, arXiv:1905.02383, Cor.
        3.3), every exact finite law into one product law (``exact_product``; left
        apart when that law would exceed ``MAX_ATOMS``), each then used once, before
        the others in their order. A composition discretises each part once, so the
        combined parts cost one discretisation error each instead of one per
        component (cached: the product law of many uses is computed once)."""
        return self._merged

    @functools.cached_property
    def _merged(self) -> tuple[tuple[Pair, int], ...]:
        gdp = [(p, c) for p, c in self.components if p.gdp_mu() is not None]
        finite = [(p, c) for p, c in self.components
                  if p.gdp_mu() is None and exact_laws_of(p) is not None]
        rest = [(p, c) for p, c in self.components
                if p.gdp_mu() is None and exact_laws_of(p) is None]
        out: list[tuple[Pair, int]] = []
        if gdp:
            mu = math.sqrt(math.fsum(c * float(p.gdp_mu() or 0.0) ** 2 for p, c in gdp))
            combined = gdp[0][0].gdp_pair(mu) if len(gdp) > 1 or gdp[0][1] > 1 else gdp[0][0]
            if combined is None:
                out.extend(gdp)
            else:
                out.append((combined, 1))
        if len(finite) == 1:
            # (one finite part keeps its own route: its closed n-fold law if it has one)
            out.extend(finite)
        elif finite:
            try:
                out.append((exact_product(finite), 1))
            except ValueError:          # the product law outgrew MAX_ATOMS
                out.extend(finite)
        return tuple(out + rest)

    def pure_epsilon(self, direction: Direction | str = "max"
                     ) -> tuple[float, float] | None:
        """(lower, upper) of ε(δ = 0), the largest privacy loss of the composition, when
        every component has a finite largest loss D_∞ in each direction (pure DP: a
        finite largest loss and no mass at +∞), else None.

        The largest loss of a sum of independent losses is the sum of their largest
        losses, so ε(0) = max over the directions of Σ kᵢ D_∞,ᵢ (the basic composition
        of pure DP, Dwork, Roth, "The Algorithmic Foundations of Differential
        Privacy", Thm. 3.16, tight as the essential supremum of the summed loss). Each
        D_∞ is the pair's own (``Pair._renyi_limit``) on each side of its bracket; the
        sums are correctly rounded (exact rational arithmetic on the float terms), so
        lower = upper for exact pairs: ε(0) in closed form, no grid."""
        sides = []
        for side in (Bound.LOWER, Bound.UPPER):
            per_direction = []
            for d in as_direction(direction).components:
                total = Fraction(0)
                for p, c in self.components:
                    sup = p._renyi_limit(math.inf, d, side)
                    if sup is None or not math.isfinite(float(sup)):
                        return None
                    total += Fraction(float(sup)) * c
                per_direction.append(total)
            sides.append(max(float(max(per_direction)), 0.0))
        return sides[0], sides[1]

    def _pld_parts(self, registry: Registry | None = None, **options: Any) -> list[Any]:
        """(PLD, count) of each component, at the discretisation ``options``, each
        derived through ``registry``."""
        # a closed-form n-fold product (Gaussians: μ ↦ μ√n) beats an FFT power
        parts = []
        # the closed-form parts combined exactly first (all μ-GDP parts into one pair,
        # all finite laws into one law), so each is discretised once
        components = self.merged_components()
        originals = [q for q, _ in self.components]
        closed = [p._self_compose(c) if c > 1 else None for p, c in components]
        options = _cut_tails(options, sum(c for (_, c), cl in zip(components, closed)
                                          if cl is None))
        # discretising many distinct mechanisms takes seconds: progress on stderr
        # (silent for short runs; see accounting.progress)
        held = 0
        for k, ((p, c), cl) in enumerate(progress(list(zip(components, closed)),
                                                  desc="discretising mechanisms")):
            # each single-use PLD refuses its own grid beyond the limit when built
            # (the product law of the finite parts, used once, takes the pair route:
            # its profile on the grid and its atoms for the upper side, 5× tighter
            # there than its atoms moved onto the grid on both sides)
            if isinstance(cl, LawPair) or (c == 1 and p not in originals
                                           and _beyond_profile_range(p)):
                parts.append((_law_pld(cl if cl is not None else p, **options), 1))
            else:
                parts.append((cl.curve(PLD, registry=registry, **options), 1) if cl is not None
                             else (p.curve(PLD, registry=registry, **options), c))
            # the memory plan: all parts are held at once, so refuse from the first
            # ones' sizes a job whose parts would not fit
            pld = parts[-1][0]
            held += sum(law.masses.size for law in pld.upper + (pld.lower or ()))
            check_held_points(k + 1, held, len(self.components) - k - 1, _HELD_ADVICE)
        return parts

    def refining_pld(self, *, registry: Registry | None = None, far_tail: float = FAR_TAIL,
                     **options: Any) -> RefiningPLD:
        """The composed PLD as a ``RefiningPLD``: δ(ε) and ε(δ) from the tilts each
        query needs, the full PLD on demand (``options`` as for ``curve(PLD)``; the
        components' PLDs derived through ``registry``; ``far_tail``: the mass allowed
        above the composed window, see RefiningPLD)."""
        return RefiningPLD(self._pld_parts(registry, **options),
                           lower=options.get("lower", True), far_tail=far_tail)

    def curve(self, kind: type[CurveT], *, registry: Registry | None = None,
              **options: Any) -> CurveT:
        if kind is PLD:
            # the composition refuses its own grid, from the Chernoff window of these
            # laws, before allocating it
            return of_kind(kind, compose_plds(self._pld_parts(registry, **options)))
        if kind in (RDP, ZCDP):
            parts = [p.curve(kind, registry=registry, **options).self_compose(c) if c > 1
                     else p.curve(kind, registry=registry, **options)
                     for p, c in self.components]
            return of_kind(kind, compose(*parts))
        if kind in (PrivacyProfile, TradeOff):
            return of_kind(kind, self.curve(PLD, registry=registry, **options).to(
                kind, registry=registry, **options))
        return super().curve(kind, registry=registry, **options)

    @functools.cached_property
    def _pld(self) -> PLD:
        return self.curve(PLD)

    def _profile(self, eps: Any, direction: Any) -> Any:
        return self._pld.law(direction, "upper").delta(eps)

    def _profile_lower(self, eps: Any, direction: Any) -> Any:
        return self._pld.law(direction, "lower").delta(eps)

    def describe(self) -> str:
        return " ⊗ ".join(f"{p.describe()}^{c}" if c > 1 else p.describe()
                          for p, c in self.components)
