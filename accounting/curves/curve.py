"""What every privacy curve shares: provenance, bracket sides, and ``to``.

Each curve describes one ordered pair in both directions and carries an ``upper``
side (sound: it reports at least the true privacy loss — larger δ and ε, smaller β,
larger Rényi divergence) and, where one is known, a ``lower`` side. Exact curves have
both sides equal. ``provenance`` records how the curve was obtained and whether the
path was exact, a bound, or numerical (``Exactness``).
"""

from __future__ import annotations

import enum
import numbers
import typing
from typing import Any, Callable, Optional

import attrs
import numpy as np

from accounting.vocabulary import Bound, Direction, Exactness, as_bound, as_direction

__all__ = ["Exactness", "Provenance", "Curve", "directional_max"]


@attrs.frozen
class Provenance:
    """How a curve came to be: the source and the converters applied, and the label."""

    exactness: Exactness = attrs.field(default=Exactness.EXACT,
                                       validator=attrs.validators.instance_of(Exactness))
    path: tuple[str, ...] = attrs.field(
        default=(), converter=lambda p: (p,) if isinstance(p, str) else tuple(p))

    def then(self, step: str, exactness: Exactness) -> "Provenance":
        combined = self.exactness.then(exactness)
        if combined is None:
            raise ValueError(f"cannot chain a {self.exactness.value} with a {exactness.value}")
        return Provenance(combined, self.path + (step,))

    def join(self, other: "Provenance") -> "Provenance":
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


def directional_max(fn: Callable[[Direction], np.ndarray], direction: "Direction | str") -> np.ndarray:
    """max over the concrete directions of ``direction`` of fn(d)."""
    comps = as_direction(direction).components
    return np.max([fn(d) for d in comps], axis=0) if len(comps) > 1 else fn(comps[0])


def _side_spec(cls: type) -> dict:
    """{side name: its declared type, Optional unwrapped} from a curve class's
    annotations (cached): what ``Curve.__attrs_post_init__`` checks against."""
    spec = _SPECS.get(cls)
    if spec is None:
        try:
            hints = typing.get_type_hints(cls)
        except (NameError, TypeError):   # a plugin's curve with unresolvable annotations
            hints = {}
        spec = {}
        for name in ("upper", "lower"):
            hint = hints.get(name)
            if typing.get_origin(hint) is typing.Union:   # Optional[X]
                hint = next(a for a in typing.get_args(hint) if a is not type(None))
            spec[name] = hint
        _SPECS[cls] = spec
    return spec


_SPECS: dict = {}


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


@attrs.frozen(eq=False)
class Curve:
    """Base class: conversion by ``to``, bracket-side selection, and a check of the
    contents when built (each side against its declared type, the provenance)."""

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
        from accounting.conversion.graph import convert
        return convert(self, kind, registry=registry, allow_lower=allow_lower, **options)

    @property
    def is_exact(self) -> bool:
        return self.provenance.exactness is Exactness.EXACT
