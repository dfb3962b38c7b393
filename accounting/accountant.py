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
"""

from __future__ import annotations

from typing import Any, Optional

import attrs
import numpy as np

from .compose import ComposedPair, check_grid_size
from .mechanism import Mechanism
from .pair import Pair
from .pld import DEFAULT_STEP, PLD
from .profile import PrivacyProfile
from .rdp import RDP
from .tradeoff import TradeOff
from .validation import check_count, check_positive, check_real
from .zcdp import ZCDP

__all__ = ["Accountant", "ACCOUNTANTS"]

#: representations an accountant can report under, and the curve kind of each
ACCOUNTANTS = {"pld": PLD, "rdp": RDP, "zcdp": ZCDP}


def _kind(accountant: str) -> type:
    if not isinstance(accountant, str) or accountant.lower() not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {', '.join(ACCOUNTANTS)}, got {accountant!r}")
    return ACCOUNTANTS[accountant.lower()]


@attrs.define
class Accountant:
    """Composes mechanisms (or pairs) and answers privacy queries about the whole."""

    step: float = attrs.field(default=DEFAULT_STEP, validator=lambda i, a, v: check_positive(a.name, v))
    _entries: dict = attrs.field(factory=dict, init=False)
    _cache: dict = attrs.field(factory=dict, init=False)

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

    def pair(self) -> ComposedPair:
        if not self._entries:
            raise ValueError("nothing composed yet: call compose(mechanism, count) first")
        comps = [(m.pair() if isinstance(m, Mechanism) else m, c) for m, c in self._entries.items()]
        return ComposedPair(comps)

    def curve(self, kind: type, **options: Any):
        """The composed curve of ``kind`` (cached until the next ``compose``)."""
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

    def epsilon(self, delta, accountant: str = "pld"):
        """ε(δ), max over directions, an upper bound; vectorised over δ."""
        return self._profile(accountant).epsilon(delta)

    def delta(self, epsilon, accountant: str = "pld"):
        """δ(ε), max over directions, an upper bound; vectorised over ε."""
        return self._profile(accountant).delta(epsilon)

    def epsilon_interval(self, delta, rtol: Optional[float] = None):
        """Certified (lower, upper) ε(δ) from the PLD.

        With ``rtol`` the grid is refined (step halved, at most 8 times) until
        upper − lower ≤ rtol·upper for every δ; the bracket stays certified at every
        step, so the answer meets the stated accuracy or says (ValueError) that the
        grid limit was reached first.
        """
        if rtol is None:
            return self.curve(PLD).epsilon_interval(delta)
        rtol = check_real("rtol", rtol, lo=0.0, hi=1.0, lo_open=True)
        step = self.step
        for _ in range(9):
            if (PLD, (("step", step),)) not in self._cache:
                # refuse before allocating a grid too large (names rtol, the cause)
                check_grid_size(self.pair(), 1, step, option=f"rtol than {rtol:g}")
            lo, hi = self.curve(PLD, step=step).epsilon_interval(delta)
            if np.all(hi - lo <= rtol * hi):
                return lo, hi
            # the width shrinks at most like step²: the largest step that could meet
            # rtol is step·√(rtol·hi/width); refuse now if even that grid is too big
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = float(np.nanmin(rtol * hi / (hi - lo)))
            if 0 < ratio < 1:
                check_grid_size(self.pair(), 1, step * np.sqrt(ratio),
                                option=f"rtol than {rtol:g}")
            step /= 2.0
        raise ValueError(f"rtol={rtol:g} not reached down to step={2 * step:g}; "
                         f"bracket [{np.min(lo):.6g}, {np.max(hi):.6g}]")

    def tradeoff(self) -> TradeOff:
        return self.curve(PLD).to(TradeOff)
