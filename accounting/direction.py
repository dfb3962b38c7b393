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


def as_direction(value: "Direction | str") -> Direction:
    if isinstance(value, Direction):
        return value
    try:
        return Direction(str(value).lower())
    except ValueError:
        raise ValueError(f"direction must be one of 'forward', 'backward', 'max', got {value!r}") from None


def as_bound(value: "Bound | str") -> Bound:
    if isinstance(value, Bound):
        return value
    try:
        return Bound(str(value).lower())
    except ValueError:
        raise ValueError(f"bound must be 'upper' or 'lower', got {value!r}") from None
