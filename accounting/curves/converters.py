"""The core's converters: a plain table (``CONVERTERS``) that the converter graph
(``curves.graph``) merges with the edges plugins register.

Exact ring (unifying-accounting paper, Thm 1): PLD → profile, profile → PLD
(connect-the-dots with its optimistic minorant), profile ⇄ trade-off, PLD →
trade-off. Lossy edges: PLD → RDP (an upper bound: +∞ wherever the pessimistic law
has mass at +∞; its lower side a lower bound), RDP → zCDP (the envelope ρ*), RDP →
profile (improved conversion over continuous α, and α = ∞ where D_∞ is declared),
zCDP → RDP (D_α ≤ ρα).

Every converter takes the options ``GRID_OPTIONS`` and refuses any other keyword
(``check_options``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from accounting.curves.characteristic import (
    CharacteristicFunction,
    characteristic_to_pld,
    rdp_to_characteristic,
)
from accounting.curves.pld import DEFAULT_STEP, DEFAULT_TAIL, PLD, check_step
from accounting.curves.profile import FunctionSide, LawSide, PrivacyProfile
from accounting.curves.rdp import CGF, RDP
from accounting.curves.tradeoff import TradeOff, VertexSide
from accounting.curves.zcdp import ZCDP
from accounting.numerics.discretise import (
    GridValues,
    ProfileFn,
    connect_the_dots,
    convex_minorant,
    grid_indices,
    grid_profiles,
    profile_support,
)
from accounting.numerics.loss import LossPMF
from accounting.numerics.order_search import envelope_sup, minimise_over_orders
from accounting.validation import check_real
from accounting.vocabulary import Direction, Exactness, InvariantError

__all__ = ["CONVERTERS", "HOME_KINDS",
           "GRID_OPTIONS", "check_options", "profile_to_pld", "profile_laws", "rdp_delta", "law_limit",
           "rdp_epsilon", "with_order_infinity", "zcdp_envelope",
           "improved_epsilon", "improved_log_delta"]

_FWD, _BWD = Direction.FORWARD, Direction.BACKWARD

DeltaFn = Callable[[np.ndarray, Direction], np.ndarray]

#: The options of the conversion graph: the PLD grid of ``profile_to_pld``.
#: ``convert`` hands one set of options to every edge of a path, and ``pair.curve``
#: to whichever route the pair takes (a closed form or a PLD), so every core
#: converter and curve builder accepts exactly these — used where the route builds a
#: PLD — and refuses any other keyword: a typo such as ``stpe`` is an error, never a
#: silent run at the default.
GRID_OPTIONS = ("step", "tail", "lower")


def check_options(where: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` checked: TypeError naming any keyword outside ``GRID_OPTIONS`` and
    the allowed ones; each given value validated (``step`` > 0 or None, ``tail`` in
    (0, 1e-3], ``lower`` a bool) whether or not the route ends up using it."""
    unknown = sorted(set(options) - set(GRID_OPTIONS))
    if unknown:
        names = ", ".join(repr(k) for k in unknown)
        raise TypeError(f"{where} got unexpected keyword argument{'s' if len(unknown) > 1 else ''} "
                        f"{names}; allowed: {', '.join(GRID_OPTIONS)}")
    out = dict(options)   # (values of any type until checked here: Any)
    if out.get("step") is not None:
        out["step"] = check_step(out["step"])
    if "tail" in out:
        out["tail"] = check_real("tail", out["tail"], lo=0.0, hi=1e-3, lo_open=True)
    if "lower" in out and not isinstance(out["lower"], (bool, np.bool_)):
        raise TypeError(f"lower must be True or False, got {type(out['lower']).__name__} "
                        f"({out['lower']!r})")
    return out


# ------------------------------------------------------------------ profile → PLD
def _along(delta: DeltaFn, d: Direction) -> ProfileFn:
    """The profile of one direction, ε ↦ δ(ε, d)."""
    return lambda e: delta(e, d)


def _laws_from_profile(delta: DeltaFn, step: float, tail: float, lower: bool,
                       ranges: dict[Direction, float] | None = None,
                       grids: dict[Direction, GridValues] | None = None,
                       largest: Callable[[Direction], float | None] | None = None
                       ) -> tuple[tuple[LossPMF, LossPMF], dict[Direction, float],
                                  dict[Direction, GridValues]]:
    """(forward, backward) PMFs from a two-directional profile function, the support
    ranges, and the grid values per direction (``grids``: values already computed for
    this very ``delta``, reused instead of evaluated again). Both directions' grids
    come from one profile call per direction (``grid_profiles``); ``largest`` (a
    guess at each direction's largest loss) speeds up ``profile_sup``."""
    if ranges is None:
        ranges = {d: profile_support(_along(delta, d), tail, step / 4) for d in (_FWD, _BWD)}
    grids = {} if grids is None else grids
    fns = (_along(delta, _FWD), _along(delta, _BWD))
    idx = {d: grid_indices(-ranges[d.reverse()], ranges[d], step) for d in (_FWD, _BWD)}
    live = {d: idx[d] if idx[d].size else None for d in (_FWD, _BWD)}
    todo = (live[_FWD] if _FWD not in grids else None, live[_BWD] if _BWD not in grids else None)
    if any(i is not None for i in todo):
        grids.update((d, g) for d, g in zip((_FWD, _BWD), grid_profiles(todo, step, fns)[0])
                     if g is not None)
    if lower:
        eta = 1e-3 * step
        shifted = grid_profiles((live[_FWD], live[_BWD]), step, fns, (-eta, eta))
    laws: list[LossPMF] = []
    for k, d in enumerate((_FWD, _BWD)):
        if live[d] is None:   # no finite loss at all (a non-private pair): all mass at +∞
            floor = float(delta(np.array([np.inf]), d)[0])
            laws.append(LossPMF.on_grid(step, 0, np.zeros(1), inf_mass=floor))
            continue
        vals, vals_t = grids[d]
        if lower:
            floor = float(delta(np.array([np.inf]), d)[0])
            minus, plus = shifted[0][k], shifted[1][k]
            if minus is None or plus is None:   # pragma: no cover - the grid was live
                raise InvariantError("the shifted grid values of a live grid are missing")
            near = (minus, plus, eta)
            laws.append(convex_minorant(idx[d], step, vals, vals_t, inf_floor=floor, near=near))
        else:
            guess = None if largest is None else (lambda d=d: largest(d))
            laws.append(connect_the_dots(idx[d], step, vals, vals_t, profile=fns[k],
                                         sup_guess=guess))
    return (laws[0], laws[1]), ranges, grids


def profile_to_pld(profile: PrivacyProfile, step: float | None = None,
                   tail: float = DEFAULT_TAIL, lower: bool = True, **unknown: Any) -> PLD:
    """Connect-the-dots PLD (upper) and convex-minorant PLD (lower) of a profile.

    The grid of each direction spans [−e_rev, e_dir], where e_d is the ε at which
    δ_d has fallen to ``tail`` above its value at +∞; the mass beyond goes to +∞
    (upper) or is lost (lower). ``step`` defaults to the grid of a profile that came
    from a PLD, else ``DEFAULT_STEP``. ``lower=False`` skips the optimistic side
    (half the work when only the sound upper bound is wanted).
    """
    opts = check_options("profile_to_pld", dict(unknown, step=step, tail=tail, lower=lower))
    return PLD(*profile_laws(profile, opts["step"], opts["tail"], opts["lower"]))


def profile_laws(profile: PrivacyProfile, step: float | None, tail: float, lower: bool
                 ) -> tuple[tuple[LossPMF, LossPMF], tuple[LossPMF, LossPMF] | None]:
    """(upper laws, lower laws or None) of ``profile_to_pld``, for options already
    checked by ``check_options`` (a pair's curve builders: ``pair.curve`` checked them)."""
    if step is None:
        laws = getattr(profile.upper, "laws", None)
        step = laws[0].step if laws is not None and laws[0].step else DEFAULT_STEP
    upper, ranges, grids = _laws_from_profile(profile.upper.delta, step, tail, lower=False,
                                              largest=getattr(profile.upper, "largest_loss", None))
    lower_laws = None
    if lower and profile.lower is not None:
        # one side serving both (an exact pair's profile): its grid values serve both
        same = profile.lower is profile.upper
        lower_laws, _, _ = _laws_from_profile(profile.lower.delta, step, tail, lower=True,
                                              ranges=ranges, grids=grids if same else None)
    return upper, lower_laws


def _pld_to_profile(pld: PLD, **options: Any) -> PrivacyProfile:
    check_options("pld→profile", options)
    return PrivacyProfile(LawSide(pld.upper), LawSide(pld.lower) if pld.lower else None)


def _pld_to_tradeoff(pld: PLD, **options: Any) -> TradeOff:
    check_options("pld→tradeoff", options)
    return TradeOff(VertexSide.from_laws(pld.upper),
                    VertexSide.from_laws(pld.lower, pessimistic=False) if pld.lower else None)


def _profile_to_tradeoff(profile: PrivacyProfile, **options: Any) -> TradeOff:
    return _pld_to_tradeoff(profile_to_pld(profile, **check_options("profile→tradeoff", options)))


def _tradeoff_to_profile(tradeoff: TradeOff, **options: Any) -> PrivacyProfile:
    check_options("tradeoff→profile", options)
    lower = FunctionSide(tradeoff.lower.delta) if tradeoff.lower is not None else None
    return PrivacyProfile(FunctionSide(tradeoff.upper.delta), lower)


def _pld_to_rdp(pld: PLD, **options: Any) -> RDP:
    """The CGFs of the PLD's laws, side by side. Labelled an upper bound, not exact: the
    pessimistic laws put their cut tails at +∞, so the upper side answers +∞ at every
    order (a valid, trivial bound) wherever they have mass there; the lower side, the
    CGF of the optimistic laws, is a lower bound of the truth."""
    check_options("pld→rdp", options)
    def cgf_of(laws: tuple[LossPMF, LossPMF], lower: bool = False) -> CGF:
        def law(d: Direction) -> LossPMF:
            return laws[0] if d is _FWD else laws[1]
        # D_1 = E[L] and D_∞ = max loss of the same laws: on the pessimistic side upper
        # bounds (+∞ with mass at +∞), on the optimistic side lower ones
        return CGF.of(lambda t, d: law(d).cgf(t),
                      limit=lambda order, d: law_limit(law(d), order, lower=lower))
    return RDP(cgf_of(pld.upper), cgf_of(pld.lower, lower=True) if pld.lower else None)


#: total mass below which an optimistic law no longer stands for a dominated pair
_LOST_MASS = 1e-12


def law_limit(law: LossPMF, order: float, *, lower: bool = False) -> float:
    """D_1 = E_P[L] (``mean``) or D_∞ = the largest loss (``max_loss``) of a loss law,
    the limits of its Rényi curve at α = 1 and α = ∞.

    On the lower side the law must be the loss law of a dominated pair (total mass 1)
    for these to be lower bounds (data processing); an optimistic law that lost mass
    to roundoff or a cut tail says only the trivial lower bound 0."""
    if lower and abs(law.total_mass - 1.0) > _LOST_MASS:
        return 0.0
    return law.mean() if order == 1.0 else max(law.max_loss, 0.0)


# -------------------------------------------------------------- RDP → profile
def improved_log_delta(k: np.ndarray, t: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """log δ = (α−1)(D_α − ε) + (α−1)log(1 − 1/α) − log α at α = 1 + t, D_α = K/t
    (Canonne, Kamath, Steinke 2020, Prop. 12; Asoodeh et al. 2021)."""
    a = 1.0 + t
    out: np.ndarray = k - t * eps + t * np.log1p(-1.0 / a) - np.log(a)
    return out


def improved_epsilon(k: np.ndarray, t: np.ndarray, log_delta: np.ndarray | float
                     ) -> np.ndarray:
    """ε = D_α + log(1 − 1/α) − (log δ + log α)/(α − 1) at α = 1 + t."""
    a = 1.0 + t
    out: np.ndarray = k / t + np.log1p(-1.0 / a) - (log_delta + np.log(a)) / t
    return out


def with_order_infinity(query: str, values: np.ndarray, out: np.ndarray,
                        sup: float | None) -> np.ndarray:
    """The order α = ∞ joined to a conversion's minimum over finite orders ``out``
    (δ at ε = ``values``, or ε at δ with ``values`` = log δ), given an upper bound
    ``sup`` on D_∞ (None or +∞: nothing to add). D_∞ = ess sup of the loss (van Erven
    and Harremoës, arXiv:1206.2459, Thm 6), so the loss never exceeds it: δ(ε) = 0 for
    ε ≥ D_∞, and ε(δ) ≤ D_∞ at every δ ≥ 0 — which no finite order certifies."""
    if sup is None or not sup < np.inf:
        return out
    joined: np.ndarray = (np.where(values >= sup, 0.0, out) if query == "delta"
                          else np.minimum(out, sup))
    return joined


def rdp_delta(cgf: Callable[[np.ndarray], np.ndarray], eps: np.ndarray,
              sup: float | None = None) -> np.ndarray:
    """δ(ε) ≤ inf_α e^{(α−1)(D_α−ε)}(1 − 1/α)^{α−1}/α, over continuous α > 1
    (``order_search.minimise_over_orders``), and over α = ∞ where ``sup`` (an upper
    bound on D_∞ of the direction) is finite: δ(ε) = 0 for ε ≥ D_∞
    (``with_order_infinity``)."""
    eps = np.asarray(eps, dtype=float)
    flat = np.ravel(eps)

    def score(k: np.ndarray, t: np.ndarray, i: np.ndarray) -> np.ndarray:
        return improved_log_delta(k, t, flat[i])
    out = np.exp(minimise_over_orders(cgf, score, flat.size)) if flat.size else flat
    out = with_order_infinity("delta", flat, np.where(flat == -np.inf, 1.0, out), sup)
    delta: np.ndarray = np.minimum(out, 1.0).reshape(eps.shape)
    return delta


def rdp_epsilon(cgf: Callable[[np.ndarray], np.ndarray], delta: np.ndarray,
                sup: float | None = None) -> np.ndarray:
    """ε(δ) = inf_α D_α + log(1 − 1/α) − (log δ + log α)/(α − 1), never below 0; the
    order α = ∞ joins the infimum where ``sup`` (an upper bound on D_∞) is finite:
    ε(δ) ≤ D_∞ at every δ ≥ 0, δ = 0 included (``with_order_infinity``)."""
    delta = np.asarray(delta, dtype=float)
    with np.errstate(divide="ignore"):
        flat = np.log(np.ravel(delta))

    def score(k: np.ndarray, t: np.ndarray, i: np.ndarray) -> np.ndarray:
        return improved_epsilon(k, t, flat[i])
    out = minimise_over_orders(cgf, score, flat.size) if flat.size else flat
    out = with_order_infinity("epsilon", flat, out, sup)
    eps: np.ndarray = np.maximum(out, 0.0).reshape(delta.shape)
    return eps


def _rdp_to_profile(rdp: RDP, **options: Any) -> PrivacyProfile:
    check_options("rdp→profile", options)
    # D_∞ of each direction where the curve declares it: the order α = ∞ of the
    # conversion, the only one that answers a pure-DP curve's δ = 0 exactly
    def delta_fn(eps: np.ndarray, d: Direction) -> np.ndarray:
        return rdp_delta(lambda t: rdp.upper(t, d), eps, rdp.upper.limit(np.inf, d))

    def eps_fn(delta: np.ndarray, d: Direction) -> np.ndarray:
        return rdp_epsilon(lambda t: rdp.upper(t, d), delta, rdp.upper.limit(np.inf, d))
    return PrivacyProfile(FunctionSide(delta_fn, eps_fn))


# ------------------------------------------------------------------ RDP ⇄ zCDP
def zcdp_envelope(cgf: Callable[[np.ndarray], np.ndarray], *, lower: bool = False) -> float:
    """ρ* = sup_{t>0} K(t)/(t(t+1)) (Su, Yang, Su, Wang, arXiv:2610.02414, §3), numerically
    (``order_search.envelope_sup``);
    +∞ with a ``RuntimeWarning`` when the sup is the t → ∞ limit. ``lower``: ``cgf``
    bounds the CGF from below, and the answer bounds ρ* from below (never +∞ for a
    finite curve: the largest ratio evaluated)."""
    rho, t_star = envelope_sup(cgf, lower=lower)
    if t_star == np.inf and not lower:
        # A sup reached only as t → ∞ cannot be certified from finite orders;
        # a value from below would under-report, so say so and return +∞.
        warnings.warn("zCDP envelope still rising at t = 1e5: its sup is the t → ∞ "
                      "limit, which finite orders only approach from below; returning "
                      "+inf (a pair with such a curve should supply ρ in closed form)",
                      RuntimeWarning, stacklevel=3)
    # ρ* ≥ 0 for every pair (K(t) ≥ 0 for t > 0: K(0) = 0, K'(0) = KL ≥ 0, K convex): a
    # negative sup is the roundoff of a CGF that is 0 (−2.4e-319 for Poisson subsampling
    # at q = 1e-300 of an identical pair), which ZCDP would refuse
    return max(rho, 0.0)


def _rdp_to_zcdp(rdp: RDP, **options: Any) -> ZCDP:
    check_options("rdp→zcdp", options)
    upper = (zcdp_envelope(_along_cgf(rdp.upper, _FWD)), zcdp_envelope(_along_cgf(rdp.upper, _BWD)))
    lower = None
    if rdp.lower is not None:
        # never above the upper side: the two envelopes take their sup at different
        # orders, and where K is roundoff-sized (permute-and-flip at ε = 1.4e-6: K(t) ~
        # 1e-19 at small t) the lower one's came out 11 % above, and ZCDP refused itself
        low = rdp.lower
        lower = tuple(min(zcdp_envelope(_along_cgf(low, d), lower=True), up)
                      for d, up in zip((_FWD, _BWD), upper))
    return ZCDP(upper, lower)


def _along_cgf(cgf: CGF, d: Direction) -> Callable[[np.ndarray], np.ndarray]:
    """The CGF of one direction, t ↦ K(t, d)."""
    return lambda t: cgf(t, d)


def _zcdp_to_rdp(z: ZCDP, **options: Any) -> RDP:
    """D_α ≤ ξ + ρα, i.e. K(t) ≤ t(ξ + ρ(1 + t)) (Bun and Steinke 2016,
    arXiv:1605.02065, Def. 1.2; ξ = 0 for plain zCDP), with its limits: D_1 ≤ ξ + ρ and
    D_∞ ≤ ξ where ρ = 0, else +∞."""
    check_options("zcdp→rdp", options)
    rho = {_FWD: z.upper[0], _BWD: z.upper[1]}
    xi = {_FWD: z.xi[0], _BWD: z.xi[1]}

    def limit(order: float, d: Direction) -> float:
        return xi[d] + rho[d] if order == 1.0 else (xi[d] if rho[d] == 0 else np.inf)
    if z.xi == (0.0, 0.0):   # plain zCDP: the same expression as before ξ existed
        return RDP(CGF.of(lambda t, d: rho[d] * t * (t + 1.0), limit=limit))
    return RDP(CGF.of(lambda t, d: t * (xi[d] + rho[d] * (t + 1.0)), limit=limit))


_EXACT, _UPPER = Exactness.EXACT, Exactness.UPPER

#: The core's edges, as a plugin's ``register`` takes them: (source, target, func,
#: exactness, name). Built in: a plugin edge is used only where these give no path.
CONVERTERS: tuple[tuple[type, type, Callable[..., Any], Exactness, str], ...] = (
    (PLD, PrivacyProfile, _pld_to_profile, _EXACT, "pld→profile"),
    (PrivacyProfile, PLD, profile_to_pld, _EXACT, "profile→pld (connect-the-dots)"),
    (PLD, TradeOff, _pld_to_tradeoff, _EXACT, "pld→tradeoff"),
    (PrivacyProfile, TradeOff, _profile_to_tradeoff, _EXACT, "profile→tradeoff"),
    (TradeOff, PrivacyProfile, _tradeoff_to_profile, _EXACT, "tradeoff→profile"),
    (PLD, RDP, _pld_to_rdp, _UPPER, "pld→rdp"),
    (RDP, ZCDP, _rdp_to_zcdp, _UPPER, "rdp→zcdp (envelope)"),
    (RDP, PrivacyProfile, _rdp_to_profile, _UPPER, "rdp→profile (improved conversion)"),
    (ZCDP, RDP, _zcdp_to_rdp, _UPPER, "zcdp→rdp"),
    (CharacteristicFunction, PLD, characteristic_to_pld, _UPPER, "characteristic→pld (inversion)"),
    # labelled a bound, not exact, although φ = exp(K(it)) is exact where it is defined:
    # only RDP curves whose every term is an exact closed form continue analytically, so
    # the graph must never route RDP → PLD through φ (a tie with rdp→profile→pld)
    (RDP, CharacteristicFunction, rdp_to_characteristic, _UPPER,
     "rdp→characteristic (analytic continuation)"),
)

#: query → the kind whose own formula answers it (``Curve.answered_by`` converts a
#: curve of another kind to it)
HOME_KINDS: dict[str, type] = {"delta": PrivacyProfile, "epsilon": PrivacyProfile,
                               "beta": TradeOff, "renyi": RDP, "rho": ZCDP}
