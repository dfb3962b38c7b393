"""Composition: of curves of one kind, and of pairs (heterogeneous and n-fold).

Curves compose by their own rule (PLD: convolution; RDP: adding K; zCDP: adding ρ).
``ComposedPair`` is the product of several pairs, each repeated some number of
times; its curves are the compositions of its components' curves, with n-fold
self-composition done by one FFT power per distinct component.
"""

from __future__ import annotations

import functools
from typing import Any, Iterable

import attrs

from .pair import Pair
from .pld import PLD, compose_plds
from .profile import PrivacyProfile
from .rdp import RDP
from .tradeoff import TradeOff
from .validation import check_count
from .zcdp import ZCDP

__all__ = ["compose", "ComposedPair"]


def compose(*curves):
    """Compose curves of one kind (``PLD``, ``RDP`` or ``ZCDP``) left to right."""
    if not curves:
        raise ValueError("compose() needs at least one curve")
    kinds = {type(c) for c in curves}
    if len(kinds) > 1:
        raise TypeError("compose() needs curves of one kind; convert them first with .to()")
    return functools.reduce(lambda a, b: a.compose(b), curves)


def _components(value: Iterable) -> tuple:
    out = []
    for pair, count in value:
        if not isinstance(pair, Pair):
            raise TypeError(f"components must be pairs, got {type(pair).__name__}")
        out.append((pair, check_count("count", count)))
    if not out:
        raise ValueError("a composed pair needs at least one component")
    return tuple(out)


@attrs.frozen(eq=False, slots=False)  # slots off: the PLD is cached on the instance
class ComposedPair(Pair):
    """The product of ``components`` = ((pair, count), …) in both directions."""

    components: tuple = attrs.field(converter=_components)

    @property
    def exact(self) -> bool:  # type: ignore[override]
        return False  # its profile comes from a discretised PLD

    def curve(self, kind: type, **options: Any):
        if kind is PLD:
            # a closed-form n-fold product (Gaussians: μ ↦ μ√n) beats an FFT power
            parts = []
            for p, c in self.components:
                closed = p._self_compose(c) if c > 1 else None
                parts.append((closed.curve(PLD, **options), 1) if closed is not None
                             else (p.curve(PLD, **options), c))
            return compose_plds(parts)
        if kind in (RDP, ZCDP):
            parts = [p.curve(kind, **options).self_compose(c) if c > 1 else p.curve(kind, **options)
                     for p, c in self.components]
            return compose(*parts)
        if kind in (PrivacyProfile, TradeOff):
            return self.curve(PLD, **options).to(kind, **options)
        return super().curve(kind, **options)

    @functools.cached_property
    def _pld(self) -> PLD:
        return self.curve(PLD)

    def _profile(self, eps, direction):
        return self._pld.law(direction, "upper").delta(eps)

    def _profile_lower(self, eps, direction):
        return self._pld.law(direction, "lower").delta(eps)

    def describe(self) -> str:
        return " ⊗ ".join(f"{p.describe()}^{c}" if c > 1 else p.describe()
                          for p, c in self.components)
