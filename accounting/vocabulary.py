"""The vocabulary every layer shares: directions, sides of a bracket, exactness, and the
array types of the annotations (``FloatArray``, ``ArrayLike``).

Directions of an ordered pair (P, Q), and which side of a bracket to report.

A pair answers both directions: ``FORWARD`` is P‖Q (privacy loss L = log dP/dQ under
P) and ``BACKWARD`` is Q‖P (loss −L under Q). For add/remove neighbouring the two
directions are the remove and add relations, so an accountant's answer is the
``MAX`` over both (Zhu, Dong, Wang 2022, "Optimal accounting of differential privacy
via characteristic function", §2; unifying-accounting paper, Thm 1).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["Direction", "Bound", "Exactness", "InvariantError", "as_direction", "as_bound",
           "bind_direction",
           "FloatArray", "IntArray", "AnyArray", "ArrayLike"]

#: an array of float64, what the vectorised primitives return (losses, masses, δ(ε), K(t))
FloatArray: TypeAlias = npt.NDArray[np.float64]
#: an array of integers (indices, counts, grid coordinates)
IntArray: TypeAlias = npt.NDArray[np.integer[Any]]
#: an array of any dtype: draws of a mechanism's outputs (integers for a discrete one)
AnyArray: TypeAlias = npt.NDArray[Any]
#: what a vectorised input accepts: a number, a sequence of numbers or an array
ArrayLike: TypeAlias = npt.ArrayLike

_E = TypeVar("_E", bound=enum.Enum)


class Direction(enum.Enum):
    FORWARD = "forward"
    BACKWARD = "backward"
    MAX = "max"

    @property
    def components(self) -> tuple[Direction, ...]:
        """The concrete directions a query over ``self`` ranges over."""
        if self is Direction.MAX:
            return (Direction.FORWARD, Direction.BACKWARD)
        return (self,)

    def reverse(self) -> Direction:
        return {Direction.FORWARD: Direction.BACKWARD,
                Direction.BACKWARD: Direction.FORWARD}.get(self, self)


class Bound(enum.Enum):
    """Which side of a certified bracket: ``UPPER`` reports at least the true privacy
    loss (sound, the default everywhere); ``LOWER`` at most."""
    UPPER = "upper"
    LOWER = "lower"


def _parse(enum_cls: type[_E], value: object, parameter: str) -> _E:
    """``value`` as a member of ``enum_cls``: the member itself or its exact string value.

    The one parser of every public ``direction=``/``bound=`` argument: no case folding
    and no other spellings, so a typo is an error rather than a silent other side.
    """
    if isinstance(value, enum_cls):
        return value
    allowed = ", ".join(repr(m.value) for m in enum_cls)
    if not isinstance(value, str):
        raise TypeError(f"{parameter} must be a {enum_cls.__name__} or one of the strings "
                        f"{allowed}, got {type(value).__name__} ({value!r})")
    for member in enum_cls:
        if value == member.value:
            return member
    values = [repr(m.value) for m in enum_cls]
    words = (" or ".join(values) if len(values) == 2 else "one of " + ", ".join(values))
    members = ", ".join(f"{enum_cls.__name__}.{m.name}" for m in enum_cls)
    raise ValueError(f"{parameter} must be {words} (or {members}; exact spelling), "
                     f"got {value!r}")


def as_direction(value: Direction | str, parameter: str = "direction") -> Direction:
    """A ``Direction`` from the enum or its exact string ('forward', 'backward', 'max');
    TypeError for anything else than those types, ValueError for another string."""
    return _parse(Direction, value, parameter)


def as_bound(value: Bound | str, parameter: str = "bound") -> Bound:
    """A ``Bound`` from the enum or its exact string ('upper', 'lower'); TypeError for
    anything else than those types, ValueError for another string (no case folding)."""
    return _parse(Bound, value, parameter)


class Exactness(enum.Enum):
    """What a curve's numbers are, and what a converter (or a chain) guarantees.

    ``EXACT``: carries the same information (each side maps to the same side; a
    curve labelled exact is exact, or a certified bracket whose sides are exact
    for a dominating and a dominated pair, as a PLD's are).
    ``UPPER``: the result over-reports privacy loss — a sound bound. Its ``upper``
    side is certified; a ``lower`` side, where present, is a certified lower bound.
    ``LOWER``: under-reports; only the lower side is meaningful.
    ``NUMERICAL``: a numerical value with a stated (not certified) error, for
    example a quadrature: neither exact nor a bound. Both sides of such a curve hold
    the estimate (it may fall on either side of the truth), ``is_exact`` is False,
    and ``str(provenance)`` says "numerical".

    Chains (``then``) and compositions (``join``) keep the weakest guarantee:

    ========= ========= ========= ========= =========
    ·         EXACT     UPPER     LOWER     NUMERICAL
    ========= ========= ========= ========= =========
    EXACT     EXACT     UPPER     LOWER     NUMERICAL
    UPPER     UPPER     UPPER     —         NUMERICAL
    LOWER     LOWER     —         LOWER     —
    NUMERICAL NUMERICAL NUMERICAL —         NUMERICAL
    ========= ========= ========= ========= =========

    (— : meaningless, refused.) An upper bound of a numerical value is only as good
    as the value, so it stays numerical; a lower bound of one, or a numerical value
    of a lower bound, could be mistaken for a sound side, so it is refused.
    """

    EXACT = "exact"
    UPPER = "upper bound"
    LOWER = "lower bound"
    NUMERICAL = "numerical"

    def then(self, other: Exactness) -> Exactness | None:
        """The label of a chain: this step, then ``other``; None if it means nothing."""
        if not isinstance(other, Exactness):
            raise TypeError(f"expected an Exactness, got {type(other).__name__} ({other!r})")
        if self is Exactness.EXACT:
            return other
        if other is Exactness.EXACT or other is self:
            return self
        if Exactness.LOWER in (self, other):
            return None
        return Exactness.NUMERICAL   # UPPER with NUMERICAL, either order

    @property
    def certified(self) -> bool:
        """Whether the default (upper) side of a curve with this label is a certified
        value: exact or a sound upper bound."""
        return self in (Exactness.EXACT, Exactness.UPPER)


class InvariantError(RuntimeError):
    """A broken internal invariant: a bug of the library (or of a plugin's numerics),
    never the user's input. The command line reports it as an internal error (exit 1,
    "please report"), not as a usage error."""


_R = TypeVar("_R")


def bind_direction(fn: Callable[[Any, Direction], _R], direction: Direction
                   ) -> Callable[[Any], _R]:
    """``fn`` with its neighbouring direction fixed: x ↦ fn(x, direction) (one curve side
    in one direction, as the one-argument functions of the converters take it)."""
    def bound(x: Any) -> _R:
        return fn(x, direction)
    return bound
