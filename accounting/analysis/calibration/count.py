"""Count calibration: the largest number of uses of a mechanism that meets ε(δ) ≤ ε
(a number of steps or epochs): ε grows with the count, so doubling from 1, then
integer bisection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from accounting.accountant import check_accountant
from accounting.analysis.calibration.search import Problem
from accounting.curves.pld import DEFAULT_STEP
from accounting.ledger import Ledger
from accounting.pairs.mechanism import Mechanism
from accounting.validation import check_count, check_positive, check_probability
from accounting.vocabulary import Direction, as_direction

__all__ = ["calibrate_count"]


def calibrate_count(mechanism: Any, *, epsilon: float, delta: float, accountant: str = "pld",
                    step: float = DEFAULT_STEP, direction: Direction | str = "max",
                    max_count: int = 10 ** 7) -> int:
    """The **largest** number of uses k ≤ ``max_count`` of ``mechanism`` (a
    ``Mechanism``) whose composition meets ε(δ) ≤ ``epsilon`` (a number of steps or
    epochs): ε grows with k, so doubling from 1 then integer bisection; 0 when a single
    use already exceeds the target. Each ε is the accountant's upper bound, worst over
    ``direction``'s components."""
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
    target = check_positive("epsilon", epsilon)
    accountant = check_accountant(accountant)
    delta = check_probability("delta", delta, lo_open=accountant != "pld")
    max_count = check_count("max_count", max_count)
    problem = Problem(lambda k: Ledger.of(mechanism, int(k)), delta, accountant,
                       check_positive("step", step), as_direction(direction))
    try:
        return _largest_count(lambda k: problem.epsilon(float(k)) <= target, max_count)
    finally:
        problem.bar.close()


def _largest_count(ok: Callable[[int], bool], max_count: int) -> int:
    """The largest k ≤ ``max_count`` with ``ok(k)`` for a predicate that holds up to some
    k and fails after (0 if it fails at 1): doubling from 1, then integer bisection."""
    if not ok(1):
        return 0
    good, bad = 1, None
    while bad is None:
        nxt = min(good * 2, max_count)
        if nxt == good:
            return good
        if ok(nxt):
            good = nxt
        else:
            bad = nxt
    while bad - good > 1:
        mid = (good + bad) // 2
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good
