"""The accountant: compose mechanisms, then ask for ε or δ under a representation.

A stateful convenience over curves. ``compose(mechanism, count)`` any number of
times (the verb *compose* on a running composition; identical mechanisms are merged
so their repetitions become one n-fold self-composition). The queries have the
curves' one signature (``docs/five-verbs.md``): ``epsilon(delta, direction="max",
bound="upper")``, ``delta(epsilon, …)``, and ``epsilon_interval(delta,
direction="max", *, rtol=None)``, ``delta_interval(epsilon, …)``, all from the
composed PLD (tight; the intervals certified, refined to ``rtol`` on request).
Another representation is a curve: ``curve(RDP).epsilon(delta)`` (the summed Rényi
curves, converted by the improved conversion over continuous α; Canonne, Kamath,
Steinke 2020, arXiv:2004.00010, Prop. 12) or ``curve(ZCDP).epsilon(delta)`` (the
summed ρ*, by the tight CKS conversion, ibid. Cor. 13). The old keyword
``accountant="rdp"`` still works for one release, with a DeprecationWarning.

State. The composition is one ``Ledger`` (``Accountant.ledger``): merged, in canonical
order, so the same mechanisms composed in any order give the same ε to the last bit.
``accounting.save``/``accounting.load`` (and the Opacus-style ``state_dict()``/
``load_state_dict()``) write and read it with the grid step, exactly: a reloaded
accountant reports the same ε to the last bit. Curves computed so far are a cache,
never part of the state: pickling an accountant (which Dask does to move one between
processes; not a way to save) does not carry them.

Strict inputs: an unknown keyword to the constructor or any method is a TypeError
naming it and the allowed ones; a count must be an integer in [1, 2^53]; a grid step
below ``MIN_STEP`` is refused before anything is allocated (a single Gaussian at
step 2e-5 already takes ~1e6 cells, 0.5 GB and tens of seconds), and so is an
``epsilon_interval(rtol=…)`` that even an optimistic extrapolation of the bracket
cannot reach above ``MIN_STEP``.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from accounting.curves.converters import GRID_OPTIONS
from accounting.curves.converters import check_options as check_grid_options
from accounting.curves.curve import Curve, Provenance
from accounting.curves.pld import (
    DEEP_BELOW,
    DEEP_TAIL,
    DEFAULT_STEP,
    MIN_STEP,
    PLD,
    RefiningPLD,
    check_step,
)
from accounting.curves.profile import PrivacyProfile
from accounting.curves.rdp import RDP
from accounting.curves.tradeoff import TradeOff
from accounting.curves.zcdp import ZCDP
from accounting.ledger import Ledger
from accounting.ledger.document import accountant_document, read_accountant_document
from accounting.ledger.grouping import DominanceGroups, group_by_dominance
from accounting.numerics.finite import law_delta
from accounting.numerics.loss import GridSizeError, LossPMF
from accounting.pairs.composed import ComposedPair, check_grid_size
from accounting.pairs.finite import exact_laws_of
from accounting.pairs.mechanism import Mechanism
from accounting.pairs.pair import CurveT, LawPair, Pair, of_kind
from accounting.validation import check_count, check_options, check_real
from accounting.vocabulary import Bound, Direction, InvariantError, as_bound, as_direction

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["Accountant", "ACCOUNTANTS", "MIN_STEP", "CURVE_OPTIONS", "check_accountant"]

#: representations an accountant can report under, and the curve kind of each
ACCOUNTANTS = {"pld": PLD, "rdp": RDP, "zcdp": ZCDP}
#: options ``Accountant.curve`` passes on to the PLD discretisation (the grid options of
#: the conversion graph)
CURVE_OPTIONS = GRID_OPTIONS
#: relative accuracy trusted of a closed-form δ(ε) evaluated in float64 (log_ndtr and
#: expm1: a few ulps; the margin is 10⁴ times that)
CLOSED_DELTA_RTOL = 1e-11
#: how many times ``epsilon_interval(rtol=…)`` may halve the step
MAX_REFINEMENTS = 8


def _strict(method: Callable[..., Any]) -> Callable[..., Any]:
    """Refuse unknown keywords with a TypeError naming them and the allowed ones
    (Python's own message names only the first and lists nothing)."""
    params = inspect.signature(method).parameters
    allowed = [n for n, p in params.items() if n != "self" and p.kind not in
               (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)]

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            check_options(f"Accountant.{method.__name__}()",
                          {k: v for k, v in kwargs.items() if k not in params}, allowed)
        return method(self, *args, **kwargs)
    return wrapper


def check_accountant(accountant: Any, *, allow_all: bool = False) -> str:
    """The accountant name ``accountant`` in lower case: one of ``ACCOUNTANTS`` (or
    ``"all"`` with ``allow_all``); a ValueError naming the choices otherwise. The one
    check used by the accountant, calibration, workload files and the command line."""
    choices = (*ACCOUNTANTS, "all") if allow_all else tuple(ACCOUNTANTS)
    if not isinstance(accountant, str) or accountant.lower() not in choices:
        raise ValueError(f"accountant must be one of {', '.join(choices)}, got {accountant!r}")
    return accountant.lower()


def _kind(accountant: str) -> type:
    return ACCOUNTANTS[check_accountant(accountant)]


class _Tiered:
    """δ(ε) and ε(δ) of a composition from two tiers of its PLD, both certified.

    The default tier (``default``) discretises each use with the default tail and
    leaves ``FAR_TAIL`` (1e-32) above each composed window; the pessimistic side puts
    both at +∞, about 1e-20 in all, so its upper ε(δ) is ∞ below δ ≈ 1e-20 and loose
    near it. The deep tier (``deep()``, built on first need) cuts ``DEEP_TAIL``
    (1e-40) in all and leaves as much above its windows; the tilted composition
    (``fourier.RefiningLaw``: the e^{θL}-weighted laws composed, so that the far tail
    is the tilted sum's bulk) then resolves δ to 1e-30 and below with the same
    relative precision as 1e-5. An element is answered by the deep tier when its δ
    (for ε(δ)), or the default tier's upper δ (for δ(ε)), is positive and below
    ``DEEP_BELOW`` (1e-15); else by the default tier, so answers above it are
    unchanged and a query costs the deep tier only when it asks that far. Each
    answer depends on its own element alone. Both tiers bracket the truth; at the
    boundary they agree to about 1e-8 relative in ε.
    """

    def __init__(self, default: RefiningPLD, deep: Callable[[], RefiningPLD]) -> None:
        self._default = default
        self._build_deep = deep

    def _deep(self) -> RefiningPLD:
        """The deep tier, or the default one where the deep tier's grid would exceed
        ``MAX_GRID_POINTS`` (its wider tails): that answer is as sound, only looser
        (∞ where the default tier's +∞ mass exceeds δ), and the query is not refused
        for asking a small δ."""
        try:
            return self._build_deep()
        except GridSizeError:
            return self._default

    def epsilon(self, delta: Any, direction: Direction | str = "max",
                bound: Bound | str = "upper") -> Any:
        """ε(δ), as ``RefiningPLD.epsilon``."""
        dl = np.asarray(delta, dtype=float)
        deep = (dl > 0) & (dl < DEEP_BELOW)
        if not np.any(deep):
            return self._default.epsilon(delta, direction, bound)
        # (the default tier is built only when some element needs it)
        full = np.full(dl.shape, np.nan)
        if not np.all(deep):
            full[~deep] = self._default.epsilon(dl[~deep], direction, bound)
        full[deep] = self._deep().epsilon(dl[deep], direction, bound)
        return full if full.ndim else full[()]

    def delta(self, epsilon: Any, direction: Direction | str = "max",
              bound: Bound | str = "upper") -> Any:
        """δ(ε), as ``RefiningPLD.delta``."""
        out = self._default.delta(epsilon, direction, bound)
        upper = out if as_bound(bound) is Bound.UPPER else \
            self._default.delta(epsilon, direction, Bound.UPPER)
        upper = np.asarray(upper, dtype=float)
        deep = (upper > 0) & (upper < DEEP_BELOW)
        if not np.any(deep):
            return out
        eps = np.broadcast_to(np.asarray(epsilon, dtype=float), upper.shape)
        full = np.array(out, dtype=float, copy=True).reshape(upper.shape)
        full[deep] = self._deep().delta(eps[deep], direction, bound)
        return full if full.ndim else full[()]

    def epsilon_interval(self, delta: Any,
                         direction: Direction | str = "max") -> tuple[Any, Any]:
        """(lower, upper) bracket of ε(δ)."""
        return (self.epsilon(delta, direction, "lower"), self.epsilon(delta, direction, "upper"))

    def delta_interval(self, epsilon: Any,
                       direction: Direction | str = "max") -> tuple[Any, Any]:
        """(lower, upper) bracket of δ(ε)."""
        return (self.delta(epsilon, direction, "lower"), self.delta(epsilon, direction, "upper"))


@attrs.frozen
class _ClosedAnswers:
    """The point answers and δ bounds of a composition's exact closed form.

    A μ-GDP pair answers from its profile (``PrivacyProfile``, δ(ε) in closed form);
    an exact finite law (``finite``) from its atoms: δ(ε) as a sum of non-negative
    terms (``numerics.finite.law_delta``), ε(δ) solved between atoms
    (``LossPMF.epsilon``). ``delta_bounds`` brackets the exact δ(ε): the float
    evaluation trusted to ``CLOSED_DELTA_RTOL`` relative and, for a law, its float
    losses to ``loss_error`` absolute (δ is non-increasing in ε, so the losses
    shifted by ±η are ε shifted by ∓η)."""

    profile: PrivacyProfile
    laws: tuple[LossPMF, LossPMF] | None = None
    loss_error: float = 0.0
    #: relative accuracy trusted of δ: ``CLOSED_DELTA_RTOL`` for a profile; for a law
    #: its masses' error plus the rounding of a sum of its non-negative terms
    rtol: float = CLOSED_DELTA_RTOL

    @classmethod
    def of(cls, pair: Pair, profile: PrivacyProfile) -> _ClosedAnswers:
        laws = exact_laws_of(pair)
        if laws is None:
            return cls(profile)
        law_pair = pair
        assert isinstance(law_pair, LawPair)      # exact_laws_of found its laws
        err = max(law.loss_error for law in laws)
        atoms = max(law.losses.size for law in laws)
        rtol = (float(getattr(pair, "mass_error", 0.0))
                + 2.0 ** -52 * (math.log2(atoms + 1) + 4.0))
        return cls(profile, law_pair.upper, err, rtol)

    @property
    def finite(self) -> bool:
        return self.laws is not None

    @property
    def bounded(self) -> bool:
        """A finite law without mass at +∞ (its ε(0) is its largest loss)."""
        return self.laws is not None and all(law.inf_mass == 0 for law in self.laws)

    def _law(self, d: Direction) -> LossPMF:
        assert self.laws is not None
        return self.laws[0] if d is Direction.FORWARD else self.laws[1]

    def delta(self, eps: np.ndarray, direction: Direction) -> np.ndarray:
        if self.laws is None:
            return np.asarray(self.profile.delta(eps, direction), dtype=float)
        out: np.ndarray = np.max([law_delta(self._law(d), eps)
                                  for d in direction.components], axis=0)
        return out

    def epsilon(self, delta: np.ndarray, direction: Direction) -> np.ndarray:
        if self.laws is None:
            return np.asarray(self.profile.epsilon(delta, direction), dtype=float)
        out: np.ndarray = np.max([self._law(d).epsilon(delta)
                                  for d in direction.components], axis=0)
        return out

    def delta_bounds(self, eps: np.ndarray, direction: Direction
                     ) -> tuple[np.ndarray, np.ndarray]:
        eta = self.loss_error
        lo = self.delta(eps + eta, direction) * (1.0 - self.rtol)
        hi = np.minimum(self.delta(eps - eta, direction) * (1.0 + self.rtol), 1.0)
        return np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)


@attrs.define(init=False)
class Accountant:
    """Composes mechanisms (or pairs) and answers privacy queries about the whole.

    ``step``: the PLD grid step, at least ``MIN_STEP`` (default ``DEFAULT_STEP``).
    ``registry``: where the composed mechanisms' pairs and curves are looked up (a
    ``make_registry()`` registry, say); None, the default, is the process-wide one.
    """

    step: float = attrs.field(default=DEFAULT_STEP, converter=check_step)
    ledger: Ledger = attrs.field(factory=Ledger, init=False)
    #: the registry given (None: the process-wide one); not part of the state
    registry: Registry | None = attrs.field(default=None, init=False, eq=False, repr=False)
    #: computed curves, keyed by (kind, options): never part of the state
    _cache: dict[Any, Any] = attrs.field(factory=dict, init=False, eq=False, repr=False)

    def __init__(self, step: float = DEFAULT_STEP, *, registry: Registry | None = None,
                 **options: Any) -> None:
        check_options("Accountant()", options, ["step", "registry"])
        self.__attrs_init__(step)
        self.registry = registry

    @classmethod
    def of(cls, ledger: Ledger, step: float = DEFAULT_STEP, *,
           registry: Registry | None = None) -> Accountant:
        """An accountant whose composition is ``ledger`` (curves through ``registry``)."""
        if not isinstance(ledger, Ledger):
            raise TypeError(f"ledger must be a Ledger, got {type(ledger).__name__}")
        acct = cls(step=step, registry=registry)
        acct.ledger = ledger
        return acct

    def __repr__(self) -> str:
        """``Accountant(step=…, N uses: Mechanism(…) × k, …)``, at most 200 characters
        (the cached curves are never shown)."""
        uses = ", ".join(f"{m!r} × {c}" for m, c in self.ledger.mechanisms())
        text = f"Accountant(step={self.step:g}, {self.count} uses" + (f": {uses})" if uses else ")")
        return text if len(text) <= 200 else text[:198] + "…)"

    @_strict
    def compose(self, mechanism: Mechanism | Pair | Ledger, count: int = 1) -> Accountant:
        """Add ``count`` independent uses of ``mechanism`` (or of a whole ``Ledger``);
        returns self for chaining."""
        if not isinstance(mechanism, (Mechanism, Pair, Ledger)):
            raise TypeError(f"compose() needs a Mechanism or a Pair (or a Ledger), got "
                            f"{type(mechanism).__name__}")
        count = check_count("count", count)
        added = mechanism * count if isinstance(mechanism, Ledger) else Ledger.of(mechanism, count)
        self.ledger = self.ledger + added
        self._cache.clear()
        return self

    @property
    def count(self) -> int:
        return self.ledger.count

    @_strict
    def pair(self) -> ComposedPair:
        if not self.ledger:
            raise ValueError("nothing composed yet: call compose(mechanism, count) first")
        if self.registry is None:
            return self.ledger.pair()
        # each mechanism's pair built through the accountant's registry (``pair_in``)
        return ComposedPair(tuple((m.pair_in(self.registry) if isinstance(m, Mechanism) else m, n)
                                  for m, n in self.ledger.mechanisms(self.registry)))

    # ------------------------------------------------------------- state
    def to_dict(self) -> dict[str, Any]:
        """Deprecated: use ``accounting.save`` (or ``accounting.serialization.
        to_document``); the same document as ``state_dict``."""
        _deprecated("Accountant.to_dict()", "save")
        return self.state_dict()

    @classmethod
    def from_dict(cls, data: Any, registry: Registry | None = None) -> Accountant:
        """Deprecated: use ``accounting.load`` (or ``accounting.serialization.
        from_document``)."""
        _deprecated("Accountant.from_dict()", "load")
        step, entries = read_accountant_document(data, registry)
        return cls.of(Ledger(entries), step=step, registry=registry)

    def state_dict(self) -> dict[str, Any]:
        """``{"kind": "accountant", "schema": 1, "step": …, "ledger": {"entries": […]}}``:
        everything that determines the answers (not the cached curves), for
        ``load_state_dict``. Kept on the accountant only because PyTorch checkpoints
        and the Opacus bridge ask for these two names; to save, use ``accounting.save``
        (the same document). A composed ``Pair`` has no written form: a TypeError
        names its entry."""
        return accountant_document(self.step, self.ledger)

    def load_state_dict(self, state: Any, registry: Registry | None = None) -> None:
        """Replace this accountant's step and composition by those of ``state`` (a
        ``state_dict``); each problem is a ValueError or TypeError naming its path
        (``ledger.entries[0].mechanism.sigma``)."""
        step, entries = read_accountant_document(state, registry)
        other = type(self).of(Ledger(entries), step=step,
                              registry=self.registry if registry is None else registry)
        self.step, self.ledger = other.step, other.ledger
        self._cache.clear()

    def __getstate__(self) -> dict[str, Any]:
        # the cached curves (a 1000-step PLD is ~1 MB) are recomputed on demand
        return {"step": self.step, "ledger": self.ledger}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__attrs_init__(state["step"])
        self.ledger = state["ledger"]

    def curve(self, kind: type[CurveT], **options: Any) -> CurveT:
        """The composed curve of ``kind`` (cached until the next ``compose``).

        ``options`` (``CURVE_OPTIONS``: ``step``, ``tail``, ``lower``) reach the PLD
        discretisation; anything else is refused. The PLD, the privacy profile and the
        trade-off come from one composed PLD at the accountant's ``step``."""
        options = check_grid_options("Accountant.curve()", options)
        if options.get("step") is not None:
            options["step"] = check_step(options["step"])
        if kind in (PrivacyProfile, TradeOff):
            # they come from the composed PLD, at this accountant's step like the PLD itself
            return of_kind(kind, self.curve(PLD, **options).to(kind, registry=self.registry))
        if kind is PLD:
            options.setdefault("step", self.step)
            if set(options) <= {"step", "lower"} and options["step"] == self.step:
                # the full PLD from the same passes as the queries' (``_refining``)
                return of_kind(kind, self._refining(options.get("lower", True)).pld())
        key = (kind, tuple(sorted(options.items())))
        if key not in self._cache:
            self._cache[key] = self.pair().curve(kind, registry=self.registry, **options)
        return of_kind(kind, self._cache[key])

    def _refining(self, lower: bool, deep: bool = False) -> RefiningPLD:
        """The composition at this accountant's step as a ``RefiningPLD`` (cached): δ(ε)
        and ε(δ) compose only the tilts each query needs. One composed with
        ``lower=True`` serves upper-only queries too. ``deep``: the deep tier
        (``_Tiered``), whose uses together cut at most ``DEEP_TAIL`` of tail and whose
        windows leave at most ``DEEP_TAIL`` above them."""
        def key(with_lower: bool) -> tuple[object, ...]:
            return ("refining", with_lower, "deep") if deep else ("refining", with_lower)

        for with_lower in (True,) if lower else (False, True):
            cached: RefiningPLD | None = self._cache.get(key(with_lower))
            if cached is not None:
                return cached
        options: dict[str, Any] = {"step": self.step, "lower": lower}
        if deep:
            # per use: the count of uses bounds the number of discretised laws composed
            options.update(tail=DEEP_TAIL / self.count, far_tail=DEEP_TAIL)
        got: RefiningPLD = self.pair().refining_pld(registry=self.registry, **options)
        self._cache[key(lower)] = got
        return got

    @property
    def pld_provenance(self) -> Provenance:
        """The provenance of the composed PLD at this accountant's step (what its ε
        is: exact, a sound bound, numerical), read from the parts without composing
        the full window, as ``curve(PLD)`` would (a calibration asks it at every σ)."""
        return self._refining(lower=False).provenance

    def _tiered(self, lower: bool) -> _Tiered:
        return _Tiered(self._refining(lower), lambda: self._refining(lower, deep=True))

    def _legacy(self, query: str, direction: Any, accountant: str | None
                ) -> tuple[Any, str | None]:
        """(direction, accountant name or None): the deprecated ``accountant=`` keyword
        (also given positionally, ``epsilon(delta, "rdp")``, where ``direction`` now
        sits) is read, with a DeprecationWarning naming the replacement."""
        if (accountant is None and isinstance(direction, str)
                and direction.lower() in ACCOUNTANTS):
            accountant, direction = direction, "max"
        if accountant is None:
            return direction, None
        name = check_accountant(accountant)
        new = (f"acct.{query}(...)" if name == "pld" else
               f"acct.curve({ACCOUNTANTS[name].__name__}).{query}(...)")
        warnings.warn(f"Accountant.{query}(..., accountant={name!r}) is deprecated and will "
                      f"be removed in the next release; use {new}", DeprecationWarning,
                      stacklevel=5)   # past _query, the method and its _strict wrapper
        return direction, name

    def _query(self, query: str, x: Any, direction: Any, bound: Any,
               accountant: str | None) -> np.ndarray:
        direction, name = self._legacy(query, direction, accountant)
        d, b = as_direction(direction), as_bound(bound)
        if name in (None, "pld") and self._pure_answers(query, x):
            lo, hi = self._pure_interval(x, d)
            return hi if b is Bound.UPPER else lo
        if name in (None, "pld") and self._closed_answers(query, x):
            lo, hi = self._closed_interval(query, x, d)
            return hi if b is Bound.UPPER else lo
        answerer: Any = (self.curve(ACCOUNTANTS[name]) if name not in (None, "pld")
                         # the composed PLD, tilts composed per query; the sound side
                         # alone costs half
                         else self._tiered(lower=b is Bound.LOWER))
        out: np.ndarray = getattr(answerer, query)(x, d, b)
        return out

    def closed_pair(self) -> Pair | None:
        """The exact pair of the whole composition where it has a closed form, else
        None (``ComposedPair.closed_form``): every part μᵢ-GDP (every Gaussian, any σ,
        Δ and count) gives the √(Σkᵢμᵢ²)-GDP pair; every part an exact finite law
        (randomized response, k-ary randomized response, (ε, δ) guarantees) gives their
        exact product law. Cached until the next ``compose``."""
        if not self.ledger:
            return None
        key = ("closed pair",)
        if key not in self._cache:
            self._cache[key] = self.pair().closed_form()
        found: Pair | None = self._cache[key]
        return found

    def closed_profile(self) -> PrivacyProfile | None:
        """The exact privacy profile of the whole composition where it has a closed
        form (``closed_pair``), else None: ε, δ and their intervals are then answered
        without a grid, labelled exact — for a μ-GDP composition from δ(ε) =
        Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle, Wang, arXiv:1805.06530, Thm. 8), for
        a finite law from its atoms, δ(ε) = Σ_{lᵢ>ε} pᵢ(1 − e^{ε−lᵢ})."""
        pair = self.closed_pair()
        if pair is None:
            return None
        key = ("closed profile",)
        if key not in self._cache:
            self._cache[key] = pair.curve(PrivacyProfile, registry=self.registry)
        found: PrivacyProfile | None = self._cache[key]
        return found

    def pure_epsilon(self, direction: Direction | str = "max") -> tuple[float, float] | None:
        """(lower, upper) of ε(δ = 0) where every part is pure DP (a finite largest
        loss in each direction: Laplace, randomized response, k-ary randomized
        response, …): Σ kᵢεᵢ in closed form (``ComposedPair.pure_epsilon``), lower =
        upper for exact parts; None otherwise (a Gaussian part: ε(0) = ∞)."""
        if not self.ledger:
            return None
        d = as_direction(direction)
        key = ("pure epsilon", d)
        if key not in self._cache:
            self._cache[key] = self.pair().pure_epsilon(d)
        found: tuple[float, float] | None = self._cache[key]
        return found

    def _closed(self) -> _ClosedAnswers | None:
        pair = self.closed_pair()
        if pair is None:
            return None
        key = ("closed answers",)
        if key not in self._cache:
            profile = self.closed_profile()
            assert profile is not None     # there is a closed pair
            self._cache[key] = _ClosedAnswers.of(pair, profile)
        found: _ClosedAnswers = self._cache[key]
        return found

    def _pure_answers(self, query: str, x: Any) -> bool:
        """Whether the pure-DP closed form answers: ε at δ = 0 (every δ given is 0)."""
        if query != "epsilon":
            return False
        try:
            values = np.asarray(x, dtype=float)
        except (TypeError, ValueError):
            return False
        return (bool(values.size) and bool(np.all(values == 0))
                and self.pure_epsilon() is not None)

    def _pure_interval(self, x: Any, direction: Direction) -> tuple[np.ndarray, np.ndarray]:
        found = self.pure_epsilon(direction)
        assert found is not None    # the callers checked
        shape = np.shape(x)
        lo, hi = (np.full(shape, v) for v in found)
        return (lo[()] if lo.ndim == 0 else lo), (hi[()] if hi.ndim == 0 else hi)

    def _closed_answers(self, query: str, x: Any) -> bool:
        """Whether the closed form answers this query: it exists, and (ε at δ) every δ
        is in (0, 1) — or [0, 1) for a finite law without mass at +∞, whose largest
        loss is ε(0) (δ = 0
        of a μ-GDP job goes to the engine, whose refusal says why ε is unbounded; bad
        values to its checks)."""
        closed = self._closed()
        if closed is None or (closed.finite and not closed.bounded):
            # (a law with mass at +∞ — (ε, δ) guarantees, no noise — goes to the grid: at
            # a δ equal to that mass, float64 cannot certify which side it falls)
            return False
        if query == "delta":
            return True
        try:
            values = np.asarray(x, dtype=float)
        except (TypeError, ValueError):
            return False
        low = (values >= 0) if closed.bounded else (values > 0)
        return bool(values.size) and bool(np.all(low & (values < 1)))

    def _closed_interval(self, query: str, x: Any, direction: Direction
                         ) -> tuple[np.ndarray, np.ndarray]:
        """A certified bracket of the closed form's ε(δ) or δ(ε): float64 evaluation of
        δ(ε) is trusted to ``CLOSED_DELTA_RTOL`` relative, and a finite law's losses to
        its ``loss_error`` (``_ClosedAnswers.delta_bounds``), so the upper end is moved
        up and the lower end down until δ at each end clears that margin."""
        closed = self._closed()
        assert closed is not None   # the callers checked
        if query == "delta":
            lo, hi = closed.delta_bounds(np.asarray(x, dtype=float), direction)
            return (lo[()] if lo.ndim == 0 else lo), (hi[()] if hi.ndim == 0 else hi)
        delta = np.asarray(x, dtype=float)
        hi = np.asarray(closed.epsilon(delta, direction), dtype=float)
        lo, hi = hi.copy(), hi.copy()
        finite = np.isfinite(hi)
        for end, sign in ((hi, 1.0), (lo, -1.0)):
            gap = np.full(end.shape, 1e-14)
            for _ in range(40):
                at = np.where(finite, end + sign * (gap * np.abs(end) + closed.loss_error),
                              end)
                got_lo, got_hi = closed.delta_bounds(at, direction)
                # the upper end needs δ(ε) ≤ δ, the lower end δ(ε) ≥ δ, beyond the margin
                ok = ~finite | ((got_hi <= delta) if sign > 0 else
                                ((got_lo >= delta) | (at <= 0.0)))
                if np.all(ok):
                    break
                gap = np.where(ok, gap, gap * 4.0)
            else:
                if not closed.finite:
                    raise InvariantError("the closed-form bracket did not clear its margin")
                # a law's δ at a δ it equals (its mass at +∞, within the margin): the
                # sound ends, ∞ above and 0 below, where the margin cannot be cleared
                ok_end = ok
                end[...] = np.where(ok_end, end, np.inf if sign > 0 else 0.0)
                gap = np.where(ok_end, gap, 0.0)
            end[...] = np.where(finite & np.isfinite(end),
                                end + sign * (gap * np.abs(end) + closed.loss_error), end)
        lo = np.where(np.isfinite(lo), np.maximum(lo, 0.0), 0.0)
        if not closed.finite:
            # (a μ-GDP answer of 0 is exact: δ(0) ≤ δ)
            hi = np.where(hi == 0.0, 0.0, hi)
        return (lo[()] if lo.ndim == 0 else lo), (hi[()] if hi.ndim == 0 else hi)

    def under(self, accountant: str) -> Accountant | Curve:
        """What answers the queries under the representation named ``accountant`` (one
        of ``ACCOUNTANTS``; for callers that take the name as a string, such as the
        command line's ``--accountant``): this accountant for ``"pld"``, else its
        composed curve of that kind (``curve(RDP)``, ``curve(ZCDP)``); both answer
        ``epsilon``/``delta`` with the one signature."""
        kind = _kind(accountant)
        return self if kind is PLD else self.curve(kind)

    @_strict
    def epsilon(self, delta: np.ndarray | float, direction: Direction | str = "max",
                bound: Bound | str = "upper", *, accountant: str | None = None
                ) -> np.ndarray:
        """ε(δ) of the composition from its PLD (``Curve.epsilon``'s signature and
        meaning): ``direction`` ``"max"`` (default, the larger of both neighbouring
        directions), ``"forward"`` or ``"backward"``; ``bound`` ``"upper"`` (default,
        sound) or ``"lower"`` (optimistic); vectorised over δ. Another representation:
        ``acct.curve(RDP).epsilon(delta)`` (``accountant=`` is deprecated for it)."""
        return self._query("epsilon", delta, direction, bound, accountant)

    @_strict
    def delta(self, epsilon: np.ndarray | float, direction: Direction | str = "max",
              bound: Bound | str = "upper", *, accountant: str | None = None
              ) -> np.ndarray:
        """δ(ε) of the composition from its PLD, as ``epsilon``; vectorised over ε."""
        return self._query("delta", epsilon, direction, bound, accountant)

    @_strict
    def epsilon_interval(self, delta: np.ndarray | float, direction: Direction | str = "max",
                         *, rtol: float | None = None, group: float | None = None
                         ) -> tuple[np.ndarray, np.ndarray]:
        """Certified (lower, upper) ε(δ) from the PLD.

        With ``group`` ∈ (0, 1] the mechanisms that differ only in a garbling parameter
        (a noise schedule's σ) are grouped by dominance within a relative ``group``
        (``accounting.ledger.grouping``): the upper end is the upper bound of the
        composition with each group at its least noisy member, the lower end the lower
        bound with each at its noisiest. Both stay certified; the bracket widens by
        the price of grouping (about κ·group relative, κ = −d log ε/d log σ), and a
        schedule of thousands of distinct σ costs one discretisation per group.

        With ``rtol`` the grid is refined (step halved, at most ``MAX_REFINEMENTS``
        times and never below ``MIN_STEP``) until upper − lower ≤ rtol·upper for every
        δ; the bracket stays certified at every step, so the answer meets the stated
        accuracy or says (ValueError) that the grid limit was reached first. Before
        each refinement the gap is extrapolated as step² (optimistic: the
        discretisation error is at best quadratic in the step); if even that cannot
        meet ``rtol`` at the smallest step allowed, the request is refused at once
        instead of allocating the finer grids.
        """
        return self._interval("epsilon", delta, direction, rtol, group)

    @_strict
    def delta_interval(self, epsilon: np.ndarray | float, direction: Direction | str = "max",
                       *, rtol: float | None = None, group: float | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
        """Certified (lower, upper) δ(ε) from the PLD; ``rtol`` and ``group`` as for
        ``epsilon_interval`` (upper − lower ≤ rtol·upper for every ε)."""
        return self._interval("delta", epsilon, direction, rtol, group)

    def grouped(self, group: float) -> DominanceGroups:
        """This composition grouped by dominance within a relative ``group`` (see
        ``epsilon_interval``): the dominating and the dominated ledgers, and how many
        distinct mechanisms each has."""
        return group_by_dominance(self.ledger, group, self.registry)

    def _grouped_interval(self, query: str, x: Any, direction: Any, group: Any
                          ) -> tuple[np.ndarray, np.ndarray]:
        key = ("grouped", check_real("group", group, lo=0.0, hi=1.0, lo_open=True))
        accountants: tuple[Accountant, ...] | None = self._cache.get(key)
        if accountants is None:
            groups = self.grouped(key[1])
            if groups.distinct_after == groups.distinct_before:
                # nothing to group: the composition itself, both sides from one
                accountants = (self, self)
            else:
                accountants = tuple(Accountant.of(ledger, self.step, registry=self.registry)
                                    for ledger in (groups.lower, groups.upper))
            self._cache[key] = accountants
        if accountants[0] is self:
            return self._interval(query, x, direction, None)
        # each grouped composition is asked for its one side only (the dominating one's
        # upper laws cost a fraction of both sides)
        lo: np.ndarray = getattr(accountants[0], query)(x, direction, Bound.LOWER)
        hi: np.ndarray = getattr(accountants[1], query)(x, direction, Bound.UPPER)
        return lo, hi

    def _interval(self, query: str, x: Any, direction: Any, rtol: Any, group: Any = None
                  ) -> tuple[np.ndarray, np.ndarray]:
        if rtol is None and isinstance(direction, numbers.Real) and not isinstance(direction, bool):
            # the old positional form epsilon_interval(delta, rtol)
            warnings.warn(f"Accountant.{query}_interval(x, rtol) with rtol positional is "
                          f"deprecated and will be removed in the next release; use "
                          f"{query}_interval(x, rtol=rtol)", DeprecationWarning, stacklevel=4)
            direction, rtol = "max", direction
        d = as_direction(direction)
        name = f"{query}_interval"
        if group is not None:
            if rtol is not None:
                raise TypeError(f"{name}: give rtol (refine the grid) or group (group by "
                                f"dominance), not both")
            return self._grouped_interval(query, x, d, group)
        if self._pure_answers(query, x):
            lo, hi = self._pure_interval(x, d)
            if rtol is not None:
                check_real("rtol", rtol, lo=0.0, hi=1.0, lo_open=True)
            return lo, hi
        if self._closed_answers(query, x):
            lo, hi = self._closed_interval(query, x, d)
            if rtol is not None:
                rtol = check_real("rtol", rtol, lo=0.0, hi=1.0, lo_open=True)
                width = float(np.max((hi - lo) / np.where(hi > 0, hi, 1.0)))
                if width > rtol:
                    raise ValueError(f"rtol={rtol:g} cannot be reached: the closed form is "
                                     f"resolved to {width:.1e} relative in float64")
            return lo, hi
        if rtol is None:
            bracket: tuple[np.ndarray, np.ndarray] = getattr(self._tiered(lower=True), name)(x, d)
            return bracket
        rtol = check_real("rtol", rtol, lo=0.0, hi=1.0, lo_open=True)
        step = self.step
        floor = max(MIN_STEP, self.step / 2.0 ** MAX_REFINEMENTS)
        while True:
            if (PLD, (("step", step),)) not in self._cache:
                # refuse before allocating a grid too large (names rtol, the cause)
                check_grid_size(self.pair(), 1, step, option=f"rtol than {rtol:g}")
            lo, hi = getattr(self.curve(PLD, step=step), name)(x, d)
            gap = np.max(hi - lo - rtol * hi)
            if gap <= 0:
                return lo, hi
            finest = step
            while finest / 2.0 >= floor:
                finest /= 2.0
            best = np.max((hi - lo) * (finest / step) ** 2 - rtol * hi)
            if finest == step or best > 0:
                raise ValueError(
                    f"rtol={rtol:g} cannot be reached: at step={step:g} the bracket is "
                    f"[{np.min(lo):.10g}, {np.max(hi):.10g}], and even a gap shrinking as "
                    f"step² would not meet it at the smallest step allowed ({finest:g}, "
                    f"MIN_STEP={MIN_STEP:g}); ask for a larger rtol")
            step /= 2.0

    @_strict
    def tradeoff(self) -> TradeOff:
        return self.curve(PLD).to(TradeOff, registry=self.registry)


def _deprecated(what: str, verb: str) -> None:
    warnings.warn(f"{what} is deprecated and will be removed in the next release; use "
                  f"accounting.{verb} (or the functions of accounting.serialization)",
                  DeprecationWarning, stacklevel=3)
