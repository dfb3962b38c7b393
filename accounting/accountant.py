"""The accountant: compose mechanisms, then ask for ε or δ under a representation.

A stateful convenience over curves. ``compose(mechanism, count)`` any number of
times (identical mechanisms are merged so their repetitions become one n-fold
self-composition); ``epsilon(delta, accountant=…)`` and ``delta(epsilon, …)``
report the max over both neighbouring directions, as an upper bound:

* ``"pld"``: the composed PLD (tight; ``epsilon_interval`` gives the certified
  bracket);
* ``"rdp"``: the summed Rényi curves, converted by the improved conversion over
  continuous α (Canonne, Kamath, Steinke 2020, Prop. 12);
* ``"zcdp"``: the summed ρ*, converted by the tight CKS conversion (ibid. Cor. 13).

State. The composition is one ``Ledger`` (``Accountant.ledger``): merged, in canonical
order, so the same mechanisms composed in any order give the same ε to the last bit.
``to_dict()``/``from_dict()`` (and the Opacus-style ``state_dict()``/
``load_state_dict()``) write and read it with the grid step, exactly: a reloaded
accountant reports the same ε to the last bit. Curves computed so far are a cache,
never part of the state: pickling an accountant does not carry them.

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
from typing import Any, Callable, Optional

import attrs
import numpy as np

from accounting.pairs.composed import ComposedPair, check_grid_size
from accounting.ledger import SCHEMA, Ledger, check_keys, check_schema
from accounting.curves.converters import GRID_OPTIONS, check_options as check_grid_options
from accounting.pairs.mechanism import Mechanism
from accounting.pairs.pair import CurveT, Pair, of_kind
from accounting.curves.pld import DEFAULT_STEP, MIN_STEP, PLD, RefiningPLD, check_step
from accounting.curves.profile import PrivacyProfile
from accounting.curves.rdp import RDP
from accounting.curves.tradeoff import TradeOff
from accounting.validation import check_count, check_depth, check_options, check_real
from accounting.curves.zcdp import ZCDP

__all__ = ["Accountant", "ACCOUNTANTS", "MIN_STEP", "CURVE_OPTIONS", "check_accountant"]

#: representations an accountant can report under, and the curve kind of each
ACCOUNTANTS = {"pld": PLD, "rdp": RDP, "zcdp": ZCDP}
#: options ``Accountant.curve`` passes on to the PLD discretisation (the grid options of
#: the conversion graph)
CURVE_OPTIONS = GRID_OPTIONS
#: how many times ``epsilon_interval(rtol=…)`` may halve the step
MAX_REFINEMENTS = 8


def _strict(method: Callable) -> Callable:
    """Refuse unknown keywords with a TypeError naming them and the allowed ones
    (Python's own message names only the first and lists nothing)."""
    params = inspect.signature(method).parameters
    allowed = [n for n, p in params.items() if n != "self" and p.kind not in
               (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)]

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
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


@attrs.define(init=False)
class Accountant:
    """Composes mechanisms (or pairs) and answers privacy queries about the whole.

    ``step``: the PLD grid step, at least ``MIN_STEP`` (default ``DEFAULT_STEP``).
    """

    step: float = attrs.field(default=DEFAULT_STEP, converter=check_step)
    ledger: Ledger = attrs.field(factory=Ledger, init=False)
    #: computed curves, keyed by (kind, options): never part of the state
    _cache: dict = attrs.field(factory=dict, init=False, eq=False, repr=False)

    def __init__(self, step: float = DEFAULT_STEP, **options: Any) -> None:
        check_options("Accountant()", options, ["step"])
        self.__attrs_init__(step)

    @classmethod
    def of(cls, ledger: Ledger, step: float = DEFAULT_STEP) -> "Accountant":
        """An accountant whose composition is ``ledger``."""
        if not isinstance(ledger, Ledger):
            raise TypeError(f"ledger must be a Ledger, got {type(ledger).__name__}")
        acct = cls(step=step)
        acct.ledger = ledger
        return acct

    def __repr__(self) -> str:
        """``Accountant(step=…, N uses: Mechanism(…) × k, …)``, at most 200 characters
        (the cached curves are never shown)."""
        uses = ", ".join(f"{m!r} × {c}" for m, c in self.ledger.mechanisms())
        text = f"Accountant(step={self.step:g}, {self.count} uses" + (f": {uses})" if uses else ")")
        return text if len(text) <= 200 else text[:198] + "…)"

    @_strict
    def compose(self, mechanism: "Mechanism | Pair | Ledger", count: int = 1) -> "Accountant":
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
        return self.ledger.pair()

    # ------------------------------------------------------------- state
    def to_dict(self) -> dict:
        """``{"kind": "accountant", "schema": 1, "step": …, "ledger": {"entries": […]}}``:
        everything that determines the answers (not the cached curves). A composed
        ``Pair`` has no written form: a TypeError names its entry."""
        return {"kind": "accountant", "schema": SCHEMA, "step": self.step,
                "ledger": {"entries": self.ledger.entries_dict()}}

    @classmethod
    def from_dict(cls, data: Any, registry: Any = None) -> "Accountant":
        """The accountant of a ``to_dict`` document; each problem is a ValueError or
        TypeError naming its path (``ledger.entries[0].mechanism.sigma``)."""
        check_depth(data, "the document")
        check_keys(data, "", ("kind", "schema", "step", "ledger"),
                   required=("schema", "step", "ledger"))
        check_schema(data, "", "accountant")
        step = data["step"]
        if isinstance(step, bool) or not isinstance(step, (int, float)):
            raise TypeError(f"step must be a number, got {type(step).__name__} {step!r}")
        check_keys(data["ledger"], "ledger", ("entries",), required=("entries",))
        ledger = Ledger.from_entries(data["ledger"]["entries"], "ledger.entries", registry)
        return cls.of(ledger, step=float(step))

    def state_dict(self) -> dict:
        """The state (``to_dict``), for ``load_state_dict`` — the names Opacus and torch use."""
        return self.to_dict()

    def load_state_dict(self, state: Any, registry: Any = None) -> None:
        """Replace this accountant's step and composition by those of ``state``."""
        other = type(self).from_dict(state, registry)
        self.step, self.ledger = other.step, other.ledger
        self._cache.clear()

    def __getstate__(self) -> dict:
        # the cached curves (a 1000-step PLD is ~1 MB) are recomputed on demand
        return {"step": self.step, "ledger": self.ledger}

    def __setstate__(self, state: dict) -> None:
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
            return of_kind(kind, self.curve(PLD, **options).to(kind))
        if kind is PLD:
            options.setdefault("step", self.step)
            if set(options) <= {"step", "lower"} and options["step"] == self.step:
                # the full PLD from the same passes as the queries' (``_refining``)
                return of_kind(kind, self._refining(options.get("lower", True)).pld())
        key = (kind, tuple(sorted(options.items())))
        if key not in self._cache:
            self._cache[key] = self.pair().curve(kind, **options)
        return of_kind(kind, self._cache[key])

    def _refining(self, lower: bool) -> RefiningPLD:
        """The composition at this accountant's step as a ``RefiningPLD`` (cached): δ(ε)
        and ε(δ) compose only the tilts each query needs. One composed with
        ``lower=True`` serves upper-only queries too."""
        for with_lower in (True,) if lower else (False, True):
            got = self._cache.get(("refining", with_lower))
            if got is not None:
                return got
        got = self._cache[("refining", lower)] = self.pair().refining_pld(step=self.step,
                                                                           lower=lower)
        return got

    def _profile(self, accountant: str) -> "RefiningPLD | PrivacyProfile":
        kind = _kind(accountant)
        if kind is PLD:
            # the sound side alone costs half
            return self._refining(lower=False)
        return self.curve(kind).to(PrivacyProfile)

    @_strict
    def epsilon(self, delta, accountant: str = "pld"):
        """ε(δ), max over directions, an upper bound; vectorised over δ."""
        return self._profile(accountant).epsilon(delta)

    @_strict
    def delta(self, epsilon, accountant: str = "pld"):
        """δ(ε), max over directions, an upper bound; vectorised over ε."""
        return self._profile(accountant).delta(epsilon)

    @_strict
    def epsilon_interval(self, delta, rtol: Optional[float] = None):
        """Certified (lower, upper) ε(δ) from the PLD.

        With ``rtol`` the grid is refined (step halved, at most ``MAX_REFINEMENTS``
        times and never below ``MIN_STEP``) until upper − lower ≤ rtol·upper for every
        δ; the bracket stays certified at every step, so the answer meets the stated
        accuracy or says (ValueError) that the grid limit was reached first. Before
        each refinement the gap is extrapolated as step² (optimistic: the
        discretisation error is at best quadratic in the step); if even that cannot
        meet ``rtol`` at the smallest step allowed, the request is refused at once
        instead of allocating the finer grids.
        """
        if rtol is None:
            return self._refining(lower=True).epsilon_interval(delta)
        rtol = check_real("rtol", rtol, lo=0.0, hi=1.0, lo_open=True)
        step = self.step
        floor = max(MIN_STEP, self.step / 2.0 ** MAX_REFINEMENTS)
        while True:
            if (PLD, (("step", step),)) not in self._cache:
                # refuse before allocating a grid too large (names rtol, the cause)
                check_grid_size(self.pair(), 1, step, option=f"rtol than {rtol:g}")
            lo, hi = self.curve(PLD, step=step).epsilon_interval(delta)
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
        return self.curve(PLD).to(TradeOff)
