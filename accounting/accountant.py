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

from accounting.composition import ComposedPair, check_grid_size
from accounting.conversion.converters import GRID_OPTIONS, check_options as check_grid_options
from accounting.pairs.mechanism import Mechanism
from accounting.pairs.pair import Pair
from accounting.curves.pld import DEFAULT_STEP, MIN_STEP, PLD, check_step
from accounting.curves.profile import PrivacyProfile
from accounting.curves.rdp import RDP
from accounting.curves.tradeoff import TradeOff
from accounting.validation import check_count, check_options, check_real
from accounting.curves.zcdp import ZCDP

__all__ = ["Accountant", "ACCOUNTANTS", "MIN_STEP", "CURVE_OPTIONS"]

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


def _kind(accountant: str) -> type:
    if not isinstance(accountant, str) or accountant.lower() not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {', '.join(ACCOUNTANTS)}, got {accountant!r}")
    return ACCOUNTANTS[accountant.lower()]


@attrs.define(init=False)
class Accountant:
    """Composes mechanisms (or pairs) and answers privacy queries about the whole.

    ``step``: the PLD grid step, at least ``MIN_STEP`` (default ``DEFAULT_STEP``).
    """

    step: float = attrs.field(default=DEFAULT_STEP, converter=check_step)
    _entries: dict = attrs.field(factory=dict, init=False)
    _cache: dict = attrs.field(factory=dict, init=False)

    def __init__(self, step: float = DEFAULT_STEP, **options: Any) -> None:
        check_options("Accountant()", options, ["step"])
        self.__attrs_init__(step)

    def __repr__(self) -> str:
        """``Accountant(step=…, N uses: Mechanism(…) × k, …)``, at most 200 characters
        (the cached curves are never shown)."""
        uses = ", ".join(f"{m!r} × {c}" for m, c in self._entries.items())
        text = f"Accountant(step={self.step:g}, {self.count} uses" + (f": {uses})" if uses else ")")
        return text if len(text) <= 200 else text[:198] + "…)"

    @_strict
    def compose(self, mechanism: "Mechanism | Pair", count: int = 1) -> "Accountant":
        """Add ``count`` independent uses of ``mechanism``; returns self for chaining."""
        if not isinstance(mechanism, (Mechanism, Pair)):
            raise TypeError(f"compose() needs a Mechanism or a Pair, got {type(mechanism).__name__}")
        count = check_count("count", count)
        self._entries[mechanism] = self._entries.get(mechanism, 0) + count
        self._cache.clear()
        return self

    @property
    def count(self) -> int:
        return sum(self._entries.values())

    @_strict
    def pair(self) -> ComposedPair:
        if not self._entries:
            raise ValueError("nothing composed yet: call compose(mechanism, count) first")
        comps = [(m.pair() if isinstance(m, Mechanism) else m, c) for m, c in self._entries.items()]
        return ComposedPair(comps)

    def curve(self, kind: type, **options: Any):
        """The composed curve of ``kind`` (cached until the next ``compose``).

        ``options`` (``CURVE_OPTIONS``: ``step``, ``tail``, ``lower``) reach the PLD
        discretisation; anything else is refused."""
        options = check_grid_options("Accountant.curve()", options)
        if options.get("step") is not None:
            options["step"] = check_step(options["step"])
        if kind is PLD:
            options.setdefault("step", self.step)
        key = (kind, tuple(sorted(options.items())))
        if key not in self._cache:
            self._cache[key] = self.pair().curve(kind, **options)
        return self._cache[key]

    def _profile(self, accountant: str) -> "PLD | PrivacyProfile":
        kind = _kind(accountant)
        if kind is PLD:
            # the sound side alone costs half; reuse a full PLD if one is cached
            full = self._cache.get((PLD, (("step", self.step),)))
            return full if full is not None else self.curve(PLD, lower=False)
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
            return self.curve(PLD).epsilon_interval(delta)
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
