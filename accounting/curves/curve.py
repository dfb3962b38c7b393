"""What every privacy curve shares: the five queries, provenance, bracket sides,
``to``, composition and a short repr.

Each curve describes one ordered pair in both directions and carries an ``upper``
side (sound: it reports at least the true privacy loss — larger δ and ε, smaller β,
larger Rényi divergence) and, where one is known, a ``lower`` side. Exact curves have
both sides equal. ``provenance`` records how the curve was obtained and whether the
path was exact, a bound, or numerical (``Exactness``).

Every kind answers δ(ε), ε(δ), β(α), D_α and ρ (``Curve``): by its own formula for
the queries in its ``NATIVE`` set, by conversion to the kind that has the formula
otherwise; ``explain(query)`` says which.
"""

from __future__ import annotations

import numbers
import types
import typing
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import attrs
import numpy as np

from accounting.validation import check_array
from accounting.vocabulary import Bound, Direction, Exactness, as_bound, as_direction

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["Exactness", "Provenance", "Curve", "QUERIES", "directional_max", "as_kind",
           "check_no_rtol", "deprecated_operator"]


def _check_path(path: tuple[object, ...]) -> None:
    for i, step in enumerate(path):
        if not isinstance(step, str):
            raise TypeError(f"Provenance.path[{i}] must be a string (a source or converter "
                            f"name), got {type(step).__name__} ({step!r:.40})")


def _as_path(path: str | Iterable[str]) -> tuple[str, ...]:
    """A path given as one step (a string) or a sequence of them, as a tuple."""
    return (path,) if isinstance(path, str) else tuple(path)


@attrs.frozen
class Provenance:
    """How a curve came to be: the source and the converters applied, and the label."""

    exactness: Exactness = attrs.field(default=Exactness.EXACT,
                                       validator=attrs.validators.instance_of(Exactness))
    path: tuple[str, ...] = attrs.field(
        default=(), converter=_as_path,
        validator=lambda _, __, path: _check_path(path))

    def then(self, step: str, exactness: Exactness) -> Provenance:
        combined = self.exactness.then(exactness)
        if combined is None:
            raise ValueError(f"cannot chain a {self.exactness.value} with a {exactness.value}")
        return Provenance(combined, self.path + (step,))

    def join(self, other: Provenance) -> Provenance:
        """The provenance of a composition of two curves (the weaker label)."""
        worst = self.exactness.then(other.exactness)
        if worst is None:
            raise ValueError(f"cannot compose a {self.exactness.value} curve with a "
                             f"{other.exactness.value} one")
        path = self.path if self.path == other.path else self.path + other.path
        return Provenance(worst, path)

    def __str__(self) -> str:
        route = " → ".join(self.path) if self.path else "source"
        return f"{self.exactness.value} ({route})"


def directional_max(fn: Callable[[Direction], np.ndarray], direction: Direction | str) -> np.ndarray:
    """max over the concrete directions of ``direction`` of fn(d)."""
    comps = as_direction(direction).components
    return np.max([fn(d) for d in comps], axis=0) if len(comps) > 1 else fn(comps[0])


def _side_spec(cls: type) -> dict[str, Any]:
    """{side name: its declared type, Optional unwrapped} from a curve class's
    annotations (cached): what ``Curve.__attrs_post_init__`` checks against."""
    spec = _SPECS.get(cls)
    if spec is None:
        try:
            hints = typing.get_type_hints(cls)
        except (NameError, TypeError):   # a plugin's curve with unresolvable annotations
            hints = {}
        spec = {}
        # (the hints are typing objects of any form: Any)
        for name in ("upper", "lower"):
            hint = hints.get(name)
            if typing.get_origin(hint) in (typing.Union, types.UnionType):   # X | None
                hint = next(a for a in typing.get_args(hint) if a is not type(None))
            spec[name] = hint
        _SPECS[cls] = spec
    return spec


_SPECS: dict[type, dict[str, Any]] = {}


def _check_value(where: str, value: Any, hint: Any) -> None:
    """TypeError unless ``value`` fits the declared side type ``hint``: a tuple of the
    declared length and entry types, an instance of a class, or an object with the
    methods of a ``Protocol`` (a curve side such as ``ProfileSide``)."""
    if hint is None or hint is Any:
        return
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, tuple) or len(value) != len(args):
            raise TypeError(f"{where} must be a (forward, backward) tuple, "
                            f"got {type(value).__name__} ({value!r:.80})")
        for label, v, a in zip(("forward", "backward"), value, args):
            _check_value(f"{where} {label}", v, a)
        return
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{where} must be a real number, got {type(value).__name__} "
                            f"({value!r:.80})")
        return
    if getattr(hint, "_is_protocol", False):
        missing = [m for m in ("delta", "epsilon", "beta", "cgf")
                   if callable(getattr(hint, m, None)) and not callable(getattr(value, m, None))]
        if missing:
            raise TypeError(f"{where} must be a {hint.__name__} (with methods "
                            f"{', '.join(missing)}), got {type(value).__name__} ({value!r:.80})")
        return
    if isinstance(hint, type) and not isinstance(value, hint):
        raise TypeError(f"{where} must be a {hint.__name__}, got {type(value).__name__} "
                        f"({value!r:.80})")


#: The five queries every curve answers: δ(ε), ε(δ), β(α), D_α and ρ.
QUERIES = ("delta", "epsilon", "beta", "renyi", "rho")


def _check_query(query: str) -> str:
    if query not in QUERIES:
        raise ValueError(f"query must be one of {', '.join(QUERIES)}, got {query!r:.40}")
    return query


def headline(get: Callable[[], Any]) -> str:
    """A headline number for a repr, ``get()`` to 4 significant digits; '?' if it
    cannot be had (a repr never raises)."""
    try:
        return f"{float(np.ravel(get())[0]):.4g}"
    except Exception:
        return "?"


def check_no_rtol(curve: object, rtol: object) -> None:
    """A ValueError unless ``rtol`` is None: ``rtol`` asks for a bracket refined to a
    relative width, which only something that can recompute at a finer grid (the
    ``Accountant``) can give; a curve's bracket is what it holds."""
    if rtol is not None:
        raise ValueError(f"rtol must be None for a {type(curve).__name__}, got {rtol!r}: a "
                         f"curve cannot refine its bracket; use Accountant.epsilon_interval"
                         f"(delta, rtol=...) or build the curve at a smaller step")


def deprecated_operator(old: str, new: str) -> None:
    """Warn (``DeprecationWarning``, at the caller of the operator) that the composition
    route ``old`` goes in the next release and ``new`` replaces it."""
    import warnings  # only on the deprecated paths
    warnings.warn(f"{old} is deprecated and will be removed in the next release; use {new}",
                  DeprecationWarning, stacklevel=3)


#: a curve kind (``to``: the kind asked for is the kind answered)
_KindT = TypeVar("_KindT", bound="Curve")


@attrs.frozen(eq=False, repr=False)
class Curve:
    """Base class: the five queries, conversion by ``to``, bracket sides, composition,
    a short ``repr``, and a check of the contents when built (each side against its
    declared type, the provenance).

    **Queries.** Every kind answers ``delta(epsilon)``, ``epsilon(delta)``,
    ``beta(alpha)``, ``renyi(alpha)`` (D_α, α ≥ 1 including α = ∞) and ``rho()`` (zCDP), each with
    ``direction=`` (``"forward"`` P‖Q, ``"backward"`` Q‖P, ``"max"`` the pessimistic
    summary of both) and ``bound=`` (``"upper"``: the sound side, the default —
    never smaller δ, ε, D_α, ρ and never larger β than the truth; ``"lower"``: the
    optimistic side, where the curve has one), plus ``*_interval`` forms returning
    (smaller, larger) values. A kind answers the queries in its ``NATIVE`` set by its
    own formula; any other query by converting itself (``to``, default options, once
    — the result is cached on the curve) to the kind that has the formula
    (``PrivacyProfile`` for δ and ε, ``TradeOff`` for β, ``RDP`` for D_α, ``ZCDP``
    for ρ). ``explain(query)`` gives the ``Provenance`` of the curve that answered:
    the converters on its path and whether the answer is exact, a bound, or
    numerical. Answers themselves stay plain floats and arrays. The ``*_interval``
    forms of δ and ε take ``rtol`` too, for one signature with the ``Accountant``
    (which refines its grid to meet it); a curve is fixed and accepts only ``None``.

    **Composition.** ``accounting.compose(a, b, (c, n))`` is the users' route; it
    applies each kind's rule, ``compose`` and ``self_compose``. The operators
    ``a + b`` and ``a * n`` are deprecated (DeprecationWarning) for one release.
    """

    #: the queries this kind answers by its own formula (the others: by conversion)
    NATIVE: ClassVar[frozenset[str]] = frozenset()
    #: whether ``epsilon`` accepts δ = 0 (pure DP), which only loss laws can answer
    PURE_DP: ClassVar[bool] = False

    _answerers: dict[type, Curve] = attrs.field(factory=dict, init=False, repr=False, eq=False)
    # (the registry as ``object``: the kinds' annotations are resolved at run time, by
    # ``_side_spec``, where ``Registry`` is not imported)
    _private_answerers: dict[tuple[type, int], tuple[object, Curve]] = attrs.field(
        factory=dict, init=False, repr=False, eq=False)

    if TYPE_CHECKING:
        # Every kind declares these as attrs fields of its own: ``provenance``, and the
        # sides ``upper`` and ``lower`` (None when absent), each of the kind's own side
        # type (a kind without sides, ``CharacteristicFunction``, declares neither).
        @property
        def provenance(self) -> Provenance: ...

        @property
        def upper(self) -> object: ...

        @property
        def lower(self) -> object: ...

    def __attrs_post_init__(self) -> None:
        name = type(self).__name__
        names = {a.name for a in attrs.fields(type(self))}
        if "provenance" in names and not isinstance(self.provenance, Provenance):
            raise TypeError(f"{name}.provenance must be a Provenance, got "
                            f"{type(self.provenance).__name__}")
        spec = _side_spec(type(self))
        if "upper" in names:
            if self.upper is None:
                raise TypeError(f"{name} needs an upper side, got None")
            _check_value(f"{name}.upper", self.upper, spec["upper"])
        if "lower" in names and self.lower is not None:
            _check_value(f"{name}.lower", self.lower, spec["lower"])
        self._validate()

    def _validate(self) -> None:
        """Kind-specific checks of the contents beyond the side types (a ValueError
        naming what is inconsistent); none by default."""

    def _side(self, bound: Bound | str, query: str | None = None) -> Any:
        b = as_bound(bound)
        what = f"{type(self).__name__}.{query}" if query else f"this {type(self).__name__}"
        if b is Bound.UPPER and self.provenance.exactness is Exactness.LOWER:
            raise ValueError(f"{what}: this curve came from a lower-bound conversion "
                             f"({self.provenance}); only bound='lower' queries are meaningful")
        side = getattr(self, b.value)
        if side is None:
            raise ValueError(f"{what} has no {b.value} side "
                             f"(it came from a one-sided bound: {self.provenance})")
        return side

    # ----------------------------------------------------------------- queries
    def delta(self, epsilon: np.ndarray | float, direction: Direction | str = "max",
              bound: Bound | str = "upper") -> np.ndarray:
        """δ(ε), vectorised over ε (any real ε; ±∞ allowed); ``max``: the larger δ."""
        eps = check_array("epsilon", epsilon, allow_inf=True)
        out: np.ndarray = self._query("delta", eps, direction, bound)
        return out

    def epsilon(self, delta: np.ndarray | float, direction: Direction | str = "max",
                bound: Bound | str = "upper") -> np.ndarray:
        """The smallest ε ≥ 0 with δ(ε) ≤ delta, vectorised over delta in (0, 1)
        (δ = 0, pure DP, too where the kind carries loss laws: ``PURE_DP``)."""
        dl = check_array("delta", delta, lo=0.0, hi=1.0, lo_open=not self.PURE_DP,
                         hi_open=True)
        out: np.ndarray = self._query("epsilon", dl, direction, bound)
        return out

    def beta(self, alpha: np.ndarray | float, direction: Direction | str = "max",
             bound: Bound | str = "upper") -> np.ndarray:
        """β = T(α) for α in [0, 1]: ``forward`` T(P, Q), ``backward`` T(Q, P), ``max``
        their pointwise min (the pessimistic summary). The sound side is the smaller β."""
        a = check_array("alpha", alpha, lo=0.0, hi=1.0)
        out: np.ndarray = self._query("beta", a, direction, bound)
        return out

    def renyi(self, alpha: np.ndarray | float, direction: Direction | str = "max",
              bound: Bound | str = "upper") -> np.ndarray:
        """The Rényi divergence D_α for real orders α ≥ 1, vectorised; α = 1 is the KL
        divergence E_P[L] and α = ∞ the max divergence ess sup L (the pure-DP ε; +∞
        where the loss is unbounded or no finite bound is known), see ``RDP``."""
        a = check_array("alpha", alpha, lo=1.0, allow_inf=True)
        out: np.ndarray = self._query("renyi", a, direction, bound)
        return out

    def rho(self, direction: Direction | str = "max", bound: Bound | str = "upper") -> float:
        """The zCDP parameter ρ = sup_{α>1} D_α/α (Bun and Steinke 2016,
        arXiv:1605.02065, Def. 1.1)."""
        return float(self._query("rho", None, direction, bound))

    def rdp(self, alphas: np.ndarray | float, direction: Direction | str = "max",
            bound: Bound | str = "upper") -> np.ndarray:
        """D_α for an array of real orders α ≥ 1 (the same as ``renyi``)."""
        return self.renyi(alphas, direction, bound)

    def delta_interval(self, epsilon: np.ndarray | float, direction: Direction | str = "max",
                       *, rtol: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bracket of δ(ε). ``rtol`` (refine until upper − lower ≤
        rtol·upper) is the ``Accountant``'s: a curve is fixed and cannot refine, so
        it accepts ``rtol=None`` only (``check_no_rtol``)."""
        check_no_rtol(self, rtol)
        return self.delta(epsilon, direction, Bound.LOWER), self.delta(epsilon, direction, Bound.UPPER)

    def epsilon_interval(self, delta: np.ndarray | float, direction: Direction | str = "max",
                         *, rtol: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bracket of ε(δ); ``rtol`` as for ``delta_interval``."""
        check_no_rtol(self, rtol)
        return (self.epsilon(delta, direction, Bound.LOWER),
                self.epsilon(delta, direction, Bound.UPPER))

    def beta_interval(self, alpha: np.ndarray | float, direction: Direction | str = "max"
                      ) -> tuple[np.ndarray, np.ndarray]:
        """(smaller, larger) bracket of β(α): the sound side first (it is the smaller β)."""
        return self.beta(alpha, direction, Bound.UPPER), self.beta(alpha, direction, Bound.LOWER)

    def renyi_interval(self, alpha: np.ndarray | float, direction: Direction | str = "max"
                       ) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bracket of D_α."""
        return self.renyi(alpha, direction, Bound.LOWER), self.renyi(alpha, direction, Bound.UPPER)

    def rho_interval(self, direction: Direction | str = "max") -> tuple[float, float]:
        """(lower, upper) bracket of ρ."""
        return self.rho(direction, Bound.LOWER), self.rho(direction, Bound.UPPER)

    def answered_by(self, query: str, *, registry: Registry | None = None) -> Curve:
        """The curve whose own formula answers ``query``: this one if the query is in
        ``NATIVE``, else its conversion (default options) to the kind that has the
        formula, made once per registry and kept. ``registry``: whose converters make
        the conversion (default: the process-wide registry)."""
        _check_query(query)
        if query in self.NATIVE:
            return self
        # the converter graph knows the kinds, which import this module: read it late
        from accounting.curves.graph import home_kind
        home = home_kind(query)
        if registry is None:
            out = self._answerers.get(home)
            if out is None:
                out = self.to(home)
                self._answerers[home] = out
            return out
        # a private registry's conversions are kept beside it (by identity: registries
        # are not hashable values), so that a kept one never answers for another
        key = (home, id(registry))
        kept = self._private_answerers.get(key)
        if kept is None or kept[0] is not registry:
            kept = (registry, self.to(home, registry=registry))
            self._private_answerers[key] = kept
        return kept[1]

    def explain(self, query: str, *, registry: Registry | None = None) -> Provenance:
        """How ``query`` is answered: the provenance of ``answered_by(query)`` — this
        curve's own if the kind has the formula, else one whose path ends with the
        converters used (``str()`` of it reads e.g. ``upper bound (Gaussian rdp →
        rdp→profile (improved conversion))``); ``registry`` as for ``answered_by``."""
        return self.answered_by(query, registry=registry).provenance

    def _query(self, query: str, x: np.ndarray | None, direction: Direction | str,
               bound: Bound | str) -> Any:
        # (Any: the kind's ``_<query>`` method answers, looked up by name: an array, or
        # a float for ρ)
        d, b = as_direction(direction), as_bound(bound)
        target = self.answered_by(query)
        if target is not self:
            if b is Bound.LOWER and target.lower is None:
                raise ValueError(
                    f"{type(self).__name__}.{query}(bound='lower') has no answer: the query "
                    f"is answered by conversion to {type(target).__name__} "
                    f"({target.provenance}), which gives only a sound upper side")
            return target._query(query, x, d, b)
        side = self._side(b, query)
        fn = getattr(self, f"_{query}")
        vals = [fn(side, x, c) for c in d.components]
        if len(vals) == 1:
            return vals[0]
        # β: the pessimistic summary is the smaller β; every other notion the larger
        return (np.min if query == "beta" else np.max)(vals, axis=0)

    # ------------------------------------------------------------- conversion
    def to(self, kind: type[_KindT], *, registry: Registry | None = None,
           allow_lower: bool = False, **options: Any) -> _KindT:
        """Convert to another curve kind along the best registered path; lower-bound
        converters are used only with ``allow_lower``. Options the path's converters
        do not know are refused (TypeError naming them)."""
        from accounting.curves.graph import convert  # the graph imports this module
        out = convert(self, kind, registry=registry, allow_lower=allow_lower, **options)
        assert isinstance(out, kind)   # the graph answers a curve of the kind asked
        return out

    # ------------------------------------------------------------ composition
    def compose(self, other: Curve) -> Curve:
        """The curve of the independent composition (this kind's rule, which
        ``accounting.compose`` applies); kinds without a composition rule refuse
        (TypeError naming the kinds)."""
        raise TypeError(f"a {type(self).__name__} does not compose (with a "
                        f"{type(other).__name__}); convert both to PLD, RDP or ZCDP first")

    def self_compose(self, count: int) -> Curve:
        """The curve of ``count`` independent copies (this kind's rule, which
        ``accounting.compose((curve, count))`` applies); kinds without one refuse."""
        raise TypeError(f"a {type(self).__name__} does not compose; convert it to PLD, RDP "
                        f"or ZCDP first")

    def __add__(self, other: Curve) -> Curve:
        """Deprecated: ``accounting.compose(a, b)``."""
        deprecated_operator("curve + curve", "accounting.compose(a, b)")
        return self.compose(other)

    def __mul__(self, count: int) -> Curve:
        """Deprecated: ``accounting.compose((curve, count))`` (kinds with a
        ``self_compose`` rule only)."""
        if type(self).self_compose is Curve.self_compose:
            return NotImplemented
        deprecated_operator("curve * n", "accounting.compose((curve, n))")
        return self.self_compose(count)

    __rmul__ = __mul__

    @property
    def is_exact(self) -> bool:
        return self.provenance.exactness is Exactness.EXACT

    # ------------------------------------------------------------------- repr
    def _summary(self) -> str:
        """Size and a headline number or two, for the repr (own formulas only)."""
        return ""

    def __repr__(self) -> str:
        """``Kind(label (first step → … → last steps); sides; size and a headline
        number)``, under ~200 characters however large the curve or long its path
        (``provenance`` has the full path)."""
        sides = "upper+lower" if getattr(self, "lower", None) is not None else "upper only"
        try:
            summary = self._summary()
        except Exception:   # a repr never raises
            summary = ""
        steps = [step if len(step) <= 40 else step[:39] + "…" for step in self.provenance.path]
        if len(steps) > 3:
            steps = [steps[0], "…", *steps[-2:]]
        route = " → ".join(steps) if steps else "source"
        return (f"{type(self).__name__}({self.provenance.exactness.value} ({route}); {sides}"
                f"{'; ' + summary if summary else ''})")


def as_kind(curve: Any, kind: type[Curve], parameter: str = "curve") -> Curve:
    """``curve`` as a curve of ``kind``: itself if it is one, else its conversion (default
    options, through the registry). Anything that is not a curve is a TypeError naming
    ``parameter``."""
    if isinstance(curve, kind):
        return curve
    if not isinstance(curve, Curve):
        raise TypeError(f"{parameter} must be a privacy curve (PLD, PrivacyProfile, TradeOff, "
                        f"RDP or ZCDP), got {type(curve).__name__}")
    return curve.to(kind)
