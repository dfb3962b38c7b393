"""Operational risk from a privacy curve: what an attacker can achieve.

A membership-inference attack is a test between the two output distributions of a
pair (P, Q). Every figure below is a sound bound for **every** attack, read off the
curve's certified (upper) side, and says which way it bounds:

* ``tpr_at_fpr`` — the largest true-positive rate at a false-positive rate α:
  TPR ≤ 1 − T(α), with T the trade-off function (Dong, Roth, Su, arXiv:1905.02383,
  Def. 2.1; Kulynych et al., "Attack-aware noise calibration", arXiv:2407.02191, §3).
  An upper bound on the attacker's TPR.
* ``advantage`` — the largest TPR − FPR, sup_α (1 − α − T(α)) = δ(0), the total
  variation distance (Kairouz, Oh, Viswanath, arXiv:1311.0776, §2;
  arXiv:2407.02191, §3). An upper bound.
* ``bayes_risk`` — the smallest error probability of any attack when the target is a
  member with prior probability π: min over tests of (1 − π)·FPR + π·FNR
  = π·(1 − δ_{Q‖P}(log((1 − π)/π))) (the hockey-stick form of the Bayes risk,
  Balle et al., "Hypothesis testing interpretations and Rényi DP", arXiv:1905.09982,
  §3). A lower bound on the attacker's error; its complement bounds the success
  probability from above.

For ``direction="max"`` (the default) each figure is the worst over both
directions, which is the right bound for add/remove neighbouring where either
dataset may be the one with the target.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from accounting.validation import check_array
from accounting.vocabulary import Bound, Direction, as_bound, as_direction

__all__ = ["tpr_at_fpr", "advantage", "bayes_risk"]


def _curve(curve: Any, kind: type) -> Any:
    """``curve`` as ``kind``; anything that is not a curve is a TypeError."""
    from accounting.curves.curve import Curve
    if isinstance(curve, kind):
        return curve
    if not isinstance(curve, Curve):
        raise TypeError(f"curve must be a privacy curve (PLD, PrivacyProfile, TradeOff, RDP "
                        f"or ZCDP), got {type(curve).__name__}")
    return curve.to(kind)


def _worst_side(bound: "Bound | str") -> Bound:
    """The side of the curve that gives the attacker the most (the default, sound)."""
    return as_bound(bound)


def tpr_at_fpr(curve: Any, fpr: "np.ndarray | float", *, direction: "Direction | str" = "max",
               bound: "Bound | str" = "upper") -> np.ndarray:
    """The largest true-positive rate of any attack at false-positive rate ``fpr``:
    1 − T(fpr). With ``bound="upper"`` (default) a certified upper bound on every
    attack's TPR; ``bound="lower"`` gives the optimistic side beside it."""
    from accounting.curves.tradeoff import TradeOff
    a = check_array("fpr", fpr, lo=0.0, hi=1.0)
    side = _worst_side(bound)
    trade = _curve(curve, TradeOff)
    beta = trade.beta(a, as_direction(direction), side)
    # 1 − β is exact in floating point for β ≥ ½ (Sterbenz), but β itself was rounded to
    # the nearest double, up to half an ulp of 1 either way: widen by that much outward
    # so a tiny TPR (β near 1) is never under-reported on the certified side
    ulp = np.finfo(float).epsneg
    tpr = 1.0 - beta + (ulp if side is Bound.UPPER else -ulp)
    return np.clip(tpr, a, 1.0) if side is Bound.UPPER else np.clip(tpr, 0.0, 1.0)


def advantage(curve: Any, *, direction: "Direction | str" = "max",
              bound: "Bound | str" = "upper") -> float:
    """The largest TPR − FPR of any attack: δ(0), the total variation distance between
    the pair's distributions. ``bound="upper"`` (default) is a certified upper bound."""
    from accounting.curves.profile import PrivacyProfile
    profile = _curve(curve, PrivacyProfile)
    return float(profile.delta(0.0, as_direction(direction), _worst_side(bound)))


def bayes_risk(curve: Any, prior: float, *, direction: "Direction | str" = "max",
               bound: "Bound | str" = "upper") -> float:
    """The smallest error probability of any attack when the target is present with
    probability ``prior`` (π in (0, 1)): π·(1 − δ(log((1 − π)/π))), with δ the
    profile in the direction that tests presence against absence; for ``max`` the
    worst direction. With ``bound="upper"`` (default) the profile's certified side,
    so the value is a certified **lower** bound on every attack's error."""
    pi = float(check_array("prior", prior, lo=0.0, hi=1.0, lo_open=True, hi_open=True))
    from accounting.curves.profile import PrivacyProfile
    profile = _curve(curve, PrivacyProfile)
    d = as_direction(direction)
    # the attack errs on a member with prob. π·FNR and on a non-member with (1−π)·FPR;
    # the hockey-stick form needs the direction whose alternative is "member present"
    d = d.reverse() if d is not Direction.MAX else d
    delta = float(profile.delta(np.log((1.0 - pi) / pi), d, _worst_side(bound)))
    return pi * (1.0 - delta)
