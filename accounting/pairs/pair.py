"""Ordered pairs (P, Q) of output distributions: the object every curve derives from.

A pair answers both directions (``Direction.FORWARD`` = P‖Q, ``BACKWARD`` = Q‖P). In
the spirit of ``scipy.stats.rv_continuous``, a subclass supplies the primitives it
knows and inherits the rest. Every primitive a plugin may provide is declared here,
with its default; nothing in the library looks for undeclared attributes.

=========================  ============================================================
primitive                  default when the pair does not provide it
=========================  ============================================================
``_profile(eps, d)``       required (abstract): δ_d(ε), vectorised, ε = ±∞ allowed
                           (δ(−∞) = 1, δ(+∞) = mass at +∞); exact, or (``exact =
                           False``) the profile of a pair dominating (P, Q)
``_profile_lower(eps, d)`` ``_profile`` (exact pairs); else a dominated pair's profile
``_cgf(t, d)``             ``NotImplementedError``: K(t) = log E[e^{tL}]; RDP then
                           comes from the PLD
``cgf_exactness()``        ``Exactness.EXACT``: what ``_cgf`` is (exact, an upper bound
                           or numerical)
``cgf_lower(t, d)``        ``NotImplementedError``: a lower Rényi curve; without it an
                           exact pair with an exact ``_cgf`` uses ``_cgf`` for both sides
``cgf_analytic(z, d)``     ``NotImplementedError``: K(z) at complex orders z, the analytic
                           continuation of an exact ``_cgf`` (φ(t) = exp(K(it)), the
                           characteristic function; ``curves.characteristic``)
``characteristic_decay(d)`` ``None``: a rate a with |φ(s)| ≤ e^{−a s²} (Gaussian: μ²/2)
``_beta(alpha, d)``        ``NotImplementedError``: the trade-off function in closed form
``_rho(d)``                ``None``: the exact zCDP ρ* = sup_t K(t)/(t(t+1))
``rho_bound(d)``           ``None``: an upper bound on ρ* where the envelope cannot
                           certify it
``_self_compose(count)``   ``None``: a closed-form pair for the count-fold product
``gdp_mu()``               ``None``: μ where the pair is exactly the μ-GDP Gaussian pair
                           (N(μ, 1), N(0, 1)) in both directions (GDP filters, groups)
``noise_density()``        ``NotImplementedError``: the pair as additive noise, (Z + Δ, Z),
                           a ``NoiseDensity`` (log-density, sensitivity, width, span)
``sample(rng, shape)``     ``NotImplementedError``: i.i.d. draws (x ~ P, y ~ Q), each
                           of ``shape``, for auditors
``loss_atoms(d)``          ``NotImplementedError``: the finite atoms (losses, masses)
                           of the direction's loss law, whose remainder (besides the
                           mass at +∞) has no atoms; the PLD then places them on the
                           grid exactly and discretises only the remainder's profile
=========================  ============================================================

The primitives whose default raises are *optional*: ``provides(name)`` says whether
the pair supplies one (names in ``OPTIONAL_PRIMITIVES``). By default a pair provides
what its class overrides; a wrapper whose capabilities follow its base's (Poisson
subsampling) overrides ``provides``. Callers ask ``provides`` first and never call a
primitive on a probe value to find out.

Every curve then follows from ``accounting.pairs.derive`` (``pair.curve(Kind)``).
"""

from __future__ import annotations

import abc
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import attrs
import numpy as np

from accounting.curves.characteristic import law_log_mgf
from accounting.curves.converters import law_limit
from accounting.curves.curve import Curve
from accounting.numerics.loss import LossPMF
from accounting.validation import check_array
from accounting.vocabulary import Bound, Direction, Exactness, as_bound, as_direction

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["Pair", "LawPair", "NoiseDensity", "OPTIONAL_PRIMITIVES", "discrete_pair",
           "identical_pair", "disjoint_pair", "corner_pair", "not_provided", "FinitePair",
           "CurveT", "of_kind"]

#: a curve kind: ``curve(kind)`` returns an instance of ``kind`` (``curve(PLD)`` a ``PLD``)
CurveT = TypeVar("CurveT", bound=Curve)


def of_kind(kind: type[CurveT], curve: object) -> CurveT:
    """``curve``, checked to be a ``kind``: the routes of ``curve(kind)`` dispatch on
    ``kind`` at run time, which a type checker cannot follow; a curve of another kind
    (a plugin's builder returning the wrong type) is refused here, not returned."""
    if not isinstance(curve, kind):
        raise TypeError(f"curve({kind.__name__}) was asked, but its route built a "
                        f"{type(curve).__name__}")
    return curve

#: optional primitives of a pair (``Pair.provides``), by name → the method implementing it
OPTIONAL_PRIMITIVES: dict[str, str] = {
    "cgf": "_cgf",
    "cgf_lower": "cgf_lower",
    "cgf_analytic": "cgf_analytic",
    "beta": "_beta",
    "noise_density": "noise_density",
    "sample": "sample",
    "loss_atoms": "loss_atoms",
}


class NoiseDensity(NamedTuple):
    """A pair seen as additive noise: P = law of Z + ``sensitivity``, Q = law of Z.

    ``log_density`` is Z's log-density (up to a constant, vectorised), ``width`` a
    typical width of Z (places quadrature panels) and ``span`` = (lo, hi) an interval
    outside which both densities are negligible (e^{−745} below their peak)."""

    log_density: Callable[[np.ndarray], np.ndarray]
    sensitivity: float
    width: float
    span: tuple[float, float]


def not_provided(owner: object, primitive: str) -> NotImplementedError:
    """The error an optional primitive raises when the pair does not provide it."""
    describe = owner.describe() if isinstance(owner, Pair) else type(owner).__name__
    return NotImplementedError(
        f"{describe} does not provide the primitive {primitive!r} (check "
        f"provides({primitive!r}) first; see accounting.pairs.pair)")


def overrides_method(cls: type, method: str, base: type) -> bool:
    """Whether ``cls`` (a subclass of ``base``) defines ``method`` below ``base``."""
    for klass in cls.__mro__:
        if method in vars(klass):
            return klass is not base
    return False


def provides_by_override(obj: object, primitive: str, table: dict[str, Any], base: type,
                         what: str = "optional primitives") -> bool:
    """Whether ``obj`` supplies the optional ``primitive`` (a key of ``table``, which maps
    it to its method name): whether its class overrides that method of ``base``."""
    try:
        method = table[primitive]
    except (KeyError, TypeError):
        raise ValueError(f"unknown primitive {primitive!r}; the {what} are "
                         f"{', '.join(table)}") from None
    return overrides_method(type(obj), method, base)


class Pair(abc.ABC):
    """One ordered pair (P, Q). Subclasses implement ``_profile`` at least."""

    #: whether ``_profile`` is exact (else it is an upper bound, ``_profile_lower`` a lower)
    exact: bool = True
    #: whether Q‖P is P‖Q up to a relabelling of outcomes (both directions coincide)
    symmetric: bool = False

    # ------------------------------------------------------------ primitives
    @abc.abstractmethod
    def _profile(self, eps: np.ndarray, direction: Direction) -> np.ndarray:
        """δ_direction(ε) for an array of ε (±∞ allowed)."""

    def _profile_lower(self, eps: np.ndarray, direction: Direction) -> np.ndarray:
        """A lower profile (that of a pair (P, Q) dominates); ``_profile`` by default."""
        return self._profile(eps, direction)

    def _cgf(self, t: np.ndarray, direction: Direction) -> np.ndarray:
        """K(t) = log E_P[e^{tL}] (forward) or log E_Q[e^{−tL}] (backward), vectorised;
        optional (``provides("cgf")``)."""
        raise not_provided(self, "cgf")

    def cgf_lower(self, t: np.ndarray, direction: Direction) -> np.ndarray:
        """A lower bound (or the numerical value) of K(t); optional
        (``provides("cgf_lower")``)."""
        raise not_provided(self, "cgf_lower")

    def cgf_analytic(self, z: np.ndarray, direction: Direction) -> np.ndarray:
        """K(z) = log E[e^{zL}] at complex z (complex array), the analytic continuation
        of the exact CGF, so that φ(t) = exp(K(it)); optional
        (``provides("cgf_analytic")``)."""
        raise not_provided(self, "cgf_analytic")

    def characteristic_decay(self, direction: Direction) -> float | None:
        """A rate a > 0 with |φ(s)| ≤ e^{−a s²} for every real s, or None."""
        return None

    def _beta(self, alpha: np.ndarray, direction: Direction) -> np.ndarray:
        """The trade-off function β(α) in closed form; optional (``provides("beta")``)."""
        raise not_provided(self, "beta")

    def _rho(self, direction: Direction) -> float | None:
        """The exact zCDP ρ* in one direction, or None if there is no closed form."""
        return None

    def _self_compose(self, count: int) -> Pair | None:
        """A closed-form pair for the count-fold product, or None."""
        return None

    def gdp_mu(self) -> float | None:
        """μ where this pair is exactly μ-GDP in both directions — its trade-off is
        G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) (Dong, Roth, Su, arXiv:1905.02383, Def. 2.6), as
        for a Gaussian mechanism with μ = Δ/σ — else None (the default)."""
        return None

    def gdp_pair(self, mu: float) -> Pair | None:
        """The μ-GDP pair of this pair's family with the given ``mu`` (for a pair whose
        ``gdp_mu`` is not None), or None: what an exact composition of μ-GDP pairs
        becomes (``ComposedPair.closed_form``)."""
        return None

    def _renyi_limit(self, order: float, direction: Direction,
                     side: Bound = Bound.UPPER) -> float | None:
        """D_1 (order 1, KL) or D_∞ (order ∞) of one direction on one side of the
        bracket, where the pair knows it in closed form; None otherwise."""
        return None

    def rho_bound(self, direction: Direction) -> float | None:
        """An upper bound on ρ* used when the numerical envelope cannot certify it."""
        return None

    def cgf_exactness(self) -> Exactness:
        """What ``_cgf`` is: exact (the default) or an upper bound (``Exactness.UPPER``)."""
        return Exactness.EXACT

    def noise_density(self) -> NoiseDensity:
        """The pair as additive noise (Z + Δ, Z); optional (``provides("noise_density")``)."""
        raise not_provided(self, "noise_density")

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...] | int
               ) -> tuple[np.ndarray, np.ndarray]:
        """i.i.d. draws x ~ P and y ~ Q, each an array of ``shape``, from the numpy
        Generator ``rng`` (for auditors); optional (``provides("sample")``)."""
        raise not_provided(self, "sample")

    def loss_atoms(self, direction: Direction) -> tuple[np.ndarray, np.ndarray]:
        """The atoms of one direction's loss law: (losses, masses), finite losses and
        their masses under the direction's first distribution (forward: L = log dP/dQ
        under P; backward: −L under Q), every atom of the law but the one at +∞; the
        rest of the law is atomless. Optional (``provides("loss_atoms")``): a profile
        built from finitely many values cannot tell where inside a grid cell an atom
        sits, so the optimistic PLD loses O(step) of δ next to one; declared atoms are
        placed on the grid exactly instead (``accounting.numerics.atoms``)."""
        raise not_provided(self, "loss_atoms")

    def provides(self, primitive: str) -> bool:
        """Whether this pair supplies the optional ``primitive`` (a key of
        ``OPTIONAL_PRIMITIVES``). Default: whether its class overrides the method."""
        return provides_by_override(self, primitive, OPTIONAL_PRIMITIVES, Pair)

    # ----------------------------------------------------------- public API
    def profile(self, eps: np.ndarray | float, direction: Direction | str = "max",
                bound: Bound | str = "upper") -> np.ndarray:
        """δ(ε) in one direction or the max of both; ``bound='lower'`` (or
        ``Bound.LOWER``) for the optimistic side of a non-exact pair."""
        eps = check_array("eps", eps, allow_inf=True)
        comps = as_direction(direction).components
        fn = self._profile if as_bound(bound) is Bound.UPPER else self._profile_lower
        result: np.ndarray = np.max([fn(eps, d) for d in comps], axis=0)
        return result

    def curve(self, kind: type[CurveT], *, registry: Registry | None = None,
              **options: Any) -> CurveT:
        """This pair's curve of the given kind (``PLD``, ``PrivacyProfile``, …); a kind
        a plugin contributes, and the conversions on the way, from ``registry``
        (default: the process-wide one)."""
        from accounting.pairs.derive import curve_of_pair  # derive imports this module
        return of_kind(kind, curve_of_pair(self, kind, registry=registry, **options))

    def self_compose(self, count: int) -> Pair:
        """Deprecated: ``accounting.compose((pair, count))``, the same pair (the
        count-fold product, in closed form where the pair has one)."""
        from accounting.pairs.composed import compose  # it imports this module
        warnings.warn("pair.self_compose(n) is deprecated and will be removed in the next "
                      "release; use accounting.compose((pair, n))", DeprecationWarning,
                      stacklevel=2)
        out = compose((self, count))
        assert isinstance(out, Pair)   # a composition of pairs is a pair
        return out

    def describe(self) -> str:
        return type(self).__name__


@attrs.frozen(eq=False)
class LawPair(Pair):
    """A pair given by its directional loss laws: exact if upper and lower coincide.

    ``upper`` and ``lower`` are (forward, backward) ``LossPMF``s; the upper laws must
    belong to pairs dominating (P, Q) in each direction, the lower to dominated ones.
    """

    upper: tuple[LossPMF, LossPMF]
    lower: tuple[LossPMF, LossPMF]
    label: str = "LawPair"
    symmetric: bool = attrs.field(default=False, kw_only=True)

    @property
    def exact(self) -> bool:  # type: ignore[override]
        return all(u is l for u, l in zip(self.upper, self.lower))

    def law(self, direction: Direction | str, side: Bound | str = "upper") -> LossPMF:
        """The loss law of one concrete direction on one side of the bracket."""
        d = as_direction(direction)
        if d is Direction.MAX:
            raise ValueError("a loss law needs direction 'forward' or 'backward', got 'max'")
        laws = self.upper if as_bound(side, "side") is Bound.UPPER else self.lower
        return laws[0] if d is Direction.FORWARD else laws[1]

    def _profile(self, eps: Any, direction: Any) -> Any:
        return self.law(direction, "upper").delta(eps)

    def _profile_lower(self, eps: Any, direction: Any) -> Any:
        return self.law(direction, "lower").delta(eps)

    def _cgf(self, t: Any, direction: Any) -> Any:
        return self.law(direction, "upper").cgf(t)

    def cgf_lower(self, t: Any, direction: Any) -> Any:
        return self.law(direction, "lower").cgf(t)

    def cgf_analytic(self, z: Any, direction: Any) -> Any:
        """log Σ m e^{zℓ} over the upper law's finite atoms (exact laws only)."""
        if not self.exact:
            raise not_provided(self, "cgf_analytic")
        return law_log_mgf(self.law(direction, "upper"), z)

    def provides(self, primitive: str) -> bool:
        if primitive == "cgf_analytic":
            return self.exact
        return super().provides(primitive)

    def _renyi_limit(self, order: Any, direction: Any, side: Any=Bound.UPPER) -> Any:
        """E[L] or the largest loss of the law (``curves.converters.law_limit``)."""
        return law_limit(self.law(direction, side), order,
                         lower=as_bound(side, "side") is Bound.LOWER)

    def describe(self) -> str:
        return self.label


@attrs.frozen(eq=False)
class FinitePair(LawPair):
    """The exact pair of two distributions ``p``, ``q`` on the outcomes 0, …, n − 1."""

    p: np.ndarray = attrs.field(default=None, kw_only=True, repr=False)
    q: np.ndarray = attrs.field(default=None, kw_only=True, repr=False)

    def sample(self, rng: Any, shape: Any) -> Any:
        """Outcome indices: x ~ p and y ~ q."""
        return (rng.choice(self.p.size, size=shape, p=self.p),
                rng.choice(self.q.size, size=shape, p=self.q))


def discrete_pair(p: np.ndarray, q: np.ndarray, label: str = "discrete") -> FinitePair:
    """The exact pair of two distributions on a finite set (probability vectors).

    Forward law: atoms log(p_i/q_i) with P-mass p_i, mass at +∞ = Σ_{q_i=0} p_i;
    backward: atoms log(q_i/p_i) with Q-mass q_i, mass at +∞ = Σ_{p_i=0} q_i.
    """
    p = check_array("p", p, lo=0.0, hi=1.0)
    q = check_array("q", q, lo=0.0, hi=1.0)
    if p.shape != q.shape or p.ndim != 1:
        raise ValueError("p and q must be 1-d probability vectors of the same length")
    for name, v in (("p", p), ("q", q)):
        if abs(v.sum() - 1.0) > 1e-9:
            raise ValueError(f"{name} must sum to 1, got {v.sum()!r}")
    both = (p > 0) & (q > 0)
    with np.errstate(divide="ignore"):
        loss = np.log(p[both]) - np.log(q[both])
    fwd = LossPMF.from_atoms(loss, p[both], float(p[(q == 0) & (p > 0)].sum()))
    bwd = LossPMF.from_atoms(-loss, q[both], float(q[(p == 0) & (q > 0)].sum()))
    return FinitePair((fwd, bwd), (fwd, bwd), label, p=p / p.sum(), q=q / q.sum())


def corner_pair(sensitivity: float, scale: float, label: str) -> FinitePair | None:
    """The pair of an additive-noise mechanism at a degenerate corner, else None:
    sensitivity 0 → ``identical_pair`` (no privacy cost, whatever the noise);
    noise scale 0 → ``disjoint_pair`` (no noise: non-private, ε = ∞)."""
    if sensitivity == 0:
        return identical_pair(f"{label} (sensitivity 0: no privacy loss)")
    if scale == 0:
        return disjoint_pair(f"{label} (no noise: non-private)")
    return None


def identical_pair(label: str = "no privacy loss") -> FinitePair:
    """P = Q: no privacy cost (δ(ε) = (1 − e^ε)₊, ε(δ) = 0, β(α) = 1 − α, K = 0).
    What a mechanism is at a degenerate corner where its output ignores the record
    (sensitivity 0, sampling rate 0)."""
    return discrete_pair(np.array([1.0]), np.array([1.0]), label)


def disjoint_pair(label: str = "non-private") -> FinitePair:
    """P ⊥ Q: no privacy at all (δ(ε) = 1, ε(δ) = ∞ for δ < 1, β ≡ 0, K(t) = ∞ for
    t > 0). What an additive-noise mechanism is without noise (scale 0)."""
    return discrete_pair(np.array([1.0, 0.0]), np.array([0.0, 1.0]), label)
