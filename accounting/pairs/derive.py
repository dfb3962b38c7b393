"""Every curve of a pair, from whatever primitives the pair provides.

Dispatch is explicit and always terminates: a closed form of the pair if it has
one, else a route through curves the pair surely has (its profile, then the PLD).

* profile: the pair's ``_profile`` (and ``_profile_lower``);
* PLD: connect-the-dots / convex minorant of the profile on a grid; for an exact pair
  that declares its loss atoms (``loss_atoms``), the atoms placed on the grid exactly
  and only the atomless remainder through its profile (``numerics.atoms``);
* trade-off: the pair's ``_beta`` if it provides one, else its loss laws' (a
  ``LawPair``), else the vertices of its PLD;
* RDP: the pair's ``_cgf`` if it provides one (lower side: ``cgf_lower`` if provided,
  else ``_cgf`` itself for an exact pair with an exact CGF), else the CGF of its PLD;
* characteristic function: the pair's ``cgf_analytic`` (exact), the product of the
  parts' for a composition, else the φ of its PLD law (numerical, stated error);
* zCDP: the pair's ``_rho`` per direction if any, else the envelope of its RDP (or
  the pair's ``rho_bound`` where that is smaller, e.g. a sup only reached as t → ∞).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from accounting.curves.characteristic import (
    AnalyticContinuation,
    CharacteristicFunction,
    PhiTerm,
    lattice_phi_error,
    law_log_mgf,
)
from accounting.curves.converters import (
    check_options,
    profile_laws,
    profile_to_pld,
    zcdp_envelope,
)
from accounting.curves.curve import Provenance
from accounting.curves.pld import DEFAULT_STEP, DEFAULT_TAIL, PLD
from accounting.curves.profile import FunctionSide, PrivacyProfile
from accounting.curves.rdp import CGF, RDP
from accounting.curves.tradeoff import BetaSide, TradeOff
from accounting.curves.zcdp import ZCDP
from accounting.numerics.atoms import AtomSplit, finite_law_on_grid
from accounting.numerics.loss import LossPMF, grid_of
from accounting.pairs.composed import ComposedPair
from accounting.pairs.pair import LawPair
from accounting.pairs.primitives import check_primitive_output, check_renyi_output
from accounting.registry.registry import curve_kind_name, default_registry, reserve
from accounting.vocabulary import Bound, Direction, Exactness, InvariantError, bind_direction

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["curve_of_pair", "curve_builder", "builders", "CURVE_KINDS"]

def _exact(step: str) -> Provenance:
    return Provenance(Exactness.EXACT, (step,))


def _checked(fn: Any, what: str, pair: Any) -> Any:
    """``fn`` with its output checked (no NaN; the pair and its plugin named)."""
    def checked(x: Any, direction: Any) -> Any:
        return check_primitive_output(fn(x, direction), what, pair, at=x)
    return checked


def _checked_cgf(fn: Any, what: str, pair: Any, *, lower: bool = False) -> Any:
    """``fn`` (a CGF K(t, direction)) with its output checked: no NaN and, beyond
    rounding, no K(t) < 0 on the sound side (``check_renyi_output``)."""
    def checked(t: Any, direction: Any) -> Any:
        return check_renyi_output(fn(t, direction), what, pair, t, direction, lower=lower)
    return checked


def _checked_limit(pair: Any, side: Bound) -> Any:
    """The pair's declared D_1 and D_∞ on ``side``, checked ≥ 0 as its CGF is."""
    def limit(order: Any, direction: Any) -> Any:
        value = pair._renyi_limit(order, direction, side)
        return float(check_renyi_output([value], "_renyi_limit", pair, [order - 1.0],
                                        direction, cgf=False, lower=side is Bound.LOWER)[0])
    return limit


def _profile(pair: Any, **options: Any) -> PrivacyProfile:
    # the pair's D_∞ per direction, where it knows it: where the PLD's search for the
    # largest loss starts (and checks it against the profile)
    upper = FunctionSide(_checked(pair._profile, "_profile", pair),
                         largest_loss=lambda d: pair._renyi_limit(np.inf, d, Bound.UPPER))
    # an exact pair's lower profile is its profile (``Pair``'s contract): one side
    # serves both, so a PLD evaluates it on the grid once
    lower = upper if pair.exact else FunctionSide(
        _checked(pair._profile_lower, "_profile_lower", pair))
    return PrivacyProfile(upper, lower, provenance=_exact(f"{pair.describe()} profile"))


def _non_private(pair: Any) -> bool:
    """Whether δ(+∞) = 1 in both directions on both sides: all the privacy loss is at
    +∞ (P ⊥ Q), the profile is 1 everywhere and there is no loss range to grid."""
    inf = np.array([np.inf])
    return all(float(fn(inf, d)[0]) == 1.0 for fn in (pair._profile, pair._profile_lower)
               for d in (Direction.FORWARD, Direction.BACKWARD))


def _pld(pair: Any, registry: Registry | None = None, **options: Any) -> PLD:
    if _non_private(pair):
        # all the loss at +∞ in both directions (no noise): nothing to discretise, one
        # grid point of mass 0 so that the PLD composes with others on the grid
        law = LossPMF.on_grid(options.get("step") or DEFAULT_STEP, 0, np.zeros(1), inf_mass=1.0)
        return PLD((law, law), (law, law), provenance=_exact(f"{pair.describe()} pld"))
    if pair.exact and pair.provides("loss_atoms"):
        pld = _pld_with_atoms(pair, **options)
        upper, lower = pld.upper, pld.lower
    else:
        # options checked once, by ``curve_of_pair``
        upper, lower = profile_laws(_profile(pair), options.get("step"),
                                    options.get("tail", DEFAULT_TAIL), options.get("lower", True))
        if isinstance(pair, LawPair) and pair.exact:
            # a finite law: its pessimistic side from its atoms, free of the profile
            # differences' roundoff (``atoms.finite_law_on_grid``)
            grid_step, _ = grid_of(upper[0])
            tail = options.get("tail", DEFAULT_TAIL)
            upper = (finite_law_on_grid(pair.law(Direction.FORWARD), grid_step, tail),
                     finite_law_on_grid(pair.law(Direction.BACKWARD), grid_step, tail))
    return PLD(upper, lower, provenance=_exact(f"{pair.describe()} pld"))


def _pld_with_atoms(pair: Any, step: Any=None, tail: Any=None, lower: bool = True) -> PLD:
    """The PLD of an exact pair with declared atoms: the atoms on the grid exactly, the
    normalised remainder by connect-the-dots and its convex minorant
    (``numerics.atoms.AtomSplit``)."""
    step = DEFAULT_STEP if step is None else step
    tail = DEFAULT_TAIL if tail is None else tail
    split = AtomSplit(pair.loss_atoms(Direction.FORWARD), pair.loss_atoms(Direction.BACKWARD),
                      label=pair.describe()).on(step)
    rest = None
    if split.scale > 0:
        # one side for both: the pair is exact, and profile_to_pld then evaluates the
        # remainder's grid values once
        side = FunctionSide(split.remainder(_checked(pair._profile, "_profile", pair)))
        rest = profile_to_pld(PrivacyProfile(side, side), step=step, tail=tail, lower=lower)

    def sides(bound: Any, pessimistic: Any) -> Any:
        return tuple(split.recombine(rest.law(d, bound) if rest is not None else None,
                                     d, step, pessimistic)
                     for d in (Direction.FORWARD, Direction.BACKWARD))
    return PLD(sides("upper", True), sides("lower", False) if lower else None)


def _tradeoff(pair: Any, registry: Registry | None = None, **options: Any) -> TradeOff:
    if pair.provides("beta"):
        side = BetaSide(_checked(pair._beta, "_beta", pair),
                        _checked(pair._profile, "_profile", pair))
        return TradeOff(side, side, provenance=_exact(f"{pair.describe()} trade-off"))
    if isinstance(pair, LawPair):  # finite laws: β from the laws, not a discretised PLD
        return TradeOff.from_laws(pair.upper, pair.lower,
                                  provenance=_exact(f"{pair.describe()} trade-off (laws)"))
    return _pld(pair, **options).to(TradeOff, registry=registry, **options)


def _rdp(pair: Any, registry: Registry | None = None, **options: Any) -> RDP:
    """The pair's Rényi curve, labelled by ``cgf_exactness()``: exact, an upper bound,
    or numerical (a quadrature: both sides hold the estimate)."""
    if pair.provides("cgf"):
        exactness = pair.cgf_exactness()
        # the pair's D_1 and D_∞ where it knows them (``Pair._renyi_limit``)
        limits = {}
        for side in (Bound.UPPER, Bound.LOWER):
            if pair._renyi_limit(1.0, Direction.FORWARD, side) is not None:
                limits[side] = _checked_limit(pair, side)
        lower = None
        if pair.provides("cgf_lower"):
            lower = CGF.of(_checked_cgf(pair.cgf_lower, "cgf_lower", pair, lower=True),
                           limits.get(Bound.LOWER))
        elif pair.exact and exactness is Exactness.EXACT:
            lower = CGF.of(_checked_cgf(pair._cgf, "_cgf", pair, lower=True),
                           limits.get(Bound.LOWER))
        # an exact closed-form CGF's continuation to complex orders (φ = exp(K(it)))
        analytic = None
        if exactness is Exactness.EXACT and pair.exact and pair.provides("cgf_analytic"):
            analytic = AnalyticContinuation(pair.cgf_analytic, decay=tuple(
                pair.characteristic_decay(d) for d in (Direction.FORWARD, Direction.BACKWARD)))
        return RDP(CGF.of(_checked_cgf(pair._cgf, "_cgf", pair), limits.get(Bound.UPPER),
                          analytic),
                   lower, provenance=Provenance(exactness, (f"{pair.describe()} rdp",)))
    return _pld(pair, **options).to(RDP, registry=registry, **options)


def _zcdp(pair: Any, registry: Registry | None = None, **options: Any) -> ZCDP:
    """ρ per direction: the pair's closed form, else the envelope of its Rényi curve
    (or ``rho_bound`` where smaller). The label is the weakest of the directions':
    a closed form is exact for an exact pair (else an upper bound), an envelope is
    as good as the Rényi curve it comes from (numerical if that is), ``rho_bound``
    an upper bound."""
    base = Exactness.EXACT if pair.exact else Exactness.UPPER
    rdp = None
    rhos = []
    label = base
    for d in (Direction.FORWARD, Direction.BACKWARD):
        rho = pair._rho(d)
        this = base
        if rho is None:
            rdp = rdp or _rdp(pair, registry, **options)
            bound = pair.rho_bound(d)
            with warnings.catch_warnings():
                if bound is not None:   # the envelope's "sup at t → ∞" warning is moot
                    warnings.simplefilter("ignore", RuntimeWarning)
                rho = zcdp_envelope(bind_direction(rdp.upper, d))
            chained = base.then(rdp.provenance.exactness)
            if chained is None:   # an upper RDP curve chains after any pair
                raise InvariantError(f"ρ of {pair.describe()}: its RDP curve is labelled "
                                     f"{rdp.provenance.exactness.value}")
            this = chained
            if bound is not None and bound < rho:
                rho, this = bound, Exactness.UPPER
        rhos.append(rho)
        label = label.then(this) or Exactness.NUMERICAL
    lower = tuple(rhos) if label in (Exactness.EXACT, Exactness.NUMERICAL) else None
    return ZCDP(tuple(rhos), lower, provenance=Provenance(label, (f"{pair.describe()} zcdp",)))


def _characteristic(pair: Any, registry: Registry | None = None, **options: Any) -> CharacteristicFunction:
    """φ of both directions (``curves.characteristic``): the pair's K at complex
    orders where it provides one (an exact term, with its decay rate), the product of
    the parts' φ for a composition, else the φ of its pessimistic PLD law with the
    stated connect-the-dots error (a numerical term, whose inversion uses the PLD)."""
    label = pair.describe()
    lattice = _lattice(pair, registry, options)
    if pair.exact and pair.provides("cgf_analytic"):
        decay = tuple(pair.characteristic_decay(d) for d in (Direction.FORWARD, Direction.BACKWARD))
        term = PhiTerm(pair.cgf_analytic, decay=decay, lattice=lattice, label=label)
        return CharacteristicFunction(((1, term),), provenance=_exact(f"{label} φ"))
    if isinstance(pair, ComposedPair):
        parts = [p.curve(CharacteristicFunction, registry=registry, **options).self_compose(c)
                 for p, c in pair.components]
        out = parts[0]
        for part in parts[1:]:
            out = out.compose(part)
        result: CharacteristicFunction = out
        return result
    pld = lattice(options.get("step") or DEFAULT_STEP)
    laws = {d: pld.law(d, "upper") for d in (Direction.FORWARD, Direction.BACKWARD)}
    inf_true = {d: float(pair._profile(np.array([np.inf]), d)[0]) for d in laws}
    # δ(ℓ_0) − (1 − e^{ℓ_0}) at the lowest grid point: bounds the mass below the grid
    gap = {}
    for d, law in laws.items():
        low = float(law.losses[0]) if law.losses.size else 0.0
        gap[d] = float(pair._profile(np.array([low]), d)[0]) + float(np.expm1(low))

    def cgf(z: Any, d: Any) -> Any:
        return law_log_mgf(laws[d], z)

    def error(t: Any, d: Any) -> Any:
        return lattice_phi_error(laws[d], inf_true[d], gap[d], t)
    term = PhiTerm(cgf, error, lattice=lattice, exactness=Exactness.NUMERICAL,
                   label=f"{label} (its PLD law)")
    return CharacteristicFunction(((1, term),), provenance=Provenance(
        Exactness.NUMERICAL, (f"{label} φ (its PLD law)",)))


def _lattice(pair: Any, registry: Registry | None, options: dict[str, Any]) -> Any:
    """step ↦ the pair's certified PLD on that grid (the options' tail), built once
    per step."""
    cache: dict[float, Any] = {}

    def lattice(step: float) -> PLD:
        if step not in cache:
            cache[step] = _pld(pair, registry, **dict(options, step=step))
        result: PLD = cache[step]
        return result
    return lattice


#: The core's curve kinds and their routes from a pair (module docstring): a plain
#: table, which ``builders`` merges with the kinds plugins register. Each builder
#: takes the pair, the registry its conversions use (``registry=``) and the checked
#: grid options.
CURVE_KINDS: dict[type, Any] = {PrivacyProfile: _profile, PLD: _pld, TradeOff: _tradeoff,
                                RDP: _rdp, ZCDP: _zcdp, CharacteristicFunction: _characteristic}
#: the name the core's curve kinds go by (``registry.CORE_PLUGINS``)
_CORE = "core.pairs"
# a plugin's builder of one of these kinds is refused when it registers
reserve("curve kind", (curve_kind_name(kind) for kind in CURVE_KINDS), _CORE)


def builders(registry: Registry) -> dict[Any, Any]:
    """Every curve kind and its builder: the core's (``CURVE_KINDS``), then those
    registered on ``registry``. A registered builder of a core kind is refused, once:
    withdrawn from the registry and recorded as an error of its plugin."""
    out = dict(CURVE_KINDS)
    for record in registry.records("curve kind"):
        kind, builder = record.value
        if kind in CURVE_KINDS:
            registry.refuse(record, f"curve kind name {record.name!r} is already registered by "
                                    f"plugin {_CORE!r} (built-in); this registration is refused")
            continue
        out[kind] = builder
    return out


def curve_builder(kind: Any, registry: Registry | None = None) -> Any:
    """The builder of the curve class ``kind``: the core's, else the one registered on
    ``registry`` (default: the process-wide one); a ValueError naming the kinds
    otherwise."""
    if registry is None and isinstance(kind, type) and kind in CURVE_KINDS:
        return CURVE_KINDS[kind]
    known = builders(default_registry() if registry is None else registry)
    try:
        return known[kind]
    except (KeyError, TypeError):
        names = ", ".join(k.__name__ for k in known)
        raise ValueError(f"unknown curve kind {kind!r}; expected one of {names}") from None


def curve_of_pair(pair: Any, kind: type, *, registry: Registry | None = None, **options: Any) -> Any:
    """The curve of ``kind`` for ``pair``: by the core's route for its five kinds (the
    module docstring), else by the builder a plugin registered for ``kind`` on
    ``registry`` (hook ``accounting_register_curve_kinds``; default: the process-wide
    registry, which the core's routes also use for their conversions).

    ``options`` are the PLD grid options (``converters.GRID_OPTIONS``: ``step``,
    ``tail``, ``lower``), used wherever the route builds a PLD; they are accepted for
    every kind, since the route depends on the pair, and checked up front: any other
    keyword is a TypeError naming it and the allowed ones.
    """
    builder = curve_builder(kind, registry)
    options = check_options(f"curve({kind.__name__})", options)
    core = CURVE_KINDS.get(kind)
    if core is not None and core is builder:     # the core's routes take the registry
        return core(pair, registry=registry, **options)
    return builder(pair, **options)
