"""Directions of an ordered pair (P, Q), and which side of a bracket to report.

A pair answers both directions: ``FORWARD`` is P‖Q (privacy loss L = log dP/dQ under
P) and ``BACKWARD`` is Q‖P (loss −L under Q). For add/remove neighbouring the two
directions are the remove and add relations, so an accountant's answer is the
``MAX`` over both (Zhu, Dong, Wang 2022, "Optimal accounting of differential privacy
via characteristic function", §2; unifying-accounting paper, Thm 1).
"""

from __future__ import annotations

import enum

__all__ = ["Direction", "Bound", "as_direction", "as_bound"]


class Direction(enum.Enum):
    FORWARD = "forward"
    BACKWARD = "backward"
    MAX = "max"

    @property
    def components(self) -> tuple["Direction", ...]:
        """The concrete directions a query over ``self`` ranges over."""
        if self is Direction.MAX:
            return (Direction.FORWARD, Direction.BACKWARD)
        return (self,)

    def reverse(self) -> "Direction":
        return {Direction.FORWARD: Direction.BACKWARD,
                Direction.BACKWARD: Direction.FORWARD}.get(self, self)


class Bound(enum.Enum):
    """Which side of a certified bracket: ``UPPER`` reports at least the true privacy
    loss (sound, the default everywhere); ``LOWER`` at most."""
    UPPER = "upper"
    LOWER = "lower"


def _parse(enum_cls: type, value: object, parameter: str) -> "enum.Enum":
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


def as_direction(value: "Direction | str", parameter: str = "direction") -> Direction:
    """A ``Direction`` from the enum or its exact string ('forward', 'backward', 'max');
    TypeError for anything else than those types, ValueError for another string."""
    return _parse(Direction, value, parameter)


def as_bound(value: "Bound | str", parameter: str = "bound") -> Bound:
    """A ``Bound`` from the enum or its exact string ('upper', 'lower'); TypeError for
    anything else than those types, ValueError for another string (no case folding)."""
    return _parse(Bound, value, parameter)
