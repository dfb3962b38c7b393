"""What every privacy curve shares: provenance, bracket sides, and ``to``.

Each curve describes one ordered pair in both directions and carries an ``upper``
side (sound: it reports at least the true privacy loss — larger δ and ε, smaller β,
larger Rényi divergence) and, where one is known, a ``lower`` side. Exact curves have
both sides equal. ``provenance`` records how the curve was obtained and whether the
path was exact or a bound.
"""

from __future__ import annotations

import enum
from typing import Any, Callable, Optional

import attrs
import numpy as np

from .direction import Bound, Direction, as_bound, as_direction

__all__ = ["Exactness", "Provenance", "Curve", "directional_max"]


class Exactness(enum.Enum):
    """What a converter (or a chain of them) guarantees about its result.

    ``EXACT``: carries the same information (each side maps to the same side).
    ``UPPER``: the result over-reports privacy loss — a sound bound; only the upper
    side survives. ``LOWER``: under-reports; only the lower side survives.
    """

    EXACT = "exact"
    UPPER = "upper bound"
    LOWER = "lower bound"

    def then(self, other: "Exactness") -> Optional["Exactness"]:
        """The label of a chain: this step, then ``other``; None if it means nothing."""
        if self is Exactness.EXACT:
            return other
        if other is Exactness.EXACT or other is self:
            return self
        return None


@attrs.frozen
class Provenance:
    """How a curve came to be: the source and the converters applied, and the label."""

    exactness: Exactness = Exactness.EXACT
    path: tuple[str, ...] = ()

    def then(self, step: str, exactness: Exactness) -> "Provenance":
        combined = self.exactness.then(exactness)
        if combined is None:
            raise ValueError(f"cannot chain a {self.exactness.value} with a {exactness.value}")
        return Provenance(combined, self.path + (step,))

    def join(self, other: "Provenance") -> "Provenance":
        """The provenance of a composition of two curves."""
        worst = self.exactness.then(other.exactness)
        if worst is None:
            raise ValueError("cannot compose an upper-bound curve with a lower-bound one")
        path = self.path if self.path == other.path else self.path + other.path
        return Provenance(worst, path)

    def __str__(self) -> str:
        route = " → ".join(self.path) if self.path else "source"
        return f"{self.exactness.value} ({route})"


def directional_max(fn: Callable[[Direction], np.ndarray], direction: "Direction | str") -> np.ndarray:
    """max over the concrete directions of ``direction`` of fn(d)."""
    comps = as_direction(direction).components
    return np.max([fn(d) for d in comps], axis=0) if len(comps) > 1 else fn(comps[0])


@attrs.frozen(eq=False)
class Curve:
    """Base class: conversion by ``to`` and bracket-side selection."""

    def _side(self, bound: "Bound | str") -> Any:
        b = as_bound(bound)
        if b is Bound.UPPER and self.provenance.exactness is Exactness.LOWER:
            raise ValueError(f"this {type(self).__name__} came from a lower-bound conversion "
                             f"({self.provenance}); only bound='lower' queries are meaningful")
        side = getattr(self, b.value)
        if side is None:
            raise ValueError(f"this {type(self).__name__} has no {b.value} side "
                             f"(it came from a one-sided bound: {self.provenance})")
        return side

    def to(self, kind: type, *, registry=None, allow_lower: bool = False, **options) -> "Curve":
        """Convert to another curve kind along the best registered path; lower-bound
        converters are used only with ``allow_lower``."""
        from .convert import convert
        return convert(self, kind, registry=registry, allow_lower=allow_lower, **options)

    @property
    def is_exact(self) -> bool:
        return self.provenance.exactness is Exactness.EXACT
