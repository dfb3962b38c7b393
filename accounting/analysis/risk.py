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

From a Rényi curve (an ``RDP`` or ``ZCDP`` curve, or ``accountant="rdp"``/``"zcdp"``)
``tpr_at_fpr`` uses the binary data-processing bound directly, not the (ε, δ) profile:
a test of FPR a = E_P[φ] and TPR τ = E_Q[φ] post-processes (P, Q) into
(Bern(a), Bern(τ)), so for every order α > 1 (t = α − 1)

    log(τ^α a^{−t} + (1 − τ)^α (1 − a)^{−t}) ≤ K_{Q‖P}(t),
    log(a^α τ^{−t} + (1 − a)^α (1 − τ)^{−t}) ≤ K_{P‖Q}(t)

(Balle et al., arXiv:1905.09982, §3; Zhu, Dong, Wang, arXiv:2106.08567, §3: the
trade-off function implied by a Rényi curve). Both left sides increase in τ ≥ a, so
each order caps τ; the reported TPR is the min over a log-grid of orders of the
bisected cap's upper end — sound for any grid, since every order gives a valid cap.
``advantage`` and ``bayes_risk`` of a Rényi curve read its profile (the improved
conversion, Canonne, Kamath, Steinke 2020, Prop. 12), also an upper bound on δ.

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
import numpy.typing as npt

from accounting.curves.curve import as_kind
from accounting.validation import check_array
from accounting.vocabulary import Bound, Direction, FloatArray, as_bound, as_direction

__all__ = ["tpr_at_fpr", "advantage", "bayes_risk", "gdp_mu", "tradeoff_gdp_mu", "GDP_ALPHA",
           "renyi_tpr_at_fpr", "risk_curve"]

#: orders α = 1 + t of the Rényi → TPR bound: a coarse log-grid, then a fine one
#: around its best order (any order is sound; the grid only decides how tight)
_T_COARSE = np.geomspace(1e-3, 1e4, 71)
_T_FINE = 33
#: bisection steps on τ: the bracket is then below 1e-15 wide
_BISECT = 60


def risk_curve(obj: Any, accountant: str = "pld") -> Any:
    """The curve a risk figure reads: ``obj`` itself if it is a privacy curve (then
    ``accountant`` must stay ``"pld"``, its default), else the ``accountant`` curve
    (``"pld"``, ``"rdp"`` or ``"zcdp"``) of a mechanism, ledger or accountant."""
    from accounting.accountant import ACCOUNTANTS, Accountant, check_accountant
    from accounting.curves.curve import Curve
    from accounting.ledger import Ledger
    from accounting.pairs.mechanism import Mechanism
    name = check_accountant(accountant)
    if isinstance(obj, Curve):
        if name != "pld":
            raise ValueError(f"accountant={accountant!r} applies to a mechanism, ledger or "
                             f"accountant; a {type(obj).__name__} curve is read as it is")
        return obj
    kind = ACCOUNTANTS[name]
    if isinstance(obj, Accountant):
        return obj.curve(kind)
    if isinstance(obj, Ledger):
        return Accountant.of(obj).curve(kind)
    if isinstance(obj, Mechanism):
        return obj.curve(kind)
    raise TypeError(f"curve must be a privacy curve (PLD, PrivacyProfile, TradeOff, RDP or "
                    f"ZCDP), a mechanism, a ledger or an accountant, got {type(obj).__name__}")


def _binary_log_moment(a: FloatArray, tau: FloatArray, t: FloatArray) -> FloatArray:
    """log(τ^{1+t} a^{−t} + (1 − τ)^{1+t} (1 − a)^{−t}) = t·D_{1+t}(Bern(τ)‖Bern(a)),
    elementwise (0·log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x = (1.0 + t) * np.log(tau) - t * np.log(a)
        y = (1.0 + t) * np.log1p(-tau) - t * np.log1p(-a)
    x = np.where(tau == 0.0, -np.inf, x)
    y = np.where(tau == 1.0, -np.inf, y)
    return np.logaddexp(x, y)


def _tpr_caps(a: FloatArray, t: FloatArray, k_fwd: FloatArray, k_bwd: FloatArray) -> FloatArray:
    """For each FPR a (rows) and order 1 + t (columns): the upper end of a bisection
    bracket on the largest τ ∈ [a, 1] meeting both binary Rényi constraints, bisected
    at geometric midpoints (relative precision ~1e-15 at any a > 0; halving [a, 1]
    left 8.7e-19 absolute, 1e-300 became 8.7e-19). K = 0 in both directions at an
    order is D_α = 0, i.e. P = Q: the cap is a itself."""
    aa, tt = np.broadcast_arrays(a[:, None], t[None, :])
    kf, kb = np.broadcast_to(k_fwd[None, :], aa.shape), np.broadcast_to(k_bwd[None, :], aa.shape)

    def ok(tau: FloatArray) -> npt.NDArray[np.bool_]:
        return ((_binary_log_moment(aa, tau, tt) <= kb)
                & (_binary_log_moment(tau, aa, tt) <= kf))
    lo, hi = aa.copy(), np.ones(aa.shape)
    done = ok(hi)                          # the constraint does not bind at all
    for _ in range(_BISECT):
        mid = np.sqrt(lo) * np.sqrt(hi)    # (a product of square roots: no underflow)
        good = ok(mid)
        lo, hi = np.where(good, mid, lo), np.where(good, hi, mid)
    return np.where(done, 1.0, np.where((kf <= 0) & (kb <= 0), aa, hi))


def renyi_tpr_at_fpr(cgf_fwd: Any, cgf_bwd: Any, fpr: FloatArray) -> FloatArray:
    """The largest TPR at each FPR ``fpr`` allowed by Rényi curves K_{P‖Q} = ``cgf_fwd``
    and K_{Q‖P} = ``cgf_bwd`` (callables t ↦ K(t), upper bounds) for the trade-off
    T(P, Q) (FPR under P, TPR under Q): an upper bound (module docstring)."""
    a = np.asarray(fpr, dtype=float).ravel()
    inner = (a > 0.0) & (a < 1.0)
    out = np.where(a >= 1.0, 1.0, 0.0)       # a = 0: τ = 0 unless the pair has mass apart
    if np.any(a == 0.0):
        # at FPR 0 the cap is the τ of the t → ∞ limit; bound it by the smallest FPR
        # the grid handles (β is non-increasing in α, so TPR(0) ≤ TPR(1e-300))
        out = np.where(a == 0.0, renyi_tpr_at_fpr(cgf_fwd, cgf_bwd, np.array([1e-300]))[0], out)
    if not np.any(inner):
        return out
    ai = a[inner]

    def caps(t: FloatArray) -> FloatArray:
        kf = np.asarray(cgf_fwd(t), dtype=float)
        kb = np.asarray(cgf_bwd(t), dtype=float)
        kf = np.where(np.isnan(kf), np.inf, kf)
        kb = np.where(np.isnan(kb), np.inf, kb)
        return _tpr_caps(ai, t, kf, kb)
    coarse = caps(_T_COARSE)
    j = np.argmin(coarse, axis=1)
    best = coarse[np.arange(ai.size), j]
    for i in range(ai.size):   # a fine grid between the best coarse order's neighbours
        lo_t = _T_COARSE[max(j[i] - 1, 0)]
        hi_t = _T_COARSE[min(j[i] + 1, _T_COARSE.size - 1)]
        fine = caps(np.geomspace(lo_t, hi_t, _T_FINE))[i]
        best[i] = min(best[i], float(np.min(fine)))
    out[inner] = np.maximum(best, ai)
    return out


def _renyi_tpr(curve: Any, fpr: FloatArray, direction: Direction) -> FloatArray:
    """``renyi_tpr_at_fpr`` of an RDP or ZCDP curve, worst over ``direction``'s components."""
    from accounting.curves.rdp import RDP
    rdp = as_kind(curve, RDP)
    assert isinstance(rdp, RDP)            # as_kind(curve, RDP) converts to an RDP
    out: FloatArray | None = None
    for d in direction.components:
        def fwd(t: FloatArray, d: Direction = d) -> FloatArray:
            return rdp.cgf(t, d)

        def bwd(t: FloatArray, d: Direction = d) -> FloatArray:
            return rdp.cgf(t, d.reverse())
        v = renyi_tpr_at_fpr(fwd, bwd, fpr)
        out = v if out is None else np.maximum(out, v)
    assert out is not None                 # a direction has at least one component
    return out


def tpr_at_fpr(curve: Any, fpr: FloatArray | float, *, direction: Direction | str = "max",
               bound: Bound | str = "upper", accountant: str = "pld") -> FloatArray:
    """The largest true-positive rate of any attack at false-positive rate ``fpr``:
    1 − T(fpr). With ``bound="upper"`` (default) a certified upper bound on every
    attack's TPR; ``bound="lower"`` gives the optimistic side beside it.

    ``curve``: a privacy curve, or a mechanism / ledger / accountant whose
    ``accountant`` curve (``"pld"``, ``"rdp"``, ``"zcdp"``) is read. A Rényi curve
    (RDP, zCDP) goes through the binary Rényi bound of the module docstring — an upper
    bound on the TPR as well (its upper side only)."""
    from accounting.curves.rdp import RDP
    from accounting.curves.tradeoff import TradeOff
    from accounting.curves.zcdp import ZCDP
    a = check_array("fpr", fpr, lo=0.0, hi=1.0)
    side = as_bound(bound)
    curve = risk_curve(curve, accountant)
    if isinstance(curve, (RDP, ZCDP)):
        if side is not Bound.UPPER:
            raise ValueError("tpr_at_fpr of a Rényi curve has only its upper side "
                             "(bound='upper'); the optimistic side needs the PLD")
        tpr = _renyi_tpr(curve, np.atleast_1d(a), as_direction(direction))
        return np.clip(tpr, np.atleast_1d(a), 1.0).reshape(np.shape(a))
    trade = as_kind(curve, TradeOff)
    assert isinstance(trade, TradeOff)     # as_kind(curve, TradeOff) converts to one
    power = getattr(trade.upper, "power", None) if side is Bound.UPPER else None
    if power is not None:
        # loss laws: the power 1 − β itself, rounded up (``VertexSide.power``), exact
        # to the last bit at tiny α where 1 − β carries an absolute 1.1e-16
        powers: FloatArray = np.max([power(np.atleast_1d(a), d)
                                     for d in as_direction(direction).components], axis=0)
        return np.clip(powers, np.atleast_1d(a), 1.0).reshape(np.shape(a))
    beta = trade.beta(a, as_direction(direction), side)
    # 1 − β is exact in floating point for β ≥ ½ (Sterbenz), but β itself was rounded to
    # the nearest double, up to half an ulp of 1 either way: widen by that much outward
    # so a tiny TPR (β near 1) is never under-reported on the certified side
    ulp = np.finfo(float).epsneg
    tpr = 1.0 - beta + (ulp if side is Bound.UPPER else -ulp)
    return np.clip(tpr, a, 1.0) if side is Bound.UPPER else np.clip(tpr, 0.0, 1.0)


def advantage(curve: Any, *, direction: Direction | str = "max",
              bound: Bound | str = "upper", accountant: str = "pld") -> float:
    """The largest TPR − FPR of any attack: δ(0), the total variation distance between
    the pair's distributions. ``bound="upper"`` (default) is a certified upper bound.
    ``curve`` and ``accountant`` as for ``tpr_at_fpr``."""
    from accounting.curves.profile import PrivacyProfile
    profile = as_kind(risk_curve(curve, accountant), PrivacyProfile)
    return float(profile.delta(0.0, as_direction(direction), as_bound(bound)))


def bayes_risk(curve: Any, prior: float, *, direction: Direction | str = "max",
               bound: Bound | str = "upper", accountant: str = "pld") -> float:
    """The smallest error probability of any attack when the target is present with
    probability ``prior`` (π in (0, 1)): π·(1 − δ(log((1 − π)/π))), with δ the
    profile in the direction that tests presence against absence; for ``max`` the
    worst direction. With ``bound="upper"`` (default) the profile's certified side,
    so the value is a certified **lower** bound on every attack's error."""
    pi = float(check_array("prior", prior, lo=0.0, hi=1.0, lo_open=True, hi_open=True))
    from accounting.curves.profile import PrivacyProfile
    profile = as_kind(risk_curve(curve, accountant), PrivacyProfile)
    d = as_direction(direction)
    # the attack errs on a member with prob. π·FNR and on a non-member with (1−π)·FPR;
    # the hockey-stick form needs the direction whose alternative is "member present"
    d = d.reverse() if d is not Direction.MAX else d
    delta = float(profile.delta(np.log((1.0 - pi) / pi), d, as_bound(bound)))
    return pi * (1.0 - delta)

#: the α at which ``tradeoff_gdp_mu`` reads the curve by default
GDP_ALPHA = 0.01


def gdp_mu(alpha: Any, beta: Any) -> float | FloatArray:
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
