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

The μ-GDP summary of a curve (``gdp_mu``, ``tradeoff_gdp_mu``): μ-GDP (Dong, Roth, Su, arXiv:1905.02383, Def. 2.6–2.7): a mechanism is μ-GDP when its
trade-off function is at least G_μ(α) = Φ(Φ⁻¹(1 − α) − μ), the trade-off between
N(0, 1) and N(μ, 1). Solving G_μ(α) = β for μ at one α gives

    μ = Φ⁻¹(1 − α) − Φ⁻¹(β),

the μ whose Gaussian trade-off passes through (α, β). Read at a single α it is a
summary of the curve, **not a bound**: the curve may dip below G_μ elsewhere. μ = 0
when β ≥ 1 − α (no test beats a coin there) and μ = ∞ when β = 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from accounting.curves.curve import as_kind
from accounting.validation import check_array
from accounting.vocabulary import Bound, Direction, as_bound, as_direction

__all__ = ["tpr_at_fpr", "advantage", "bayes_risk", "gdp_mu", "tradeoff_gdp_mu", "GDP_ALPHA"]


def tpr_at_fpr(curve: Any, fpr: "np.ndarray | float", *, direction: "Direction | str" = "max",
               bound: "Bound | str" = "upper") -> np.ndarray:
    """The largest true-positive rate of any attack at false-positive rate ``fpr``:
    1 − T(fpr). With ``bound="upper"`` (default) a certified upper bound on every
    attack's TPR; ``bound="lower"`` gives the optimistic side beside it."""
    from accounting.curves.tradeoff import TradeOff
    a = check_array("fpr", fpr, lo=0.0, hi=1.0)
    side = as_bound(bound)
    trade = as_kind(curve, TradeOff)
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
    profile = as_kind(curve, PrivacyProfile)
    return float(profile.delta(0.0, as_direction(direction), as_bound(bound)))


def bayes_risk(curve: Any, prior: float, *, direction: "Direction | str" = "max",
               bound: "Bound | str" = "upper") -> float:
    """The smallest error probability of any attack when the target is present with
    probability ``prior`` (π in (0, 1)): π·(1 − δ(log((1 − π)/π))), with δ the
    profile in the direction that tests presence against absence; for ``max`` the
    worst direction. With ``bound="upper"`` (default) the profile's certified side,
    so the value is a certified **lower** bound on every attack's error."""
    pi = float(check_array("prior", prior, lo=0.0, hi=1.0, lo_open=True, hi_open=True))
    from accounting.curves.profile import PrivacyProfile
    profile = as_kind(curve, PrivacyProfile)
    d = as_direction(direction)
    # the attack errs on a member with prob. π·FNR and on a non-member with (1−π)·FPR;
    # the hockey-stick form needs the direction whose alternative is "member present"
    d = d.reverse() if d is not Direction.MAX else d
    delta = float(profile.delta(np.log((1.0 - pi) / pi), d, as_bound(bound)))
    return pi * (1.0 - delta)

#: the α at which ``tradeoff_gdp_mu`` reads the curve by default
GDP_ALPHA = 0.01


def gdp_mu(alpha: Any, beta: Any) -> "float | np.ndarray":
    """μ with G_μ(α) = β, G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) (arXiv:1905.02383, Def. 2.7).

    ``alpha`` in (0, 1), ``beta`` in [0, 1], broadcast together; μ = Φ⁻¹(1 − α) −
    Φ⁻¹(β), clipped at 0 (β ≥ 1 − α), ∞ at β = 0. A float for scalar input. A summary
    of one point of a trade-off curve, not a privacy bound (see the module docstring).
    """
    from scipy.special import ndtri  # scipy.special costs ~0.4 s: not at import
    a = check_array("alpha", alpha, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    b = check_array("beta", beta, lo=0.0, hi=1.0)
    a, b = np.broadcast_arrays(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = np.maximum(ndtri(1.0 - a) - ndtri(b), 0.0)
    mu = np.where(b <= 0.0, np.inf, mu)
    mu = np.where(b >= 1.0 - a, 0.0, mu)
    return float(mu) if mu.ndim == 0 else mu


def tradeoff_gdp_mu(tradeoff: Any, alpha: float = GDP_ALPHA, *,
                    direction: str = "max") -> float:
    """The μ of ``gdp_mu`` at the point (α, β(α)) of a ``TradeOff`` curve.

    β is the curve's sound side (``bound="upper"``), min over the neighbouring
    directions by default (``direction``): the less private of the two.
    """
    from accounting.curves.tradeoff import TradeOff
    if not isinstance(tradeoff, TradeOff):
        raise TypeError(f"tradeoff must be a TradeOff, got {type(tradeoff).__name__}")
    a = float(check_array("alpha", alpha, lo=0.0, hi=1.0, lo_open=True, hi_open=True))
    beta = float(np.atleast_1d(tradeoff.beta(np.array([a]), direction))[0])
    return float(gdp_mu(a, beta))
